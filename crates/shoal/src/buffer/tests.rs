//! Buffer pool tests on real files (fault-injection tests live in `tests/buffer_faults.rs`).

use super::*;
use crate::error::{Error, Result};
use crate::io::StorageFile;
use crate::options::Options;
use crate::page::{PageRead, PageType, PageWrite, HEADER_SIZE};
use crate::types::{Lsn, PageId};
use rand::{rngs::SmallRng, Rng, SeedableRng};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};
use std::sync::Arc;

const PS: usize = 4096;
const COUNTER: usize = HEADER_SIZE;
const PATTERN: usize = HEADER_SIZE + 8;

fn opts(frames: usize) -> Options {
    Options {
        pool_size_bytes: frames * PS,
        page_size_bytes: PS,
        cleaner_interval_ms: 5,
        cleaner_lag_bytes: 0,
        ..Options::default()
    }
}

fn data_file(dir: &tempfile::TempDir) -> Arc<dyn StorageFile> {
    crate::io::test_data_file(dir.path())
}

fn pattern_byte(pid: u64, counter: u64, i: usize) -> u8 {
    (pid.wrapping_mul(31) ^ counter.wrapping_mul(7) ^ i as u64) as u8
}

/// Writes counter `c` and its pattern into a page.
fn stamp<P: PageWrite + ?Sized>(page: &mut P, pid: u64, c: u64) {
    page.put_u64(COUNTER, c);
    let body: Vec<u8> = (PATTERN..PS).map(|i| pattern_byte(pid, c, i)).collect();
    page.write_from(PATTERN, &body);
}

/// Checks that a page's pattern matches its counter; returns the counter.
fn check_stamp<P: PageRead + ?Sized>(page: &P, pid: u64) -> std::result::Result<u64, String> {
    let c = page.u64_at(COUNTER);
    let mut body = vec![0u8; PS - PATTERN];
    page.read_into(PATTERN, &mut body);
    for (k, b) in body.iter().enumerate() {
        if *b != pattern_byte(pid, c, PATTERN + k) {
            return Err(format!(
                "page {pid}: torn page at byte {} (counter {c})",
                PATTERN + k
            ));
        }
    }
    Ok(c)
}

fn fill(pool: &BufferPool, pages: u64) {
    for p in 0..pages {
        let mut g = pool.fix_new(PageId(p), PageType::Raw).unwrap();
        stamp(&mut g.page_mut(), p, 0);
    }
}

/// Issue test (a): 8 threads fix/modify/unfix random pages of a set ten times the pool; at the
/// end every page equals the model — no lost update, no torn read, no checksum error, also
/// after reopening the file in a fresh pool.
#[test]
fn concurrent_random_fixes_match_model() {
    random_fixes_match_model(32, 8, 2500);
}

/// Frame hints are only guesses (`page_table` module doc): once a page has moved to another
/// frame (evicted and read back) and its hint slot has been taken by pages with the same low
/// bits, optimistic fixes must still find that page and no other. A pool of 16 frames (16
/// hints) cycles through 256 pages in orders that make every hint stale in turn.
#[test]
fn optimistic_fixes_follow_pages_that_moved() {
    let dir = tempfile::tempdir().unwrap();
    let pool = BufferPool::open(data_file(&dir), &opts(16), Arc::new(NoWal)).unwrap();
    fill(&pool, 256);
    let order = (0..256u64)
        .chain((0..256).rev())
        .chain((0..256).map(|i| (i * 37) % 256));
    for p in order {
        for _ in 0..2 {
            // Twice: the second fix of a resident page goes through its fresh hint.
            let (id, stamp) = pool
                .read_optimistic(PageId(p), |b| {
                    (crate::page::header::page_id(b), check_stamp(b, p))
                })
                .unwrap();
            assert_eq!(id, PageId(p));
            assert_eq!(stamp, Ok(0), "page {p}");
        }
    }
    assert!(pool.stats().evictions > 500);
}

/// Long version for the ignored suite: more threads, pages and operations.
#[test]
#[ignore = "long stress test: cargo test --release -- --ignored"]
fn concurrent_random_fixes_match_model_long() {
    random_fixes_match_model(64, 16, 200_000);
}

