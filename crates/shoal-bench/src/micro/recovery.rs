//! # `recovery`: how fast restart replays a log after a crash
//!
//! Measures ARIES restart (DESIGN.md §3.6; `shoal::recovery`) on real files: the time
//! [`Engine::open`] takes to find the end of the log, analyse it, redo it and undo the losers,
//! for a log of a chosen size (default [`LOG_SIZE_DEFAULT_BYTES`], the issue's "recovery of a
//! 1 GiB log replays at ≥ 200 MiB/s"). It is a one-shot measurement, not a [`MicroBench`]:
//! there is one restart to time, not an operation to repeat, so [`RecoveryBench::run`] builds
//! its own [`Measurement`].
//!
//! ```text
//!  create db ─► load keys ─► flush pages + checkpoint ─► update txns (Lazy) until the log
//!  holds log_size bytes ─► loser txn (not committed) ─► log durable ─► drop engine (crash)
//!  ─► [drop OS caches] ─► time Engine::open ─► check every key ─► close ─► remove files
//! ```
//!
//! ## The log replayed
//!
//! `keys` keys with `value_bytes`-byte values live in [`KvStore`]s of
//! [`kvstore::MAX_BUCKETS`] bucket pages each, filled to about half a page per bucket. After
//! loading them, every page is written and a checkpoint moves the log's start past the load,
//! so the log that restart reads is the update phase alone: transactions of
//! `updates_per_txn` updates of uniformly drawn keys, committed with `Lazy` durability (the
//! log is made durable before the crash), each update an `Update` record of about 280 bytes
//! with 100-byte values. Since the pages were clean at the checkpoint, the first update of
//! each page after it logs a full-page image (torn-page rule), which redo installs instead
//! of reading the page. The page cleaner is off by default: no page is written again, so
//! redo must apply every update record (the most work per byte of log); `--cleaner` turns it
//! on, which adds images after each cleaning and lets redo skip the records they cover.
//!
//! Just before the crash, one more transaction (the *loser*) updates [`LOSER_UPDATES`] keys
//! and its records are made durable but it never commits, so undo has work too.
//!
//! ## Checks
//!
//! The run fails with [`BenchError::Check`] (reporting no rate) unless: restart read at least
//! `log_size` bytes of log (`RestartReport::log_bytes`); it found exactly one loser and undid
//! its updates; every store passes [`KvStore::verify`]; and every key holds the value of its
//! last committed update (values are a function of key and version, so a stale, lost or
//! undone-too-far value is caught), for every key, not a sample.
//!
//! ## Reported
//!
//! One JSON line: `threads` 1 (restart is single-threaded), `duration_s` the wall time of
//! `Engine::open`, `ops` the log records analysed, `ops_per_s` records per second, no
//! latency percentiles (`null`), `cpu_s_per_op` CPU time of the open per record.
//! `engine_stats` hold the restart report (`log_bytes`, `records`, `redone`,
//! `images_installed`, `losers`, `undone`, `analysis_us`, `redo_us`, `undo_us`) and
//! `redo_bytes` (from the redo LSN to the end). Derived fields: `log_mib`, `replay_mib_per_s`
//! (log bytes ÷ the whole open: the issue's rate), `restart_mib_per_s` (log bytes ÷ the time
//! of analysis, redo and undo, without finding the end of the log and the final checkpoint),
//! `analysis_mib_per_s` and `redo_mib_per_s` (each pass's bytes ÷ its time). The `config`
//! holds the settings and what the generation did (`generate_s`, `txns`, `updates`).
//!
//! With `--drop-caches` the files are synced and evicted from the OS page cache
//! (`posix_fadvise(DONTNEED)`) before the reopen, so the log is read from the device;
//! without it the log is read from the page cache (it was just written).
//!
//! [`MicroBench`]: crate::runner::MicroBench

