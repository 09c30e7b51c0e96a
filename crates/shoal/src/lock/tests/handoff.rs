//! Rule T7 on the lock table itself, deterministically: a released lock is left for a
//! waiter whose thread is off the processor, running requests may pass it at most
//! `MAX_PASSED` times, and a lost retry waits again under a new epoch. The whole-manager
//! behaviour (threads that really park) is covered by the queue and deadlock tests and by
//! `handoff_stress` below.

use super::super::head::MAX_PASSED;
use super::super::mgl::MGL;
use super::super::mode::NONE;
use super::super::table::{LockTable, Outcome, Wakeups};
use super::super::waits::Owners;
use super::*;
use std::sync::Arc;

const X: u8 = mgl::X.0;

struct Setup {
    table: LockTable,
    owners: Owners,
    name: LockName,
}

fn setup() -> Setup {
    Setup {
        table: LockTable::new(64, &MGL),
        owners: Owners::new(8),
        name: row(1),
    }
}

impl Setup {
    fn ask(&self, owner: u32, wait: bool) -> Outcome {
        self.table
            .request(&self.owners, owner, &self.name, NONE, X, wait, false)
    }
    fn release(&self, owner: u32) {
        let mut w = Wakeups::default();
        assert!(self.table.release(&self.owners, owner, &self.name, &mut w));
    }
    fn retry(&self, owner: u32, epoch: u64) -> Option<u64> {
        let mut w = Wakeups::default();
        self.table
            .retry(&self.owners, owner, &self.name, epoch, &mut w)
    }
    fn ask_mode(&self, owner: u32, mode: u8) -> Outcome {
        self.table
            .request(&self.owners, owner, &self.name, NONE, mode, true, false)
    }
    /// Owner `o` queues behind the holder and then looks parked (W3).
    fn queue_parked(&self, o: u32) -> u64 {
        let Outcome::Enqueued(e) = self.ask(o, true) else {
            panic!("owner {o} should have queued");
        };
        self.owners.set_responsive(o, false);
        e
    }
}

#[test]
fn a_release_leaves_the_lock_to_a_parked_waiter_and_a_running_request_may_take_it() {
    let s = setup();
    assert_eq!(s.ask(0, true), Outcome::Granted);
    let e1 = s.queue_parked(1);
    s.release(0);
    assert!(
        s.owners.is_retry(1, e1),
        "the parked waiter is asked to take the lock"
    );
    assert!(!s.owners.is_granted(1, e1));
    // A running request passes the yielding waiter.
    assert_eq!(s.ask(2, true), Outcome::Granted);
    // The waiter's thread runs while 2 holds the lock: it waits again, under a new epoch.
    let e1b = s.retry(1, e1).expect("lost the retry");
    assert!(e1b > e1);
    assert_eq!(s.owners.waiting_epoch(1), Some(e1b));
    // Still looking parked: the next release asks it again; a retry with the lock free wins.
    s.owners.set_responsive(1, false);
    s.release(2);
    assert!(s.owners.is_retry(1, e1b));
    assert_eq!(s.retry(1, e1b), None);
    assert!(s.owners.is_granted(1, e1b));
    s.release(1);
    assert_eq!(s.table.active_heads(), 0);
}

#[test]
fn a_responsive_waiter_is_handed_the_lock_directly() {
    let s = setup();
    assert_eq!(s.ask(0, true), Outcome::Granted);
    let Outcome::Enqueued(e1) = s.ask(1, true) else {
        panic!("should queue")
    };
    s.release(0);
    assert!(s.owners.is_granted(1, e1));
    assert_eq!(s.ask(2, false), Outcome::WouldBlock);
    s.release(1);
}

#[test]
fn one_release_asks_one_waiter_and_the_others_stay_queued() {
    let s = setup();
    assert_eq!(s.ask(0, true), Outcome::Granted);
    let e1 = s.queue_parked(1);
    let e2 = s.queue_parked(2);
    s.release(0);
    assert!(s.owners.is_retry(1, e1));
    assert_eq!(
        s.owners.waiting_epoch(2),
        Some(e2),
        "no herd: 2 stays waiting"
    );
    assert_eq!(s.retry(1, e1), None);
    s.release(1);
    assert!(s.owners.is_retry(2, e2));
    assert_eq!(s.retry(2, e2), None);
    s.release(2);
    assert_eq!(s.table.active_heads(), 0);
}

