//! Range scans (btree rule 7). A cursor holds no latch between batches: it reads one leaf
//! at a time optimistically, copies the entries in range, and remembers where to go on —
//! the leaf's high fence going forward, its low fence going backward — so a split or merge
//! between two batches is harmless: the next batch re-seeks from the root.
//!
//! A batch copies at most [`Cursor::with_batch_limit`] entries (a caller that wants the first
//! `n` rows of a range says so, and a leaf of hundreds of entries is not copied for one).
//! A batch cut short by the limit goes on, like a scan's start, by a seek to just past its
//! last entry.
//!
//! Guarantee: every key present throughout the scan is returned exactly once, in order.
//! A key inserted or deleted during the scan may or may not be returned.
//!
//! For the locking scan (`locking.rs`) a cursor also remembers the leaf its current batch
//! came from, unvalidated, with the leaf's page LSN: an entry that is not the first of its
//! batch, whose leaf still validates, is exactly what the leaf holds now — nothing has
//! appeared between it and the entry before it ([`Cursor::unchanged_since_read`]).

use super::node::Node;
use super::tree::{Attempt, BTree, Seek};
use crate::buffer::OptimisticPage;
use crate::error::Result;
use crate::page::PageRead;
use crate::types::Lsn;
use std::collections::VecDeque;
use std::ops::Bound;

/// The order in which a [`Cursor`] returns keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanDirection {
    /// Ascending key order.
    Forward,
    /// Descending key order.
    Backward,
}

/// An iterator over the `(key, value)` pairs of a key range, in [`ScanDirection`] order. Made
/// by [`BTree::scan`]. Yields an error (and then ends) on corruption or an I/O failure.
pub struct Cursor<'t> {
    tree: &'t BTree,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    dir: ScanDirection,
    batch: VecDeque<(Vec<u8>, Vec<u8>)>,
    done: bool,
    /// The leaf the current batch was copied from (its version as of the copy) and its page
    /// LSN then; `None` before the first batch.
    leaf: Option<(OptimisticPage<'t>, Lsn)>,
    /// Whether the entry returned last was the first of its batch.
    first_of_batch: bool,
    /// Whether the next entry returned is the first of its batch.
    batch_fresh: bool,
    /// Most entries a batch copies (module doc); at least 1.
    batch_limit: usize,
    /// The next batch is read by a seek from the root to the scan's position (at the start
    /// or after [`Cursor::resume_at`]), not by moving on from a leaf's fence.
    seeking: bool,
    /// The current batch came from a seek: the gap between the scan's position and its first
    /// entry lies inside its leaf.
    batch_from_seek: bool,
    /// The first key past the range, if the current batch's leaf ended the range with it (a
    /// forward scan; [`Cursor::next_key_unchanged`]).
    beyond: Option<Vec<u8>>,
}

fn owned(b: Bound<&[u8]>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn above_lower(lower: &Bound<Vec<u8>>, key: &[u8]) -> bool {
    match lower {
        Bound::Included(l) => key >= l.as_slice(),
        Bound::Excluded(l) => key > l.as_slice(),
        Bound::Unbounded => true,
    }
}

fn below_upper(upper: &Bound<Vec<u8>>, key: &[u8]) -> bool {
    match upper {
        Bound::Included(u) => key <= u.as_slice(),
        Bound::Excluded(u) => key < u.as_slice(),
        Bound::Unbounded => true,
    }
}

/// What one leaf gave: the entries in range, in the scan's order; whether the batch limit
/// cut them short (more entries in range follow in this leaf); and the fence to continue
/// from (`None`: nothing lies beyond in that direction).
struct Leaf {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    cut: bool,
    next: Option<Vec<u8>>,
    /// The key that ended a forward range inside this leaf.
    beyond: Option<Vec<u8>>,
}

impl BTree {
    /// A cursor over the keys between `lower` and `upper` in `dir` order.
    ///
    /// # Errors
    /// None here; the cursor yields [`crate::Error::InvalidArgument`] if a bound is longer
    /// than [`BTree::max_key_bytes`], and corruption and buffer-pool errors as it goes.
    pub fn scan(&self, lower: Bound<&[u8]>, upper: Bound<&[u8]>, dir: ScanDirection) -> Cursor<'_> {
        Cursor {
            tree: self,
            lower: owned(lower),
            upper: owned(upper),
            dir,
            batch: VecDeque::new(),
            done: false,
            leaf: None,
            first_of_batch: false,
            batch_fresh: false,
            batch_limit: usize::MAX,
            seeking: true,
            batch_from_seek: false,
            beyond: None,
        }
    }

    /// The first key of the range `lower..` in key order, copying no more than that entry
    /// (a next-key lookup); `None` if the range is empty.
    ///
    /// # Errors
    /// As the cursor's: [`crate::Error::InvalidArgument`] for a bound over the key limit,
    /// corruption and buffer-pool errors.
    pub(crate) fn first_key(&self, lower: Bound<&[u8]>) -> Result<Option<Vec<u8>>> {
        let mut c = self
            .scan(lower, Bound::Unbounded, ScanDirection::Forward)
            .with_batch_limit(1);
        c.next().transpose().map(|kv| kv.map(|(k, _)| k))
    }

    /// A cursor over every key in ascending order.
    pub fn iter(&self) -> Cursor<'_> {
        self.scan(Bound::Unbounded, Bound::Unbounded, ScanDirection::Forward)
    }
}

