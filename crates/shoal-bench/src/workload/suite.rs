//! Running a workload on several engines in one invocation, and the default suite that
//! `shoal bench` runs with no arguments.
//!
//! Order of a run: for each variant, each engine in the order given, each thread count —
//! so the points a ratio compares (Shoal vs SQLite, 2 threads vs 1) are measured one after
//! the other on the same machine (DESIGN.md §6). Each engine's database is set up (loaded)
//! once per variant and dropped before the next engine's, so only one is in memory.

use super::insert::Insert;
use super::peers;
use super::peers::external::{run_derby, ExternalRun};
use super::select1::Select1;
use super::tpcb::Tpcb;
use super::tpcc::{Tpcc, TpccScale, MAX_WAREHOUSES};
use super::{Durability, EngineKind, WorkloadOptions};
use crate::error::{BenchError, Result};
use crate::measurement::Measurement;
use crate::runner::{run_micro, Observer, RunConfig};

/// The workloads of DESIGN.md §4.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Seed 000's single-row select.
    Select1,
    /// pgbench's TPC-B-like transaction.
    Tpcb,
    /// Seed 001's private-table insert micro-benchmark.
    Insert,
    /// TPC-C's five transactions on its nine tables.
    Tpcc,
}

impl Workload {
    /// The workload's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Select1 => "select1",
            Workload::Tpcb => "tpcb",
            Workload::Insert => "insert",
            Workload::Tpcc => "tpcc",
        }
    }

    /// The workload's variants, in the order they run by default.
    pub fn variants(self) -> &'static [&'static str] {
        match self {
            Workload::Select1 => &["select1"],
            Workload::Tpcb => &["tpcb"],
            Workload::Insert => &["insert"],
            Workload::Tpcc => &["standard", "payment", "new-order"],
        }
    }

    /// How many transactions per timed one the runner uses when `--latency-sample-every`
    /// is not given ([`RunConfig::latency_sample_every`], runner module doc): 16 for
    /// `select1`, whose transaction takes under a microsecond on Shoal, so that timing every
    /// one (about 54 ns of clock reads here) would be a twentieth of what is measured; 1 for
    /// the others (microseconds and up, where every sample helps the p99).
    pub fn latency_sample_every_default(self) -> u32 {
        match self {
            Workload::Select1 => 16,
            Workload::Tpcb | Workload::Insert | Workload::Tpcc => 1,
        }
    }
}

/// One workload to run on a list of engines.
#[derive(Clone, Debug)]
pub struct WorkloadRun {
    /// Which workload.
    pub workload: Workload,
    /// Engines, run one after the other for each variant.
    pub engines: Vec<EngineKind>,
    /// Settings shared by every engine (its `engine` field is replaced per engine).
    pub options: WorkloadOptions,
    /// `select1` and `tpcb` scale: hundreds of thousands of rows / branches.
    pub scale: u32,
    /// `tpcc` warehouses (at least 1).
    pub warehouses: u32,
    /// `tpcc` population sizes ([`TpccScale::full`] but in tests).
    pub tpcc_scale: TpccScale,
    /// Variants to run; empty: all.
    pub variants: Vec<String>,
    /// Threads, durations and seed.
    pub run: RunConfig,
}

impl WorkloadRun {
    /// Checks the settings before any time is spent.
    ///
    /// # Errors
    /// [`BenchError::InvalidArgument`] for an empty engine list, a scale of 0, an unknown
    /// variant or a bad [`RunConfig`].
    pub fn validate(&self) -> Result<()> {
        self.run.validate()?;
        if self.engines.is_empty() {
            return Err(BenchError::invalid("--engine", "no engine named"));
        }
        if self.scale == 0 {
            return Err(BenchError::invalid("--scale", "must be at least 1"));
        }
        if !(1..=MAX_WAREHOUSES).contains(&self.warehouses) {
            return Err(BenchError::invalid(
                "--warehouses",
                format!("{} is not in 1..={MAX_WAREHOUSES}", self.warehouses),
            ));
        }
        self.tpcc_scale.validate()?;
        let known = self.workload.variants();
        if let Some(v) = self.variants.iter().find(|v| !known.contains(&v.as_str())) {
            return Err(BenchError::invalid(
                "--variant",
                format!(
                    "`{v}` is not a variant of {}; choose from {}",
                    self.workload.name(),
                    known.join(", ")
                ),
            ));
        }
        Ok(())
    }

