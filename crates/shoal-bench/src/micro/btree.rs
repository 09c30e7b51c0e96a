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
//! `lookup-resident-btreemap` runs whenever `lookup-resident` does, just before it, with
//! the same threads, so that the ratio of the two is measured within one invocation
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
//! point ([`MicroBench::after_point`]) the tree must pass `verify` and hold every key
//! inserted so far, and each worker's last key must be found with its value.
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
//! point: its throughput over the BTreeMap's at the same thread count.

use crate::error::{BenchError, Result};
use crate::measurement::Measurement;
use crate::micro::buffer::prepare_db_dir;
use crate::runner::{run_micro, MicroBench, Observer, Phase, PointInfo, RunConfig, ThreadCtx};
use crossbeam_utils::CachePadded;
use rand::Rng;
use serde_json::{Map, Value};
use shoal::btree::{BTree, ScanDirection};
use shoal::io::{FileStorage, Storage};
use shoal::log::{Durability, LogOptions};
use shoal::txn::Transaction;
use shoal::{Engine, Options};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The benchmark's name after `shoal bench`.
pub const NAME: &str = "btree";

/// The variants, in the order they run (see the module doc).
pub const VARIANTS: &[&str] = &[
    BTREEMAP_VARIANT,
    "lookup-resident",
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
    /// Keys of `lookup-resident`, its context and `scan` (at least [`SCAN_KEYS`]). Default
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
/// [`BTREEMAP_VARIANT`] added when `lookup-resident` is chosen; each with `threads` if given
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
    if chosen.contains(&"lookup-resident") {
        chosen.push(BTREEMAP_VARIANT);
    }
    let ordered = VARIANTS.iter().copied().filter(|v| chosen.contains(v));
    Ok(ordered
        .map(|v| {
            let threads_of = if v == BTREEMAP_VARIANT {
                "lookup-resident"
            } else {
                v
            };
            let run = RunConfig {
                threads: threads.unwrap_or(default_threads(threads_of)).to_vec(),
                latency_sample_every: latency_sample_every
                    .unwrap_or_else(|| latency_sample_every_default(v)),
                ..base.clone()
            };
            (v, run)
        })
        .collect())
}

