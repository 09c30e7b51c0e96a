//! # Runner: threads, phases, counting and timing
//!
//! Job: run one benchmark variant at one thread count and turn what happened into a
//! [`Measurement`]; [`run_micro`] does that for every variant × thread count of a
//! [`MicroBench`], setting each variant up once and reusing its state for all thread counts.
//!
//! ```text
//!  controller ──spawn──► worker 0..n-1: ThreadCtx, histogram ─┐
//!      │                                                      │
//!      ├── start gate: opened when every worker has arrived ◄──┘
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

/// Largest latency the histograms hold, in nanoseconds (100 s); longer ones are recorded as
/// this value.
const LATENCY_MAX_NS: u64 = 100_000_000_000;
/// Significant decimal digits kept by the latency histograms.
const LATENCY_SIGNIFICANT_DIGITS: u8 = 3;
/// Longest sleep of the controller between progress reports and checks for a failed worker.
const TICK: Duration = Duration::from_millis(100);

/// Settings shared by every point of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunConfig {
    /// Thread counts to measure, in this order.
    pub threads: Vec<usize>,
    /// Warm-up time before each point in seconds (operations run but are not counted).
    pub warmup_s: f64,
    /// Measured time of each point in seconds.
    pub duration_s: f64,
    /// Time one operation in this many (1 = every operation); see "Latency sampling" in the
    /// module doc.
    pub latency_sample_every: u32,
    /// Seed of the per-thread random number generators (thread `i` derives its own).
    pub seed: u64,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            threads: vec![1, 2],
            warmup_s: 1.0,
            duration_s: 5.0,
            latency_sample_every: 1,
            seed: 42,
        }
    }
}

impl RunConfig {
    /// Checks every setting.
    ///
    /// # Errors
    /// [`BenchError::InvalidArgument`] naming the first bad setting.
    pub fn validate(&self) -> Result<()> {
        if self.threads.is_empty() {
            return Err(BenchError::invalid("threads", "the thread list is empty"));
        }
        if let Some(&n) = self.threads.iter().find(|&&n| n == 0) {
            return Err(BenchError::invalid(
                "threads",
                format!("thread count {n} is not at least 1"),
            ));
        }
        if !(self.duration_s.is_finite() && self.duration_s > 0.0) {
            return Err(BenchError::invalid(
                "duration_s",
                format!("{} is not a positive number of seconds", self.duration_s),
            ));
        }
        if !(self.warmup_s.is_finite() && self.warmup_s >= 0.0) {
            return Err(BenchError::invalid(
                "warmup_s",
                format!("{} is not a number of seconds >= 0", self.warmup_s),
            ));
        }
        if self.latency_sample_every == 0 {
            return Err(BenchError::invalid(
                "latency_sample_every",
                "must be at least 1",
            ));
        }
        Ok(())
    }

    /// The settings as JSON fields for a measurement's `config`.
    pub fn to_json(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("threads_list".into(), Value::from(self.threads.clone()));
        m.insert("warmup_s".into(), Value::from(self.warmup_s));
        m.insert("duration_s_requested".into(), Value::from(self.duration_s));
        m.insert(
            "latency_sample_every".into(),
            Value::from(self.latency_sample_every),
        );
        m.insert("seed".into(), Value::from(self.seed));
        m
    }
}

/// Per-thread context handed to every operation: a random number generator and the abort
/// counters.
pub struct ThreadCtx {
    /// Fast per-thread generator, seeded from [`RunConfig::seed`] and the thread index, so a
    /// run is repeatable in what each thread asks for (not in how threads interleave).
    pub rng: SmallRng,
    thread_idx: usize,
    aborted: bool,
    aborts: BTreeMap<&'static str, u64>,
}

