//! External peers: Apache Derby, embedded and network server, measured by the Java harness
//! in `peers/derby/` (built by `peers/install.sh` into [`DERBY_JAR`]).
//!
//! Protocol: the harness is started once per workload variant with the run's settings as
//! flags (see `peers/derby/README.md`); it creates and loads its database in the directory
//! it is given, measures each thread count in order (warm-up, measured interval,
//! consistency check) and prints one JSON line per point on standard output — the fields of
//! [`Measurement`], `consistency` among the derived ones. Its standard error (progress,
//! messages) is passed through to ours; the last lines are kept for the error report if it
//! exits non-zero. A line that is not a measurement of the engine and workload asked for
//! stops the run with [`BenchError::Peer`].

use super::super::dbdir::DbDir;
use super::super::tpcc::TpccScale;
use super::super::{EngineKind, WorkloadOptions};
use crate::error::{BenchError, Result};
use crate::measurement::Measurement;
use crate::runner::{Observer, PointInfo, RunConfig};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

/// The Derby harness's jar, relative to the repository root.
pub const DERBY_JAR: &str = "peers/derby/target/shoal-derby-peer.jar";
/// Environment variable that overrides where the jar is.
pub const DERBY_JAR_ENV: &str = "SHOAL_DERBY_JAR";
/// Lines of the harness's standard error kept for an error report.
const STDERR_TAIL: usize = 20;

/// Where the Derby harness's jar is: `$SHOAL_DERBY_JAR`, else [`DERBY_JAR`] under the
/// repository this crate was built from.
pub fn derby_jar() -> PathBuf {
    match std::env::var_os(DERBY_JAR_ENV) {
        Some(p) => PathBuf::from(p),
        None => {
            let crate_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
            // crates/shoal-bench -> the repository root.
            let root = crate_dir
                .parent()
                .and_then(|p| p.parent())
                .unwrap_or(crate_dir);
            root.join(DERBY_JAR)
        }
    }
}

/// Whether `program` is an executable file on `$PATH`.
pub fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
        .unwrap_or(false)
}

/// Whether Derby can run: `java` on `$PATH` and the harness's jar built.
///
/// # Errors
/// A one-line reason with the install command (without the engine name, which
/// [`super::availability`] adds).
pub fn availability() -> std::result::Result<(), String> {
    availability_with(&derby_jar())
}

/// [`availability`] with the jar at `jar`.
fn availability_with(jar: &std::path::Path) -> std::result::Result<(), String> {
    if !on_path("java") {
        return Err("`java` is not on PATH; run peers/install.sh".to_string());
    }
    if !jar.is_file() {
        return Err(format!(
            "the Derby harness {} is not built; run peers/install.sh",
            jar.display()
        ));
    }
    Ok(())
}

/// What a Derby run measures: a workload's variant at its sizes.
#[derive(Clone, Debug)]
pub struct ExternalRun<'a> {
    /// Workload name (`select1`, `tpcb`, `insert`, `tpcc`).
    pub workload: &'static str,
    /// The variant.
    pub variant: &'a str,
    /// `select1` / `tpcb` scale.
    pub scale: u32,
    /// `tpcc` warehouses.
    pub warehouses: u32,
    /// `tpcc` sizes: [`TpccScale::full`] or [`TpccScale::tiny`].
    pub tpcc_scale: TpccScale,
    /// Page cache in bytes (Shoal's pool for the same run).
    pub pool_bytes: u64,
    /// `select1` rows and `tpcb` accounts per unit of `scale`; `None`: the workloads' own
    /// (100,000). Tests shrink it.
    pub rows_per_scale: Option<u64>,
}

/// The harness's exit status when every point ran and printed its line but a consistency
/// check failed: the lines say which, and the run reports them like any other point's.
pub const EXIT_CONSISTENCY_FAILED: i32 = 3;

