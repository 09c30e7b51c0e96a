//! The crate's one error type (STYLE.md practice 6).
//!
//! Operating errors — I/O, corruption, full disk, bad arguments, a pool that stopped after a
//! failed write — are values of [`Error`]. Programmer errors (a broken invariant) are
//! assertions. [`Error::is_retryable`] tells a caller whether repeating the operation may
//! succeed.

use crate::types::{Lsn, PageId, TxnId};

/// Result alias used throughout Shoal.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every error Shoal returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An operating-system I/O call failed. `op` names the call (`read`, `write`, `sync`,
    /// `open`, …) and `path` the file; `source` carries the OS error.
    #[error("I/O error during {op} on {path}: {source}")]
    Io {
        /// The operation that failed (`read`, `write`, `sync`, `open`, `set_len`, ...).
        op: &'static str,
        /// The file (or directory) the operation was on.
        path: String,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },

    /// The device has no room for a write or for growing a file (`ENOSPC`).
    #[error("no space left on device while {op} on {path}")]
    NoSpace {
        /// The operation that failed (`write`, `set_len`).
        op: &'static str,
        /// The file that could not grow.
        path: String,
    },

    /// A page read from disk failed validation: bad checksum, wrong page id, unknown format
    /// version or type, or an inconsistent layout. `reason` says which.
    #[error("page {page_id} is corrupt: {reason}")]
    Corruption {
        /// The page that failed validation.
        page_id: PageId,
        /// What is wrong with it.
        reason: String,
    },

    /// The write-ahead log is damaged before its end: the bytes at `lsn` are not a valid
    /// record although a valid record exists later in the log files (so this is not the torn
    /// tail of a crash), a segment file is missing from the sequence, or a record that a
    /// caller asked for by LSN (following a `prev_lsn` chain) is not there. `reason` says
    /// which. Recovery must not continue past it: records after `lsn` would be lost silently.
    #[error("log is corrupt at LSN {lsn}: {reason}")]
    LogCorruption {
        /// The log address of the damage.
        lsn: Lsn,
        /// What is wrong.
        reason: String,
    },

    /// Another process (or another `Database` in this one) has the database directory open:
    /// its `LOCK` file is locked.
    #[error("database {path} is in use: another process holds its lock file")]
    DatabaseInUse {
        /// The database directory.
        path: String,
    },

    /// A file is not a Shoal file, or its header is damaged or of an unsupported version.
    #[error("{path} is not a usable Shoal file: {reason}")]
    BadFile {
        /// The file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A caller passed a value outside its documented range. `name` is the parameter.
    #[error("invalid argument `{name}`: {reason}")]
    InvalidArgument {
        /// The parameter or option name.
        name: &'static str,
        /// Why it is rejected, with the accepted range.
        reason: String,
    },

    /// The buffer pool stopped accepting writes after an earlier write-back failed; the
    /// message names that first failure. Dirty pages are kept in memory, nothing is silently
    /// dropped; close and reopen (and, once the log exists, recover) to continue.
    #[error("buffer pool refuses writes after an earlier write-back failure: {first_failure}")]
    PoolFailed {
        /// Description of the first write-back failure.
        first_failure: String,
    },

    /// Every frame of the buffer pool is latched or pinned; no victim could be found after
    /// scanning the pool `rounds` times. Retryable: frames are released as other threads
    /// finish.
    #[error("buffer pool exhausted: all {frames} frames are in use (scanned {rounds} rounds)")]
    PoolExhausted {
        /// Number of frames in the pool.
        frames: usize,
        /// How many full CLOCK rounds were scanned.
        rounds: usize,
    },

    /// The log manager stopped accepting records after a failed log write or sync; the
    /// message names that first failure. Reopen the database (and recover) to continue.
    #[error("log refuses writes after an earlier failure: {first_failure}")]
    LogFailed {
        /// Description of the first log write or sync failure.
        first_failure: String,
    },

    /// A unique key is already present.
    #[error("duplicate key {key} in {index}")]
    DuplicateKey {
        /// The index (or store) that refused it.
        index: String,
        /// The key, printed.
        key: String,
    },

    /// A table operation named a table the catalog does not hold.
    #[error("no table named `{name}`")]
    NoSuchTable {
        /// The name asked for.
        name: String,
    },

    /// A name (in a row, a primary key, an index definition or a lookup) is not a column of
    /// the table. `table` is `<row>` when the row was built by hand and has no table yet.
    #[error("no column `{column}` in table `{table}`")]
    NoSuchColumn {
        /// The table searched.
        table: String,
        /// The column name (or `#i` for a column position) asked for.
        column: String,
    },

    /// A table definition breaks a rule of `table::schema`: duplicate column or index names,
    /// an empty or too long primary key or index, too many columns or indexes, a name that is
    /// empty or too long, or a NOT NULL column added to an existing table.
    #[error("invalid definition of table `{table}`: {reason}")]
    InvalidSchema {
        /// The table being defined.
        table: String,
        /// Which rule is broken.
        reason: String,
    },

    /// NULL was given for (or a row left out) a column declared NOT NULL, primary-key
    /// columns included.
    #[error("column `{column}` of table `{table}` is NOT NULL but got NULL")]
    NotNull {
        /// The table.
        table: String,
        /// The NOT NULL column.
        column: String,
    },

    /// A value's type does not fit its column (or a typed getter asked for a Rust type the
    /// value does not convert to). `expected` is the column type (`DECIMAL(12,2)`) or Rust
    /// type (`i64`); `got` names the value's type (`TEXT`, `NULL`, ...).
    #[error("type mismatch for column `{column}`: expected {expected}, got {got}")]
    TypeMismatch {
        /// The column (or `#i` for a position).
        column: String,
        /// What the column or getter accepts.
        expected: String,
        /// What was given.
        got: String,
    },

    /// A value is larger than its column allows: more characters than CHAR(n) / VARCHAR(n)
    /// (trailing spaces beyond `n` excepted), more bytes than BYTES(n), more digits than a
    /// DECIMAL(p,s) holds or more fractional digits than its scale. `unit` says which.
    #[error("value too long for column `{column}`: {got} {unit}, at most {max}")]
    ValueTooLong {
        /// The column.
        column: String,
        /// The most the column holds, in `unit`.
        max: u64,
        /// The size of the value given, in `unit`.
        got: u64,
        /// `characters`, `bytes`, `digits` or `fractional digits`.
        unit: &'static str,
    },

    /// Bytes that should be a stored record — a row, a table or index key, a table
    /// definition — are not a valid encoding of one, at a level where no page is known (a
    /// page-level check reports [`Error::Corruption`] instead). `what` names the record
    /// (`row of table `t``), `reason` what is wrong.
    #[error("{what} is corrupt: {reason}")]
    CorruptRecord {
        /// The record, with its table or index.
        what: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A record does not fit in the page that must hold it (an access method without page
    /// splits, such as the log issue's test store).
    #[error("page {page_id} is full: {needed_bytes} bytes needed, {free_bytes} free")]
    PageFull {
        /// The full page.
        page_id: PageId,
        /// Bytes the record needs (with its slot).
        needed_bytes: usize,
        /// Bytes free in the page.
        free_bytes: usize,
    },

    /// The transaction was chosen as the victim of a deadlock: its lock request closed a
    /// cycle in the waits-for graph (lock manager, `lock` rule D1). The request was withdrawn;
    /// the locks the transaction already holds are kept until it rolls back. Retryable: roll
    /// back and run the transaction again.
    #[error("deadlock: {victim} is the victim; cycle: {detail}")]
    Deadlock {
        /// The transaction whose request closed the cycle (the one that gets this error).
        victim: TxnId,
        /// The transactions of the cycle in waits-for order, starting with the victim: each
        /// waits for the next, and the last waits for the victim.
        cycle: Vec<TxnId>,
        /// The cycle printed: for each transaction, the lock name and mode it waits for.
        detail: String,
    },

    /// A lock request waited longer than the lock wait timeout (`LockOptions::timeout`,
    /// default 60,000 ms like Derby's `derby.locks.waitTimeout`) and was withdrawn. The
    /// transaction keeps the locks it already holds. Retryable: roll back and try again.
    #[error("lock wait timeout: {txn} waited {waited_ms} ms for {mode} on {lock}")]
    LockTimeout {
        /// The transaction that waited.
        txn: TxnId,
        /// The lock name, printed.
        lock: String,
        /// The mode it asked for (after conversion: the mode it would have held).
        mode: &'static str,
        /// How long it waited, in milliseconds.
        waited_ms: u64,
    },

    /// A page id outside the allocated part of the file, or a page that is not allocated.
    #[error("page {page_id} is not allocated: {reason}")]
    PageNotAllocated {
        /// The page asked for.
        page_id: PageId,
        /// Why it is not usable.
        reason: String,
    },
}

impl Error {
    /// True if repeating the operation (for a lock error: the whole transaction, after
    /// rolling it back) may succeed without any other change: [`Error::PoolExhausted`],
    /// [`Error::Deadlock`] and [`Error::LockTimeout`].
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::PoolExhausted { .. } | Error::Deadlock { .. } | Error::LockTimeout { .. }
        )
    }

    /// Builds an [`Error::Io`] or, for `ENOSPC`, an [`Error::NoSpace`].
    ///
    /// The test is on the raw OS error, which every error from a system call carries;
    /// `io::ErrorKind::StorageFull` is not consulted because it is newer (Rust 1.83) than the
    /// crate's minimum supported Rust version.
    pub fn from_io(op: &'static str, path: impl Into<String>, source: std::io::Error) -> Error {
        let path = path.into();
        if source.raw_os_error() == Some(libc::ENOSPC) {
            Error::NoSpace { op, path }
        } else {
            Error::Io { op, path, source }
        }
    }

    /// Shorthand for [`Error::Corruption`]. Cold: the paths that make one are the unlikely side
    /// of every page check, which the compiler then lays out of line.
    #[cold]
    pub fn corruption(page_id: PageId, reason: impl Into<String>) -> Error {
        Error::Corruption {
            page_id,
            reason: reason.into(),
        }
    }

    /// Shorthand for [`Error::LogCorruption`].
    pub fn log_corruption(lsn: Lsn, reason: impl Into<String>) -> Error {
        Error::LogCorruption {
            lsn,
            reason: reason.into(),
        }
    }

    /// Shorthand for [`Error::InvalidArgument`] (cold, as [`Error::corruption`]).
    #[cold]
    pub fn invalid(name: &'static str, reason: impl Into<String>) -> Error {
        Error::InvalidArgument {
            name,
            reason: reason.into(),
        }
    }
}
