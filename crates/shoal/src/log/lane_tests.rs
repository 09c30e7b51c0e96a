//! Tests of log lanes (`manager::lane`): what lands in the log, the page rule, closing by
//! waiters and by the flusher, and many lanes with waiters at once.

use super::record::{LogRecord, RecordKind};
use super::*;
use crate::io::{FaultConfig, FaultStorage, Storage};
use crate::types::{Lsn, PageId, TxnId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::Arc;

/// An `Update` of transaction `txn` whose redo payload (`len` bytes) names it and `seq`.
fn rec(txn: u64, seq: u32, len: usize) -> LogRecord {
    let mut redo = vec![txn as u8; len.max(8)];
    redo[..4].copy_from_slice(&seq.to_le_bytes());
    LogRecord {
        kind: RecordKind::Update,
        txn_id: TxnId(txn),
        prev_lsn: Lsn::ZERO,
        page_id: PageId(txn),
        undo_next_lsn: Lsn::ZERO,
        redo,
        undo: vec![1],
    }
}

/// `Lazy` options with a ring of `buffer` bytes.
fn options(buffer: usize) -> LogOptions {
    LogOptions {
        segment_size_bytes: 256 << 10,
        buffer_size_bytes: buffer,
        durability: Durability::Lazy,
        ..LogOptions::default()
    }
}

fn open(buffer: usize) -> (Arc<dyn Storage>, Arc<LogManager>) {
    let st: Arc<dyn Storage> = Arc::new(FaultStorage::new(FaultConfig::new(7)).unwrap());
    let log = LogManager::open(st.clone(), &options(buffer)).unwrap();
    (st, log)
}

/// Every record of the log up to its durable end, by LSN.
fn read_all(log: &LogManager) -> Vec<(Lsn, LogRecord)> {
    log.wait_all_durable().unwrap();
    log.records_from(FIRST_LSN).unwrap()
}

/// Appends in a lane land in chunks, in order, above each `after`; an `after` above the
/// chunk moves the lane to a new chunk; the log read back is the records and `Padding`
/// records that cover every byte between them, and a reopened log ends where it did.
#[test]
fn lane_records_read_back_with_paddings_between() {
    let (st, log) = open(1 << 20);
    let mut lane = Lane::default();
    let mut mine = Vec::new();
    for i in 0..400u32 {
        // Every 50th record must lie above a record appended globally just before it (a
        // page another thread changed): the lane's chunk is closed and a new one taken.
        let after = if i % 50 == 49 {
            log.append(&rec(9, i, 40)).unwrap()
        } else {
            Lsn::ZERO
        };
        let lsn = log
            .append_in_lane(&mut lane, &rec(1, i, 100), after)
            .unwrap();
        assert!(lsn > after, "record {i} at {lsn}, not above {after}");
        if let Some(&(prev, _)) = mine.last() {
            assert!(lsn > prev, "the lane's records ascend");
        }
        mine.push((lsn, i));
    }
    log.close_chunks_below(u64::MAX);
    let all = read_all(&log);
    let mut pos = FIRST_LSN.0;
    let mut seen = Vec::new();
    for (lsn, r) in &all {
        assert_eq!(lsn.0, pos, "a gap or an overlap before {lsn}");
        pos += r.encoded_len() as u64;
        match (r.kind, r.txn_id.0) {
            (RecordKind::Update, 1) => {
                seen.push((*lsn, u32::from_le_bytes(r.redo[..4].try_into().unwrap())))
            }
            (RecordKind::Update, 9) => {}
            (RecordKind::Padding, 0) => assert!(r.redo.iter().all(|&b| b == 0)),
            other => panic!("unexpected record {other:?} at {lsn}"),
        }
    }
    assert_eq!(seen, mine, "every lane record once, where it was appended");
    let s = log.stats();
    assert!(
        s.lane_chunks >= 8,
        "at least one chunk per `after` jump: {s:?}"
    );
    assert!(s.lane_padding_bytes > 0);
    let end = log.end_lsn();
    log.close().unwrap();
    drop(log);
    let again = LogManager::open(st, &options(1 << 20)).unwrap();
    assert_eq!(
        again.end_lsn(),
        end,
        "the reopened log ends after the last padding"
    );
    drop(lane);
}

/// A chunk left open by an idle owner does not hold the log back: a commit past it closes
/// it (rule L6), and the flusher closes it after two rounds without a claim.
#[test]
fn an_idle_chunk_is_closed_by_a_waiter_and_by_the_flusher() {
    let (_st, log) = open(1 << 20);
    let mut lane = Lane::default();
    let a = log
        .append_in_lane(&mut lane, &rec(1, 0, 64), Lsn::ZERO)
        .unwrap();
    // A record of another thread past the chunk, then a wait for it.
    let b = log.append(&rec(2, 0, 64)).unwrap();
    assert!(b > a);
    log.wait_durable(b).unwrap();
    assert!(log.durable_lsn() > b);
    // The lane's next record finds its chunk closed and takes a new one, above `b`.
    let c = log
        .append_in_lane(&mut lane, &rec(1, 1, 64), Lsn::ZERO)
        .unwrap();
    assert!(c > b);
    // Left idle, the new chunk is closed by the flusher (Lazy: it runs every 10 ms).
    let d = log.append(&rec(2, 1, 64)).unwrap();
    crate::testing::eventually("the flusher to pass an idle chunk", || {
        log.durable_lsn() > d
    });
    let kinds: Vec<_> = read_all(&log).iter().map(|(_, r)| r.kind).collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == RecordKind::Padding).count(),
        2
    );
    drop(lane);
}

