//! Full-page images: the payload of [`RecordKind::PageImage`](crate::log::record::RecordKind)
//! records, which protect data pages against torn writes (DESIGN.md §3.2; `docs/format.md`,
//! "Full-page images").
//!
//! ```text
//! offset size field
//!      0    4 flags        bit 0 SELF_LSN: the image's page LSN is the record's own LSN
//!      4    4 hole_offset  start of the omitted run of zero bytes
//!      8    4 hole_length  its length (0: no hole)
//!     12    … the page's bytes [0, hole_offset) then [hole_offset + hole_length, page size)
//! ```
//!
//! The longest run of zero bytes (in 8-byte words) is left out, as PostgreSQL leaves out the
//! hole between a page's line pointers and its tuples: a freshly formatted page costs little
//! more than its header.
//!
//! **Base LSN.** An image stands for the page as it was at its *base LSN*: the page LSN in
//! its header, or, with `SELF_LSN` (an image of a page just formatted), the image record's own
//! LSN. Redo may install an image in place of the page's disk copy and then apply every record
//! of the page with an LSN above the base (transaction rule 3 guarantees they are all in the
//! redo window).

use crate::error::{Error, Result};
use crate::page::header;
use crate::types::Lsn;

/// Bytes of the image payload header.
pub const IMAGE_HEADER_BYTES: usize = 12;
/// Flag: the image's page LSN is the LSN of the record that carries it.
pub const SELF_LSN: u32 = 1;

/// Encodes `page` as an image payload, leaving out its longest run of zero words.
pub fn encode(page: &[u8], flags: u32) -> Vec<u8> {
    let (hole_off, hole_len) = longest_zero_run(page);
    let mut out = Vec::with_capacity(IMAGE_HEADER_BYTES + page.len() - hole_len);
    out.extend_from_slice(&flags.to_le_bytes());
    out.extend_from_slice(&(hole_off as u32).to_le_bytes());
    out.extend_from_slice(&(hole_len as u32).to_le_bytes());
    out.extend_from_slice(&page[..hole_off]);
    out.extend_from_slice(&page[hole_off + hole_len..]);
    out
}

/// Bytes of the aligned blocks [`longest_zero_run`] tests for zero in one step.
const ZERO_BLOCK: usize = 64;
/// Words in a zero run long enough to contain a whole aligned block wherever it starts.
const RUN_WITH_A_BLOCK: usize = 2 * ZERO_BLOCK / 8 - 1;

/// The longest run of zero 8-byte words in `page`, as (offset, length) in bytes (the first
/// of the longest, if several).
///
/// A page image is logged at every split (the new node) and at every first change after a
/// checkpoint, and a word-by-word scan of an 8 KiB page was 2 % of the insert workload. So
/// the scan tests aligned 64-byte blocks (eight words OR-ed together, which the compiler
/// vectorises) and extends each run of zero blocks word by word at both ends: every zero
/// run of [`RUN_WITH_A_BLOCK`] words or more contains a whole block, so it is found with
/// its exact extent. Only when no run that long exists does the word-by-word scan run, to
/// find the best of the short ones; the answer is always the word scan's.
fn longest_zero_run(page: &[u8]) -> (usize, usize) {
    let word = |at: usize| u64::from_ne_bytes(page[at..at + 8].try_into().expect("8 bytes"));
    let blocks = page.len() / ZERO_BLOCK;
    let zero_block = |b: usize| {
        page[b * ZERO_BLOCK..(b + 1) * ZERO_BLOCK]
            .chunks_exact(8)
            .fold(0u64, |acc, w| {
                acc | u64::from_ne_bytes(w.try_into().expect("8 bytes"))
            })
            == 0
    };
    let words_end = page.len() / 8 * 8;
    let (mut best_off, mut best_len) = (0, 0);
    let mut b = 0;
    while b < blocks {
        if !zero_block(b) {
            b += 1;
            continue;
        }
        let first = b;
        b += 1; // block `first` was just tested
        while b < blocks && zero_block(b) {
            b += 1;
        }
        let (mut start, mut end) = (first * ZERO_BLOCK, b * ZERO_BLOCK);
        while start >= 8 && word(start - 8) == 0 {
            start -= 8;
        }
        while end + 8 <= words_end && word(end) == 0 {
            end += 8;
        }
        if end - start > best_len {
            (best_off, best_len) = (start, end - start);
        }
    }
    if best_len >= RUN_WITH_A_BLOCK * 8 {
        return (best_off, best_len);
    }
    longest_zero_run_by_words(page)
}

/// [`longest_zero_run`] word by word.
fn longest_zero_run_by_words(page: &[u8]) -> (usize, usize) {
    let (mut best_off, mut best_len, mut run_off, mut run_len) = (0, 0, 0, 0);
    for (i, w) in page.chunks_exact(8).enumerate() {
        if u64::from_ne_bytes(w.try_into().expect("8 bytes")) == 0 {
            if run_len == 0 {
                run_off = i * 8;
            }
            run_len += 8;
            if run_len > best_len {
                (best_off, best_len) = (run_off, run_len);
            }
        } else {
            run_len = 0;
        }
    }
    (best_off, best_len)
}

