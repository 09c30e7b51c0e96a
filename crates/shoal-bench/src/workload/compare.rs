//! `shoal bench compare` (issue 8, deliverable 7): every installed engine on `select1`,
//! `tpcb`, `insert` and `tpcc`'s `payment` and `new-order` mixes, over a sweep of thread
//! counts, both data sizes and both durabilities, in one invocation — so that every ratio
//! of Shoal to a peer is measured on the same machine, one point after the other
//! (DESIGN.md §6) — and the issue's targets checked on the result.
//!
//! Order of the run: for each durability, each size, each workload, each variant, each
//! engine, each thread count ([`super::suite`]'s order). `insert` runs once per
//! durability: its tables start empty and grow, so the pool's size relative to the data is
//! not a setting of it.
//!
//! Targets ([`targets`]), with "the best peer" the fastest other engine at the same point:
//! 1. relaxed durability (`lazy`), 1 thread, data in memory: Shoal ≥ 3 × the best peer on
//!    `select1`, `tpcb` and `tpcc` (`payment`, `new-order`);
//! 2. full durability, 16 threads, data in memory: Shoal ≥ 3 × the best peer on `tpcb` and
//!    `tpcc`;
//! 3. Shoal's lead over the best peer does not shrink from 1 thread to 2, nor to 64.

use super::suite::{Workload, WorkloadRun};
use super::tpcc::TpccScale;
use super::{DataSize, Durability, EngineKind, WorkloadOptions};
use crate::error::{BenchError, Result};
use crate::measurement::Measurement;
use crate::report::label;
use crate::runner::RunConfig;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Thread counts of the issue's sweep.
pub const DEFAULT_THREADS: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];
/// Lead Shoal must have over the best peer at the target points.
pub const TARGET_RATIO: f64 = 3.0;

/// The settings of a comparison run.
#[derive(Clone, Debug)]
pub struct CompareSettings {
    /// Engines, in report order (ones not installed are skipped when the run starts).
    pub engines: Vec<EngineKind>,
    /// Durabilities, each a sweep of its own.
    pub durabilities: Vec<Durability>,
    /// Data sizes, each a sweep of its own (`insert` ignores them).
    pub sizes: Vec<DataSize>,
    /// Threads, durations and seed of every point; its `latency_sample_every` is replaced
    /// per workload by `latency_sample_every`.
    pub run: RunConfig,
    /// Transactions per timed one; `None`: each workload's own
    /// ([`Workload::latency_sample_every_default`]).
    pub latency_sample_every: Option<u32>,
    /// `select1` and `tpcb` scale.
    pub scale: u32,
    /// `tpcc` warehouses.
    pub warehouses: u32,
    /// `tpcc` sizes ([`TpccScale::full`] but in tests).
    pub tpcc_scale: TpccScale,
    /// Keep each engine's database in `db_dir/<engine>/`.
    pub db_dir: Option<PathBuf>,
    /// Report the loads' progress on standard error.
    pub progress: bool,
}

impl CompareSettings {
    /// The issue's defaults: every engine, `lazy` and `full`, `memory` and `disk`, threads
    /// 1 to 64, 1 s warm-up and 5 s per point, scale 1, 1 warehouse.
    pub fn issue_defaults() -> CompareSettings {
        CompareSettings {
            engines: EngineKind::ALL.to_vec(),
            durabilities: vec![Durability::Lazy, Durability::Full],
            sizes: vec![DataSize::Memory, DataSize::Disk],
            run: RunConfig {
                threads: DEFAULT_THREADS.to_vec(),
                ..RunConfig::default()
            },
            latency_sample_every: None,
            scale: 1,
            warehouses: 1,
            tpcc_scale: TpccScale::full(),
            db_dir: None,
            progress: true,
        }
    }

