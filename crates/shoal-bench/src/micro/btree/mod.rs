//! # `btree`: the B+-tree micro-benchmark
//!
//! Measures the B+-tree (DESIGN.md §3.9; `shoal::btree`) on a real engine — buffer pool,
//! log with `Lazy` durability, transactions — with no tables or locks above it. Keys are
//! 8-byte big-endian `u64`s (memcomparable: byte order is numeric order). Variants:
//!
//! | variant | one operation | what it shows |
//! |---|---|---|
//! | `lookup-resident-btreemap` | `get` of a uniformly random key of an in-process `std::collections::BTreeMap<u64, [u8; 8]>` holding the same keys | context for `lookup-resident`: the same lookups without pages, latches or a buffer pool (engine `std-btreemap`) |
//! | `lookup-resident` | `get` of a uniformly random key of a tree of `keys` (default [`KEYS_DEFAULT`]) keys with 8-byte values, every page in the pool | latch-free lookups: the optimistic descent, the leaf search and the copy of the value |
//! | `lookup-batch` | `get_many` of [`BATCH_KEYS`] uniformly random keys of the tree of `lookup-resident` (one operation is the whole batch; `lookups_per_s` counts keys) | batched lookups: the keys' descents interleaved, their cache misses overlapped (btree rule 15) |
//! | `lookup-hot-root` | the same on a tree of exactly three levels: `hot_keys` (default [`HOT_KEYS_DEFAULT`]) keys with [`HOT_VALUE_BYTES`]-byte values, the `test(a INT4 PRIMARY KEY, b CHAR(96))` table of seed 000 §4.1 | the root as the hot spot (99.2% of Derby's latch waits at 32 threads): an optimistic descent writes nothing shared, so throughput should scale with cores and not collapse with more threads than cores |
//! | `insert-sequential` | insert the next key of the worker's own ascending range into one shared tree | appends at the right edge of each worker's range: highest-key splits (the leaves are left nearly full) |
//! | `insert-random` | insert a pseudo-random key of the worker's own partition into one shared tree | inserts all over the tree: splits in the middle, full-page images of pages the cleaner wrote |
//! | `scan` | a forward range scan of [`SCAN_KEYS`] consecutive keys from a uniformly random start, on the tree of `lookup-resident` | cursor throughput: a descent per leaf batch and a copy of every entry |
//!
//! ## Thread counts
//!
//! `lookup-hot-root` runs at 1, 2, 4, … 128 threads by default
//! ([`HOT_ROOT_THREADS_DEFAULT`]: the seed's sweep, well past the cores of most machines, to
//! show that oversubscription does not collapse throughput); the others at 1 and 2.
//! `--threads` replaces every variant's list. [`plan`] makes one [`RunConfig`] per variant
//! and [`run`] runs them one after the other, each with [`run_micro`]. The context variant
//! `lookup-resident-btreemap` runs whenever `lookup-resident` or `lookup-batch` does, just
//! before them, with the same threads, so that the ratio of the two is measured within one invocation
//! (DESIGN.md §6). Latency sampling is one operation in [`LATENCY_SAMPLE_EVERY_FAST`] except
//! for `scan` (every operation; a scan takes tens of microseconds).
//!
//! ## Data
//!
//! Each variant creates a fresh database in a new temporary directory (under `db_dir` if
//! given; removed afterwards) with `Lazy` durability and the engine's other defaults (the
//! page cleaner on), and keeps it for all its thread counts. The lookup and scan variants
//! load keys `0 .. n` in ascending order, in transactions of [`LOAD_TXN_KEYS`] inserts,
//! with progress on standard error when [`BtreeConfig::progress`] is set; then every page is
//! written (`flush_all`), so the cleaner has nothing to do while they are measured, and
//! `verify` must find a sound tree of exactly `n` keys whose every page fits in the pool,
//! and for `lookup-hot-root` exactly three levels; anything else fails the setup. The value
//! of key `k` is a function of `k` ([`fill_value`]).
//!
//! The insert variants start from an empty tree. Worker `t` owns the keys whose top 16 bits
//! are `t`: `insert-sequential` inserts `t << 48 | n` for its `n`-th insert, `insert-random`
//! `t << 48 | permute48(n)` ([`permute48`], a bijection on 48 bits, so no key repeats). The
//! issue asks for inserts "with no transaction"; a Shoal change always belongs to one, so
//! each worker keeps a transaction open and commits it after every `inserts_per_txn`
//! (default [`INSERTS_PER_TXN_DEFAULT`]) inserts, as the seed 001 insert benchmark does.
//! One operation is one insert; every `inserts_per_txn`-th operation also commits (`Lazy`:
//! the commit record is appended, nobody waits for the disk). A worker's open transaction
//! is committed after each point.
//!
//! ## Checks
//!
//! Every operation checks its result, so that a wrong tree stops the run with
//! [`BenchError::Check`] instead of producing a number: a lookup must find its key with the
//! loaded value; a scan must return exactly the [`SCAN_KEYS`] keys of its range, in order,
//! with their values; an insert must not find its (new) key present. After each insert
//! point ([`after_point`](crate::runner::MicroBench::after_point)) the tree must pass
//! `verify` and hold every key inserted so far, and each worker's last key must be found
//! with its value.
//!
//! ## Reported
//!
//! `engine_stats` are counters during the measured time: the pool's `hits`, `misses`,
//! `evictions`, `dirty_writes`, `optimistic_restarts`, `latch_waits` and `latch_wait_us`;
//! `root_latch_waits` and `root_latch_wait_us`, the root page's share of those (the seed 000
//! instrumentation; read from the pool's ten pages waited on most, so 0 when the root is not
//! among them); and the log's `appends`, `bytes_appended` and `syncs`. The
//! `lookup-resident-btreemap` point has none. Derived fields: `root_latch_waits` on every
//! Shoal point; `log_bytes_per_op` on the insert points; `leaf_fill` (0–1), `tree_height`
//! and `tree_keys` after each insert point; and `vs_btreemap` on each `lookup-resident`
//! point: its throughput over the BTreeMap's at the same thread count; on each
//! `lookup-batch` point `lookups_per_s` (operations per second times [`BATCH_KEYS`]) and
//! `vs_btreemap` of those lookups.
//!
//! Files: this one (settings, the plan of a run, the context ratio), `state.rs` (the data of
//! a variant, its operations and checks), `tests.rs`.

