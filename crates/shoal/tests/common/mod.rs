//! The crash-matrix driver shared by the transaction and B-tree crash tests: run a workload on
//! the simulated disk with a crash armed at one write/sync point, restart, check. A test
//! supplies the workload (which stops at its first error, the crash) and the check (which
//! restarts and asserts); the driver chooses the crash points.

#![allow(dead_code)] // each test file uses its own subset

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shoal::engine::DATA_FILE;
use shoal::io::{FaultConfig, FaultKind, FaultRule, FaultStorage, OpClass};
use shoal::page::header;
use shoal::{Engine, PageId};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A workload and its check. `run` makes its outcome (what it knows was acknowledged) from a
/// run on `disk` that a crash may cut short; `check` restarts on `disk` and asserts against
/// it, naming the case `ctx`, and returns a count the matrix reports (e.g. interrupted
/// structure modifications rolled back).
pub struct Matrix<O> {
    pub run: fn(&FaultStorage, u64) -> O,
    pub check: fn(&FaultStorage, &O, &str) -> u64,
}

impl<O> Matrix<O> {
    /// Runs the workload once without a crash, checks it, and returns its number of crash
    /// points (at least `min`).
    pub fn crash_points(&self, min: u64) -> u64 {
        let disk = FaultStorage::new(FaultConfig::new(0)).unwrap();
        let out = (self.run)(&disk, 0);
        let n = disk.op_counts().crash_points;
        (self.check)(&disk, &out, "the uncrashed run");
        assert!(n > min, "workload has only {n} crash points");
        n
    }

    /// Each of the first `limit` crash points: a torn write, then power loss.
    ///
    /// Background threads (cleaner, checkpointer) make the number of crash points of a run
    /// depend on timing, so a later run may end before point `k` of the uncrashed run. What
    /// must hold is that the matrix really crashes: at least half the points fire.
    pub fn each_of_first(&self, limit: u64) -> u64 {
        let total = self.crash_points(limit);
        let mut count = 0;
        let mut fired = 0;
        let points = total.min(limit);
        for k in 1..=points {
            let disk = FaultStorage::new(FaultConfig::new(k).rule(FaultRule::nth(
                FaultKind::TornWrite,
                OpClass::CrashPoint,
                k,
            )))
            .unwrap();
            let out = (self.run)(&disk, k);
            fired += u64::from(disk.is_crashed());
            disk.disarm_all();
            disk.restart();
            count += (self.check)(&disk, &out, &format!("crash point {k}"));
        }
        assert!(
            fired * 2 >= points,
            "only {fired} of the first {points} crash points fired"
        );
        count
    }

    /// `count` random crash points (power loss or torn write, alternately), with unsynced
    /// writes surviving at random (catches code that assumes an unsynced write is *not* on
    /// disk).
    pub fn random(&self, count: u64, seed: u64) -> u64 {
        let n = self.crash_points(0);
        let mut rng = StdRng::seed_from_u64(seed);
        let mut total = 0;
        for i in 0..count {
            let k = rng.random_range(1..=n);
            let kind = if i % 2 == 0 {
                FaultKind::TornWrite
            } else {
                FaultKind::PowerLoss
            };
            let disk = FaultStorage::new(
                FaultConfig::new(1000 + i)
                    .unsynced_survival(0.5)
                    .rule(FaultRule::nth(kind, OpClass::CrashPoint, k)),
            )
            .unwrap();
            let out = (self.run)(&disk, 1000 + i);
            disk.disarm_all(); // a point past this run's last one must not fire in the check
            disk.restart();
            let ctx = format!("random crash {i} at point {k} ({kind:?})");
            total += (self.check)(&disk, &out, &ctx);
        }
        total
    }

    /// `count` crashes in the second half of the workload, each followed by a restart that
    /// `open` runs and that crashes at one of its first ten crash points, then a clean
    /// restart and the check. Returns how many restarts did crash.
    pub fn during_restart(&self, count: u64, seed: u64, open: fn(&FaultStorage)) -> u32 {
        let n = self.crash_points(0);
        let mut rng = StdRng::seed_from_u64(seed);
        let mut restart_crashes = 0;
        for i in 0..count {
            let k = rng.random_range(n / 3..=n);
            let disk = FaultStorage::new(FaultConfig::new(2000 + i).rule(FaultRule::nth(
                FaultKind::PowerLoss,
                OpClass::CrashPoint,
                k,
            )))
            .unwrap();
            let out = (self.run)(&disk, 2000 + i);
            disk.restart();
            let j = rng.random_range(1..=10); // counted from arming (fault rule 6)
            disk.disarm_all();
            disk.arm(FaultRule::nth(FaultKind::TornWrite, OpClass::CrashPoint, j))
                .unwrap();
            open(&disk);
            let crashed = disk.is_crashed();
            restart_crashes += u32::from(crashed);
            disk.restart();
            disk.disarm_all();
            let ctx = format!("crash {i} at {k}, restart crashed at {j}: {crashed}");
            (self.check)(&disk, &out, &ctx);
        }
        restart_crashes
    }
}

/// Runs `workers` while a checkpointer thread checkpoints every 3 ms until they are done (or
/// a checkpoint fails: the crash).
pub fn with_checkpointer(e: &Engine, workers: impl FnOnce()) {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let ckpt = s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                if e.checkpoint().is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(3));
            }
        });
        workers();
        stop.store(true, Ordering::Relaxed);
        ckpt.join().unwrap();
    });
}

/// Closes `e` cleanly, then checks that every allocated page written to the disk verifies
/// its checksum (pages reserved with an extent but never written stay zero: a leak, space
/// invariant 2).
pub fn close_and_check_checksums(disk: &FaultStorage, e: Engine, page_size: usize, ctx: &str) {
    let allocated: Vec<u64> = (0..e.space().page_count())
        .filter(|&p| e.space().is_allocated(PageId(p)).unwrap())
        .collect();
    e.close()
        .unwrap_or_else(|err| panic!("{ctx}: close: {err}"));
    let data = disk.durable_contents(DATA_FILE).unwrap();
    for p in allocated {
        let img = &data[p as usize * page_size..(p as usize + 1) * page_size];
        if img.iter().all(|&b| b == 0) {
            continue;
        }
        header::verify(img, PageId(p)).unwrap_or_else(|err| panic!("{ctx}: page {p}: {err}"));
    }
}
