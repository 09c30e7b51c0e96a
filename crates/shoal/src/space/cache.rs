//! Extent reservations and the per-thread / per-tree [`ExtentCache`].

use super::SpaceManager;
use crate::error::Result;
use crate::types::PageId;

/// Pages of one extent owned by a cache and not yet handed out: bit `i` of `mask` set means
/// page `base + i` is owned (and already marked allocated in the map).
#[derive(Debug)]
pub(crate) struct Reservation {
    base: u64,
    mask: u64,
}

impl Reservation {
    pub(crate) fn new(base: u64, mask: u64) -> Self {
        Reservation { base, mask }
    }

    /// Hands out the lowest owned page.
    pub(crate) fn take(&mut self) -> Option<PageId> {
        if self.mask == 0 {
            return None;
        }
        let i = self.mask.trailing_zeros() as u64;
        self.mask &= self.mask - 1;
        Some(PageId(self.base + i))
    }

    pub(crate) fn base(&self) -> PageId {
        PageId(self.base)
    }

    pub(crate) fn mask(&self) -> u64 {
        self.mask
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.mask == 0
    }
}

/// A private source of pages for one thread or one tree: takes a whole extent from the space
/// map at a time and hands its pages out with no shared-memory synchronisation at all.
/// Unused pages go back to the map on [`ExtentCache::release`] (or, best effort, on drop).
pub struct ExtentCache<'a> {
    space: &'a SpaceManager,
    current: Option<Reservation>,
}

impl<'a> ExtentCache<'a> {
    pub(crate) fn new(space: &'a SpaceManager) -> Self {
        ExtentCache {
            space,
            current: None,
        }
    }

    /// Allocates one page (contents undefined: initialise it with `BufferPool::fix_new`).
    ///
    /// # Errors
    /// As [`SpaceManager::allocate`].
    pub fn allocate(&mut self) -> Result<PageId> {
        loop {
            if let Some(p) = self.current.as_mut().and_then(Reservation::take) {
                return Ok(p);
            }
            self.current = Some(self.space.reserve()?);
        }
    }

    /// Returns the pages this cache still owns to the space map.
    ///
    /// # Errors
    /// I/O errors reading the map page; the pages then stay marked allocated (leaked, never
    /// handed out twice).
    pub fn release(mut self) -> Result<()> {
        match self.current.take() {
            Some(r) => self.space.unreserve(r),
            None => Ok(()),
        }
    }
}

impl Drop for ExtentCache<'_> {
    fn drop(&mut self) {
        if let Some(r) = self.current.take() {
            // Best effort: on error the pages stay marked allocated (space invariant 2).
            let _ = self.space.unreserve(r);
        }
    }
}