impl Cursor<'_> {
    fn fill(&mut self) -> Result<()> {
        self.beyond = None;
        let (seek_key, forward) = match self.dir {
            ScanDirection::Forward => match &self.lower {
                Bound::Included(k) | Bound::Excluded(k) => (k.clone(), true),
                Bound::Unbounded => (Vec::new(), true),
            },
            ScanDirection::Backward => match &self.upper {
                Bound::Included(k) | Bound::Excluded(k) => (k.clone(), false),
                Bound::Unbounded => (Vec::new(), false),
            },
        };
        self.tree.check_key(&seek_key)?;
        let seek = match (&self.dir, &self.upper) {
            (ScanDirection::Forward, _) => Seek::Key(&seek_key),
            (ScanDirection::Backward, Bound::Included(_)) => Seek::Key(&seek_key),
            (ScanDirection::Backward, Bound::Excluded(_)) => Seek::Before(&seek_key),
            (ScanDirection::Backward, Bound::Unbounded) => Seek::Last,
        };
        let (leaf, page, lsn) = loop {
            let Attempt::Done(path) = self.tree.descend(seek, 0)? else {
                continue;
            };
            let (got, lsn) = {
                let b = path.node.bytes();
                (
                    self.read_leaf(&b, forward),
                    crate::page::header::page_lsn(&b),
                )
            };
            if path.node.validate().is_ok() {
                break (got?, path.node, lsn);
            }
        };
        self.leaf = Some((page, lsn));
        self.batch_fresh = true;
        self.batch_from_seek = std::mem::take(&mut self.seeking);
        let mut entries = leaf.entries;
        let beyond = leaf.beyond;
        for (_, v) in &mut entries {
            match self.tree.value_of(std::mem::take(v))? {
                Some(value) => *v = value,
                // An overflow chain replaced since the leaf was read: read the leaf again
                // (nothing of this batch has been returned yet).
                None => return Ok(()),
            }
        }
        self.beyond = beyond;
        if leaf.cut {
            // Go on just past the last entry copied, by a seek (module doc).
            let last = Bound::Excluded(entries.last().expect("a cut batch is not empty").0.clone());
            if forward {
                self.lower = last;
            } else {
                self.upper = last;
            }
            self.seeking = true;
            self.batch.extend(entries);
            return Ok(());
        }
        self.batch.extend(entries);
        match leaf.next {
            Some(fence) if forward && below_upper(&self.upper, &fence) => {
                self.lower = Bound::Included(fence);
            }
            Some(fence) if !forward && above_lower(&self.lower, &fence) => {
                self.upper = Bound::Excluded(fence);
            }
            _ => self.done = true,
        }
        Ok(())
    }

    /// Copies the entries of the (unvalidated) leaf `b` that may be in range, and its fence
    /// in the scan's direction.
    fn read_leaf<P: PageRead + ?Sized>(&self, b: &P, forward: bool) -> Result<Leaf> {
        let n = Node::open(b)?;
        if !n.is_leaf() {
            return Err(self
                .tree
                .corrupt(n.page_id(), "a scan reached an inner node"));
        }
        let count = n.entry_count();
        // The first entry to look at, in the scan's direction: at the near bound.
        let start = match (forward, if forward { &self.lower } else { &self.upper }) {
            (true, Bound::Unbounded) => 0,
            (false, Bound::Unbounded) => count,
            (_, Bound::Included(k) | Bound::Excluded(k)) => match n.search_scan_start(k)? {
                Ok(i) if !forward && matches!(self.upper, Bound::Included(_)) => i + 1,
                Ok(i) | Err(i) => i,
            },
        };
        // Entry numbers in the scan's direction from `start`.
        let start = start.min(count);
        let up = forward.then_some(start..count).into_iter().flatten();
        let down = (!forward).then_some(0..start).into_iter().flatten().rev();
        let mut entries = Vec::new();
        let mut cut = false;
        let mut beyond = None;
        for i in up.chain(down) {
            let key = n.key(i)?;
            let (near, far) = if forward {
                (
                    above_lower(&self.lower, &key),
                    below_upper(&self.upper, &key),
                )
            } else {
                (
                    below_upper(&self.upper, &key),
                    above_lower(&self.lower, &key),
                )
            };
            // The far bound ends the batch, so a short range does not copy a whole leaf; an
            // excluded near bound skips its own key.
            if !far {
                if forward {
                    beyond = Some(key);
                }
                break;
            }
            if !near {
                continue;
            }
            if entries.len() == self.batch_limit {
                cut = true;
                break;
            }
            entries.push((key, n.value(i)?));
        }
        let next = if forward {
            n.high_fence()?
        } else {
            n.low_fence()?
        };
        Ok(Leaf {
            entries,
            cut,
            next,
            beyond,
        })
    }
}