use crate::error::{BenchError, Result};
use crate::measurement::Measurement;
use crate::micro::buffer::prepare_db_dir;
use crate::runner::{Observer, PointInfo};
use crate::sys;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value};
use shoal::io::{FileStorage, Storage};
use shoal::kvstore::{self, KvStore};
use shoal::log::{Durability, LogOptions};
use shoal::options::PAGE_SIZE_DEFAULT_BYTES;
use shoal::page::slotted::{SLOT_SIZE, SPECIAL_OFFSET};
use shoal::{Engine, Lsn, Options, PageId};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// The benchmark's name after `shoal bench`.
pub const NAME: &str = "recovery";
/// Its one variant: restart after a crash in a workload of key-value updates.
pub const VARIANT: &str = "kv-update";
/// Default size of the log to replay in bytes (1 GiB).
pub const LOG_SIZE_DEFAULT_BYTES: u64 = 1 << 30;
/// Smallest log size accepted in bytes (64 KiB).
pub const LOG_SIZE_MIN_BYTES: u64 = 64 << 10;
/// Default number of keys.
pub const KEYS_DEFAULT: u64 = 100_000;
/// Default value length in bytes.
pub const VALUE_BYTES_DEFAULT: usize = 100;
/// Default updates per transaction.
pub const UPDATES_PER_TXN_DEFAULT: u32 = 10;
/// Default buffer pool size in bytes (256 MiB; it must hold every page the log touches).
pub const POOL_SIZE_DEFAULT_BYTES: u64 = 256 << 20;
/// Updates of the transaction left uncommitted at the crash.
pub const LOSER_UPDATES: u32 = 16;
/// Inserts per transaction while loading the keys.
const LOAD_BATCH: u64 = 1000;
/// Mixed into the seed for the value bytes.
const VALUE_SALT: u64 = 0x7265_636f_7665_7279;
/// Version of a key written by the loser (never committed, so never expected).
const LOSER_VERSION_BASE: u32 = 1 << 31;

/// Settings of the recovery benchmark.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoveryConfig {
    /// Bytes of log to generate and replay. Default [`LOG_SIZE_DEFAULT_BYTES`].
    pub log_size_bytes: u64,
    /// Keys in the stores. Default [`KEYS_DEFAULT`].
    pub keys: u64,
    /// Value length in bytes (8 to [`kvstore::MAX_VALUE_BYTES`]). Default
    /// [`VALUE_BYTES_DEFAULT`].
    pub value_bytes: usize,
    /// Updates per transaction. Default [`UPDATES_PER_TXN_DEFAULT`].
    pub updates_per_txn: u32,
    /// Buffer pool size in bytes. Default [`POOL_SIZE_DEFAULT_BYTES`].
    pub pool_size_bytes: u64,
    /// Log segment size in bytes. Default 64 MiB.
    pub segment_size_bytes: u64,
    /// Log buffer size in bytes. Default 16 MiB.
    pub log_buffer_size_bytes: u64,
    /// Run the page cleaner while generating the log. Default off (see the module doc).
    pub cleaner: bool,
    /// Evict the files from the OS page cache before the reopen. Default off.
    pub drop_caches: bool,
    /// Directory in which the temporary database directory is created; the system
    /// temporary directory if `None`.
    pub db_dir: Option<PathBuf>,
    /// Seed of the key and value choices.
    pub seed: u64,
}

impl Default for RecoveryConfig {
    fn default() -> Self {
        let log = LogOptions::default();
        RecoveryConfig {
            log_size_bytes: LOG_SIZE_DEFAULT_BYTES,
            keys: KEYS_DEFAULT,
            value_bytes: VALUE_BYTES_DEFAULT,
            updates_per_txn: UPDATES_PER_TXN_DEFAULT,
            pool_size_bytes: POOL_SIZE_DEFAULT_BYTES,
            segment_size_bytes: log.segment_size_bytes,
            log_buffer_size_bytes: log.buffer_size_bytes as u64,
            cleaner: false,
            drop_caches: false,
            db_dir: None,
            seed: 42,
        }
    }
}

/// The recovery benchmark, its settings checked.
#[derive(Debug)]
pub struct RecoveryBench {
    config: RecoveryConfig,
    options: Options,
    log_options: LogOptions,
    keys_per_store: u64,
    stores: u64,
}