use crate::error::{BenchError, Result};
use crate::measurement::Measurement;
use crate::micro::buffer::prepare_db_dir;
use crate::runner::{run_micro, Observer, Phase, PointInfo, RunConfig};
use serde_json::Value;
use shoal::log::{Durability, LogOptions};
use shoal::Options;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

mod state;
#[cfg(test)]
mod tests;

pub use state::{fill_value, permute48, BtreeState};

/// The benchmark's name after `shoal bench`.
pub const NAME: &str = "btree";

/// The variants, in the order they run (see the module doc).
pub const VARIANTS: &[&str] = &[
    BTREEMAP_VARIANT,
    "lookup-resident",
    "lookup-batch",
    "lookup-hot-root",
    "insert-sequential",
    "insert-random",
    "scan",
];
/// The context variant: `lookup-resident`'s lookups on a `std::collections::BTreeMap`.
pub const BTREEMAP_VARIANT: &str = "lookup-resident-btreemap";
/// The engine name of [`BTREEMAP_VARIANT`]'s points.
pub const BTREEMAP_ENGINE: &str = "std-btreemap";

/// Default thread counts of `lookup-hot-root`.
pub const HOT_ROOT_THREADS_DEFAULT: &[usize] = &[1, 2, 4, 8, 16, 32, 64, 128];
/// Default thread counts of the other variants.
pub const THREADS_DEFAULT: &[usize] = &[1, 2];

