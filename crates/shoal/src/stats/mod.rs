//! # Statistics
//!
//! Job: counters that are cheap enough to be always on (DESIGN.md §3.11). Hot counters are
//! striped: each thread adds to its own cache-line-padded stripe and a read sums the stripes,
//! so counting a buffer hit is not a write to a cache line that other cores use (Shore-MT
//! principle: eliminate hot spots, even read-mostly ones). Latch waits are recorded per page
//! only on the slow path (after a thread actually waited), into a bounded, sharded table from
//! which the pages waited on most are reported — the instrumentation of the Derby study
//! (seed 000 §5.1.2, latch wait per page).
//!
//! Invariants: (1) a stripe is only ever added to with `fetch_add`, so threads that share a
//! stripe (more threads than stripes) lose nothing; (2) sums are not a consistent snapshot
//! across counters, only each counter is monotone.

mod latch_waits;

pub use latch_waits::{LatchWaitTable, PageLatchWaits, WaitTable};

use crossbeam_utils::CachePadded;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Number of stripes per counter. A power of two; threads are assigned stripes round-robin.
pub const STRIPES: usize = 64;

static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// This thread's stripe index in `[0, STRIPES)`, fixed for the thread's life.
#[inline]
pub fn stripe_index() -> usize {
    STRIPE.with(|s| {
        let v = s.get();
        if v != usize::MAX {
            return v;
        }
        let v = NEXT_STRIPE.fetch_add(1, Relaxed) % STRIPES;
        s.set(v);
        v
    })
}

/// A monotone counter striped over [`STRIPES`] cache lines (`STRIPES * 128` bytes).
pub struct StripedCounter {
    stripes: Box<[CachePadded<AtomicU64>]>,
}

impl Default for StripedCounter {
    fn default() -> Self {
        StripedCounter {
            stripes: (0..STRIPES)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
        }
    }
}

impl std::fmt::Debug for StripedCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.get())
    }
}

impl StripedCounter {
    /// Adds `n` to this thread's stripe.
    #[inline]
    pub fn add(&self, n: u64) {
        self.stripes[stripe_index()].fetch_add(n, Relaxed);
    }

    /// Adds one.
    #[inline]
    pub fn incr(&self) {
        self.add(1);
    }

    /// The sum over all stripes.
    pub fn get(&self) -> u64 {
        self.stripes.iter().map(|s| s.load(Relaxed)).sum()
    }
}

/// A snapshot of the buffer pool's counters (see `buffer`). Counts are events since the pool
/// was opened; times are in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BufferStats {
    /// Latched fixes (shared or exclusive) that found the page resident. Optimistic reads
    /// (the B-tree's descents and lookups) are not counted: counting would write shared
    /// memory on the read path.
    pub hits: u64,
    /// Fixes that had to read the page from storage. A page created in the pool
    /// (`fix_new`, `fix_uninit`) is neither a hit nor a miss.
    pub misses: u64,
    /// Frames taken from one page for another by the CLOCK replacement.
    pub evictions: u64,
    /// Dirty pages written back (by eviction, the cleaner or `flush_all`).
    pub dirty_writes: u64,
    /// Optimistic reads that failed validation and were retried.
    pub optimistic_restarts: u64,
    /// Latch acquisitions on page frames that had to wait.
    pub latch_waits: u64,
    /// Total time spent in those waits, in microseconds.
    pub latch_wait_us: u64,
    /// The pages waited on most (up to 10), most waits first.
    pub hottest_pages: Vec<PageLatchWaits>,
}

impl BufferStats {
    /// Hits / (hits + misses), or 1.0 with no fixes.
    pub fn hit_ratio(&self) -> f64 {
        let total = self.hits + self.misses;
        if total == 0 {
            1.0
        } else {
            self.hits as f64 / total as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn striped_counter_sums_across_threads() {
        let c = std::sync::Arc::new(StripedCounter::default());
        let hs: Vec<_> = (0..8)
            .map(|_| {
                let c = c.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        c.incr();
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(c.get(), 80_000);
    }
}