/// Many lanes, global appenders and waiters at once on a small ring (so chunks are closed
/// for room too): every record is read back exactly once at the LSN its append returned,
/// each thread's records ascend, and paddings fill exactly the gaps. A padding written over
/// a claimed record, or a chunk that is never closed (a hang), fails it.
#[test]
fn lanes_appenders_and_waiters_race() {
    const THREADS: u64 = 4;
    const PER_THREAD: u32 = 3000;
    let (_st, log) = open(64 << 10);
    let stop = Arc::new(AtomicBool::new(false));
    let waiter = {
        let (log, stop) = (log.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Acquire) {
                let end = log.end_lsn();
                if end > FIRST_LSN {
                    log.wait_durable(Lsn(end.0 - 1)).unwrap();
                }
                std::thread::yield_now();
            }
        })
    };
    let workers: Vec<_> = (1..=THREADS)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                let mut lane = Lane::default();
                let mut got = Vec::new();
                let mut last = Lsn::ZERO;
                for i in 0..PER_THREAD {
                    let len = 40 + ((i as usize * 13 + t as usize * 7) % 300);
                    let lsn = if t == THREADS && i % 3 == 0 {
                        log.append(&rec(t, i, len)).unwrap()
                    } else {
                        // Now and then above the log's end, as for a page just changed
                        // by another thread.
                        let after = if i % 97 == 0 {
                            Lsn(log.end_lsn().0 - 1)
                        } else {
                            last
                        };
                        let l = log
                            .append_in_lane(&mut lane, &rec(t, i, len), after)
                            .unwrap();
                        assert!(l > after);
                        l
                    };
                    assert!(lsn > last, "thread {t}: {lsn} after {last}");
                    last = lsn;
                    got.push((lsn, i));
                }
                log.close_chunks_below(u64::MAX);
                drop(lane);
                got
            })
        })
        .collect();
    let mut expected: HashMap<Lsn, (u64, u32)> = HashMap::new();
    for (t, w) in workers.into_iter().enumerate() {
        for (lsn, i) in w.join().unwrap() {
            assert!(
                expected.insert(lsn, (t as u64 + 1, i)).is_none(),
                "two records at {lsn}"
            );
        }
    }
    stop.store(true, Release);
    waiter.join().unwrap();
    let all = read_all(&log);
    let mut pos = FIRST_LSN.0;
    let mut found = 0;
    for (lsn, r) in &all {
        assert_eq!(lsn.0, pos, "a gap or an overlap before {lsn}");
        pos += r.encoded_len() as u64;
        if r.kind == RecordKind::Padding {
            continue;
        }
        let seq = u32::from_le_bytes(r.redo[..4].try_into().unwrap());
        assert_eq!(
            expected.get(lsn),
            Some(&(r.txn_id.0, seq)),
            "record at {lsn}"
        );
        found += 1;
    }
    assert_eq!(found, expected.len(), "every record read back");
    assert_eq!(pos, log.end_lsn().0, "the log ends after its last record");
}

/// Stopping the log (an engine dropped, not closed) with a chunk open writes everything appended,
/// past the chunk: its last rounds close every chunk (rule L6). Without that, a `Lazy`
/// bulk load's last commits were lost at the next open.
#[test]
fn dropping_the_log_writes_past_an_open_chunk() {
    let (st, log) = open(1 << 20);
    let mut lane = Lane::default();
    log.append_in_lane(&mut lane, &rec(1, 0, 64), Lsn::ZERO)
        .unwrap();
    let global = log.append(&rec(2, 0, 64)).unwrap();
    let end = log.end_lsn();
    // What dropping an engine does (its `Drop` stops the log's threads, then drops it).
    log.stop_threads();
    drop(log);
    let again = LogManager::open(st, &options(1 << 20)).unwrap();
    assert!(
        again.end_lsn() >= end,
        "the record at {global} was lost: end {} < {end}",
        again.end_lsn()
    );
    assert_eq!(again.read_record(global).unwrap().txn_id, TxnId(2));
    drop(lane);
}
