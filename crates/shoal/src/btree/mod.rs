//! # B+-tree with optimistic lock coupling
//!
//! Job: map byte-string keys (memcomparable, see [`key`]) to byte-string values in pages of
//! the buffer pool, with lookups that write no shared memory, changes logged for ARIES
//! restart, structure modifications that a crash or a rollback never leaves half done, range
//! cursors that survive latch release, and a verifier (DESIGN.md §3.9). Tables (clustered on
//! their primary key) and secondary indexes are B-trees.
//!
//! ```text
//!                       root (page never moves; grows in place)      level 2
//!                   c0 │ k1 │ k2                                      inner: [key][child]
//!          ┌──────────┘    │   └──────────┐
//!     [-inf,k1)        [k1,k2)        [k2,+inf)                       level 1
//!        │ ─ right ─►     │ ─ right ─►    │
//!     leaves: slot 0 = low fence, slot 1 = high fence, 2.. = [key][tag][value]   level 0
//! ```
//!
//! The node layout is in `node.rs` and `docs/format.md` ("B-tree node"); the log records in
//! `wal.rs`.
//!
//! ## Rules
//! 1. **Fences.** Every node stores its key range `[low fence, high fence)`; a parent's
//!    separators partition its range among its children exactly, and each level's right
//!    links chain its nodes in key order. A node's fences and level never change except by a
//!    structure modification under the X latches of the node and its parent.
//! 2. **Optimistic lock coupling** (Leis et al., "The ART of Practical Synchronization",
//!    DaMoN 2016; Böttcher et al., DaMoN 2020). A descent reads every node optimistically:
//!    read the node, *validate its version*, fix the child optimistically, *validate the
//!    parent again* (so the child pointer was current when the child's version was taken),
//!    go on. Nothing is latched and nothing shared is written on the way down — in
//!    particular not the root, the hot spot that took 99.2% of Derby's latch waits (seed 000
//!    §5.1.2). Anything read from an unvalidated page, errors included, is believed only
//!    after validation; a failed validation restarts the operation from the root.
//! 3. **Writers latch one leaf.** An insert, update or delete descends optimistically and
//!    upgrades the leaf's optimistic read to an X latch (which fails if the leaf changed
//!    since it was read: restart). If the leaf lacks room, the writer lets go and *makes
//!    room* first (`smo.rs`): it descends again, allocates the new page(s) with no latch
//!    held (allocation may do I/O: DESIGN.md principle 6), upgrades parent then child, and
//!    splits; if the parent lacks room for the separator it lets go and splits the parent
//!    first. A new page's frame is fixed only when the split is certain, and is formatted
//!    and logged before its latch is released: a blank frame must never reach the disk over
//!    a freed page whose old records redo may still replay. Latches are taken top-down and, at one level, left to right;
//!    upgrades never wait for an X holder (they fail instead), so there is no latch deadlock.
//! 4. **Splits.** The left node keeps entries `0..k`, the new right node gets the rest and
//!    the left node's high fence and right link; the separator (the right node's first key)
//!    goes into the parent. `k` is the insertion point when the key goes after every entry
//!    (and next to it when it goes first in a leaf), so a tree loaded in key order is left
//!    nearly full (Derby's highest-key split); otherwise the byte-wise middle. The root splits
//!    by moving its entries into two new children and becoming their parent (root growth).
//! 5. **Structure modifications are system transactions** (DESIGN.md §3.6; ARIES nested top
//!    actions, Mohan et al., TODS 1992, §10.3). A split logs the new page's image, the left
//!    page's truncation (undo: put the right half back) and the parent's new separator (undo:
//!    remove it) as `SystemUpdate` records, and appends its `Commit` while it still holds all
//!    three latches (transaction rule 8). So a crash in the middle leaves an incomplete
//!    system transaction that restart rolls back page-oriented, before any user transaction
//!    (recovery rule 4), and a user rollback never un-splits a page other transactions use.
//! 6. **User changes are logged with logical undo.** Redo is physical to the leaf (insert,
//!    replace, remove or patch the entry with this key); undo names the tree and the key,
//!    and a rollback descends the tree to find the key wherever it now lives, splitting if
//!    putting it back needs room. Its changes are compensation records. An update that keeps
//!    the entry's length logs only the bytes that differ (a patch, `wal.rs`).
//! 7. **Cursors** hold nothing between batches: a batch is one leaf read optimistically and
//!    copied, and the next batch re-seeks from the root at the leaf's high fence (forward) or
//!    just below its low fence (backward), so every key present throughout a scan is
//!    returned exactly once, in order, whatever splits happen in between. A batch copies at
//!    most the entries its caller will take (`Cursor::with_batch_limit`); one cut short
//!    re-seeks just past its last entry.
//! 8. **Limits**: keys up to an eighth of a page (at most 1,024 bytes), key and value up to a
//!    quarter of a page, so two fences and any two entries fit a node and a split always
//!    makes room.
//! 9. [`BTree::verify`] checks rules 1, 8 and the page-level invariants of every node.
//! 10. **Merges** (`merge.rs`). A delete that leaves a node under a quarter full merges it
//!     with a sibling under the same parent (the right one, else the left one) if the result
//!     fills at most three quarters of a page (hysteresis: no split/merge thrashing), as a
//!     system transaction holding the parent and both nodes X (top-down, left to right): the
//!     left node's new image (undo: its old image) and the separator removed from the parent
//!     (undo: put back). The right node is left unchanged and freed only once the merge is
//!     durable (space invariant 5: queued with the log's end LSN, `SpaceManager::free_after`,
//!     so the merging thread does not wait for a log sync). A parent left underfull merges in turn; a root left with
//!     one child takes over the child's contents (root shrink). Optimistic readers that were
//!     on a merged-away node fail validation (its latch was taken X) and restart. A
//!     rollback's removals do not merge (`Logger::merges`): a rollback puts things back
//!     without restructuring the tree; a later delete on the leaf merges it.
//!
//! 11. **Overflow values** (`overflow.rs`). A value that would make its entry longer than a
//!     quarter page (up to [`MAX_VALUE_BYTES`]) is written by its transaction to a chain of
//!     overflow pages, each logged as a new-page image, before the leaf entry that refers to
//!     it. Chains are immutable; one is freed when the transaction that removed or replaced
//!     its entry has committed durably, or when a rollback that removed an entry whose chain
//!     it wrote is durable: its pages are queued at commit
//!     ([`crate::txn::Transaction::after_commit_logged`]) or after the rollback's
//!     compensation records, as a merge's page is (rule 10), so neither waits for the log
//!     under `Lazy` durability. Readers check each page's value id
//!     and sequence number and start over if the chain was replaced under them.
//! 12. **Read-modify-write with one descent** (`rmw.rs`). [`BTree::read_for_update`]
//!     X-locks the key, reads its value optimistically and keeps the leaf's latch version;
//!     the caller computes the new value with no latch held; [`BTree::write_read`] then
//!     upgrades that version to the X latch (rule 3's upgrade, without a second descent) and
//!     replaces the entry in place. A failed upgrade (the leaf changed), a leaf without room
//!     or a value stored out of line falls back to [`BTree::update`].
//! 13. **Last-leaf hint** (after PostgreSQL's nbtree "fastpath" for inserts into the
//!     rightmost leaf, `nbtinsert.c`). A handle remembers, per thread stripe, the leaf that
//!     took the thread's last insert, with the space manager's unlink epoch read under the
//!     leaf's X latch and a confidence of 0–3. The thread's next insert or update, if the
//!     confidence is at least 1, first reads that leaf optimistically and upgrades to its X
//!     latch (never waiting: a leaf another thread holds is a miss), and uses it if the
//!     epoch is unchanged and the leaf is a leaf of this tree whose fences cover the key;
//!     otherwise it lowers the confidence and descends. A hit, or a descent that lands on the
//!     remembered leaf anyway, raises the confidence; an insert after all of a leaf's entries
//!     sets it to at least 2. An ascending load then skips the descent for all but the first
//!     insert of each leaf, and so does a run of inserts into one place inside a leaf (a
//!     TPC-C order's lines, which go after their district's last order and before the next
//!     district's first), while random inserts stop trying the hint after a miss or two.
//!     The fences suffice for a reachable leaf (rule 1: a split narrows them under the
//!     leaf's latch); the epoch is what rules out a leaf that is no longer reachable,
//!     because a merge or root shrink bumps it while it holds the X latch of the page it
//!     unlinks (space invariant 6) — a merged-away page keeps its fences and entries until
//!     it is reused.
//! 14. **Read hint.** Each thread remembers, for a few trees, the leaf its last read
//!     (`get`, `read_for_update`) ended on, the unlink epoch read *before* the descent that
//!     found it, and how many reads in a row ended there (0–3). From 1 on, the next read
//!     first reads that leaf optimistically and uses it if it validates, is a leaf of this
//!     tree whose fences cover the key, and the epoch — read again *after* the validation —
//!     is unchanged; otherwise it descends. The epoch is read before the descent because
//!     the descent validated the leaf as reachable after that read, so an unchanged epoch
//!     later means no page was unlinked since and the leaf is still reachable; it is read
//!     after the validation because a leaf read after a merge unlinked it shows the
//!     merge's latch release, which comes after the merge bumped the epoch. A run of reads
//!     of neighbouring keys (TPC-C Delivery's order lines) then descends once per leaf;
//!     random reads never try the hint, and pay for it two thread-local accesses. Plain
//!     cells: nothing is shared, so the hint costs no cache line another core writes.
//! 15. **Batched lookups** (`batch.rs`). [`BTree::get_many`] looks up a batch of keys with
//!     their descents interleaved: level by level, one cache-missing step (frame, slots,
//!     records, search) at a time for a whole group of keys, each step prefetching the
//!     line the next one reads, so that the group's misses overlap (group prefetching,
//!     Chen et al., ICDE 2004). Each key's descent is rule 2's, interleaved: its parent is
//!     validated again after its child is fixed, and a validation failure sends that key
//!     alone through [`BTree::get`]'s path after the group. [`BTree::get_many_in`] adds
//!     the read locks: at READ COMMITTED the batch reads without locks what Commit_LSN
//!     shows committed and reads the rest through `get_in`'s lock path.
//!     [`BTree::read_many_for_update`] X-locks every key first, then reads them as one
//!     batch, each read keeping its leaf's version for [`BTree::write_read`] (rule 12).
//! 16. **Record guess.** A search of a node large enough to interpolate prefetches, before
//!     it reads the guessed slot, that slot's line and the bytes where the guessed entry's
//!     record lies if the node's records are in key order (`Node::prefetch_guess`,
//!     `Slotted::guess_record_in_order`): a node built whole, or filled by appends in key
//!     order, keeps them so; in an inner node the record before the guess is fetched too
//!     (a key between two separators takes that entry's child). The slot's miss and the
//!     record's then overlap instead of one waiting for the other. Only a prefetch: on a
//!     node in another order it fetches a wrong line, and the search reads slot and record
//!     as before. Where the hints leave a run of equal hints to bisect by the keys, the
//!     run's records are prefetched before the bisection (`Node::prefetch_run`). The
//!     guess's window (the slots `hint_search_from` reads beside it) is prefetched with it.
//! 17. **A run's end first.** Where keys share more than the hint's bytes past the hint
//!     offset, the hints find a run of entries that the keys themselves must narrow; a
//!     search compares the run's last entry first, so a key past the run (an insert in
//!     ascending order inside a leaf, TPC-C's order lines) is placed with one comparison
//!     (`Node::search`). A scan's start bisects the run as before (`search_scan_start`):
//!     its bound is often a prefix of the keys it finds, at the run's start.
//! 18. **Search summary.** A leaf's frame descriptor keeps 16 advisory bytes about the
//!     leaf (`node::summary`): the count, hint offset, first and last hints and heap layout
//!     that rule 16's guess needs. A descent hands them and its key to a prefetch as it
//!     fixes the leaf (`BufferPool::fix_optimistic_with`), so the guess's
//!     slot and record lines are fetched together with the leaf's header instead of after
//!     it. Only X-latch holders set a summary (an insert or update when it has drifted, a
//!     split for both halves), so readers still write nothing; a stale summary fetches
//!     wrong lines of the same page, nothing else. A point read whose descent so
//!     prefetched the leaf's lines searches it without prefetching them again
//!     (`Node::search_prefetched`).
//!
//! ## What recovery does with an interrupted structure change
//! Redo repeats history, so after redo the pages hold whatever prefix of the split's
//! records reached the durable log: the new page only (unreachable), or also the truncated
//! left page (its right half reachable from nowhere but the new page), or also the parent's
//! separator. The split's system transaction has no `Commit`, so undo rolls it back first:
//! the separator is removed and the left page gets its entries back from the right page,
//! which nobody else touched (it was latched until the crash). The new page is left
//! allocated but unreachable (a leak, like the space manager's reserved extents after a
//! crash; it never causes a double use).
//!
//! ## Not done yet
//! Redistribution between siblings that do not fit one page (they stay underfull),
//! key-range locks (lock-manager issue), prefix truncation of stored keys (nodes keep full
//! keys; only the search hints skip the common prefix, see `node`), suffix truncation of
//! separators. Overflow chains of a
//! transaction cut short by a crash before its leaf entry was logged are leaked (allocated,
//! unreachable), like the new pages of an interrupted split.

mod batch;
mod cursor;
mod diff;
pub mod key;
mod locking;
mod merge;
mod node;
mod overflow;
mod rmw;
mod smo;
mod tree;
mod verify;
mod wal;

#[cfg(all(test, not(loom)))]
mod batch_tests;
#[cfg(all(test, not(loom)))]
mod lane_tests;
#[cfg(all(test, not(loom)))]
mod next_key_tests;
#[cfg(all(test, not(loom)))]
mod tests;

pub use cursor::{Cursor, ScanDirection};
pub use locking::{LockSpace, LockedCursor};
pub use node::max_key_bytes;
pub use overflow::MAX_VALUE_BYTES;
pub use rmw::ReadForUpdate;
pub(crate) use tree::printable;
pub use tree::BTree;
pub use verify::VerifyReport;
pub use wal::{BTreeRm, RM_BTREE};