impl ThreadCtx {
    /// A context for worker `thread_idx` of a run with seed `seed`.
    pub fn new(seed: u64, thread_idx: usize) -> ThreadCtx {
        // Spread the thread index over all bits (multiplier: 2^64 / golden ratio) so that
        // neighbouring threads get unrelated streams.
        let mixed = seed ^ (thread_idx as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ThreadCtx {
            rng: SmallRng::seed_from_u64(mixed),
            thread_idx,
            aborted: false,
            aborts: BTreeMap::new(),
        }
    }

    /// Index of this worker thread, from 0.
    pub fn thread_idx(&self) -> usize {
        self.thread_idx
    }

    /// Marks the current operation as aborted with `cause` (e.g. `"deadlock"`): it is not
    /// counted as completed and its latency is not recorded (runner rule 4).
    pub fn abort(&mut self, cause: &'static str) {
        self.aborted = true;
        *self.aborts.entry(cause).or_insert(0) += 1;
    }

    /// Whether the operation that just ran aborted; clears the mark.
    #[inline]
    fn take_aborted(&mut self) -> bool {
        std::mem::take(&mut self.aborted)
    }
}

/// A micro-benchmark: a name, its variants, a setup that builds the data a variant works on,
/// and the operation that worker threads repeat.
///
/// The operation is an associated function, not a method, so that the runner can call it
/// through a plain function pointer known at compile time (no dynamic dispatch per
/// operation).
pub trait MicroBench: Sync {
    /// What [`MicroBench::setup`] builds and every worker thread shares.
    type State: Sync;

    /// The benchmark's name on the command line and in reports, e.g. `buffer`.
    fn name(&self) -> &'static str;

    /// The engine measured; `shoal` unless the benchmark drives a peer.
    fn engine(&self) -> &'static str {
        "shoal"
    }

    /// Names of the variants, in the order they run by default.
    fn variants(&self) -> &'static [&'static str];

    /// Suggested [`RunConfig::latency_sample_every`] for this benchmark's operations (see
    /// "Latency sampling" in the module doc): 1 unless operations are so short that timing
    /// each would distort them.
    fn latency_sample_every_default(&self) -> u32 {
        1
    }

    /// The benchmark's own settings (e.g. pool size), copied into every measurement's
    /// `config`.
    fn config(&self) -> Map<String, Value>;

    /// Builds the state of `variant` (one of [`MicroBench::variants`]): files, pools, data.
    /// Called once per variant; the state is reused for every thread count.
    ///
    /// # Errors
    /// Any error of the engine or the file system; the run stops.
    fn setup(&self, variant: &str, run: &RunConfig) -> Result<Self::State>;

    /// What the state of a variant looks like (e.g. the number of pages), copied into every
    /// measurement's `config`.
    fn describe(_state: &Self::State) -> Map<String, Value> {
        Map::new()
    }

    /// One operation by worker `thread_idx`. Called in a tight loop; keep it free of
    /// allocation and shared writes that are not the point of the benchmark.
    ///
    /// # Errors
    /// An engine error or a failed result check; the run stops (runner rule 3).
    fn op(state: &Self::State, thread_idx: usize, ctx: &mut ThreadCtx) -> Result<()>;

    /// The engine's cumulative counters (e.g. buffer-pool hits); the runner reports their
    /// growth during the measured time as `engine_stats`. Empty by default.
    fn counters(_state: &Self::State) -> BTreeMap<String, u64> {
        BTreeMap::new()
    }
}

/// Which part of a point is running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Operations run but are not counted.
    Warmup,
    /// Operations are counted and sampled.
    Measure,
}

/// Where a point stands in a run, for progress reports.
#[derive(Clone, Copy, Debug)]
pub struct PointInfo<'a> {
    /// Benchmark name.
    pub bench: &'a str,
    /// Variant name.
    pub variant: &'a str,
    /// Number of worker threads.
    pub threads: usize,
    /// Position of this point in the run, from 0.
    pub index: usize,
    /// Number of points in the run.
    pub total: usize,
    /// Warm-up time in seconds.
    pub warmup_s: f64,
    /// Measured time in seconds.
    pub duration_s: f64,
}

