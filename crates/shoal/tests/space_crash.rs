//! Crash matrix for the space manager: a workload of allocations (each page then written and
//! synced, i.e. "in use" durably) and file growth is crashed at every write/sync point by the
//! seeded fault injector. After restart the space manager must open (space invariant 3) and
//! every page that was in use before the crash must be marked allocated (invariant 2: a crash
//! leaks at worst, never hands a used page out again).

use shoal::buffer::{BufferPool, NoWal};
use shoal::io::{FaultConfig, FaultKind, FaultRule, FaultStorage, OpClass, OpenOptions, Storage};
use shoal::page::{PageType, PageWrite, HEADER_SIZE};
use shoal::space::SpaceManager;
use shoal::{Options, PageId};
use std::sync::Arc;

const PS: usize = 4096;

fn options() -> Options {
    Options {
        pool_size_bytes: 32 * PS,
        page_size_bytes: PS,
        cleaner_enabled: false,
        ..Options::default()
    }
}

fn open_pool(storage: &FaultStorage) -> shoal::Result<Arc<BufferPool>> {
    let file = storage.open(
        "data",
        OpenOptions {
            create: true,
            ..Default::default()
        },
    )?;
    BufferPool::open(file, &options(), Arc::new(NoWal))
}

/// Allocates `n` pages through a mix of the shared and private caches, writing and syncing
/// each; returns the pages that were durably in use when it stopped (by error or at the end).
fn workload(storage: &FaultStorage, n: usize) -> (Vec<u64>, shoal::Result<()>) {
    let mut used = Vec::new();
    let r = (|| {
        let pool = open_pool(storage)?;
        let space = SpaceManager::create(pool.clone())?;
        let mut cache = space.extent_cache();
        for i in 0..n {
            let p = if i % 3 == 0 {
                space.allocate()?
            } else {
                cache.allocate()?
            };
            {
                let mut g = pool.fix_new(p, PageType::Raw)?;
                g.page_mut().put_u64(HEADER_SIZE, i as u64);
            }
            pool.flush_page(p)?;
            pool.sync()?;
            used.push(p.0);
        }
        Ok(())
    })();
    (used, r)
}

#[test]
fn allocation_survives_a_crash_at_every_write_and_sync() {
    crash_matrix(0.0);
}

/// The same with each unsynced write surviving the crash with probability 1/2 (catches code
/// that assumes an unsynced write is *not* on disk).
#[test]
fn allocation_survives_crashes_that_keep_some_unsynced_writes() {
    crash_matrix(0.5);
}

fn crash_matrix(unsynced_survival: f64) {
    const PAGES: usize = 150; // crosses two extent boundaries: growth and new reservations
    let counter = FaultStorage::new(FaultConfig::new(0)).unwrap();
    let (_, r) = workload(&counter, PAGES);
    r.unwrap();
    let points = counter.op_counts().crash_points;
    assert!(points > PAGES as u64, "workload has {points} crash points");
    eprintln!("crash matrix over {points} crash points (unsynced survival {unsynced_survival})");

    for k in 1..=points {
        let storage = FaultStorage::new(
            FaultConfig::new(k)
                .unsynced_survival(unsynced_survival)
                .rule(FaultRule::nth(FaultKind::TornWrite, OpClass::CrashPoint, k)),
        )
        .unwrap();
        let (used, r) = workload(&storage, PAGES);
        assert!(r.is_err(), "crash point {k} of {points} did not fire");
        storage.restart();

        let pool = open_pool(&storage).unwrap();
        if pool.file().len().unwrap() == 0 {
            assert!(used.is_empty(), "k={k}: pages in use but the file is empty");
            continue; // crashed before the file was formatted
        }
        let space = match SpaceManager::open(pool.clone()) {
            Ok(s) => s,
            // A crash while formatting (before the first sync) may leave no valid header.
            Err(e) if used.is_empty() => {
                let _ = e;
                continue;
            }
            Err(e) => panic!("k={k}: space manager does not open after crash: {e}"),
        };
        for &p in &used {
            assert!(
                space.is_allocated(PageId(p)).unwrap(),
                "k={k}: page {p} was in use before the crash but is free after it"
            );
        }
        // The reopened map still works: new pages never collide with used ones.
        for _ in 0..70 {
            let p = space.allocate().unwrap().0;
            assert!(!used.contains(&p), "k={k}: page {p} handed out twice");
        }
    }
}
