//! Structure modifications: node splits and root growth, each one system transaction whose
//! records are undoable until its `Commit` (btree rules 3–5).

use super::node::NODE_SLOT_SIZE;
use super::node::{inner_entry, Node, NodeImage, MAX_LEVEL};
use super::tree::{Attempt, BTree, Seek};
use super::wal;
use crate::buffer::ExclusiveGuard;
use crate::error::Result;
use crate::page::{PageRead, PageType};
use crate::txn::{Transaction, TxnManager};
use crate::types::{Lsn, PageId};

/// Times a split or root growth drops its latches to have a dirty frame written back before
/// it takes any frame under them (`BTree::new_frames`).
const MAX_CLEANINGS: u32 = 3;

/// Where a node splits: entries `0..keep` stay, the rest (for an inner node: after entry
/// `keep`, whose child becomes the right node's leftmost) move right, and `sep` (entry
/// `keep`'s key, or for a run's leaf split the key being inserted, [`SplitPlan::choose`])
/// becomes the right node's low fence and the separator in the parent.
struct SplitPlan {
    keep: usize,
    sep: Vec<u8>,
}

impl SplitPlan {
    /// Chooses the split point for making room for `key` (btree rule 4): at the insertion
    /// point when `key` goes after every entry (an ascending load leaves full nodes behind),
    /// next to it when it goes first in a leaf, around it when `run` says `key` continues
    /// an ascending run of inserts inside a leaf, otherwise the byte-wise middle.
    ///
    /// A run (TPC-C's order lines: each district's next order goes after its last one and
    /// before the next district's first) keeps exactly one entry after it in its node, the
    /// next key its inserts lock, so next-key locking never reads a sibling: the first run
    /// split moves every later entry but that one right; once the run has filled the node up
    /// to it, `key` itself becomes the separator, so the run so far stays left, full, and
    /// goes on in the right node before that same entry. So runs leave full leaves behind
    /// as an ascending load does (InnoDB likewise splits at the insertion point when a
    /// page's last inserts were in ascending order).
    fn choose<P: PageRead + ?Sized>(
        n: &Node<'_, P>,
        tree: &BTree,
        key: &[u8],
        run: bool,
    ) -> Result<Self> {
        let count = n.entry_count();
        if count < 2 {
            return Err(tree.corrupt(
                n.page_id(),
                format!("a node with {count} entries has no room (entries over the limit?)"),
            ));
        }
        let pos = match n.search(key)? {
            Ok(i) | Err(i) => i,
        };
        let keep = if pos >= count {
            count - 1
        } else if pos == 0 && n.is_leaf() {
            1
        } else if run && n.is_leaf() && pos + 1 < count {
            // Shed the entries after the run but the first: the run goes on in this node,
            // before that entry (which its inserts lock as their next key).
            pos + 1
        } else if run && n.is_leaf() && n.entry_len(pos)? + NODE_SLOT_SIZE > key.len() {
            // The run filled the node up to the one entry after it: the run so far stays
            // left, full; `key` itself is the separator, so it and that entry go right. The
            // left node's new high fence is `key` (one tag byte more): the entry that moves
            // must free at least that much, or the truncation would not fit.
            return Ok(SplitPlan {
                keep: pos,
                sep: key.to_vec(),
            });
        } else {
            // The entries' total from the page header, so only the left half's lengths are
            // read (summing every entry's length was a sixth of a leaf split's instructions).
            let half = n.entry_bytes()? / 2;
            let mut acc = 0;
            let mut k = 0;
            while k < count {
                let len = n.entry_len(k)?;
                if acc + len > half {
                    break;
                }
                acc += len;
                k += 1;
            }
            k.clamp(1, count - 1)
        };
        // A leaf's right half must fit under its new low fence: past short entries, a long
        // key moves the split further right (`Node::first_fitting_split`).
        let keep = if n.is_leaf() {
            n.first_fitting_split(keep)?.ok_or_else(|| {
                tree.corrupt(n.page_id(), "no split point leaves halves that fit a page")
            })?
        } else {
            keep
        };
        Ok(SplitPlan {
            keep,
            sep: n.key(keep)?,
        })
    }