/// Default number of keys of `lookup-resident`, its BTreeMap context and `scan`.
pub const KEYS_DEFAULT: u64 = 1_000_000;
/// Default number of keys of `lookup-hot-root` (seed 000 §4.1: 100,000 rows).
pub const HOT_KEYS_DEFAULT: u64 = 100_000;
/// Value length of `lookup-hot-root` in bytes (the seed's `b CHAR(96)`).
pub const HOT_VALUE_BYTES: usize = 96;
/// Levels the `lookup-hot-root` tree must have.
pub const HOT_HEIGHT: u16 = 3;
/// Value length of every other variant in bytes.
pub const VALUE_BYTES: usize = 8;
/// Keys looked up by one `lookup-batch` operation.
pub const BATCH_KEYS: u64 = 16;
/// Keys returned by one `scan` operation.
pub const SCAN_KEYS: u64 = 1000;
/// Default inserts per transaction of the insert variants.
pub const INSERTS_PER_TXN_DEFAULT: u32 = 1000;
/// Default buffer pool size in bytes (1 GiB: the insert variants' trees grow for the whole
/// run).
pub const POOL_SIZE_DEFAULT_BYTES: u64 = 1 << 30;
/// Inserts per transaction while loading.
pub const LOAD_TXN_KEYS: u64 = 100_000;
/// Latency sampling (one operation in this many) of every variant but `scan`: their
/// operations take about a microsecond or less, and timing one costs about 54 ns (see the
/// runner's "Latency sampling").
pub const LATENCY_SAMPLE_EVERY_FAST: u32 = 64;
/// Worker `t`'s insert keys are `t << THREAD_KEY_SHIFT | n` (random: `permute48(n)`).
const THREAD_KEY_SHIFT: u32 = 48;
/// The largest `n` of a worker's insert keys.
const THREAD_KEY_MASK: u64 = (1 << THREAD_KEY_SHIFT) - 1;
/// Most workers the insert variants can give a key partition of their own.
pub const INSERT_THREADS_MAX: usize = 1 << (64 - THREAD_KEY_SHIFT);
/// Pages the pool must keep free beyond a loaded tree's (space maps and slack).
const POOL_SLACK_PAGES: u64 = 64;
/// Mixed into keys to make values.
const VALUE_SALT: u64 = 0x6274_7265_6562_656e;
/// Seconds between two load progress lines.
const PROGRESS_INTERVAL: Duration = Duration::from_secs(1);

/// Settings of the btree benchmark.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BtreeConfig {
    /// Buffer pool size in bytes. Default [`POOL_SIZE_DEFAULT_BYTES`].
    pub pool_size_bytes: u64,
    /// Page size in bytes (a power of two from 4096 to 65536). Default 8192.
    pub page_size_bytes: usize,
    /// Keys of `lookup-resident`, `lookup-batch`, their context and `scan` (at least [`SCAN_KEYS`]). Default
    /// [`KEYS_DEFAULT`].
    pub keys: u64,
    /// Keys of `lookup-hot-root`; with the page size they must make a tree of exactly
    /// [`HOT_HEIGHT`] levels (checked at setup). Default [`HOT_KEYS_DEFAULT`].
    pub hot_keys: u64,
    /// Inserts per transaction of the insert variants. Default
    /// [`INSERTS_PER_TXN_DEFAULT`].
    pub inserts_per_txn: u32,
    /// Directory in which each variant creates its temporary database directory; the
    /// system temporary directory if `None`.
    pub db_dir: Option<PathBuf>,
    /// Print load progress on standard error (about once a second). Default off.
    pub progress: bool,
}

impl Default for BtreeConfig {
    fn default() -> Self {
        BtreeConfig {
            pool_size_bytes: POOL_SIZE_DEFAULT_BYTES,
            page_size_bytes: shoal::options::PAGE_SIZE_DEFAULT_BYTES,
            keys: KEYS_DEFAULT,
            hot_keys: HOT_KEYS_DEFAULT,
            inserts_per_txn: INSERTS_PER_TXN_DEFAULT,
            db_dir: None,
            progress: false,
        }
    }
}

/// The default thread counts of `variant` (see "Thread counts" in the module doc).
pub fn default_threads(variant: &str) -> &'static [usize] {
    if variant == "lookup-hot-root" {
        HOT_ROOT_THREADS_DEFAULT
    } else {
        THREADS_DEFAULT
    }
}

/// The default latency sampling (time one operation in this many) of `variant`.
pub fn latency_sample_every_default(variant: &str) -> u32 {
    if variant == "scan" {
        1
    } else {
        LATENCY_SAMPLE_EVERY_FAST
    }
}

