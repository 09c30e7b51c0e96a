//! Fast-path weak locks (module doc, rules F1–F4), after PostgreSQL's
//! `FastPathStrongRelationLocks` (`src/backend/storage/lmgr/README`, "Fast Path Locking").
//!
//! Every owner has a slot here (its index is the owner's id in the lock table) holding up
//! to [`FAST_PATH_ENTRIES`] weak locks on table-level names, under the slot's own latch.
//! A per-partition counter of strong requests tells weak requesters whether they may use
//! their slot: only when the counter of their name's partition is zero. A strong requester
//! first increments the counter, then moves every slot entry on its name into the lock
//! table (as granted requests of their owners), and only then asks the lock table, so it
//! sees — and waits for — every weak holder.

use super::name::FastKey;
use super::shim::{fence, AtomicBool, AtomicU32, Mutex};
use crossbeam_utils::CachePadded;
use std::sync::atomic::Ordering::SeqCst;

/// Weak locks an owner can keep on the fast path; more go to the lock table.
pub(crate) const FAST_PATH_ENTRIES: usize = 16;

/// Number of strong-lock counters (names are spread over them by hash).
#[cfg(not(loom))]
pub(crate) const STRONG_PARTITIONS: usize = 1024;
/// Few counters under the model checker (each is a modelled object).
#[cfg(loom)]
pub(crate) const STRONG_PARTITIONS: usize = 2;

const FREE: u8 = u8::MAX;

struct Entries {
    keys: [FastKey; FAST_PATH_ENTRIES],
    /// Mode held per entry, or `FREE`.
    modes: [u8; FAST_PATH_ENTRIES],
}

impl Entries {
    fn find(&self, key: FastKey) -> Option<usize> {
        (0..FAST_PATH_ENTRIES).find(|&i| self.modes[i] != FREE && self.keys[i] == key)
    }

    fn clear(&mut self) {
        self.modes = [FREE; FAST_PATH_ENTRIES];
    }
}

/// `Slot::state` bit: the slot is parked (F5).
const PARKED: u32 = 1;
/// `Slot::state` bit: a strong request moved an entry out of the slot since its owner's
/// transaction began (F5: such an owner does not park).
const MOVED: u32 = 2;
/// `Slot::state` is `generation << STATE_SHIFT | flags`.
const STATE_SHIFT: u32 = 2;

/// The state that ends a parking of `state`: not parked, not moved, next generation (so
/// the parking thread's `resume` fails).
fn next_generation(state: u32) -> u32 {
    ((state >> STATE_SHIFT).wrapping_add(1)) << STATE_SHIFT
}

struct Slot {
    /// Claimed by a live owner (F3), or parked by its thread (F5).
    in_use: AtomicBool,
    /// F5: `generation << 2 | MOVED | PARKED`. Changed by the owner without the latch
    /// (`park`, `resume`: compare-and-swap) and by others only under the latch
    /// (`transfer`, a take-over, `unpark`: compare-and-swap, so a race with the owner has
    /// exactly one winner).
    state: AtomicU32,
    entries: Mutex<Entries>,
}

/// The fast-path slots of all owners and the strong-lock counters.
pub(crate) struct FastPath {
    strong: Box<[AtomicU32]>,
    /// Slots `0..high_water` have been handed out at least once (F3).
    high_water: AtomicU32,
    slots: Box<[CachePadded<Slot>]>,
}

#[inline]
fn partition(hash: u64) -> usize {
    (hash >> 24) as usize % STRONG_PARTITIONS
}

impl FastPath {
    /// Room for `owners` concurrent owners.
    pub(crate) fn new(owners: usize) -> FastPath {
        FastPath {
            strong: (0..STRONG_PARTITIONS).map(|_| AtomicU32::new(0)).collect(),
            high_water: AtomicU32::new(0),
            slots: (0..owners)
                .map(|_| {
                    CachePadded::new(Slot {
                        in_use: AtomicBool::new(false),
                        state: AtomicU32::new(0),
                        entries: Mutex::new(Entries {
                            keys: [FastKey::default(); FAST_PATH_ENTRIES],
                            modes: [FREE; FAST_PATH_ENTRIES],
                        }),
                    })
                })
                .collect(),
        }
    }