    /// The right half of node `n`: the entries that move (from `keep` in a leaf; after
    /// `keep` in an inner node, whose entry `keep`'s child becomes the half's leftmost), `sep`
    /// as low fence, `n`'s high fence and right sibling. Copies only the entries that move —
    /// one of them when an ascending load splits at the insertion point.
    fn right_half<P: PageRead + ?Sized>(&self, n: &Node<'_, P>) -> Result<NodeImage> {
        let (moved_from, child0) = if n.is_leaf() {
            (self.keep, PageId::INVALID)
        } else {
            (self.keep + 1, n.child(self.keep)?)
        };
        Ok(NodeImage {
            level: n.level,
            right: n.right,
            child0,
            tree: n.tree,
            low: Some(self.sep.clone()),
            high: n.high_fence()?,
            entries: (moved_from..n.entry_count())
                .map(|i| n.entry(i))
                .collect::<Result<_>>()?,
        })
    }

    /// The left half of node `n`: its first `keep` entries, its low fence and leftmost
    /// child, `sep` as high fence and `right_id` as right sibling.
    fn left_half<P: PageRead + ?Sized>(
        &self,
        n: &Node<'_, P>,
        right_id: PageId,
    ) -> Result<NodeImage> {
        Ok(NodeImage {
            level: n.level,
            right: right_id,
            child0: n.child0,
            tree: n.tree,
            low: n.low_fence()?,
            high: Some(self.sep.clone()),
            entries: (0..self.keep).map(|i| n.entry(i)).collect::<Result<_>>()?,
        })
    }
}

impl BTree {
    /// Makes room for `needed` bytes (entry and slot) in the node at `level` on `key`'s path,
    /// splitting it (and its ancestors first where they lack room for the separator). Returns
    /// once the node has room or has been split; the caller looks again.
    ///
    /// # Errors
    /// Allocation, buffer-pool and log errors; [`crate::Error::Corruption`].
    /// `run`: `key` continues an ascending run of inserts inside its leaf (a leaf split then
    /// splits at the insertion point, [`SplitPlan::choose`]).
    pub(crate) fn make_room(
        &self,
        txns: &TxnManager,
        key: &[u8],
        level: u16,
        needed: usize,
        run: bool,
    ) -> Result<()> {
        let mut spares = Vec::new();
        let r = self.make_room_with(txns, key, level, needed, run, &mut spares);
        for p in spares {
            // Never linked into the tree: free at once (space invariant 5 does not apply).
            let _ = self.space.free(p);
        }
        r
    }

    fn make_room_with(
        &self,
        txns: &TxnManager,
        key: &[u8],
        level: u16,
        needed: usize,
        run: bool,
        spares: &mut Vec<PageId>,
    ) -> Result<()> {
        let mut cleanings = 0;
        loop {
            let Attempt::Done(path) = self.descend(Seek::Key(key), level)? else {
                continue;
            };
            let seen = {
                let b = path.node.bytes();
                Node::open(&b).map(|n| (n.level, n.free_bytes()))
            };
            if path.node.validate().is_err() {
                continue;
            }
            let (node_level, free) = seen?;
            if node_level != level || free >= needed {
                return Ok(()); // the tree is not that tall any more, or someone split it
            }
            // New pages are allocated before any latch is taken (DESIGN.md principle 6: the
            // allocation may read and sync a space map). Their frames are fixed only once the
            // split is certain, under the latches: a frame fixed early and then not used
            // would be written back blank, unlogged, over a page that a merge freed and whose
            // old records redo may still replay (found by the B-tree crash matrix). Under the
            // latches only a clean frame is taken (`new_frames`): when there is none, the
            // latches go, a dirty victim is written back with none held, and the split
            // starts over.
            let want = if path.parent.is_none() { 2 } else { 1 };
            while spares.len() < want {
                spares.push(self.space.allocate()?);
            }
            let Some(parent) = path.parent else {
                let Ok(mut root) = path.node.upgrade() else {
                    continue;
                };
                if Node::open(root.bytes())?.free_bytes() >= needed {
                    return Ok(());
                }
                let Some([a, b]) = self.new_frames([spares[0], spares[1]], &mut cleanings)? else {
                    drop(root);
                    self.pool.clean_frames()?;
                    continue;
                };
                let grew = self.grow_root(txns, &mut root, key, needed, [a, b]);
                if !matches!(grew, Ok(false)) {
                    spares.drain(..2); // used (or perhaps linked, after an error): never free
                }
                return grew.map(|_| ());
            };
            let Ok(mut p) = parent.upgrade() else {
                continue;
            };
            let Ok(mut x) = path.node.upgrade() else {
                continue;
            };
            let n = Node::open(x.bytes())?;
            if n.free_bytes() >= needed {
                return Ok(());
            }
            let plan = SplitPlan::choose(&n, self, key, run)?;
            let sep_needed = inner_entry(&plan.sep, PageId(0)).len() + NODE_SLOT_SIZE;
            if Node::open(p.bytes())?.free_bytes() < sep_needed {
                drop((x, p));
                self.make_room_with(txns, key, level + 1, sep_needed, false, spares)?;
                continue;
            }
            let Some([r]) = self.new_frames([spares[0]], &mut cleanings)? else {
                drop((x, p));
                self.pool.clean_frames()?;
                continue;
            };
            spares.remove(0); // used (or perhaps linked, after an error): never free
            return self.split(txns, &mut p, &mut x, r, &plan);
        }
    }

