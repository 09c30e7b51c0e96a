//! Overflow values (btree rule 11): a value too large to sit in a leaf is written to a chain
//! of overflow pages, and the leaf entry holds a reference to it.
//!
//! ```text
//!  leaf entry value: [tag 1][total_len u64][first page u64][value id u64]
//!  overflow page:    [common header 32][next u64][value id u64][seq u32][len u32][data …]
//! ```
//!
//! A chain is written once, by the transaction that inserts or updates the value, before the
//! leaf entry that refers to it; each page is logged as a new-page image (redo-only), so the
//! log carries the value once. It is never changed afterwards, only freed: when the
//! transaction that removed or replaced its entry has committed durably (a rollback would put
//! the reference back), or when a rollback removes the entry of a value it had written.
//! A reader reads the chain after its leaf validated, with no latch held across pages; a
//! chain freed and reused meanwhile shows as a different value id or sequence number, and the
//! reader starts over from the leaf.

use super::node::KEY_LEN_BYTES;
use super::tree::BTree;
use crate::error::{Error, Result};
use crate::page::{header, PageRead, PageType, PageWrite, HEADER_SIZE};
use crate::txn::Transaction;
use crate::types::PageId;

/// Tag byte of a value stored in overflow pages.
pub(crate) const VALUE_OVERFLOW: u8 = 1;
/// Bytes of an overflow reference, tag included.
pub(crate) const REF_BYTES: usize = 25;
/// Largest value in bytes (64 MiB): the whole value is held in memory by a get.
pub const MAX_VALUE_BYTES: usize = 64 << 20;
const OFF_NEXT: usize = HEADER_SIZE;
const OFF_VALUE_ID: usize = HEADER_SIZE + 8;
const OFF_SEQ: usize = HEADER_SIZE + 16;
const OFF_LEN: usize = HEADER_SIZE + 20;
const OFF_DATA: usize = HEADER_SIZE + 24;

/// A leaf's reference to an overflow chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OverflowRef {
    pub(crate) total: u64,
    pub(crate) first: PageId,
    pub(crate) value_id: u64,
}

impl OverflowRef {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(REF_BYTES);
        v.push(VALUE_OVERFLOW);
        for x in [self.total, self.first.0, self.value_id] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v
    }

    /// Parses a tagged value; `None` if it is not an overflow reference.
    pub(crate) fn parse(page: PageId, tagged: &[u8]) -> Result<Option<OverflowRef>> {
        match tagged.split_first() {
            Some((&VALUE_OVERFLOW, r)) if r.len() == REF_BYTES - 1 => {
                let at = |i: usize| u64::from_le_bytes(r[i..i + 8].try_into().expect("8"));
                Ok(Some(OverflowRef {
                    total: at(0),
                    first: PageId(at(8)),
                    value_id: at(16),
                }))
            }
            Some((&VALUE_OVERFLOW, _)) => Err(Error::corruption(page, "bad overflow reference")),
            _ => Ok(None),
        }
    }
}

/// The overflow reference in a whole leaf entry record, if its value is one.
pub(crate) fn entry_ref(page: PageId, entry: &[u8]) -> Result<Option<OverflowRef>> {
    let k = super::node::entry_key(page, entry)?.len();
    OverflowRef::parse(page, &entry[KEY_LEN_BYTES + k..])
}

fn data_bytes(page_size: usize) -> usize {
    page_size - OFF_DATA
}

impl BTree {
    /// Writes `value` to a new overflow chain in `txn` and returns its reference.
    ///
    /// # Errors
    /// Allocation, buffer-pool and log errors (pages allocated so far are then leaked, never
    /// reachable).
    pub(crate) fn write_overflow(
        &self,
        txn: &mut Transaction<'_>,
        value: &[u8],
    ) -> Result<OverflowRef> {
        let cap = data_bytes(self.pool.page_size());
        let n = value.len().div_ceil(cap).max(1);
        let pages = (0..n)
            .map(|_| self.space.allocate())
            .collect::<Result<Vec<_>>>()?;
        let value_id = txn.manager().log().end_lsn().0 ^ (txn.id().0 << 40);
        for (seq, (chunk, &pid)) in value.chunks(cap).zip(&pages).enumerate() {
            let mut g = self.pool.fix_new(pid, PageType::Overflow)?;
            {
                let mut p = g.page_mut();
                let next = pages.get(seq + 1).copied().unwrap_or(PageId::INVALID);
                p.put_u64(OFF_NEXT, next.0);
                p.put_u64(OFF_VALUE_ID, value_id);
                p.put_u32(OFF_SEQ, seq as u32);
                p.put_u32(OFF_LEN, chunk.len() as u32);
                p.write_from(OFF_DATA, chunk);
            }
            txn.log_new_page(&mut g)?;
        }
        Ok(OverflowRef {
            total: value.len() as u64,
            first: pages[0],
            value_id,
        })
    }

    /// Reads a chain; `Ok(None)` if it no longer holds the referenced value (freed and reused
    /// since the reference was read: the caller starts over).
    ///
    /// # Errors
    /// [`Error::Corruption`] for a chain that is the referenced one but inconsistent; buffer
    /// pool errors.
    pub(crate) fn read_overflow(&self, r: &OverflowRef) -> Result<Option<Vec<u8>>> {
        let mut out =
            Vec::with_capacity(r.total.min(super::overflow::MAX_VALUE_BYTES as u64) as usize);
        let mut pid = r.first;
        let mut seq = 0u32;
        while pid.is_valid() {
            let g = self.pool.fix_shared(pid)?;
            let b = g.bytes();
            if header::page_type(b) != Some(PageType::Overflow)
                || b.u64_at(OFF_VALUE_ID) != r.value_id
                || b.u32_at(OFF_SEQ) != seq
            {
                return Ok(None);
            }
            let len = b.u32_at(OFF_LEN) as usize;
            if len > data_bytes(b.len()) || out.len() + len > r.total as usize {
                return Err(self.corrupt(pid, "overflow page longer than its value"));
            }
            out.extend_from_slice(&b[OFF_DATA..OFF_DATA + len]);
            pid = PageId(b.u64_at(OFF_NEXT));
            seq += 1;
        }
        if out.len() as u64 != r.total {
            return Err(self.corrupt(r.first, "overflow chain shorter than its value"));
        }
        Ok(Some(out))
    }

    /// The pages of a chain, checked (for freeing and for `verify`).
    ///
    /// # Errors
    /// [`Error::Corruption`] if the chain is not the referenced one or is inconsistent.
    pub(crate) fn overflow_pages(&self, r: &OverflowRef) -> Result<Vec<PageId>> {
        let mut pages = Vec::new();
        let mut pid = r.first;
        let mut total = 0u64;
        while pid.is_valid() {
            let g = self.pool.fix_shared(pid)?;
            let b = g.bytes();
            if header::page_type(b) != Some(PageType::Overflow)
                || b.u64_at(OFF_VALUE_ID) != r.value_id
                || b.u32_at(OFF_SEQ) as usize != pages.len()
                || pages.len() as u64 > r.total
            {
                return Err(self.corrupt(pid, format!("not page {} of the chain", pages.len())));
            }
            total += u64::from(b.u32_at(OFF_LEN));
            pages.push(pid);
            pid = PageId(b.u64_at(OFF_NEXT));
        }
        if total != r.total {
            return Err(self.corrupt(r.first, "overflow chain length differs from its value"));
        }
        Ok(pages)
    }
}
