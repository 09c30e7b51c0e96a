//! # KvStore — the log issue's test access method
//!
//! Job: a small transactional store of `u64` keys and fixed-length values in slotted pages,
//! to exercise logging, rollback and restart before the B-tree exists (which plugs into the
//! same [`ResourceManager`] interface). Keys are hashed to a fixed set of bucket pages; a
//! bucket keeps its records sorted by key.
//!
//! ```text
//!  root page (slotted): slot 0 = [value_len u32][buckets u32], slot i = bucket page id (u64)
//!  bucket page (slotted): records [key u64 big-endian][live u8][value; value_len bytes]
//! ```
//!
//! ## Invariants
//! 1. Every record of a bucket has length `9 + value_len` and the keys of a bucket are
//!    strictly increasing; a key lives in bucket `hash(key) % buckets` only.
//! 2. A delete leaves a *ghost* (live = 0) with the old value, so undoing it never needs room:
//!    every undo is a same-length `PUT` or a `REMOVE`, and only an insert of a new key can
//!    fail with [`Error::PageFull`] — before anything changes. Ghosts are reused by a later
//!    insert of their key and never purged (a test store).
//! 3. Changes are page-oriented and logged through [`Transaction::change`]: the redo payload is
//!    `[RM_KVSTORE][op][key u64 LE][live u8][value]` with op `ADD` (new slot), `PUT` (same
//!    slot, same length) or `REMOVE`; the undo payload is the redo payload of the inverse.
//!
//! ## Latching
//! One bucket page at a time: shared to read, exclusive to change.
//!
//! ## Not done here
//! Locking: concurrent transactions must use disjoint keys (the lock manager comes later).

use crate::buffer::{BufferPool, ExclusiveGuard};
use crate::error::{Error, Result};
use crate::page::slotted::{self, Slotted, SlottedMut};
use crate::page::{AtomicBytesMut, PageRead, PageType};
use crate::space::SpaceManager;
use crate::txn::{ResourceManager, Transaction};
use crate::types::{Lsn, PageId};
use std::sync::Arc;

/// Resource manager id of the kvstore (first byte of its redo payloads; fixed forever).
pub const RM_KVSTORE: u8 = 1;

const OP_ADD: u8 = 1;
const OP_PUT: u8 = 2;
const OP_REMOVE: u8 = 3;
/// Key (8) + live flag (1).
const RECORD_PREFIX: usize = 9;
/// Most bucket pages a store may have (they are listed in the root page).
pub const MAX_BUCKETS: usize = 256;
/// Longest value in bytes.
pub const MAX_VALUE_BYTES: usize = 1024;

/// A handle to one store: its root page, value length and bucket pages.
#[derive(Clone, Debug)]
pub struct KvStore {
    pool: Arc<BufferPool>,
    root: PageId,
    value_len: usize,
    buckets: Vec<PageId>,
}

fn bad_arg(name: &'static str, why: impl Into<String>) -> Error {
    Error::invalid(name, why)
}

