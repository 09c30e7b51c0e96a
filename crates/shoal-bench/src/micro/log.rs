//! # `log`: the write-ahead-log micro-benchmark
//!
//! Measures the log manager alone (DESIGN.md §3.5): record insertion into the log buffer,
//! and commits that wait for (or, lazily, do not wait for) their record to be durable. No
//! buffer pool, locks or transactions are involved; the benchmark builds log records
//! itself. Variants:
//!
//! | variant | one operation | what it shows |
//! |---|---|---|
//! | `insert` | append one `Update` record with a [`REDO_PAYLOAD_BYTES`]-byte redo payload; no commit, no waiting for a flush | the insert path: one atomic reservation plus a copy, so it should scale with threads until the flush daemon or the buffer size limits it |
//! | `insert-lane` | the same record appended through the worker's own log lane (`LogManager::append_in_lane`: chunks of log it claims alone, `log::manager::lane`) | what lanes save: the shared reservation counter and ring lines touched once per chunk instead of once per record, so two threads should append about twice as fast as one |
//! | `commit-full` | one committing transaction: append an `Update` record ([`REDO_PAYLOAD_BYTES`]-byte redo), append its `Commit` record, then `commit(commit_lsn)` under `Durability::Full` | group commit: one `fdatasync` should serve many commits as threads grow, so `fdatasync_per_commit` should fall well below 1 |
//! | `commit-lazy` | the same transaction under `Durability::Lazy` (commit returns at once; a background flush makes it durable within `lazy_flush_interval_ms`) | the cost of commit without waiting for the disk, the upper bound for `commit-full` |
//!
//! ## Thread counts
//!
//! Group commit only shows with many committing threads, and an insert sweep that wide is
//! of little use, so each variant has its own default thread list ([`default_threads`]):
//! `insert` and `insert-lane` 1, 2; `commit-full` and `commit-lazy` 1, 2, 4, 8, 16, 32, 64. `--threads`
//! replaces the list of every variant. [`plan`] turns this into one [`RunConfig`] per
//! variant; the caller runs them one after the other with
//! [`run_micro`](crate::runner::run_micro), one variant each (so progress lines count the
//! points of each variant separately). Latency sampling is per variant too
//! ([`latency_sample_every_default`]): one in [`LATENCY_SAMPLE_EVERY_FAST`] for the
//! sub-microsecond `insert`, `insert-lane` and `commit-lazy`, every operation for `commit-full`, whose
//! operations take a disk flush.
//!
//! ## Data and checks
//!
//! Each variant opens a fresh log in a new temporary directory (under `db_dir` if given;
//! removed afterwards) and keeps it for all its thread counts. Worker `i` has its own slot
//! (its records, its last LSN, its transaction counter), touched by no other thread.
//! Transaction ids are `(i + 1) << 32 | (n mod 2^32)` for the worker's `n`-th transaction; in `insert`
//! every worker runs one endless transaction whose records chain through `prev_lsn`.
//! Every append is checked: the LSN a worker gets must exceed its previous one, by at least
//! the previous record's payload bytes ([`REDO_PAYLOAD_BYTES`] after an `Update`; a `Commit`
//! carries none), since LSNs are byte offsets and records do not overlap. A violation stops
//! the run with [`BenchError::Check`].
//!
//! ## Reported
//!
//! `config` holds the settings, among them `direct_io` (whether `O_DIRECT` was asked for,
//! `--log-io`) and `log_io`, the mode the log actually used: `direct`, or `buffered` when the
//! option was off or the file system refused `O_DIRECT` (tmpfs before Linux 6.6).
//!
//! `engine_stats` are the log's counters during the measured time: `appends` (records),
//! `bytes_appended`, `flushes` (batches written), `syncs` (`fdatasync` calls) and
//! `bytes_written` (to the segment files; with direct I/O including rewritten partial blocks
//! and padding). Derived fields on each JSON line ([`MicroBench::derived`]):
//! `log_bytes_per_op` (appended bytes per operation), `written_bytes_per_op`, and for the
//! commit variants `fdatasync_per_commit` (`syncs / ops`; `null` when nothing committed).
//! Operations in flight at the window's edges make these approximate by at most one
//! operation per thread.

