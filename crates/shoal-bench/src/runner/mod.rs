//! # Runner: threads, phases, counting and timing
//!
//! Job: run one benchmark variant at one thread count and turn what happened into a
//! [`Measurement`]; [`run_micro`] does that for every variant × thread count of a
//! [`MicroBench`], setting each variant up once and reusing its state for all thread counts
//! (or, for a benchmark whose operations grow its state, once per point:
//! [`MicroBench::setup_per_point`]).
//!
//! ```text
//!  controller ──spawn──► worker 0..n-1: ThreadCtx, histogram, ─┐
//!      │                  prelude: PRELUDE_OPS ops (uncounted)  │
//!      ├── start gate: opened when every worker has arrived ◄───┘
//!      │   phase = WARMUP    workers: loop { op } (nothing counted)
//!      ├── sleep warmup_s
//!      │   phase = MEASURE   workers: loop { op; ops += 1; time 1 op in N }
//!      ├── sleep duration_s  (CPU time and engine counters read at both ends)
//!      │   phase = STOP      workers return counts and histograms
//!      └── join, merge ─► Measurement
//! ```
//!
//! Rules:
//! 1. Besides the engine, a worker touches shared state in two places only: one increment
//!    of the arrival counter at the start gate, and one relaxed load per operation of the
//!    phase word, a cache line of its own written three times per point. Operation counts,
//!    abort counts and the latency histogram are thread-local and merged after the join.
//! 2. Only operations that start in the MEASURE phase are counted. `duration_s` is the
//!    controller's time between setting MEASURE and setting STOP; an operation in flight at a
//!    phase change finishes on the side of the boundary it started on, an error of at most
//!    one operation per thread.
//! 3. An operation that returns an error stops the point at once (phase STOP) and the run
//!    returns that error; a panicking worker also sets STOP before it unwinds, so nobody
//!    waits for it. Result checks in operations are therefore errors, never panics.
//! 4. An operation that calls [`ThreadCtx::abort`] is not counted in `ops` and its latency is
//!    not recorded; it is counted under its cause in `aborts`.
//! 5. After the workers have joined, [`MicroBench::after_point`] may check the state the
//!    point left (and add derived values); its time is outside the measured time, so a
//!    check may be as thorough as a full integrity walk.
//! 6. Before it arrives at the start gate, every worker runs a few operations of its own
//!    (the prelude, `point::PRELUDE_OPS`), counted nowhere. They pay the thread's one-time
//!    start-up costs outside every clock: its allocator's first pages, which the kernel
//!    must zero on first touch. On the development VM a first touch zeroes about 200 MB/s
//!    (the pool's prefault of 1 GiB takes ~5 s), so 128 fresh threads spent ~0.6 s of both
//!    cores in `clear_page` well into a 3-second measured window before this rule, and
//!    `lookup-hot-root` at 128 threads measured that instead of oversubscription.
//!
//! ## Latency sampling
//!
//! Timing an operation costs two clock reads (`Instant::now` and `elapsed`, vDSO
//! `clock_gettime`) plus a histogram update. Measured on the development machine (a 2-vCPU
//! VM, release build) with an operation that only draws a random number (0.8 ns untimed):
//!
//! | timed | cost per operation, averaged |
//! |---|---|
//! | every operation | +54 ns (a clock-read pair alone: 49 ns) |
//! | one in 16 | +3.2 ns |
//! | one in 64 | +0.8 ns |
//!
//! So the runner times one operation in [`RunConfig::latency_sample_every`] and runs the
//! others untimed. A benchmark suggests its own value
//! ([`MicroBench::latency_sample_every_default`]): 1 for operations of microseconds or
//! more, where 54 ns is noise and every sample helps the p99; more for sub-microsecond
//! operations (`buffer` uses 64). Sampling is by count, not by time, so the sampled
//! operations are a uniform subsample; each sampled latency includes about one clock read
//! (~20-25 ns here: the p50 of the near-empty operation above reads 20 ns).
//!
//! What this deliberately does not do: pin threads to cores, or subtract the timer cost from
//! latencies.

