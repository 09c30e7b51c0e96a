//! Wait accounting by key: which pages (latches) or lock names threads waited on, how often
//! and how long.

use crate::types::PageId;
use parking_lot::Mutex;
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
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

/// Sharded table of waits by key (a page for latches, a lock name for locks). Only touched
/// after a thread has already waited, so its mutexes are off the fast path. Bounded: a full
/// shard drops its key with the fewest waits to admit a new one, so a key must keep being
/// waited on to stay (the counts of the keys that stay are exact from their admission).
pub struct WaitTable<K> {
    shards: Vec<Mutex<HashMap<K, (u64, u64)>>>,
}

/// Latch waits by page (the buffer pool's table).
pub type LatchWaitTable = WaitTable<PageId>;

impl<K> Default for WaitTable<K> {
    fn default() -> Self {
        WaitTable {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }
}

impl<K: Hash + Eq + Clone> WaitTable<K> {
    fn shard(&self, key: &K) -> &Mutex<HashMap<K, (u64, u64)>> {
        let mut h = DefaultHasher::new();
        key.hash(&mut h);
        &self.shards[(h.finish() as usize) % SHARDS]
    }

    /// Records one wait of `waited` on `key`.
    pub fn record(&self, key: &K, waited: Duration) {
        let us = waited.as_micros().min(u64::MAX as u128) as u64;
        let mut shard = self.shard(key).lock();
        if shard.len() >= SHARD_CAPACITY && !shard.contains_key(key) {
            if let Some(victim) = shard
                .iter()
                .min_by_key(|(_, v)| v.0)
                .map(|(k, _)| k.clone())
            {
                shard.remove(&victim);
            }
        }
        let e = shard.entry(key.clone()).or_insert((0, 0));
        e.0 += 1;
        e.1 = e.1.saturating_add(us);
    }

    /// Total waits and total microseconds over all keys still in the table.
    pub fn totals(&self) -> (u64, u64) {
        self.shards.iter().fold((0, 0), |acc, s| {
            s.lock()
                .values()
                .fold(acc, |(w, t), v| (w + v.0, t.saturating_add(v.1)))
        })
    }

    /// The `n` keys with the most waits (ties: more time first), most first, each with its
    /// waits and total microseconds waited.
    pub fn hottest(&self, n: usize) -> Vec<(K, u64, u64)> {
        let mut all: Vec<(K, u64, u64)> = self
            .shards
            .iter()
            .flat_map(|s| {
                s.lock()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.0, v.1))
                    .collect::<Vec<_>>()
            })
            .collect();
        all.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.cmp(&a.2)));
        all.truncate(n);
        all
    }
}

impl WaitTable<PageId> {
    /// The `n` pages with the most waits (ties: more time first), most first.
    pub fn top(&self, n: usize) -> Vec<PageLatchWaits> {
        self.hottest(n)
            .into_iter()
            .map(|(page_id, waits, wait_us)| PageLatchWaits {
                page_id,
                waits,
                wait_us,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_pages_in_order_and_bounded() {
        let t = LatchWaitTable::default();
        for i in 0..5000u64 {
            t.record(&PageId(i), Duration::from_micros(1));
        }
        for _ in 0..10 {
            t.record(&PageId(7), Duration::from_micros(3));
        }
        for _ in 0..5 {
            t.record(&PageId(9), Duration::from_micros(2));
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
