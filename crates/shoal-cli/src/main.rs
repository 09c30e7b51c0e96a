//! # `shoal`: the command-line program
//!
//! One binary with subcommands (DESIGN.md §6). Today: `shoal bench buffer`, the buffer-pool
//! micro-benchmark. `inspect`, `verify` and `stats` come with the components they need.
//!
//! Conventions: results go to standard output, progress and errors to standard error; with
//! `--json` standard output holds only JSON lines. A bad argument is reported by `clap` with
//! its name (exit status 2); a failure while running is reported as `shoal: error: ...`
//! (exit status 1).

use clap::builder::PossibleValuesParser;
use clap::error::ErrorKind;
use clap::{Args, CommandFactory, Parser, Subcommand};
use shoal_bench::micro::buffer::{self, BufferBench, BufferConfig};
use shoal_bench::output::{Output, OutputOptions};
use shoal_bench::parse::{ByteSize, Seconds, ThreadList};
use shoal_bench::runner::{run_micro, MicroBench, RunConfig};
use std::path::PathBuf;
use std::process::ExitCode;

/// Shoal: a transactional storage manager for multicore machines.
#[derive(Debug, Parser)]
#[command(name = "shoal", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a benchmark and report throughput, latency and scaling over thread counts.
    Bench(BenchCommand),
}

#[derive(Debug, Args)]
#[command(
    subcommand_value_name = "BENCHMARK",
    override_usage = "shoal bench <BENCHMARK> [OPTIONS]"
)]
struct BenchCommand {
    /// Which benchmark; `None` is answered with a usage error listing them.
    #[command(subcommand)]
    bench: Option<Benchmark>,
}

#[derive(Debug, Subcommand)]
enum Benchmark {
    /// Buffer-pool micro-benchmark: hot-page reads (optimistic and shared), fixes of
    /// resident pages, and misses with eviction and write-back.
    Buffer(BufferArgs),
}

/// Settings every benchmark takes.
#[derive(Debug, Args)]
struct CommonArgs {
    /// Thread counts to measure, comma-separated, e.g. 1,2,4,8.
    #[arg(
        long,
        value_name = "LIST",
        default_value = "1,2",
        allow_negative_numbers = true
    )]
    threads: ThreadList,

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
    /// costs about 54 ns per operation [default: the benchmark's own; buffer: 64].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    latency_sample_every: Option<u32>,

    /// Seed of the per-thread random number generators.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

impl CommonArgs {
    /// The run settings; `bench` supplies the default latency sampling.
    fn run_config(&self, bench: &impl MicroBench) -> RunConfig {
        RunConfig {
            threads: self.threads.0.clone(),
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

/// Exits with a usage error (status 2) that lists the benchmarks.
fn missing_benchmark() -> ! {
    let mut cmd = Cli::command();
    let bench = cmd
        .find_subcommand_mut("bench")
        .expect("the bench subcommand exists");
    let names = bench
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .filter(|n| n != "help")
        .collect::<Vec<_>>()
        .join(", ");
    bench
        .error(
            ErrorKind::MissingSubcommand,
            format!("name a benchmark to run; available: {names}"),
        )
        .exit()
}

/// The command line as typed, for the report.
fn command_line() -> String {
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
    let run = common.run_config(&bench);
    run.validate()?;
    let mut output = Output::new(common.output_options())?;
    run_micro(&bench, &args.variant, &run, &mut output)?;
    output.finish()?;
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Bench(b) => match &b.bench {
            Some(Benchmark::Buffer(args)) => run_buffer(args),
            None => missing_benchmark(),
        },
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
mod tests {
    use super::*;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn defaults() {
        let cli = Cli::try_parse_from(["shoal", "bench", "buffer"]).unwrap();
        let Command::Bench(b) = cli.command;
        let Some(Benchmark::Buffer(a)) = b.bench else {
            panic!("buffer expected")
        };
        assert!(a.variant.is_empty());
        assert_eq!(a.pool_size.bytes(), 64 << 20);
        assert_eq!(a.page_size, 8192);
        assert_eq!(a.common.threads.0, vec![1, 2]);
        assert_eq!(a.common.duration_s.0, 5.0);
        assert_eq!(a.common.warmup_s.0, 1.0);
        assert!(!a.common.json);
    }

    #[test]
    fn lists_and_sizes() {
        let cli = Cli::try_parse_from([
            "shoal",
            "bench",
            "buffer",
            "--variant",
            "miss-random,hot-page-shared",
            "--threads",
            "1,4",
            "--pool-size",
            "16",
            "--page-size",
            "4096",
            "--duration-s",
            "0.5",
        ])
        .unwrap();
        let Command::Bench(b) = cli.command;
        let Some(Benchmark::Buffer(a)) = b.bench else {
            panic!("buffer expected")
        };
        assert_eq!(a.variant, ["miss-random", "hot-page-shared"]);
        assert_eq!(a.common.threads.0, vec![1, 4]);
        assert_eq!(a.pool_size.bytes(), 16 << 20);
        assert_eq!(a.page_size, 4096);
        assert_eq!(a.common.duration_s.0, 0.5);
    }

    #[test]
    fn bad_arguments_are_named() {
        for (args, needle) in [
            (vec!["--threads", "0"], "--threads"),
            (vec!["--threads", "x"], "--threads"),
            (vec!["--variant", "cold-page"], "--variant"),
            (vec!["--pool-size", "64MB"], "--pool-size"),
            (vec!["--page-size", "5000"], "--page-size"),
            (vec!["--duration-s", "-1"], "--duration-s"),
            (vec!["--warmup-s", "x"], "--warmup-s"),
            (vec!["--threads", "-1"], "--threads"),
            (vec!["--miss-write-percent", "101"], "--miss-write-percent"),
            (
                vec!["--latency-sample-every", "0"],
                "--latency-sample-every",
            ),
        ] {
            let mut argv = vec!["shoal", "bench", "buffer"];
            argv.extend(args.iter().copied());
            let e = Cli::try_parse_from(&argv).unwrap_err().to_string();
            assert!(e.contains(needle), "{argv:?}: {e}");
        }
    }
}
