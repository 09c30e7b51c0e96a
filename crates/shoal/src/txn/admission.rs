//! # Admission: at most a few user transactions running at once
//!
//! Job: keep the number of user transactions in progress near the number of processors, so
//! that a transaction holding a hot lock is not taken off its processor by other
//! transactions' threads. With more threads than cores, every hand-off of a hot lock (TPC-B's
//! one branch row) otherwise waits for the scheduler to run a woken thread on a vCPU that had
//! gone idle: `tpcb` `lazy` on 2 cores fell from 202 k transactions/s at 2 threads to 40 k at
//! 16, with 72 k context switches a second and only 1.27 of the 2 cores busy
//! (`docs/benchmarks.md`, update 3). The gate is a *soft* limit in the manner of InnoDB's
//! `innodb_thread_concurrency` (with its "tickets"): a writing transaction waits for a slot
//! before its first write lock (`Transaction::lock`, transaction rule 10) at most
//! [`MAX_WAIT`], then runs anyway, so a wait the engine cannot see (the application's
//! own threads waiting on each other inside transactions) costs time, never a deadlock.
//!
//! ```text
//!   first write lock ─► this thread holds a slot of this gate? ─ yes ─► share it (nested)
//!              │ no
//!              ▼
//!            its turns left, or nobody waits: CAS its last slot FREE → mine, else any other
//!              │ none free, or its turns are used up while others wait
//!              ▼
//!            queue (FIFO) and park until a slot is handed to it, or (at the head) one is
//!            free; after MAX_WAIT run without a slot
//!   commit (after the Commit record and the lock release, before the durability wait),
//!   rollback, drop ─► turns used up (or a `Full` commit about to wait for the log) and a
//!                     waiter queued: hand the slot to the head waiter
//!                     and unpark it; otherwise: slot FREE (the same thread takes it again
//!                     at its next transaction)
//! ```
//!
//! Invariants and memory orderings:
//! 1. A slot word is 0 (free) or the token of the thread it belongs to. It leaves 0 only by
//!    a CAS (AcqRel) of a thread that takes it, and it changes otherwise only through the
//!    ticket that holds it: back to 0 (Release), or to the token of the waiter it hands the
//!    slot to, under `queue` (Release; the waiter sees it with an Acquire load). So at most
//!    `limit` threads hold slots; threads admitted after [`MAX_WAIT`] hold none and are
//!    counted in [`Admission::counts`].
//! 2. No waiter is forgotten: a waiter is in `queue` from before its first look at the slots
//!    until it leaves with a slot (or without one, after [`MAX_WAIT`]); a holder that gives
//!    way hands its slot to the head of the queue under the `queue` mutex and unparks it
//!    (an unpark before the park makes the park return at once). A slot freed without a
//!    hand-off is found by the head waiter's poll ([`POLL`]).
//! 3. Fairness: a thread takes at most `turns` ([`TURNS`] by default) slots in a row while
//!    others wait; then it hands its slot to the longest waiter and queues behind the
//!    others. Waiters take slots in arrival order (only the head of the queue takes a free
//!    slot).
//! 4. Nesting: a thread's second transaction while it holds a slot of the same gate shares
//!    that slot (a thread never waits for itself): its ticket owns nothing, and the slot is
//!    given back when the ticket that took it is dropped — on any thread, since a ticket
//!    carries its slot (a transaction may move between threads).
//!
//! With no more threads than slots each thread keeps finding its own last slot free, so the
//! common path writes only a cache line that no other thread touches.

use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// Longest a transaction waits for a slot before it runs anyway (soft limit: 50 ms).
pub const MAX_WAIT: Duration = Duration::from_millis(50);

/// Slots a thread may take in a row while others wait (invariant 3): the default of
/// `Options::admission_turns`, which says what more or fewer turns trade.
pub const TURNS: u32 = 16;

/// How often the head waiter looks for a slot freed without a hand-off (1 ms).
pub const POLL: Duration = Duration::from_millis(1);

/// The admission gate of one transaction manager. `Send + Sync`.
pub struct Admission {
    /// One word per slot: 0 free, else its holder's token (invariant 1).
    slots: Box<[CachePadded<AtomicU64>]>,
    /// Slots a thread may take in a row while others wait (invariant 3).
    turns: u32,
    /// Queued waiters, in arrival order: (token, thread to unpark).
    queue: Mutex<VecDeque<(u64, Thread)>>,
    /// `queue.len()`, readable without the mutex.
    waiters: CachePadded<AtomicUsize>,
    /// Transactions that waited for a slot.
    waited: AtomicU64,
    /// Transactions that ran without a slot after [`MAX_WAIT`].
    over_admitted: AtomicU64,
    /// Distinguishes gates in the thread-local state.
    id: u64,
}

