//! Real-thread stress of the hybrid latch: would catch a latch that lets a reader overlap a
//! writer, loses an update, or loses a wake-up (the test would hang and time out).

use super::HybridLatch;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

struct Shared {
    latch: HybridLatch,
    /// Two plain counters written only under X; equal whenever X is not held.
    plain: UnsafeCell<(u64, u64)>,
    /// The same pair as atomics, for optimistic readers (sync rule O1).
    a: AtomicU64,
    b: AtomicU64,
}

// SAFETY: `plain` is only accessed under the latch (that is what the test checks).
unsafe impl Sync for Shared {}

#[test]
fn readers_writers_and_optimists_agree() {
    const THREADS: usize = 4;
    const ITERS: u64 = 20_000;
    let d = Arc::new(Shared {
        latch: HybridLatch::new(),
        plain: UnsafeCell::new((0, 0)),
        a: AtomicU64::new(0),
        b: AtomicU64::new(0),
    });
    let validated = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let d = d.clone();
            let validated = validated.clone();
            std::thread::spawn(move || {
                for i in 0..ITERS {
                    match (i + t as u64) % 3 {
                        0 => {
                            let _x = d.latch.exclusive();
                            // SAFETY: X held.
                            let p = unsafe { &mut *d.plain.get() };
                            p.0 += 1;
                            d.a.store(p.0, Relaxed);
                            std::hint::black_box(&p);
                            p.1 += 1;
                            d.b.store(p.1, Relaxed);
                        }
                        1 => {
                            let _s = d.latch.shared();
                            // SAFETY: S held; writers need X.
                            let p = unsafe { &*d.plain.get() };
                            assert_eq!(p.0, p.1, "reader overlapped a writer");
                        }
                        _ => {
                            let g = d.latch.optimistic();
                            let a = d.a.load(Relaxed);
                            let b = d.b.load(Relaxed);
                            if g.validate().is_ok() {
                                assert_eq!(a, b, "validated read saw a torn pair");
                                validated.fetch_add(1, Relaxed);
                            }
                        }
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let writes: u64 = (0..THREADS as u64)
        .map(|t| (0..ITERS).filter(|i| (i + t) % 3 == 0).count() as u64)
        .sum();
    // SAFETY: all threads joined.
    let p = unsafe { &*d.plain.get() };
    assert_eq!(*p, (writes, writes), "lost update");
    assert!(
        validated.load(Relaxed) > 0,
        "optimistic reads never validated"
    );
    assert_eq!(d.latch.version(), writes);
}

/// The same mix on a latch that starts reader-biased: published readers, revocations by
/// writers and re-biasing all happen; the checks are the same.
#[test]
fn biased_latch_readers_writers_agree() {
    let d = Arc::new(Shared {
        latch: HybridLatch::new(),
        plain: UnsafeCell::new((0, 0)),
        a: AtomicU64::new(0),
        b: AtomicU64::new(0),
    });
    d.latch.enable_bias();
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let d = d.clone();
            std::thread::spawn(move || {
                for i in 0..20_000u64 {
                    if (i + t) % 50 == 0 {
                        let _x = d.latch.exclusive();
                        // SAFETY: X held.
                        let p = unsafe { &mut *d.plain.get() };
                        p.0 += 1;
                        std::hint::black_box(&p);
                        p.1 += 1;
                    } else if (i + t) % 50 == 1 {
                        if let Some(_x) = d.latch.try_exclusive() {
                            // SAFETY: X held.
                            let p = unsafe { &mut *d.plain.get() };
                            p.0 += 1;
                            std::hint::black_box(&p);
                            p.1 += 1;
                        }
                    } else {
                        let _s = d.latch.shared();
                        // SAFETY: S held.
                        let p = unsafe { &*d.plain.get() };
                        assert_eq!(p.0, p.1, "reader overlapped a writer");
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    // SAFETY: all threads joined.
    let p = unsafe { &*d.plain.get() };
    assert_eq!(p.0, p.1);
    assert_eq!(
        d.latch.version(),
        p.0,
        "every exclusive hold bumped the version once"
    );
    assert_eq!(d.latch.shared_count(), 0);
}
