//! Per-owner wait state: what an owner waits for (for the deadlock detector and error
//! messages), the epoch-stamped state word the lock table flips when it grants, and the
//! condition variable the owner's thread parks on.
//!
//! State word: `epoch << 2 | state`, state one of IDLE, WAITING, GRANTED, CANCELLED. Every
//! wait gets a new epoch. Rule W1: the word changes only under the latch of the bucket the
//! owner waits in (to WAITING when it enqueues, to GRANTED by the thread that grants it, to
//! CANCELLED when the waiter withdraws), so a reader holding that latch sees the request
//! and the word agree. Rule W2: a waiter polls the word for a short while before it parks
//! (spin-then-block); a grant is seen either by the poll or, once parked, through `notify`,
//! which takes the park mutex, so no wake-up is lost either way.

use super::mode::NONE;
use super::name::LockName;
use crate::types::TxnId;
use crossbeam_utils::CachePadded;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Longest a waiter polls its state word before it parks (rule W2).
const SPIN_WAIT: std::time::Duration = std::time::Duration::from_micros(50);
/// How long it polls before it starts yielding the processor between polls.
const SPIN_BEFORE_YIELD: std::time::Duration = std::time::Duration::from_micros(5);

const IDLE: u64 = 0;
const WAITING: u64 = 1;
const GRANTED: u64 = 2;
const CANCELLED: u64 = 3;

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
    info: Mutex<WaitInfo>,
    park: Mutex<()>,
    cv: Condvar,
}

/// The wait states of all owners, indexed like the fast-path slots.
pub(crate) struct Owners {
    states: Box<[CachePadded<OwnerState>]>,
}

impl Owners {
    pub(crate) fn new(n: usize) -> Owners {
        Owners {
            states: (0..n)
                .map(|_| {
                    CachePadded::new(OwnerState {
                        txn: AtomicU64::new(0),
                        word: AtomicU64::new(IDLE),
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
    /// word to WAITING with a new epoch, which it returns.
    pub(crate) fn begin_wait(&self, owner: u32, name: &LockName, mode: u8, bucket: usize) -> u64 {
        let s = &self.states[owner as usize];
        let epoch = (s.word.load(Ordering::Relaxed) >> 2) + 1;
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
        s.word.store(epoch << 2 | WAITING, Ordering::Release);
        epoch
    }

    /// Marks the owner's current wait granted (under the bucket latch, W1).
    pub(crate) fn grant(&self, owner: u32) {
        let s = &self.states[owner as usize];
        let w = s.word.load(Ordering::Relaxed);
        debug_assert_eq!(w & 3, WAITING);
        s.word.store((w & !3) | GRANTED, Ordering::Release);
    }

    /// Marks the owner's wait `epoch` withdrawn (under the bucket latch, W1).
    pub(crate) fn cancel(&self, owner: u32, epoch: u64) {
        self.states[owner as usize]
            .word
            .store(epoch << 2 | CANCELLED, Ordering::Release);
    }

    /// The epoch of the owner's current wait if it is waiting.
    #[inline]
    pub(crate) fn waiting_epoch(&self, owner: u32) -> Option<u64> {
        let w = self.states[owner as usize].word.load(Ordering::Acquire);
        (w & 3 == WAITING).then_some(w >> 2)
    }

    /// True if wait `epoch` was granted.
    pub(crate) fn is_granted(&self, owner: u32, epoch: u64) -> bool {
        self.states[owner as usize].word.load(Ordering::Acquire) == (epoch << 2 | GRANTED)
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

    /// Parks until wait `epoch` is no longer WAITING or `deadline` (if any) passes. True if
    /// it was granted.
    ///
    /// Spins first (rule W2): most waits in short transactions end within microseconds (the
    /// holder commits), far sooner than a futex sleep and wake-up (tens of microseconds on
    /// the development machine). The spin polls the word for [`SPIN_WAIT`], yielding the
    /// processor after [`SPIN_BEFORE_YIELD`] so that a holder sharing this core can run,
    /// then parks. The Acquire load that sees the grant pairs with the Release store of
    /// `grant`, as in the parked path.
    pub(crate) fn park_until(&self, owner: u32, epoch: u64, deadline: Option<Instant>) -> bool {
        let s = &self.states[owner as usize];
        let waiting = epoch << 2 | WAITING;
        #[cfg(not(loom))]
        {
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
                        std::thread::yield_now();
                    }
                }
                std::hint::spin_loop();
            }
        }
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
        self.is_granted(owner, epoch)
    }
}
