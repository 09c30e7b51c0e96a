//! [`BufferPool`]: fix paths, the miss path, CLOCK replacement and write-back. This file
//! holds the pool, opening, the fix paths and the accounting; `pool/miss.rs` the misses,
//! the victim search, write-back, flushing and closing.

use super::cleaner::Cleaner;
use super::dirty_map::DirtyMap;
use super::frame::Frame;
use super::guard::{ExclusiveGuard, OptimisticPage, SharedGuard};
use super::mem;
use super::page_table::PageTable;
use super::wal::WalHook;
use crate::error::{Error, Result};
use crate::io::{AlignedBuf, StorageFile};
use crate::options::Options;
use crate::page::{header, AtomicBytes, AtomicBytesMut, PageRead, PageType, PageWrite};
use crate::stats::{BufferStats, LatchWaitTable, StripedCounter};
use crate::sync;
use crate::types::{Lsn, PageId};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

mod miss;

/// Full CLOCK rounds a victim search makes before giving up with `PoolExhausted`.
const VICTIM_ROUNDS: usize = 4;
/// Dirty frames [`BufferPool::clean_frames`] writes back at most, for a split turned away
/// by [`BufferPool::fix_uninit_clean`].
pub(crate) const CLEAN_BATCH_FRAMES: usize = 8;
/// Frames a victim search for a clean frame visits at most ([`BufferPool::fix_uninit_clean`]):
/// it runs under the caller's latches, so it gives up early instead of sweeping the whole
/// pool several times as a miss may.
pub(crate) const CLEAN_SEARCH_FRAMES: usize = 1024;

pub(crate) struct Counters {
    pub(crate) hits: StripedCounter,
    pub(crate) misses: StripedCounter,
    pub(crate) evictions: StripedCounter,
    pub(crate) dirty_writes: StripedCounter,
    pub(crate) optimistic_restarts: StripedCounter,
    pub(crate) latch_waits: LatchWaitTable,
}

/// The buffer pool: a fixed array of frames caching the pages of one data file
/// (DESIGN.md §3.3; rules in the module doc of `buffer`).
pub struct BufferPool {
    pub(crate) frames: Box<[Frame]>,
    /// Which frames may hold a dirty page (`dirty_map`'s invariants).
    pub(crate) dirty_map: DirtyMap,
    /// Faults in `mem` in the background (`Options::prefault_pool`). Declared before `mem`
    /// so that it is dropped — its thread stopped and joined — before `mem` is freed.
    prefault: Option<Prefaulter>,
    /// Page images, `words_per_page` atomic words per frame, frame `i` at `i * words_per_page`.
    mem: Box<[AtomicU64]>,
    words_per_page: usize,
    page_size: usize,
    table: PageTable,
    hand: AtomicUsize,
    file: Arc<dyn StorageFile>,
    pub(crate) wal: Arc<dyn WalHook>,
    /// First write-back failure; once set, no page is written again (buffer rule 6).
    failed: OnceLock<String>,
    pub(crate) counters: Counters,
    /// Lower bound of the recovery LSNs of all dirty pages, published by the cleaner.
    pub(crate) oldest_rec_lsn: AtomicU64,
    /// Begin LSN of the newest checkpoint ([`BufferPool::set_image_horizon`]): a page whose
    /// known image is older is imaged anew when next dirtied after a write-back.
    pub(crate) image_horizon: AtomicU64,
    cleaner: OnceLock<Cleaner>,
}

