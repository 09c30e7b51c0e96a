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

pub(crate) mod summary;

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
    let rest = key.get(prefix_len..).unwrap_or(&[]);
    let n = rest.len().min(HINT_BYTES);
    // The first n bytes as the high bytes of a big-endian u32 (HINT_BYTES is 4).
    (crate::page::bytes::slice_head_be(rest, 0, n) >> 32) as u32
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

/// A search key with its head (first 8 bytes, big-endian, zero-padded) and its hint in the
/// node computed once.
struct Probe<'k> {
    key: &'k [u8],
    head: u64,
    hint: u32,
}

impl<'k> Probe<'k> {
    fn new(key: &'k [u8], prefix_len: usize) -> Self {
        Probe {
            key,
            head: key.head_be(0, key.len().min(8)),
            hint: hint_of(key, prefix_len),
        }
    }
}

/// The first index of `[start, end)` for which `below` is false, where `below` is true on a
/// prefix of the range and false after it; `end` if it is true throughout. Branch-free: each
/// step halves the range with a conditional move, `log2(end - start) + 1` calls of `below`.
#[inline(always)]
fn lower_bound(start: usize, end: usize, below: impl Fn(usize) -> bool) -> usize {
    if start >= end {
        return start;
    }
    let (mut base, mut size) = (start, end - start);
    while size > 1 {
        let half = size / 2;
        let mid = base + half;
        base = if below(mid) { mid } else { base };
        size -= half;
    }
    base + usize::from(below(base))
}

/// Slots on either side of an interpolated guess that [`hint_lower_bound`] searches before it
/// gives up on the guess: one 64-byte line of 8-byte slots.
const INTERPOLATION_WINDOW: usize = 8;
/// Records of a run of equal hints that [`Node::search`] prefetches at most before it
/// bisects the run (`Node::prefetch_run`).
const RUN_PREFETCH_MAX: usize = 32;
/// Nodes with fewer entries than this are searched by plain bisection.
const INTERPOLATION_MIN_ENTRIES: usize = 16;

/// The first index of `[0, count)` whose hint (`hint_at`, non-decreasing in the index) is not
/// below `hint`; `count` if there is none. Interpolation search (Graefe, "Modern B-Tree
/// Techniques", 2011, §4.3; Van Sandt et al., "Efficiently Searching In-Memory Sorted Arrays:
/// Revenge of the Interpolation Search?", SIGMOD 2019): the first hint and `last` place a
/// guess on the line between them, then one window of [`INTERPOLATION_WINDOW`] slots beside
/// the guess is bisected if it brackets the answer, else the rest of that side. Keys that are
/// dense within a node (consecutive integers, a sequence number after a fixed prefix) are
/// found with two slot reads — the first and the guess — where bisection of a 300-entry leaf
/// reads nine slots on five or six cache lines; skewed keys cost at most four reads more
/// than bisection.
///
/// `last` is the caller's copy of the last hint, `hint_at(count - 1)`: the page keeps one in
/// its header line (slotted rule 9), so the guess need not wait for the slot array's last
/// line. Only the guess and the choice of side depend on it; every answer is confirmed by
/// slot reads, so a wrong `last` costs reads, never a wrong index.
///
/// `hint_at` may return anything (an optimistic reader's page may change under it): every
/// index passed to it is below `count` whatever it returns, and the caller validates.
#[inline(always)]
fn hint_lower_bound(count: usize, hint: u32, last: u32, hint_at: impl Fn(usize) -> u32) -> usize {
    let below = |i: usize| hint_at(i) < hint;
    if count < INTERPOLATION_MIN_ENTRIES {
        return lower_bound(0, count, below);
    }
    let first = hint_at(0);
    if hint <= first {
        return 0;
    }
    // From here the answer lies in [1, count].
    if hint > last {
        // Past the last entry, as an append is: the last slot confirms it (an appender has
        // just written that line), else `last` was stale and the answer is in [1, count - 1].
        return if below(count - 1) {
            count
        } else {
            lower_bound(1, count - 1, below)
        };
    }
    // Here first < hint <= last, so last > first.
    hint_search_from(count, interpolate(count, hint, first, last), below)
}

/// The end of [`hint_lower_bound`] once it has its guess: the first index of `[1, count)`
/// whose hint is not below the probe's (`below` false), `count` if none, searched outward
/// from `guess` in `[1, count - 1]` (the answer is known not to be 0: the probe's hint is
/// above entry 0's). Every index passed to `below` is in `[1, count)`.
#[inline(always)]
fn hint_search_from(count: usize, guess: usize, below: impl Fn(usize) -> bool) -> usize {
    if below(guess) {
        // The answer is in (guess, count].
        let end = (guess + INTERPOLATION_WINDOW).min(count - 1);
        if below(end) {
            lower_bound(end + 1, count, below)
        } else {
            lower_bound(guess + 1, end, below)
        }
    } else {
        // The answer is in [1, guess].
        let start = guess.saturating_sub(INTERPOLATION_WINDOW).max(1);
        if below(start) {
            lower_bound(start + 1, guess, below)
        } else {
            lower_bound(1, start, below)
        }
    }
}

/// Prefetches the slot lines [`hint_search_from`] reads from guess `g` of a node of
/// `count` entries: the guess's and those of the window's two ends, `INTERPOLATION_WINDOW`
/// slots (one line of hinted slots) either side, of which the search reads one after the
/// guess says which: without them, that second line was a miss of its own after the
/// guess's. Advisory.
#[inline(always)]
fn prefetch_window<P: PageRead + ?Sized>(page: &P, count: usize, g: usize) {
    let lo = g.saturating_sub(INTERPOLATION_WINDOW);
    let hi = (g + INTERPOLATION_WINDOW).min(count.saturating_sub(1));
    for i in [lo, g, hi] {
        page.prefetch(HINTS_AT + NODE_SLOT_SIZE * i);
    }
}

/// The prefetches of an interpolated search for `hint` in a node of `count` entries whose
/// first and last hints are `ends`: the guess's slot window ([`prefetch_window`]) and the
/// lines where the guessed entry's record (and the `before` records before it) lie if the
/// records are in slot order, from the heap `layout` (`Slotted::record_layout`, asked only
/// when there is a guess). Returns the guess, as [`Node::search`]'s `prefetch_guess` does;
/// `None`, prefetching nothing, where there is none. Shared by that search, which reads
/// its numbers from the page header, and by the search summary's prefetch
/// ([`summary::prefetch`]), which has them before the header arrives. Advisory: any
/// numbers prefetch lines of `page` only.
#[inline(always)]
fn prefetch_interpolated<P: PageRead + ?Sized>(
    page: &P,
    count: usize,
    hint: u32,
    (first, last): (u32, u32),
    layout: impl FnOnce() -> Option<(usize, usize)>,
    before: usize,
) -> Option<usize> {
    if count < INTERPOLATION_MIN_ENTRIES || hint <= first || hint > last {
        return None;
    }
    let g = interpolate(count, hint, first, last);
    prefetch_window(page, count, g);
    if let Some((free_end, avg)) = layout() {
        if let Some(r) = slotted::record_guess(page.page_len(), free_end, avg, count, g, before) {
            slotted::prefetch_lines(page, r);
        }
    }
    Some(g)
}