/// Runs `run` on Derby `kind` with `opts` and `cfg`, telling `observer` about each point as
/// its line arrives; returns the measurements.
///
/// # Errors
/// [`BenchError::InvalidArgument`] for a TPC-C scale the harness does not know;
/// [`BenchError::Peer`] if the harness cannot start, prints a line that is not a
/// measurement of this run, or exits non-zero (with the end of its standard error) other
/// than [`EXIT_CONSISTENCY_FAILED`];
/// directory errors of [`DbDir`]; the observer's errors.
pub fn run_derby(
    kind: EngineKind,
    run: &ExternalRun<'_>,
    opts: &WorkloadOptions,
    cfg: &RunConfig,
    observer: &mut dyn Observer,
) -> Result<Vec<Measurement>> {
    let engine = kind.name();
    let mode = match kind {
        EngineKind::DerbyEmbedded => "embedded",
        EngineKind::DerbyNetwork => "network",
        other => {
            return Err(BenchError::invalid(
                "--engine",
                format!("{} is not run by the Derby harness", other.name()),
            ))
        }
    };
    let tpcc_scale = if run.tpcc_scale == TpccScale::full() {
        "full"
    } else if run.tpcc_scale == TpccScale::tiny() {
        "tiny"
    } else {
        return Err(BenchError::invalid(
            "tpcc scale",
            format!(
                "{:?}: the Derby harness knows only full and tiny",
                run.tpcc_scale
            ),
        ));
    };
    let dir = DbDir::new(opts.db_dir.as_deref(), engine)?;
    let threads: Vec<String> = cfg.threads.iter().map(usize::to_string).collect();
    let jar = derby_jar();
    let mut cmd = Command::new("java");
    cmd.arg("-jar").arg(&jar);
    cmd.args([
        "--mode",
        mode,
        "--workload",
        run.workload,
        "--variant",
        run.variant,
    ]);
    cmd.args(["--threads", &threads.join(",")]);
    cmd.args(["--warmup-s", &cfg.warmup_s.to_string()]);
    cmd.args(["--duration-s", &cfg.duration_s.to_string()]);
    cmd.args(["--seed", &cfg.seed.to_string()]);
    cmd.args(["--durability", opts.durability.name()]);
    cmd.args(["--pool-bytes", &run.pool_bytes.to_string()]);
    cmd.args(["--scale", &run.scale.to_string()]);
    cmd.args(["--warehouses", &run.warehouses.to_string()]);
    cmd.args(["--tpcc-scale", tpcc_scale]);
    if let Some(n) = run.rows_per_scale {
        cmd.args(["--rows-per-scale", &n.to_string()]);
    }
    cmd.arg("--db-dir").arg(dir.path());
    if !opts.progress {
        cmd.arg("--quiet");
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());

    observer.setup_started(run.workload, run.variant);
    let started = std::time::Instant::now();
    let mut child = cmd.spawn().map_err(|e| {
        BenchError::peer(engine, format!("starting java -jar {}", jar.display()), e)
    })?;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(BenchError::peer(engine, "starting the harness", "no pipes"));
    };
    // The harness's standard error goes to ours as it comes; the tail is kept.
    let tail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL)));
    let tail_w = Arc::clone(&tail);
    let echo = opts.progress;
    let forward = std::thread::spawn(move || {
        for line in BufReader::new(stderr)
            .lines()
            .map_while(std::io::Result::ok)
        {
            if echo {
                eprintln!("{line}");
            }
            if let Ok(mut t) = tail_w.lock() {
                if t.len() == STDERR_TAIL {
                    t.pop_front();
                }
                t.push_back(line);
            }
        }
    });

    let mut out = Vec::new();
    let mut failure = None;
    for (index, line) in BufReader::new(stdout).lines().enumerate() {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                failure = Some(BenchError::peer(engine, "reading the harness's output", e));
                break;
            }
        };
        if index == 0 {
            observer.setup_finished(run.workload, run.variant, started.elapsed().as_secs_f64());
        }
        let mut m = match parse_line(&line, engine, run) {
            Ok(m) => m,
            Err(e) => {
                failure = Some(e);
                break;
            }
        };
        // The run's settings that the harness does not know of label the point as they
        // label the other engines' (e.g. `tpcb [lazy, disk]`); the harness's own win.
        for (k, v) in opts.to_json(run.pool_bytes) {
            m.config.entry(k).or_insert(v);
        }
        let info = PointInfo {
            bench: run.workload,
            variant: run.variant,
            engine,
            threads: m.threads,
            index,
            total: cfg.threads.len(),
            warmup_s: cfg.warmup_s,
            duration_s: cfg.duration_s,
        };
        observer.point_started(&info);
        if let Err(e) = observer.point_finished(&info, &m) {
            failure = Some(e);
            break;
        }
        out.push(m);
    }
    if failure.is_some() {
        let _ = child.kill();
    }
    let status = child
        .wait()
        .map_err(|e| BenchError::peer(engine, "waiting for the harness", e))?;
    let _ = forward.join();
    if let Some(e) = failure {
        return Err(e);
    }
    if !status.success() && status.code() != Some(EXIT_CONSISTENCY_FAILED) {
        let tail: Vec<String> = tail
            .lock()
            .map(|t| t.iter().cloned().collect())
            .unwrap_or_default();
        return Err(BenchError::peer(
            engine,
            format!("the harness exited with {status}"),
            tail.join(" | "),
        ));
    }
    if out.len() != cfg.threads.len() {
        return Err(BenchError::peer(
            engine,
            "the harness's output",
            format!(
                "{} points for {} thread counts",
                out.len(),
                cfg.threads.len()
            ),
        ));
    }
    Ok(out)
}

