//! The read view of a slotted page.

use super::{Head, HINTED_SLOT_SIZE, LAST_HINT_OFFSET, SLOT_SIZE};
use crate::error::Result;
use crate::page::bytes::PageRead;
use crate::page::header::{self, HEADER_SIZE};
use crate::types::PageId;
use std::cmp::Ordering;
use std::ops::Range;

/// Bytes before and after a guessed record that [`Slotted::prefetch_record_in_order`] also
/// prefetches, for records whose lengths vary a little around their average.
pub(super) const RECORD_GUESS_SLACK: usize = 16;
/// Lines [`Slotted::prefetch_record_in_order`] prefetches at most.
const RECORD_GUESS_MAX_LINES: usize = 4;

/// A read view of a slotted page: the slotted header decoded and checked once by
/// [`Slotted::open`], then O(1) accessors that each check the slot they read.
///
/// Works on any [`PageRead`]: `[u8]` (with the zero-copy [`Slotted::get_slice`]) and frames
/// read through `AtomicBytes` or `AtomicBytesMut`. The decoded header is a snapshot: under
/// an optimistic latch the page may change meanwhile, which the bounds checks make harmless
/// and the latch validation detects.
pub struct Slotted<'a, P: PageRead + ?Sized> {
    page: &'a P,
    head: Head,
}

impl<P: PageRead + ?Sized> Clone for Slotted<'_, P> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<P: PageRead + ?Sized> Copy for Slotted<'_, P> {}

impl<'a, P: PageRead + ?Sized> Slotted<'a, P> {
    /// Opens a view of `page`, checking in O(1) the page length, format version, page type
    /// and slotted header fields (slotted rules 1–4). Errors name the page id found in the
    /// header (the frame's own id, by header rule H2).
    ///
    /// # Errors
    /// [`crate::Error::Corruption`] if a checked field is out of range.
    #[inline(always)]
    pub fn open(page: &'a P) -> Result<Self> {
        let page_id = if page.page_len() >= HEADER_SIZE {
            header::page_id(page)
        } else {
            PageId::INVALID
        };
        Ok(Slotted {
            page,
            head: Head::read(page, page_id)?,
        })
    }

    pub(super) fn from_parts(page: &'a P, head: Head) -> Self {
        Slotted { page, head }
    }

    pub(super) fn head(&self) -> Head {
        self.head
    }

    /// The page id the errors of this view name.
    pub fn page_id(&self) -> PageId {
        self.head.page_id
    }

