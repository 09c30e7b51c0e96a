//! # `shoal`: the command-line program
//!
//! One binary with subcommands (DESIGN.md §6). Today: `shoal bench buffer`,
//! `shoal bench log`, `shoal bench btree` and `shoal bench lock`, the buffer-pool,
//! write-ahead-log, B+-tree and lock-manager micro-benchmarks, and `shoal bench recovery`, the time restart takes to replay a log
//! after a crash. `shoal inspect DB` and `shoal verify DB` report on and check a database
//! directory; `shoal stats DB` shows the counters its last clean close saved.
//!
//! Conventions: results go to standard output, progress and errors to standard error; with
//! `--json` standard output holds only JSON lines. A bad argument is reported by `clap` with
//! its name (exit status 2); a failure while running is reported as `shoal: error: ...`
//! (exit status 1).

/// The program's allocator: mimalloc, whose per-thread free lists serve the engine's many
/// short-lived row and key buffers faster than glibc's malloc (TPC-B and TPC-C spend about a
/// tenth of their time allocating). An application embedding the `shoal` library chooses its
/// own; the peers' C libraries (SQLite, Berkeley DB) allocate with their own allocators.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::builder::PossibleValuesParser;
use clap::{Args, Parser, Subcommand};
use shoal_bench::micro::btree::{self, BtreeBench, BtreeConfig};
use shoal_bench::micro::buffer::{self, BufferBench, BufferConfig};
use shoal_bench::micro::lock::{self as lockbench, LockBench, LockConfig};
use shoal_bench::micro::log::{self as logbench, LogBench, LogConfig};
use shoal_bench::micro::recovery::{self, RecoveryBench, RecoveryConfig};
use shoal_bench::output::{Output, OutputOptions};
use shoal_bench::parse::{ByteSize, Seconds, ThreadList};
use shoal_bench::runner::{run_micro, MicroBench, RunConfig};
use shoal_bench::workload::suite::Workload;
use std::path::PathBuf;
use std::process::ExitCode;

mod db_cmds;
mod workload_cmds;

/// Shoal: a transactional storage manager for multicore machines.
#[derive(Debug, Parser)]
#[command(name = "shoal", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)] // parsed once per process
enum Command {
    /// Run a benchmark and report throughput, latency and scaling over thread counts.
    Bench(BenchCommand),
    /// Summarise a database: tables, rows, indexes, pages, free space, log size.
    Inspect(db_cmds::DbArgs),
    /// Check a database: every page checksum, every tree, every row and index; exit status
    /// 0 only if no problem is found.
    Verify(db_cmds::DbArgs),
    /// Show the counters (buffer pool, log, locks) saved by the database's last clean close.
    Stats(db_cmds::DbArgs),
}

#[derive(Debug, Args)]
#[command(
    subcommand_value_name = "BENCHMARK",
    override_usage = "shoal bench <BENCHMARK> [OPTIONS]"
)]
struct BenchCommand {
    /// Which benchmark; `None` runs the default suite of workloads.
    #[command(subcommand)]
    bench: Option<Benchmark>,
}

#[derive(Debug, Subcommand)]
enum Benchmark {
    /// Buffer-pool micro-benchmark: hot-page reads (optimistic and shared), fixes of
    /// resident pages, and misses with eviction and write-back.
    Buffer(BufferArgs),
    /// Write-ahead-log micro-benchmark: record inserts, and commits under full (group
    /// commit) and lazy durability.
    Log(LogArgs),
    /// Recovery benchmark: generates a log of key-value updates, crashes, and times the
    /// restart (analysis, redo, undo) that replays it; checks every key afterwards.
    Recovery(RecoveryArgs),
    /// B+-tree micro-benchmark: lookups (a tree in the pool, next to a std BTreeMap; a
    /// three-level tree whose root is the hot spot), sequential and random inserts, and
    /// range scans.
    Btree(BtreeArgs),
    /// Lock-manager micro-benchmark: X lock + release pairs on distinct rows, and
    /// transactions taking IX on one shared table plus row X locks (the hot intention lock).
    Lock(LockArgs),
    /// Workload: seed 000's single-row select on `test(a INT4 PRIMARY KEY, b CHAR(96))`,
    /// 100,000 rows per --scale, on each --engine.
    Select1(workload_cmds::WorkloadArgs),
    /// Workload: pgbench's TPC-B-like transaction (update an account, read it back, update
    /// its teller and branch, insert history), --scale branches, on each --engine.
    Tpcb(workload_cmds::WorkloadArgs),
    /// Workload: seed 001's insert micro-benchmark; each thread inserts into its own
    /// table, committing every 1,000 records, on each --engine.
    Insert(workload_cmds::WorkloadArgs),
    /// Workload: TPC-C (rev. 5.11) — New-Order, Payment, Order-Status, Delivery and
    /// Stock-Level on the nine tables, --warehouses warehouses, as a closed-loop
    /// throughput test; variants standard (45/43/4/4/4), payment, new-order.
    Tpcc(workload_cmds::WorkloadArgs),
    /// Every installed engine (Shoal, SQLite, PostgreSQL, MariaDB, Berkeley DB, Derby) on
    /// select1, tpcb, insert and tpcc payment and new-order, threads 1 to 64, memory and
    /// disk sizes, lazy and full durability; one report with charts and the issue-8
    /// targets in --out (default ./shoal-compare/). Long: narrow it with --engine,
    /// --threads, --size, --durability and --duration-s.
    Compare(workload_cmds::CompareArgs),
}

