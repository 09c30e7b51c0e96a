//! The table of active transactions that have written log records: sharded by id with one
//! short mutex per shard, so begin and commit of different transactions do not meet on one
//! lock (DESIGN.md §3.8: no mutex shared by all transactions on begin/commit).

use crate::types::{Lsn, TxnId};
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Arc;

const SHARDS: usize = 64;

/// The shared state of one transaction that has logged something.
#[derive(Debug)]
pub(crate) struct TxnEntry {
    pub(crate) id: TxnId,
    /// A lower bound of the LSN of its first record (read before that record was appended).
    pub(crate) first_lsn: Lsn,
    /// LSN of its last record (the head of its previous-LSN chain).
    pub(crate) last_lsn: AtomicU64,
}

impl TxnEntry {
    pub(crate) fn last(&self) -> Lsn {
        Lsn(self.last_lsn.load(Acquire))
    }
    pub(crate) fn set_last(&self, lsn: Lsn) {
        self.last_lsn.store(lsn.0, Release);
    }
}

/// Transaction entries by id. `foldhash`, not std's SipHash: ids are ours, not an
/// attacker's, and each transaction that logs hashes its id twice (insert and remove).
type IdMap = HashMap<u64, Arc<TxnEntry>, foldhash::fast::FixedState>;
type Shard = CachePadded<Mutex<IdMap>>;

/// Active transactions with log records, by id.
pub(crate) struct TxnTable {
    shards: Box<[Shard]>,
}

impl TxnTable {
    pub(crate) fn new() -> Self {
        TxnTable {
            shards: (0..SHARDS).map(|_| CachePadded::default()).collect(),
        }
    }

    fn shard(&self, id: TxnId) -> &Mutex<IdMap> {
        &self.shards[(id.0 as usize) % SHARDS]
    }

    /// Registers `entry`. Must happen before its first record is appended (the checkpoint's
    /// scan-start rule relies on it: transaction rule 5).
    pub(crate) fn insert(&self, entry: Arc<TxnEntry>) {
        self.shard(entry.id).lock().insert(entry.id.0, entry);
    }

    pub(crate) fn remove(&self, id: TxnId) {
        self.shard(id).lock().remove(&id.0);
    }

    /// The lowest first LSN of the transactions registered now, [`Lsn::MAX`] if none.
    pub(crate) fn oldest_first_lsn(&self) -> Lsn {
        self.shards
            .iter()
            .map(|s| {
                s.lock()
                    .values()
                    .map(|e| e.first_lsn)
                    .min()
                    .unwrap_or(Lsn::MAX)
            })
            .min()
            .unwrap_or(Lsn::MAX)
    }

    /// Number of registered transactions.
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.lock().len()).sum()
    }
}
