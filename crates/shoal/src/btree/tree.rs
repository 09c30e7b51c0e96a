//! The tree handle and its point operations: get, insert, upsert, update, delete (btree
//! rules 1–6 in the module doc). This file holds the handle, the descent and the reads;
//! `tree/write.rs` the writes and their undo. Structure modifications are in `smo.rs`.

use super::locking::{LockSpace, NextKeyWait};
use super::node::NODE_SLOT_SIZE;
use super::node::{self, Node, NodeImage, StoredValue, VALUE_INLINE};
use super::overflow::OverflowRef;
use super::wal::{self, NewEntry};
use crate::buffer::{BufferPool, ExclusiveGuard, OptimisticPage};
use crate::error::{Error, Result};
use crate::page::{AtomicBytes, PageType};
use crate::space::SpaceManager;
use crate::txn::{Transaction, TxnManager, UndoContext};
use crate::types::{Lsn, PageId};
use std::borrow::Cow;
use std::cell::Cell;
use std::sync::Arc;

mod write;

/// The outcome of one optimistic attempt: a result, or "something changed, start over".
pub(crate) enum Attempt<T> {
    Done(T),
    Restart,
}

/// How a change is logged: by a transaction (`Update` records with a logical undo) or, while
/// a rollback puts a change back, as a compensation record (btree rule 6).
pub(crate) trait Logger {
    /// The transaction manager (for the system transactions of structure changes).
    fn manager(&self) -> &TxnManager;
    /// Makes and logs the change `redo` to the X-latched `page`; `near` is the number of
    /// the entry it changes, or of the slot a new entry goes to (a hint that spares the
    /// apply a search, [`crate::txn::ResourceManager::redo_near`]); `undo` builds the undo
    /// payload when one is needed.
    fn log(
        &mut self,
        page: &mut ExclusiveGuard<'_>,
        redo: Vec<u8>,
        near: usize,
        undo: impl FnOnce() -> Vec<u8>,
    ) -> Result<Lsn>;
    /// Asks for the next-key lock of a change under the leaf latch (`locking` module doc).
    /// By default none: undo takes no lock.
    fn next_key_lock(
        &mut self,
        _tree: &BTree,
        _next: Option<&[u8]>,
        _delete: bool,
    ) -> Result<Option<NextKeyWait>> {
        Ok(None)
    }
    /// Waits, with no latch held, for a next-key lock that would have blocked.
    fn wait_for(&mut self, _w: NextKeyWait) -> Result<()> {
        Ok(())
    }
    /// Whether a removal that leaves its leaf underfull merges it (btree rule 10). A
    /// transaction's deletes do; a rollback's do not: a rollback — of a New-Order that
    /// filled a fresh leaf, say — puts things back and should not restructure the tree on
    /// its way (a merge is a system transaction of its own, and once waited for the log).
    /// The leaf is merged by a later delete.
    fn merges(&self) -> bool {
        false
    }
}

impl Logger for Transaction<'_> {
    fn manager(&self) -> &TxnManager {
        Transaction::manager(self)
    }
    fn log(
        &mut self,
        page: &mut ExclusiveGuard<'_>,
        redo: Vec<u8>,
        near: usize,
        undo: impl FnOnce() -> Vec<u8>,
    ) -> Result<Lsn> {
        self.change_near(page, redo, undo(), Some(near))
    }
    fn next_key_lock(
        &mut self,
        tree: &BTree,
        next: Option<&[u8]>,
        delete: bool,
    ) -> Result<Option<NextKeyWait>> {
        tree.next_key_lock(self, next, delete)
    }
    fn wait_for(&mut self, w: NextKeyWait) -> Result<()> {
        w.wait(self)
    }
    fn merges(&self) -> bool {
        true
    }
}

impl Logger for UndoContext<'_> {
    fn manager(&self) -> &TxnManager {
        UndoContext::manager(self)
    }
    fn log(
        &mut self,
        page: &mut ExclusiveGuard<'_>,
        redo: Vec<u8>,
        _near: usize,
        _undo: impl FnOnce() -> Vec<u8>,
    ) -> Result<Lsn> {
        self.compensate_on(page, redo)
    }
}

