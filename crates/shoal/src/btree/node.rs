//! B-tree node format: a slotted page (`page::slotted`) whose special area holds the node's
//! level and links, whose slots 0 and 1 hold its fence keys, and whose slots 2.. hold its
//! entries in key order. The byte layout is in `docs/format.md` ("B-tree node").
//!
//! ```text
//!  special area (40 bytes)            slots (8 bytes: offset, length, hint)
//!  0  level u16   (0 = leaf)          0  low fence   [0] = -inf | [1][key]   (inclusive)
//!  2  flags u16   (0)                 1  high fence  [0] = +inf | [1][key]   (exclusive)
//!  4  prefix_len u16                  2.. entries, strictly increasing by key:
//!  6  hint_offset u16                     leaf:  [key_len u16][key][value tag u8][value]
//!  8  right sibling PageId (INVALID)      inner: [key_len u16][key][child PageId u64]
//! 16  child0 PageId (inner; leaf INVALID)
//! 24  tree id = the tree's root PageId
//! 32  prefix head: the prefix's first min(prefix_len, 8) bytes, zero-padded
//! ```
//!
//! Search keys (Graefe, "Modern B-Tree Techniques", 2011, §3.5 and §4.2; LeanStore's
//! "heads", Leis et al., ICDE 2018). Every key of a node lies in `[low fence, high fence)`,
//! so all of them begin with the fences' common prefix, whose length is `prefix_len` (0 if a
//! fence is infinite). Each entry's slot carries a hint: the four key bytes from the node's
//! hint offset on, big-endian and zero-padded ([`hint_of`]). The hint offset is the prefix
//! length, or further where all entries share more bytes (invariant H: every entry has
//! entry 0's bytes `[prefix_len, hint_offset)`; [`hint_offset_for`] says when) — so that the
//! root and the tree's edge nodes, whose prefix is empty, still get hints that differ. A
//! search first places the probe against the prefix (from the special area's prefix head;
//! only a prefix longer than 8 bytes reads the low fence) and, past it, against the shared
//! bytes (from entry 0), then searches the hints, which live in the dense slot array, by
//! interpolation ([`hint_lower_bound`]), and reads an entry's record only when its hint
//! equals the probe's. A lookup in a leaf of 8-byte keys thus touches three slots and one
//! record instead of a record per probe; the guessed slot's line and the record's (where the
//! records lie in key order) are prefetched together before either is read (btree rule 16,
//! `Node::prefetch_guess`). Hints are derived data: every change of a node's
//! fences, and every insert that changes the hint offset, recomputes all of them, and
//! `verify` checks them and invariant H.
//!
//! An inner node with entries `(k1, c1) … (kn, cn)` and leftmost child `c0` sends a key `x`
//! to `c0` if `x < k1`, else to the `ci` of the last `ki <= x`. Every node covers the keys of
//! `[low fence, high fence)`; its children's fences partition that range.
//!
//! Files: this one holds the format (constants, entry and fence records, [`Node::open`] and
//! the accessors); `search` the search and its prefetches; `image` [`NodeImage`], a whole
//! node built off the page; `edit` [`NodeMut`], the changes of an X-latched node; `summary`
//! the search summaries a leaf's frame keeps (btree rule 18); `tests` their tests.
//!
//! Reads are generic over [`PageRead`] so the same code runs on optimistic (unvalidated)
//! frames: every offset and length read from the page is bounds-checked and a bad one is
//! [`Error::Corruption`], never a panic — an optimistic reader validates its latch before it
//! believes such an error (sync rule O2).

use super::diff::common_prefix_len;
use crate::error::{Error, Result};
use crate::page::slotted::{self, Slotted, SlottedMut, HINTED_SLOT_SIZE, SPECIAL_OFFSET};
use crate::page::{PageRead, PageType, PageWrite};
use crate::types::PageId;
use std::cmp::Ordering;
use std::ops::Range;

mod edit;
mod image;
mod search;
pub(crate) mod summary;
#[cfg(test)]
mod tests;

pub(crate) use edit::NodeMut;
pub(crate) use image::NodeImage;
use search::*;