/// Settings every benchmark takes.
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// Thread counts to measure, comma-separated, e.g. 1,2,4,8; applies to every variant
    /// [default: the benchmark's own; buffer: 1,2; log: insert 1,2, commit-full and
    /// commit-lazy 1,2,4,8,16,32,64; btree: lookup-hot-root 1,2,4,...,128, the others
    /// 1,2].
    #[arg(long, value_name = "LIST", allow_negative_numbers = true)]
    pub threads: Option<ThreadList>,

    /// Measured seconds per point (variant x thread count).
    #[arg(
        long = "duration-s",
        value_name = "SECONDS",
        default_value = "5",
        allow_negative_numbers = true
    )]
    duration_s: Seconds,

    /// Warm-up seconds before each point; operations run but are not counted.
    #[arg(
        long = "warmup-s",
        value_name = "SECONDS",
        default_value = "1",
        allow_negative_numbers = true
    )]
    warmup_s: Seconds,

    /// Print one JSON object per measured point on standard output, and nothing else there.
    #[arg(long)]
    json: bool,

    /// Write results.jsonl and report.md into DIR (created if missing).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,

    /// Time one operation in N for the latency percentiles; 1 = every operation, which
    /// costs about 54 ns per operation [default: the benchmark's own; buffer: 64; log:
    /// commit-full 1, the other variants 64; btree: scan 1, the other variants 64; lock:
    /// distinct-rows 64, hot-table 8; workloads: select1 16, the others 1].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    latency_sample_every: Option<u32>,

    /// Seed of the per-thread random number generators.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

impl CommonArgs {
    /// The run settings; `bench` supplies the default latency sampling, and the thread
    /// list is `default_threads` unless `--threads` was given.
    fn run_config(&self, bench: &impl MicroBench, default_threads: &[usize]) -> RunConfig {
        RunConfig {
            threads: self
                .threads
                .as_ref()
                .map_or_else(|| default_threads.to_vec(), |t| t.0.clone()),
            warmup_s: self.warmup_s.0,
            duration_s: self.duration_s.0,
            latency_sample_every: self
                .latency_sample_every
                .unwrap_or_else(|| bench.latency_sample_every_default()),
            seed: self.seed,
        }
    }

    fn output_options(&self) -> OutputOptions {
        OutputOptions {
            json: self.json,
            out_dir: self.out.clone(),
            command_line: command_line(),
            appendix: None,
        }
    }
}

#[derive(Debug, Args)]
struct BufferArgs {
    #[command(flatten)]
    common: CommonArgs,

    /// Variants to run, comma-separated (default: all, in the order listed).
    #[arg(long, value_name = "LIST", value_delimiter = ',',
          value_parser = PossibleValuesParser::new(buffer::VARIANTS))]
    variant: Vec<String>,

    /// Buffer pool size: a number of MiB, or with a unit (B, KiB, MiB, GiB).
    #[arg(long, value_name = "SIZE", default_value = "64MiB")]
    pool_size: ByteSize,

    /// Page size in bytes: a power of two from 4096 to 65536.
    #[arg(long, value_name = "BYTES", default_value_t = shoal::options::PAGE_SIZE_DEFAULT_BYTES,
          value_parser = parse_page_size)]
    page_size: usize,

    /// Create the temporary database directories under DIR (created if its parent exists)
    /// instead of the system temporary directory.
    #[arg(long, value_name = "DIR")]
    db_dir: Option<PathBuf>,

    /// Open the data file with O_DIRECT, so misses go to the device (tmpfs refuses it).
    #[arg(long)]
    direct_io: bool,

    /// Percentage of miss-random operations that modify their page (0 to 100).
    #[arg(long, value_name = "PERCENT", default_value_t = buffer::MISS_WRITE_PERCENT_DEFAULT,
          value_parser = clap::value_parser!(u32).range(0..=100))]
    miss_write_percent: u32,

    /// Size of the miss-random data set as a multiple of the pool size (1 to 1000).
    #[arg(long, value_name = "FACTOR", default_value_t = buffer::MISS_DATA_FACTOR,
          value_parser = clap::value_parser!(u64).range(1..=buffer::MISS_DATA_FACTOR_MAX))]
    miss_data_factor: u64,
}