/// Receives events of a run: progress for people, measurements for files and standard
/// output. Every method has an empty default.
pub trait Observer {
    /// A variant's setup begins.
    fn setup_started(&mut self, _bench: &str, _variant: &str) {}
    /// A variant's setup ended after `elapsed_s` seconds.
    fn setup_finished(&mut self, _bench: &str, _variant: &str, _elapsed_s: f64) {}
    /// A point begins (its threads are about to start).
    fn point_started(&mut self, _point: &PointInfo<'_>) {}
    /// Called about every 100 ms while a point runs, with the seconds spent in `phase`.
    fn point_progress(&mut self, _point: &PointInfo<'_>, _phase: Phase, _phase_elapsed_s: f64) {}
    /// A point ended with measurement `m`.
    ///
    /// # Errors
    /// Writing the measurement failed; the run stops.
    fn point_finished(&mut self, _point: &PointInfo<'_>, _m: &Measurement) -> Result<()> {
        Ok(())
    }
}

/// An [`Observer`] that ignores everything.
pub struct NoObserver;

impl Observer for NoObserver {}

/// The settings of one point.
#[derive(Clone, Copy, Debug)]
pub struct PointSpec {
    /// Number of worker threads (at least 1).
    pub threads: usize,
    /// Warm-up time in seconds.
    pub warmup_s: f64,
    /// Measured time in seconds.
    pub duration_s: f64,
    /// Time one operation in this many (at least 1).
    pub latency_sample_every: u32,
    /// Seed of the per-thread generators.
    pub seed: u64,
}

/// What one point measured, before it is labelled as a [`Measurement`].
#[derive(Debug)]
pub struct PointResult {
    /// Measured wall-clock time in seconds.
    pub duration_s: f64,
    /// Completed operations of each thread.
    pub ops_by_thread: Vec<u64>,
    /// Sampled operation latencies in nanoseconds, all threads merged.
    pub latency_ns: Histogram<u64>,
    /// Aborted operations by cause.
    pub aborts: BTreeMap<String, u64>,
    /// Process CPU time during the measured time in seconds, if available.
    pub cpu_s: Option<f64>,
    /// Growth of each engine counter during the measured time.
    pub counters: BTreeMap<String, u64>,
}

impl PointResult {
    /// Completed operations of all threads.
    pub fn ops(&self) -> u64 {
        self.ops_by_thread.iter().sum()
    }
}

/// Workers wait at the start gate.
const READY: u8 = 0;
/// Operations run, nothing is counted.
const WARMUP: u8 = 1;
/// Operations are counted and sampled.
const MEASURE: u8 = 2;
/// Workers leave their loops.
const STOP: u8 = 3;

/// What a worker hands back after STOP.
struct WorkerResult {
    ops: u64,
    latency_ns: Histogram<u64>,
    aborts: BTreeMap<&'static str, u64>,
}

/// Sets the phase to STOP if the worker unwinds, so the controller and the other workers do
/// not wait out the point (runner rule 3).
struct StopOnPanic<'a>(&'a AtomicU8);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(STOP, Ordering::Relaxed);
        }
    }
}

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, LATENCY_MAX_NS, LATENCY_SIGNIFICANT_DIGITS)
        .expect("constant histogram bounds are valid")
}

/// The loop of one worker thread (see the diagram in the module doc).
fn worker<S, Op>(
    thread_idx: usize,
    spec: &PointSpec,
    state: &S,
    op: &Op,
    phase: &AtomicU8,
    arrived: &AtomicUsize,
) -> Result<WorkerResult>
where
    Op: Fn(&S, usize, &mut ThreadCtx) -> Result<()>,
{
    let _stop_on_panic = StopOnPanic(phase);
    let mut ctx = ThreadCtx::new(spec.seed, thread_idx);
    let mut latency_ns = new_histogram();
    // The start gate: the controller opens it once every worker has arrived.
    arrived.fetch_add(1, Ordering::Relaxed);
    while phase.load(Ordering::Relaxed) == READY {
        std::thread::yield_now();
    }

    while phase.load(Ordering::Relaxed) == WARMUP {
        if let Err(e) = op(state, thread_idx, &mut ctx) {
            phase.store(STOP, Ordering::Relaxed);
            return Err(e);
        }
        ctx.take_aborted();
    }
    ctx.aborts.clear();

    let every = spec.latency_sample_every.max(1);
    let mut countdown = 1u32; // time the first operation, then one in `every`
    let mut ops = 0u64;
    while phase.load(Ordering::Relaxed) == MEASURE {
        countdown -= 1;
        let result = if countdown == 0 {
            countdown = every;
            let start = Instant::now();
            let r = op(state, thread_idx, &mut ctx);
            let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            if r.is_ok() && !ctx.aborted {
                latency_ns.saturating_record(ns.clamp(1, LATENCY_MAX_NS));
            }
            r
        } else {
            op(state, thread_idx, &mut ctx)
        };
        if let Err(e) = result {
            phase.store(STOP, Ordering::Relaxed);
            return Err(e);
        }
        if !ctx.take_aborted() {
            ops += 1;
        }
    }
    Ok(WorkerResult {
        ops,
        latency_ns,
        aborts: ctx.aborts,
    })
}

