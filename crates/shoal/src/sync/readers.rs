//! The global visible-readers table of reader-biased latches (BRAVO: Dice and Kogan,
//! "BRAVO — Biased Locking for Reader-Writer Locks", USENIX ATC 2019).
//!
//! A reader of a biased latch publishes the latch's address in one slot of this table,
//! chosen by hashing (thread, latch), instead of incrementing the latch's shared count. Two
//! threads reading the same latch therefore write different cache lines (usually), and a hot
//! read-mostly page stops bouncing its latch word between cores. A writer that revokes the
//! bias scans the table and waits until no slot names its latch.
//!
//! Slot protocol: a slot is 0 (free) or a latch address. Only the thread that CASed 0 → addr
//! into a slot writes it again (back to 0). Collisions (slot taken by another thread or latch)
//! make the reader fall back to the counted shared path: correctness never depends on getting
//! a slot.

#[cfg(not(loom))]
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};

#[cfg(loom)]
use loom::sync::atomic::AtomicUsize;

/// Number of slots (16 KiB of table). Loom models use a tiny table to keep the state space
/// small and to exercise collisions.
#[cfg(not(loom))]
pub(crate) const SLOTS: usize = 2048;
#[cfg(loom)]
pub(crate) const SLOTS: usize = 4;

/// The table: `SLOTS` words, each 0 or the address of a latch read through that slot.
pub(crate) type Table = [AtomicUsize];

#[cfg(not(loom))]
static TABLE: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];

/// The process-wide table.
#[cfg(not(loom))]
#[inline]
pub(crate) fn global() -> &'static Table {
    &TABLE
}

/// Loom models give each latch its own (tiny) table, created with the latch, because loom
/// does not model a table that outlives its executions; the protocol is the same.
#[cfg(loom)]
pub(crate) fn new_table() -> Box<Table> {
    (0..SLOTS).map(|_| AtomicUsize::new(0)).collect()
}

#[cfg(not(loom))]
std::thread_local! {
    /// This thread's hash (under loom recomputed per call: loom's thread-local storage is
    /// not needed for a value that is a pure function of the thread id).
    static THREAD_HASH: u64 = thread_hash_seed();
}

/// A per-thread hash (of the thread id, with fixed hash keys).
#[cfg(not(loom))]
fn thread_hash_seed() -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    std::thread::current().id().hash(&mut h);
    h.finish() | 1
}

/// The slot this thread uses for the latch at `addr`.
#[cfg(not(loom))]
#[inline]
pub(crate) fn slot_for(addr: usize) -> usize {
    let t = THREAD_HASH.with(|h| *h);
    let x = (addr as u64 >> 4) ^ t;
    (x.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize % SLOTS
}

// Loom replays schedules and requires every execution to be deterministic, but thread ids and
// heap addresses differ between executions; so under loom a thread's slot is its ordinal in
// the current execution (a counter reset with each execution).
#[cfg(loom)]
loom::lazy_static! {
    static ref NEXT_ORDINAL: AtomicUsize = AtomicUsize::new(0);
}
#[cfg(loom)]
loom::thread_local! {
    static ORDINAL: usize = NEXT_ORDINAL.fetch_add(1, Relaxed);
}

/// The slot this thread uses (loom: its ordinal in the execution).
#[cfg(loom)]
pub(crate) fn slot_for(_addr: usize) -> usize {
    ORDINAL.with(|o| *o) % SLOTS
}

/// Tries to publish a read of the latch at `addr` in slot `idx`. SeqCst: pairs with the
/// writer's SeqCst X-bit CAS and scan (Dekker-style; see `sync` invariant 4).
#[inline]
pub(crate) fn try_publish(table: &Table, idx: usize, addr: usize) -> bool {
    table[idx]
        .compare_exchange(0, addr, SeqCst, Relaxed)
        .is_ok()
}

/// Ends a published read. Release: the reader's reads happen before a writer that sees the
/// slot free.
#[inline]
pub(crate) fn retire(table: &Table, idx: usize) {
    table[idx].store(0, Release);
}

/// True if some slot names the latch at `addr`.
///
/// The caller has issued `fence(SeqCst)` after the CAS that cleared the bias; with that
/// fence, these loads see every publication that the reader's SeqCst recheck did not
/// exclude, and Acquire makes a reader's retirement (Release) happen before the caller's
/// writes.
pub(crate) fn any(table: &Table, addr: usize) -> bool {
    table.iter().any(|s| s.load(Acquire) == addr)
}

/// Waits until no slot names the latch at `addr` (spins, then yields: published readers
/// hold only as long as a shared latch hold, and do not know anyone waits for them).
/// Same fence requirement and orderings as [`any`].
pub(crate) fn wait_gone(table: &Table, addr: usize) {
    for slot in table.iter() {
        let mut round = 0u32;
        while slot.load(Acquire) == addr {
            if round < 6 {
                for _ in 0..(1u32 << round) {
                    super::shim::spin_hint();
                }
            } else if round < 70 || cfg!(loom) {
                super::shim::yield_now();
            } else {
                // A reader holding its latch for long (e.g. across I/O): stop burning a CPU.
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
            round = round.saturating_add(1);
        }
    }
}