/// The guess of [`hint_lower_bound`]: where `hint` falls on the line from entry 0's hint
/// `first` to entry `count - 1`'s hint `last`, as an entry number in `[1, count - 1]`.
/// Requires `first < hint <= last` and `count >= 2`.
#[inline(always)]
fn interpolate(count: usize, hint: u32, first: u32, last: u32) -> usize {
    let span = u64::from(last - first);
    let guess = (u64::from(hint - first) * (count as u64 - 1) / span) as usize;
    // `min`/`max`, not `clamp`: the compiler left `clamp` an out-of-line call here.
    guess.max(1).min(count - 1)
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

    /// [`hint_of`] entry `i`'s key for hint offset `offset`, read in place.
    fn hint_at(&self, i: usize, offset: usize) -> Result<u32> {
        let r = self.key_range(i)?;
        let n = r.len().saturating_sub(offset).min(HINT_BYTES);
        if n == 0 {
            return Ok(0);
        }
        Ok((self.s.page().head_be(r.start + offset, n) >> 32) as u32)
    }

    /// Compares entry `i`'s key with a probe: first the 8-byte heads (one or two loads, no
    /// copy), then, only if both keys are longer than 8 bytes and their heads are equal, the
    /// rest, 8 bytes at a time in the same way (composite keys of 4-byte integers differ in
    /// their second or third word).
    #[inline]
    fn cmp_probe(&self, i: usize, p: &Probe<'_>) -> Result<Ordering> {
        let (_, r) = self.ranges(i)?;
        let page = self.s.page();
        let head = page.head_be(r.start, r.len().min(8));
        if head != p.head {
            return Ok(head.cmp(&p.head));
        }
        if r.len() <= 8 || p.key.len() <= 8 {
            return Ok(r.len().cmp(&p.key.len()));
        }
        Ok(self.cmp_from(&r, p.key, 8, usize::MAX))
    }

    /// Length of the common prefix of the key at page bytes `r` and `key`, at most `end`,
    /// counting bytes `[0, from)` as equal (the caller knows they are; `from` is at most
    /// both lengths): compared in place, 8 bytes at a time as big-endian words.
    fn common_from(&self, r: &Range<usize>, key: &[u8], from: usize, end: usize) -> usize {
        let page = self.s.page();
        let n = r.len().min(key.len()).min(end);
        let mut at = from;
        while at < n {
            let m = (n - at).min(8);
            // Both heads are zero past `m` bytes, so the first set bit of their difference
            // lies in the first differing byte.
            let diff = page.head_be(r.start + at, m) ^ key[at..].head_be(0, m);
            if diff != 0 {
                return at + (diff.leading_zeros() / 8) as usize;
            }
            at += m;
        }
        at
    }

    /// Compares the key at page bytes `r` with `key`, both cut at `end` bytes, as `[u8]`
    /// does; bytes `[0, from)` count as equal ([`Node::common_from`]).
    fn cmp_from(&self, r: &Range<usize>, key: &[u8], from: usize, end: usize) -> Ordering {
        let (a, b) = (r.len().min(end), key.len().min(end));
        let c = self.common_from(r, key, from, end);
        if c < a && c < b {
            self.s.page().u8_at(r.start + c).cmp(&key[c])
        } else {
            a.cmp(&b)
        }
    }

    /// Compares `key` with the node's prefix: `Less` (or `Greater`) if `key` sorts before
    /// (after) every key that begins with the prefix, `Equal` if it begins with it. Reads the
    /// low fence only for a prefix longer than 8 bytes whose head `key` matches.
    fn cmp_prefix(&self, key: &[u8]) -> Result<Ordering> {
        let p = self.prefix_len;
        if p == 0 {
            return Ok(Ordering::Equal);
        }
        let n = p.min(PREFIX_HEAD_BYTES);
        // The key's first min(len, n) bytes against as many of the prefix head's, as two
        // big-endian numbers (zero-padded, so equal bytes give equal numbers).
        let kn = key.len().min(n);
        let head = key.head_be(0, kn);
        let mask = u64::MAX.checked_shl(8 * (8 - kn as u32)).unwrap_or(0);
        match head.cmp(&(u64::from_be_bytes(self.prefix_head) & mask)) {
            Ordering::Equal if kn < n => return Ok(Ordering::Less), // a proper prefix
            Ordering::Equal => {}
            unequal => return Ok(unequal),
        }
        if p <= PREFIX_HEAD_BYTES {
            return Ok(Ordering::Equal);
        }
        let low = self.s.record_range(0)?;
        if low.len() < 1 + p {
            return Err(self.corrupt(format!("prefix of {p} bytes is longer than the low fence")));
        }
        // The prefix is the low fence's first `p` key bytes, compared in place from byte
        // `n` on (the head matched); `cmp_from` orders the fence against the key, so the
        // order is reversed. A key that ends inside the prefix, matching, sorts before it.
        let prefix = low.start + 1..low.start + 1 + p;
        Ok(self.cmp_from(&prefix, key, n, p).reverse())
    }

    /// Compares `key`'s bytes `[prefix_len, hint_offset)` with those every entry shares
    /// (invariant H; read from entry 0, so the node must have one): `Less` (`Greater`) if
    /// `key` sorts before (after) every entry, `Equal` if it has those bytes. A key that
    /// ends inside them, matching so far, is `Less`.
    ///
    /// # Errors
    /// [`Error::Corruption`] if entry 0 is shorter than the hint offset.
    fn cmp_shared(&self, key: &[u8]) -> Result<Ordering> {
        let (_, r) = self.ranges(0)?;
        let end = self.hint_offset;
        if r.len() < end {
            return Err(self.corrupt(format!(
                "entry 0 ({} bytes) is shorter than the hint offset {end}",
                r.len()
            )));
        }
        // The caller placed `key` against the prefix, so it is at least that long.
        let from = self.prefix_len.min(key.len());
        Ok(self.cmp_from(&r, key, from, end).reverse())
    }

    /// Where the entries' hints start in their keys (invariant H), in bytes.
    fn hint_offset(&self) -> usize {
        self.hint_offset
    }

    /// Length in bytes of the common prefix of entry `i`'s key and `key`, compared in place
    /// (no copy of the entry).
    ///
    /// # Errors
    /// As [`Node::search`].
    fn common_with(&self, i: usize, key: &[u8]) -> Result<usize> {
        let (_, r) = self.ranges(i)?;
        Ok(self.common_from(&r, key, 0, usize::MAX))
    }

    /// True if `key` begins with the node's prefix (so it may lie inside the fences).
    ///
    /// # Errors
    /// As [`Node::search`].
    pub(crate) fn has_prefix_of(&self, key: &[u8]) -> Result<bool> {
        Ok(self.cmp_prefix(key)? == Ordering::Equal)
    }

    /// Binary search: `Ok(i)` if entry `i` has `key`, `Err(i)` if `key` belongs before entry
    /// `i` (`i` may be [`Node::entry_count`]). `key` may lie outside the node's fences.
    /// Compares slot hints first and reads an entry's record only on an equal hint (module
    /// doc, "Search keys"). In a run of entries with the probe's hint, the run's last entry
    /// is compared first (btree rule 17), so a key past the run — an insert in ascending
    /// order, or the descent of one — is placed with one comparison instead of a bisection
    /// of the run. TPC-C's order lines are such keys: in a leaf that holds the end of one
    /// district's lines and the start of the next's, the hints hold the district number and
    /// the order number's high bytes, so the district's lines make one run that each new
    /// line extends; that cut New-Order's instructions by 4 %.
    pub(crate) fn search(&self, key: &[u8]) -> Result<std::result::Result<usize, usize>> {
        self.search_in_runs::<true>(key)
    }

    /// [`Node::search`] without trying a run's last entry first, for the bound where a
    /// scan starts: such a bound is often a prefix of the keys it finds (the last name of a
    /// TPC-C `customer_by_name` scan), which lies at the start of its run, so trying the
    /// end first would cost a record read (on a cold leaf, a cache miss) for nothing.
    ///
    /// # Errors
    /// As [`Node::search`].
    pub(crate) fn search_scan_start(
        &self,
        key: &[u8],
    ) -> Result<std::result::Result<usize, usize>> {
        self.search_in_runs::<false>(key)
    }

    /// [`Node::search`]; without `LAST_FIRST`, as [`Node::search_scan_start`]. Out of line,
    /// as `search` was before it had two forms: inlined into its callers (the descents, the
    /// batch, the insert), it made New-Order run 2.5 % more instructions (callgrind).
    #[inline(never)]
    fn search_in_runs<const LAST_FIRST: bool>(
        &self,
        key: &[u8],
    ) -> Result<std::result::Result<usize, usize>> {
        let count = self.entry_count();
        match self.cmp_prefix(key)? {
            Ordering::Less => return Ok(Err(0)),
            Ordering::Greater => return Ok(Err(count)),
            Ordering::Equal => {}
        }
        if count == 0 {
            return Ok(Err(0));
        }
        let probe = Probe::new(key, self.hint_offset);
        let guess = self.prefetch_guess(count, probe.hint);
        if self.hint_offset > self.prefix_len {
            match self.cmp_shared(key)? {
                Ordering::Less => return Ok(Err(0)),
                Ordering::Greater => return Ok(Err(count)),
                Ordering::Equal => {}
            }
        }
        // Lower bound on the hints by interpolation (`hint_lower_bound`): the first entry
        // whose hint is not below the probe's. Hints never decrease in key order, so the keys
        // with the probe's hint form one run from there; usually it is one entry long, but
        // keys that share more than four bytes past the hint offset make long runs, which a
        // binary search over the full keys then narrows.
        let page = self.s.page();
        // In bounds: Node::open checked the special area's length and the 8-byte slot
        // format, and Slotted::open that the slot array of `count + 2` slots ends inside
        // the page; every index passed is < count.
        let hint_at = |i: usize| page.u32_at(HINTS_AT + NODE_SLOT_SIZE * i);
        let lo = match guess {
            Some(g) => hint_search_from(count, g, |i| hint_at(i) < probe.hint),
            None => hint_lower_bound(count, probe.hint, self.s.last_hint(), hint_at),
        };
        if lo == count || hint_at(lo) != probe.hint {
            return Ok(Err(lo));
        }
        let mut hi = if lo + 1 == count || hint_at(lo + 1) != probe.hint {
            lo + 1
        } else {
            lower_bound(lo + 1, count, |i| hint_at(i) <= probe.hint)
        };
        if LAST_FIRST && hi - lo > 1 {
            match self.cmp_probe(hi - 1, &probe)? {
                Ordering::Less => return Ok(Err(hi)),
                Ordering::Equal => return Ok(Ok(hi - 1)),
                Ordering::Greater => hi -= 1,
            }
        }
        if hi - lo > 2 {
            self.prefetch_run(lo, hi);
        }
        let mut lo = lo;
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.cmp_probe(mid, &probe)? {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Ok(Ok(mid)),
            }
        }
        Ok(Err(lo))
    }

    /// Prefetches the first line of the records of entries `lo..hi`, a run of entries with
    /// the probe's hint that [`Node::search`] is about to bisect by their keys (evenly
    /// spaced, at most [`RUN_PREFETCH_MAX`] of a longer run): the bisection's record reads
    /// depend on one another (each picks the next), so without this each is a cache miss
    /// of its own on a cold node; with it they overlap. Runs are long where keys share more
    /// than four bytes past the hint offset, as the names of a TPC-C `customer_by_name`
    /// index do. Reads the run's slots, whose lines the hint search has mostly just read.
    /// Advisory, like every prefetch here.
    #[cold]
    #[inline(never)]
    fn prefetch_run(&self, lo: usize, hi: usize) {
        let page = self.s.page();
        let step = (hi - lo).div_ceil(RUN_PREFETCH_MAX).max(1);
        for i in (lo..hi).step_by(step) {
            if let Ok(r) = self.s.record_range(FIRST_ENTRY + i) {
                page.prefetch(r.start);
            }
        }
    }

    /// Starts the cache misses that [`Node::search`] for a key of hint `hint` will take
    /// after the first two lines of the page: the slot line of the interpolated guess
    /// (`hint_lower_bound`) and, on the assumption that the records lie in key order
    /// ([`Slotted::guess_record_in_order`]), the record of the guessed entry and, in an
    /// inner node, the one before it (whose child a key between two separators takes). So
    /// the slot's miss, the record's and `cmp_shared`'s miss on entry 0 overlap instead of
    /// following one another. Returns the guess, an entry number in `[1, count - 1]`, for
    /// `hint_search_from`; `None` (and nothing prefetched) for a node too small to
    /// interpolate, or a hint at or below the first entry's or above `last_hint`, where
    /// `hint_lower_bound` decides without a guess. Advisory: on a page changing under an
    /// optimistic reader it may prefetch wrong lines, never outside the page.
    #[inline(always)]
    fn prefetch_guess(&self, count: usize, hint: u32) -> Option<usize> {
        if count < INTERPOLATION_MIN_ENTRIES {
            return None;
        }
        let page = self.s.page();
        // In bounds: Node::open checked that the slot array of `count + 2` slots ends inside
        // the page, and every index below is < count.
        let (first, last) = (page.u32_at(HINTS_AT), self.s.last_hint());
        let before = usize::from(!self.is_leaf());
        let layout = || self.s.record_layout(FIRST_ENTRY);
        prefetch_interpolated(page, count, hint, (first, last), layout, before)
    }

    /// [`Node::search`], trying entry `near` first: `Ok(near)` if it holds `key`, `Err(near)`
    /// if `key` lies between entries `near - 1` and `near`, else the full search. A wrong or
    /// stale `near` costs two comparisons, nothing else. Where the hints start at the prefix
    /// and `key` has the prefix (checked from the special area), the two neighbours' hints
    /// decide unless they equal the probe's, so a new key's place is confirmed without
    /// reading a record; otherwise the records are compared.
    ///
    /// # Errors
    /// As [`Node::search`].
    pub(crate) fn search_near(
        &self,
        key: &[u8],
        near: Option<usize>,
    ) -> Result<std::result::Result<usize, usize>> {
        let count = self.entry_count();
        let Some(i) = near.filter(|&i| i <= count) else {
            return self.search(key);
        };
        let probe = Probe::new(key, self.hint_offset);
        // Hints order keys that share the node's prefix and the bytes up to the hint offset
        // (a smaller hint, a smaller key); with the offset at the prefix, the prefix is all
        // a key needs, and that is cheap to check.
        let hints_order =
            self.hint_offset == self.prefix_len && self.cmp_prefix(key)? == Ordering::Equal;
        let page = self.s.page();
        // In bounds: every index passed is < count (as in `search`).
        let cmp_entry = |j: usize| -> Result<Ordering> {
            if hints_order {
                let h = page.u32_at(HINTS_AT + NODE_SLOT_SIZE * j);
                if h != probe.hint {
                    return Ok(h.cmp(&probe.hint));
                }
            }
            self.cmp_probe(j, &probe)
        };
        if i < count {
            match cmp_entry(i)? {
                Ordering::Equal => return Ok(Ok(i)),
                Ordering::Less => return self.search(key),
                Ordering::Greater => {}
            }
        }
        // Entry `i` (if any) is above `key`: it goes at `i` if entry `i - 1` is below it.
        if i == 0 || cmp_entry(i - 1)? == Ordering::Less {
            return Ok(Err(i));
        }
        self.search(key)
    }

    /// The prefix length every key of the node shares, in bytes.
    pub(crate) fn prefix_len(&self) -> usize {
        self.prefix_len
    }

    /// Checks the search keys against the fences and entries (for `verify`): the prefix
    /// length and head, then every entry's hint and the header's copy of the last one
    /// (slotted rule 9). Returns the first mismatch, described.
    ///
    /// # Errors
    /// [`Error::Corruption`] if a fence or entry cannot be read.
    pub(crate) fn check_search_keys(&self) -> Result<Option<String>> {
        let low = self.low_fence()?;
        let p = common_prefix(&low, &self.high_fence()?);
        let (_, head) = prefix_fields(low.as_deref().unwrap_or(&[]), p);
        if p != self.prefix_len || head != self.prefix_head {
            return Ok(Some(format!(
                "prefix of {} bytes (head {:02x?}) stored, the fences share {p} (head {head:02x?})",
                self.prefix_len, self.prefix_head
            )));
        }
        // Invariant H: every entry has entry 0's bytes [prefix, hint offset).
        let off = self.hint_offset;
        let shared = match self.entry_count() {
            0 => Vec::new(),
            _ => self
                .key(0)?
                .get(p..off)
                .map(<[u8]>::to_vec)
                .unwrap_or_default(),
        };
        for i in 0..self.entry_count() {
            let key = self.key(i)?;
            if key.get(p..off) != Some(&shared[..]) {
                return Ok(Some(format!(
                    "entry {i} does not share bytes {p}..{off} with entry 0 (hint offset {off})"
                )));
            }
            let (want, got) = (hint_of(&key, off), self.s.hint(FIRST_ENTRY + i)?);
            if want != got {
                return Ok(Some(format!(
                    "entry {i} has hint {got:#010x}, its key {want:#010x}"
                )));
            }
        }
        // Slotted rule 9: the header's copy of the last slot's hint, which searches guess from.
        Ok(self.s.last_hint_problem())
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
        let (r, k) = self.ranges(i)?;
        if k.end < r.end && self.s.page().u8_at(k.end) == VALUE_INLINE {
            return Ok(StoredValue::Inline(
                self.s.page().to_vec(k.end + 1, r.end - k.end - 1),
            ));
        }
        Ok(StoredValue::Tagged(
            self.s.page().to_vec(k.end, r.end - k.end),
        ))
    }

    /// The second step of a batched lookup ([`BTree::get_many`](super::BTree::get_many)),
    /// once the node's first two lines are cached: prefetches the slot-array lines that
    /// [`Node::search`] for `key` reads first — every slot of a node too small to
    /// interpolate, else the line of the interpolated guess and the line a window before it
    /// — and entry 0's record where the hints start past the prefix (`cmp_shared`
    /// reads it). Reads only the first two lines. Advisory: on a page changing under an
    /// optimistic reader it may prefetch the wrong lines, never out of the page.
    pub(crate) fn prefetch_search(&self, key: &[u8]) {
        let count = self.entry_count();
        if count == 0 {
            return;
        }
        let page = self.s.page();
        let slot = |i: usize| HINTS_AT + NODE_SLOT_SIZE * i;
        if self.hint_offset > self.prefix_len {
            if let Ok(r) = self.s.record_range(FIRST_ENTRY) {
                page.prefetch(r.start);
            }
        }
        if count < INTERPOLATION_MIN_ENTRIES {
            for i in (0..count).step_by(INTERPOLATION_WINDOW).chain([count - 1]) {
                page.prefetch(slot(i));
            }
            return;
        }
        // In bounds: Node::open checked that the slot array of `count + 2` slots ends inside
        // the page, and every index below is < count.
        let hint = hint_of(key, self.hint_offset);
        let (first, last) = (page.u32_at(slot(0)), self.s.last_hint());
        let at = match hint {
            h if h <= first => 0,
            h if h > last => count - 1,
            h => interpolate(count, h, first, last),
        };
        // The guess's line, and the one a window before it: a guess at or past the answer
        // (an exact guess included) reads both.
        page.prefetch(slot(at.saturating_sub(INTERPOLATION_WINDOW)));
        page.prefetch(slot(at));
    }

    /// The third step of a batched lookup, once the lines of
    /// [`Node::prefetch_search`] are cached: finds where `key` falls among the hints and
    /// prefetches the records that the search then compares and reads — in a leaf the
    /// entry there (its value: every line of the record, up to 1 KiB), in an inner node
    /// that entry and the one before it (the child of a key between two separators; first
    /// and last line of each). Advisory, as
    /// [`Node::prefetch_search`].
    pub(crate) fn prefetch_records(&self, key: &[u8]) {
        /// Lines of one record prefetched at most.
        const MAX_RECORD_LINES: usize = 16;
        let count = self.entry_count();
        if count == 0 {
            return;
        }
        let page = self.s.page();
        // In bounds: every index passed to `hint_at` is < count (as in `search`).
        let hint_at = |i: usize| page.u32_at(HINTS_AT + NODE_SLOT_SIZE * i);
        let hint = hint_of(key, self.hint_offset);
        let lo = hint_lower_bound(count, hint, self.s.last_hint(), hint_at).min(count - 1);
        if self.is_leaf() {
            if let Ok(r) = self.s.record_range(FIRST_ENTRY + lo) {
                let end = r.end.min(r.start + 64 * MAX_RECORD_LINES);
                for at in (r.start..end).step_by(64).chain([end.saturating_sub(1)]) {
                    page.prefetch(at);
                }
            }
            return;
        }
        for i in [lo.saturating_sub(1), lo] {
            if let Ok(r) = self.s.record_range(FIRST_ENTRY + i) {
                page.prefetch(r.start);
                page.prefetch(r.end.saturating_sub(1));
            }
        }
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

/// An owned description of a whole node: what a split or merge builds and what the
/// `FORMAT` log operation carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NodeImage {
    pub(crate) level: u16,
    pub(crate) right: PageId,
    pub(crate) child0: PageId,
    pub(crate) tree: PageId,
    pub(crate) low: Option<Vec<u8>>,
    pub(crate) high: Option<Vec<u8>>,
    /// Entry records in key order.
    pub(crate) entries: Vec<Vec<u8>>,
}

