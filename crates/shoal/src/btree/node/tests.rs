//! Unit and property tests of the node format, its search and its changes.

use super::{
    hint_lower_bound, hint_of, inline_leaf_entry, lower_bound, search, Node, NodeImage, NodeMut,
    INTERPOLATION_MIN_ENTRIES, INTERPOLATION_WINDOW, MAX_LEVEL, SPECIAL_OFFSET, SP_LEVEL,
};
use crate::types::PageId;
use proptest::prelude::*;

/// A leaf page of 8 KiB with fences `[low, high)` and the entries of `keys` (sorted,
/// distinct), whose values are the keys themselves.
pub(super) fn leaf(keys: &[Vec<u8>], low: Option<Vec<u8>>, high: Option<Vec<u8>>) -> Vec<u8> {
    let image = NodeImage {
        low,
        high,
        entries: keys.iter().map(|k| inline_leaf_entry(k, k)).collect(),
        ..NodeImage::empty_root(PageId(7))
    };
    let mut page = vec![0u8; 8192];
    image.write_to(page.as_mut_slice(), PageId(7)).unwrap();
    page
}

/// `entry_bytes` (from the header's accounting) is the sum of the entries' lengths, also
/// once removals have left holes in the heap and inserts have filled some.
#[test]
fn entry_bytes_is_the_sum_of_the_entry_lengths() {
    let keys: Vec<Vec<u8>> = (0..40u8)
        .map(|i| vec![i; 1 + (i as usize * 7) % 23])
        .collect();
    let mut page = leaf(&keys, Some(vec![0]), Some(vec![200; 9]));
    let sum = |page: &[u8]| {
        let n = Node::open(page).unwrap();
        let total: usize = (0..n.entry_count()).map(|i| n.entry_len(i).unwrap()).sum();
        (n.entry_bytes().unwrap(), total)
    };
    let (got, want) = sum(&page);
    assert_eq!(got, want);
    for k in keys.iter().step_by(3) {
        NodeMut::open(page.as_mut_slice())
            .unwrap()
            .remove(k, None)
            .unwrap();
    }
    for i in 0..5u8 {
        let k = vec![100 + i; 30];
        let rec = inline_leaf_entry(&k, &k);
        NodeMut::open(page.as_mut_slice())
            .unwrap()
            .insert(&rec, None)
            .unwrap();
    }
    let (got, want) = sum(&page);
    assert_eq!(got, want);
    // Replacements that grow and shrink values, then inserts until one needs the holes
    // compacted.
    for (n, k) in keys.iter().skip(1).step_by(3).enumerate() {
        let value = vec![7u8; 1 + (n * 13) % 40];
        let rec = inline_leaf_entry(k, &value);
        NodeMut::open(page.as_mut_slice())
            .unwrap()
            .replace(&rec, None)
            .unwrap();
        let (got, want) = sum(&page);
        assert_eq!(got, want, "after replacing key {k:?}");
    }
    let mut i = 0u8;
    loop {
        let k = vec![150, i];
        let rec = inline_leaf_entry(&k, &[9u8; 60]);
        if NodeMut::open(page.as_mut_slice())
            .unwrap()
            .insert(&rec, None)
            .is_err()
        {
            break;
        }
        let (got, want) = sum(&page);
        assert_eq!(got, want, "after insert {i}");
        i += 1;
    }
    assert!(i > 10, "only {i} inserts fitted");
}