/// Which way a descent goes at each inner node.
#[derive(Clone, Copy)]
pub(crate) enum Seek<'k> {
    /// To the node whose range holds the key.
    Key(&'k [u8]),
    /// To the node whose range holds the keys just below the key (backward scans).
    Before(&'k [u8]),
    /// To the last node of each level.
    Last,
}

/// A node on the way down and its parent, both read optimistically (nothing held).
pub(crate) struct Path<'p> {
    pub(crate) parent: Option<OptimisticPage<'p>>,
    pub(crate) node: OptimisticPage<'p>,
    /// True if the descent prefetched `node`'s search lines from its search summary
    /// (`node::summary::prefetch`), so its search need not prefetch them again.
    pub(crate) prefetched: bool,
}

/// What [`BTree::read_leaf_entry`] read: the key's entry number and stored value (`None`:
/// absent), the leaf at the version read, and the leaf's page LSN.
pub(crate) struct LeafRead<'p, V = StoredValue> {
    pub(crate) entry: Option<(usize, V)>,
    pub(crate) leaf: OptimisticPage<'p>,
    pub(crate) lsn: Lsn,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Put {
    Insert,
    Update,
    Upsert,
}

/// A B+-tree of byte-string keys and byte-string values, identified by its root page, which
/// never moves (the root grows in place). Cheap to clone; share it between threads.
#[derive(Clone)]
pub struct BTree {
    pub(crate) pool: Arc<BufferPool>,
    pub(crate) space: Arc<SpaceManager>,
    pub(crate) root: PageId,
    /// Where the transactional operations lock keys (`None`: they lock nothing).
    pub(crate) locking: Option<LockSpace>,
    /// The leaf that took each thread's last insert (btree rule 13); boxed, so that a
    /// handle stays a few words.
    last_leaf: Box<LastLeaf>,
}

/// The last-leaf hints (btree rule 13), one per thread stripe ([`LAST_LEAF_SLOTS`] slots,
/// chosen by [`crate::stats::stripe_index`]), so that threads appending to different parts
/// of one tree (TPC-C's districts, the `btree` insert benchmark's per-thread key ranges)
/// do not take turns overwriting one hint. A slot holds a [`Hint`]: a leaf's page id, the
/// space manager's unlink epoch read while that leaf was reachable and X-latched, and a
/// confidence; page id 0 for none. One `AtomicCell` per slot, so that a reader never pairs
/// one leaf's id with another's epoch (a seqlock read; a store takes a striped spin lock,
/// and happens only when the hint changes). A clone of the handle starts without hints.
struct LastLeaf([HintSlot; LAST_LEAF_SLOTS]);

/// One slot of [`LastLeaf`]: (leaf page id, confidence and last entry number packed as
/// below, unlink epoch); see [`Hint`].
type HintSlot = crossbeam_utils::atomic::AtomicCell<(u64, u64)>;

/// A slot's first word: the page id in its low 48 bits, the confidence in the next 2, and
/// one more than the entry number of the thread's last insert on that leaf in the top 14
/// (0: unknown).
const CONF_SHIFT: u32 = 48;
const LAST_SHIFT: u32 = 50;
/// Highest confidence: a streak of this many hits survives this many misses.
const CONF_MAX: u64 = 3;

/// A slot's contents: the leaf, the unlink epoch read under its latch, and how much the
/// hint is trusted (btree rule 13). The hint is tried only at confidence 1 or more; a hit,
/// or a descent that lands on the hinted leaf anyway, raises it; a miss lowers it; an insert
/// after all of a leaf's entries sets it to at least 2. So an ascending load, or a run of
/// inserts into one place inside a leaf (a TPC-C order's lines, after the last order of
/// their district and before the next district's), skips the descent, while random inserts
/// stop trying the hint after a miss or two.
///
/// The hint also keeps where on the leaf the thread's last insert went, so that a leaf split
/// can tell an ascending run inside a leaf ([`BTree::make_room`]'s `run`).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Hint {
    pid: u64,
    epoch: u64,
    conf: u64,
    /// Entry number of the thread's last insert on the leaf.
    last: Option<usize>,
}

impl Hint {
    fn load(slot: &HintSlot) -> Hint {
        let (w, epoch) = slot.load();
        Hint {
            pid: w & ((1 << CONF_SHIFT) - 1),
            epoch,
            conf: (w >> CONF_SHIFT) & CONF_MAX,
            last: ((w >> LAST_SHIFT) as usize).checked_sub(1),
        }
    }