/// Runs `plan` (from [`plan`]) variant by variant with [`run_micro`], telling `observer`
/// about progress and each measurement, the `lookup-resident` ones with `vs_btreemap` added
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
/// measurement the field `vs_btreemap`: its throughput divided by that of the
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
        } else if m.bench == NAME && m.variant == "lookup-resident" {
            if let Some(&base) = self.btreemap_ops_per_s.get(&m.threads) {
                let ratio = if base > 0.0 {
                    Value::from(m.ops_per_s / base)
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

    /// Creates a database in a new temporary directory.
    fn create_engine(&self) -> Result<(Arc<Engine>, tempfile::TempDir)> {
        let parent = self
            .config
            .db_dir
            .clone()
            .unwrap_or_else(std::env::temp_dir);
        let dir = tempfile::Builder::new()
            .prefix("shoal-bench-btree-")
            .tempdir_in(&parent)
            .map_err(|e| BenchError::io("creating a database directory in", &parent, e))?;
        let storage: Arc<dyn Storage> = Arc::new(FileStorage::open_dir(dir.path(), true)?);
        let engine = Engine::open(storage, &self.options, &self.log_options)?;
        Ok((Arc::new(engine), dir))
    }

    /// Loads keys `0 .. keys` with `value_bytes`-byte values into `tree` in ascending order,
    /// writes every page, and checks the tree (see "Data" in the module doc).
    fn load(
        &self,
        variant: Variant,
        engine: &Engine,
        tree: &BTree,
        keys: u64,
        value_bytes: usize,
    ) -> Result<Shape> {
        let start = Instant::now();
        let mut last_report = start;
        let mut value = vec![0u8; value_bytes];
        let mut next = 0u64;
        while next < keys {
            let end = (next + LOAD_TXN_KEYS).min(keys);
            let mut txn = engine.begin();
            for key in next..end {
                fill_value(&mut value, key);
                tree.insert(&mut txn, &key.to_be_bytes(), &value)?;
                if self.config.progress && last_report.elapsed() >= PROGRESS_INTERVAL {
                    last_report = Instant::now();
                    eprintln!(
                        "{NAME} {}: loaded {key} of {keys} keys ({:.0}%) in {:.1} s",
                        variant.name(),
                        key as f64 * 100.0 / keys as f64,
                        start.elapsed().as_secs_f64()
                    );
                }
            }
            txn.commit()?;
            next = end;
        }
        engine.pool().flush_all()?;
        let report = tree.verify()?;
        if !report.is_ok() || report.keys != keys {
            return Err(BenchError::Check(format!(
                "after loading {keys} keys the tree holds {} keys; problems: {:?}",
                report.keys, report.problems
            )));
        }
        let frames = self.options.frame_count() as u64;
        let pages = report.pages.len() as u64;
        if pages + POOL_SLACK_PAGES > frames {
            return Err(BenchError::invalid(
                "--pool-size",
                format!(
                    "{keys} keys of {value_bytes}-byte values take {pages} pages; the pool \
                     has {frames} frames and must hold them and {POOL_SLACK_PAGES} more"
                ),
            ));
        }
        if self.config.progress {
            eprintln!(
                "{NAME} {}: loaded {keys} keys in {:.1} s: {} levels, {pages} pages, leaf fill {:.2}",
                variant.name(),
                start.elapsed().as_secs_f64(),
                report.height,
                report.leaf_fill()
            );
        }
        Ok(Shape::of(&report))
    }
}

/// A tree's shape, as `verify` found it.
#[derive(Clone, Debug)]
struct Shape {
    height: u16,
    pages_by_level: Vec<u64>,
    leaf_fill: f64,
}

impl Shape {
    fn of(r: &shoal::btree::VerifyReport) -> Shape {
        Shape {
            height: r.height,
            pages_by_level: r.pages_by_level.clone(),
            leaf_fill: r.leaf_fill(),
        }
    }
}

/// Which variant a state runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    LookupBTreeMap,
    LookupResident,
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

/// The data of one variant.
pub struct BtreeState {
    variant: Variant,
    /// Keys loaded (0 for the insert variants).
    keys: u64,
    /// Value length of the loaded keys.
    value_bytes: usize,
    data: Data,
}

/// What a variant's operations work on.
enum Data {
    /// The BTreeMap context.
    Map(BTreeMap<u64, [u8; VALUE_BYTES]>),
    /// A Shoal tree.
    Tree(TreeState),
}

/// A database with one tree, and the insert workers' open transactions.
///
/// Safety of the open transactions: a [`Transaction`] borrows the engine's transaction
/// manager, and a worker's transaction must outlive one operation, so it is kept in
/// `slots` as a `Transaction<'static>` (made by [`TreeState::begin`]) although it borrows
/// `engine`. That is sound because (1) the engine is behind an `Arc` that this state holds
/// for its whole life, so it neither moves nor drops while the state exists (an `Arc`, not a
/// `Box`, so that moving the state asserts no unique access to the engine); (2) a
/// transaction never leaves its slot except to be committed or ended within the call that
/// took it; (3) [`Drop`] ends every transaction left in a slot before any field is dropped,
/// and `slots` is declared before `engine` as well.
struct TreeState {
    // Field order is drop order: the transactions, then the tree and the engine, then the
    // directory holding the files.
    slots: Vec<CachePadded<Mutex<InsertSlot>>>,
    tree: BTree,
    engine: Arc<Engine>,
    inserts_per_txn: u32,
    /// The tree's shape after setup.
    loaded: Shape,
    db_path: PathBuf,
    _dir: tempfile::TempDir,
}

impl TreeState {
    /// A transaction of `self.engine` with its borrow widened to `'static`; it must only be
    /// stored in `self.slots` (see the safety note of [`TreeState`]).
    fn begin(&self) -> Transaction<'static> {
        let txn = self.engine.begin();
        // SAFETY: see the safety note of `TreeState`: the engine outlives every transaction
        // kept in `slots`, which are ended before the state's fields drop.
        unsafe { std::mem::transmute::<Transaction<'_>, Transaction<'static>>(txn) }
    }

    /// Commits every worker's open transaction.
    fn commit_all(&self) -> Result<()> {
        for slot in &self.slots {
            let txn = lock(slot)?.txn.take();
            if let Some(txn) = txn {
                txn.commit()?;
            }
        }
        Ok(())
    }
}

impl Drop for TreeState {
    fn drop(&mut self) {
        // End the transactions before the engine they borrow goes (safety note, point 3).
        // The database is temporary and dropped unclosed right after, so the transactions
        // are abandoned rather than rolled back.
        for slot in &self.slots {
            let txn = match slot.lock() {
                Ok(mut s) => s.txn.take(),
                Err(poisoned) => poisoned.into_inner().txn.take(),
            };
            if let Some(txn) = txn {
                txn.abandon();
            }
        }
    }
}

/// What one insert worker keeps between its operations; only that worker locks it (and the
/// controller between points).
struct InsertSlot {
    /// The open transaction, if any (a `'static` lie: see [`TreeState`]).
    txn: Option<Transaction<'static>>,
    /// Inserts in `txn` so far.
    in_txn: u32,
    /// Keys this worker has inserted: its next key is number `inserted`.
    inserted: u64,
}

fn lock(slot: &Mutex<InsertSlot>) -> Result<std::sync::MutexGuard<'_, InsertSlot>> {
    slot.lock()
        .map_err(|_| BenchError::Check("an insert worker's slot was poisoned".into()))
}

