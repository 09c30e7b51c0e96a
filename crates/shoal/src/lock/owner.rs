//! One transaction's lock set: the local map of held locks (rule O1: a covered request
//! never touches shared memory), durations, the fast path for weak table-level locks, and
//! escalation.

use super::fastpath::FastPath;
use super::manager::{LockDuration, LockStatus, Shared, TableGrant, Wait};
use super::mode::{LockMode, NONE};
use super::name::{LockName, NameHasher, NameKind};
use super::table::Wakeups;
use crate::error::{Error, Result};
use crate::types::TxnId;
use std::cell::Cell;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::mem::ManuallyDrop;
use std::sync::Arc;

mod release;

use release::Ahead;

/// An owner's local lock map.
type HeldMap = HashMap<LockName, Held, BuildHasherDefault<NameHasher>>;

/// Entries a fresh owner's map has room for.
const INITIAL_MAP_CAPACITY: usize = 16;

/// Largest capacity (entries) of a map that is always kept for reuse, parked or spare. A
/// larger one is kept only while the transactions of its thread fill it
/// ([`keeps_capacity`]).
const SPARE_MAP_MAX_CAPACITY: usize = 1024;

/// Whether a map of `capacity` entries, in which the transaction ending now held `used`
/// locks, is kept at that capacity for the thread's next transaction. A thread that runs
/// transactions of a thousand row locks (the insert benchmark) would otherwise grow its
/// map from 16 entries again in each, rehashing seven times (2.6 % of its samples); a
/// thread that once ran a transaction of 50,000 locks and then runs short ones frees the
/// big map at the end of the first short one, instead of walking it at every park and
/// resume.
fn keeps_capacity(capacity: usize, used: usize) -> bool {
    capacity <= SPARE_MAP_MAX_CAPACITY || used.saturating_mul(4) >= capacity
}

thread_local! {
    /// The emptied map of the last owner dropped on this thread, taken by the next owner
    /// made here, so that a short transaction's first lock allocates nothing (the
    /// allocation was about 4% of a single-row read transaction, `select1` profile). A
    /// cache only: an owner made or dropped elsewhere allocates or frees as usual.
    static SPARE_MAP: Cell<Option<HeldMap>> = const { Cell::new(None) };

    /// The manager reference of the last owner dropped on this thread, taken by the next
    /// owner made here for the same manager. Cloning and dropping an `Arc` per transaction
    /// writes its reference count, one cache line that every core writes: select1 on two
    /// cores ran 15 % faster without it. The price: the manager's shared state lives on
    /// after the manager is dropped until this thread exits or makes an owner of another
    /// manager (one manager's worth per thread, about a megabyte at the default options).
    static SPARE_SHARED: Cell<Option<Arc<Shared>>> = const { Cell::new(None) };

    /// The owner this thread parked at the end of its last transaction (rule F5), if any:
    /// its slot and the locks it kept. One per thread; a second owner ending while it is
    /// there releases everything as usual.
    static PARKED: ParkedCell = const { ParkedCell(Cell::new(None)) };
}

/// A parked owner: what a thread keeps between transactions under lock inheritance.
struct Parked {
    sh: Arc<Shared>,
    id: u32,
    /// The slot state `FastPath::park` returned; `resume` and `unpark` expect it.
    state: u64,
    /// The kept locks (weak, long, on the fast path), as recorded when parked.
    map: HeldMap,
    /// The owner's emptied per-table list, kept for its allocation.
    tables: Vec<TableRows>,
}

/// The thread-local home of a [`Parked`]; gives its slot up when the thread exits.
struct ParkedCell(Cell<Option<Parked>>);

impl Drop for ParkedCell {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            p.sh.fast.unpark(p.id, p.state);
        }
    }
}

