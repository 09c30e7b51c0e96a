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
}

struct Slot {
    /// Claimed by a live owner (F3).
    in_use: AtomicBool,
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
    /// `None` if all slots are in use.
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
        (0..self.slots.len())
            .find(|&i| try_claim(i))
            .map(|i| i as u32)
    }

    /// Gives a slot back. Its entries must be empty (the owner released everything).
    pub(crate) fn free(&self, owner: u32) {
        let slot = &self.slots[owner as usize];
        debug_assert!(slot.entries.lock().modes.iter().all(|&m| m == FREE));
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
    /// F4). Returns the number of entries moved. Call after `begin_strong`.
    pub(crate) fn transfer(&self, key: FastKey, mut to_table: impl FnMut(u32, u8)) -> usize {
        let mut moved = 0;
        let high = self.high_water.load(SeqCst) as usize;
        for (i, slot) in self.slots[..high].iter().enumerate() {
            // F3: a slot claimed after this load reads our counter increment.
            if !slot.in_use.load(SeqCst) {
                continue;
            }
            let mut e = slot.entries.lock();
            if let Some(j) = e.find(key) {
                to_table(i as u32, e.modes[j]);
                e.modes[j] = FREE;
                moved += 1;
            }
        }
        moved
    }
}
