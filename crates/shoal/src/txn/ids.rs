//! Transaction ids, handed out to each thread in batches.
//!
//! Job: give every transaction of one [`super::TxnManager`] an id no other transaction of it
//! has had, without a shared write per transaction. A counter that every `begin` increments
//! is a cache line that all cores write: at a million read-only transactions per second on
//! two cores it cost select1 a tenth of its time, in the increment and in the misses of the
//! fields that shared its line (the "shared counters" bottleneck of Shore-MT, Johnson et
//! al., EDBT 2009, §7). Each thread instead takes [`BATCH`] consecutive ids from the counter
//! at a time and hands them out from a thread-local.
//!
//! Invariants:
//! 1. **Unique.** A batch is taken by one `fetch_add` on the counter, so batches do not
//!    overlap, and a batch's ids are handed out by its one thread, each once.
//! 2. **Above every reserved id.** [`TxnIds::reserve_through`] (restart, with the highest id
//!    in the log) raises the counter and then bumps the epoch (Release). A thread compares its
//!    batch's epoch with the current one (Acquire) before every id: a batch taken before the
//!    reservation is dropped, and the next batch is taken after the raise (the Acquire load
//!    that saw the new epoch orders the `fetch_add` after the `fetch_max`).
//! 3. **Per manager.** A batch names the manager (a process-unique number, never an
//!    address, which a later manager could reuse) it came from.
//!
//! Ids are therefore unique but not in begin order across threads; nothing orders
//! transactions by id (deadlock victims are the requester that closes a cycle, restart uses
//! LSNs). Up to `BATCH - 1` ids per thread are never used.

use crate::types::TxnId;
use crossbeam_utils::CachePadded;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::*};

/// Ids a thread takes from the shared counter at a time.
pub(crate) const BATCH: u64 = 64;

static NEXT_MANAGER: AtomicU64 = AtomicU64::new(1);

/// A thread's batch: ids `next..end` of manager `manager`, taken under `epoch`.
#[derive(Clone, Copy)]
struct Batch {
    manager: u64,
    epoch: u64,
    next: u64,
    end: u64,
}

thread_local! {
    static BATCH_OF_THREAD: Cell<Batch> =
        const { Cell::new(Batch { manager: 0, epoch: 0, next: 0, end: 0 }) };
}

/// The id source of one transaction manager.
pub(crate) struct TxnIds {
    /// First id not yet in any batch (written once per batch, on its own cache line).
    next: CachePadded<AtomicU64>,
    /// Bumped by every reservation (invariant 2); read before every id.
    epoch: AtomicU64,
    /// This manager's process-unique number (invariant 3).
    manager: u64,
}

impl TxnIds {
    /// A source whose first id is 1.
    pub(crate) fn new() -> TxnIds {
        TxnIds {
            next: CachePadded::new(AtomicU64::new(1)),
            epoch: AtomicU64::new(0),
            manager: NEXT_MANAGER.fetch_add(1, Relaxed),
        }
    }

    /// A new id: from this thread's batch, or from a new batch if the batch is used up,
    /// belongs to another manager or predates a reservation.
    #[inline]
    pub(crate) fn next(&self) -> TxnId {
        let epoch = self.epoch.load(Acquire);
        let from_batch = BATCH_OF_THREAD.try_with(|cell| {
            let b = cell.get();
            if b.manager == self.manager && b.epoch == epoch && b.next < b.end {
                cell.set(Batch {
                    next: b.next + 1,
                    ..b
                });
                return b.next;
            }
            let start = self.next.fetch_add(BATCH, Relaxed);
            cell.set(Batch {
                manager: self.manager,
                epoch,
                next: start + 1,
                end: start + BATCH,
            });
            start
        });
        // Only while the thread is exiting (its thread-locals are gone): one id at a time.
        TxnId(from_batch.unwrap_or_else(|_| self.next.fetch_add(1, Relaxed)))
    }

    /// Makes ids up to `id` used: every id handed out afterwards is above it.
    pub(crate) fn reserve_through(&self, id: TxnId) {
        self.next.fetch_max(id.0 + 1, Relaxed);
        self.epoch.fetch_add(1, Release);
    }

    /// The first id not yet taken by any thread's batch (for `Debug`).
    pub(crate) fn peek(&self) -> u64 {
        self.next.load(Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::{Arc, Barrier};

    /// Eight threads take ids from one source, interleaved with a second source on the same
    /// threads: no id repeats within a source.
    #[test]
    fn ids_are_unique_across_threads_and_managers() {
        let (a, b) = (Arc::new(TxnIds::new()), Arc::new(TxnIds::new()));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (a, b) = (a.clone(), b.clone());
                std::thread::spawn(move || {
                    let mut got = (Vec::new(), Vec::new());
                    for i in 0..1000 {
                        got.0.push(a.next().0);
                        if i % 3 == 0 {
                            got.1.push(b.next().0);
                        }
                    }
                    got
                })
            })
            .collect();
        let (mut seen_a, mut seen_b) = (HashSet::new(), HashSet::new());
        for h in handles {
            let (ga, gb) = h.join().unwrap();
            for id in ga {
                assert!(seen_a.insert(id), "id {id} handed out twice");
            }
            for id in gb {
                assert!(
                    seen_b.insert(id),
                    "id {id} handed out twice by the second source"
                );
            }
        }
        assert_eq!(seen_a.len(), 8000);
        assert!(!seen_a.contains(&0));
    }

    /// After a reservation, every thread's next id is above the reserved one, also on
    /// threads that hold a batch taken before it.
    #[test]
    fn reservation_drops_older_batches() {
        let ids = Arc::new(TxnIds::new());
        let (before, after) = (Arc::new(Barrier::new(5)), Arc::new(Barrier::new(5)));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let (ids, before, after) = (ids.clone(), before.clone(), after.clone());
                std::thread::spawn(move || {
                    let first = ids.next(); // takes a batch below the reservation
                    before.wait();
                    after.wait();
                    (first, ids.next())
                })
            })
            .collect();
        before.wait();
        let reserved = TxnId(10_000);
        ids.reserve_through(reserved);
        after.wait();
        for h in handles {
            let (first, next) = h.join().unwrap();
            assert!(first < reserved);
            assert!(
                next > reserved,
                "{next} handed out after reserving {reserved}"
            );
        }
        assert!(ids.next() > reserved);
    }
}
