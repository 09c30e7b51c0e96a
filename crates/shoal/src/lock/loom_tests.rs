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
            thread::spawn(move || fp.try_acquire(me, KEY, HASH, IX, true))
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
                fp.try_acquire(me, KEY, HASH, IX, true)
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
        assert!(fp.try_acquire(me, KEY, HASH, IX, true));
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

/// F5: a parked slot raced by a strong request. The strong request always accounts for
/// the weak lock (moved while its owner is active, or revoked while parked), and a
/// revoked slot is never resumed as if its lock were still held.
#[test]
fn parked_lock_is_moved_or_revoked_never_lost() {
    model(|| {
        let fp = Arc::new(FastPath::new(2));
        let weak = {
            let fp = fp.clone();
            thread::spawn(move || {
                let me = fp.claim(usize::MAX).expect("slot");
                if !fp.try_acquire(me, KEY, HASH, IX, true) {
                    return (false, None);
                }
                let parked = fp.park(me);
                (true, parked.map(|g| fp.resume(me, g)))
            })
        };
        fp.begin_strong(HASH);
        let (moved, revoked) = fp.transfer(KEY, |_, _| {});
        let (got, resumed) = weak.join().expect("weak thread");
        if got {
            assert_eq!(moved + revoked, 1, "strong request missed the lock");
        }
        if resumed.is_none() && got {
            assert_eq!(moved, 1, "park refused though the lock was in the slot");
        }
        assert_eq!(
            revoked == 1,
            resumed == Some(false),
            "revoked {revoked}, resumed {resumed:?}"
        );
        fp.end_strong(HASH);
    });
}