impl MicroBench for BtreeBench {
    type State = BtreeState;

    fn name(&self) -> &'static str {
        NAME
    }

    fn variant_engine(&self, variant: &str) -> &'static str {
        if variant == BTREEMAP_VARIANT {
            BTREEMAP_ENGINE
        } else {
            self.engine()
        }
    }

    fn variants(&self) -> &'static [&'static str] {
        VARIANTS
    }

    fn latency_sample_every_default(&self) -> u32 {
        LATENCY_SAMPLE_EVERY_FAST
    }

    fn config(&self) -> Map<String, Value> {
        let (o, l, c) = (&self.options, &self.log_options, &self.config);
        let mut m = Map::new();
        m.insert("pool_size_bytes".into(), Value::from(o.pool_size_bytes));
        m.insert("page_size_bytes".into(), Value::from(o.page_size_bytes));
        m.insert("pool_frames".into(), Value::from(o.frame_count()));
        m.insert("cleaner_enabled".into(), Value::from(o.cleaner_enabled));
        m.insert("durability".into(), Value::from("lazy"));
        m.insert(
            "lazy_flush_interval_ms".into(),
            Value::from(l.lazy_flush_interval_ms),
        );
        m.insert(
            "segment_size_bytes".into(),
            Value::from(l.segment_size_bytes),
        );
        m.insert(
            "log_buffer_size_bytes".into(),
            Value::from(l.buffer_size_bytes),
        );
        m.insert("key_bytes".into(), Value::from(8));
        m.insert("keys".into(), Value::from(c.keys));
        m.insert("hot_keys".into(), Value::from(c.hot_keys));
        m.insert("hot_value_bytes".into(), Value::from(HOT_VALUE_BYTES));
        m.insert("scan_keys".into(), Value::from(SCAN_KEYS));
        m.insert("inserts_per_txn".into(), Value::from(c.inserts_per_txn));
        m
    }

    fn setup(&self, variant: &str, run: &RunConfig) -> Result<BtreeState> {
        let variant = Variant::from_name(variant)?;
        let (keys, value_bytes) = match variant {
            Variant::LookupHotRoot => (self.config.hot_keys, HOT_VALUE_BYTES),
            Variant::InsertSequential | Variant::InsertRandom => (0, VALUE_BYTES),
            _ => (self.config.keys, VALUE_BYTES),
        };
        if variant == Variant::LookupBTreeMap {
            let map = (0..keys)
                .map(|k| {
                    let mut v = [0u8; VALUE_BYTES];
                    fill_value(&mut v, k);
                    (k, v)
                })
                .collect();
            return Ok(BtreeState {
                variant,
                keys,
                value_bytes,
                data: Data::Map(map),
            });
        }
        let workers = run.threads.iter().copied().max().unwrap_or(1);
        if variant.is_insert() && workers > INSERT_THREADS_MAX {
            return Err(BenchError::invalid(
                "--threads",
                format!("the insert variants take at most {INSERT_THREADS_MAX} threads"),
            ));
        }
        let (engine, dir) = self.create_engine()?;
        let tree = BTree::create(engine.txns(), engine.space())?;
        let loaded = if keys > 0 {
            self.load(variant, &engine, &tree, keys, value_bytes)?
        } else {
            Shape::of(&tree.verify()?)
        };
        if variant == Variant::LookupHotRoot && loaded.height != HOT_HEIGHT {
            return Err(BenchError::invalid(
                "--hot-keys",
                format!(
                    "{keys} keys of {value_bytes}-byte values make a tree of {} levels with \
                     {}-byte pages; lookup-hot-root needs exactly {HOT_HEIGHT}",
                    loaded.height, self.options.page_size_bytes
                ),
            ));
        }
        let slots = if variant.is_insert() { workers } else { 0 };
        let slots = (0..slots)
            .map(|_| {
                CachePadded::new(Mutex::new(InsertSlot {
                    txn: None,
                    in_txn: 0,
                    inserted: 0,
                }))
            })
            .collect();
        Ok(BtreeState {
            variant,
            keys,
            value_bytes,
            data: Data::Tree(TreeState {
                slots,
                tree,
                engine,
                inserts_per_txn: self.config.inserts_per_txn,
                loaded,
                db_path: dir.path().to_path_buf(),
                _dir: dir,
            }),
        })
    }

    fn describe(state: &BtreeState) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("keys_loaded".into(), Value::from(state.keys));
        m.insert("value_bytes".into(), Value::from(state.value_bytes));
        if let Data::Tree(t) = &state.data {
            let r = &t.loaded;
            m.insert("root_page".into(), Value::from(t.tree.root().0));
            m.insert("loaded_height".into(), Value::from(r.height));
            m.insert(
                "loaded_pages_by_level".into(),
                Value::from(r.pages_by_level.clone()),
            );
            m.insert("loaded_leaf_fill".into(), Value::from(r.leaf_fill));
            m.insert(
                "db_dir".into(),
                Value::from(t.db_path.display().to_string()),
            );
        }
        m
    }

    #[inline]
    fn op(state: &BtreeState, thread_idx: usize, ctx: &mut ThreadCtx) -> Result<()> {
        let t = match &state.data {
            Data::Map(map) => {
                let key = ctx.rng.random_range(0..state.keys);
                let mut expected = [0u8; VALUE_BYTES];
                fill_value(&mut expected, key);
                return match map.get(&key) {
                    Some(v) if *v == expected => Ok(()),
                    _ => Err(BenchError::Check(format!(
                        "the BTreeMap lost key {key} or its value"
                    ))),
                };
            }
            Data::Tree(t) => t,
        };
        match state.variant {
            Variant::LookupResident | Variant::LookupHotRoot | Variant::LookupBTreeMap => {
                let key = ctx.rng.random_range(0..state.keys);
                let mut buf = [0u8; HOT_VALUE_BYTES];
                let expected = &mut buf[..state.value_bytes];
                fill_value(expected, key);
                match t.tree.get(&key.to_be_bytes())? {
                    Some(v) if v == expected => Ok(()),
                    Some(_) => Err(BenchError::Check(format!(
                        "key {key} holds another value than the one loaded"
                    ))),
                    None => Err(BenchError::Check(format!(
                        "key {key} was loaded but is not found"
                    ))),
                }
            }
            Variant::Scan => {
                let start = ctx.rng.random_range(0..=state.keys - SCAN_KEYS);
                scan_check(&t.tree, start)
            }
            Variant::InsertSequential | Variant::InsertRandom => {
                insert_one(t, state.variant, thread_idx)
            }
        }
    }

    fn counters(state: &BtreeState) -> BTreeMap<String, u64> {
        let Data::Tree(t) = &state.data else {
            return BTreeMap::new();
        };
        let p = t.engine.pool().stats();
        let root = p.hottest_pages.iter().find(|w| w.page_id == t.tree.root());
        let l = t.engine.log().stats();
        BTreeMap::from([
            ("hits".to_string(), p.hits),
            ("misses".to_string(), p.misses),
            ("evictions".to_string(), p.evictions),
            ("dirty_writes".to_string(), p.dirty_writes),
            ("optimistic_restarts".to_string(), p.optimistic_restarts),
            ("latch_waits".to_string(), p.latch_waits),
            ("latch_wait_us".to_string(), p.latch_wait_us),
            ("root_latch_waits".to_string(), root.map_or(0, |w| w.waits)),
            (
                "root_latch_wait_us".to_string(),
                root.map_or(0, |w| w.wait_us),
            ),
            ("log_appends".to_string(), l.appends),
            ("log_bytes_appended".to_string(), l.bytes_appended),
            ("log_syncs".to_string(), l.syncs),
        ])
    }

    fn after_point(state: &BtreeState) -> Result<Map<String, Value>> {
        let Data::Tree(t) = &state.data else {
            return Ok(Map::new());
        };
        if !state.variant.is_insert() {
            return Ok(Map::new());
        }
        t.commit_all()?;
        let mut inserted = 0u64;
        for (thread_idx, slot) in t.slots.iter().enumerate() {
            let n = lock(slot)?.inserted;
            inserted += n;
            if n > 0 {
                let key = insert_key(state.variant, thread_idx, n - 1);
                let mut expected = [0u8; VALUE_BYTES];
                fill_value(&mut expected, key);
                if t.tree.get(&key.to_be_bytes())?.as_deref() != Some(&expected[..]) {
                    return Err(BenchError::Check(format!(
                        "worker {thread_idx}'s last insert, key {key:#x}, is not found with \
                         its value"
                    )));
                }
            }
        }
        let r = t.tree.verify()?;
        if !r.is_ok() || r.keys != inserted {
            return Err(BenchError::Check(format!(
                "after {inserted} inserts the tree holds {} keys; problems: {:?}",
                r.keys, r.problems
            )));
        }
        let mut m = Map::new();
        m.insert("leaf_fill".into(), Value::from(r.leaf_fill()));
        m.insert("tree_height".into(), Value::from(r.height));
        m.insert("tree_keys".into(), Value::from(r.keys));
        Ok(m)
    }

    fn derived(
        variant: &str,
        engine_stats: &BTreeMap<String, u64>,
        ops: u64,
    ) -> Map<String, Value> {
        derived_values(variant, engine_stats, ops)
    }
}

