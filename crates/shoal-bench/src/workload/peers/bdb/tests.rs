//! Tests of the `bdb` peer: each workload end to end through its `MicroBench` (ops > 0,
//! consistency "pass"), a deadlock between two transactions counted as an abort with the
//! sums still consistent, corrupted balances reported by the checks. In a build without
//! Berkeley DB each test prints "skipped: ..." and checks that the peer says so.

use super::super::testkit::{smoke, tpcc_smoke};
use super::*;
#[cfg(shoal_bdb)]
use crate::runner::MicroBench;
use crate::workload::insert::Insert;
use crate::workload::select1::Select1;
use crate::workload::tpcb::{Tpcb, TpcbState};
use crate::workload::tpcc::{Engine, Tpcc};
use crate::workload::WorkloadOptions;

/// Whether the peer is built; prints why a test is skipped if not.
fn built(test: &str) -> bool {
    match Bdb.availability() {
        Ok(()) => true,
        Err(why) => {
            assert!(why.contains("install"), "{why}");
            eprintln!("skipped: {test}: {why}");
            false
        }
    }
}

fn opts() -> WorkloadOptions {
    let mut o = WorkloadOptions::new(EngineKind::Bdb);
    o.progress = false;
    o
}

#[test]
fn select1_runs_and_counts_its_rows() {
    if built("select1_runs_and_counts_its_rows") {
        smoke(
            &Select1 {
                opts: opts(),
                scale: 1,
            },
            "select1",
        );
    }
}

#[test]
fn insert_keeps_what_it_commits() {
    if built("insert_keeps_what_it_commits") {
        let state = smoke(&Insert { opts: opts() }, "insert");
        let counts = state.counts().unwrap();
        assert!(counts.iter().any(|&n| n > 0), "{counts:?}");
    }
}

#[test]
fn tpcb_runs_and_a_corrupted_branch_balance_is_reported() {
    if !built("tpcb_runs_and_a_corrupted_branch_balance_is_reported") {
        return;
    }
    let b = Tpcb {
        opts: opts(),
        scale: 1,
    };
    let state = smoke(&b, "tpcb");
    let TpcbState::Peer { db, .. } = &state else {
        panic!("a peer state");
    };
    let [a, t, br, h] = db.sums().unwrap();
    assert!(a == t && t == br && br == h, "{a} {t} {br} {h}");
    corrupt_branch(&b);
}

/// Adds 1 to branch 1's balance behind the workload's back: the check must fail.
#[cfg(shoal_bdb)]
fn corrupt_branch(b: &Tpcb) {
    use super::store::End;
    let setup = PeerSetup {
        opts: &b.opts,
        pool_bytes: b.pool_bytes(),
        workers: 1,
    };
    let peer = micro::BdbTpcb::create(&setup, 1).unwrap();
    let mut ctx = crate::runner::ThreadCtx::new(1, 0);
    let branches = peer.store.db(0).unwrap();
    peer.store
        .run(&mut ctx, "corrupting", |txn| {
            micro::BdbTpcb::add(branches, txn, 1, 0, 1, &mut Vec::new()).map(End::Commit)
        })
        .unwrap()
        .unwrap();
    let state = TpcbState::Peer {
        db: Box::new(peer),
        scale: 1,
    };
    let after = Tpcb::after_point(&state).unwrap();
    let c = after["consistency"].as_str().unwrap();
    assert!(c.starts_with("FAIL"), "{c}");
}

#[cfg(not(shoal_bdb))]
fn corrupt_branch(_: &Tpcb) {}

#[test]
fn tpcc_standard_mix_is_consistent_and_a_corrupted_d_ytd_is_reported() {
    if !built("tpcc_standard_mix_is_consistent_and_a_corrupted_d_ytd_is_reported") {
        return;
    }
    let b = Tpcc {
        opts: opts(),
        warehouses: 1,
        scale: crate::workload::tpcc::TpccScale::tiny(),
    };
    let state = tpcc_smoke(&b);
    assert!(matches!(state.engine, Engine::Peer { .. }));
    corrupt_district(&b);
}