use crate::error::{BenchError, Result};
use crate::micro::buffer::prepare_db_dir;
use crate::runner::{MicroBench, RunConfig, ThreadCtx};
use crossbeam_utils::CachePadded;
use rand::rngs::SmallRng;
use rand::Rng;
use rand::SeedableRng;
use serde_json::{Map, Value};
use shoal::io::{FileStorage, Storage};
use shoal::log::record::{LogRecord, RecordKind};
use shoal::log::{Durability, Lane, LogManager, LogOptions};
use shoal::{Lsn, PageId, TxnId};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The variants, in the order they run by default.
pub const VARIANTS: &[&str] = &["insert", "insert-lane", "commit-full", "commit-lazy"];

/// Default thread counts of `insert` and `insert-lane`.
pub const INSERT_THREADS_DEFAULT: &[usize] = &[1, 2];
/// Default thread counts of `commit-full` and `commit-lazy`.
pub const COMMIT_THREADS_DEFAULT: &[usize] = &[1, 2, 4, 8, 16, 32, 64];

/// Size of the redo payload of every `Update` record in bytes.
pub const REDO_PAYLOAD_BYTES: usize = 100;
/// Default log segment size in bytes (64 MiB).
pub const SEGMENT_SIZE_DEFAULT_BYTES: u64 = 64 << 20;
/// Default log buffer size in bytes (16 MiB).
pub const LOG_BUFFER_SIZE_DEFAULT_BYTES: u64 = 16 << 20;
/// Latency sampling (one operation in this many) of the sub-microsecond variants `insert`
/// and `commit-lazy`: timing one costs about 54 ns (see the runner's "Latency sampling").
pub const LATENCY_SAMPLE_EVERY_FAST: u32 = 64;
/// Mixed into the run's seed to draw the payload bytes, so that they do not repeat a
/// worker's random stream.
const PAYLOAD_SEED_SALT: u64 = 0x6c6f_6762_656e_6368;
/// Pages that `Update` records name: page ids are drawn uniformly from `1..=PAGES`.
pub const PAGES: u64 = 1 << 20;

/// Settings of the log benchmark.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogConfig {
    /// Log segment size in bytes. Default [`SEGMENT_SIZE_DEFAULT_BYTES`].
    pub segment_size_bytes: u64,
    /// Log buffer size in bytes. Default [`LOG_BUFFER_SIZE_DEFAULT_BYTES`].
    pub log_buffer_size_bytes: u64,
    /// Longest delay in milliseconds before a lazily committed record is flushed
    /// (`commit-lazy`); `None` keeps the engine's default.
    pub lazy_flush_interval_ms: Option<u64>,
    /// Directory in which each variant creates its temporary log directory; the system
    /// temporary directory if `None`.
    pub db_dir: Option<PathBuf>,
    /// Ask the log for `O_DIRECT` writes (`LogOptions::direct_io`; used where the file system
    /// accepts it). Default `true`, as the engine's.
    pub direct_io: bool,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_size_bytes: SEGMENT_SIZE_DEFAULT_BYTES,
            log_buffer_size_bytes: LOG_BUFFER_SIZE_DEFAULT_BYTES,
            lazy_flush_interval_ms: None,
            db_dir: None,
            direct_io: LogOptions::default().direct_io,
        }
    }
}

/// The default thread counts of `variant` (see "Thread counts" in the module doc).
pub fn default_threads(variant: &str) -> &'static [usize] {
    if variant.starts_with("insert") {
        INSERT_THREADS_DEFAULT
    } else {
        COMMIT_THREADS_DEFAULT
    }
}

/// The default latency sampling (time one operation in this many) of `variant`.
pub fn latency_sample_every_default(variant: &str) -> u32 {
    if variant == "commit-full" {
        1
    } else {
        LATENCY_SAMPLE_EVERY_FAST
    }
}

/// One run per variant: `variants` (all, in order, if empty), each with `threads` if given
/// or its [`default_threads`], and `latency_sample_every` if given or its
/// [`latency_sample_every_default`]; the other settings from `base`.
///
/// # Errors
/// [`BenchError::InvalidArgument`] naming `variant` for an unknown variant.
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
            .map(|v| Variant::from_name(v).map(Variant::name))
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

