//! # Lock manager
//!
//! Job: give transactions locks on names (database ▸ table ▸ row or key; document ▸ node ▸
//! edge) in the modes of a protocol given as data (MGL, taDOM), with three durations
//! (instant, short, long), FIFO queues without starvation, deadlock detection without false
//! positives, a wait timeout, and escalation from row to table locks — while the common
//! requests touch as little shared memory as possible (DESIGN.md §3.7; seed 001 §7.5:
//! Shore-MT's partitioned lock table and request pools; seed 000 §2.1.4: Derby's one
//! synchronised lock hash; seed 002 §3.5: BrackitDB's false deadlocks and starving
//! writers). Transactions, isolation levels and key-range locks are built on it in `txn`.
//!
//! ```text
//!   LockOwner (one per transaction, one thread at a time; parked between transactions
//!              with its table intention locks, F5)
//!     local map: name → held mode, long/short parts      ── covered? return (O1)
//!     │ weak mode on a table-level name, no strong request ─► own fast-path slot (F1)
//!     ▼ otherwise
//!   LockTable: buckets[place & mask], each { latch, heads }  ── T1–T6
//!     head: name, group mode, queue [owner, granted, wanted]
//!     │ must wait
//!     ▼
//!   Detector (one search at a time: D1–D4) ─► park on the owner's condvar until granted,
//!                                             withdrawn, or the timeout (P1)
//! ```
//!
//! Files: `mode.rs` (mode tables), `mgl.rs`, `tadom.rs` (the protocols), `name.rs`,
//! `table.rs` (buckets), `head.rs` (heads, queues, grant rules), `fastpath.rs`, `waits.rs`
//! (wait state and parking), `deadlock.rs`, `manager.rs` (options, request path), `owner.rs`
//! (the per-transaction lock set; its releases in `owner/release.rs`).
//!
//! ## Modes (`mode.rs`)
//! A protocol is a [`ModeTable`]: modes are small integers; `compatible(requested,
//! granted)` is a bit test; `supremum(a, b)` is the conversion result, computed at compile
//! time from the compatibility matrix as the least mode that covers both (`covers(h, r)`:
//! `h` conflicts with everything `r` conflicts with, as requester and as holder). Which
//! matrix entries are quoted from a source and which are derived is written in `mgl.rs`
//! and `tadom.rs` and answered by [`ModeTable::is_quoted`] and [`ModeTable::is_literal`].
//!
//! ## Lock table rules
//! 1. **T1 Partitions.** A name's bucket is its place's low bits (`LockName::place`: keys
//!    that differ only in their last byte go to consecutive buckets); the bucket's latch guards
//!    its heads and their queues. A latch is held for a short scan or update only — never
//!    while parking, never with another bucket latch.
//! 2. **T2 One head per locked name, one request per owner per head.** A conversion changes
//!    the owner's request in place (granted mode kept, wanted mode set).
//! 3. **T3 Group mode** = supremum of the granted modes, an upper bound of each: a new
//!    request compatible with it is compatible with every granted mode (the quick test);
//!    otherwise every granted request is checked. Recomputed on release and downgrade.
//! 4. **T4 Grants.** A conversion is granted iff its target (held ⊔ asked) is compatible
//!    with every *other* granted mode; it does not wait for queued requests (conversions
//!    are served first). A new request is granted iff it is compatible with every granted
//!    mode and does not conflict, either way, with any waiter ahead of it (every waiting
//!    conversion and every earlier new waiter) other than a *yielding* one (T7). So no
//!    request is overtaken by one that conflicts with it, beyond T7's bound: no starvation
//!    (unlike BrackitDB's instant granting, seed 002 §3.4.1).
//! 5. **T5 Re-scan.** After a release, downgrade or withdrawal the queue is scanned once:
//!    conversions first, then new requests in arrival order, each granted if T4 allows
//!    (or, for a waiter whose thread is off the processor, left for it to take: T7).
//! 6. **T6 No allocation per request.** Requests are 8-byte values in their head's queue;
//!    heads are recycled within their bucket (a released head becomes a spare that keeps
//!    its queue's capacity); names with up to 24 key bytes are stored inline.
//! 7. **T7 No hand-off to a sleeping thread.** Handing a released lock to the next waiter
//!    (T5) is right when that waiter's thread is running; when it is not (it has started
//!    yielding the processor or has parked: waits rule W3), the lock would sit granted but
//!    unused until the scheduler runs that thread — tens of microseconds after a futex
//!    wake-up, far longer when there are more threads than cores — while every running
//!    request for it queues behind: a lock convoy (Blasgen, Gray, Mitoma, Price, "The
//!    Convoy Phenomenon", SIGOPS OSR 13(2), 1979). So T5 grants such a new-request waiter
//!    nothing; it marks it `retry`, sets its wait word to RETRY and wakes it, and the
//!    marked waiter holds back the waiters behind it in that scan (one release wakes one
//!    thread). Until the thread runs, the waiter is *yielding*: new requests from running
//!    threads may be granted past it (T4), each such conflicting grant counted in its
//!    `passed`. When its thread runs it takes the lock if T4 allows (passing yielding
//!    waiters too), else it waits again under a new epoch and searches for deadlocks
//!    anew (D1). Fairness bound: a waiter passed `MAX_PASSED` (8) times is no longer
//!    yielding — it holds back new requests again and the next release hands it the lock
//!    directly. Conversions are always handed over (they are few and already hold the
//!    name).
//!
//! ## Owner rules
//! 1. **O1 Local first.** An owner keeps its locks in a local hash map keyed by name (the
//!    name's stored hash, never rehashed). A request covered by the held mode, or a row
//!    request covered by what the owner's table lock implies on rows, returns without
//!    touching shared memory.
//! 2. **O2 Durations.** Per name the owner records the held mode and the modes asked for
//!    with long and short duration, each covered by the held mode. `release_short` lowers
//!    the held mode to the long part (a downgrade, which never waits) or releases the name.
//!    An instant request is granted and undone at once (a conversion is downgraded back).
//! 3. **O3 One thread.** A [`LockOwner`] changes only through `&mut self`, so one thread at
//!    a time uses it; only the owner's thread releases its locks.
//!
//! ## Fast path for hot intention locks (DESIGN.md principle 3)
//! Every transaction takes IX on the tables it writes; on one lock head that would be a
//! cache line every core writes. After PostgreSQL (`src/backend/storage/lmgr/README`, "Fast
//! Path Locking"):
//! 1. **F1** A weak mode (MGL: IS, IX; taDOM: IR, IX — pairwise compatible) on a database,
//!    table or document name is recorded in the owner's own fast-path slot (16 entries,
//!    under the slot's latch) if the strong-lock counter of the name's partition (1,024
//!    counters, by hash) is zero. Weak holders never conflict with each other, and a zero
//!    counter means no one holds or waits for a mode that conflicts with a weak one.
//! 2. **F2** A strong request (a mode conflicting with some weak mode: MGL S, SIX, U, X) on
//!    such a name first increments the counter, then moves every owner's fast-path entry
//!    for the name into the lock table as a granted request, and only then asks the table
//!    — so it sees, and queues behind, every weak holder. The counter stays incremented
//!    while the strong request is queued or held; it is decremented when the lock is
//!    released or downgraded to a non-strong mode, or when the request fails.
//! 3. **F3 Memory orderings.** (a) For a slot the strong requester scans, the slot latch
//!    orders the pair: weak = lock slot → load counter → write entry → unlock; strong =
//!    increment → lock slot → read entries → unlock. If the strong requester's critical
//!    section comes second it sees the entry; if first, its increment happens before the
//!    weak requester's load (unlock/lock synchronise), which by coherence reads it. (b) A
//!    slot claimed while the strong requester scans is a Dekker pair: the claimer stores
//!    (high-water mark, `in_use`) then loads the counter; the strong requester increments
//!    the counter then loads (high-water mark, `in_use`). All these accesses are `SeqCst`,
//!    so in their single total order one side sees the other's store: the scan includes the
//!    slot, or the claimer reads a non-zero counter. Both sides also issue `fence(SeqCst)`
//!    after their store (claim and strong registration are off the hot path), which is
//!    what `loom` — it models `SeqCst` accesses as `AcqRel` — needs to verify the pair. (A
//!    `SeqCst` load is a plain load on x86-64; the fast path pays nothing for it.)
//!    `loom_tests.rs` checks (a), (b) and F4.
//! 4. **F4** An entry leaves a slot only under the slot's latch, and whoever moves it puts
//!    it in the lock table before releasing that latch; the owner releases and converts
//!    under the same latch, so it finds its lock in its slot or in the table — never
//!    neither, never both.
//! 5. **F5 Speculative lock inheritance** (Johnson, Pandis, Ailamaki, "Improving OLTP
//!    Scalability using Speculative Lock Inheritance", VLDB 2009; [`LockOptions::inheritance`]).
//!    When an owner ends, its weak long-duration fast-path locks are not released: the
//!    owner *parks* its slot with them in a thread-local, and the thread's next owner of
//!    the same manager *resumes* the slot and starts out holding them, so a stream of short
//!    transactions takes no table lock at all (for select1, the claim, entry, record and
//!    release of a table IS were about a fifth of a read). The slot's 64-bit state word
//!    (a 46-bit generation, an *unused* bit per entry, MOVED, PARKED) settles every race by
//!    an atomic read-modify-write, so parking, resuming and taking up need no latch:
//!    (a) *revocation*: a strong request whose move (F2) meets a parked slot holding its
//!    name does not move the entry — the slot's locks belong to no transaction, and its
//!    thread may never run again — but swaps the state to the next generation, drops
//!    every entry and frees the slot; the parked thread's `resume` then fails and its
//!    owner starts empty;
//!    (b) *no parking with moved locks*: a move out of an active slot first sets MOVED;
//!    the owner does not park then, and releases everything (finding moved locks in the
//!    table, F4), so no parked slot ever has requests in the lock table;
//!    (c) *take-over*: with every slot in use, a new owner revokes a parked slot and takes
//!    it (it stays `in_use`, so F3(b) is untouched);
//!    (d) *inherited is not asked for*: a resumed slot's entries are all marked unused. A
//!    strong request drops an unused entry instead of moving it (so it never waits for, or
//!    deadlocks on, a lock that no running transaction asked for); the transaction *takes
//!    up* an entry (clears its bit) the first time it asks for that name in that very mode,
//!    and finds out from the bit whether the entry is still there. A request in another
//!    mode lets the inherited lock go and asks anew (an inherited IX must not serve an IS:
//!    IX + S = SIX, and two such conversions deadlock). An entry no transaction takes up in
//!    4 in a row is released at the end of the 4th;
//!    (e) a thread that exits gives its parked slot up (thread-local destructor).
//!    A review found (d)'s cases in the first version, which resumed every inherited lock
//!    as the transaction's own.
//!    `loom_tests.rs` checks (a), (b) and (d) against a racing strong request, and (c)
//!    against a racing resume.
//!
//! ## Deadlocks (`deadlock.rs`)
//! 1. **D1 Search on block.** A request that must wait searches the waits-for graph for a
//!    cycle through itself before it parks. Edges are exactly T4's reasons to wait: waiter →
//!    owner of every granted request whose mode conflicts with the waiter's target, and —
//!    for a new request — → every waiter ahead whose request conflicts either way. The
//!    victim is the requester that closes the cycle; it gets [`crate::Error::Deadlock`] naming the
//!    cycle, its request is withdrawn, its held locks stay until it rolls back.
//! 2. **D2 No false positives.** A node is (owner, wait epoch). An edge is read under the
//!    latch of the waiter's bucket, and the blocker's wait epoch under the same latch. A
//!    waiting owner releases nothing (O3: its thread is parked), so while its epoch is
//!    unchanged it still holds, or still queues, what blocked the waiter. When a cycle is
//!    found every epoch on it is read again: all unchanged means every edge holds at that
//!    moment, i.e. the deadlock is real.
//! 3. **D3 Exactly one victim.** Searches run one at a time under the detector's mutex, and
//!    the victim withdraws its request before the mutex is released, so no later search
//!    sees the cycle. Lock order: detector mutex → bucket latch.
//! 4. **D4 No missed deadlock.** An edge out of a waiting owner appears only when that owner
//!    queues (grants, releases and withdrawals remove edges out of waiters; a fast-path move
//!    adds only weak granted modes, which conflict only with the strong request that moved
//!    them, and it queues afterwards). So the last member of a cycle to queue finds the
//!    cycle in its own search. A wait in RETRY (T7) is no node of the graph (its thread is
//!    running); when the thread waits again it does so under a new epoch, and the edges
//!    that then appear all point into it or out of it, so its own new search sees any
//!    cycle they close.
//!
//! ## Waiting and timeouts
//! **P1.** The thread that grants a waiter sets the waiter's wait word under the bucket
//! latch and, after releasing it, notifies the waiter's condition variable under the
//! waiter's park mutex; the waiter checks the word under that mutex before sleeping, so no
//! wake-up is lost. At its deadline ([`LockOptions::timeout`]) the waiter takes the bucket
//! latch: granted meanwhile means success; otherwise it withdraws (waiters behind it may
//! now be granted) and returns [`crate::Error::LockTimeout`].
//!
//! ## Escalation
//! 1. **E1** An owner counts its long row and key locks per table. When the count passes
//!    [`LockOptions::escalation_threshold`] it asks for the table lock: the protocol's read
//!    escalation mode (MGL S) if every long row lock of the table is covered by what that
//!    mode implies on rows, else the write mode (X).
//! 2. **E2** If granted, the long row locks of the table are released (a row also held short
//!    keeps its short part), and later row requests on the table are covered locally (O1).
//! 3. **E3** The request is **conditional** ([`Wait::No`]). Escalation happens inside a row
//!    request, which the B-tree makes under a page latch: waiting there would be a wait for
//!    a lock while holding a latch, a wait the detector cannot see (latches are not in the
//!    waits-for graph) — e.g. T2 waits for T1's row lock while T1, escalating, waits for
//!    T2's IX and T3 waits for T1's latch. And two transactions escalating on one table
//!    (both hold IX, both ask X) would create a conversion deadlock that exists only
//!    because of escalation. A conditional request adds no waits-for edge at all; if it is
//!    refused, the row locks are kept and escalation is tried again after another
//!    threshold's worth of row locks.
//!
//! ## Latch order
//! detector mutex → bucket latch → (owner's wait-info mutex, owner's park mutex);
//! fast-path slot latch → bucket latch. No thread holds two bucket latches or two slot
//! latches; nothing is held while parked.
//!
//! ## Not done here
//! Intention locks on parents are the caller's (`txn`); key-range modes, isolation levels
//! and the B-tree's conditional requests live above. Inheritance covers fast-path weak
//! locks only (the hot ones); row locks are never inherited. No taDOM lock depth or
//! taDOM3+ modes (NRIX, NRCX); no lock statistics per table yet.

mod deadlock;
mod fastpath;
mod head;
mod manager;
pub mod mgl;
mod mode;
mod name;
mod owner;
mod shim;
mod table;
pub mod tadom;
mod waits;

#[cfg(all(test, loom))]
mod loom_tests;
#[cfg(all(test, not(loom)))]
mod tests;

pub use manager::{
    LockDuration, LockManager, LockOptions, LockStats, LockStatus, LockWaits, Wait, HOT_LOCKS,
};
pub use mgl::MGL;
pub use mode::{Combined, LockMode, ModeTable, Spec, MAX_MODES};
pub use name::{EdgeKind, LockName, NameKind, INLINE_BYTES};
pub use owner::LockOwner;
pub use tadom::TADOM;