/// The thread that faults in the pool's page images after open (`Options::prefault_pool`);
/// dropping it stops the thread (within one chunk) and joins it.
struct Prefaulter {
    stop: Arc<std::sync::atomic::AtomicBool>,
    /// The thread, until dropped or joined by [`BufferPool::wait_prefaulted`].
    thread: parking_lot::Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Prefaulter {
    /// Starts faulting in `images`. The caller keeps `images` allocated until the
    /// `Prefaulter` is dropped (`BufferPool` declares it first, so it is dropped first).
    fn start(images: &[AtomicU64]) -> Result<Prefaulter> {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (addr, len) = (images.as_ptr() as usize, std::mem::size_of_val(images));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("shoal-prefault".into())
            // SAFETY: the images outlive this thread: the `Prefaulter` joins it on drop,
            // before its owner frees them (see `start`).
            .spawn(move || unsafe { mem::prefault(addr, len, &flag) })
            .map_err(|e| Error::from_io("spawn buffer pool prefault thread", "pool", e))?;
        Ok(Prefaulter {
            stop,
            thread: parking_lot::Mutex::new(Some(thread)),
        })
    }

    /// Waits for the thread to finish faulting in the images (callers after the first
    /// wait for the first one's join, holding the mutex).
    fn join(&self) {
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
    }
}

impl Drop for Prefaulter {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        self.join();
    }
}

impl BufferPool {
    /// Opens a pool of `options.frame_count()` frames over `file` and starts the page cleaner
    /// if `options.cleaner_enabled`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the options are out of range (see [`Options::validate`]);
    /// [`Error::Io`] if the cleaner thread cannot be spawned.
    pub fn open(
        file: Arc<dyn StorageFile>,
        options: &Options,
        wal: Arc<dyn WalHook>,
    ) -> Result<Arc<BufferPool>> {
        options.validate()?;
        let frames = options.frame_count();
        let page_size = options.page_size_bytes;
        let words_per_page = page_size / 8;
        let images = mem::zeroed_words(frames * words_per_page);
        // Declared after `images`, so dropped first should anything below fail.
        let prefault = if options.prefault_pool {
            Some(Prefaulter::start(&images)?)
        } else {
            None
        };
        let pool = Arc::new(BufferPool {
            frames: mem::huge_slice(frames, |_| Frame::new()),
            dirty_map: DirtyMap::new(frames),
            prefault,
            mem: images,
            words_per_page,
            page_size,
            table: PageTable::new(frames),
            hand: AtomicUsize::new(0),
            file,
            wal,
            failed: OnceLock::new(),
            counters: Counters {
                hits: StripedCounter::default(),
                misses: StripedCounter::default(),
                evictions: StripedCounter::default(),
                dirty_writes: StripedCounter::default(),
                optimistic_restarts: StripedCounter::default(),
                latch_waits: LatchWaitTable::default(),
            },
            oldest_rec_lsn: AtomicU64::new(0),
            image_horizon: AtomicU64::new(0),
            cleaner: OnceLock::new(),
        });
        if options.cleaner_enabled {
            let c = Cleaner::start(
                Arc::downgrade(&pool),
                Duration::from_millis(options.cleaner_interval_ms),
                options.cleaner_batch_pages,
                options.cleaner_lag_bytes,
            )
            .map_err(|e| Error::from_io("spawn page cleaner thread", pool.file.name(), e))?;
            let _ = pool.cleaner.set(c);
        }
        Ok(pool)
    }

    /// Page size in bytes.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Blocks until the background prefault of the pool's memory
    /// (`Options::prefault_pool`) has finished; returns at once if it has or was never
    /// started. For a benchmark, so that the one-time cost of faulting in the pool (about
    /// a second per GiB on a small virtual machine) falls in its setup rather than in a
    /// measured interval, where it takes a processor from the workers.
    pub fn wait_prefaulted(&self) {
        if let Some(p) = &self.prefault {
            p.join();
        }
    }

    /// Number of frames.
    pub fn frame_count(&self) -> usize {
        self.frames.len()
    }

    /// The data file this pool caches.
    pub fn file(&self) -> &Arc<dyn StorageFile> {
        &self.file
    }

