//! The fast path for weak table-level locks: it bypasses the lock table, and a strong
//! request still sees every weak holder (F1–F4).

use super::*;
use mgl::{IS, IX, S, SIX, X};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;

use LockDuration::Long;

#[test]
fn weak_table_locks_stay_out_of_the_lock_table() {
    let m = mgl(5_000);
    let mut a = owner(&m, 1);
    let mut b = owner(&m, 2);
    a.lock(&LockName::database(1), IX, Long, Wait::Yes).unwrap();
    a.lock(&table(), IX, Long, Wait::Yes).unwrap();
    b.lock(&table(), IS, Long, Wait::Yes).unwrap();
    b.lock(&table(), IX, Long, Wait::Yes).unwrap();
    assert_eq!(m.table_heads(), 0);
    assert_eq!(b.held(&table()), Some(IX));
    a.release_all();
    b.release_all();
    assert_eq!(m.stats().fast_path_moves, 0);
}

#[test]
fn a_strong_request_sees_fast_path_holders_and_waits_for_them() {
    let m = mgl(10_000);
    let mut a = owner(&m, 1);
    a.lock(&table(), IX, Long, Wait::Yes).unwrap();
    let mut b = owner(&m, 2);
    assert_eq!(
        b.lock(&table(), S, Long, Wait::No).unwrap(),
        LockStatus::WouldBlock
    );
    assert_eq!(m.stats().fast_path_moves, 1);
    assert_eq!(m.table_heads(), 1, "a's IX now lives in the lock table");
    // While a strong request is registered, new weak requests go to the table and queue.
    let m2 = m.clone();
    let strong = thread::spawn(move || {
        let r = b.lock(&table(), X, Long, Wait::Yes);
        (r, b)
    });
    eventually("X queued", || m.stats().waits == 1);
    let mut c = owner(&m, 3);
    assert_eq!(
        c.lock(&table(), IS, Long, Wait::No).unwrap(),
        LockStatus::WouldBlock
    );
    // a converts IX → IX (covered) and releases: the moved lock is released from the table.
    a.release_all();
    let (r, mut b) = strong.join().unwrap();
    assert_eq!(r.unwrap(), LockStatus::Granted);
    b.release_all();
    drop(m2);
    assert_eq!(m.table_heads(), 0);
    // The counter is back to zero: weak locks take the fast path again.
    c.lock(&table(), IX, Long, Wait::Yes).unwrap();
    assert_eq!(m.table_heads(), 0);
}

#[test]
fn a_fast_path_lock_converts_to_a_strong_mode() {
    let m = mgl(5_000);
    let mut a = owner(&m, 1);
    let mut b = owner(&m, 2);
    a.lock(&table(), IS, Long, Wait::Yes).unwrap();
    a.lock(&table(), IX, Long, Wait::Yes).unwrap();
    a.lock(&table(), S, Long, Wait::Yes).unwrap();
    assert_eq!(a.held(&table()), Some(SIX));
    assert_eq!(
        b.lock(&table(), IS, Long, Wait::No).unwrap(),
        LockStatus::Granted
    );
    assert_eq!(
        b.lock(&table(), IX, Long, Wait::No).unwrap(),
        LockStatus::WouldBlock
    );
    a.release_short();
    a.release_all();
    assert_eq!(
        b.lock(&table(), IX, Long, Wait::No).unwrap(),
        LockStatus::Granted
    );
    b.release_all();
    assert_eq!(m.table_heads(), 0);
}

#[test]
fn a_refused_strong_request_reopens_the_fast_path() {
    let m = mgl(5_000);
    let mut a = owner(&m, 1);
    let mut b = owner(&m, 2);
    a.lock(&table(), IX, Long, Wait::Yes).unwrap();
    assert_eq!(
        b.lock(&table(), X, Long, Wait::No).unwrap(),
        LockStatus::WouldBlock
    );
    let mut c = owner(&m, 3);
    c.lock(&table(), IX, Long, Wait::Yes).unwrap();
    assert_eq!(
        m.table_heads(),
        1,
        "only a's moved IX is in the table; c used the fast path"
    );
}

