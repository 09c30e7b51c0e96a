//! Batched point lookups with group prefetching (btree rule 15): [`BTree::get_many`] (and
//! [`BTree::read_many_for_update`], which locks first and keeps each leaf's version) looks
//! up a batch of keys level by level, one cache-missing step at a time for a whole group of
//! keys, so that the misses of different keys overlap instead of following one another.
//!
//! A point lookup in a tree larger than the caches waits for a chain of dependent misses:
//! at each level the page table's frame hint, the frame descriptor and the page's first
//! lines, then the slot lines the search probes, then the record holding the key (in an
//! inner node, the child). No step can start before the one before it, so one lookup costs
//! the sum of its misses, although the memory system could serve a dozen at once. Keys a
//! caller knows together — a TPC-C Stock-Level's items, a New-Order's items — are
//! independent, though: group prefetching (Chen, Ailamaki, Gibbons and Mowry, "Improving
//! Hash Join Performance through Prefetching", ICDE 2004, §4; for B+-trees, Chen, Gibbons
//! and Mowry, "Improving Index Performance through Prefetching", SIGMOD 2001; RocksDB's
//! `MultiGet`) takes one step for every key of a group, issuing a prefetch for each key's
//! next line, before taking the next step for any.
//!
//! Per level, four passes over the group; each reads only lines an earlier pass prefetched
//! (at the root, which every descent keeps cached, pass 2 only fixes and opens it and pass
//! 3 is skipped):
//! 1. *frame*: from the frame hint (prefetched by pass 4 of the level above), prefetch the
//!    frame descriptor and the page's first two lines ([`BufferPool::prefetch_page`]);
//! 2. *fix*: fix the page optimistically, validate the parent again (rule 2: the child
//!    pointer was current when the child's version was taken), open the node and prefetch
//!    the slot lines its search probes ([`Node::prefetch_search`]);
//! 3. *records*: prefetch the records the search compares and reads
//!    ([`Node::prefetch_records`]);
//! 4. *search*: search the node and validate it. An inner node yields the child, whose
//!    frame hint is prefetched; a leaf yields the value and the page LSN, as
//!    [`BTree::get_with_lsn`] reads them.
//!
//! Invariants: every answer is one a single [`BTree::get_with_lsn`] could have given — a
//! key's descent follows rule 2 exactly, only interleaved with other keys' descents. A key
//! whose descent fails a validation, or whose value is stored out of line, is looked up
//! again on its own after the group (`get_with_lsn`), so the batch never restarts whole
//! and never spins. An error is believed only from a node that validated (sync rule O2).
//! Nothing is latched and nothing shared is written, as for a single lookup.

use super::node::{Node, StoredValue};
use super::rmw::ReadForUpdate;
use super::tree::BTree;
use crate::buffer::{BufferPool, OptimisticPage};
use crate::error::Result;
use crate::page::{header, AtomicBytes};
use crate::txn::Transaction;
use crate::types::{Lsn, PageId};

/// Keys whose descents advance together: enough misses in flight to cover a miss's latency
/// (an AMD Zen 3 core keeps 24 L1 misses outstanding, each key has two or three in a
/// pass), few enough that a group's lines (a few levels of about eight lines each) stay in
/// the first two cache levels until the group's next pass reads them.
pub(crate) const BATCH_GROUP: usize = 16;

/// Levels a descent takes at most before its key is looked up on its own: a tree of 8 KiB
/// pages is never this tall.
const MAX_LEVELS: usize = 24;

/// What one key's descent has come to.
enum Step {
    /// Still descending: the page to read at the next level and the level it must have.
    At(PageId, u16),
    /// Answered: the entry number and inline value (`None`: absent) and the page LSN of
    /// its leaf.
    Done(Option<(usize, Vec<u8>)>, Lsn),
    /// To be looked up on its own: a validation failed, or the value is out of line.
    Alone,
}