    /// Runs every variant on every engine that can run here (module doc; the others are
    /// skipped, see [`WorkloadRun::available_engines`]), telling `observer` about each
    /// point; returns the measurements in run order.
    ///
    /// # Errors
    /// [`BenchError::InvalidArgument`] if no engine of the run can run here; the first
    /// setup, operation or observer error.
    pub fn execute(&self, observer: &mut dyn Observer) -> Result<Vec<Measurement>> {
        self.validate()?;
        let variants: Vec<String> = if self.variants.is_empty() {
            self.workload
                .variants()
                .iter()
                .map(|v| v.to_string())
                .collect()
        } else {
            self.variants.clone()
        };
        let engines = self.available_engines();
        if engines.is_empty() {
            return Err(BenchError::invalid(
                "--engine",
                "none of the engines named can run here (see the lines above)",
            ));
        }
        let mut out = Vec::new();
        for v in &variants {
            for &engine in &engines {
                let opts = WorkloadOptions {
                    engine,
                    ..self.options.clone()
                };
                if engine.is_external() {
                    let run = ExternalRun {
                        workload: self.workload.name(),
                        variant: v,
                        scale: self.scale,
                        warehouses: self.warehouses,
                        tpcc_scale: self.tpcc_scale,
                        pool_bytes: self.pool_bytes(&opts),
                        rows_per_scale: None,
                    };
                    out.extend(run_derby(engine, &run, &opts, &self.run, observer)?);
                    continue;
                }
                let one = std::slice::from_ref(v);
                out.extend(match self.workload {
                    Workload::Select1 => run_micro(
                        &Select1 {
                            opts,
                            scale: self.scale,
                        },
                        one,
                        &self.run,
                        observer,
                    )?,
                    Workload::Tpcb => run_micro(
                        &Tpcb {
                            opts,
                            scale: self.scale,
                        },
                        one,
                        &self.run,
                        observer,
                    )?,
                    Workload::Insert => run_micro(&Insert { opts }, one, &self.run, observer)?,
                    Workload::Tpcc => run_micro(
                        &Tpcc {
                            opts,
                            warehouses: self.warehouses,
                            scale: self.tpcc_scale,
                        },
                        one,
                        &self.run,
                        observer,
                    )?,
                });
            }
        }
        Ok(out)
    }
}

impl WorkloadRun {
    /// The engines of the run that can run here; each one that cannot is named on standard
    /// error (`skipping <engine>: <reason>`) with how to install it (issue 8: a missing
    /// peer is skipped, not fatal).
    pub fn available_engines(&self) -> Vec<EngineKind> {
        self.engines
            .iter()
            .copied()
            .filter(|&e| match peers::availability(e) {
                Ok(()) => true,
                Err(why) => {
                    eprintln!("skipping {why}");
                    false
                }
            })
            .collect()
    }

    /// The pool size in bytes the workload gives every engine with `opts`. For `insert`,
    /// the pool of its largest point: the in-process engines are set up again for every
    /// point with a pool for that point (`Insert::pool_bytes`), the Derby harness once.
    fn pool_bytes(&self, opts: &WorkloadOptions) -> u64 {
        let opts = opts.clone();
        match self.workload {
            Workload::Select1 => Select1 {
                opts,
                scale: self.scale,
            }
            .pool_bytes(),
            Workload::Tpcb => Tpcb {
                opts,
                scale: self.scale,
            }
            .pool_bytes(),
            Workload::Insert => Insert { opts }.pool_bytes(&self.run),
            Workload::Tpcc => Tpcc {
                opts,
                warehouses: self.warehouses,
                scale: self.tpcc_scale,
            }
            .pool_bytes(),
        }
    }
}

