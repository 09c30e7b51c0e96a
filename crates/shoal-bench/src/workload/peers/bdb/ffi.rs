//! The safe Rust side of Berkeley DB's C API: [`Env`], [`Db`], [`Txn`] and [`Cursor`] over
//! the plain functions of `shim.c` (compiled by the build script only when `db.h` exists).
//!
//! Handles close themselves when dropped (a [`Db`] keeps its [`Env`] alive through an
//! `Arc`; a [`Txn`] borrows the environment and a [`Cursor`] borrows its transaction, so
//! the borrow checker keeps the close order Berkeley DB requires: cursors before their
//! transaction, databases before the environment). A transaction dropped without
//! [`Txn::commit`] is aborted. Return codes become [`DbErr`]; "not found" is `None`.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::marker::PhantomData;
use std::path::Path;
use std::sync::Arc;

/// Opaque `DB_ENV`.
#[repr(C)]
struct RawEnv {
    _private: [u8; 0],
}
/// Opaque `DB`.
#[repr(C)]
struct RawDb {
    _private: [u8; 0],
}
/// Opaque `DB_TXN`.
#[repr(C)]
struct RawTxn {
    _private: [u8; 0],
}
/// Opaque cursor of the shim (`struct shoal_bdb_cursor`).
#[repr(C)]
struct RawCursor {
    _private: [u8; 0],
}

extern "C" {
    fn shoal_bdb_classify(ret: c_int) -> c_int;
    fn shoal_bdb_strerror(ret: c_int) -> *const c_char;
    #[allow(clippy::too_many_arguments)]
    fn shoal_bdb_env_open(
        out: *mut *mut RawEnv,
        home: *const c_char,
        cache_bytes: u64,
        max_locks: c_uint,
        max_lockers: c_uint,
        max_objects: c_uint,
        max_txns: c_uint,
        log_buffer: c_uint,
        log_file: c_uint,
        write_nosync: c_int,
    ) -> c_int;
    fn shoal_bdb_env_close(env: *mut RawEnv) -> c_int;
    fn shoal_bdb_db_open(
        env: *mut RawEnv,
        file: *const c_char,
        page_size: c_uint,
        out: *mut *mut RawDb,
    ) -> c_int;
    fn shoal_bdb_db_close(db: *mut RawDb) -> c_int;
    fn shoal_bdb_txn_begin(env: *mut RawEnv, read_committed: c_int, out: *mut *mut RawTxn)
        -> c_int;
    fn shoal_bdb_txn_commit(txn: *mut RawTxn) -> c_int;
    fn shoal_bdb_txn_abort(txn: *mut RawTxn) -> c_int;
    #[allow(clippy::too_many_arguments)]
    fn shoal_bdb_get(
        db: *mut RawDb,
        txn: *mut RawTxn,
        k: *const c_void,
        klen: c_uint,
        buf: *mut c_void,
        cap: c_uint,
        len: *mut c_uint,
        rmw: c_int,
    ) -> c_int;
    fn shoal_bdb_put(
        db: *mut RawDb,
        txn: *mut RawTxn,
        k: *const c_void,
        klen: c_uint,
        v: *const c_void,
        vlen: c_uint,
        no_overwrite: c_int,
    ) -> c_int;
    fn shoal_bdb_cursor_open(db: *mut RawDb, txn: *mut RawTxn, out: *mut *mut RawCursor) -> c_int;
    #[allow(clippy::too_many_arguments)]
    fn shoal_bdb_cursor_get(
        c: *mut RawCursor,
        op: c_int,
        k: *const c_void,
        klen: c_uint,
        rmw: c_int,
        ko: *mut *const c_void,
        kl: *mut c_uint,
        vo: *mut *const c_void,
        vl: *mut c_uint,
    ) -> c_int;
    fn shoal_bdb_cursor_del(c: *mut RawCursor) -> c_int;
    fn shoal_bdb_cursor_close(c: *mut RawCursor) -> c_int;
}

