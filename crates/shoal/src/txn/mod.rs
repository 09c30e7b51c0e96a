//! # Transactions (skeleton) and the WAL-logged page change
//!
//! Job: give changes to pages a transaction — an id, a previous-LSN chain of log records,
//! commit (durable per [`Durability`](crate::log::Durability)) and abort (undo along the
//! chain with compensation records) — and make every page change in one fixed, logged
//! sequence (DESIGN.md §3.5–3.8; STYLE.md practice 3). Locks come with the lock-manager issue;
//! until then callers keep concurrent transactions off each other's records.
//!
//! ```text
//!  begin ─► (first change: register in the table) ─► change … change ─► commit ─► wait_durable
//!                                                          └──────────► abort ─► undo chain ─► End
//!  change(page X-latched):  image if clean ─► check ─► apply redo ─► append ─► page LSN
//! ```
//!
//! ## Rules
//! 1. **A change is made by applying its own redo record** ([`ResourceManager::redo`]), so
//!    what the log says and what the page holds cannot differ, and redo runs the same code.
//! 2. **Check before change.** The record is checked as appendable
//!    ([`LogManager::check_append`]) and the manager checks the payload before changing a
//!    byte; if the append still fails after the page changed (the log failed meanwhile), the
//!    buffer pool is failed too, so the unlogged change can never reach the disk.
//! 3. **Torn-page rule** (full-page images, DESIGN.md §3.2): before a page that is clean in the
//!    pool is changed, it is marked dirty with a recovery LSN at or below an image of it in
//!    the log after which all its changes are logged. That image is either logged now
//!    ([`image`]), or, if the frame remembers one (`image_lsn`, forgotten on eviction) whose
//!    LSN is at or after the begin LSN of the newest checkpoint, that one (the page's
//!    recovery LSN becomes the image's LSN). Every page that a crash can find torn was
//!    written while dirty, hence has an image at or after the redo LSN of any later
//!    checkpoint, and redo installs that image instead of reading the torn copy. Reusing an
//!    image is what PostgreSQL does with `full_page_writes` (one image per page per checkpoint
//!    interval) instead of one per clean→dirty transition; the race with a checkpoint is a
//!    Dekker pair: the transaction stores the dirty flag, fences, loads the checkpoint's
//!    begin LSN; the checkpoint stores that LSN, fences, scans the dirty flags — at least one
//!    sees the other, so either the image is logged anew or the checkpoint's redo LSN reaches
//!    back to the reused image. Restart's redo keeps at most two checkpoint intervals of log
//!    this way.
//! 4. **Roles as types**: user transactions write `Update` records (redo + undo); system
//!    transactions ([`TxnManager::begin_system`]) write redo-only `SystemRedo` records, or
//!    `SystemUpdate` records with a page-oriented undo (the records of an ARIES nested top
//!    action: undone only if the crash cut the system transaction short), and commit without
//!    waiting; compensation records are written only by [`UndoContext`], whose
//!    `undo_next_lsn` skips what they undid.
//! 8. **A system transaction appends its `Commit` before it releases the latches of the pages
//!    it changed**, so any later change to those pages follows its `Commit` in the log (with
//!    log lanes, by rule 12), and restart may roll back an incomplete one page-oriented,
//!    before the user transactions (recovery rule 4).
//! 5. A transaction is registered in the active table before its first record is appended
//!    and leaves it after its `Commit` or `End` record; a checkpoint keeps the log from the
//!    lowest first LSN in the table, so restart's analysis sees every record of every
//!    transaction that may need undo.
//! 6. A `Commit` record ends a transaction (no `End` follows it); a rollback ends with `End`.
//! 7. **Sticky failure**: after a log or data-file write or sync failure, commit returns
//!    [`Error::LogFailed`] / [`Error::PoolFailed`] until the database is reopened and
//!    recovered.
//! 9. **Strict two-phase locking with early lock release** (DESIGN.md §3.8; Johnson et al.,
//!    "Aether", VLDB 2010, §3): a transaction's locks ([`Transaction::lock`], one
//!    [`LockOwner`] made at its first request) are released together when it ends — once
//!    its `Commit` is appended, before the wait for durability under `Full` (a dependent
//!    transaction's commit follows it in the log; a read-only transaction that locked waits
//!    for the log's end to be durable before its commit returns), or after its rollback
//!    has undone everything — except short locks, which
//!    [`Transaction::release_short_locks`] drops at the end of a statement. A partial
//!    rollback keeps its locks. Begin and commit take no mutex shared by all transactions.
//!
//! 10. **Admission** ([`admission`]): with a limit set ([`TxnManager::set_admission`]),
//!     a user transaction takes a slot of the admission gate before its first write lock
//!     (a request in a mode other than IS and S: readers are never held back, and a
//!     select of a few hundred nanoseconds would spend more on the gate than it saves;
//!     `select1` at 64 threads fell from 2.7 M to 0.25 M/s when every transaction was
//!     gated at `begin`), and gives it back when its `Commit` is appended and its locks
//!     are released (before a `Full` commit waits for the log), or when it is dropped; nested
//!     transactions of one thread share its slot. A transaction keeps its slot while it
//!     waits for a lock (giving it away lets in transactions that queue for the same hot
//!     lock: TPC-B at 16 threads fell back from 116 k to 32 k). The gate is a soft limit
//!     (a wait of at most `admission::MAX_WAIT`), so a lock wait, or threads that wait for
//!     each other inside transactions, cannot deadlock through it.
//! 11. **Log lanes for bulk writers** (`log::manager::lane`; `LogOptions::lane_after_records`,
//!     0 turns them off; rules 12 and 13 with them): once a user transaction
//!     has logged more than [`LogOptions::lane_after_records`] page changes (default 256),
//!     its thread's [`Lane`]
//!     turns on, and from then on the page changes of every transaction of that thread —
//!     system transactions included — and the images rule 3 logs for them go in chunks of
//!     log the thread claims alone. Each record lies above its page's LSN and above its
//!     transaction's previous record (lane rules L1, L2); a page dirtied there gets its
//!     recovery LSN, and a transaction registering its first LSN, from the lane (rule L4).
//!     A user transaction's `Commit`, and every `Abort`, `End` and compensation record,
//!     are appended globally (rule L3); a system transaction's `Commit` goes in the lane
//!     (rule 12). A user transaction that commits with no more page changes than the
//!     threshold turns its thread's lane off again (the thread no longer writes in bulk),
//!     unless a bulk transaction that turned the lane on is still open (it holds the lane
//!     until it ends, on whatever thread: `LogManager::hold_lane`).
//!     Short transactions never reach the threshold, so they pay nothing; a
//!     bulk loader touches the shared reservation counter about once per chunk instead of
//!     once per record.
//! 12. **A system commit raises its pages' LSNs to its own.** With lanes, a record's LSN
//!     only has to exceed its page's LSN (lane rule L1), so a change made after a system
//!     transaction released a page could land in a chunk reserved between that
//!     transaction's last record on the page and its `Commit`, and a crash that lost the
//!     `Commit` would then roll the structure change back under it. So the commit sets the
//!     page LSN of every page the transaction changed (still X-latched, rule 8) to the
//!     commit's LSN (`BufferPool::raise_page_lsn_latched`); every later change lies above
//!     it. Found by the B-tree crash matrix run with lanes on from the second change. The
//!     commit itself goes in the thread's lane when one is on: a global one lies past the
//!     lane's chunk, and the bulk load's next insert, into the page its split just made,
//!     would have to close the chunk (29 % more log in the insert benchmark).
//! 13. **A record that carries other pages' content goes above their LSNs.** A merge's
//!     format of its left page holds the right page's entries, a split's new page and a
//!     grown root's new children hold entries of the page they came from: in a lane, such
//!     a record's own page's LSN does not bound the changes it carries, and a record of
//!     the source page above it would be redone again on top of them. The B-tree passes
//!     the source pages' highest LSN ([`Transaction::order_after`]).
//!
//! ## Latching
//! A change holds the X latch of its one page from the image through the page-LSN store;
//! the active table's shard mutexes are never held while latching a page or waiting for I/O.
//!
//! ## Not done here
//! Locking and isolation, savepoints (lock-manager issue); reading a rolled-back transaction's
//! records from the insert buffer instead of forcing the log first.

