//! Queueing, conversions, durations, conditional requests, timeouts.

use super::*;
use crate::error::Error;
use mgl::{IS, IX, S, SIX, U, X};
use std::sync::mpsc;
use std::thread;

use LockDuration::{Instant as Inst, Long, Short};

#[test]
fn compatible_requests_are_granted_and_conflicts_would_block_without_queueing() {
    let m = mgl(5_000);
    let mut a = owner(&m, 1);
    let mut b = owner(&m, 2);
    let mut c = owner(&m, 3);
    assert_eq!(
        a.lock(&row(1), S, Long, Wait::Yes).unwrap(),
        LockStatus::Granted
    );
    assert_eq!(
        b.lock(&row(1), S, Long, Wait::Yes).unwrap(),
        LockStatus::Granted
    );
    assert_eq!(
        b.lock(&row(1), U, Long, Wait::No).unwrap(),
        LockStatus::Granted,
        "U beside S"
    );
    assert_eq!(
        c.lock(&row(1), S, Long, Wait::No).unwrap(),
        LockStatus::WouldBlock,
        "S not beside U"
    );
    assert_eq!(
        c.lock(&row(1), X, Long, Wait::No).unwrap(),
        LockStatus::WouldBlock
    );
    assert_eq!(c.lock_count(), 0);
    assert_eq!(m.stats().waits, 0, "a conditional request never queues");
    assert_eq!(m.table_heads(), 1);
    a.release_all();
    b.release_all();
    assert_eq!(m.table_heads(), 0);
    assert_eq!(
        c.lock(&row(1), X, Long, Wait::No).unwrap(),
        LockStatus::Granted
    );
}

#[test]
fn bad_mode_is_an_invalid_argument() {
    let m = mgl(5_000);
    let mut a = owner(&m, 1);
    let e = a
        .lock(&row(1), LockMode::from_index(6), Long, Wait::Yes)
        .unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { name: "mode", .. }),
        "{e}"
    );
    assert!(!e.is_retryable());
}

#[test]
fn covered_request_is_granted_locally_even_with_a_waiter_queued() {
    let m = mgl(10_000);
    let mut a = owner(&m, 1);
    a.lock(&row(1), X, Long, Wait::Yes).unwrap();
    let m2 = m.clone();
    let waiter = thread::spawn(move || {
        let mut b = owner(&m2, 2);
        b.lock(&row(1), S, Long, Wait::Yes)
            .map(|s| (s, b.held(&row(1))))
    });
    eventually("b queued", || m.stats().waits == 1);
    // A new S request would queue behind b (T4); a covered one never reaches the table.
    for mode in [IS, S, U, X] {
        assert_eq!(
            a.lock(&row(1), mode, Long, Wait::No).unwrap(),
            LockStatus::Granted
        );
    }
    assert!(a.covers(&row(1), S, Long));
    a.release_all();
    let (s, held) = waiter.join().unwrap().unwrap();
    assert_eq!((s, held), (LockStatus::Granted, Some(S)));
}

#[test]
fn a_new_request_does_not_overtake_a_conflicting_waiter() {
    let m = mgl(10_000);
    let mut a = owner(&m, 1);
    a.lock(&row(1), S, Long, Wait::Yes).unwrap();
    let m2 = m.clone();
    let (tx, rx) = mpsc::channel();
    let writer = thread::spawn(move || {
        let mut b = owner(&m2, 2);
        let r = b.lock(&row(1), X, Long, Wait::Yes);
        tx.send(()).unwrap();
        thread::sleep(Duration::from_millis(20));
        b.release_all();
        r
    });
    eventually("writer queued", || m.stats().waits == 1);
    let mut c = owner(&m, 3);
    // S is compatible with the granted S but conflicts with the queued X: it must wait.
    assert_eq!(
        c.lock(&row(1), S, Long, Wait::No).unwrap(),
        LockStatus::WouldBlock
    );
    // IS on another name is unaffected; IS here conflicts with X too.
    assert_eq!(
        c.lock(&row(1), IS, Long, Wait::No).unwrap(),
        LockStatus::WouldBlock
    );
    assert_eq!(
        c.lock(&row(2), S, Long, Wait::No).unwrap(),
        LockStatus::Granted
    );
    assert!(rx.try_recv().is_err(), "writer granted while S is held");
    a.release_all();
    rx.recv().unwrap();
    writer.join().unwrap().unwrap();
}

