//! The lock manager: options, the shared state every owner points to, and the request path
//! through the lock table (queueing, deadlock search, parking, timeout).

use super::deadlock::{Detector, Graph, Verdict};
use super::fastpath::FastPath;
use super::mode::{LockMode, ModeTable};
use super::name::LockName;
use super::owner::LockOwner;
use super::table::{LockTable, Outcome, Wakeups};
use super::waits::{Owners, WaitEnd};
use crate::error::{Error, Result};
use crate::stats::{StripedCounter, WaitTable};
use crate::types::TxnId;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Lock manager settings. [`LockOptions::validate`] checks them.
#[derive(Clone, Debug)]
pub struct LockOptions {
    /// Buckets of the lock table, each with its own latch: a power of two from 1 to 2^24.
    /// Default 16,384 (3 MiB of buckets, 192 bytes each): enough that the row locks of
    /// different transactions seldom share a bucket, whose cache line would then move
    /// between their cores.
    pub partitions: usize,
    /// Longest a request waits before it fails with [`Error::LockTimeout`]. Default
    /// 60,000 ms (Derby's `derby.locks.waitTimeout`). Zero: fail at once instead of waiting
    /// (after the deadlock search).
    pub timeout: Duration,
    /// Long row locks of one table a transaction may hold before it tries to escalate to a
    /// table lock (module doc, rule E1). Default 5,000 (Derby). Zero disables escalation.
    pub escalation_threshold: usize,
    /// Most [`LockOwner`]s (transactions) alive at once, from 1 to 2^20. Default 1024.
    /// A slot parked by lock inheritance counts until it is resumed, revoked or taken
    /// over; an owner asked for while all are in use takes a parked one over.
    pub max_owners: usize,
    /// Speculative lock inheritance (module doc, rule F5; Johnson et al., VLDB 2009): a
    /// transaction's weak table-level locks on the fast path (MGL IS and IX) outlive it,
    /// parked with its thread, and the thread's next transaction on this manager starts
    /// holding them — so a stream of short transactions takes and releases no table lock.
    /// A strong request on such a name revokes the parked locks instead of waiting for
    /// them, and drops an inherited lock that the thread's running transaction has not
    /// asked for yet. Default true.
    pub inheritance: bool,
}

impl Default for LockOptions {
    fn default() -> Self {
        LockOptions {
            partitions: 16_384,
            timeout: Duration::from_millis(60_000),
            escalation_threshold: 5_000,
            max_owners: 1024,
            inheritance: true,
        }
    }
}

impl LockOptions {
    /// Checks every field's range.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        if !self.partitions.is_power_of_two() || self.partitions > 1 << 24 {
            return Err(Error::invalid(
                "partitions",
                format!("{} is not a power of two from 1 to 2^24", self.partitions),
            ));
        }
        if self.max_owners == 0 || self.max_owners > 1 << 20 {
            return Err(Error::invalid(
                "max_owners",
                format!("{} is not from 1 to 2^20", self.max_owners),
            ));
        }
        Ok(())
    }
}

/// How long a lock is held.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LockDuration {
    /// Granted and released at once: the caller only needs to know that nobody holds a
    /// conflicting lock at this moment (e.g. an insert checking a key-range lock).
    Instant,
    /// Released by [`LockOwner::release_short`] (end of statement; READ COMMITTED read
    /// locks) or by [`LockOwner::release_all`].
    Short,
    /// Released by [`LockOwner::release_all`] at commit or rollback (strict 2PL).
    Long,
}

/// Whether a request that cannot be granted at once waits.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Wait {
    /// Wait (up to the timeout; deadlock search first).
    Yes,
    /// Do not wait and do not queue: answer [`LockStatus::WouldBlock`]. The form to use
    /// under a latch (DESIGN.md principle 5).
    No,
}

/// The answer to a lock request that did not fail.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LockStatus {
    /// The lock is held (or was, for [`LockDuration::Instant`]).
    Granted,
    /// [`Wait::No`] and the request conflicts: nothing was queued or changed.
    WouldBlock,
}

/// A snapshot of the lock manager's counters (slow-path events only; since creation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LockStats {
    /// Requests that had to wait.
    pub waits: u64,
    /// Total time waited, in microseconds.
    pub wait_us: u64,
    /// Requests that failed with [`Error::Deadlock`].
    pub deadlocks: u64,
    /// Requests that failed with [`Error::LockTimeout`].
    pub timeouts: u64,
    /// Times a waiter's thread, off the processor when the lock it waited for was
    /// released, was asked to take the lock itself instead of having it handed over (lock
    /// table rule T7).
    pub retries: u64,
    /// Of those, the times another request took the lock first and the waiter waited
    /// again.
    pub retries_lost: u64,
    /// Escalations to a table lock that succeeded.
    pub escalations: u64,
    /// Escalations that found the table lock not grantable (and kept the row locks).
    pub escalations_refused: u64,
    /// Fast-path locks moved into the lock table by strong requests.
    pub fast_path_moves: u64,
    /// Inherited locks (rule F5) that strong requests took away instead of waiting for:
    /// parked slots revoked, and entries a running transaction had not taken up dropped.
    pub inherited_revoked: u64,
    /// The lock names waited on most (up to [`HOT_LOCKS`]), most waits first: where
    /// transactions queue (DESIGN.md §3.11).
    pub hottest_locks: Vec<LockWaits>,
}

