//! Read-modify-write of one key with one descent: [`BTree::read_for_update`] X-locks the
//! key and reads its value optimistically, keeping the leaf's latch version;
//! [`BTree::write_read`] writes the new value by upgrading that version to the X latch, so
//! the common update (TPC-B's balances, TPC-C's districts, stock and customers) descends
//! the tree once instead of twice.
//!
//! Invariants and latching. Between the two calls no latch is held: the caller's code (a
//! row decode, its change, a re-encode) runs unlatched, as anything that may take locks or
//! latches must (DESIGN.md principles 4 and 5). The kept version is just a number:
//! `upgrade` succeeds only if the leaf frame still holds the same page unchanged since the
//! read (any change, eviction or structure change bumps the version, sync rule O2), so the
//! key is still on that leaf at the same place and its old value is the one read. The key's
//! X lock, taken before the read, keeps every other transaction from changing it meanwhile.
//! If the upgrade fails, or the value is not stored inline (old or new), the write takes the
//! ordinary path ([`BTree::update`]: a descent to the X-latched leaf).

use super::node::{Node, StoredValue, KEY_LEN_BYTES};
use super::tree::{LeafRead, Logger};
use super::wal::{self, Tagged};
use super::BTree;
use crate::buffer::OptimisticPage;
use crate::error::Result;
use crate::txn::Transaction;

/// A value read by [`BTree::read_for_update`], with what [`BTree::write_read`] needs to
/// write its replacement without descending again.
pub struct ReadForUpdate<'t> {
    value: Vec<u8>,
    /// Where it was read: the leaf at the version read, the tree's root and the entry's
    /// number on the leaf (a write of another key or tree finds no match there and takes
    /// the ordinary path); `None` for a value stored out of line (written by the ordinary
    /// path).
    at: Option<(OptimisticPage<'t>, crate::types::PageId, usize)>,
}

impl<'t> ReadForUpdate<'t> {
    /// A value read from entry `i` of `leaf` (at the version kept) of the tree `root`.
    pub(super) fn at(
        value: Vec<u8>,
        leaf: OptimisticPage<'t>,
        root: crate::types::PageId,
        i: usize,
    ) -> Self {
        ReadForUpdate {
            value,
            at: Some((leaf, root, i)),
        }
    }

    /// The value read (bytes).
    pub fn value(&self) -> &[u8] {
        &self.value
    }
}