#[derive(Debug, Args)]
struct LogArgs {
    #[command(flatten)]
    common: CommonArgs,

    /// Variants to run, comma-separated (default: all, in the order listed).
    #[arg(long, value_name = "LIST", value_delimiter = ',',
          value_parser = PossibleValuesParser::new(logbench::VARIANTS))]
    variant: Vec<String>,

    /// Log segment size: a number of MiB, or with a unit (B, KiB, MiB, GiB).
    #[arg(long, value_name = "SIZE", default_value = "64MiB")]
    segment_size: ByteSize,

    /// Log buffer size: a number of MiB, or with a unit (B, KiB, MiB, GiB).
    #[arg(long, value_name = "SIZE", default_value = "16MiB")]
    log_buffer_size: ByteSize,

    /// Longest delay in milliseconds before a lazily committed record is flushed
    /// (commit-lazy) [default: the log manager's own].
    #[arg(long, value_name = "MS")]
    lazy_flush_interval_ms: Option<u64>,

    /// Create the temporary log directories under DIR (created if its parent exists)
    /// instead of the system temporary directory; put it on the device to measure.
    #[arg(long, value_name = "DIR")]
    db_dir: Option<PathBuf>,

    /// How the log is written: `direct` (O_DIRECT where the file system accepts it, else
    /// buffered) or `buffered` (through the page cache). The mode used is reported as
    /// `log_io` in each result's config.
    #[arg(long, value_name = "MODE", default_value = "direct",
          value_parser = PossibleValuesParser::new(["direct", "buffered"]))]
    log_io: String,
}

#[derive(Debug, Args)]
struct RecoveryArgs {
    /// Bytes of log to generate and replay: a number of MiB, or with a unit (B, KiB, MiB,
    /// GiB).
    #[arg(long, value_name = "SIZE", default_value = "1GiB")]
    log_size: ByteSize,

    /// Number of keys the updates are drawn from (uniformly).
    #[arg(long, value_name = "N", default_value_t = recovery::KEYS_DEFAULT)]
    keys: u64,

    /// Value length in bytes (8 to 1024).
    #[arg(long, value_name = "BYTES", default_value_t = recovery::VALUE_BYTES_DEFAULT)]
    value_bytes: usize,

    /// Updates per transaction.
    #[arg(long, value_name = "N", default_value_t = recovery::UPDATES_PER_TXN_DEFAULT)]
    updates_per_txn: u32,

    /// Buffer pool size (it must hold every page of the keys): a number of MiB, or with a
    /// unit.
    #[arg(long, value_name = "SIZE", default_value = "256MiB")]
    pool_size: ByteSize,

    /// Log segment size: a number of MiB, or with a unit.
    #[arg(long, value_name = "SIZE", default_value = "64MiB")]
    segment_size: ByteSize,

    /// Log buffer size: a number of MiB, or with a unit.
    #[arg(long, value_name = "SIZE", default_value = "16MiB")]
    log_buffer_size: ByteSize,

    /// Run the page cleaner while generating the log (more page images; redo skips the
    /// records they cover).
    #[arg(long)]
    cleaner: bool,

    /// Sync the files and drop them from the OS page cache before the restart, so the log is
    /// read from the device.
    #[arg(long)]
    drop_caches: bool,

    /// Create the temporary database directory under DIR (created if its parent exists)
    /// instead of the system temporary directory; put it on the device to measure.
    #[arg(long, value_name = "DIR")]
    db_dir: Option<PathBuf>,

    /// Seed of the key and value choices.
    #[arg(long, default_value_t = 42)]
    seed: u64,

    /// Print the result as one JSON object on standard output, and nothing else there.
    #[arg(long)]
    json: bool,

    /// Write results.jsonl and report.md into DIR (created if missing).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct BtreeArgs {
    #[command(flatten)]
    common: CommonArgs,