/// Bytes of the B-tree special area.
pub(crate) const SPECIAL_BYTES: usize = 40;
/// Bytes of a node's slot (offset, length, hint): nodes are hinted slotted pages.
pub(crate) const NODE_SLOT_SIZE: usize = HINTED_SLOT_SIZE;
/// Slot of the first entry (slots 0 and 1 are the fences).
pub(crate) const FIRST_ENTRY: usize = 2;
/// Levels above this are corruption (a tree of 8 KiB pages never gets near it).
pub(crate) const MAX_LEVEL: u16 = 24;
const SP_LEVEL: usize = 0;
const SP_FLAGS: usize = 2;
const SP_PREFIX_LEN: usize = 4;
const SP_HINT_OFFSET: usize = 6;
const SP_RIGHT: usize = 8;
const SP_CHILD0: usize = 16;
const SP_TREE: usize = 24;
const SP_PREFIX_HEAD: usize = 32;
/// Bytes of the prefix kept in the special area.
const PREFIX_HEAD_BYTES: usize = 8;
/// Bytes of a key that a hint holds.
const HINT_BYTES: usize = 4;
/// A node's hints start past its prefix only where all its entries share at least this many
/// bytes more than the prefix ([`hint_offset_for`]).
const MIN_HINT_SKIP: usize = 2;
/// Byte offset of entry 0's slot: the slot array follows the special area.
const ENTRY_SLOTS_AT: usize = SPECIAL_OFFSET + SPECIAL_BYTES + FIRST_ENTRY * NODE_SLOT_SIZE;
/// Byte offset of entry 0's hint, the second half of its 8-byte slot.
const HINTS_AT: usize = ENTRY_SLOTS_AT + 4;
const FENCE_INFINITE: u8 = 0;
const FENCE_KEY: u8 = 1;
/// Bytes of an entry before its key (the key length).
pub(crate) const KEY_LEN_BYTES: usize = 2;
/// Tag byte of an inline leaf value.
pub(crate) const VALUE_INLINE: u8 = 0;

/// Bytes of a page of `page_size` bytes available to fences, entries and their slots.
pub(crate) fn usable_bytes(page_size: usize) -> usize {
    page_size - SPECIAL_OFFSET - SPECIAL_BYTES
}

/// Longest key in bytes for a page size: an eighth of the usable page, at most 1,024 bytes
/// (so two fences and any two entries always fit one page, and a split always makes room).
pub fn max_key_bytes(page_size: usize) -> usize {
    (usable_bytes(page_size) / 8).min(1024)
}

/// Longest leaf entry (key, value and their framing, without the slot) in bytes: a quarter
/// of the usable page less a margin, so a node with its fences and two entries of any size
/// fits one page.
pub(crate) fn max_entry_bytes(page_size: usize) -> usize {
    usable_bytes(page_size) / 4 - 2 * NODE_SLOT_SIZE
}

/// The hint of `key` in a node whose keys share a prefix of `prefix_len` bytes: key bytes
/// `[prefix_len, prefix_len + 4)` as a big-endian `u32`, zero-padded. For two keys with that
/// prefix, a smaller hint means a smaller key; equal hints decide nothing.
#[inline]
pub(crate) fn hint_of(key: &[u8], prefix_len: usize) -> u32 {
    let at = prefix_len.min(key.len());
    let n = (key.len() - at).min(HINT_BYTES);
    // The n bytes at `at` as the high bytes of a big-endian u32 (HINT_BYTES is 4), read in
    // `key` itself so that a key of 8 bytes or more takes one load.
    (crate::page::bytes::slice_head_be(key, at, n) >> 32) as u32
}