impl KvStore {
    /// Creates a store of `buckets` bucket pages holding values of `value_len` bytes, in a
    /// system transaction of `txn`'s manager (its pages are formatted and logged as images).
    /// Returns the handle; [`KvStore::root`] names it for [`KvStore::open`].
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `buckets` is 0 or above [`MAX_BUCKETS`], or `value_len`
    /// above [`MAX_VALUE_BYTES`]; allocation, buffer and log errors.
    pub fn create(
        txns: &crate::txn::TxnManager,
        space: &SpaceManager,
        buckets: usize,
        value_len: usize,
    ) -> Result<KvStore> {
        if buckets == 0 || buckets > MAX_BUCKETS {
            return Err(bad_arg(
                "buckets",
                format!("{buckets} is not in 1..={MAX_BUCKETS}"),
            ));
        }
        if value_len > MAX_VALUE_BYTES {
            return Err(bad_arg(
                "value_len",
                format!("{value_len} bytes is more than {MAX_VALUE_BYTES}"),
            ));
        }
        let pool = txns.pool().clone();
        let mut sys = txns.begin_system();
        let root = space.allocate()?;
        let mut bucket_ids = Vec::with_capacity(buckets);
        // Kept latched until the commit (transaction rule 8).
        let mut latched = Vec::with_capacity(buckets + 1);
        for _ in 0..buckets {
            let pid = space.allocate()?;
            let mut g = pool.fix_new(pid, PageType::Slotted)?;
            slotted::init(&mut g.page_mut(), pid, PageType::Slotted, 0);
            sys.log_new_page(&mut g)?;
            bucket_ids.push(pid);
            latched.push(g);
        }
        {
            let mut g = pool.fix_new(root, PageType::Slotted)?;
            let mut meta = Vec::with_capacity(8);
            meta.extend_from_slice(&(value_len as u32).to_le_bytes());
            meta.extend_from_slice(&(buckets as u32).to_le_bytes());
            {
                let mut page = g.page_mut();
                let mut s = slotted::init(&mut page, root, PageType::Slotted, 0);
                let full = |_| bad_arg("buckets", "root page too small for the bucket list");
                s.push(&meta)?.map_err(full)?;
                for b in &bucket_ids {
                    s.push(&b.0.to_le_bytes())?.map_err(full)?;
                }
            }
            sys.log_new_page(&mut g)?;
            latched.push(g);
        }
        sys.commit()?;
        drop(latched);
        Ok(KvStore {
            pool,
            root,
            value_len,
            buckets: bucket_ids,
        })
    }

    /// Opens the store whose root page is `root`.
    ///
    /// # Errors
    /// [`Error::Corruption`] if the root page is not a store root; buffer errors.
    pub fn open(pool: Arc<BufferPool>, root: PageId) -> Result<KvStore> {
        let g = pool.fix_shared(root)?;
        let v = Slotted::open(g.bytes())?;
        let bad = |why: &str| Error::corruption(root, format!("not a kvstore root: {why}"));
        let meta = v.get(0).map_err(|_| bad("no meta record"))?;
        if meta.len() != 8 {
            return Err(bad("meta record is not 8 bytes"));
        }
        let value_len = u32::from_le_bytes(meta[0..4].try_into().expect("4")) as usize;
        let n = u32::from_le_bytes(meta[4..8].try_into().expect("4")) as usize;
        if n == 0 || n > MAX_BUCKETS || v.slot_count() != n + 1 || value_len > MAX_VALUE_BYTES {
            return Err(bad("meta record out of range"));
        }
        let mut buckets = Vec::with_capacity(n);
        for i in 1..=n {
            let b = v.get(i)?;
            let b: [u8; 8] = b.try_into().map_err(|_| bad("bucket id is not 8 bytes"))?;
            buckets.push(PageId(u64::from_le_bytes(b)));
        }
        drop(g);
        Ok(KvStore {
            pool,
            root,
            value_len,
            buckets,
        })
    }

    /// The root page (the store's name for [`KvStore::open`]).
    pub fn root(&self) -> PageId {
        self.root
    }

    /// Value length in bytes.
    pub fn value_len(&self) -> usize {
        self.value_len
    }

    /// The bucket page of `key`.
    pub fn bucket_of(&self, key: u64) -> PageId {
        let h = key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        self.buckets[(h % self.buckets.len() as u64) as usize]
    }

    fn check_value(&self, value: &[u8]) -> Result<()> {
        if value.len() != self.value_len {
            return Err(bad_arg(
                "value",
                format!(
                    "{} bytes; this store holds {}-byte values",
                    value.len(),
                    self.value_len
                ),
            ));
        }
        Ok(())
    }

    /// The live value of `key`, if any.
    ///
    /// # Errors
    /// Buffer errors; [`Error::Corruption`] for a damaged bucket.
    pub fn get(&self, key: u64) -> Result<Option<Vec<u8>>> {
        let pid = self.bucket_of(key);
        let g = self.pool.fix_shared(pid)?;
        let v = Slotted::open(g.bytes())?;
        match find(&v, key)? {
            Ok(slot) => {
                let r = v.get(slot)?;
                Ok((r[8] == 1).then(|| r[RECORD_PREFIX..].to_vec()))
            }
            Err(_) => Ok(None),
        }
    }