    /// Variants to run, comma-separated (default: all, in the order listed);
    /// lookup-resident and lookup-batch bring lookup-resident-btreemap along.
    #[arg(long, value_name = "LIST", value_delimiter = ',',
          value_parser = PossibleValuesParser::new(btree::VARIANTS))]
    variant: Vec<String>,

    /// Buffer pool size: a number of MiB, or with a unit (B, KiB, MiB, GiB). It must hold
    /// the loaded trees; the insert variants' trees grow into it.
    #[arg(long, value_name = "SIZE", default_value = "1GiB")]
    pool_size: ByteSize,

    /// Page size in bytes: a power of two from 4096 to 65536.
    #[arg(long, value_name = "BYTES", default_value_t = shoal::options::PAGE_SIZE_DEFAULT_BYTES,
          value_parser = parse_page_size)]
    page_size: usize,

    /// Keys (8-byte values) of lookup-resident, lookup-batch, their BTreeMap context and scan; at least
    /// 1000.
    #[arg(long, value_name = "N", default_value_t = btree::KEYS_DEFAULT)]
    keys: u64,

    /// Keys (96-byte values) of lookup-hot-root; they must make a tree of exactly three
    /// levels.
    #[arg(long, value_name = "N", default_value_t = btree::HOT_KEYS_DEFAULT)]
    hot_keys: u64,

    /// Inserts per transaction of insert-sequential and insert-random.
    #[arg(long, value_name = "N", default_value_t = btree::INSERTS_PER_TXN_DEFAULT)]
    inserts_per_txn: u32,

    /// Create the temporary database directories under DIR (created if its parent exists)
    /// instead of the system temporary directory.
    #[arg(long, value_name = "DIR")]
    db_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct LockArgs {
    #[command(flatten)]
    common: CommonArgs,

    /// Variants to run, comma-separated (default: all, in the order listed).
    #[arg(long, value_name = "LIST", value_delimiter = ',',
          value_parser = PossibleValuesParser::new(lockbench::VARIANTS))]
    variant: Vec<String>,

    /// Buckets of the lock table: a power of two.
    #[arg(long, value_name = "N", default_value_t = LockConfig::default().partitions)]
    partitions: usize,

    /// Rows each worker cycles through (10 to 2^32).
    #[arg(long, value_name = "N", default_value_t = lockbench::ROWS_PER_THREAD_DEFAULT)]
    rows_per_thread: u64,
}

/// Parses `--page-size`: bytes, checked by the engine's own rule.
fn parse_page_size(s: &str) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number of bytes"))?;
    shoal::options::validate_page_size(n)
        .map(|()| n)
        .map_err(|_| format!("{n} is not a power of two from 4096 to 65536"))
}

/// The command line as typed, for the report.
pub(crate) fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

fn run_buffer(args: &BufferArgs) -> shoal_bench::Result<()> {
    let common = &args.common;
    // Check everything that can be checked before any time is spent measuring.
    let bench = BufferBench::new(BufferConfig {
        pool_size_bytes: args.pool_size.bytes(),
        page_size_bytes: args.page_size,
        direct_io: args.direct_io,
        db_dir: args.db_dir.clone(),
        miss_write_percent: args.miss_write_percent,
        miss_data_factor: args.miss_data_factor,
    })?;
    let run = common.run_config(&bench, &[1, 2]);
    run.validate()?;
    let mut output = Output::new(common.output_options())?;
    run_micro(&bench, &args.variant, &run, &mut output)?;
    output.finish()?;
    Ok(())
}

