//! Per-owner wait state: what an owner waits for (for the deadlock detector and error
//! messages), the epoch-stamped state word the lock table flips when it grants, and the
//! condition variable the owner's thread parks on.
//!
//! State word: `epoch << 3 | state`, state one of IDLE, WAITING, GRANTED, CANCELLED, RETRY.
//! Every wait gets a new epoch. Rule W1: the word changes only under the latch of the bucket
//! the owner waits in (to WAITING when it enqueues, to GRANTED by the thread that grants it,
//! to RETRY when a release finds the request grantable but its thread off the processor, to
//! CANCELLED when the waiter withdraws), so a reader holding that latch sees the request
//! and the word agree.
//!
//! Rule W2: a waiter allowed to spin (the only waiter of its name when it queued) polls the
//! word for a short while before it parks (spin-then-block); others park at once, since with
//! more waiters than processors the pollers would take the processors from the holder they
//! wait for; and at most half the processors' worth of threads poll at a time, whatever
//! names they wait for. A change is seen either by the poll or, once parked, through
//! `notify`, which takes the park mutex, so no wake-up is lost either way.
//!
//! Rule W3: `responsive` is true from the moment a wait begins until its thread stops
//! busy-polling (starts yielding the processor or parks); a grant to a responsive waiter is
//! picked up within microseconds, one to an unresponsive waiter only once the scheduler runs
//! its thread again (table rule T7 uses this). It is a hint read with Relaxed loads: a stale
//! value costs a wake-up or a hand-off delay, never correctness.

use super::mode::NONE;
use super::name::LockName;
use crate::types::TxnId;
use crossbeam_utils::CachePadded;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// Longest a waiter polls its state word before it parks (rule W2).
#[cfg_attr(loom, allow(dead_code))] // loom models do not spin
const SPIN_WAIT: std::time::Duration = std::time::Duration::from_micros(50);
/// How long it polls before it starts yielding the processor between polls.
#[cfg_attr(loom, allow(dead_code))]
const SPIN_BEFORE_YIELD: std::time::Duration = std::time::Duration::from_micros(5);

const IDLE: u64 = 0;
const WAITING: u64 = 1;
const GRANTED: u64 = 2;
const CANCELLED: u64 = 3;
const RETRY: u64 = 4;
/// Bits of the state word below the epoch.
const STATE_BITS: u32 = 3;
const STATE_MASK: u64 = (1 << STATE_BITS) - 1;

/// The state word of wait `epoch` in `state`.
const fn word(epoch: u64, state: u64) -> u64 {
    epoch << STATE_BITS | state
}

/// How a wait in [`Owners::park_until`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WaitEnd {
    /// The request was granted.
    Granted,
    /// The request became grantable while its thread was off the processor and was left
    /// for the thread to take (rule T7): call `LockTable::retry`.
    Retry,
    /// The deadline passed, or the wait was withdrawn.
    Other,
}

/// What an owner waits for (valid for `epoch`).
#[derive(Clone)]
pub(crate) struct WaitInfo {
    pub(crate) epoch: u64,
    pub(crate) name: Option<LockName>,
    pub(crate) mode: u8,
    pub(crate) bucket: usize,
}

pub(crate) struct OwnerState {
    txn: AtomicU64,
    word: AtomicU64,
    /// Rule W3.
    responsive: AtomicBool,
    info: Mutex<WaitInfo>,
    park: Mutex<()>,
    cv: Condvar,
}

/// The wait states of all owners, indexed like the fast-path slots.
pub(crate) struct Owners {
    states: Box<[CachePadded<OwnerState>]>,
    /// Threads busy-polling a wait right now (W2), at most `max_spinners`.
    #[cfg_attr(loom, allow(dead_code))] // loom models do not spin
    spinners: CachePadded<AtomicUsize>,
    #[cfg_attr(loom, allow(dead_code))]
    max_spinners: usize,
}

