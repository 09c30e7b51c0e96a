//! Tests of the batched lookups (`batch.rs`, btree rule 15) and of their locking entry
//! point: every answer equals the single lookup's, in the order asked, for trees of one and
//! more levels, pages out of the pool, overflow values, absent and repeated keys; limits
//! before any read; READ COMMITTED reads of uncommitted rows go through the lock path. The
//! race with splits, merges and evictions is in `tests/btree_stress.rs` (its readers).

use super::tests::{key, open, value};
use super::{BTree, LockSpace};
use crate::engine::Engine;
use crate::error::Error;
use crate::io::{FaultConfig, FaultStorage};
use crate::txn::IsolationLevel;
use proptest::prelude::*;

/// Every key's answer from `get_many` equals its `get`.
fn assert_same_as_get(t: &BTree, keys: &[Vec<u8>]) {
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let got = t.get_many(&refs).unwrap();
    assert_eq!(got.len(), keys.len());
    for (k, v) in keys.iter().zip(got) {
        assert_eq!(v, t.get(k).unwrap(), "key {k:02x?}");
    }
}

/// A tree locking as table `table` of database 9, holding the even keys `0, 2, ..,
/// 2(n - 1)` with values of `len(i)` bytes, committed.
fn locked_tree(e: &Engine, table: u32, n: u64, len: impl Fn(u64) -> usize) -> BTree {
    let t = BTree::create(e.txns(), e.space())
        .unwrap()
        .with_locking(LockSpace { db: 9, table });
    let mut tx = e.begin();
    for i in 0..n {
        t.insert(&mut tx, &key(i * 2), &value(i, len(i))).unwrap();
    }
    tx.commit().unwrap();
    t
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Trees of a few to a few thousand keys (one to three levels) in a pool smaller than
    /// the larger ones, some values in overflow chains; probes present, absent, repeated,
    /// in any order and in lists longer than a group.
    #[test]
    fn get_many_answers_as_get_does(
        n in prop_oneof![1u64..40, 500u64..4000],
        probes in proptest::collection::vec(0u64..5000, 0..90),
        big_every in 50u64..400,
    ) {
        let disk = FaultStorage::new(FaultConfig::new(7)).unwrap();
        let e = open(&disk, 64);
        let t = BTree::create(e.txns(), e.space()).unwrap();
        let mut tx = e.begin();
        for i in (0..n).map(|i| i * 2) {
            let len = if i % big_every == 0 { 3000 } else { 24 };
            t.insert(&mut tx, &key(i), &value(i, len)).unwrap();
        }
        tx.commit().unwrap();
        let keys: Vec<Vec<u8>> = probes.iter().map(|&p| key(p)).collect();
        assert_same_as_get(&t, &keys);
        let mut sorted = keys.clone();
        sorted.sort();
        assert_same_as_get(&t, &sorted);
    }
}

#[test]
fn get_many_of_nothing_and_of_an_empty_tree() {
    let disk = FaultStorage::new(FaultConfig::new(1)).unwrap();
    let e = open(&disk, 64);
    let t = BTree::create(e.txns(), e.space()).unwrap();
    assert!(t.get_many(&[]).unwrap().is_empty());
    assert_eq!(t.get_many(&[b"a", b""]).unwrap(), vec![None, None]);
}

#[test]
fn get_many_checks_every_key_before_reading() {
    let disk = FaultStorage::new(FaultConfig::new(1)).unwrap();
    let e = open(&disk, 64);
    let t = BTree::create(e.txns(), e.space()).unwrap();
    let long = vec![7u8; t.max_key_bytes() + 1];
    let err = t.get_many(&[b"a", &long]).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
    let mut tx = e.begin();
    let err = t.get_many_in(&mut tx, &[&long]).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
}