    /// Stores the hint in `slot` if it differs from `old` (what the slot held). A page id
    /// too large for the slot is not stored; an entry number too large is stored as unknown.
    fn store_over(self, old: Hint, slot: &HintSlot) {
        if self == old || self.pid >> CONF_SHIFT != 0 {
            return;
        }
        let last = self.last.map_or(0, |i| i as u64 + 1);
        let last = if last < 1 << (64 - LAST_SHIFT) {
            last
        } else {
            0
        };
        slot.store((
            self.pid | self.conf << CONF_SHIFT | last << LAST_SHIFT,
            self.epoch,
        ));
    }
}

/// Slots of [`LastLeaf`]: threads beyond this many share slots.
const LAST_LEAF_SLOTS: usize = 8;

/// Pages queued to be freed once the log is durable ([`BTree::free_when_durable`]) at or
/// beyond which the queueing thread waits for the log and frees them.
pub(crate) const PENDING_FREES_MAX: usize = 64;

impl LastLeaf {
    fn none() -> LastLeaf {
        LastLeaf(std::array::from_fn(|_| HintSlot::new((0, 0))))
    }

    /// This thread's slot.
    fn slot(&self) -> &HintSlot {
        &self.0[crate::stats::stripe_index() % LAST_LEAF_SLOTS]
    }
}

impl Clone for LastLeaf {
    fn clone(&self) -> LastLeaf {
        LastLeaf::none()
    }
}

/// Slots of the per-thread read hints (rule 14), chosen by tree.
const READ_HINT_SLOTS: usize = 4;
/// Highest read-hint confidence.
const READ_HINT_CONF_MAX: u8 = 3;

/// A thread's read hint for one tree (btree rule 14): the leaf its last read of the tree
/// ended on, the unlink epoch read before the descent that found it, and how many reads in
/// a row ended there (0–3; the hint is tried from 1 on).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct ReadHint {
    /// The tree: its root page id mixed with its buffer pool's address (two databases
    /// may have trees with one root id); 0 for none.
    tree: u64,
    pid: u64,
    epoch: u64,
    conf: u8,
}

thread_local! {
    /// This thread's read hints, a few trees' worth (rule 14). Plain cells: only this
    /// thread reads or writes them.
    static READ_HINTS: [Cell<ReadHint>; READ_HINT_SLOTS] =
        const { [const { Cell::new(ReadHint::NONE) }; READ_HINT_SLOTS] };
}

#[cfg(test)]
thread_local! {
    /// Reads this thread answered from its read hint (tests).
    pub(crate) static READ_HINT_HITS: Cell<u64> = const { Cell::new(0) };
}

impl ReadHint {
    const NONE: ReadHint = ReadHint {
        tree: 0,
        pid: 0,
        epoch: 0,
        conf: 0,
    };

    fn tree_of(t: &BTree) -> u64 {
        let pool = Arc::as_ptr(&t.pool) as usize as u64;
        (t.root.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ pool) | 1
    }

    fn slot(tree: u64) -> usize {
        (tree >> 32) as usize % READ_HINT_SLOTS
    }

    /// The hint in `tree`'s slot (possibly another tree's: compare `tree`).
    fn load(tree: u64) -> ReadHint {
        READ_HINTS
            .try_with(|h| h[Self::slot(tree)].get())
            .unwrap_or(ReadHint::NONE)
    }

    fn store(self) {
        let _ = READ_HINTS.try_with(|h| h[Self::slot(self.tree)].set(self));
    }
}

impl std::fmt::Debug for BTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BTree").field("root", &self.root).finish()
    }
}

impl BTree {
    /// Creates an empty tree (one leaf, its root) in a system transaction of `txns`, which
    /// commits without waiting for the log: a later commit that uses the tree forces it.
    /// [`BTree::root`] names the tree for [`BTree::open`].
    ///
    /// # Errors
    /// Allocation, buffer-pool and log errors.
    pub fn create(txns: &TxnManager, space: &Arc<SpaceManager>) -> Result<BTree> {
        let pool = txns.pool().clone();
        let root = space.allocate()?;
        let mut sys = txns.begin_system();
        {
            let mut g = pool.fix_new(root, PageType::BTreeLeaf)?;
            NodeImage::empty_root(root).write_to(&mut g.page_mut(), root)?;
            sys.log_new_page(&mut g)?;
            sys.commit()?; // transaction rule 8: before the latch goes
        }
        Ok(BTree {
            pool,
            space: space.clone(),
            root,
            locking: None,
            last_leaf: Box::new(LastLeaf::none()),
        })
    }

