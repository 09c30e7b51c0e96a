//! The tree handle and its point operations: get, insert, upsert, update, delete (btree
//! rules 1–6 in the module doc). Structure modifications are in `smo.rs`.

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
}

/// What [`BTree::read_leaf_entry`] read: the key's entry number and stored value (`None`:
/// absent), the leaf at the version read, and the leaf's page LSN.
pub(crate) struct LeafRead<'p> {
    pub(crate) entry: Option<(usize, StoredValue)>,
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
        }
        sys.commit()?;
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
        loop {
            let step = {
                let b = node.bytes();
                self.step(&b, seek, level, expect)
            };
            if node.validate().is_err() {
                return Ok(Attempt::Restart);
            }
            let Some((child, child_level)) = step? else {
                return Ok(Attempt::Done(Path { parent, node }));
            };
            // The child's search summary, from its frame descriptor, starts the misses of
            // the child's search alongside those of its first lines (`node::summary`).
            let c = match self.pool.fix_optimistic_with(child, |s, page| match seek {
                Seek::Key(k) | Seek::Before(k) => node::summary::prefetch(s, k, page),
                Seek::Last => {}
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

    /// [`BTree::get`] (key already checked), with the page LSN of the leaf the answer came
    /// from, read in the same validated optimistic section as the entry.
    pub(crate) fn get_with_lsn(&self, key: &[u8]) -> Result<(Option<Vec<u8>>, Lsn)> {
        loop {
            let LeafRead { entry, lsn, .. } = self.read_leaf_entry(key)?;
            match entry {
                None => return Ok((None, lsn)),
                Some((_, StoredValue::Inline(v))) => return Ok((Some(v), lsn)),
                Some((_, StoredValue::Tagged(tagged))) => match self.value_of(tagged)? {
                    Some(v) => return Ok((Some(v), lsn)),
                    None => continue, // its chain was replaced meanwhile: read the leaf again
                },
            }
        }
    }

    /// `key`'s entry on its leaf, read optimistically and validated ([`LeafRead`]). Nothing
    /// is latched (rule 2). Tries this thread's read hint first (rule 14).
    ///
    /// # Errors
    /// [`Error::Corruption`] for a node that validated yet is malformed; buffer-pool errors
    /// of a miss.
    pub(crate) fn read_leaf_entry(&self, key: &[u8]) -> Result<LeafRead<'_>> {
        let tree = ReadHint::tree_of(self);
        let hint = ReadHint::load(tree);
        if hint.tree == tree && hint.conf > 0 {
            if let Some(read) = self.read_hinted(&hint, key) {
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
            let leaf = path.node;
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
                    if let Ok(i) = n.search(key)? {
                        entry = Some((i, n.stored_value(i)?));
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
    fn read_hinted(&self, hint: &ReadHint, key: &[u8]) -> Option<LeafRead<'_>> {
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
                    entry = Some((i, n.stored_value(i)?));
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

    /// Inserts `key` with `value` in `txn`.
    ///
    /// # Errors
    /// [`Error::DuplicateKey`] if `key` is present (nothing changes);
    /// [`Error::InvalidArgument`] for a key or value over the limits
    /// ([`BTree::max_key_bytes`], [`BTree::max_value_bytes`]); log, buffer-pool and
    /// allocation errors.
    pub fn insert(&self, txn: &mut Transaction<'_>, key: &[u8], value: &[u8]) -> Result<()> {
        self.lock_for_write(txn, key)?;
        let (entry, chain) = self.new_entry(txn, key, value)?;
        match self.put(txn, key, entry, Put::Insert) {
            Ok(_) => Ok(()),
            Err(e) => {
                self.drop_unlinked(txn.manager(), chain)?;
                Err(e)
            }
        }
    }

    /// Inserts `key` with `value`, or replaces the value of a present `key`; returns the old
    /// value.
    ///
    /// # Errors
    /// As [`BTree::insert`], without `DuplicateKey`.
    pub fn upsert(
        &self,
        txn: &mut Transaction<'_>,
        key: &[u8],
        value: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        self.lock_for_write(txn, key)?;
        let (entry, _) = self.new_entry(txn, key, value)?;
        match self.put(txn, key, entry, Put::Upsert)? {
            Some(old) => self.retire(txn, old).map(Some),
            None => Ok(None),
        }
    }

    /// Replaces the value of `key`; returns the old value, or `None` (and changes nothing)
    /// if `key` is absent.
    ///
    /// # Errors
    /// As [`BTree::upsert`].
    pub fn update(
        &self,
        txn: &mut Transaction<'_>,
        key: &[u8],
        value: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        self.lock_for_write(txn, key)?;
        let (entry, chain) = self.new_entry(txn, key, value)?;
        match self.put(txn, key, entry, Put::Update)? {
            Some(old) => self.retire(txn, old).map(Some),
            None => {
                self.drop_unlinked(txn.manager(), chain)?;
                Ok(None)
            }
        }
    }

    /// Deletes `key`; returns its value, or `None` if it was absent.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a key over the limit; log and buffer-pool errors.
    pub fn delete(&self, txn: &mut Transaction<'_>, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.lock_for_write(txn, key)?;
        match self.remove(txn, key)? {
            Some(old) => self.retire(txn, old).map(Some),
            None => Ok(None),
        }
    }

    /// The leaf on `key`'s path, X-latched, after checking that it is a leaf of this tree that
    /// covers `key`; `None` if an optimistic step failed (start over).
    fn leaf_exclusive(&self, key: &[u8]) -> Result<Option<ExclusiveGuard<'_>>> {
        let Attempt::Done(path) = self.descend(Seek::Key(key), 0)? else {
            return Ok(None);
        };
        let Ok(x) = path.node.upgrade() else {
            return Ok(None);
        };
        let n = Node::open(x.bytes())?;
        // The upgrade validated the descent, so the leaf covers `key` unless the tree is
        // corrupt. Release builds check what costs no extra cache line (the key has the
        // leaf's prefix, from the special area); debug builds (the tests) read the fences.
        let covers = n.has_prefix_of(key)? && (!cfg!(debug_assertions) || n.covers(key)?);
        if n.tree != self.root || !n.is_leaf() || !covers {
            return Err(self.corrupt(n.page_id(), "the leaf found does not cover its key"));
        }
        Ok(Some(x))
    }

    /// The leaf of this thread's last-leaf hint `hint`, X-latched, if it still covers `key`
    /// (btree rule 13); else `None`, and the hint's confidence is lowered in `slot`. The
    /// leaf is read optimistically and upgraded (never waited for: a leaf another thread
    /// holds is a miss). Any failure on the way (a page that no longer reads as a node, an
    /// I/O error) is a miss too: the descent that follows reports what is really wrong.
    fn hinted_leaf(
        &self,
        slot: &HintSlot,
        hint: &mut Hint,
        key: &[u8],
    ) -> Option<ExclusiveGuard<'_>> {
        let hit = (|| {
            if self.space.unlink_epoch() != hint.epoch {
                return None;
            }
            let page = self.pool.fix_optimistic(PageId(hint.pid)).ok()?;
            let covers = {
                let b = page.bytes();
                let n = Node::open(&b).ok()?;
                n.tree == self.root && n.is_leaf() && n.covers(key).ok()?
            };
            // The upgrade validates the read above; under the X latch an unchanged epoch
            // means the page is still reachable (space invariant 6).
            let x = page.upgrade().ok()?;
            (covers && self.space.unlink_epoch() == hint.epoch).then_some(x)
        })();
        if hit.is_none() {
            let old = *hint;
            hint.conf = hint.conf.saturating_sub(1);
            hint.store_over(old, slot);
        }
        hit
    }

    /// This thread's last-leaf hint: the leaf's page id and the confidence (tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn last_leaf_hint(&self) -> (PageId, u64) {
        let h = Hint::load(self.last_leaf.slot());
        (PageId(h.pid), h.conf)
    }

    /// Records `x`, the X-latched leaf that just took a new key (at its end if `at_end`),
    /// as the last-leaf hint (btree rule 13), with the unlink epoch read under its latch and
    /// the confidence that `hint` (the slot's contents, after any miss) and `hit` (whether
    /// the hint was tried and used) give.
    fn note_last_leaf(
        &self,
        slot: &HintSlot,
        hint: Hint,
        hit: bool,
        x: &ExclusiveGuard<'_>,
        pos: usize,
        at_end: bool,
    ) {
        let pid = x.page_id().0;
        let conf = if hit || pid == hint.pid {
            (hint.conf + 1).min(CONF_MAX)
        } else {
            hint.conf
        };
        let new = Hint {
            pid,
            epoch: self.space.unlink_epoch(),
            conf: if at_end { conf.max(2) } else { conf },
            last: Some(pos),
        };
        new.store_over(hint, slot);
    }

    /// Inserts or replaces (per `mode`) the entry of `key` with `new` (whose key is `key`);
    /// returns the old tagged value.
    fn put<L: Logger>(
        &self,
        log: &mut L,
        key: &[u8],
        new: NewEntry,
        mode: Put,
    ) -> Result<Option<Vec<u8>>> {
        let entry = new.entry();
        // This thread's hint slot, looked up once; the hint is tried on the first pass only,
        // and only if trusted.
        let slot = self.last_leaf.slot();
        let mut hint = Hint::load(slot);
        let mut try_hint = hint.pid != 0 && hint.conf >= 1;
        loop {
            let hinted = if std::mem::take(&mut try_hint) {
                self.hinted_leaf(slot, &mut hint, key)
            } else {
                None
            };
            // Whether this pass's leaf came from the hint.
            let hit = hinted.is_some();
            let found = match hinted {
                Some(x) => Some(x),
                None => self.leaf_exclusive(key)?,
            };
            let Some(mut x) = found else {
                continue;
            };
            let (old, room, pos, at_end) = {
                let n = Node::open(x.bytes())?;
                // Kept up to date by the writers, for the next descent's prefetch (summary
                // invariant 2), when it has drifted far enough to misplace a guess.
                if n.summary_is_stale(x.summary()) {
                    x.set_summary(n.search_summary());
                }
                match n.search(key)? {
                    Ok(i) => (
                        Some(n.entry(i)?),
                        n.free_bytes() + n.entry_len(i)?,
                        i,
                        false,
                    ),
                    Err(i) => {
                        // The log record is built and appended before the page changes:
                        // time for the lines the insert writes to arrive.
                        n.prefetch_insert(i, entry.len());
                        (
                            None,
                            n.free_bytes().saturating_sub(NODE_SLOT_SIZE),
                            i,
                            i == n.entry_count(),
                        )
                    }
                }
            };
            if old.is_none() && mode != Put::Update && self.locking.is_some() {
                let next = self.next_key_latched(&x, pos)?;
                if let Some(w) = log.next_key_lock(self, next.as_deref(), false)? {
                    drop(x);
                    log.wait_for(w)?;
                    continue;
                }
            }
            match (&old, mode) {
                (Some(_), Put::Insert) => {
                    return Err(Error::DuplicateKey {
                        index: format!("B-tree {}", self.root),
                        key: printable(key),
                    })
                }
                (None, Put::Update) => return Ok(None),
                _ => {}
            }
            if entry.len() > room {
                // An insert right after this thread's last one on this leaf continues an
                // ascending run: split at the insertion point.
                let run = old.is_none()
                    && hint.pid == x.page_id().0
                    && pos > 0
                    && hint.last == Some(pos - 1);
                drop(x);
                self.make_room(log.manager(), key, 0, entry.len() + NODE_SLOT_SIZE, run)?;
                continue;
            }
            let root = self.root;
            return match old {
                None => {
                    log.log(&mut x, new.into_redo_insert(), pos, || {
                        wal::undo_insert(root, key)
                    })?;
                    self.note_last_leaf(slot, hint, hit, &x, pos, at_end);
                    Ok(None)
                }
                Some(old) => {
                    if old.len() <= node::KEY_LEN_BYTES + key.len() {
                        return Err(Error::corruption(
                            x.page_id(),
                            format!("entry {pos} of the leaf has no value tag"),
                        ));
                    }
                    let change = wal::EntryChange::new(&old, entry, key.len());
                    log.log(&mut x, change.redo(), pos, || change.undo(root))?;
                    Ok(Some(old[node::KEY_LEN_BYTES + key.len()..].to_vec()))
                }
            };
        }
    }

    /// Removes the entry of `key`; returns its tagged value.
    fn remove<L: Logger>(&self, log: &mut L, key: &[u8]) -> Result<Option<Vec<u8>>> {
        loop {
            let Some(mut x) = self.leaf_exclusive(key)? else {
                continue;
            };
            let (old, pos) = {
                let n = Node::open(x.bytes())?;
                match n.search(key)? {
                    Ok(i) => (n.entry(i)?, i),
                    Err(_) => return Ok(None),
                }
            };
            if self.locking.is_some() {
                let next = self.next_key_latched(&x, pos + 1)?;
                if let Some(w) = log.next_key_lock(self, next.as_deref(), true)? {
                    drop(x);
                    log.wait_for(w)?;
                    continue;
                }
            }
            let root = self.root;
            log.log(&mut x, wal::redo_remove(key), pos, || {
                wal::undo_remove(root, &old)
            })?;
            let k = node::entry_key(x.page_id(), &old)?.len();
            let underfull = x.page_id() != self.root
                && super::merge::is_underfull(
                    Node::open(x.bytes())?.free_bytes(),
                    self.pool.page_size(),
                );
            drop(x);
            if underfull && log.merges() {
                self.merge_underfull(log.manager(), key, 0)?;
            }
            return Ok(Some(old[node::KEY_LEN_BYTES + k..].to_vec()));
        }
    }

    /// The first key at or after entry `pos` of the X-latched leaf `x`: that entry's key,
    /// borrowed from the leaf (no copy: the common case of an insert or delete), or past the
    /// leaf's end the first key at or after its high fence (read optimistically from the
    /// leaves to the right; `None` at the end of the tree).
    fn next_key_latched<'x>(
        &self,
        x: &'x ExclusiveGuard<'_>,
        pos: usize,
    ) -> Result<Option<Cow<'x, [u8]>>> {
        let n = Node::open(x.bytes())?;
        if pos < n.entry_count() {
            return n.key_in_place(pos).map(|k| Some(Cow::Borrowed(k)));
        }
        let Some(high) = n.high_fence()? else {
            return Ok(None);
        };
        // The right sibling's first key, read optimistically: the next key if the sibling
        // starts at this leaf's high fence and is not empty (rule 1), without a descent from
        // the root. Left to right and latch-free, so nothing can wait on this X latch. Any
        // other case (an empty sibling, a sibling being restructured) takes the cursor.
        if n.right.is_valid() {
            let first = self
                .pool
                .read_optimistic(n.right, |b| -> Result<Option<Vec<u8>>> {
                    let s = Node::open(b)?;
                    if s.tree != self.root
                        || !s.is_leaf()
                        || s.entry_count() == 0
                        || s.low_fence()?.as_deref() != Some(high.as_slice())
                    {
                        return Ok(None);
                    }
                    s.key(0).map(Some)
                })?;
            if let Ok(Some(k)) = first {
                return Ok(Some(Cow::Owned(k)));
            }
        }
        Ok(self
            .next_key(&std::ops::Bound::Included(high))?
            .map(Cow::Owned))
    }

    /// Logical undo of an insert: removes `key` wherever it now lives (btree rule 6).
    pub(crate) fn undo_insert(&self, ctx: &mut UndoContext<'_>, key: &[u8]) -> Result<()> {
        match self.remove(ctx, key)? {
            Some(old) => {
                let chain = OverflowRef::parse(self.root, &old)?;
                self.drop_unlinked(ctx.manager(), chain)
            }
            None => Err(self.corrupt(self.root, "undo of an insert: the key is gone")),
        }
    }

    /// Logical undo of a delete: puts the entry back, splitting if needed.
    pub(crate) fn undo_remove(&self, ctx: &mut UndoContext<'_>, entry: &[u8]) -> Result<()> {
        let key = node::entry_key(self.root, entry)?;
        let tagged = &entry[node::KEY_LEN_BYTES + key.len()..];
        self.put(ctx, key, NewEntry::new(key, &[tagged]), Put::Insert)
            .map(|_| ())
    }

    /// Logical undo of an update logged as a PATCH: puts the `old` bytes back at byte `at`
    /// of `key`'s entry, wherever the entry lives now, logging a PATCH compensation record.
    /// Later changes of the key were undone first (the transaction held its X lock), so the
    /// entry has the length and the inline tag that the patched one had.
    ///
    /// # Errors
    /// [`Error::Corruption`] if the key is gone or its entry no longer holds the range in
    /// an inline value.
    pub(crate) fn undo_patch(
        &self,
        ctx: &mut UndoContext<'_>,
        key: &[u8],
        at: usize,
        old: &[u8],
    ) -> Result<()> {
        loop {
            let Some(mut x) = self.leaf_exclusive(key)? else {
                continue;
            };
            // The apply (`NodeMut::patch`) finds the key and checks that the range lies in
            // its inline value (a patch never writes into an overflow reference, which a
            // change made without the key's lock, in a tree that takes none, could have put
            // there) before it changes anything; a refused apply logs nothing.
            ctx.log(&mut x, wal::redo_patch(key, at, old), 0, Vec::new)?;
            return Ok(());
        }
    }

    /// Logical undo of an update: puts the old entry back.
    pub(crate) fn undo_replace(&self, ctx: &mut UndoContext<'_>, entry: &[u8]) -> Result<()> {
        let key = node::entry_key(self.root, entry)?;
        let tagged = &entry[node::KEY_LEN_BYTES + key.len()..];
        match self.put(ctx, key, NewEntry::new(key, &[tagged]), Put::Update)? {
            Some(newer) => {
                let chain = OverflowRef::parse(self.root, &newer)?;
                self.drop_unlinked(ctx.manager(), chain)
            }
            None => Err(self.corrupt(self.root, "undo of an update: the key is gone")),
        }
    }
}

/// A key for an error message: hex, shortened.
pub(crate) fn printable(key: &[u8]) -> String {
    let mut s: String = key.iter().take(32).map(|b| format!("{b:02x}")).collect();
    if key.len() > 32 {
        s.push('…');
    }
    format!("0x{s}")
}