    /// Inserts `key` with `value` in `txn`.
    ///
    /// # Errors
    /// [`Error::DuplicateKey`] if `key` is live; [`Error::PageFull`] if its bucket has no
    /// room; [`Error::InvalidArgument`] for a value of the wrong length; log and buffer errors.
    pub fn insert(&self, txn: &mut Transaction<'_>, key: u64, value: &[u8]) -> Result<()> {
        self.check_value(value)?;
        let (mut g, old) = self.fix_record(key)?;
        match old {
            Some(r) if r[8] == 1 => Err(Error::DuplicateKey {
                index: format!("kvstore {}", self.root),
                key: key.to_string(),
            }),
            Some(r) => txn
                .change(
                    &mut g,
                    payload(OP_PUT, key, 1, value),
                    payload(OP_PUT, key, 0, &r[RECORD_PREFIX..]),
                )
                .map(drop),
            None => txn
                .change(
                    &mut g,
                    payload(OP_ADD, key, 1, value),
                    payload(OP_REMOVE, key, 0, &[]),
                )
                .map(drop),
        }
    }

    /// Replaces the value of live `key`; returns false (changing nothing) if it is absent.
    ///
    /// # Errors
    /// As [`KvStore::insert`] (no `DuplicateKey`, no `PageFull`).
    pub fn update(&self, txn: &mut Transaction<'_>, key: u64, value: &[u8]) -> Result<bool> {
        self.check_value(value)?;
        self.change_live(txn, key, |old| {
            (payload(OP_PUT, key, 1, value), payload(OP_PUT, key, 1, old))
        })
    }

    /// Deletes live `key` (leaving a ghost); returns false if it is absent.
    ///
    /// # Errors
    /// Log and buffer errors.
    pub fn delete(&self, txn: &mut Transaction<'_>, key: u64) -> Result<bool> {
        self.change_live(txn, key, |old| {
            (payload(OP_PUT, key, 0, old), payload(OP_PUT, key, 1, old))
        })
    }

    /// X-latches the bucket of `key` and returns it with `key`'s record (ghost or live), if any.
    fn fix_record(&self, key: u64) -> Result<(ExclusiveGuard<'_>, Option<Vec<u8>>)> {
        let g = self.pool.fix_exclusive(self.bucket_of(key))?;
        let v = Slotted::open(g.bytes())?;
        let old = match find(&v, key)? {
            Ok(slot) => Some(v.get(slot)?),
            Err(_) => None,
        };
        Ok((g, old))
    }