    /// The underlying page, for reading fields of the common header.
    pub fn page(&self) -> &'a P {
        self.page
    }

    /// Number of slots (records) on the page.
    pub fn slot_count(&self) -> usize {
        self.head.slot_count
    }

    /// Bytes of one slot: [`SLOT_SIZE`] on a plain page, [`HINTED_SLOT_SIZE`] on a hinted one.
    pub fn slot_size(&self) -> usize {
        self.head.slot_size
    }

    /// Slot `slot`'s hint: 0 on a plain page. One aligned 4-byte read, no record access.
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] if `slot >= slot_count()`.
    #[inline]
    pub fn hint(&self, slot: usize) -> Result<u32> {
        self.head.check_slot(slot)?;
        if self.head.slot_size != HINTED_SLOT_SIZE {
            return Ok(0);
        }
        // In bounds: slot < slot_count and the slot array ends inside the page (`Head::read`).
        Ok(self.page.u32_at(self.head.slot_pos(slot) + SLOT_SIZE))
    }

    /// `last_hint` as stored (slotted rule 9): the last slot's hint on a hinted page with
    /// slots, else 0. Not checked against the slot here (that is [`super::check`]'s job): a
    /// search uses it only as a bound.
    #[inline]
    pub fn last_hint(&self) -> u32 {
        self.page.u32_at(LAST_HINT_OFFSET)
    }

    /// What slotted rule 9 requires `last_hint` to be: the last slot's hint on a hinted
    /// page with slots, else 0.
    pub(super) fn required_last_hint(&self) -> u32 {
        match self.head.slot_count {
            n if n > 0 && self.head.slot_size == HINTED_SLOT_SIZE => {
                // In bounds: the slot array ends inside the page (`Head::read`).
                self.page.u32_at(self.head.slot_pos(n - 1) + SLOT_SIZE)
            }
            _ => 0,
        }
    }

    /// Slotted rule 9: `None` if `last_hint` is the last slot's hint (0 on a plain page or
    /// one without slots), else a description of the mismatch. O(1); for checkers
    /// ([`super::check`], the B-tree's `verify`).
    pub fn last_hint_problem(&self) -> Option<String> {
        let (got, want) = (self.last_hint(), self.required_last_hint());
        (got != want).then(|| {
            format!(
                "last_hint is {got:#010x}, but the last slot's hint is {want:#010x} (slotted \
                 rule 9)"
            )
        })
    }

    /// Size of the special area in bytes, as set by `init`.
    pub fn special_len(&self) -> usize {
        self.head.special_len
    }

    /// Byte range of the special area within the page.
    pub fn special_range(&self) -> Range<usize> {
        let start = self.head.slots_start() - self.head.special_len;
        start..start + self.head.special_len
    }

    /// Copies `dst.len()` bytes starting `offset` bytes into the special area into `dst`.
    ///
    /// # Errors
    /// [`crate::Error::Corruption`] if the range does not lie inside the special area (whose
    /// length comes from the page, so a corrupt page can make it shorter than the access
    /// method expects).
    pub fn read_special(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        let range = self.special_subrange(offset, dst.len())?;
        self.page.read_into(range.start, dst);
        Ok(())
    }

    pub(super) fn special_subrange(&self, offset: usize, len: usize) -> Result<Range<usize>> {
        let special = self.special_range();
        match offset.checked_add(len) {
            Some(end) if end <= special.len() => Ok(special.start + offset..special.start + end),
            _ => Err(self.head.corrupt(format!(
                "access to bytes [{offset}, {}) of a special area of {} bytes",
                offset.saturating_add(len),
                special.len()
            ))),
        }
    }

    /// The byte range within the page of slot `slot`'s record, checked to lie inside the
    /// record heap. For callers that parse a record in place through [`PageRead`].
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] if `slot >= slot_count()`;
    /// [`crate::Error::Corruption`] if the slot points outside the record heap.
    #[inline(always)]
    pub fn record_range(&self, slot: usize) -> Result<Range<usize>> {
        let (offset, len) = self.head.slot_entry(self.page, slot)?;
        Ok(offset..offset + len)
    }

    /// Length in bytes of slot `slot`'s record.
    ///
    /// # Errors
    /// As [`Slotted::record_range`].
    pub fn record_len(&self, slot: usize) -> Result<usize> {
        Ok(self.record_range(slot)?.len())
    }

    /// Copies slot `slot`'s record into a new vector.
    ///
    /// # Errors
    /// As [`Slotted::record_range`].
    pub fn get(&self, slot: usize) -> Result<Vec<u8>> {
        let range = self.record_range(slot)?;
        Ok(self.page.to_vec(range.start, range.len()))
    }

    /// Replaces the contents of `dst` with slot `slot`'s record, reusing its allocation.
    ///
    /// # Errors
    /// As [`Slotted::record_range`]; `dst` is left unchanged on error.
    pub fn read_record(&self, slot: usize, dst: &mut Vec<u8>) -> Result<()> {
        let range = self.record_range(slot)?;
        dst.clear();
        dst.resize(range.len(), 0);
        self.page.read_into(range.start, dst);
        Ok(())
    }

    /// Compares slot `slot`'s record byte-wise (as `[u8]::cmp` does) with `key`, without
    /// copying the record: what a binary search over sorted slots needs.
    ///
    /// # Errors
    /// As [`Slotted::record_range`].
    pub fn compare(&self, slot: usize, key: &[u8]) -> Result<Ordering> {
        let range = self.record_range(slot)?;
        let common = range.len().min(key.len());
        let mut chunk = [0u8; 128];
        let mut done = 0;
        while done < common {
            let n = (common - done).min(chunk.len());
            self.page.read_into(range.start + done, &mut chunk[..n]);
            match chunk[..n].cmp(&key[done..done + n]) {
                Ordering::Equal => done += n,
                unequal => return Ok(unequal),
            }
        }
        Ok(range.len().cmp(&key.len()))
    }

    /// Contiguous free bytes between the slot array and the record heap. An insert of a
    /// record of `len` bytes needs no compaction if `len + slot_size() <= free_space()`.
    pub fn free_space(&self) -> usize {
        self.head.contiguous()
    }

    /// Prefetches the lines that [`super::SlottedMut::insert`] of a `len`-byte record at
    /// `slot` will write: the slots from `slot` to the end of the array (shifted up by one)
    /// and, where the record fits without compaction, its place at the bottom of the heap.
    /// A caller that has other work before the insert (a B-tree encodes and appends the log
    /// record first) overlaps these cache misses with it. Changes nothing and never fails;
    /// a `slot` past the array is taken as an append (the new slot's line only).
    #[inline]
    pub fn prefetch_insert(&self, slot: usize, len: usize) {
        /// Bytes between prefetches: one cache line.
        const LINE: usize = 64;
        /// At most this many slot-array lines are prefetched (an 8 KiB page of hinted slots
        /// has at most 128); the hardware prefetcher follows a longer shift.
        const MAX_SLOT_LINES: usize = 16;
        let h = &self.head;
        let needed = len + h.slot_size;
        if needed <= h.contiguous() {
            let at = h.free_end - len;
            self.page.prefetch(at);
            self.page.prefetch(h.free_end.saturating_sub(1));
        }
        let end = h.free_start() + h.slot_size;
        let mut pos = h.slot_pos(slot.min(h.slot_count)) / LINE * LINE;
        for _ in 0..MAX_SLOT_LINES {
            if pos >= end {
                break;
            }
            self.page.prefetch(pos);
            pos += LINE;
        }
    }

    /// Where slot `slot`'s record and the `before` records before it in slot order lie if
    /// the heap holds the records of slots `first..slot_count` in slot order, growing down
    /// from the page's end — the order in which a page built by appends, or rebuilt whole,
    /// places them — each of the average length (the heap's bytes, less those of the slots
    /// before `first` and the fragmented bytes, over the rest): a byte range of the page,
    /// widened by `RECORD_GUESS_SLACK` bytes either side for lengths that vary a little.
    /// `before` counts at most the `slot - first` records of the run before `slot`. `None`
    /// if `slot` is not in `first..slot_count`.
    /// Reads the header and the slots before `first` only. A guess: on a page whose records
    /// lie in another order it names other bytes of the page, never bytes outside it.
    #[inline]
    pub fn guess_record_in_order(
        &self,
        first: usize,
        slot: usize,
        before: usize,
    ) -> Option<Range<usize>> {
        let (free_end, avg) = self.record_layout(first)?;
        let h = &self.head;
        record_guess(
            h.page_len,
            free_end,
            avg,
            h.slot_count - first,
            slot.checked_sub(first)?,
            before,
        )
    }

    /// What [`Slotted::guess_record_in_order`] needs of the page besides the slot: the
    /// start of the heap and the average length of the records of slots `first..`, in
    /// 1/65536ths of a byte. `None` if no slot is at or past `first`. Reads the header and
    /// the slots before `first` only; for `record_guess` now or later (a summary of the
    /// page kept where a reader finds it before the page's own lines).
    #[inline]
    pub fn record_layout(&self, first: usize) -> Option<(usize, usize)> {
        let h = &self.head;
        if first >= h.slot_count {
            return None;
        }
        // Bytes of the records of `first..slot_count`; below 2^16 (Head::read checked
        // free_end <= page_len <= 65536), so nothing below overflows.
        let mut heap = h.page_len.checked_sub(h.free_end)?.saturating_sub(h.frag);
        for s in 0..first {
            // The length half of the slot, read without `record_len`'s checks of the
            // record's place: a guess needs only the number (in bounds: s < slot_count).
            heap = heap.saturating_sub((self.page.u32_at(h.slot_pos(s)) >> 16) as usize);
        }
        // The average record length in 1/65536ths of a byte: one division.
        Some((h.free_end, (heap << 16) / (h.slot_count - first)))
    }

    /// Prefetches the lines of [`Slotted::guess_record_in_order`]'s range, at most
    /// `RECORD_GUESS_MAX_LINES` from its start. A search that knows roughly which slot it
    /// will read (an interpolated guess) so starts the record's cache miss before the
    /// slot's own miss says where the record is. Advisory: changes nothing, never fails.
    #[inline]
    pub fn prefetch_record_in_order(&self, first: usize, slot: usize, before: usize) {
        if let Some(r) = self.guess_record_in_order(first, slot, before) {
            prefetch_lines(self.page, r);
        }
    }

    /// Free bytes after compaction: [`Slotted::free_space`] plus the fragmented bytes. Equals
    /// `capacity_bytes(page_size, special_len) - used_space()`.
    pub fn free_space_total(&self) -> usize {
        self.head.total_free()
    }

    /// Bytes taken by slots and records: `slot_size() * slot_count()` plus the record lengths
    /// (as the header accounts them; exact on a page that passes `check`).
    pub fn used_space(&self) -> usize {
        // No underflow: `Head::read` checked frag <= heap, so total_free <= page_len - slots_start.
        self.head.page_len - self.head.slots_start() - self.head.total_free()
    }

    /// Whether inserting one more record of `len` bytes would succeed (after compaction, which
    /// the insert does by itself): `len + slot_size() <= free_space_total()`.
    pub fn can_fit(&self, len: usize) -> bool {
        len.saturating_add(self.head.slot_size) <= self.free_space_total()
    }
}

