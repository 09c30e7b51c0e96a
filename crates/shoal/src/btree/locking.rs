//! Transactional locking of a tree's keys (DESIGN.md §3.7–3.9): key-value locks on the keys
//! read and written, and next-key locks (Mohan, "ARIES/KVL", VLDB 1990, in its next-key
//! form as in Gray and Reuter, "Transaction Processing", §7.8) so that a SERIALIZABLE range
//! read sees no phantom.
//!
//! A tree locks only if it was given a [`LockSpace`] ([`BTree::with_locking`]): the catalog's
//! table and index trees are, the benchmarks' and tests' bare trees are not. Names: a key's
//! lock is `LockName::key(db, table, key)`; the end of the tree ("+infinity", the next key
//! of a range with no key after it) is `LockName::row(db, table, u64::MAX)`, a name no key
//! can take; every key or end lock has an intention lock on `LockName::table(db, table)`.
//!
//! ## The protocol (MGL modes)
//! | operation | locks |
//! |---|---|
//! | read a key (`get_in`) | RU none; RC S short, released after the read; RR and SER S long — taken on the key whether or not it exists, so an insert of an absent key read at SER waits |
//! | range read (`scan_in`) | as a read for every key returned; at the range's end S on the next key after the range (or the end of the tree): long at SER, short below |
//! | insert of a new key | X long on the key; IX *instant* on the next key (waits while a SER reader holds S on it, i.e. while the gap is read) |
//! | update, upsert of a present key | X long on the key |
//! | delete | X long on the key and on its next key (a SER reader of the gap then waits for the deleter's end, so a rollback cannot make a row reappear in a range already read) |
//!
//! Latching (DESIGN.md principle 5): the key's own lock is requested before the descent,
//! with no latch held; the next-key lock is found under the leaf's X latch and requested
//! there with `Wait::No`. If it would block, the latch is dropped, the lock is waited for
//! with nothing held, and the operation starts over (the next key may have changed).
//! Readers request every lock between optimistic reads, never under a latch. Undo takes no
//! lock: a rollback only puts back what its own X locks protect.
//!
//! ## Reads without key locks (Commit_LSN)
//! A READ COMMITTED read of one key first reads the leaf optimistically; if the leaf's page
//! LSN is below the transaction manager's Commit_LSN (C. Mohan, "Commit_LSN: A Novel and
//! Simple Method for Reducing Locking and Latching in Transaction Processing Systems", VLDB
//! 1990; `TxnManager::commit_lsn`), every change on the leaf belongs to a transaction that
//! has ended, so what was read is committed and the key lock (S short, taken and dropped at
//! once) is skipped. Otherwise the read is redone under the lock. The table's IS lock is
//! taken either way. Only reads at READ COMMITTED use it (single keys and scans, see
//! "Scans"): at RR and SER the lock must outlive the read, and at RU no lock is taken.
//!
//! ## Scans
//! A locking cursor copies a leaf's entries optimistically, then locks each key before
//! returning it (no latch held while it waits). What it copied is returned only if it is
//! still true when the lock is held: the gap between the entry and the scan's previous
//! position lies in the entry's leaf (the entry is not the first of its batch, or the batch
//! came from a seek to that position) and the leaf still validates (so the copy is what the
//! leaf holds now, no writer of the key was active when the lock was granted, and nothing
//! has come back in the gap). Otherwise the cursor reads again from just after the key it returned last and
//! locks whatever comes first now. This is what makes a READ COMMITTED scan wait for a delete
//! in progress and see the row again if the delete rolls back: the scan waits at the deleted
//! key's next key (the delete's next-key lock), and after the wait the row is back in the
//! gap it re-reads. The same holds at the range's end: the scan locks the next key after the
//! range (where a delete of the range's last key holds its next-key lock) and reads once
//! more after the key it returned last. At READ COMMITTED an entry of an unchanged leaf whose
//! page LSN is below Commit_LSN needs no lock at all (as for a single key; the table's IS is
//! taken); the leaf is validated again after the bound is taken. A scan that fails (a lock
//! timeout, a deadlock) yields the error once and ends.
//!
//! The next key of an insert or delete at the end of a leaf is the first key of a leaf to
//! the right, read optimistically while the leaf's X latch is held (latches are taken left
//! to right, so this cannot deadlock). It is read only from the pool: if that leaf is out of
//! it, the write drops its latch, reads the leaf in with nothing held, and starts over
//! (DESIGN.md principle 6; `tree/write.rs`, `next_key_latched`). Past an empty sibling the
//! cursor's pages are read in so once, and the cursor then runs under the latch; a write
//! that has started over three times (the pages evicted again at once each time) reads
//! under the latch, so that it always ends.
//!
//! ## Backward scans
//! Every lock above guards the gap *below* its key: a delete locks its next key, an insert
//! asks for its next key. A forward scan locks each key after crossing the gap below it, so
//! that one lock does both jobs. A backward scan crosses the gap after it has locked (and,
//! below REPEATABLE READ, released) the key above: a delete that begins in the gap after
//! that goes unseen, and the scan would skip a row whose delete is still in progress (and
//! may roll back). So before a backward scan returns a key it read under a lock, it locks
//! the gap above that key again: S on the first key after it as the tree is now (the name
//! a delete in the gap holds X on), until that first key is the one locked; if that key lies
//! below the key returned last (or inside the range, before the first), something is in
//! the gap now and the scan reads again from the key returned last (at most four times
//! between two rows, so that endless inserts into the gap cannot starve it). Having crossed its last
//! gap, down to the range's lower bound, it does the same for the first key at or after
//! the bound before it ends. The locks are dropped at once below SERIALIZABLE; at
//! SERIALIZABLE they are long, and mostly name keys the scan holds already (above the
//! range, the key after it, as a forward scan's end-of-range lock), so no phantom enters
//! a gap the scan crossed. Rows returned through Commit_LSN need no such lock: their
//! leaf, gap included, held only committed data. Cost: two short lookups and a lock per row
//! of a backward scan that reads under locks (a leaf changed recently at READ COMMITTED,
//! or REPEATABLE READ and above); one lock and no lookup when the gap lies in the leaf
//! the scan copied and that leaf is unchanged (the key returned last is then the key above).

