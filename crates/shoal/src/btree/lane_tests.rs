//! B-tree changes in log lanes (`log::manager::lane`, transaction rules 11–13) when a
//! transaction moves between threads: lanes live in thread-local storage, so a transaction
//! that logs on one thread and then on another appends to two lanes, and its records must
//! still ascend (lane rule L2) for rollback and restart to walk its chain.

use super::tests::{assert_sound, key, options, value};
use super::BTree;
use crate::engine::Engine;
use crate::io::{FaultConfig, FaultStorage, Storage};
use crate::log::record::RecordKind;
use crate::log::{Durability, LogOptions, FIRST_LSN};
use crate::txn::Transaction;
use crate::types::{Lsn, TxnId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::Arc;
use std::time::Duration;

/// Lanes on from every user transaction's second page change; `Lazy` commits and a long
/// flush interval, so that no commit closes a chunk and the flusher closes only chunks idle
/// for 20 ms (lane rule L6): a thread's chunk stays open below another thread's newer one.
fn open(disk: &FaultStorage) -> Engine {
    open_with(disk, 1)
}

/// [`open`] with lanes on after `lane_after_records` page changes.
fn open_with(disk: &FaultStorage, lane_after_records: u32) -> Engine {
    let s: Arc<dyn Storage> = Arc::new(disk.clone());
    let log = LogOptions {
        segment_size_bytes: 1 << 20,
        durability: Durability::Lazy,
        lazy_flush_interval_ms: 1_000,
        lane_after_records,
        ..LogOptions::default()
    };
    Engine::open(s, &options(256), &log).unwrap()
}

/// Runs `work` on a new thread while this thread keeps its own lane's chunk open (a
/// transaction of at least two changes inserting into `busy_tree` about once a
/// millisecond, too slowly to fill the chunk, often enough that the flusher never finds it
/// idle), so that what `work` logs, in the worker's lane or globally, lies above it.
/// Returns this thread's `LogManager::thread_bound` when `work` is done: where its next
/// lane record would go.
fn on_worker_while_busy(e: &Engine, busy_tree: &BTree, work: impl FnOnce() + Send) -> Lsn {
    let done = AtomicBool::new(false);
    let mut busy = e.begin();
    let mut next = busy_tree.iter().count() as u64;
    insert_run(busy_tree, &mut busy, next, 2);
    next += 2;
    std::thread::scope(|s| {
        s.spawn(|| {
            work();
            done.store(true, Release);
        });
        while !done.load(Acquire) {
            insert_run(busy_tree, &mut busy, next, 1);
            next += 1;
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    let bound = e.log().thread_bound();
    busy.commit().unwrap();
    bound
}

/// Fails unless `tx`, back on this thread, would get a lane record below its last record
/// if its lower bound left out its previous LSN: the situation the test is about.
fn assert_moved_above(tx: &Transaction<'_>, bound: Lsn) {
    assert!(
        tx.last_lsn() > bound,
        "set-up: the transaction's last record {} is not above this thread's lane at {bound}",
        tx.last_lsn()
    );
}

/// Inserts keys `from..from + n` (values of 40 bytes) in `tx`.
fn insert_run(t: &BTree, tx: &mut Transaction<'_>, from: u64, n: u64) {
    for i in from..from + n {
        t.insert(tx, &key(i), &value(i, 40)).unwrap();
    }
}

/// Fails unless every transaction's records in the durable log ascend and each one's
/// `prev_lsn` is the record before it (lane rule L2); returns how many transactions (user
/// and system) it checked.
fn assert_chains_ascend(e: &Engine) -> usize {
    e.log().wait_all_durable().unwrap();
    let mut last: HashMap<TxnId, Lsn> = HashMap::new();
    for (lsn, r) in e.log().records_from(FIRST_LSN).unwrap() {
        if r.kind == RecordKind::Padding || r.txn_id == TxnId(0) {
            continue;
        }
        // Records come in LSN order, so the chain ascends iff each record's `prev_lsn` is
        // the transaction's record seen last (`ZERO` for its first).
        let prev = last.get(&r.txn_id).copied().unwrap_or(Lsn::ZERO);
        assert_eq!(
            r.prev_lsn, prev,
            "{:?} record at {lsn} of {:?} does not follow its previous one",
            r.kind, r.txn_id
        );
        last.insert(r.txn_id, lsn);
    }
    last.len()
}

/// A transaction that logs on the main thread, then on a worker thread (whose own
/// transaction has its lane's chunk open there, above the main thread's), then on the main
/// thread again, into pages it changed first, commits with its records in order; one moved
/// the same way and aborted is undone; one moved and cut short by a crash is rolled back
/// by restart, and the committed ones survive it. Fails if a lane record does not go above
/// its transaction's previous record (checked by removing `prev_lsn` from the lane's
/// lower bound in `TxnManager::log_change`).
#[test]
fn a_transaction_moved_between_threads_keeps_its_records_in_order() {
    let disk = FaultStorage::new(FaultConfig::new(11)).unwrap();
    let root;
    {
        let e = open(&disk);
        let t = BTree::create(e.txns(), e.space()).unwrap();
        let busy_tree = BTree::create(e.txns(), e.space()).unwrap();
        root = t.root();
        // Committed: 0..300 here, 300..600 on the worker, then 0..100 updated here.
        let mut moved = e.begin();
        insert_run(&t, &mut moved, 0, 300);
        let bound = on_worker_while_busy(&e, &busy_tree, || {
            let mut own = e.begin();
            insert_run(&t, &mut own, 100_000, 200);
            insert_run(&t, &mut moved, 300, 300);
            insert_run(&t, &mut own, 100_200, 200);
            own.commit().unwrap();
        });
        assert_moved_above(&moved, bound);
        for i in 0..100 {
            t.update(&mut moved, &key(i), &value(i + 1, 40)).unwrap();
        }
        moved.commit().unwrap();
        // Aborted after moving: its inserts, updates and deletes are undone.
        let mut aborted = e.begin();
        insert_run(&t, &mut aborted, 1_000, 200);
        let bound = on_worker_while_busy(&e, &busy_tree, || {
            for i in 100..200 {
                t.update(&mut aborted, &key(i), b"changed").unwrap();
                t.delete(&mut aborted, &key(i + 300)).unwrap();
            }
            insert_run(&t, &mut aborted, 2_000, 200);
        });
        assert_moved_above(&aborted, bound);
        for i in 0..100 {
            t.delete(&mut aborted, &key(i)).unwrap();
        }
        aborted.abort().unwrap();
        let want = |i: u64| value(if i < 100 { i + 1 } else { i }, 40);
        for i in (0..600).chain(100_000..100_400) {
            assert_eq!(t.get(&key(i)).unwrap(), Some(want(i)), "key {i}");
        }
        assert_eq!(t.iter().count(), 1_000);
        assert_sound(&t);
        // A loser that moved: durable, uncommitted, its pages written, when the crash comes.
        let mut loser = e.begin();
        insert_run(&t, &mut loser, 5_000, 200);
        let bound = on_worker_while_busy(&e, &busy_tree, || {
            for i in 300..400 {
                t.delete(&mut loser, &key(i)).unwrap();
            }
            insert_run(&t, &mut loser, 6_000, 200);
        });
        assert_moved_above(&loser, bound);
        for i in 0..100 {
            t.delete(&mut loser, &key(i)).unwrap();
        }
        assert!(assert_chains_ascend(&e) >= 4);
        e.pool().flush_all().unwrap();
        disk.crash_now();
        std::mem::forget(loser);
    }
    disk.restart();
    let e = open(&disk);
    assert_eq!(e.restart_report().losers, 1, "{:?}", e.restart_report());
    let t = BTree::open(e.pool().clone(), e.space().clone(), root).unwrap();
    let got: Vec<_> = t.iter().collect::<crate::Result<_>>().unwrap();
    let want: Vec<_> = (0..600)
        .chain(100_000..100_400)
        .map(|i| (key(i), value(if i < 100 { i + 1 } else { i }, 40)))
        .collect();
    assert!(got == want, "{} keys after restart, not 1,000", got.len());
    assert_sound(&t);
    e.close().unwrap();
}

/// A bulk transaction turns its thread's lane on; the next transaction that commits with
/// no more page changes than the threshold turns it off, so the thread's later short
/// transactions claim no chunks and pad nothing (transaction rule 11); the next bulk one
/// turns it on again.
#[test]
fn a_short_commit_turns_the_lane_off_until_the_next_bulk_transaction() {
    let disk = FaultStorage::new(FaultConfig::new(12)).unwrap();
    let e = open_with(&disk, 20);
    let t = BTree::create(e.txns(), e.space()).unwrap();
    let chunks = || e.log().stats().lane_chunks;
    let mut tx = e.begin();
    insert_run(&t, &mut tx, 0, 100);
    tx.commit().unwrap();
    assert!(chunks() > 0, "a bulk transaction used no lane");
    let mut tx = e.begin();
    insert_run(&t, &mut tx, 100, 3);
    tx.commit().unwrap();
    let (after_off, padding) = (chunks(), e.log().stats().lane_padding_bytes);
    for i in 0..50 {
        let mut tx = e.begin();
        insert_run(&t, &mut tx, 1_000 + 3 * i, 3);
        tx.commit().unwrap();
    }
    assert_eq!(chunks(), after_off, "short transactions claimed chunks");
    assert_eq!(e.log().stats().lane_padding_bytes, padding);
    let mut tx = e.begin();
    insert_run(&t, &mut tx, 10_000, 100);
    tx.commit().unwrap();
    assert!(
        chunks() > after_off,
        "the next bulk transaction used no lane"
    );
    assert_eq!(t.iter().count(), 353);
    assert_sound(&t);
    e.close().unwrap();
}

/// A short transaction that commits while a bulk transaction of the same thread is still
/// open leaves the lane on (transaction rule 11, `LogManager::hold_lane`): the bulk
/// transaction goes on claiming chunks. Once no bulk transaction is open, the next short
/// commit turns the lane off.
#[test]
fn a_short_commit_leaves_the_lane_on_while_a_bulk_transaction_is_open() {
    let disk = FaultStorage::new(FaultConfig::new(14)).unwrap();
    let e = open_with(&disk, 20);
    let t = BTree::create(e.txns(), e.space()).unwrap();
    let chunks = || e.log().stats().lane_chunks;
    let mut bulk = e.begin();
    insert_run(&t, &mut bulk, 0, 100);
    assert!(chunks() > 0, "a bulk transaction used no lane");
    let mut short = e.begin();
    insert_run(&t, &mut short, 1_000, 3);
    short.commit().unwrap();
    let before = chunks();
    insert_run(&t, &mut bulk, 100, 400);
    assert!(
        chunks() > before,
        "the open bulk transaction lost its lane to a short commit"
    );
    bulk.commit().unwrap();
    let mut short = e.begin();
    insert_run(&t, &mut short, 2_000, 3);
    short.commit().unwrap();
    let after_off = chunks();
    for i in 0..20 {
        let mut tx = e.begin();
        insert_run(&t, &mut tx, 3_000 + 3 * i, 3);
        tx.commit().unwrap();
    }
    assert_eq!(
        chunks(),
        after_off,
        "the lane stayed on after the bulk transaction"
    );
    assert_eq!(t.iter().count(), 566);
    assert_sound(&t);
    e.close().unwrap();
}
