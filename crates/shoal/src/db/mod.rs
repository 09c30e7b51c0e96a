//! # Database — the embedded API
//!
//! Job: what an application opens (DESIGN.md §2, the top layer; issue 6): one database in
//! one directory, holding the data file, the log segments, the `catalog` file and a `LOCK`
//! file. [`Database::create`] makes a new one, [`Database::open`] opens (and recovers) an
//! existing one, [`Database::close`] checkpoints and closes it cleanly.
//!
//! ```
//! use shoal::table::{Column, ColumnType, TableDef, Row, Value};
//! use shoal::{Database, IsolationLevel, Options};
//! # fn main() -> shoal::Result<()> {
//! # let dir = tempfile::tempdir().unwrap();
//! # let path = dir.path().join("bank");
//! let db = Database::create(&path, &Options::default())?;
//! let mut tx = db.begin(IsolationLevel::Serializable);
//! let def = TableDef::new(
//!     "account",
//!     vec![
//!         Column::new("id", ColumnType::Int8),
//!         Column::new("balance", ColumnType::Int8).not_null(),
//!     ],
//!     &["id"],
//! )?;
//! let accounts = db.create_table(&mut tx, def)?;
//! accounts.insert(&mut tx, &Row::new().with("id", 1i64).with("balance", 100i64))?;
//! tx.commit()?;
//! db.close()?;
//!
//! // Later, or after a crash: open runs restart recovery first.
//! let db = Database::open(&path, &Options::default())?;
//! let mut tx = db.begin(IsolationLevel::ReadCommitted);
//! let accounts = db.table(&mut tx, "account")?;
//! let row = accounts.get(&mut tx, &[Value::Int8(1)])?.expect("committed");
//! assert_eq!(row.get::<i64>("balance")?, 100);
//! tx.commit()?;
//! db.close()?;
//! # Ok(()) }
//! ```
//!
//! Invariants: (1) at most one process has a database open: `open` and `create` take an
//! exclusive `flock` on `LOCK` and hold it until the `Database` is dropped; a second opener
//! gets [`Error::DatabaseInUse`]. (2) The `catalog` file is written once, at creation, after
//! the catalog tree's creation is durable: `[magic "SHOALCAT"][root page u64][CRC32C u32]`.
//! A directory with a data file but no valid catalog file was cut short during creation (or
//! damaged) and is refused with [`Error::BadFile`].

mod report;
mod stats;
pub use report::{DatabaseReport, TableSummary};
pub use stats::{saved_stats, DatabaseStats, STATS_FILE};

use crate::engine::{Engine, DATA_FILE};
use crate::error::{Error, Result};
use crate::io::{FileStorage, OpenOptions, Storage};
use crate::log::LogOptions;
use crate::options::Options;
use crate::table::{Catalog, Table, TableDef};
use crate::txn::{IsolationLevel, Transaction};
use crate::types::PageId;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Name of the file that records the catalog's root page.
pub const CATALOG_FILE: &str = "catalog";
/// Name of the lock file.
pub const LOCK_FILE: &str = "LOCK";
const CATALOG_MAGIC: &[u8; 8] = b"SHOALCAT";
const CATALOG_FILE_BYTES: usize = 8 + 8 + 4;

/// An open database. Share it between threads by reference (it is `Sync`); every
/// transaction borrows it.
pub struct Database {
    engine: Engine,
    catalog: Catalog,
    path: PathBuf,
    /// Holds the `flock` (invariant 1) until the database is dropped.
    _lock: File,
}

/// Takes the exclusive lock of the database directory `dir`.
fn lock_dir(dir: &Path) -> Result<File> {
    use std::os::unix::io::AsRawFd;
    let path = dir.join(LOCK_FILE);
    let shown = path.display().to_string();
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| Error::from_io("open", &shown, e))?;
    // SAFETY: flock on a file descriptor this function owns; no memory is involved.
    let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            return Err(Error::DatabaseInUse {
                path: dir.display().to_string(),
            });
        }
        return Err(Error::from_io("flock", shown, e));
    }
    Ok(f)
}

impl Database {
    /// Creates a new database in directory `path` (created if missing; it must not hold a
    /// database already).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `path` already holds a database or `options` are out of
    /// range; [`Error::DatabaseInUse`]; I/O errors.
    pub fn create(path: impl AsRef<Path>, options: &Options) -> Result<Database> {
        Database::create_with(path, options, &LogOptions::default())
    }

