//! Crash matrix for the B-tree (issue 4): concurrent transactions insert, update and delete
//! entries big enough that a few dozen fill a 4 KiB page, so splits and root growth happen
//! all through the run, while a small buffer pool writes pages mid-run and a checkpointer
//! runs. The simulated disk loses power (or tears the write it is doing) at one write/sync
//! point. After restart the tree verifies, every acknowledged commit's changes are present
//! and no aborted or unfinished transaction's (a commit in flight at the crash lands whole
//! or not at all), and after a clean close every written page's checksum verifies.

mod common;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shoal::btree::BTree;
use shoal::io::{FaultConfig, FaultStorage, Storage};
use shoal::log::LogOptions;
use shoal::{Engine, Options, PageId};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Key stride: worker `t` owns the keys `i * THREADS + t`.
const THREADS: u64 = 3;
/// Transactions of all workers together.
const TXNS: u64 = 180;
const KEYS_PER_THREAD: u64 = 400;
const PAGE: usize = 4096;

fn options() -> Options {
    Options {
        pool_size_bytes: 24 * PAGE, // smaller than the tree: evictions write pages mid-split
        page_size_bytes: PAGE,
        cleaner_enabled: true,
        cleaner_interval_ms: 2,
        cleaner_lag_bytes: 0, // write every dirty page on every pass: pages on disk mid-run
        checkpoint_log_bytes: 128 << 10, // background checkpoints mid-run, crashes among them
        ..Options::default()
    }
}

fn log_options() -> LogOptions {
    LogOptions {
        segment_size_bytes: 256 << 10,
        buffer_size_bytes: 128 << 10,
        ..LogOptions::default()
    }
}

/// [`log_options`] with log lanes on from every transaction's second change
/// (`log::manager::lane`): each worker's records, and those of the splits and merges it
/// runs, go in its thread's chunks, interleaved with the other workers' chunks.
fn lane_log_options() -> LogOptions {
    LogOptions {
        lane_after_records: 1,
        ..log_options()
    }
}

/// Key → value length and a tag, enough to rebuild and compare the value.
type Model = BTreeMap<u64, (u16, u64)>;

#[derive(Clone, Debug, Default)]
struct Known {
    acked: Model,
    in_doubt: Option<Model>,
}

struct Outcome {
    root: Option<PageId>,
    known: Vec<Known>,
}

fn open(disk: &FaultStorage) -> shoal::Result<Engine> {
    open_with(disk, &log_options())
}

fn open_with(disk: &FaultStorage, log: &LogOptions) -> shoal::Result<Engine> {
    let s: Arc<dyn Storage> = Arc::new(disk.clone());
    Engine::open(s, &options(), log)
}

fn key(k: u64) -> [u8; 8] {
    k.to_be_bytes()
}

/// A value of `len` bytes (at least 8) that begins with `tag`; its fill depends on the length
/// only, so an update that keeps the length changes just the tag's bytes (a PATCH record).
fn value(len: u16, tag: u64) -> Vec<u8> {
    let mut v = tag.to_le_bytes().to_vec();
    v.resize(usize::from(len).max(8), (len % 251) as u8);
    v
}

/// One worker: every crash point hits a deterministic state (thread interleaving aside).
fn workload(disk: &FaultStorage, seed: u64) -> Outcome {
    workload_with(disk, seed, 1)
}

fn workload_concurrent(disk: &FaultStorage, seed: u64) -> Outcome {
    workload_with(disk, seed, THREADS)
}

fn workload_concurrent_lanes(disk: &FaultStorage, seed: u64) -> Outcome {
    workload_opened(disk, seed, THREADS, &lane_log_options())
}

fn workload_with(disk: &FaultStorage, seed: u64, threads: u64) -> Outcome {
    workload_opened(disk, seed, threads, &log_options())
}