impl RecoveryBench {
    /// Checks `config` (and the engine options it makes) and creates `db_dir` if it is
    /// missing but its parent exists.
    ///
    /// # Errors
    /// [`BenchError::InvalidArgument`] naming `--log-size`, `--keys`, `--value-bytes`,
    /// `--updates-per-txn`, `--pool-size`, `--segment-size`, `--log-buffer-size` or
    /// `--db-dir`.
    pub fn new(config: RecoveryConfig) -> Result<RecoveryBench> {
        if config.log_size_bytes < LOG_SIZE_MIN_BYTES {
            return Err(BenchError::invalid(
                "--log-size",
                format!("must be at least {LOG_SIZE_MIN_BYTES} bytes"),
            ));
        }
        if config.keys == 0 {
            return Err(BenchError::invalid("--keys", "must be at least 1"));
        }
        if !(8..=kvstore::MAX_VALUE_BYTES).contains(&config.value_bytes) {
            return Err(BenchError::invalid(
                "--value-bytes",
                format!("must be from 8 to {}", kvstore::MAX_VALUE_BYTES),
            ));
        }
        if config.updates_per_txn == 0 {
            return Err(BenchError::invalid(
                "--updates-per-txn",
                "must be at least 1",
            ));
        }
        let page_size = PAGE_SIZE_DEFAULT_BYTES;
        // Half of what a bucket page holds, so that no bucket overflows by chance.
        let record = 9 + config.value_bytes + SLOT_SIZE;
        let keys_per_bucket = ((page_size - SPECIAL_OFFSET - 64) / record / 2).max(1) as u64;
        let keys_per_store = keys_per_bucket * kvstore::MAX_BUCKETS as u64;
        let stores = config.keys.div_ceil(keys_per_store);
        let pages = stores * (kvstore::MAX_BUCKETS as u64 + 1);
        let options = Options {
            pool_size_bytes: usize::try_from(config.pool_size_bytes).map_err(|_| {
                BenchError::invalid("--pool-size", "larger than this machine's address space")
            })?,
            page_size_bytes: page_size,
            cleaner_enabled: config.cleaner,
            ..Options::default()
        };
        // Every page the log touches stays in the pool (twice over, for the space manager's
        // pages and slack), so neither generation nor redo evicts.
        if (options.frame_count() as u64) < 2 * pages + 64 {
            return Err(BenchError::invalid(
                "--pool-size",
                format!(
                    "{} keys take {pages} pages of {page_size} bytes; the pool must hold at \
                     least {} pages",
                    config.keys,
                    2 * pages + 64
                ),
            ));
        }
        options
            .validate()
            .map_err(|e| BenchError::invalid("--pool-size", e.to_string()))?;
        let log_options = LogOptions {
            segment_size_bytes: config.segment_size_bytes,
            buffer_size_bytes: usize::try_from(config.log_buffer_size_bytes).map_err(|_| {
                BenchError::invalid(
                    "--log-buffer-size",
                    "larger than this machine's address space",
                )
            })?,
            durability: Durability::Lazy,
            ..LogOptions::default()
        };
        log_options.validate().map_err(|e| match e {
            shoal::Error::InvalidArgument { name, .. } if name.contains("segment") => {
                BenchError::invalid("--segment-size", e.to_string())
            }
            e => BenchError::invalid("--log-buffer-size", e.to_string()),
        })?;
        if let Some(dir) = &config.db_dir {
            prepare_db_dir(dir)?;
        }
        Ok(RecoveryBench {
            config,
            options,
            log_options,
            keys_per_store,
            stores,
        })
    }