/// `NodeMut::open` checks only the slotted header; every change still makes the node's
/// own checks first, so on a page whose special area is not a B-tree node's each one is
/// refused as corruption and the page is unchanged.
#[test]
fn every_change_refuses_a_page_that_is_not_a_node() {
    let keys = vec![b"aa".to_vec(), b"bb".to_vec()];
    let mut page = leaf(&keys, None, None);
    page[SPECIAL_OFFSET + SP_LEVEL..SPECIAL_OFFSET + SP_LEVEL + 2]
        .copy_from_slice(&(MAX_LEVEL + 1).to_le_bytes());
    assert!(Node::open(page.as_slice()).is_err());
    let before = page.clone();
    let rec = inline_leaf_entry(b"cc", b"cc");
    let old = inline_leaf_entry(b"aa", b"zz");
    let results = [
        NodeMut::open(page.as_mut_slice())
            .unwrap()
            .insert(&rec, None),
        NodeMut::open(page.as_mut_slice())
            .unwrap()
            .replace(&old, Some(0)),
        NodeMut::open(page.as_mut_slice())
            .unwrap()
            .remove(b"aa", None),
        NodeMut::open(page.as_mut_slice())
            .unwrap()
            .patch(b"aa", 5, b"z", None),
        NodeMut::open(page.as_mut_slice())
            .unwrap()
            .truncate(1, &None, PageId(9)),
    ];
    for r in results {
        assert!(matches!(r, Err(crate::Error::Corruption { .. })), "{r:?}");
        assert_eq!(page, before);
    }
}

/// The left half of a split: a high fence that fits only once the right half's entries
/// are gone is taken; one that does not fit even then is corruption, with the page
/// unchanged.
#[test]
fn truncate_counts_the_entries_it_drops_for_the_new_fence() {
    // 60 entries of 50-byte keys and values (about 6.8 KB of an 8 KiB page): the room
    // left is less than a fence of 1,500 bytes.
    let keys: Vec<Vec<u8>> = (0..60u8).map(|i| vec![i; 50]).collect();
    let mut page = leaf(&keys, None, None);
    let fence = |len: usize| Some(vec![30u8; len]);
    let room = Node::open(page.as_slice()).unwrap().free_bytes();
    assert!(room < 1500, "the page must be short of room: {room}");
    let before = page.clone();
    let mut n = NodeMut::open(page.as_mut_slice()).unwrap();
    let e = n.truncate(30, &fence(8000), PageId(9)).unwrap_err();
    assert!(matches!(e, crate::Error::Corruption { .. }), "{e}");
    assert!(page == before, "a refused truncate changed the page");
    let mut n = NodeMut::open(page.as_mut_slice()).unwrap();
    n.truncate(30, &fence(1500), PageId(9)).unwrap();
    let v = n.view().unwrap();
    assert_eq!(v.entry_count(), 30);
    assert_eq!(v.high_fence().unwrap(), fence(1500));
    crate::page::slotted::check(page.as_slice(), PageId(7)).unwrap();
}

/// `search` places any key, inside the fences or not, as the sorted entries do, also in
/// a node whose prefix is longer than the 8 bytes of its prefix head (the rest of the
/// prefix is compared in place in the low fence).
#[test]
fn search_places_keys_outside_a_long_prefix_in_sorted_order() {
    let p = b"customer/district-07/".to_vec();
    let with = |tail: &[u8]| [p.as_slice(), tail].concat();
    let keys: Vec<Vec<u8>> = (0..50u32)
        .map(|i| with(format!("{i:04}").as_bytes()))
        .collect();
    let page = leaf(&keys, Some(with(b"0000")), Some(with(b"9999")));
    let n = Node::open(page.as_slice()).unwrap();
    let probes: [&[u8]; 12] = [
        b"",
        b"a",
        b"customer/d",
        b"customer/district-0",
        b"customer/district-06/9999",
        b"customer/district-07",
        b"customer/district-07/",
        b"customer/district-07/0010",
        b"customer/district-07/00105",
        b"customer/district-07/9",
        b"customer/district-08/0000",
        b"zzz",
    ];
    for probe in probes {
        let want = keys.binary_search_by(|k| k.as_slice().cmp(probe));
        assert_eq!(
            n.search(probe).unwrap(),
            want,
            "{}",
            String::from_utf8_lossy(probe)
        );
        assert_eq!(n.search_scan_start(probe).unwrap(), want);
    }
}