fn workload_opened(disk: &FaultStorage, seed: u64, threads: u64, log: &LogOptions) -> Outcome {
    let known: Vec<Arc<Mutex<Known>>> = (0..threads).map(|_| Arc::default()).collect();
    let mut out = Outcome {
        root: None,
        known: Vec::new(),
    };
    let mut run = || -> shoal::Result<()> {
        let e = open_with(disk, log)?;
        let tree = BTree::create(e.txns(), e.space())?;
        e.log().wait_all_durable()?; // the tree exists before any worker
        out.root = Some(tree.root());
        common::with_checkpointer(&e, || {
            std::thread::scope(|s| {
                for t in 0..threads {
                    let (e, tree, known) = (&e, &tree, known[t as usize].clone());
                    s.spawn(move || worker(e, tree, (t, threads), seed, &known));
                }
            })
        });
        e.close()
    };
    let _ = run();
    out.known = known.iter().map(|k| k.lock().unwrap().clone()).collect();
    out
}

fn worker(
    e: &Engine,
    tree: &BTree,
    (t, threads): (u64, u64),
    seed: u64,
    known: &Mutex<Known>,
) -> shoal::Result<()> {
    let mut rng = StdRng::seed_from_u64(seed.wrapping_mul(31).wrapping_add(t));
    // Interleaved key spaces, so the threads' keys share leaves and splits.
    let k_of = |i: u64| i * THREADS + t;
    for n in 0..TXNS / threads {
        let mut state = known.lock().unwrap().acked.clone();
        let mut txn = e.begin();
        for _ in 0..rng.random_range(1..=8) {
            let k = k_of(rng.random_range(0..KEYS_PER_THREAD));
            let v = (
                rng.random_range(60..400u16),
                t << 32 | n << 8 | rng.random_range(0..256),
            );
            match (state.contains_key(&k), rng.random_range(0..4)) {
                (false, _) => {
                    tree.insert(&mut txn, &key(k), &value(v.0, v.1))?;
                    state.insert(k, v);
                }
                (true, 0) => {
                    assert!(tree.delete(&mut txn, &key(k))?.is_some());
                    state.remove(&k);
                }
                (true, r) => {
                    // A third of the updates keep the length: logged as patches.
                    let v = if r == 1 { (state[&k].0, v.1) } else { v };
                    assert!(tree.update(&mut txn, &key(k), &value(v.0, v.1))?.is_some());
                    state.insert(k, v);
                }
            }
        }
        if rng.random_range(0..5) == 0 {
            txn.abort()?;
        } else {
            known.lock().unwrap().in_doubt = Some(state.clone());
            txn.commit()?;
            let mut k = known.lock().unwrap();
            k.acked = state;
            k.in_doubt = None;
        }
    }
    Ok(())
}

/// Prints the log records of page `pid` (debugging aid for a failed restart).
fn dump_page_log(disk: &FaultStorage, pid: u64) {
    let s: Arc<dyn Storage> = Arc::new(disk.clone());
    let log = shoal::log::LogManager::open(s, &log_options()).unwrap();
    let mut r = log.reader(log.start_lsn()).unwrap();
    while let Ok(Some((lsn, rec))) = r.next_record() {
        if rec.kind == shoal::log::record::RecordKind::CheckpointEnd {
            let at = |i: usize| u64::from_le_bytes(rec.redo[i..i + 8].try_into().unwrap());
            eprintln!(
                "{lsn} CheckpointEnd begin {} redo {} start {}",
                at(0),
                at(8),
                at(16)
            );
        }
        if rec.kind == shoal::log::record::RecordKind::SystemUpdate {
            let child = rec
                .undo
                .len()
                .checked_sub(8)
                .map(|i| u64::from_le_bytes(rec.undo[i..].try_into().unwrap()));
            eprintln!(
                "{lsn} SMO on page {} txn {} op {:?} undo-op {:?} undo-tail {:?}",
                rec.page_id,
                rec.txn_id,
                rec.redo.get(1),
                rec.undo.get(1),
                child
            );
        }
        if rec.kind == shoal::log::record::RecordKind::PageImage && rec.redo.first() == Some(&1) {
            eprintln!("{lsn} new page {}", rec.page_id);
        }
        if rec.page_id.0 == pid || (rec.page_id.0 == u64::MAX && rec.txn_id.0 != 0) {
            let key = match rec.redo.get(1) {
                Some(3) => rec.redo.get(2..10),
                _ => rec.redo.get(4..12),
            }
            .map(|k| u64::from_be_bytes(k.try_into().unwrap()));
            eprintln!(
                "{lsn} {:?} txn {} prev {} undo_next {} op {:?} undo-op {:?} key {:?} len {}",
                rec.kind,
                rec.txn_id,
                rec.prev_lsn,
                rec.undo_next_lsn,
                rec.redo.get(1),
                rec.undo.get(1),
                key,
                rec.redo.len()
            );
        }
    }
}