#[test]
fn conversions_are_served_before_new_requests() {
    let m = mgl(10_000);
    let mut a = owner(&m, 1);
    let mut b = owner(&m, 2);
    a.lock(&row(1), S, Long, Wait::Yes).unwrap();
    b.lock(&row(1), S, Long, Wait::Yes).unwrap();
    let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (m3, o3) = (m.clone(), order.clone());
    let newcomer = thread::spawn(move || {
        let mut c = owner(&m3, 3);
        c.lock(&row(1), X, Long, Wait::Yes).unwrap();
        o3.lock().unwrap().push(3);
    });
    eventually("new X queued", || m.stats().waits == 1);
    let (m1, o1) = (m.clone(), order.clone());
    let converter = thread::spawn(move || {
        // a's S → X waits only for b's S, not for the queued new X.
        a.lock(&row(1), X, Long, Wait::Yes).unwrap();
        o1.lock().unwrap().push(1);
        thread::sleep(Duration::from_millis(20));
        assert_eq!(a.held(&row(1)), Some(X));
        drop(m1);
        a.release_all();
    });
    eventually("conversion queued", || m.stats().waits == 2);
    b.release_all();
    converter.join().unwrap();
    newcomer.join().unwrap();
    assert_eq!(*order.lock().unwrap(), vec![1, 3]);
}

#[test]
fn conversion_uses_the_supremum() {
    let m = mgl(5_000);
    let mut a = owner(&m, 1);
    let mut b = owner(&m, 2);
    a.lock(&row(1), IX, Long, Wait::Yes).unwrap();
    a.lock(&row(1), S, Long, Wait::Yes).unwrap();
    assert_eq!(a.held(&row(1)), Some(SIX));
    assert_eq!(
        b.lock(&row(1), IS, Long, Wait::No).unwrap(),
        LockStatus::Granted
    );
    assert_eq!(
        b.lock(&row(1), IX, Long, Wait::No).unwrap(),
        LockStatus::WouldBlock
    );
    assert_eq!(
        b.held(&row(1)),
        Some(IS),
        "a refused conversion changes nothing"
    );
}

#[test]
fn short_locks_go_at_release_short_and_long_ones_stay() {
    let m = mgl(5_000);
    let mut a = owner(&m, 1);
    let mut b = owner(&m, 2);
    a.lock(&row(1), S, Short, Wait::Yes).unwrap();
    a.lock(&row(2), IX, Long, Wait::Yes).unwrap();
    a.lock(&row(2), S, Short, Wait::Yes).unwrap();
    assert_eq!(a.held(&row(2)), Some(SIX));
    assert_eq!(
        b.lock(&row(2), IS, Long, Wait::No).unwrap(),
        LockStatus::Granted
    );
    assert_eq!(
        b.lock(&row(1), X, Long, Wait::No).unwrap(),
        LockStatus::WouldBlock
    );
    a.release_short();
    assert_eq!(a.held(&row(1)), None);
    assert_eq!(a.held(&row(2)), Some(IX), "SIX lowered to the long IX");
    assert_eq!(
        b.lock(&row(1), X, Long, Wait::No).unwrap(),
        LockStatus::Granted
    );
    // IX (long) still blocks S but not IX.
    let mut c = owner(&m, 3);
    assert_eq!(
        c.lock(&row(2), S, Long, Wait::No).unwrap(),
        LockStatus::WouldBlock
    );
    assert_eq!(
        c.lock(&row(2), IX, Long, Wait::No).unwrap(),
        LockStatus::Granted
    );
    // A long request already covered by a short lock makes it long.
    a.lock(&row(3), X, Short, Wait::Yes).unwrap();
    a.lock(&row(3), S, Long, Wait::Yes).unwrap();
    a.release_short();
    assert_eq!(a.held(&row(3)), Some(S));
    a.release_all();
    b.release_all();
    c.release_all();
    assert_eq!(m.table_heads(), 0);
}

