//! # Slotted pages
//!
//! Job: keep a sequence of variable-length records on one page, addressed by slot number
//! `0..slot_count` in an order the access method chooses. B-tree leaves and inner nodes keep
//! their entries sorted by key in slot order; tables, being B-trees (DESIGN.md §3.10), use the
//! same layout. Inserting or deleting at slot `i` shifts the later slots, so slot numbers
//! are positions, not stable record ids. The byte layout is in `docs/format.md`
//! ("Slotted page").
//!
//! ```text
//!  0        32          48          48+S           free_start     free_end       page_size
//!  +--------+-----------+-----------+--------------+--------------+---------------+
//!  | common | slotted   | special   | slot array   |  free space  | record heap   |
//!  | header | header 16 | S bytes   | 4 or 8 B per |              | records and   |
//!  | 32 B   |           | (access   | growing  --> |              | holes  <--    |
//!  |        |           |  method)  |              |              | growing down  |
//!  +--------+-----------+-----------+--------------+--------------+---------------+
//!  slot i = (offset u16, length u16[, hint u32]) --points to--> record bytes in the heap
//! ```
//!
//! Hinted pages ([`init_hinted`]) have 8-byte slots: after the offset and length, a 4-byte
//! hint that belongs to the slot's record and moves with it (inserts and deletes shift whole
//! slots; updates and compaction keep the hint). The access method chooses what a hint
//! means: B-tree nodes keep the four key bytes after the node's common prefix there, so a
//! binary search reads only the dense slot array until it meets an equal hint (Graefe,
//! "Modern B-Tree Techniques", 2011, §3.5 "poor man's normalized keys"; LeanStore's heads,
//! Leis et al., ICDE 2018).
//!
//! The slotted header (bytes `[32, 48)`, all `u16` little-endian): `slot_count` at 32,
//! `free_start` at 34 (end of the slot array), `free_end` at 36 (start of the record heap),
//! `frag_bytes` at 38 (free bytes inside the heap, reclaimed by compaction), `special_len`
//! (`S`) at 40, the slot format (`u8`: 0 = plain 4-byte slots, 1 = hinted 8-byte slots) at 42,
//! a reserved zero byte at 43, and `last_hint` (`u32`) at 44: on a hinted page a copy of the
//! last slot's hint (0 without slots), 0 on a plain page. The first four form one aligned
//! 8-byte word, stored with one write after every change.
//!
//! Why `last_hint`: an interpolation search over the hints needs the first and the last hint
//! before it can guess. The first sits next to the header, but the last sits at the end of
//! the slot array, a cache line of its own that a search of a cold page had to wait for
//! before it could even fetch the guessed slot. With the copy in the header line, a cold
//! leaf costs the header, the guessed slot and the record: one dependent miss fewer (B-tree
//! `lookup-resident`, 1 M keys: 4–7 % more lookups per second).
//!
//! The special area is `S` bytes (at most [`SPECIAL_MAX_BYTES`]) fixed by [`init`]: the access
//! method keeps its own page fields there (a B-tree level, sibling links) and reads and
//! writes them with [`Slotted::read_special`] / [`SlottedMut::write_special`].
//!
//! Offset encoding: record offsets, `free_start` and `free_end` are stored as `u16`, yet the
//! end of a 64 KiB page is byte 65536 (an empty heap starts there, a zero-length record sits
//! there, a slot array of empty records can end there). Offset 0 lies inside the common
//! header and is never one of these offsets, so the stored value 0 stands for 65536 (and
//! nothing else); every other value is the offset itself. Counts and lengths are plain `u16`
//! (a record is at most `page_size - 52 - S` bytes).
//!
//! Invariants (checked by [`check`], cited as "slotted rule n"):
//! 1. The common header is valid for this page (format version, page id) and its type uses
//!    this layout ([`uses_slotted_layout`]).
//! 2. `special_len <= SPECIAL_MAX_BYTES`; the special area is bytes `[48, 48 + S)`.
//! 3. The slot array is dense: `free_start == 48 + S + slot_size * slot_count`, where
//!    `slot_size` is 4, or 8 on a hinted page.
//! 4. `free_start <= free_end <= page_size`.
//! 5. A record of length > 0 lies inside the heap `[free_end, page_size)`; a record of
//!    length 0 occupies no bytes and is stored with offset `page_size`.
//! 6. No two records overlap (so no record overlaps the slot array or the special area).
//! 7. `frag_bytes == (page_size - free_end) - sum of record lengths`: every heap byte belongs
//!    to exactly one record or is counted as fragmented free space.
//! 8. The slot format is 0 or 1 and the reserved byte 43 is zero.
//! 9. `last_hint` is the hint of slot `slot_count - 1` on a hinted page with slots, and 0
//!    otherwise. Only the mutators that can change the last slot or its hint (an insert that
//!    becomes the last slot, a delete of the last slot, `set_hint` of the last slot,
//!    `extend_hinted`, `truncate`) write it. Readers use it only as a search bound and check
//!    what they find against the slots, so an optimistic reader that sees a stale copy only
//!    searches further.
//!
//! Consequently the free space after compaction, [`Slotted::free_space_total`], is
//! `page_size - free_start - sum of record lengths` and depends only on the records, never on
//! the order of earlier operations.
//!
//! Errors. Pages come from disk, so every offset and length read from a page is checked
//! against the page before it is used: a corrupt page yields [`Error::Corruption`] naming the
//! page and the first problem found, never a panic or an out-of-bounds access. Opening a view
//! ([`Slotted::open`], [`SlottedMut::open`]) checks the slotted header in O(1): page length,
//! rules 1–4 (all but the page id, which the views take from the header) and `frag_bytes`
//! within the heap. Each accessor then checks the one slot it reads against rule 5's bounds;
//! compaction checks rules 5–7 for every slot before it moves anything; [`check`] checks
//! everything in O(n log n). A slot number out of range is [`Error::InvalidArgument`]. A
//! record that does not fit is not an error: mutators return `Ok(Err(NoRoom))`. Mutators
//! compact the page by themselves when the free space is there but fragmented, and on any
//! error or `NoRoom` leave the page unchanged.
//!
//! Latching: none here. A [`Slotted`] view may be used under an S latch or optimistically;
//! an optimistic reader must validate the latch version before trusting anything it got,
//! errors included (a half-written page may look corrupt). [`SlottedMut`] needs the X latch.
//!
//! What it does not do: log (the caller follows the WAL sequence of STYLE.md practice 3
//! around each change), checksum (`header::seal` / `header::verify`), give records stable
//! ids (there are no tombstone slots), store records larger than the page (overflow pages
//! are the access method's job), interpret record bytes beyond byte-wise comparison
//! ([`Slotted::compare`]), or zero free space (its contents are unspecified).