impl NodeImage {
    /// An empty leaf covering every key: a new tree's root.
    pub(crate) fn empty_root(tree: PageId) -> NodeImage {
        NodeImage {
            level: 0,
            right: PageId::INVALID,
            child0: PageId::INVALID,
            tree,
            low: None,
            high: None,
            entries: Vec::new(),
        }
    }

    /// Formats `page` (page id `pid`) as this node. The node is built in plain memory and
    /// copied into `page` with one write, whole words on a frame: built in the frame, each
    /// record and slot was a write of its own, partial words read, merged and stored
    /// (11 % more instructions for a split's new leaf of 150 entries, callgrind).
    ///
    /// # Errors
    /// [`Error::Corruption`] naming `pid` if the node does not fit the page (a log record
    /// that describes an impossible node); `page` is then unchanged.
    pub(crate) fn write_to<W: PageWrite + ?Sized>(&self, page: &mut W, pid: PageId) -> Result<()> {
        let mut staged = vec![0u8; page.page_len()];
        self.format(staged.as_mut_slice(), pid)?;
        page.write_from(0, &staged);
        Ok(())
    }

    /// [`NodeImage::write_to`] without the staging.
    fn format<W: PageWrite + ?Sized>(&self, page: &mut W, pid: PageId) -> Result<()> {
        if self.level > MAX_LEVEL {
            return Err(Error::corruption(pid, format!("node level {}", self.level)));
        }
        let mut s = slotted::init_hinted(page, pid, page_type(self.level), SPECIAL_BYTES);
        let mut sp = [0u8; SPECIAL_BYTES];
        sp[SP_LEVEL..SP_LEVEL + 2].copy_from_slice(&self.level.to_le_bytes());
        sp[SP_FLAGS..SP_FLAGS + 2].copy_from_slice(&0u16.to_le_bytes());
        let prefix_len = common_prefix(&self.low, &self.high);
        let (len, head) = prefix_fields(self.low.as_deref().unwrap_or(&[]), prefix_len);
        let shared = match self.entries.as_slice() {
            [first, .., last] => Some(common_prefix_len(
                entry_key(pid, first)?,
                entry_key(pid, last)?,
            )),
            _ => None,
        };
        let hint_offset = hint_offset_for(prefix_len, shared);
        sp[SP_PREFIX_LEN..SP_PREFIX_LEN + 2].copy_from_slice(&len);
        sp[SP_HINT_OFFSET..SP_HINT_OFFSET + 2].copy_from_slice(&(hint_offset as u16).to_le_bytes());
        sp[SP_PREFIX_HEAD..SP_PREFIX_HEAD + PREFIX_HEAD_BYTES].copy_from_slice(&head);
        sp[SP_RIGHT..SP_RIGHT + 8].copy_from_slice(&self.right.0.to_le_bytes());
        sp[SP_CHILD0..SP_CHILD0 + 8].copy_from_slice(&self.child0.0.to_le_bytes());
        sp[SP_TREE..SP_TREE + 8].copy_from_slice(&self.tree.0.to_le_bytes());
        s.write_special(0, &sp)?;
        let fences = [fence_record(&self.low), fence_record(&self.high)];
        let hints = self
            .entries
            .iter()
            .map(|e| Ok(hint_of(entry_key(pid, e)?, hint_offset)))
            .collect::<Result<Vec<u32>>>()?;
        let records = fences.iter().map(|f| (f.as_slice(), 0)).chain(
            self.entries
                .iter()
                .map(Vec::as_slice)
                .zip(hints.iter().copied()),
        );
        s.extend_hinted(records)?
            .map_err(|no| Error::corruption(pid, format!("B-tree node image: {no}")))
    }