/// How a Berkeley DB call failed. The peer turns [`DbErr::Deadlock`] and
/// [`DbErr::NotGranted`] into counted aborts (rule 1 of [`super::super`]) and everything
/// else into [`BenchError::Peer`](crate::BenchError::Peer) with [`DbErr::into_bench`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbErr {
    /// `DB_LOCK_DEADLOCK`: the transaction was chosen as a deadlock victim; abort it.
    Deadlock,
    /// `DB_LOCK_NOTGRANTED`: a lock wait timed out; abort the transaction.
    NotGranted,
    /// `DB_KEYEXIST`: an insert (`DB_NOOVERWRITE`) found the key present.
    KeyExists,
    /// Any other code: the call that failed, the code and Berkeley DB's message.
    Other {
        /// The call, e.g. "DB->put".
        what: String,
        /// Berkeley DB's (or the system's) return code.
        code: i32,
        /// `db_strerror(code)`.
        message: String,
    },
}

impl DbErr {
    /// The abort cause of a retryable failure (`deadlock`, `lock_timeout`), else `None`.
    pub fn retry_cause(&self) -> Option<&'static str> {
        match self {
            DbErr::Deadlock => Some("deadlock"),
            DbErr::NotGranted => Some("lock_timeout"),
            _ => None,
        }
    }

    /// The failure as the crate's error, naming the step `what`.
    pub fn into_bench(self, what: &str) -> crate::BenchError {
        let message = match self {
            DbErr::Deadlock => "DB_LOCK_DEADLOCK".to_string(),
            DbErr::NotGranted => "DB_LOCK_NOTGRANTED".to_string(),
            DbErr::KeyExists => "DB_KEYEXIST: the key exists".to_string(),
            DbErr::Other {
                what: call,
                code,
                message,
            } => format!("{call}: {message} (code {code})"),
        };
        crate::BenchError::peer("bdb", what, message)
    }

    /// A failure of the peer's own making (a record that does not decode, a missing row),
    /// reported like an engine error.
    pub fn invalid(what: impl Into<String>, message: impl Into<String>) -> DbErr {
        DbErr::Other {
            what: what.into(),
            code: 0,
            message: message.into(),
        }
    }
}

/// Result of a Berkeley DB call.
pub type DbResult<T> = std::result::Result<T, DbErr>;

/// Maps a return code: `Ok(true)` success, `Ok(false)` not found, else the failure.
fn check(ret: c_int, what: &str) -> DbResult<bool> {
    // SAFETY: `shoal_bdb_classify` reads only its integer argument.
    match unsafe { shoal_bdb_classify(ret) } {
        0 => Ok(true),
        1 => Ok(false),
        2 => Err(DbErr::KeyExists),
        3 => Err(DbErr::Deadlock),
        4 => Err(DbErr::NotGranted),
        _ => Err(DbErr::Other {
            what: what.to_string(),
            code: ret,
            message: strerror(ret),
        }),
    }
}

/// Maps a return code where "not found" is a failure too.
fn check_ok(ret: c_int, what: &str) -> DbResult<()> {
    if check(ret, what)? {
        Ok(())
    } else {
        Err(DbErr::invalid(what, "DB_NOTFOUND"))
    }
}