    fn change_live(
        &self,
        txn: &mut Transaction<'_>,
        key: u64,
        make: impl FnOnce(&[u8]) -> (Vec<u8>, Vec<u8>),
    ) -> Result<bool> {
        let (mut g, old) = self.fix_record(key)?;
        match old {
            Some(r) if r[8] == 1 => {
                let (redo, undo) = make(&r[RECORD_PREFIX..]);
                txn.change(&mut g, redo, undo)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Every live record, sorted by key.
    ///
    /// # Errors
    /// Buffer errors; [`Error::Corruption`] for a damaged bucket.
    pub fn scan(&self) -> Result<Vec<(u64, Vec<u8>)>> {
        let mut out = Vec::new();
        for &pid in &self.buckets {
            let g = self.pool.fix_shared(pid)?;
            let v = Slotted::open(g.bytes())?;
            for slot in 0..v.slot_count() {
                let r = v.get(slot)?;
                if r[8] == 1 {
                    out.push((key_of(&r), r[RECORD_PREFIX..].to_vec()));
                }
            }
        }
        out.sort_unstable_by_key(|(k, _)| *k);
        Ok(out)
    }

    /// Checks invariant 1 on every bucket (slotted-page structure, record lengths, key order,
    /// key placement) and returns the number of live records.
    ///
    /// # Errors
    /// [`Error::Corruption`] naming the page and what is wrong; buffer errors.
    pub fn verify(&self) -> Result<usize> {
        let mut live = 0;
        for &pid in &self.buckets {
            let g = self.pool.fix_shared(pid)?;
            slotted::check(g.bytes(), pid)?;
            let v = Slotted::open(g.bytes())?;
            let mut prev: Option<u64> = None;
            for slot in 0..v.slot_count() {
                let r = v.get(slot)?;
                if r.len() != RECORD_PREFIX + self.value_len || r[8] > 1 {
                    return Err(Error::corruption(pid, format!("bad record in slot {slot}")));
                }
                let k = key_of(&r);
                if prev.is_some_and(|p| p >= k) {
                    return Err(Error::corruption(
                        pid,
                        format!("keys out of order at slot {slot}"),
                    ));
                }
                if self.bucket_of(k) != pid {
                    return Err(Error::corruption(
                        pid,
                        format!("key {k} in the wrong bucket"),
                    ));
                }
                prev = Some(k);
                live += usize::from(r[8]);
            }
        }
        Ok(live)
    }
}

fn key_of(record: &[u8]) -> u64 {
    u64::from_be_bytes(record[0..8].try_into().expect("8 bytes"))
}

fn payload(op: u8, key: u64, live: u8, value: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(11 + value.len());
    p.push(RM_KVSTORE);
    p.push(op);
    p.extend_from_slice(&key.to_le_bytes());
    p.push(live);
    p.extend_from_slice(value);
    p
}

/// Binary search of the sorted bucket for `key`: `Ok(slot)` if present, `Err(insert slot)`.
fn find<P: PageRead + ?Sized>(
    v: &Slotted<'_, P>,
    key: u64,
) -> Result<std::result::Result<usize, usize>> {
    let (mut lo, mut hi) = (0, v.slot_count());
    let mut head = [0u8; 8];
    while lo < hi {
        let mid = (lo + hi) / 2;
        let range = v.record_range(mid)?;
        if range.len() < RECORD_PREFIX {
            return Err(Error::corruption(
                v.page_id(),
                format!("short record in slot {mid}"),
            ));
        }
        v.page().read_into(range.start, &mut head);
        match u64::from_be_bytes(head).cmp(&key) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Ok(Ok(mid)),
        }
    }
    Ok(Err(lo))
}

/// The kvstore's [`ResourceManager`]: applies `ADD`, `PUT` and `REMOVE` payloads to bucket
/// pages (page-oriented redo and undo).
#[derive(Clone, Copy, Debug, Default)]
pub struct KvStoreRm;

impl ResourceManager for KvStoreRm {
    fn id(&self) -> u8 {
        RM_KVSTORE
    }

    fn name(&self) -> &'static str {
        "kvstore"
    }

    fn redo(
        &self,
        lsn: Lsn,
        page_id: PageId,
        p: &[u8],
        page: &mut AtomicBytesMut<'_>,
    ) -> Result<()> {
        if p.len() < 11 || p[0] != RM_KVSTORE || p[10] > 1 {
            return Err(Error::log_corruption(lsn, "bad kvstore payload"));
        }
        let (op, key, live, value) = (
            p[1],
            u64::from_le_bytes(p[2..10].try_into().expect("8")),
            p[10],
            &p[11..],
        );
        let mut record = Vec::with_capacity(RECORD_PREFIX + value.len());
        record.extend_from_slice(&key.to_be_bytes());
        record.push(live);
        record.extend_from_slice(value);
        let mut s = SlottedMut::open(page)?;
        let found = find(&s.view(), key)?;
        let mismatch = |what: &str| {
            Error::corruption(
                page_id,
                format!("kvstore {what} of key {key} (record at {lsn})"),
            )
        };
        match (op, found) {
            (OP_ADD, Err(slot)) => match s.insert(slot, &record)? {
                Ok(()) => Ok(()),
                Err(no) => Err(Error::PageFull {
                    page_id,
                    needed_bytes: no.needed_bytes,
                    free_bytes: no.free_bytes,
                }),
            },
            (OP_PUT, Ok(slot)) => {
                if s.view().record_len(slot)? != record.len() {
                    return Err(mismatch("length-changing put"));
                }
                match s.update(slot, &record)? {
                    Ok(()) => Ok(()),
                    Err(_) => Err(mismatch("put without room")),
                }
            }
            (OP_REMOVE, Ok(slot)) => s.delete(slot),
            (OP_ADD, Ok(_)) => Err(mismatch("add of a present key")),
            (OP_PUT | OP_REMOVE, Err(_)) => Err(mismatch("change of an absent key")),
            _ => Err(Error::log_corruption(
                lsn,
                format!("unknown kvstore op {op}"),
            )),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
