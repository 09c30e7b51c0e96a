//! Space manager tests on real files.

use super::*;
use crate::buffer::NoWal;
use crate::io::StorageFile;
use crate::options::Options;
use proptest::prelude::*;
use std::collections::BTreeSet;

const PS: usize = 4096;

fn file(dir: &std::path::Path) -> Arc<dyn StorageFile> {
    crate::io::test_data_file(dir)
}

fn pool(dir: &std::path::Path) -> Arc<BufferPool> {
    let o = Options {
        pool_size_bytes: 32 * PS,
        page_size_bytes: PS,
        ..Options::default()
    };
    BufferPool::open(file(dir), &o, Arc::new(NoWal)).unwrap()
}

fn close(space: SpaceManager) {
    space.release_caches().unwrap();
    space.pool().close().unwrap();
}

#[derive(Clone, Debug)]
enum Op {
    Alloc,
    CacheAlloc(u8),
    Free(usize),
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Alloc),
        3 => (1u8..40).prop_map(Op::CacheAlloc),
        4 => any::<usize>().prop_map(Op::Free),
        1 => Just(Op::Reopen),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Issue test (e): the allocation map survives close and reopen and never hands out a page
    /// twice; freed pages are reused.
    #[test]
    fn allocation_matches_model_across_reopen(ops in proptest::collection::vec(op(), 1..80)) {
        let dir = tempfile::tempdir().unwrap();
        let mut space = SpaceManager::create(pool(dir.path())).unwrap();
        let mut model: BTreeSet<u64> = BTreeSet::new();
        let mut freed: BTreeSet<u64> = BTreeSet::new();
        for op in ops {
            match op {
                Op::Alloc => {
                    let p = space.allocate().unwrap().0;
                    prop_assert!(p >= 2, "handed out metadata page {}", p);
                    prop_assert!(model.insert(p), "page {} handed out twice", p);
                    freed.remove(&p);
                }
                Op::CacheAlloc(n) => {
                    let mut c = space.extent_cache();
                    for _ in 0..n {
                        let p = c.allocate().unwrap().0;
                        prop_assert!(model.insert(p), "page {} handed out twice", p);
                        freed.remove(&p);
                    }
                    c.release().unwrap();
                }
                Op::Free(i) => {
                    if model.is_empty() { continue; }
                    let p = *model.iter().nth(i % model.len()).unwrap();
                    space.free(PageId(p)).unwrap();
                    model.remove(&p);
                    freed.insert(p);
                    let again = space.free(PageId(p));
                    prop_assert!(
                        matches!(again, Err(Error::PageNotAllocated { .. })),
                        "double free accepted"
                    );
                }
                Op::Reopen => {
                    close(space);
                    space = SpaceManager::open(pool(dir.path())).unwrap();
                }
            }
        }
        space.release_caches().unwrap();
        let g = group_pages(PS);
        for p in (2..space.page_count()).filter(|p| p % g != 0) {
            prop_assert_eq!(space.is_allocated(PageId(p)).unwrap(), model.contains(&p), "page {}", p);
        }
        prop_assert_eq!(space.allocated_count().unwrap(), model.len() as u64 + 1 + space.page_count().div_ceil(g));
        // Freed pages are reused before the file grows.
        if !freed.is_empty() {
            let pages = space.page_count();
            let p = space.allocate().unwrap().0;
            prop_assert!(!model.contains(&p), "page {} handed out twice", p);
            prop_assert_eq!(space.page_count(), pages, "grew the file instead of reusing");
        }
    }
}

