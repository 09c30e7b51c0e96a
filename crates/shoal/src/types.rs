//! Fixed-width identifiers used across the engine (STYLE.md practice 11): page ids and log
//! sequence numbers as newtypes over `u64`, encoded little-endian on disk.

use std::fmt;

/// A page number within a data file: page `n` occupies bytes `[n * page_size, (n+1) * page_size)`.
///
/// Page 0 is the file header (see `docs/format.md`). [`PageId::INVALID`] (`u64::MAX`) marks
/// "no page" in frames and on-disk links.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct PageId(pub u64);

impl PageId {
    /// "No page": used for empty frames and null links. Never a valid page number.
    pub const INVALID: PageId = PageId(u64::MAX);

    /// True unless this is [`PageId::INVALID`].
    #[inline]
    pub fn is_valid(self) -> bool {
        self != Self::INVALID
    }

    /// Byte offset of this page in its file for a page size in bytes.
    ///
    /// Returns `None` on overflow (a page id too large for a 64-bit file offset).
    #[inline]
    pub fn byte_offset(self, page_size_bytes: usize) -> Option<u64> {
        self.0.checked_mul(page_size_bytes as u64)
    }
}

impl fmt::Display for PageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_valid() {
            write!(f, "{}", self.0)
        } else {
            f.write_str("INVALID")
        }
    }
}

/// Log sequence number: a 64-bit byte offset in one endless log address space
/// (DESIGN.md §3.5). `Lsn::ZERO` means "before any log record" — a page whose page LSN is
/// zero has never been changed under logging.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct Lsn(pub u64);

impl Lsn {
    /// The LSN before any record.
    pub const ZERO: Lsn = Lsn(0);
    /// Larger than every real LSN; used as "no bound" when taking minima.
    pub const MAX: Lsn = Lsn(u64::MAX);
}

impl fmt::Display for Lsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Transaction identifier, from an atomic counter (DESIGN.md §3.8). `TxnId(0)` is "no
/// transaction" (records written outside any transaction, e.g. checkpoints).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct TxnId(pub u64);

impl TxnId {
    /// "No transaction".
    pub const NONE: TxnId = TxnId(0);
}

impl fmt::Display for TxnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "T{}", self.0)
    }
}