impl Owners {
    pub(crate) fn new(n: usize) -> Owners {
        Owners {
            states: (0..n)
                .map(|_| {
                    CachePadded::new(OwnerState {
                        txn: AtomicU64::new(0),
                        word: AtomicU64::new(IDLE),
                        responsive: AtomicBool::new(false),
                        info: Mutex::new(WaitInfo {
                            epoch: 0,
                            name: None,
                            mode: NONE,
                            bucket: 0,
                        }),
                        park: Mutex::new(()),
                        cv: Condvar::new(),
                    })
                })
                .collect(),
            spinners: CachePadded::new(AtomicUsize::new(0)),
            // Half the processors (at least one): the rest stay free for lock holders.
            max_spinners: std::thread::available_parallelism()
                .map_or(1, |n| n.get() / 2)
                .max(1),
        }
    }

    pub(crate) fn set_txn(&self, owner: u32, txn: TxnId) {
        self.states[owner as usize]
            .txn
            .store(txn.0, Ordering::Relaxed);
    }

    pub(crate) fn txn(&self, owner: u32) -> TxnId {
        TxnId(self.states[owner as usize].txn.load(Ordering::Relaxed))
    }

    /// Starts a wait (under the bucket latch, W1): records what is waited for and sets the
    /// word to WAITING with a new epoch, which it returns. `spin`: the thread may busy-poll
    /// before it parks (rule W2) — the lock table allows it only to the one waiter of a
    /// name, so that waiters do not take the processors from the holder they wait for.
    pub(crate) fn begin_wait(
        &self,
        owner: u32,
        name: &LockName,
        mode: u8,
        bucket: usize,
        spin: bool,
    ) -> u64 {
        let s = &self.states[owner as usize];
        let epoch = (s.word.load(Ordering::Relaxed) >> STATE_BITS) + 1;
        {
            let mut info = s.info.lock();
            info.epoch = epoch;
            info.mode = mode;
            info.bucket = bucket;
            match &mut info.name {
                Some(n) if n == name => {}
                slot => *slot = Some(name.clone()),
            }
        }
        // W3: the thread that enqueues is running, and will poll if it may spin.
        s.responsive.store(spin, Ordering::Relaxed);
        s.word.store(word(epoch, WAITING), Ordering::Release);
        epoch
    }

    /// Marks the owner's current wait granted (under the bucket latch, W1); the wait is
    /// WAITING, or RETRY if the thread was asked to take the lock itself (T7).
    pub(crate) fn grant(&self, owner: u32) {
        let s = &self.states[owner as usize];
        let w = s.word.load(Ordering::Relaxed);
        debug_assert!(matches!(w & STATE_MASK, WAITING | RETRY), "word {w:#x}");
        s.word.store((w & !STATE_MASK) | GRANTED, Ordering::Release);
    }

    /// Marks the owner's current wait (WAITING) as left for its thread to take (under the
    /// bucket latch, W1; table rule T7).
    pub(crate) fn ask_retry(&self, owner: u32) {
        let s = &self.states[owner as usize];
        let w = s.word.load(Ordering::Relaxed);
        debug_assert_eq!(w & STATE_MASK, WAITING);
        s.word.store((w & !STATE_MASK) | RETRY, Ordering::Release);
    }

    /// True if the owner's thread is busy-polling its wait (rule W3).
    #[inline]
    pub(crate) fn is_responsive(&self, owner: u32) -> bool {
        self.states[owner as usize]
            .responsive
            .load(Ordering::Relaxed)
    }

    /// Sets the owner's W3 hint (tests: makes a queued waiter look parked without timing).
    #[cfg(test)]
    #[cfg_attr(loom, allow(dead_code))] // its tests do not run under loom
    pub(crate) fn set_responsive(&self, owner: u32, responsive: bool) {
        self.states[owner as usize]
            .responsive
            .store(responsive, Ordering::Relaxed);
    }

    /// True if wait `epoch` is in the RETRY state (under the bucket latch).
    pub(crate) fn is_retry(&self, owner: u32, epoch: u64) -> bool {
        self.states[owner as usize].word.load(Ordering::Acquire) == word(epoch, RETRY)
    }

    /// Marks the owner's wait `epoch` withdrawn (under the bucket latch, W1).
    pub(crate) fn cancel(&self, owner: u32, epoch: u64) {
        self.states[owner as usize]
            .word
            .store(word(epoch, CANCELLED), Ordering::Release);
    }

