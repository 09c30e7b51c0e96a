//! The runner's public types: settings, per-thread context, the micro-benchmark trait,
//! phases, observers and point results.

use super::*;

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
    /// A buffer the worker keeps across operations, for reads into a caller's vector
    /// (`BTree::get_into`): empty at the start, its content is the operation's own.
    pub scratch: Vec<u8>,
    thread_idx: usize,
    pub(super) aborted: bool,
    pub(super) aborts: BTreeMap<&'static str, u64>,
}

impl ThreadCtx {
    /// A context for worker `thread_idx` of a run with seed `seed`.
    pub fn new(seed: u64, thread_idx: usize) -> ThreadCtx {
        // Spread the thread index over all bits (multiplier: 2^64 / golden ratio) so that
        // neighbouring threads get unrelated streams.
        let mixed = seed ^ (thread_idx as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ThreadCtx {
            rng: SmallRng::seed_from_u64(mixed),
            scratch: Vec::new(),
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

    /// Aborted operations of this thread with cause `cause` so far.
    pub fn aborts_of(&self, cause: &str) -> u64 {
        self.aborts.get(cause).copied().unwrap_or(0)
    }

    /// Whether the operation that just ran aborted; clears the mark.
    #[inline]
    pub(super) fn take_aborted(&mut self) -> bool {
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

    /// The engine measured by `variant`: [`MicroBench::engine`] unless the variant measures
    /// something else for context (e.g. `btree`'s `std::collections::BTreeMap` point).
    fn variant_engine(&self, _variant: &str) -> &'static str {
        self.engine()
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
    /// Called once per variant, and the state reused for every thread count of `run`; or,
    /// where [`MicroBench::setup_per_point`] is true, once per point with `run.threads`
    /// holding that point's thread count alone.
    ///
    /// # Errors
    /// Any error of the engine or the file system; the run stops.
    fn setup(&self, variant: &str, run: &RunConfig) -> Result<Self::State>;

    /// True if every point of `variant` starts from a state of its own (set up for its
    /// thread count, the previous point's state dropped first) rather than from what the
    /// earlier points left: for operations that grow the state (`insert`), where a later
    /// point would otherwise start from a larger database than an earlier one, and a pool
    /// sized for the whole run would have to hold every point's data. False by default.
    fn setup_per_point(&self, _variant: &str) -> bool {
        false
    }

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

    /// Called after each point once its workers have stopped, outside the measured time
    /// (runner rule 5): checks what the point left in the state (e.g. a tree's integrity
    /// after inserts) and returns values to add to the point's derived fields (e.g. the
    /// tree's fill). Names follow [`MicroBench::derived`]. Nothing and empty by default.
    ///
    /// # Errors
    /// A failed check ([`BenchError::Check`]) or an engine error; the run stops.
    fn after_point(_state: &Self::State) -> Result<Map<String, Value>> {
        Ok(Map::new())
    }

    /// Values derived from the growth of the engine counters during the measured time
    /// (`engine_stats`, from [`MicroBench::counters`]) and the completed operations `ops`
    /// of a point of `variant`, e.g. `fdatasync` calls per commit. They become top-level
    /// fields of the point's JSON line ([`Measurement::derived`]) and are shown in the table
    /// and report. Names carry their units and must not repeat a fixed field's name. Empty
    /// by default.
    fn derived(
        _variant: &str,
        _engine_stats: &BTreeMap<String, u64>,
        _ops: u64,
    ) -> Map<String, Value> {
        Map::new()
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
    /// Engine measured, e.g. `shoal`.
    pub engine: &'a str,
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