pub mod admission;
mod commit_lsn;
mod ids;
pub mod image;
mod rm;
mod space_log;
mod table;
mod transaction;

pub use image::{ImageView, IMAGE_HEADER_BYTES, SELF_LSN};
pub use rm::{ResourceManager, Resources};
pub use space_log::SpaceRm;
pub use transaction::{Savepoint, Transaction};

use crate::buffer::{BufferPool, ExclusiveGuard};
use crate::error::{Error, Result};
use crate::lock::{
    mgl, LockDuration, LockManager, LockMode, LockName, LockOwner, LockStatus, Wait,
};
use crate::log::record::{LogRecord, RecordKind, RecordRole};
#[cfg(doc)]
use crate::log::LogOptions;
use crate::log::{Lane, LaneHold, LogManager};
use crate::types::{Lsn, PageId, TxnId};
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Arc;
pub(crate) use table::TxnEntry;
use table::TxnTable;

/// Creates transactions over one log and buffer pool and keeps the table of active ones.
pub struct TxnManager {
    log: Arc<LogManager>,
    pool: Arc<BufferPool>,
    resources: Resources,
    ids: ids::TxnIds,
    table: TxnTable,
    /// LSN of the `CheckpointBegin` of the newest checkpoint that has started (rule 3).
    checkpoint_begin: AtomicU64,
    locks: Arc<LockManager>,
    commit_lsn: commit_lsn::CommitLsn,
    /// The admission gate of user transactions ([`admission`]); `None`: no limit.
    admission: Option<admission::Admission>,
}