/// The log benchmark, its settings checked.
#[derive(Debug)]
pub struct LogBench {
    config: LogConfig,
}

impl LogBench {
    /// Checks `config` and creates `db_dir` if it is missing but its parent exists. The log
    /// manager checks the sizes further when a variant opens it.
    ///
    /// # Errors
    /// [`BenchError::InvalidArgument`] naming `--segment-size`, `--log-buffer-size` or
    /// `--db-dir`.
    pub fn new(config: LogConfig) -> Result<LogBench> {
        if config.segment_size_bytes == 0 {
            return Err(BenchError::invalid("--segment-size", "must not be 0"));
        }
        if config.log_buffer_size_bytes == 0 {
            return Err(BenchError::invalid("--log-buffer-size", "must not be 0"));
        }
        usize::try_from(config.log_buffer_size_bytes).map_err(|_| {
            BenchError::invalid(
                "--log-buffer-size",
                "larger than this machine's address space",
            )
        })?;
        if let Some(dir) = &config.db_dir {
            prepare_db_dir(dir)?;
        }
        Ok(LogBench { config })
    }

    /// The engine's options for `durability`.
    fn options(&self, durability: Durability) -> LogOptions {
        let defaults = LogOptions::default();
        // Fields added to `LogOptions` later keep their defaults.
        #[allow(clippy::needless_update)]
        LogOptions {
            segment_size_bytes: self.config.segment_size_bytes,
            // Checked to fit in `new`.
            buffer_size_bytes: self.config.log_buffer_size_bytes as usize,
            durability,
            lazy_flush_interval_ms: self
                .config
                .lazy_flush_interval_ms
                .unwrap_or(defaults.lazy_flush_interval_ms),
            direct_io: self.config.direct_io,
            ..defaults
        }
    }
}

/// Which variant a state runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    Insert,
    InsertLane,
    CommitFull,
    CommitLazy,
}

impl Variant {
    fn from_name(name: &str) -> Result<Variant> {
        Ok(match name {
            "insert" => Variant::Insert,
            "insert-lane" => Variant::InsertLane,
            "commit-full" => Variant::CommitFull,
            "commit-lazy" => Variant::CommitLazy,
            other => {
                return Err(BenchError::invalid(
                    "variant",
                    format!(
                        "`{other}` is not a log variant; choose from {}",
                        VARIANTS.join(", ")
                    ),
                ))
            }
        })
    }

    fn name(self) -> &'static str {
        match self {
            Variant::Insert => "insert",
            Variant::InsertLane => "insert-lane",
            Variant::CommitFull => "commit-full",
            Variant::CommitLazy => "commit-lazy",
        }
    }

    fn durability(self) -> Durability {
        match self {
            // `insert` never commits; the option does not matter.
            Variant::Insert | Variant::InsertLane | Variant::CommitFull => Durability::Full,
            Variant::CommitLazy => Durability::Lazy,
        }
    }
}

/// What one worker keeps between its operations; only that worker locks it.
struct Slot {
    /// The `Update` record, reused (only its header fields change).
    update: LogRecord,
    /// The `Commit` record, reused.
    commit: LogRecord,
    /// LSN of this worker's last appended record, if any.
    last_lsn: Option<Lsn>,
    /// Payload bytes (redo + undo) of that record: the least the next LSN must exceed it by.
    last_payload_bytes: u64,
    /// This worker's first transaction id: `(thread_idx + 1) << 32`.
    txn_base: u64,
    /// Transactions this worker has started.
    txns: u64,
    /// The worker's log lane (`insert-lane`).
    lane: Lane,
}

impl Slot {
    fn new(thread_idx: usize, payload: Vec<u8>) -> Slot {
        let txn_base = (thread_idx as u64 + 1) << 32;
        let txn_id = TxnId(txn_base);
        Slot {
            update: LogRecord {
                kind: RecordKind::Update,
                txn_id,
                prev_lsn: Lsn::ZERO,
                page_id: PageId(1),
                undo_next_lsn: Lsn::ZERO,
                redo: payload,
                undo: Vec::new(),
            },
            commit: LogRecord {
                kind: RecordKind::Commit,
                txn_id,
                prev_lsn: Lsn::ZERO,
                page_id: PageId::INVALID,
                undo_next_lsn: Lsn::ZERO,
                redo: Vec::new(),
                undo: Vec::new(),
            },
            last_lsn: None,
            last_payload_bytes: 0,
            txn_base,
            txns: 0,
            lane: Lane::default(),
        }
    }