    /// The settings as `config` fields of the measurement.
    fn config_json(&self) -> Map<String, Value> {
        let c = &self.config;
        let mut m = Map::new();
        m.insert("log_size_bytes_requested".into(), c.log_size_bytes.into());
        m.insert("keys".into(), c.keys.into());
        m.insert("value_bytes".into(), c.value_bytes.into());
        m.insert("updates_per_txn".into(), c.updates_per_txn.into());
        m.insert("pool_size_bytes".into(), c.pool_size_bytes.into());
        m.insert(
            "page_size_bytes".into(),
            self.options.page_size_bytes.into(),
        );
        m.insert("segment_size_bytes".into(), c.segment_size_bytes.into());
        m.insert(
            "log_buffer_size_bytes".into(),
            c.log_buffer_size_bytes.into(),
        );
        m.insert("cleaner".into(), c.cleaner.into());
        m.insert("drop_caches".into(), c.drop_caches.into());
        m.insert("stores".into(), self.stores.into());
        m.insert("keys_per_store".into(), self.keys_per_store.into());
        m.insert("loser_updates".into(), LOSER_UPDATES.into());
        m.insert("seed".into(), c.seed.into());
        m.insert("host_cpus".into(), sys::available_cpus().into());
        m.insert(
            "memory_latency_ns".into(),
            crate::probe::memory_latency().to_json(),
        );
        m
    }

    /// Generates the log, crashes, times the restart, checks the result, and reports it to
    /// `observer` as one measurement (also returned). The database directory is removed
    /// afterwards, whatever the outcome.
    ///
    /// # Errors
    /// Engine and file errors; [`BenchError::Check`] if the restart was wrong or replayed
    /// less log than asked for.
    pub fn run(&self, observer: &mut dyn Observer) -> Result<Measurement> {
        let dir = crate::micro::buffer::temp_db_dir(self.config.db_dir.as_deref(), "recovery")?;

        let rss_reset = sys::reset_peak_rss();
        observer.setup_started(NAME, VARIANT);
        let t = Instant::now();
        let generated = self.generate(dir.path())?;
        if self.config.drop_caches {
            drop_caches(dir.path())?;
        }
        let setup_s = t.elapsed().as_secs_f64();
        observer.setup_finished(NAME, VARIANT, setup_s);

        let storage: Arc<dyn Storage> = Arc::new(FileStorage::open_dir(dir.path(), false)?);
        let cpu0 = sys::process_cpu_time();
        let t = Instant::now();
        let engine = Engine::open(storage, &self.options, &self.log_options)?;
        let open_s = t.elapsed().as_secs_f64();
        let cpu_s = sys::process_cpu_time()
            .zip(cpu0)
            .map(|(b, a)| b.saturating_sub(a).as_secs_f64());
        let max_rss_bytes = sys::max_rss_bytes();
        let report = engine.restart_report().clone();

        self.check(&engine, &report, &generated)?;
        engine.close()?;

        let mut config = self.config_json();
        config.insert(
            "max_rss_scope".into(),
            Value::from(if rss_reset { "variant" } else { "process" }),
        );
        config.insert("setup_s".into(), setup_s.into());
        config.insert("generate_s".into(), generated.generate_s.into());
        config.insert("txns".into(), generated.txns.into());
        config.insert("updates".into(), generated.updates.into());
        config.insert(
            "db_dir".into(),
            Value::from(dir.path().display().to_string()),
        );
        let m = measurement(&report, open_s, cpu_s, max_rss_bytes, config);
        let info = PointInfo {
            bench: NAME,
            variant: VARIANT,
            engine: "shoal",
            threads: 1,
            index: 0,
            total: 1,
            warmup_s: 0.0,
            duration_s: open_s,
        };
        observer.point_finished(&info, &m)?;
        Ok(m)
    }