    /// Copies frame `f`'s page image into `buf` (`page_size` bytes) with one `memcpy`, for a
    /// caller that holds the frame's latch in S or X mode (a write-back). The image is read
    /// without atomic loads: the latch keeps writers out (they need X), and the accesses it
    /// can race with are optimistic readers' loads, which write nothing — a read that races
    /// only with reads is no data race. A word-by-word relaxed copy of an 8 KiB image was a
    /// third of the page cleaner's samples in the insert benchmark.
    #[inline]
    fn copy_latched_image(&self, f: u32, buf: &mut [u8]) {
        let words = self.words(f);
        assert_eq!(
            buf.len(),
            words.len() * 8,
            "a page image is page_size bytes"
        );
        // SAFETY: `words` is `buf.len()` bytes of live memory (the pool's images outlive
        // `self`'s borrow) and does not overlap `buf` (a caller's private buffer). No thread
        // writes these words while the caller holds the frame's S or X latch (see above), so
        // the plain reads race with nothing but reads.
        unsafe {
            std::ptr::copy_nonoverlapping(words.as_ptr().cast::<u8>(), buf.as_mut_ptr(), buf.len());
        }
    }

    #[inline]
    pub(crate) fn words(&self, f: u32) -> &[AtomicU64] {
        let s = f as usize * self.words_per_page;
        &self.mem[s..s + self.words_per_page]
    }

    /// Prefetches the first two cache lines of frame `f`'s page (the common, slotted and
    /// B-tree headers an optimistic reader reads first); nothing for a frame number out of
    /// range.
    #[inline(always)]
    fn prefetch_head(&self, f: u32) {
        if (f as usize) < self.frames.len() {
            let page = AtomicBytes::new(self.words(f));
            page.prefetch(0);
            page.prefetch(64);
        }
    }

    #[inline]
    fn record_wait(&self, pid: PageId, waited: Option<Duration>) {
        if let Some(w) = waited {
            self.counters.latch_waits.record(&pid, w);
        }
    }

    fn check_pid(pid: PageId) -> Result<()> {
        if pid.is_valid() {
            Ok(())
        } else {
            Err(Error::invalid("page_id", "PageId::INVALID cannot be fixed"))
        }
    }

    // ------------------------------------------------------------------ fix paths