mod edit;
mod view;

#[cfg(test)]
mod tests;

pub use edit::{init, init_hinted, SlottedMut};
pub use view::Slotted;
pub(crate) use view::{prefetch_lines, record_guess};

use super::bytes::PageRead;
use super::header::{self, PageType, HEADER_SIZE, PAGE_FORMAT_VERSION};
use crate::error::{Error, Result};
use crate::options::{PAGE_SIZE_MAX_BYTES, PAGE_SIZE_MIN_BYTES};
use crate::types::PageId;
use std::fmt;

/// Size in bytes of the slotted header that follows the common header.
pub const SLOTTED_HEADER_SIZE: usize = 16;
/// Byte offset of the special area (and, when it is empty, of the slot array).
pub const SPECIAL_OFFSET: usize = HEADER_SIZE + SLOTTED_HEADER_SIZE;
/// Size in bytes of one slot-array entry of a plain page: record offset `u16`, record length
/// `u16`.
pub const SLOT_SIZE: usize = 4;
/// Size in bytes of one slot-array entry of a hinted page ([`init_hinted`]): record offset
/// `u16`, record length `u16`, then a 4-byte hint the access method keeps for its record.
pub const HINTED_SLOT_SIZE: usize = 8;
/// Largest special area in bytes that [`init`] accepts and [`check`] allows.
pub const SPECIAL_MAX_BYTES: usize = 256;

const OFF_SLOT_COUNT: usize = HEADER_SIZE;
const OFF_FREE_START: usize = HEADER_SIZE + 2;
const OFF_FREE_END: usize = HEADER_SIZE + 4;
const OFF_FRAG: usize = HEADER_SIZE + 6;
const OFF_SPECIAL_LEN: usize = HEADER_SIZE + 8;
const OFF_SLOT_FORMAT: usize = HEADER_SIZE + 10;
const OFF_RESERVED: usize = HEADER_SIZE + 11;
/// Byte offset of `last_hint` (`u32` little-endian, slotted rule 9): on a hinted page the
/// hint of the last slot, 0 without slots; 0 on a plain page. 4-byte aligned, in the page's
/// first cache line.
pub const LAST_HINT_OFFSET: usize = HEADER_SIZE + 12;
/// `slot_format` of a page with 4-byte slots.
const SLOTS_PLAIN: u8 = 0;
/// `slot_format` of a page with 8-byte slots carrying hints.
const SLOTS_HINTED: u8 = 1;
const RESERVED_LEN: usize = LAST_HINT_OFFSET - OFF_RESERVED;

