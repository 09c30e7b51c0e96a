//! Page guards: a fixed page in optimistic, shared or exclusive mode (STYLE.md practice 5).
//! Dropping a guard unfixes the page.

use super::pool::BufferPool;
use crate::page::{header, AtomicBytes, AtomicBytesMut};
use crate::sync::{self, Restart};
use crate::types::{Lsn, PageId};
use std::sync::atomic::Ordering::{Relaxed, Release};

/// Views a frame's words as plain bytes.
///
/// # Safety
/// The caller must hold the frame's latch in S or X mode for the lifetime of the slice, and
/// must not write the frame while the slice lives: then no write races with the slice's
/// non-atomic reads (optimistic readers only read).
unsafe fn frame_bytes(pool: &BufferPool, f: u32) -> &[u8] {
    let w = pool.words(f);
    // SAFETY: words are initialised memory of len*8 bytes; see the function's contract.
    unsafe { std::slice::from_raw_parts(w.as_ptr() as *const u8, w.len() * 8) }
}

/// A page fixed in shared mode: readable, stays resident and unchanged until dropped.
pub struct SharedGuard<'a> {
    pool: &'a BufferPool,
    frame: u32,
    _latch: sync::SharedGuard<'a>,
}

impl<'a> SharedGuard<'a> {
    pub(crate) fn new(pool: &'a BufferPool, frame: u32, latch: sync::SharedGuard<'a>) -> Self {
        SharedGuard {
            pool,
            frame,
            _latch: latch,
        }
    }

    /// The page's bytes (the whole page, `page_size` bytes; the checksum field is stale).
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: we hold the S latch for our lifetime, which bounds the slice's.
        unsafe { frame_bytes(self.pool, self.frame) }
    }

    /// The page's id.
    pub fn page_id(&self) -> PageId {
        PageId(self.pool.frames[self.frame as usize].page_id.load(Relaxed))
    }

    /// The page LSN from the header.
    pub fn page_lsn(&self) -> Lsn {
        header::page_lsn(self.bytes())
    }
}

/// A page fixed in exclusive mode: readable and writable; the change sequence is
/// `page_mut` → [`ExclusiveGuard::mark_dirty`] → (log record) → [`ExclusiveGuard::set_page_lsn`]
/// → drop (STYLE.md practice 3).
pub struct ExclusiveGuard<'a> {
    pool: &'a BufferPool,
    frame: u32,
    latch: sync::ExclusiveGuard<'a>,
}

impl<'a> ExclusiveGuard<'a> {
    pub(crate) fn new(pool: &'a BufferPool, frame: u32, latch: sync::ExclusiveGuard<'a>) -> Self {
        ExclusiveGuard { pool, frame, latch }
    }

    /// The page's bytes for reading (`page_size` bytes).
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: X latch held; writes need `&mut self`, so none happen while this borrow lives.
        unsafe { frame_bytes(self.pool, self.frame) }
    }

    /// Write access to the page (atomic word stores, sync rule O1).
    #[inline]
    pub fn page_mut(&mut self) -> AtomicBytesMut<'_> {
        AtomicBytesMut::new(self.pool.words(self.frame))
    }

    /// The page's id.
    pub fn page_id(&self) -> PageId {
        PageId(self.pool.frames[self.frame as usize].page_id.load(Relaxed))
    }

    /// The frame's page summary, as last set by [`ExclusiveGuard::set_summary`] (zeros if
    /// not since the frame took this page).
    #[inline]
    pub(crate) fn summary(&self) -> [u64; 2] {
        self.pool.frames[self.frame as usize].summary()
    }

    /// Sets the frame's page summary: advisory bytes about the page, opaque to the pool,
    /// that [`BufferPool::fix_optimistic_with`] hands to a reader's prefetch (the frame's
    /// `summary` rule). Stores only what differs.
    #[inline]
    pub(crate) fn set_summary(&self, s: [u64; 2]) {
        self.pool.frames[self.frame as usize].set_summary(s);
    }

    /// The page LSN from the header.
    pub fn page_lsn(&self) -> Lsn {
        header::page_lsn(self.bytes())
    }

    /// Marks the page dirty. If it was clean, its recovery LSN becomes the current end of the
    /// log (≤ the LSN of the record about to describe this change; buffer rule 5).
    pub fn mark_dirty(&mut self) {
        let fr = &self.pool.frames[self.frame as usize];
        if !fr.dirty.load(Relaxed) {
            fr.rec_lsn.store(self.pool.wal.current_lsn().0, Relaxed);
            self.pool.dirty_map.set(self.frame); // before the flag (dirty map invariant 1)
            fr.dirty.store(true, Release);
        }
    }

    /// Marks the page dirty with a recovery LSN of at most `lsn`: a clean page gets `lsn`, a
    /// dirty one keeps the lower of its own and `lsn`. Used by restart's redo, which changes
    /// pages with records older than the end of the log (buffer rule 5 would otherwise give
    /// them a recovery LSN above changes not yet on disk).
    pub fn mark_dirty_since(&mut self, lsn: Lsn) {
        let fr = &self.pool.frames[self.frame as usize];
        if fr.dirty.load(Relaxed) {
            fr.rec_lsn.fetch_min(lsn.0, Relaxed);
        } else {
            fr.rec_lsn.store(lsn.0, Relaxed);
            self.pool.dirty_map.set(self.frame); // before the flag (dirty map invariant 1)
            fr.dirty.store(true, Release);
        }
    }

    /// Sets a dirty page's recovery LSN to the current end of the log, for a caller that
    /// just marked a clean page dirty with a lower one ([`ExclusiveGuard::mark_dirty_since`])
    /// and has changed nothing since: every change of the page is still on disk.
    pub fn reset_rec_lsn(&mut self) {
        let end = self.pool.wal.current_lsn();
        self.reset_rec_lsn_to(end);
    }

    /// [`ExclusiveGuard::reset_rec_lsn`] to `lsn`, a bound of the next record that a log
    /// lane appends (log lane rule L4), for a page marked dirty with a lower one.
    pub(crate) fn reset_rec_lsn_to(&mut self, lsn: Lsn) {
        self.pool.frames[self.frame as usize]
            .rec_lsn
            .store(lsn.0, Relaxed);
    }

    /// Lowers a dirty page's recovery LSN to `lsn` if it is above (log lane rule L4: a page
    /// dirtied with the log's end as its recovery LSN, say by an unlogged change, may next be
    /// changed by a lane record below that end). A clean page is left alone.
    pub(crate) fn lower_rec_lsn(&mut self, lsn: Lsn) {
        let fr = &self.pool.frames[self.frame as usize];
        if fr.dirty.load(Relaxed) && fr.rec_lsn.load(Relaxed) > lsn.0 {
            fr.rec_lsn.fetch_min(lsn.0, Relaxed);
        }
    }

    /// The LSN of a full-page image of this page after which every change of it is logged
    /// ([`Lsn::ZERO`] if none is known: the page was read from disk or just created). The
    /// transaction manager uses it to skip images (txn rule 3).
    pub fn image_lsn(&self) -> Lsn {
        Lsn(self.pool.frames[self.frame as usize]
            .image_lsn
            .load(Relaxed))
    }

    /// Records that the image at `lsn` was just logged from this page's current contents.
    pub fn set_image_lsn(&mut self, lsn: Lsn) {
        let fr = &self.pool.frames[self.frame as usize];
        fr.image_lsn.store(lsn.0, Relaxed);
        fr.image_written.store(false, Relaxed);
    }

    /// True if the page has changes not yet written.
    pub fn is_dirty(&self) -> bool {
        self.pool.frames[self.frame as usize].dirty.load(Relaxed)
    }

    /// Stores `lsn` as the page LSN (after appending the change's log record) and marks the
    /// page dirty if it is not already.
    pub fn set_page_lsn(&mut self, lsn: Lsn) {
        self.mark_dirty();
        header::set_page_lsn(&mut self.page_mut(), lsn);
    }

    /// The pool's index of the frame this guard latches, for
    /// [`BufferPool::raise_page_lsn_latched`].
    pub(crate) fn frame_index(&self) -> u32 {
        self.frame
    }

    /// Turns the exclusive fix into a shared one without letting a writer in between.
    pub fn downgrade(self) -> SharedGuard<'a> {
        SharedGuard {
            pool: self.pool,
            frame: self.frame,
            _latch: self.latch.downgrade(),
        }
    }
}

