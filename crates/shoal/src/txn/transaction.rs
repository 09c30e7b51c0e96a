//! [`Transaction`]: one transaction's locks, log chain, savepoints, commit and rollback
//! (the module doc of `txn` states the rules cited here as "rule n").
//!
//! Latching: a transaction is used by one thread at a time; it takes locks only with no
//! latch held when the request may wait (DESIGN.md principle 5), and its page changes go
//! through X-latched frames ([`Transaction::change_near`]).

use super::*;

/// One transaction. Not shared between threads; dropping it without
/// [`Transaction::commit`] rolls it back.
///
/// ```
/// use shoal::table::{Column, ColumnType, Row, TableDef, Value};
/// use shoal::{Database, Error, IsolationLevel, Options};
/// # fn main() -> shoal::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = Database::create(dir.path(), &Options::default())?;
/// let def = TableDef::new("kv", vec![Column::new("k", ColumnType::Int8),
///                                    Column::new("v", ColumnType::Int8)], &["k"])?;
/// let mut tx = db.begin(IsolationLevel::RepeatableRead);
/// let kv = db.create_table(&mut tx, def)?;
/// kv.insert(&mut tx, &Row::new().with("k", 1i64).with("v", 10i64))?;
/// let sp = tx.savepoint();
/// kv.insert(&mut tx, &Row::new().with("k", 2i64).with("v", 20i64))?;
/// tx.rollback_to(&sp)?; // undoes the second insert only
/// assert!(kv.get(&mut tx, &[Value::Int8(2)])?.is_none());
/// tx.commit()?; // k = 1 is committed; locks are released
///
/// // A deadlock victim or a lock timeout is retryable: roll back and run it again.
/// let mut tx = db.begin(IsolationLevel::Serializable);
/// match kv.update(&mut tx, &[Value::Int8(1)], &Row::new().with("v", 11i64)) {
///     Ok(_) => tx.commit()?,
///     Err(e) if e.is_retryable() => tx.abort()?,
///     Err(e) => return Err(e),
/// }
/// db.close()?;
/// # Ok(()) }
/// ```
pub struct Transaction<'m> {
    mgr: &'m TxnManager,
    id: TxnId,
    entry: Option<Arc<TxnEntry>>,
    system: bool,
    finished: bool,
    /// Run after the commit is durable; dropped on rollback.
    after_commit: Vec<AfterCommit<'m>>,
    /// Run after a rollback (whole, or to a savepoint taken before it was registered).
    on_rollback: Vec<OnRollback<'m>>,
    isolation: IsolationLevel,
    /// Made at the first lock request; released (dropped) when the transaction ends.
    locks: Option<LockOwner>,
    /// The admission slot of a user transaction (rule 10), given back once its commit
    /// record is appended and its locks released, or when it is dropped.
    admitted: Option<admission::Ticket<'m>>,
    /// Page changes logged so far; past `LogOptions::lane_after_records` a user
    /// transaction turns its thread's log lane on (rule 11).
    changes: u32,
    /// A system transaction's changed pages (frame, page id), whose page LSNs its commit
    /// raises to the commit's LSN (rule 12).
    touched: Vec<(u32, PageId)>,
    /// Every record this transaction appends in a log lane goes above this LSN (rule 13).
    floor: Lsn,
    /// Held from the change that turned this transaction's thread's lane on until it ends,
    /// so that a short transaction committing on the thread meanwhile leaves the lane on
    /// (rule 11).
    lane_hold: Option<LaneHold>,
}

/// A point in a transaction to roll back to ([`Transaction::savepoint`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Savepoint {
    txn: TxnId,
    /// The transaction's last record when the savepoint was taken ([`Lsn::ZERO`]: none).
    lsn: Lsn,
    /// After-commit actions registered by then.
    after_commit: usize,
    /// On-rollback actions registered by then.
    on_rollback: usize,
}