    /// Opens the tree whose root page is `root`.
    ///
    /// # Errors
    /// [`Error::Corruption`] if `root` is not the root of a B-tree; buffer-pool errors.
    pub fn open(pool: Arc<BufferPool>, space: Arc<SpaceManager>, root: PageId) -> Result<BTree> {
        {
            let g = pool.fix_shared(root)?;
            let n = Node::open(g.bytes())?;
            if n.tree != root || n.low_fence()?.is_some() || n.high_fence()?.is_some() {
                return Err(Error::corruption(root, "not the root page of a B-tree"));
            }
        }
        Ok(BTree::handle(pool, space, root))
    }

    /// A handle without the check of [`BTree::open`] (for undo, which trusts its log).
    pub(crate) fn handle(pool: Arc<BufferPool>, space: Arc<SpaceManager>, root: PageId) -> BTree {
        BTree {
            pool,
            space,
            root,
            locking: None,
            last_leaf: Box::new(LastLeaf::none()),
        }
    }

    /// The root page id, which names the tree.
    pub fn root(&self) -> PageId {
        self.root
    }

    /// Longest key in bytes: an eighth of the usable page, at most 1,024 (1,014 for 8 KiB
    /// pages, 502 for 4 KiB).
    pub fn max_key_bytes(&self) -> usize {
        node::max_key_bytes(self.pool.page_size())
    }

    /// Longest value in bytes: [`MAX_VALUE_BYTES`](super::MAX_VALUE_BYTES) (64 MiB). Values
    /// longer than [`BTree::max_inline_value_bytes`] go to overflow pages.
    pub fn max_value_bytes(&self) -> usize {
        super::overflow::MAX_VALUE_BYTES
    }

    /// Longest value in bytes stored in the leaf itself for a key of `key_len` bytes: key and
    /// value together take at most a quarter of a page (2,010 bytes for 8-byte keys and 8 KiB
    /// pages); a longer one is stored in overflow pages.
    pub fn max_inline_value_bytes(&self, key_len: usize) -> usize {
        node::max_entry_bytes(self.pool.page_size())
            .saturating_sub(node::KEY_LEN_BYTES + 1 + key_len)
    }

    pub(crate) fn check_key(&self, key: &[u8]) -> Result<()> {
        let max = self.max_key_bytes();
        if key.len() > max {
            return Err(Error::invalid(
                "key",
                format!("{} bytes is longer than the {max}-byte limit", key.len()),
            ));
        }
        Ok(())
    }

    /// Checks `key` and `value` and makes the leaf entry that stores them: the value
    /// inline, or a reference to an overflow chain written now in `txn` (returned too).
    fn new_entry(
        &self,
        txn: &mut Transaction<'_>,
        key: &[u8],
        value: &[u8],
    ) -> Result<(NewEntry, Option<OverflowRef>)> {
        self.check_key(key)?;
        let max = self.max_value_bytes();
        if value.len() > max {
            return Err(Error::invalid(
                "value",
                format!("{} bytes is longer than the {max}-byte limit", value.len()),
            ));
        }
        if value.len() > self.max_inline_value_bytes(key.len()) {
            let r = self.write_overflow(txn, value)?;
            return Ok((NewEntry::new(key, &[&r.encode()]), Some(r)));
        }
        Ok((NewEntry::new(key, &[&[VALUE_INLINE], value]), None))
    }

    /// The value a tagged value stands for; `None` if it is an overflow chain that was freed
    /// and reused since the reference was read (the caller reads the leaf again).
    pub(crate) fn value_of(&self, tagged: Vec<u8>) -> Result<Option<Vec<u8>>> {
        match tagged.first() {
            Some(&VALUE_INLINE) => {
                let mut v = tagged;
                v.remove(0);
                Ok(Some(v))
            }
            Some(&super::overflow::VALUE_OVERFLOW) => {
                let r = OverflowRef::parse(self.root, &tagged)?.expect("tag checked");
                self.read_overflow(&r)
            }
            _ => Err(Error::corruption(
                self.root,
                "leaf entry with an unknown value tag",
            )),
        }
    }