/// Where the hints of a node with prefix `prefix_len` start (module doc, "Search keys",
/// invariant H), given `shared`, the length in bytes of the common prefix of its first and
/// last entries' keys — which for sorted keys is that of all of them — or `None` if it has
/// fewer than two entries: at `shared` when that is at least [`MIN_HINT_SKIP`] bytes longer
/// than the prefix (bytes that every entry shares would make every hint alike), else at the
/// prefix. The root and the nodes on a tree's left and right edges, whose prefix is empty
/// because a fence is infinite, are the ones that need it: the root of a tree of small
/// integers, or of keys that begin with one warehouse number.
fn hint_offset_for(prefix_len: usize, shared: Option<usize>) -> usize {
    match shared {
        Some(s) if s >= prefix_len + MIN_HINT_SKIP => s,
        _ => prefix_len,
    }
}

/// Length of the common prefix of two fences; 0 if either is infinite.
pub(crate) fn common_prefix(low: &Option<Vec<u8>>, high: &Option<Vec<u8>>) -> usize {
    match (low, high) {
        (Some(l), Some(h)) => common_prefix_len(l, h),
        _ => 0,
    }
}

/// The special area's prefix fields for a prefix `key[..prefix_len]`: the length and the
/// zero-padded head.
fn prefix_fields(key: &[u8], prefix_len: usize) -> ([u8; 2], [u8; PREFIX_HEAD_BYTES]) {
    let mut head = [0u8; PREFIX_HEAD_BYTES];
    let n = prefix_len.min(PREFIX_HEAD_BYTES);
    head[..n].copy_from_slice(&key[..n]);
    ((prefix_len as u16).to_le_bytes(), head)
}

/// The page type of a node of `level`.
pub(crate) fn page_type(level: u16) -> PageType {
    if level == 0 {
        PageType::BTreeLeaf
    } else {
        PageType::BTreeInner
    }
}

/// A leaf entry record: `[key_len u16][key][value]` (`value` includes its tag byte).
pub(crate) fn leaf_entry(key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut e = Vec::with_capacity(KEY_LEN_BYTES + key.len() + value.len());
    e.extend_from_slice(&(key.len() as u16).to_le_bytes());
    e.extend_from_slice(key);
    e.extend_from_slice(value);
    e
}

/// A leaf entry record holding `value` inline: `[key_len u16][key][VALUE_INLINE][value]`,
/// built in one allocation (tests; the engine builds entries inside their log payloads).
#[cfg(test)]
pub(crate) fn inline_leaf_entry(key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut e = Vec::with_capacity(KEY_LEN_BYTES + key.len() + 1 + value.len());
    e.extend_from_slice(&(key.len() as u16).to_le_bytes());
    e.extend_from_slice(key);
    e.push(VALUE_INLINE);
    e.extend_from_slice(value);
    e
}

/// An inner entry record: `[key_len u16][key][child u64]`.
pub(crate) fn inner_entry(key: &[u8], child: PageId) -> Vec<u8> {
    leaf_entry(key, &child.0.to_le_bytes())
}

/// The key of an entry record.
///
/// # Errors
/// [`Error::Corruption`] naming `page` if the key length runs past the record.
pub(crate) fn entry_key(page: PageId, rec: &[u8]) -> Result<&[u8]> {
    let n = rec
        .get(..KEY_LEN_BYTES)
        .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
        .ok_or_else(|| Error::corruption(page, "B-tree entry shorter than its key length"))?;
    rec.get(KEY_LEN_BYTES..KEY_LEN_BYTES + n)
        .ok_or_else(|| Error::corruption(page, format!("B-tree entry key of {n} bytes overruns")))
}

fn fence_record(fence: &Option<Vec<u8>>) -> Vec<u8> {
    match fence {
        None => vec![FENCE_INFINITE],
        Some(k) => {
            let mut r = Vec::with_capacity(1 + k.len());
            r.push(FENCE_KEY);
            r.extend_from_slice(k);
            r
        }
    }
}

fn parse_fence(page: PageId, rec: &[u8]) -> Result<Option<Vec<u8>>> {
    match rec.split_first() {
        Some((&FENCE_INFINITE, [])) => Ok(None),
        Some((&FENCE_KEY, k)) => Ok(Some(k.to_vec())),
        _ => Err(Error::corruption(page, "bad B-tree fence record")),
    }
}

