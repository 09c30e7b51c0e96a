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
use super::shim::{fence, AtomicBool, AtomicU32, AtomicU64, Mutex};
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
const PARKED: u64 = 1;
/// `Slot::state` bit: a strong request moved an entry out of the slot since its owner's
/// transaction began (F5: such an owner does not park).
const MOVED: u64 = 2;
/// `Slot::state` bits `UNUSED_SHIFT..UNUSED_SHIFT + FAST_PATH_ENTRIES`: entry `i` is
/// inherited and not yet taken up by the owner's transaction (F5(d)); a strong request
/// drops such an entry instead of moving it.
const UNUSED_SHIFT: u32 = 2;
/// `Slot::state` is `generation << GENERATION_SHIFT | unused << UNUSED_SHIFT | flags`; the
/// 46-bit generation does not wrap in practice (2^46 transactions of one slot).
const GENERATION_SHIFT: u32 = UNUSED_SHIFT + FAST_PATH_ENTRIES as u32;

const _: () = assert!(FAST_PATH_ENTRIES <= 16 && GENERATION_SHIFT < 32);

/// The bit of entry `i` in `Slot::state`.
fn unused_bit(i: u8) -> u64 {
    1 << (UNUSED_SHIFT + u32::from(i))
}

/// The state that ends a parking of `state`, or a slot's use: not parked, not moved, no
/// unused entries, next generation (so a parked thread's `resume` fails).
fn next_generation(state: u64) -> u64 {
    ((state >> GENERATION_SHIFT).wrapping_add(1)) << GENERATION_SHIFT
}

struct Slot {
    /// Claimed by a live owner (F3), or parked by its thread (F5).
    in_use: AtomicBool,
    /// F5: generation, unused entries, MOVED, PARKED (see [`GENERATION_SHIFT`]). Changed
    /// by the owner without the latch (`park`, `resume`, `take_up`: atomic read-modify-
    /// writes) and by others only under the latch (`transfer`, a take-over, `unpark`:
    /// compare-and-swap, so a race with the owner has exactly one winner).
    state: AtomicU64,
    entries: Mutex<Entries>,
}

impl Slot {
    /// Ends the parking `parked` of this slot, whose latch the caller holds as `e`: drops
    /// its entries and frees it. False, changing nothing, if the state is no longer
    /// `parked` (resumed, or ended by someone else).
    fn end_parking(&self, e: &mut Entries, parked: u64) -> bool {
        let won = self
            .state
            .compare_exchange(parked, next_generation(parked), SeqCst, SeqCst)
            .is_ok();
        if won {
            e.clear();
            self.in_use.store(false, SeqCst);
        }
        won
    }
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
                        state: AtomicU64::new(0),
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

    /// The state word of `owner`'s slot (for `park`).
    #[inline]
    pub(crate) fn state(&self, owner: u32) -> u64 {
        self.slots[owner as usize].state.load(SeqCst)
    }

    /// True if `state` (from [`FastPath::state`]) still has entry `i` inherited and unused,
    /// i.e. not dropped by a strong request.
    pub(crate) fn is_unused(state: u64, i: u8) -> bool {
        state & unused_bit(i) != 0
    }

    /// True if `state` allows parking: no entry was moved out of the slot since its
    /// owner's transaction began, and the slot is not parked.
    pub(crate) fn may_park(state: u64) -> bool {
        state & (MOVED | PARKED) == 0
    }

    /// Parks `owner`'s slot at the end of its transaction, keeping its entries for the
    /// thread's next transaction (F5, speculative lock inheritance), all marked unused
    /// (`entries`: a bit per kept entry index); the owner has released every entry it
    /// does not keep. `seen` is the state the owner checked its entries against. Returns
    /// the state to resume with, or `None` if the state changed since (a strong request
    /// dropped an unused entry or moved one: the owner checks again). No latch: one
    /// compare-and-swap.
    #[inline]
    pub(crate) fn park(&self, owner: u32, seen: u64, entries: u16) -> Option<u64> {
        debug_assert!(Self::may_park(seen));
        let parked = next_generation(seen) | u64::from(entries) << UNUSED_SHIFT | PARKED;
        self.slots[owner as usize]
            .state
            .compare_exchange(seen, parked, SeqCst, SeqCst)
            .ok()
            .map(|_| parked)
    }

    /// Takes `owner`'s parked slot back for a new transaction of the thread that parked
    /// it (`parked`, from `park`; F5): true if its entries are still there (all unused);
    /// false if it was revoked or taken over meanwhile (the slot is no longer the
    /// caller's). No latch: one compare-and-swap.
    #[inline]
    pub(crate) fn resume(&self, owner: u32, parked: u64) -> bool {
        self.slots[owner as usize]
            .state
            .compare_exchange(parked, parked & !PARKED, SeqCst, SeqCst)
            .is_ok()
    }

    /// The owner's transaction takes up inherited entry `i` (F5(d)): true if it was still
    /// there; false if a strong request dropped it (it is gone from the slot). No latch:
    /// one atomic and-not.
    #[inline]
    pub(crate) fn take_up(&self, owner: u32, i: u8) -> bool {
        let bit = unused_bit(i);
        self.slots[owner as usize].state.fetch_and(!bit, SeqCst) & bit != 0
    }

    /// Gives up a slot parked as `parked` (its thread is done with it): drops its entries
    /// and frees it, unless it was revoked or taken over meanwhile (then it is not ours).
    pub(crate) fn unpark(&self, owner: u32, parked: u64) {
        let slot = &self.slots[owner as usize];
        let mut e = slot.entries.lock();
        slot.end_parking(&mut e, parked);
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
    /// mode for an entry it has — if no strong request is registered (F1). Returns the
    /// entry's index in the slot, or `None` if the caller must use the lock table instead:
    /// a strong request exists, the entry was moved to the lock table, or the slot is full.
    #[inline]
    pub(crate) fn try_acquire(
        &self,
        owner: u32,
        key: FastKey,
        hash: u64,
        mode: u8,
        new: bool,
    ) -> Option<u8> {
        let mut e = self.slots[owner as usize].entries.lock();
        // F2: read under the slot latch, after the latch acquire.
        if !self.no_strong(hash) {
            return None;
        }
        let i = match (e.find(key), new) {
            (Some(i), false) => i,
            (None, true) => e.modes.iter().position(|&m| m == FREE)?,
            _ => return None,
        };
        e.keys[i] = key;
        e.modes[i] = mode;
        Some(i as u8)
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
    /// F4). A parked slot holding `key` is revoked instead, and an inherited entry its
    /// transaction has not taken up is dropped (F5). Returns the number of entries moved
    /// and the number revoked or dropped. Call after `begin_strong`.
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
                    if slot.end_parking(&mut e, st) {
                        revoked += 1;
                        break;
                    }
                } else if st & unused_bit(j as u8) != 0 {
                    // F5(d): inherited, and the running transaction has not taken it up:
                    // it is not that transaction's lock; drop it (its `take_up` fails).
                    if slot
                        .state
                        .compare_exchange(st, st & !unused_bit(j as u8), SeqCst, SeqCst)
                        .is_ok()
                    {
                        e.modes[j] = FREE;
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