#[test]
fn concurrent_allocation_hands_out_distinct_pages() {
    let dir = tempfile::tempdir().unwrap();
    let space = Arc::new(SpaceManager::create(pool(dir.path())).unwrap());
    let hs: Vec<_> = (0..4)
        .map(|t| {
            let space = space.clone();
            std::thread::spawn(move || {
                let mut mine = Vec::new();
                let mut cache = space.extent_cache();
                for i in 0..600 {
                    mine.push(if (i + t) % 2 == 0 {
                        space.allocate().unwrap().0
                    } else {
                        cache.allocate().unwrap().0
                    });
                }
                cache.release().unwrap();
                mine
            })
        })
        .collect();
    let mut all = BTreeSet::new();
    for h in hs {
        for p in h.join().unwrap() {
            assert!(all.insert(p), "page {p} handed out twice");
        }
    }
    space.release_caches().unwrap();
    assert_eq!(space.allocated_count().unwrap(), all.len() as u64 + 2);
}

/// Growth across a space-map group: the next group's map page is created, marked allocated and
/// never handed out; everything survives reopen.
#[test]
fn growth_crosses_a_map_group() {
    let dir = tempfile::tempdir().unwrap();
    let space = SpaceManager::create(pool(dir.path())).unwrap();
    let g = group_pages(PS);
    let n = g + 100;
    let mut cache = space.extent_cache();
    for _ in 0..n {
        let p = cache.allocate().unwrap().0;
        assert_ne!(p, g, "map page of group 1 handed out");
    }
    cache.release().unwrap();
    assert!(space.page_count() > g);
    let allocated = space.allocated_count().unwrap();
    assert_eq!(allocated, n + 3);
    close(space);
    let space = SpaceManager::open(pool(dir.path())).unwrap();
    assert_eq!(space.allocated_count().unwrap(), allocated);
    assert!(space.is_allocated(PageId(g)).unwrap());
    assert!(matches!(
        space.free(PageId(g)),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn bad_frees_and_bad_files_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let space = SpaceManager::create(pool(dir.path())).unwrap();
    assert!(matches!(
        space.free(PageId(0)),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        space.free(PageId(1)),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        space.free(PageId(5)),
        Err(Error::PageNotAllocated { .. })
    ));
    assert!(matches!(
        space.free(PageId(1 << 40)),
        Err(Error::PageNotAllocated { .. })
    ));
    assert!(matches!(
        SpaceManager::create(space.pool().clone()),
        Err(Error::InvalidArgument { name: "file", .. })
    ));
    close(space);
    assert_eq!(probe_page_size(&*file(dir.path())).unwrap(), PS);

    let other = tempfile::tempdir().unwrap();
    let f = file(other.path());
    let e = probe_page_size(&*f).unwrap_err();
    assert!(
        matches!(e, Error::BadFile { .. }) && e.to_string().contains("empty"),
        "{e}"
    );
    f.write_all_at(&[7u8; 8192], 0).unwrap();
    let e = probe_page_size(&*f).unwrap_err();
    assert!(e.to_string().contains("not a Shoal data file"), "{e}");
}

/// Invariant 3: the file grows by an eighth of its size at a time (1 extent to
/// `GROW_MAX_BYTES`), so a growing file pays for few growths, and never by much more than it
/// needs.
#[test]
fn growth_is_an_eighth_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let space = SpaceManager::create(pool(dir.path())).unwrap();
    assert_eq!(space.grow_extents(EXTENT_PAGES), 1);
    assert_eq!(space.grow_extents(64 * EXTENT_PAGES), 8);
    let max = GROW_MAX_BYTES / PS as u64 / EXTENT_PAGES;
    assert_eq!(space.grow_extents(1 << 40), max, "capped");
    let mut cache = space.extent_cache();
    let mut counts = vec![space.page_count()];
    for _ in 0..20_000 {
        cache.allocate().unwrap();
        if space.page_count() != *counts.last().unwrap() {
            counts.push(space.page_count());
        }
    }
    cache.release().unwrap();
    for w in counts.windows(2) {
        let step = w[1] - w[0];
        assert_eq!(step, space.grow_extents(w[0]) * EXTENT_PAGES, "{counts:?}");
    }
    // 7 one-extent growths to 512 pages, then about 31 of an eighth each to 20,000.
    assert!(
        counts.len() < 48,
        "{} growths for 20,000 pages",
        counts.len() - 1
    );
    assert!(space.page_count() <= 20_000 * 9 / 8 + 2 * EXTENT_PAGES);
}

/// Invariant 3 on a full disk: when the storage has no room for a growth of several extents,
/// the file grows by one extent instead, and only when that fails too is the error returned.
#[test]
fn a_full_disk_falls_back_to_one_extent() {
    use crate::io::{
        FaultConfig, FaultKind, FaultRule, FaultStorage, OpClass, OpenOptions, Storage,
    };
    let fs = FaultStorage::new(FaultConfig::new(3)).unwrap();
    let create = OpenOptions {
        create: true,
        ..Default::default()
    };
    let f = fs.open("data.shoal", create).unwrap();
    let o = Options {
        pool_size_bytes: 64 * PS,
        page_size_bytes: PS,
        ..Options::default()
    };
    let space = SpaceManager::create(BufferPool::open(f, &o, Arc::new(NoWal)).unwrap()).unwrap();
    let mut cache = space.extent_cache();
    while space.page_count() < 16 * EXTENT_PAGES {
        cache.allocate().unwrap();
    }
    let pages = space.page_count();
    assert!(space.grow_extents(pages) > 1);
    // The next growth's set_len fails once with ENOSPC; the one-extent retry succeeds.
    fs.arm(FaultRule::nth(FaultKind::NoSpace, OpClass::Write, 1).on_files("data"))
        .unwrap();
    while space.page_count() == pages {
        cache.allocate().unwrap();
    }
    assert_eq!(space.page_count(), pages + EXTENT_PAGES);
    // Both fail: the allocation reports the full disk.
    let pages = space.page_count();
    fs.arm(FaultRule::nth(FaultKind::NoSpace, OpClass::Write, 1).on_files("data"))
        .unwrap();
    fs.arm(FaultRule::nth(FaultKind::NoSpace, OpClass::Write, 2).on_files("data"))
        .unwrap();
    let err = loop {
        match cache.allocate() {
            Ok(_) => assert_eq!(space.page_count(), pages, "grew on a full disk"),
            Err(e) => break e,
        }
    };
    assert!(matches!(err, Error::NoSpace { .. }), "{err}");
}

#[test]
fn a_queued_free_waits_for_its_lsn_to_be_durable() {
    use crate::types::Lsn;
    let dir = tempfile::tempdir().unwrap();
    let space = SpaceManager::create(pool(dir.path())).unwrap();
    let (a, b) = (space.allocate().unwrap(), space.allocate().unwrap());
    space.release_caches().unwrap();
    assert_eq!(space.free_after(&[a], Lsn(1_000)).unwrap(), 1);
    assert_eq!(space.free_after(&[b], Lsn(2_000)).unwrap(), 2);
    // Not durable far enough: nothing is freed.
    assert_eq!(space.free_durable(Lsn(999)).unwrap(), 0);
    assert!(space.is_allocated(a).unwrap() && space.is_allocated(b).unwrap());
    // Durable past the first: only it.
    assert_eq!(space.free_durable(Lsn(1_500)).unwrap(), 1);
    assert!(!space.is_allocated(a).unwrap() && space.is_allocated(b).unwrap());
    assert_eq!(space.pending_free_count(), 1);
    assert_eq!(space.free_durable(Lsn(2_000)).unwrap(), 1);
    assert!(!space.is_allocated(b).unwrap());
    assert_eq!(space.pending_free_count(), 0);
    // A header or map page cannot be queued; a page queued twice is a double free when due.
    assert!(matches!(
        space.free_after(&[PageId(0)], Lsn(1)),
        Err(Error::InvalidArgument { .. })
    ));
    let c = space.allocate().unwrap();
    space.free_after(&[c], Lsn(5)).unwrap();
    space.free_after(&[c], Lsn(5)).unwrap();
    assert!(matches!(
        space.free_durable(Lsn(5)),
        Err(Error::PageNotAllocated { .. })
    ));
    assert_eq!(space.pending_free_count(), 0);
    close(space);
}
