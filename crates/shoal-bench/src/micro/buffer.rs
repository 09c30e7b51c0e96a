//! # `buffer`: the buffer-pool micro-benchmark
//!
//! Measures the buffer pool alone (DESIGN.md §3.3), with no log, locks or access methods
//! above it. Variants:
//!
//! | variant | one operation | what it shows |
//! |---|---|---|
//! | `hot-page-optimistic` | binary search for a random key among [`HOT_KEYS`] sorted keys of one page, read with `read_optimistic` | a read-mostly hot spot (the B-tree root, DESIGN.md principle 3) read without shared-memory writes: should scale with threads |
//! | `hot-page-shared` | the same search under `fix_shared` | the same hot spot under a shared latch: every fix writes the latch word and the pin count, so it is expected to scale worse |
//! | `resident-random` | `fix_shared` of a uniformly random page of a set that fits in the pool, read one `u64`, unfix | fix + unfix per second on hits (the page-table lookup and pin) |
//! | `miss-random` | a uniformly random page of a set `miss_data_factor` (default [`MISS_DATA_FACTOR`]) times the pool: `fix_shared` and read, or with probability `miss_write_percent`% `fix_exclusive`, increment a counter, mark dirty | misses, CLOCK eviction and write-back of dirty victims |
//!
//! Data: page 1 onward of one data file (`data.shoal`) in a fresh temporary directory (under
//! `db_dir` if given), written with `fix_new` and flushed during setup. Every page stores
//! its own page number as a `u64` at [`OFF_PAGE_NO`] and a counter at [`OFF_COUNTER`]; the
//! hot page also stores the keys `1, 3, 5, …` (odd numbers) from [`OFF_KEYS`]. Searches ask
//! for a uniform random key in `0 .. 2 * HOT_KEYS`, so half of them find their key.
//!
//! Checks: every operation verifies what it read — the page number on the page equals the
//! page fixed, and a search finds its key exactly when the key is odd. A mismatch stops the
//! run with [`BenchError::Check`]: a benchmark of a pool that returns wrong pages measures
//! nothing. `Error::PoolExhausted` (all frames pinned) is counted as an abort with cause
//! `pool_exhausted`; any other engine error stops the run.
//!
//! Engine counters (`engine_stats` in the measurement) are the pool's statistics accumulated
//! during the measured time.

use crate::error::{BenchError, Result};
use crate::runner::{MicroBench, RunConfig, ThreadCtx};
use rand::Rng;
use serde_json::{Map, Value};
use shoal::buffer::{BufferPool, NoWal};
use shoal::io::{FileStorage, OpenOptions, Storage};
use shoal::page::{PageRead, PageType, PageWrite, HEADER_SIZE};
use shoal::{Options, PageId};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The variants, in the order they run by default.
pub const VARIANTS: &[&str] = &[
    "hot-page-optimistic",
    "hot-page-shared",
    "resident-random",
    "miss-random",
];

/// Default pool size of this benchmark in bytes (64 MiB).
pub const POOL_SIZE_DEFAULT_BYTES: u64 = 64 << 20;
/// Default percentage of `miss-random` operations that modify the page (and so make write-back
/// happen).
pub const MISS_WRITE_PERCENT_DEFAULT: u32 = 10;
/// Size of the `miss-random` data set as a multiple of the pool's frame count.
pub const MISS_DATA_FACTOR: u64 = 4;
/// Largest accepted `miss_data_factor`.
pub const MISS_DATA_FACTOR_MAX: u64 = 1000;
/// The `resident-random` data set fills this fraction (numerator / denominator) of the pool's
/// frames, leaving room so that no fix misses after warm-up.
pub const RESIDENT_FRACTION: (u64, u64) = (3, 4);
/// Time one operation in this many by default: operations here take tens to hundreds of
/// nanoseconds, and timing one costs about 54 ns (see the runner's "Latency sampling").
pub const LATENCY_SAMPLE_EVERY: u32 = 64;
/// Number of sorted keys on the hot page.
pub const HOT_KEYS: usize = 100;

/// Byte offset of the page's own number (a little-endian `u64`), right after the header.
pub const OFF_PAGE_NO: usize = HEADER_SIZE;
/// Byte offset of the counter that `miss-random` writers increment.
pub const OFF_COUNTER: usize = HEADER_SIZE + 8;
/// Byte offset of the hot page's first key; key `i` is `2 * i + 1`.
pub const OFF_KEYS: usize = HEADER_SIZE + 16;
/// Page number of the first data page (page 0 is reserved for the file header).
const FIRST_PAGE: u64 = 1;
/// Name of the data file in the database directory.
const DATA_FILE: &str = "data.shoal";

