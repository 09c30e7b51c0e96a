//! Runner tests.

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
    // Thread 1 fails on its first operation (in the prelude, before the gate: nobody else
    // gets past its own prelude) or on its 1000th (in the measured time).
    for fail_at in [0, 1000] {
        let start = Instant::now();
        let calls: Vec<AtomicU64> = (0..3).map(|_| AtomicU64::new(0)).collect();
        let e = measure_point(
            &PointSpec {
                warmup_s: 0.0,
                duration_s: 30.0,
                ..spec(3)
            },
            &calls,
            |c: &Vec<AtomicU64>, t, _| {
                if c[t].fetch_add(1, Ordering::Relaxed) == fail_at && t == 1 {
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
        if fail_at == 0 {
            for (t, c) in calls.iter().enumerate() {
                let c = c.load(Ordering::Relaxed);
                assert!(c <= point::PRELUDE_OPS as u64, "thread {t} ran {c} ops");
            }
        }
    }
}

#[test]
fn a_threads_first_operations_run_before_any_clock() {
    // Each thread's first operation is slow (as a fresh thread's first page faults are);
    // the prelude pays for it before the gate, so no timed operation and no counted time
    // contains it (runner rule 6).
    let first_slow = Duration::from_millis(300);
    let calls: Vec<AtomicU64> = (0..2).map(|_| AtomicU64::new(0)).collect();
    let r = measure_point(
        &PointSpec {
            warmup_s: 0.0,
            duration_s: 0.2,
            latency_sample_every: 1,
            ..spec(2)
        },
        &calls,
        |c: &Vec<AtomicU64>, t, _| {
            if c[t].fetch_add(1, Ordering::Relaxed) == 0 {
                std::thread::sleep(first_slow);
            }
            Ok(())
        },
        |_| BTreeMap::new(),
        &mut |_, _| {},
    )
    .unwrap();
    let slowest = Duration::from_nanos(r.latency_ns.max());
    assert!(slowest < first_slow / 3, "a timed op took {slowest:?}");
    assert!(
        r.ops_by_thread.iter().all(|&n| n > 1000),
        "{:?}",
        r.ops_by_thread
    );
    for (t, c) in calls.iter().enumerate() {
        let c = c.load(Ordering::Relaxed);
        assert!(
            c >= r.ops_by_thread[t] + point::PRELUDE_OPS as u64,
            "thread {t}: {c}"
        );
    }
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
    fn variant_engine(&self, variant: &str) -> &'static str {
        if variant == "long" {
            "sloth"
        } else {
            self.engine()
        }
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
    fn derived(variant: &str, _stats: &BTreeMap<String, u64>, ops: u64) -> Map<String, Value> {
        Map::from_iter([(format!("{variant}_ops_seen"), Value::from(ops))])
    }
    fn after_point(state: &Duration) -> Result<Map<String, Value>> {
        Ok(Map::from_iter([(
            "nap_us_after".to_string(),
            Value::from(state.as_micros() as u64),
        )]))
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

/// A short run over 1 and 2 threads, for the `run_micro` tests.
fn sweep() -> RunConfig {
    RunConfig {
        threads: vec![1, 2],
        warmup_s: 0.0,
        duration_s: 0.1,
        latency_sample_every: 1,
        seed: 1,
    }
}

#[test]
fn run_micro_sweeps_variants_and_threads() {
    let run = sweep();
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
    assert_eq!(short1.derived["short_ops_seen"], short1.ops);
    assert!(short1.aborts.is_empty());
    // Sleeping 100 us per op: the median is at least that, throughput at most 10k/s/thread.
    assert!(short1.p50_us.unwrap() >= 100.0);
    assert!(short1.ops_per_s_per_thread <= 10_000.0);
    assert_eq!(short1.latency_samples, short1.ops);
    // Values from after_point join the derived ones.
    assert_eq!(short1.derived["nap_us_after"], 100);
    let long2 = &ms[3];
    // A variant may name another engine; its scaling ratio compares it with itself.
    assert_eq!(long2.engine, "sloth");
    assert_eq!(long2.derived["nap_us_after"], 1000);
    assert!(long2.p50_us.unwrap() >= 1000.0);
    assert!((long2.ops_per_s_per_thread - long2.ops_per_s / 2.0).abs() < 1e-9);
    assert!(long2.max_rss_bytes.is_some() || !cfg!(target_os = "linux"));
}

/// A benchmark whose operations grow its state: variant `fresh` is set up per point,
/// `kept` once. The state remembers the thread counts its setup was given and counts the
/// operations run on it.
struct Growing;

impl MicroBench for Growing {
    type State = (Vec<usize>, AtomicU64);
    fn name(&self) -> &'static str {
        "growing"
    }
    fn variants(&self) -> &'static [&'static str] {
        &["fresh", "kept"]
    }
    fn config(&self) -> Map<String, Value> {
        Map::new()
    }
    fn setup(&self, _variant: &str, run: &RunConfig) -> Result<Self::State> {
        Ok((run.threads.clone(), AtomicU64::new(0)))
    }
    fn setup_per_point(&self, variant: &str) -> bool {
        variant == "fresh"
    }
    fn describe(state: &Self::State) -> Map<String, Value> {
        Map::from_iter([("setup_threads".to_string(), Value::from(state.0.clone()))])
    }
    fn op(state: &Self::State, _t: usize, _ctx: &mut ThreadCtx) -> Result<()> {
        std::thread::sleep(Duration::from_micros(100));
        state.1.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
    fn after_point(state: &Self::State) -> Result<Map<String, Value>> {
        let ops = state.1.load(Ordering::Relaxed);
        Ok(Map::from_iter([(
            "ops_in_state".to_string(),
            Value::from(ops),
        )]))
    }
}

#[test]
fn a_benchmark_set_up_per_point_starts_each_point_afresh() {
    let run = sweep();
    let mut rec = Recorder::default();
    let ms = run_micro(&Growing, &[], &run, &mut rec).unwrap();
    assert_eq!(
        rec.events,
        [
            "setup growing/fresh",
            "point fresh/1 0/4",
            "setup growing/fresh",
            "point fresh/2 1/4",
            "setup growing/kept",
            "point kept/1 2/4",
            "point kept/2 3/4"
        ]
    );
    let in_state = |m: &Measurement| m.derived["ops_in_state"].as_u64().unwrap();
    // Per point: each setup saw its own point's thread count, and the second point's state
    // holds its own operations only (the prelude adds `PRELUDE_OPS` per thread and an
    // operation in flight at the end one more).
    assert_eq!(ms[0].config["setup_threads"], Value::from(vec![1]));
    assert_eq!(ms[1].config["setup_threads"], Value::from(vec![2]));
    assert!(in_state(&ms[0]) >= 1);
    let uncounted = 2 * (point::PRELUDE_OPS as u64 + 1);
    assert!(
        in_state(&ms[1]) <= ms[1].ops + uncounted,
        "{} vs {}",
        in_state(&ms[1]),
        ms[1].ops
    );
    // "process" where the peak cannot be reset (not Linux, or `clear_refs` refused).
    assert!(
        ["point", "process"].contains(&ms[1].config["max_rss_scope"].as_str().unwrap()),
        "{}",
        ms[1].config["max_rss_scope"]
    );
    // Once: both points share the state set up for the whole run.
    assert_eq!(ms[2].config["setup_threads"], Value::from(vec![1, 2]));
    assert_eq!(ms[3].config["setup_threads"], Value::from(vec![1, 2]));
    assert!(in_state(&ms[3]) >= in_state(&ms[2]) + ms[3].ops);
    // The run's settings are the whole run's either way.
    for m in &ms {
        assert_eq!(m.config["threads_list"], Value::from(vec![1, 2]));
    }
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