use crate::error::{BenchError, Result};
use crate::measurement::Measurement;
use crate::sys;
use crossbeam_utils::CachePadded;
use hdrhistogram::Histogram;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

mod api;
mod point;
#[cfg(test)]
mod tests;

pub use api::{
    MicroBench, NoObserver, Observer, Phase, PointInfo, PointResult, PointSpec, RunConfig,
    ThreadCtx,
};
pub use point::measure_point;
use point::quantile_us;

/// One run per variant of `chosen`, in order: threads `threads` if given, else
/// `default_threads(variant)`; latency sampling `latency_sample_every` if given, else
/// `default_latency(variant)`; the other settings from `base`. The per-benchmark `plan`
/// functions choose and check the variants and call this.
pub fn runs_for(
    chosen: impl IntoIterator<Item = &'static str>,
    threads: Option<&[usize]>,
    latency_sample_every: Option<u32>,
    base: &RunConfig,
    default_threads: impl Fn(&str) -> &'static [usize],
    default_latency: impl Fn(&str) -> u32,
) -> Vec<(&'static str, RunConfig)> {
    chosen
        .into_iter()
        .map(|v| {
            let run = RunConfig {
                threads: threads.unwrap_or(default_threads(v)).to_vec(),
                latency_sample_every: latency_sample_every.unwrap_or_else(|| default_latency(v)),
                ..base.clone()
            };
            (v, run)
        })
        .collect()
}

/// Largest latency the histograms hold, in nanoseconds (100 s); longer ones are recorded as
/// this value.
const LATENCY_MAX_NS: u64 = 100_000_000_000;
/// Significant decimal digits kept by the latency histograms.
const LATENCY_SIGNIFICANT_DIGITS: u8 = 3;
/// Longest sleep of the controller between progress reports and checks for a failed worker.
const TICK: Duration = Duration::from_millis(100);

/// Labels what a point measured: computes the derived fields of a [`Measurement`] (all but
/// the benchmark's own [`Measurement::derived`], which [`run_micro`] adds).
pub fn to_measurement(
    bench: &str,
    engine: &str,
    variant: &str,
    threads: usize,
    r: PointResult,
    max_rss_bytes: Option<u64>,
    config: Map<String, Value>,
) -> Measurement {
    let ops = r.ops();
    let ops_per_s = if r.duration_s > 0.0 {
        ops as f64 / r.duration_s
    } else {
        0.0
    };
    let h = &r.latency_ns;
    Measurement {
        bench: bench.to_string(),
        engine: engine.to_string(),
        variant: variant.to_string(),
        threads,
        duration_s: r.duration_s,
        ops,
        ops_per_s,
        ops_per_s_per_thread: ops_per_s / threads as f64,
        p50_us: quantile_us(h, 0.50),
        p95_us: quantile_us(h, 0.95),
        p99_us: quantile_us(h, 0.99),
        max_us: (!h.is_empty()).then(|| h.max() as f64 / 1000.0),
        latency_samples: h.len(),
        cpu_s_per_op: r.cpu_s.filter(|_| ops > 0).map(|c| c / ops as f64),
        aborts: r.aborts,
        max_rss_bytes,
        engine_stats: r.counters,
        derived: Map::new(),
        ops_by_thread: r.ops_by_thread,
        config,
    }
}