    /// Records `lsn` as this worker's latest, for a record of `payload_bytes` payload bytes,
    /// checking that it is past the previous one, by at least the previous record's
    /// payload (LSNs are byte offsets and records do not overlap).
    #[inline]
    fn advance(&mut self, thread_idx: usize, lsn: Lsn, payload_bytes: u64) -> Result<()> {
        if let Some(prev) = self.last_lsn {
            if lsn <= prev || lsn.0 - prev.0 < self.last_payload_bytes {
                return Err(BenchError::Check(format!(
                    "worker {thread_idx} got LSN {lsn} after LSN {prev} of a record with {} \
                     payload bytes: LSNs of one thread must increase by at least that",
                    self.last_payload_bytes
                )));
            }
        }
        self.last_lsn = Some(lsn);
        self.last_payload_bytes = payload_bytes;
        Ok(())
    }
}

/// The open log of one variant and the workers' slots.
pub struct LogState {
    // Field order is drop order: the log goes before the directory holding its files.
    log: Arc<LogManager>,
    variant: Variant,
    slots: Vec<CachePadded<Mutex<Slot>>>,
    log_path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for LogState {
    fn drop(&mut self) {
        // Nothing to report to: an error here cannot change a measurement already made.
        let _ = self.log.close();
    }
}

impl MicroBench for LogBench {
    type State = LogState;

    fn name(&self) -> &'static str {
        "log"
    }