/// At READ COMMITTED the batch reads without locks what Commit_LSN shows committed, and
/// sends the rest through the lock path: a transaction's own uncommitted insert is seen
/// (its leaf's page LSN is past the bound) and so is everything committed; at
/// SERIALIZABLE every key is read under its lock.
#[test]
fn get_many_in_reads_as_get_in() {
    let disk = FaultStorage::new(FaultConfig::new(3)).unwrap();
    let e = open(&disk, 256);
    let t = locked_tree(&e, 1, 2000, |_| 16);
    let probes: Vec<Vec<u8>> = [1999u64, 4, 3, 4, 3998, 5000, 1]
        .iter()
        .map(|&k| key(k))
        .collect();
    let refs: Vec<&[u8]> = probes.iter().map(Vec::as_slice).collect();

    let mut rc = e.begin_with(IsolationLevel::ReadCommitted);
    t.insert(&mut rc, &key(1), b"mine, uncommitted").unwrap();
    let got = t.get_many_in(&mut rc, &refs).unwrap();
    let want: Vec<Option<Vec<u8>>> = probes
        .iter()
        .map(|k| t.get_in(&mut rc, k).unwrap())
        .collect();
    assert_eq!(got, want);
    assert_eq!(got[6].as_deref(), Some(&b"mine, uncommitted"[..]));
    assert_eq!(got[1], Some(value(2, 16)));
    assert_eq!(got[5], None);
    rc.abort().unwrap();

    let mut sr = e.begin_with(IsolationLevel::Serializable);
    let got = t.get_many_in(&mut sr, &refs).unwrap();
    assert_eq!(
        got,
        want.iter()
            .take(6)
            .cloned()
            .chain([None])
            .collect::<Vec<_>>()
    );
    // At least one long S lock per distinct key (4 and 3 are asked for twice).
    assert!(
        sr.row_lock_count() >= 5,
        "{} row locks",
        sr.row_lock_count()
    );
    sr.commit().unwrap();
}

/// A READ COMMITTED batch never returns another transaction's uncommitted row: the key's
/// leaf is past the Commit_LSN bound, so it waits for the writer's lock, and after the
/// writer rolls back it finds the key absent (a batch that believed the page would return
/// the uncommitted value).
#[test]
fn get_many_in_waits_for_an_uncommitted_writer() {
    let disk = FaultStorage::new(FaultConfig::new(4)).unwrap();
    let e = open(&disk, 256);
    let t = locked_tree(&e, 2, 500, |_| 16);
    let mut writer = e.begin();
    t.insert(&mut writer, &key(7), b"uncommitted").unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let mut rc = e.begin_with(IsolationLevel::ReadCommitted);
            let got = t.get_many_in(&mut rc, &[&key(6), &key(7)]).unwrap();
            done.store(true, std::sync::atomic::Ordering::SeqCst);
            rc.commit().unwrap();
            got
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(
            !done.load(std::sync::atomic::Ordering::SeqCst),
            "the batch did not wait for the writer's lock"
        );
        writer.abort().unwrap();
        assert_eq!(reader.join().unwrap(), vec![Some(value(3, 16)), None]);
    });
}

/// `read_many_for_update` locks every key and reads what `read_for_update` reads; each read
/// can be written with `write_read` in any order, also several on one leaf (after the first
/// write the others' leaf versions are stale and take the ordinary path), and over a key
/// whose value lives in an overflow chain. A key over the limit fails before any lock.
#[test]
fn read_many_for_update_then_write_each() {
    let disk = FaultStorage::new(FaultConfig::new(5)).unwrap();
    let e = open(&disk, 256);
    let t = locked_tree(&e, 3, 3000, |i| if i == 40 { 3000 } else { 20 });

    let mut tx = e.begin();
    let long = vec![1u8; t.max_key_bytes() + 1];
    assert!(t.read_many_for_update(&mut tx, &[&key(2), &long]).is_err());
    assert_eq!(
        tx.row_lock_count(),
        0,
        "a lock was taken before the key check"
    );
    // Neighbours on one leaf, one far away, one absent, one with an overflow value.
    let ks = [4u64, 6, 8, 4000, 5, 80];
    let keys: Vec<Vec<u8>> = ks.iter().map(|&k| key(k)).collect();
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let reads = t.read_many_for_update(&mut tx, &refs).unwrap();
    assert!(tx.row_lock_count() >= ks.len());
    for (&k, r) in ks.iter().zip(&reads) {
        let want = (k % 2 == 0).then(|| value(k / 2, if k == 80 { 3000 } else { 20 }));
        assert_eq!(r.as_ref().map(|r| r.value().to_vec()), want, "key {k}");
    }
    for (&k, r) in ks.iter().zip(reads).rev() {
        if let Some(r) = r {
            t.write_read(&mut tx, &key(k), r, format!("new {k}").as_bytes())
                .unwrap();
        }
    }
    tx.commit().unwrap();
    for k in [4u64, 6, 8, 4000, 80] {
        assert_eq!(
            t.get(&key(k)).unwrap(),
            Some(format!("new {k}").into_bytes())
        );
    }
    assert_eq!(t.get(&key(5)).unwrap(), None);
    super::tests::assert_sound(&t);
}
