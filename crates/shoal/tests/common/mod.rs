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
use std::sync::OnceLock;
use std::time::Duration;

/// The environment variable that moves every seeded test's random choices (workloads, crash
/// points, damage) to a new part of the space: unset (or 0), CI's fixed seeds; any other
/// unsigned integer, a campaign of fresh cases (README, "Long tests").
pub const SEED_VAR: &str = "SHOAL_TEST_SEED";

/// The value of [`SEED_VAR`], 0 when unset.
///
/// # Panics
/// If it is set but not an unsigned decimal integer (a typo must not silently re-run CI's
/// seeds).
pub fn seed_offset() -> u64 {
    static OFFSET: OnceLock<u64> = OnceLock::new();
    *OFFSET.get_or_init(|| match std::env::var(SEED_VAR) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{SEED_VAR}={v:?} is not an unsigned integer")),
        Err(_) => 0,
    })
}

/// `seed` moved by [`seed_offset`]: the same value when the offset is 0; otherwise far from
/// every base seed the tests use (they are small numbers, so offsets that are a large odd
/// multiplier apart never map two campaigns onto one another's seeds).
pub fn seeded(seed: u64) -> u64 {
    seed.wrapping_add(seed_offset().wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// What a failure message appends so that the case can be run again: empty under CI's
/// seeds, ` (SHOAL_TEST_SEED=n)` otherwise.
pub fn seed_note() -> String {
    match seed_offset() {
        0 => String::new(),
        n => format!(" ({SEED_VAR}={n})"),
    }
}

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
            let disk = FaultStorage::new(FaultConfig::new(seeded(k)).rule(FaultRule::nth(
                FaultKind::TornWrite,
                OpClass::CrashPoint,
                k,
            )))
            .unwrap();
            let out = (self.run)(&disk, seeded(k));
            fired += u64::from(disk.is_crashed());
            disk.disarm_all();
            disk.restart();
            count += (self.check)(&disk, &out, &format!("crash point {k}{}", seed_note()));
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
        let mut rng = StdRng::seed_from_u64(seeded(seed));
        let mut total = 0;
        for i in 0..count {
            let k = rng.random_range(1..=n);
            let kind = if i % 2 == 0 {
                FaultKind::TornWrite
            } else {
                FaultKind::PowerLoss
            };
            let disk = FaultStorage::new(
                FaultConfig::new(seeded(1000 + i))
                    .unsynced_survival(0.5)
                    .rule(FaultRule::nth(kind, OpClass::CrashPoint, k)),
            )
            .unwrap();
            let out = (self.run)(&disk, seeded(1000 + i));
            disk.disarm_all(); // a point past this run's last one must not fire in the check
            disk.restart();
            let ctx = format!("random crash {i} at point {k} ({kind:?}){}", seed_note());
            total += (self.check)(&disk, &out, &ctx);
        }
        total
    }

    /// `count` crashes in the second half of the workload, each followed by a restart that
    /// `open` runs and that crashes at one of its first ten crash points, then a clean
    /// restart and the check. Returns how many restarts did crash.
    pub fn during_restart(&self, count: u64, seed: u64, open: fn(&FaultStorage)) -> u32 {
        let n = self.crash_points(0);
        let mut rng = StdRng::seed_from_u64(seeded(seed));
        let mut restart_crashes = 0;
        for i in 0..count {
            let k = rng.random_range(n / 3..=n);
            let disk = FaultStorage::new(FaultConfig::new(seeded(2000 + i)).rule(FaultRule::nth(
                FaultKind::PowerLoss,
                OpClass::CrashPoint,
                k,
            )))
            .unwrap();
            let out = (self.run)(&disk, seeded(2000 + i));
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
            let ctx = format!(
                "crash {i} at {k}, restart crashed at {j}: {crashed}{}",
                seed_note()
            );
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