    /// X-latched frames for the new pages `pids` of a split or root growth, fixed under the
    /// caller's latches: clean frames only, so that no dirty victim is written back under
    /// them (DESIGN.md principle 6). `None` (nothing fixed) when there is no clean frame: the
    /// caller drops its latches, has a batch of dirty frames written back
    /// (`BufferPool::clean_frames`) and starts over,
    /// counted in `cleanings`; after [`MAX_CLEANINGS`] of them (other threads dirtying every
    /// frame freed at once) any frame is taken, a write-back under the latches included, so
    /// that the split always ends. The frames hold whatever they held: the caller formats
    /// every byte, or hands a frame back with `BufferPool::discard`.
    fn new_frames<const N: usize>(
        &self,
        pids: [PageId; N],
        cleanings: &mut u32,
    ) -> Result<Option<[ExclusiveGuard<'_>; N]>> {
        let mut got = Vec::with_capacity(N);
        for pid in pids {
            let g = if *cleanings >= MAX_CLEANINGS {
                self.pool.fix_uninit(pid).map(Some)
            } else {
                self.pool.fix_uninit_clean(pid)
            };
            match g {
                Ok(Some(g)) => got.push(g),
                other => {
                    // Those fixed so far go back unwritten.
                    for g in got {
                        self.pool.discard(g);
                    }
                    *cleanings += 1;
                    return other.map(|_| None);
                }
            }
        }
        Ok(Some(
            got.try_into().unwrap_or_else(|_| unreachable!("N frames")),
        ))
    }