/// `db_strerror(code)`.
fn strerror(code: c_int) -> String {
    // SAFETY: `db_strerror` returns a pointer to a static or thread-local NUL-terminated
    // message for every code; it is copied before another call can reuse it.
    unsafe {
        let p = shoal_bdb_strerror(code);
        if p.is_null() {
            return format!("error {code}");
        }
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// A length as the C API's `u_int32_t`.
fn len32(n: usize, what: &str) -> DbResult<c_uint> {
    c_uint::try_from(n).map_err(|_| DbErr::invalid(what, format!("{n} bytes is too long")))
}

/// The environment's settings (the caller's choices; see the peer's module doc).
#[derive(Clone, Copy, Debug)]
pub struct EnvConfig {
    /// Cache (`set_cachesize`) in bytes.
    pub cache_bytes: u64,
    /// `set_lk_max_locks`.
    pub max_locks: u32,
    /// `set_lk_max_lockers`.
    pub max_lockers: u32,
    /// `set_lk_max_objects`.
    pub max_objects: u32,
    /// `set_tx_max`: transactions active at once.
    pub max_txns: u32,
    /// `set_lg_bsize`: log buffer in bytes.
    pub log_buffer: u32,
    /// `set_lg_max`: log file size in bytes.
    pub log_file: u32,
    /// `DB_TXN_WRITE_NOSYNC`: a commit writes its log to the OS without syncing.
    pub write_nosync: bool,
}

/// An open transactional environment (`DB_ENV`), free-threaded (`DB_THREAD`).
#[derive(Debug)]
pub struct Env {
    raw: *mut RawEnv,
}

// SAFETY: the environment is opened with DB_THREAD, which makes the handle free-threaded:
// Berkeley DB serializes its use internally, so it may be shared and sent across threads.
unsafe impl Send for Env {}
// SAFETY: as for `Send` (DB_THREAD).
unsafe impl Sync for Env {}

impl Env {
    /// Opens a new environment in the existing directory `home`.
    ///
    /// # Errors
    /// [`DbErr::Other`] with Berkeley DB's message if the environment cannot be created.
    pub fn open(home: &Path, cfg: &EnvConfig) -> DbResult<Arc<Env>> {
        let home_c = CString::new(home.as_os_str().as_encoded_bytes())
            .map_err(|_| DbErr::invalid("DB_ENV->open", "the path holds a NUL byte"))?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; `home_c` is NUL-terminated and outlives the
        // call; the other arguments are plain integers.
        let ret = unsafe {
            shoal_bdb_env_open(
                &mut raw,
                home_c.as_ptr(),
                cfg.cache_bytes,
                cfg.max_locks,
                cfg.max_lockers,
                cfg.max_objects,
                cfg.max_txns,
                cfg.log_buffer,
                cfg.log_file,
                c_int::from(cfg.write_nosync),
            )
        };
        check_ok(ret, "DB_ENV->open")?;
        Ok(Arc::new(Env { raw }))
    }

    /// Begins a transaction, at degree 2 (`DB_READ_COMMITTED`) if `read_committed`.
    ///
    /// # Errors
    /// [`DbErr::Other`] (e.g. too many active transactions).
    pub fn begin(&self, read_committed: bool) -> DbResult<Txn<'_>> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: `self.raw` is an open environment; `raw` is a valid out-pointer.
        let ret = unsafe { shoal_bdb_txn_begin(self.raw, c_int::from(read_committed), &mut raw) };
        check_ok(ret, "DB_ENV->txn_begin")?;
        Ok(Txn {
            raw,
            _env: PhantomData,
        })
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        // SAFETY: `self.raw` is open, every `Db` holding it has been closed (they keep the
        // `Arc` alive) and no transaction borrows it any more; it is not used afterwards.
        unsafe { shoal_bdb_env_close(self.raw) };
    }
}

/// An open B-tree database (`DB`), free-threaded (`DB_THREAD`).
#[derive(Debug)]
pub struct Db {
    raw: *mut RawDb,
    name: String,
    _env: Arc<Env>,
}

// SAFETY: the database is opened with DB_THREAD (free-threaded handle), see `Env`.
unsafe impl Send for Db {}
// SAFETY: as for `Send` (DB_THREAD).
unsafe impl Sync for Db {}

impl Db {
    /// Creates the B-tree database in file `<name>.db` of `env` with pages of `page_size`
    /// bytes.
    ///
    /// # Errors
    /// [`DbErr::Other`] if the file cannot be created.
    pub fn create(env: &Arc<Env>, name: &str, page_size: u32) -> DbResult<Db> {
        let file = CString::new(format!("{name}.db"))
            .map_err(|_| DbErr::invalid("DB->open", "the name holds a NUL byte"))?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: `env.raw` is open; `file` is NUL-terminated and outlives the call; `raw` is
        // a valid out-pointer.
        let ret = unsafe { shoal_bdb_db_open(env.raw, file.as_ptr(), page_size, &mut raw) };
        check_ok(ret, "DB->open")?;
        Ok(Db {
            raw,
            name: name.to_string(),
            _env: Arc::clone(env),
        })
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads the record with `key` into `buf` (replacing its contents); `false` if there
    /// is none. `rmw` takes a write lock at the read (`DB_RMW`).
    ///
    /// # Errors
    /// [`DbErr`] (deadlock, lock timeout or another failure).
    pub fn get(&self, txn: &Txn<'_>, key: &[u8], rmw: bool, buf: &mut Vec<u8>) -> DbResult<bool> {
        let klen = len32(key.len(), "DB->get")?;
        loop {
            if buf.capacity() < 64 {
                buf.reserve(256);
            }
            let cap = len32(buf.capacity(), "DB->get")?;
            let mut len: c_uint = 0;
            // SAFETY: the handles are open; `key` is readable for `klen` bytes; `buf` is
            // writable for `cap` bytes (its capacity); `len` is a valid out-pointer.
            let ret = unsafe {
                shoal_bdb_get(
                    self.raw,
                    txn.raw,
                    key.as_ptr().cast(),
                    klen,
                    buf.as_mut_ptr().cast(),
                    cap,
                    &mut len,
                    c_int::from(rmw),
                )
            };
            // SAFETY (classify): reads only the integer.
            if unsafe { shoal_bdb_classify(ret) } == 5 {
                if len <= cap {
                    return Err(DbErr::invalid(
                        "DB->get",
                        "DB_BUFFER_SMALL for a large buffer",
                    ));
                }
                buf.clear();
                buf.reserve(len as usize);
                continue;
            }
            let found = check(ret, "DB->get")?;
            let n = if found { len as usize } else { 0 };
            if n > buf.capacity() {
                return Err(DbErr::invalid("DB->get", "record longer than the buffer"));
            }
            // SAFETY: on success Berkeley DB wrote `len` bytes (checked against the
            // capacity above) at the start of `buf`.
            unsafe { buf.set_len(n) };
            return Ok(found);
        }
    }

    /// Stores `value` under `key`; with `no_overwrite` an existing key is
    /// [`DbErr::KeyExists`].
    ///
    /// # Errors
    /// [`DbErr`].
    pub fn put(&self, txn: &Txn<'_>, key: &[u8], value: &[u8], no_overwrite: bool) -> DbResult<()> {
        let (klen, vlen) = (len32(key.len(), "DB->put")?, len32(value.len(), "DB->put")?);
        // SAFETY: the handles are open; `key` and `value` are readable for their lengths.
        let ret = unsafe {
            shoal_bdb_put(
                self.raw,
                txn.raw,
                key.as_ptr().cast(),
                klen,
                value.as_ptr().cast(),
                vlen,
                c_int::from(no_overwrite),
            )
        };
        check_ok(ret, "DB->put")
    }

    /// Opens a cursor in `txn`.
    ///
    /// # Errors
    /// [`DbErr`].
    pub fn cursor<'a>(&'a self, txn: &'a Txn<'_>) -> DbResult<Cursor<'a>> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: the handles are open; `raw` is a valid out-pointer.
        let ret = unsafe { shoal_bdb_cursor_open(self.raw, txn.raw, &mut raw) };
        check_ok(ret, "DB->cursor")?;
        Ok(Cursor {
            raw,
            _borrow: PhantomData,
        })
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        // SAFETY: `self.raw` is open and no cursor borrows it any more (cursors borrow the
        // `Db`); it is not used afterwards. The environment outlives it (`_env`).
        unsafe { shoal_bdb_db_close(self.raw) };
    }
}

