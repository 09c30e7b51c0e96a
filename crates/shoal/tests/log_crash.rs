//! Crash matrix for the write-ahead log: a commit workload is crashed (torn write or power
//! loss) at every write/sync point; after restart every acknowledged commit is in the log,
//! the log reopens at a record boundary, accepts new commits, and a second reopen agrees
//! with the first (no ghost records from the crashed incarnation, format rule L4). Each
//! matrix runs twice: with direct I/O (whole 4 KiB blocks, the partial last block rewritten
//! at every flush: log manager rules 9–11) and with buffered writes.

use shoal::io::{FaultConfig, FaultKind, FaultRule, FaultStorage, OpClass, Storage};
use shoal::log::record::{LogRecord, RecordKind};
use shoal::log::{LogManager, LogOptions, FIRST_LSN};
use shoal::{Lsn, PageId, TxnId};
use std::sync::{Arc, Mutex};

/// Small segments and ring; with `zero_fill`, the zero filler keeps a segment's worth of
/// zeros ahead of the log (its writes and syncs are crash points too, at times of its own).
fn options(direct: bool, zero_fill: bool) -> LogOptions {
    LogOptions {
        segment_size_bytes: 64 << 10,
        buffer_size_bytes: 64 << 10,
        direct_io: direct,
        preallocate_bytes: if zero_fill { 64 << 10 } else { 0 },
        ..LogOptions::default()
    }
}

fn record(kind: RecordKind, txn: u64, prev: Lsn, len: usize) -> LogRecord {
    LogRecord {
        kind,
        txn_id: TxnId(txn),
        prev_lsn: prev,
        page_id: if kind == RecordKind::Update {
            PageId(txn)
        } else {
            PageId::INVALID
        },
        undo_next_lsn: Lsn::ZERO,
        redo: vec![txn as u8; len],
        undo: if kind == RecordKind::Update {
            vec![!(txn as u8); len / 3]
        } else {
            Vec::new()
        },
    }
}