/// Sleeps for `secs` seconds in slices of at most [`TICK`], reporting progress after each;
/// returns early when a worker has set STOP.
fn wait_phase(secs: f64, phase: Phase, word: &AtomicU8, tick: &mut dyn FnMut(Phase, f64)) {
    let total = Duration::from_secs_f64(secs);
    let start = Instant::now();
    loop {
        let elapsed = start.elapsed();
        tick(phase, elapsed.as_secs_f64().min(secs));
        if elapsed >= total || word.load(Ordering::Relaxed) == STOP {
            return;
        }
        std::thread::sleep(TICK.min(total - elapsed));
    }
}

/// Counter growth between two snapshots; a counter missing at the start counts from 0, one
/// that went down (a reset) reports 0.
fn counter_growth(
    before: &BTreeMap<String, u64>,
    after: BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    after
        .into_iter()
        .map(|(k, v)| {
            let b = before.get(&k).copied().unwrap_or(0);
            (k, v.saturating_sub(b))
        })
        .collect()
}

/// Runs one point: `spec.threads` workers repeat `op` on `state` for `spec.warmup_s` then
/// `spec.duration_s` seconds (see the module doc). `counters` is read just before and just
/// after the measured time; `tick` is called about every 100 ms with the phase and the
/// seconds spent in it.
///
/// # Errors
/// The first error an operation returns, or [`BenchError::Panicked`] if a worker panicked.
pub fn measure_point<S, Op, C>(
    spec: &PointSpec,
    state: &S,
    op: Op,
    counters: C,
    tick: &mut dyn FnMut(Phase, f64),
) -> Result<PointResult>
where
    S: Sync,
    Op: Fn(&S, usize, &mut ThreadCtx) -> Result<()> + Sync,
    C: Fn(&S) -> BTreeMap<String, u64>,
{
    assert!(spec.threads >= 1, "a point needs at least one thread");
    let phase = CachePadded::new(AtomicU8::new(READY));
    let arrived = CachePadded::new(AtomicUsize::new(0));
    std::thread::scope(|scope| {
        let mut workers = Vec::with_capacity(spec.threads);
        for i in 0..spec.threads {
            let (phase, arrived, op) = (&*phase, &*arrived, &op);
            let spawned = std::thread::Builder::new()
                .name(format!("bench-{i}"))
                .spawn_scoped(scope, move || worker(i, spec, state, op, phase, arrived));
            match spawned {
                Ok(h) => workers.push(h),
                Err(e) => {
                    // Release the workers already waiting at the gate straight to STOP.
                    phase.store(STOP, Ordering::Relaxed);
                    return Err(BenchError::io(
                        "starting worker thread",
                        format!("bench-{i}"),
                        e,
                    ));
                }
            }
        }
        // Open the gate once every worker is about to start, so that all start together.
        while arrived.load(Ordering::Relaxed) < spec.threads
            && phase.load(Ordering::Relaxed) != STOP
        {
            std::thread::yield_now();
        }
        let _ = phase.compare_exchange(READY, WARMUP, Ordering::Relaxed, Ordering::Relaxed);

        wait_phase(spec.warmup_s, Phase::Warmup, &phase, tick);
        let counters_before = counters(state);
        let cpu_before = sys::process_cpu_time();
        let measuring = phase
            .compare_exchange(WARMUP, MEASURE, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok();
        let start = Instant::now();
        if measuring {
            wait_phase(spec.duration_s, Phase::Measure, &phase, tick);
        }
        phase.store(STOP, Ordering::Relaxed);
        let duration_s = start.elapsed().as_secs_f64();
        let cpu_after = sys::process_cpu_time();
        let counters_after = counters(state);

        let mut ops_by_thread = Vec::with_capacity(spec.threads);
        let mut latency_ns = new_histogram();
        let mut aborts: BTreeMap<String, u64> = BTreeMap::new();
        let mut first_error = None;
        for (thread_idx, h) in workers.into_iter().enumerate() {
            match h.join() {
                Ok(Ok(w)) => {
                    ops_by_thread.push(w.ops);
                    latency_ns
                        .add(&w.latency_ns)
                        .expect("histograms with equal bounds merge");
                    for (cause, n) in w.aborts {
                        *aborts.entry(cause.to_string()).or_insert(0) += n;
                    }
                }
                Ok(Err(e)) => {
                    first_error.get_or_insert(e);
                }
                Err(payload) => {
                    let message = payload
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| payload.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "(no message)".to_string());
                    first_error.get_or_insert(BenchError::Panicked {
                        thread_idx,
                        message,
                    });
                }
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        let cpu_s = match (cpu_before, cpu_after) {
            (Some(b), Some(a)) => Some(a.saturating_sub(b).as_secs_f64()),
            _ => None,
        };
        Ok(PointResult {
            duration_s,
            ops_by_thread,
            latency_ns,
            aborts,
            cpu_s,
            counters: counter_growth(&counters_before, counters_after),
        })
    })
}

/// Latency at quantile `q` in microseconds, or `None` if nothing was sampled.
fn quantile_us(h: &Histogram<u64>, q: f64) -> Option<f64> {
    (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1000.0)
}

/// Labels what a point measured: computes the derived fields of a [`Measurement`].
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
        ops_by_thread: r.ops_by_thread,
        config,
    }
}

