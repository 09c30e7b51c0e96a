//! Escalation from row locks to a table lock (E1–E3).

use super::*;
use mgl::{IS, IX, S, X};
use std::thread;

use LockDuration::{Long, Short};

fn escalating(threshold: usize) -> LockManager {
    LockManager::new(
        &MGL,
        LockOptions {
            escalation_threshold: threshold,
            timeout: Duration::from_secs(10),
            ..LockOptions::default()
        },
    )
    .unwrap()
}

#[test]
fn passing_the_threshold_takes_an_x_table_lock_and_drops_the_rows() {
    let m = escalating(10);
    let mut a = owner(&m, 1);
    a.lock(&table(), IX, Long, Wait::Yes).unwrap();
    for r in 0..10 {
        a.lock(&row(r), if r == 3 { X } else { S }, Long, Wait::Yes)
            .unwrap();
    }
    assert_eq!(a.row_locks(&table()), 10, "at the threshold: not yet");
    assert_eq!(a.held(&table()), Some(IX));
    a.lock(&row(10), S, Long, Wait::Yes).unwrap();
    assert_eq!(a.held(&table()), Some(X), "one X row lock: X on the table");
    assert_eq!((a.row_locks(&table()), a.lock_count()), (0, 1));
    assert_eq!(m.stats().escalations, 1);
    // Later rows are covered by the table lock, locally.
    a.lock(&row(500), X, Long, Wait::Yes).unwrap();
    assert_eq!(a.lock_count(), 1);
    assert!(a.covers(&row(77), X, Long));
    let mut b = owner(&m, 2);
    assert_eq!(
        b.lock(&table(), IS, Long, Wait::No).unwrap(),
        LockStatus::WouldBlock
    );
    a.release_all();
    assert_eq!(m.table_heads(), 0);
    assert_eq!(
        b.lock(&table(), IS, Long, Wait::No).unwrap(),
        LockStatus::Granted
    );
}

#[test]
fn shared_row_locks_escalate_to_s() {
    let m = escalating(5);
    let mut a = owner(&m, 1);
    let mut b = owner(&m, 2);
    b.lock(&table(), IS, Long, Wait::Yes).unwrap();
    b.lock(&row(100), S, Long, Wait::Yes).unwrap();
    a.lock(&table(), IS, Long, Wait::Yes).unwrap();
    for r in 0..6 {
        a.lock(&row(r), S, Long, Wait::Yes).unwrap();
    }
    assert_eq!(a.held(&table()), Some(S));
    assert_eq!(a.lock_count(), 1);
    // A reader of another row is not disturbed; a writer is kept out of the whole table.
    assert_eq!(
        b.lock(&row(3), S, Long, Wait::No).unwrap(),
        LockStatus::Granted
    );
    assert_eq!(
        b.lock(&table(), IX, Long, Wait::No).unwrap(),
        LockStatus::WouldBlock
    );
    // A short row lock is not counted and survives as it was.
    a.lock(&LockName::row(1, 9, 1), X, Short, Wait::Yes)
        .unwrap();
    assert_eq!(a.row_locks(&LockName::table(1, 9)), 0);
}

#[test]
fn a_refused_escalation_keeps_the_rows_and_never_waits() {
    let m = escalating(4);
    let mut a = owner(&m, 1);
    let mut b = owner(&m, 2);
    b.lock(&table(), IX, Long, Wait::Yes).unwrap();
    a.lock(&table(), IX, Long, Wait::Yes).unwrap();
    for r in 0..5 {
        a.lock(&row(r), X, Long, Wait::Yes).unwrap();
    }
    assert_eq!(m.stats().escalations_refused, 1);
    assert_eq!(m.stats().waits, 0, "escalation is conditional");
    assert_eq!(a.held(&table()), Some(IX));
    assert_eq!(a.row_locks(&table()), 5);
    // Tried again only after another threshold's worth of rows.
    for r in 5..8 {
        a.lock(&row(r), X, Long, Wait::Yes).unwrap();
    }
    assert_eq!(m.stats().escalations_refused, 1);
    b.release_all();
    a.lock(&row(8), X, Long, Wait::Yes).unwrap();
    assert_eq!(m.stats().escalations, 1);
    assert_eq!(a.held(&table()), Some(X));
    assert_eq!(a.lock_count(), 1);
}

#[test]
fn two_transactions_escalating_at_once_do_not_deadlock() {
    let m = escalating(50);
    // Both hold the table's IX before either locks a row: without the barrier, a thread
    // that starts after the other escalated to X would (rightly) wait for the table.
    let both_in = std::sync::Arc::new(std::sync::Barrier::new(2));
    let ts: Vec<_> = (0..2u64)
        .map(|t| {
            let m = m.clone();
            let both_in = both_in.clone();
            thread::spawn(move || {
                let mut o = owner(&m, t + 1);
                o.lock(&table(), IX, Long, Wait::Yes).unwrap();
                both_in.wait();
                for r in 0..200 {
                    o.lock(&row(t * 10_000 + r), X, Long, Wait::Yes).unwrap();
                }
                (o.held(&table()), o.row_locks(&table()))
            })
        })
        .collect();
    let results: Vec<_> = ts.into_iter().map(|t| t.join().unwrap()).collect();
    let s = m.stats();
    assert_eq!((s.deadlocks, s.timeouts, s.waits), (0, 0, 0));
    // Whoever escalated holds X and no rows; the other kept its 200 rows under IX.
    for (held, rows) in results {
        assert!(
            held == Some(X) && rows == 0 || held == Some(IX) && rows == 200,
            "{held:?} {rows}"
        );
    }
}
