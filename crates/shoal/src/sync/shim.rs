//! Atomics and parking, switched to `loom`'s models under `--cfg loom`.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU32, AtomicU64};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicU32, AtomicU64};

/// Spin-wait hint; under loom a yield so the model checker can schedule the other thread.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}

/// Gives up the processor (a scheduling point under loom).
#[inline]
pub(crate) fn yield_now() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::yield_now();
}

/// Number of backoff rounds before parking (each round spins 2^round hints, up to 2^6).
/// Zero under loom so the models exercise the parking path.
#[cfg(not(loom))]
pub(crate) const SPIN_ROUNDS: u32 = 10;
#[cfg(loom)]
pub(crate) const SPIN_ROUNDS: u32 = 0;

/// Parks and wakes threads waiting on one latch.
///
/// Real build: zero-sized; uses `parking_lot_core`'s global hash of wait queues keyed by the
/// latch address. Loom build: a mutex and condition variable per latch with the same
/// contract: `park` runs `validate` under the queue lock and sleeps only if it returns true;
/// `unpark_all` takes the same lock, so a waiter that validated before it is woken.
#[derive(Default)]
pub(crate) struct Parker {
    #[cfg(loom)]
    queue: loom::sync::Mutex<()>,
    #[cfg(loom)]
    cv: loom::sync::Condvar,
}

impl Parker {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Parker {
        Parker {}
    }

    #[cfg(loom)]
    pub(crate) fn new() -> Parker {
        Parker::default()
    }

    #[cfg(not(loom))]
    pub(crate) fn park(&self, key: usize, validate: impl FnOnce() -> bool) {
        // SAFETY: `key` is the address of a live latch; the callbacks do not call back into
        // parking_lot_core and do not panic.
        unsafe {
            parking_lot_core::park(
                key,
                validate,
                || {},
                |_, _| {},
                parking_lot_core::DEFAULT_PARK_TOKEN,
                None,
            );
        }
    }

    #[cfg(not(loom))]
    pub(crate) fn unpark_all(&self, key: usize) {
        // SAFETY: as for `park`.
        unsafe {
            parking_lot_core::unpark_all(key, parking_lot_core::DEFAULT_UNPARK_TOKEN);
        }
    }

    #[cfg(loom)]
    pub(crate) fn park(&self, _key: usize, validate: impl FnOnce() -> bool) {
        let g = self.queue.lock().unwrap();
        if validate() {
            drop(self.cv.wait(g).unwrap());
        }
    }

    #[cfg(loom)]
    pub(crate) fn unpark_all(&self, _key: usize) {
        let _g = self.queue.lock().unwrap();
        self.cv.notify_all();
    }
}