/// Settings of the buffer benchmark.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferConfig {
    /// Buffer pool size in bytes. Default [`POOL_SIZE_DEFAULT_BYTES`].
    pub pool_size_bytes: u64,
    /// Page size in bytes (a power of two from 4096 to 65536). Default 8192.
    pub page_size_bytes: usize,
    /// Open the data file with `O_DIRECT` (refused by tmpfs). Default `false`: misses are
    /// then served from the OS page cache, which measures the pool rather than the disk.
    pub direct_io: bool,
    /// Directory in which each variant creates its temporary database directory; the system
    /// temporary directory if `None`.
    pub db_dir: Option<PathBuf>,
    /// Percentage (0 to 100) of `miss-random` operations that modify their page.
    pub miss_write_percent: u32,
    /// Size of the `miss-random` data set as a multiple of the pool (1 to 1000); 10 checks the
    /// resident-memory bound "pool size + 64 MiB with a data set ten times the pool".
    pub miss_data_factor: u64,
}

impl Default for BufferConfig {
    fn default() -> Self {
        BufferConfig {
            pool_size_bytes: POOL_SIZE_DEFAULT_BYTES,
            page_size_bytes: shoal::options::PAGE_SIZE_DEFAULT_BYTES,
            direct_io: false,
            db_dir: None,
            miss_write_percent: MISS_WRITE_PERCENT_DEFAULT,
            miss_data_factor: MISS_DATA_FACTOR,
        }
    }
}

/// The buffer benchmark, its settings checked.
#[derive(Debug)]
pub struct BufferBench {
    config: BufferConfig,
    options: Options,
}

impl BufferBench {
    /// Checks `config` (pool and page size through [`Options::validate`]; `db_dir`) and
    /// creates `db_dir` if it is missing but its parent exists.
    ///
    /// # Errors
    /// [`BenchError::InvalidArgument`] naming `--pool-size`, `--page-size`,
    /// `--miss-write-percent` or `--db-dir`.
    pub fn new(config: BufferConfig) -> Result<BufferBench> {
        let pool_size_bytes = usize::try_from(config.pool_size_bytes).map_err(|_| {
            BenchError::invalid("--pool-size", "larger than this machine's address space")
        })?;
        let options = Options {
            pool_size_bytes,
            page_size_bytes: config.page_size_bytes,
            direct_io: config.direct_io,
            ..Options::default()
        };
        options.validate().map_err(|e| match e {
            // Name the settings as the user typed them.
            shoal::Error::InvalidArgument {
                name: "pool_size_bytes",
                reason,
            } => BenchError::invalid("--pool-size", reason),
            shoal::Error::InvalidArgument {
                name: "page_size_bytes",
                reason,
            } => BenchError::invalid("--page-size", reason),
            e => e.into(),
        })?;
        if config.miss_write_percent > 100 {
            return Err(BenchError::invalid(
                "--miss-write-percent",
                format!(
                    "{} is not a percentage (0 to 100)",
                    config.miss_write_percent
                ),
            ));
        }
        if !(1..=MISS_DATA_FACTOR_MAX).contains(&config.miss_data_factor) {
            return Err(BenchError::invalid(
                "--miss-data-factor",
                format!(
                    "{} is not a multiple of the pool from 1 to {MISS_DATA_FACTOR_MAX}",
                    config.miss_data_factor
                ),
            ));
        }
        if let Some(dir) = &config.db_dir {
            prepare_db_dir(dir)?;
        }
        Ok(BufferBench { config, options })
    }

    fn frames(&self) -> u64 {
        self.options.frame_count() as u64
    }
}

/// A new temporary directory named `shoal-bench-<name>-…` under `db_dir` (the `--db-dir`
/// flag, already checked by [`prepare_db_dir`]) or the system temporary directory; removed
/// when the returned handle drops.
///
/// # Errors
/// [`BenchError::Io`] if the directory cannot be created.
pub fn temp_db_dir(db_dir: Option<&Path>, name: &str) -> Result<tempfile::TempDir> {
    let parent = db_dir.map_or_else(std::env::temp_dir, Path::to_path_buf);
    tempfile::Builder::new()
        .prefix(&format!("shoal-bench-{name}-"))
        .tempdir_in(&parent)
        .map_err(|e| BenchError::io("creating a database directory in", &parent, e))
}

