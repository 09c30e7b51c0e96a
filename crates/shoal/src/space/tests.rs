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
