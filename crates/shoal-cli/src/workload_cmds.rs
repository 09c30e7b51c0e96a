//! `shoal bench select1|tpcb|insert|tpcc` (the seeds' workloads on Shoal and its peers) and
//! `shoal bench` with no benchmark named (the default suite, written to `./shoal-report/`).

use crate::{command_line, CommonArgs};
use clap::builder::PossibleValuesParser;
use clap::Args;
use shoal_bench::output::{Output, OutputOptions};
use shoal_bench::parse::ByteSize;
use shoal_bench::workload::suite::{
    consistency_failures, default_suite, Workload, WorkloadRun, DEFAULT_REPORT_DIR,
};
use shoal_bench::workload::tpcc::TpccScale;
use shoal_bench::workload::{DataSize, Durability, EngineKind, WorkloadOptions};
use shoal_bench::{BenchError, Measurement, RunConfig};
use std::path::PathBuf;

/// Settings of every workload.
#[derive(Debug, Args)]
pub struct WorkloadArgs {
    #[command(flatten)]
    pub common: CommonArgs,

    /// Engines to run, comma-separated, one after the other for each variant: shoal,
    /// sqlite.
    #[arg(long, value_name = "LIST", default_value = "shoal,sqlite")]
    pub engine: String,

    /// When a commit returns: `full` (its log record is on stable storage: Shoal Full,
    /// SQLite synchronous=FULL) or `lazy` (at once: Shoal Lazy, SQLite synchronous=OFF).
    #[arg(long, value_name = "MODE", default_value = "lazy",
          value_parser = PossibleValuesParser::new(["full", "lazy"]))]
    pub durability: String,

    /// Data size relative to the pool: `memory` (the pool holds the database) or `disk`
    /// (the pool holds a tenth of it); --pool-size overrides.
    #[arg(long, value_name = "SIZE", default_value = "memory",
          value_parser = PossibleValuesParser::new(["memory", "disk"]))]
    pub size: String,

    /// Buffer pool (SQLite: page cache per connection) size: a number of MiB, or with a
    /// unit (B, KiB, MiB, GiB) [default: from --size and the data].
    #[arg(long, value_name = "SIZE")]
    pub pool_size: Option<ByteSize>,

    /// Scale: select1 100,000 rows per unit; tpcb branches (pgbench -s).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub scale: u32,

    /// tpcc: warehouses (each 10 districts, 30,000 customers, 100,000 stock rows).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1_000))]
    pub warehouses: u32,

    /// Keep each engine's database in DIR/<engine>/ after the run (for `shoal verify
    /// DIR/shoal` and `shoal inspect`); replaces an earlier run's [default: temporary
    /// directories, removed afterwards].
    #[arg(long, value_name = "DIR")]
    pub db_dir: Option<PathBuf>,

    /// Variants to run, comma-separated [default: all].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub variant: Vec<String>,
}

impl WorkloadArgs {
    /// The run these arguments describe, checked.
    fn plan(&self, workload: Workload) -> shoal_bench::Result<WorkloadRun> {
        let options = WorkloadOptions {
            engine: EngineKind::Shoal,
            durability: Durability::parse(&self.durability)?,
            size: DataSize::parse(&self.size)?,
            pool_size_bytes: self.pool_size.map(ByteSize::bytes),
            db_dir: self.db_dir.clone(),
            progress: true,
        };
        let run = RunConfig {
            threads: self
                .common
                .threads
                .as_ref()
                .map_or_else(|| vec![1, 2], |t| t.0.clone()),
            warmup_s: self.common.warmup_s.0,
            duration_s: self.common.duration_s.0,
            latency_sample_every: self.common.latency_sample_every.unwrap_or(1),
            seed: self.common.seed,
        };
        let w = WorkloadRun {
            workload,
            engines: EngineKind::parse_list(&self.engine)?,
            options,
            scale: self.scale,
            warehouses: self.warehouses,
            tpcc_scale: TpccScale::full(),
            variants: self.variant.clone(),
            run,
        };
        w.validate()?;
        Ok(w)
    }
}

/// Fails the command if any point's consistency check failed (after its report is
/// written).
fn check_consistency(ms: &[Measurement]) -> shoal_bench::Result<()> {
    let failed = consistency_failures(ms);
    if failed.is_empty() {
        Ok(())
    } else {
        Err(BenchError::Check(format!(
            "consistency check failed: {}",
            failed.join(" | ")
        )))
    }
}

/// `shoal bench <workload> ...`.
pub fn run_workload(workload: Workload, args: &WorkloadArgs) -> shoal_bench::Result<()> {
    let w = args.plan(workload)?;
    let mut output = Output::new(args.common.output_options())?;
    let ms = w.execute(&mut output)?;
    output.finish()?;
    check_consistency(&ms)
}

/// `shoal bench` with no benchmark: the default suite into `./shoal-report/`.
pub fn run_default_suite() -> shoal_bench::Result<()> {
    let suite = default_suite(true);
    let points: usize = suite
        .iter()
        .map(|w| w.engines.len() * w.workload.variants().len() * w.run.threads.len())
        .sum();
    eprintln!(
        "shoal bench: the default suite — {} workloads, {points} points, on an embedded \
         database in a temporary directory; report in ./{DEFAULT_REPORT_DIR}/ \
         (`shoal bench --help` lists the single benchmarks)",
        suite.len()
    );
    let mut output = Output::new(OutputOptions {
        json: false,
        out_dir: Some(PathBuf::from(DEFAULT_REPORT_DIR)),
        command_line: command_line(),
    })?;
    let mut all = Vec::new();
    for w in &suite {
        all.extend(w.execute(&mut output)?);
    }
    output.finish()?;
    check_consistency(&all)
}