    /// Creates the database in `dir`, loads the keys, checkpoints, writes the update log and
    /// the loser, makes the log durable and drops the engine without closing it.
    fn generate(&self, dir: &Path) -> Result<Generated> {
        let t = Instant::now();
        let storage: Arc<dyn Storage> = Arc::new(FileStorage::open_dir(dir, true)?);
        let engine = Engine::open(storage, &self.options, &self.log_options)?;
        let c = &self.config;
        let mut stores = Vec::with_capacity(self.stores as usize);
        for _ in 0..self.stores {
            stores.push(KvStore::create(
                engine.txns(),
                engine.space(),
                kvstore::MAX_BUCKETS,
                c.value_bytes,
            )?);
        }
        let mut versions = vec![0u32; c.keys as usize];
        let mut value = vec![0u8; c.value_bytes];
        let store_of = |key: u64| &stores[(key / self.keys_per_store) as usize];
        for batch in (0..c.keys).step_by(LOAD_BATCH as usize) {
            let mut txn = engine.begin();
            for key in batch..(batch + LOAD_BATCH).min(c.keys) {
                fill_value(&mut value, c.seed, key, 0);
                store_of(key).insert(&mut txn, key, &value)?;
            }
            txn.commit()?;
        }
        // Move the log's start past the load: every page clean, then a checkpoint.
        engine.pool().flush_all()?;
        let start = engine.checkpoint()?.start_lsn;
        let target = Lsn(start.0.saturating_add(c.log_size_bytes));

        let log = engine.log();
        let mut rng = SmallRng::seed_from_u64(c.seed);
        let (mut txns, mut updates) = (0u64, 0u64);
        while log.end_lsn() < target {
            let mut txn = engine.begin();
            for _ in 0..c.updates_per_txn {
                let key = rng.random_range(0..c.keys);
                let v = &mut versions[key as usize];
                *v += 1;
                fill_value(&mut value, c.seed, key, *v);
                if !store_of(key).update(&mut txn, key, &value)? {
                    return Err(BenchError::Check(format!("key {key} vanished")));
                }
            }
            txn.commit()?;
            txns += 1;
            updates += u64::from(c.updates_per_txn);
        }

        // The loser: durable records, no commit, no rollback (the process "dies").
        let mut loser = engine.begin();
        for i in 0..LOSER_UPDATES {
            let key = rng.random_range(0..c.keys);
            fill_value(&mut value, c.seed, key, LOSER_VERSION_BASE + i);
            store_of(key).update(&mut loser, key, &value)?;
        }
        let end = log.end_lsn();
        log.wait_durable(Lsn(end.0 - 1))?;
        std::mem::forget(loser);
        let roots = stores.iter().map(KvStore::root).collect();
        drop(engine); // the crash: no page written, no checkpoint
        Ok(Generated {
            roots,
            versions,
            txns,
            updates,
            generate_s: t.elapsed().as_secs_f64(),
        })
    }