/// One line of the harness's output as a measurement of `run` on `engine`.
fn parse_line(line: &str, engine: &'static str, run: &ExternalRun<'_>) -> Result<Measurement> {
    let m: Measurement = serde_json::from_str(line).map_err(|e| {
        BenchError::peer(
            engine,
            "a line of the harness's output",
            format!("{e}: {line}"),
        )
    })?;
    if m.engine != engine || m.bench != run.workload || m.variant != run.variant {
        return Err(BenchError::peer(
            engine,
            "a line of the harness's output",
            format!(
                "a point of {} {} {} where {engine} {} {} was asked for",
                m.engine, m.bench, m.variant, run.workload, run.variant
            ),
        ));
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measurement::tests::sample;

    fn tpcb_run() -> ExternalRun<'static> {
        ExternalRun {
            workload: "tpcb",
            variant: "tpcb",
            scale: 1,
            warehouses: 1,
            tpcc_scale: TpccScale::full(),
            pool_bytes: 8 << 20,
            rows_per_scale: None,
        }
    }

    #[test]
    fn lines_must_be_measurements_of_the_run() {
        let mut m = sample();
        m.engine = "derby-embedded".into();
        m.bench = "tpcb".into();
        m.variant = "tpcb".into();
        let line = m.to_json_line();
        assert_eq!(parse_line(&line, "derby-embedded", &tpcb_run()).unwrap(), m);
        let e = parse_line(&line, "derby-network", &tpcb_run()).unwrap_err();
        assert!(e.to_string().contains("was asked for"), "{e}");
        let e = parse_line("loading 10%", "derby-embedded", &tpcb_run()).unwrap_err();
        assert!(e.to_string().contains("loading 10%"), "{e}");
    }

    #[test]
    fn a_missing_jar_is_named_with_the_install_command() {
        let jar = std::path::Path::new("/nonexistent/shoal-derby-peer.jar");
        let r = availability_with(jar);
        if on_path("java") {
            let e = r.unwrap_err();
            assert!(
                e.contains("/nonexistent") && e.contains("peers/install.sh"),
                "{e}"
            );
        } else {
            assert!(r.unwrap_err().contains("java"));
        }
    }
}

/// Smoke tests of the Derby harness through this protocol; they run where the harness is
/// built (`peers/install.sh derby`, as CI does) and print why they skip elsewhere.
#[cfg(test)]
mod smoke {
    use super::*;
    use crate::runner::NoObserver;
    use crate::workload::suite::consistency_failures;

    fn run(kind: EngineKind, workload: &'static str, variant: &'static str) {
        if let Err(why) = availability() {
            eprintln!("skipped: {why}");
            return;
        }
        let mut opts = WorkloadOptions::new(kind);
        opts.progress = false;
        let cfg = RunConfig {
            threads: vec![1, 2],
            warmup_s: 0.1,
            duration_s: 0.5,
            ..RunConfig::default()
        };
        let r = ExternalRun {
            workload,
            variant,
            scale: 1,
            warehouses: 1,
            tpcc_scale: TpccScale::tiny(),
            pool_bytes: 16 << 20,
            rows_per_scale: Some(2_000),
        };
        let ms = run_derby(kind, &r, &opts, &cfg, &mut NoObserver).unwrap();
        assert_eq!(ms.len(), 2);
        assert!(ms.iter().all(|m| m.ops > 0), "{ms:?}");
        assert_eq!(ms[1].threads, 2);
        assert_eq!(consistency_failures(&ms), Vec::<String>::new());
        // Labelled like every other engine's points of the same settings.
        assert_eq!(ms[0].config["size"], "memory");
        assert_eq!(crate::report::label(&ms[0]), format!("{variant} [lazy]"));
    }

    #[test]
    fn derby_embedded_runs_tpcc_consistently() {
        run(EngineKind::DerbyEmbedded, "tpcc", "standard");
    }

    #[test]
    fn derby_network_runs_tpcb_consistently() {
        run(EngineKind::DerbyNetwork, "tpcb", "tpcb");
    }
}