/// A leaf value as [`Node::stored_value`] reads it.
pub(crate) enum StoredValue {
    /// The value itself (it was stored inline).
    Inline(Vec<u8>),
    /// The tagged bytes of any other value (an overflow reference, or an unknown tag that
    /// `value_of` reports as corruption).
    Tagged(Vec<u8>),
}

/// A read view of a node. The fields are a snapshot taken by [`Node::open`].
pub(crate) struct Node<'a, P: PageRead + ?Sized> {
    s: Slotted<'a, P>,
    /// 0 for a leaf.
    pub(crate) level: u16,
    /// Right sibling at the same level, [`PageId::INVALID`] for the last node of a level.
    pub(crate) right: PageId,
    /// Leftmost child (inner nodes).
    pub(crate) child0: PageId,
    /// The tree's root page id.
    pub(crate) tree: PageId,
    /// Bytes every key of the node begins with (the fences' common prefix).
    prefix_len: usize,
    /// The prefix's first `min(prefix_len, 8)` bytes, zero-padded.
    prefix_head: [u8; PREFIX_HEAD_BYTES],
    /// Where the entries' hints start in their keys, `>= prefix_len`: the entries share
    /// their bytes `[prefix_len, hint_offset)` (invariant H).
    hint_offset: usize,
}

impl<'a, P: PageRead + ?Sized> Node<'a, P> {
    /// Opens a view, checking in O(1) the slotted header, the page type against the level,
    /// the special area and the two fence slots.
    ///
    /// # Errors
    /// [`Error::Corruption`] if any of these is wrong.
    #[inline(always)]
    pub(crate) fn open(page: &'a P) -> Result<Self> {
        Self::on(Slotted::open(page)?)
    }

    /// [`Node::open`] on a slotted view already opened (its header checked): the node's own
    /// checks only.
    ///
    /// # Errors
    /// As [`Node::open`].
    #[inline(always)]
    fn on(s: Slotted<'a, P>) -> Result<Self> {
        let page = s.page();
        let pid = s.page_id();
        if s.special_len() != SPECIAL_BYTES
            || s.slot_count() < FIRST_ENTRY
            || s.slot_size() != NODE_SLOT_SIZE
        {
            return Err(Error::corruption(
                pid,
                "not a B-tree node (special area, slot format or fences)",
            ));
        }
        // The special area is whole aligned words (checked above: it starts at
        // SPECIAL_OFFSET and is SPECIAL_BYTES long): five 8-byte loads.
        let mut sp = [0u8; SPECIAL_BYTES];
        for (i, w) in sp.chunks_exact_mut(8).enumerate() {
            w.copy_from_slice(&page.u64_at(SPECIAL_OFFSET + 8 * i).to_le_bytes());
        }
        let u64_at = |o: usize| u64::from_le_bytes(sp[o..o + 8].try_into().expect("8 bytes"));
        let level = u16::from_le_bytes([sp[SP_LEVEL], sp[SP_LEVEL + 1]]);
        let ty = crate::page::header::page_type(page);
        if level > MAX_LEVEL || ty != Some(page_type(level)) {
            return Err(Error::corruption(
                pid,
                format!("B-tree node of level {level} has page type {ty:?}"),
            ));
        }
        let prefix_len = u16::from_le_bytes([sp[SP_PREFIX_LEN], sp[SP_PREFIX_LEN + 1]]) as usize;
        let hint_offset = u16::from_le_bytes([sp[SP_HINT_OFFSET], sp[SP_HINT_OFFSET + 1]]) as usize;
        if hint_offset < prefix_len {
            return Err(Error::corruption(
                pid,
                format!("hints start at byte {hint_offset}, inside the {prefix_len}-byte prefix"),
            ));
        }
        Ok(Node {
            s,
            level,
            right: PageId(u64_at(SP_RIGHT)),
            child0: PageId(u64_at(SP_CHILD0)),
            tree: PageId(u64_at(SP_TREE)),
            prefix_len,
            prefix_head: sp[SP_PREFIX_HEAD..SP_PREFIX_HEAD + PREFIX_HEAD_BYTES]
                .try_into()
                .expect("8 bytes"),
            hint_offset,
        })
    }

