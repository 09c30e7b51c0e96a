//! The page table: page id → frame, with optimistic (write-free) lookups.
//!
//! A fixed array of buckets, each a [`HybridLatch`] and the head of a chain linked through
//! the frames' `next` fields (no allocation, ever). Lookups read a bucket optimistically and
//! validate its version; insertions and removals X-latch the one bucket they change. No
//! latch of this table is held while a frame latch is acquired (buffer rule 1: frame X →
//! bucket X is the only nesting).
//!
//! **Frame hints.** Beside the buckets, a direct-mapped array of frame numbers indexed by the
//! page id's low bits remembers where each page was last found ([`PageTable::hint`]). It is
//! only a guess, written with relaxed stores and never under a latch: a fixer that follows it
//! must check the frame's page id under the frame's latch (or its optimistic version, which
//! the page-id check then rides on) exactly as after a bucket lookup, and fall back to the
//! buckets when the guess is wrong. Page ids are mostly dense, so the hints of a tree's pages
//! lie in a few kilobytes that stay in the cache, where the buckets they would hash to are
//! one cache line per page: a hinted fix saves the bucket's cache miss.

use super::frame::{Frame, NIL};
use crate::sync::HybridLatch;
use crate::types::PageId;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

#[repr(align(16))]
struct Bucket {
    latch: HybridLatch,
    head: AtomicU32,
}

pub(crate) struct PageTable {
    buckets: Box<[Bucket]>,
    shift: u32,
    /// Frame hints (module doc): `hints[pid & hint_mask]` is the frame where a page with
    /// those low bits was last found, or garbage.
    hints: Box<[AtomicU32]>,
    hint_mask: usize,
}

impl PageTable {
    /// A table for `frames` frames: the next power of two ≥ `frames` buckets.
    pub(crate) fn new(frames: usize) -> PageTable {
        let n = frames.next_power_of_two().max(2);
        PageTable {
            buckets: super::mem::huge_slice(n, |_| Bucket {
                latch: HybridLatch::new(),
                head: AtomicU32::new(NIL),
            }),
            shift: 64 - n.trailing_zeros(),
            hints: super::mem::huge_slice(n, |_| AtomicU32::new(NIL)),
            hint_mask: n - 1,
        }
    }

    /// The frame where page `pid` was last found: a guess ([`NIL`] or any frame number),
    /// which the caller checks against the frame's page id (module doc, "Frame hints").
    #[inline(always)]
    pub(crate) fn hint(&self, pid: PageId) -> u32 {
        self.hints[pid.0 as usize & self.hint_mask].load(Relaxed)
    }

    /// Prefetches the line of the frame hint of `pid` ([`PageTable::hint`]).
    #[inline(always)]
    pub(crate) fn prefetch_hint(&self, pid: PageId) {
        crate::sync::prefetch(&self.hints[pid.0 as usize & self.hint_mask]);
    }

    /// Records that page `pid` is in frame `f`. Writes only if the hint differs, so hot pages
    /// whose hints are right cost no store (and no cache-line transfer between cores).
    #[inline]
    pub(crate) fn set_hint(&self, pid: PageId, f: u32) {
        let h = &self.hints[pid.0 as usize & self.hint_mask];
        if h.load(Relaxed) != f {
            h.store(f, Relaxed);
        }
    }

    #[inline]
    fn bucket(&self, pid: PageId) -> &Bucket {
        // Fibonacci hashing: page ids are often dense, the multiply spreads them.
        let h = pid.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift;
        &self.buckets[h as usize]
    }

    /// Walks a chain looking for `pid`. Under an optimistic read the links may be torn, so
    /// the walk is bounded and bounds-checked; the caller validates afterwards.
    #[inline]
    fn walk(frames: &[Frame], head: u32, pid: PageId, visit: impl Fn(u32)) -> Option<u32> {
        let mut f = head;
        let mut steps = 0;
        while f != NIL && steps <= frames.len() {
            visit(f);
            let fr = frames.get(f as usize)?;
            if fr.page_id.load(Relaxed) == pid.0 {
                return Some(f);
            }
            f = fr.next.load(Relaxed);
            steps += 1;
        }
        None
    }