/// Makes sure `dir` is a directory, creating it (not its parents) if it is missing.
///
/// # Errors
/// [`BenchError::InvalidArgument`] naming `--db-dir` when the parent does not exist or the
/// path is not a directory; [`BenchError::Io`] when creating it fails otherwise.
pub fn prepare_db_dir(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if dir.exists() {
        return Err(BenchError::invalid(
            "--db-dir",
            format!("{} exists and is not a directory", dir.display()),
        ));
    }
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(BenchError::invalid(
            "--db-dir",
            format!(
                "cannot create {}: its parent directory does not exist",
                dir.display()
            ),
        )),
        Err(e) => Err(BenchError::io("creating the database directory", dir, e)),
    }
}

/// Which variant a state runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    HotOptimistic,
    HotShared,
    ResidentRandom,
    MissRandom,
}

impl Variant {
    fn from_name(name: &str) -> Result<Variant> {
        Ok(match name {
            "hot-page-optimistic" => Variant::HotOptimistic,
            "hot-page-shared" => Variant::HotShared,
            "resident-random" => Variant::ResidentRandom,
            "miss-random" => Variant::MissRandom,
            other => {
                return Err(BenchError::invalid(
                    "variant",
                    format!(
                        "`{other}` is not a buffer variant; choose from {}",
                        VARIANTS.join(", ")
                    ),
                ))
            }
        })
    }
}

/// The data and pool of one variant.
pub struct BufferState {
    // Field order is drop order: the pool goes before the directory holding its file.
    pool: Arc<BufferPool>,
    variant: Variant,
    page_count: u64,
    /// `miss-random`: an operation writes when a uniform draw from `0..100` is below this.
    write_percent: u32,
    db_path: PathBuf,
    _dir: tempfile::TempDir,
}

impl MicroBench for BufferBench {
    type State = BufferState;

