//! Shoal as a workload engine: opening a database with the run's durability and pool,
//! running one transaction with retry accounting, and the counters and hot spots a report
//! shows (DESIGN.md §3.11).

use super::dbdir::DbDir;
use super::{Durability, WorkloadOptions};
use crate::error::Result;
use crate::runner::ThreadCtx;
use serde_json::{json, Map, Value};
use shoal::log::LogOptions;
use shoal::txn::Transaction;
use shoal::{Database, IsolationLevel, Options, PageId};
use std::collections::BTreeMap;

/// Number of hottest latched pages a point reports.
pub const HOT_LATCHES: usize = 3;

/// A Shoal database made for one workload setup; closed cleanly when dropped (so a kept
/// `--db-dir` holds a closed database with its `stats` file).
pub struct ShoalDb {
    // Boxed: a `Database` is large and the workload states are enums of engines.
    db: Option<Box<Database>>,
    dir: DbDir,
    pool_bytes: u64,
}

impl ShoalDb {
    /// Creates an empty database for `opts` with a pool of `pool_bytes` bytes.
    ///
    /// # Errors
    /// The harness's directory errors; Shoal's errors from `Database::create_with`.
    pub fn create(opts: &WorkloadOptions, pool_bytes: u64) -> Result<ShoalDb> {
        let dir = DbDir::new(opts.db_dir.as_deref(), opts.engine.name())?;
        let options = Options {
            pool_size_bytes: usize::try_from(pool_bytes).unwrap_or(usize::MAX),
            ..Options::default()
        };
        let defaults = LogOptions::default();
        let log = LogOptions {
            durability: match opts.durability {
                Durability::Full => shoal::log::Durability::Full,
                Durability::Lazy => shoal::log::Durability::Lazy,
            },
            lane_after_records: opts
                .log_lane_after_records
                .unwrap_or(defaults.lane_after_records),
            ..defaults
        };
        let db = Database::create_with(dir.path(), &options, &log)?;
        Ok(ShoalDb {
            db: Some(Box::new(db)),
            dir,
            pool_bytes,
        })
    }

    /// Waits for the engine's one-time background work of open to finish (the buffer
    /// pool's prefault: `BufferPool::wait_prefaulted`), so that it does not take a processor
    /// from the workers of the first measured point. Called at the end of a workload's
    /// setup, after the load, which it may overlap.
    pub fn settle(&self) {
        self.db().engine().pool().wait_prefaulted();
    }

    /// The database.
    pub fn db(&self) -> &Database {
        self.db.as_deref().expect("the database is open until drop")
    }

    /// The pool size in bytes.
    pub fn pool_bytes(&self) -> u64 {
        self.pool_bytes
    }