    /// The frame holding `pid`, if any. Takes no latch and writes nothing (waits only if a
    /// writer holds the bucket at that instant).
    #[inline]
    pub(crate) fn lookup(&self, frames: &[Frame], pid: PageId) -> Option<u32> {
        self.lookup_with(frames, pid, |_| {})
    }

    /// [`PageTable::lookup`], calling `visit` with each frame number of the chain before
    /// that frame is read (the number may be garbage under a concurrent change): the
    /// optimistic fix path prefetches the frame's page there, so that the frame's descriptor
    /// and its page header are fetched from memory in parallel.
    #[inline]
    pub(crate) fn lookup_with(
        &self,
        frames: &[Frame],
        pid: PageId,
        visit: impl Fn(u32),
    ) -> Option<u32> {
        let b = self.bucket(pid);
        loop {
            let g = b.latch.optimistic();
            let found = Self::walk(frames, b.head.load(Relaxed), pid, &visit);
            if g.validate().is_ok() {
                return found;
            }
        }
    }

    /// Sets frame `f`'s page id to `pid` and links it into `pid`'s chain, unless some frame
    /// already holds `pid`, which is then returned as `Err`. The caller holds `f`'s X latch
    /// and `f` is in no chain.
    pub(crate) fn insert(&self, frames: &[Frame], pid: PageId, f: u32) -> Result<(), u32> {
        let b = self.bucket(pid);
        let _x = b.latch.exclusive();
        if let Some(existing) = Self::walk(frames, b.head.load(Relaxed), pid, |_| {}) {
            return Err(existing);
        }
        let fr = &frames[f as usize];
        fr.page_id.store(pid.0, Relaxed);
        fr.image_lsn.store(0, Relaxed); // no image of the new page is known yet
        fr.image_written.store(false, Relaxed);
        fr.set_summary([0, 0]); // a summary is of the frame's old page
        fr.next.store(b.head.load(Relaxed), Relaxed);
        b.head.store(f, Relaxed);
        Ok(())
    }

    /// Unlinks frame `f` (holding `pid`) from its chain and marks it free
    /// (`PageId::INVALID`). The caller holds `f`'s X latch.
    pub(crate) fn remove(&self, frames: &[Frame], pid: PageId, f: u32) {
        let b = self.bucket(pid);
        let _x = b.latch.exclusive();
        let fr = &frames[f as usize];
        let mut cur = b.head.load(Relaxed);
        if cur == f {
            b.head.store(fr.next.load(Relaxed), Relaxed);
        } else {
            loop {
                assert!(
                    cur != NIL,
                    "frame {f} for page {pid} missing from its chain"
                );
                let c = &frames[cur as usize];
                let next = c.next.load(Relaxed);
                if next == f {
                    c.next.store(fr.next.load(Relaxed), Relaxed);
                    break;
                }
                cur = next;
            }
        }
        fr.next.store(NIL, Relaxed);
        fr.page_id.store(PageId::INVALID.0, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_lookup_remove_with_collisions() {
        let frames: Vec<Frame> = (0..8).map(|_| Frame::new()).collect();
        let t = PageTable::new(2); // 2 buckets: plenty of collisions
        for f in 0..8u32 {
            t.insert(&frames, PageId(100 + f as u64), f).unwrap();
        }
        assert_eq!(t.insert(&frames, PageId(103), 0), Err(3));
        for f in 0..8u32 {
            assert_eq!(t.lookup(&frames, PageId(100 + f as u64)), Some(f));
        }
        t.remove(&frames, PageId(105), 5);
        t.remove(&frames, PageId(100), 0);
        assert_eq!(t.lookup(&frames, PageId(105)), None);
        assert_eq!(t.lookup(&frames, PageId(100)), None);
        assert_eq!(t.lookup(&frames, PageId(107)), Some(7));
        assert!(!PageId(frames[5].page_id.load(Relaxed)).is_valid());
        assert_eq!(t.lookup(&frames, PageId(999)), None);
    }
}
