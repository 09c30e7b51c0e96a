//! The tree's writes: insert, upsert, update and delete in a transaction, the last-leaf
//! hint that lets an ascending load skip the descent (btree rule 13), the next-key lock
//! an insert or delete asks for under its leaf's latch, and the logical undo of each change
//! (btree rules 3 and 6 in the module doc of `btree`; a change that needs room first makes
//! it through `smo.rs`, rules 4 and 5).
//!
//! Latching: a write X-latches one leaf, found by an optimistic descent (or the hint);
//! a lock that must wait is waited for with no latch held, and the write starts over. So
//! is a read of a page out of the pool that the next key needs (DESIGN.md principle 6): the
//! latch is dropped, the page read in, and the write starts over (`next_key_latched`).

use super::*;
use crate::page::AtomicBytes;

/// Warm-ups one write may take before it reads its next key under its leaf's latch
/// ([`BTree::next_key_latched`]).
const MAX_WARM_UPS: u32 = 3;

/// What [`BTree::next_key_latched`] found.
enum NextKey<'x> {
    /// The next key (`None`: the end of the tree).
    Found(Option<Cow<'x, [u8]>>),
    /// The answer needs pages that may have to be read: drop the latch, warm them up
    /// ([`BTree::warm_up`]), start over.
    Warm(Warm),
}

/// Pages to bring into the pool with no latch held.
enum Warm {
    /// The right sibling.
    Page(PageId),
    /// Whatever a cursor reads to find the first key at or after this key.
    NextKeyFrom(Vec<u8>),
}

impl BTree {
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
        let mut warm_ups = 0;
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
                let next = match self.next_key_latched(&x, pos, &mut warm_ups)? {
                    NextKey::Found(k) => k,
                    NextKey::Warm(w) => {
                        drop(x);
                        self.warm_up(w);
                        continue;
                    }
                };
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
        let mut warm_ups = 0;
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
                let next = match self.next_key_latched(&x, pos + 1, &mut warm_ups)? {
                    NextKey::Found(k) => k,
                    NextKey::Warm(w) => {
                        drop(x);
                        self.warm_up(w);
                        continue;
                    }
                };
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
                && crate::btree::merge::is_underfull(
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
    ///
    /// No I/O under the latch (DESIGN.md principle 6): when the answer lies on a page that
    /// is not in the pool (or is being read in or changed), this returns
    /// [`NextKey::Warm`] instead, for the caller to drop the latch, bring the page in
    /// ([`BTree::warm_up`]) and start the operation over. When it needs the cursor (an
    /// empty right sibling), the first pass warms the cursor's pages so and later passes
    /// run it under the latch. `warm_ups` counts the operation's warm-ups; after
    /// [`MAX_WARM_UPS`] (pages evicted again at once, a sibling changing under every try)
    /// the answer is read under the latch as a last resort, so that the operation always
    /// ends.
    fn next_key_latched<'x>(
        &self,
        x: &'x ExclusiveGuard<'_>,
        pos: usize,
        warm_ups: &mut u32,
    ) -> Result<NextKey<'x>> {
        let n = Node::open(x.bytes())?;
        if pos < n.entry_count() {
            return n
                .key_in_place(pos)
                .map(|k| NextKey::Found(Some(Cow::Borrowed(k))));
        }
        let Some(high) = n.high_fence()? else {
            return Ok(NextKey::Found(None));
        };
        let may_read = *warm_ups >= MAX_WARM_UPS;
        // The right sibling's first key, read optimistically: the next key if the sibling
        // starts at this leaf's high fence and is not empty (rule 1), without a descent from
        // the root. Left to right and latch-free, so nothing can wait on this X latch. Any
        // other case (an empty sibling, a sibling being restructured) takes the cursor.
        if n.right.is_valid() {
            let read = |b: &AtomicBytes<'_>| -> Result<Option<Vec<u8>>> {
                let s = Node::open(b)?;
                if s.tree != self.root
                    || !s.is_leaf()
                    || s.entry_count() == 0
                    || s.low_fence()?.as_deref() != Some(high.as_slice())
                {
                    return Ok(None);
                }
                s.key(0).map(Some)
            };
            let first = match may_read {
                true => Some(self.pool.read_optimistic(n.right, read)?),
                false => self.pool.try_read_resident(n.right, read)?,
            };
            match first {
                None => {
                    *warm_ups += 1;
                    return Ok(NextKey::Warm(Warm::Page(n.right)));
                }
                Some(Ok(Some(k))) => return Ok(NextKey::Found(Some(Cow::Owned(k)))),
                Some(_) => {}
            }
        }
        if !may_read && *warm_ups == 0 {
            // The cursor descends from the root and walks right (past an empty sibling):
            // pages that may be out of the pool. Run once with no latch held, it leaves
            // them in; the pass after that runs it under the latch (warming again could
            // not change the sibling that sent it here).
            *warm_ups += 1;
            return Ok(NextKey::Warm(Warm::NextKeyFrom(high)));
        }
        Ok(NextKey::Found(
            self.next_key(&std::ops::Bound::Included(high))?
                .map(Cow::Owned),
        ))
    }

    /// Brings in the pages a [`NextKey::Warm`] names, holding no latch (the caller dropped
    /// its leaf's). Its errors are ignored: it only prefetches, and the page may have been
    /// freed or reused since the latch was dropped; the operation, started over, reads what
    /// it needs properly and reports any error then.
    fn warm_up(&self, w: Warm) {
        debug_assert_eq!(
            crate::sync::held::latches_held(),
            0,
            "warm-up under a latch"
        );
        match w {
            Warm::Page(pid) => {
                let _ = self.pool.read_optimistic(pid, |_| ());
            }
            Warm::NextKeyFrom(high) => {
                let _ = self.next_key(&std::ops::Bound::Included(high));
            }
        }
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
