//! The dirty map: one bit per frame, set while the frame may hold a dirty page, so that the
//! passes that look for dirty frames (the cleaner's, a checkpoint's oldest recovery LSN,
//! `flush_all`, `dirty_count`) read 1 bit per frame instead of a 64-byte control block.
//!
//! Before it, every cleaner pass read every frame's control block twice (once to collect
//! the dirty frames, once for the oldest recovery LSN): an 8 GiB pool of 8 KiB pages has
//! 64 MiB of control blocks, so 128 MiB per pass whatever was dirty, ten passes a second —
//! memory traffic that grew with the pool and pushed the workers' lines out of the shared
//! cache. The map of the same pool is 128 KiB, and a pass reads only the control blocks of
//! frames whose bit is set.
//!
//! ## Invariants
//! 1. **Superset.** At every moment, a frame whose `dirty` flag is set has its bit set: the
//!    bit is set before the flag ([`ExclusiveGuard::mark_dirty`] and
//!    [`ExclusiveGuard::mark_dirty_since`]) and cleared after the flag is cleared
//!    (`BufferPool::write_back`). A set bit whose frame is clean is harmless (the reader
//!    checks the flag, as it did for every frame before).
//! 2. **No lost bit.** The flag is set only under the frame's X latch and cleared only under
//!    its S or X latch, so a frame's bit is never set and cleared at the same time; bits of
//!    other frames in the same word change with atomic `fetch_or` / `fetch_and`, which
//!    lose no one's bit.
//! 3. **Visibility of a set bit.** A reader that has seen an event ordered after a frame's
//!    dirtying sees the frame's bit: the cleaner reads the end of the log (Acquire, the
//!    `WalHook` contract) after the change's record was appended (a Release, buffer rule
//!    5); the bit was set before the flag and the append in the dirtying thread's program
//!    order, so it happens before the reader's later word load, which coherence then
//!    makes see it.
//! 4. **A clear bit means written.** A bit is cleared (Release) only after its page's write
//!    returned and its flag was cleared; a reader whose word load (Acquire) sees it clear
//!    and then syncs the data file makes that write durable (buffer rule 8), as a reader
//!    that saw the flag clear did before.
//!
//! Latching: none of its own; it leans on the frame latches (invariant 2).
//!
//! [`ExclusiveGuard::mark_dirty`]: super::ExclusiveGuard::mark_dirty
//! [`ExclusiveGuard::mark_dirty_since`]: super::ExclusiveGuard::mark_dirty_since

use std::sync::atomic::{AtomicU64, Ordering::*};

/// One bit per frame, frame `f` at bit `f % 64` of word `f / 64`.
pub(crate) struct DirtyMap {
    words: Box<[AtomicU64]>,
}

impl DirtyMap {
    /// A map of `frames` frames, all clear.
    pub(crate) fn new(frames: usize) -> DirtyMap {
        DirtyMap {
            words: (0..frames.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    /// Sets frame `f`'s bit (before its `dirty` flag is set: invariant 1).
    #[inline]
    pub(crate) fn set(&self, f: u32) {
        let (w, bit) = (f as usize / 64, 1u64 << (f % 64));
        // Relaxed would do for invariant 3 (the flag's Release store and the append's
        // Release come after this in program order and carry it); Release costs nothing
        // more on a locked instruction. Only a clean frame's dirtying gets here, not every
        // change of a page.
        self.words[w].fetch_or(bit, Release);
    }

    /// Clears frame `f`'s bit (after its `dirty` flag was cleared: invariant 1).
    #[inline]
    pub(crate) fn clear(&self, f: u32) {
        let (w, bit) = (f as usize / 64, 1u64 << (f % 64));
        // Release: the page's write before the clear bit (invariant 4).
        self.words[w].fetch_and(!bit, Release);
    }

    /// The frames whose bit is set now, in ascending order (each word read once, Acquire:
    /// invariant 3). A frame dirtied during the walk may or may not be listed.
    pub(crate) fn frames(&self) -> impl Iterator<Item = u32> + '_ {
        self.words.iter().enumerate().flat_map(|(w, word)| {
            let mut bits = word.load(Acquire);
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let b = bits.trailing_zeros();
                    bits &= bits - 1;
                    (w * 64) as u32 + b
                })
            })
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn frames_lists_exactly_the_set_bits_in_order() {
        let m = DirtyMap::new(200);
        for f in [0, 5, 63, 64, 130, 199] {
            m.set(f);
        }
        m.set(5); // twice: still once
        m.clear(130);
        m.clear(7); // never set
        assert_eq!(m.frames().collect::<Vec<_>>(), [0, 5, 63, 64, 199]);
        for f in [0, 5, 63, 64, 199] {
            m.clear(f);
        }
        assert_eq!(m.frames().count(), 0);
    }

    #[test]
    fn concurrent_sets_and_clears_of_one_word_lose_no_bit() {
        // Each thread owns 8 frames of the same words and flips them many times; at the
        // end each thread's frames are set exactly as it left them (invariant 2).
        let m = DirtyMap::new(128);
        std::thread::scope(|s| {
            for t in 0..8u32 {
                let m = &m;
                s.spawn(move || {
                    let mine: Vec<u32> = (0..8).map(|i| i * 16 + t).collect();
                    for round in 0..20_000u32 {
                        for &f in &mine {
                            if (round + f) % 3 == 0 {
                                m.clear(f);
                            } else {
                                m.set(f);
                            }
                        }
                    }
                    // Leave the even ones set.
                    for &f in &mine {
                        if f % 2 == 0 {
                            m.set(f);
                        } else {
                            m.clear(f);
                        }
                    }
                });
            }
        });
        let want: Vec<u32> = (0..128).filter(|f| f % 2 == 0 && f % 16 < 8).collect();
        assert_eq!(m.frames().collect::<Vec<_>>(), want);
    }
}
