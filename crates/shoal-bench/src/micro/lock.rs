//! # `lock`: the lock-manager micro-benchmark
//!
//! Measures the lock manager alone (DESIGN.md §3.7): no transactions, log or pages, only
//! lock requests from per-thread lock owners (one per worker, as a transaction would have).
//! Variants:
//!
//! | variant | one operation | what it shows |
//! |---|---|---|
//! | `distinct-rows` | X lock (long duration) on the worker's next row, then release it | the cost of one lock + release pair on an uncontended name: hash once, one bucket latch, the local map; no allocation. Should scale with threads (no shared writes but the bucket latches, which are distinct) |
//! | `hot-table` | one "transaction": IX on one table shared by all workers, X on [`ROWS_PER_TXN`] rows of the worker's own, then release everything | the hot intention lock of DESIGN.md principle 3: IX goes on the fast path, so the table's lock head is never touched and throughput should scale with threads |
//!
//! Rows: worker `i` uses rows `i * rows_per_thread ..` cyclically (default
//! [`ROWS_PER_THREAD_DEFAULT`]), so no two workers ever conflict; a request that is not
//! granted at once is therefore a bug. Default thread counts: 1, 2, 32 ([`THREADS_DEFAULT`]).
//!
//! Checks: every request must be granted and every release must find its lock; after each
//! point, when the workers have exited (their owners are dropped with their threads), the
//! lock table must be empty ([`MicroBench::after_point`]). A violation stops the run with
//! [`BenchError::Check`].
//!
//! `engine_stats`: the lock manager's slow-path counters during the measured time (`waits`,
//! `deadlocks`, `timeouts`, `fast_path_moves`, `escalations`); all should stay zero here.
//! Derived: `lock_requests_per_s` (requests per second: one per operation in
//! `distinct-rows`, `1 + ROWS_PER_TXN` in `hot-table`).

use crate::error::{BenchError, Result};
use crate::runner::{MicroBench, RunConfig, ThreadCtx};
use serde_json::{Map, Value};
use shoal::lock::{mgl, LockDuration, LockManager, LockName, LockOptions, LockOwner, Wait, MGL};
use shoal::TxnId;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// The variants, in the order they run by default.
pub const VARIANTS: &[&str] = &["distinct-rows", "hot-table"];
/// Default thread counts of both variants.
pub const THREADS_DEFAULT: &[usize] = &[1, 2, 32];
/// Rows each worker cycles through by default.
pub const ROWS_PER_THREAD_DEFAULT: u64 = 1024;
/// Row X locks per `hot-table` transaction.
pub const ROWS_PER_TXN: u64 = 10;
/// Time one operation in this many in `distinct-rows` (operations of ~100 ns; timing one
/// costs ~54 ns, see the runner's "Latency sampling").
pub const LATENCY_SAMPLE_EVERY_FAST: u32 = 64;
/// Time one operation in this many in `hot-table` (operations of about a microsecond).
pub const LATENCY_SAMPLE_EVERY_TXN: u32 = 8;

/// The database and table ids the benchmark locks in.
const DB: u32 = 1;
const TABLE: u32 = 1;

/// Settings of the lock benchmark.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockConfig {
    /// Buckets of the lock table (a power of two). Default: the lock manager's (16,384).
    pub partitions: usize,
    /// Rows each worker cycles through (at least [`ROWS_PER_TXN`]).
    pub rows_per_thread: u64,
}

impl Default for LockConfig {
    fn default() -> Self {
        LockConfig {
            partitions: LockOptions::default().partitions,
            rows_per_thread: ROWS_PER_THREAD_DEFAULT,
        }
    }
}

/// The lock benchmark, its settings checked.
#[derive(Debug)]
pub struct LockBench {
    config: LockConfig,
    options: LockOptions,
}

impl LockBench {
    /// Checks `config`.
    ///
    /// # Errors
    /// [`BenchError::InvalidArgument`] naming `--partitions` or `--rows-per-thread`.
    pub fn new(config: LockConfig) -> Result<LockBench> {
        let options = LockOptions {
            partitions: config.partitions,
            ..LockOptions::default()
        };
        options
            .validate()
            .map_err(|e| BenchError::invalid("--partitions", e.to_string()))?;
        if config.rows_per_thread < ROWS_PER_TXN || config.rows_per_thread > 1 << 32 {
            return Err(BenchError::invalid(
                "--rows-per-thread",
                format!(
                    "{} is not from {ROWS_PER_TXN} to 2^32",
                    config.rows_per_thread
                ),
            ));
        }
        Ok(LockBench { config, options })
    }
}