/// The derived fields of a point from its counters (see "Reported" in the module doc); a
/// ratio over zero operations is `null`.
fn derived_values(
    variant: &str,
    engine_stats: &BTreeMap<String, u64>,
    ops: u64,
) -> Map<String, Value> {
    let mut m = Map::new();
    if variant == BTREEMAP_VARIANT {
        return m;
    }
    if let Some(&n) = engine_stats.get("root_latch_waits") {
        m.insert("root_latch_waits".into(), Value::from(n));
    }
    if variant.starts_with("insert-") {
        let per_op = match (engine_stats.get("log_bytes_appended"), ops) {
            (Some(&n), 1..) => Value::from(n as f64 / ops as f64),
            _ => Value::Null,
        };
        m.insert("log_bytes_per_op".into(), per_op);
    }
    m
}

/// One insert of worker `thread_idx` (see "Data" in the module doc).
#[inline]
fn insert_one(t: &TreeState, variant: Variant, thread_idx: usize) -> Result<()> {
    let slot = t.slots.get(thread_idx).ok_or_else(|| {
        BenchError::Check(format!(
            "worker {thread_idx} has no slot: setup saw fewer threads"
        ))
    })?;
    let mut guard = lock(slot)?;
    let s = &mut *guard;
    if s.inserted > THREAD_KEY_MASK {
        return Err(BenchError::Check(format!(
            "worker {thread_idx} ran out of keys"
        )));
    }
    let key = insert_key(variant, thread_idx, s.inserted);
    let mut value = [0u8; VALUE_BYTES];
    fill_value(&mut value, key);
    let txn = s.txn.get_or_insert_with(|| t.begin());
    match t.tree.insert(txn, &key.to_be_bytes(), &value) {
        Ok(()) => {}
        Err(shoal::Error::DuplicateKey { .. }) => {
            return Err(BenchError::Check(format!(
                "worker {thread_idx}'s new key {key:#x} is already in the tree"
            )))
        }
        Err(e) => return Err(e.into()),
    }
    s.inserted += 1;
    s.in_txn += 1;
    if s.in_txn >= t.inserts_per_txn {
        s.in_txn = 0;
        if let Some(txn) = s.txn.take() {
            txn.commit()?;
        }
    }
    Ok(())
}