/// A transaction (`DB_TXN`), used by one thread; aborted if dropped uncommitted.
#[derive(Debug)]
pub struct Txn<'e> {
    raw: *mut RawTxn,
    _env: PhantomData<&'e Env>,
}

impl Txn<'_> {
    /// Commits (durably unless the environment has `DB_TXN_WRITE_NOSYNC`).
    ///
    /// # Errors
    /// [`DbErr`]; the transaction is gone either way.
    pub fn commit(self) -> DbResult<()> {
        let raw = self.raw;
        std::mem::forget(self);
        // SAFETY: `raw` is an active transaction whose cursors are closed (they borrow the
        // `Txn`, which was moved into this call); the handle is freed by the call.
        check_ok(unsafe { shoal_bdb_txn_commit(raw) }, "DB_TXN->commit")
    }

    /// Aborts (rolls back).
    ///
    /// # Errors
    /// [`DbErr`]; the transaction is gone either way.
    pub fn abort(self) -> DbResult<()> {
        let raw = self.raw;
        std::mem::forget(self);
        // SAFETY: as for `commit`.
        check_ok(unsafe { shoal_bdb_txn_abort(raw) }, "DB_TXN->abort")
    }
}

impl Drop for Txn<'_> {
    fn drop(&mut self) {
        // SAFETY: an uncommitted active transaction with no open cursor; freed by the call.
        unsafe { shoal_bdb_txn_abort(self.raw) };
    }
}