// Layout constants (STYLE.md practice 7). The four mutable header fields are one aligned
// 8-byte word, so a frame stores them with a single atomic store.
const _: () = assert!(HEADER_SIZE == 32 && OFF_SLOT_COUNT % 8 == 0 && OFF_FRAG + 2 == 40);
const _: () = assert!(SPECIAL_OFFSET == 48 && RESERVED_LEN == 1);
const _: () = assert!(LAST_HINT_OFFSET % 4 == 0 && LAST_HINT_OFFSET + 4 == SPECIAL_OFFSET);
// The `0 means 65536` offset encoding covers every supported page size, and every length fits
// a `u16`.
const _: () = assert!(PAGE_SIZE_MAX_BYTES <= 1 << 16);
const _: () = assert!(PAGE_SIZE_MAX_BYTES - SPECIAL_OFFSET <= u16::MAX as usize);
const _: () = assert!(SPECIAL_OFFSET + SPECIAL_MAX_BYTES + SLOT_SIZE < PAGE_SIZE_MIN_BYTES);

/// Why a record was not placed: the page lacks room even after compaction. The page is
/// unchanged; a B-tree splits the page, a table picks another one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoRoom {
    /// Bytes the operation needed: the record plus its slot for an insert, the new record
    /// for an update.
    pub needed_bytes: usize,
    /// Bytes that were available for it: [`Slotted::free_space_total`] for an insert, that
    /// plus the old record's length for an update.
    pub free_bytes: usize,
}

impl fmt::Display for NoRoom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "no room on page: {} bytes needed, {} bytes free",
            self.needed_bytes, self.free_bytes
        )
    }
}

/// True for the page types stored in the slotted layout: [`PageType::Slotted`],
/// [`PageType::BTreeInner`] and [`PageType::BTreeLeaf`].
pub fn uses_slotted_layout(page_type: PageType) -> bool {
    matches!(
        page_type,
        PageType::Slotted | PageType::BTreeInner | PageType::BTreeLeaf
    )
}

/// Bytes available for slots and records on an empty slotted page of `page_size_bytes` with
/// a special area of `special_bytes`. The largest record that fits is this minus
/// [`SLOT_SIZE`].
pub const fn capacity_bytes(page_size_bytes: usize, special_bytes: usize) -> usize {
    page_size_bytes - SPECIAL_OFFSET - special_bytes
}

/// Decodes a stored record offset, `free_start` or `free_end` (`0 means 65536`, see the
/// module doc).
#[inline]
fn decode_offset(raw: u16) -> usize {
    if raw == 0 {
        1 << 16
    } else {
        raw as usize
    }
}

/// Encodes an offset in `1..=65536` (65536 becomes 0).
#[inline]
fn encode_offset(offset: usize) -> u16 {
    debug_assert!((1..=1 << 16).contains(&offset), "heap offset {offset}");
    (offset & 0xFFFF) as u16
}

/// The slotted header decoded and checked in O(1): the cache both views keep.
#[derive(Clone, Copy, Debug)]
struct Head {
    page_id: PageId,
    page_len: usize,
    special_len: usize,
    /// Bytes of one slot: [`SLOT_SIZE`] or [`HINTED_SLOT_SIZE`].
    slot_size: usize,
    slot_count: usize,
    /// Start of the record heap (first byte past the free space).
    free_end: usize,
    /// Bytes inside the heap that belong to no record.
    frag: usize,
}

impl Head {
    /// First byte of the slot array.
    #[inline]
    fn slots_start(&self) -> usize {
        SPECIAL_OFFSET + self.special_len
    }
    /// First byte past the slot array.
    #[inline]
    fn free_start(&self) -> usize {
        self.slots_start() + self.slot_size * self.slot_count
    }
    /// Contiguous free bytes between the slot array and the heap.
    #[inline]
    fn contiguous(&self) -> usize {
        self.free_end - self.free_start()
    }
    /// Free bytes once the heap is compacted.
    #[inline]
    fn total_free(&self) -> usize {
        self.contiguous() + self.frag
    }
    /// Byte offset of slot `slot`'s entry.
    #[inline]
    fn slot_pos(&self, slot: usize) -> usize {
        self.slots_start() + self.slot_size * slot
    }
    /// Size in bytes of the heap `[free_end, page_len)`.
    #[inline]
    fn heap_len(&self) -> usize {
        self.page_len - self.free_end
    }

