//! What the peers' smoke tests share: one short point with two threads, checked for work
//! done and a passing consistency check, and for TPC-C that every transaction type ran.

use crate::runner::{measure_point, MicroBench, PointSpec, RunConfig};
use crate::workload::tpcc::{Tpcc, TpccState};
use serde_json::Value;

/// A setup for two workers and a 0.3 s point with two threads.
pub(crate) fn two_threads() -> (RunConfig, PointSpec) {
    // The run's times match the point's: `insert` sizes its pool from them.
    let run = RunConfig {
        threads: vec![2],
        warmup_s: 0.0,
        duration_s: 0.3,
        ..RunConfig::default()
    };
    let spec = PointSpec {
        threads: 2,
        warmup_s: run.warmup_s,
        duration_s: run.duration_s,
        latency_sample_every: 1,
        seed: 7,
    };
    (run, spec)
}

/// Sets `b` up, checks the loaded data, measures one point with two threads, and asserts
/// that transactions ran and the point's consistency check passed; returns the state.
pub(crate) fn smoke<B: MicroBench>(b: &B, variant: &str) -> B::State {
    let state = b.setup(variant, &two_threads().0).unwrap();
    measure_and_check(b, variant, &state);
    state
}

/// Measures one point of `state` with two threads and asserts that transactions ran and the
/// point's consistency check passed.
fn measure_and_check<B: MicroBench>(b: &B, variant: &str, state: &B::State) {
    let spec = two_threads().1;
    let r = measure_point(&spec, state, B::op, B::counters, &mut |_, _| {}).unwrap();
    assert!(r.ops() > 0, "{} {variant}: no transaction ran", b.name());
    let after = B::after_point(state).unwrap();
    assert_eq!(
        after["consistency"],
        Value::from("pass"),
        "{} {variant}",
        b.name()
    );
}

/// [`smoke`] of TPC-C's `standard` mix, which also asserts that the data was consistent at
/// load and that each of the five transaction types ran.
pub(crate) fn tpcc_smoke(b: &Tpcc) -> TpccState {
    let state = b.setup("standard", &two_threads().0).unwrap();
    assert_eq!(state.check().unwrap(), Vec::<String>::new(), "at load");
    measure_and_check(b, "standard", &state);
    let counters = Tpcc::counters(&state);
    for kind in [
        "new_order",
        "payment",
        "order_status",
        "delivery",
        "stock_level",
    ] {
        let n = counters.get(&format!("tpcc.{kind}")).copied().unwrap_or(0);
        assert!(n > 0, "no {kind} ran: {counters:?}");
    }
    state
}