    /// The epoch of the owner's current wait if it is waiting (a wait in RETRY is not: its
    /// thread is about to run, and it is not a waits-for edge's target until it waits again
    /// under a new epoch).
    #[inline]
    pub(crate) fn waiting_epoch(&self, owner: u32) -> Option<u64> {
        let w = self.states[owner as usize].word.load(Ordering::Acquire);
        (w & STATE_MASK == WAITING).then_some(w >> STATE_BITS)
    }

    /// True if wait `epoch` was granted.
    pub(crate) fn is_granted(&self, owner: u32, epoch: u64) -> bool {
        self.states[owner as usize].word.load(Ordering::Acquire) == word(epoch, GRANTED)
    }

    /// What the owner waits for, if it is still wait `epoch`.
    pub(crate) fn info(&self, owner: u32, epoch: u64) -> Option<WaitInfo> {
        let info = self.states[owner as usize].info.lock();
        (info.epoch == epoch).then(|| info.clone())
    }

    /// Wakes the owner's thread (call after the bucket latch is released). The word was
    /// set before, and the waiter checks it under `park`, so the wake-up is not lost.
    pub(crate) fn notify(&self, owner: u32) {
        let s = &self.states[owner as usize];
        let _g = s.park.lock();
        s.cv.notify_one();
    }

    /// Takes one of the `max_spinners` spinning slots (W2), if one is free.
    #[cfg(not(loom))]
    fn claim_spinner(&self) -> bool {
        self.spinners
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < self.max_spinners).then_some(n + 1)
            })
            .is_ok()
    }

    /// Parks until wait `epoch` is no longer WAITING or `deadline` (if any) passes, and says
    /// how the wait ended.
    ///
    /// Spins first (rule W2): most waits in short transactions end within microseconds (the
    /// holder commits), far sooner than a futex sleep and wake-up (tens of microseconds on
    /// the development machine). The spin polls the word for [`SPIN_WAIT`], yielding the
    /// processor after [`SPIN_BEFORE_YIELD`] so that a holder sharing this core can run,
    /// then parks. The Acquire load that sees the grant pairs with the Release store of
    /// `grant`, as in the parked path. `responsive` (W3) is cleared when the thread starts
    /// yielding: from then on a release leaves the lock for it to take (T7) rather than
    /// holding it for a thread that may not run for a while.
    pub(crate) fn park_until(&self, owner: u32, epoch: u64, deadline: Option<Instant>) -> WaitEnd {
        let s = &self.states[owner as usize];
        let waiting = word(epoch, WAITING);
        #[cfg(not(loom))]
        if s.responsive.load(Ordering::Relaxed) && self.claim_spinner() {
            let _spinning = SpinnerSlot(&self.spinners);
            let start = Instant::now();
            let mut polls = 0u32;
            while s.word.load(Ordering::Acquire) == waiting {
                polls += 1;
                if polls % 64 == 0 {
                    let spun = start.elapsed();
                    if spun >= SPIN_WAIT {
                        break;
                    }
                    if spun >= SPIN_BEFORE_YIELD {
                        s.responsive.store(false, Ordering::Relaxed);
                        std::thread::yield_now();
                    }
                }
                std::hint::spin_loop();
            }
        }
        s.responsive.store(false, Ordering::Relaxed);
        let mut g = s.park.lock();
        while s.word.load(Ordering::Acquire) == waiting {
            match deadline {
                Some(d) => {
                    if s.cv.wait_until(&mut g, d).timed_out() {
                        break;
                    }
                }
                None => s.cv.wait(&mut g),
            }
        }
        drop(g);
        let w = s.word.load(Ordering::Acquire);
        if w == word(epoch, GRANTED) {
            WaitEnd::Granted
        } else if w == word(epoch, RETRY) {
            WaitEnd::Retry
        } else {
            WaitEnd::Other
        }
    }
}

/// A claimed spinning slot, given back when dropped.
#[cfg(not(loom))]
struct SpinnerSlot<'a>(&'a AtomicUsize);

#[cfg(not(loom))]
impl Drop for SpinnerSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
