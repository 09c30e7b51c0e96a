//! Commit_LSN (C. Mohan, "Commit_LSN: A Novel and Simple Method for Reducing Locking and
//! Latching in Transaction Processing Systems", VLDB 1990): a lower bound of the first LSN
//! of every transaction that is still active, so that a page whose page LSN is below it
//! holds only committed data and a READ COMMITTED read of it needs no lock.
//!
//! ## Why a cached value is safe
//! A value `X = min(E, first LSNs of the transactions in the active table)`, with `E` the
//! log's end read *before* the table is scanned, stays a valid bound forever:
//! - a transaction in the table during the scan has its first LSN at or above `X`, and so do
//!   all its records, compensation records included;
//! - a transaction that registers later has every record at or above `E`: it registers
//!   (under its shard's mutex) before its first append, so if the scan missed it, the scan's
//!   unlock of that shard happened before the registration's lock, the read of `E`
//!   happened before that unlock (program order before a release), and the append's
//!   reservation of the log's end happens after the registration — coherence makes it see
//!   an end at or above `E`;
//! - a transaction leaves the table only after its `Commit` is durable (under `Full`; at
//!   once under `Lazy`, whose readers may see a commit a crash loses, as with locks) or
//!   after its rollback's `End`, so the changes of one that the scan did not find are
//!   committed or undone.
//!
//! So the cache only ever grows (`fetch_max` of valid bounds), and a stale value only costs
//! locks. A reader must take the bound *before* the read it applies it to (or validate the
//! page again after taking it): a bound taken after the read may already count as ended a
//! transaction whose uncommitted change the read saw and whose rollback came after it. It is recomputed when a reader finds a page LSN at or above it, at most once per
//! [`REFRESH_INTERVAL_NS`] (a scan locks each of the table's shards once).

use super::table::TxnTable;
use crate::log::LogManager;
use crate::types::Lsn;
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::time::Instant;

/// Shortest time between two recomputations, in nanoseconds (100 µs).
pub const REFRESH_INTERVAL_NS: u64 = 100_000;

/// The cached Commit_LSN and when it may next be recomputed.
pub(crate) struct CommitLsn {
    /// The bound (an LSN); only grows.
    value: CachePadded<AtomicU64>,
    /// Nanoseconds since `epoch` before which no recomputation starts.
    next_refresh_ns: CachePadded<AtomicU64>,
    epoch: Instant,
}

impl CommitLsn {
    pub(crate) fn new() -> CommitLsn {
        CommitLsn {
            value: CachePadded::new(AtomicU64::new(0)),
            next_refresh_ns: CachePadded::new(AtomicU64::new(0)),
            epoch: Instant::now(),
        }
    }

    /// A valid Commit_LSN, recomputed first if `page_lsn` is not below the cached one and no
    /// recomputation ran in the last [`REFRESH_INTERVAL_NS`].
    pub(crate) fn bound(&self, page_lsn: Lsn, log: &LogManager, table: &TxnTable) -> Lsn {
        let cached = self.cached().0;
        if page_lsn.0 < cached {
            return Lsn(cached);
        }
        let now = self.epoch.elapsed().as_nanos() as u64;
        let next = self.next_refresh_ns.load(Relaxed);
        if now < next
            || self
                .next_refresh_ns
                .compare_exchange(next, now + REFRESH_INTERVAL_NS, Relaxed, Relaxed)
                .is_err()
        {
            return Lsn(cached);
        }
        // The end is read before the scan (an Acquire load, sequenced before the scan's
        // shard unlocks): the module doc's second case.
        // Log lane rule L4: a transaction not yet registered registers a first LSN at or
        // above the lanes' low water, which may lie below the log's end.
        let end = log.lanes_low_water();
        let x = end.min(table.oldest_first_lsn());
        // AcqRel: see `cached`.
        Lsn(self.value.fetch_max(x.0, AcqRel).max(x.0))
    }

    /// The cached bound, without recomputing it. Acquire, paired with the AcqRel of the
    /// `fetch_max` that stored it: whatever the computing thread saw — the End of every
    /// transaction it did not find, and so the page changes of their rollbacks — happens
    /// before what the reader does next, so a reader that takes the bound *before* it
    /// reads (or validates) a page sees those rollbacks on the page.
    pub(crate) fn cached(&self) -> Lsn {
        Lsn(self.value.load(Acquire))
    }
}
