//! # Logged extent reservations (space invariant 2)
//!
//! Job: the redo payload of a reservation, its redo (resource manager id [`RM_SPACE`]), and the
//! interface through which the space manager logs a reservation once the transaction layer is
//! up ([`ReservationLog`]; the transaction manager implements it, so this lower layer names no
//! higher one).
//!
//! ```text
//! redo payload: [RM_SPACE][OP_RESERVE][word index e: u64 LE][mask: u64 LE]   (18 bytes)
//! redo:         word e of the map page |= mask        (idempotent; the page LSN guards it too)
//! ```
//!
//! Why a log record is enough: every page of a reservation is used only by a change that is
//! logged after the reservation was (a B-tree split or a tree's creation formats the page
//! with a logged image), so when that change is durable, so is the reservation (the log is
//! durable as a prefix), and restart's redo sets the bits again if the map page on disk
//! missed them. A map page reaches the disk only after the log up to its page LSN (the WAL
//! rule), like any page. This replaces a write and an `fdatasync` of the data file per
//! reservation, which waited for every page write the cleaner had in flight (the DESIGN.md
//! §3.5 system transaction of a page allocation).
//!
//! Latching: the caller holds the map page's X latch across [`ReservationLog::log_reservation`].

use crate::buffer::ExclusiveGuard;
use crate::error::{Error, Result};
use crate::page::{AtomicBytesMut, PageRead};
use crate::types::{Lsn, PageId};

use super::map;

/// Resource manager id of the space manager's log records (fixed forever).
pub const RM_SPACE: u8 = 3;

/// Operation byte of a reservation (the only space record so far).
const OP_RESERVE: u8 = 1;

/// Bytes of a reservation's redo payload.
const RESERVE_BYTES: usize = 18;

/// How the space manager logs a reservation (space invariant 2). Implemented by the
/// transaction manager; installed with
/// [`SpaceManager::set_reservation_log`](super::SpaceManager::set_reservation_log).
pub trait ReservationLog: Send + Sync {
    /// Makes the change `redo` (a [`RM_SPACE`] payload) to the X-latched map page by applying
    /// its own redo, and logs it in a system transaction that commits (without waiting for
    /// the log) before this returns. Returns the record's LSN.
    ///
    /// # Errors
    /// [`Error::LogFailed`] or the pool's failure; the page is then unchanged.
    fn log_reservation(&self, map_page: &mut ExclusiveGuard<'_>, redo: Vec<u8>) -> Result<Lsn>;
}

/// The redo payload that sets the bits `mask` in allocation word `e` of a map page.
pub fn reserve_redo(e: u64, mask: u64) -> Vec<u8> {
    let mut p = Vec::with_capacity(RESERVE_BYTES);
    p.push(RM_SPACE);
    p.push(OP_RESERVE);
    p.extend_from_slice(&e.to_le_bytes());
    p.extend_from_slice(&mask.to_le_bytes());
    p
}

/// Applies a [`RM_SPACE`] redo payload to map page `page_id` (resource manager contract: every
/// check before the first change).
///
/// # Errors
/// [`Error::LogCorruption`] naming `lsn` for a payload that is not a reservation or names a
/// word outside the page; [`Error::Corruption`] if the page is not a space map.
pub fn redo(
    lsn: Lsn,
    page_id: PageId,
    payload: &[u8],
    page: &mut AtomicBytesMut<'_>,
) -> Result<()> {
    let bad = |why: &str| Error::log_corruption(lsn, format!("space record: {why}"));
    if payload.len() != RESERVE_BYTES || payload[0] != RM_SPACE || payload[1] != OP_RESERVE {
        return Err(bad("not an 18-byte reservation payload"));
    }
    let e = u64::from_le_bytes(payload[2..10].try_into().expect("8 bytes"));
    let mask = u64::from_le_bytes(payload[10..18].try_into().expect("8 bytes"));
    let words = (page.page_len().saturating_sub(map::BITMAP_OFFSET) / 8) as u64;
    if e >= words {
        return Err(bad(&format!("word {e} of a map page with {words} words")));
    }
    let kind = crate::page::header::page_type_raw(&*page);
    if kind != crate::page::PageType::SpaceMap as u8 {
        return Err(Error::corruption(
            page_id,
            format!("a space reservation for a page of type {kind}, not a space map"),
        ));
    }
    let w = map::word(&*page, e);
    map::set_word(page, e, w | mask);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::{header, PageType};
    use std::sync::atomic::AtomicU64;

    fn page(words: &[AtomicU64], ty: PageType) -> AtomicBytesMut<'_> {
        let mut p = AtomicBytesMut::new(words);
        header::init(&mut p, PageId(1), ty);
        map::init(&mut p, 0);
        p
    }

    /// Redo ORs the mask into the word (so it is idempotent and keeps bits set since).
    #[test]
    fn redo_sets_the_reserved_bits() {
        let words: Vec<AtomicU64> = (0..512).map(|_| AtomicU64::new(0)).collect();
        let mut p = page(&words, PageType::SpaceMap);
        map::set_word(&mut p, 5, 0b1010);
        let r = reserve_redo(5, !0b1010);
        redo(Lsn(64), PageId(1), &r, &mut p).unwrap();
        assert_eq!(map::word(&p, 5), u64::MAX);
        redo(Lsn(64), PageId(1), &r, &mut p).unwrap();
        assert_eq!(map::word(&p, 5), u64::MAX, "idempotent");
        assert_eq!(map::word(&p, 4), 0, "other words untouched");
    }

    /// Damaged payloads and pages are typed errors, and change nothing.
    #[test]
    fn bad_records_and_pages_are_typed_errors() {
        let words: Vec<AtomicU64> = (0..512).map(|_| AtomicU64::new(0)).collect();
        let mut p = page(&words, PageType::SpaceMap);
        let good = reserve_redo(3, 1);
        let mut wrong_op = good.clone();
        wrong_op[1] = 9;
        let far = reserve_redo(1 << 20, 1);
        for bad in [&good[..17], &wrong_op[..], &far[..], &[][..]] {
            assert!(
                matches!(
                    redo(Lsn(64), PageId(1), bad, &mut p),
                    Err(Error::LogCorruption { .. })
                ),
                "{bad:?}"
            );
        }
        let mut leaf = page(&words, PageType::BTreeLeaf);
        assert!(matches!(
            redo(Lsn(64), PageId(1), &good, &mut leaf),
            Err(Error::Corruption { .. })
        ));
        assert_eq!(map::word(&leaf, 3), 0);
    }
}