/// What an owner holds on one name. `mode` is the mode recorded in the fast path or the
/// lock table; `long` and `short` are the modes asked for with each duration (`NONE` if
/// none), each covered by `mode` (rule O2).
#[derive(Clone, Copy, Debug)]
struct Held {
    mode: u8,
    long: u8,
    short: u8,
    /// Recorded in the owner's fast-path slot (it may have been moved to the table since:
    /// the slot is the truth, F4).
    fast: bool,
    /// Counted in the strong-lock counter of its partition (F2).
    strong: bool,
    /// Inherited (F5) and not asked for since: the number of transactions, this one
    /// included, that started holding it without using it. 0: asked for by this
    /// transaction. While it is above 0 a strong request may drop the entry from the slot
    /// (F5(d)); the owner finds out with `FastPath::take_up`.
    unused: u8,
    /// The entry's index in the owner's fast-path slot (if `fast`).
    slot: u8,
}

/// Per-table facts for row requests: escalation counts and what the owner's table lock
/// implies on rows.
#[derive(Clone, Copy, Debug)]
struct TableRows {
    db: u32,
    table: u32,
    /// Long row locks held on this table.
    rows_long: u32,
    /// Escalation is tried when `rows_long` reaches this.
    next_try: u32,
    /// Mode the long part of the table lock implies on rows (`NONE`: none).
    cover_long: u8,
    /// Mode the table lock (any duration) implies on rows.
    cover_any: u8,
}

/// The locks of one transaction (see the module doc of [`crate::lock`]). Made by
/// [`super::LockManager::owner`]; used by one thread at a time. Dropping it releases every
/// lock it holds.
pub struct LockOwner {
    /// Taken out by `drop` into [`SPARE_SHARED`].
    sh: ManuallyDrop<Arc<Shared>>,
    id: u32,
    txn: TxnId,
    map: HeldMap,
    /// Entries of `map` on row-level names (rows and keys).
    rows: usize,
    tables: Vec<TableRows>,
    wake: Wakeups,
}

/// Transactions in a row that may inherit a lock none of them asked for (F5); then it is
/// released, so a thread that stops using a table stops holding its intention lock.
const MAX_UNUSED_INHERITED: u8 = 4;

/// True if `h`, held on `name` at the end of a transaction, may be kept for the thread's
/// next one (rule F5): a weak mode asked for with long duration only, on the fast path.
fn inheritable(sh: &Shared, name: &LockName, h: &Held) -> bool {
    h.fast
        && !h.strong
        && h.short == NONE
        && h.long == h.mode
        && name.is_fast_path_eligible()
        && sh.modes.is_weak(LockMode(h.mode))
}

/// `cur` joined with `r`, but never above `held` (rule O2; the supremum is not always a
/// least upper bound, see `tadom.rs`).
fn join_within(sh: &Shared, cur: u8, r: u8, held: u8) -> u8 {
    if cur == NONE {
        return r;
    }
    let s = sh.modes.sup_raw(cur, r);
    if sh.modes.sup_raw(held, s) == held {
        s
    } else {
        held
    }
}

/// Lowers `h` on `name` to mode `to` (`NONE`: release it). A lower mode never waits.
#[inline]
fn lower(sh: &Shared, id: u32, name: &LockName, h: &mut Held, to: u8, wake: &mut Wakeups) {
    if to == h.mode {
        return;
    }
    if to == NONE {
        if h.unused > 0 && !sh.fast.take_up(id, h.slot) {
            // F5(d): a strong request dropped this inherited entry; nothing is left.
            h.mode = NONE;
            return;
        }
        if !(h.fast && sh.fast.remove(id, name.fast_key())) {
            sh.table.release(&sh.owners, id, name, wake);
        }
    } else if !(h.fast && sh.fast.downgrade(id, name.fast_key(), to)) {
        h.fast = false;
        sh.table.downgrade(&sh.owners, id, name, to, wake);
    }
    wake.wake(&sh.owners);
    h.mode = to;
    if h.strong && (to == NONE || !sh.modes.is_strong_raw(to)) {
        sh.fast.end_strong(name.hash64());
        h.strong = false;
    }
}

fn child_of(sh: &Shared, m: u8) -> u8 {
    if m == NONE {
        return NONE;
    }
    sh.modes.child_mode(LockMode(m)).map_or(NONE, |c| c.0)
}