/// The isolation level of a transaction (ANSI SQL-92 levels as locking defines them: Gray
/// et al. 1976 "degrees of consistency"; Berenson et al., "A Critique of ANSI SQL Isolation
/// Levels", SIGMOD 1995). Writes always take long exclusive locks (strict two-phase
/// locking); the levels differ in read locks, which the access methods take:
///
/// | level | read locks | prevents |
/// |---|---|---|
/// | `ReadUncommitted` | none | lost updates (writes only) |
/// | `ReadCommitted` | short S on each key read, released when the read ends (cursor stability) | dirty reads |
/// | `RepeatableRead` | long S on each key read | also non-repeatable reads, lost updates of read rows |
/// | `Serializable` | long S on each key read and on the key after every range or absent key read (next-key locking) | also phantoms and write skew |
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IsolationLevel {
    /// Reads take no locks and may see uncommitted changes.
    ReadUncommitted,
    /// Reads see only committed data (short read locks). The default, as in Derby and
    /// PostgreSQL.
    #[default]
    ReadCommitted,
    /// Rows read stay unchanged until commit (long read locks).
    RepeatableRead,
    /// Equivalent to some serial order (long read locks plus next-key locks).
    Serializable,
}

impl TxnManager {
    /// A transaction manager whose first transaction id is 1, with `locks` as its lock
    /// manager (DESIGN.md §3.7: an MGL mode table).
    pub fn new(
        log: Arc<LogManager>,
        pool: Arc<BufferPool>,
        resources: Resources,
        locks: Arc<LockManager>,
    ) -> TxnManager {
        TxnManager {
            locks,
            log,
            pool,
            resources,
            ids: ids::TxnIds::new(),
            table: TxnTable::new(),
            checkpoint_begin: AtomicU64::new(0),
            commit_lsn: commit_lsn::CommitLsn::new(),
            admission: None,
        }
    }

    /// Limits the user transactions running at once to `limit` ([`admission`]: a soft
    /// limit; 0 removes it), a thread taking at most `turns` slots in a row while others
    /// wait (at least 1; `Options::max_running_txns`, `Options::admission_turns`). System
    /// transactions are never held back.
    pub fn set_admission(&mut self, limit: usize, turns: u32) {
        self.admission = (limit > 0).then(|| admission::Admission::with_turns(limit, turns));
    }

    /// The admission gate, if user transactions are limited.
    pub fn admission(&self) -> Option<&admission::Admission> {
        self.admission.as_ref()
    }