/// Proof of admission: gives the slot back (or hands it on) when dropped, on whichever
/// thread that happens (a transaction may move between threads).
#[must_use = "the slot is given back when the ticket is dropped"]
pub struct Ticket<'a> {
    gate: &'a Admission,
    /// The slot this ticket owns; `None` for a nested ticket that shares its thread's slot
    /// (invariant 4) and for one admitted past the limit.
    slot: Option<usize>,
}

/// A slot this thread took: (gate id, slot index). Still held while the slot's word is this
/// thread's token (invariant 4); a ticket moved to another thread and dropped there frees
/// the slot and leaves a stale entry here, which the next `enter` on this thread drops.
#[derive(Clone, Copy)]
struct Held {
    gate: u64,
    slot: usize,
}

/// The gate this thread last entered, its slot there, and its turns in a row (invariant 3).
#[derive(Clone, Copy)]
struct Last {
    gate: u64,
    slot: usize,
    turns: u32,
}

const OVER: usize = usize::MAX;

thread_local! {
    /// The slots this thread holds now, one per gate (usually none or one).
    static HELD: RefCell<Vec<Held>> = const { RefCell::new(Vec::new()) };
    static LAST: Cell<Last> = const { Cell::new(Last { gate: 0, slot: 0, turns: 0 }) };
    static TOKEN: u64 = next_token();
}

fn next_token() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Relaxed)
}

impl Admission {
    /// A gate with `limit` slots (at least 1) and [`TURNS`] turns.
    pub fn new(limit: usize) -> Admission {
        Admission::with_turns(limit, TURNS)
    }

    /// A gate with `limit` slots (at least 1) on which a thread takes at most `turns` (at
    /// least 1) slots in a row while others wait (invariant 3).
    pub fn with_turns(limit: usize, turns: u32) -> Admission {
        static IDS: AtomicU64 = AtomicU64::new(1);
        Admission {
            turns: turns.max(1),
            slots: (0..limit.max(1))
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
            queue: Mutex::new(VecDeque::new()),
            waiters: CachePadded::new(AtomicUsize::new(0)),
            waited: AtomicU64::new(0),
            over_admitted: AtomicU64::new(0),
            id: IDS.fetch_add(1, Relaxed),
        }
    }

    /// Number of slots.
    pub fn limit(&self) -> usize {
        self.slots.len()
    }

    /// Slots a thread may take in a row while others wait (invariant 3).
    pub fn turns(&self) -> u32 {
        self.turns
    }

    /// (transactions that waited for a slot, transactions that ran without one after
    /// [`MAX_WAIT`]) since the gate was made.
    pub fn counts(&self) -> (u64, u64) {
        (self.waited.load(Relaxed), self.over_admitted.load(Relaxed))
    }