/// A forward scan of [`SCAN_KEYS`] keys from `start`, checking every key and value.
fn scan_check(tree: &BTree, start: u64) -> Result<()> {
    let (lo, hi) = (start.to_be_bytes(), (start + SCAN_KEYS).to_be_bytes());
    let mut expect = start;
    let mut value = [0u8; VALUE_BYTES];
    for item in tree.scan(
        Bound::Included(&lo[..]),
        Bound::Excluded(&hi[..]),
        ScanDirection::Forward,
    ) {
        let (k, v) = item?;
        fill_value(&mut value, expect);
        if k[..] != expect.to_be_bytes() || v[..] != value {
            return Err(BenchError::Check(format!(
                "scan from key {start}: expected key {expect} with its value, got key {:02x?}",
                k
            )));
        }
        expect += 1;
    }
    if expect != start + SCAN_KEYS {
        return Err(BenchError::Check(format!(
            "scan from key {start} returned {} keys, not {SCAN_KEYS}",
            expect - start
        )));
    }
    Ok(())
}

/// Worker `thread_idx`'s `n`-th insert key of `variant` (see "Data" in the module doc).
fn insert_key(variant: Variant, thread_idx: usize, n: u64) -> u64 {
    let low = if variant == Variant::InsertRandom {
        permute48(n)
    } else {
        n & THREAD_KEY_MASK
    };
    (thread_idx as u64) << THREAD_KEY_SHIFT | low
}

