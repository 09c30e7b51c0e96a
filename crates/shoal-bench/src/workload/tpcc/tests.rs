//! Tests of the whole workload: the loaded database passes every condition, a corrupted
//! D_YTD is reported as condition 1 on both engines, and the standard mix with two threads
//! leaves a consistent database on both engines.

use super::*;
use crate::runner::{measure_point, PointSpec};
use shoal::table::{Row, Value as V};

fn tiny(engine: EngineKind, warehouses: u32) -> Tpcc {
    let mut opts = WorkloadOptions::new(engine);
    opts.progress = false;
    Tpcc {
        opts,
        warehouses,
        scale: TpccScale::tiny(),
    }
}

fn run_and_check(engine: EngineKind, variant: &str, warehouses: u32) {
    let b = tiny(engine, warehouses);
    let run = RunConfig {
        threads: vec![2],
        ..RunConfig::default()
    };
    let state = b.setup(variant, &run).unwrap();
    assert_eq!(
        state.check().unwrap(),
        Vec::<String>::new(),
        "{engine:?} at load"
    );
    let spec = PointSpec {
        threads: 2,
        warmup_s: 0.0,
        duration_s: 0.5,
        latency_sample_every: 1,
        seed: 7,
    };
    let before = Tpcc::counters(&state);
    let r = measure_point(&spec, &state, Tpcc::op, Tpcc::counters, &mut |_, _| {}).unwrap();
    assert!(r.ops() > 0, "{engine:?} ran no transaction");
    let after = Tpcc::counters(&state);
    if variant == "standard" {
        for kind in Kind::ALL {
            let n = counter_name(kind);
            assert!(after[&n] > before[&n], "{engine:?}: no {n} ran");
        }
    }
    let m = Tpcc::after_point(&state).unwrap();
    if engine == EngineKind::Shoal {
        assert!(m["hot_locks"].is_array() && m["hot_latches"].is_array());
    }
    assert_eq!(
        m["consistency"],
        Value::from("pass"),
        "{engine:?} {variant}"
    );
}

#[test]
fn shoal_standard_mix_with_two_threads_is_consistent() {
    run_and_check(EngineKind::Shoal, "standard", 1);
}

#[test]
fn sqlite_standard_mix_with_two_threads_is_consistent() {
    run_and_check(EngineKind::Sqlite, "standard", 1);
}

#[test]
fn two_warehouses_with_remote_payments_stay_consistent() {
    run_and_check(EngineKind::Shoal, "standard", 2);
    run_and_check(EngineKind::Sqlite, "payment", 2);
}

#[test]
fn a_corrupted_district_ytd_is_reported_as_condition_1() {
    for engine in EngineKind::EMBEDDED {
        let state = tiny(engine, 1)
            .setup("standard", &RunConfig::default())
            .unwrap();
        match &state.engine {
            Engine::Shoal { db, t } => {
                let mut tx = db.db().begin(IsolationLevel::ReadCommitted);
                t.get(T::District)
                    .update_with(&mut tx, &[V::Int4(1), V::Int4(3)], |r| {
                        Ok(Row::new().with("d_ytd", r.get_at::<i64>(schema::col::D_YTD)? + 1))
                    })
                    .unwrap()
                    .unwrap();
                tx.commit().unwrap();
            }
            Engine::Sqlite { db } => {
                db.conn(0)
                    .unwrap()
                    .execute(
                        "UPDATE district SET d_ytd = d_ytd + 1 WHERE d_w_id = 1 AND d_id = 3",
                        [],
                    )
                    .unwrap();
            }
            Engine::Peer { .. } => unreachable!("only the embedded engines"),
        }
        let failures = state.check().unwrap();
        assert!(
            failures.iter().any(|f| f.starts_with("condition 1:")),
            "{engine:?}: {failures:?}"
        );
        assert!(failures.iter().any(|f| f.starts_with("condition 9:")));
        let m = Tpcc::after_point(&state).unwrap();
        assert!(m["consistency"].as_str().unwrap().starts_with("FAIL"));
    }
}

#[test]
fn bad_settings_are_errors_not_panics() {
    let mut b = tiny(EngineKind::Shoal, 1);
    assert!(b.setup("nope", &RunConfig::default()).is_err());
    b.scale.orders = 10;
    assert!(b.setup("standard", &RunConfig::default()).is_err());
    let mut b = tiny(EngineKind::Shoal, MAX_WAREHOUSES + 1);
    b.opts.progress = false;
    assert!(b.setup("standard", &RunConfig::default()).is_err());
    assert_eq!(table_of("stock"), Some(T::Stock));
    assert_eq!(table_of("nope"), None);
}

/// The READ COMMITTED subtlety of Delivery (module doc of `shoal_txns`): while another
/// transaction's delete of a district's oldest NEW-ORDER row is uncommitted, a Delivery
/// must not take the next row and leave a gap when that delete rolls back. Its scan waits
/// and takes the restored row (the guard's `delivery-race` rollback is not needed), and
/// condition 3 holds.
#[test]
fn delivery_leaves_no_gap_after_a_rolled_back_delete() {
    let state = tiny(EngineKind::Shoal, 1)
        .setup("standard", &RunConfig::default())
        .unwrap();
    let Engine::Shoal { db, t } = &state.engine else {
        panic!("a Shoal state");
    };
    let scale = TpccScale::tiny();
    let oldest = (scale.orders - scale.new_orders + 1) as i32;
    let now = shoal::table::Timestamp::now().0;
    let outcome = std::thread::scope(|s| {
        let mut t1 = db.db().begin(IsolationLevel::ReadCommitted);
        let key = [V::Int4(1), V::Int4(1), V::Int4(oldest)];
        assert!(t.get(T::NewOrder).delete(&mut t1, &key).unwrap().is_some());
        let delivery = s.spawn(|| {
            let mut t2 = db.db().begin(IsolationLevel::ReadCommitted);
            let inp = input::DeliveryIn { w: 1, carrier: 3 };
            let r = shoal_txns::delivery(t, &mut t2, &inp, now).unwrap();
            match r {
                Ok(_) => t2.commit().unwrap(),
                Err(_) => t2.abort().unwrap(),
            }
            r
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        t1.abort().unwrap();
        delivery.join().unwrap()
    });
    assert!(matches!(outcome, Ok(10)), "{outcome:?}");
    assert_eq!(state.check().unwrap(), Vec::<String>::new(), "{outcome:?}");
}