    /// Bytes the node takes in a page (records and slots).
    pub(crate) fn used_bytes(&self) -> usize {
        let fences = fence_record(&self.low).len() + fence_record(&self.high).len();
        let entries: usize = self.entries.iter().map(Vec::len).sum();
        fences + entries + NODE_SLOT_SIZE * (FIRST_ENTRY + self.entries.len())
    }

    /// Appends the encoding `[level u16][right u64][child0 u64][tree u64][low fence rec len
    /// u16][rec][high …][count u32]([len u16][entry])*`.
    pub(crate) fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.level.to_le_bytes());
        for p in [self.right, self.child0, self.tree] {
            out.extend_from_slice(&p.0.to_le_bytes());
        }
        for f in [&self.low, &self.high] {
            let r = fence_record(f);
            out.extend_from_slice(&(r.len() as u16).to_le_bytes());
            out.extend_from_slice(&r);
        }
        out.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        for e in &self.entries {
            out.extend_from_slice(&(e.len() as u16).to_le_bytes());
            out.extend_from_slice(e);
        }
    }

    /// Decodes [`NodeImage::encode_into`]'s bytes; `pid` names errors.
    ///
    /// # Errors
    /// [`Error::Corruption`] for truncated or inconsistent bytes.
    pub(crate) fn decode(pid: PageId, mut b: &[u8]) -> Result<NodeImage> {
        let bad = || Error::corruption(pid, "bad B-tree node image in a log record");
        let mut take = |n: usize| -> Result<&[u8]> {
            if b.len() < n {
                return Err(bad());
            }
            let (h, t) = b.split_at(n);
            b = t;
            Ok(h)
        };
        let level = u16::from_le_bytes(take(2)?.try_into().expect("2"));
        let mut ids = [PageId::INVALID; 3];
        for id in &mut ids {
            *id = PageId(u64::from_le_bytes(take(8)?.try_into().expect("8")));
        }
        let mut fences = [None, None];
        for f in &mut fences {
            let n = u16::from_le_bytes(take(2)?.try_into().expect("2")) as usize;
            *f = parse_fence(pid, take(n)?)?;
        }
        let count = u32::from_le_bytes(take(4)?.try_into().expect("4")) as usize;
        let mut entries = Vec::with_capacity(count.min(4096));
        for _ in 0..count {
            let n = u16::from_le_bytes(take(2)?.try_into().expect("2")) as usize;
            let e = take(n)?;
            entry_key(pid, e)?;
            entries.push(e.to_vec());
        }
        if !b.is_empty() {
            return Err(bad());
        }
        let [high, low] = [fences[1].take(), fences[0].take()];
        Ok(NodeImage {
            level,
            right: ids[0],
            child0: ids[1],
            tree: ids[2],
            low,
            high,
            entries,
        })
    }
}