/// Keys laid out as TPC-C's order lines were with fixed-width integer fields (page format
/// 4), in a leaf that holds the end of one district and the start of the next: the hints
/// (four bytes past the fences' prefix) hold the district and the order's high bytes
/// only, so each district's lines make one long run.
/// Both forms of the search (the one that tries a run's last entry first, rule 17, and
/// the scan's) place every key, and every probe before, inside, at the end of and past
/// a run, as a binary search of the sorted keys does.
#[test]
fn runs_of_equal_hints_are_searched_from_either_end() {
    let key = |d: u8, o: u16, line: u8| vec![1, d, 1, 0, (o >> 8) as u8, o as u8, 1, line];
    let mut keys = Vec::new();
    for o in 2990..3000u16 {
        for line in 1..=10 {
            keys.push(key(7, o, line));
        }
    }
    for o in 1..4u16 {
        keys.push(key(8, o, 1));
    }
    let page = leaf(&keys, Some(key(7, 2990, 1)), Some(key(8, 100, 0)));
    let n = Node::open(page.as_slice()).unwrap();
    let hint = |k: &[u8]| super::hint_of(k, n.prefix_len());
    assert_eq!(
        hint(&keys[0]),
        hint(&keys[99]),
        "district 7's lines make one run"
    );
    let mut probes = keys.clone();
    probes.extend([
        key(7, 2999, 11),
        key(7, 3000, 1),
        key(7, 2995, 0),
        key(7, 2989, 5),
        key(8, 0, 9),
        key(8, 2, 0),
        key(8, 9, 9),
    ]);
    for p in &probes {
        let want = keys.binary_search(p);
        assert_eq!(n.search(p).unwrap(), want, "{p:?}");
        assert_eq!(n.search_scan_start(p).unwrap(), want, "{p:?}");
    }
}

/// A patch lands inside an inline value only: a range that starts in the key or its
/// tag, runs past the entry, names an absent key or meets an overflow reference is
/// corruption, and the page is unchanged (an undo relies on this to log nothing).
#[test]
fn a_patch_outside_an_inline_value_is_refused_and_changes_nothing() {
    let keys = vec![b"aa".to_vec(), b"bb".to_vec()];
    let mut page = leaf(&keys, None, None);
    // Entry "bb": [len u16][b b][tag][b b] = 7 bytes; the value starts at byte 5.
    NodeMut::open(page.as_mut_slice())
        .unwrap()
        .patch(b"bb", 5, b"xy", None)
        .unwrap();
    assert_eq!(
        Node::open(page.as_slice()).unwrap().value(1).unwrap(),
        b"\0xy"
    );
    let before = page.clone();
    for (key, at, bytes) in [
        (&b"bb"[..], 4, &b"z"[..]),
        (b"bb", 3, b"z"),
        (b"bb", 6, b"zz"),
        (b"cc", 5, b"z"),
    ] {
        let r = NodeMut::open(page.as_mut_slice())
            .unwrap()
            .patch(key, at, bytes, None);
        assert!(matches!(r, Err(crate::Error::Corruption { .. })), "{r:?}");
        assert_eq!(page, before);
    }
    // An overflow reference's tag: refused.
    let mut tagged = leaf(&keys, None, None);
    let at = {
        let n = Node::open(tagged.as_slice()).unwrap();
        n.ranges(1).unwrap().1.end
    };
    tagged[at] = 1;
    let r = NodeMut::open(tagged.as_mut_slice())
        .unwrap()
        .patch(b"bb", 5, b"z", None);
    assert!(matches!(r, Err(crate::Error::Corruption { .. })), "{r:?}");
}

proptest! {
    /// `covers` agrees with `low <= key < high` for finite and infinite fences, keys
    /// that are prefixes of a fence and keys a fence is a prefix of.
    #[test]
    fn covers_matches_the_fence_order(
        low in proptest::option::of(proptest::collection::vec(0u8..3, 0..5)),
        high in proptest::option::of(proptest::collection::vec(0u8..3, 0..5)),
        keys in proptest::collection::vec(proptest::collection::vec(0u8..3, 0..6), 1..20),
    ) {
        let page = leaf(&[], low.clone(), high.clone());
        let n = Node::open(page.as_slice()).unwrap();
        for k in &keys {
            let want = low.as_ref().map_or(true, |l| l <= k)
                && high.as_ref().map_or(true, |h| k < h);
            prop_assert_eq!(n.covers(k).unwrap(), want, "key {:?}", k);
        }
    }
}

