//! Writing slotted pages: `init` and the [`SlottedMut`] view.

use super::{
    encode_offset, uses_slotted_layout, Head, NoRoom, Slotted, HINTED_SLOT_SIZE, LAST_HINT_OFFSET,
    OFF_SLOT_COUNT, OFF_SLOT_FORMAT, OFF_SPECIAL_LEN, SLOTS_HINTED, SLOTS_PLAIN, SLOT_SIZE,
    SPECIAL_MAX_BYTES,
};
use crate::error::{Error, Result};
use crate::options::{PAGE_SIZE_MAX_BYTES, PAGE_SIZE_MIN_BYTES};
use crate::page::bytes::PageWrite;
use crate::page::header::{self, PageType};
use crate::types::PageId;

/// Formats `page` as an empty slotted page `page_id` of type `page_type` with a zeroed special
/// area of `special_bytes` bytes: writes the common header (page LSN 0), zeroes the rest of
/// the page, and returns a write view of it.
///
/// # Panics
/// If the page length is not a power of two from 4096 to 65536 bytes, if `page_type` does not
/// use the slotted layout, or if `special_bytes > SPECIAL_MAX_BYTES` — all programmer errors.
pub fn init<P: PageWrite + ?Sized>(
    page: &mut P,
    page_id: PageId,
    page_type: PageType,
    special_bytes: usize,
) -> SlottedMut<'_, P> {
    init_format(page, page_id, page_type, special_bytes, SLOTS_PLAIN)
}

/// As [`init`], but with 8-byte slots that carry a 4-byte hint each (module doc, "Hinted
/// pages"): [`SlottedMut::insert_hinted`] sets a record's hint, [`Slotted::hint`] reads it.
///
/// # Panics
/// As [`init`].
pub fn init_hinted<P: PageWrite + ?Sized>(
    page: &mut P,
    page_id: PageId,
    page_type: PageType,
    special_bytes: usize,
) -> SlottedMut<'_, P> {
    init_format(page, page_id, page_type, special_bytes, SLOTS_HINTED)
}

fn init_format<P: PageWrite + ?Sized>(
    page: &mut P,
    page_id: PageId,
    page_type: PageType,
    special_bytes: usize,
    slot_format: u8,
) -> SlottedMut<'_, P> {
    let page_len = page.page_len();
    assert!(
        page_len.is_power_of_two()
            && (PAGE_SIZE_MIN_BYTES..=PAGE_SIZE_MAX_BYTES).contains(&page_len),
        "unsupported page length {page_len}"
    );
    assert!(
        uses_slotted_layout(page_type),
        "{page_type:?} pages do not use the slotted layout"
    );
    assert!(
        special_bytes <= SPECIAL_MAX_BYTES,
        "special area of {special_bytes} bytes exceeds {SPECIAL_MAX_BYTES}"
    );
    header::init(page, page_id, page_type);
    page.put_u16(OFF_SPECIAL_LEN, special_bytes as u16);
    page.write_from(OFF_SLOT_FORMAT, &[slot_format]);
    let mut view = SlottedMut {
        page,
        head: Head {
            page_id,
            page_len,
            special_len: special_bytes,
            slot_size: if slot_format == SLOTS_HINTED {
                HINTED_SLOT_SIZE
            } else {
                SLOT_SIZE
            },
            slot_count: 0,
            free_end: page_len,
            frag: 0,
        },
    };
    view.store_head();
    view
}

/// A write view of a slotted page, for the holder of the frame's X latch (or the owner of a
/// private buffer). Keeps the decoded slotted header and writes it back after every change.
///
/// Every mutator either completes or returns with the page unchanged: on
/// [`Error::InvalidArgument`], on [`Error::Corruption`] (found before anything is written)
/// and on `Ok(Err(NoRoom))`.
pub struct SlottedMut<'a, P: PageWrite + ?Sized> {
    page: &'a mut P,
    head: Head,
}

impl<'a, P: PageWrite + ?Sized> SlottedMut<'a, P> {
    /// Opens a write view, with the same O(1) checks as [`Slotted::open`].
    ///
    /// # Errors
    /// [`Error::Corruption`] if a checked header field is out of range.
    pub fn open(page: &'a mut P) -> Result<Self> {
        let head = Slotted::open(&*page)?.head();
        Ok(SlottedMut { page, head })
    }