/// Which variant a state runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    DistinctRows,
    HotTable,
}

impl Variant {
    fn from_name(name: &str) -> Result<Variant> {
        match name {
            "distinct-rows" => Ok(Variant::DistinctRows),
            "hot-table" => Ok(Variant::HotTable),
            other => Err(BenchError::invalid(
                "variant",
                format!(
                    "`{other}` is not a variant of `lock`; choose from {}",
                    VARIANTS.join(", ")
                ),
            )),
        }
    }
}

/// Default thread list of a variant (the same for both).
pub fn default_threads(_variant: &str) -> &'static [usize] {
    THREADS_DEFAULT
}

/// Default latency sampling of a variant.
pub fn latency_sample_every_default(variant: &str) -> u32 {
    if variant == "hot-table" {
        LATENCY_SAMPLE_EVERY_TXN
    } else {
        LATENCY_SAMPLE_EVERY_FAST
    }
}

/// One [`RunConfig`] per chosen variant (all if `variants` is empty), with the variant's
/// default threads and latency sampling unless `threads` or `latency_sample_every` is given.
///
/// # Errors
/// [`BenchError::InvalidArgument`] for an unknown variant.
pub fn plan(
    variants: &[String],
    threads: Option<&[usize]>,
    latency_sample_every: Option<u32>,
    base: &RunConfig,
) -> Result<Vec<(&'static str, RunConfig)>> {
    let chosen: Vec<&'static str> = if variants.is_empty() {
        VARIANTS.to_vec()
    } else {
        variants
            .iter()
            .map(|v| {
                Variant::from_name(v)?;
                VARIANTS
                    .iter()
                    .copied()
                    .find(|k| k == v)
                    .ok_or_else(|| BenchError::invalid("variant", v.clone()))
            })
            .collect::<Result<_>>()?
    };
    Ok(crate::runner::runs_for(
        chosen,
        threads,
        latency_sample_every,
        base,
        default_threads,
        latency_sample_every_default,
    ))
}

static NEXT_STATE: AtomicU64 = AtomicU64::new(1);

/// What a variant's workers share.
pub struct LockState {
    id: u64,
    variant: Variant,
    manager: LockManager,
    rows_per_thread: u64,
    table: LockName,
}

/// A worker's own lock owner and position, kept in a thread-local (the runner starts fresh
/// threads for every point; the owner is dropped, releasing everything, when its thread
/// exits).
struct Worker {
    state: u64,
    owner: LockOwner,
    base: u64,
    next: u64,
    txn: u64,
}

impl Worker {
    /// Next row, wrapping at `rows` (a compare, not a division: the operation is ~100 ns).
    #[inline]
    fn advance(&mut self, rows: u64) {
        self.next += 1;
        if self.next == rows {
            self.next = 0;
        }
    }
}

thread_local! {
    static WORKER: RefCell<Option<Worker>> = const { RefCell::new(None) };
}

fn check(ok: bool, what: impl FnOnce() -> String) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(BenchError::Check(what()))
    }
}

impl LockState {
    fn worker(&self, thread_idx: usize) -> Result<Worker> {
        let txn = (thread_idx as u64 + 1) << 40;
        Ok(Worker {
            state: self.id,
            owner: self.manager.owner(TxnId(txn))?,
            base: thread_idx as u64 * self.rows_per_thread,
            next: 0,
            txn,
        })
    }

    fn run(&self, w: &mut Worker) -> Result<()> {
        let x = mgl::X;
        let long = LockDuration::Long;
        match self.variant {
            Variant::DistinctRows => {
                let name = LockName::row(DB, TABLE, w.base + w.next);
                w.advance(self.rows_per_thread);
                let s = w.owner.lock(&name, x, long, Wait::Yes)?;
                check(s == shoal::lock::LockStatus::Granted, || {
                    format!("{name}: {s:?}")
                })?;
                check(w.owner.release(&name), || format!("{name} was not held"))
            }
            Variant::HotTable => {
                w.owner.lock(&self.table, mgl::IX, long, Wait::Yes)?;
                for _ in 0..ROWS_PER_TXN {
                    let name = LockName::row(DB, TABLE, w.base + w.next);
                    w.advance(self.rows_per_thread);
                    w.owner.lock(&name, x, long, Wait::Yes)?;
                }
                let held = w.owner.lock_count();
                check(held == 1 + ROWS_PER_TXN as usize, || {
                    format!("{held} locks held")
                })?;
                w.txn += 1;
                w.owner.reset(TxnId(w.txn));
                Ok(())
            }
        }
    }
}

impl MicroBench for LockBench {
    type State = LockState;