fn random_fixes_match_model(frames: usize, threads: usize, ops: usize) {
    let pages = frames as u64 * 10;
    let dir = tempfile::tempdir().unwrap();
    let pool = BufferPool::open(data_file(&dir), &opts(frames), Arc::new(NoWal)).unwrap();
    fill(&pool, pages);
    let model: Arc<Vec<AtomicU64>> = Arc::new((0..pages).map(|_| AtomicU64::new(0)).collect());
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let pool = pool.clone();
            let model = model.clone();
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(t as u64);
                for _ in 0..ops {
                    let p = rng.random_range(0..pages);
                    match rng.random_range(0..10) {
                        0..=3 => {
                            let mut g = pool.fix_exclusive(PageId(p)).unwrap();
                            let c = check_stamp(g.bytes(), p).unwrap();
                            stamp(&mut g.page_mut(), p, c + 1);
                            g.mark_dirty();
                            model[p as usize].fetch_add(1, Relaxed);
                        }
                        4..=6 => {
                            let g = pool.fix_shared(PageId(p)).unwrap();
                            assert_eq!(g.page_id(), PageId(p));
                            check_stamp(g.bytes(), p).unwrap();
                        }
                        _ => {
                            let r = pool
                                .read_optimistic(PageId(p), |b| {
                                    (crate::page::header::page_id(b), check_stamp(b, p))
                                })
                                .unwrap();
                            assert_eq!(r.0, PageId(p));
                            r.1.unwrap();
                        }
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    // Dirty map invariant 1: `flush_all` writes only the frames the dirty map lists, so a
    // frame dirtied without setting its bit would still be dirty after it, and a bit left
    // set after its frame was cleaned would still be listed.
    pool.flush_all().unwrap();
    let dirty: Vec<usize> = (pool.frames.iter().enumerate())
        .filter(|(_, f)| f.dirty.load(SeqCst))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(dirty, Vec::<usize>::new(), "frames dirty after flush_all");
    assert_eq!(
        pool.dirty_map.frames().count(),
        0,
        "bits left in the dirty map"
    );
    for p in 0..pages {
        let g = pool.fix_shared(PageId(p)).unwrap();
        assert_eq!(
            check_stamp(g.bytes(), p).unwrap(),
            model[p as usize].load(Relaxed)
        );
    }
    let s = pool.stats();
    assert!(
        s.misses > pages && s.evictions > 0 && s.dirty_writes > 0,
        "{s:?}"
    );
    pool.close().unwrap();
    drop(pool);

    let pool = BufferPool::open(data_file(&dir), &opts(frames), Arc::new(NoWal)).unwrap();
    for p in 0..pages {
        let g = pool.fix_shared(PageId(p)).unwrap();
        assert_eq!(
            check_stamp(g.bytes(), p).unwrap(),
            model[p as usize].load(Relaxed)
        );
    }
}

/// A log stand-in: LSNs from a counter; records how far the log was forced. With a durable
/// floor (`floor` not 0) it also counts the forces of pages at or above it, each of which a
/// real log pays for with an anchor write and sync (log anchor rule A6).
#[derive(Default)]
struct RecordingWal {
    next: AtomicU64,
    forced: AtomicU64,
    forces: AtomicUsize,
    floor: AtomicU64,
    raises: AtomicUsize,
}

impl WalHook for RecordingWal {
    fn force_log(&self, lsn: Lsn) -> Result<()> {
        self.forced.fetch_max(lsn.0, SeqCst);
        self.forces.fetch_add(1, SeqCst);
        if lsn >= self.durable_floor() {
            self.raises.fetch_add(1, SeqCst);
        }
        Ok(())
    }
    fn durable_floor(&self) -> Lsn {
        match self.floor.load(SeqCst) {
            0 => Lsn(u64::MAX),
            f => Lsn(f),
        }
    }
    fn current_lsn(&self) -> Lsn {
        Lsn(self.next.load(SeqCst))
    }
}

/// A file that checks the WAL rule on every page write: the log must have been forced up to
/// the page LSN of the image being written.
#[derive(Debug)]
struct WalCheckingFile {
    inner: Arc<dyn StorageFile>,
    wal: Arc<RecordingWal>,
    checked: AtomicUsize,
    /// The pages written, in order.
    written: std::sync::Mutex<Vec<u64>>,
}

impl WalCheckingFile {
    fn new(dir: &tempfile::TempDir, wal: Arc<RecordingWal>) -> Arc<WalCheckingFile> {
        Arc::new(WalCheckingFile {
            inner: data_file(dir),
            wal,
            checked: AtomicUsize::new(0),
            written: std::sync::Mutex::new(Vec::new()),
        })
    }
}

impl std::fmt::Debug for RecordingWal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RecordingWal")
    }
}