#[test]
fn a_waiter_passed_max_passed_times_holds_back_new_requests_and_is_handed_the_lock() {
    let s = setup();
    assert_eq!(s.ask(0, true), Outcome::Granted);
    let e1 = s.queue_parked(1);
    s.release(0);
    assert!(s.owners.is_retry(1, e1));
    // Running requests pass the yielding waiter, each pass counted, up to the bound.
    for i in 0..MAX_PASSED {
        assert_eq!(s.ask(2, false), Outcome::Granted, "pass {i}");
        s.release(2);
        if i + 1 < MAX_PASSED {
            // The release leaves it alone: it has been asked already.
            assert!(s.owners.is_retry(1, e1), "pass {i}");
        }
    }
    // Passed MAX_PASSED times: no longer yielding, so the last release handed it the lock.
    assert!(s.owners.is_granted(1, e1));
    assert_eq!(s.ask(2, false), Outcome::WouldBlock);
    let Outcome::Enqueued(e3) = s.ask(3, true) else {
        panic!("3 must queue behind the holder")
    };
    // The thread then finds its request granted; releasing hands the lock to 3 (running).
    assert_eq!(s.retry(1, e1), None);
    s.release(1);
    assert!(s.owners.is_granted(3, e3));
    s.release(3);
    assert_eq!(s.table.active_heads(), 0);
}

/// A waiter held back by a marked (retrying) one is granted as soon as the marked one takes
/// the lock, if the two modes go together — here MGL's U, which may join a granted S but
/// not queue past a waiting one (found in review: it waited for the next release).
#[test]
fn a_take_grants_the_waiters_it_held_back() {
    let s = setup();
    let (sm, um) = (mgl::S.0, mgl::U.0);
    assert_eq!(s.ask(0, true), Outcome::Granted); // X
    let Outcome::Enqueued(e1) = s.ask_mode(1, sm) else {
        panic!("S must queue behind X")
    };
    s.owners.set_responsive(1, false);
    let Outcome::Enqueued(e2) = s.ask_mode(2, um) else {
        panic!("U must queue behind X")
    };
    s.owners.set_responsive(2, false);
    s.release(0);
    assert!(s.owners.is_retry(1, e1));
    assert_eq!(
        s.owners.waiting_epoch(2),
        Some(e2),
        "held back by the marked S"
    );
    assert_eq!(s.retry(1, e1), None, "S taken");
    // U goes with the granted S: the take's rescan does not leave it waiting for the next
    // release; it is asked to take the lock (its thread looks parked) and does.
    assert!(s.owners.is_retry(2, e2), "left waiting after the take");
    assert_eq!(s.retry(2, e2), None, "U taken next to S");
    s.release(1);
    s.release(2);
    assert_eq!(s.table.active_heads(), 0);
}

/// A waiter that gives up (deadline, deadlock victim) just as the lock was left for it takes
/// the lock instead of failing, as it would have kept a grant made in that window.
#[test]
fn a_cancel_in_retry_takes_a_free_lock() {
    let s = setup();
    assert_eq!(s.ask(0, true), Outcome::Granted);
    let e1 = s.queue_parked(1);
    s.release(0);
    assert!(s.owners.is_retry(1, e1));
    let mut w = Wakeups::default();
    assert!(s.table.cancel(&s.owners, 1, &s.name, e1, &mut w), "taken");
    assert!(s.owners.is_granted(1, e1));
    // Taken by someone else meanwhile: the cancel withdraws.
    let e3 = s.queue_parked(3);
    s.release(1);
    assert!(s.owners.is_retry(3, e3));
    assert_eq!(s.ask(2, true), Outcome::Granted, "a running request passes");
    assert!(
        !s.table.cancel(&s.owners, 3, &s.name, e3, &mut w),
        "withdrawn"
    );
    s.release(2);
    assert_eq!(s.table.active_heads(), 0);
}

/// With more threads than cores and one hot row, every transaction gets the lock, none
/// waits past the timeout, and mutual exclusion holds (a counter updated non-atomically
/// under the lock ends exact).
#[test]
fn handoff_stress_keeps_mutual_exclusion_and_progress() {
    let m = mgl(10_000);
    let threads = 16;
    let rounds = 300;
    let counter = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let m = m.clone();
            let counter = counter.clone();
            std::thread::spawn(move || {
                for r in 0..rounds {
                    let mut o = owner(&m, 1000 + t * rounds + r);
                    o.lock(&row(9), mgl::X, LockDuration::Long, Wait::Yes)
                        .expect("granted");
                    // Read-modify-write in two steps: a second holder would lose an update.
                    let v = counter.load(std::sync::atomic::Ordering::Relaxed);
                    if r % 7 == 0 {
                        std::thread::yield_now();
                    }
                    counter.store(v + 1, std::sync::atomic::Ordering::Relaxed);
                    o.release_all();
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(
        counter.load(std::sync::atomic::Ordering::Relaxed),
        threads * rounds
    );
    let st = m.stats();
    assert_eq!((st.timeouts, st.deadlocks), (0, 0));
    assert!(st.retries_lost <= st.retries);
    assert_eq!(m.table_heads(), 0);
}