/// Entries of [`LockStats::hottest_locks`].
pub const HOT_LOCKS: usize = 10;

/// Waits on one lock name since the manager was made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LockWaits {
    /// The name, as [`LockName`]'s `Display` writes it (e.g. `key(1.7, 0x8000002a)`).
    pub lock: String,
    /// The table (or document) number in the name, 0 for a database name: lets a caller
    /// say which table a hot key lock belongs to (`Table::id`).
    pub container: u32,
    /// Requests on it that waited (granted, deadlocked or timed out).
    pub waits: u64,
    /// Total time those requests waited, in microseconds.
    pub wait_us: u64,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) waits: StripedCounter,
    pub(crate) wait_us: StripedCounter,
    pub(crate) deadlocks: StripedCounter,
    pub(crate) timeouts: StripedCounter,
    pub(crate) retries: StripedCounter,
    pub(crate) retries_lost: StripedCounter,
    pub(crate) escalations: StripedCounter,
    pub(crate) escalations_refused: StripedCounter,
    pub(crate) fast_path_moves: StripedCounter,
    pub(crate) inherited_revoked: StripedCounter,
    /// Waits by lock name (slow path only: recorded after a request waited).
    pub(crate) by_name: WaitTable<LockName>,
}

/// State shared by the manager handle and every owner.
pub(crate) struct Shared {
    pub(crate) modes: &'static ModeTable,
    pub(crate) options: LockOptions,
    pub(crate) table: LockTable,
    pub(crate) fast: FastPath,
    pub(crate) owners: Owners,
    detector: Detector,
    pub(crate) counters: Counters,
    id: u64,
}

static NEXT_MANAGER: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// (manager id, slot) this thread last used: its slot is usually free again.
    static SLOT_HINT: Cell<(u64, u32)> = const { Cell::new((0, 0)) };
}

/// The lock manager (DESIGN.md §3.7; module doc). A cheap handle: clones share one table.
#[derive(Clone)]
pub struct LockManager {
    shared: Arc<Shared>,
}

impl LockManager {
    /// A lock manager for the protocol `modes` (e.g. [`super::MGL`], [`super::TADOM`]).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `options` are out of range.
    pub fn new(modes: &'static ModeTable, options: LockOptions) -> Result<LockManager> {
        options.validate()?;
        Ok(LockManager {
            shared: Arc::new(Shared {
                modes,
                table: LockTable::new(options.partitions, modes),
                fast: FastPath::new(options.max_owners),
                owners: Owners::new(options.max_owners),
                detector: Detector::default(),
                counters: Counters::default(),
                id: NEXT_MANAGER.fetch_add(1, Relaxed),
                options,
            }),
        })
    }

    /// A lock owner (the lock set of one transaction) for `txn`. Reuse it for the next
    /// transaction with [`LockOwner::reset`] to keep its allocations.
    ///
    /// With [`LockOptions::inheritance`], an owner made on a thread whose last owner of
    /// this manager parked its slot resumes that slot and starts out holding the parked
    /// locks (rule F5), unless they were revoked meanwhile.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming `max_owners` if that many owners are alive.
    pub fn owner(&self, txn: TxnId) -> Result<LockOwner> {
        let mut slot = None;
        self.owner_in(txn, &mut slot)?;
        Ok(slot.expect("owner_in fills the slot when it succeeds"))
    }

    /// Hints that a lock on `name` will be asked for soon: prefetches its lock-table
    /// bucket, so that the request, made after other work, finds the bucket's latch in
    /// cache. Changes nothing.
    pub(crate) fn prefetch(&self, name: &LockName) {
        let t = &self.shared.table;
        t.prefetch_bucket(t.bucket_of(name));
    }