    fn variants(&self) -> &'static [&'static str] {
        VARIANTS
    }

    fn latency_sample_every_default(&self) -> u32 {
        LATENCY_SAMPLE_EVERY_FAST
    }

    fn config(&self) -> Map<String, Value> {
        let o = self.options(Durability::Full);
        let mut m = Map::new();
        m.insert(
            "segment_size_bytes".into(),
            Value::from(o.segment_size_bytes),
        );
        m.insert(
            "log_buffer_size_bytes".into(),
            Value::from(o.buffer_size_bytes),
        );
        m.insert(
            "lazy_flush_interval_ms".into(),
            Value::from(o.lazy_flush_interval_ms),
        );
        m.insert("direct_io".into(), Value::from(o.direct_io));
        m.insert("redo_payload_bytes".into(), Value::from(REDO_PAYLOAD_BYTES));
        m.insert("pages".into(), Value::from(PAGES));
        m
    }

    fn setup(&self, variant: &str, run: &RunConfig) -> Result<LogState> {
        let variant = Variant::from_name(variant)?;
        let dir = crate::micro::buffer::temp_db_dir(self.config.db_dir.as_deref(), "log")?;
        let storage: Arc<dyn Storage> = Arc::new(FileStorage::open_dir(dir.path(), true)?);
        let log = LogManager::open(storage, &self.options(variant.durability()))?;

        let workers = run.threads.iter().copied().max().unwrap_or(1);
        // The payload bytes: arbitrary, but repeatable for a seed.
        let mut rng = SmallRng::seed_from_u64(run.seed ^ PAYLOAD_SEED_SALT);
        let slots = (0..workers)
            .map(|i| {
                let payload: Vec<u8> = (0..REDO_PAYLOAD_BYTES).map(|_| rng.random()).collect();
                CachePadded::new(Mutex::new(Slot::new(i, payload)))
            })
            .collect();
        Ok(LogState {
            log,
            variant,
            slots,
            log_path: dir.path().to_path_buf(),
            _dir: dir,
        })
    }

    fn describe(state: &LogState) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(
            "durability".into(),
            Value::from(match state.variant.durability() {
                Durability::Full => "full",
                Durability::Lazy => "lazy",
            }),
        );
        m.insert(
            "log_io".into(),
            Value::from(if state.log.direct_io() {
                "direct"
            } else {
                "buffered"
            }),
        );
        m.insert(
            "log_dir".into(),
            Value::from(state.log_path.display().to_string()),
        );
        m
    }

    #[inline]
    fn op(state: &LogState, thread_idx: usize, ctx: &mut ThreadCtx) -> Result<()> {
        let slot = state.slots.get(thread_idx).ok_or_else(|| {
            BenchError::Check(format!(
                "worker {thread_idx} has no slot: setup saw fewer threads"
            ))
        })?;
        let mut guard = slot
            .lock()
            .map_err(|_| BenchError::Check("a worker's slot was poisoned".into()))?;
        let s = &mut *guard;
        s.update.page_id = PageId(ctx.rng.random_range(1..=PAGES));
        match state.variant {
            Variant::Insert => {
                // One endless transaction per worker: its records chain through prev_lsn.
                s.update.prev_lsn = s.last_lsn.unwrap_or(Lsn::ZERO);
                let lsn = state.log.append(&s.update)?;
                s.advance(thread_idx, lsn, REDO_PAYLOAD_BYTES as u64)
            }
            Variant::InsertLane => {
                // As `insert`, each record above the worker's previous one (lane rule L2).
                let prev = s.last_lsn.unwrap_or(Lsn::ZERO);
                s.update.prev_lsn = prev;
                let lsn = state.log.append_in_lane(&mut s.lane, &s.update, prev)?;
                s.advance(thread_idx, lsn, REDO_PAYLOAD_BYTES as u64)
            }
            Variant::CommitFull | Variant::CommitLazy => {
                s.txns += 1;
                let txn_id = TxnId(s.txn_base | (s.txns & 0xFFFF_FFFF));
                s.update.txn_id = txn_id;
                s.update.prev_lsn = Lsn::ZERO;
                let update_lsn = state.log.append(&s.update)?;
                s.advance(thread_idx, update_lsn, REDO_PAYLOAD_BYTES as u64)?;
                s.commit.txn_id = txn_id;
                s.commit.prev_lsn = update_lsn;
                let commit_lsn = state.log.append(&s.commit)?;
                s.advance(thread_idx, commit_lsn, 0)?;
                state.log.commit(commit_lsn)?;
                Ok(())
            }
        }
    }

    fn counters(state: &LogState) -> BTreeMap<String, u64> {
        let s = state.log.stats();
        BTreeMap::from([
            ("appends".to_string(), s.appends),
            ("bytes_appended".to_string(), s.bytes_appended),
            ("flushes".to_string(), s.flushes),
            ("syncs".to_string(), s.syncs),
            ("bytes_written".to_string(), s.bytes_written),
        ])
    }

    fn derived(
        variant: &str,
        engine_stats: &BTreeMap<String, u64>,
        ops: u64,
    ) -> Map<String, Value> {
        derived_values(variant, engine_stats, ops)
    }
}