fn table_index(tables: &[TableRows], db: u32, table: u32) -> Option<usize> {
    tables.iter().position(|t| t.db == db && t.table == table)
}

fn table_entry(tables: &mut Vec<TableRows>, db: u32, table: u32, threshold: usize) -> usize {
    table_index(tables, db, table).unwrap_or_else(|| {
        tables.push(TableRows {
            db,
            table,
            rows_long: 0,
            next_try: u32::try_from(threshold.saturating_add(1)).unwrap_or(u32::MAX),
            cover_long: NONE,
            cover_any: NONE,
        });
        tables.len() - 1
    })
}

/// Keeps `TableRows::cover_*` in step with the owner's lock on table `name`.
fn refresh_cover(sh: &Shared, tables: &mut Vec<TableRows>, name: &LockName, h: Option<&Held>) {
    if name.kind() != NameKind::Table {
        return;
    }
    let t = table_entry(
        tables,
        name.db(),
        name.container(),
        sh.options.escalation_threshold,
    );
    tables[t].cover_long = h.map_or(NONE, |h| child_of(sh, h.long));
    tables[t].cover_any = h.map_or(NONE, |h| child_of(sh, h.mode));
}

impl LockOwner {
    /// An owner of slot `id` for `txn`, holding nothing; its reference to `shared` comes
    /// from this thread's [`SPARE_SHARED`] if that is `shared`'s.
    pub(crate) fn new(shared: &Arc<Shared>, id: u32, txn: TxnId) -> LockOwner {
        let sh = SPARE_SHARED
            .try_with(Cell::take)
            .ok()
            .flatten()
            .filter(|s| Arc::ptr_eq(s, shared))
            .unwrap_or_else(|| shared.clone());
        LockOwner {
            sh: ManuallyDrop::new(sh),
            id,
            txn,
            map: SPARE_MAP
                .try_with(Cell::take)
                .ok()
                .flatten()
                .unwrap_or_else(|| {
                    HashMap::with_capacity_and_hasher(INITIAL_MAP_CAPACITY, Default::default())
                }),
            rows: 0,
            tables: Vec::new(),
            wake: Wakeups::default(),
        }
    }

    /// Puts in `slot` the owner this thread parked for `shared`, resumed for `txn` with the
    /// locks it kept (rule F5). False if there is none, or if its locks were revoked
    /// meanwhile; what it had allocated is then left for [`LockOwner::new`] to reuse.
    pub(crate) fn resume_into(
        shared: &Arc<Shared>,
        txn: TxnId,
        slot: &mut Option<LockOwner>,
    ) -> bool {
        let Some(p) = PARKED.try_with(|c| c.0.take()).ok().flatten() else {
            return false;
        };
        if !Arc::ptr_eq(&p.sh, shared) {
            p.sh.fast.unpark(p.id, p.state);
            return false;
        }
        if !shared.fast.resume(p.id, p.state) {
            // Revoked: the slot and its entries are gone; keep the allocations.
            let mut map = p.map;
            map.clear();
            // (`p.tables` is freed: `new` starts with an unallocated list.)
            let _ = SPARE_MAP.try_with(|s| s.set(Some(map)));
            let _ = SPARE_SHARED.try_with(|s| s.set(Some(p.sh)));
            return false;
        }
        shared.owners.set_txn(p.id, txn);
        let mut map = p.map;
        for h in map.values_mut() {
            h.unused += 1;
        }
        // No row cover from inherited locks until taken up (`record` sets it then): a
        // strong request may drop them before (F5(d)).
        *slot = Some(LockOwner {
            sh: ManuallyDrop::new(p.sh),
            id: p.id,
            txn,
            map,
            rows: 0,
            tables: p.tables,
            wake: Wakeups::default(),
        });
        true
    }