/// Runs `variants` of `bench` (all of them if empty) at every thread count of `run`, in that
/// order (variant-major), telling `observer` about progress and each measurement as it is
/// made. Each variant is set up once, or once per point where
/// [`MicroBench::setup_per_point`] says so; a state is dropped before the next setup.
///
/// # Errors
/// A bad setting or unknown variant ([`BenchError::InvalidArgument`]), a setup error, an
/// operation's error, or an observer's error; the run stops at the first.
pub fn run_micro<B: MicroBench>(
    bench: &B,
    variants: &[String],
    run: &RunConfig,
    observer: &mut dyn Observer,
) -> Result<Vec<Measurement>> {
    run.validate()?;
    let known = bench.variants();
    let chosen: Vec<&str> = if variants.is_empty() {
        known.to_vec()
    } else {
        variants
            .iter()
            .map(|v| {
                known.iter().copied().find(|k| k == v).ok_or_else(|| {
                    BenchError::invalid(
                        "variant",
                        format!(
                            "`{v}` is not a variant of `{}`; choose from {}",
                            bench.name(),
                            known.join(", ")
                        ),
                    )
                })
            })
            .collect::<Result<_>>()?
    };

    // The machine probe runs once per process, before any engine is set up (so that no
    // engine thread disturbs it).
    let latency = crate::probe::memory_latency().to_json();
    let total = chosen.len() * run.threads.len();
    let mut out = Vec::with_capacity(total);
    for (vi, variant) in chosen.iter().enumerate() {
        let per_point = bench.setup_per_point(variant);
        let mut set_up: Option<(B::State, Map<String, Value>)> = None;
        for (ti, &threads) in run.threads.iter().enumerate() {
            if per_point || set_up.is_none() {
                // The previous point's state goes first, so that two never hold memory at once.
                drop(set_up.take());
                let scope = match per_point {
                    true => RunConfig {
                        threads: vec![threads],
                        ..run.clone()
                    },
                    false => run.clone(),
                };
                set_up = Some(setup_variant(
                    bench, variant, run, &scope, &latency, observer,
                )?);
            }
            let (state, config) = set_up.as_ref().expect("set up just above");
            let info = PointInfo {
                bench: bench.name(),
                variant,
                engine: bench.variant_engine(variant),
                threads,
                index: vi * run.threads.len() + ti,
                total,
                warmup_s: run.warmup_s,
                duration_s: run.duration_s,
            };
            observer.point_started(&info);
            let spec = PointSpec {
                threads,
                warmup_s: run.warmup_s,
                duration_s: run.duration_s,
                latency_sample_every: run.latency_sample_every,
                seed: run.seed,
            };
            let r = measure_point(&spec, state, B::op, B::counters, &mut |phase, el| {
                observer.point_progress(&info, phase, el)
            })?;
            let mut m = to_measurement(
                bench.name(),
                bench.variant_engine(variant),
                variant,
                threads,
                r,
                sys::max_rss_bytes(),
                config.clone(),
            );
            m.derived = B::derived(variant, &m.engine_stats, m.ops);
            m.derived.extend(B::after_point(state)?);
            observer.point_finished(&info, &m)?;
            out.push(m);
        }
    }
    Ok(out)
}

/// Sets `variant` up for the points of `scope` (`run`, or `run` with one thread count for
/// a benchmark set up per point), telling `observer`; returns the state and the `config`
/// every measurement of it carries (`run`'s settings, the machine's `latency` probe, the
/// benchmark's settings and its description of the state).
///
/// # Errors
/// The benchmark's setup errors.
fn setup_variant<B: MicroBench>(
    bench: &B,
    variant: &str,
    run: &RunConfig,
    scope: &RunConfig,
    latency: &Value,
    observer: &mut dyn Observer,
) -> Result<(B::State, Map<String, Value>)> {
    let rss_reset = sys::reset_peak_rss();
    observer.setup_started(bench.name(), variant);
    let setup_start = Instant::now();
    let state = bench.setup(variant, scope)?;
    let setup_s = setup_start.elapsed().as_secs_f64();
    observer.setup_finished(bench.name(), variant, setup_s);
    let mut config = run.to_json();
    config.insert("host_cpus".into(), Value::from(sys::available_cpus()));
    config.insert("memory_latency_ns".into(), latency.clone());
    let rss_scope = match (rss_reset, bench.setup_per_point(variant)) {
        (false, _) => "process",
        (true, false) => "variant",
        (true, true) => "point",
    };
    config.insert("max_rss_scope".into(), Value::from(rss_scope));
    config.insert("setup_s".into(), Value::from(setup_s));
    config.extend(bench.config());
    config.extend(B::describe(&state));
    Ok((state, config))
}