/// Restarts and checks; returns how many structure modifications restart rolled back.
fn check(disk: &FaultStorage, out: &Outcome, ctx: &str) -> u64 {
    let e = open(disk).unwrap_or_else(|err| {
        if let shoal::Error::Corruption { page_id, .. } = &err {
            dump_page_log(disk, page_id.0);
        }
        panic!("{ctx}: restart failed: {err}")
    });
    let interrupted_smos = e.restart_report().system_losers;
    if let Some(root) = out.root {
        let tree = BTree::open(e.pool().clone(), e.space().clone(), root)
            .unwrap_or_else(|err| panic!("{ctx}: tree does not open: {err}"));
        let report = tree.verify().unwrap();
        assert!(report.is_ok(), "{ctx}: verify: {:#?}", report.problems);
        let found: Vec<(u64, Vec<u8>)> = tree
            .iter()
            .map(|kv| {
                let (k, v) = kv.unwrap_or_else(|err| panic!("{ctx}: scan: {err}"));
                (u64::from_be_bytes(k.try_into().unwrap()), v)
            })
            .collect();
        for (t, known) in out.known.iter().enumerate() {
            let mine: Vec<(u64, Vec<u8>)> = found
                .iter()
                .filter(|(k, _)| k % THREADS == t as u64)
                .cloned()
                .collect();
            let as_values = |m: &Model| -> Vec<(u64, Vec<u8>)> {
                m.iter().map(|(&k, &(l, tag))| (k, value(l, tag))).collect()
            };
            let ok = mine == as_values(&known.acked)
                || known.in_doubt.as_ref().map(as_values) == Some(mine.clone());
            if !ok {
                let want = as_values(&known.acked);
                let diff: Vec<_> = mine
                    .iter()
                    .zip(want.iter())
                    .filter(|(a, b)| a != b)
                    .map(|(a, b)| {
                        (
                            a.0,
                            b.0,
                            a.1.len(),
                            b.1.len(),
                            a.1[..8].to_vec(),
                            b.1[..8].to_vec(),
                        )
                    })
                    .take(4)
                    .collect();
                panic!(
                    "{ctx}: thread {t}: found {} keys, acknowledged {}, in doubt {:?}; first \
                     differences (found key, acked key, lens, tags): {diff:?}",
                    mine.len(),
                    known.acked.len(),
                    known.in_doubt.as_ref().map(|m| m.len())
                );
            }
        }
    }
    common::close_and_check_checksums(disk, e, PAGE, ctx);
    interrupted_smos
}

const MATRIX: common::Matrix<Outcome> = common::Matrix {
    run: workload,
    check,
};

/// The same matrix with three concurrent workers, whose splits, merges and rollbacks
/// interleave. It found that a split which fixed its new page's frame before it was sure to
/// use it could leave that frame blank and dirty, to be written over a page that a merge had
/// freed and whose old records redo still replays (about one run in thirty; fixed in `smo.rs`,
/// 0 failures in 28 runs since under the same load).
const CONCURRENT: common::Matrix<Outcome> = common::Matrix {
    run: workload_concurrent,
    check,
};