    pub(crate) fn page_id(&self) -> PageId {
        self.s.page_id()
    }

    pub(crate) fn is_leaf(&self) -> bool {
        self.level == 0
    }

    /// Number of entries (fences not counted).
    pub(crate) fn entry_count(&self) -> usize {
        self.s.slot_count() - FIRST_ENTRY
    }

    /// Prefetches what inserting an `entry_len`-byte entry at index `i` will write
    /// ([`Slotted::prefetch_insert`]).
    #[inline]
    pub(crate) fn prefetch_insert(&self, i: usize, entry_len: usize) {
        self.s.prefetch_insert(FIRST_ENTRY + i, entry_len);
    }

    /// Free bytes for new records and their slots, after compaction.
    pub(crate) fn free_bytes(&self) -> usize {
        self.s.free_space_total()
    }

    fn corrupt(&self, why: impl Into<String>) -> Error {
        Error::corruption(self.page_id(), why)
    }

    /// Byte ranges of entry `i`'s whole record and of its key within the page, from one
    /// read of the slot (so they agree even on a page changing under an optimistic reader).
    #[inline(always)]
    fn ranges(&self, i: usize) -> Result<(Range<usize>, Range<usize>)> {
        let r = self.s.record_range(FIRST_ENTRY + i)?;
        // The record's last line (a value, a child) is fetched beside its first (the key),
        // so that a record across two cache lines costs one miss's wait, not two.
        self.s.page().prefetch(r.end.saturating_sub(1));
        if r.len() < KEY_LEN_BYTES {
            return Err(self.corrupt(format!("entry {i} shorter than its key length")));
        }
        let n = self.s.page().u16_at(r.start) as usize;
        if KEY_LEN_BYTES + n > r.len() {
            return Err(self.corrupt(format!("entry {i}: key of {n} bytes overruns the entry")));
        }
        let k = r.start + KEY_LEN_BYTES..r.start + KEY_LEN_BYTES + n;
        Ok((r, k))
    }

    /// Byte range of entry `i`'s key within the page.
    fn key_range(&self, i: usize) -> Result<Range<usize>> {
        Ok(self.ranges(i)?.1)
    }

    /// Entry `i`'s key.
    pub(crate) fn key(&self, i: usize) -> Result<Vec<u8>> {
        let r = self.key_range(i)?;
        Ok(self.s.page().to_vec(r.start, r.len()))
    }

    /// Entry `i`'s whole record.
    pub(crate) fn entry(&self, i: usize) -> Result<Vec<u8>> {
        self.s.get(FIRST_ENTRY + i)
    }

    /// Length in bytes of entry `i`'s record.
    pub(crate) fn entry_len(&self, i: usize) -> Result<usize> {
        self.s.record_len(FIRST_ENTRY + i)
    }

    /// Bytes of all entry records together (slots and fences not counted), from the slotted
    /// header's accounting ([`Slotted::used_space`]): the sum of every [`Node::entry_len`]
    /// on a page that passes the slotted check, in O(1). On a corrupt header the number is
    /// wrong but bounded (a split's choice of the middle is all that uses it).
    ///
    /// # Errors
    /// [`Error::Corruption`] if a fence's slot is bad.
    pub(crate) fn entry_bytes(&self) -> Result<usize> {
        let fences = self.s.record_len(0)? + self.s.record_len(1)?;
        Ok(self
            .s
            .used_space()
            .saturating_sub(NODE_SLOT_SIZE * self.s.slot_count() + fences))
    }