/// The points whose consistency check failed, as `bench/variant engine threads: reason`.
pub fn consistency_failures(ms: &[Measurement]) -> Vec<String> {
    ms.iter()
        .filter_map(|m| {
            let c = m.derived.get("consistency")?.as_str()?;
            (c != "pass").then(|| {
                format!(
                    "{} {} {} at {} threads: {c}",
                    m.bench, m.variant, m.engine, m.threads
                )
            })
        })
        .collect()
}

/// Directory `shoal bench` (no arguments) writes its report to, relative to the current
/// directory.
pub const DEFAULT_REPORT_DIR: &str = "shoal-report";

/// The default suite: every workload on Shoal and SQLite at 1 and 2 threads, short points,
/// small data, `lazy` durability (CPU-bound comparisons), plus `tpcb` with `full`
/// durability at 1 to 8 threads (group commit); `tpcc` runs its `standard` mix on 1
/// warehouse at the spec's cardinalities. About 65 s in a release build on 2 cores (the
/// TPC-C loads, about 4 s on Shoal and 2 s on SQLite, are most of `tpcc`'s share).
pub fn default_suite(progress: bool) -> Vec<WorkloadRun> {
    let run = RunConfig {
        threads: vec![1, 2],
        warmup_s: 0.5,
        duration_s: 2.0,
        ..RunConfig::default()
    };
    let mut options = WorkloadOptions::new(EngineKind::Shoal);
    options.progress = progress;
    let engines = EngineKind::EMBEDDED.to_vec();
    let item = |workload, durability, threads: &[usize]| WorkloadRun {
        workload,
        engines: engines.clone(),
        options: WorkloadOptions {
            durability,
            ..options.clone()
        },
        scale: 1,
        warehouses: 1,
        tpcc_scale: TpccScale::full(),
        variants: Vec::new(),
        run: RunConfig {
            threads: threads.to_vec(),
            latency_sample_every: workload.latency_sample_every_default(),
            ..run.clone()
        },
    };
    vec![
        item(Workload::Select1, Durability::Lazy, &[1, 2]),
        item(Workload::Tpcb, Durability::Lazy, &[1, 2]),
        item(Workload::Tpcb, Durability::Full, &[1, 8]),
        item(Workload::Insert, Durability::Lazy, &[1, 2]),
        WorkloadRun {
            variants: vec!["standard".into()],
            ..item(Workload::Tpcc, Durability::Lazy, &[1, 2])
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::NoObserver;

    #[test]
    fn every_workload_runs_on_both_engines_and_passes_its_check() {
        for workload in [
            Workload::Select1,
            Workload::Tpcb,
            Workload::Insert,
            Workload::Tpcc,
        ] {
            let mut options = WorkloadOptions::new(EngineKind::Shoal);
            options.progress = false;
            let w = WorkloadRun {
                workload,
                engines: EngineKind::EMBEDDED.to_vec(),
                options,
                scale: 1,
                warehouses: 1,
                tpcc_scale: TpccScale::tiny(),
                variants: if workload == Workload::Tpcc {
                    vec!["standard".into()]
                } else {
                    Vec::new()
                },
                run: RunConfig {
                    threads: vec![1, 2],
                    warmup_s: 0.0,
                    duration_s: 0.3,
                    ..RunConfig::default()
                },
            };
            let ms = w.execute(&mut NoObserver).unwrap();
            assert_eq!(ms.len(), 4, "{workload:?}: 2 engines x 2 thread counts");
            assert_eq!(ms[0].engine, "shoal");
            assert_eq!(ms[3].engine, "sqlite");
            assert!(ms.iter().all(|m| m.ops > 0), "{workload:?}");
            assert_eq!(consistency_failures(&ms), Vec::<String>::new());
        }
    }

    #[test]
    fn bad_settings_are_named() {
        let mut w = default_suite(false).remove(0);
        w.variants = vec!["nope".into()];
        assert!(w.validate().unwrap_err().to_string().contains("--variant"));
        w.variants.clear();
        w.engines.clear();
        assert!(w.validate().unwrap_err().to_string().contains("--engine"));
    }
}
