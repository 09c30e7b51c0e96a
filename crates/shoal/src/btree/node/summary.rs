//! The search summary: 16 bytes about a B-tree leaf that its buffer frame keeps
//! ([`crate::buffer::ExclusiveGuard::set_summary`]), so that a descent can start the cache
//! misses of the leaf's search before the leaf's own first lines arrive.
//!
//! A search of a leaf that is not in cache waits for misses one after the other: the
//! page's first lines (the slotted header, `last_hint`, the first hint), then the slot lines
//! of the interpolated guess and its window ([`super::Node::search`], with rule 16's record
//! guess alongside), then the record the slot names. The header is needed only to place the
//! guess: the entry count, the hint offset, the first and last hints and the heap's layout.
//! Those few numbers are what this summary holds. The frame descriptor, where it lives, is
//! read by [`crate::buffer::BufferPool::fix_optimistic_with`] anyway (its latch word is on
//! the same line), so the descent that fixes a leaf hands the summary and its search key to
//! [`prefetch`], and the guess's slot lines and record lines are on their way while the
//! header's are. This is the prefetching of Chen, Gibbons and Mowry ("Improving Index
//! Performance through Prefetching", SIGMOD 2001), who fetch a node's lines in parallel
//! instead of one after another, applied to the lines an interpolation search will read.
//! Leaves only: the inner nodes above them are few, and stay in cache.
//!
//! ## Invariants
//! 1. Advisory only. A summary may be stale (entries came and went since it was set), torn
//!    (two words set at different times) or zero (never set, or the frame took a new page):
//!    [`prefetch`] then prefetches other lines of the same frame, or none. Nothing reads a
//!    summary except to prefetch.
//! 2. Set only by the holder of the leaf's X latch (`BTree::put` when it has drifted,
//!    [`Node::summary_is_stale`]; a split, for both halves), so readers write no shared
//!    memory (DESIGN.md principle 3).
//! 3. Zero words mean "no summary": an inner node, a leaf too small to interpolate (fewer
//!    than `INTERPOLATION_MIN_ENTRIES` entries), one whose first and last hints are equal,
//!    or one whose numbers do not fit the fields below.
//!
//! ## Layout (two words)
//! - word 0: first entry's hint (bits 0–31), last entry's hint (32–63);
//! - word 1: entry count (0–15), hint offset (16–31), heap start `free_end` (32–47),
//!   average entry record length in 1/16 bytes (48–63, saturating).

use super::{
    hint_of, prefetch_interpolated, Node, FIRST_ENTRY, HINTS_AT, INTERPOLATION_MIN_ENTRIES,
};
use crate::page::PageRead;

/// Bits of the average record length dropped from `record_layout`'s 1/65536ths of a byte
/// to the summary's 1/16ths.
const AVG_SHIFT: u32 = 12;

/// Entries a leaf may gain or lose before its summary is set again
/// ([`Node::summary_is_stale`]): a guess made with a count off by fewer is off by fewer
/// slots, well inside the window of lines [`prefetch`] fetches.
const STALE_COUNT: usize = 4;