    /// The first split point at or after `keep` (clamped to `1..count`) at which a split of
    /// this leaf leaves a right half that fits a page, or `None` if none does (impossible
    /// on a sound leaf: at the last split point the right half is one entry under two
    /// fences, which always fit, see [`max_key_bytes`]).
    ///
    /// A leaf's right half takes the entries from the split point on under a new low fence
    /// on the first of their keys, one tag byte more than the key. What leaves the page for
    /// it — the old low fence and the entries before the split point with their slots — can
    /// be shorter than that fence when those entries are short and the key is long: a split
    /// next to the insertion point (btree rule 4) would then build a right half over the
    /// page. The left half always fits: its new high fence is the key of an entry that
    /// leaves. Entry lengths are read only while the slots alone do not make the room.
    ///
    /// # Errors
    /// [`Error::Corruption`] if a slot or record is malformed.
    pub(crate) fn first_fitting_split(&self, keep: usize) -> Result<Option<usize>> {
        let count = self.entry_count();
        let base = self.free_bytes() + self.s.record_len(0)?;
        let (mut summed, mut acc) = (0, 0); // acc: bytes of entries 0..summed
        for k in keep.max(1)..count {
            let need = 1 + self.key_range(k)?.len(); // the tag byte and the key
            let mut room = base + k * NODE_SLOT_SIZE + acc;
            while room < need && summed < k {
                let len = self.entry_len(summed)?;
                acc += len;
                room += len;
                summed += 1;
            }
            if room >= need {
                return Ok(Some(k));
            }
        }
        Ok(None)
    }

    /// The bytes of leaf entry `i` after its key (the tagged value).
    pub(crate) fn value(&self, i: usize) -> Result<Vec<u8>> {
        let (r, k) = self.ranges(i)?;
        Ok(self.s.page().to_vec(k.end, r.end - k.end))
    }

    /// True if entry `i`'s key is `key` (no copy of the key).
    ///
    /// # Errors
    /// As [`Node::search`].
    pub(crate) fn key_is(&self, i: usize, key: &[u8]) -> Result<bool> {
        let probe = Probe::new(key, self.hint_offset);
        Ok(self.cmp_probe(i, &probe)? == Ordering::Equal)
    }

    /// Leaf entry `i`'s value tag byte ([`VALUE_INLINE`] or an overflow reference's).
    ///
    /// # Errors
    /// [`Error::Corruption`] if the entry has no byte after its key.
    pub(crate) fn value_tag(&self, i: usize) -> Result<u8> {
        let (r, k) = self.ranges(i)?;
        if k.end >= r.end {
            return Err(Error::corruption(
                self.page_id(),
                format!("leaf entry {i} has no value tag"),
            ));
        }
        Ok(self.s.page().u8_at(k.end))
    }

    /// Leaf entry `i`'s value: an inline value copied without its tag (one copy, no
    /// shift), anything else as the tagged bytes for [`super::BTree::value_of`].
    #[inline(always)]
    pub(crate) fn stored_value(&self, i: usize) -> Result<StoredValue> {
        let mut v = Vec::new();
        Ok(match self.value_into(i, &mut v)? {
            true => StoredValue::Inline(v),
            false => StoredValue::Tagged(v),
        })
    }

    /// Leaf entry `i`'s stored value written into `out` (cleared first; no allocation
    /// when `out` has the capacity, [`PageRead::extend_vec`]): `true` if the bytes are the
    /// value itself (stored inline, copied without its tag), `false` if they are the tagged
    /// bytes of any other value, for [`super::BTree::value_of`].
    #[inline(always)]
    pub(crate) fn value_into(&self, i: usize, out: &mut Vec<u8>) -> Result<bool> {
        let (r, k) = self.ranges(i)?;
        out.clear();
        let inline = k.end < r.end && self.s.page().u8_at(k.end) == VALUE_INLINE;
        let from = k.end + usize::from(inline);
        self.s.page().extend_vec(from, r.end - from, out);
        Ok(inline)
    }

    /// Inner entry `i`'s child.
    pub(crate) fn child(&self, i: usize) -> Result<PageId> {
        let (r, k) = self.ranges(i)?;
        if r.end - k.end != 8 {
            return Err(self.corrupt(format!("inner entry {i} has no 8-byte child")));
        }
        self.check_child(PageId(self.s.page().u64_at(k.end)))
    }

    fn check_child(&self, c: PageId) -> Result<PageId> {
        if c.is_valid() && c.0 != 0 {
            Ok(c)
        } else {
            Err(self.corrupt(format!("inner node has child {c}")))
        }
    }