/// Runs `threads` workers, each committing `txns` transactions (an Update of varying size and
/// a Commit); returns the commit LSNs that were acknowledged before the log failed.
fn workload(st: &Arc<dyn Storage>, threads: u64, txns: u64, o: &LogOptions) -> Vec<Lsn> {
    let acked = Arc::new(Mutex::new(Vec::new()));
    let Ok(log) = LogManager::open(st.clone(), o) else {
        return Vec::new();
    };
    assert_eq!(
        log.direct_io(),
        o.direct_io,
        "the fault storage accepts O_DIRECT"
    );
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let log = log.clone();
            let acked = acked.clone();
            std::thread::spawn(move || {
                for i in 0..txns {
                    let txn = t * 10_000 + i + 1;
                    let len = 20 + (i as usize * 37) % 700;
                    let Ok(u) = log.append(&record(RecordKind::Update, txn, Lsn::ZERO, len)) else {
                        return;
                    };
                    let Ok(c) = log.append(&record(RecordKind::Commit, txn, u, 0)) else {
                        return;
                    };
                    if log.commit(c).is_err() {
                        return;
                    }
                    acked.lock().unwrap().push(c);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let _ = log.close();
    let v = acked.lock().unwrap().clone();
    v
}

/// Restart checks; returns the number of records found.
fn check_after_crash(
    fs: &FaultStorage,
    st: &Arc<dyn Storage>,
    acked: &[Lsn],
    o: &LogOptions,
    what: &str,
) -> usize {
    fs.restart();
    let log = LogManager::open(st.clone(), o)
        .unwrap_or_else(|e| panic!("{what}: log does not reopen after the crash: {e}"));
    let records = log.records_from(FIRST_LSN).unwrap();
    let lsns: std::collections::HashSet<Lsn> = records.iter().map(|(l, _)| *l).collect();
    for c in acked {
        assert!(lsns.contains(c), "{what}: acknowledged commit at {c} lost");
    }
    for (l, r) in &records {
        if r.kind == RecordKind::Commit {
            assert!(
                lsns.contains(&r.prev_lsn),
                "{what}: commit at {l} without its update"
            );
        }
    }
    // The log continues at its end and keeps new commits.
    let c = log
        .append(&record(RecordKind::Commit, 999_999, Lsn::ZERO, 0))
        .unwrap();
    log.commit(c).unwrap();
    log.close().unwrap();
    drop(log);
    // A second reopen sees exactly the first one's records plus the new commit.
    let log = LogManager::open(st.clone(), o).unwrap();
    let again = log.records_from(FIRST_LSN).unwrap();
    assert_eq!(
        again.len(),
        records.len() + 1,
        "{what}: records changed on reopen"
    );
    assert_eq!(again.last().map(|(l, _)| *l), Some(c), "{what}");
    records.len()
}

/// Every crash point of one run, one run per point, without the zero filler (whose writes at
/// times of its own would shift the points). The points of one run still differ a little
/// from the next: whether the committing thread (a leader) or the flusher thread writes a
/// round, and so how many writes and syncs the run makes, depends on timing. So a point
/// past the end of a shorter run does not fire; nearly all must.
fn crash_matrix(unsynced_survival: f64, direct: bool) {
    let o = options(direct, false);
    let (fs, st) = fresh(0, unsynced_survival, None);
    let acked = workload(&st, 1, 60, &o);
    assert_eq!(acked.len(), 60);
    let points = fs.op_counts().crash_points;
    drop(fs);
    let mut missed = 0;
    for k in 1..=points {
        let (fs, st) = fresh(k, unsynced_survival, Some(k));
        let acked = workload(&st, 1, 60, &o);
        if !fs.is_crashed() {
            missed += 1;
            continue;
        }
        let what = format!("direct {direct}, crash point {k}/{points}");
        check_after_crash(&fs, &st, &acked, &o, &what);
    }
    assert!(
        missed * 20 <= points,
        "{missed} of {points} crash points did not fire"
    );
}

fn fresh(
    seed: u64,
    unsynced_survival: f64,
    crash_at: Option<u64>,
) -> (FaultStorage, Arc<dyn Storage>) {
    let mut cfg = FaultConfig::new(seed).unsynced_survival(unsynced_survival);
    if let Some(k) = crash_at {
        cfg = cfg.rule(FaultRule::nth(FaultKind::TornWrite, OpClass::CrashPoint, k));
    }
    let fs = FaultStorage::new(cfg).unwrap();
    let st: Arc<dyn Storage> = Arc::new(fs.clone());
    (fs, st)
}

#[test]
fn acknowledged_commits_survive_a_crash_at_every_write_and_sync() {
    crash_matrix(0.0, true);
}

#[test]
fn acknowledged_commits_survive_crashes_that_keep_some_unsynced_writes() {
    crash_matrix(0.5, true);
}

#[test]
fn buffered_acknowledged_commits_survive_a_crash_at_every_write_and_sync() {
    crash_matrix(0.0, false);
}

#[test]
fn buffered_acknowledged_commits_survive_crashes_that_keep_some_unsynced_writes() {
    crash_matrix(0.5, false);
}

/// Concurrent committers, crashed at seeded random points, with the zero filler running
/// beside them (or not).
fn concurrent_crashes(direct: bool, zero_fill: bool) {
    let o = options(direct, zero_fill);
    let mut crashed = 0;
    for seed in 0..40u64 {
        let k = 5 + (seed * 7919) % 150;
        let (fs, st) = fresh(seed, 0.3, Some(k));
        let acked = workload(&st, 3, 40, &o);
        if !fs.is_crashed() {
            continue; // the workload finished before point k
        }
        crashed += 1;
        let what = format!("direct {direct}, zero fill {zero_fill}, seed {seed}, crash point {k}");
        check_after_crash(&fs, &st, &acked, &o, &what);
    }
    assert!(crashed >= 20, "only {crashed} of 40 runs crashed");
}

#[test]
fn concurrent_commits_survive_random_crashes() {
    concurrent_crashes(true, false);
}

#[test]
fn concurrent_commits_survive_random_crashes_while_zero_filling() {
    concurrent_crashes(true, true);
}

#[test]
fn buffered_concurrent_commits_survive_random_crashes() {
    concurrent_crashes(false, false);
}

#[test]
fn buffered_concurrent_commits_survive_random_crashes_while_zero_filling() {
    concurrent_crashes(false, true);
}