    /// The value of an old tagged value this transaction just removed or replaced; its
    /// overflow chain, if any, is freed once the transaction's commit is durable (queued at
    /// commit, [`BTree::free_when_durable`]: the commit itself does not wait for the log).
    fn retire(&self, txn: &mut Transaction<'_>, old: Vec<u8>) -> Result<Vec<u8>> {
        let r = OverflowRef::parse(self.root, &old)?;
        let value = self
            .value_of(old)?
            .ok_or_else(|| self.corrupt(self.root, "a value being removed lost its chain"))?;
        if let Some(r) = r {
            let tree = self.clone();
            let txns = txn.manager();
            txn.after_commit_logged(move |commit| {
                // Past the commit record: queued pages are freed once it is durable.
                let after = Lsn(commit.0 + 1);
                tree.free_when_durable(txns, &tree.overflow_pages(&r)?, after)
            });
        }
        Ok(value)
    }

    /// Frees the chain of a value whose entry was never linked, or was unlinked by a rollback
    /// whose compensation records are logged: once they are durable (space invariant 5).
    fn drop_unlinked(&self, txns: &TxnManager, r: Option<OverflowRef>) -> Result<()> {
        if let Some(r) = r {
            let pages = self.overflow_pages(&r)?;
            self.free_when_durable(txns, &pages, txns.log().end_lsn())?;
        }
        Ok(())
    }

    /// Frees `pages`, which records below `after` made unreachable, once the log is durable
    /// up to `after` (space invariant 5: a page must be unreachable on disk before the space
    /// map can say it is free): queued ([`SpaceManager::free_after`]) and freed with
    /// whatever else the log's durable point has passed, here or by a later call, a
    /// checkpoint, `verify` or close. Waits for the log only when [`PENDING_FREES_MAX`]
    /// pages or more are queued. Called with no latch held.
    ///
    /// # Errors
    /// Log errors of the wait; as [`SpaceManager::free_after`] and
    /// [`SpaceManager::free_durable`].
    pub(crate) fn free_when_durable(
        &self,
        txns: &TxnManager,
        pages: &[PageId],
        after: Lsn,
    ) -> Result<()> {
        let log = txns.log();
        let queued = self.space.free_after(pages, after)?;
        if queued >= PENDING_FREES_MAX && after > Lsn::ZERO {
            log.wait_durable(Lsn(after.0 - 1))?;
        }
        self.space.free_durable(log.durable_lsn()).map(|_| ())
    }

    pub(crate) fn corrupt(&self, page: PageId, why: impl Into<String>) -> Error {
        Error::corruption(page, format!("B-tree {}: {}", self.root, why.into()))
    }

    /// Descends optimistically to the node at `level` on the path `seek` names, keeping its
    /// parent. Returns the root if the
    /// tree is not that tall. Nothing is latched: every page read is validated before its
    /// contents are trusted (btree rule 2).
    ///
    /// # Errors
    /// [`Error::Corruption`] for a page that validated yet is not the expected node;
    /// buffer-pool errors of a miss.
    pub(crate) fn descend(&self, seek: Seek<'_>, level: u16) -> Result<Attempt<Path<'_>>> {
        let mut parent: Option<OptimisticPage<'_>> = None;
        let mut node = self.pool.fix_optimistic(self.root)?;
        let mut expect: Option<u16> = None;
        let mut prefetched = false;
        loop {
            let step = {
                let b = node.bytes();
                self.step(&b, seek, level, expect)
            };
            if node.validate().is_err() {
                return Ok(Attempt::Restart);
            }
            let Some((child, child_level)) = step? else {
                return Ok(Attempt::Done(Path {
                    parent,
                    node,
                    prefetched,
                }));
            };
            // The child's search summary, from its frame descriptor, starts the misses of
            // the child's search alongside those of its first lines (`node::summary`).
            prefetched = false;
            let c = match self.pool.fix_optimistic_with(child, |s, page| {
                prefetched = match seek {
                    Seek::Key(k) | Seek::Before(k) => node::summary::prefetch(s, k, page),
                    Seek::Last => false,
                }
            }) {
                Ok(c) => c,
                Err(e) => {
                    return match node.validate() {
                        Err(_) => Ok(Attempt::Restart),
                        Ok(()) => Err(e),
                    }
                }
            };
            if node.validate().is_err() {
                return Ok(Attempt::Restart);
            }
            parent = Some(node);
            node = c;
            expect = Some(child_level);
        }
    }

    /// One node of a descent: `None` at the target level, else the child and its level.
    fn step(
        &self,
        b: &AtomicBytes<'_>,
        seek: Seek<'_>,
        level: u16,
        expect: Option<u16>,
    ) -> Result<Option<(PageId, u16)>> {
        let n = Node::open(b)?;
        if n.tree != self.root || expect.is_some_and(|e| e != n.level) {
            return Err(self.corrupt(
                n.page_id(),
                format!("node of tree {} at level {} on the path", n.tree, n.level),
            ));
        }
        if n.level <= level {
            return Ok(None);
        }
        let child = match seek {
            Seek::Key(k) => n.child_for(k)?,
            Seek::Before(k) => n.child_before(k)?,
            Seek::Last => n.nth_child(n.entry_count())?,
        };
        Ok(Some((child, n.level - 1)))
    }

    /// The value of `key`, or `None`. Latch-free: the descent and the leaf are read
    /// optimistically, so a lookup writes no shared memory (DESIGN.md principle 3).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a key over [`BTree::max_key_bytes`];
    /// [`Error::Corruption`]; buffer-pool errors.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_key(key)?;
        self.get_with_lsn(key).map(|(v, _)| v)
    }