    /// Number of slots.
    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Claims a free slot, trying `hint` first (a thread usually gets its last slot back).
    /// With every slot in use, a parked one is revoked and taken (F5). `None` if all slots
    /// are in use and none is parked.
    pub(crate) fn claim(&self, hint: usize) -> Option<u32> {
        // F3(b): the claim (a SeqCst store) and the fence come before any counter load.
        let try_claim = |i: usize| {
            let won = self.slots[i]
                .in_use
                .compare_exchange(false, true, SeqCst, SeqCst)
                .is_ok();
            fence(SeqCst);
            won
        };
        let high = self.high_water.load(SeqCst) as usize;
        if hint < high && try_claim(hint) {
            return Some(hint as u32);
        }
        // A fresh slot above the high-water mark (F3: SeqCst, paired with `transfer`).
        let mut h = self.high_water.load(SeqCst);
        while (h as usize) < self.slots.len() {
            match self.high_water.compare_exchange(h, h + 1, SeqCst, SeqCst) {
                Ok(_) => {
                    self.slots[h as usize].in_use.store(true, SeqCst);
                    fence(SeqCst);
                    return Some(h);
                }
                Err(now) => h = now,
            }
        }
        if let Some(i) = (0..self.slots.len()).find(|&i| try_claim(i)) {
            return Some(i as u32);
        }
        // F5: take a parked slot over. It stays `in_use` throughout, so a strong scan
        // keeps visiting it; its entries go under its latch.
        (0..self.slots.len()).find_map(|i| {
            let slot = &self.slots[i];
            let mut e = slot.entries.lock();
            let st = slot.state.load(SeqCst);
            let won = st & PARKED != 0
                && slot
                    .state
                    .compare_exchange(st, next_generation(st), SeqCst, SeqCst)
                    .is_ok();
            if won {
                e.clear();
            }
            won.then_some(i as u32)
        })
    }

    /// Parks `owner`'s slot at the end of its transaction, keeping its entries for the
    /// thread's next transaction (F5, speculative lock inheritance); the owner has released
    /// every entry it does not keep. Returns the state to resume with, or `None` — slot
    /// left as it was — if a strong request moved an entry out of the slot during the
    /// transaction (the owner must then find its locks in the table and release them).
    /// No latch: one compare-and-swap.
    #[inline]
    pub(crate) fn park(&self, owner: u32) -> Option<u32> {
        let slot = &self.slots[owner as usize];
        let st = slot.state.load(SeqCst);
        if st & (MOVED | PARKED) != 0 {
            return None;
        }
        let parked = next_generation(st) | PARKED;
        // Fails only if a strong request set MOVED meanwhile.
        slot.state
            .compare_exchange(st, parked, SeqCst, SeqCst)
            .ok()
            .map(|_| parked)
    }

    /// Takes `owner`'s parked slot back for a new transaction of the thread that parked
    /// it (`parked`, from `park`; F5): true if its entries are still there; false if it was
    /// revoked or taken over meanwhile (the slot is no longer the caller's). No latch: one
    /// compare-and-swap.
    #[inline]
    pub(crate) fn resume(&self, owner: u32, parked: u32) -> bool {
        self.slots[owner as usize]
            .state
            .compare_exchange(parked, parked & !PARKED, SeqCst, SeqCst)
            .is_ok()
    }

    /// Gives up a slot parked as `parked` (its thread is done with it): drops its entries
    /// and frees it, unless it was revoked or taken over meanwhile (then it is not ours).
    pub(crate) fn unpark(&self, owner: u32, parked: u32) {
        let slot = &self.slots[owner as usize];
        let mut e = slot.entries.lock();
        if slot
            .state
            .compare_exchange(parked, next_generation(parked), SeqCst, SeqCst)
            .is_ok()
        {
            e.clear();
            slot.in_use.store(false, SeqCst);
        }
    }

    /// Forgets that entries were moved out of `owner`'s slot, once the owner holds none
    /// (it released everything; F5).
    pub(crate) fn clear_moved(&self, owner: u32) {
        self.slots[owner as usize].state.fetch_and(!MOVED, SeqCst);
    }

    /// Gives a slot back. Its entries must be empty (the owner released everything).
    pub(crate) fn free(&self, owner: u32) {
        let slot = &self.slots[owner as usize];
        debug_assert!(slot.entries.lock().modes.iter().all(|&m| m == FREE));
        let st = slot.state.load(SeqCst);
        debug_assert!(st & PARKED == 0, "freeing a parked slot");
        slot.state.store(next_generation(st), SeqCst);
        slot.in_use.store(false, SeqCst);
    }

    /// True if no strong request is registered for names hashing like `hash`.
    #[inline]
    pub(crate) fn no_strong(&self, hash: u64) -> bool {
        self.strong[partition(hash)].load(SeqCst) == 0
    }

