//! A buffer frame's control block.

use crate::sync::HybridLatch;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};

/// "No frame" in hash chains.
pub(crate) const NIL: u32 = u32::MAX;

/// Control block of one frame (one cache line, so hot frames do not share lines).
///
/// Field rules (buffer rules in `buffer`'s module doc):
/// * `page_id` changes only while the frame is X-latched *and* while it is in no hash chain
///   or under its chain's bucket X latch (rule 2);
/// * `next` changes only under the X latch of the bucket whose chain holds the frame;
/// * `dirty` is set by the holder of the frame's X latch, cleared by a writer holding S or X;
///   the frame's bit in the pool's dirty map is set before it is set and cleared after it is
///   cleared (`dirty_map` invariant 1);
/// * `rec_lsn` is meaningful only while `dirty` is set (rule 5);
/// * `image_lsn` is the LSN of a full-page image of this page in the log after which every
///   change of the page is logged, or 0 if none is known (a page read from disk or just
///   created); written under the frame's X latch, reset when the frame takes a new page.
/// * `image_written` is set when the page is written back and cleared when `image_lsn` is
///   set (or the frame takes a new page): while it is set, the page was written since its
///   image, so dirtying it again gives it `image_lsn` as its recovery LSN (txn rule 3) — a
///   write of it cannot advance the redo point until a checkpoint begins after that image
///   (the cleaner skips such writes; see `cleaner`). A hint only: racy reads are harmless.
/// * `summary` is advisory, opaque to the pool: 16 bytes that the page's owner keeps about
///   the page so that a reader can start the page's cache misses before its first lines
///   arrive (the B-tree's search summary, `btree::node::summary`). It shares the line the
///   latch word is read from anyway. Written by holders of the X latch only, so readers
///   write no shared memory; zeroed when the frame takes a new page or a page in it is
///   rewritten whole (`fix_uninit`). Any value is safe: a stale or torn one only
///   prefetches the wrong lines of the frame's own image.
#[repr(align(64))]
pub(crate) struct Frame {
    pub(crate) latch: HybridLatch,
    pub(crate) page_id: AtomicU64,
    pub(crate) next: AtomicU32,
    pub(crate) referenced: AtomicBool,
    pub(crate) dirty: AtomicBool,
    pub(crate) image_written: AtomicBool,
    pub(crate) rec_lsn: AtomicU64,
    pub(crate) image_lsn: AtomicU64,
    pub(crate) summary: [AtomicU64; 2],
}

const _: () = assert!(std::mem::size_of::<Frame>() == 64 || cfg!(loom));

impl Frame {
    pub(crate) fn new() -> Frame {
        Frame {
            latch: HybridLatch::new(),
            page_id: AtomicU64::new(u64::MAX),
            next: AtomicU32::new(NIL),
            referenced: AtomicBool::new(false),
            dirty: AtomicBool::new(false),
            image_written: AtomicBool::new(false),
            rec_lsn: AtomicU64::new(0),
            image_lsn: AtomicU64::new(0),
            summary: [AtomicU64::new(0), AtomicU64::new(0)],
        }
    }

    /// The page summary (the `summary` field rule): two relaxed loads.
    #[inline(always)]
    pub(crate) fn summary(&self) -> [u64; 2] {
        [self.summary[0].load(Relaxed), self.summary[1].load(Relaxed)]
    }

    /// Sets the page summary (the caller holds the X latch, or is giving the frame a new
    /// page), storing only the words that differ.
    #[inline]
    pub(crate) fn set_summary(&self, s: [u64; 2]) {
        for (w, v) in self.summary.iter().zip(s) {
            if w.load(Relaxed) != v {
                w.store(v, Relaxed);
            }
        }
    }

    /// Sets the CLOCK reference bit, writing only if it is clear (so a hot frame's line is
    /// not written on every hit).
    #[inline]
    pub(crate) fn touch(&self) {
        if !self.referenced.load(Relaxed) {
            self.referenced.store(true, Relaxed);
        }
    }
}
