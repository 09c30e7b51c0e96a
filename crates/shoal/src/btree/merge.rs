//! Merging underfull nodes and shrinking the root (btree rule 10): the reverse structure
//! modifications, also system transactions committed under their latches.

use super::node::NODE_SLOT_SIZE;
use super::node::{self, inner_entry, Node, NodeImage};
use super::tree::{Attempt, BTree, Seek};
use super::wal;
use crate::buffer::ExclusiveGuard;
use crate::error::Result;
use crate::txn::TxnManager;
use crate::types::PageId;

/// A node is underfull when less than a quarter of its usable bytes are in use.
pub(crate) fn is_underfull(free_bytes: usize, page_size: usize) -> bool {
    free_bytes * 4 > node::usable_bytes(page_size) * 3
}

/// Two nodes are merged only if the result fills at most three quarters of a page, so that
/// a merge is not undone by the next few inserts (hysteresis against split/merge thrashing).
fn merged_fits(img: &NodeImage, page_size: usize) -> bool {
    img.used_bytes() * 4 <= node::usable_bytes(page_size) * 3
}

/// The node's child number in its parent, its used bytes, and its siblings (child number,
/// page) in the order to try them.
type Place = (usize, usize, Vec<(usize, PageId)>);

/// What one merge attempt at one level did.
enum Merged {
    /// Nothing to do (the node is not underfull, or has no sibling it fits with).
    No,
    /// Merged; the parent, which lost an entry, is underfull too.
    ParentUnderfull,
    /// Merged.
    Yes,
}

impl BTree {
    /// After a delete left the node at `level` on `key`'s path underfull: merges it with a
    /// sibling under the same parent, then the parent if that left it underfull, and shrinks
    /// the root while it is an inner node with a single child.
    ///
    /// # Errors
    /// Log, buffer-pool and allocation errors; [`crate::Error::Corruption`].
    pub(crate) fn merge_underfull(&self, txns: &TxnManager, key: &[u8], level: u16) -> Result<()> {
        let mut level = level;
        loop {
            match self.merge_once(txns, key, level)? {
                Merged::ParentUnderfull => level += 1,
                Merged::Yes | Merged::No => return self.shrink_root(txns),
            }
        }
    }

    fn merge_once(&self, txns: &TxnManager, key: &[u8], level: u16) -> Result<Merged> {
        let page_size = self.pool.page_size();
        loop {
            let Attempt::Done(path) = self.descend(Seek::Key(key), level)? else {
                continue;
            };
            let Some(parent) = path.parent else {
                return Ok(Merged::No); // the root: shrink_root's business
            };
            // Where the node sits in its parent, and its siblings under that parent: the right
            // one first, then the left one.
            let seen = {
                let (pb, nb) = (parent.bytes(), path.node.bytes());
                (|| -> Result<Option<Place>> {
                    let n = Node::open(&nb)?;
                    if n.level != level || !is_underfull(n.free_bytes(), page_size) {
                        return Ok(None);
                    }
                    let p = Node::open(&pb)?;
                    let children = p.entry_count() + 1;
                    let me = path.node.page_id();
                    let Some(i) = (0..children).find(|&i| p.nth_child(i).ok() == Some(me)) else {
                        return Ok(None); // changed under us: validation below restarts
                    };
                    let mut sibs = Vec::with_capacity(2);
                    if i + 1 < children {
                        sibs.push((i + 1, p.nth_child(i + 1)?));
                    }
                    if i > 0 {
                        sibs.push((i - 1, p.nth_child(i - 1)?));
                    }
                    let used = node::usable_bytes(page_size) - n.free_bytes();
                    Ok(Some((i, used, sibs)))
                })()
            };
            if parent.validate().is_err() || path.node.validate().is_err() {
                continue;
            }
            let Some((i, used, sibs)) = seen? else {
                return Ok(Merged::No);
            };
            // The first sibling the node would fit with, by an optimistic look (which also
            // brings it into the pool before any latch is taken: no I/O under a latch others
            // need).
            let mut pick = None;
            for (j, sib) in sibs {
                let s = self.pool.fix_optimistic(sib)?;
                let sib_used = {
                    let b = s.bytes();
                    Node::open(&b).map(|n| node::usable_bytes(page_size) - n.free_bytes())
                };
                if s.validate().is_ok()
                    && sib_used.is_ok_and(|u| u + used <= 3 * node::usable_bytes(page_size) / 4)
                {
                    pick = Some((j, sib));
                    break;
                }
            }
            let Some((j, sibling)) = pick else {
                return Ok(Merged::No);
            };
            let (node_is_left, right_idx) = if j > i { (true, j) } else { (false, i) };
            let Ok(mut p) = parent.upgrade() else {
                continue;
            };
            // Latches top-down, then left to right (btree rule 3).
            let (mut l, mut r) = if node_is_left {
                let Ok(l) = path.node.upgrade() else {
                    continue;
                };
                (l, self.pool.fix_exclusive(sibling)?)
            } else {
                let l = self.pool.fix_exclusive(sibling)?;
                let Ok(r) = path.node.upgrade() else {
                    continue;
                };
                (l, r)
            };
            let Some(outcome) = self.merge_pair(txns, &mut p, &mut l, &mut r, right_idx)? else {
                return Ok(Merged::No);
            };
            let right_pid = r.page_id();
            // Still under r's X latch (space invariant 6): a last-leaf hint naming r is dead.
            self.space.note_unlinked();
            drop((l, r, p));
            self.free_when_durable(txns, &[right_pid], txns.log().end_lsn())?;
            return Ok(outcome);
        }
    }