/// `release_short_on` drops one name's short part only: other short locks stay, and a name
/// also held long goes back to its long mode.
#[test]
fn release_short_on_releases_one_name() {
    let m = mgl(5_000);
    let mut a = owner(&m, 1);
    let mut b = owner(&m, 2);
    a.lock(&row(1), S, Short, Wait::Yes).unwrap();
    a.lock(&row(2), S, Short, Wait::Yes).unwrap();
    a.lock(&row(3), IX, Long, Wait::Yes).unwrap();
    a.lock(&row(3), S, Short, Wait::Yes).unwrap();
    assert!(a.release_short_on(&row(1)));
    assert!(!a.release_short_on(&row(1)), "nothing short left on row 1");
    assert_eq!(a.held(&row(1)), None);
    assert_eq!(a.held(&row(2)), Some(S), "another name's short lock stays");
    assert!(a.release_short_on(&row(3)));
    assert_eq!(a.held(&row(3)), Some(IX), "SIX lowered to the long IX");
    assert_eq!(
        b.lock(&row(1), X, Long, Wait::No).unwrap(),
        LockStatus::Granted
    );
    assert_eq!(
        b.lock(&row(2), X, Long, Wait::No).unwrap(),
        LockStatus::WouldBlock
    );
    a.release_all();
    b.release_all();
    assert_eq!(m.table_heads(), 0);
}

#[test]
fn a_downgrade_wakes_waiters() {
    let m = mgl(10_000);
    let mut a = owner(&m, 1);
    a.lock(&row(1), IS, Long, Wait::Yes).unwrap();
    a.lock(&row(1), X, Short, Wait::Yes).unwrap();
    let m2 = m.clone();
    let reader = thread::spawn(move || {
        let mut b = owner(&m2, 2);
        b.lock(&row(1), IS, Long, Wait::Yes)
    });
    eventually("reader queued", || m.stats().waits == 1);
    a.release_short();
    assert_eq!(reader.join().unwrap().unwrap(), LockStatus::Granted);
    assert_eq!(a.held(&row(1)), Some(IS));
}

#[test]
fn instant_locks_are_not_kept() {
    let m = mgl(10_000);
    let mut a = owner(&m, 1);
    let mut b = owner(&m, 2);
    assert_eq!(
        a.lock(&row(1), X, Inst, Wait::Yes).unwrap(),
        LockStatus::Granted
    );
    assert_eq!((a.lock_count(), m.table_heads()), (0, 0));
    b.lock(&row(1), S, Long, Wait::Yes).unwrap();
    assert_eq!(
        a.lock(&row(1), X, Inst, Wait::No).unwrap(),
        LockStatus::WouldBlock
    );
    assert_eq!(
        a.lock(&row(1), S, Inst, Wait::No).unwrap(),
        LockStatus::Granted
    );
    // Granted at once beside b's S: nothing of a's is left in b's head (and nothing was
    // released to make it so).
    assert_eq!(
        (a.lock_count(), m.table_heads(), b.held(&row(1))),
        (0, 1, Some(S))
    );
    // An instant conversion is undone: a keeps IS.
    a.lock(&row(1), IS, Long, Wait::Yes).unwrap();
    assert_eq!(
        a.lock(&row(1), S, Inst, Wait::Yes).unwrap(),
        LockStatus::Granted
    );
    assert_eq!(a.held(&row(1)), Some(IS));
    // An instant request that waits is granted, then gone.
    let m2 = m.clone();
    let t = thread::spawn(move || {
        let mut c = owner(&m2, 3);
        let s = c.lock(&row(1), X, Inst, Wait::Yes);
        (s, c.lock_count())
    });
    eventually("instant X queued", || m.stats().waits == 1);
    b.release_all();
    a.release_all();
    let (s, n) = t.join().unwrap();
    assert_eq!((s.unwrap(), n), (LockStatus::Granted, 0));
    assert_eq!(m.table_heads(), 0);
}