/// A bijection on the numbers below 2^48 that scatters consecutive inputs: each step
/// (multiplication by an odd number mod 2^48, xor with the value shifted right) is
/// invertible on 48 bits.
pub fn permute48(n: u64) -> u64 {
    let mut x = n & THREAD_KEY_MASK;
    x = x.wrapping_mul(0x9E37_79B9_7F4B) & THREAD_KEY_MASK;
    x ^= x >> 25;
    x = x.wrapping_mul(0xC2B2_AE3D_27D5) & THREAD_KEY_MASK;
    x ^= x >> 22;
    x
}

/// The value of `key`: bytes of a SplitMix64 stream seeded by the key.
pub fn fill_value(out: &mut [u8], key: u64) {
    let mut x = key.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ VALUE_SALT;
    for chunk in out.chunks_mut(8) {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::NoObserver;
    use std::collections::HashSet;

    /// Small settings: 4 KiB pages, so that a few thousand keys make three levels.
    fn small(db_dir: &std::path::Path) -> BtreeConfig {
        BtreeConfig {
            pool_size_bytes: 32 << 20,
            page_size_bytes: 4096,
            keys: 5000,
            hot_keys: 10_000,
            inserts_per_txn: 100,
            db_dir: Some(db_dir.to_path_buf()),
            progress: false,
        }
    }

    fn short_run() -> RunConfig {
        RunConfig {
            warmup_s: 0.0,
            duration_s: 0.1,
            seed: 3,
            ..RunConfig::default()
        }
    }

    #[test]
    fn plan_uses_per_variant_defaults_and_adds_the_context() {
        let base = RunConfig::default();
        let p = plan(&[], None, None, &base).unwrap();
        let names: Vec<&str> = p.iter().map(|(v, _)| *v).collect();
        assert_eq!(names, VARIANTS);
        for (v, run) in &p {
            let expect: &[usize] = if *v == "lookup-hot-root" {
                &[1, 2, 4, 8, 16, 32, 64, 128]
            } else {
                &[1, 2]
            };
            assert_eq!(run.threads, expect, "{v}");
            let every = if *v == "scan" { 1 } else { 64 };
            assert_eq!(run.latency_sample_every, every, "{v}");
        }

        // lookup-resident brings its context along, before it, with its threads.
        let p = plan(
            &["scan".into(), "lookup-resident".into()],
            Some(&[3]),
            Some(5),
            &base,
        )
        .unwrap();
        let names: Vec<&str> = p.iter().map(|(v, _)| *v).collect();
        assert_eq!(names, [BTREEMAP_VARIANT, "lookup-resident", "scan"]);
        assert!(p
            .iter()
            .all(|(_, r)| r.threads == [3] && r.latency_sample_every == 5));

        let e = plan(&["nope".into()], None, None, &base)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("variant") && e.contains("lookup-hot-root"),
            "{e}"
        );
    }

    #[test]
    fn insert_keys_are_distinct_and_partitioned() {
        let mut seen = HashSet::new();
        for t in [0usize, 1, 300] {
            for n in 0..20_000 {
                for v in [Variant::InsertSequential, Variant::InsertRandom] {
                    let k = insert_key(v, t, n);
                    assert_eq!(k >> THREAD_KEY_SHIFT, t as u64);
                    assert!(
                        seen.insert((v == Variant::InsertRandom, k)),
                        "{v:?} {t} {n}"
                    );
                }
            }
        }
        // Random keys are scattered: consecutive inserts land far apart.
        let gaps = (0..1000)
            .filter(|&n| permute48(n).abs_diff(permute48(n + 1)) > 1 << 30)
            .count();
        assert!(gaps > 900, "{gaps}");
        assert_eq!(insert_key(Variant::InsertSequential, 2, 7), 2 << 48 | 7);
    }

    #[test]
    fn values_depend_on_the_key() {
        let (mut a, mut b) = ([0u8; 96], [0u8; 96]);
        fill_value(&mut a, 5);
        fill_value(&mut b, 5);
        assert_eq!(a, b);
        fill_value(&mut b, 6);
        assert_ne!(a, b);
        let mut short = [0u8; 8];
        fill_value(&mut short, 5);
        assert_eq!(short, a[..8]);
    }

    #[test]
    fn derived_values_per_variant() {
        let stats = BTreeMap::from([
            ("root_latch_waits".to_string(), 3),
            ("log_bytes_appended".to_string(), 4000),
        ]);
        let d = derived_values("insert-random", &stats, 40);
        assert_eq!(d["log_bytes_per_op"], 100.0);
        assert_eq!(d["root_latch_waits"], 3);
        assert!(derived_values("insert-random", &stats, 0)["log_bytes_per_op"].is_null());
        let d = derived_values("lookup-hot-root", &stats, 40);
        assert_eq!(d["root_latch_waits"], 3);
        assert!(d.get("log_bytes_per_op").is_none());
        assert!(derived_values(BTREEMAP_VARIANT, &BTreeMap::new(), 40).is_empty());
        for key in crate::measurement::REQUIRED_JSON_FIELDS {
            assert!(d.get(key).is_none());
        }
    }

    #[test]
    fn settings_are_checked() {
        for (config, needle) in [
            (
                BtreeConfig {
                    pool_size_bytes: 8192 * 4,
                    ..BtreeConfig::default()
                },
                "--pool-size",
            ),
            (
                BtreeConfig {
                    page_size_bytes: 5000,
                    ..BtreeConfig::default()
                },
                "--page-size",
            ),
            (
                BtreeConfig {
                    keys: 999,
                    ..BtreeConfig::default()
                },
                "--keys",
            ),
            (
                BtreeConfig {
                    hot_keys: 0,
                    ..BtreeConfig::default()
                },
                "--hot-keys",
            ),
            (
                BtreeConfig {
                    inserts_per_txn: 0,
                    ..BtreeConfig::default()
                },
                "--inserts-per-txn",
            ),
        ] {
            let e = BtreeBench::new(config).unwrap_err().to_string();
            assert!(e.contains(needle), "{needle}: {e}");
        }
    }

    #[test]
    fn a_tree_too_small_for_the_pool_or_not_three_levels_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let two_levels = BtreeBench::new(BtreeConfig {
            hot_keys: 500,
            ..small(tmp.path())
        })
        .unwrap();
        let e = run_micro(
            &two_levels,
            &["lookup-hot-root".into()],
            &short_run(),
            &mut NoObserver,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("--hot-keys") && e.contains("2 levels"), "{e}");

        let small_pool = BtreeBench::new(BtreeConfig {
            pool_size_bytes: 64 * 4096,
            keys: 20_000,
            ..small(tmp.path())
        })
        .unwrap();
        let e = run_micro(
            &small_pool,
            &["lookup-resident".into()],
            &short_run(),
            &mut NoObserver,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("--pool-size"), "{e}");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }

    #[test]
    fn every_variant_runs_and_checks_its_results() {
        let tmp = tempfile::tempdir().unwrap();
        let bench = BtreeBench::new(small(tmp.path())).unwrap();
        let p = plan(&[], Some(&[1, 2]), None, &short_run()).unwrap();
        let ms = run(&bench, &p, &mut NoObserver).unwrap();
        assert_eq!(ms.len(), VARIANTS.len() * 2);
        for m in &ms {
            assert!(m.ops > 0, "{} {}", m.variant, m.threads);
            assert!(m.aborts.is_empty());
            let engine = if m.variant == BTREEMAP_VARIANT {
                BTREEMAP_ENGINE
            } else {
                "shoal"
            };
            assert_eq!(m.engine, engine);
            assert_eq!(
                m.derived.contains_key("root_latch_waits"),
                m.variant != BTREEMAP_VARIANT
            );
        }
        let find = |v: &str, threads: usize| {
            ms.iter()
                .find(|m| m.variant == v && m.threads == threads)
                .unwrap()
        };
        // The lookups are answered from the pool; the ratio to the BTreeMap is reported.
        for threads in [1, 2] {
            let m = find("lookup-resident", threads);
            assert_eq!(m.engine_stats["misses"], 0, "{:?}", m.engine_stats);
            let b = find(BTREEMAP_VARIANT, threads);
            let ratio = m.derived["vs_btreemap"].as_f64().unwrap();
            assert!((ratio - m.ops_per_s / b.ops_per_s).abs() < 1e-9);
        }
        let hot = find("lookup-hot-root", 1);
        assert_eq!(hot.config["loaded_height"], HOT_HEIGHT);
        assert_eq!(hot.config["keys_loaded"], 10_000);
        // Every insert is in the tree after each point; sequential loads fill the leaves.
        let seq1 = find("insert-sequential", 1);
        let seq2 = find("insert-sequential", 2);
        assert!(seq2.derived["tree_keys"].as_u64().unwrap() >= seq1.ops + seq2.ops);
        assert!(
            seq1.derived["leaf_fill"].as_f64().unwrap() > 0.5,
            "{seq1:?}"
        );
        assert!(seq2.derived["log_bytes_per_op"].as_f64().unwrap() > 16.0);
        let rnd = find("insert-random", 2);
        assert!(rnd.derived["tree_height"].as_u64().unwrap() >= 1);
        // An insert counted in the window may append after its closing snapshot: one per
        // thread at most.
        assert!(rnd.engine_stats["log_appends"] + 2 >= rnd.ops);
        // Each database directory is removed after its variant.
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }
}