    /// Ends the transaction under lock inheritance (rule F5): releases every lock but the
    /// inheritable ones and parks the slot with those in this thread's [`PARKED`]. False
    /// if nothing was parked (nothing to keep, the thread already has a parked owner, or a
    /// kept lock was moved to the lock table meanwhile); the caller then releases the rest.
    fn park(&mut self) -> bool {
        let Self {
            sh,
            map,
            id,
            wake,
            tables,
            rows,
            ..
        } = self;
        let used = map.len();
        let mut ahead = Ahead::new(sh, map);
        map.retain(|name, h| {
            ahead.step(sh);
            if inheritable(sh, name, h) && h.unused < MAX_UNUSED_INHERITED {
                return true;
            }
            lower(sh, *id, name, h, NONE, wake);
            false
        });
        tables.clear();
        *rows = 0;
        if map.is_empty() {
            return false;
        }
        // A map grown by a transaction of many locks is not kept for the few it parks
        // (`park` and `resume` walk it every transaction) unless this transaction filled it.
        if !keeps_capacity(map.capacity(), used) {
            map.shrink_to(INITIAL_MAP_CAPACITY);
        }
        PARKED
            .try_with(|c| {
                // One parked owner per thread: a second one ending releases as usual.
                let cur = c.0.take();
                if cur.is_some() {
                    c.0.set(cur);
                    return false;
                }
                let state = loop {
                    let seen = sh.fast.state(*id);
                    if !FastPath::may_park(seen) {
                        return false;
                    }
                    // Inherited entries that a strong request dropped meanwhile are gone.
                    map.retain(|_, h| h.unused == 0 || FastPath::is_unused(seen, h.slot));
                    if map.is_empty() {
                        return false;
                    }
                    let entries = map.values().fold(0u16, |m, h| m | 1 << h.slot);
                    if let Some(state) = sh.fast.park(*id, seen, entries) {
                        break state;
                    }
                };
                // SAFETY: `self.sh` is taken once and not used again: `drop` returns right
                // after a successful park, and the field is a `ManuallyDrop`.
                let sh = unsafe { ManuallyDrop::take(sh) };
                c.0.set(Some(Parked {
                    sh,
                    id: *id,
                    state,
                    map: std::mem::take(map),
                    tables: std::mem::take(tables),
                }));
                true
            })
            // The thread is exiting: nothing is parked.
            .unwrap_or(false)
    }

    /// The transaction this owner locks for.
    pub fn txn(&self) -> TxnId {
        self.txn
    }

    /// Asks for `mode` on `name` for `duration`.
    ///
    /// A request covered by what the owner already holds (on `name`, or on its table for a
    /// row or key) returns at once without touching shared state. Otherwise the lock is
    /// converted (held mode joined with `mode`) or newly requested. Intention locks on the
    /// parents are the caller's job ([`LockName::parent`]).
    ///
    /// Returns [`LockStatus::WouldBlock`] only with [`Wait::No`], having changed nothing —
    /// except that an inherited lock on `name` this transaction had not asked for is let
    /// go (F5(d)).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a mode outside the manager's protocol;
    /// [`Error::Deadlock`] if waiting would close a cycle of waiting transactions (this
    /// request is withdrawn, held locks are kept); [`Error::LockTimeout`] after waiting
    /// [`super::LockOptions::timeout`]. Both are retryable after a rollback.
    pub fn lock(
        &mut self,
        name: &LockName,
        mode: LockMode,
        duration: LockDuration,
        wait: Wait,
    ) -> Result<LockStatus> {
        let m = self.sh.modes;
        if !m.contains(mode) {
            return Err(Error::invalid(
                "mode",
                format!(
                    "mode {} is not a mode of {} (0..{})",
                    mode.0,
                    m.name(),
                    m.len()
                ),
            ));
        }
        let r = mode.0;
        if name.is_row_level() && self.covered_by_table(name, r, duration) {
            return Ok(LockStatus::Granted);
        }
        match self.map.get_mut(name) {
            Some(h) if h.unused > 0 => {
                // F5(d): the first request of this transaction on an inherited lock. Taken
                // up only if asked for in the very mode inherited (an inherited IX serving
                // an IS would make the transaction hold more than it asked for, and IX + S
                // = SIX; two such conversions deadlock) and still in the slot. Otherwise
                // it is let go and the request made anew.
                let h = *h;
                if h.mode == r
                    && duration != LockDuration::Instant
                    && self.sh.fast.take_up(self.id, h.slot)
                {
                    self.record(name, h, r, duration, false);
                    return Ok(LockStatus::Granted);
                }
                self.release(name);
                self.acquire_new(name, r, duration, wait)
            }
            Some(h) if m.sup_raw(h.mode, r) == h.mode => {
                let part = match duration {
                    LockDuration::Instant => h.mode,
                    LockDuration::Long => h.long,
                    LockDuration::Short => h.short,
                };
                if part != NONE && m.sup_raw(part, r) == part {
                    // Already asked for with this duration (the common repeat: a table's
                    // IS once per statement): nothing to record.
                    return Ok(LockStatus::Granted);
                }
                let h = *h;
                self.record(name, h, r, duration, false);
                Ok(LockStatus::Granted)
            }
            Some(h) => {
                let h = *h;
                self.convert(name, h, r, duration, wait)
            }
            None => self.acquire_new(name, r, duration, wait),
        }
    }