/// Releasing a big lock set (more entries than the release walk starts prefetching at,
/// with weak fast-path entries among them) frees every row, whether the owner ends by
/// `release_all` or by being dropped (parked under lock inheritance).
#[test]
fn a_big_lock_set_is_released_whole() {
    let m = mgl(10_000);
    let rows = 300u64;
    let take_all = |o: &mut LockOwner| {
        o.lock(&table(), IX, Long, Wait::Yes).unwrap();
        for r in 0..rows {
            let mode = if r % 3 == 0 { S } else { X };
            assert_eq!(
                o.lock(&row(r), mode, Long, Wait::No).unwrap(),
                LockStatus::Granted
            );
        }
    };
    let mut a = owner(&m, 1);
    take_all(&mut a);
    a.release_all();
    assert_eq!((a.lock_count(), m.table_heads()), (0, 0));
    let mut b = owner(&m, 2);
    take_all(&mut b);
    drop(b);
    assert_eq!(m.table_heads(), 0);
    let mut c = owner(&m, 3);
    for r in 0..rows {
        assert_eq!(
            c.lock(&row(r), X, Long, Wait::No).unwrap(),
            LockStatus::Granted
        );
    }
    c.release_all();
    drop(a);
}

#[test]
fn a_wait_past_the_timeout_fails_naming_the_lock() {
    let m = mgl(50);
    let mut a = owner(&m, 1);
    let mut b = owner(&m, 2);
    a.lock(&row(9), X, Long, Wait::Yes).unwrap();
    let start = Instant::now();
    let e = b.lock(&row(9), S, Long, Wait::Yes).unwrap_err();
    assert!(start.elapsed() >= Duration::from_millis(50));
    match &e {
        Error::LockTimeout {
            txn,
            lock,
            mode,
            waited_ms,
        } => {
            assert_eq!(*txn, TxnId(2));
            assert_eq!(lock, "db1.table7.row9");
            assert_eq!(*mode, "S");
            assert!(*waited_ms >= 50);
        }
        other => panic!("expected a timeout, got {other}"),
    }
    assert!(e.is_retryable());
    assert_eq!(b.lock_count(), 0);
    assert_eq!(m.stats().timeouts, 1);
    // The withdrawn request left no trace: a's release empties the table.
    a.release_all();
    assert_eq!(m.table_heads(), 0);
    // A timed-out conversion keeps the mode held before.
    let mut c = owner(&m, 3);
    c.lock(&row(9), S, Long, Wait::Yes).unwrap();
    b.lock(&row(9), S, Long, Wait::Yes).unwrap();
    assert!(matches!(
        b.lock(&row(9), X, Long, Wait::Yes),
        Err(Error::LockTimeout { .. })
    ));
    assert_eq!(b.held(&row(9)), Some(S));
    assert_eq!(
        c.lock(&row(9), S, Long, Wait::No).unwrap(),
        LockStatus::Granted
    );
}

#[test]
fn withdrawing_a_waiter_lets_the_ones_behind_it_go() {
    // b's X times out; c's S, queued behind it (T4), must then be granted (T5). c queues
    // half a timeout after b, so that b's withdrawal comes well before c's own deadline
    // even on a busy machine.
    let m = mgl(1_000);
    let mut a = owner(&m, 1);
    a.lock(&row(1), S, Long, Wait::Yes).unwrap();
    let mb = m.clone();
    let b = thread::spawn(move || {
        let mut b = owner(&mb, 2);
        b.lock(&row(1), X, Long, Wait::Yes)
    });
    eventually("X queued", || m.stats().waits == 1);
    thread::sleep(Duration::from_millis(500));
    let mc = m.clone();
    let c = thread::spawn(move || {
        let mut c = owner(&mc, 3);
        let r = c.lock(&row(1), S, Long, Wait::Yes);
        (r, Instant::now())
    });
    eventually("S queued behind X", || m.stats().waits == 2);
    assert!(matches!(b.join().unwrap(), Err(Error::LockTimeout { .. })));
    let (r, _) = c.join().unwrap();
    assert_eq!(
        r.unwrap(),
        LockStatus::Granted,
        "S granted once the X ahead gave up"
    );
}

