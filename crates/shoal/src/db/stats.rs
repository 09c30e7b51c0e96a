//! The counters of an open database (DESIGN.md §3.11): buffer pool, log and lock manager,
//! since the database was opened; saved in the directory's `stats` file at a clean close so
//! that `shoal stats DB` can show the last run's counters without opening the database
//! (which another process may hold).

use super::Database;
use crate::error::{Error, Result};
use crate::lock::LockStats;
use crate::log::LogStats;
use crate::stats::BufferStats;
use std::fmt::Write as _;
use std::path::Path;

/// Name of the file a clean close writes the counters to.
pub const STATS_FILE: &str = "stats";

/// A snapshot of a database's counters since it was opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DatabaseStats {
    /// Buffer pool: hits, misses, evictions, writes, latch waits and the hottest pages.
    pub buffer: BufferStats,
    /// Log: appends, bytes, flushes, syncs.
    pub log: LogStats,
    /// Lock manager: waits, deadlocks, timeouts, escalations.
    pub locks: LockStats,
    /// Transactions that waited for an admission slot before their first write lock
    /// (`txn::admission`).
    pub admission_waits: u64,
    /// Transactions that ran without a slot after waiting the longest wait (soft limit).
    pub admission_over: u64,
    /// Checkpoints taken since open, in the background (`Options::checkpoint_log_bytes`)
    /// or on request; not counting the one that ends restart.
    pub checkpoints: u64,
    /// Checkpoints that failed (`Engine::checkpoint_counts` keeps the newest error).
    pub checkpoint_failures: u64,
}

impl DatabaseStats {
    /// Every counter with its name (`buffer.hits`, `log.syncs`, `lock.waits`, ...; units in
    /// the names), in a fixed order: what `shoal stats` prints and benchmarks diff.
    pub fn named_counters(&self) -> [(&'static str, u64); 26] {
        let (b, l, k) = (&self.buffer, &self.log, &self.locks);
        [
            ("buffer.hits", b.hits),
            ("buffer.misses", b.misses),
            ("buffer.evictions", b.evictions),
            ("buffer.dirty_writes", b.dirty_writes),
            ("buffer.optimistic_restarts", b.optimistic_restarts),
            ("buffer.latch_waits", b.latch_waits),
            ("buffer.latch_wait_us", b.latch_wait_us),
            ("log.appends", l.appends),
            ("log.bytes_appended", l.bytes_appended),
            ("log.bytes_written", l.bytes_written),
            ("log.flushes", l.flushes),
            ("log.syncs", l.syncs),
            ("log.lane_chunks", l.lane_chunks),
            ("log.lane_padding_bytes", l.lane_padding_bytes),
            ("lock.waits", k.waits),
            ("lock.wait_us", k.wait_us),
            ("lock.deadlocks", k.deadlocks),
            ("lock.timeouts", k.timeouts),
            ("lock.retries", k.retries),
            ("lock.retries_lost", k.retries_lost),
            ("lock.escalations", k.escalations),
            ("lock.escalations_refused", k.escalations_refused),
            ("txn.admission_waits", self.admission_waits),
            ("txn.admission_over", self.admission_over),
            ("recovery.checkpoints", self.checkpoints),
            ("recovery.checkpoint_failures", self.checkpoint_failures),
        ]
    }

    /// The counters as `name value` lines (units in the names), the hottest pages and lock
    /// names last.
    pub fn to_text(&self) -> String {
        let (b, k) = (&self.buffer, &self.locks);
        let mut s = String::new();
        let rows = self.named_counters();
        for (name, v) in rows {
            let _ = writeln!(s, "{name} {v}");
        }
        let _ = writeln!(s, "buffer.hit_ratio {:.4}", b.hit_ratio());
        for p in &b.hottest_pages {
            let _ = writeln!(s, "buffer.hot_page {p:?}");
        }
        for w in &k.hottest_locks {
            let _ = writeln!(
                s,
                "lock.hot_lock {} waits={} wait_us={}",
                w.lock, w.waits, w.wait_us
            );
        }
        s
    }
}

impl Database {
    /// The counters since this database was opened.
    pub fn stats(&self) -> DatabaseStats {
        let e = self.engine();
        let (admission_waits, admission_over) = e.txns().admission().map_or((0, 0), |a| a.counts());
        DatabaseStats {
            buffer: e.pool().stats(),
            log: e.log().stats(),
            locks: e.txns().locks().stats(),
            admission_waits,
            admission_over,
            checkpoints: e.checkpoint_counts().taken(),
            checkpoint_failures: e.checkpoint_counts().failed(),
        }
    }

    /// Writes [`Database::stats`] to the directory's [`STATS_FILE`] (replacing it).
    pub(crate) fn save_stats(&self) -> Result<()> {
        let path = self.path().join(STATS_FILE);
        std::fs::write(&path, self.stats().to_text())
            .map_err(|e| Error::from_io("write", path.display().to_string(), e))
    }
}

/// The counters the last clean close of the database in `dir` saved, as text; `None` if it
/// saved none (never closed cleanly since it was created).
///
/// # Errors
/// I/O errors reading the file.
pub fn saved_stats(dir: &Path) -> Result<Option<String>> {
    let path = dir.join(STATS_FILE);
    match std::fs::read_to_string(&path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::from_io("read", path.display().to_string(), e)),
    }
}