    /// The workload runs of the comparison, in run order (module doc).
    ///
    /// # Errors
    /// [`BenchError::InvalidArgument`] if a list is empty or a run's settings are bad.
    pub fn plan(&self) -> Result<Vec<WorkloadRun>> {
        if self.durabilities.is_empty() {
            return Err(BenchError::invalid("--durability", "no durability named"));
        }
        if self.sizes.is_empty() {
            return Err(BenchError::invalid("--size", "no size named"));
        }
        let mut out = Vec::new();
        for &durability in &self.durabilities {
            for (i, &size) in self.sizes.iter().enumerate() {
                let item = |workload: Workload, variants: &[&str]| WorkloadRun {
                    workload,
                    engines: self.engines.clone(),
                    options: WorkloadOptions {
                        engine: EngineKind::Shoal,
                        durability,
                        size,
                        pool_size_bytes: None,
                        db_dir: self.db_dir.clone(),
                        progress: self.progress,
                        log_lane_after_records: None,
                    },
                    scale: self.scale,
                    warehouses: self.warehouses,
                    tpcc_scale: self.tpcc_scale,
                    variants: variants.iter().map(|v| v.to_string()).collect(),
                    run: RunConfig {
                        latency_sample_every: self
                            .latency_sample_every
                            .unwrap_or(workload.latency_sample_every_default()),
                        ..self.run.clone()
                    },
                };
                out.push(item(Workload::Select1, &[]));
                out.push(item(Workload::Tpcb, &[]));
                if i == 0 {
                    out.push(item(Workload::Insert, &[]));
                }
                out.push(item(Workload::Tpcc, &["payment", "new-order"]));
            }
        }
        for w in &out {
            w.validate()?;
        }
        Ok(out)
    }
}

/// One target checked on a comparison's measurements.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetCheck {
    /// What is compared, e.g. `tpcb [lazy] at 1 thread(s)`.
    pub what: String,
    /// Shoal's throughput ÷ the best peer's (or the lead at more threads ÷ the lead at 1
    /// thread for target 3); `None` when a point is missing.
    pub ratio: Option<f64>,
    /// The best peer at the point, if any.
    pub best_peer: Option<String>,
    /// The ratio the target asks for.
    pub required: f64,
}

impl TargetCheck {
    /// Whether the target is met (a missing point is not).
    pub fn met(&self) -> bool {
        self.ratio.is_some_and(|r| r >= self.required)
    }
}

/// Shoal's throughput ÷ the best other engine's at the point (`bench`, labelled variant,
/// threads), with that engine's name.
pub fn lead(ms: &[Measurement], bench: &str, lbl: &str, threads: usize) -> Option<(f64, String)> {
    let at = |m: &&Measurement| m.bench == bench && label(m) == lbl && m.threads == threads;
    let shoal = ms.iter().filter(at).find(|m| m.engine == "shoal")?;
    let best = ms
        .iter()
        .filter(at)
        .filter(|m| m.engine != "shoal")
        .max_by(|a, b| a.ops_per_s.total_cmp(&b.ops_per_s))?;
    (best.ops_per_s > 0.0).then(|| (shoal.ops_per_s / best.ops_per_s, best.engine.clone()))
}

/// The issue's targets (module doc) checked on `ms`, for every labelled variant that the
/// run measured.
pub fn targets(ms: &[Measurement]) -> Vec<TargetCheck> {
    let mut series: Vec<(String, String)> = Vec::new();
    for m in ms {
        let s = (m.bench.clone(), label(m));
        if !series.contains(&s) {
            series.push(s);
        }
    }
    let mut out = Vec::new();
    let at = |bench: &str, lbl: &str, threads: usize, required: f64| {
        let l = lead(ms, bench, lbl, threads);
        TargetCheck {
            what: format!("{bench} {lbl} at {threads} thread(s)"),
            ratio: l.as_ref().map(|(r, _)| *r),
            best_peer: l.map(|(_, p)| p),
            required,
        }
    };
    for (bench, lbl) in &series {
        let relaxed = ["select1", "tpcb", "tpcc"].contains(&bench.as_str());
        if relaxed && lbl.ends_with("[lazy]") {
            out.push(at(bench, lbl, 1, TARGET_RATIO));
        }
        if ["tpcb", "tpcc"].contains(&bench.as_str()) && lbl.ends_with("[full]") {
            out.push(at(bench, lbl, 16, TARGET_RATIO));
        }
        if bench == "insert" {
            continue;
        }
        if let Some((base, _)) = lead(ms, bench, lbl, 1) {
            for threads in [2, 64] {
                let l = lead(ms, bench, lbl, threads);
                out.push(TargetCheck {
                    what: format!("{bench} {lbl}: lead at {threads} threads vs at 1"),
                    ratio: l.as_ref().map(|(r, _)| r / base),
                    best_peer: l.map(|(_, p)| p),
                    required: 1.0,
                });
            }
        }
    }
    out
}