/// The byte range [`Slotted::guess_record_in_order`] guesses, from a page's
/// [`Slotted::record_layout`] (`free_end`, `avg` in 1/65536ths of a byte) on a page of
/// `page_len` bytes: the record of the `i`-th of `n` slots in slot order (counted from the
/// layout's `first`) and the `before` records before it. `None` if `i >= n`. Pure
/// arithmetic: any inputs give a range inside `0..page_len`.
#[inline]
pub(crate) fn record_guess(
    page_len: usize,
    free_end: usize,
    avg: usize,
    n: usize,
    i: usize,
    before: usize,
) -> Option<Range<usize>> {
    if i >= n {
        return None;
    }
    // Saturating: the inputs may come from a stale summary, not from this page's header.
    let at = free_end.saturating_add((n - 1 - i).saturating_mul(avg) >> 16);
    let records = before.min(i) + 1;
    let end = at
        .saturating_add(records.saturating_mul(avg) >> 16)
        .saturating_add(RECORD_GUESS_SLACK);
    Some(at.saturating_sub(RECORD_GUESS_SLACK).min(page_len)..end.min(page_len))
}

/// Prefetches the lines of `r` on `page`, at most `RECORD_GUESS_MAX_LINES` from its start
/// (the lines of a [`record_guess`]). Advisory.
#[inline]
pub(crate) fn prefetch_lines<P: PageRead + ?Sized>(page: &P, r: Range<usize>) {
    const LINE: usize = 64;
    let mut pos = r.start / LINE * LINE;
    let end = r.end.min(pos.saturating_add(RECORD_GUESS_MAX_LINES * LINE));
    while pos < end {
        page.prefetch(pos);
        pos += LINE;
    }
}

impl<'a> Slotted<'a, [u8]> {
    /// Slot `slot`'s record as a slice of the page, without copying.
    ///
    /// # Errors
    /// As [`Slotted::record_range`].
    pub fn get_slice(&self, slot: usize) -> Result<&'a [u8]> {
        let range = self.record_range(slot)?;
        Ok(&self.page[range])
    }
}
