//! The 32-byte header every page starts with (byte layout in `docs/format.md`).
//!
//! ```text
//! offset size field
//!      0    4 checksum       CRC32C (Castagnoli) of bytes [4, page_size)
//!      4    2 format_version PAGE_FORMAT_VERSION
//!      6    1 page_type      PageType
//!      7    1 flags          reserved, 0
//!      8    8 page_id        the page's own number (detects misdirected writes/reads)
//!     16    8 page_lsn       LSN of the last log record applied to the page
//!     24    8 reserved       0
//! ```
//!
//! Invariants: (H1) the checksum is computed by [`seal`] on a private copy just before the
//! page is written and checked by [`verify`] right after it is read — a frame in memory does
//! not keep a valid checksum; (H2) the page id in the header equals the page's position in
//! the file; (H3) a page of all zero bytes was never written and is reported as corrupt when
//! read, since the buffer pool only reads pages it has written.

use super::bytes::{PageRead, PageWrite};
use crate::error::{Error, Result};
use crate::types::{Lsn, PageId};

/// Size of the common page header in bytes. Type-specific headers follow it.
pub const HEADER_SIZE: usize = 32;
/// Current page format version; bumped on any change of page layout.
pub const PAGE_FORMAT_VERSION: u16 = 5;

/// The reason given for a page of format `version` where [`PAGE_FORMAT_VERSION`] was
/// expected: it says which build wrote it, and that there is no upgrade yet
/// (`docs/format.md`, "Format versioning").
pub(crate) fn version_mismatch(version: u16) -> String {
    let writer = if version < PAGE_FORMAT_VERSION && version > 0 {
        "an older build of Shoal wrote it; recreate the database (no in-place upgrade yet)"
    } else if version > PAGE_FORMAT_VERSION {
        "a newer build of Shoal wrote it"
    } else {
        "not a Shoal page, or a damaged one"
    };
    format!(
        "unsupported page format version {version} (this build reads version \
         {PAGE_FORMAT_VERSION}): {writer}"
    )
}

const OFF_CHECKSUM: usize = 0;
const OFF_VERSION: usize = 4;
const OFF_TYPE: usize = 6;
const OFF_FLAGS: usize = 7;
const OFF_PAGE_ID: usize = 8;
const OFF_PAGE_LSN: usize = 16;

/// What a page holds. Stored as one byte at offset 6.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PageType {
    /// Page 0: the file header (magic, page size, format version).
    FileHeader = 1,
    /// An allocation-map page of the space manager.
    SpaceMap = 2,
    /// A slotted page of records (see `page::slotted`), used by access methods.
    Slotted = 3,
    /// A B-tree inner node (later issue).
    BTreeInner = 4,
    /// A B-tree leaf (later issue).
    BTreeLeaf = 5,
    /// An overflow page holding part of a large value (later issue).
    Overflow = 6,
    /// Raw page used by tests and micro-benchmarks: header plus opaque bytes.
    Raw = 7,
}

impl PageType {
    /// Decodes the type byte; `None` for an unknown value.
    pub fn from_u8(v: u8) -> Option<PageType> {
        Some(match v {
            1 => PageType::FileHeader,
            2 => PageType::SpaceMap,
            3 => PageType::Slotted,
            4 => PageType::BTreeInner,
            5 => PageType::BTreeLeaf,
            6 => PageType::Overflow,
            7 => PageType::Raw,
            _ => return None,
        })
    }
}

/// Writes a fresh header for page `page_id` of type `ty` with page LSN zero and zeroes the
/// rest of the page.
pub fn init<P: PageWrite + ?Sized>(page: &mut P, page_id: PageId, ty: PageType) {
    let len = page.page_len();
    page.fill(0..len, 0);
    page.put_u16(OFF_VERSION, PAGE_FORMAT_VERSION);
    page.put_u8(OFF_TYPE, ty as u8);
    page.put_u8(OFF_FLAGS, 0);
    page.put_u64(OFF_PAGE_ID, page_id.0);
    page.put_u64(OFF_PAGE_LSN, 0);
}

/// The page id stored in the header.
pub fn page_id<P: PageRead + ?Sized>(page: &P) -> PageId {
    PageId(page.u64_at(OFF_PAGE_ID))
}

/// The page LSN stored in the header.
pub fn page_lsn<P: PageRead + ?Sized>(page: &P) -> Lsn {
    Lsn(page.u64_at(OFF_PAGE_LSN))
}

/// Sets the page LSN (STYLE.md practice 3: after the log record is appended).
pub fn set_page_lsn<P: PageWrite + ?Sized>(page: &mut P, lsn: Lsn) {
    page.put_u64(OFF_PAGE_LSN, lsn.0);
}