/// Work a transaction leaves for after its rollback ([`Transaction::on_rollback`]).
type OnRollback<'m> = Box<dyn FnOnce() -> Result<()> + Send + 'm>;

/// Work a transaction leaves for after its commit.
enum AfterCommit<'m> {
    /// Runs once the commit is durable ([`Transaction::after_commit`]).
    Durable(Box<dyn FnOnce() -> Result<()> + Send + 'm>),
    /// Runs once the commit record is appended, with its LSN
    /// ([`Transaction::after_commit_logged`]).
    Logged(Box<dyn FnOnce(Lsn) -> Result<()> + Send + 'm>),
}

impl<'m> Transaction<'m> {
    /// A new transaction of `mgr` at `isolation` (what [`TxnManager::begin`],
    /// [`TxnManager::begin_with`] and [`TxnManager::begin_system`] return).
    pub(super) fn start(
        mgr: &'m TxnManager,
        system: bool,
        isolation: IsolationLevel,
    ) -> Transaction<'m> {
        Transaction {
            mgr,
            admitted: None,
            id: mgr.ids.next(),
            entry: None,
            system,
            finished: false,
            after_commit: Vec::new(),
            on_rollback: Vec::new(),
            isolation,
            locks: None,
            changes: 0,
            lane_hold: None,
            touched: Vec::new(),
            floor: Lsn::ZERO,
        }
    }

    /// Makes every record this transaction appends from now on in a log lane lie above
    /// `lsn` (rule 13): a structure change whose records carry content of pages other than
    /// their own (a merge's left page gets the right page's entries) passes the highest
    /// page LSN of those pages, which a lane record's own page does not bound.
    pub fn order_after(&mut self, lsn: Lsn) {
        self.floor = self.floor.max(lsn);
    }

    /// The LSN of this transaction's last record, or [`Lsn::ZERO`] before its first (tests).
    #[cfg(test)]
    pub(crate) fn last_lsn(&self) -> Lsn {
        self.entry.as_ref().map_or(Lsn::ZERO, |e| e.last())
    }

    /// The transaction's id.
    pub fn id(&self) -> TxnId {
        self.id
    }

    /// True for a system transaction.
    pub fn is_system(&self) -> bool {
        self.system
    }

    /// The manager this transaction belongs to.
    pub fn manager(&self) -> &'m TxnManager {
        self.mgr
    }

    /// The transaction's isolation level.
    pub fn isolation(&self) -> IsolationLevel {
        self.isolation
    }

    /// Asks for `mode` on `name` for `duration` (txn rule 9). A request covered by a lock
    /// the transaction holds touches no shared memory. With [`Wait::No`] (the form to use
    /// under a latch, DESIGN.md principle 5) a conflicting request returns
    /// [`LockStatus::WouldBlock`] and changes nothing.
    ///
    /// # Errors
    /// [`Error::Deadlock`] (this transaction is the victim: roll it back and retry),
    /// [`Error::LockTimeout`] after `Options::lock_timeout_ms`, [`Error::InvalidArgument`]
    /// after the transaction ended or when more transactions hold locks than
    /// `Options::max_lock_owners` allows.
    pub fn lock(
        &mut self,
        name: &LockName,
        mode: LockMode,
        duration: LockDuration,
        wait: Wait,
    ) -> Result<LockStatus> {
        if self.finished {
            return Err(Error::invalid("txn", "the transaction has ended"));
        }
        // DESIGN.md principle 5: a request that may wait is made with no latch held (debug
        // builds count the latches each thread holds; `sync::held`).
        debug_assert!(
            wait == Wait::No || crate::sync::held::latches_held() == 0,
            "transaction {} asked to wait for a lock on {name:?} while holding {} latches",
            self.id,
            crate::sync::held::latches_held()
        );
        if self.admitted.is_none() && !self.system && mode != mgl::IS && mode != mgl::S {
            // Rule 10: a writer waits for an admission slot before its first write lock.
            self.admitted = self.mgr.admission.as_ref().map(|a| a.enter());
        }
        let owner = match &mut self.locks {
            Some(o) => o,
            None => self.mgr.locks.owner_in(self.id, &mut self.locks)?,
        };
        owner.lock(name, mode, duration, wait)
    }

    /// Hints that this transaction will soon ask for a lock on `name`
    /// ([`LockManager::prefetch`]). Changes nothing.
    pub(crate) fn prefetch_lock(&self, name: &LockName) {
        self.mgr.locks.prefetch(name);
    }

    /// True if the transaction holds a lock on `name` that covers `mode` for `duration`.
    pub fn holds(&self, name: &LockName, mode: LockMode, duration: LockDuration) -> bool {
        self.locks
            .as_ref()
            .is_some_and(|o| o.covers(name, mode, duration))
    }

    /// Number of row-level names (rows, keys) the transaction holds locks on now.
    pub fn row_lock_count(&self) -> usize {
        self.locks.as_ref().map_or(0, |o| o.row_lock_count())
    }

    /// Releases the short part of the transaction's lock on `name` (the end of one READ
    /// COMMITTED read); O(1). False if it held no short lock there.
    pub fn release_short_lock(&mut self, name: &LockName) -> bool {
        self.locks
            .as_mut()
            .is_some_and(|o| o.release_short_on(name))
    }

    /// Releases the transaction's short locks (end of a statement; READ COMMITTED reads).
    pub fn release_short_locks(&mut self) {
        if let Some(o) = &mut self.locks {
            o.release_short();
        }
    }

    fn entry(&mut self) -> &Arc<TxnEntry> {
        let mgr = self.mgr;
        let id = self.id;
        self.entry.get_or_insert_with(|| {
            // Rule 5: registered before the first record; the thread's bound read now
            // (the log's end, or its lane's next claim: log lane rule L4) bounds it below.
            let e = Arc::new(TxnEntry {
                id,
                first_lsn: mgr.log.thread_bound(),
                last_lsn: AtomicU64::new(0),
            });
            mgr.table.insert(e.clone());
            e
        })
    }

    /// Changes the X-latched `page` by the redo payload `redo` (first byte: the resource
    /// manager id), logged with `undo` (interpreted by the resource manager's
    /// [`ResourceManager::undo`]; by default the redo payload of the compensating change).
    /// In a system transaction an empty `undo` makes a redo-only `SystemRedo` record and a
    /// non-empty one a `SystemUpdate` (rule 4). Returns the record's LSN.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] after commit; otherwise as the change sequence (module doc
    /// rules 1–3): the resource manager's refusal or a log failure, with the page unchanged.
    pub fn change(
        &mut self,
        page: &mut ExclusiveGuard<'_>,
        redo: Vec<u8>,
        undo: Vec<u8>,
    ) -> Result<Lsn> {
        self.change_near(page, redo, undo, None)
    }

    /// [`Transaction::change`] with a hint of where on the page the change goes (`near`, as
    /// [`ResourceManager::redo_near`] takes it), so that applying it need not search the
    /// page again.
    ///
    /// # Errors
    /// As [`Transaction::change`].
    pub fn change_near(
        &mut self,
        page: &mut ExclusiveGuard<'_>,
        redo: Vec<u8>,
        undo: Vec<u8>,
        near: Option<usize>,
    ) -> Result<Lsn> {
        if self.finished {
            return Err(Error::invalid("txn", "the transaction has ended"));
        }
        let kind = if self.system {
            if undo.is_empty() {
                RecordKind::SystemRedo
            } else {
                RecordKind::SystemUpdate
            }
        } else {
            RecordKind::Update
        };
        let (mgr, txn_id) = (self.mgr, self.id);
        self.entry();
        // Borrowed, not cloned: an `Arc` clone and drop per record were two atomic
        // read-modify-writes (1.5 % of an insert-heavy profile).
        let entry = self.entry.as_ref().expect("registered just above");
        let rec = LogRecord {
            kind,
            txn_id,
            prev_lsn: entry.last(),
            page_id: page.page_id(),
            undo_next_lsn: Lsn::ZERO,
            redo,
            undo,
        };
        self.changes = self.changes.saturating_add(1);
        // Turned on when a user transaction crosses the threshold, not at each change past
        // it, so that a lane that turned itself off (lane module doc) stays off until the
        // next bulk transaction.
        let after = mgr.log.lane_after_records();
        let bulk = !self.system && after > 0 && self.changes == after.saturating_add(1);
        let floor = self.floor;
        let lsn = mgr
            .log
            .with_lane(bulk, |lane| mgr.log_change(page, &rec, near, lane, floor))?;
        if bulk {
            self.lane_hold = mgr.log.hold_lane();
        }
        entry.set_last(lsn);
        if self.system {
            self.touched.push((page.frame_index(), page.page_id()));
        }
        Ok(lsn)
    }

    /// Logs the just-initialised contents of a newly allocated, X-latched `page` as an image
    /// whose page LSN is its own LSN (a page "format"), so redo rebuilds it without reading
    /// the page. Returns the record's LSN.
    ///
    /// # Errors
    /// [`Error::LogFailed`]; [`Error::InvalidArgument`] after the transaction ended.
    pub fn log_new_page(&mut self, page: &mut ExclusiveGuard<'_>) -> Result<Lsn> {
        if self.finished {
            return Err(Error::invalid("txn", "the transaction has ended"));
        }
        let _ = self.entry();
        let mgr = self.mgr;
        let lsn = mgr.log.with_lane(false, |lane| match lane {
            // Log lane rules L1 and L4. The page's earlier life, if it had one, logged
            // nothing after it was freed, and it was freed only once the log was durable
            // past the records that unlinked it (space invariant 5): every record of it lies
            // below the durable end.
            Some(lane) => {
                page.mark_dirty_since(mgr.log.lane_bound(lane));
                let below_durable = Lsn(mgr.log.durable_lsn().0.saturating_sub(1));
                let after = page.page_lsn().max(below_durable).max(self.floor);
                mgr.log
                    .append_in_lane_checked(lane, &image_record(page, SELF_LSN), after)
            }
            None => {
                page.mark_dirty();
                mgr.append_image(page, SELF_LSN)
            }
        })?;
        page.set_page_lsn(lsn);
        page.set_image_lsn(lsn);
        if self.system {
            self.touched.push((page.frame_index(), page.page_id()));
        }
        Ok(lsn)
    }

    /// Commits: appends the `Commit` record and, for a user transaction, waits as the log's
    /// durability option says. A transaction that changed nothing logs nothing.
    ///
    /// # Errors
    /// [`Error::PoolFailed`] or [`Error::LogFailed`] after a write or sync failure (rule 7):
    /// the transaction is then not known to be committed, and restart decides.
    pub fn commit(mut self) -> Result<()> {
        self.finished = true;
        let Some(entry) = self.entry.take() else {
            // A reader: nothing to log. Under `Full`, a reader that locked may have read a
            // change whose commit released its locks early but is not durable yet (rule 9);
            // it returns only once everything appended before its end is durable. A reader
            // that locked nothing read only below Commit_LSN, which is durable already.
            // Dropped in place (`take` would first move the ~150-byte owner out).
            let locked = self.locks.is_some();
            self.locks = None;
            if let Some(t) = self.admitted.take() {
                t.release(true); // rule 10: not while waiting for the log
            }
            if locked && self.mgr.log.durability() == crate::log::Durability::Full {
                self.mgr.log.wait_all_durable()?;
            }
            return Ok(());
        };
        let mgr = self.mgr;
        mgr.check_healthy()?;
        let rec = LogRecord::control(RecordKind::Commit, self.id, entry.last(), Vec::new());
        let lsn = if self.system {
            // Rule 12: in the thread's lane, if on, so that the pages whose LSNs it raises
            // can be changed next in the same chunk (a bulk load's next insert goes to the
            // page its split just made). A user commit is appended globally (lane rule L3).
            mgr.log.with_lane(false, |lane| match lane {
                Some(lane) => {
                    let after = entry.last().max(self.floor);
                    mgr.log.append_in_lane_checked(lane, &rec, after)
                }
                None => mgr.log.append(&rec),
            })?
        } else {
            mgr.log.append(&rec)?
        };
        entry.set_last(lsn);
        // Rule 12: later changes of the pages a system transaction changed follow its
        // commit, also from a log lane whose chunk lies between its records and its commit.
        if mgr.log.lane_after_records() > 0 {
            for &(frame, pid) in &self.touched {
                mgr.pool.raise_page_lsn_latched(frame, pid, lsn);
            }
        }
        // Rule 9, early lock release (Johnson et al., "Aether", VLDB 2010, §3): locks go once
        // the commit record is appended, before it is durable. A transaction that then
        // reads or overwrites this one's changes appends its own commit later in the log,
        // so a crash that loses this commit loses that one too; a reader that commits
        // nothing waits for the log before it returns (above). Group commit then has
        // something to group even when every transaction updates one hot row.
        self.locks = None;
        // Rule 10: the slot goes with the locks, before the log wait; a committer that will
        // wait for the log hands it to a waiting transaction at once.
        if let Some(t) = self.admitted.take() {
            t.release(mgr.log.durability() == crate::log::Durability::Full);
        }
        if !self.system {
            // Rule 11: a transaction that logged no more than the threshold shows that its
            // thread no longer writes in bulk (after the locks and the slot are released:
            // closing the chunk writes its padding).
            let after = mgr.log.lane_after_records();
            self.lane_hold = None;
            if after > 0 && self.changes <= after {
                mgr.log.lane_off();
            }
            mgr.log.commit(lsn)?;
        }
        // After the commit is durable (under `Full`): Commit_LSN treats what is not in the
        // table as committed (`commit_lsn` module doc).
        mgr.table.remove(self.id);
        if !self.after_commit.is_empty() {
            let actions = std::mem::take(&mut self.after_commit);
            if actions.iter().any(|a| matches!(a, AfterCommit::Durable(_))) {
                mgr.log.wait_durable(lsn)?;
            }
            for action in actions {
                match action {
                    AfterCommit::Durable(f) => f()?,
                    AfterCommit::Logged(f) => f(lsn)?,
                }
            }
        }
        Ok(())
    }

    /// Registers `action` to run once this transaction's commit is durable (at the end of
    /// [`Transaction::commit`], which then waits for durability even under `Lazy`
    /// durability); it is dropped if the transaction rolls back. For work that must not
    /// happen unless the commit survives a crash, such as freeing the overflow pages of a
    /// value the transaction deleted (a rollback would need them back).
    pub fn after_commit(&mut self, action: impl FnOnce() -> Result<()> + Send + 'm) {
        self.after_commit
            .push(AfterCommit::Durable(Box::new(action)));
    }

    /// Registers `action` to run at the end of [`Transaction::commit`] with the LSN of the
    /// commit record, which may not be durable yet (under `Lazy` durability), so the commit
    /// does not wait for the log on its account; it is dropped if the transaction rolls
    /// back. For work that can itself be deferred until the log is durable up to that LSN,
    /// such as queueing pages to be freed then ([`SpaceManager::free_after`]).
    ///
    /// [`SpaceManager::free_after`]: crate::space::SpaceManager::free_after
    pub fn after_commit_logged(&mut self, action: impl FnOnce(Lsn) -> Result<()> + Send + 'm) {
        self.after_commit
            .push(AfterCommit::Logged(Box::new(action)));
    }

    /// Marks a savepoint: [`Transaction::rollback_to`] with it undoes every change made
    /// after this call and keeps the ones before (ARIES savepoints, Mohan et al. §6.4: the
    /// savepoint is the LSN of the transaction's last record).
    pub fn savepoint(&self) -> Savepoint {
        Savepoint {
            txn: self.id,
            lsn: self.entry.as_ref().map_or(Lsn::ZERO, |e| e.last()),
            after_commit: self.after_commit.len(),
            on_rollback: self.on_rollback.len(),
        }
    }

    /// Partial rollback: undoes, newest first, every change made since `sp` was taken,
    /// writing compensation records as a full rollback does, and drops the after-commit
    /// actions registered since. The transaction stays active; `sp` stays usable (rolling
    /// back to it again undoes what was done after this call). Locks taken since `sp` are
    /// kept (strict two-phase locking: releasing them early could expose changes of this
    /// transaction that a later rollback would have to take back again).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `sp` belongs to another transaction or the transaction
    /// has ended; log and buffer-pool errors (the transaction should then be aborted).
    pub fn rollback_to(&mut self, sp: &Savepoint) -> Result<()> {
        if sp.txn != self.id || self.finished {
            return Err(Error::invalid(
                "savepoint",
                format!(
                    "savepoint of transaction {} used in transaction {}{}",
                    sp.txn,
                    self.id,
                    if self.finished {
                        ", which has ended"
                    } else {
                        ""
                    }
                ),
            ));
        }
        self.after_commit.truncate(sp.after_commit);
        if let Some(entry) = self.entry.clone() {
            let mut next = entry.last();
            while next > sp.lsn {
                next = self.mgr.undo_step(&entry, next)?;
            }
        }
        let undone: Vec<_> = self
            .on_rollback
            .drain(sp.on_rollback.min(self.on_rollback.len())..)
            .collect();
        for action in undone.into_iter().rev() {
            action()?;
        }
        Ok(())
    }

    /// Registers `action` to run after this transaction rolls back (after the undo, newest
    /// action first; also for a rollback to a savepoint taken before this call); dropped at
    /// commit. For work whose effect the log cannot undo, such as freeing the pages of a
    /// B-tree made for a CREATE TABLE that rolls back. A rollback by restart after a crash
    /// does not run it.
    pub fn on_rollback(&mut self, action: impl FnOnce() -> Result<()> + Send + 'm) {
        self.on_rollback.push(Box::new(action));
    }

    /// Gives up on the transaction without rolling it back, for a caller that holds latches
    /// a rollback would need, after a failure that has failed the database (a log failure in
    /// the middle of a structure change). The transaction stays in the active table, so
    /// checkpoints keep its records, and the next restart rolls it back.
    pub fn abandon(mut self) {
        self.finished = true;
    }

    /// Rolls back: appends `Abort`, undoes every change along the previous-LSN chain writing
    /// compensation records, then appends `End`.
    ///
    /// # Errors
    /// Log and buffer-pool errors; the rollback then stops and restart finishes it.
    pub fn abort(mut self) -> Result<()> {
        self.rollback()
    }

    fn rollback(&mut self) -> Result<()> {
        self.finished = true;
        let mut result = self.undo_all();
        if result.is_ok() {
            for action in std::mem::take(&mut self.on_rollback).into_iter().rev() {
                result = result.and(action());
            }
        }
        // Rule 9: locks outlive the undo (others must not see the changes being undone).
        self.locks = None;
        result
    }

    fn undo_all(&mut self) -> Result<()> {
        let Some(entry) = self.entry.take() else {
            return Ok(());
        };
        let mgr = self.mgr;
        let lsn = mgr.log.append(&LogRecord::control(
            RecordKind::Abort,
            self.id,
            entry.last(),
            Vec::new(),
        ))?;
        entry.set_last(lsn);
        let mut next = lsn;
        while next != Lsn::ZERO {
            next = mgr.undo_step(&entry, next)?;
        }
        mgr.end(&entry)
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        if !self.finished {
            // Best effort; if it fails the database has failed and restart rolls it back.
            let _ = self.rollback();
        }
    }
}

impl std::fmt::Debug for Transaction<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("id", &self.id)
            .field("system", &self.system)
            .finish()
    }
}