    /// [`BTree::get`] into a vector the caller keeps: `Ok(true)` with `out` holding exactly
    /// the value, or `Ok(false)` with `out` empty if there is none. `out` is cleared first;
    /// a value stored in the leaf is copied into it, which allocates only when its capacity
    /// is short of the value's length plus 7 bytes (the copy stores 8 bytes at a time), so
    /// a reader that reuses one vector reads small values with no allocation
    /// (`docs/benchmarks.md`, update 29, measures what that saves a lookup). A value in
    /// overflow pages is read into a new vector, which replaces `out`.
    /// Latch-free, as [`BTree::get`].
    ///
    /// # Errors
    /// As [`BTree::get`]; `out` is empty after an error.
    pub fn get_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let found = self
            .check_key(key)
            .and_then(|()| self.get_with_lsn_into(key, out).map(|(found, _)| found));
        emptied_unless_found(found, out)
    }

    /// [`BTree::get_with_lsn`] into `out` (as [`BTree::get_into`], key already checked):
    /// whether the key has a value, and the page LSN of the leaf the answer came from.
    /// `out`'s content is unspecified unless the answer is found.
    pub(crate) fn get_with_lsn_into(&self, key: &[u8], out: &mut Vec<u8>) -> Result<(bool, Lsn)> {
        loop {
            let read = self.read_leaf_entry_with(key, |n, i| n.value_into(i, out))?;
            match read.entry {
                None => return Ok((false, read.lsn)),
                Some((_, true)) => return Ok((true, read.lsn)),
                // Any other value: `out` holds its tagged bytes.
                Some((_, false)) => match self.value_of(std::mem::take(out))? {
                    Some(v) => {
                        *out = v;
                        return Ok((true, read.lsn));
                    }
                    None => continue, // its chain was replaced meanwhile: read the leaf again
                },
            }
        }
    }

    /// [`BTree::get`] (key already checked), with the page LSN of the leaf the answer came
    /// from, read in the same validated optimistic section as the entry.
    pub(crate) fn get_with_lsn(&self, key: &[u8]) -> Result<(Option<Vec<u8>>, Lsn)> {
        let mut v = Vec::new();
        let (found, lsn) = self.get_with_lsn_into(key, &mut v)?;
        Ok((found.then_some(v), lsn))
    }

    /// `key`'s entry on its leaf, read optimistically and validated ([`LeafRead`]). Nothing
    /// is latched (rule 2). Tries this thread's read hint first (rule 14).
    ///
    /// # Errors
    /// [`Error::Corruption`] for a node that validated yet is malformed; buffer-pool errors
    /// of a miss.
    pub(crate) fn read_leaf_entry(&self, key: &[u8]) -> Result<LeafRead<'_>> {
        self.read_leaf_entry_with(key, |n, i| n.stored_value(i))
    }

    /// [`BTree::read_leaf_entry`] that reads the found entry's value with `value` (the
    /// entry number on a node read optimistically; it may run again if the read does not
    /// validate, and only a validated read's answer is kept).
    ///
    /// # Errors
    /// As [`BTree::read_leaf_entry`]; `value`'s errors of a validated read.
    #[inline(always)]
    pub(crate) fn read_leaf_entry_with<V>(
        &self,
        key: &[u8],
        mut value: impl FnMut(&Node<'_, AtomicBytes<'_>>, usize) -> Result<V>,
    ) -> Result<LeafRead<'_, V>> {
        let tree = ReadHint::tree_of(self);
        let hint = ReadHint::load(tree);
        if hint.tree == tree && hint.conf > 0 {
            if let Some(read) = self.read_hinted(&hint, key, &mut value) {
                #[cfg(test)]
                READ_HINT_HITS.with(|h| h.set(h.get() + 1));
                ReadHint::store(ReadHint {
                    conf: (hint.conf + 1).min(READ_HINT_CONF_MAX),
                    ..hint
                });
                return Ok(read);
            }
        }
        // Read before the descent: the leaf it finds was reachable after this (rule 14).
        let epoch = self.space.unlink_epoch();
        loop {
            let Attempt::Done(path) = self.descend(Seek::Key(key), 0)? else {
                continue;
            };
            let (leaf, prefetched) = (path.node, path.prefetched);
            let pid = leaf.page_id().0;
            let conf = match hint.tree == tree && hint.pid == pid {
                true => (hint.conf + 1).min(READ_HINT_CONF_MAX),
                false => 0,
            };
            ReadHint::store(ReadHint {
                tree,
                pid,
                epoch,
                conf,
            });
            // The entry is written in place and only the status travels as a `Result`: a
            // `Result<Option<(usize, StoredValue)>>` returned from a closure was copied through
            // the stack and read back with loads that stalled on store forwarding.
            let mut entry = None;
            let (status, lsn) = {
                let b = leaf.bytes();
                let status = (|| -> Result<()> {
                    let n = Node::open(&b)?;
                    let found = match prefetched {
                        true => n.search_prefetched(key)?,
                        false => n.search(key)?,
                    };
                    if let Ok(i) = found {
                        entry = Some((i, value(&n, i)?));
                    }
                    Ok(())
                })();
                (status, crate::page::header::page_lsn(&b))
            };
            if leaf.validate().is_ok() {
                status?;
                return Ok(LeafRead { entry, leaf, lsn });
            }
        }
    }

    /// `key`'s entry read from the leaf `hint` names, if that leaf is still a reachable
    /// leaf of this tree whose fences cover `key` (rule 14); `None` (a miss: descend) if not,
    /// or if anything read there fails — the descent then reads properly and reports what
    /// is really wrong.
    #[inline(always)]
    fn read_hinted<V>(
        &self,
        hint: &ReadHint,
        key: &[u8],
        value: &mut impl FnMut(&Node<'_, AtomicBytes<'_>>, usize) -> Result<V>,
    ) -> Option<LeafRead<'_, V>> {
        if self.space.unlink_epoch() != hint.epoch {
            return None;
        }
        let leaf = self.pool.fix_optimistic(PageId(hint.pid)).ok()?;
        // The read mirrors the descent's in `read_leaf_entry`, plus the leaf check. One
        // helper for both, even `#[inline(always)]`, made select1 2–3 % slower (three
        // interleaved pairs each), so each keeps its own copy.
        let mut entry = None;
        let (found, lsn) = {
            let b = leaf.bytes();
            let found = (|| -> Result<bool> {
                let n = Node::open(&b)?;
                if n.tree != self.root || !n.is_leaf() || !n.covers(key)? {
                    return Ok(false);
                }
                if let Ok(i) = n.search(key)? {
                    entry = Some((i, value(&n, i)?));
                }
                Ok(true)
            })();
            (found, crate::page::header::page_lsn(&b))
        };
        leaf.validate().ok()?;
        // After the validation: a read of the leaf after a merge unlinked it would see the
        // epoch that merge bumped under the leaf's latch (rule 14).
        if !matches!(found, Ok(true)) || self.space.unlink_epoch() != hint.epoch {
            return None;
        }
        Some(LeafRead { entry, leaf, lsn })
    }
}

/// `found` as the `*_into` reads return it: `out`, whose content a read leaves unspecified
/// unless it found a value, is emptied on `Ok(false)` and on an error.
pub(crate) fn emptied_unless_found(found: Result<bool>, out: &mut Vec<u8>) -> Result<bool> {
    if !matches!(found, Ok(true)) {
        out.clear();
    }
    found
}

/// A key for an error message: hex, shortened.
pub(crate) fn printable(key: &[u8]) -> String {
    let mut s: String = key.iter().take(32).map(|b| format!("{b:02x}")).collect();
    if key.len() > 32 {
        s.push('…');
    }
    format!("0x{s}")
}