    /// The child whose range holds `key`.
    pub(crate) fn child_for(&self, key: &[u8]) -> Result<PageId> {
        match self.search(key)? {
            Ok(i) => self.child(i),
            Err(0) => self.check_child(self.child0),
            Err(i) => self.child(i - 1),
        }
    }

    /// The child whose range holds the keys just below `key` (for backward scans).
    pub(crate) fn child_before(&self, key: &[u8]) -> Result<PageId> {
        match self.search(key)? {
            Ok(0) | Err(0) => self.check_child(self.child0),
            Ok(i) | Err(i) => self.child(i - 1),
        }
    }

    /// Child `i` in order: `child0` for 0, entry `i - 1`'s child otherwise.
    pub(crate) fn nth_child(&self, i: usize) -> Result<PageId> {
        if i == 0 {
            self.check_child(self.child0)
        } else {
            self.child(i - 1)
        }
    }

    fn fence(&self, slot: usize) -> Result<Option<Vec<u8>>> {
        let page = self.s.page();
        Ok(self
            .fence_key_range(slot)?
            .map(|r| page.to_vec(r.start, r.len())))
    }

    /// Where the key of fence `slot` (0 low, 1 high) lies on the page: `None` for an
    /// infinite fence. Read in place, so that a caller that compares a fence or needs only
    /// its key copies nothing else (an insert at a leaf's end reads its high fence).
    ///
    /// # Errors
    /// [`Error::Corruption`] for a fence slot or record that is malformed.
    fn fence_key_range(&self, slot: usize) -> Result<Option<Range<usize>>> {
        let r = self.s.record_range(slot)?;
        if r.is_empty() {
            return Err(self.corrupt("empty B-tree fence record"));
        }
        match (r.len(), self.s.page().u8_at(r.start)) {
            (1, FENCE_INFINITE) => Ok(None),
            (_, FENCE_KEY) => Ok(Some(r.start + 1..r.end)),
            _ => Err(self.corrupt("bad B-tree fence record")),
        }
    }

    /// The low fence (`None` = minus infinity), inclusive.
    pub(crate) fn low_fence(&self) -> Result<Option<Vec<u8>>> {
        self.fence(0)
    }

    /// The high fence (`None` = plus infinity), exclusive.
    pub(crate) fn high_fence(&self) -> Result<Option<Vec<u8>>> {
        self.fence(1)
    }

    /// True if `key` lies in `[low fence, high fence)`. The fences are compared in place,
    /// not copied.
    ///
    /// # Errors
    /// [`Error::Corruption`] for a fence slot or record that is malformed.
    pub(crate) fn covers(&self, key: &[u8]) -> Result<bool> {
        // Fence `slot` against `key`: None for an infinite fence, else the fence's order.
        let fence_cmp = |slot: usize| -> Result<Option<Ordering>> {
            Ok(self
                .fence_key_range(slot)?
                .map(|r| self.cmp_from(&r, key, 0, usize::MAX)))
        };
        let low_ok = fence_cmp(0)? != Some(Ordering::Greater);
        Ok(low_ok && matches!(fence_cmp(1)?, None | Some(Ordering::Greater)))
    }

    /// A full owned copy of the node.
    pub(crate) fn image(&self) -> Result<NodeImage> {
        Ok(NodeImage {
            level: self.level,
            right: self.right,
            child0: self.child0,
            tree: self.tree,
            low: self.low_fence()?,
            high: self.high_fence()?,
            entries: (0..self.entry_count())
                .map(|i| self.entry(i))
                .collect::<Result<_>>()?,
        })
    }
}

impl<'a> Node<'a, [u8]> {
    /// Entry `i`'s key, borrowed from the page: for a node over a latched frame's bytes,
    /// which do not change while the borrow lives (an X or S latch held).
    ///
    /// # Errors
    /// [`Error::Corruption`] if entry `i` cannot be read (as [`Node::key`]).
    pub(crate) fn key_in_place(&self, i: usize) -> Result<&'a [u8]> {
        let r = self.key_range(i)?;
        Ok(&self.s.page()[r])
    }
}