    /// The checks of the module doc.
    fn check(
        &self,
        engine: &Engine,
        report: &shoal::recovery::RestartReport,
        generated: &Generated,
    ) -> Result<()> {
        let c = &self.config;
        if report.log_bytes < c.log_size_bytes {
            return Err(BenchError::Check(format!(
                "restart read {} bytes of log, less than the {} asked for",
                report.log_bytes, c.log_size_bytes
            )));
        }
        if report.losers != 1 || report.undone != u64::from(LOSER_UPDATES) {
            return Err(BenchError::Check(format!(
                "restart found {} losers and undid {} records; expected 1 and {LOSER_UPDATES}",
                report.losers, report.undone
            )));
        }
        let mut expected = vec![0u8; c.value_bytes];
        for (s, &root) in generated.roots.iter().enumerate() {
            let kv = KvStore::open(engine.pool().clone(), root)?;
            let first = s as u64 * self.keys_per_store;
            let last = (first + self.keys_per_store).min(c.keys);
            let live = kv.verify()?;
            if live as u64 != last - first {
                return Err(BenchError::Check(format!(
                    "store {s} holds {live} keys after restart, expected {}",
                    last - first
                )));
            }
            let all = kv.scan()?;
            for (key, value) in all {
                let version = generated
                    .versions
                    .get(key as usize)
                    .filter(|_| (first..last).contains(&key))
                    .ok_or_else(|| {
                        BenchError::Check(format!("store {s} holds unexpected key {key}"))
                    })?;
                fill_value(&mut expected, c.seed, key, *version);
                if value != expected {
                    return Err(BenchError::Check(format!(
                        "key {key} does not hold its last committed value (version \
                         {version}) after restart"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// What generation left behind for the checks.
struct Generated {
    roots: Vec<PageId>,
    /// Last committed version of each key.
    versions: Vec<u32>,
    txns: u64,
    updates: u64,
    generate_s: f64,
}

/// The value of `key` at `version`: bytes of a SplitMix64 stream seeded by both.
fn fill_value(out: &mut [u8], seed: u64, key: u64, version: u32) {
    let mut x = (seed ^ VALUE_SALT)
        .wrapping_add(key.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(u64::from(version).wrapping_mul(0xD1B5_4A32_D192_ED03));
    for chunk in out.chunks_mut(8) {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
    }
}

/// Syncs every file in `dir` and asks the OS to drop it from its page cache.
fn drop_caches(dir: &Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    let entries =
        std::fs::read_dir(dir).map_err(|e| BenchError::io("listing the database", dir, e))?;
    for entry in entries {
        let path = entry
            .map_err(|e| BenchError::io("listing the database", dir, e))?
            .path();
        if !path.is_file() {
            continue;
        }
        let f = std::fs::File::open(&path)
            .map_err(|e| BenchError::io("opening to drop its cache", &path, e))?;
        f.sync_all()
            .map_err(|e| BenchError::io("syncing to drop its cache", &path, e))?;
        // SAFETY: `f` is an open file descriptor for the duration of the call; the advice
        // changes only what the kernel caches.
        let rc = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            return Err(BenchError::io(
                "dropping from the page cache",
                &path,
                std::io::Error::from_raw_os_error(rc),
            ));
        }
    }
    Ok(())
}

/// The measurement of one restart (see "Reported" in the module doc).
fn measurement(
    r: &shoal::recovery::RestartReport,
    open_s: f64,
    cpu_s: Option<f64>,
    max_rss_bytes: Option<u64>,
    config: Map<String, Value>,
) -> Measurement {
    const MIB: f64 = (1u64 << 20) as f64;
    let redo_bytes = r.end_lsn.0.saturating_sub(r.redo_lsn.0);
    let rate = |bytes: u64, s: f64| -> Value {
        if s > 0.0 {
            Value::from(bytes as f64 / MIB / s)
        } else {
            Value::Null
        }
    };
    let phases_s = (r.analysis_us + r.redo_us + r.undo_us) as f64 / 1e6;
    let mut derived = Map::new();
    derived.insert("log_mib".into(), Value::from(r.log_bytes as f64 / MIB));
    derived.insert("replay_mib_per_s".into(), rate(r.log_bytes, open_s));
    derived.insert("restart_mib_per_s".into(), rate(r.log_bytes, phases_s));
    derived.insert(
        "analysis_mib_per_s".into(),
        rate(r.log_bytes, r.analysis_us as f64 / 1e6),
    );
    derived.insert(
        "redo_mib_per_s".into(),
        rate(redo_bytes, r.redo_us as f64 / 1e6),
    );
    let ops = r.records;
    let ops_per_s = if open_s > 0.0 {
        ops as f64 / open_s
    } else {
        0.0
    };
    Measurement {
        bench: NAME.into(),
        engine: "shoal".into(),
        variant: VARIANT.into(),
        threads: 1,
        duration_s: open_s,
        ops,
        ops_per_s,
        ops_per_s_per_thread: ops_per_s,
        ops_by_thread: vec![ops],
        p50_us: None,
        p95_us: None,
        p99_us: None,
        max_us: None,
        latency_samples: 0,
        aborts: BTreeMap::new(),
        cpu_s_per_op: cpu_s.filter(|_| ops > 0).map(|c| c / ops as f64),
        max_rss_bytes,
        engine_stats: BTreeMap::from([
            ("log_bytes".to_string(), r.log_bytes),
            ("records".to_string(), r.records),
            ("redo_bytes".to_string(), redo_bytes),
            ("redone".to_string(), r.redone),
            ("images_installed".to_string(), r.images_installed),
            ("losers".to_string(), r.losers),
            ("undone".to_string(), r.undone),
            ("analysis_us".to_string(), r.analysis_us),
            ("redo_us".to_string(), r.redo_us),
            ("undo_us".to_string(), r.undo_us),
        ]),
        derived,
        config,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::NoObserver;

    fn small(tmp: &Path) -> RecoveryConfig {
        RecoveryConfig {
            log_size_bytes: 2 << 20,
            keys: 5000,
            pool_size_bytes: 64 << 20,
            segment_size_bytes: 1 << 20,
            log_buffer_size_bytes: 256 << 10,
            db_dir: Some(tmp.to_path_buf()),
            ..RecoveryConfig::default()
        }
    }

    #[test]
    fn a_small_log_is_replayed_and_checked() {
        let tmp = tempfile::tempdir().unwrap();
        let bench = RecoveryBench::new(small(tmp.path())).unwrap();
        let m = bench.run(&mut NoObserver).unwrap();
        let s = &m.engine_stats;
        // The log replayed is the update phase: at least what was asked, not much more.
        assert!(s["log_bytes"] >= 2 << 20, "{s:?}");
        assert!(s["log_bytes"] < (2 << 20) + (64 << 10), "{s:?}");
        assert_eq!(s["redo_bytes"], s["log_bytes"], "{s:?}");
        assert_eq!(s["losers"], 1);
        assert_eq!(s["undone"], u64::from(LOSER_UPDATES));
        // With the cleaner off, every update is redone; each page is based on one image.
        let updates = m.config["updates"].as_u64().unwrap();
        assert_eq!(s["redone"], updates + u64::from(LOSER_UPDATES), "{s:?}");
        assert!(
            s["images_installed"] > 0 && s["images_installed"] <= 2 * 257,
            "{s:?}"
        );
        assert_eq!(m.ops, s["records"]);
        assert!(m.derived["replay_mib_per_s"].as_f64().unwrap() > 0.0);
        assert!(m.derived["log_mib"].as_f64().unwrap() >= 2.0);
        let v: Value = serde_json::from_str(&m.to_json_line()).unwrap();
        for key in crate::measurement::REQUIRED_JSON_FIELDS {
            assert!(v.get(key).is_some(), "{key}");
        }
        // The database directory is removed.
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }

    #[test]
    fn with_the_cleaner_and_dropped_caches() {
        let tmp = tempfile::tempdir().unwrap();
        let bench = RecoveryBench::new(RecoveryConfig {
            cleaner: true,
            drop_caches: true,
            ..small(tmp.path())
        })
        .unwrap();
        let m = bench.run(&mut NoObserver).unwrap();
        assert!(m.engine_stats["log_bytes"] >= 2 << 20);
    }

    #[test]
    fn settings_are_checked() {
        for (config, needle) in [
            (
                RecoveryConfig {
                    log_size_bytes: 1,
                    ..RecoveryConfig::default()
                },
                "--log-size",
            ),
            (
                RecoveryConfig {
                    keys: 0,
                    ..RecoveryConfig::default()
                },
                "--keys",
            ),
            (
                RecoveryConfig {
                    value_bytes: 4,
                    ..RecoveryConfig::default()
                },
                "--value-bytes",
            ),
            (
                RecoveryConfig {
                    updates_per_txn: 0,
                    ..RecoveryConfig::default()
                },
                "--updates-per-txn",
            ),
            (
                RecoveryConfig {
                    pool_size_bytes: 1 << 20,
                    ..RecoveryConfig::default()
                },
                "--pool-size",
            ),
            (
                RecoveryConfig {
                    segment_size_bytes: 1000,
                    ..RecoveryConfig::default()
                },
                "--segment-size",
            ),
            (
                RecoveryConfig {
                    log_buffer_size_bytes: 1000,
                    ..RecoveryConfig::default()
                },
                "--log-buffer-size",
            ),
        ] {
            let e = RecoveryBench::new(config).unwrap_err().to_string();
            assert!(e.contains(needle), "{needle}: {e}");
        }
    }

    #[test]
    fn values_depend_on_key_and_version() {
        let (mut a, mut b) = ([0u8; 100], [0u8; 100]);
        fill_value(&mut a, 1, 5, 0);
        fill_value(&mut b, 1, 5, 0);
        assert_eq!(a, b);
        fill_value(&mut b, 1, 5, 1);
        assert_ne!(a, b);
        fill_value(&mut b, 1, 6, 0);
        assert_ne!(a, b);
    }
}
