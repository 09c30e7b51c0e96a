//! The buffer pool's view of the write-ahead log: the WAL rule hook.

use crate::error::Result;
use crate::types::Lsn;

/// What the buffer pool needs from the log manager (DESIGN.md §3.3, write-back obeys the WAL
/// rule: "force the log up to the page LSN before writing the page").
pub trait WalHook: Send + Sync {
    /// Makes the log durable up to and including the record at `lsn`; returns when it is.
    /// Called before every write-back of a page whose page LSN is `lsn`, an eviction's
    /// included. The log also makes sure that a restart will insist on finding that record
    /// (log anchor rule A6), raising its durable floor if `lsn` is at or above it.
    ///
    /// # Errors
    /// Any log I/O error; the page is then not written (it stays dirty).
    fn force_log(&self, lsn: Lsn) -> Result<()>;

    /// The log's durable floor (log anchor rule A3): a page whose page LSN is below it can
    /// be written without [`WalHook::force_log`] raising the floor (rule A6), which costs an
    /// anchor write and sync. The victim choice prefers such pages (buffer rule 10). May
    /// lag the floor (it only rises), never lead it. Default: `Lsn(u64::MAX)`, every page
    /// covered (a log without a floor).
    fn durable_floor(&self) -> Lsn {
        Lsn(u64::MAX)
    }

    /// The LSN the next log record will receive (the end of the log). Used as the recovery
    /// LSN of a page that becomes dirty (it is ≤ the LSN of the record about to be appended)
    /// and as the cleaner's bound when nothing is dirty.
    ///
    /// Ordering contract (the cleaner's bound relies on it): reading the end of the log here
    /// must be an Acquire that synchronises with the Release by which an append advances it,
    /// so that a page dirtied before a record was appended is seen dirty by a scan that
    /// follows a read of an end beyond that record.
    fn current_lsn(&self) -> Lsn;
}

/// A [`WalHook`] for use before the log exists: forcing is a no-op and the end of the log is
/// always [`Lsn::ZERO`].
#[derive(Clone, Copy, Debug, Default)]
pub struct NoWal;

impl WalHook for NoWal {
    fn force_log(&self, _lsn: Lsn) -> Result<()> {
        Ok(())
    }
    fn current_lsn(&self) -> Lsn {
        Lsn::ZERO
    }
}