    fn covered_by_table(&self, name: &LockName, r: u8, duration: LockDuration) -> bool {
        let Some(t) = table_index(&self.tables, name.db(), name.container()) else {
            return false;
        };
        let t = &self.tables[t];
        let c = if duration == LockDuration::Long {
            t.cover_long
        } else {
            t.cover_any
        };
        c != NONE && self.sh.modes.sup_raw(c, r) == c
    }

    /// Stores `h` (now holding at least `r`) with `r` noted for `duration`; counts a new
    /// long row lock and tries escalation when the count passes the threshold (E1).
    /// `new`: the owner had no entry for `name`.
    #[inline]
    fn record(&mut self, name: &LockName, mut h: Held, r: u8, duration: LockDuration, new: bool) {
        h.unused = 0;
        let new_long_row = duration == LockDuration::Long && h.long == NONE && name.is_row_level();
        match duration {
            LockDuration::Instant => {}
            LockDuration::Long => h.long = join_within(&self.sh, h.long, r, h.mode),
            LockDuration::Short => h.short = join_within(&self.sh, h.short, r, h.mode),
        }
        if new {
            self.map.insert(name.clone(), h);
            self.rows += usize::from(name.is_row_level());
        } else if let Some(slot) = self.map.get_mut(name) {
            *slot = h;
        }
        if name.kind() == NameKind::Table {
            refresh_cover(&self.sh, &mut self.tables, name, Some(&h));
        }
        if new_long_row && self.sh.options.escalation_threshold > 0 {
            let threshold = self.sh.options.escalation_threshold;
            let t = table_entry(&mut self.tables, name.db(), name.container(), threshold);
            self.tables[t].rows_long += 1;
            if self.tables[t].rows_long >= self.tables[t].next_try {
                self.try_escalate(t);
            }
        }
    }

    /// Registers a strong request on a table-level name and moves every fast-path lock on
    /// it — this owner's included — into the lock table (F2, F4).
    fn begin_strong(&self, name: &LockName) {
        let sh = &*self.sh;
        sh.fast.begin_strong(name.hash64());
        let (moved, revoked) = sh.fast.transfer(name.fast_key(), |owner, mode| {
            sh.table.insert_granted(owner, name, mode);
        });
        sh.counters.fast_path_moves.add(moved as u64);
        sh.counters.inherited_revoked.add(revoked as u64);
    }