    fn corrupt(&self, reason: impl Into<String>) -> Error {
        Error::corruption(self.page_id, reason)
    }

    /// `InvalidArgument` unless `slot < slot_count`.
    #[inline(always)]
    fn check_slot(&self, slot: usize) -> Result<()> {
        if slot < self.slot_count {
            Ok(())
        } else {
            Err(Error::invalid(
                "slot",
                format!(
                    "slot {slot} is out of range: page {} has {} slots",
                    self.page_id, self.slot_count
                ),
            ))
        }
    }

    /// Reads slot `slot`'s entry and checks that its record lies inside the heap (slotted
    /// rule 5 bounds). Returns `(offset, length)` in bytes.
    #[inline(always)]
    fn slot_entry<P: PageRead + ?Sized>(&self, page: &P, slot: usize) -> Result<(usize, usize)> {
        self.check_slot(slot)?;
        // In bounds: slot < slot_count and free_start() <= page_len (checked by `read`).
        // One 4-byte read (a single load from a frame: slots are 4-byte aligned).
        self.entry_of(slot, page.u32_at(self.slot_pos(slot)))
    }

    /// Decodes `raw`, the first four bytes of slot `slot`, and checks the record as
    /// [`Head::slot_entry`] does. Returns `(offset, length)` in bytes.
    #[inline(always)]
    fn entry_of(&self, slot: usize, raw: u32) -> Result<(usize, usize)> {
        let offset = decode_offset(raw as u16);
        let len = (raw >> 16) as usize;
        if offset < self.free_end || offset + len > self.page_len {
            return Err(self.corrupt(format!(
                "slot {slot}: record [{offset}, {}) lies outside the record heap [{}, {})",
                offset + len,
                self.free_end,
                self.page_len
            )));
        }
        Ok((offset, len))
    }

    /// Decodes the slotted header of `page` and checks slotted rules 1–4 and that
    /// `frag_bytes` fits the heap; errors name `page_id`.
    #[inline(always)]
    fn read<P: PageRead + ?Sized>(page: &P, page_id: PageId) -> Result<Head> {
        let page_len = page.page_len();
        if !page_len.is_power_of_two()
            || !(PAGE_SIZE_MIN_BYTES..=PAGE_SIZE_MAX_BYTES).contains(&page_len)
        {
            return Err(Error::corruption(
                page_id,
                format!(
                    "page length {page_len} bytes is not a power of two from \
                     {PAGE_SIZE_MIN_BYTES} to {PAGE_SIZE_MAX_BYTES}"
                ),
            ));
        }
        let version = header::format_version(page);
        if version != PAGE_FORMAT_VERSION {
            return Err(Error::corruption(
                page_id,
                header::version_mismatch(version),
            ));
        }
        let type_raw = header::page_type_raw(page);
        if !PageType::from_u8(type_raw).is_some_and(uses_slotted_layout) {
            return Err(Error::corruption(
                page_id,
                format!("page type {type_raw} does not use the slotted layout"),
            ));
        }
        // Two aligned 8-byte loads (one each from a frame) rather than a 16-byte copy.
        let mut raw = [0u8; SLOTTED_HEADER_SIZE];
        raw[..8].copy_from_slice(&page.u64_at(HEADER_SIZE).to_le_bytes());
        raw[8..].copy_from_slice(&page.u64_at(HEADER_SIZE + 8).to_le_bytes());
        let field =
            |off: usize| u16::from_le_bytes([raw[off - HEADER_SIZE], raw[off - HEADER_SIZE + 1]]);
        let special_len = field(OFF_SPECIAL_LEN) as usize;
        if special_len > SPECIAL_MAX_BYTES {
            return Err(Error::corruption(
                page_id,
                format!("special area of {special_len} bytes exceeds the maximum of {SPECIAL_MAX_BYTES}"),
            ));
        }
        let slot_size = match raw[OFF_SLOT_FORMAT - HEADER_SIZE] {
            SLOTS_PLAIN => SLOT_SIZE,
            SLOTS_HINTED => HINTED_SLOT_SIZE,
            other => {
                return Err(Error::corruption(
                    page_id,
                    format!("unknown slot format {other} (0 = plain, 1 = hinted)"),
                ))
            }
        };
        let head = Head {
            page_id,
            page_len,
            special_len,
            slot_size,
            slot_count: field(OFF_SLOT_COUNT) as usize,
            free_end: decode_offset(field(OFF_FREE_END)),
            frag: field(OFF_FRAG) as usize,
        };
        let slots_end = head.free_start();
        if slots_end > page_len {
            return Err(head.corrupt(format!(
                "slot array of {} slots ends at byte {slots_end}, past the page end {page_len}",
                head.slot_count
            )));
        }
        let free_start = decode_offset(field(OFF_FREE_START));
        if free_start != slots_end {
            return Err(head.corrupt(format!(
                "free_start {free_start} is not the end of the slot array {slots_end}"
            )));
        }
        if head.free_end < free_start || head.free_end > page_len {
            return Err(head.corrupt(format!(
                "free_end {} lies outside [free_start {free_start}, page end {page_len}]",
                head.free_end
            )));
        }
        if head.frag > head.heap_len() {
            return Err(head.corrupt(format!(
                "{} fragmented bytes exceed the record heap of {} bytes",
                head.frag,
                head.heap_len()
            )));
        }
        Ok(head)
    }
}

