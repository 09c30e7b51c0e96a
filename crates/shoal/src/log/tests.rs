//! Log manager tests on the fault-injecting storage.

use super::record::{LogRecord, RecordKind};
use super::*;
use crate::buffer::WalHook;
use crate::error::Error;
use crate::io::{FaultConfig, FaultKind, FaultRule, FaultStorage, OpClass, Storage};
use crate::testing::eventually;
use crate::types::{Lsn, PageId, TxnId};
use std::sync::Arc;

fn update(txn: u64, prev: Lsn, payload: u8, len: usize) -> LogRecord {
    LogRecord {
        kind: RecordKind::Update,
        txn_id: TxnId(txn),
        prev_lsn: prev,
        page_id: PageId(txn),
        undo_next_lsn: Lsn::ZERO,
        redo: vec![payload; len],
        undo: vec![payload ^ 0xff; len / 2],
    }
}

fn commit_record(txn: u64, prev: Lsn) -> LogRecord {
    LogRecord {
        kind: RecordKind::Commit,
        txn_id: TxnId(txn),
        prev_lsn: prev,
        page_id: PageId::INVALID,
        undo_next_lsn: Lsn::ZERO,
        redo: Vec::new(),
        undo: Vec::new(),
    }
}

fn small() -> LogOptions {
    LogOptions {
        segment_size_bytes: 64 << 10,
        buffer_size_bytes: 64 << 10,
        ..LogOptions::default()
    }
}

fn storage(seed: u64) -> (FaultStorage, Arc<dyn Storage>) {
    let fs = FaultStorage::new(FaultConfig::new(seed)).unwrap();
    let dyn_fs: Arc<dyn Storage> = Arc::new(fs.clone());
    (fs, dyn_fs)
}

/// Commits transactions `txns`, each an update of `len` payload bytes and a commit record;
/// returns the commit records' LSNs.
fn commit_each(log: &LogManager, txns: std::ops::Range<u64>, len: usize) -> Vec<Lsn> {
    txns.map(|i| {
        let u = log.append(&update(i, Lsn::ZERO, i as u8, len)).unwrap();
        let c = log.append(&commit_record(i, u)).unwrap();
        log.commit(c).unwrap();
        c
    })
    .collect()
}

/// The LSNs of the records from the first one up to the durable end.
fn lsns(log: &LogManager) -> Vec<Lsn> {
    log.records_from(FIRST_LSN)
        .unwrap()
        .iter()
        .map(|(l, _)| *l)
        .collect()
}

/// Appends survive close and reopen; the reopened log continues exactly at the old end, and
/// records read back equal what was appended (across several segments and ring laps).
#[test]
fn append_close_reopen_read_back() {
    let (_fs, st) = storage(1);
    let log = LogManager::open(st.clone(), &small()).unwrap();
    assert_eq!(log.end_lsn(), FIRST_LSN);
    let mut written = Vec::new();
    let mut prev = Lsn::ZERO;
    for i in 0..3000u64 {
        let r = update(7, prev, i as u8, 40 + (i as usize % 300));
        let lsn = log.append(&r).unwrap();
        assert!(lsn > prev);
        written.push((lsn, r));
        prev = lsn;
    }
    let end = log.end_lsn();
    log.close().unwrap();
    let s = log.stats();
    assert_eq!(s.appends, 3000);
    assert!(s.syncs >= 1 && s.flushes >= 1, "{s:?}");
    assert!(matches!(
        log.append(&update(1, Lsn::ZERO, 0, 1)),
        Err(Error::LogFailed { .. })
    ));
    drop(log);

    let log = LogManager::open(st, &small()).unwrap();
    assert_eq!(
        log.end_lsn(),
        end,
        "reopened log must continue at the old end"
    );
    let back = log.records_from(FIRST_LSN).unwrap();
    assert_eq!(back.len(), written.len());
    for ((l1, r1), (l2, r2)) in written.iter().zip(back.iter()) {
        assert_eq!(l1, l2);
        assert_eq!(r1, r2);
    }
    // Backward along the previous-LSN chain.
    let (last, _) = written.last().unwrap();
    let rec = log.read_record(*last).unwrap();
    assert_eq!(rec.prev_lsn, written[written.len() - 2].0);
}