proptest! {
    /// A hint read in place (`hint_at`, as `rehint` reads them) is `hint_of` the key
    /// copied out, at every offset, for keys shorter and longer than the offset.
    #[test]
    fn in_place_hints_match_hint_of(
        keys in proptest::collection::btree_set(proptest::collection::vec(any::<u8>(), 0..14), 1..30),
        offset in 0usize..16,
    ) {
        let keys: Vec<Vec<u8>> = keys.into_iter().collect();
        let page = leaf(&keys, None, None);
        let n = Node::open(page.as_slice()).unwrap();
        for (i, k) in keys.iter().enumerate() {
            prop_assert_eq!(n.hint_at(i, offset).unwrap(), super::hint_of(k, offset));
        }
    }
}

proptest! {
    /// `search_near` answers as `search` does whatever the hint — right, off by one,
    /// past the end — for present and absent keys; and a change applied with a wrong
    /// hint lands where one applied without a hint does.
    #[test]
    fn search_near_agrees_with_search(
        head in proptest::collection::vec(0u8..3, 0..4),
        fenced in any::<bool>(),
        tails in proptest::collection::btree_set(
            proptest::collection::vec(0u8..3, 0..16), 1..60),
        probe in proptest::collection::vec(0u8..3, 0..20),
        near in 0usize..70,
    ) {
        // Fenced: the fences [head, head + [3]) make `head` the prefix, and probes that
        // lack it sort outside the node.
        let keys: Vec<Vec<u8>> =
            tails.into_iter().map(|t| head.iter().chain(&t).copied().collect()).collect();
        let (low, high) = match fenced {
            true => (Some(head.clone()), Some(head.iter().chain(&[3]).copied().collect())),
            false => (None, None),
        };
        let page = leaf(&keys, low, high);
        let n = Node::open(page.as_slice()).unwrap();
        let want = n.search(&probe).unwrap();
        prop_assert_eq!(n.search_near(&probe, Some(near)).unwrap(), want);
        let exact = match want { Ok(i) | Err(i) => i };
        prop_assert_eq!(n.search_near(&probe, Some(exact)).unwrap(), want);
        for (i, k) in keys.iter().enumerate() {
            prop_assert_eq!(n.search_near(k, Some(near)).unwrap(), n.search(k).unwrap());
            // Counted byte by byte: an independent reference.
            let bytewise = k.iter().zip(&probe).take_while(|(x, y)| x == y).count();
            prop_assert_eq!(n.common_with(i, &probe).unwrap(), bytewise);
        }
        // Insert (or replace) the probe with the wrong hint and with none: same page. (A
        // key outside the fences never comes to this node.)
        if fenced && !probe.starts_with(&head) {
            return Ok(());
        }
        let entry = inline_leaf_entry(&probe, b"v");
        let (mut hinted, mut plain) = (page.clone(), page.clone());
        let mut h = NodeMut::open(hinted.as_mut_slice()).unwrap();
        let mut p = NodeMut::open(plain.as_mut_slice()).unwrap();
        if want.is_ok() {
            h.replace(&entry, Some(near)).unwrap();
            p.replace(&entry, None).unwrap();
        } else {
            h.insert(&entry, Some(near)).unwrap();
            p.insert(&entry, None).unwrap();
        }
        prop_assert_eq!(&hinted, &plain);
        let (mut h, mut p) = (
            NodeMut::open(hinted.as_mut_slice()).unwrap(),
            NodeMut::open(plain.as_mut_slice()).unwrap(),
        );
        h.remove(&keys[0], Some(near)).unwrap();
        p.remove(&keys[0], None).unwrap();
        prop_assert_eq!(&hinted, &plain);
    }
}

/// What `hint_lower_bound` must return: the partition point of `hint_at(i) < hint`.
fn want(hints: &[u32], hint: u32) -> usize {
    hints.partition_point(|&h| h < hint)
}

