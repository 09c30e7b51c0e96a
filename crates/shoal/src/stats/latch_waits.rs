//! Per-page latch-wait accounting: which pages threads waited on, how often and how long.

use crate::types::PageId;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::Duration;

const SHARDS: usize = 16;
/// Entries kept per shard; when a shard is full the page with the fewest waits is dropped
/// (so a page must keep being waited on to stay in the table).
const SHARD_CAPACITY: usize = 1024;

/// Latch waits on one page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageLatchWaits {
    /// The page.
    pub page_id: PageId,
    /// Number of acquisitions that waited.
    pub waits: u64,
    /// Total waiting time in microseconds.
    pub wait_us: u64,
}

/// Sharded table of latch waits by page. Only touched after a thread has already waited,
/// so its mutexes are off the fast path.
pub struct LatchWaitTable {
    shards: Vec<Mutex<HashMap<PageId, (u64, u64)>>>,
}

impl Default for LatchWaitTable {
    fn default() -> Self {
        LatchWaitTable {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }
}

impl LatchWaitTable {
    /// Records one wait of `waited` on `page_id`.
    pub fn record(&self, page_id: PageId, waited: Duration) {
        let us = waited.as_micros().min(u64::MAX as u128) as u64;
        let mut shard = self.shards[(page_id.0 as usize) % SHARDS].lock();
        if shard.len() >= SHARD_CAPACITY && !shard.contains_key(&page_id) {
            if let Some(victim) = shard.iter().min_by_key(|(_, v)| v.0).map(|(k, _)| *k) {
                shard.remove(&victim);
            }
        }
        let e = shard.entry(page_id).or_insert((0, 0));
        e.0 += 1;
        e.1 = e.1.saturating_add(us);
    }

    /// Total waits and total microseconds over all pages still in the table.
    pub fn totals(&self) -> (u64, u64) {
        self.shards.iter().fold((0, 0), |acc, s| {
            s.lock()
                .values()
                .fold(acc, |(w, t), v| (w + v.0, t.saturating_add(v.1)))
        })
    }

    /// The `n` pages with the most waits (ties: more time first), most first.
    pub fn top(&self, n: usize) -> Vec<PageLatchWaits> {
        let mut all: Vec<PageLatchWaits> = self
            .shards
            .iter()
            .flat_map(|s| {
                s.lock()
                    .iter()
                    .map(|(k, v)| PageLatchWaits {
                        page_id: *k,
                        waits: v.0,
                        wait_us: v.1,
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        all.sort_by(|a, b| b.waits.cmp(&a.waits).then(b.wait_us.cmp(&a.wait_us)));
        all.truncate(n);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_pages_in_order_and_bounded() {
        let t = LatchWaitTable::default();
        for i in 0..5000u64 {
            t.record(PageId(i), Duration::from_micros(1));
        }
        for _ in 0..10 {
            t.record(PageId(7), Duration::from_micros(3));
        }
        for _ in 0..5 {
            t.record(PageId(9), Duration::from_micros(2));
        }
        let top = t.top(2);
        assert_eq!(top[0].page_id, PageId(7));
        assert_eq!(top[0].waits, 11);
        assert_eq!(top[0].wait_us, 31);
        assert_eq!(top[1].page_id, PageId(9));
        let kept: usize = t.shards.iter().map(|s| s.lock().len()).sum();
        assert!(kept <= SHARDS * SHARD_CAPACITY);
    }
}