/// Checks every slotted rule on `page`, which should be page `page_id`: the header fields,
/// then every slot, then the free-space accounting. O(n log n) in the number of slots; meant
/// for tests, `shoal verify` and debugging, not for hot paths (STYLE.md practice 7).
///
/// # Errors
/// [`Error::Corruption`] naming `page_id` and the first problem found: an unsupported page
/// length, a header that names another page, an unsupported format version, a page type
/// without the slotted layout, a header field out of range, a record outside the heap, a
/// zero-length record not stored at `page_size`, two overlapping records, a fragmented-byte
/// count that does not match the heap, a non-zero reserved byte, or a `last_hint` that is not
/// the last slot's hint.
pub fn check<P: PageRead + ?Sized>(page: &P, page_id: PageId) -> Result<()> {
    let page_len = page.page_len();
    if page_len >= HEADER_SIZE {
        let named = header::page_id(page);
        if named != page_id {
            return Err(Error::corruption(
                page_id,
                format!("header names page {named}: misdirected write or wrong frame"),
            ));
        }
    }
    let head = Head::read(page, page_id)?;
    let mut reserved = [0u8; RESERVED_LEN];
    page.read_into(OFF_RESERVED, &mut reserved);
    if reserved != [0u8; RESERVED_LEN] {
        return Err(head.corrupt(format!(
            "reserved bytes [{OFF_RESERVED}, {LAST_HINT_OFFSET}) are not zero: {reserved:02x?}"
        )));
    }
    if let Some(problem) = Slotted::from_parts(page, head).last_hint_problem() {
        return Err(head.corrupt(problem));
    }
    // (offset, length, slot) of every non-empty record.
    let mut records = Vec::with_capacity(head.slot_count);
    let mut live_bytes = 0;
    for slot in 0..head.slot_count {
        let (offset, len) = head.slot_entry(page, slot)?;
        if len == 0 {
            if offset != page_len {
                return Err(head.corrupt(format!(
                    "slot {slot}: zero-length record stored at offset {offset}, not at the page \
                     end {page_len}"
                )));
            }
        } else {
            records.push((offset, len, slot));
            live_bytes += len;
        }
    }
    check_disjoint(&head, &mut records)?;
    if head.frag + live_bytes != head.heap_len() {
        return Err(head.corrupt(format!(
            "{} fragmented bytes plus {live_bytes} record bytes do not fill the record heap of {} \
             bytes",
            head.frag,
            head.heap_len()
        )));
    }
    Ok(())
}

/// Sorts `records` (offset, length, slot) by offset, highest first, and checks that no two
/// overlap (slotted rule 6).
fn check_disjoint(head: &Head, records: &mut [(usize, usize, usize)]) -> Result<()> {
    records.sort_unstable_by_key(|r| std::cmp::Reverse(r.0));
    for pair in records.windows(2) {
        let (upper, lower) = (pair[0], pair[1]);
        if lower.0 + lower.1 > upper.0 {
            return Err(head.corrupt(format!(
                "records of slots {} [{}, {}) and {} [{}, {}) overlap",
                lower.2,
                lower.0,
                lower.0 + lower.1,
                upper.2,
                upper.0,
                upper.0 + upper.1
            )));
        }
    }
    Ok(())
}