#[test]
fn owners_are_limited_and_reused() {
    let m = LockManager::new(
        &MGL,
        LockOptions {
            max_owners: 2,
            ..LockOptions::default()
        },
    )
    .unwrap();
    let a = owner(&m, 1);
    let mut b = owner(&m, 2);
    let e = m.owner(TxnId(3)).unwrap_err();
    assert!(
        matches!(
            e,
            Error::InvalidArgument {
                name: "max_owners",
                ..
            }
        ),
        "{e}"
    );
    drop(a);
    let mut c = owner(&m, 3);
    c.lock(&row(1), X, Long, Wait::Yes).unwrap();
    assert_eq!(
        b.lock(&row(1), S, Long, Wait::No).unwrap(),
        LockStatus::WouldBlock
    );
    c.reset(TxnId(4));
    assert_eq!(c.txn(), TxnId(4));
    assert_eq!(
        b.lock(&row(1), S, Long, Wait::No).unwrap(),
        LockStatus::Granted
    );
}

#[test]
fn options_are_validated() {
    for (o, field) in [
        (
            LockOptions {
                partitions: 1000,
                ..LockOptions::default()
            },
            "partitions",
        ),
        (
            LockOptions {
                max_owners: 0,
                ..LockOptions::default()
            },
            "max_owners",
        ),
    ] {
        let e = LockManager::new(&MGL, o).err().expect("rejected");
        assert!(
            matches!(e, Error::InvalidArgument { name, .. } if name == field),
            "{e}"
        );
    }
    let d = LockOptions::default();
    assert_eq!(
        (d.timeout, d.escalation_threshold),
        (Duration::from_millis(60_000), 5_000)
    );
}

#[test]
fn long_keys_lock_by_full_bytes() {
    let m = mgl(5_000);
    let mut a = owner(&m, 1);
    let mut b = owner(&m, 2);
    let k1 = vec![7u8; 300];
    let mut k2 = k1.clone();
    k2[299] = 8;
    a.lock(&LockName::key(1, 7, &k1), X, Long, Wait::Yes)
        .unwrap();
    assert_eq!(
        b.lock(&LockName::key(1, 7, &k2), X, Long, Wait::No)
            .unwrap(),
        LockStatus::Granted
    );
    assert_eq!(
        b.lock(&LockName::key(1, 7, &k1), S, Long, Wait::No)
            .unwrap(),
        LockStatus::WouldBlock
    );
}

#[test]
fn tadom_protocol_works_through_the_manager() {
    let m = LockManager::new(&TADOM, LockOptions::default()).unwrap();
    let mut a = owner(&m, 1);
    let mut b = owner(&m, 2);
    let node = LockName::node(1, 1, &[1, 3]);
    a.lock(&node, tadom::LR, Long, Wait::Yes).unwrap();
    b.lock(&node, tadom::IX, Long, Wait::Yes).unwrap();
    assert_eq!(
        b.lock(&node, tadom::CX, Long, Wait::No).unwrap(),
        LockStatus::WouldBlock,
        "CX vs LR"
    );
    a.lock(&node, tadom::IX, Long, Wait::Yes).unwrap();
    assert_eq!(a.held(&node), Some(tadom::LRIX));
}