use super::cursor::{Cursor, ScanDirection};
use super::tree::BTree;
use crate::error::Result;
use crate::lock::{mgl, LockDuration, LockMode, LockName, LockStatus, Wait};
use crate::txn::{IsolationLevel, Transaction};
use std::ops::Bound;

/// Where a tree's locks live in the lock-name hierarchy: database ▸ table ▸ key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LockSpace {
    /// Database number.
    pub db: u32,
    /// Table (or index) number within the database.
    pub table: u32,
}

impl LockSpace {
    /// The lock name of `key`.
    pub fn key(&self, key: &[u8]) -> LockName {
        LockName::key(self.db, self.table, key)
    }

    /// The lock name of the end of the tree (the next key after the last key).
    pub fn end(&self) -> LockName {
        LockName::row(self.db, self.table, u64::MAX)
    }

    /// The lock name of `next` (a key, or `None` for the end).
    pub fn next_key(&self, next: Option<&[u8]>) -> LockName {
        next.map_or_else(|| self.end(), |k| self.key(k))
    }

    /// The table's lock name (the parent of every key).
    pub fn table(&self) -> LockName {
        LockName::table(self.db, self.table)
    }
}

/// Takes the table intention lock `intent` and then `mode` on `name` for `duration`,
/// waiting with nothing latched.
fn lock_waiting(
    txn: &mut Transaction<'_>,
    space: &LockSpace,
    intent: LockMode,
    name: &LockName,
    mode: LockMode,
    duration: LockDuration,
) -> Result<()> {
    // The key's bucket is rarely in cache: its miss overlaps the table lock (a repeat).
    txn.prefetch_lock(name);
    txn.lock(&space.table(), intent, LockDuration::Long, Wait::Yes)?;
    txn.lock(name, mode, duration, Wait::Yes)?;
    Ok(())
}