    fn name(&self) -> &'static str {
        "lock"
    }

    fn variants(&self) -> &'static [&'static str] {
        VARIANTS
    }

    fn latency_sample_every_default(&self) -> u32 {
        LATENCY_SAMPLE_EVERY_FAST
    }

    fn config(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("protocol".into(), Value::from(MGL.name()));
        m.insert("partitions".into(), Value::from(self.options.partitions));
        m.insert(
            "rows_per_thread".into(),
            Value::from(self.config.rows_per_thread),
        );
        m.insert("rows_per_txn".into(), Value::from(ROWS_PER_TXN));
        m.insert(
            "escalation_threshold".into(),
            Value::from(self.options.escalation_threshold),
        );
        m
    }

    fn setup(&self, variant: &str, _run: &RunConfig) -> Result<LockState> {
        Ok(LockState {
            id: NEXT_STATE.fetch_add(1, Ordering::Relaxed),
            variant: Variant::from_name(variant)?,
            manager: LockManager::new(&MGL, self.options.clone())?,
            rows_per_thread: self.config.rows_per_thread,
            table: LockName::table(DB, TABLE),
        })
    }

    fn op(state: &LockState, thread_idx: usize, _ctx: &mut ThreadCtx) -> Result<()> {
        WORKER.with_borrow_mut(|slot| {
            let w = match slot {
                Some(w) if w.state == state.id => w,
                _ => slot.insert(state.worker(thread_idx)?),
            };
            state.run(w)
        })
    }

    fn counters(state: &LockState) -> BTreeMap<String, u64> {
        let s = state.manager.stats();
        BTreeMap::from([
            ("waits".to_string(), s.waits),
            ("deadlocks".to_string(), s.deadlocks),
            ("timeouts".to_string(), s.timeouts),
            ("fast_path_moves".to_string(), s.fast_path_moves),
            ("escalations".to_string(), s.escalations),
        ])
    }

    fn after_point(state: &LockState) -> Result<Map<String, Value>> {
        let heads = state.manager.table_heads();
        check(heads == 0, || {
            format!("{heads} lock heads left after the workers exited")
        })?;
        Ok(Map::new())
    }

    fn derived(
        variant: &str,
        _engine_stats: &BTreeMap<String, u64>,
        _ops: u64,
    ) -> Map<String, Value> {
        let mut m = Map::new();
        let per_op = if variant == "hot-table" {
            1 + ROWS_PER_TXN
        } else {
            1
        };
        m.insert("lock_requests_per_op".into(), Value::from(per_op));
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::{run_micro, NoObserver};

    #[test]
    fn both_variants_run_and_leave_the_table_empty() {
        let bench = LockBench::new(LockConfig::default()).unwrap();
        let run = RunConfig {
            threads: vec![1, 3],
            warmup_s: 0.0,
            duration_s: 0.2,
            ..RunConfig::default()
        };
        let ms = run_micro(&bench, &[], &run, &mut NoObserver).unwrap();
        assert_eq!(ms.len(), 4);
        for m in &ms {
            assert!(m.ops > 100, "{} {}: {}", m.variant, m.threads, m.ops);
            assert_eq!(m.engine_stats.get("waits"), Some(&0));
            assert_eq!(m.engine_stats.get("deadlocks"), Some(&0));
        }
        assert_eq!(
            ms[2].derived.get("lock_requests_per_op"),
            Some(&Value::from(11))
        );
    }

    #[test]
    fn settings_are_checked_and_plans_follow_defaults() {
        let bad = LockBench::new(LockConfig {
            partitions: 1000,
            ..LockConfig::default()
        });
        assert!(bad.unwrap_err().to_string().contains("--partitions"));
        let bad = LockBench::new(LockConfig {
            rows_per_thread: 3,
            ..LockConfig::default()
        });
        assert!(bad.unwrap_err().to_string().contains("--rows-per-thread"));
        let p = plan(&[], None, None, &RunConfig::default()).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].1.threads, THREADS_DEFAULT);
        assert_eq!(
            (p[0].1.latency_sample_every, p[1].1.latency_sample_every),
            (64, 8)
        );
        let p = plan(
            &["hot-table".into()],
            Some(&[4]),
            Some(1),
            &RunConfig::default(),
        )
        .unwrap();
        assert_eq!(
            (
                p[0].0,
                p[0].1.threads.as_slice(),
                p[0].1.latency_sample_every
            ),
            ("hot-table", &[4][..], 1)
        );
        assert!(plan(&["hot-rows".into()], None, None, &RunConfig::default()).is_err());
    }
}
