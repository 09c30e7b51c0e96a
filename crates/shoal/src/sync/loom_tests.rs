//! `loom` models of the hybrid latch (`RUSTFLAGS="--cfg loom"`): every interleaving (up to a
//! preemption bound) of small programs, checking sync invariants 1–3.

use super::HybridLatch;
use loom::cell::UnsafeCell;
use loom::sync::atomic::AtomicU64;
use loom::sync::Arc;
use loom::thread;
use std::sync::atomic::Ordering::Relaxed;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}

/// Invariant 1: while one thread holds X, nobody else reads or writes the protected cell.
/// loom's `UnsafeCell` panics on any access not ordered by happens-before.
#[test]
fn exclusive_excludes_everyone() {
    model(|| {
        let d = Arc::new((HybridLatch::new(), UnsafeCell::new(0u64)));
        let writers: Vec<_> = (0..2)
            .map(|_| {
                let d = d.clone();
                thread::spawn(move || {
                    let _x = d.0.exclusive();
                    d.1.with_mut(|p| unsafe { *p += 1 });
                })
            })
            .collect();
        let seen = {
            let _s = d.0.shared();
            d.1.with(|p| unsafe { *p })
        };
        assert!(seen <= 2);
        for w in writers {
            w.join().unwrap();
        }
        let _s = d.0.shared();
        assert_eq!(d.1.with(|p| unsafe { *p }), 2);
    });
}

/// Invariant 2: an optimistic read that overlaps a writer fails validation; a validated read
/// sees a consistent pair.
#[test]
fn optimistic_read_overlapping_write_fails_validation() {
    model(|| {
        let d = Arc::new((HybridLatch::new(), AtomicU64::new(0), AtomicU64::new(0)));
        let w = {
            let d = d.clone();
            thread::spawn(move || {
                let _x = d.0.exclusive();
                d.1.store(1, Relaxed);
                d.2.store(1, Relaxed);
            })
        };
        if let Ok(g) = d.0.try_optimistic() {
            let a = d.1.load(Relaxed);
            let b = d.2.load(Relaxed);
            if g.validate().is_ok() {
                assert_eq!(a, b, "validated optimistic read saw a torn pair");
            }
        }
        w.join().unwrap();
        let g = d.0.optimistic();
        let (a, b) = (d.1.load(Relaxed), d.2.load(Relaxed));
        g.validate().expect("no writer left");
        assert_eq!(
            (a, b),
            (1, 1),
            "optimistic read after release sees the writer's data"
        );
    });
}

/// Invariant 3: a reader parked behind a writer is woken by the writer's release.
#[test]
fn no_lost_wakeup_reader_behind_writer() {
    model(|| {
        let l = Arc::new(HybridLatch::new());
        let x = l.exclusive();
        let t = {
            let l = l.clone();
            thread::spawn(move || drop(l.shared()))
        };
        drop(x);
        t.join().unwrap();
    });
}

/// Invariant 3: a writer waiting for readers to drain is woken by the last reader.
#[test]
fn no_lost_wakeup_writer_behind_readers() {
    model(|| {
        let l = Arc::new(HybridLatch::new());
        let s = l.shared();
        let t = {
            let l = l.clone();
            thread::spawn(move || drop(l.exclusive()))
        };
        drop(s);
        t.join().unwrap();
        assert_eq!(l.version(), 1);
    });
}

/// Invariant 3 with three parties: an optimistic waiter and a writer both behind a writer.
#[test]
fn no_lost_wakeup_three_parties() {
    model(|| {
        let l = Arc::new(HybridLatch::new());
        let x = l.exclusive();
        let a = {
            let l = l.clone();
            thread::spawn(move || {
                let g = l.optimistic();
                let _ = g.validate();
            })
        };
        let b = {
            let l = l.clone();
            thread::spawn(move || drop(l.exclusive()))
        };
        drop(x);
        a.join().unwrap();
        b.join().unwrap();
        assert_eq!(l.version(), 2);
    });
}

/// Downgrade wakes readers and leaves one shared holder.
#[test]
fn downgrade_wakes_readers() {
    model(|| {
        let l = Arc::new(HybridLatch::new());
        let x = l.exclusive();
        let t = {
            let l = l.clone();
            thread::spawn(move || drop(l.shared()))
        };
        let s = x.downgrade();
        drop(s);
        t.join().unwrap();
        assert_eq!(l.shared_count(), 0);
    });
}

/// Invariant 4: a reader published in the visible-readers table of a biased latch excludes a
/// writer, and the writer's revocation waits for it (or the reader sees the revocation and
/// falls back to the counted path).
#[test]
fn biased_reader_excludes_writer() {
    model(|| {
        let d = Arc::new((HybridLatch::new(), UnsafeCell::new(0u64)));
        d.0.enable_bias();
        let w = {
            let d = d.clone();
            thread::spawn(move || {
                let _x = d.0.exclusive();
                d.1.with_mut(|p| unsafe { *p += 1 });
            })
        };
        let seen = {
            let _s = d.0.shared();
            d.1.with(|p| unsafe { *p })
        };
        assert!(seen <= 1);
        w.join().unwrap();
        assert!(!d.0.is_exclusive());
    });
}

/// Invariant 4 with `try_exclusive`: a writer that may not wait either gets X with no
/// published reader inside, or backs out leaving the bias and version as they were.
#[test]
fn biased_try_exclusive_backs_out_cleanly() {
    model(|| {
        let d = Arc::new((HybridLatch::new(), UnsafeCell::new(0u64)));
        d.0.enable_bias();
        let r = {
            let d = d.clone();
            thread::spawn(move || {
                let _s = d.0.shared();
                d.1.with(|p| unsafe { *p })
            })
        };
        let got = if let Some(_x) = d.0.try_exclusive() {
            d.1.with_mut(|p| unsafe { *p += 1 });
            true
        } else {
            false
        };
        r.join().unwrap();
        assert!(!d.0.is_exclusive());
        assert_eq!(d.0.version(), got as u64);
        // Either way the latch still works for both modes.
        drop(d.0.exclusive());
        drop(d.0.shared());
    });
}