    fn acquire_new(
        &mut self,
        name: &LockName,
        r: u8,
        duration: LockDuration,
        wait: Wait,
    ) -> Result<LockStatus> {
        let sh = &*self.sh;
        let eligible = name.is_fast_path_eligible();
        let instant = duration == LockDuration::Instant;
        if eligible && sh.modes.is_weak(LockMode(r)) {
            // F1: weak modes never conflict with each other; with no strong request
            // registered, nobody can hold or be granted a conflicting mode.
            if instant && sh.fast.no_strong(name.hash64()) {
                return Ok(LockStatus::Granted);
            }
            let slot = match instant {
                true => None,
                false => sh
                    .fast
                    .try_acquire(self.id, name.fast_key(), name.hash64(), r, true),
            };
            if let Some(slot) = slot {
                let h = Held {
                    mode: r,
                    long: NONE,
                    short: NONE,
                    fast: true,
                    strong: false,
                    unused: 0,
                    slot,
                };
                self.record(name, h, r, duration, true);
                return Ok(LockStatus::Granted);
            }
        }
        let strong = eligible && sh.modes.is_strong_raw(r);
        if strong {
            self.begin_strong(name);
        }
        let sh = &*self.sh;
        let got = sh.table_request(
            self.id,
            self.txn,
            name,
            NONE,
            r,
            wait,
            instant,
            &mut self.wake,
        );
        match got {
            Ok(grant @ (TableGrant::Now | TableGrant::AfterWait)) if instant => {
                // Granted after a wait, it is recorded in the table: take it out again.
                // Granted at once, it was never recorded.
                if grant == TableGrant::AfterWait {
                    sh.table.release(&sh.owners, self.id, name, &mut self.wake);
                    self.wake.wake(&sh.owners);
                }
                if strong {
                    sh.fast.end_strong(name.hash64());
                }
                Ok(LockStatus::Granted)
            }
            Ok(TableGrant::Now | TableGrant::AfterWait) => {
                let h = Held {
                    mode: r,
                    long: NONE,
                    short: NONE,
                    fast: false,
                    strong,
                    unused: 0,
                    slot: 0,
                };
                self.record(name, h, r, duration, true);
                Ok(LockStatus::Granted)
            }
            other => {
                if strong {
                    sh.fast.end_strong(name.hash64());
                }
                other.map(|_| LockStatus::WouldBlock)
            }
        }
    }

    fn convert(
        &mut self,
        name: &LockName,
        mut h: Held,
        r: u8,
        duration: LockDuration,
        wait: Wait,
    ) -> Result<LockStatus> {
        let sh = &*self.sh;
        let t = sh.modes.sup_raw(h.mode, r);
        let instant = duration == LockDuration::Instant;
        if h.fast {
            let key = name.fast_key();
            if sh.modes.is_weak(LockMode(t))
                && sh
                    .fast
                    .try_acquire(self.id, key, name.hash64(), t, false)
                    .is_some()
            {
                if instant {
                    if !sh.fast.downgrade(self.id, key, h.mode) {
                        sh.table
                            .downgrade(&sh.owners, self.id, name, h.mode, &mut self.wake);
                        self.wake.wake(&sh.owners);
                    }
                    return Ok(LockStatus::Granted);
                }
                h.mode = t;
                self.record(name, h, r, duration, false);
                return Ok(LockStatus::Granted);
            }
            if sh.modes.is_weak(LockMode(t)) {
                // A strong request is registered (or the entry has moved): convert in the
                // table. Move the entry there ourselves if it is still in the slot (F4).
                let id = self.id;
                sh.fast
                    .transfer_own(id, key, |mode| sh.table.insert_granted(id, name, mode));
            }
            h.fast = false;
        }
        let new_strong = name.is_fast_path_eligible() && !h.strong && sh.modes.is_strong_raw(t);
        if new_strong {
            self.begin_strong(name);
        }
        // The entry is in the table from here on, whatever the outcome.
        if let Some(slot) = self.map.get_mut(name) {
            slot.fast = false;
        }
        let sh = &*self.sh;
        let got = sh.table_request(
            self.id,
            self.txn,
            name,
            h.mode,
            t,
            wait,
            false,
            &mut self.wake,
        );
        match got {
            Ok(TableGrant::Now | TableGrant::AfterWait) if instant => {
                sh.table
                    .downgrade(&sh.owners, self.id, name, h.mode, &mut self.wake);
                self.wake.wake(&sh.owners);
                if new_strong {
                    sh.fast.end_strong(name.hash64());
                }
                Ok(LockStatus::Granted)
            }
            Ok(TableGrant::Now | TableGrant::AfterWait) => {
                h.mode = t;
                h.strong |= new_strong;
                self.record(name, h, r, duration, false);
                Ok(LockStatus::Granted)
            }
            other => {
                if new_strong {
                    sh.fast.end_strong(name.hash64());
                }
                other.map(|_| LockStatus::WouldBlock)
            }
        }
    }