/// Dekker check between weak and strong holders of one table: each holder announces its
/// mode, then looks for a conflicting one (every conflicting pair is checked from both
/// sides). If a strong lock were ever granted while a conflicting fast-path lock is held (a
/// missed move), some such pair would see each other.
fn weak_vs_strong_stress(duration: Duration) {
    let m = mgl(30_000);
    let stop = Arc::new(AtomicBool::new(false));
    // Holders per mode, indexed by the mode's index (IS, IX, S, SIX, U, X).
    let holding: Arc<[AtomicU64; 6]> = Arc::new(Default::default());
    let violations = Arc::new(AtomicU64::new(0));
    let rounds = Arc::new(AtomicU64::new(0));
    let mut hs = Vec::new();
    for t in 0..6u64 {
        let (m, stop, holding, violations, rounds) = (
            m.clone(),
            stop.clone(),
            holding.clone(),
            violations.clone(),
            rounds.clone(),
        );
        hs.push(thread::spawn(move || {
            let mut o = owner(&m, t + 1);
            let strong = t == 0 || t == 3;
            let mut i = 0u64;
            while !stop.load(SeqCst) {
                i += 1;
                // The two strong threads take S or X one round in eight (so that weak
                // rounds see a zero counter and use the fast path), IX otherwise.
                let mode = match (strong && i % 8 == 0, i % 3) {
                    (true, 0) => S,
                    (true, _) => X,
                    (false, 0) => IS,
                    (false, _) => IX,
                };
                o.lock(&table(), mode, Long, Wait::Yes).unwrap();
                holding[mode.index()].fetch_add(1, SeqCst);
                for other in MGL.modes() {
                    let mine = u64::from(other == mode);
                    if !MGL.compatible(mode, other) && holding[other.index()].load(SeqCst) > mine {
                        violations.fetch_add(1, SeqCst);
                    }
                }
                if !MGL.is_weak(mode) {
                    for _ in 0..50 {
                        std::hint::spin_loop();
                    }
                } else {
                    o.lock(&row(t * 1000 + i % 100), X, Long, Wait::Yes)
                        .unwrap();
                }
                holding[mode.index()].fetch_sub(1, SeqCst);
                o.reset(TxnId(t + 1 + 100 * i));
                rounds.fetch_add(1, SeqCst);
            }
        }));
    }
    thread::sleep(duration);
    stop.store(true, SeqCst);
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(violations.load(SeqCst), 0);
    assert!(
        m.stats().fast_path_moves > 0,
        "the strong side never met a fast-path holder"
    );
    assert!(rounds.load(SeqCst) > 100);
    assert_eq!(m.table_heads(), 0);
    assert_eq!(m.stats().deadlocks, 0);
}

#[test]
fn strong_locks_never_overlap_fast_path_holders() {
    weak_vs_strong_stress(Duration::from_millis(1500));
}

#[test]
#[ignore = "long: 30 s"]
fn strong_locks_never_overlap_fast_path_holders_long() {
    weak_vs_strong_stress(Duration::from_secs(30));
}

#[test]
fn instant_weak_table_locks_need_no_record() {
    let m = mgl(5_000);
    let mut a = owner(&m, 1);
    let mut b = owner(&m, 2);
    let instant = LockDuration::Instant;
    assert_eq!(
        a.lock(&table(), IX, instant, Wait::No).unwrap(),
        LockStatus::Granted
    );
    assert_eq!((a.lock_count(), m.table_heads()), (0, 0));
    b.lock(&table(), S, Long, Wait::Yes).unwrap();
    // A strong holder is registered: the instant IX goes to the table and conflicts.
    assert_eq!(
        a.lock(&table(), IX, instant, Wait::No).unwrap(),
        LockStatus::WouldBlock
    );
    assert_eq!(
        a.lock(&table(), IS, instant, Wait::No).unwrap(),
        LockStatus::Granted
    );
    assert_eq!(a.lock_count(), 0);
    b.release_all();
    assert_eq!(
        a.lock(&table(), IX, instant, Wait::No).unwrap(),
        LockStatus::Granted
    );
    assert_eq!(m.table_heads(), 0);
}