/// An optimistic fix: no latch held, nothing written on a hit. Everything read through
/// [`OptimisticPage::bytes`] is untrusted until [`OptimisticPage::validate`] succeeds (sync
/// rules O1–O3). The frame's memory stays valid to read even if the page is evicted meanwhile
/// (frames are never freed), which is what makes reading before validation safe.
pub struct OptimisticPage<'a> {
    pool: &'a BufferPool,
    frame: u32,
    page_id: PageId,
    guard: sync::OptimisticGuard<'a>,
}

impl<'a> OptimisticPage<'a> {
    pub(crate) fn new(
        pool: &'a BufferPool,
        frame: u32,
        page_id: PageId,
        guard: sync::OptimisticGuard<'a>,
    ) -> Self {
        OptimisticPage {
            pool,
            frame,
            page_id,
            guard,
        }
    }

    /// The page id this read is of.
    pub fn page_id(&self) -> PageId {
        self.page_id
    }

    /// Atomic view of the frame's bytes (`page_size` bytes).
    #[inline]
    pub fn bytes(&self) -> AtomicBytes<'a> {
        AtomicBytes::new(self.pool.words(self.frame))
    }

    /// Checks that the frame still holds this page and nobody wrote it since the read began.
    ///
    /// # Errors
    /// [`Restart`]: discard everything read and start over.
    #[inline]
    pub fn validate(&self) -> Result<(), Restart> {
        self.guard.validate()
    }

    /// Upgrades to an exclusive fix if nothing changed since the read began.
    ///
    /// # Errors
    /// [`Restart`] if the page changed or was evicted.
    pub fn upgrade(self) -> Result<ExclusiveGuard<'a>, Restart> {
        let latch = self.guard.upgrade()?;
        Ok(ExclusiveGuard::new(self.pool, self.frame, latch))
    }
}

impl BufferPool {
    /// Raises the page LSN of page `pid`, in frame `frame`, to at least `lsn`, on behalf of
    /// the thread that holds the frame X-latched through a guard it cannot hand over: a
    /// system transaction's commit, whose caller holds the latches of every page it changed
    /// (transaction rules 8 and 12). The page LSN may then name a record that is not a
    /// change of this page (the commit); redo only compares page LSNs, and the page holds
    /// every change logged below it.
    ///
    /// # Panics
    /// If the frame does not hold `pid` X-latched: its system transaction released the
    /// latch before committing, breaking rule 8, and the frame may hold another page by now.
    pub(crate) fn raise_page_lsn_latched(&self, frame: u32, pid: PageId, lsn: Lsn) {
        let fr = &self.frames[frame as usize];
        assert!(
            fr.latch.is_exclusive() && fr.page_id.load(Relaxed) == pid.0,
            "page {pid}: its latch was released before its system transaction committed"
        );
        if header::page_lsn(&AtomicBytes::new(self.words(frame))) < lsn {
            header::set_page_lsn(&mut AtomicBytesMut::new(self.words(frame)), lsn);
        }
    }
}