proptest! {
    /// Interpolation search agrees with bisection on any non-decreasing hints — dense
    /// runs, gaps, long runs of one value, all values equal — and any probe, including
    /// probes below, between and above the hints; with the true last hint and with any
    /// other (a wrong `last` may cost reads, never the answer).
    #[test]
    fn hint_lower_bound_matches_partition_point(
        mut hints in proptest::collection::vec(
            prop_oneof![0u32..40, any::<u32>(), Just(u32::MAX), Just(0u32)], 0..400),
        probe in prop_oneof![0u32..40, any::<u32>(), Just(u32::MAX), Just(0u32)],
        wrong_last in prop_oneof![0u32..40, any::<u32>(), Just(u32::MAX), Just(0u32)],
    ) {
        hints.sort_unstable();
        let last = hints.last().copied().unwrap_or(0);
        for l in [last, wrong_last] {
            let got = hint_lower_bound(hints.len(), probe, l, |i| hints[i]);
            prop_assert_eq!(got, want(&hints, probe), "last {}", l);
            for &h in hints.iter().step_by(7) {
                let got = hint_lower_bound(hints.len(), h, l, |i| hints[i]);
                prop_assert_eq!(got, want(&hints, h), "last {}", l);
            }
        }
    }
}

proptest! {
    /// Invariant H under inserts at either end and in the middle and removals: keys
    /// that share a long head (one warehouse number, small integers) move the hint
    /// offset past the empty prefix of a node with infinite fences; after every change
    /// `check_search_keys` finds nothing and `search` agrees with the model for present
    /// keys and for probes that share less of the head, or more.
    #[test]
    fn hint_offset_follows_the_entries(
        head in proptest::collection::vec(0u8..3, 0..10),
        ops in proptest::collection::vec(
            (any::<bool>(), proptest::collection::vec(0u8..3, 0..6)), 1..80),
        probes in proptest::collection::vec(proptest::collection::vec(0u8..3, 0..14), 8),
    ) {
        let mut page = leaf(&[], None, None);
        let mut model = std::collections::BTreeSet::new();
        for (insert, tail) in ops {
            let key: Vec<u8> = head.iter().chain(&tail).copied().collect();
            let mut n = NodeMut::open(page.as_mut_slice()).unwrap();
            if insert && !model.contains(&key) {
                n.insert(&inline_leaf_entry(&key, b"v"), None).unwrap();
                model.insert(key);
            } else if !insert && model.remove(&key) {
                n.remove(&key, None).unwrap();
            }
            let v = Node::open(page.as_slice()).unwrap();
            prop_assert_eq!(v.check_search_keys().unwrap(), None);
            let keys: Vec<&Vec<u8>> = model.iter().collect();
            for (i, k) in keys.iter().enumerate() {
                prop_assert_eq!(v.search(k).unwrap(), Ok(i));
            }
            for p in &probes {
                prop_assert_eq!(v.search(p).unwrap(), keys.binary_search(&p));
                prop_assert_eq!(v.search_scan_start(p).unwrap(), keys.binary_search(&p));
            }
        }
    }
}

/// Keys that all begin with the same 6 bytes put the root's hints past them.
#[test]
fn shared_head_moves_the_hint_offset() {
    let keys: Vec<Vec<u8>> = (0u64..100)
        .map(|i| (1000 + i).to_be_bytes().to_vec())
        .collect();
    let page = leaf(&keys, None, None);
    let n = Node::open(page.as_slice()).unwrap();
    assert_eq!(n.hint_offset(), 6);
    assert_eq!(n.check_search_keys().unwrap(), None);
    assert_eq!(n.search(&1050u64.to_be_bytes()).unwrap(), Ok(50));
    assert_eq!(n.search(&5u64.to_be_bytes()).unwrap(), Err(0));
    assert_eq!(n.search(&(1u64 << 40).to_be_bytes()).unwrap(), Err(100));
}

// The 300 hints below are interpolated and have room for a window on either side.
const _: () = assert!(INTERPOLATION_WINDOW < 300 && INTERPOLATION_MIN_ENTRIES < 300);