    /// Fixes `pid` in shared mode, reading it from storage on a miss.
    ///
    /// # Errors
    /// On a miss: [`Error::Corruption`] if the page fails its checksum or header checks,
    /// [`Error::PageNotAllocated`] if it lies beyond the end of the file, [`Error::Io`] on a
    /// read error, [`Error::PoolExhausted`] if no frame can be freed, or the write-back error
    /// of a dirty victim ([`Error::PoolFailed`] once write-back has failed before).
    pub fn fix_shared(&self, pid: PageId) -> Result<SharedGuard<'_>> {
        Self::check_pid(pid)?;
        loop {
            if let Some(f) = self.table.lookup(&self.frames, pid) {
                let fr = &self.frames[f as usize];
                let (latch, waited) = fr.latch.shared_timed();
                if fr.page_id.load(Relaxed) == pid.0 {
                    self.record_wait(pid, waited);
                    fr.touch();
                    self.counters.hits.incr();
                    return Ok(SharedGuard::new(self, f, latch));
                }
                continue; // evicted between lookup and latch: look again
            }
            if let Some(x) = self.load(pid)? {
                return Ok(x.downgrade());
            }
        }
    }

    /// Fixes `pid` in exclusive mode, reading it from storage on a miss.
    ///
    /// # Errors
    /// As [`BufferPool::fix_shared`].
    pub fn fix_exclusive(&self, pid: PageId) -> Result<ExclusiveGuard<'_>> {
        Self::check_pid(pid)?;
        loop {
            if let Some(f) = self.table.lookup(&self.frames, pid) {
                let fr = &self.frames[f as usize];
                let (latch, waited) = fr.latch.exclusive_timed();
                if fr.page_id.load(Relaxed) == pid.0 {
                    self.record_wait(pid, waited);
                    fr.touch();
                    self.counters.hits.incr();
                    return Ok(ExclusiveGuard::new(self, f, latch));
                }
                continue;
            }
            if let Some(x) = self.load(pid)? {
                return Ok(x);
            }
        }
    }

    /// Fixes `pid` as a brand-new page without reading it: the frame gets a fresh header of
    /// type `ty` (zeroed body, page LSN 0) and is marked dirty. For pages just allocated by
    /// the space manager; a resident copy of an earlier life of the page is overwritten.
    ///
    /// # Errors
    /// [`Error::PoolExhausted`], or the write-back error of a dirty victim.
    pub fn fix_new(&self, pid: PageId, ty: PageType) -> Result<ExclusiveGuard<'_>> {
        let mut g = self.fix_uninit(pid)?;
        header::init(&mut g.page_mut(), pid, ty);
        g.mark_dirty();
        Ok(g)
    }

    /// Fixes `pid` exclusively without reading it from storage, for a caller that will
    /// overwrite the whole page (restart's redo installing a full-page image, so a torn copy
    /// on disk is never read). The frame holds whatever it held (a resident copy of the page,
    /// or another page's old bytes) and its dirty state is unchanged; the caller must write
    /// every byte and then mark it dirty.
    ///
    /// # Errors
    /// [`Error::PoolExhausted`], or the write-back error of a dirty victim.
    pub fn fix_uninit(&self, pid: PageId) -> Result<ExclusiveGuard<'_>> {
        match self.fix_uninit_with(pid, true)? {
            Some(g) => Ok(g),
            None => unreachable!("a victim search that may write back finds a frame or fails"),
        }
    }

    /// [`BufferPool::fix_uninit`] that takes only a clean frame for a page not in the pool,
    /// so that it does no I/O and waits for none: for a caller that holds other latches (a
    /// split's new page, DESIGN.md principle 6). `Ok(None)` if no clean frame was found
    /// within [`CLEAN_SEARCH_FRAMES`] of the CLOCK hand, or if the page is resident and
    /// latched by another thread; the caller then drops
    /// its latches, calls [`BufferPool::clean_frames`] and starts over. A frame fixed so
    /// must be used, or handed to [`BufferPool::discard`].
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an invalid page id; the pool's sticky write failure.
    pub(crate) fn fix_uninit_clean(&self, pid: PageId) -> Result<Option<ExclusiveGuard<'_>>> {
        self.fix_uninit_with(pid, false)
    }

    /// [`BufferPool::fix_uninit`], with a victim that may be written back first
    /// (`write_back`), or only a clean one (`None` if there is none).
    fn fix_uninit_with(&self, pid: PageId, write_back: bool) -> Result<Option<ExclusiveGuard<'_>>> {
        Self::check_pid(pid)?;
        loop {
            if let Some(f) = self.table.lookup(&self.frames, pid) {
                let fr = &self.frames[f as usize];
                // Without `write_back` the caller holds latches: no wait for a holder that
                // may be doing I/O on the frame (a write-back of an earlier life of `pid`).
                let latch = match write_back {
                    true => fr.latch.exclusive(),
                    false => match fr.latch.try_exclusive() {
                        Some(latch) => latch,
                        None => return Ok(None),
                    },
                };
                if fr.page_id.load(Relaxed) == pid.0 {
                    self.counters.hits.incr();
                    // The caller rewrites the page whole: a summary is of what it held.
                    fr.set_summary([0, 0]);
                    return Ok(Some(ExclusiveGuard::new(self, f, latch)));
                }
                continue;
            }
            let victim = match write_back {
                true => Some(self.find_victim()?),
                false => self.find_clean_victim()?,
            };
            let Some((f, latch)) = victim else {
                return Ok(None);
            };
            // Not a miss: nothing is read (a new page, or one redo rebuilds whole).
            if self.table.insert(&self.frames, pid, f).is_ok() {
                return Ok(Some(ExclusiveGuard::new(self, f, latch)));
            }
            // Someone else brought `pid` in; `latch` frees the frame.
        }
    }

    /// Writes back up to [`CLEAN_BATCH_FRAMES`] dirty frames from the CLOCK hand on, each
    /// under its S latch (buffer rule 4), with no other latch held: for a caller that
    /// [`BufferPool::fix_uninit_clean`] turned away, so that clean victims are there when it
    /// comes back (its own descent's misses may take one or two first). The pages stay
    /// resident. Frames latched by others are passed over.
    ///
    /// # Errors
    /// The write-back error of a frame (the pool's sticky failure, buffer rule 6).
    pub(crate) fn clean_frames(&self) -> Result<()> {
        let n = self.frames.len();
        let start = self.hand.load(Relaxed);
        let mut cleaned = 0;
        for k in 0..n {
            let f = (start + k) % n;
            let fr = &self.frames[f];
            if !fr.dirty.load(Relaxed) {
                continue;
            }
            let Some(_latch) = fr.latch.try_shared() else {
                continue;
            };
            if PageId(fr.page_id.load(Relaxed)).is_valid() {
                crate::sync::held::note_miss_io();
                self.write_back(f as u32)?;
                cleaned += 1;
                if cleaned == CLEAN_BATCH_FRAMES {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Gives back `g`, fixed by [`BufferPool::fix_uninit_clean`] and not written to: a
    /// clean frame (a victim's, holding another page's old bytes) leaves the table again,
    /// so bytes the page never held cannot reach a later reader; a dirty one was the page's
    /// own resident copy, untouched, and stays.
    pub(crate) fn discard(&self, g: ExclusiveGuard<'_>) {
        let (f, pid) = (g.frame_index(), g.page_id());
        if !self.frames[f as usize].dirty.load(Relaxed) {
            self.table.remove(&self.frames, pid, f);
        }
        drop(g);
    }

    /// Starts an optimistic read of `pid` (loading it first on a miss). The returned handle
    /// holds no latch and wrote nothing to shared memory on a hit; read through
    /// [`OptimisticPage::bytes`] and call [`OptimisticPage::validate`] before trusting what
    /// was read (sync rules O1–O3).
    ///
    /// # Errors
    /// As [`BufferPool::fix_shared`] (only on a miss).
    pub fn fix_optimistic(&self, pid: PageId) -> Result<OptimisticPage<'_>> {
        self.fix_optimistic_with(pid, |_, _| {})
    }

    /// [`BufferPool::fix_optimistic`] that calls `prefetch` with the frame's page summary
    /// (the 16 advisory bytes its X-latch holders keep, [`ExclusiveGuard::set_summary`];
    /// zeros if none) and the page's bytes as soon as the frame is found through the page
    /// table's frame hint (the common case; not after a lookup in the table). The summary
    /// lies on the frame descriptor's line, which the latch's version is read from anyway,
    /// so a caller that knows what it will look for (a B-tree search key) starts the misses
    /// of the lines it will read in parallel with the page's first lines, not after them.
    /// `prefetch` must only prefetch: the summary may be stale or torn, and the page may
    /// change under it.
    ///
    /// # Errors
    /// As [`BufferPool::fix_optimistic`].
    #[inline]
    pub(crate) fn fix_optimistic_with(
        &self,
        pid: PageId,
        prefetch: impl FnOnce([u64; 2], &AtomicBytes<'_>),
    ) -> Result<OptimisticPage<'_>> {
        Self::check_pid(pid)?;
        // The frame hint first (page_table's module doc): a guess, taken only if the frame's
        // latch is free and it holds `pid`. The page id is checked again by `validate`'s
        // version test, since it changes only under the frame's X latch; so a page found
        // through the hint is as safe as one found through its bucket.
        let hinted = self.table.hint(pid);
        if let Some(fr) = self.frames.get(hinted as usize) {
            self.prefetch_head(hinted);
            if let Ok(g) = fr.latch.try_optimistic() {
                if fr.page_id.load(Relaxed) == pid.0 {
                    prefetch(fr.summary(), &AtomicBytes::new(self.words(hinted)));
                    fr.touch();
                    return Ok(OptimisticPage::new(self, hinted, pid, g));
                }
            }
        }
        loop {
            if let Some(f) = self
                .table
                .lookup_with(&self.frames, pid, |f| self.prefetch_head(f))
            {
                let fr = &self.frames[f as usize];
                let g = fr.latch.optimistic();
                if fr.page_id.load(Relaxed) == pid.0 {
                    fr.touch();
                    self.table.set_hint(pid, f);
                    return Ok(OptimisticPage::new(self, f, pid, g));
                }
                continue;
            }
            drop(self.fix_shared(pid)?);
        }
    }

    /// Starts bringing the page table's frame hint for page `pid` into the cache: the
    /// first step of a batched lookup ([`crate::btree::BTree::get_many`]), issued for many
    /// pages before any of them is read so that their misses overlap. Advisory only: no
    /// latch, no I/O, no error.
    #[inline]
    pub fn prefetch_page_hint(&self, pid: PageId) {
        self.table.prefetch_hint(pid);
    }

    /// The step after [`BufferPool::prefetch_page_hint`] of a batched lookup: starts
    /// bringing page `pid`'s frame descriptor and the first two cache lines of its image
    /// into the cache, if the page table's frame hint for `pid` names a frame. Advisory, as
    /// that one: a stale hint prefetches another page's lines, which costs bandwidth, never
    /// correctness.
    #[inline]
    pub fn prefetch_page(&self, pid: PageId) {
        let f = self.table.hint(pid);
        if let Some(fr) = self.frames.get(f as usize) {
            sync::prefetch(fr);
            self.prefetch_head(f);
        }
    }

    /// Runs `read` on an optimistic view of page `pid` until a run validates, and returns
    /// that run's result. `read` may run more than once and may see torn data on a run that
    /// then fails validation, so it must not panic on inconsistent bytes (bounds-check every
    /// offset read from the page) and must have no side effects.
    ///
    /// # Errors
    /// As [`BufferPool::fix_shared`] (only on a miss).
    pub fn read_optimistic<R>(
        &self,
        pid: PageId,
        mut read: impl FnMut(&AtomicBytes<'_>) -> R,
    ) -> Result<R> {
        loop {
            let page = self.fix_optimistic(pid)?;
            let r = read(&page.bytes());
            if page.validate().is_ok() {
                self.counters.hits.incr();
                return Ok(r);
            }
            self.counters.optimistic_restarts.incr();
        }
    }

    /// [`BufferPool::read_optimistic`] of a page that is in the pool and not X-latched
    /// (being read in or changed) now; `Ok(None)`, at once, otherwise: no I/O and no wait.
    /// For a reader that holds a latch and so may not wait for I/O (DESIGN.md principle 6):
    /// on `None` it drops its latch, brings the page in, and starts over.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an invalid page id.
    pub(crate) fn try_read_resident<R>(
        &self,
        pid: PageId,
        mut read: impl FnMut(&AtomicBytes<'_>) -> R,
    ) -> Result<Option<R>> {
        Self::check_pid(pid)?;
        loop {
            let Some(f) = self.table.lookup(&self.frames, pid) else {
                return Ok(None);
            };
            let fr = &self.frames[f as usize];
            let Ok(g) = fr.latch.try_optimistic() else {
                return Ok(None);
            };
            if fr.page_id.load(Relaxed) != pid.0 {
                continue; // the frame took another page after the lookup: look again
            }
            fr.touch();
            let page = OptimisticPage::new(self, f, pid, g);
            let r = read(&page.bytes());
            if page.validate().is_ok() {
                self.counters.hits.incr();
                return Ok(Some(r));
            }
            self.counters.optimistic_restarts.incr();
        }
    }

    /// Whether page `pid` is in the pool now (tests).
    #[cfg(test)]
    pub(crate) fn is_resident(&self, pid: PageId) -> bool {
        self.table.lookup(&self.frames, pid).is_some()
    }

    /// A lower bound of the recovery LSN of every page that is dirty now, as last published
    /// by the page cleaner (Shore-MT §7.7: a checkpoint reads one number instead of scanning
    /// the pool). [`Lsn::ZERO`] before the first cleaner pass.
    pub fn oldest_rec_lsn(&self) -> Lsn {
        Lsn(self.oldest_rec_lsn.load(Acquire))
    }

    /// Tells the pool that a checkpoint began at `begin`: from now on, a clean page whose
    /// known image ([`ExclusiveGuard::image_lsn`]) is older than `begin` gets a new image
    /// when it is next dirtied (txn rule 3), so writing it back lets its recovery LSN
    /// advance. The cleaner uses this to skip writes that cannot (`cleaner`'s module doc).
    /// Only ever raises the horizon.
    pub(crate) fn set_image_horizon(&self, begin: Lsn) {
        self.image_horizon.fetch_max(begin.0, Relaxed);
    }

    /// The newest checkpoint's begin LSN as told by [`BufferPool::set_image_horizon`]
    /// ([`Lsn::ZERO`] before the first).
    pub(crate) fn image_horizon(&self) -> Lsn {
        Lsn(self.image_horizon.load(Relaxed))
    }

    /// Computes now, by a scan of the dirty frames, a lower bound of the recovery LSN of every page
    /// that is dirty, and syncs the data file so that every page seen clean is durable (the
    /// same rule as the cleaner's, for a checkpoint that cannot wait for a cleaner pass or
    /// runs without one). Also publishes the result as [`BufferPool::oldest_rec_lsn`].
    ///
    /// # Errors
    /// The sync error, or [`Error::PoolFailed`] after an earlier failure.
    pub fn oldest_rec_lsn_now(&self) -> Result<Lsn> {
        // Read the end of the log before the scan (WalHook ordering contract): a page dirtied
        // after this read has a recovery LSN at or above it.
        let log_end = self.wal.current_lsn().0;
        let oldest = self.oldest_dirty_rec_lsn(log_end);
        self.sync_file()?;
        self.oldest_rec_lsn.store(oldest, Release);
        Ok(Lsn(oldest))
    }

    /// Wakes the cleaner for an immediate pass (no-op without a cleaner).
    pub fn wake_cleaner(&self) {
        if let Some(c) = self.cleaner.get() {
            c.wake();
        }
    }

    /// Number of frames now holding a dirty page.
    pub fn dirty_count(&self) -> usize {
        self.dirty_frames().count()
    }

    /// The frames holding a dirty page now, in ascending order (those of the dirty map
    /// whose flag is set; a frame dirtied or cleaned during the walk may or may not be
    /// listed).
    pub(crate) fn dirty_frames(&self) -> impl Iterator<Item = u32> + '_ {
        self.dirty_map
            .frames()
            .filter(|&f| self.frames[f as usize].dirty.load(Acquire))
    }

    /// `min(bound, recovery LSN of every frame dirty now)`: the cleaner's and a
    /// checkpoint's bound on where redo must start (read `bound`, the end of the log,
    /// before calling: a page dirtied after that read has a recovery LSN at or above it).
    pub(crate) fn oldest_dirty_rec_lsn(&self, bound: u64) -> u64 {
        self.dirty_frames()
            .map(|f| self.frames[f as usize].rec_lsn.load(Relaxed))
            .fold(bound, u64::min)
    }

    /// A snapshot of the pool's counters.
    pub fn stats(&self) -> BufferStats {
        let c = &self.counters;
        let (latch_waits, latch_wait_us) = c.latch_waits.totals();
        BufferStats {
            hits: c.hits.get(),
            misses: c.misses.get(),
            evictions: c.evictions.get(),
            dirty_writes: c.dirty_writes.get(),
            optimistic_restarts: c.optimistic_restarts.get(),
            latch_waits,
            latch_wait_us,
            hottest_pages: c.latch_waits.top(10),
        }
    }
}

impl Drop for BufferPool {
    fn drop(&mut self) {
        if let Some(c) = self.cleaner.get() {
            c.stop();
        }
    }
}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferPool")
            .field("frames", &self.frames.len())
            .field("page_size", &self.page_size)
            .field("file", &self.file.name())
            .field("failed", &self.failed.get())
            .finish()
    }
}
