//! The next key of an insert or delete at the end of a leaf lies on the leaf to the right.
//! Reading it is done under the leaf's X latch, so it must not be I/O (DESIGN.md principle
//! 6): a right sibling out of the pool is read in after the latch is dropped, and the write
//! starts over (`tree/write.rs`, `next_key_latched`). The debug build's audit
//! (`sync::held::miss_io_under_latch`) counts any read started under a latch.

use super::node::Node;
use super::tests::{key, open, value};
use super::{BTree, LockSpace};
use crate::engine::Engine;
use crate::io::{FaultConfig, FaultStorage};
use crate::sync::held::miss_io_under_latch;
use crate::PageId;

/// The last key of the tree's first leaf (as a number), that leaf's high fence and its
/// right sibling, found by following the leftmost children from the root.
fn first_leaf_end(e: &Engine, t: &BTree) -> (u64, Vec<u8>, PageId) {
    let mut pid = t.root;
    loop {
        let g = e.pool().fix_shared(pid).unwrap();
        let n = Node::open(g.bytes()).unwrap();
        if !n.is_leaf() {
            pid = n.child0;
            continue;
        }
        let last = n.key(n.entry_count() - 1).unwrap();
        let last = u64::from_be_bytes(last.try_into().unwrap());
        return (last, n.high_fence().unwrap().unwrap(), n.right);
    }
}

/// Fills the pool with the pages of another tree, so the first tree's pages leave it.
fn evict(e: &Engine, other: &BTree, round: u64) {
    let mut tx = e.begin();
    for i in 0..600 {
        other
            .upsert(&mut tx, &key(i), &value(i + round, 200))
            .unwrap();
    }
    tx.commit().unwrap();
}

#[test]
fn a_write_at_a_leafs_end_reads_the_right_sibling_with_no_latch_held() {
    let disk = FaultStorage::new(FaultConfig::new(41)).unwrap();
    let e = open(&disk, 32);
    let t = BTree::create(e.txns(), e.space())
        .unwrap()
        .with_locking(LockSpace { db: 1, table: 7 });
    let other = BTree::create(e.txns(), e.space()).unwrap();
    let mut tx = e.begin();
    for i in 0..600 {
        t.insert(&mut tx, &key(2 * i), &value(i, 40)).unwrap();
    }
    tx.commit().unwrap();
    let (last, high, right) = first_leaf_end(&e, &t);
    // The set-up: `last + 1` belongs at the end of the first leaf, whose right sibling is
    // out of the pool.
    let k = key(last + 1);
    assert!(right.is_valid());
    assert!(
        k.as_slice() < high.as_slice(),
        "key {} is past the fence",
        last + 1
    );
    evict(&e, &other, 0);
    assert!(!e.pool().is_resident(right), "the right sibling stayed in");

    let before = miss_io_under_latch();
    let mut tx = e.begin();
    t.insert(&mut tx, &k, &value(1, 40)).unwrap();
    tx.commit().unwrap();
    assert_eq!(
        miss_io_under_latch(),
        before,
        "the insert read under its latch"
    );
    assert_eq!(first_leaf_end(&e, &t).0, last + 1, "the key went elsewhere");
    assert!(e.pool().is_resident(right), "the sibling was never read");

    // A delete of a leaf's last key locks the next key too: the same read.
    evict(&e, &other, 1);
    assert!(!e.pool().is_resident(right), "the right sibling stayed in");
    let mut tx = e.begin();
    assert_eq!(t.delete(&mut tx, &k).unwrap(), Some(value(1, 40)));
    tx.commit().unwrap();
    assert_eq!(
        miss_io_under_latch(),
        before,
        "the delete read under its latch"
    );
    assert!(e.pool().is_resident(right), "the sibling was never read");

    assert!(t.verify().unwrap().is_ok());
    assert_eq!(t.verify().unwrap().keys, 600);
    e.close().unwrap();
}