/// A decoded image payload (borrowing the record's bytes).
#[derive(Clone, Copy, Debug)]
pub struct ImageView<'a> {
    flags: u32,
    hole_off: usize,
    hole_len: usize,
    bytes: &'a [u8],
}

impl<'a> ImageView<'a> {
    /// Parses an image payload of a page of `page_size` bytes carried by the record at `lsn`.
    ///
    /// # Errors
    /// [`Error::LogCorruption`] naming `lsn` if the payload is too short, has unknown flags or
    /// its hole and bytes do not add up to `page_size`.
    pub fn parse(payload: &'a [u8], page_size: usize, lsn: Lsn) -> Result<ImageView<'a>> {
        let bad = |why: &str| Error::log_corruption(lsn, format!("bad page image: {why}"));
        if payload.len() < IMAGE_HEADER_BYTES {
            return Err(bad("shorter than its header"));
        }
        let word = |i: usize| u32::from_le_bytes(payload[i..i + 4].try_into().expect("4 bytes"));
        let (flags, hole_off, hole_len) = (word(0), word(4) as usize, word(8) as usize);
        if flags & !SELF_LSN != 0 {
            return Err(bad("unknown flags"));
        }
        let bytes = &payload[IMAGE_HEADER_BYTES..];
        if hole_off
            .checked_add(hole_len)
            .map_or(true, |e| e > page_size)
            || bytes.len() + hole_len != page_size
            || page_size < header::HEADER_SIZE
        {
            return Err(bad(&format!(
                "{} bytes and a {hole_len}-byte hole at {hole_off} do not make a {page_size}-byte page",
                bytes.len()
            )));
        }
        Ok(ImageView {
            flags,
            hole_off,
            hole_len,
            bytes,
        })
    }

    /// Writes the page image into `dst` (`page_size` bytes) and, for a `SELF_LSN` image,
    /// sets its page LSN to `lsn`, the LSN of the record carrying it.
    pub fn write_to(&self, dst: &mut impl crate::page::PageWrite, lsn: Lsn) {
        dst.write_from(0, &self.bytes[..self.hole_off]);
        dst.fill(self.hole_off..self.hole_off + self.hole_len, 0);
        dst.write_from(self.hole_off + self.hole_len, &self.bytes[self.hole_off..]);
        if self.flags & SELF_LSN != 0 {
            header::set_page_lsn(dst, lsn);
        }
    }

    /// The image's base LSN (see the module doc), for the record at `lsn`.
    pub fn base_lsn(&self, lsn: Lsn) -> Lsn {
        if self.flags & SELF_LSN != 0 {
            return lsn;
        }
        // The page LSN lies in the header: rebuild just its first HEADER_SIZE bytes.
        let mut head = [0u8; header::HEADER_SIZE];
        for (i, b) in head.iter_mut().enumerate() {
            *b = if i < self.hole_off {
                self.bytes[i]
            } else if i < self.hole_off + self.hole_len {
                0
            } else {
                self.bytes[i - self.hole_len]
            };
        }
        header::page_lsn(&head[..])
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Pages made of runs: each (zero?, words) appends that many zero or non-zero words.
    fn page_of(runs: &[(bool, usize)], tail: usize) -> Vec<u8> {
        let mut p = Vec::new();
        for &(zero, words) in runs {
            for i in 0..words {
                let w: u64 = if zero { 0 } else { 0x0100 + i as u64 };
                p.extend_from_slice(&w.to_ne_bytes());
            }
        }
        p.extend(std::iter::repeat(7u8).take(tail));
        p
    }

    #[test]
    fn block_scan_agrees_with_the_word_scan_on_pages_of_every_shape() {
        let cases: &[(&[(bool, usize)], usize)] = &[
            (&[], 0),
            (&[(true, 1024)], 0),
            (&[(false, 1024)], 0),
            (
                &[(false, 3), (true, 14), (false, 1), (true, 8), (false, 998)],
                0,
            ),
            (
                &[(false, 7), (true, 30), (false, 1), (true, 24), (false, 5)],
                3,
            ),
            (&[(true, 9), (false, 1), (true, 9), (false, 100)], 0),
            (&[(false, 1), (true, 1022), (false, 1)], 0),
            (
                &[(false, 5), (true, 16), (false, 2), (true, 16), (false, 3)],
                0,
            ),
        ];
        for (runs, tail) in cases {
            let p = page_of(runs, *tail);
            assert_eq!(
                longest_zero_run(&p),
                longest_zero_run_by_words(&p),
                "{runs:?}"
            );
        }
    }

    proptest! {
        #[test]
        fn block_scan_agrees_with_the_word_scan(
            runs in proptest::collection::vec((any::<bool>(), 0usize..80), 0..40),
            tail in 0usize..8,
        ) {
            let p = page_of(&runs, tail);
            prop_assert_eq!(longest_zero_run(&p), longest_zero_run_by_words(&p));
        }
    }
}