impl BTree {
    /// This tree, locking its keys in the name space `space` for the transactional
    /// operations (module doc).
    pub fn with_locking(mut self, space: LockSpace) -> BTree {
        self.locking = Some(space);
        self
    }

    /// The tree's lock name space, if it locks.
    pub fn lock_space(&self) -> Option<LockSpace> {
        self.locking
    }

    /// Checks `key` against the limits, then locks it for a change: IX on the table, X long
    /// on the key (no latch held) — the first step of every transactional write.
    pub(crate) fn lock_for_write(&self, txn: &mut Transaction<'_>, key: &[u8]) -> Result<()> {
        self.check_key(key)?;
        match &self.locking {
            Some(s) => lock_waiting(txn, s, mgl::IX, &s.key(key), mgl::X, LockDuration::Long),
            None => Ok(()),
        }
    }

    /// The value of `key` after X-locking it (long): a read for a change that follows.
    ///
    /// # Errors
    /// As [`BTree::get_in`].
    pub(crate) fn get_in_for_update(
        &self,
        txn: &mut Transaction<'_>,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        self.lock_for_write(txn, key)?;
        self.get(key)
    }

    /// The read-lock duration of `txn`'s isolation level; `None` at READ UNCOMMITTED.
    fn read_duration(txn: &Transaction<'_>) -> Option<LockDuration> {
        match txn.isolation() {
            IsolationLevel::ReadUncommitted => None,
            IsolationLevel::ReadCommitted => Some(LockDuration::Short),
            IsolationLevel::RepeatableRead | IsolationLevel::Serializable => {
                Some(LockDuration::Long)
            }
        }
    }

    /// Locks `name` for reading at `txn`'s level; returns whether a short lock was taken
    /// (to release after the read).
    fn lock_for_read(&self, txn: &mut Transaction<'_>, name: &LockName) -> Result<bool> {
        match Self::read_duration(txn) {
            Some(d) => self.lock_s(txn, name, d),
            None => Ok(false),
        }
    }

    /// S on `name` for `d` (with IS on the table), unless held; returns whether a short lock
    /// was taken. Nothing on a tree without locking.
    fn lock_s(&self, txn: &mut Transaction<'_>, name: &LockName, d: LockDuration) -> Result<bool> {
        let Some(s) = &self.locking else {
            return Ok(false);
        };
        if txn.holds(name, mgl::S, d) {
            return Ok(false);
        }
        lock_waiting(txn, s, mgl::IS, name, mgl::S, d)?;
        Ok(d == LockDuration::Short)
    }

    /// The value of `key` read in `txn`, with the read locks of its isolation level.
    ///
    /// # Errors
    /// As [`BTree::get`]; [`crate::Error::Deadlock`] and [`crate::Error::LockTimeout`] from
    /// the lock (retryable after a rollback).
    pub fn get_in(&self, txn: &mut Transaction<'_>, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut v = Vec::new();
        Ok(self.get_in_into(txn, key, &mut v)?.then_some(v))
    }