/// Runs `variants` of `bench` (all of them if empty) at every thread count of `run`, in that
/// order (variant-major), telling `observer` about progress and each measurement as it is
/// made. Each variant is set up once; its state is dropped before the next variant's setup.
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

    let total = chosen.len() * run.threads.len();
    let mut out = Vec::with_capacity(total);
    for (vi, variant) in chosen.iter().enumerate() {
        let rss_reset = sys::reset_peak_rss();
        observer.setup_started(bench.name(), variant);
        let setup_start = Instant::now();
        let state = bench.setup(variant, run)?;
        let setup_s = setup_start.elapsed().as_secs_f64();
        observer.setup_finished(bench.name(), variant, setup_s);

        let mut config = run.to_json();
        config.insert("host_cpus".into(), Value::from(sys::available_cpus()));
        config.insert(
            "max_rss_scope".into(),
            Value::from(if rss_reset { "variant" } else { "process" }),
        );
        config.insert("setup_s".into(), Value::from(setup_s));
        config.extend(bench.config());
        config.extend(B::describe(&state));

        for (ti, &threads) in run.threads.iter().enumerate() {
            let info = PointInfo {
                bench: bench.name(),
                variant,
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
            let r = measure_point(&spec, &state, B::op, B::counters, &mut |phase, el| {
                observer.point_progress(&info, phase, el)
            })?;
            let m = to_measurement(
                bench.name(),
                bench.engine(),
                variant,
                threads,
                r,
                sys::max_rss_bytes(),
                config.clone(),
            );
            observer.point_finished(&info, &m)?;
            out.push(m);
        }
        drop(state);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;
    use std::sync::atomic::AtomicU64;

    fn spec(threads: usize) -> PointSpec {
        PointSpec {
            threads,
            warmup_s: 0.05,
            duration_s: 0.2,
            latency_sample_every: 4,
            seed: 7,
        }
    }

    #[test]
    fn counts_ops_per_thread_and_samples_latency() {
        let total = AtomicU64::new(0);
        let r = measure_point(
            &spec(3),
            &total,
            |t: &AtomicU64, _, ctx| {
                t.fetch_add(1, Ordering::Relaxed);
                std::hint::black_box(ctx.rng.random::<u64>());
                Ok(())
            },
            |t: &AtomicU64| BTreeMap::from([("calls".to_string(), t.load(Ordering::Relaxed))]),
            &mut |_, _| {},
        )
        .unwrap();
        assert_eq!(r.ops_by_thread.len(), 3);
        assert!(
            r.ops_by_thread.iter().all(|&n| n > 0),
            "{:?}",
            r.ops_by_thread
        );
        assert!((0.19..1.0).contains(&r.duration_s), "{}", r.duration_s);
        // One in four measured operations is timed (the first of each thread included).
        let samples = r.latency_ns.len();
        assert!(samples >= r.ops() / 4 && samples <= r.ops() / 4 + 3);
        // The counter grew by about the counted ops: an op counted in the window may bump it
        // just after the final reading (at most one per thread), and warm-up ops may bump it
        // between the first reading and the start of the window.
        let calls = r.counters["calls"];
        assert!(calls + 3 >= r.ops(), "{calls} vs {}", r.ops());
        assert!(calls <= 2 * r.ops() + 100_000, "{calls} vs {}", r.ops());
        assert!(total.load(Ordering::Relaxed) > r.ops());
    }

    #[test]
    fn aborts_are_counted_by_cause_not_as_ops() {
        let r = measure_point(
            &spec(2),
            &(),
            |_, _, ctx| {
                if ctx.rng.random_bool(0.5) {
                    ctx.abort("deadlock");
                }
                Ok(())
            },
            |_| BTreeMap::new(),
            &mut |_, _| {},
        )
        .unwrap();
        let aborted = r.aborts["deadlock"];
        let ops = r.ops();
        assert!(aborted > 0 && ops > 0);
        let ratio = aborted as f64 / (aborted + ops) as f64;
        assert!((0.4..0.6).contains(&ratio), "abort share {ratio}");
    }

    #[test]
    fn an_error_stops_the_point_early() {
        let start = Instant::now();
        let e = measure_point(
            &PointSpec {
                warmup_s: 0.0,
                duration_s: 30.0,
                ..spec(2)
            },
            &AtomicU64::new(0),
            |n: &AtomicU64, _, _| {
                if n.fetch_add(1, Ordering::Relaxed) == 1000 {
                    return Err(BenchError::Check("page 3 holds page 4".into()));
                }
                Ok(())
            },
            |_| BTreeMap::new(),
            &mut |_, _| {},
        )
        .unwrap_err();
        assert!(e.to_string().contains("page 3 holds page 4"), "{e}");
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_panic_stops_the_point_and_is_reported() {
        let start = Instant::now();
        let e = measure_point(
            &PointSpec {
                warmup_s: 0.0,
                duration_s: 30.0,
                ..spec(2)
            },
            &(),
            |_, t, _| {
                if t == 1 {
                    panic!("boom in op");
                }
                Ok(())
            },
            |_| BTreeMap::new(),
            &mut |_, _| {},
        )
        .unwrap_err();
        match e {
            BenchError::Panicked {
                thread_idx,
                message,
            } => {
                assert_eq!(thread_idx, 1);
                assert!(message.contains("boom in op"));
            }
            other => panic!("unexpected {other}"),
        }
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn progress_ticks_cover_both_phases() {
        let mut seen = Vec::new();
        measure_point(
            &spec(1),
            &(),
            |_, _, _| Ok(()),
            |_| BTreeMap::new(),
            &mut |p, el| seen.push((p, el)),
        )
        .unwrap();
        assert!(seen.iter().any(|&(p, _)| p == Phase::Warmup));
        let last = seen.last().unwrap();
        assert_eq!(last.0, Phase::Measure);
        assert!((last.1 - 0.2).abs() < 1e-9, "{last:?}");
    }

    /// A trivial benchmark: each variant sleeps a different amount per operation.
    struct Sleepy;

    impl MicroBench for Sleepy {
        type State = Duration;
        fn name(&self) -> &'static str {
            "sleepy"
        }
        fn variants(&self) -> &'static [&'static str] {
            &["short", "long"]
        }
        fn config(&self) -> Map<String, Value> {
            Map::from_iter([("nap".to_string(), Value::from("yes"))])
        }
        fn setup(&self, variant: &str, _run: &RunConfig) -> Result<Duration> {
            Ok(Duration::from_micros(if variant == "short" {
                100
            } else {
                1000
            }))
        }
        fn describe(state: &Duration) -> Map<String, Value> {
            Map::from_iter([("nap_us".to_string(), Value::from(state.as_micros() as u64))])
        }
        fn op(state: &Duration, _t: usize, _ctx: &mut ThreadCtx) -> Result<()> {
            std::thread::sleep(*state);
            Ok(())
        }
    }

    #[derive(Default)]
    struct Recorder {
        events: Vec<String>,
    }

    impl Observer for Recorder {
        fn setup_started(&mut self, bench: &str, variant: &str) {
            self.events.push(format!("setup {bench}/{variant}"));
        }
        fn point_finished(&mut self, p: &PointInfo<'_>, m: &Measurement) -> Result<()> {
            self.events.push(format!(
                "point {}/{} {}/{}",
                m.variant, m.threads, p.index, p.total
            ));
            Ok(())
        }
    }

    #[test]
    fn run_micro_sweeps_variants_and_threads() {
        let run = RunConfig {
            threads: vec![1, 2],
            warmup_s: 0.0,
            duration_s: 0.1,
            latency_sample_every: 1,
            seed: 1,
        };
        let mut rec = Recorder::default();
        let ms = run_micro(&Sleepy, &[], &run, &mut rec).unwrap();
        assert_eq!(
            rec.events,
            [
                "setup sleepy/short",
                "point short/1 0/4",
                "point short/2 1/4",
                "setup sleepy/long",
                "point long/1 2/4",
                "point long/2 3/4"
            ]
        );
        let short1 = &ms[0];
        assert_eq!(short1.bench, "sleepy");
        assert_eq!(short1.engine, "shoal");
        assert_eq!(short1.config["nap"], "yes");
        assert_eq!(short1.config["nap_us"], 100);
        assert_eq!(short1.config["latency_sample_every"], 1);
        assert!(short1.aborts.is_empty());
        // Sleeping 100 us per op: the median is at least that, throughput at most 10k/s/thread.
        assert!(short1.p50_us.unwrap() >= 100.0);
        assert!(short1.ops_per_s_per_thread <= 10_000.0);
        assert_eq!(short1.latency_samples, short1.ops);
        let long2 = &ms[3];
        assert!(long2.p50_us.unwrap() >= 1000.0);
        assert!((long2.ops_per_s_per_thread - long2.ops_per_s / 2.0).abs() < 1e-9);
        assert!(long2.max_rss_bytes.is_some() || !cfg!(target_os = "linux"));
    }

    #[test]
    fn run_micro_rejects_unknown_variants_and_bad_settings() {
        let run = RunConfig {
            duration_s: 0.1,
            warmup_s: 0.0,
            ..RunConfig::default()
        };
        let e = run_micro(&Sleepy, &["medium".into()], &run, &mut NoObserver).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("`medium`") && msg.contains("short, long"),
            "{msg}"
        );

        for bad in [
            RunConfig {
                threads: vec![],
                ..run.clone()
            },
            RunConfig {
                threads: vec![1, 0],
                ..run.clone()
            },
            RunConfig {
                duration_s: 0.0,
                ..run.clone()
            },
            RunConfig {
                warmup_s: f64::NAN,
                ..run.clone()
            },
            RunConfig {
                latency_sample_every: 0,
                ..run.clone()
            },
        ] {
            assert!(matches!(
                run_micro(&Sleepy, &[], &bad, &mut NoObserver),
                Err(BenchError::InvalidArgument { .. })
            ));
        }
    }
}
