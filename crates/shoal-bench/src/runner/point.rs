//! Measuring one point: the workers, the phase protocol and the merge (runner rules 1–4).

use super::*;

/// Workers wait at the start gate.
pub(super) const READY: u8 = 0;
/// Operations run, nothing is counted.
pub(super) const WARMUP: u8 = 1;
/// Operations are counted and sampled.
pub(super) const MEASURE: u8 = 2;
/// Workers leave their loops.
pub(super) const STOP: u8 = 3;

/// Operations each worker runs before it arrives at the start gate (runner rule 6).
pub(super) const PRELUDE_OPS: usize = 4;

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
    // The prelude (runner rule 6): operations before the gate, uncounted, so that this
    // thread's one-time start-up costs (its allocator's first pages) are paid before any
    // clock runs. A failure stops the point; the worker still arrives, so nobody waits.
    let prelude = (0..PRELUDE_OPS).try_for_each(|_| {
        let r = op(state, thread_idx, &mut ctx);
        ctx.take_aborted();
        r
    });
    if prelude.is_err() {
        phase.store(STOP, Ordering::Relaxed);
    }
    // The start gate: the controller opens it once every worker has arrived.
    arrived.fetch_add(1, Ordering::Relaxed);
    prelude?;
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
pub(super) fn quantile_us(h: &Histogram<u64>, q: f64) -> Option<f64> {
    (!h.is_empty()).then(|| h.value_at_quantile(q) as f64 / 1000.0)
}