#[test]
fn an_owner_made_after_another_was_dropped_on_its_thread_starts_empty() {
    // The second owner reuses the first one's emptied map (owner.rs, SPARE_MAP): it must
    // neither hold nor cover anything the first held. (Without lock inheritance; with it
    // the table IX would be kept: `fastpath.rs`.)
    let m = LockManager::new(
        &MGL,
        LockOptions {
            inheritance: false,
            ..LockOptions::default()
        },
    )
    .unwrap();
    let mut a = owner(&m, 1);
    a.lock(&table(), IX, Long, Wait::Yes).unwrap();
    for r in 0..20 {
        a.lock(&row(r), X, Long, Wait::Yes).unwrap();
    }
    assert_eq!(a.lock_count(), 21);
    drop(a);
    let mut b = owner(&m, 2);
    assert_eq!(b.lock_count(), 0);
    assert_eq!(b.held(&row(3)), None);
    assert!(!b.covers(&row(3), S, Long));
    // What `a` held is free for others: `b` takes X at once, without waiting.
    assert_eq!(
        b.lock(&row(3), X, Long, Wait::No).unwrap(),
        LockStatus::Granted
    );
    assert_eq!(b.lock_count(), 1);
}

#[test]
fn the_lock_waited_on_most_heads_the_hottest_locks() {
    let m = mgl(5_000);
    assert!(m.stats().hottest_locks.is_empty());
    let mut a = owner(&m, 1);
    a.lock(&row(1), X, Long, Wait::Yes).unwrap();
    a.lock(&row(2), X, Long, Wait::Yes).unwrap();
    // Two waits on row 1, one on row 2; granted requests are not counted.
    for (txn, r, n) in [(2, 1, 1), (3, 1, 2), (4, 2, 3)] {
        let m2 = m.clone();
        let waiter = thread::spawn(move || owner(&m2, txn).lock(&row(r), S, Long, Wait::Yes));
        eventually("queued", || m.stats().waits == n);
        thread::sleep(Duration::from_millis(2));
        a.release(&row(r));
        assert_eq!(waiter.join().unwrap().unwrap(), LockStatus::Granted);
        a.lock(&row(r), X, Long, Wait::Yes).unwrap();
    }
    let hot = m.stats().hottest_locks;
    assert_eq!(hot.len(), 2, "{hot:?}");
    assert_eq!(
        (hot[0].lock.as_str(), hot[0].waits),
        (row(1).to_string().as_str(), 2)
    );
    assert_eq!(
        (hot[1].lock.as_str(), hot[1].waits),
        (row(2).to_string().as_str(), 1)
    );
    assert!(hot[0].wait_us >= 2 * 1_000, "{hot:?}");
    assert_eq!(hot[0].container, row(1).container());
}

/// Owners of two managers made and dropped in turn on one thread each lock in their own
/// manager: the manager reference an owner leaves behind for the thread's next owner
/// (`owner.rs`, `SPARE_SHARED`) is taken only by an owner of the same manager.
#[test]
fn owners_of_two_managers_on_one_thread_lock_in_their_own() {
    let (m1, m2) = (mgl(5_000), mgl(5_000));
    for round in 0..4u64 {
        let mut a = owner(&m1, 10 + round);
        assert_eq!(
            a.lock(&row(1), X, Long, Wait::No).unwrap(),
            LockStatus::Granted
        );
        drop(a); // leaves m1's reference behind
        let mut b = owner(&m2, 20 + round);
        assert_eq!(
            b.lock(&row(1), X, Long, Wait::No).unwrap(),
            LockStatus::Granted
        );
        // m1 knows nothing of b's lock, m2 nothing of c's.
        let mut c = owner(&m1, 30 + round);
        assert_eq!(
            c.lock(&row(1), X, Long, Wait::No).unwrap(),
            LockStatus::Granted
        );
        let mut d = owner(&m2, 40 + round);
        assert_eq!(
            d.lock(&row(1), X, Long, Wait::No).unwrap(),
            LockStatus::WouldBlock,
            "b holds X in m2"
        );
        assert_eq!((m1.table_heads(), m2.table_heads()), (1, 1));
        drop((b, c, d));
        assert_eq!((m1.table_heads(), m2.table_heads()), (0, 0));
    }
}