/// Every probe of dense hints (consecutive integers, as 8-byte integer keys give in a
/// leaf) and of hints skewed so that the guess misses its window on either side.
#[test]
fn hint_lower_bound_on_dense_and_skewed_hints() {
    let n = 300usize;
    let dense: Vec<u32> = (0..n as u32).map(|i| 1000 + 2 * i).collect();
    // Most hints small, a few huge: interpolation guesses far too low.
    let skewed: Vec<u32> = (0..n as u32)
        .map(|i| {
            if i < 290 {
                i
            } else {
                u32::MAX - 10 + (i - 290)
            }
        })
        .collect();
    for hints in [dense, skewed] {
        for probe in hints
            .iter()
            .flat_map(|&h| [h.wrapping_sub(1), h, h.wrapping_add(1)])
        {
            assert_eq!(
                hint_lower_bound(n, probe, hints[n - 1], |i| hints[i]),
                want(&hints, probe),
                "probe {probe}"
            );
        }
    }
}

/// A changing page may return anything from `hint_at`: every index asked for stays
/// below `count`, and the result is at most `count`.
#[test]
fn hint_lower_bound_stays_in_bounds_on_garbage() {
    let state = std::cell::Cell::new(0x2545_f491_4f6c_dd1du64);
    let next = || {
        let mut x = state.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        state.set(x);
        x as u32
    };
    for count in [0usize, 1, 15, 16, 17, 64, 300] {
        for _ in 0..2000 {
            let probe = next();
            let got = hint_lower_bound(count, probe, next(), |i| {
                assert!(i < count, "index {i} of {count}");
                next()
            });
            assert!(got <= count);
        }
    }
}

/// `lower_bound` agrees with `partition_point` on every split of every short range,
/// including empty ranges and ranges that do not start at 0.
#[test]
fn lower_bound_matches_partition_point() {
    for start in 0..5usize {
        for end in start..start + 40 {
            for split in start..=end {
                let got = lower_bound(start, end, |i| i < split);
                let want = start
                    + (start..end)
                        .collect::<Vec<_>>()
                        .partition_point(|&i| i < split);
                assert_eq!(got, want, "[{start}, {end}) split at {split}");
            }
        }
    }
}

/// A probe's head and hint, taken from one read of the key where they can be, equal the
/// key's first 8 bytes and `hint_of` for every key length and hint offset around 8 bytes.
#[test]
fn probe_head_and_hint_match_the_key() {
    let bytes: Vec<u8> = (1..=14u8).map(|b| b.wrapping_mul(29) | 1).collect();
    for len in 0..=bytes.len() {
        let key = &bytes[..len];
        for offset in 0..=len + 2 {
            let p = search::Probe::new(key, offset);
            let mut head = [0u8; 8];
            head[..len.min(8)].copy_from_slice(&key[..len.min(8)]);
            assert_eq!(p.head, u64::from_be_bytes(head), "head of {len} bytes");
            assert_eq!(p.hint, hint_of(key, offset), "{len} bytes, offset {offset}");
        }
    }
}

/// The search without prefetches gives the search's answer for every key of a leaf large
/// enough to interpolate, for the keys between them and for keys past both ends.
#[test]
fn search_prefetched_agrees_with_search() {
    let keys: Vec<Vec<u8>> = (0..250u64)
        .map(|k| (1000 + 7 * k * k).to_be_bytes().to_vec())
        .collect();
    let page = leaf(&keys, None, None);
    let n = Node::open(page.as_slice()).unwrap();
    assert!(n.entry_count() >= INTERPOLATION_MIN_ENTRIES);
    for k in (0..700_000u64)
        .step_by(97)
        .chain([0, 999, 1000, 1001, u64::MAX])
    {
        let key = k.to_be_bytes();
        let want = n.search(&key).unwrap();
        assert_eq!(n.search_prefetched(&key).unwrap(), want, "key {k}");
    }
    for (i, key) in keys.iter().enumerate() {
        assert_eq!(n.search_prefetched(key).unwrap(), Ok(i));
    }
}