impl BTree {
    /// The values of `keys` (`None` for an absent key), in the order given: what
    /// [`BTree::get`] returns for each, found with their cache misses overlapped (module
    /// doc; btree rule 15). Worth it for a few keys or more in a tree larger than the
    /// caches; pass keys sorted where the order is free, so that neighbours share their
    /// upper levels. Latch-free, as [`BTree::get`].
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] for a key over [`BTree::max_key_bytes`] (before
    /// anything is read); [`crate::Error::Corruption`]; buffer-pool errors of a miss.
    pub fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        for key in keys {
            self.check_key(key)?;
        }
        let mut out = Vec::with_capacity(keys.len());
        self.get_many_with_lsn(keys, |_, v, _| out.push(v))?;
        Ok(out)
    }

    /// [`BTree::get_many`] (keys already checked), handing each key's index, value and
    /// leaf page LSN (as [`BTree::get_with_lsn`]) to `each`, in key order.
    pub(crate) fn get_many_with_lsn(
        &self,
        keys: &[&[u8]],
        mut each: impl FnMut(usize, Option<Vec<u8>>, Lsn),
    ) -> Result<()> {
        for (g, group) in keys.chunks(BATCH_GROUP).enumerate() {
            let steps = self.descend_group(group)?;
            for (j, (key, (step, _))) in group.iter().zip(steps).enumerate() {
                let (v, lsn) = match step {
                    Step::Done(e, lsn) => (e.map(|(_, v)| v), lsn),
                    _ => self.get_with_lsn(key)?,
                };
                each(g * BATCH_GROUP + j, v, lsn);
            }
        }
        Ok(())
    }

    /// [`BTree::read_for_update`] of every key of `keys`: X-locks them all (long, in the
    /// order given, with IX on the table), then reads them together as
    /// [`BTree::get_many`] does, each read keeping its leaf's version for
    /// [`BTree::write_read`]. Element `i` is `keys[i]`'s read, `None` if absent (its lock is
    /// kept). Writes of several reads on one leaf are correct in any order: the first
    /// changes the leaf, so the others' upgrades fail and take the ordinary path. A key
    /// given twice is read twice before anything is written: write one of its reads, or
    /// read it again after the first write ([`Table::update_many_with_view`] does).
    ///
    /// [`Table::update_many_with_view`]: crate::table::Table::update_many_with_view
    ///
    /// # Errors
    /// As [`BTree::read_for_update`], for the first key that fails; a key over the limit
    /// fails before anything is locked.
    pub fn read_many_for_update(
        &self,
        txn: &mut Transaction<'_>,
        keys: &[&[u8]],
    ) -> Result<Vec<Option<ReadForUpdate<'_>>>> {
        for key in keys {
            self.check_key(key)?;
        }
        for key in keys {
            self.lock_for_write(txn, key)?;
        }
        let mut out = Vec::with_capacity(keys.len());
        for group in keys.chunks(BATCH_GROUP) {
            for (key, (step, leaf)) in group.iter().zip(self.descend_group(group)?) {
                out.push(match (step, leaf) {
                    (Step::Done(None, _), _) => None,
                    (Step::Done(Some((i, value)), _), Some(leaf)) => {
                        Some(ReadForUpdate::at(value, leaf, self.root(), i))
                    }
                    _ => self.read_locked_for_update(key)?,
                });
            }
        }
        Ok(out)
    }

    /// The interleaved descents of at most [`BATCH_GROUP`] keys (module doc): each key's
    /// [`Step::Done`] with the leaf it was read from, at the version read, or
    /// [`Step::Alone`].
    fn descend_group(&self, keys: &[&[u8]]) -> Result<Vec<(Step, Option<OptimisticPage<'_>>)>> {
        let n = keys.len();
        debug_assert!(n <= BATCH_GROUP);
        let mut steps: Vec<Step> = (0..n).map(|_| Step::At(self.root, u16::MAX)).collect();
        // The validated page each descending key came from (rule 2's parent).
        let mut parents: [Option<OptimisticPage<'_>>; BATCH_GROUP] = Default::default();
        // The leaf each answered key was read from, at the version read.
        let mut leaves: [Option<OptimisticPage<'_>>; BATCH_GROUP] = Default::default();
        self.pool.prefetch_page(self.root);
        for level in 0..MAX_LEVELS {
            if level > 0 {
                frames(&self.pool, &steps);
            }
            // Pass 2: fix, check the parent, open, prefetch the slots.
            let mut pages: [Option<OptimisticPage<'_>>; BATCH_GROUP] = Default::default();
            for (j, step) in steps.iter_mut().enumerate() {
                let Step::At(pid, _) = *step else { continue };
                let parent_ok = |p: &Option<OptimisticPage<'_>>| {
                    p.as_ref().map_or(true, |p| p.validate().is_ok())
                };
                match self.pool.fix_optimistic(pid) {
                    Ok(p) if parent_ok(&parents[j]) => pages[j] = Some(p),
                    Ok(_) => *step = Step::Alone,
                    Err(e) if parent_ok(&parents[j]) => return Err(e),
                    Err(_) => *step = Step::Alone,
                }
            }
            let bytes: [Option<AtomicBytes<'_>>; BATCH_GROUP] =
                std::array::from_fn(|j| pages[j].as_ref().map(|p| p.bytes()));
            // `None` where the page does not open as a node (pass 4 sorts that out).
            let nodes: [Option<Node<'_, AtomicBytes<'_>>>; BATCH_GROUP] =
                std::array::from_fn(|j| Node::open(bytes[j].as_ref()?).ok());
            // Passes 2 (its prefetch) and 3 skip the root: every descent of the tree reads
            // it, so its lines are cached, and each pass repeats part of the search (pass
            // 3 the whole hint search) for nothing.
            if level > 0 {
                for (key, node) in keys.iter().zip(&nodes) {
                    if let Some(n) = node {
                        n.prefetch_search(key);
                    }
                }
                // Pass 3: the records.
                for (key, node) in keys.iter().zip(&nodes) {
                    if let Some(n) = node {
                        n.prefetch_records(key);
                    }
                }
            }
            // Pass 4: search and validate.
            let mut descending = false;
            for (j, step) in steps.iter_mut().enumerate() {
                let (Step::At(_, expect), Some(page)) = (&*step, &pages[j]) else {
                    continue;
                };
                let next = self.search_step(keys[j], nodes[j].as_ref(), *expect, page)?;
                descending |= matches!(next, Step::At(..));
                if let Step::At(child, _) = next {
                    self.pool.prefetch_page_hint(child);
                }
                *step = next;
            }
            // Each descending key's page becomes its parent; an answered key's is its leaf.
            // (Keys answered at an earlier level have no page here and keep their leaf.)
            for (j, page) in pages.iter_mut().enumerate() {
                let Some(page) = page.take() else { continue };
                match steps[j] {
                    Step::At(..) => parents[j] = Some(page),
                    Step::Done(..) => leaves[j] = Some(page),
                    Step::Alone => {}
                }
            }
            if !descending {
                break;
            }
        }
        // A descent still going after MAX_LEVELS (a page changing under it, again and
        // again) is finished alone.
        for step in &mut steps {
            if matches!(step, Step::At(..)) {
                *step = Step::Alone;
            }
        }
        Ok(steps.into_iter().zip(leaves).collect())
    }

    /// Pass 4 for one key on `node`, read from `page` (`None`: it did not open as a node):
    /// the child to descend to, or the answer of a leaf; [`Step::Alone`] if `page` fails
    /// validation or the value is stored out of line. What `BTree::step` and
    /// `BTree::read_leaf_entry` do for one key.
    ///
    /// # Errors
    /// Only from a page that validated: [`crate::Error::Corruption`] for a page that is not
    /// a node of this tree, not at the expected level (`expect`, `u16::MAX` for the root),
    /// or malformed.
    #[inline]
    fn search_step(
        &self,
        key: &[u8],
        node: Option<&Node<'_, AtomicBytes<'_>>>,
        expect: u16,
        page: &OptimisticPage<'_>,
    ) -> Result<Step> {
        let Some(n) = node else {
            // Opened again for its error, believed only once the page validates.
            let bytes = page.bytes();
            let reopened = Node::open(&bytes).map(|_| ());
            return match page.validate() {
                Ok(()) => reopened.map(|()| Step::Alone),
                Err(_) => Ok(Step::Alone),
            };
        };
        let read = (|| {
            if n.tree != self.root || (expect != u16::MAX && expect != n.level) {
                return Err(self.corrupt(
                    n.page_id(),
                    format!("node of tree {} at level {} on the path", n.tree, n.level),
                ));
            }
            if !n.is_leaf() {
                return Ok(Step::At(n.child_for(key)?, n.level - 1));
            }
            let lsn = header::page_lsn(&page.bytes());
            Ok(match n.search(key)? {
                Err(_) => Step::Done(None, lsn),
                Ok(i) => match n.stored_value(i)? {
                    StoredValue::Inline(v) => Step::Done(Some((i, v)), lsn),
                    StoredValue::Tagged(_) => Step::Alone,
                },
            })
        })();
        match page.validate() {
            Ok(()) => read,
            Err(_) => Ok(Step::Alone),
        }
    }
}

/// Pass 1: the frame descriptor and first lines of each descending key's page.
fn frames(pool: &BufferPool, steps: &[Step]) {
    for step in steps {
        if let Step::At(pid, _) = step {
            pool.prefetch_page(*pid);
        }
    }
}