    /// Commit_LSN (Mohan, VLDB 1990): an LSN such that every change with a lower LSN was
    /// made by a transaction that has committed (durably, under `Full` durability) or been
    /// rolled back. A page whose page LSN is below it holds only committed data, so a READ
    /// COMMITTED read of it needs no lock. Pass the page LSN about to be tested: when it is
    /// not below the cached bound, the bound is recomputed (at most every 100 µs).
    pub fn commit_lsn(&self, page_lsn: Lsn) -> Lsn {
        self.commit_lsn.bound(page_lsn, &self.log, &self.table)
    }

    /// The cached Commit_LSN, not recomputed: take it *before* the read it is applied to
    /// (`commit_lsn` module doc), and call [`TxnManager::commit_lsn`] after a page at or
    /// above it to advance it for later reads.
    pub fn commit_lsn_cached(&self) -> Lsn {
        self.commit_lsn.cached()
    }

    /// The log.
    pub fn log(&self) -> &Arc<LogManager> {
        &self.log
    }

    /// The buffer pool.
    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }

    /// The lock manager.
    pub fn locks(&self) -> &Arc<LockManager> {
        &self.locks
    }

    /// The resource managers.
    pub fn resources(&self) -> &Resources {
        &self.resources
    }

    /// Makes ids up to `id` used (restart calls it with the highest id found in the log).
    pub fn reserve_ids_through(&self, id: TxnId) {
        self.ids.reserve_through(id);
    }

    /// Starts a user transaction at [`IsolationLevel::ReadCommitted`]. Writes no shared
    /// memory (its id comes from the thread's batch, `ids`); nothing is logged or registered
    /// until its first change, no lock owner is made until its first lock.
    pub fn begin(&self) -> Transaction<'_> {
        Transaction::start(self, false, IsolationLevel::ReadCommitted)
    }

    /// Starts a user transaction at `isolation`.
    pub fn begin_with(&self, isolation: IsolationLevel) -> Transaction<'_> {
        Transaction::start(self, false, isolation)
    }

    /// Starts a system transaction (nested top action, DESIGN.md §3.6): its changes are
    /// redo-only and it commits on its own, without waiting for durability (a later commit
    /// that depends on it forces the log past it anyway).
    pub fn begin_system(&self) -> Transaction<'_> {
        Transaction::start(self, true, IsolationLevel::ReadCommitted)
    }

    /// The lowest first LSN of the active transactions, [`Lsn::MAX`] if none has logged.
    pub fn oldest_first_lsn(&self) -> Lsn {
        self.table.oldest_first_lsn()
    }

    /// Number of active transactions that have logged something.
    pub fn active_count(&self) -> usize {
        self.table.len()
    }

    /// `Err` if the log or the pool has failed (rule 7).
    fn check_healthy(&self) -> Result<()> {
        if let Some(f) = self.pool.failure() {
            return Err(Error::PoolFailed {
                first_failure: f.to_string(),
            });
        }
        Ok(())
    }

    /// Registers a transaction continued by restart (a loser to roll back).
    pub(crate) fn adopt(&self, id: TxnId, first_lsn: Lsn, last_lsn: Lsn) -> Arc<TxnEntry> {
        let e = Arc::new(TxnEntry {
            id,
            first_lsn,
            last_lsn: AtomicU64::new(last_lsn.0),
        });
        self.table.insert(e.clone());
        self.reserve_ids_through(id);
        e
    }

    /// Appends the `End` record of `entry` and removes it from the table.
    pub(crate) fn end(&self, entry: &TxnEntry) -> Result<()> {
        let lsn = self.log.append(&LogRecord::control(
            RecordKind::End,
            entry.id,
            entry.last(),
            Vec::new(),
        ))?;
        entry.set_last(lsn);
        self.table.remove(entry.id);
        Ok(())
    }

    /// Makes one WAL-logged change to the X-latched `page` (rules 1–3): logs an image if the
    /// page is clean, applies `rec.redo` (with the place hint `near`,
    /// [`ResourceManager::redo_near`]), appends `rec`, sets the page LSN. Returns the
    /// record's LSN.
    ///
    /// # Errors
    /// The log's errors ([`Error::LogFailed`], [`Error::InvalidArgument`] for an oversized
    /// record) with the page unchanged; the resource manager's check errors with the page
    /// unchanged.
    pub(crate) fn log_change(
        &self,
        page: &mut ExclusiveGuard<'_>,
        rec: &LogRecord,
        near: Option<usize>,
        mut lane: Option<&mut Lane>,
        floor: Lsn,
    ) -> Result<Lsn> {
        debug_assert_eq!(page.page_id(), rec.page_id);
        self.log.check_append(rec)?;
        self.ensure_image(page, lane.as_deref_mut())?;
        let pid = page.page_id();
        self.resources.redo(
            Lsn::ZERO, // not logged yet (`ResourceManager::redo`)
            pid,
            &rec.redo,
            &mut page.page_mut(),
            near,
        )?;
        let appended = match lane {
            // Lane rules L1 and L2: above the page's LSN, read under its X latch, and the
            // transaction's previous record.
            Some(lane) => {
                // The page's image (rule 3) may be newer than its page LSN.
                let after = page
                    .page_lsn()
                    .max(page.image_lsn())
                    .max(rec.prev_lsn)
                    .max(floor);
                self.log.append_in_lane_checked(lane, rec, after)
            }
            None => self.log.append_checked(rec),
        };
        match appended {
            Ok(lsn) => {
                page.set_page_lsn(lsn);
                Ok(lsn)
            }
            Err(e) => {
                // Rule 2: the page holds a change the log does not; it must never be written.
                self.pool
                    .fail(format!("page {pid} changed but its log record failed: {e}"));
                Err(e)
            }
        }
    }

    /// Rule 3: marks a clean `page` dirty and logs its image, unless the frame knows an
    /// image logged since the newest checkpoint began (then the page's recovery LSN becomes
    /// that image's LSN, and nothing is logged).
    pub(crate) fn ensure_image(
        &self,
        page: &mut ExclusiveGuard<'_>,
        lane: Option<&mut Lane>,
    ) -> Result<()> {
        if page.is_dirty() {
            if let Some(l) = &lane {
                // Lane rule L4: dirtied with the log's end as its recovery LSN (an unlogged
                // change of a space map page does that), it may now be changed below it.
                page.lower_rec_lsn(self.log.lane_bound(l));
            }
            return Ok(());
        }
        let known = page.image_lsn();
        if known == Lsn::ZERO {
            match &lane {
                // Lane rule L4: the record about to dirty the page may lie below the log's
                // end; its lane's next claim bounds it.
                Some(l) => page.mark_dirty_since(self.log.lane_bound(l)),
                None => page.mark_dirty(),
            }
        } else {
            page.mark_dirty_since(known);
            // Dekker pair with `publish_checkpoint_begin`: either this load sees the new
            // checkpoint's begin LSN (and the image is logged anew), or that checkpoint's
            // scan sees this page dirty with recovery LSN `known` (so its redo LSN, and the
            // log it keeps, reach back to the image).
            std::sync::atomic::fence(SeqCst);
            if known.0 >= self.checkpoint_begin.load(SeqCst) {
                return Ok(());
            }
            // A fresh image after all: the recovery LSN need not reach back to the old one.
            match &lane {
                Some(l) => page.reset_rec_lsn_to(self.log.lane_bound(l)), // lane rule L4
                None => page.reset_rec_lsn(),
            }
        }
        let lsn = match lane {
            Some(l) => {
                let rec = image_record(page, 0);
                self.log.append_in_lane_checked(l, &rec, page.page_lsn())?
            }
            None => self.append_image(page, 0)?,
        };
        page.set_image_lsn(lsn);
        Ok(())
    }

    /// Called by a checkpoint after appending its `CheckpointBegin` at `begin` and before
    /// it scans the pool for recovery LSNs (rule 3's Dekker pair with `ensure_image`).
    /// Begin LSN of the newest checkpoint ([`Lsn::ZERO`] before the first).
    pub(crate) fn checkpoint_begin(&self) -> Lsn {
        Lsn(self.checkpoint_begin.load(Relaxed))
    }

    pub(crate) fn publish_checkpoint_begin(&self, begin: Lsn) {
        self.checkpoint_begin.fetch_max(begin.0, SeqCst);
        std::sync::atomic::fence(SeqCst);
        self.pool.set_image_horizon(begin);
    }

    /// Appends an image of `page` (flags as in [`image`]) globally; returns its LSN.
    pub(crate) fn append_image(&self, page: &ExclusiveGuard<'_>, flags: u32) -> Result<Lsn> {
        self.log.append(&image_record(page, flags))
    }

    /// Undoes the record of `entry` at `lsn` (one step of a rollback) and returns the LSN of
    /// the next record to look at ([`Lsn::ZERO`] when the chain is done). Shared by abort and
    /// restart's undo pass.
    ///
    /// # Errors
    /// Log read errors; the resource manager's undo errors.
    pub(crate) fn undo_step(&self, entry: &TxnEntry, lsn: Lsn) -> Result<Lsn> {
        let rec = self.log.read_record(lsn)?;
        if rec.txn_id != entry.id {
            return Err(Error::log_corruption(
                lsn,
                format!(
                    "record of transaction {} on the chain of transaction {}",
                    rec.txn_id, entry.id
                ),
            ));
        }
        Ok(match rec.kind.role() {
            RecordRole::Undoable => {
                let rm = self.resources.for_payload(lsn, &rec.redo)?.clone();
                let mut ctx = UndoContext {
                    mgr: self,
                    entry,
                    undo_next: rec.prev_lsn,
                    record_lsn: lsn,
                };
                rm.undo(&mut ctx, &rec)?;
                rec.prev_lsn
            }
            RecordRole::Compensation => rec.undo_next_lsn,
            RecordRole::Control | RecordRole::RedoOnly => rec.prev_lsn,
        })
    }
}