    /// [`LockManager::owner`], made in `slot` (which must be empty) rather than returned: a
    /// transaction keeps its owner in an `Option`, and building the owner there saves two
    /// moves of its 150 bytes per transaction.
    ///
    /// # Errors
    /// As [`LockManager::owner`].
    pub(crate) fn owner_in<'s>(
        &self,
        txn: TxnId,
        slot: &'s mut Option<LockOwner>,
    ) -> Result<&'s mut LockOwner> {
        debug_assert!(slot.is_none(), "owner_in into a slot in use");
        let sh = &self.shared;
        if sh.options.inheritance && LockOwner::resume_into(&self.shared, txn, slot) {
            return Ok(slot.as_mut().expect("resume_into filled the slot"));
        }
        let hint = SLOT_HINT.with(|h| {
            let (m, s) = h.get();
            if m == sh.id {
                s as usize
            } else {
                usize::MAX
            }
        });
        let Some(id) = sh.fast.claim(hint) else {
            return Err(Error::invalid(
                "max_owners",
                format!("all {} lock owners are in use", sh.fast.capacity()),
            ));
        };
        SLOT_HINT.with(|h| h.set((sh.id, id)));
        sh.owners.set_txn(id, txn);
        Ok(slot.insert(LockOwner::new(&self.shared, id, txn)))
    }

    /// The protocol.
    pub fn modes(&self) -> &'static ModeTable {
        self.shared.modes
    }

    /// The options the manager was made with.
    pub fn options(&self) -> &LockOptions {
        &self.shared.options
    }

    /// The counters.
    pub fn stats(&self) -> LockStats {
        let c = &self.shared.counters;
        LockStats {
            waits: c.waits.get(),
            wait_us: c.wait_us.get(),
            deadlocks: c.deadlocks.get(),
            timeouts: c.timeouts.get(),
            retries: c.retries.get(),
            retries_lost: c.retries_lost.get(),
            escalations: c.escalations.get(),
            escalations_refused: c.escalations_refused.get(),
            fast_path_moves: c.fast_path_moves.get(),
            inherited_revoked: c.inherited_revoked.get(),
            hottest_locks: c
                .by_name
                .hottest(HOT_LOCKS)
                .into_iter()
                .map(|(name, waits, wait_us)| LockWaits {
                    lock: name.to_string(),
                    container: name.container(),
                    waits,
                    wait_us,
                })
                .collect(),
        }
    }

    /// Number of names with a lock head in the shared table (fast-path locks are not
    /// counted). Zero when nothing is locked; for tests and monitoring.
    pub fn table_heads(&self) -> usize {
        self.shared.table.active_heads()
    }
}

/// What [`Shared::table_request`] did with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TableGrant {
    /// Granted at once. An instant request granted at once is not recorded in the table.
    Now,
    /// Granted after a wait: recorded in the table, an instant request too (its caller
    /// releases it).
    AfterWait,
    /// Not granted: it would have to wait and the caller did not ask to.
    WouldBlock,
}

impl Shared {
    /// Asks the lock table for `target` on `name` (the owner holds `held` there, `NONE` for
    /// a new request), waiting if told to; `instant` as [`LockTable::request`] says.
    ///
    /// # Errors
    /// Those of the wait: [`Error::Deadlock`], [`Error::LockTimeout`].
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(crate) fn table_request(
        &self,
        owner: u32,
        txn: TxnId,
        name: &LockName,
        held: u8,
        target: u8,
        wait: Wait,
        instant: bool,
        wake: &mut Wakeups,
    ) -> Result<TableGrant> {
        match self.table.request(
            &self.owners,
            owner,
            name,
            held,
            target,
            wait == Wait::Yes,
            instant,
        ) {
            Outcome::Granted => Ok(TableGrant::Now),
            Outcome::WouldBlock => Ok(TableGrant::WouldBlock),
            Outcome::Enqueued(epoch) => self
                .wait_for(owner, txn, name, target, epoch, wake)
                .map(|()| TableGrant::AfterWait),
        }
    }

    /// Waits for queued request `epoch` (module doc, rules D1 and P1).
    fn wait_for(
        &self,
        owner: u32,
        txn: TxnId,
        name: &LockName,
        target: u8,
        epoch: u64,
        wake: &mut Wakeups,
    ) -> Result<()> {
        let start = Instant::now();
        self.counters.waits.incr();
        let graph = Graph {
            table: &self.table,
            owners: &self.owners,
            modes: self.modes,
        };
        // No deadline if the timeout is too large to add (waits until granted).
        let deadline = start.checked_add(self.options.timeout);
        let mut epoch = epoch;
        let result = loop {
            let verdict = self
                .detector
                .check(&graph, owner, epoch, name, target, wake);
            wake.wake(&self.owners);
            match verdict {
                Verdict::Granted => break Ok(()),
                Verdict::Deadlock(e) => {
                    self.counters.deadlocks.incr();
                    break Err(e);
                }
                Verdict::NoCycle => {}
            }
            match self.owners.park_until(owner, epoch, deadline) {
                WaitEnd::Granted => break Ok(()),
                // T7: the lock was left for this thread to take; if another took it first,
                // this is a new block (new epoch), searched for deadlocks like the first.
                WaitEnd::Retry => {
                    self.counters.retries.incr();
                    match self.table.retry(&self.owners, owner, name, epoch, wake) {
                        None => break Ok(()),
                        Some(e) => {
                            self.counters.retries_lost.incr();
                            epoch = e;
                        }
                    }
                }
                WaitEnd::Other => {
                    if self.table.cancel(&self.owners, owner, name, epoch, wake) {
                        break Ok(());
                    }
                    self.counters.timeouts.incr();
                    break Err(Error::LockTimeout {
                        txn,
                        lock: name.to_string(),
                        mode: self.modes.mode_name(LockMode(target)),
                        waited_ms: start.elapsed().as_millis() as u64,
                    });
                }
            }
        };
        // Grants made on this thread's way out (a withdrawal, or a retry or late take in
        // `cancel` that rescans the queue, T7) are woken now that no bucket latch is held.
        wake.wake(&self.owners);
        let waited = start.elapsed();
        self.counters.wait_us.add(waited.as_micros() as u64);
        self.counters.by_name.record(name, waited);
        result
    }
}