    /// [`BTree::get_in`] into a vector the caller keeps, as [`BTree::get_into`]: `Ok(true)`
    /// with `out` holding exactly the value, `Ok(false)` with `out` empty if there is none;
    /// no allocation when `out` has the capacity (as [`BTree::get_into`] says).
    ///
    /// # Errors
    /// As [`BTree::get_in`]; `out` is empty after an error.
    pub fn get_in_into(
        &self,
        txn: &mut Transaction<'_>,
        key: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<bool> {
        let found = self.check_key(key).and_then(|()| match &self.locking {
            Some(s) => self.read_locked(txn, s, key, out),
            None => self.get_with_lsn_into(key, out).map(|(found, _)| found),
        });
        super::tree::emptied_unless_found(found, out)
    }

    /// [`BTree::get_in`] of every key of `keys`, in the order given, with their cache misses
    /// overlapped ([`BTree::get_many`], btree rule 15). At READ COMMITTED the batch reads
    /// every key without a lock, as `get_in` does (Commit_LSN): a key whose leaf's page LSN
    /// is not below the bound taken before the batch, or that the transaction already holds
    /// a read lock on, is then read again on its own by `get_in`'s path. At the other levels
    /// each key is read by that path, in order (its lock must come before its read).
    ///
    /// # Errors
    /// As [`BTree::get_in`], for the first key that fails; [`crate::Error::InvalidArgument`]
    /// for a key over the limit before anything is read or locked.
    pub fn get_many_in(
        &self,
        txn: &mut Transaction<'_>,
        keys: &[&[u8]],
    ) -> Result<Vec<Option<Vec<u8>>>> {
        for key in keys {
            self.check_key(key)?;
        }
        let Some(s) = &self.locking else {
            return self.get_many(keys);
        };
        if txn.isolation() != IsolationLevel::ReadCommitted {
            return keys
                .iter()
                .map(|k| self.read_locked_vec(txn, s, k))
                .collect();
        }
        // As in `read_locked`: the table's IS keeps a DROP TABLE out, and the bound is
        // taken before the reads.
        txn.lock(&s.table(), mgl::IS, LockDuration::Long, Wait::Yes)?;
        let bound = txn.manager().commit_lsn_cached();
        let mut read = Vec::with_capacity(keys.len());
        self.get_many_with_lsn(keys, |_, v, lsn| read.push((v, lsn)))?;
        // A key whose leaf is not below the bound, or with a read lock of this
        // transaction's (what `read_locked`'s fast path checks first), is read again there.
        let has_row_locks = txn.row_lock_count() > 0;
        keys.iter()
            .zip(read)
            .map(|(key, (v, lsn))| {
                if lsn >= bound
                    || (has_row_locks && txn.holds(&s.key(key), mgl::S, LockDuration::Short))
                {
                    self.read_locked_vec(txn, s, key)
                } else {
                    Ok(v)
                }
            })
            .collect()
    }

    /// [`BTree::read_locked`] into a new vector.
    fn read_locked_vec(
        &self,
        txn: &mut Transaction<'_>,
        s: &LockSpace,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        let mut v = Vec::new();
        Ok(self.read_locked(txn, s, key, &mut v)?.then_some(v))
    }

    /// Reads `key` into `out` under the read lock of `txn`'s level (whether it has a
    /// value; `out`'s content is unspecified if not): locks (no latch held), reads, and
    /// drops a short lock at once (cursor stability: only this name, in O(1)).
    fn read_locked(
        &self,
        txn: &mut Transaction<'_>,
        s: &LockSpace,
        key: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<bool> {
        // The key's lock name (a hash of the key) is made only when needed: a transaction
        // that holds no row-level locks holds none on this key.
        if txn.isolation() == IsolationLevel::ReadCommitted
            && (txn.row_lock_count() == 0 || !txn.holds(&s.key(key), mgl::S, LockDuration::Short))
        {
            // Commit_LSN (Mohan, VLDB 1990): a leaf whose page LSN is below it holds only
            // committed data, so the key needs no lock (module doc, "Reads without key
            // locks"). The table's IS is still taken: it keeps a DROP TABLE out.
            txn.lock(&s.table(), mgl::IS, LockDuration::Long, Wait::Yes)?;
            // The bound is taken before the read: one taken after could count as ended a
            // writer whose uncommitted change the read saw and that rolled back since.
            let bound = txn.manager().commit_lsn_cached();
            let (found, lsn) = self.get_with_lsn_into(key, out)?;
            if lsn < bound {
                return Ok(found);
            }
            // Not below the cached bound: advance it (rate-limited); if the page is below
            // the new bound, read again — after the bound, as the rule asks.
            let bound = txn.manager().commit_lsn(lsn);
            if lsn < bound {
                let (found, lsn) = self.get_with_lsn_into(key, out)?;
                if lsn < bound {
                    return Ok(found);
                }
            }
        }
        let name = s.key(key);
        let short = self.lock_for_read(txn, &name)?;
        let found = self.get_with_lsn_into(key, out).map(|(found, _)| found);
        if short {
            txn.release_short_lock(&name);
        }
        found
    }

    /// The key/value pairs between `lower` and `upper` in `dir` order, read in `txn` with
    /// the read locks of its isolation level (module doc; at SERIALIZABLE no key can appear
    /// in the range until `txn` ends). Each pair is read after its key is locked.
    ///
    /// # Errors
    /// As [`BTree::get_in`].
    pub fn scan_in<'a, 't, 'm>(
        &'a self,
        txn: &'t mut Transaction<'m>,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        dir: ScanDirection,
    ) -> LockedCursor<'a, 't, 'm> {
        let end_bound = match upper {
            Bound::Included(k) => Bound::Excluded(k.to_vec()),
            Bound::Excluded(k) => Bound::Included(k.to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        let start = match dir {
            ScanDirection::Forward => lower,
            ScanDirection::Backward => upper,
        };
        LockedCursor {
            tree: self,
            inner: self.scan(lower, upper, dir),
            txn,
            after_upper: Some(end_bound),
            start: start.map(<[u8]>::to_vec),
            dir,
            lower: lower.map(<[u8]>::to_vec),
            last: None,
            failed: false,
            gap_retries: 0,
        }
    }

    /// The first key at or after (`Included`) or after (`Excluded`) `from`; `None` at the
    /// end of the tree. `Unbounded` means the end.
    pub(crate) fn next_key(&self, from: &Bound<Vec<u8>>) -> Result<Option<Vec<u8>>> {
        let lower = match from {
            Bound::Included(k) => Bound::Included(k.as_slice()),
            Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
            Bound::Unbounded => return Ok(None),
        };
        self.first_key(lower)
    }

    /// The next-key lock of an insert (IX instant) or a delete (X long), asked under the
    /// leaf's X latch: `Wait::No`. Returns the request that would block, for the caller to
    /// wait for after dropping the latch.
    pub(crate) fn next_key_lock(
        &self,
        txn: &mut Transaction<'_>,
        next: Option<&[u8]>,
        delete: bool,
    ) -> Result<Option<NextKeyWait>> {
        let Some(s) = &self.locking else {
            return Ok(None);
        };
        let (mode, duration) = if delete {
            (mgl::X, LockDuration::Long)
        } else {
            (mgl::IX, LockDuration::Instant)
        };
        let name = s.next_key(next);
        match txn.lock(&name, mode, duration, Wait::No)? {
            LockStatus::Granted => Ok(None),
            LockStatus::WouldBlock => Ok(Some(NextKeyWait {
                name,
                mode,
                duration,
            })),
        }
    }
}

/// Failed gap checks a backward scan retries between two rows before it goes on
/// ([`LockedCursor::gap_is_empty`]).
const MAX_GAP_RETRIES: u32 = 4;

/// A next-key lock to wait for with no latch held ([`BTree::next_key_lock`]).
pub(crate) struct NextKeyWait {
    name: LockName,
    mode: LockMode,
    duration: LockDuration,
}

impl NextKeyWait {
    /// Waits for the lock (the caller holds no latch), then the operation starts over.
    pub(crate) fn wait(self, txn: &mut Transaction<'_>) -> Result<()> {
        txn.lock(&self.name, self.mode, self.duration, Wait::Yes)
            .map(|_| ())
    }
}

/// A range read in a transaction ([`BTree::scan_in`]).
pub struct LockedCursor<'a, 't, 'm> {
    tree: &'a BTree,
    inner: Cursor<'a>,
    txn: &'t mut Transaction<'m>,
    /// Where the next key after the range starts (taken once the range is exhausted).
    after_upper: Option<Bound<Vec<u8>>>,
    /// Where the scan began in its direction (the lower bound going forward).
    start: Bound<Vec<u8>>,
    /// The scan's direction.
    dir: ScanDirection,
    /// The range's lower bound: where a backward scan's last gap ends.
    lower: Bound<Vec<u8>>,
    /// The key returned last.
    last: Option<Vec<u8>>,
    /// Set after an error: the cursor then ends, as [`Cursor`] does.
    failed: bool,
    /// Backward scans: gap checks that failed since the last row returned
    /// ([`LockedCursor::gap_is_empty`]).
    gap_retries: u32,
}

impl LockedCursor<'_, '_, '_> {
    /// Copies at most `n` entries per batch ([`Cursor::with_batch_limit`]): for a caller
    /// that takes the first `n` pairs. Changes no result and no lock, only how much of a
    /// leaf is copied at a time.
    pub fn with_batch_limit(mut self, n: usize) -> Self {
        self.inner = self.inner.with_batch_limit(n);
        self
    }