impl StorageFile for WalCheckingFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.inner.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        let lsn = crate::page::header::page_lsn(buf);
        assert!(
            self.wal.forced.load(SeqCst) >= lsn.0,
            "page written with page LSN {lsn} but log forced only to {}",
            self.wal.forced.load(SeqCst)
        );
        crate::page::header::verify(buf, PageId(offset / PS as u64)).expect("sealed image");
        self.checked.fetch_add(1, SeqCst);
        self.written.lock().unwrap().push(offset / PS as u64);
        self.inner.write_all_at(buf, offset)
    }
    fn sync_data(&self) -> Result<()> {
        self.inner.sync_data()
    }
    fn len(&self) -> Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, len_bytes: u64) -> Result<()> {
        self.inner.set_len(len_bytes)
    }
    fn name(&self) -> &str {
        self.inner.name()
    }
}

/// Issue test (b): eviction under pressure with dirty pages; the WAL hook is called with (at
/// least) the page LSN before each write, and recovery LSNs never exceed page LSNs.
#[test]
fn eviction_forces_log_before_each_write() {
    let dir = tempfile::tempdir().unwrap();
    let wal = Arc::new(RecordingWal::default());
    let file = WalCheckingFile::new(&dir, wal.clone());
    let pool = BufferPool::open(file.clone(), &opts(16), wal.clone()).unwrap();
    fill(&pool, 160);
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let pool = pool.clone();
            let wal = wal.clone();
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(100 + t);
                for i in 0..1500u64 {
                    let p = rng.random_range(0..160u64);
                    let mut g = pool.fix_exclusive(PageId(p)).unwrap();
                    g.page_mut().put_u64(COUNTER, i);
                    g.mark_dirty();
                    // "Append a log record": take the next LSN, then set the page LSN (the
                    // record's own, below the new end: buffer rule 9).
                    let lsn = wal.next.fetch_add(10, SeqCst);
                    g.set_page_lsn(Lsn(lsn));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    pool.close().unwrap();
    assert!(file.checked.load(SeqCst) > 100, "few writes were checked");
    assert!(wal.forces.load(SeqCst) >= file.checked.load(SeqCst));
    assert!(pool.stats().evictions > 500);
}

/// Buffer rule 10: a miss evicts a dirty page below the log's durable floor before the
/// dirty pages above it (whose write raises the floor: log anchor rule A6), even where
/// CLOCK reaches those first; with only pages above the floor left, it still finds a
/// victim, and pays for the raise. The rule holds only while a cleaner runs: this one is
/// started but never wakes during the test.
#[test]
fn eviction_prefers_dirty_pages_below_the_durable_floor() {
    let dir = tempfile::tempdir().unwrap();
    let wal = Arc::new(RecordingWal::default());
    wal.floor.store(1000, SeqCst);
    wal.next.store(1 << 20, SeqCst);
    let file = WalCheckingFile::new(&dir, wal.clone());
    const N: u64 = 16; // the smallest pool
    let options = Options {
        cleaner_enabled: true,
        cleaner_interval_ms: 3_600_000,
        ..opts(N as usize)
    };
    let pool = BufferPool::open(file.clone(), &options, wal.clone()).unwrap();
    // Dirty pages fill the pool; only the last one CLOCK reaches is below the floor.
    let below = N - 1;
    for p in 0..N {
        let mut g = pool.fix_new(PageId(p), PageType::Raw).unwrap();
        stamp(&mut g.page_mut(), p, 0);
        g.set_page_lsn(Lsn(if p == below { 500 } else { 2000 + p }));
    }
    {
        let mut g = pool.fix_new(PageId(N), PageType::Raw).unwrap();
        stamp(&mut g.page_mut(), N, 0);
        g.set_page_lsn(Lsn(3000));
    }
    assert_eq!(*file.written.lock().unwrap(), vec![below]);
    assert_eq!(wal.raises.load(SeqCst), 0);
    // Every page left is above the floor: the next miss writes one of them all the same.
    let mut g = pool.fix_new(PageId(N + 1), PageType::Raw).unwrap();
    stamp(&mut g.page_mut(), N + 1, 0);
    drop(g);
    assert_eq!(file.written.lock().unwrap().len(), 2);
    assert_eq!(wal.raises.load(SeqCst), 1);
    for p in 0..N + 2 {
        let g = pool.fix_shared(PageId(p)).unwrap();
        check_stamp(g.bytes(), p).unwrap();
    }
}

/// Issue test (d): a page corrupted on disk is reported as `Corruption` naming the page, and
/// the pool stays usable for other pages.
#[test]
fn corrupted_page_is_reported_with_its_id() {
    let dir = tempfile::tempdir().unwrap();
    {
        let pool = BufferPool::open(data_file(&dir), &opts(16), Arc::new(NoWal)).unwrap();
        fill(&pool, 8);
        pool.close().unwrap();
    }
    let path = dir.path().join("data.shoal");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[5 * PS + 1000] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();

    let pool = BufferPool::open(data_file(&dir), &opts(16), Arc::new(NoWal)).unwrap();
    match pool.fix_shared(PageId(5)) {
        Err(Error::Corruption { page_id, reason }) => {
            assert_eq!(page_id, PageId(5));
            assert!(reason.contains("checksum"), "{reason}");
        }
        Err(e) => panic!("wrong error {e}"),
        Ok(_) => panic!("corrupt page accepted"),
    }
    // Same again (the failed load must not leave a half-installed frame behind).
    assert!(matches!(
        pool.read_optimistic(PageId(5), |_| ()),
        Err(Error::Corruption { .. })
    ));
    assert_eq!(
        check_stamp(pool.fix_shared(PageId(4)).unwrap().bytes(), 4),
        Ok(0)
    );
    assert!(matches!(
        pool.fix_shared(PageId(100)),
        Err(Error::PageNotAllocated {
            page_id: PageId(100),
            ..
        })
    ));
    assert!(matches!(
        pool.fix_shared(PageId::INVALID),
        Err(Error::InvalidArgument { .. })
    ));
}

/// The cleaner writes dirty pages in the background and publishes the oldest recovery LSN.
#[test]
fn cleaner_writes_dirty_pages_and_publishes_oldest_rec_lsn() {
    let dir = tempfile::tempdir().unwrap();
    let wal = Arc::new(RecordingWal::default());
    wal.next.store(500, SeqCst);
    let pool = BufferPool::open(data_file(&dir), &opts(64), wal.clone()).unwrap();
    fill(&pool, 20);
    assert_eq!(pool.dirty_count(), 20);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while pool.dirty_count() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "cleaner did not clean"
        );
        pool.wake_cleaner();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // Dirty one page while the log end is 500: its rec LSN is 500.
    wal.next.store(500, SeqCst);
    {
        let mut g = pool.fix_exclusive(PageId(3)).unwrap();
        g.mark_dirty();
        g.set_page_lsn(Lsn(510));
    }
    // Advance the log, and hold the page latched so the cleaner cannot clean it.
    wal.next.store(900, SeqCst);
    let _busy = pool.fix_exclusive(PageId(3)).unwrap();
    pool.wake_cleaner();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while pool.oldest_rec_lsn() != Lsn(500) {
        assert!(std::time::Instant::now() < deadline, "bound not published");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    drop(_busy);
    pool.close().unwrap();
    assert_eq!(pool.dirty_count(), 0);
}

/// The dirty map over several words (every other pool test fits in one): a pool of 200
/// frames, every frame used, no cleaner. `dirty_count`, `oldest_rec_lsn_now`, `flush_page`
/// and `flush_all` see exactly the dirty frames, wherever their bits lie.
#[test]
fn dirty_frames_are_found_in_every_word_of_the_dirty_map() {
    let dir = tempfile::tempdir().unwrap();
    let wal = Arc::new(RecordingWal::default());
    wal.next.store(100, SeqCst);
    let o = Options {
        cleaner_enabled: false,
        ..opts(200)
    };
    let pool = BufferPool::open(data_file(&dir), &o, wal.clone()).unwrap();
    fill(&pool, 200);
    assert_eq!(pool.dirty_count(), 200);
    assert_eq!(pool.oldest_rec_lsn_now().unwrap(), Lsn(100));
    pool.flush_all().unwrap();
    assert_eq!(pool.dirty_count(), 0);
    assert_eq!(pool.dirty_map.frames().count(), 0);
    // Dirty three pages at three log ends; their frames lie in different words.
    for (pid, lsn) in [(150, 700), (70, 800), (3, 900)] {
        wal.next.store(lsn, SeqCst);
        let mut g = pool.fix_exclusive(PageId(pid)).unwrap();
        g.mark_dirty();
        g.set_page_lsn(Lsn(lsn + 1));
    }
    let frames: Vec<u32> = pool.dirty_frames().collect();
    assert_eq!(frames.len(), 3);
    assert!(frames.iter().any(|&f| f >= 128), "frames {frames:?}");
    wal.next.store(1_000, SeqCst);
    assert_eq!(pool.oldest_rec_lsn_now().unwrap(), Lsn(700));
    pool.flush_page(PageId(150)).unwrap();
    assert_eq!(pool.dirty_count(), 2);
    assert_eq!(pool.oldest_rec_lsn_now().unwrap(), Lsn(800));
    pool.flush_all().unwrap();
    assert_eq!(pool.dirty_count(), 0);
    assert_eq!(pool.oldest_rec_lsn_now().unwrap(), Lsn(1_000));
}

/// A pool of 64 frames whose cleaner writes pages 10,000 bytes of log after they became
/// dirty, with a log stand-in at LSN 1,000.
fn lagged_pool(dir: &tempfile::TempDir) -> (Arc<BufferPool>, Arc<RecordingWal>) {
    let wal = Arc::new(RecordingWal::default());
    wal.next.store(1_000, SeqCst);
    let o = Options {
        cleaner_lag_bytes: 10_000,
        ..opts(64)
    };
    (
        BufferPool::open(data_file(dir), &o, wal.clone()).unwrap(),
        wal,
    )
}

/// Wakes the cleaner ten times, 5 ms apart.
fn settle(pool: &BufferPool) {
    for _ in 0..10 {
        pool.wake_cleaner();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Wakes the cleaner until at most `dirty` frames are dirty; fails with `what` after 10 s.
fn until_dirty_at_most(pool: &BufferPool, dirty: usize, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while pool.dirty_count() > dirty {
        assert!(std::time::Instant::now() < deadline, "{what}");
        pool.wake_cleaner();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// With a lag, the cleaner leaves pages dirtied recently (in log bytes) alone and writes
/// them once the log has moved on by the lag; with more than half the pool dirty it writes
/// dirty pages whatever their lag, until at most half the pool is dirty. (A pass writes
/// every dirty page it sees, but one that runs while the pages are being dirtied sees only
/// some of them, and skips those in use; what it leaves may then be under half the pool and
/// not yet due, so the check is "at most half", not "none".)
#[test]
fn cleaner_writes_pages_once_due_or_when_half_the_pool_is_dirty() {
    let dir = tempfile::tempdir().unwrap();
    let (pool, wal) = lagged_pool(&dir);
    fill(&pool, 20); // 20 of 64 frames, recovery LSN 1,000
    settle(&pool);
    assert_eq!(pool.dirty_count(), 20, "nothing is due at a lag of 0 bytes");
    wal.next.store(10_999, SeqCst);
    settle(&pool);
    assert_eq!(pool.dirty_count(), 20, "nor at 9,999 bytes");
    wal.next.store(11_000, SeqCst);
    until_dirty_at_most(
        &pool,
        0,
        "pages due at a lag of 10,000 bytes were not written",
    );
    // 40 of 64 frames dirty at the log's end: none is due, but the pool is over half dirty.
    for p in 100..140 {
        let mut g = pool.fix_new(PageId(p), PageType::Raw).unwrap();
        stamp(&mut g.page_mut(), p, 0);
    }
    until_dirty_at_most(&pool, 32, "a pool over half dirty was not cleaned");
    pool.close().unwrap();
}

/// A page written since its full-page image, and dirtied again before a checkpoint began
/// after that image, is not written by the lag policy (its recovery LSN would come back to
/// the image's LSN: the write is futile); once a checkpoint begins past the image, it is.
#[test]
fn cleaner_skips_futile_rewrites_until_a_checkpoint_begins() {
    let dir = tempfile::tempdir().unwrap();
    let (pool, wal) = lagged_pool(&dir);
    pool.set_image_horizon(Lsn(900)); // a checkpoint began at 900
    {
        // First change after the checkpoint: dirty at 1,000, image logged at 1,000.
        let mut g = pool.fix_new(PageId(7), PageType::Raw).unwrap();
        stamp(&mut g.page_mut(), 7, 0);
        g.set_image_lsn(Lsn(1_000));
        g.set_page_lsn(Lsn(1_000));
    }
    wal.next.store(11_000, SeqCst);
    until_dirty_at_most(&pool, 0, "a due page with a fresh image was not written");
    let writes = pool.stats().dirty_writes;
    {
        // Dirtied again: rule 3 gives it the image's LSN as its recovery LSN.
        let mut g = pool.fix_exclusive(PageId(7)).unwrap();
        g.mark_dirty_since(Lsn(1_000));
        stamp(&mut g.page_mut(), 7, 1);
        g.set_page_lsn(Lsn(11_000));
    }
    wal.next.store(50_000, SeqCst);
    settle(&pool);
    assert_eq!(pool.dirty_count(), 1, "a futile write was made");
    assert_eq!(pool.stats().dirty_writes, writes);
    pool.set_image_horizon(Lsn(20_000)); // a checkpoint began after the image
    until_dirty_at_most(
        &pool,
        0,
        "a page whose next change logs a new image was not written",
    );
    assert_eq!(pool.stats().dirty_writes, writes + 1);
    pool.close().unwrap();
}

/// Optimistic reads on a hot page write nothing: the latch version and the frame's line stay
/// untouched, and readers see a writer's change only after it releases.
#[test]
fn optimistic_reads_write_nothing_and_upgrade() {
    let dir = tempfile::tempdir().unwrap();
    let pool = BufferPool::open(data_file(&dir), &opts(16), Arc::new(NoWal)).unwrap();
    fill(&pool, 2);
    let before = pool
        .frames
        .iter()
        .map(|f| f.latch.version())
        .collect::<Vec<_>>();
    for _ in 0..100 {
        assert_eq!(
            pool.read_optimistic(PageId(1), |b| b.u64_at(COUNTER))
                .unwrap(),
            0
        );
    }
    let after = pool
        .frames
        .iter()
        .map(|f| f.latch.version())
        .collect::<Vec<_>>();
    assert_eq!(before, after);
    let o = pool.fix_optimistic(PageId(1)).unwrap();
    let mut x = o
        .upgrade()
        .unwrap_or_else(|_| panic!("unchanged page upgrades"));
    stamp(&mut x.page_mut(), 1, 9);
    x.mark_dirty();
    drop(x);
    assert_eq!(
        pool.read_optimistic(PageId(1), |b| b.u64_at(COUNTER))
            .unwrap(),
        9
    );
    let o = pool.fix_optimistic(PageId(1)).unwrap();
    drop(pool.fix_exclusive(PageId(1)).unwrap());
    assert!(o.validate().is_err());
}

/// A file whose writes can be held at a gate, to stage a write "in flight".
#[derive(Debug, Default)]
struct GateState {
    hold: bool,
    held: bool,
}

#[derive(Debug)]
struct GateFile {
    inner: Arc<dyn StorageFile>,
    gate: std::sync::Mutex<GateState>,
    cv: std::sync::Condvar,
    writes_done: AtomicUsize,
}

impl StorageFile for GateFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.inner.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        let mut g = self.gate.lock().unwrap();
        if g.hold && !g.held {
            g.held = true; // hold this one write until released
            self.cv.notify_all();
            while g.hold {
                g = self.cv.wait(g).unwrap();
            }
        }
        drop(g);
        let r = self.inner.write_all_at(buf, offset);
        self.writes_done.fetch_add(1, SeqCst);
        r
    }
    fn sync_data(&self) -> Result<()> {
        self.inner.sync_data()
    }
    fn len(&self) -> Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, len_bytes: u64) -> Result<()> {
        self.inner.set_len(len_bytes)
    }
    fn name(&self) -> &str {
        self.inner.name()
    }
}

/// Buffer rule 8 (regression test from review): while one flusher's write of a page is in
/// flight, a second `flush_all` must not return Ok before some write of that page completed.
#[test]
fn flush_all_never_returns_before_an_in_flight_write() {
    let dir = tempfile::tempdir().unwrap();
    let file = Arc::new(GateFile {
        inner: data_file(&dir),
        gate: Default::default(),
        cv: Default::default(),
        writes_done: AtomicUsize::new(0),
    });
    let o = Options {
        cleaner_enabled: false,
        ..opts(16)
    };
    let pool = BufferPool::open(file.clone(), &o, Arc::new(NoWal)).unwrap();
    stamp(
        &mut pool.fix_new(PageId(3), PageType::Raw).unwrap().page_mut(),
        3,
        7,
    );
    file.gate.lock().unwrap().hold = true;
    let first = {
        let pool = pool.clone();
        std::thread::spawn(move || pool.flush_all())
    };
    {
        let mut g = file.gate.lock().unwrap();
        while !g.held {
            g = file.cv.wait(g).unwrap();
        }
    }
    // The first flusher is inside the write of page 3, holding its S latch.
    pool.flush_all().unwrap();
    assert!(
        file.writes_done.load(SeqCst) >= 1,
        "flush_all returned Ok while page 3 was not yet written"
    );
    file.gate.lock().unwrap().hold = false;
    file.cv.notify_all();
    first.join().unwrap().unwrap();
}

/// Statistics: a fix that has to wait for another thread's latch is counted, with its time,
/// against the page, and the page tops the hottest-pages list.
#[test]
fn latch_waits_are_recorded_per_page() {
    let dir = tempfile::tempdir().unwrap();
    let pool = BufferPool::open(data_file(&dir), &opts(16), Arc::new(NoWal)).unwrap();
    fill(&pool, 8);
    let before = pool.stats();
    assert_eq!(before.latch_waits, 0);
    let x = pool.fix_exclusive(PageId(5)).unwrap();
    let waiter = {
        let pool = pool.clone();
        std::thread::spawn(move || drop(pool.fix_shared(PageId(5)).unwrap()))
    };
    std::thread::sleep(std::time::Duration::from_millis(30));
    drop(x);
    waiter.join().unwrap();
    let s = pool.stats();
    assert_eq!(s.latch_waits, 1, "{s:?}");
    assert!(
        s.latch_wait_us >= 10_000,
        "waited ~30 ms, recorded {} us",
        s.latch_wait_us
    );
    assert_eq!(s.hottest_pages.first().map(|p| p.page_id), Some(PageId(5)));
    assert!(s.hits >= before.hits + 2);
}

/// The principle-6 audit (`sync::held`): miss I/O with no other latch held is not counted;
/// a miss while the thread holds another page's S latch counts its read, and the write-back
/// of its victim when that is dirty (debug builds; release builds count nothing).
#[test]
fn a_miss_under_another_latch_is_counted_by_the_audit() {
    use crate::sync::held::miss_io_under_latch;
    let per_io = usize::from(cfg!(debug_assertions));
    let dir = tempfile::tempdir().unwrap();
    let pool = BufferPool::open(data_file(&dir), &opts(16), Arc::new(NoWal)).unwrap();
    fill(&pool, 64); // every frame holds a dirty page of 48..64
    let before = miss_io_under_latch();
    drop(pool.fix_shared(PageId(0)).unwrap()); // a write-back and a read, nothing else held
    assert_eq!(miss_io_under_latch(), before);
    let held = pool.fix_shared(PageId(63)).unwrap(); // resident: no miss
    drop(pool.fix_shared(PageId(1)).unwrap()); // a dirty victim's write-back and a read
    assert_eq!(miss_io_under_latch(), before + 2 * per_io);
    drop(held);
    pool.flush_all().unwrap();
    let held = pool.fix_shared(PageId(63)).unwrap();
    drop(pool.fix_shared(PageId(2)).unwrap()); // a clean victim: the read only
    drop(held);
    assert_eq!(miss_io_under_latch(), before + 3 * per_io);
}