impl BTree {
    /// X-locks `key` in `txn` (long, with IX on the table, as [`BTree::update`] does) and
    /// reads its value; `None` if the key is absent (the lock is kept: the absence is what
    /// a following insert relies on).
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] for a key over [`BTree::max_key_bytes`]; lock
    /// errors ([`crate::Error::Deadlock`], [`crate::Error::LockTimeout`]);
    /// [`crate::Error::Corruption`]; buffer-pool errors.
    pub fn read_for_update(
        &self,
        txn: &mut Transaction<'_>,
        key: &[u8],
    ) -> Result<Option<ReadForUpdate<'_>>> {
        self.lock_for_write(txn, key)?;
        self.read_locked_for_update(key)
    }

    /// The read of [`BTree::read_for_update`], `key` already X-locked and checked.
    pub(super) fn read_locked_for_update(&self, key: &[u8]) -> Result<Option<ReadForUpdate<'_>>> {
        loop {
            let LeafRead { entry, leaf, .. } = self.read_leaf_entry(key)?;
            return match entry {
                None => Ok(None),
                Some((i, StoredValue::Inline(value))) => {
                    Ok(Some(ReadForUpdate::at(value, leaf, self.root(), i)))
                }
                Some((_, StoredValue::Tagged(tagged))) => match self.value_of(tagged)? {
                    Some(value) => Ok(Some(ReadForUpdate { value, at: None })),
                    None => continue, // its chain was replaced meanwhile: read again
                },
            };
        }
    }

    /// Replaces the value `read` (from [`BTree::read_for_update`] of `key` in this tree, in
    /// `txn`) with `value`: in place on the leaf it was read from if that leaf is unchanged
    /// and both values are stored inline, else through [`BTree::update`] — which is also
    /// what a `read` of another key or tree gets (it locks `key` itself).
    ///
    /// # Errors
    /// As [`BTree::update`].
    pub fn write_read(
        &self,
        txn: &mut Transaction<'_>,
        key: &[u8],
        read: ReadForUpdate<'_>,
        value: &[u8],
    ) -> Result<()> {
        if let Some((leaf, root, i)) = read.at {
            if root == self.root()
                && value.len() <= self.max_inline_value_bytes(key.len())
                && self.replace_on(txn, leaf, i, key, &read.value, value)?
            {
                return Ok(());
            }
        }
        self.update(txn, key, value).map(|_| ())
    }

    /// Replaces the inline value `old` of entry `i` of `leaf` (as read at the version kept)
    /// by `value`, if the leaf is still at that version, entry `i` is `key`'s and the new
    /// entry fits; false (nothing changed) otherwise. The leaf unchanged, entry `i` holds
    /// `old` as read, so the change is logged from the two values: neither entry is built
    /// or copied.
    fn replace_on(
        &self,
        txn: &mut Transaction<'_>,
        leaf: OptimisticPage<'_>,
        i: usize,
        key: &[u8],
        old: &[u8],
        value: &[u8],
    ) -> Result<bool> {
        let Ok(mut x) = leaf.upgrade() else {
            return Ok(false);
        };
        let framing = KEY_LEN_BYTES + key.len() + 1;
        {
            let n = Node::open(x.bytes())?;
            // The leaf is as read, so entry `i` is the key read; another key means the read
            // was of another key (the caller's mistake), for the ordinary path.
            if i >= n.entry_count() || !n.key_is(i, key)? {
                return Ok(false);
            }
            let old_len = n.entry_len(i)?;
            if old_len != framing + old.len() {
                return Ok(false); // not the value read: let the ordinary path decide
            }
            if framing + value.len() > n.free_bytes() + old_len {
                return Ok(false); // the leaf must split: the ordinary path does that
            }
        }
        let root = self.root();
        let change = wal::EntryChange::of(key, Tagged::inline(old), Tagged::inline(value));
        txn.log(&mut x, change.redo(), i, || change.undo(root))?;
        Ok(true)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::tests::{assert_sound, key, open, open_without_lanes, value};
    use super::*;
    use crate::io::{FaultConfig, FaultStorage};

    fn loaded(disk: &FaultStorage) -> (crate::engine::Engine, BTree) {
        let e = open(disk, 64);
        let t = BTree::create(e.txns(), e.space()).unwrap();
        let mut tx = e.begin();
        for i in 0..400 {
            t.insert(&mut tx, &key(i), &value(i, 20)).unwrap();
        }
        t.insert(&mut tx, &key(1000), &value(1000, 20_000)).unwrap();
        tx.commit().unwrap();
        (e, t)
    }

    #[test]
    fn an_unchanged_leaf_is_written_in_place_and_rollback_restores_it() {
        let disk = FaultStorage::new(FaultConfig::new(5)).unwrap();
        let (e, t) = loaded(&disk);
        let mut tx = e.begin();
        let r = t.read_for_update(&mut tx, &key(7)).unwrap().unwrap();
        assert_eq!(r.value(), &value(7, 20)[..]);
        let (leaf, _, i) = r.at.expect("an inline value keeps its leaf");
        assert!(t
            .replace_on(&mut tx, leaf, i, &key(7), &value(7, 20), b"seven")
            .unwrap());
        assert_eq!(t.get(&key(7)).unwrap().as_deref(), Some(&b"seven"[..]));
        tx.abort().unwrap();
        assert_eq!(t.get(&key(7)).unwrap(), Some(value(7, 20)));
        assert!(t
            .read_for_update(&mut e.begin(), &key(5000))
            .unwrap()
            .is_none());
        assert_sound(&t);
        e.close().unwrap();
    }

    #[test]
    fn a_changed_leaf_a_full_leaf_and_an_overflow_value_take_the_ordinary_path() {
        let disk = FaultStorage::new(FaultConfig::new(6)).unwrap();
        let (e, t) = loaded(&disk);
        // Another transaction changes the leaf between the read and the write.
        let mut tx = e.begin();
        let r = t.read_for_update(&mut tx, &key(8)).unwrap().unwrap();
        let mut other = e.begin();
        t.update(&mut other, &key(9), b"nine").unwrap();
        other.commit().unwrap();
        let ReadForUpdate { value: v, at } = r;
        assert_eq!(v, value(8, 20));
        let (leaf, _, i) = at.unwrap();
        assert!(!t.replace_on(&mut tx, leaf, i, &key(8), &v, b"x").unwrap());
        // Through write_read it lands all the same.
        let r = t.read_for_update(&mut tx, &key(8)).unwrap().unwrap();
        let mut other = e.begin();
        t.update(&mut other, &key(10), b"ten").unwrap();
        other.commit().unwrap();
        t.write_read(&mut tx, &key(8), r, b"eight").unwrap();
        // A value that no longer fits on the leaf: the ordinary path splits it.
        let big = value(11, 1500);
        let r = t.read_for_update(&mut tx, &key(11)).unwrap().unwrap();
        t.write_read(&mut tx, &key(11), r, &big).unwrap();
        // An overflow value, replaced by an inline one, and an inline one by an overflow one.
        let r = t.read_for_update(&mut tx, &key(1000)).unwrap().unwrap();
        assert!(r.at.is_none() && r.value() == &value(1000, 20_000)[..]);
        t.write_read(&mut tx, &key(1000), r, b"small").unwrap();
        let r = t.read_for_update(&mut tx, &key(12)).unwrap().unwrap();
        t.write_read(&mut tx, &key(12), r, &value(12, 9_000))
            .unwrap();
        // A read of one key used to write another: the ordinary path (which locks it).
        let r = t.read_for_update(&mut tx, &key(14)).unwrap().unwrap();
        t.write_read(&mut tx, &key(15), r, b"fifteen").unwrap();
        tx.commit().unwrap();
        for (k, want) in [
            (8, b"eight".to_vec()),
            (9, b"nine".to_vec()),
            (10, b"ten".to_vec()),
            (11, big),
            (1000, b"small".to_vec()),
            (12, value(12, 9_000)),
            (13, value(13, 20)),
            (14, value(14, 20)),
            (15, b"fifteen".to_vec()),
        ] {
            assert_eq!(t.get(&key(k)).unwrap(), Some(want), "key {k}");
        }
        assert_sound(&t);
        e.close().unwrap();
    }

    /// `value` with byte `at` changed: an update a PATCH logs.
    fn poked(value: &[u8], at: usize) -> Vec<u8> {
        let mut v = value.to_vec();
        v[at] ^= 0x5a;
        v
    }

    #[test]
    fn same_length_updates_log_patches_that_rollback_and_restart_undo_and_redo() {
        let disk = FaultStorage::new(FaultConfig::new(8)).unwrap();
        let root;
        let long = |i: u64| value(i, 300);
        {
            let e = open_without_lanes(&disk, 64);
            let t = BTree::create(e.txns(), e.space()).unwrap();
            root = t.root();
            let mut tx = e.begin();
            for i in 0..200 {
                t.insert(&mut tx, &key(i), &long(i)).unwrap();
            }
            tx.commit().unwrap();
            e.pool().flush_all().unwrap();
            // One changed byte of a 300-byte value: a PATCH of one byte, redo and undo
            // together far below the 600 bytes of a REPLACE's two entries.
            let mut tx = e.begin();
            let before = e.log().end_lsn();
            let r = t.read_for_update(&mut tx, &key(7)).unwrap().unwrap();
            t.write_read(&mut tx, &key(7), r, &poked(&long(7), 40))
                .unwrap();
            let logged = e.log().end_lsn().0 - before.0;
            assert!(logged < 150, "a one-byte update logged {logged} bytes");
            // The ordinary path patches too; a length change replaces.
            let before = e.log().end_lsn();
            t.update(&mut tx, &key(8), &poked(&long(8), 299)).unwrap();
            let logged = e.log().end_lsn().0 - before.0;
            assert!(logged < 150, "a one-byte update logged {logged} bytes");
            t.update(&mut tx, &key(9), &long(1009)[..299]).unwrap();
            tx.commit().unwrap();
            // Rolled back: three overlapping patches of one key (undone newest first) and
            // one of another.
            let mut tx = e.begin();
            let mut v = long(10);
            for range in [20..40, 30..35, 10..60] {
                for b in &mut v[range] {
                    *b = b.wrapping_add(1);
                }
                t.update(&mut tx, &key(10), &v).unwrap();
            }
            assert_eq!(t.get(&key(10)).unwrap(), Some(v));
            t.update(&mut tx, &key(11), &poked(&long(11), 5)).unwrap();
            tx.abort().unwrap();
            assert_eq!(t.get(&key(10)).unwrap(), Some(long(10)));
            assert_eq!(t.get(&key(11)).unwrap(), Some(long(11)));
            // A loser, its records durable and its pages not written: restart redoes the
            // committed and the loser's patches onto the old pages, then undoes the loser's.
            let mut tx = e.begin();
            t.update(&mut tx, &key(12), &poked(&long(12), 77)).unwrap();
            let r = t.read_for_update(&mut tx, &key(12)).unwrap().unwrap();
            let twice = poked(r.value(), 78);
            t.write_read(&mut tx, &key(12), r, &twice).unwrap();
            t.update(&mut tx, &key(13), &poked(&long(13), 1)).unwrap();
            e.log().wait_all_durable().unwrap();
            disk.crash_now();
            std::mem::forget(tx);
        }
        disk.restart();
        let e = open(&disk, 64);
        assert_eq!(e.restart_report().losers, 1);
        let t = BTree::open(e.pool().clone(), e.space().clone(), root).unwrap();
        assert_eq!(t.get(&key(7)).unwrap(), Some(poked(&long(7), 40)));
        assert_eq!(t.get(&key(8)).unwrap(), Some(poked(&long(8), 299)));
        assert_eq!(t.get(&key(9)).unwrap(), Some(long(1009)[..299].to_vec()));
        for i in [10, 11, 12, 13, 14] {
            assert_eq!(t.get(&key(i)).unwrap(), Some(long(i)), "key {i}");
        }
        assert_sound(&t);
        e.close().unwrap();
    }
}