impl std::fmt::Debug for TxnManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxnManager")
            .field("next_id", &self.ids.peek())
            .field("active", &self.table.len())
            .finish()
    }
}

/// What an undo may do: make compensating changes, each logged as a compensation record of
/// the rolling-back transaction (rule 4). Made only by the rollback code.
pub struct UndoContext<'a> {
    mgr: &'a TxnManager,
    entry: &'a TxnEntry,
    undo_next: Lsn,
    record_lsn: Lsn,
}

impl UndoContext<'_> {
    /// The LSN of the record being undone (to name it in errors).
    pub fn record_lsn(&self) -> Lsn {
        self.record_lsn
    }

    /// Applies the redo payload `redo` to page `page_id` as a compensation record whose
    /// `undo_next_lsn` is the undone record's previous LSN.
    ///
    /// # Errors
    /// Buffer pool errors fixing the page; those of the change itself (log failure, a
    /// payload the resource manager refuses).
    pub fn compensate(&mut self, page_id: PageId, redo: Vec<u8>) -> Result<()> {
        let mut page = self.mgr.pool.fix_exclusive(page_id)?;
        self.compensate_on(&mut page, redo).map(|_| ())
    }

    /// Applies the redo payload `redo` to the X-latched `page` as a compensation record, for
    /// a logical undo that found its page itself (a B-tree key that may have moved since the
    /// undone change). Returns the record's LSN.
    ///
    /// # Errors
    /// As [`UndoContext::compensate`], without the fix.
    pub fn compensate_on(&mut self, page: &mut ExclusiveGuard<'_>, redo: Vec<u8>) -> Result<Lsn> {
        let rec = LogRecord {
            kind: RecordKind::Compensation,
            txn_id: self.entry.id,
            prev_lsn: self.entry.last(),
            page_id: page.page_id(),
            undo_next_lsn: self.undo_next,
            redo,
            undo: Vec::new(),
        };
        let lsn = self.mgr.log_change(page, &rec, None, None, Lsn::ZERO)?;
        self.entry.set_last(lsn);
        Ok(lsn)
    }

    /// The buffer pool (for a logical undo that must find its page).
    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.mgr.pool
    }

    /// The transaction manager (for a logical undo that needs a system transaction, such as
    /// a B-tree split to make room for a key it puts back).
    pub fn manager(&self) -> &TxnManager {
        self.mgr
    }
}

/// The `PageImage` record of `page` (flags as in [`image`]).
fn image_record(page: &ExclusiveGuard<'_>, flags: u32) -> LogRecord {
    LogRecord {
        kind: RecordKind::PageImage,
        txn_id: TxnId::NONE,
        prev_lsn: Lsn::ZERO,
        page_id: page.page_id(),
        undo_next_lsn: Lsn::ZERO,
        redo: image::encode(page.bytes(), flags),
        undo: Vec::new(),
    }
}