impl Cursor<'_> {
    /// Copies at most `n` entries per batch (module doc): for a caller that takes the first
    /// `n` entries of the range. Any `n` returns the same entries; it changes only how many
    /// a batch copies and how often the cursor seeks. `0` counts as 1.
    pub fn with_batch_limit(mut self, n: usize) -> Self {
        self.batch_limit = n.max(1);
        self
    }

    /// Whether the entry returned last is still exactly what its leaf holds, with nothing
    /// new between it and the scan's previous position (the entry returned before it, or
    /// where the scan started or resumed): that gap lies inside the entry's leaf — the entry
    /// is not the first of its batch, or its batch came from a seek to that position — and
    /// the leaf has not changed since the batch was copied. `Some(page LSN)` of that leaf if
    /// so. (The first entry of a batch reached through a fence has the previous leaf's tail
    /// in its gap: `None`.)
    pub(crate) fn unchanged_since_read(&self) -> Option<Lsn> {
        match &self.leaf {
            Some((page, lsn))
                if (!self.first_of_batch || self.batch_from_seek) && page.validate().is_ok() =>
            {
                Some(*lsn)
            }
            _ => None,
        }
    }

    /// The first key after the range of a forward scan that has returned its last entry, if
    /// the tree holds nothing new between the scan's position and that key: the key ended
    /// the range inside the last batch's leaf, the gap from the entry returned last (or from
    /// where the scan started or resumed) lies inside that leaf — as in
    /// [`Cursor::unchanged_since_read`] — and the leaf is unchanged since the batch was
    /// copied. Then it is the key after the range in the tree as it is now, with nothing
    /// between; `None` otherwise (the caller looks the key up afresh).
    pub(crate) fn next_key_unchanged(&self) -> Option<&[u8]> {
        let (page, _) = self.leaf.as_ref()?;
        let key = self.beyond.as_deref()?;
        let gap_inside = !self.batch_fresh || self.batch_from_seek;
        (self.batch.is_empty() && gap_inside && page.validate().is_ok()).then_some(key)
    }

    /// Starts the scan again from `from` in its direction (the lower bound of a forward
    /// scan, the upper bound of a backward one; the range's far bound is kept): the next
    /// entry returned is the first from there in the tree as it is now.
    pub(crate) fn resume_at(&mut self, from: Bound<Vec<u8>>) {
        match self.dir {
            ScanDirection::Forward => self.lower = from,
            ScanDirection::Backward => self.upper = from,
        }
        self.batch.clear();
        self.done = false;
        self.leaf = None;
        self.beyond = None;
        self.seeking = true;
    }
}

impl Iterator for Cursor<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(kv) = self.batch.pop_front() {
                self.first_of_batch = std::mem::take(&mut self.batch_fresh);
                return Some(Ok(kv));
            }
            if self.done {
                return None;
            }
            if let Err(e) = self.fill() {
                self.done = true;
                return Some(Err(e));
            }
        }
    }
}