    /// At the end of the range: S on the key after the range, or on the end of the tree —
    /// long at SERIALIZABLE (no phantom can enter the range until the transaction ends),
    /// short otherwise. A delete in progress of the range's last key holds X on that name
    /// (its next-key lock), so the scan waits for it here. Returns the lock and whether it
    /// is short, and whether the range is confirmed unchanged up to that key (the cursor saw
    /// it end the range in a leaf that is still as copied: no re-read is needed); `None` if
    /// the scan reads without locks.
    fn lock_end_of_range(&mut self) -> Result<Option<(LockName, bool, bool)>> {
        let (Some(s), Some(_)) = (self.tree.locking, BTree::read_duration(self.txn)) else {
            return Ok(None);
        };
        let Some(from) = self.after_upper.clone() else {
            return Ok(None);
        };
        let d = self.range_lock_duration();
        // The key that ended the range in the last batch's leaf, if nothing between the last
        // entry returned and it can have changed: locked, and confirmed by the leaf's
        // version still being the one copied — no descent at all.
        if let Some(next) = self.inner.next_key_unchanged().map(<[u8]>::to_vec) {
            let name = s.next_key(Some(&next));
            let short = self.tree.lock_s(self.txn, &name, d)?;
            if self.inner.next_key_unchanged().is_some() {
                return Ok(Some((name, short, true)));
            }
            self.unlock_short(&name, short);
        }
        loop {
            let next = self.tree.next_key(&from)?;
            let name = s.next_key(next.as_deref());
            let short = self.tree.lock_s(self.txn, &name, d)?;
            // A key inserted after the range before the lock was granted would be the next
            // key now: lock until the next key is the one locked.
            if self.tree.next_key(&from)? == next {
                return Ok(Some((name, short, false)));
            }
            self.unlock_short(&name, short);
        }
    }
}