    fn name(&self) -> &'static str {
        "buffer"
    }

    fn variants(&self) -> &'static [&'static str] {
        VARIANTS
    }

    fn latency_sample_every_default(&self) -> u32 {
        LATENCY_SAMPLE_EVERY
    }

    fn config(&self) -> Map<String, Value> {
        let o = &self.options;
        let mut m = Map::new();
        m.insert("pool_size_bytes".into(), Value::from(o.pool_size_bytes));
        m.insert("page_size_bytes".into(), Value::from(o.page_size_bytes));
        m.insert("pool_frames".into(), Value::from(self.frames()));
        m.insert("direct_io".into(), Value::from(o.direct_io));
        m.insert("cleaner_enabled".into(), Value::from(o.cleaner_enabled));
        m.insert(
            "cleaner_interval_ms".into(),
            Value::from(o.cleaner_interval_ms),
        );
        m.insert(
            "cleaner_batch_pages".into(),
            Value::from(o.cleaner_batch_pages),
        );
        m.insert("cleaner_lag_bytes".into(), Value::from(o.cleaner_lag_bytes));
        m.insert(
            "miss_write_percent".into(),
            Value::from(self.config.miss_write_percent),
        );
        m.insert(
            "miss_data_factor".into(),
            Value::from(self.config.miss_data_factor),
        );
        m.insert("hot_keys".into(), Value::from(HOT_KEYS));
        m
    }

    fn setup(&self, variant: &str, _run: &RunConfig) -> Result<BufferState> {
        let variant = Variant::from_name(variant)?;
        let dir = temp_db_dir(self.config.db_dir.as_deref(), "buffer")?;
        let storage = FileStorage::open_dir(dir.path(), true)?;
        let file = storage.open(
            DATA_FILE,
            OpenOptions {
                create: true,
                direct: self.options.direct_io,
                ..OpenOptions::default()
            },
        )?;
        let pool = BufferPool::open(file, &self.options, Arc::new(NoWal))?;

        let page_count = match variant {
            Variant::HotOptimistic | Variant::HotShared => 1,
            Variant::ResidentRandom => {
                (self.frames() * RESIDENT_FRACTION.0 / RESIDENT_FRACTION.1).max(1)
            }
            Variant::MissRandom => self.frames() * self.config.miss_data_factor,
        };
        for page_no in FIRST_PAGE..FIRST_PAGE + page_count {
            let mut guard = pool.fix_new(PageId(page_no), PageType::Raw)?;
            let mut page = guard.page_mut();
            page.put_u64(OFF_PAGE_NO, page_no);
            page.put_u64(OFF_COUNTER, 0);
            if matches!(variant, Variant::HotOptimistic | Variant::HotShared) {
                for i in 0..HOT_KEYS {
                    page.put_u64(OFF_KEYS + 8 * i, 2 * i as u64 + 1);
                }
            }
        }
        pool.flush_all()?;

        Ok(BufferState {
            pool,
            variant,
            page_count,
            write_percent: self.config.miss_write_percent,
            db_path: dir.path().join(DATA_FILE),
            _dir: dir,
        })
    }

    fn describe(state: &BufferState) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("page_count".into(), Value::from(state.page_count));
        m.insert("first_page".into(), Value::from(FIRST_PAGE));
        m.insert(
            "db_file".into(),
            Value::from(state.db_path.display().to_string()),
        );
        m
    }

    #[inline]
    fn op(state: &BufferState, _thread_idx: usize, ctx: &mut ThreadCtx) -> Result<()> {
        let result = match state.variant {
            Variant::HotOptimistic => {
                let key = ctx.rng.random_range(0..2 * HOT_KEYS as u64);
                state
                    .pool
                    .read_optimistic(PageId(FIRST_PAGE), |page| {
                        (page.u64_at(OFF_PAGE_NO), search(page, key))
                    })
                    .map(|(page_no, found)| check_search(FIRST_PAGE, page_no, key, found))
            }
            Variant::HotShared => {
                let key = ctx.rng.random_range(0..2 * HOT_KEYS as u64);
                state.pool.fix_shared(PageId(FIRST_PAGE)).map(|guard| {
                    let page = guard.bytes();
                    check_search(FIRST_PAGE, page.u64_at(OFF_PAGE_NO), key, search(page, key))
                })
            }
            Variant::ResidentRandom => {
                let page_no = FIRST_PAGE + ctx.rng.random_range(0..state.page_count);
                state
                    .pool
                    .fix_shared(PageId(page_no))
                    .map(|guard| check_page(page_no, guard.bytes().u64_at(OFF_PAGE_NO)))
            }
            Variant::MissRandom => {
                let page_no = FIRST_PAGE + ctx.rng.random_range(0..state.page_count);
                if ctx.rng.random_range(0..100) < state.write_percent {
                    state.pool.fix_exclusive(PageId(page_no)).map(|mut guard| {
                        let seen = guard.bytes().u64_at(OFF_PAGE_NO);
                        {
                            let mut page = guard.page_mut();
                            let n = page.u64_at(OFF_COUNTER);
                            page.put_u64(OFF_COUNTER, n.wrapping_add(1));
                        }
                        guard.mark_dirty();
                        check_page(page_no, seen)
                    })
                } else {
                    state
                        .pool
                        .fix_shared(PageId(page_no))
                        .map(|guard| check_page(page_no, guard.bytes().u64_at(OFF_PAGE_NO)))
                }
            }
        };
        match result {
            Ok(checked) => checked,
            Err(shoal::Error::PoolExhausted { .. }) => {
                ctx.abort("pool_exhausted");
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    fn counters(state: &BufferState) -> BTreeMap<String, u64> {
        let s = state.pool.stats();
        BTreeMap::from([
            ("hits".to_string(), s.hits),
            ("misses".to_string(), s.misses),
            ("evictions".to_string(), s.evictions),
            ("dirty_writes".to_string(), s.dirty_writes),
            ("latch_waits".to_string(), s.latch_waits),
        ])
    }
}

/// Binary search for `key` among the [`HOT_KEYS`] sorted keys of `page`. The key count is a
/// constant, not read from the page, so a torn optimistic read cannot send the search out of
/// bounds.
#[inline]
fn search<P: PageRead + ?Sized>(page: &P, key: u64) -> bool {
    let (mut lo, mut hi) = (0usize, HOT_KEYS);
    while lo < hi {
        let mid = (lo + hi) / 2;
        let k = page.u64_at(OFF_KEYS + 8 * mid);
        if k < key {
            lo = mid + 1;
        } else if k > key {
            hi = mid;
        } else {
            return true;
        }
    }
    false
}

/// The page fixed must carry its own number.
#[inline]
fn check_page(expected: u64, seen: u64) -> Result<()> {
    if seen == expected {
        Ok(())
    } else {
        Err(BenchError::Check(format!(
            "fixed page {expected} but it holds page {seen}"
        )))
    }
}

/// The hot page must be itself, and a search must find exactly the odd keys.
#[inline]
fn check_search(expected: u64, seen: u64, key: u64, found: bool) -> Result<()> {
    check_page(expected, seen)?;
    if found == (key % 2 == 1) {
        Ok(())
    } else {
        Err(BenchError::Check(format!(
            "search for key {key} on the hot page returned found={found}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_finds_exactly_the_odd_keys() {
        let mut page = vec![0u8; 4096];
        for i in 0..HOT_KEYS {
            page.put_u64(OFF_KEYS + 8 * i, 2 * i as u64 + 1);
        }
        for key in 0..2 * HOT_KEYS as u64 + 3 {
            let expect = key % 2 == 1 && key < 2 * HOT_KEYS as u64;
            assert_eq!(search(page.as_slice(), key), expect, "key {key}");
        }
        assert!(check_search(1, 1, 5, true).is_ok());
        assert!(check_search(1, 2, 5, true).is_err());
        assert!(check_search(1, 1, 4, true).is_err());
    }

    #[test]
    fn settings_are_checked() {
        let bad_pool = BufferConfig {
            pool_size_bytes: 8192 * 4,
            ..BufferConfig::default()
        };
        let e = BufferBench::new(bad_pool).unwrap_err().to_string();
        assert!(e.contains("--pool-size") && e.contains("16 frames"), "{e}");
        let bad_page = BufferConfig {
            page_size_bytes: 5000,
            ..BufferConfig::default()
        };
        let e = BufferBench::new(bad_page).unwrap_err().to_string();
        assert!(e.contains("--page-size"), "{e}");
        let bad_pct = BufferConfig {
            miss_write_percent: 101,
            ..BufferConfig::default()
        };
        let e = BufferBench::new(bad_pct).unwrap_err().to_string();
        assert!(e.contains("--miss-write-percent"), "{e}");
        let bad_factor = BufferConfig {
            miss_data_factor: 0,
            ..BufferConfig::default()
        };
        let e = BufferBench::new(bad_factor).unwrap_err().to_string();
        assert!(e.contains("--miss-data-factor"), "{e}");
    }

    #[test]
    fn db_dir_is_created_only_under_an_existing_parent() {
        let tmp = tempfile::tempdir().unwrap();
        let ok = tmp.path().join("db");
        prepare_db_dir(&ok).unwrap();
        assert!(ok.is_dir());
        prepare_db_dir(&ok).unwrap();
        let e = prepare_db_dir(&tmp.path().join("no/such/db"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--db-dir") && e.contains("parent directory does not exist"),
            "{e}"
        );
        let file = tmp.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        let e = prepare_db_dir(&file).unwrap_err().to_string();
        assert!(e.contains("not a directory"), "{e}");
    }

    #[test]
    fn every_variant_runs_and_checks_its_reads() {
        let bench = BufferBench::new(BufferConfig {
            pool_size_bytes: 1 << 20,
            page_size_bytes: 4096,
            ..BufferConfig::default()
        })
        .unwrap();
        let run = RunConfig {
            threads: vec![1, 2],
            warmup_s: 0.0,
            duration_s: 0.1,
            latency_sample_every: 1,
            seed: 3,
        };
        let ms =
            crate::runner::run_micro(&bench, &[], &run, &mut crate::runner::NoObserver).unwrap();
        assert_eq!(ms.len(), VARIANTS.len() * 2);
        for m in &ms {
            assert!(m.ops > 0, "{} {}", m.variant, m.threads);
            assert!(m.aborts.is_empty());
            assert_eq!(m.config["pool_frames"], 256);
        }
        let miss = ms.iter().find(|m| m.variant == "miss-random").unwrap();
        assert_eq!(miss.config["page_count"], 1024);
        assert!(miss.engine_stats["misses"] > 0, "{:?}", miss.engine_stats);
        assert!(
            miss.engine_stats["evictions"] > 0,
            "{:?}",
            miss.engine_stats
        );
        let resident = ms.iter().find(|m| m.variant == "resident-random").unwrap();
        assert_eq!(resident.config["page_count"], 192);
    }
}