    /// Takes a slot for the calling thread, waiting at most [`MAX_WAIT`] (module doc).
    pub fn enter(&self) -> Ticket<'_> {
        let token = TOKEN.with(|t| *t);
        let nested = HELD.with(|h| {
            let mut h = h.borrow_mut();
            let i = h.iter().position(|e| e.gate == self.id)?;
            if self.slots[h[i].slot].load(Relaxed) == token {
                return Some(());
            }
            h.swap_remove(i); // stale: freed by a ticket dropped on another thread
            None
        });
        if nested.is_some() {
            return Ticket {
                gate: self,
                slot: None,
            }; // invariant 4
        }
        let last = LAST.with(Cell::get);
        let mine = last.gate == self.id;
        let first = if mine { last.slot } else { 0 };
        let used_up = mine && last.turns >= self.turns;
        // Invariant 3: with others waiting, a thread whose turns are used up (it handed its
        // slot on when it left) and a newcomer both queue behind them.
        let queue_first = (used_up || !mine) && self.waiters.load(Relaxed) > 0;
        let taken = if queue_first {
            None
        } else {
            self.try_take(token, first)
        };
        let (slot, turns) = match taken {
            Some(s) => (s, if mine && !used_up { last.turns + 1 } else { 1 }),
            None => (self.wait_for_slot(token, first), 1),
        };
        LAST.with(|c| {
            c.set(Last {
                gate: self.id,
                slot: if slot == OVER { first } else { slot },
                turns,
            })
        });
        if slot == OVER {
            return Ticket {
                gate: self,
                slot: None,
            };
        }
        HELD.with(|h| {
            h.borrow_mut().push(Held {
                gate: self.id,
                slot,
            })
        });
        Ticket {
            gate: self,
            slot: Some(slot),
        }
    }

    /// A free slot taken by CAS, trying `first` before the others (invariant 1).
    fn try_take(&self, token: u64, first: usize) -> Option<usize> {
        let n = self.slots.len();
        let first = first.min(n - 1);
        (0..n).map(|k| (first + k) % n).find(|&i| {
            self.slots[i].load(Relaxed) == 0
                && self.slots[i]
                    .compare_exchange(0, token, AcqRel, Relaxed)
                    .is_ok()
        })
    }

    /// Queues and parks until a slot is handed over or, at the head of the queue, found
    /// free (invariant 2); after [`MAX_WAIT`] returns `OVER`.
    #[cold]
    fn wait_for_slot(&self, token: u64, first: usize) -> usize {
        self.waited.fetch_add(1, Relaxed);
        let deadline = Instant::now() + MAX_WAIT;
        {
            let mut q = self.queue.lock();
            q.push_back((token, std::thread::current()));
            self.waiters.store(q.len(), Relaxed);
        }
        loop {
            // Handed over? (The hand-off removed us from the queue.)
            if let Some(i) = self.handed_to(token) {
                return i;
            }
            {
                let mut q = self.queue.lock();
                let head = q.front().is_some_and(|(t, _)| *t == token);
                if head {
                    if let Some(i) = self.try_take(token, first) {
                        q.pop_front();
                        self.waiters.store(q.len(), Relaxed);
                        return i;
                    }
                }
                if Instant::now() >= deadline {
                    // Soft limit: run without a slot. A hand-off that raced with this
                    // decision is seen below (the slot already holds our token).
                    q.retain(|(t, _)| *t != token);
                    self.waiters.store(q.len(), Relaxed);
                    if let Some(i) = self.handed_to(token) {
                        return i;
                    }
                    self.over_admitted.fetch_add(1, Relaxed);
                    return OVER;
                }
            }
            std::thread::park_timeout(POLL.min(deadline.saturating_duration_since(Instant::now())));
        }
    }

    /// The slot a holder handed to the waiter `token` (invariant 1: Acquire), if any.
    fn handed_to(&self, token: u64) -> Option<usize> {
        self.slots.iter().position(|s| s.load(Acquire) == token)
    }

    /// Gives back `slot` (invariant 1), or hands it to the longest waiter (invariant 3).
    fn leave(&self, slot: usize, hand_off: bool) {
        HELD.with(|h| {
            let mut h = h.borrow_mut();
            if let Some(i) = h.iter().position(|e| e.gate == self.id && e.slot == slot) {
                h.swap_remove(i);
            }
        });
        let last = LAST.with(Cell::get);
        let used_up = last.gate == self.id && last.turns >= self.turns;
        if (used_up || hand_off) && self.waiters.load(Relaxed) > 0 {
            let mut q = self.queue.lock();
            if let Some((token, thread)) = q.pop_front() {
                self.waiters.store(q.len(), Relaxed);
                self.slots[slot].store(token, Release);
                drop(q);
                thread.unpark();
                return;
            }
        }
        self.slots[slot].store(0, Release);
    }
}