    /// As [`Database::create`], with the log's options: durability (`Full`, the default,
    /// or `Lazy`), log buffer and segment sizes, `O_DIRECT`.
    ///
    /// # Errors
    /// As [`Database::create`]; [`Error::InvalidArgument`] for log options out of range.
    pub fn create_with(
        path: impl AsRef<Path>,
        options: &Options,
        log_options: &LogOptions,
    ) -> Result<Database> {
        let path = path.as_ref().to_path_buf();
        let storage = FileStorage::open_dir(&path, true)?;
        let lock = lock_dir(&path)?;
        if storage.exists(DATA_FILE)? || storage.exists(CATALOG_FILE)? {
            return Err(Error::invalid(
                "path",
                format!("{} already holds a database", path.display()),
            ));
        }
        let storage: Arc<dyn Storage> = Arc::new(storage);
        let engine = Engine::open(storage.clone(), options, log_options)?;
        let catalog = Catalog::create(engine.txns(), engine.space())?;
        engine.log().wait_all_durable()?;
        let mut rec = Vec::with_capacity(CATALOG_FILE_BYTES);
        rec.extend_from_slice(CATALOG_MAGIC);
        rec.extend_from_slice(&catalog.root().0.to_le_bytes());
        rec.extend_from_slice(&crc32c::crc32c(&rec).to_le_bytes());
        let f = storage.open(
            CATALOG_FILE,
            OpenOptions {
                create: true,
                ..Default::default()
            },
        )?;
        f.write_all_at(&rec, 0)?;
        f.sync_data()?;
        storage.sync_dir()?;
        Ok(Database {
            engine,
            catalog,
            path,
            _lock: lock,
        })
    }

    /// Opens the database in directory `path`, running restart recovery first.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `path` holds no database; [`Error::BadFile`] for a
    /// missing or damaged catalog file; [`Error::DatabaseInUse`]; recovery's errors.
    pub fn open(path: impl AsRef<Path>, options: &Options) -> Result<Database> {
        Database::open_with(path, options, &LogOptions::default())
    }

    /// As [`Database::open`], with the log's options (see [`Database::create_with`]).
    ///
    /// # Errors
    /// As [`Database::open`].
    pub fn open_with(
        path: impl AsRef<Path>,
        options: &Options,
        log_options: &LogOptions,
    ) -> Result<Database> {
        let path = path.as_ref().to_path_buf();
        if !path.join(DATA_FILE).exists() {
            return Err(Error::invalid(
                "path",
                format!(
                    "{} holds no Shoal database (no {DATA_FILE})",
                    path.display()
                ),
            ));
        }
        let storage = FileStorage::open_dir(&path, false)?;
        let lock = lock_dir(&path)?;
        let root = read_catalog_file(&storage, &path)?;
        let storage: Arc<dyn Storage> = Arc::new(storage);
        let engine = Engine::open(storage, options, log_options)?;
        let catalog = Catalog::open(engine.txns(), engine.space(), root)?;
        Ok(Database {
            engine,
            catalog,
            path,
            _lock: lock,
        })
    }

    /// The database's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The storage manager underneath (log, pool, space, transactions).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Starts a transaction at `isolation`.
    pub fn begin(&self, isolation: IsolationLevel) -> Transaction<'_> {
        self.engine.begin_with(isolation)
    }

    /// Creates table `def` in `txn` (see [`Catalog::create_table`]).
    ///
    /// # Errors
    /// As [`Catalog::create_table`].
    pub fn create_table(&self, txn: &mut Transaction<'_>, def: TableDef) -> Result<Table> {
        self.catalog.create_table(txn, def)
    }

    /// Opens table `name` in `txn`.
    ///
    /// # Errors
    /// [`Error::NoSuchTable`]; as [`Catalog::table`].
    pub fn table(&self, txn: &mut Transaction<'_>, name: &str) -> Result<Table> {
        self.catalog.table(txn, name)
    }

    /// Drops table `name` in `txn`.
    ///
    /// # Errors
    /// As [`Catalog::drop_table`].
    pub fn drop_table(&self, txn: &mut Transaction<'_>, name: &str) -> Result<()> {
        self.catalog.drop_table(txn, name)
    }

    /// Closes cleanly: saves the counters ([`Database::stats`]) to the `stats` file, writes
    /// every dirty page, checkpoints, closes the log, releases the directory lock. Every
    /// transaction must have ended.
    ///
    /// # Errors
    /// As [`Engine::close`].
    pub fn close(self) -> Result<()> {
        // The counters first (they need the open engine); a failure to save them does not
        // stop the close, and is reported after it.
        let saved = self.save_stats();
        self.engine.close()?;
        saved
    }
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("path", &self.path)
            .field("catalog_root", &self.catalog.root())
            .finish()
    }
}

/// Reads and checks the catalog file (invariant 2).
fn read_catalog_file(storage: &FileStorage, path: &Path) -> Result<PageId> {
    let shown = path.join(CATALOG_FILE).display().to_string();
    let bad = |reason: String| Error::BadFile {
        path: shown.clone(),
        reason,
    };
    if !storage.exists(CATALOG_FILE)? {
        return Err(bad(
            "missing: the database's creation did not finish, or the file was removed".into(),
        ));
    }
    let f = storage.open(CATALOG_FILE, OpenOptions::default())?;
    if f.len()? != CATALOG_FILE_BYTES as u64 {
        return Err(bad(format!(
            "{} bytes, expected {CATALOG_FILE_BYTES}",
            f.len()?
        )));
    }
    let mut rec = [0u8; CATALOG_FILE_BYTES];
    f.read_exact_at(&mut rec, 0)?;
    let crc = u32::from_le_bytes(rec[16..20].try_into().expect("4 bytes"));
    if &rec[..8] != CATALOG_MAGIC || crc32c::crc32c(&rec[..16]) != crc {
        return Err(bad("bad magic or checksum".into()));
    }
    Ok(PageId(u64::from_le_bytes(
        rec[8..16].try_into().expect("8 bytes"),
    )))
}