impl<P: PageRead + ?Sized> Node<'_, P> {
    /// This node's search summary (module doc), or zeros (invariant 3).
    pub(crate) fn search_summary(&self) -> [u64; 2] {
        let count = self.entry_count();
        if !self.is_leaf()
            || !(INTERPOLATION_MIN_ENTRIES..=0xFFFF).contains(&count)
            || self.hint_offset > 0xFFFF
        {
            return [0, 0];
        }
        let page = self.s.page();
        // In bounds: Node::open checked that the slot array of `count + 2` slots ends
        // inside the page.
        let (first, last) = (page.u32_at(HINTS_AT), self.s.last_hint());
        let Some((free_end, avg)) = self.s.record_layout(FIRST_ENTRY) else {
            return [0, 0];
        };
        if first >= last || free_end > 0xFFFF {
            return [0, 0];
        }
        let avg16 = (avg >> AVG_SHIFT).min(0xFFFF) as u64;
        [
            u64::from(first) | (u64::from(last) << 32),
            count as u64
                | ((self.hint_offset as u64) << 16)
                | ((free_end as u64) << 32)
                | (avg16 << 48),
        ]
    }

    /// Whether summary `s` (as its frame holds it) is worth replacing by
    /// [`Node::search_summary`]: for a leaf large enough to have one, `s` is zero, its count
    /// is [`STALE_COUNT`] or more away from the leaf's, or its hint offset, first hint or
    /// last hint is not the leaf's; for any other node, `s` is not zero. A writer asks this first, which costs a few loads of lines
    /// its search has just read, instead of building and storing a summary on every change.
    pub(crate) fn summary_is_stale(&self, s: [u64; 2]) -> bool {
        let count = self.entry_count();
        if !self.is_leaf() || count < INTERPOLATION_MIN_ENTRIES {
            // No summary is made for such a node (invariant 3): stale only if one is left
            // from when it had one.
            return s != [0, 0];
        }
        let page = self.s.page();
        // In bounds: Node::open checked that the slot array of `count + 2` slots, the first
        // entry's among them, ends inside the page.
        let ends = u64::from(page.u32_at(HINTS_AT)) | (u64::from(self.s.last_hint()) << 32);
        (s[1] as u16 as usize).abs_diff(count) >= STALE_COUNT
            || (s[1] >> 16) as u16 as usize != self.hint_offset
            || s[0] != ends
    }
}

/// Prefetches the lines a search for `key` will read first in the leaf `page` holds, as
/// the leaf's search summary `s` places them: the slot lines of the interpolated guess and
/// its window, and the guess's record lines, as `Node::prefetch_guess` would once the
/// header is read. Nothing for a zero summary or a key outside its hints. Advisory
/// (invariant 1): any `s` prefetches lines of `page` only.
///
/// Returns true if it prefetched a guess's lines: the search of that leaf may then skip
/// its own copy of these prefetches (`Node::search_prefetched`).
#[inline]
pub(crate) fn prefetch<P: PageRead + ?Sized>(s: [u64; 2], key: &[u8], page: &P) -> bool {
    let [w0, w1] = s;
    let count = w1 as u16 as usize;
    if count < INTERPOLATION_MIN_ENTRIES {
        return false; // no summary: an inner node's, on every descent (the key's hint unmade)
    }
    let hint = hint_of(key, (w1 >> 16) as u16 as usize);
    let layout = || {
        let free_end = (w1 >> 32) as u16 as usize;
        Some((free_end, ((w1 >> 48) as usize) << AVG_SHIFT))
    };
    let ends = (w0 as u32, (w0 >> 32) as u32);
    prefetch_interpolated(page, count, hint, ends, layout, 0).is_some()
}

#[cfg(test)]
mod tests {
    use super::super::{inline_leaf_entry, NodeMut};
    use super::*;
    use crate::page::PageRead;
    use std::cell::RefCell;

    /// A page that records the offsets prefetched and the bytes read, to compare what a
    /// summary's prefetch fetches with what the search then reads.
    struct Traced {
        bytes: Vec<u8>,
        fetched: RefCell<Vec<usize>>,
    }

    impl PageRead for Traced {
        fn page_len(&self) -> usize {
            self.bytes.len()
        }
        fn read_into(&self, offset: usize, dst: &mut [u8]) {
            dst.copy_from_slice(&self.bytes[offset..offset + dst.len()]);
        }
        /// Bounds-checked, as every `PageRead::prefetch` is.
        fn prefetch(&self, offset: usize) {
            if offset < self.bytes.len() {
                self.fetched.borrow_mut().push(offset / 64);
            }
        }
    }

    fn leaf(n: u64) -> Vec<u8> {
        let keys: Vec<Vec<u8>> = (0..n)
            .map(|k| (1000 + 3 * k).to_be_bytes().to_vec())
            .collect();
        super::super::tests::leaf(
            &keys,
            Some(900u64.to_be_bytes().to_vec()),
            Some(9_000_000u64.to_be_bytes().to_vec()),
        )
    }