/// One run per variant: `variants` (all if empty) in the order of [`VARIANTS`], with
/// [`BTREEMAP_VARIANT`] added when `lookup-resident` or `lookup-batch` is chosen; each with `threads` if given
/// or its [`default_threads`] (the context variant takes `lookup-resident`'s), and
/// `latency_sample_every` if given or its [`latency_sample_every_default`]; the other
/// settings from `base`.
///
/// # Errors
/// [`BenchError::InvalidArgument`] naming `variant` for an unknown variant.
pub fn plan(
    variants: &[String],
    threads: Option<&[usize]>,
    latency_sample_every: Option<u32>,
    base: &RunConfig,
) -> Result<Vec<(&'static str, RunConfig)>> {
    let mut chosen: Vec<&'static str> = if variants.is_empty() {
        VARIANTS.to_vec()
    } else {
        variants
            .iter()
            .map(|v| Variant::from_name(v).map(Variant::name))
            .collect::<Result<_>>()?
    };
    if chosen.contains(&"lookup-resident") || chosen.contains(&"lookup-batch") {
        chosen.push(BTREEMAP_VARIANT);
    }
    let ordered = VARIANTS.iter().copied().filter(|v| chosen.contains(v));
    // The BTreeMap context runs at the thread counts of the variant it is context for.
    let threads_of = |v: &str| {
        default_threads(if v == BTREEMAP_VARIANT {
            "lookup-resident"
        } else {
            v
        })
    };
    Ok(crate::runner::runs_for(
        ordered,
        threads,
        latency_sample_every,
        base,
        threads_of,
        latency_sample_every_default,
    ))
}