/// Write access to an X-latched node: the primitive changes that the B-tree's redo
/// operations are made of. Each checks before it changes anything (transaction rule 2).
pub(crate) struct NodeMut<'a, W: PageWrite + ?Sized> {
    s: SlottedMut<'a, W>,
}

impl<'a, W: PageWrite + ?Sized> NodeMut<'a, W> {
    /// Opens a write view after the slotted header's checks ([`SlottedMut::open`]). The
    /// node's own checks ([`Node::open`]'s) are left to the change: every change method
    /// begins with [`NodeMut::view`], which makes them before anything is changed, so a
    /// page that is not a B-tree node is refused all the same, and a redo (which opens the
    /// node for one change) does not check it twice.
    ///
    /// # Errors
    /// As [`SlottedMut::open`].
    pub(crate) fn open(page: &'a mut W) -> Result<Self> {
        Ok(NodeMut {
            s: SlottedMut::open(page)?,
        })
    }

    /// A read view of the current state (the slotted header is the one this view keeps up
    /// to date, so only the node's own fields are read again).
    pub(crate) fn view(&self) -> Result<Node<'_, W>> {
        Node::on(self.s.view())
    }

    fn page_id(&self) -> PageId {
        self.s.view().page_id()
    }

    /// Inserts entry record `rec` at its key's position (looked for first at `near`,
    /// [`Node::search_near`]).
    ///
    /// # Errors
    /// [`Error::Corruption`] if the key is present or the entry does not fit (a redo that
    /// does not match its page), or the page is corrupt.
    pub(crate) fn insert(&mut self, rec: &[u8], near: Option<usize>) -> Result<()> {
        let pid = self.page_id();
        let key = entry_key(pid, rec)?;
        let view = self.view()?;
        let pos = match view.search_near(key, near)? {
            Ok(_) => return Err(Error::corruption(pid, "insert of a key already present")),
            Err(p) => p,
        };
        // Invariant H. A key between the first and the last entry shares their common
        // prefix, so the hint offset stands; a new first or last entry may change it. For a
        // new end entry the common prefix with the far end is min(c, that of the two ends),
        // c being its common prefix with its neighbour (the old end entry, just compared by
        // the search, so in cache); and the two ends share at least the old offset's bytes
        // (invariant H). So c at or past the old offset keeps it, and a shorter c is the
        // common prefix with the far end.
        let (count, prefix_len, old) = (view.entry_count(), view.prefix_len(), view.hint_offset());
        let neighbour = match pos {
            0 => Some(0),
            p if p == count => count.checked_sub(1),
            _ => None,
        };
        let offset = match (count, neighbour) {
            (0, _) => hint_offset_for(prefix_len, None),
            (_, None) => old,
            // One entry: both ends, and no old offset to go by (it was chosen without one).
            (1, Some(e)) => hint_offset_for(prefix_len, Some(view.common_with(e, key)?)),
            (_, Some(e)) => match view.common_with(e, key)? {
                c if c >= old => old,
                c => hint_offset_for(prefix_len, Some(c)),
            },
        };
        self.s
            .insert_hinted(FIRST_ENTRY + pos, rec, hint_of(key, offset))?
            .map_err(|no| Error::corruption(pid, format!("B-tree insert: {no}")))?;
        if offset != old {
            self.rehint(offset)?;
        }
        Ok(())
    }

    /// Replaces the entry with `rec`'s key (looked for first at `near`) by `rec`.
    ///
    /// # Errors
    /// [`Error::Corruption`] if the key is absent or the entry does not fit.
    pub(crate) fn replace(&mut self, rec: &[u8], near: Option<usize>) -> Result<()> {
        let pid = self.page_id();
        let key = entry_key(pid, rec)?;
        let pos = self.find(key, near)?;
        self.s
            .update(FIRST_ENTRY + pos, rec)?
            .map_err(|no| Error::corruption(pid, format!("B-tree update: {no}")))
    }

    /// Overwrites bytes `[at, at + bytes.len())` of the entry with `key` (looked for first
    /// at `near`) with `bytes`: a change of its value that keeps the entry's length. The
    /// key and its length stay, so the entry's order and hint do too.
    ///
    /// # Errors
    /// [`Error::Corruption`] if the node is not a leaf, the key is absent, its value is not
    /// inline, or the range does not lie inside the value.
    pub(crate) fn patch(
        &mut self,
        key: &[u8],
        at: usize,
        bytes: &[u8],
        near: Option<usize>,
    ) -> Result<()> {
        let pos = self.find(key, near)?;
        let view = self.view()?;
        if !view.is_leaf()
            || at <= KEY_LEN_BYTES + key.len()
            || view.value_tag(pos)? != VALUE_INLINE
        {
            return Err(Error::corruption(
                self.page_id(),
                format!("B-tree patch at byte {at} of an entry: not inside an inline leaf value"),
            ));
        }
        self.s.patch(FIRST_ENTRY + pos, at, bytes)
    }

    /// Removes the entry with `key` (looked for first at `near`).
    ///
    /// # Errors
    /// [`Error::Corruption`] if the key is absent.
    pub(crate) fn remove(&mut self, key: &[u8], near: Option<usize>) -> Result<()> {
        let pos = self.find(key, near)?;
        self.s.delete(FIRST_ENTRY + pos)
    }

    fn find(&self, key: &[u8], near: Option<usize>) -> Result<usize> {
        self.view()?
            .search_near(key, near)?
            .map_err(|_| Error::corruption(self.page_id(), "change of a key that is absent"))
    }

    /// Keeps the first `keep` entries, then sets the high fence and the right sibling: the
    /// left half of a split.
    ///
    /// # Errors
    /// [`Error::Corruption`] if `keep` exceeds the entries or the fence does not fit.
    pub(crate) fn truncate(
        &mut self,
        keep: usize,
        high: &Option<Vec<u8>>,
        right: PageId,
    ) -> Result<()> {
        let pid = self.page_id();
        let n = self.view()?.entry_count();
        let new_high = fence_record(high);
        let room = self.s.view().free_space_total() + self.s.view().record_len(1)?;
        // The new high fence must fit once the entries are gone (checked before anything is
        // written). Their bytes are counted only where the room without them is short: a
        // split's fence is usually no longer than the one it replaces.
        let fits = || -> Result<bool> {
            if room >= new_high.len() {
                return Ok(true);
            }
            let freed = (keep..n)
                .map(|i| self.s.view().record_len(FIRST_ENTRY + i))
                .sum::<Result<usize>>()?;
            Ok(room + freed + NODE_SLOT_SIZE * (n - keep) >= new_high.len())
        };
        if keep > n || !fits()? {
            return Err(Error::corruption(pid, format!("truncate to {keep} of {n}")));
        }
        self.s.truncate(FIRST_ENTRY + keep)?;
        self.s
            .update(1, &new_high)?
            .map_err(|no| Error::corruption(pid, format!("high fence: {no}")))?;
        self.s.write_special(SP_RIGHT, &right.0.to_le_bytes())?;
        self.refresh_prefix()
    }

    /// Recomputes the prefix from the fences and the hint offset from the entries, and, if
    /// either changed, every entry's hint.
    fn refresh_prefix(&mut self) -> Result<()> {
        let (low, high, old_prefix, old_offset, shared) = {
            let v = self.view()?;
            let n = v.entry_count();
            let shared = match n {
                0 | 1 => None,
                _ => Some(v.common_with(n - 1, &v.key(0)?)?),
            };
            (
                v.low_fence()?,
                v.high_fence()?,
                v.prefix_len(),
                v.hint_offset(),
                shared,
            )
        };
        let prefix_len = common_prefix(&low, &high);
        // The entries kept have a new last one: the hint offset is chosen again — unless
        // the old one lies further and is still valid (not inside the new prefix, and every
        // kept entry shares the bytes up to it): the bytes between are common to all, so
        // its hints tell entries apart as well, and none needs rewriting. (A split of a
        // sequentially loaded leaf keeps every entry and only gains a prefix.)
        // (`hint_offset_for` never returns less than the prefix, so an old offset past it is
        // past the new prefix too.)
        let mut offset = hint_offset_for(prefix_len, shared);
        if offset < old_offset && shared.is_some_and(|s| s >= old_offset) {
            offset = old_offset;
        }
        if prefix_len != old_prefix {
            let (len, head) = prefix_fields(low.as_deref().unwrap_or(&[]), prefix_len);
            self.s.write_special(SP_PREFIX_LEN, &len)?;
            self.s.write_special(SP_PREFIX_HEAD, &head)?;
        }
        // No view is opened until the offset is written too (`Node::open` checks it is not
        // inside the prefix). Hints depend on the offset alone: a new prefix with the old
        // offset (a split of a leaf on a tree's right edge, whose prefix was empty) keeps
        // them.
        if offset == old_offset {
            return Ok(());
        }
        self.rehint(offset)
    }

    /// Sets the hint offset to `offset` and recomputes every entry's hint from it.
    fn rehint(&mut self, offset: usize) -> Result<()> {
        self.s
            .write_special(SP_HINT_OFFSET, &(offset as u16).to_le_bytes())?;
        // Read in place (no copy of each key), then written: a split's left half rehints
        // every entry it keeps.
        let hints = {
            let v = self.view()?;
            (0..v.entry_count())
                .map(|i| v.hint_at(i, offset))
                .collect::<Result<Vec<u32>>>()?
        };
        for (i, hint) in hints.into_iter().enumerate() {
            self.s.set_hint(FIRST_ENTRY + i, hint)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{
        hint_lower_bound, inline_leaf_entry, lower_bound, Node, NodeImage, NodeMut,
        INTERPOLATION_MIN_ENTRIES, INTERPOLATION_WINDOW, MAX_LEVEL, SPECIAL_OFFSET, SP_LEVEL,
    };
    use crate::types::PageId;
    use proptest::prelude::*;

    /// A leaf page of 8 KiB with fences `[low, high)` and the entries of `keys` (sorted,
    /// distinct), whose values are the keys themselves.
    pub(super) fn leaf(keys: &[Vec<u8>], low: Option<Vec<u8>>, high: Option<Vec<u8>>) -> Vec<u8> {
        let image = NodeImage {
            low,
            high,
            entries: keys.iter().map(|k| inline_leaf_entry(k, k)).collect(),
            ..NodeImage::empty_root(PageId(7))
        };
        let mut page = vec![0u8; 8192];
        image.write_to(page.as_mut_slice(), PageId(7)).unwrap();
        page
    }

    /// `entry_bytes` (from the header's accounting) is the sum of the entries' lengths, also
    /// once removals have left holes in the heap and inserts have filled some.
    #[test]
    fn entry_bytes_is_the_sum_of_the_entry_lengths() {
        let keys: Vec<Vec<u8>> = (0..40u8)
            .map(|i| vec![i; 1 + (i as usize * 7) % 23])
            .collect();
        let mut page = leaf(&keys, Some(vec![0]), Some(vec![200; 9]));
        let sum = |page: &[u8]| {
            let n = Node::open(page).unwrap();
            let total: usize = (0..n.entry_count()).map(|i| n.entry_len(i).unwrap()).sum();
            (n.entry_bytes().unwrap(), total)
        };
        let (got, want) = sum(&page);
        assert_eq!(got, want);
        for k in keys.iter().step_by(3) {
            NodeMut::open(page.as_mut_slice())
                .unwrap()
                .remove(k, None)
                .unwrap();
        }
        for i in 0..5u8 {
            let k = vec![100 + i; 30];
            let rec = inline_leaf_entry(&k, &k);
            NodeMut::open(page.as_mut_slice())
                .unwrap()
                .insert(&rec, None)
                .unwrap();
        }
        let (got, want) = sum(&page);
        assert_eq!(got, want);
        // Replacements that grow and shrink values, then inserts until one needs the holes
        // compacted.
        for (n, k) in keys.iter().skip(1).step_by(3).enumerate() {
            let value = vec![7u8; 1 + (n * 13) % 40];
            let rec = inline_leaf_entry(k, &value);
            NodeMut::open(page.as_mut_slice())
                .unwrap()
                .replace(&rec, None)
                .unwrap();
            let (got, want) = sum(&page);
            assert_eq!(got, want, "after replacing key {k:?}");
        }
        let mut i = 0u8;
        loop {
            let k = vec![150, i];
            let rec = inline_leaf_entry(&k, &[9u8; 60]);
            if NodeMut::open(page.as_mut_slice())
                .unwrap()
                .insert(&rec, None)
                .is_err()
            {
                break;
            }
            let (got, want) = sum(&page);
            assert_eq!(got, want, "after insert {i}");
            i += 1;
        }
        assert!(i > 10, "only {i} inserts fitted");
    }

    /// `NodeMut::open` checks only the slotted header; every change still makes the node's
    /// own checks first, so on a page whose special area is not a B-tree node's each one is
    /// refused as corruption and the page is unchanged.
    #[test]
    fn every_change_refuses_a_page_that_is_not_a_node() {
        let keys = vec![b"aa".to_vec(), b"bb".to_vec()];
        let mut page = leaf(&keys, None, None);
        page[SPECIAL_OFFSET + SP_LEVEL..SPECIAL_OFFSET + SP_LEVEL + 2]
            .copy_from_slice(&(MAX_LEVEL + 1).to_le_bytes());
        assert!(Node::open(page.as_slice()).is_err());
        let before = page.clone();
        let rec = inline_leaf_entry(b"cc", b"cc");
        let old = inline_leaf_entry(b"aa", b"zz");
        let results = [
            NodeMut::open(page.as_mut_slice())
                .unwrap()
                .insert(&rec, None),
            NodeMut::open(page.as_mut_slice())
                .unwrap()
                .replace(&old, Some(0)),
            NodeMut::open(page.as_mut_slice())
                .unwrap()
                .remove(b"aa", None),
            NodeMut::open(page.as_mut_slice())
                .unwrap()
                .patch(b"aa", 5, b"z", None),
            NodeMut::open(page.as_mut_slice())
                .unwrap()
                .truncate(1, &None, PageId(9)),
        ];
        for r in results {
            assert!(matches!(r, Err(crate::Error::Corruption { .. })), "{r:?}");
            assert_eq!(page, before);
        }
    }

    /// The left half of a split: a high fence that fits only once the right half's entries
    /// are gone is taken; one that does not fit even then is corruption, with the page
    /// unchanged.
    #[test]
    fn truncate_counts_the_entries_it_drops_for_the_new_fence() {
        // 60 entries of 50-byte keys and values (about 6.8 KB of an 8 KiB page): the room
        // left is less than a fence of 1,500 bytes.
        let keys: Vec<Vec<u8>> = (0..60u8).map(|i| vec![i; 50]).collect();
        let mut page = leaf(&keys, None, None);
        let fence = |len: usize| Some(vec![30u8; len]);
        let room = Node::open(page.as_slice()).unwrap().free_bytes();
        assert!(room < 1500, "the page must be short of room: {room}");
        let before = page.clone();
        let mut n = NodeMut::open(page.as_mut_slice()).unwrap();
        let e = n.truncate(30, &fence(8000), PageId(9)).unwrap_err();
        assert!(matches!(e, crate::Error::Corruption { .. }), "{e}");
        assert!(page == before, "a refused truncate changed the page");
        let mut n = NodeMut::open(page.as_mut_slice()).unwrap();
        n.truncate(30, &fence(1500), PageId(9)).unwrap();
        let v = n.view().unwrap();
        assert_eq!(v.entry_count(), 30);
        assert_eq!(v.high_fence().unwrap(), fence(1500));
        crate::page::slotted::check(page.as_slice(), PageId(7)).unwrap();
    }

    /// `search` places any key, inside the fences or not, as the sorted entries do, also in
    /// a node whose prefix is longer than the 8 bytes of its prefix head (the rest of the
    /// prefix is compared in place in the low fence).
    #[test]
    fn search_places_keys_outside_a_long_prefix_in_sorted_order() {
        let p = b"customer/district-07/".to_vec();
        let with = |tail: &[u8]| [p.as_slice(), tail].concat();
        let keys: Vec<Vec<u8>> = (0..50u32)
            .map(|i| with(format!("{i:04}").as_bytes()))
            .collect();
        let page = leaf(&keys, Some(with(b"0000")), Some(with(b"9999")));
        let n = Node::open(page.as_slice()).unwrap();
        let probes: [&[u8]; 12] = [
            b"",
            b"a",
            b"customer/d",
            b"customer/district-0",
            b"customer/district-06/9999",
            b"customer/district-07",
            b"customer/district-07/",
            b"customer/district-07/0010",
            b"customer/district-07/00105",
            b"customer/district-07/9",
            b"customer/district-08/0000",
            b"zzz",
        ];
        for probe in probes {
            let want = keys.binary_search_by(|k| k.as_slice().cmp(probe));
            assert_eq!(
                n.search(probe).unwrap(),
                want,
                "{}",
                String::from_utf8_lossy(probe)
            );
            assert_eq!(n.search_scan_start(probe).unwrap(), want);
        }
    }

    /// Keys laid out as TPC-C's order lines in a leaf that holds the end of one district
    /// and the start of the next: the hints (four bytes past the fences' prefix) hold the
    /// district and the order's high bytes only, so each district's lines make one run.
    /// Both forms of the search (the one that tries a run's last entry first, rule 17, and
    /// the scan's) place every key, and every probe before, inside, at the end of and past
    /// a run, as a binary search of the sorted keys does.
    #[test]
    fn runs_of_equal_hints_are_searched_from_either_end() {
        let key = |d: u8, o: u16, line: u8| vec![1, d, 1, 0, (o >> 8) as u8, o as u8, 1, line];
        let mut keys = Vec::new();
        for o in 2990..3000u16 {
            for line in 1..=10 {
                keys.push(key(7, o, line));
            }
        }
        for o in 1..4u16 {
            keys.push(key(8, o, 1));
        }
        let page = leaf(&keys, Some(key(7, 2990, 1)), Some(key(8, 100, 0)));
        let n = Node::open(page.as_slice()).unwrap();
        let hint = |k: &[u8]| super::hint_of(k, n.prefix_len());
        assert_eq!(
            hint(&keys[0]),
            hint(&keys[99]),
            "district 7's lines make one run"
        );
        let mut probes = keys.clone();
        probes.extend([
            key(7, 2999, 11),
            key(7, 3000, 1),
            key(7, 2995, 0),
            key(7, 2989, 5),
            key(8, 0, 9),
            key(8, 2, 0),
            key(8, 9, 9),
        ]);
        for p in &probes {
            let want = keys.binary_search(p);
            assert_eq!(n.search(p).unwrap(), want, "{p:?}");
            assert_eq!(n.search_scan_start(p).unwrap(), want, "{p:?}");
        }
    }

    /// A patch lands inside an inline value only: a range that starts in the key or its
    /// tag, runs past the entry, names an absent key or meets an overflow reference is
    /// corruption, and the page is unchanged (an undo relies on this to log nothing).
    #[test]
    fn a_patch_outside_an_inline_value_is_refused_and_changes_nothing() {
        let keys = vec![b"aa".to_vec(), b"bb".to_vec()];
        let mut page = leaf(&keys, None, None);
        // Entry "bb": [len u16][b b][tag][b b] = 7 bytes; the value starts at byte 5.
        NodeMut::open(page.as_mut_slice())
            .unwrap()
            .patch(b"bb", 5, b"xy", None)
            .unwrap();
        assert_eq!(
            Node::open(page.as_slice()).unwrap().value(1).unwrap(),
            b"\0xy"
        );
        let before = page.clone();
        for (key, at, bytes) in [
            (&b"bb"[..], 4, &b"z"[..]),
            (b"bb", 3, b"z"),
            (b"bb", 6, b"zz"),
            (b"cc", 5, b"z"),
        ] {
            let r = NodeMut::open(page.as_mut_slice())
                .unwrap()
                .patch(key, at, bytes, None);
            assert!(matches!(r, Err(crate::Error::Corruption { .. })), "{r:?}");
            assert_eq!(page, before);
        }
        // An overflow reference's tag: refused.
        let mut tagged = leaf(&keys, None, None);
        let at = {
            let n = Node::open(tagged.as_slice()).unwrap();
            n.ranges(1).unwrap().1.end
        };
        tagged[at] = 1;
        let r = NodeMut::open(tagged.as_mut_slice())
            .unwrap()
            .patch(b"bb", 5, b"z", None);
        assert!(matches!(r, Err(crate::Error::Corruption { .. })), "{r:?}");
    }

    proptest! {
        /// `covers` agrees with `low <= key < high` for finite and infinite fences, keys
        /// that are prefixes of a fence and keys a fence is a prefix of.
        #[test]
        fn covers_matches_the_fence_order(
            low in proptest::option::of(proptest::collection::vec(0u8..3, 0..5)),
            high in proptest::option::of(proptest::collection::vec(0u8..3, 0..5)),
            keys in proptest::collection::vec(proptest::collection::vec(0u8..3, 0..6), 1..20),
        ) {
            let page = leaf(&[], low.clone(), high.clone());
            let n = Node::open(page.as_slice()).unwrap();
            for k in &keys {
                let want = low.as_ref().map_or(true, |l| l <= k)
                    && high.as_ref().map_or(true, |h| k < h);
                prop_assert_eq!(n.covers(k).unwrap(), want, "key {:?}", k);
            }
        }
    }

    proptest! {
        /// A hint read in place (`hint_at`, as `rehint` reads them) is `hint_of` the key
        /// copied out, at every offset, for keys shorter and longer than the offset.
        #[test]
        fn in_place_hints_match_hint_of(
            keys in proptest::collection::btree_set(proptest::collection::vec(any::<u8>(), 0..14), 1..30),
            offset in 0usize..16,
        ) {
            let keys: Vec<Vec<u8>> = keys.into_iter().collect();
            let page = leaf(&keys, None, None);
            let n = Node::open(page.as_slice()).unwrap();
            for (i, k) in keys.iter().enumerate() {
                prop_assert_eq!(n.hint_at(i, offset).unwrap(), super::hint_of(k, offset));
            }
        }
    }

    proptest! {
        /// `search_near` answers as `search` does whatever the hint — right, off by one,
        /// past the end — for present and absent keys; and a change applied with a wrong
        /// hint lands where one applied without a hint does.
        #[test]
        fn search_near_agrees_with_search(
            head in proptest::collection::vec(0u8..3, 0..4),
            fenced in any::<bool>(),
            tails in proptest::collection::btree_set(
                proptest::collection::vec(0u8..3, 0..16), 1..60),
            probe in proptest::collection::vec(0u8..3, 0..20),
            near in 0usize..70,
        ) {
            // Fenced: the fences [head, head + [3]) make `head` the prefix, and probes that
            // lack it sort outside the node.
            let keys: Vec<Vec<u8>> =
                tails.into_iter().map(|t| head.iter().chain(&t).copied().collect()).collect();
            let (low, high) = match fenced {
                true => (Some(head.clone()), Some(head.iter().chain(&[3]).copied().collect())),
                false => (None, None),
            };
            let page = leaf(&keys, low, high);
            let n = Node::open(page.as_slice()).unwrap();
            let want = n.search(&probe).unwrap();
            prop_assert_eq!(n.search_near(&probe, Some(near)).unwrap(), want);
            let exact = match want { Ok(i) | Err(i) => i };
            prop_assert_eq!(n.search_near(&probe, Some(exact)).unwrap(), want);
            for (i, k) in keys.iter().enumerate() {
                prop_assert_eq!(n.search_near(k, Some(near)).unwrap(), n.search(k).unwrap());
                // Counted byte by byte: an independent reference.
                let bytewise = k.iter().zip(&probe).take_while(|(x, y)| x == y).count();
                prop_assert_eq!(n.common_with(i, &probe).unwrap(), bytewise);
            }
            // Insert (or replace) the probe with the wrong hint and with none: same page. (A
            // key outside the fences never comes to this node.)
            if fenced && !probe.starts_with(&head) {
                return Ok(());
            }
            let entry = inline_leaf_entry(&probe, b"v");
            let (mut hinted, mut plain) = (page.clone(), page.clone());
            let mut h = NodeMut::open(hinted.as_mut_slice()).unwrap();
            let mut p = NodeMut::open(plain.as_mut_slice()).unwrap();
            if want.is_ok() {
                h.replace(&entry, Some(near)).unwrap();
                p.replace(&entry, None).unwrap();
            } else {
                h.insert(&entry, Some(near)).unwrap();
                p.insert(&entry, None).unwrap();
            }
            prop_assert_eq!(&hinted, &plain);
            let (mut h, mut p) = (
                NodeMut::open(hinted.as_mut_slice()).unwrap(),
                NodeMut::open(plain.as_mut_slice()).unwrap(),
            );
            h.remove(&keys[0], Some(near)).unwrap();
            p.remove(&keys[0], None).unwrap();
            prop_assert_eq!(&hinted, &plain);
        }
    }

    /// What `hint_lower_bound` must return: the partition point of `hint_at(i) < hint`.
    fn want(hints: &[u32], hint: u32) -> usize {
        hints.partition_point(|&h| h < hint)
    }

    proptest! {
        /// Interpolation search agrees with bisection on any non-decreasing hints — dense
        /// runs, gaps, long runs of one value, all values equal — and any probe, including
        /// probes below, between and above the hints; with the true last hint and with any
        /// other (a wrong `last` may cost reads, never the answer).
        #[test]
        fn hint_lower_bound_matches_partition_point(
            mut hints in proptest::collection::vec(
                prop_oneof![0u32..40, any::<u32>(), Just(u32::MAX), Just(0u32)], 0..400),
            probe in prop_oneof![0u32..40, any::<u32>(), Just(u32::MAX), Just(0u32)],
            wrong_last in prop_oneof![0u32..40, any::<u32>(), Just(u32::MAX), Just(0u32)],
        ) {
            hints.sort_unstable();
            let last = hints.last().copied().unwrap_or(0);
            for l in [last, wrong_last] {
                let got = hint_lower_bound(hints.len(), probe, l, |i| hints[i]);
                prop_assert_eq!(got, want(&hints, probe), "last {}", l);
                for &h in hints.iter().step_by(7) {
                    let got = hint_lower_bound(hints.len(), h, l, |i| hints[i]);
                    prop_assert_eq!(got, want(&hints, h), "last {}", l);
                }
            }
        }
    }

    proptest! {
        /// Invariant H under inserts at either end and in the middle and removals: keys
        /// that share a long head (one warehouse number, small integers) move the hint
        /// offset past the empty prefix of a node with infinite fences; after every change
        /// `check_search_keys` finds nothing and `search` agrees with the model for present
        /// keys and for probes that share less of the head, or more.
        #[test]
        fn hint_offset_follows_the_entries(
            head in proptest::collection::vec(0u8..3, 0..10),
            ops in proptest::collection::vec(
                (any::<bool>(), proptest::collection::vec(0u8..3, 0..6)), 1..80),
            probes in proptest::collection::vec(proptest::collection::vec(0u8..3, 0..14), 8),
        ) {
            let mut page = leaf(&[], None, None);
            let mut model = std::collections::BTreeSet::new();
            for (insert, tail) in ops {
                let key: Vec<u8> = head.iter().chain(&tail).copied().collect();
                let mut n = NodeMut::open(page.as_mut_slice()).unwrap();
                if insert && !model.contains(&key) {
                    n.insert(&inline_leaf_entry(&key, b"v"), None).unwrap();
                    model.insert(key);
                } else if !insert && model.remove(&key) {
                    n.remove(&key, None).unwrap();
                }
                let v = Node::open(page.as_slice()).unwrap();
                prop_assert_eq!(v.check_search_keys().unwrap(), None);
                let keys: Vec<&Vec<u8>> = model.iter().collect();
                for (i, k) in keys.iter().enumerate() {
                    prop_assert_eq!(v.search(k).unwrap(), Ok(i));
                }
                for p in &probes {
                    prop_assert_eq!(v.search(p).unwrap(), keys.binary_search(&p));
                    prop_assert_eq!(v.search_scan_start(p).unwrap(), keys.binary_search(&p));
                }
            }
        }
    }

    /// Keys that all begin with the same 6 bytes put the root's hints past them.
    #[test]
    fn shared_head_moves_the_hint_offset() {
        let keys: Vec<Vec<u8>> = (0u64..100)
            .map(|i| (1000 + i).to_be_bytes().to_vec())
            .collect();
        let page = leaf(&keys, None, None);
        let n = Node::open(page.as_slice()).unwrap();
        assert_eq!(n.hint_offset(), 6);
        assert_eq!(n.check_search_keys().unwrap(), None);
        assert_eq!(n.search(&1050u64.to_be_bytes()).unwrap(), Ok(50));
        assert_eq!(n.search(&5u64.to_be_bytes()).unwrap(), Err(0));
        assert_eq!(n.search(&(1u64 << 40).to_be_bytes()).unwrap(), Err(100));
    }

    // The 300 hints below are interpolated and have room for a window on either side.
    const _: () = assert!(INTERPOLATION_WINDOW < 300 && INTERPOLATION_MIN_ENTRIES < 300);

    /// Every probe of dense hints (consecutive integers, as 8-byte integer keys give in a
    /// leaf) and of hints skewed so that the guess misses its window on either side.
    #[test]
    fn hint_lower_bound_on_dense_and_skewed_hints() {
        let n = 300usize;
        let dense: Vec<u32> = (0..n as u32).map(|i| 1000 + 2 * i).collect();
        // Most hints small, a few huge: interpolation guesses far too low.
        let skewed: Vec<u32> = (0..n as u32)
            .map(|i| {
                if i < 290 {
                    i
                } else {
                    u32::MAX - 10 + (i - 290)
                }
            })
            .collect();
        for hints in [dense, skewed] {
            for probe in hints
                .iter()
                .flat_map(|&h| [h.wrapping_sub(1), h, h.wrapping_add(1)])
            {
                assert_eq!(
                    hint_lower_bound(n, probe, hints[n - 1], |i| hints[i]),
                    want(&hints, probe),
                    "probe {probe}"
                );
            }
        }
    }

    /// A changing page may return anything from `hint_at`: every index asked for stays
    /// below `count`, and the result is at most `count`.
    #[test]
    fn hint_lower_bound_stays_in_bounds_on_garbage() {
        let state = std::cell::Cell::new(0x2545_f491_4f6c_dd1du64);
        let next = || {
            let mut x = state.get();
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            state.set(x);
            x as u32
        };
        for count in [0usize, 1, 15, 16, 17, 64, 300] {
            for _ in 0..2000 {
                let probe = next();
                let got = hint_lower_bound(count, probe, next(), |i| {
                    assert!(i < count, "index {i} of {count}");
                    next()
                });
                assert!(got <= count);
            }
        }
    }

    /// `lower_bound` agrees with `partition_point` on every split of every short range,
    /// including empty ranges and ranges that do not start at 0.
    #[test]
    fn lower_bound_matches_partition_point() {
        for start in 0..5usize {
            for end in start..start + 40 {
                for split in start..=end {
                    let got = lower_bound(start, end, |i| i < split);
                    let want = start
                        + (start..end)
                            .collect::<Vec<_>>()
                            .partition_point(|&i| i < split);
                    assert_eq!(got, want, "[{start}, {end}) split at {split}");
                }
            }
        }
    }
}