    /// Merges the X-latched right node `r` into its left sibling `l` under the X-latched
    /// parent `p`, where `r` is `p`'s child number `right_idx`, if the result fits. Returns
    /// `None` if it does not. Log: the left page's new image (undo: its old image), the
    /// parent's separator removed (undo: put it back). The right page is not changed; it is
    /// freed once the merge is durable.
    fn merge_pair(
        &self,
        txns: &TxnManager,
        p: &mut ExclusiveGuard<'_>,
        l: &mut ExclusiveGuard<'_>,
        r: &mut ExclusiveGuard<'_>,
        right_idx: usize,
    ) -> Result<Option<Merged>> {
        let page_size = self.pool.page_size();
        let (pn, li, ri) = (
            Node::open(p.bytes())?,
            Node::open(l.bytes())?.image()?,
            Node::open(r.bytes())?.image()?,
        );
        let sep_slot = right_idx - 1;
        if pn.nth_child(right_idx)? != r.page_id()
            || pn.nth_child(right_idx - 1)? != l.page_id()
            || li.right != r.page_id()
            || li.level != ri.level
        {
            return Err(self.corrupt(p.page_id(), "merge: the siblings do not match their parent"));
        }
        let sep = pn.key(sep_slot)?;
        let mut merged = li.clone();
        if merged.level > 0 {
            merged.entries.push(inner_entry(&sep, ri.child0));
        }
        merged.entries.extend(ri.entries.iter().cloned());
        merged.high = ri.high.clone();
        merged.right = ri.right;
        if !merged_fits(&merged, page_size) {
            return Ok(None);
        }
        let parent_left = pn.entry_count() - 1;
        let is_root = p.page_id() == self.root;
        let parent_free_after = pn.free_bytes() + pn.entry_len(sep_slot)? + NODE_SLOT_SIZE;
        let rid = r.page_id();
        let sources = l.page_lsn().max(r.page_lsn()).max(p.page_lsn());
        self.system_txn(txns, sources, |sys, step| {
            sys.change(l, wal::redo_format(&merged), wal::redo_format(&li))?;
            step()?;
            sys.change(
                p,
                wal::redo_remove(&sep),
                wal::redo_insert(&inner_entry(&sep, rid)),
            )?;
            step()
        })?;
        Ok(Some(
            if !is_root && parent_left > 0 && is_underfull(parent_free_after, page_size) {
                Merged::ParentUnderfull
            } else {
                Merged::Yes
            },
        ))
    }

    /// While the root is an inner node with a single child, moves the child's contents into
    /// the root (whose page never moves) and frees the child. Log: the root's new image
    /// (undo: its old image).
    fn shrink_root(&self, txns: &TxnManager) -> Result<()> {
        loop {
            let Ok(root) = self.pool.fix_optimistic(self.root) else {
                return Ok(());
            };
            let child = {
                let b = root.bytes();
                Node::open(&b).map(|n| (n.level > 0 && n.entry_count() == 0).then_some(n.child0))
            };
            if root.validate().is_err() {
                continue;
            }
            let Some(child) = child? else {
                return Ok(());
            };
            self.pool.fix_optimistic(child)?; // read it in before latching
            let Ok(mut x) = root.upgrade() else {
                continue;
            };
            let c = self.pool.fix_exclusive(child)?;
            let old = Node::open(x.bytes())?.image()?;
            let img = Node::open(c.bytes())?.image()?;
            if img.tree != self.root || img.low.is_some() || img.high.is_some() {
                return Err(self.corrupt(child, "the root's only child does not cover every key"));
            }
            let sources = x.page_lsn().max(c.page_lsn());
            self.system_txn(txns, sources, |sys, step| {
                sys.change(&mut x, wal::redo_format(&img), wal::redo_format(&old))?;
                step()
            })?;
            self.space.note_unlinked(); // under c's X latch (space invariant 6)
            drop((c, x));
            self.free_when_durable(txns, &[child], txns.log().end_lsn())?;
        }
    }
}