    /// Runs `body` in a transaction at `isolation` and commits it. Returns `Some` with the
    /// body's result if it committed; `None` if the transaction was rolled back because it
    /// was a deadlock victim, timed out waiting for a lock or found the pool exhausted
    /// (counted in `ctx` under `deadlock`, `lock-timeout` or `pool-exhausted`: module rule
    /// 1). A body that returns `Ok(Err(..))` asks for a rollback that is part of the
    /// workload (TPC-C's unused item number): the transaction is rolled back and its value
    /// returned as `Some(Err(..))`.
    ///
    /// # Errors
    /// Any other error of the body, the commit or the rollback.
    pub fn run<T, R>(
        &self,
        isolation: IsolationLevel,
        ctx: &mut ThreadCtx,
        body: impl FnOnce(&mut Transaction<'_>) -> shoal::Result<std::result::Result<T, R>>,
    ) -> Result<Option<std::result::Result<T, R>>> {
        let mut tx = self.db().begin(isolation);
        match body(&mut tx) {
            Ok(Ok(v)) => {
                tx.commit()?;
                Ok(Some(Ok(v)))
            }
            Ok(Err(r)) => {
                tx.abort()?;
                Ok(Some(Err(r)))
            }
            Err(e) if e.is_retryable() => {
                tx.abort()?;
                ctx.abort(abort_cause(&e));
                Ok(None)
            }
            Err(e) => {
                // The body's error is the one to report; a failing rollback adds nothing.
                let _ = tx.abort();
                Err(e.into())
            }
        }
    }

    /// The cumulative counters of the buffer pool, log and lock manager, named as in
    /// `shoal stats` (`buffer.hits`, `log.syncs`, `lock.waits`, ...); the runner reports
    /// their growth during a point.
    pub fn counters(&self) -> BTreeMap<String, u64> {
        self.db()
            .stats()
            .named_counters()
            .into_iter()
            .map(|(n, v)| (n.to_string(), v))
            .collect()
    }

    /// The pages whose latches were waited for most since the database was opened (at most
    /// [`HOT_LATCHES`]), each as `{page, waits, wait_us, what}`, where `what` names the
    /// table whose root the page is (from `roots`) or says `page`.
    pub fn hot_latches(&self, roots: &[(PageId, String)]) -> Value {
        let stats = self.db().stats();
        let list: Vec<Value> = stats
            .buffer
            .hottest_pages
            .iter()
            .take(HOT_LATCHES)
            .map(|w| {
                let what = roots
                    .iter()
                    .find(|(p, _)| *p == w.page_id)
                    .map_or_else(|| "page".to_string(), |(_, n)| format!("root of {n}"));
                json!({"page": w.page_id.0, "waits": w.waits, "wait_us": w.wait_us, "what": what})
            })
            .collect();
        Value::from(list)
    }
}

impl ShoalDb {
    /// The lock names waited on most since the database was opened (at most
    /// [`HOT_LATCHES`]), each as `{lock, waits, wait_us, what}`, where `what` names the
    /// table of `tables` (`Table::id`, name) the lock belongs to, or says `lock`.
    pub fn hot_locks(&self, tables: &[(u32, String)]) -> Value {
        let stats = self.db().stats();
        let list: Vec<Value> = stats
            .locks
            .hottest_locks
            .iter()
            .take(HOT_LATCHES)
            .map(|w| {
                let what = tables
                    .iter()
                    .find(|(id, _)| *id == w.container)
                    .map_or_else(|| "lock".to_string(), |(_, n)| format!("in {n}"));
                json!({"lock": w.lock, "waits": w.waits, "wait_us": w.wait_us, "what": what})
            })
            .collect();
        Value::from(list)
    }
}

impl Drop for ShoalDb {
    fn drop(&mut self) {
        if let Some(db) = self.db.take() {
            if let Err(e) = db.close() {
                eprintln!(
                    "warning: closing the benchmark database in {} failed: {e}",
                    self.dir.path().display()
                );
            }
        }
    }
}

/// The `aborts` cause of a retryable Shoal error.
pub fn abort_cause(e: &shoal::Error) -> &'static str {
    match e {
        shoal::Error::Deadlock { .. } => "deadlock",
        shoal::Error::LockTimeout { .. } => "lock-timeout",
        shoal::Error::PoolExhausted { .. } => "pool-exhausted",
        _ => "retryable",
    }
}

/// Values derived from the growth of [`ShoalDb::counters`] during a point of `txns`
/// committed transactions: `buffer_hit_ratio` (0–1, of latched fixes: optimistic reads are
/// not counted; `null` without any),
/// `log_syncs_per_commit`, `log_bytes_per_txn` and `lock_waits_per_txn`.
pub fn derived(stats: &BTreeMap<String, u64>, txns: u64) -> Map<String, Value> {
    let get = |n: &str| stats.get(n).copied().unwrap_or(0) as f64;
    let per_txn = |n: &str| {
        if txns == 0 {
            Value::Null
        } else {
            Value::from(get(n) / txns as f64)
        }
    };
    let fixes = get("buffer.hits") + get("buffer.misses");
    let mut m = Map::new();
    m.insert(
        "buffer_hit_ratio".into(),
        if fixes > 0.0 {
            Value::from(get("buffer.hits") / fixes)
        } else {
            Value::Null
        },
    );
    m.insert("log_syncs_per_commit".into(), per_txn("log.syncs"));
    m.insert("log_bytes_per_txn".into(), per_txn("log.bytes_appended"));
    m.insert("lock_waits_per_txn".into(), per_txn("lock.waits"));
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_values_are_ratios_of_the_growth() {
        let stats = BTreeMap::from([
            ("buffer.hits".to_string(), 90),
            ("buffer.misses".to_string(), 10),
            ("log.syncs".to_string(), 5),
            ("log.bytes_appended".to_string(), 1000),
            ("lock.waits".to_string(), 2),
        ]);
        let d = derived(&stats, 10);
        assert_eq!(d["buffer_hit_ratio"], Value::from(0.9));
        assert_eq!(d["log_syncs_per_commit"], Value::from(0.5));
        assert_eq!(d["log_bytes_per_txn"], Value::from(100.0));
        assert_eq!(d["lock_waits_per_txn"], Value::from(0.2));
        let none = derived(&BTreeMap::new(), 0);
        assert!(none["buffer_hit_ratio"].is_null() && none["log_syncs_per_commit"].is_null());
    }
}
