//! Tests of the split plan (`SplitPlan::choose`): whatever a node holds — keys from empty
//! to the longest allowed, values from empty to the longest inline, fences short or long —
//! and wherever the key that needs room goes, both halves of the split it picks fit a
//! page, built as images (the right half, root growth's halves) and as the truncation that
//! makes a split's left half. CI's model test once found a plan whose right half did not
//! fit; this looks for that class of plan directly.

use super::super::node::{
    inline_leaf_entry, inner_entry, max_entry_bytes, max_key_bytes, usable_bytes, Node, NodeImage,
    NodeMut, KEY_LEN_BYTES,
};
use super::super::tests::{cases, open};
use super::{BTree, SplitPlan};
use crate::io::{FaultConfig, FaultStorage};
use crate::types::PageId;
use proptest::prelude::*;

const PAGE: usize = 4096;

/// A key of `len` bytes (clamped to the longest allowed) from `seed`.
fn key_of(len: usize, seed: u64) -> Vec<u8> {
    let len = len.min(max_key_bytes(PAGE));
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 56) as u8
        })
        .collect()
}

/// Key lengths from the extremes: short (0–3 bytes), medium, and near the longest.
fn key_len() -> impl Strategy<Value = usize> {
    prop_oneof![3 => 0usize..4, 1 => 20usize..60, 2 => 440usize..520]
}

/// A node of `level` as full as the candidates (tried in their order, each kept if the node
/// still fits) make it, with no high fence and, as low fence, the first key itself when
/// `long_low` (else minus infinity); `None` if fewer than two entries fit.
fn full_node(level: u16, candidates: &[(usize, u64, usize)], long_low: bool) -> Option<NodeImage> {
    let image_of = |entries: &[(Vec<u8>, Vec<u8>)]| NodeImage {
        level,
        child0: if level > 0 {
            PageId(5)
        } else {
            PageId::INVALID
        },
        low: entries.first().filter(|_| long_low).map(|(k, _)| k.clone()),
        entries: entries.iter().map(|(_, r)| r.clone()).collect(),
        ..NodeImage::empty_root(PageId(3))
    };
    let mut entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for &(len, seed, value_len) in candidates {
        let k = key_of(len, seed);
        if entries.iter().any(|(e, _)| *e == k) {
            continue;
        }
        let rec = if level > 0 {
            inner_entry(&k, PageId(seed % 1000 + 10))
        } else {
            let max_value = max_entry_bytes(PAGE) - KEY_LEN_BYTES - 1 - k.len();
            inline_leaf_entry(&k, &vec![7; value_len.min(max_value)])
        };
        let mut next = entries.clone();
        next.push((k, rec));
        next.sort();
        if image_of(&next).used_bytes() <= usable_bytes(PAGE) {
            entries = next;
        }
    }
    (entries.len() >= 2).then(|| image_of(&entries))
}

/// Fails unless `image` formats a page.
fn assert_fits(image: &NodeImage, what: &str) {
    let mut page = vec![0u8; PAGE];
    assert!(
        image.used_bytes() <= usable_bytes(PAGE),
        "{what}: {} bytes of {}",
        image.used_bytes(),
        usable_bytes(PAGE)
    );
    image.write_to(page.as_mut_slice(), PageId(8)).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(256)))]

    /// Every split plan leaves two halves that fit a page: the right half and both of root
    /// growth's halves as images, the left half as a split makes it (a truncation under the
    /// separator as high fence).
    #[test]
    fn every_split_plan_leaves_halves_that_fit(
        level in 0u16..2,
        candidates in proptest::collection::vec(
            (key_len(), any::<u64>(), prop_oneof![2 => 0usize..8, 1 => 100usize..1000]),
            2..300,
        ),
        long_low in any::<bool>(),
        (probe_len, probe_seed) in (key_len(), any::<u64>()),
        run in any::<bool>(),
    ) {
        let Some(image) = full_node(level, &candidates, long_low) else {
            return Ok(());
        };
        let mut page = vec![0u8; PAGE];
        image.write_to(page.as_mut_slice(), PageId(3)).unwrap();
        let disk = FaultStorage::new(FaultConfig::new(61)).unwrap();
        let e = open(&disk, 16);
        let tree = BTree::create(e.txns(), e.space()).unwrap();
        let n = Node::open(page.as_slice()).unwrap();
        // A key from the node (an update that grows its entry) or a new one.
        let probe = if probe_seed % 3 == 0 {
            n.key((probe_seed as usize / 3) % n.entry_count()).unwrap()
        } else {
            key_of(probe_len, probe_seed)
        };
        let plan = SplitPlan::choose(&n, &tree, &probe, run).unwrap();
        prop_assert!(plan.keep <= n.entry_count());
        let right = plan.right_half(&n).unwrap();
        assert_fits(&right, "right half");
        assert_fits(&plan.left_half(&n, PageId(9)).unwrap(), "left half");
        let mut left = page.clone();
        NodeMut::open(left.as_mut_slice())
            .unwrap()
            .truncate(plan.keep, &Some(plan.sep.clone()), PageId(9))
            .unwrap();
        e.close().unwrap();
    }
}