/// Runs `plan` (from [`plan`]) variant by variant with [`run_micro`], telling `observer`
/// about progress and each measurement, the `lookup-resident` and `lookup-batch` ones with
/// `vs_btreemap` (and `lookups_per_s`) added
/// (see [`ContextRatio`]). Returns the measurements as the observer saw them.
///
/// # Errors
/// As [`run_micro`]; the run stops at the first error.
pub fn run(
    bench: &BtreeBench,
    plan: &[(&'static str, RunConfig)],
    observer: &mut dyn Observer,
) -> Result<Vec<Measurement>> {
    for (_, run) in plan {
        run.validate()?;
    }
    let mut with_ratio = ContextRatio::new(observer);
    for (variant, run) in plan {
        run_micro(bench, &[variant.to_string()], run, &mut with_ratio)?;
    }
    Ok(with_ratio.measurements)
}

/// An [`Observer`] that passes everything on to another, adding to each `lookup-resident`
/// and `lookup-batch` measurement the field `vs_btreemap`: its lookups per second (a
/// `lookup-batch` operation is [`BATCH_KEYS`] lookups, recorded as `lookups_per_s`) divided
/// by the operations per second of the
/// [`BTREEMAP_VARIANT`] point at the same thread count measured before it in the run
/// (`null` when that point measured nothing; absent when there is no such point).
pub struct ContextRatio<'o> {
    inner: &'o mut dyn Observer,
    /// `ops_per_s` of the BTreeMap points by thread count.
    btreemap_ops_per_s: BTreeMap<usize, f64>,
    /// Every measurement passed on, as passed on.
    measurements: Vec<Measurement>,
}

impl<'o> ContextRatio<'o> {
    /// Wraps `inner`.
    pub fn new(inner: &'o mut dyn Observer) -> ContextRatio<'o> {
        ContextRatio {
            inner,
            btreemap_ops_per_s: BTreeMap::new(),
            measurements: Vec::new(),
        }
    }
}

impl Observer for ContextRatio<'_> {
    fn setup_started(&mut self, bench: &str, variant: &str) {
        self.inner.setup_started(bench, variant);
    }

    fn setup_finished(&mut self, bench: &str, variant: &str, elapsed_s: f64) {
        self.inner.setup_finished(bench, variant, elapsed_s);
    }

    fn point_started(&mut self, point: &PointInfo<'_>) {
        self.inner.point_started(point);
    }

    fn point_progress(&mut self, point: &PointInfo<'_>, phase: Phase, phase_elapsed_s: f64) {
        self.inner.point_progress(point, phase, phase_elapsed_s);
    }

    fn point_finished(&mut self, point: &PointInfo<'_>, m: &Measurement) -> Result<()> {
        let mut m = m.clone();
        if m.bench == NAME && m.variant == BTREEMAP_VARIANT {
            self.btreemap_ops_per_s.insert(m.threads, m.ops_per_s);
        } else if let Some(keys_per_op) = lookups_per_op(&m.variant).filter(|_| m.bench == NAME) {
            let lookups = m.ops_per_s * keys_per_op as f64;
            if keys_per_op > 1 {
                m.derived
                    .insert("lookups_per_s".into(), Value::from(lookups));
            }
            if let Some(&base) = self.btreemap_ops_per_s.get(&m.threads) {
                let ratio = if base > 0.0 {
                    Value::from(lookups / base)
                } else {
                    Value::Null
                };
                m.derived.insert("vs_btreemap".into(), ratio);
            }
        }
        self.inner.point_finished(point, &m)?;
        self.measurements.push(m);
        Ok(())
    }
}

/// Keys one operation of `variant` looks up, for the variants compared with the
/// [`BTREEMAP_VARIANT`] point (`None` for the others).
fn lookups_per_op(variant: &str) -> Option<u64> {
    match variant {
        "lookup-resident" => Some(1),
        "lookup-batch" => Some(BATCH_KEYS),
        _ => None,
    }
}

/// The btree benchmark, its settings checked.
#[derive(Debug)]
pub struct BtreeBench {
    config: BtreeConfig,
    options: Options,
    log_options: LogOptions,
}

impl BtreeBench {
    /// Checks `config` (pool and page size through [`Options::validate`]) and creates
    /// `db_dir` if it is missing but its parent exists.
    ///
    /// # Errors
    /// [`BenchError::InvalidArgument`] naming `--pool-size`, `--page-size`, `--keys`,
    /// `--hot-keys`, `--inserts-per-txn` or `--db-dir`.
    pub fn new(config: BtreeConfig) -> Result<BtreeBench> {
        let pool_size_bytes = usize::try_from(config.pool_size_bytes).map_err(|_| {
            BenchError::invalid("--pool-size", "larger than this machine's address space")
        })?;
        let options = Options {
            pool_size_bytes,
            page_size_bytes: config.page_size_bytes,
            ..Options::default()
        };
        options.validate().map_err(|e| match e {
            shoal::Error::InvalidArgument {
                name: "page_size_bytes",
                reason,
            } => BenchError::invalid("--page-size", reason),
            shoal::Error::InvalidArgument { reason, .. } => {
                BenchError::invalid("--pool-size", reason)
            }
            e => e.into(),
        })?;
        if !(SCAN_KEYS..=THREAD_KEY_MASK).contains(&config.keys) {
            return Err(BenchError::invalid(
                "--keys",
                format!(
                    "{} is not from {SCAN_KEYS} (the scan length) to 2^48 - 1",
                    config.keys
                ),
            ));
        }
        if !(1..=THREAD_KEY_MASK).contains(&config.hot_keys) {
            return Err(BenchError::invalid(
                "--hot-keys",
                format!("{} is not from 1 to 2^48 - 1", config.hot_keys),
            ));
        }
        if config.inserts_per_txn == 0 {
            return Err(BenchError::invalid(
                "--inserts-per-txn",
                "must be at least 1",
            ));
        }
        if let Some(dir) = &config.db_dir {
            prepare_db_dir(dir)?;
        }
        let log_options = LogOptions {
            durability: Durability::Lazy,
            ..LogOptions::default()
        };
        Ok(BtreeBench {
            config,
            options,
            log_options,
        })
    }
}

/// Which variant a state runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    LookupBTreeMap,
    LookupResident,
    LookupBatch,
    LookupHotRoot,
    InsertSequential,
    InsertRandom,
    Scan,
}

impl Variant {
    fn from_name(name: &str) -> Result<Variant> {
        Ok(match name {
            BTREEMAP_VARIANT => Variant::LookupBTreeMap,
            "lookup-resident" => Variant::LookupResident,
            "lookup-batch" => Variant::LookupBatch,
            "lookup-hot-root" => Variant::LookupHotRoot,
            "insert-sequential" => Variant::InsertSequential,
            "insert-random" => Variant::InsertRandom,
            "scan" => Variant::Scan,
            other => {
                return Err(BenchError::invalid(
                    "variant",
                    format!(
                        "`{other}` is not a btree variant; choose from {}",
                        VARIANTS.join(", ")
                    ),
                ))
            }
        })
    }

    fn name(self) -> &'static str {
        match self {
            Variant::LookupBTreeMap => BTREEMAP_VARIANT,
            Variant::LookupResident => "lookup-resident",
            Variant::LookupBatch => "lookup-batch",
            Variant::LookupHotRoot => "lookup-hot-root",
            Variant::InsertSequential => "insert-sequential",
            Variant::InsertRandom => "insert-random",
            Variant::Scan => "scan",
        }
    }

    fn is_insert(self) -> bool {
        matches!(self, Variant::InsertSequential | Variant::InsertRandom)
    }
}