/// Group commit: many threads committing with `Full` durability share syncs, and every
/// acknowledged commit is durable.
#[test]
fn group_commit_shares_syncs() {
    let (_fs, st) = storage(2);
    let log = LogManager::open(st, &LogOptions::default()).unwrap();
    let threads: Vec<_> = (0..8u64)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..200u64 {
                    let u = log
                        .append(&update(t * 1000 + i, Lsn::ZERO, 1, 100))
                        .unwrap();
                    let c = log.append(&commit_record(t * 1000 + i, u)).unwrap();
                    log.commit(c).unwrap();
                    assert!(log.durable_lsn() > c, "commit returned before durable");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = log.stats();
    assert_eq!(s.appends, 8 * 200 * 2);
    assert!(
        s.syncs < 1600,
        "no group commit: {} syncs for 1600 commits",
        s.syncs
    );
}

/// A failed sync is sticky: the waiting commit and every later append or commit fail with
/// `LogFailed` naming the first failure.
#[test]
fn failed_sync_is_sticky() {
    let (fs, st) = storage(3);
    // No zero filler: its syncs of the log files could take the one failing sync armed
    // below (a failed zero-fill step fails no commit), and the commit would then succeed.
    let opts = LogOptions {
        preallocate_bytes: 0,
        ..small()
    };
    let log = LogManager::open(st, &opts).unwrap();
    let c = log.append(&commit_record(1, Lsn::ZERO)).unwrap();
    log.commit(c).unwrap();
    fs.arm(FaultRule::nth(FaultKind::Eio, OpClass::Sync, 1).on_files("log-"))
        .unwrap();
    let c = log.append(&commit_record(2, Lsn::ZERO)).unwrap();
    let e = log.commit(c).unwrap_err();
    assert!(
        matches!(&e, Error::LogFailed { first_failure } if first_failure.contains("syncing")),
        "{e}"
    );
    assert!(matches!(
        log.append(&commit_record(3, Lsn::ZERO)),
        Err(Error::LogFailed { .. })
    ));
    assert!(matches!(log.force_log(c), Err(Error::LogFailed { .. })));
}

/// Eight threads commit while a sync fails (leader commits, manager invariant 13): every
/// commit that returned Ok is durable, every thread gets `LogFailed` soon after the failure
/// (none sleeps forever), and nothing more is written after it.
#[test]
fn failed_sync_under_concurrent_commits_fails_every_committer() {
    let (fs, st) = storage(5);
    let log = LogManager::open(st, &small()).unwrap();
    fs.arm(FaultRule::nth(FaultKind::Eio, OpClass::Sync, 40).on_files("log-"))
        .unwrap();
    let (done, finished) = std::sync::mpsc::channel();
    for t in 0..8u64 {
        let (log, done) = (log.clone(), done.clone());
        std::thread::spawn(move || {
            let mut ok = 0u64;
            let err = loop {
                let c = match log.append(&commit_record(t * 1_000_000 + ok, Lsn::ZERO)) {
                    Ok(c) => c,
                    Err(e) => break e,
                };
                match log.commit(c) {
                    Ok(()) => {
                        assert!(log.durable_lsn() > c, "commit returned before durable");
                        ok += 1;
                    }
                    Err(e) => break e,
                }
            };
            done.send((ok, err)).unwrap();
        });
    }
    drop(done);
    let mut committed = 0;
    for _ in 0..8 {
        let (ok, err) = finished
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("a committer still waits 20 s after the sync failed");
        assert!(matches!(&err, Error::LogFailed { .. }), "{err}");
        committed += ok;
    }
    assert!(committed > 0, "the failure came before any commit");
    let written = log.stats().bytes_written;
    assert!(matches!(
        log.force_log(Lsn(FIRST_LSN.0)),
        Ok(()) | Err(Error::LogFailed { .. })
    ));
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(
        log.stats().bytes_written,
        written,
        "a write after the failure"
    );
}

/// After a power loss every commit that was acknowledged is in the log; the log ends at a
/// record boundary and can be appended to again.
#[test]
fn acknowledged_commits_survive_power_loss() {
    for seed in 0..10 {
        let (fs, st) = storage(seed);
        let log = LogManager::open(st.clone(), &small()).unwrap();
        let mut acked = Vec::new();
        for i in 0..200u64 {
            let u = log.append(&update(i, Lsn::ZERO, i as u8, 64)).unwrap();
            let c = log.append(&commit_record(i, u)).unwrap();
            if i % 3 == 0 {
                log.commit(c).unwrap();
                acked.push(c);
            }
        }
        fs.crash_now();
        drop(log);
        fs.restart();
        let log = LogManager::open(st, &small()).unwrap();
        let survivors = log.records_from(FIRST_LSN).unwrap();
        let lsns: Vec<Lsn> = survivors.iter().map(|(l, _)| *l).collect();
        for c in &acked {
            assert!(
                lsns.contains(c),
                "seed {seed}: acknowledged commit {c} lost"
            );
        }
        // The log continues right after the last surviving record.
        let end = survivors
            .last()
            .map_or(FIRST_LSN, |(l, r)| Lsn(l.0 + r.encoded_len() as u64));
        let more = log.append(&commit_record(999, Lsn::ZERO)).unwrap();
        log.commit(more).unwrap();
        assert_eq!(more, end, "seed {seed}");
    }
}

/// `Lazy` commits return at once and become durable within the flush interval.
#[test]
fn lazy_commit_becomes_durable_soon() {
    let (_fs, st) = storage(4);
    let o = LogOptions {
        durability: Durability::Lazy,
        lazy_flush_interval_ms: 5,
        ..small()
    };
    let log = LogManager::open(st, &o).unwrap();
    let c = log.append(&commit_record(1, Lsn::ZERO)).unwrap();
    log.commit(c).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while log.durable_lsn() <= c {
        assert!(
            std::time::Instant::now() < deadline,
            "lazy flush never happened"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// A ring much smaller than what is appended: appends wait for room and nothing is lost.
#[test]
fn full_ring_waits_for_room() {
    let (_fs, st) = storage(5);
    let log = LogManager::open(st, &small()).unwrap();
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..2000u64 {
                    log.append(&update(t, Lsn::ZERO, i as u8, 900)).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    log.close().unwrap();
    // Every record counted once, with its encoded length (the bytes appended are the
    // reserved end less the end at open).
    let one = update(0, Lsn::ZERO, 0, 900).encoded_len() as u64;
    let s = log.stats();
    assert_eq!((s.appends, s.bytes_appended), (8000, 8000 * one));
}

#[test]
fn records_too_large_and_bad_options_are_rejected() {
    let (_fs, st) = storage(6);
    let log = LogManager::open(st.clone(), &small()).unwrap();
    let e = log.append(&update(1, Lsn::ZERO, 0, 20_000)).unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { name: "record", .. }),
        "{e}"
    );
    let bad = LogOptions {
        buffer_size_bytes: 1000,
        ..small()
    };
    assert!(matches!(
        LogManager::open(st, &bad),
        Err(Error::InvalidArgument {
            name: "buffer_size_bytes",
            ..
        })
    ));
}

/// Format rule L4: after a crash leaves a torn record followed by an intact one, the reopened
/// log ends at the torn record and cuts what follows, so that a new record of the same length
/// is not followed by a "ghost" from the crashed incarnation.
#[test]
fn no_ghost_records_after_a_torn_middle_record() {
    let (fs, st) = storage(7);
    let log = LogManager::open(st.clone(), &small()).unwrap();
    let lsns: Vec<Lsn> = (1..=3u64)
        .map(|t| log.append(&commit_record(t, Lsn::ZERO)).unwrap())
        .collect();
    log.close().unwrap();
    drop(log);
    // Tear record 2 (flip a byte of its CRC), leaving record 3 intact after it.
    let seg = super::segment::segment_file_name(0);
    fs.flip_bits(&seg, lsns[1].0 + 5, 0x10).unwrap();

    let log = LogManager::open(st.clone(), &small()).unwrap();
    assert_eq!(log.end_lsn(), lsns[1], "the log ends at the torn record");
    let new = log.append(&commit_record(42, Lsn::ZERO)).unwrap();
    assert_eq!(new, lsns[1]);
    log.close().unwrap();
    drop(log);

    let log = LogManager::open(st, &small()).unwrap();
    let recs = log.records_from(FIRST_LSN).unwrap();
    let ids: Vec<u64> = recs.iter().map(|(_, r)| r.txn_id.0).collect();
    assert_eq!(
        ids,
        vec![1, 42],
        "a record of the crashed incarnation came back"
    );
}

/// Review regression (invariant 8): records a dropped (not closed) log wrote without syncing
/// are synced by the next open before they count as durable, so a power loss after that
/// open keeps them.
#[test]
fn reopen_syncs_what_a_dropped_log_wrote() {
    let (fs, st) = storage(8);
    let log = LogManager::open(st.clone(), &small()).unwrap();
    let mut last = Lsn::ZERO;
    for i in 0..200u64 {
        last = log.append(&update(i, last, 1, 150)).unwrap(); // no commit: no sync requested
    }
    // Let the flusher write (not sync) the filling ring, then drop without close.
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(
        log.stats().flushes > 0 && log.stats().syncs == 0,
        "{:?}",
        log.stats()
    );
    drop(log);
    let log = LogManager::open(st.clone(), &small()).unwrap();
    let found = log.records_from(FIRST_LSN).unwrap().len();
    assert!(found > 0, "nothing was written before the drop");
    log.force_log(last.min(log.durable_lsn())).ok();
    drop(log);
    fs.crash_now();
    fs.restart();
    let log = LogManager::open(st, &small()).unwrap();
    assert_eq!(
        log.records_from(FIRST_LSN).unwrap().len(),
        found,
        "records counted durable at open were lost by a power loss"
    );
}

/// Review regression (invariant 7): dropping the last `Arc` stops the flusher, which does not
/// keep the manager alive (and so cannot write into a log reopened in the same directory).
#[test]
fn dropping_the_log_stops_its_flusher() {
    let (_fs, st) = storage(9);
    let o = LogOptions {
        durability: Durability::Lazy,
        ..small()
    };
    let log = LogManager::open(st.clone(), &o).unwrap();
    log.append(&commit_record(1, Lsn::ZERO)).unwrap();
    let weak = Arc::downgrade(&log);
    drop(log);
    assert!(
        weak.upgrade().is_none(),
        "the flusher keeps the dropped log alive"
    );
    // Reopened: whatever the dropped log had made durable is there, and nothing changes
    // behind the new log's back afterwards.
    let log = LogManager::open(st.clone(), &o).unwrap();
    let end = log.end_lsn();
    let at_open = log.records_from(FIRST_LSN).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(log.records_from(FIRST_LSN).unwrap(), at_open);
    assert_eq!(log.end_lsn(), end);
    drop(log);
    let log = LogManager::open(st, &o).unwrap();
    assert_eq!(
        log.end_lsn(),
        end,
        "someone wrote past the end after the reopen"
    );
}

/// Review regressions: a record breaking the format rules is refused before any space is
/// reserved (it used to panic and leave a hole that hung every later commit); waits for LSNs
/// beyond the end and recycling from a non-boundary are refused.
#[test]
fn bad_requests_fail_cleanly_and_leave_the_log_working() {
    let (_fs, st) = storage(10);
    let log = LogManager::open(st, &small()).unwrap();
    let mut bad = commit_record(1, Lsn::ZERO);
    bad.undo = vec![1, 2, 3]; // only undoable records may carry undo (rule L1)
    assert!(matches!(
        log.append(&bad),
        Err(Error::InvalidArgument { .. })
    ));
    let c = log.append(&commit_record(2, Lsn::ZERO)).unwrap();
    log.commit(c).unwrap(); // would hang forever behind a hole
    assert!(matches!(
        log.wait_durable(Lsn(log.end_lsn().0 + 8)),
        Err(Error::InvalidArgument { name: "lsn", .. })
    ));
    assert!(
        log.remove_before(Lsn(c.0 + 8)).is_err(),
        "not a record boundary"
    );
    log.remove_before(c).unwrap();
}

/// With or without direct I/O, and without zero-filling (whose writes, made by another
/// thread at times of its own, would shift the counted writes these tests inject faults at
/// and the segment lengths they check).
fn with_io(direct: bool) -> LogOptions {
    LogOptions {
        direct_io: direct,
        preallocate_bytes: 0,
        ..small()
    }
}

/// Rule 12: direct I/O where the storage accepts `O_DIRECT` and the option asks for it,
/// buffered otherwise; either way a commit is durable and the log reopens at its end. With
/// direct I/O the segment holds whole blocks, the partial one padded with zeros.
#[test]
fn direct_io_where_accepted_buffered_otherwise() {
    use super::segment::segment_file_name;
    for (refuse, asked, used) in [
        (false, true, true),
        (true, true, false),
        (false, false, false),
    ] {
        let mut cfg = FaultConfig::new(11);
        if refuse {
            cfg = cfg.refuse_direct();
        }
        let fs = FaultStorage::new(cfg).unwrap();
        let st: Arc<dyn Storage> = Arc::new(fs.clone());
        let log = LogManager::open(st.clone(), &with_io(asked)).unwrap();
        assert_eq!(log.direct_io(), used, "refuse {refuse}, asked {asked}");
        let u = log.append(&update(1, Lsn::ZERO, 5, 300)).unwrap();
        let c = log.append(&commit_record(1, u)).unwrap();
        log.commit(c).unwrap();
        let end = log.end_lsn();
        let written = log.stats().bytes_written;
        let seg = fs.durable_contents(&segment_file_name(0)).unwrap();
        if used {
            assert_eq!(seg.len(), 4096);
            assert_eq!(written, 4096);
            assert!(seg[end.0 as usize..].iter().all(|&b| b == 0));
        } else {
            assert_eq!(seg.len() as u64, end.0);
            assert_eq!(written, end.0 - FIRST_LSN.0);
        }
        assert!(seg[..FIRST_LSN.0 as usize].iter().all(|&b| b == 0));
        fs.crash_now();
        drop(log);
        fs.restart();
        let log = LogManager::open(st, &with_io(asked)).unwrap();
        assert_eq!(log.end_lsn(), end);
        assert_eq!(log.records_from(FIRST_LSN).unwrap().len(), 2);
    }
}

/// Rules 10 and 11: each flush rewrites the partial block at the end with the same earlier
/// bytes plus new ones, so every commit stays durable through the rewrites that follow it;
/// reopening (the partial block read back into the ring), after a clean close or a power loss,
/// and switching between direct and buffered writes, continues the log exactly.
#[test]
fn partial_block_rewrites_and_reopens_keep_every_commit() {
    let (fs, st) = storage(12);
    let mut all = Vec::new();
    for round in 0..12u64 {
        let direct = round % 3 != 2;
        let log = LogManager::open(st.clone(), &with_io(direct)).unwrap();
        assert_eq!(log.direct_io(), direct);
        assert_eq!(
            log.end_lsn(),
            all.last()
                .map_or(FIRST_LSN, |(l, r): &(Lsn, LogRecord)| Lsn(
                    l.0 + r.encoded_len() as u64
                )),
            "round {round}"
        );
        for i in 0..7u64 {
            let txn = round * 100 + i;
            let u = update(txn, Lsn::ZERO, txn as u8, 40 + 37 * i as usize);
            let ul = log.append(&u).unwrap();
            let c = commit_record(txn, ul);
            let cl = log.append(&c).unwrap();
            log.commit(cl).unwrap();
            all.push((ul, u));
            all.push((cl, c));
        }
        if round % 2 == 0 {
            fs.crash_now(); // every record was committed, so all of them must survive
            drop(log);
            fs.restart();
        } else {
            log.close().unwrap();
        }
    }
    let log = LogManager::open(st, &small()).unwrap();
    assert_eq!(log.records_from(FIRST_LSN).unwrap(), all);
}

/// Rule 11: a rewrite of the partial block torn at any sector boundary keeps the records
/// already durable in it, and the log reopens at or after them.
#[test]
fn torn_rewrite_of_the_partial_block_keeps_durable_records() {
    let mut torn_inside = 0;
    for seed in 0..24 {
        let (fs, st) = storage(seed);
        let log = LogManager::open(st.clone(), &with_io(true)).unwrap();
        let acked = commit_each(&log, 0..5, 200);
        let durable = log.durable_lsn();
        assert!(
            durable.0 % 4096 > 512,
            "the partial block holds several durable sectors"
        );
        // The next flush begins by rewriting block 0 (its durable sectors among them).
        fs.arm(FaultRule::nth(FaultKind::TornWrite, OpClass::Write, 1).on_files("log-"))
            .unwrap();
        let u = log.append(&update(99, Lsn::ZERO, 9, 1500)).unwrap();
        let c = log.append(&commit_record(99, u)).unwrap();
        assert!(
            log.commit(c).is_err(),
            "seed {seed}: the torn write crashes"
        );
        let ev = fs.events().last().cloned().unwrap();
        let (kept, of) = ev.torn_sectors.unwrap();
        assert_eq!(of, 8, "seed {seed}: {ev:?}");
        if kept > 0 && kept < of {
            torn_inside += 1;
        }
        drop(log);
        fs.restart();
        let log = LogManager::open(st, &with_io(true)).unwrap();
        assert!(
            log.end_lsn() >= durable,
            "seed {seed}: the log ends below what was durable"
        );
        let lsns = lsns(&log);
        for a in &acked {
            assert!(lsns.contains(a), "seed {seed}: durable commit {a} lost");
        }
    }
    assert!(
        torn_inside >= 5,
        "only {torn_inside} writes were torn inside"
    );
}

/// The real file system, in both modes (direct where the temporary directory's file system
/// accepts it): records across several segments and ring laps, with commits between them,
/// read back after a reopen, and the reopened log continues inside the partial block.
#[test]
fn real_files_round_trip_in_both_modes() {
    for direct in [true, false] {
        let tmp = tempfile::tempdir().unwrap();
        let st: Arc<dyn Storage> =
            Arc::new(crate::io::FileStorage::open_dir(tmp.path(), false).unwrap());
        let mut all = Vec::new();
        for round in 0..2u64 {
            let log = LogManager::open(st.clone(), &with_io(direct)).unwrap();
            if !direct {
                assert!(!log.direct_io());
            }
            let mut prev = Lsn::ZERO;
            for i in 0..1500u64 {
                let r = update(
                    round * 10_000 + i,
                    prev,
                    i as u8,
                    20 + (i as usize * 13) % 400,
                );
                prev = log.append(&r).unwrap();
                all.push((prev, r));
                if i % 100 == 0 {
                    let c = commit_record(round * 10_000 + i, prev);
                    let cl = log.append(&c).unwrap();
                    log.commit(cl).unwrap();
                    all.push((cl, c));
                }
            }
            log.close().unwrap();
        }
        let log = LogManager::open(st, &with_io(direct)).unwrap();
        let back = log.records_from(FIRST_LSN).unwrap();
        assert!(back == all, "direct {direct}: records differ after reopen");
    }
}

/// Invariant 14: the zero filler keeps synced zeros ahead of the log, across segments; a
/// power loss keeps every commit, and open cuts the zeros off at the end of the log.
#[test]
fn zero_filler_keeps_synced_zeros_ahead_and_open_cuts_them() {
    use super::segment::segment_file_name;
    let seg = small().segment_size_bytes;
    for direct in [true, false] {
        let (fs, st) = storage(21);
        let o = LogOptions {
            direct_io: direct,
            ..small()
        };
        let log = LogManager::open(st.clone(), &o).unwrap();
        let commits = commit_each(&log, 0..300, 300);
        let end = log.end_lsn().0;
        let last = end / seg;
        assert!(last >= 1, "the log spans segments");
        // The lead is one segment: the zeros reach the end of the last segment with log
        // bytes (and, once past half of it, into the next).
        eventually("zeros to the end of the last segment", || {
            fs.durable_contents(&segment_file_name(last))
                .is_ok_and(|b| b.len() as u64 == seg)
        });
        assert!(log.stats().bytes_zero_filled >= seg - end % seg);
        assert_eq!(log.stats().zero_fill_failure, None);
        let tail = fs.durable_contents(&segment_file_name(last)).unwrap();
        assert!(tail[(end % seg).next_multiple_of(4096) as usize..]
            .iter()
            .all(|&b| b == 0));
        fs.crash_now();
        // `close` joins the log's threads even if one of them holds a reference now (a plain
        // drop would then leave the last reference, and the zero filler, running on).
        let _ = log.close(); // nothing left to write: it may well succeed
        drop(log);
        fs.restart();
        let quiet = LogOptions {
            preallocate_bytes: 0,
            ..o.clone()
        };
        let log = LogManager::open(st.clone(), &quiet).unwrap();
        assert_eq!(log.end_lsn().0, end, "direct {direct}");
        let lsns = lsns(&log);
        assert!(commits.iter().all(|c| lsns.contains(c)), "direct {direct}");
        assert_eq!(
            fs.durable_contents(&segment_file_name(last)).unwrap().len() as u64,
            end % seg,
            "open cut the zeros off"
        );
        assert!(
            fs.durable_contents(&segment_file_name(last + 1)).is_err(),
            "direct {direct}: end {end}, files {:?}, len {:?}",
            st.list(),
            fs.durable_contents(&segment_file_name(last + 1))
                .map(|b| b.len())
        );
    }
}

/// Invariant 14: a failed zero-fill step stops zero-filling, is reported in the stats, and
/// fails no commit; the log written without zeros reopens whole.
#[test]
fn a_failed_zero_fill_stops_zero_filling_and_fails_no_commit() {
    let (fs, st) = storage(22);
    // The first write to a segment file is the zero filler's: nothing is appended yet.
    fs.arm(FaultRule::nth(FaultKind::Eio, OpClass::Write, 1).on_files("log-"))
        .unwrap();
    let log = LogManager::open(st.clone(), &small()).unwrap();
    eventually("the failure is reported", || {
        log.stats().zero_fill_failure.is_some()
    });
    let why = log.stats().zero_fill_failure.unwrap();
    assert!(why.contains("zero-filling"), "{why}");
    assert_eq!(log.stats().bytes_zero_filled, 0);
    let commits = commit_each(&log, 0..200, 300);
    assert_eq!(
        log.stats().bytes_zero_filled,
        0,
        "no step after the failure"
    );
    log.close().unwrap();
    drop(log);
    let log = LogManager::open(st, &small()).unwrap();
    let lsns = lsns(&log);
    assert!(commits.iter().all(|c| lsns.contains(c)));
}

/// `preallocate_bytes` is 0 or at least 64 KiB.
#[test]
fn preallocate_bytes_is_off_or_at_least_64_kib() {
    for (bytes, ok) in [
        (0, true),
        (4096, false),
        ((64 << 10) - 1, false),
        (64 << 10, true),
    ] {
        let o = LogOptions {
            preallocate_bytes: bytes,
            ..LogOptions::default()
        };
        assert_eq!(o.validate().is_ok(), ok, "{bytes}");
        if !ok {
            assert!(matches!(
                o.validate(),
                Err(Error::InvalidArgument {
                    name: "preallocate_bytes",
                    ..
                })
            ));
        }
    }
}

/// A record is read back wherever it is — in the ring, or written and not yet synced —
/// without forcing the log to disk: with `Lazy` durability and a flush interval longer than
/// the test, reading back a transaction's chain leaves the durable end where it was (it
/// failed before, when every read waited for a sync). The chain fills most of the ring, so
/// the flusher writes (without syncing: less than a ring is unsynced) and the oldest
/// records are read from the files. A position inside a record is a typed corruption
/// error, not a panic or a wrong record.
#[test]
fn read_record_does_not_force_the_log() {
    let (_fs, st) = storage(41);
    let opts = LogOptions {
        durability: Durability::Lazy,
        lazy_flush_interval_ms: 3_600_000,
        ..small()
    };
    let log = LogManager::open(st, &opts).unwrap();
    let mut chain = Vec::new();
    let mut prev = Lsn::ZERO;
    let ring = small().buffer_size_bytes as u64;
    while log.end_lsn().0 - FIRST_LSN.0 < ring * 3 / 4 {
        let r = update(9, prev, chain.len() as u8, 60 + (chain.len() % 200));
        prev = log.append(&r).unwrap();
        chain.push((prev, r));
    }
    // The ring is over a quarter full: the flusher writes, and only writes.
    eventually("a flush", || log.stats().flushes > 0);
    let (s, durable) = (log.stats(), log.durable_lsn());
    assert_eq!(s.syncs, 0, "{s:?}");
    assert!(durable <= chain[0].0, "nothing appended here is durable");
    for (lsn, r) in chain.iter().rev() {
        assert_eq!(&log.read_record(*lsn).unwrap(), r, "record at {lsn}");
    }
    assert_eq!(log.stats().syncs, s.syncs, "a read synced the log");
    assert_eq!(log.durable_lsn(), durable, "a read forced the log");
    let (last, _) = chain[chain.len() - 1];
    assert!(matches!(
        log.read_record(Lsn(last.0 + 8)),
        Err(Error::LogCorruption { .. })
    ));
}

/// Damages the record at `lsn` (flips bits 20 bytes into it, in its segment file).
fn damage_record(fs: &FaultStorage, o: &LogOptions, lsn: Lsn) {
    let seg = o.segment_size_bytes;
    let name = segment::segment_file_name(lsn.0 / seg);
    fs.flip_bits(&name, lsn.0 % seg + 20, 0x5a).unwrap();
}

/// Opens the log and requires `Error::LogCorruption`; `what` names the case in a failure.
fn assert_open_is_corruption(st: Arc<dyn Storage>, o: &LogOptions, what: &str) {
    match LogManager::open(st, o) {
        Err(Error::LogCorruption { .. }) => {}
        Err(e) => panic!("{what}: another error: {e}"),
        Ok(log) => panic!("{what}: opened, ending at {}", log.end_lsn()),
    }
}

/// Anchor rule A5: raising the start raises the durable floor to the durable end, so a log
/// that lost its record at the start — the segment file holding it removed, or the record
/// damaged — is reported as damaged at open. Before, the floor rose only to the start: the
/// scan ended there, reached the floor, and the log opened empty, every commit after the
/// checkpoint silently gone.
#[test]
fn a_lost_record_at_the_start_is_corruption_not_an_empty_log() {
    for remove_file in [false, true] {
        let (fs, st) = storage(21);
        let o = with_io(false);
        let log = LogManager::open(st.clone(), &o).unwrap();
        let commits = commit_each(&log, 0..400, 300);
        // A checkpoint's recycling: the start moves to a commit in the last segment.
        let start = commits[390];
        log.remove_before(start).unwrap();
        commit_each(&log, 400..405, 300);
        drop(log);
        if remove_file {
            let name = segment::segment_file_name(start.0 / o.segment_size_bytes);
            st.remove(&name).unwrap();
        } else {
            damage_record(&fs, &o, start);
        }
        let what = format!("removed {remove_file}, start {start}");
        assert_open_is_corruption(st.clone(), &o, &what);
    }
}

/// Anchor rule A6: a page write (`WalHook::force_log` of its page LSN) raises the durable
/// floor above that LSN, so a log that later loses the record (damaged at its tail, where it
/// would be taken for a torn write) is reported as damaged at open instead of ending before
/// a record that a page on disk already reflects.
#[test]
fn a_page_write_raises_the_floor_above_its_lsn() {
    let (fs, st) = storage(22);
    let o = with_io(false);
    let log = LogManager::open(st.clone(), &o).unwrap();
    let commits = commit_each(&log, 0..20, 100);
    let page_lsn = commits[18];
    WalHook::force_log(&*log, page_lsn).unwrap(); // the buffer pool writes a page
    drop(log);
    damage_record(&fs, &o, page_lsn);
    assert_open_is_corruption(st, &o, &format!("written page's LSN {page_lsn}"));
}

/// Anchor rule A3's step: the flusher raises the durable floor whenever a sync has gone a
/// sixteenth of a segment past it, without a page write or a segment crossing, so the pages
/// an eviction writes are mostly below it (buffer rule 10). A record lost below the raised
/// floor is then damage at open, not a torn tail.
#[test]
fn syncs_raise_the_floor_in_steps_within_a_segment() {
    let (fs, st) = storage(23);
    let o = with_io(false);
    let log = LogManager::open(st.clone(), &o).unwrap();
    let step = o.segment_size_bytes / super::manager::FLOOR_STEPS_PER_SEGMENT;
    let commits = commit_each(&log, 0..40, 100);
    let last = *commits.last().unwrap();
    assert!(last.0 > 2 * step && last.0 < o.segment_size_bytes, "{last}");
    let floor = WalHook::durable_floor(&*log);
    assert!(
        floor.0 + step > last.0,
        "floor {floor} trails the end {last}"
    );
    assert!(floor <= log.durable_lsn());
    let lost = *commits.iter().rfind(|&&c| c < floor).unwrap();
    drop(log);
    damage_record(&fs, &o, lost);
    assert_open_is_corruption(st, &o, &format!("record {lost} below the floor {floor}"));
}