/// The targets as a markdown section for `report.md`.
pub fn targets_markdown(ms: &[Measurement]) -> String {
    let mut md = String::from("## Targets of issue 8\n\n");
    md.push_str(
        "Shoal's throughput ÷ the fastest other engine's at the same point (for the lead \
         rows: Shoal's lead at that thread count ÷ its lead at 1 thread).\n\n\
         | target | ratio | best peer | required | met |\n|---|---:|---|---:|---|\n",
    );
    for t in targets(ms) {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.1} | {} |",
            t.what,
            t.ratio.map_or("n/a".into(), |r| format!("{r:.2}")),
            t.best_peer.as_deref().unwrap_or("none"),
            t.required,
            if t.met() { "yes" } else { "**no**" }
        );
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measurement::tests::sample;

    fn point(engine: &str, bench: &str, durability: &str, threads: usize, ops: f64) -> Measurement {
        let mut m = sample();
        m.engine = engine.into();
        m.bench = bench.into();
        m.variant = bench.into();
        m.threads = threads;
        m.ops_per_s = ops;
        m.config.insert("durability".into(), durability.into());
        m.config.insert("size".into(), "memory".into());
        m
    }

    #[test]
    fn the_plan_covers_the_issue_sweep() {
        let plan = CompareSettings::issue_defaults().plan().unwrap();
        // 2 durabilities x (2 sizes x (select1, tpcb, tpcc) + insert once).
        assert_eq!(plan.len(), 2 * (2 * 3 + 1));
        assert!(plan.iter().all(|w| w.run.threads == DEFAULT_THREADS));
        let tpcc = plan.iter().find(|w| w.workload == Workload::Tpcc).unwrap();
        assert_eq!(tpcc.variants, vec!["payment", "new-order"]);
        let mut s = CompareSettings::issue_defaults();
        s.sizes.clear();
        assert!(s.plan().unwrap_err().to_string().contains("--size"));
    }

    #[test]
    fn targets_compare_with_the_best_peer() {
        let ms = vec![
            point("shoal", "tpcb", "lazy", 1, 300.0),
            point("sqlite", "tpcb", "lazy", 1, 50.0),
            point("postgres", "tpcb", "lazy", 1, 120.0),
            point("shoal", "tpcb", "lazy", 2, 500.0),
            point("postgres", "tpcb", "lazy", 2, 100.0),
            point("shoal", "tpcb", "full", 16, 900.0),
            point("postgres", "tpcb", "full", 16, 200.0),
        ];
        let t = targets(&ms);
        let one = t
            .iter()
            .find(|t| t.what == "tpcb tpcb [lazy] at 1 thread(s)")
            .unwrap();
        assert_eq!(one.ratio, Some(2.5));
        assert_eq!(one.best_peer.as_deref(), Some("postgres"));
        assert!(!one.met());
        let full = t.iter().find(|t| t.what.contains("[full] at 16")).unwrap();
        assert_eq!(full.ratio, Some(4.5));
        assert!(full.met());
        let two = t.iter().find(|t| t.what.contains("lead at 2")).unwrap();
        assert_eq!(two.ratio, Some(2.0), "lead 5.0 at 2 threads vs 2.5 at 1");
        assert!(two.met());
        let sixty_four = t.iter().find(|t| t.what.contains("lead at 64")).unwrap();
        assert_eq!(sixty_four.ratio, None, "not measured");
        assert!(!sixty_four.met());
        let md = targets_markdown(&ms);
        assert!(
            md.contains("| tpcb tpcb [lazy] at 1 thread(s) | 2.50 | postgres | 3.0 | **no** |"),
            "{md}"
        );
    }
}
