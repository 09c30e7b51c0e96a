//! `loom` models of the fast-path protocol (module doc, F1–F4), run with
//! `RUSTFLAGS="--cfg loom" cargo test -p shoal --lib lock::loom_tests --release`:
//! every interleaving (up to a preemption bound) of a weak requester against a strong one.

use super::fastpath::FastPath;
use super::name::FastKey;
use loom::sync::Arc;
use loom::thread;

const KEY: FastKey = FastKey {
    kind: 1,
    db: 1,
    container: 7,
};
const HASH: u64 = 0x1234_5678_9abc_def0;
const IX: u8 = 1;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}

/// F1–F3(a): if the weak requester got the fast path, the strong requester's move saw it.
#[test]
fn weak_fast_path_lock_is_seen_by_a_strong_request() {
    model(|| {
        let fp = Arc::new(FastPath::new(2));
        let me = fp.claim(usize::MAX).expect("slot");
        let weak = {
            let fp = fp.clone();
            thread::spawn(move || fp.try_acquire(me, KEY, HASH, IX, true).is_some())
        };
        fp.begin_strong(HASH);
        let (moved, _) = fp.transfer(KEY, |owner, mode| assert_eq!((owner, mode), (me, IX)));
        let got_fast = weak.join().expect("weak thread");
        assert!(
            !got_fast || moved == 1,
            "strong request missed a fast-path lock"
        );
        fp.end_strong(HASH);
    });
}

/// F3(b): an owner that claims its slot while a strong request scans still cannot slip a
/// fast-path lock past it.
#[test]
fn slot_claimed_during_a_strong_scan_is_covered() {
    model(|| {
        let fp = Arc::new(FastPath::new(2));
        let weak = {
            let fp = fp.clone();
            thread::spawn(move || {
                let me = fp.claim(usize::MAX).expect("slot");
                fp.try_acquire(me, KEY, HASH, IX, true).is_some()
            })
        };
        fp.begin_strong(HASH);
        let (moved, _) = fp.transfer(KEY, |_, _| {});
        let got_fast = weak.join().expect("weak thread");
        assert!(
            !got_fast || moved == 1,
            "strong request missed a newly claimed slot"
        );
    });
}

/// F4: a release racing with a move finds the lock in exactly one place.
#[test]
fn release_and_move_find_the_lock_in_exactly_one_place() {
    model(|| {
        let fp = Arc::new(FastPath::new(2));
        let me = fp.claim(usize::MAX).expect("slot");
        assert!(fp.try_acquire(me, KEY, HASH, IX, true).is_some());
        let owner = {
            let fp = fp.clone();
            thread::spawn(move || fp.remove(me, KEY))
        };
        fp.begin_strong(HASH);
        let (moved, _) = fp.transfer(KEY, |_, _| {});
        let removed = owner.join().expect("owner thread");
        assert!(removed != (moved == 1), "removed {removed}, moved {moved}");
    });
}

/// F5: a weak lock that is parked, resumed and taken up, raced by a strong request. The
/// strong request accounts for the lock exactly once: moved while it is a running
/// transaction's (before the park, or once taken up), dropped while it belongs to no
/// transaction (parked, or resumed but not taken up). A moved lock is never parked; a
/// dropped one is never resumed or taken up as if still held.
#[test]
fn inherited_lock_is_moved_or_dropped_never_lost() {
    use loom::sync::atomic::{AtomicU8, Ordering::SeqCst};
    model(|| {
        let fp = Arc::new(FastPath::new(2));
        // How far the weak side got: 1 parked, 2 resumed, 3 taken up.
        let phase = Arc::new(AtomicU8::new(0));
        let weak = {
            let (fp, phase) = (fp.clone(), phase.clone());
            thread::spawn(move || {
                let me = fp.claim(usize::MAX).expect("slot");
                let Some(i) = fp.try_acquire(me, KEY, HASH, IX, true) else {
                    return (false, None, None, None);
                };
                let seen = fp.state(me);
                let parked = FastPath::may_park(seen)
                    .then(|| fp.park(me, seen, 1 << i))
                    .flatten();
                let Some(p) = parked else {
                    return (true, Some(false), None, None);
                };
                phase.store(1, SeqCst);
                if !fp.resume(me, p) {
                    return (true, Some(true), Some(false), None);
                }
                phase.store(2, SeqCst);
                let took_up = fp.take_up(me, i);
                if took_up {
                    phase.store(3, SeqCst);
                }
                (true, Some(true), Some(true), Some(took_up))
            })
        };
        fp.begin_strong(HASH);
        // Under the slot latch, as each move happens: how far the weak side was, and
        // whether the entry was marked unused (the weak side's slot is 0, its entry 0).
        let mut move_seen = None;
        let (moved, dropped) = fp.transfer(KEY, |_, _| {
            move_seen = Some((phase.load(SeqCst), FastPath::is_unused(fp.state(0), 0)));
        });
        let (got, parked, resumed, took_up) = weak.join().expect("weak thread");
        if got {
            assert_eq!(moved + dropped, 1, "strong request missed the lock");
        }
        if let Some((at, unused)) = move_seen {
            assert!(
                !unused,
                "moved an inherited lock its transaction had not taken up"
            );
            assert!(
                (at == 0 && parked == Some(false)) || (at >= 2 && took_up == Some(true)),
                "moved at phase {at}: parked {parked:?}, taken up {took_up:?}"
            );
        }
        if dropped == 1 {
            assert!(
                resumed == Some(false) || took_up == Some(false),
                "dropped a lock the transaction kept: {resumed:?} {took_up:?}"
            );
        }
        fp.end_strong(HASH);
    });
}

/// F5(c): a take-over and the parked owner's resume never both get the slot.
#[test]
fn take_over_and_resume_never_share_a_slot() {
    model(|| {
        let fp = Arc::new(FastPath::new(1));
        let me = fp.claim(usize::MAX).expect("slot");
        let i = fp.try_acquire(me, KEY, HASH, IX, true).expect("fast path");
        let parked = fp.park(me, fp.state(me), 1 << i).expect("park");
        let other = {
            let fp = fp.clone();
            thread::spawn(move || fp.claim(usize::MAX))
        };
        let resumed = fp.resume(me, parked);
        let took_over = other.join().expect("other thread").is_some();
        assert!(
            resumed != took_over,
            "resumed {resumed}, taken over {took_over}"
        );
    });
}
