//! The file header (page 0): identifies a Shoal data file and its geometry.
//!
//! ```text
//! offset size field (after the 32-byte common page header)
//!     32    8 magic          b"SHOALDB\0"
//!     40    4 file_version   FILE_FORMAT_VERSION
//!     44    4 page_size      bytes, power of two 4096..=65536
//!     48    4 extent_pages   pages per extent (64)
//!     52    4 reserved       0
//!     56    8 page_count     pages the file has been grown to (a multiple of extent_pages)
//!     64    8 group_pages    pages covered by one space-map page
//! ```

use crate::error::{Error, Result};
use crate::io::StorageFile;
use crate::options::{validate_page_size, EXTENT_PAGES, PAGE_SIZE_MIN_BYTES};
use crate::page::{header, PageRead, PageWrite, HEADER_SIZE};
use crate::types::PageId;

/// Identifies a Shoal data file.
pub const MAGIC: [u8; 8] = *b"SHOALDB\0";
/// Version of the data-file layout (file header + space maps); bumped on any change.
pub const FILE_FORMAT_VERSION: u32 = 1;

const OFF_MAGIC: usize = HEADER_SIZE;
const OFF_VERSION: usize = HEADER_SIZE + 8;
const OFF_PAGE_SIZE: usize = HEADER_SIZE + 12;
const OFF_EXTENT: usize = HEADER_SIZE + 16;
pub(crate) const OFF_PAGE_COUNT: usize = HEADER_SIZE + 24;
const OFF_GROUP: usize = HEADER_SIZE + 32;

/// The geometry recorded in page 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// Page size in bytes.
    pub page_size: usize,
    /// Pages per extent.
    pub extent_pages: u64,
    /// Number of pages the file has been grown to.
    pub page_count: u64,
    /// Pages covered by one space-map page.
    pub group_pages: u64,
}

impl FileHeader {
    pub(crate) fn write<P: PageWrite + ?Sized>(&self, page: &mut P) {
        page.write_from(OFF_MAGIC, &MAGIC);
        page.put_u32(OFF_VERSION, FILE_FORMAT_VERSION);
        page.put_u32(OFF_PAGE_SIZE, self.page_size as u32);
        page.put_u32(OFF_EXTENT, self.extent_pages as u32);
        page.put_u64(OFF_PAGE_COUNT, self.page_count);
        page.put_u64(OFF_GROUP, self.group_pages);
    }

    /// Decodes and checks the header of an (already checksum-verified) page 0.
    pub(crate) fn read(page: &[u8], file: &str) -> Result<FileHeader> {
        let bad = |reason: String| Error::BadFile {
            path: file.to_string(),
            reason,
        };
        if page[OFF_MAGIC..OFF_MAGIC + 8] != MAGIC {
            return Err(bad("bad magic: not a Shoal data file".into()));
        }
        let version = page.u32_at(OFF_VERSION);
        if version != FILE_FORMAT_VERSION {
            return Err(bad(format!(
                "file format version {version}, this build reads {FILE_FORMAT_VERSION}"
            )));
        }
        let h = FileHeader {
            page_size: page.u32_at(OFF_PAGE_SIZE) as usize,
            extent_pages: page.u32_at(OFF_EXTENT) as u64,
            page_count: page.u64_at(OFF_PAGE_COUNT),
            group_pages: page.u64_at(OFF_GROUP),
        };
        if h.page_size != page.len() {
            return Err(bad(format!(
                "header says page size {}, opened with {}",
                h.page_size,
                page.len()
            )));
        }
        if h.extent_pages != EXTENT_PAGES
            || h.group_pages != group_pages(h.page_size)
            || h.page_count == 0
            || h.page_count % EXTENT_PAGES != 0
        {
            return Err(bad(format!("inconsistent geometry {h:?}")));
        }
        Ok(h)
    }
}

/// Pages covered by one space-map page of a file with this page size: one bit per page in
/// the page after a 64-byte header, i.e. `(page_size - 64) * 8`, a multiple of 64.
pub fn group_pages(page_size: usize) -> u64 {
    ((page_size - super::map::BITMAP_OFFSET) * 8) as u64
}

/// Reads the page size recorded in a data file's header without knowing it in advance, so a
/// database can be opened with the page size it was created with.
///
/// # Errors
/// [`Error::BadFile`] if the file is empty, too short, not a Shoal file or records an invalid
/// page size; [`Error::Corruption`] (page 0) if the header page fails its checksum;
/// [`Error::Io`] on a read error.
pub fn probe_page_size(file: &dyn StorageFile) -> Result<usize> {
    let bad = |reason: &str| Error::BadFile {
        path: file.name().to_string(),
        reason: reason.to_string(),
    };
    let len = file.len()?;
    if len == 0 {
        return Err(bad("the file is empty (no database was created in it)"));
    }
    if len < PAGE_SIZE_MIN_BYTES as u64 {
        return Err(bad("the file is shorter than one page"));
    }
    let mut first = vec![0u8; PAGE_SIZE_MIN_BYTES];
    file.read_exact_at(&mut first, 0)?;
    if first[OFF_MAGIC..OFF_MAGIC + 8] != MAGIC {
        return Err(bad("bad magic: not a Shoal data file"));
    }
    let page_size = first.u32_at(OFF_PAGE_SIZE) as usize;
    validate_page_size(page_size).map_err(|_| bad("header records an invalid page size"))?;
    if len < page_size as u64 {
        return Err(bad("the file is shorter than its header page"));
    }
    let mut page = vec![0u8; page_size];
    file.read_exact_at(&mut page, 0)?;
    header::verify(&page, PageId(0))?;
    Ok(page_size)
}
