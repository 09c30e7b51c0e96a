//! `shoal bench select1|tpcb|insert|tpcc` (the seeds' workloads on Shoal and its peers) and
//! `shoal bench` with no benchmark named (the default suite, written to `./shoal-report/`).

use crate::{command_line, CommonArgs};
use clap::builder::PossibleValuesParser;
use clap::Args;
use shoal_bench::output::{Output, OutputOptions};
use shoal_bench::parse::ByteSize;
use shoal_bench::workload::compare::{targets, targets_markdown, CompareSettings};
use shoal_bench::workload::suite::{
    consistency_failures, default_suite, Workload, WorkloadRun, DEFAULT_REPORT_DIR,
};
use shoal_bench::workload::tpcc::TpccScale;
use shoal_bench::workload::{DataSize, Durability, EngineKind, WorkloadOptions};
use shoal_bench::{BenchError, Measurement, RunConfig};
use std::path::PathBuf;

/// How much data a workload loads and where it is kept (every workload and `compare`).
#[derive(Debug, Args)]
pub struct DataArgs {
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
}

/// Settings of every workload.
#[derive(Debug, Args)]
pub struct WorkloadArgs {
    #[command(flatten)]
    pub common: CommonArgs,

    /// Engines to run, comma-separated, one after the other for each variant: shoal,
    /// sqlite, postgres, mariadb, bdb, derby-embedded, derby-network, or `all`; peers that
    /// are not installed are skipped with the command that installs them.
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

    #[command(flatten)]
    pub data: DataArgs,

    /// Variants to run, comma-separated [default: all].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub variant: Vec<String>,

    /// Shoal's log lanes: page changes a transaction logs before its thread claims log a
    /// chunk at a time instead of a record at a time; 0 turns lanes off [default: Shoal's,
    /// 256].
    #[arg(long, value_name = "N")]
    pub log_lanes_after: Option<u32>,
}

impl WorkloadArgs {
    /// The run these arguments describe, checked.
    fn plan(&self, workload: Workload) -> shoal_bench::Result<WorkloadRun> {
        let options = WorkloadOptions {
            engine: EngineKind::Shoal,
            durability: Durability::parse(&self.durability)?,
            size: DataSize::parse(&self.size)?,
            pool_size_bytes: self.pool_size.map(ByteSize::bytes),
            db_dir: self.data.db_dir.clone(),
            progress: true,
            log_lane_after_records: self.log_lanes_after,
        };
        let run = RunConfig {
            threads: self
                .common
                .threads
                .as_ref()
                .map_or_else(|| vec![1, 2], |t| t.0.clone()),
            warmup_s: self.common.warmup_s.0,
            duration_s: self.common.duration_s.0,
            latency_sample_every: self
                .common
                .latency_sample_every
                .unwrap_or(workload.latency_sample_every_default()),
            seed: self.common.seed,
        };
        let w = WorkloadRun {
            workload,
            engines: EngineKind::parse_list(&self.engine)?,
            options,
            scale: self.data.scale,
            warehouses: self.data.warehouses,
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
        appendix: None,
    })?;
    let mut all = Vec::new();
    for w in &suite {
        all.extend(w.execute(&mut output)?);
    }
    output.finish()?;
    check_consistency(&all)
}

/// Settings of `shoal bench compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub common: CommonArgs,

    /// Engines to compare, comma-separated, or `all`; engines that are not installed are
    /// skipped with the command that installs them (peers/install.sh).
    #[arg(long, value_name = "LIST", default_value = "all")]
    pub engine: String,

    /// Durabilities to sweep, comma-separated: full, lazy.
    #[arg(long, value_name = "LIST", default_value = "lazy,full", value_delimiter = ',',
          value_parser = PossibleValuesParser::new(["full", "lazy"]))]
    pub durability: Vec<String>,

    /// Data sizes to sweep, comma-separated: memory, disk.
    #[arg(long, value_name = "LIST", default_value = "memory,disk", value_delimiter = ',',
          value_parser = PossibleValuesParser::new(["memory", "disk"]))]
    pub size: Vec<String>,

    #[command(flatten)]
    pub data: DataArgs,
}

/// Directory `shoal bench compare` writes its report to when `--out` is not given.
pub const COMPARE_REPORT_DIR: &str = "shoal-compare";

/// `shoal bench compare`: every installed engine on the issue-8 sweep, one report.
pub fn run_compare(args: &CompareArgs) -> shoal_bench::Result<()> {
    let mut settings = CompareSettings::issue_defaults();
    settings.engines = EngineKind::parse_list(&args.engine)?;
    settings.durabilities = args
        .durability
        .iter()
        .map(|d| Durability::parse(d))
        .collect::<shoal_bench::Result<_>>()?;
    settings.sizes = args
        .size
        .iter()
        .map(|s| DataSize::parse(s))
        .collect::<shoal_bench::Result<_>>()?;
    if let Some(t) = &args.common.threads {
        settings.run.threads = t.0.clone();
    }
    settings.run.warmup_s = args.common.warmup_s.0;
    settings.run.duration_s = args.common.duration_s.0;
    settings.latency_sample_every = args.common.latency_sample_every;
    settings.run.seed = args.common.seed;
    settings.scale = args.data.scale;
    settings.warehouses = args.data.warehouses;
    settings.db_dir = args.data.db_dir.clone();
    let plan = settings.plan()?;
    let engines = plan
        .first()
        .map(WorkloadRun::available_engines)
        .unwrap_or_default();
    let plan: Vec<WorkloadRun> = plan
        .into_iter()
        .map(|w| WorkloadRun {
            engines: engines.clone(),
            ..w
        })
        .collect();
    let points: usize = plan
        .iter()
        .map(|w| {
            let variants = if w.variants.is_empty() {
                w.workload.variants().len()
            } else {
                w.variants.len()
            };
            w.engines.len() * variants * w.run.threads.len()
        })
        .sum();
    let per_point = settings.run.warmup_s + settings.run.duration_s;
    eprintln!(
        "shoal bench compare: {} on {} workload runs, {points} points, at least {:.0} min \
         of measuring plus the loads",
        engines
            .iter()
            .map(|e| e.name())
            .collect::<Vec<_>>()
            .join(", "),
        plan.len(),
        points as f64 * per_point / 60.0
    );
    let mut opts = args.common.output_options();
    opts.out_dir = Some(
        opts.out_dir
            .unwrap_or_else(|| PathBuf::from(COMPARE_REPORT_DIR)),
    );
    opts.appendix = Some(targets_markdown);
    let mut output = Output::new(opts)?;
    let mut all = Vec::new();
    for w in &plan {
        all.extend(w.execute(&mut output)?);
    }
    output.finish()?;
    for t in targets(&all) {
        eprintln!(
            "target {}: {} (best peer {}, needs {:.1}) {}",
            t.what,
            t.ratio.map_or("n/a".into(), |r| format!("{r:.2}")),
            t.best_peer.as_deref().unwrap_or("none"),
            t.required,
            if t.met() { "met" } else { "NOT met" }
        );
    }
    check_consistency(&all)
}