/// The derived fields of a point (see "Reported" in the module doc); a ratio over zero
/// operations is `null`.
fn derived_values(
    variant: &str,
    engine_stats: &BTreeMap<String, u64>,
    ops: u64,
) -> Map<String, Value> {
    let per_op = |name: &str| -> Value {
        match (engine_stats.get(name), ops) {
            (Some(&n), 1..) => Value::from(n as f64 / ops as f64),
            _ => Value::Null,
        }
    };
    let mut m = Map::new();
    m.insert("log_bytes_per_op".into(), per_op("bytes_appended"));
    m.insert("written_bytes_per_op".into(), per_op("bytes_written"));
    if !variant.starts_with("insert") {
        m.insert("fdatasync_per_commit".into(), per_op("syncs"));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_uses_per_variant_defaults_unless_overridden() {
        let base = RunConfig::default();
        let p = plan(&[], None, None, &base).unwrap();
        let names: Vec<&str> = p.iter().map(|(v, _)| *v).collect();
        assert_eq!(names, VARIANTS);
        for insert in &p[..2] {
            assert_eq!(insert.1.threads, [1, 2]);
            assert_eq!(insert.1.latency_sample_every, LATENCY_SAMPLE_EVERY_FAST);
        }
        assert_eq!(p[2].1.threads, [1, 2, 4, 8, 16, 32, 64]);
        assert_eq!(p[2].1.latency_sample_every, 1);
        assert_eq!(p[3].1.threads, [1, 2, 4, 8, 16, 32, 64]);

        let p = plan(&["commit-full".into()], Some(&[3]), Some(5), &base).unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].0, "commit-full");
        assert_eq!(p[0].1.threads, [3]);
        assert_eq!(p[0].1.latency_sample_every, 5);
        assert_eq!(p[0].1.seed, base.seed);

        let e = plan(&["nope".into()], None, None, &base)
            .unwrap_err()
            .to_string();
        assert!(e.contains("variant") && e.contains("commit-full"), "{e}");
    }

    #[test]
    fn derived_values_per_variant() {
        let stats = BTreeMap::from([
            ("syncs".to_string(), 5),
            ("bytes_appended".to_string(), 4000),
        ]);
        let d = derived_values("commit-full", &stats, 20);
        assert_eq!(d["fdatasync_per_commit"], 0.25);
        assert_eq!(d["log_bytes_per_op"], 200.0);
        let d = derived_values("commit-full", &stats, 0);
        assert!(d["fdatasync_per_commit"].is_null());
        let d = derived_values("insert", &stats, 20);
        assert!(d.get("fdatasync_per_commit").is_none());
        for key in crate::measurement::REQUIRED_JSON_FIELDS {
            assert!(d.get(key).is_none());
        }
    }

    #[test]
    fn settings_are_checked() {
        let e = LogBench::new(LogConfig {
            segment_size_bytes: 0,
            ..LogConfig::default()
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("--segment-size"), "{e}");
        let e = LogBench::new(LogConfig {
            log_buffer_size_bytes: 0,
            ..LogConfig::default()
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("--log-buffer-size"), "{e}");
    }

    #[test]
    fn every_variant_runs_and_checks_its_lsns() {
        let tmp = tempfile::tempdir().unwrap();
        let bench = LogBench::new(LogConfig {
            segment_size_bytes: 1 << 20,
            log_buffer_size_bytes: 256 << 10,
            db_dir: Some(tmp.path().to_path_buf()),
            ..LogConfig::default()
        })
        .unwrap();
        let base = RunConfig {
            warmup_s: 0.0,
            duration_s: 0.1,
            seed: 3,
            ..RunConfig::default()
        };
        for (variant, run) in plan(&[], Some(&[1, 4]), None, &base).unwrap() {
            let ms = crate::runner::run_micro(
                &bench,
                &[variant.to_string()],
                &run,
                &mut crate::runner::NoObserver,
            )
            .unwrap();
            assert_eq!(ms.len(), 2);
            for m in &ms {
                assert!(m.ops > 0, "{variant} {}", m.threads);
                // An operation that started in the measured window may count its append
                // after the closing snapshot of the counters: at most one per thread.
                assert!(
                    m.engine_stats["appends"] + m.threads as u64 >= m.ops,
                    "{variant}: {} appends for {} ops",
                    m.engine_stats["appends"],
                    m.ops
                );
                assert!(m.derived["log_bytes_per_op"].as_f64().unwrap() > 100.0);
                assert_eq!(m.config["direct_io"], true);
                let mode = m.config["log_io"].as_str().unwrap();
                assert!(mode == "direct" || mode == "buffered", "{mode}");
                if variant == "commit-full" {
                    let f = m.derived["fdatasync_per_commit"].as_f64().unwrap();
                    assert!(f > 0.0 && f <= 1.5, "{f}");
                }
            }
        }
        // The log directories are removed after each variant.
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }

    #[test]
    fn buffered_log_io_is_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let bench = LogBench::new(LogConfig {
            log_buffer_size_bytes: 256 << 10,
            db_dir: Some(tmp.path().to_path_buf()),
            direct_io: false,
            ..LogConfig::default()
        })
        .unwrap();
        let run = RunConfig {
            warmup_s: 0.0,
            duration_s: 0.05,
            threads: vec![1],
            ..RunConfig::default()
        };
        let ms = crate::runner::run_micro(
            &bench,
            &["insert".to_string()],
            &run,
            &mut crate::runner::NoObserver,
        )
        .unwrap();
        assert_eq!(ms[0].config["direct_io"], false);
        assert_eq!(ms[0].config["log_io"], "buffered");
        assert!(ms[0].engine_stats["bytes_written"] > 0);
    }
}