    /// Runs `body` as one system transaction and commits it while the caller still holds
    /// the latches of every page it changed (transaction rule 8). If a change fails after
    /// another succeeded (only a log failure can do that), the pool is failed and the
    /// transaction is left for restart to roll back: undoing it here would need latches the
    /// caller holds.
    ///
    /// `sources` is the highest page LSN of the pages whose content its records carry
    /// besides their own (a split's left page, a merge's right page, the root whose entries
    /// a grown root's new children take): in a log lane, each of its records goes above it
    /// (transaction rule 13).
    pub(super) fn system_txn(
        &self,
        txns: &TxnManager,
        sources: Lsn,
        body: impl FnOnce(&mut Transaction<'_>, &mut dyn FnMut() -> Result<()>) -> Result<()>,
    ) -> Result<()> {
        let mut sys = txns.begin_system();
        sys.order_after(sources);
        let mut step = 0;
        let mut after_step = || {
            step += 1;
            tests_hook::stop_after(step)
        };
        match body(&mut sys, &mut after_step) {
            Ok(()) => sys.commit(),
            Err(e) => {
                self.pool.fail(format!(
                    "B-tree {}: structure change failed half-way: {e}",
                    self.root
                ));
                sys.abandon();
                Err(e)
            }
        }
    }

    /// Splits the X-latched node `x` into itself and the new page `r`, posting the separator
    /// in the X-latched parent `p`. Log order: the right page's image, the left page's
    /// truncation (undo: put the right half back), the parent's new entry (undo: remove it).
    fn split(
        &self,
        txns: &TxnManager,
        p: &mut ExclusiveGuard<'_>,
        x: &mut ExclusiveGuard<'_>,
        mut r: ExclusiveGuard<'_>,
        plan: &SplitPlan,
    ) -> Result<()> {
        let rid = r.page_id();
        let right = match Node::open(x.bytes()).and_then(|n| plan.right_half(&n)) {
            Ok(right) => right,
            Err(e) => {
                self.pool.discard(r); // unwritten: nothing of it may reach the disk
                return Err(e);
            }
        };
        // `write_to` formats every byte of the page, so the frame is not zeroed first
        // (`new_frames`); if it fails, the page is left an empty formatted page, as
        // `fix_new` would have left it.
        r.mark_dirty();
        if let Err(e) = right.write_to(&mut r.page_mut(), rid) {
            crate::page::header::init(&mut r.page_mut(), rid, PageType::BTreeLeaf);
            return Err(e);
        }
        let r = &mut r;
        // The left half's new high fence is the right half's low fence.
        let high = right.low;
        let sources = x.page_lsn().max(p.page_lsn());
        self.system_txn(txns, sources, |sys, step| {
            sys.log_new_page(r)?;
            step()?;
            sys.change(
                x,
                wal::redo_truncate(plan.keep, rid, &high),
                wal::undo_split(rid),
            )?;
            step()?;
            sys.change(
                p,
                wal::redo_insert(&inner_entry(&plan.sep, rid)),
                wal::redo_remove(&plan.sep),
            )?;
            step()
        })?;
        // Both halves' search summaries (`node::summary`): the left half's count, fences and
        // hint offset have changed, and a leaf filled by an ascending load is not written
        // again after its split, so its summary would stay the full node's. Advisory, and
        // the split has committed: a node that does not open just gets none.
        for g in [&*x, &*r] {
            if let Ok(n) = Node::open(g.bytes()) {
                g.set_summary(n.search_summary());
            }
        }
        Ok(())
    }

    /// Grows the tree by one level if the X-latched root still lacks `needed` bytes: its
    /// entries move to the new pages `aid` and `bid` and the root becomes an inner node over
    /// them (the root page never moves). Returns whether it grew.
    fn grow_root(
        &self,
        txns: &TxnManager,
        root: &mut ExclusiveGuard<'_>,
        key: &[u8],
        needed: usize,
        [mut a, mut b]: [ExclusiveGuard<'_>; 2],
    ) -> Result<bool> {
        let (aid, bid) = (a.page_id(), b.page_id());
        // Everything that can fail before the new pages are written is done first; on a
        // failure, or when the root has room after all, their frames go back unwritten.
        let planned = (|| -> Result<Option<_>> {
            let n = Node::open(root.bytes())?;
            if n.free_bytes() >= needed {
                return Ok(None);
            }
            if n.level >= MAX_LEVEL {
                return Err(self.corrupt(self.root, "the tree is too tall"));
            }
            let plan = SplitPlan::choose(&n, self, key, false)?;
            let (left, right) = (plan.left_half(&n, bid)?, plan.right_half(&n)?);
            Ok(Some((n.image()?, plan, left, right)))
        })();
        let (img, plan, left, right) = match planned {
            Ok(Some(planned)) => planned,
            other => {
                self.pool.discard(a);
                self.pool.discard(b);
                return other.map(|_| false);
            }
        };
        // Formatted first (as `fix_new` would): a failure below leaves them empty pages.
        for (g, pid) in [(&mut a, aid), (&mut b, bid)] {
            crate::page::header::init(&mut g.page_mut(), pid, PageType::BTreeLeaf);
            g.mark_dirty();
        }
        left.write_to(&mut a.page_mut(), aid)?;
        right.write_to(&mut b.page_mut(), bid)?;
        let new_root = NodeImage {
            level: img.level + 1,
            right: PageId::INVALID,
            child0: aid,
            tree: self.root,
            low: None,
            high: None,
            entries: vec![inner_entry(&plan.sep, bid)],
        };
        let sources = root.page_lsn();
        self.system_txn(txns, sources, |sys, step| {
            sys.log_new_page(&mut a)?;
            sys.log_new_page(&mut b)?;
            step()?;
            // Undo (if the crash cuts this short) is the root's old image: root growth is
            // rare (once per level), so the log can afford it.
            sys.change(root, wal::redo_format(&new_root), wal::redo_format(&img))?;
            step()
        })?;
        // The new children's search summaries (`node::summary`), as a split sets its halves'.
        for g in [&a, &b] {
            if let Ok(n) = Node::open(g.bytes()) {
                g.set_summary(n.search_summary());
            }
        }
        Ok(true)
    }
}

/// A test hook: stop a structure modification after its `n`-th step (each step ends with
/// records appended), as a crash would, to test restart's rollback of it. Compiled only into
/// the crate's unit tests.
pub(crate) mod tests_hook {
    use crate::error::Result;

    #[cfg(all(test, not(loom)))]
    thread_local! {
        static STOP_AFTER: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// Makes this thread's structure modifications fail after step `n` (0: never).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn set_stop_after(n: usize) {
        STOP_AFTER.with(|c| c.set(n));
    }

    #[cfg(all(test, not(loom)))]
    pub(super) fn stop_after(step: usize) -> Result<()> {
        if STOP_AFTER.with(|c| c.get()) == step {
            return Err(crate::Error::invalid(
                "test",
                "structure change stopped by a test",
            ));
        }
        Ok(())
    }

    #[cfg(not(all(test, not(loom))))]
    #[inline(always)]
    pub(super) fn stop_after(_step: usize) -> Result<()> {
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
#[path = "smo_tests.rs"]
mod tests;