    /// E1–E3: tries to replace the long row locks of table `t` by one table lock, without
    /// waiting. On success the row locks are released; on refusal they are kept and the
    /// next try waits for another `escalation_threshold` row locks.
    fn try_escalate(&mut self, t: usize) {
        let sh = self.sh.clone();
        let m = sh.modes;
        let (read, write) = m.escalation_modes();
        let (db, table) = (self.tables[t].db, self.tables[t].table);
        let of_table = |n: &LockName, h: &Held| {
            n.is_row_level() && n.db() == db && n.container() == table && h.long != NONE
        };
        let read_child = child_of(&sh, read.0);
        let all_read = self
            .map
            .iter()
            .filter(|(n, h)| of_table(n, h))
            .all(|(_, h)| read_child != NONE && m.sup_raw(read_child, h.long) == read_child);
        let want = if all_read { read } else { write };
        let tname = LockName::table(db, table);
        let granted = matches!(
            self.lock(&tname, want, LockDuration::Long, Wait::No),
            Ok(LockStatus::Granted)
        );
        // `lock` may have added table entries; find ours again.
        let t = table_entry(&mut self.tables, db, table, sh.options.escalation_threshold);
        if !granted {
            let rows = self.tables[t].rows_long;
            let step = u32::try_from(sh.options.escalation_threshold).unwrap_or(u32::MAX);
            self.tables[t].next_try = rows.saturating_add(step);
            sh.counters.escalations_refused.incr();
            return;
        }
        let (id, wake, rows) = (self.id, &mut self.wake, &mut self.rows);
        self.map.retain(|n, h| {
            if !of_table(n, h) {
                return true;
            }
            h.long = NONE;
            let to = if h.short == NONE { NONE } else { h.short };
            lower(&sh, id, n, h, to, wake);
            *rows -= usize::from(to == NONE);
            to != NONE
        });
        self.tables[t].rows_long = 0;
        sh.counters.escalations.incr();
    }

    /// The mode held on `name` (not counting what a table lock implies on rows; an
    /// inherited lock not yet taken up counts, rule F5).
    pub fn held(&self, name: &LockName) -> Option<LockMode> {
        self.map.get(name).map(|h| LockMode(h.mode))
    }

    /// True if a request for `mode` on `name` with `duration` would be granted from this
    /// owner's own locks alone (held on `name`, or implied by its table lock). An inherited
    /// lock not yet taken up does not count: a strong request may drop it (rule F5(d)).
    pub fn covers(&self, name: &LockName, mode: LockMode, duration: LockDuration) -> bool {
        let m = self.sh.modes;
        if !m.contains(mode) {
            return false;
        }
        (name.is_row_level() && self.covered_by_table(name, mode.0, duration))
            || self
                .map
                .get(name)
                .is_some_and(|h| h.unused == 0 && m.sup_raw(h.mode, mode.0) == h.mode)
    }

    /// Number of names this owner holds locks on (inherited ones included, rule F5).
    pub fn lock_count(&self) -> usize {
        self.map.len()
    }

    /// Number of row-level names (rows and keys) this owner holds locks on: zero means a
    /// row or key lock can only be held through a table lock's cover.
    pub fn row_lock_count(&self) -> usize {
        self.rows
    }

    /// Entries the owner's local map has room for (tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn map_capacity(&self) -> usize {
        self.map.capacity()
    }

    /// Long row (and key) locks held on `table` — the escalation count (E1).
    pub fn row_locks(&self, table: &LockName) -> usize {
        table_index(&self.tables, table.db(), table.container())
            .map_or(0, |t| self.tables[t].rows_long as usize)
    }
}

impl std::fmt::Debug for LockOwner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockOwner")
            .field("txn", &self.txn)
            .field("locks", &self.map.len())
            .finish()
    }
}