    /// On a leaf of dense keys, the summary's prefetch fetches the line of the slot that
    /// holds the key and the line of its record: the lines the search would otherwise wait
    /// for after the header's.
    #[test]
    fn prefetch_fetches_the_slot_and_record_lines_of_the_key() {
        let page = Traced {
            bytes: leaf(250),
            fetched: RefCell::new(Vec::new()),
        };
        let n = Node::open(page.bytes.as_slice()).unwrap();
        let s = n.search_summary();
        assert_ne!(s, [0, 0]);
        for k in [0u64, 1, 77, 130, 248, 249] {
            let key = (1000 + 3 * k).to_be_bytes();
            page.fetched.borrow_mut().clear();
            prefetch(s, &key, &page);
            let i = n.search(&key).unwrap().unwrap();
            let fetched = page.fetched.borrow().clone();
            let slot_line = (HINTS_AT + super::super::NODE_SLOT_SIZE * i) / 64;
            let record = n.s.record_range(FIRST_ENTRY + i).unwrap();
            if k > 0 {
                // Entry 0's hint is the first hint: the search needs no guess for it.
                assert!(fetched.contains(&slot_line), "key {k}: {fetched:?}");
                assert!(
                    fetched.contains(&(record.start / 64)),
                    "key {k}: {fetched:?}"
                );
            }
        }
    }

    /// The summary is zero for an inner node and a small leaf; a writer's staleness test
    /// says yes for a zero summary, after `STALE_COUNT` inserts and after an insert past
    /// the last hint, and no after a few inserts in the middle.
    #[test]
    fn summaries_are_for_leaves_and_go_stale_with_drift() {
        let small = leaf(5);
        let n = Node::open(small.as_slice()).unwrap();
        assert_eq!(n.search_summary(), [0, 0]);
        assert!(
            !n.summary_is_stale([0, 0]),
            "no summary to make for a small leaf"
        );
        assert!(n.summary_is_stale([1, 1]), "one left from a larger leaf");
        let mut page = leaf(100);
        let s = Node::open(page.as_slice()).unwrap().search_summary();
        assert!(Node::open(page.as_slice())
            .unwrap()
            .summary_is_stale([0, 0]));
        assert!(!Node::open(page.as_slice()).unwrap().summary_is_stale(s));
        for k in 0..STALE_COUNT as u64 {
            let key = (1001 + 3 * k).to_be_bytes();
            let rec = inline_leaf_entry(&key, &key);
            NodeMut::open(page.as_mut_slice())
                .unwrap()
                .insert(&rec, None)
                .unwrap();
            let stale = Node::open(page.as_slice()).unwrap().summary_is_stale(s);
            assert_eq!(
                stale,
                k + 1 == STALE_COUNT as u64,
                "after {} inserts",
                k + 1
            );
        }
        let mut page = leaf(100);
        let key = 5_000_000u64.to_be_bytes();
        let rec = inline_leaf_entry(&key, &key);
        NodeMut::open(page.as_mut_slice())
            .unwrap()
            .insert(&rec, None)
            .unwrap();
        assert!(Node::open(page.as_slice()).unwrap().summary_is_stale(s));
        // Any summary, garbage included, neither panics nor overflows; what lies past the
        // page is left to `PageRead::prefetch`'s bounds check.
        let traced = Traced {
            bytes: page,
            fetched: RefCell::new(Vec::new()),
        };
        let widest = 0xFFFF | (0xFFFF << 32) | (0xFFFF << 48);
        for s in [
            [u64::MAX, u64::MAX],
            [0xFFFF_FFFF_0000_0000, widest],
            [0x0000_0001_0000_0000, u64::MAX >> 1],
            [7, 0xFFFF],
        ] {
            for key in [&key[..], b"", &[0xFF, 0xFF, 0xFF, 0x00]] {
                prefetch(s, key, &traced);
            }
        }
    }
}