/// A benchmark's per-variant planner (`logbench::plan`, `btree::plan`): the variants, the
/// `--threads` and `--latency-sample-every` overrides, and the base settings.
type PlanFn = fn(
    &[String],
    Option<&[usize]>,
    Option<u32>,
    &RunConfig,
) -> shoal_bench::Result<Vec<(&'static str, RunConfig)>>;

/// The validated runs of a benchmark planned per variant (each with its own default thread
/// list and latency sampling unless `--threads` or `--latency-sample-every` was given).
fn planned(
    common: &CommonArgs,
    bench: &impl MicroBench,
    variants: &[String],
    default_threads: &[usize],
    plan: PlanFn,
) -> shoal_bench::Result<Vec<(&'static str, RunConfig)>> {
    let base = common.run_config(bench, default_threads);
    let plan = plan(
        variants,
        common.threads.as_ref().map(|t| t.0.as_slice()),
        common.latency_sample_every,
        &base,
    )?;
    for (_, run) in &plan {
        run.validate()?;
    }
    Ok(plan)
}

/// Runs the log benchmark one variant at a time, each with its own default thread list and
/// latency sampling unless `--threads` or `--latency-sample-every` was given.
fn run_log(args: &LogArgs) -> shoal_bench::Result<()> {
    let common = &args.common;
    let bench = LogBench::new(LogConfig {
        segment_size_bytes: args.segment_size.bytes(),
        log_buffer_size_bytes: args.log_buffer_size.bytes(),
        lazy_flush_interval_ms: args.lazy_flush_interval_ms,
        db_dir: args.db_dir.clone(),
        direct_io: args.log_io == "direct",
    })?;
    let plan = planned(
        common,
        &bench,
        &args.variant,
        logbench::INSERT_THREADS_DEFAULT,
        logbench::plan,
    )?;
    let mut output = Output::new(common.output_options())?;
    for (variant, run) in &plan {
        run_micro(&bench, &[variant.to_string()], run, &mut output)?;
    }
    output.finish()?;
    Ok(())
}

/// Runs the btree benchmark one variant at a time, each with its own default thread list and
/// latency sampling unless `--threads` or `--latency-sample-every` was given.
fn run_btree(args: &BtreeArgs) -> shoal_bench::Result<()> {
    let common = &args.common;
    let bench = BtreeBench::new(BtreeConfig {
        pool_size_bytes: args.pool_size.bytes(),
        page_size_bytes: args.page_size,
        keys: args.keys,
        hot_keys: args.hot_keys,
        inserts_per_txn: args.inserts_per_txn,
        db_dir: args.db_dir.clone(),
        progress: true,
    })?;
    let plan = planned(
        common,
        &bench,
        &args.variant,
        btree::THREADS_DEFAULT,
        btree::plan,
    )?;
    let mut output = Output::new(common.output_options())?;
    btree::run(&bench, &plan, &mut output)?;
    output.finish()?;
    Ok(())
}

/// Runs the lock benchmark one variant at a time, each with its own latency sampling unless
/// `--latency-sample-every` was given.
fn run_lock(args: &LockArgs) -> shoal_bench::Result<()> {
    let common = &args.common;
    let bench = LockBench::new(LockConfig {
        partitions: args.partitions,
        rows_per_thread: args.rows_per_thread,
    })?;
    let plan = planned(
        common,
        &bench,
        &args.variant,
        lockbench::THREADS_DEFAULT,
        lockbench::plan,
    )?;
    let mut output = Output::new(common.output_options())?;
    for (variant, run) in &plan {
        run_micro(&bench, &[variant.to_string()], run, &mut output)?;
    }
    output.finish()?;
    Ok(())
}

/// Runs the recovery benchmark: one generated log, one timed restart.
fn run_recovery(args: &RecoveryArgs) -> shoal_bench::Result<()> {
    let bench = RecoveryBench::new(RecoveryConfig {
        log_size_bytes: args.log_size.bytes(),
        keys: args.keys,
        value_bytes: args.value_bytes,
        updates_per_txn: args.updates_per_txn,
        pool_size_bytes: args.pool_size.bytes(),
        segment_size_bytes: args.segment_size.bytes(),
        log_buffer_size_bytes: args.log_buffer_size.bytes(),
        cleaner: args.cleaner,
        drop_caches: args.drop_caches,
        db_dir: args.db_dir.clone(),
        seed: args.seed,
    })?;
    let mut output = Output::new(OutputOptions {
        json: args.json,
        out_dir: args.out.clone(),
        command_line: command_line(),
        appendix: None,
    })?;
    bench.run(&mut output)?;
    output.finish()?;
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result: Result<(), String> = match &cli.command {
        Command::Bench(b) => match &b.bench {
            Some(Benchmark::Buffer(args)) => run_buffer(args),
            Some(Benchmark::Log(args)) => run_log(args),
            Some(Benchmark::Recovery(args)) => run_recovery(args),
            Some(Benchmark::Btree(args)) => run_btree(args),
            Some(Benchmark::Lock(args)) => run_lock(args),
            Some(Benchmark::Select1(args)) => workload_cmds::run_workload(Workload::Select1, args),
            Some(Benchmark::Tpcb(args)) => workload_cmds::run_workload(Workload::Tpcb, args),
            Some(Benchmark::Insert(args)) => workload_cmds::run_workload(Workload::Insert, args),
            Some(Benchmark::Tpcc(args)) => workload_cmds::run_workload(Workload::Tpcc, args),
            Some(Benchmark::Compare(args)) => workload_cmds::run_compare(args),
            None => workload_cmds::run_default_suite(),
        }
        .map_err(|e| e.to_string()),
        Command::Inspect(args) => db_cmds::inspect(args),
        Command::Verify(args) => db_cmds::verify(args),
        Command::Stats(args) => db_cmds::stats(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("shoal: error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests;