/// The format version stored in the header (may differ from [`PAGE_FORMAT_VERSION`] on a
/// corrupt page or one written by another version).
pub fn format_version<P: PageRead + ?Sized>(page: &P) -> u16 {
    page.u16_at(OFF_VERSION)
}

/// The raw page-type byte (may be unknown on a corrupt page).
pub fn page_type_raw<P: PageRead + ?Sized>(page: &P) -> u8 {
    page.u8_at(OFF_TYPE)
}

/// The page type, if the byte is a known one.
pub fn page_type<P: PageRead + ?Sized>(page: &P) -> Option<PageType> {
    PageType::from_u8(page_type_raw(page))
}

/// CRC32C of bytes `[4, len)` of an image.
pub fn compute_checksum(image: &[u8]) -> u32 {
    crc32c::crc32c(&image[OFF_CHECKSUM + 4..])
}

/// Stores the checksum into a private copy of a page just before it is written (rule H1).
pub fn seal(image: &mut [u8]) {
    let c = compute_checksum(image);
    image[OFF_CHECKSUM..OFF_CHECKSUM + 4].copy_from_slice(&c.to_le_bytes());
}

/// The corruption reason of a page that is all zeroes: allocated (or reserved) but never
/// written. `verify` tells such a page apart from a damaged one.
pub const NEVER_WRITTEN: &str = "page is all zeroes: it was never written";

/// Checks an image just read from disk as page `expected` (rules H1–H3).
///
/// # Errors
/// [`Error::Corruption`] naming `expected` and the reason: all zeroes (never written),
/// checksum mismatch (with both values), wrong page id (misdirected write), unknown format
/// version or unknown page type.
pub fn verify(image: &[u8], expected: PageId) -> Result<()> {
    let stored = u32::from_le_bytes(image[0..4].try_into().expect("4 bytes"));
    let computed = compute_checksum(image);
    if stored != computed {
        if image.iter().all(|&b| b == 0) {
            return Err(Error::corruption(expected, NEVER_WRITTEN));
        }
        return Err(Error::corruption(
            expected,
            format!("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"),
        ));
    }
    let id = page_id(image);
    if id != expected {
        return Err(Error::corruption(
            expected,
            format!("header names page {id}: misdirected write or read"),
        ));
    }
    let version = image.u16_at(OFF_VERSION);
    if version != PAGE_FORMAT_VERSION {
        return Err(Error::corruption(expected, version_mismatch(version)));
    }
    if page_type(image).is_none() {
        return Err(Error::corruption(
            expected,
            format!("unknown page type {}", page_type_raw(image)),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_then_verify_and_detect_flips() {
        let mut img = vec![0u8; 4096];
        init(img.as_mut_slice(), PageId(7), PageType::Raw);
        set_page_lsn(img.as_mut_slice(), Lsn(99));
        img[100] = 42;
        seal(&mut img);
        verify(&img, PageId(7)).unwrap();
        assert_eq!(page_lsn(img.as_slice()), Lsn(99));

        let e = verify(&img, PageId(8)).unwrap_err().to_string();
        assert!(e.contains("page 8") && e.contains("misdirected"), "{e}");

        for bit in [0usize, 37, 4095 * 8 + 7] {
            let mut bad = img.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            let e = verify(&bad, PageId(7)).unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::Corruption {
                        page_id: PageId(7),
                        ..
                    }
                ),
                "{e}"
            );
        }
        let zero = vec![0u8; 4096];
        let e = verify(&zero, PageId(3)).unwrap_err().to_string();
        assert!(e.contains("never written"), "{e}");
    }

    /// A sealed page of another format version is corruption that says who wrote it.
    #[test]
    fn other_format_versions_are_named() {
        for (version, says) in [
            (PAGE_FORMAT_VERSION - 1, "older build"),
            (PAGE_FORMAT_VERSION + 1, "newer build"),
        ] {
            let mut img = vec![0u8; 4096];
            init(img.as_mut_slice(), PageId(5), PageType::Raw);
            img.as_mut_slice().put_u16(OFF_VERSION, version);
            seal(&mut img);
            let e = verify(&img, PageId(5)).unwrap_err();
            assert!(matches!(e, Error::Corruption { .. }), "{e}");
            let e = e.to_string();
            assert!(
                e.contains(&format!("version {version}")) && e.contains(says),
                "{e}"
            );
        }
        assert!(version_mismatch(0).contains("not a Shoal page"));
    }
}
