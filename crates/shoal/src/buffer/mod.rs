//! # Buffer pool
//!
//! Job: cache pages of a data file in a fixed array of frames allocated at open, hand them
//! out fixed in optimistic, shared or exclusive mode, and write dirty pages back — obeying
//! the WAL rule — when they are evicted, cleaned in the background, or flushed at close.
//! DESIGN.md §3.3; the scalability problems it avoids are Shore's single buffer-pool mutex
//! (Shore-MT paper §7.1–7.2) and Derby's hot root-page latch (seed 000 §5.1.2).
//!
//! ```text
//!   fix(pid) ─► frame hint ──(optimistic fixes: a guess, checked)──► frame index
//!                  │ wrong guess, or an S/X fix                          ▲
//!                  ▼                                                     │ hit
//!               page table ──(optimistic bucket read: no write)──────────┘
//!                  │ miss
//!                  ▼
//!   CLOCK hand ─► try-X victim ─► write back if dirty ─► insert X-latched ─► read ─► guard
//!                                    (force_log first)     ("being read")   (no table latch)
//!
//!   frames: [Frame; n]  64-byte control blocks: latch, page id, chain link, ref bit, dirty, rec LSN
//!   memory: [AtomicU64; n * page_size/8]  page images (atomic words: see `sync`, rule O1)
//!   dirty map: [AtomicU64; n/64]  a bit per frame that may be dirty (`dirty_map`): what the
//!              cleaner, checkpoints and flush_all walk instead of every control block
//! ```
//!
//! ## Rules
//! 1. **Latch order**: frame X before bucket X; no thread waits for a frame latch while
//!    holding a bucket latch, and bucket latches are held only for a chain update. A thread
//!    holds at most one frame latch from inside the pool (the victim or the page it loads).
//! 2. **The latch is the pin.** A frame is evicted only by a thread that wins `try_exclusive`
//!    on it, which is impossible while anyone holds it in S or X; so a fixed page never moves.
//!    This replaces a separate pin count (DESIGN.md's "pin-if-pinned" CAS) and makes a hit one
//!    atomic read-modify-write instead of two. A frame's page id changes only under its X latch
//!    (and its bucket's X latch), so after latching, a fixer re-checks the page id and looks
//!    again if the frame was reassigned in between. An optimistic fix takes no latch at all:
//!    its version validation covers the page-id check. That check is also what makes the
//!    frame hints safe: a frame that holds the page id is the page's frame (a frame leaves
//!    the table only with its page id reset, under its X latch), however it was found.
//! 3. **Misses** install the victim frame in the table already X-latched, then read with no
//!    table latch held; concurrent fixers of the same page find the frame and wait on its latch
//!    instead of reading twice. A failed read removes the frame again and returns the error.
//! 4. **Replacement** is CLOCK with an atomic hand; candidates are taken with try-latch, never
//!    waited for; the pool holds no latch other than the victim's X while it writes it
//!    back. A caller that holds latches of its own asks for a clean victim instead
//!    (`fix_uninit_clean`, a B-tree split's new page) and, turned away, drops them and
//!    has frames written back first (`clean_frames`); only after three such rounds does a
//!    split take a dirty victim under its latches (the debug audit in `sync::held` counts
//!    each such write).
//! 5. **WAL rule and recovery LSNs**: before a dirty page is written, `WalHook::force_log` is
//!    called with its page LSN. A page turning dirty records the log's current end as its
//!    recovery LSN *before* its log record is appended, so the cleaner can publish a safe
//!    lower bound without latching (see `cleaner`).
//! 6. **Sticky failure**: after a write-back or sync error no page is written again and
//!    nothing is evicted (a page written since the last good sync may read back old after an
//!    fsync error, since the kernel may have dropped it); resident pages are still served,
//!    dirty pages stay in memory (never silently dropped), and misses and writes answer
//!    `Error::PoolFailed` naming the first failure until the database is reopened
//!    (PostgreSQL's 2018 fsync lesson).
//! 7. **Checksums** are sealed on a private copy of the page when it is written and verified
//!    when it is read (page rule 1); a bad page is `Error::Corruption` naming the page.
//! 8. **Clean after the write**: a page is marked clean only after its write returned, so a
//!    flusher that finds it dirty either writes it itself or waits for the writer's latch;
//!    `flush_all`'s sync therefore follows every write of every page dirty at its start.
//! 9. **No page from the future**: by rule 5 a page on disk has a page LSN below the log's
//!    durable end, so a page read with a page LSN at or past `WalHook::current_lsn` (once a
//!    log exists) is `Error::Corruption`: the log lost records the page depends on. A cheap
//!    second line: once the new log passes the page's LSN it cannot tell. What makes
//!    restart refuse such a log is the log anchor's rule A6 (`WalHook::force_log` raises the
//!    durable floor above every page written: by the cleaner, a checkpoint, a close or an
//!    eviction).
//! 10. **Evictions prefer pages below the durable floor**: in its first two CLOCK rounds a
//!     victim search passes over a dirty page whose page LSN is at or above
//!     `WalHook::durable_floor`, leaving it to the cleaner (one floor raise covers a whole
//!     pass); only the later rounds write such a page, and pay for the raise (rule 9). The
//!     log's flusher keeps the floor close behind the durable end (log anchor rule A3), so
//!     such pages are the recently changed ones, which CLOCK mostly keeps anyway. Only
//!     while a cleaner runs: without one, nothing else writes those pages, and a pool full
//!     of them left a single clean frame for every miss — a B-tree descent, which needs a
//!     parent and a child resident at once, then evicted its own parent on every try and
//!     restarted forever (found by review; the B-tree test
//!     `a_transaction_dirtying_more_than_the_pool_makes_progress_without_a_cleaner`).
//!
//! ## Not done here
//! No prefetch or read-ahead; one data file per pool; pages are never pinned without a latch
//! (cursors re-seek by key instead, DESIGN.md §3.9); the pool does not allocate pages (that is
//! `space`).

mod cleaner;
mod dirty_map;
mod frame;
mod guard;
mod mem;
mod page_table;
mod pool;
mod wal;

#[cfg(all(test, not(loom)))]
mod tests;

pub use guard::{ExclusiveGuard, OptimisticPage, SharedGuard};
pub use pool::BufferPool;
pub use wal::{NoWal, WalHook};