/// Where [`Cursor::get`] moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Move<'k> {
    /// The first record.
    First,
    /// The last record.
    Last,
    /// The next record.
    Next,
    /// The previous record.
    Prev,
    /// The first record with a key at or after this one.
    SetRange(&'k [u8]),
}

/// A cursor of one database in one transaction (`DBC`).
#[derive(Debug)]
pub struct Cursor<'a> {
    raw: *mut RawCursor,
    _borrow: PhantomData<(&'a Db, &'a Txn<'a>)>,
}

impl Cursor<'_> {
    /// Moves the cursor; `None` if there is no such record. The key and data returned stay
    /// valid until the cursor's next call. `rmw` takes a write lock (`DB_RMW`).
    ///
    /// # Errors
    /// [`DbErr`].
    pub fn get(&mut self, to: Move<'_>, rmw: bool) -> DbResult<Option<(&[u8], &[u8])>> {
        let (op, key): (c_int, &[u8]) = match to {
            Move::First => (0, &[]),
            Move::Last => (1, &[]),
            Move::Next => (2, &[]),
            Move::Prev => (3, &[]),
            Move::SetRange(k) => (5, k),
        };
        let klen = len32(key.len(), "DBC->get")?;
        let (mut ko, mut kl, mut vo, mut vl) = (std::ptr::null(), 0, std::ptr::null(), 0);
        // SAFETY: the cursor is open; `key` is readable for `klen` bytes (copied by the
        // shim); the four out-pointers are valid.
        let ret = unsafe {
            shoal_bdb_cursor_get(
                self.raw,
                op,
                key.as_ptr().cast(),
                klen,
                c_int::from(rmw),
                &mut ko,
                &mut kl,
                &mut vo,
                &mut vl,
            )
        };
        if !check(ret, "DBC->get")? {
            return Ok(None);
        }
        let slice = |p: *const c_void, n: c_uint| -> &[u8] {
            if p.is_null() || n == 0 {
                &[]
            } else {
                // SAFETY: on success the shim returned the cursor's buffers holding `n`
                // bytes; they are not touched until the next call on this cursor, which
                // needs `&mut self` and so ends this borrow first.
                unsafe { std::slice::from_raw_parts(p.cast::<u8>(), n as usize) }
            }
        };
        Ok(Some((slice(ko, kl), slice(vo, vl))))
    }

    /// Deletes the record under the cursor.
    ///
    /// # Errors
    /// [`DbErr`].
    pub fn del(&mut self) -> DbResult<()> {
        // SAFETY: the cursor is open.
        check_ok(unsafe { shoal_bdb_cursor_del(self.raw) }, "DBC->del")
    }
}

impl Drop for Cursor<'_> {
    fn drop(&mut self) {
        // SAFETY: the cursor is open; its transaction is still active (the cursor borrows
        // it); the call frees it.
        unsafe { shoal_bdb_cursor_close(self.raw) };
    }
}
