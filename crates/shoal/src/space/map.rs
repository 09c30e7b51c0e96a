//! Space-map pages: one bit per page, one 64-bit word per extent.
//!
//! ```text
//! offset size field (after the 32-byte common page header)
//!     32    8 group          index g of the group this map covers: pages [g*G, (g+1)*G)
//!     40   24 reserved       0
//!     64  G/8 bitmap         word e (little-endian u64) = extent e of the group;
//!                            bit i of word e set  <=>  page g*G + 64e + i is allocated
//! ```
//! The map page of group 0 is page 1 (page 0 is the file header); that of group g ≥ 1 is
//! page g*G. Map and header pages are marked allocated in their own bitmaps.

use crate::page::{PageRead, PageWrite, HEADER_SIZE};

/// Byte offset of the bitmap in a space-map page.
pub const BITMAP_OFFSET: usize = HEADER_SIZE + 32;
const OFF_GROUP: usize = HEADER_SIZE;

/// The page id of group `g`'s map page for groups of `group_pages` pages.
pub fn map_page_of_group(g: u64, group_pages: u64) -> u64 {
    if g == 0 {
        1
    } else {
        g * group_pages
    }
}

/// Bits of the metadata pages at the start of group `g` (set at format time).
pub fn metadata_mask(g: u64) -> u64 {
    if g == 0 {
        0b11
    } else {
        0b1
    }
}

/// Initialises a map page body for group `g` (the common header is set by the caller).
pub fn init<P: PageWrite + ?Sized>(page: &mut P, g: u64) {
    page.put_u64(OFF_GROUP, g);
    page.put_u64(BITMAP_OFFSET, metadata_mask(g));
}

/// The group index recorded in a map page.
pub fn group_of<P: PageRead + ?Sized>(page: &P) -> u64 {
    page.u64_at(OFF_GROUP)
}

/// Allocation word of extent `e` of the group.
#[inline]
pub fn word<P: PageRead + ?Sized>(page: &P, e: u64) -> u64 {
    page.u64_at(BITMAP_OFFSET + 8 * e as usize)
}

/// Stores the allocation word of extent `e`.
#[inline]
pub fn set_word<P: PageWrite + ?Sized>(page: &mut P, e: u64, w: u64) {
    page.put_u64(BITMAP_OFFSET + 8 * e as usize, w);
}