/// [`CONCURRENT`] with log lanes on from every transaction's second change: records of
/// different workers (and of their splits and merges) are no longer in the order they were
/// appended, and a crash leaves chunks half filled, unpadded.
const CONCURRENT_LANES: common::Matrix<Outcome> = common::Matrix {
    run: workload_concurrent_lanes,
    check,
};

/// The workloads split and merge a lot (else the matrix would test little).
#[test]
fn the_workload_changes_the_structure() {
    for threads in [1, THREADS] {
        let disk = FaultStorage::new(FaultConfig::new(0)).unwrap();
        let out = workload_with(&disk, 0, threads);
        let e = open(&disk).unwrap();
        let tree = BTree::open(e.pool().clone(), e.space().clone(), out.root.unwrap()).unwrap();
        let r = tree.verify().unwrap();
        assert!(
            r.is_ok() && r.height >= 2 && r.pages_by_level[0] >= 8,
            "{r:?}"
        );
        e.close().unwrap();
    }
}

/// Each of the first 300 crash points: torn write + power loss.
#[test]
fn btree_survives_a_crash_at_each_of_the_first_300_points() {
    let smos = MATRIX.each_of_first(300);
    eprintln!("{smos} interrupted structure modifications rolled back");
}

/// 300 random crash points, unsynced writes surviving at random. Splits cut short by the
/// crash are rare here (their records are appended back to back);
/// `btree::tests::restart_rolls_back_an_interrupted_*` cover each step of each kind.
#[test]
fn btree_survives_300_random_crashes() {
    let smos = MATRIX.random(300, 43);
    eprintln!("{smos} interrupted structure modifications rolled back");
}

/// A crash during restart (which rolls back interrupted splits) is harmless.
#[test]
fn a_crash_during_btree_restart_is_harmless() {
    let crashed = MATRIX.during_restart(40, 8, |disk| drop(open(disk)));
    assert!(crashed >= 20, "only {crashed} of 40 restarts crashed");
}

/// The long variants (`cargo test --release -p shoal --test btree_crash -- --ignored`).
#[test]
#[ignore]
fn btree_survives_3000_random_crashes() {
    MATRIX.random(3000, 4343);
}

/// Concurrent workers, each of the first 300 crash points (see [`CONCURRENT`]).
#[test]
fn concurrent_btree_survives_a_crash_at_each_of_the_first_300_points() {
    CONCURRENT.each_of_first(300);
}

/// Concurrent workers, 200 random crash points.
#[test]
fn concurrent_btree_survives_200_random_crashes() {
    CONCURRENT.random(200, 45);
}

/// Concurrent workers in log lanes, each of the first 200 crash points. In the long suite
/// (CI runs the non-ignored matrices above in lanes instead: the `lanes-everywhere`
/// feature). This matrix failed about one run in three until transaction rule 13
/// (`docs/benchmarks.md`, update 26); run the three `in_log_lanes` tests after any change
/// to lanes.
#[test]
#[ignore]
fn concurrent_btree_in_log_lanes_survives_a_crash_at_each_of_the_first_200_points() {
    CONCURRENT_LANES.each_of_first(200);
}

/// Concurrent workers in log lanes, 200 random crash points (long suite, as above).
#[test]
#[ignore]
fn concurrent_btree_in_log_lanes_survives_200_random_crashes() {
    CONCURRENT_LANES.random(200, 46);
}

/// Concurrent workers in log lanes, 1,000 random crash points (long suite, as above).
#[test]
#[ignore]
fn concurrent_btree_in_log_lanes_survives_1000_random_crashes() {
    CONCURRENT_LANES.random(1000, 47);
}

/// Concurrent workers, 1,000 random crash points (the long suite).
#[test]
#[ignore]
fn concurrent_btree_survives_1000_random_crashes() {
    CONCURRENT.random(1000, 44);
}