impl LockedCursor<'_, '_, '_> {
    /// Sends the cursor back to read again from [`LockedCursor::resume_bound`].
    fn resume(&mut self) {
        let from = self.resume_bound();
        self.inner.resume_at(from);
    }

    /// Where a re-read starts: just after the key returned last, or where the scan began.
    fn resume_bound(&self) -> Bound<Vec<u8>> {
        match &self.last {
            Some(k) => Bound::Excluded(k.clone()),
            None => self.start.clone(),
        }
    }

    /// Backward scans (module doc, "Backward scans"): whether the gap above `key` — up to
    /// the key returned last, or past the range's upper bound before the first — is empty
    /// and no delete in it is in progress. True at once going forward, where the lock on
    /// `key` itself covered the gap.
    fn gap_above_is_empty(&mut self, s: &LockSpace, key: &[u8]) -> Result<bool> {
        if self.dir == ScanDirection::Forward {
            return Ok(true);
        }
        // The common case, without a lookup: the gap up to the key returned last lies in
        // the leaf copied for `key` and that leaf is unchanged, so that key is the first
        // after `key` now. Its lock waits for a delete in the gap; the leaf still unchanged
        // after the grant shows that none rolled back meanwhile.
        if self.inner.unchanged_since_read().is_some() {
            if let Some(last) = &self.last {
                let name = s.key(last);
                let short = self
                    .tree
                    .lock_s(self.txn, &name, self.range_lock_duration())?;
                let still = self.inner.unchanged_since_read().is_some();
                self.unlock_short(&name, short);
                if still {
                    return Ok(true);
                }
            }
        }
        self.gap_is_empty(s, Bound::Excluded(key.to_vec()))
    }

    /// How long a range lock (the end-of-range lock, a backward scan's gap lock) is kept:
    /// to the end at SERIALIZABLE, where it keeps phantoms out; below, it only waits for a
    /// delete in progress and is dropped at once.
    fn range_lock_duration(&self) -> LockDuration {
        if self.txn.isolation() == IsolationLevel::Serializable {
            LockDuration::Long
        } else {
            LockDuration::Short
        }
    }

    /// S on the first key at or after `from` as the tree is now (or on the end of the
    /// tree), the name a delete of any key in the gap before it holds X on (its next-key
    /// lock), so that the request waits for such a delete to end; taken until the first key
    /// is the one locked, and kept to the end at SERIALIZABLE (no phantom enters the gap),
    /// dropped at once below. Returns whether that key lies at or above the key returned last (past
    /// the range's upper bound if none was): nothing is in the gap, committed or not.
    /// False if a key is there now (a delete rolled back, or an insert committed): the
    /// caller reads again from the key returned last.
    fn gap_is_empty(&mut self, s: &LockSpace, from: Bound<Vec<u8>>) -> Result<bool> {
        let d = self.range_lock_duration();
        let from = from.as_ref().map(Vec::as_slice);
        let first = |tree: &BTree| tree.first_key(from);
        loop {
            let next = first(self.tree)?;
            let name = s.next_key(next.as_deref());
            let short = self.tree.lock_s(self.txn, &name, d)?;
            let now = first(self.tree)?;
            self.unlock_short(&name, short);
            // `now != next`: the gap changed while the lock was requested.
            let empty = now == next
                && match (&next, &self.last, &self.after_upper) {
                    (None, _, _) => true, // nothing up to the end of the tree
                    (Some(n), Some(last), _) => n.as_slice() >= last.as_slice(),
                    (Some(n), None, Some(Bound::Excluded(u))) => n.as_slice() > u.as_slice(),
                    (Some(n), None, Some(Bound::Included(u))) => n.as_slice() >= u.as_slice(),
                    (Some(_), None, _) => false, // an unbounded range: any key is in it
                };
            if empty {
                return Ok(true);
            }
            // Each failure follows a granted lock: what came into the gap was committed
            // (an insert, or a delete rolled back). Bounded, so that writers inserting into
            // the gap without end (new highest keys above a descending scan) cannot starve
            // the scan: past the bound it goes on, as a forward scan does after its one
            // re-read at the end of the range.
            self.gap_retries += 1;
            if self.gap_retries > MAX_GAP_RETRIES {
                return Ok(true);
            }
            if now == next {
                return Ok(false);
            }
        }
    }

    fn returned(&mut self, key: Vec<u8>, value: Vec<u8>) -> (Vec<u8>, Vec<u8>) {
        self.gap_retries = 0;
        // Reuses the buffer of the key returned before: no allocation per row.
        match &mut self.last {
            Some(last) => {
                last.clear();
                last.extend_from_slice(&key);
            }
            None => self.last = Some(key.clone()),
        }
        (key, value)
    }

    /// Drops the short lock `name` if `short` (cursor stability).
    fn unlock_short(&mut self, name: &LockName, short: bool) {
        if short {
            self.txn.release_short_lock(name);
        }
    }

    /// The next pair, locked and read as the module doc's "Scans" says.
    fn next_locked(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        // The lock taken on a key before the cursor was sent back to read again.
        let mut held: Option<(LockName, Vec<u8>, bool)> = None;
        // The end-of-range lock taken before the cursor was sent back to read again.
        let mut end: Option<(LockName, bool)> = None;
        let r = self.next_locked_with(&mut held, &mut end);
        if r.is_err() {
            // A short lock taken for a read that failed is not kept to the statement's end.
            if let Some((name, _, short)) = held {
                self.unlock_short(&name, short);
            }
            if let Some((name, short)) = end {
                self.unlock_short(&name, short);
            }
        }
        r
    }

    fn next_locked_with(
        &mut self,
        held: &mut Option<(LockName, Vec<u8>, bool)>,
        end: &mut Option<(LockName, bool)>,
    ) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let mut end_checked = false;
        loop {
            let got = self.inner.next().transpose();
            if let Some((name, short)) = end.take() {
                self.unlock_short(&name, short);
            }
            let Some((key, value)) = got? else {
                if let Some((name, _, short)) = held.take() {
                    self.unlock_short(&name, short);
                }
                if self.dir == ScanDirection::Backward {
                    // The gap between the range's lower bound and the key returned last
                    // (module doc, "Backward scans").
                    let Some(s) = self.tree.locking else {
                        return Ok(None);
                    };
                    if BTree::read_duration(self.txn).is_none()
                        || self.gap_is_empty(&s, self.lower.clone())?
                    {
                        return Ok(None);
                    }
                    self.resume();
                    continue;
                }
                if end_checked {
                    return Ok(None);
                }
                // Rows whose deletes rolled back while this transaction waited for the end
                // lock are in the range again: read once more after the key returned last.
                let Some((name, short, confirmed)) = self.lock_end_of_range()? else {
                    return Ok(None);
                };
                if confirmed {
                    // Nothing can have entered the rest of the range: no re-read.
                    self.unlock_short(&name, short);
                    return Ok(None);
                }
                *end = Some((name, short));
                end_checked = true;
                self.resume();
                continue;
            };
            let s = match self.tree.locking {
                Some(s) if BTree::read_duration(self.txn).is_some() => s,
                // No read locks (a bare tree, or READ UNCOMMITTED): what was copied will do.
                _ => return Ok(Some(self.returned(key, value))),
            };
            if let Some((name, locked, short)) = held.take() {
                self.unlock_short(&name, short);
                if locked == key {
                    // Read after its lock was granted: committed, and the first key now.
                    if self.gap_above_is_empty(&s, &key)? {
                        return Ok(Some(self.returned(key, value)));
                    }
                    self.resume();
                    continue;
                }
                // Another key comes first now (e.g. a delete rolled back while this
                // transaction waited): lock that one.
            }
            if self.txn.isolation() == IsolationLevel::ReadCommitted {
                if let Some(lsn) = self.inner.unchanged_since_read() {
                    // Commit_LSN, as for a single key: the leaf holds only committed data.
                    // The leaf is validated again after the bound is taken, so that it was
                    // unchanged from the copy until then (module doc of `commit_lsn`).
                    self.txn
                        .lock(&s.table(), mgl::IS, LockDuration::Long, Wait::Yes)?;
                    if lsn < self.txn.manager().commit_lsn(lsn)
                        && self.inner.unchanged_since_read().is_some()
                    {
                        return Ok(Some(self.returned(key, value)));
                    }
                }
            }
            let name = s.key(&key);
            let short = self.tree.lock_for_read(self.txn, &name)?;
            if self.inner.unchanged_since_read().is_some() {
                // The leaf has not changed since the copy: no writer of the key was active
                // when the lock was granted, so the copy is committed, and nothing has come
                // back between the key and the one returned before it.
                self.unlock_short(&name, short);
                if self.gap_above_is_empty(&s, &key)? {
                    return Ok(Some(self.returned(key, value)));
                }
                self.resume();
                continue;
            }
            *held = Some((name, key, short));
            self.resume();
        }
    }
}

impl Iterator for LockedCursor<'_, '_, '_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    /// Yields an error (e.g. [`crate::Error::LockTimeout`]) once, and then ends.
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let r = self.next_locked();
        self.failed = r.is_err();
        r.transpose()
    }
}