    /// Records weak `mode` for `key` in `owner`'s slot — a new entry, or a stronger weak
    /// mode for an entry it has — if no strong request is registered (F1). False if the
    /// caller must use the lock table instead: a strong request exists, the entry was
    /// moved to the lock table, or the slot is full.
    #[inline]
    pub(crate) fn try_acquire(
        &self,
        owner: u32,
        key: FastKey,
        hash: u64,
        mode: u8,
        new: bool,
    ) -> bool {
        let mut e = self.slots[owner as usize].entries.lock();
        // F2: read under the slot latch, after the latch acquire.
        if !self.no_strong(hash) {
            return false;
        }
        match e.find(key) {
            Some(i) if !new => {
                e.modes[i] = mode;
                true
            }
            Some(_) => false,
            None if new => match e.modes.iter().position(|&m| m == FREE) {
                Some(i) => {
                    e.keys[i] = key;
                    e.modes[i] = mode;
                    true
                }
                None => false,
            },
            None => false,
        }
    }

    /// Sets a weaker mode for an entry still on the fast path (a downgrade needs no check).
    /// False if the entry was moved to the lock table.
    pub(crate) fn downgrade(&self, owner: u32, key: FastKey, mode: u8) -> bool {
        let mut e = self.slots[owner as usize].entries.lock();
        match e.find(key) {
            Some(i) => {
                e.modes[i] = mode;
                true
            }
            None => false,
        }
    }

    /// Removes `owner`'s entry for `key`; false if it is not there (it was moved to the lock
    /// table, where the caller must release it).
    #[inline]
    pub(crate) fn remove(&self, owner: u32, key: FastKey) -> bool {
        let mut e = self.slots[owner as usize].entries.lock();
        match e.find(key) {
            Some(i) => {
                e.modes[i] = FREE;
                true
            }
            None => false,
        }
    }

    /// Moves `owner`'s own entry for `key` out of its slot, calling `to_table(mode)` under
    /// the slot latch (F4). False if the entry was not there (already moved).
    pub(crate) fn transfer_own(&self, owner: u32, key: FastKey, to_table: impl FnOnce(u8)) -> bool {
        let mut e = self.slots[owner as usize].entries.lock();
        match e.find(key) {
            Some(i) => {
                to_table(e.modes[i]);
                e.modes[i] = FREE;
                true
            }
            None => false,
        }
    }

    /// Registers a strong request for names hashing like `hash` (F2: before `transfer`).
    pub(crate) fn begin_strong(&self, hash: u64) {
        self.strong[partition(hash)].fetch_add(1, SeqCst);
        // F3(b): the increment is ordered before the scan's loads of the high-water mark
        // and `in_use`. SeqCst accesses alone suffice in the language model; the fence is
        // what loom (which models SeqCst accesses as AcqRel) needs to see it, and costs
        // nothing that matters on this cold path.
        fence(SeqCst);
    }

    /// Withdraws a registration of `begin_strong`.
    pub(crate) fn end_strong(&self, hash: u64) {
        let prev = self.strong[partition(hash)].fetch_sub(1, SeqCst);
        debug_assert!(prev > 0, "strong-lock counter underflow");
    }

    /// Moves every slot's entry for `key` out of the fast path: `to_table(owner, mode)` is
    /// called for each under that owner's slot latch (so the owner, which takes its latch to
    /// release, finds either its entry or its request in the lock table, never neither —
    /// F4). A parked slot holding `key` is revoked instead (F5). Returns the numbers of
    /// entries moved and of slots revoked. Call after `begin_strong`.
    pub(crate) fn transfer(
        &self,
        key: FastKey,
        mut to_table: impl FnMut(u32, u8),
    ) -> (usize, usize) {
        let (mut moved, mut revoked) = (0, 0);
        let high = self.high_water.load(SeqCst) as usize;
        for (i, slot) in self.slots[..high].iter().enumerate() {
            // F3: a slot claimed after this load reads our counter increment.
            if !slot.in_use.load(SeqCst) {
                continue;
            }
            let mut e = slot.entries.lock();
            let Some(j) = e.find(key) else {
                continue;
            };
            // F5: the owner parks and resumes without the latch, so the slot's state is
            // settled by compare-and-swap: either it is parked and we revoke it (the
            // owner's `resume` then fails), or it is active and we mark it MOVED before
            // moving (the owner's `park` then fails and it releases in the table).
            loop {
                let st = slot.state.load(SeqCst);
                if st & PARKED != 0 {
                    // A parked slot's entries belong to no transaction: revoke them all
                    // rather than queue behind an owner that may never run again.
                    if slot
                        .state
                        .compare_exchange(st, next_generation(st), SeqCst, SeqCst)
                        .is_ok()
                    {
                        e.clear();
                        slot.in_use.store(false, SeqCst);
                        revoked += 1;
                        break;
                    }
                } else if slot
                    .state
                    .compare_exchange(st, st | MOVED, SeqCst, SeqCst)
                    .is_ok()
                {
                    to_table(i as u32, e.modes[j]);
                    e.modes[j] = FREE;
                    moved += 1;
                    break;
                }
            }
        }
        (moved, revoked)
    }
}