    /// A read view of the current state (all of [`Slotted`]'s accessors).
    pub fn view(&self) -> Slotted<'_, P> {
        Slotted::from_parts(&*self.page, self.head)
    }

    /// Number of slots; see [`Slotted::slot_count`].
    pub fn slot_count(&self) -> usize {
        self.head.slot_count
    }

    /// Copies slot `slot`'s record; see [`Slotted::get`].
    ///
    /// # Errors
    /// As [`Slotted::record_range`].
    pub fn get(&self, slot: usize) -> Result<Vec<u8>> {
        self.view().get(slot)
    }

    /// See [`Slotted::can_fit`].
    pub fn can_fit(&self, len: usize) -> bool {
        self.view().can_fit(len)
    }

    /// Copies `src` into the special area, starting `offset` bytes into it.
    ///
    /// # Errors
    /// [`Error::Corruption`] if the range does not lie inside the special area (nothing is
    /// written).
    pub fn write_special(&mut self, offset: usize, src: &[u8]) -> Result<()> {
        let range = self.view().special_subrange(offset, src.len())?;
        self.page.write_from(range.start, src);
        Ok(())
    }

    /// Inserts `record` as slot `slot`, shifting slots `slot..` up by one; compacts first if
    /// the free space suffices only after compaction.
    ///
    /// # Errors
    /// `Ok(Err(NoRoom))` if `record.len() + slot_size() > free_space_total()`;
    /// [`Error::InvalidArgument`] if `slot > slot_count()`; [`Error::Corruption`] if a needed
    /// compaction finds the page corrupt. The page is unchanged in all three cases.
    pub fn insert(&mut self, slot: usize, record: &[u8]) -> Result<Result<(), NoRoom>> {
        self.insert_hinted(slot, record, 0)
    }

    /// As [`SlottedMut::insert`], and sets the new slot's hint to `hint` on a hinted page
    /// (on a plain page the hint is dropped).
    ///
    /// # Errors
    /// As [`SlottedMut::insert`].
    pub fn insert_hinted(
        &mut self,
        slot: usize,
        record: &[u8],
        hint: u32,
    ) -> Result<Result<(), NoRoom>> {
        if slot > self.head.slot_count {
            return Err(Error::invalid(
                "slot",
                format!(
                    "insert at slot {slot}: page {} has only {} slots",
                    self.head.page_id, self.head.slot_count
                ),
            ));
        }
        if let Err(no) = self.make_room(record.len().saturating_add(self.head.slot_size))? {
            return Ok(Err(no));
        }
        let offset = self.alloc(record.len());
        self.page.write_from(offset, record);
        let pos = self.head.slot_pos(slot);
        let slots_end = self.head.free_start();
        self.page
            .copy_within(pos..slots_end, pos + self.head.slot_size);
        self.write_slot_hinted(slot, offset, record.len(), hint);
        self.head.slot_count += 1;
        self.store_head();
        if slot + 1 == self.head.slot_count {
            self.store_last_hint(); // slotted rule 9: the new slot is the last one
        }
        Ok(Ok(()))
    }

    /// Makes `needed_bytes` of contiguous free space, compacting if the free space holds
    /// them only once compacted; `Ok(Err(NoRoom))` (page unchanged) if it does not hold them.
    ///
    /// # Errors
    /// [`Error::Corruption`] if the needed compaction finds the page corrupt (page unchanged).
    fn make_room(&mut self, needed_bytes: usize) -> Result<Result<(), NoRoom>> {
        let free_bytes = self.head.total_free();
        if needed_bytes > free_bytes {
            return Ok(Err(NoRoom {
                needed_bytes,
                free_bytes,
            }));
        }
        if needed_bytes > self.head.contiguous() {
            self.compact_except(None)?;
        }
        Ok(Ok(()))
    }

    /// Appends `records` (each with its hint; on a plain page the hints are dropped) as
    /// slots `slot_count()..` in order, storing the slotted header once at the end instead
    /// of once per record: how a split or a `FORMAT` log record fills a new node (a loop of
    /// [`SlottedMut::insert_hinted`] cost a 150-entry leaf about 75,000 instructions,
    /// callgrind). Compacts first if the records fit only after compaction. `records` is
    /// walked twice, through a clone: once to size them, once to write them; both walks
    /// must yield the same records.
    ///
    /// # Panics
    /// If the second walk yields other lengths than the first (a programmer error).
    ///
    /// # Errors
    /// `Ok(Err(NoRoom))` if the records and their slots together exceed
    /// `free_space_total()`; [`Error::Corruption`] if a needed compaction finds the page
    /// corrupt. The page is unchanged in both cases.
    pub fn extend_hinted<'r, I>(&mut self, records: I) -> Result<Result<(), NoRoom>>
    where
        I: IntoIterator<Item = (&'r [u8], u32)>,
        I::IntoIter: Clone,
    {
        let records = records.into_iter();
        let (count, bytes) = records.clone().fold((0usize, 0usize), |(n, b), (r, _)| {
            (n + 1, b.saturating_add(r.len()))
        });
        let needed_bytes = bytes.saturating_add(count.saturating_mul(self.head.slot_size));
        if let Err(no) = self.make_room(needed_bytes)? {
            return Ok(Err(no));
        }
        // Every slot written lies in the contiguous free space below the heap, and so does
        // every record allocated: `needed_bytes` fits it.
        let first = self.head.slot_count;
        let mut written = 0;
        for (i, (record, hint)) in records.take(count).enumerate() {
            // A second pass that yields longer records than the first would write into the
            // slot array: a programmer error (the clone must yield the same records).
            written += record.len();
            assert!(
                written <= bytes,
                "extend_hinted: records changed between passes"
            );
            let offset = self.alloc(record.len());
            self.page.write_from(offset, record);
            self.write_slot_hinted(first + i, offset, record.len(), hint);
        }
        assert_eq!(
            written, bytes,
            "extend_hinted: records changed between passes"
        );
        self.head.slot_count += count;
        self.store_head();
        if count > 0 {
            self.store_last_hint(); // slotted rule 9: the last record appended is last
        }
        Ok(Ok(()))
    }

    /// Removes slots `keep..slot_count()` at once, as [`SlottedMut::delete`] of each from the
    /// last would, but storing the header once: the left half of a split. A removed record
    /// at the bottom of the heap gives its bytes back to the contiguous free space, any
    /// other leaves a hole (the whole heap comes back if no record byte is left).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `keep > slot_count()`; [`Error::Corruption`] if a
    /// removed slot points outside the heap or the freed bytes overflow the heap (page
    /// unchanged).
    pub fn truncate(&mut self, keep: usize) -> Result<()> {
        if keep > self.head.slot_count {
            return Err(Error::invalid(
                "keep",
                format!(
                    "truncate to {keep} slots: page {} has only {}",
                    self.head.page_id, self.head.slot_count
                ),
            ));
        }
        // From the last slot down, as `delete` of each would: a record at the bottom of the
        // heap gives its bytes back to the contiguous free space (on a page whose records
        // lie in slot order, the removed ones are all there), any other becomes a hole.
        let (mut free_end, mut frag) = (self.head.free_end, self.head.frag);
        for slot in (keep..self.head.slot_count).rev() {
            let (offset, len) = self.head.slot_entry(&*self.page, slot)?;
            if len > 0 && offset < free_end {
                return Err(self.head.corrupt(format!(
                    "slot {slot}: record [{offset}, {}) overlaps a record freed before it",
                    offset + len
                )));
            }
            let heap_len = self.head.page_len - free_end;
            if len > 0 && offset == free_end && frag <= heap_len - len {
                free_end += len;
            } else if frag + len <= heap_len {
                frag += len;
            } else {
                return Err(self.head.corrupt(format!(
                    "freeing the {len}-byte record of slot {slot} would make {} fragmented \
                     bytes in a record heap of {heap_len} bytes",
                    frag + len
                )));
            }
        }
        self.head.slot_count = keep;
        self.head.free_end = free_end;
        self.head.frag = frag;
        self.reclaim_empty_heap();
        self.store_head();
        self.store_last_hint(); // slotted rule 9: slot `keep - 1` (or none) is last now
        Ok(())
    }

    /// Appends `record` as slot `slot_count()`; see [`SlottedMut::insert`].
    ///
    /// # Errors
    /// As [`SlottedMut::insert`].
    pub fn push(&mut self, record: &[u8]) -> Result<Result<(), NoRoom>> {
        self.insert(self.head.slot_count, record)
    }

    /// Removes slot `slot`, shifting slots `slot + 1..` down by one. Its record's bytes become
    /// free: contiguous free space if the record was the lowest in the heap, fragmented free
    /// space otherwise. A page left without record bytes gets its whole heap back.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `slot >= slot_count()`; [`Error::Corruption`] if the slot
    /// points outside the heap or the free-space accounting would overflow the heap (page
    /// unchanged).
    pub fn delete(&mut self, slot: usize) -> Result<()> {
        let (offset, len) = self.head.slot_entry(&*self.page, slot)?;
        let (free_end, frag) = if len > 0 && offset == self.head.free_end {
            // The heap shrinks by `len`; the holes must still fit in it (slotted rule 7).
            if self.head.frag > self.head.heap_len() - len {
                return Err(self.head.corrupt(format!(
                    "{} fragmented bytes do not fit a record heap of {} bytes holding the \
                     {len}-byte record of slot {slot}",
                    self.head.frag,
                    self.head.heap_len()
                )));
            }
            (self.head.free_end + len, self.head.frag)
        } else {
            (self.head.free_end, self.add_frag(len)?)
        };
        let pos = self.head.slot_pos(slot);
        let slots_end = self.head.free_start();
        self.page
            .copy_within(pos + self.head.slot_size..slots_end, pos);
        self.head.slot_count -= 1;
        self.head.free_end = free_end;
        self.head.frag = frag;
        self.reclaim_empty_heap();
        self.store_head();
        if slot == self.head.slot_count {
            self.store_last_hint(); // slotted rule 9: the last slot went, its predecessor is last
        }
        Ok(())
    }

    /// Sets slot `slot`'s hint (hinted pages; a no-op on a plain page).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `slot >= slot_count()`.
    pub fn set_hint(&mut self, slot: usize, hint: u32) -> Result<()> {
        self.head.check_slot(slot)?;
        if self.head.slot_size == HINTED_SLOT_SIZE {
            self.page
                .write_from(self.head.slot_pos(slot) + SLOT_SIZE, &hint.to_le_bytes());
            if slot + 1 == self.head.slot_count {
                self.store_last_hint(); // slotted rule 9
            }
        }
        Ok(())
    }

    /// Overwrites bytes `[at, at + bytes.len())` of slot `slot`'s record with `bytes`; the
    /// record keeps its length and place, the slot its hint.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `slot >= slot_count()`; [`Error::Corruption`] if the
    /// slot points outside the heap or the range runs past the record. The page is
    /// unchanged in these cases.
    pub fn patch(&mut self, slot: usize, at: usize, bytes: &[u8]) -> Result<()> {
        let (offset, len) = self.head.slot_entry(&*self.page, slot)?;
        if at.checked_add(bytes.len()).map_or(true, |end| end > len) {
            return Err(self.head.corrupt(format!(
                "patch of bytes {at}..{} of the {len}-byte record in slot {slot}",
                at.saturating_add(bytes.len())
            )));
        }
        self.page.write_from(offset + at, bytes);
        Ok(())
    }

    /// Replaces slot `slot`'s record with `record` (its hint stays). A record that does not grow is rewritten in
    /// place (the bytes it no longer needs become fragmented); one that grows is written to
    /// new heap space, compacting the page first if needed, and its old bytes are freed.
    ///
    /// # Errors
    /// `Ok(Err(NoRoom))` if `record.len() > free_space_total() + old length`;
    /// [`Error::InvalidArgument`] if `slot >= slot_count()`; [`Error::Corruption`] if the slot
    /// points outside the heap or a needed compaction finds the page corrupt. The page is
    /// unchanged in all these cases.
    pub fn update(&mut self, slot: usize, record: &[u8]) -> Result<Result<(), NoRoom>> {
        let (old_offset, old_len) = self.head.slot_entry(&*self.page, slot)?;
        let new_len = record.len();
        if new_len <= old_len {
            let offset = if new_len == 0 {
                self.head.page_len
            } else {
                old_offset
            };
            self.head.frag = self.add_frag(old_len - new_len)?;
            self.page.write_from(offset, record);
            self.write_slot(slot, offset, new_len);
            self.reclaim_empty_heap();
            self.store_head();
            return Ok(Ok(()));
        }
        let free_bytes = self.head.total_free() + old_len;
        if new_len > free_bytes {
            return Ok(Err(NoRoom {
                needed_bytes: new_len,
                free_bytes,
            }));
        }
        if new_len <= self.head.contiguous() {
            let frag = self.add_frag(old_len)?;
            let offset = self.alloc(new_len);
            self.head.frag = frag;
            self.page.write_from(offset, record);
            self.write_slot(slot, offset, new_len);
        } else {
            // Free the old record and compact without it; nothing is written before every
            // slot has been checked.
            self.compact_except(Some(slot))?;
            let offset = self.alloc(new_len);
            self.page.write_from(offset, record);
            self.write_slot(slot, offset, new_len);
        }
        self.store_head();
        Ok(Ok(()))
    }

    /// Moves every record to the end of the page so that all free space is contiguous, keeping
    /// each record in its slot; the records then lie in slot order, slot 0's last in the
    /// page. Afterwards `free_space() == free_space_total()`.
    ///
    /// # Errors
    /// [`Error::Corruption`] if a slot points outside the heap, two records overlap, or the
    /// fragmented-byte count does not match the heap (page unchanged).
    pub fn compact(&mut self) -> Result<()> {
        self.compact_except(None)
    }

    /// Compaction: rewrites the heap with every record but `skip`'s packed against the
    /// page's end in slot order (slot 0's record last in the page, as a page built by
    /// appends has them, which is what [`Slotted::guess_record_in_order`] assumes), gives
    /// `skip`'s slot an empty record, and makes all free space contiguous.
    ///
    /// Staged in plain memory: the old heap and the slot array are read once, the new
    /// heap and the slots are built in buffers and written back with one copy each, whole
    /// words on a frame (the record-by-record form, a sort of the records by offset and a
    /// move of each, cost a 150-entry leaf about 100,000 instructions, callgrind).
    ///
    /// # Errors
    /// [`Error::Corruption`] if a slot points outside the heap, two records overlap, or the
    /// fragmented-byte count does not match the heap. Nothing is written before every slot
    /// has been checked, so the page is unchanged then.
    fn compact_except(&mut self, skip: Option<usize>) -> Result<()> {
        let h = self.head;
        let heap_len = h.heap_len();
        let slots_len = h.slot_size * h.slot_count;
        let mut slots = self.page.to_vec(h.slots_start(), slots_len);
        let old = self.page.to_vec(h.free_end, heap_len);
        // Pass 1, the checks. One bit per heap byte: which bytes a record already claims
        // (slotted rule 6).
        let mut claimed = vec![0u64; heap_len.div_ceil(64)];
        let (mut live_bytes, mut kept_bytes) = (0, 0);
        for (slot, raw) in slots.chunks_exact(h.slot_size).enumerate() {
            let (offset, len) = h.entry_of(slot, slot_word(raw))?;
            if len == 0 {
                // Stored at `page_len`, outside the heap (slotted rule 5), and left there.
                if offset != h.page_len {
                    return Err(h.corrupt(format!(
                        "slot {slot}: an empty record at offset {offset}, not the page end"
                    )));
                }
                continue;
            }
            if !claim(&mut claimed, offset - h.free_end, len) {
                return Err(h.corrupt(format!(
                    "the record of slot {slot} [{offset}, {}) overlaps another record",
                    offset + len
                )));
            }
            live_bytes += len;
            if Some(slot) != skip {
                kept_bytes += len;
            }
        }
        if h.frag + live_bytes != heap_len {
            return Err(h.corrupt(format!(
                "{} fragmented bytes plus {live_bytes} record bytes do not fill the record \
                 heap of {heap_len} bytes",
                h.frag
            )));
        }
        // Pass 2: the new heap from its lowest byte up, so the last slot's record first.
        // Every offset was checked by pass 1 (and the slot bytes are this function's copy).
        let free_end = h.page_len - kept_bytes;
        let mut new = Vec::with_capacity(kept_bytes);
        for (slot, raw) in slots.chunks_exact_mut(h.slot_size).enumerate().rev() {
            let (offset, len) = h.entry_of(slot, slot_word(raw))?;
            let (new_offset, new_len) = if len == 0 {
                continue;
            } else if Some(slot) == skip {
                (h.page_len, 0)
            } else {
                let at = offset - h.free_end;
                let new_offset = free_end + new.len();
                new.extend_from_slice(&old[at..at + len]);
                (new_offset, len)
            };
            raw[..2].copy_from_slice(&encode_offset(new_offset).to_le_bytes());
            raw[2..SLOT_SIZE].copy_from_slice(&(new_len as u16).to_le_bytes());
        }
        debug_assert_eq!(new.len(), kept_bytes);
        self.page.write_from(free_end, &new);
        self.page.write_from(h.slots_start(), &slots);
        self.head.free_end = free_end;
        self.head.frag = 0;
        self.store_head();
        Ok(())
    }

    /// `frag + bytes`, or `Corruption` if that exceeds the heap (slotted rule 7 cannot then
    /// hold: records overlap or the count was wrong).
    fn add_frag(&self, bytes: usize) -> Result<usize> {
        let frag = self.head.frag + bytes;
        if frag > self.head.heap_len() {
            return Err(self.head.corrupt(format!(
                "freeing {bytes} bytes would make {frag} fragmented bytes in a record heap of {} \
                 bytes",
                self.head.heap_len()
            )));
        }
        Ok(frag)
    }

    /// If no record byte is left in the heap (all of it is fragmented), gives the whole heap
    /// back to the contiguous free space. Zero-length records stay valid: they sit at
    /// `page_len`.
    fn reclaim_empty_heap(&mut self) {
        if self.head.frag > 0 && self.head.frag == self.head.heap_len() {
            self.head.free_end = self.head.page_len;
            self.head.frag = 0;
        }
    }

    /// Takes `len` bytes from the bottom of the contiguous free space (which must hold them)
    /// and returns their offset; a zero-length record gets offset `page_len` (slotted rule 5).
    fn alloc(&mut self, len: usize) -> usize {
        debug_assert!(len <= self.head.contiguous());
        if len == 0 {
            return self.head.page_len;
        }
        self.head.free_end -= len;
        self.head.free_end
    }

    fn write_slot(&mut self, slot: usize, offset: usize, len: usize) {
        let mut raw = [0u8; SLOT_SIZE];
        raw[..2].copy_from_slice(&encode_offset(offset).to_le_bytes());
        raw[2..].copy_from_slice(&(len as u16).to_le_bytes());
        self.page.write_from(self.head.slot_pos(slot), &raw);
    }

    /// Writes slot `slot` whole: offset and length, and on a hinted page `hint` after them,
    /// with one write: one aligned 8-byte word where the special area's length is a multiple
    /// of 8, as a B-tree node's is.
    fn write_slot_hinted(&mut self, slot: usize, offset: usize, len: usize, hint: u32) {
        if self.head.slot_size != HINTED_SLOT_SIZE {
            return self.write_slot(slot, offset, len);
        }
        let raw =
            u64::from(encode_offset(offset)) | u64::from(len as u16) << 16 | u64::from(hint) << 32;
        self.page.put_u64(self.head.slot_pos(slot), raw);
    }

    /// Copies the last slot's hint (0 when there are no slots) into `last_hint` on a hinted
    /// page (slotted rule 9); a plain page keeps 0 there. Called by every change that gives
    /// the page a different last slot or changes its hint.
    fn store_last_hint(&mut self) {
        if self.head.slot_size == HINTED_SLOT_SIZE {
            let hint = self.view().required_last_hint();
            self.page.write_from(LAST_HINT_OFFSET, &hint.to_le_bytes());
        }
    }

    /// Writes slot count, free_start, free_end and frag_bytes: one aligned 8-byte word. The
    /// slot array may end at byte 65536 (a 64 KiB page full of empty records), so free_start
    /// uses the heap-offset encoding too.
    fn store_head(&mut self) {
        let h = &self.head;
        let fields = [
            h.slot_count as u16,
            encode_offset(h.free_start()),
            encode_offset(h.free_end),
            h.frag as u16,
        ];
        let mut raw = [0u8; 8];
        for (dst, v) in raw.chunks_exact_mut(2).zip(fields) {
            dst.copy_from_slice(&v.to_le_bytes());
        }
        self.page.write_from(OFF_SLOT_COUNT, &raw);
    }
}

/// The first four bytes of a slot (offset and length), as `Head::entry_of` takes them.
fn slot_word(raw: &[u8]) -> u32 {
    u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]])
}

/// Marks bytes `[at, at + len)` (`len > 0`) in `claimed`, one bit per byte; `false` (and
/// `claimed` partly marked) if one of them was marked already.
pub(super) fn claim(claimed: &mut [u64], at: usize, len: usize) -> bool {
    let end = at + len;
    let mut pos = at;
    while pos < end {
        let (word, bit) = (pos / 64, pos % 64);
        let n = (64 - bit).min(end - pos);
        let mask = if n == 64 {
            u64::MAX
        } else {
            ((1u64 << n) - 1) << bit
        };
        if claimed[word] & mask != 0 {
            return false;
        }
        claimed[word] |= mask;
        pos += n;
    }
    true
}