/// Adds 1 to D_YTD of district (1, 3) in a fresh database: conditions 1 and 9 must fail.
#[cfg(shoal_bdb)]
fn corrupt_district(b: &Tpcc) {
    use super::codec::{key_i32s, Field};
    use super::store::End;
    use crate::workload::tpcc::schema::{col, T};
    let setup = PeerSetup {
        opts: &b.opts,
        pool_bytes: b.pool_bytes(),
        workers: 1,
    };
    let mut rng = <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(5);
    let k = NuRandConstants::random(&mut rng);
    let peer = tpcc::BdbTpcc::create(&setup, 1, &b.scale, &k, 5, &mut |_| {}).unwrap();
    let delivered = i64::from(b.scale.orders - b.scale.new_orders);
    assert_eq!(
        peer.snapshot().unwrap().check(delivered),
        Vec::<String>::new()
    );
    let mut ctx = crate::runner::ThreadCtx::new(1, 0);
    let t = &peer.t;
    t.store
        .run(&mut ctx, "corrupting", |txn| {
            let key = key_i32s(&[1, 3]);
            let mut row = t.must_read(txn, T::District, &key, true, &mut Vec::new())?;
            let ytd = row[col::D_YTD].int().unwrap();
            row[col::D_YTD] = Field::Int(ytd + 1);
            t.write(txn, T::District, &key, &row).map(End::Commit)
        })
        .unwrap()
        .unwrap();
    let failures = peer.snapshot().unwrap().check(delivered);
    assert!(
        failures.iter().any(|f| f.starts_with("condition 1:")),
        "{failures:?}"
    );
    assert!(failures.iter().any(|f| f.starts_with("condition 9:")));
}

#[cfg(not(shoal_bdb))]
fn corrupt_district(_: &Tpcc) {}

/// Two transactions update the same two rows (a teller and a branch: different
/// databases, so different pages) in opposite orders, each pausing after its first
/// update: Berkeley DB's detector picks one as the victim, which is counted as a
/// `deadlock` abort and retried; both transfers land and the sums stay equal.
#[test]
fn a_deadlock_is_counted_and_the_sums_stay_consistent() {
    if built("a_deadlock_is_counted_and_the_sums_stay_consistent") {
        #[cfg(shoal_bdb)]
        deadlock_between_two_workers();
    }
}

#[cfg(shoal_bdb)]
fn deadlock_between_two_workers() {
    use super::store::End;
    use std::sync::Barrier;
    let o = opts();
    let setup = PeerSetup {
        opts: &o,
        pool_bytes: 16 << 20,
        workers: 2,
    };
    let peer = micro::BdbTpcb::create(&setup, 1).unwrap();
    let (branches, tellers) = (peer.store.db(0).unwrap(), peer.store.db(1).unwrap());
    let barrier = Barrier::new(2);
    let aborts: Vec<u64> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|i| {
                let (peer, barrier) = (&peer, &barrier);
                s.spawn(move || {
                    let mut ctx = crate::runner::ThreadCtx::new(9, i);
                    let mut first_try = true;
                    loop {
                        let done = peer
                            .store
                            .run(&mut ctx, "opposite orders", |txn| {
                                let mut buf = Vec::new();
                                let order = if i == 0 {
                                    [(tellers, 4), (branches, 0)]
                                } else {
                                    [(branches, 0), (tellers, 4)]
                                };
                                micro::BdbTpcb::add(order[0].0, txn, 1, order[0].1, 7, &mut buf)?;
                                if first_try {
                                    barrier.wait();
                                }
                                micro::BdbTpcb::add(order[1].0, txn, 1, order[1].1, 7, &mut buf)?;
                                Ok(End::Commit(()))
                            })
                            .unwrap();
                        first_try = false;
                        if done.is_some() {
                            return ctx.aborts_of("deadlock");
                        }
                    }
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    assert_eq!(aborts.iter().sum::<u64>(), 1, "one victim: {aborts:?}");
    let [_, t, b, _] = peer.sums().unwrap();
    assert_eq!((t, b), (14, 14), "both transfers landed once");
}