impl Ticket<'_> {
    /// Gives the slot back now. With `hand_off` (a `Full` commit about to wait for the log)
    /// it goes to the longest waiter at once, if there is one, instead of staying free for
    /// this thread's next transaction. Dropping the ticket is `release(false)`.
    pub fn release(mut self, hand_off: bool) {
        self.give_back(hand_off);
    }

    fn give_back(&mut self, hand_off: bool) {
        if let Some(slot) = self.slot.take() {
            self.gate.leave(slot, hand_off);
        }
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        self.give_back(false);
    }
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission")
            .field("limit", &self.limit())
            .field("waiters", &self.waiters.load(Relaxed))
            .field("counts", &self.counts())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::{Arc, Barrier};

    /// Invariant 1: never more than `limit` threads inside at once while none waits past
    /// MAX_WAIT (the bodies are short), and every thread gets in.
    #[test]
    fn at_most_limit_threads_run_at_once() {
        let gate = Arc::new(Admission::new(2));
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..8)
            .map(|_| {
                let (gate, inside, most) = (gate.clone(), inside.clone(), most.clone());
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        let t = gate.enter();
                        // Only tickets that own a slot count (one admitted past the limit
                        // after MAX_WAIT owns none).
                        let owns = usize::from(t.slot.is_some());
                        let now = inside.fetch_add(owns, SeqCst) + owns;
                        most.fetch_max(now, SeqCst);
                        std::thread::sleep(Duration::from_micros(20));
                        inside.fetch_sub(owns, SeqCst);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert!(gate.counts().0 > 0, "8 threads on 2 slots never waited");
        let most = most.load(SeqCst);
        assert!(most <= 2, "{most} slot holders inside at once");
        assert!(
            gate.slots.iter().all(|s| s.load(SeqCst) == 0),
            "every slot free"
        );
    }

    /// Invariant 4: a thread's nested transactions share its slot, even with one slot; the
    /// slot goes back when the ticket that took it is dropped.
    #[test]
    fn nested_entries_share_the_slot() {
        let gate = Admission::new(1);
        let a = gate.enter();
        let b = gate.enter();
        let c = gate.enter();
        drop(b);
        drop(c);
        assert_ne!(gate.slots[0].load(SeqCst), 0, "still held by a");
        drop(a);
        assert_eq!(gate.slots[0].load(SeqCst), 0);
        assert_eq!(gate.counts(), (0, 0));
    }

    /// A ticket carries its slot: dropped on another thread (a transaction that moved), it
    /// frees the slot there, and the first thread's next entry takes a slot of its own
    /// instead of sharing one it no longer has.
    #[test]
    fn a_ticket_dropped_on_another_thread_frees_its_slot() {
        let gate = Arc::new(Admission::new(1));
        // The scope keeps `gate` borrowed for the ticket moved into the other thread.
        std::thread::scope(|s| {
            let t = gate.enter();
            s.spawn(move || drop(t)).join().unwrap();
        });
        assert_eq!(gate.slots[0].load(SeqCst), 0, "freed on the other thread");
        let t = gate.enter();
        assert!(t.slot.is_some(), "a slot of its own, not a stale share");
        assert_ne!(gate.slots[0].load(SeqCst), 0);
        drop(t);
        assert_eq!(gate.slots[0].load(SeqCst), 0);
        assert_eq!(gate.counts(), (0, 0));
    }

    /// Soft limit: threads that wait on each other while inside get in after MAX_WAIT
    /// instead of deadlocking (three threads meet at a barrier with one slot).
    #[test]
    fn a_wait_the_gate_cannot_see_costs_time_not_a_deadlock() {
        let gate = Arc::new(Admission::new(1));
        let barrier = Arc::new(Barrier::new(3));
        let hs: Vec<_> = (0..3)
            .map(|_| {
                let (gate, barrier) = (gate.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let _t = gate.enter();
                    barrier.wait();
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(gate.counts().1, 2, "two admitted past the limit");
    }

    /// Invariant 3: a thread that keeps re-entering lets a waiting thread in within its
    /// turns, long before MAX_WAIT.
    #[test]
    fn a_busy_thread_gives_way_to_a_waiter() {
        let gate = Arc::new(Admission::new(1));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let busy = {
            let (gate, stop) = (gate.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(SeqCst) {
                    let _t = gate.enter();
                    std::thread::sleep(Duration::from_micros(50));
                }
            })
        };
        std::thread::sleep(Duration::from_millis(5));
        for _ in 0..5 {
            let _t = gate.enter();
        }
        stop.store(true, SeqCst);
        busy.join().unwrap();
        assert_eq!(gate.counts().1, 0, "the waiter got in without timing out");
    }

    /// Invariant 3 with the gate's own `turns`: a busy thread takes at most `turns` slots in
    /// a row while another thread is queued (one more may have been under way when it
    /// queued). Counted by the busy thread itself from the gate's waiter count, so a waiter
    /// that is slow to queue (a loaded machine) does not inflate the count.
    #[test]
    fn a_busy_thread_takes_at_most_its_turns_while_another_waits() {
        assert_eq!(Admission::with_turns(1, 0).turns(), 1, "at least one turn");
        for turns in [2u32, 5] {
            let gate = Arc::new(Admission::with_turns(1, turns));
            assert_eq!(gate.turns(), turns);
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let busy = {
                let (gate, stop) = (gate.clone(), stop.clone());
                std::thread::spawn(move || {
                    let (mut run, mut most) = (0u32, 0u32);
                    while !stop.load(SeqCst) {
                        let _t = gate.enter();
                        if gate.waiters.load(SeqCst) > 0 {
                            run += 1;
                            most = most.max(run);
                        } else {
                            run = 0;
                        }
                        std::thread::sleep(Duration::from_micros(200));
                    }
                    most
                })
            };
            std::thread::sleep(Duration::from_millis(5));
            for _ in 0..5 {
                drop(gate.enter());
                std::thread::sleep(Duration::from_millis(2));
            }
            stop.store(true, SeqCst);
            let most = busy.join().unwrap();
            assert!(
                most <= turns + 1,
                "the busy thread entered {most} times in a row with {turns} turns"
            );
            assert_eq!(gate.counts().1, 0, "the waiter got in without timing out");
        }
    }
}
