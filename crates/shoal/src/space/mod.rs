//! # Space manager
//!
//! Job: decide which pages of the data file are in use, hand out free pages and take them
//! back, and grow the file when it is full (DESIGN.md §3.4).
//!
//! ```text
//!  page 0        page 1       pages 2..            page G          page G+1 ..
//! [file header][map group 0][ data ... group 0 ][map group 1][ data ... group 1 ] ...
//!                  │ bitmap: 1 bit per page, 1 u64 word per 64-page extent
//! ```
//!
//! ## Invariants
//! 1. A page is handed out only if its bit was clear and is set in the same critical section
//!    (under the map page's X latch), so no page is ever handed out twice.
//! 2. Pages are reserved an extent at a time: every free page of one extent word is marked
//!    allocated at once and owned by one cache ([`ExtentCache`] or a shard of the
//!    [`SpaceManager::allocate`] caches); the cache hands them out without touching the map.
//!    Pages a cache still owns are returned (bits cleared) when it is released. After a crash
//!    a page in use is always marked allocated; owned but unused pages stay marked: a leak,
//!    never a double allocation. Once the transaction layer is up
//!    ([`SpaceManager::set_reservation_log`]), a reservation is a logged system transaction
//!    ([`wal`]): its record precedes in the log every logged change that uses one of its
//!    pages, and restart's redo marks the extent again. Before that (restart itself, and a
//!    space manager used without a log) the map page holding a reservation is written and
//!    synced *before* any of its pages is handed out.
//! 3. The file grows by whole extents (an eighth of its size at a time, 1 extent to 64 MiB)
//!    under the growth mutex, in a durable order: extend the file, write the map page of every
//!    group it starts, sync; then raise `page_count` in the header, write it,
//!    sync; only then can pages of the new extent be reserved. So a header on disk never names
//!    pages the file or the maps do not have, and never misses a page that is in use.
//! 4. Header and map pages are marked allocated in their own maps and cannot be freed.
//! 5. **Freeing is the caller's ordering problem**: [`SpaceManager::free`] clears the bit in
//!    memory at once, and the map page may reach the disk before whatever made the page
//!    unreachable does. Until freeing is logged (log issue), a caller must make the page
//!    unreachable durably before freeing it, or accept a possible double use after a crash.
//!    [`SpaceManager::free_after`] does the waiting for it: the page is queued with the LSN
//!    past the records that unlinked it and freed by the first
//!    [`SpaceManager::free_durable`] that is told the log is durable that far (a B-tree merge
//!    frees its merged-away page so, instead of waiting for a log sync in its thread). A
//!    page still queued at a crash (or when the engine is dropped without `close`, which
//!    drains the queue) stays marked allocated: a leak, never a double use. Every caller
//!    does so (a B-tree merge, a dropped table after its commit is durable, a table whose
//!    creation rolled back), so every record of a page's earlier life lies below the log's
//!    durable end when the page is allocated again: a new page's image appended in a log
//!    lane relies on it (`Transaction::log_new_page`).
//! 6. **Unlink epoch.** Whoever makes a page unreachable from the structure that held it (a
//!    B-tree merge, a root shrink) calls [`SpaceManager::note_unlinked`] while it still holds
//!    that page's X latch; [`SpaceManager::free`] bumps the epoch too. So a page id cached
//!    together with the epoch read while its page was reachable and X-latched names a
//!    reachable page whenever a later holder of that X latch reads the same epoch (the
//!    B-tree's last-leaf hint relies on this: the latch hand-over orders the bump before the
//!    later read).
//!
//! ## Latching
//! Map and header pages are ordinary buffer-pool pages, X-latched to change; at most one
//! map page latch is held at a time, and the growth mutex is taken before (never while
//! holding) a map latch. The common allocation path takes only the calling thread's own cache
//! shard mutex (uncontended when threads ≤ shards): no global mutex (Shore-MT §6.2.2).
//!
//! ## Not done here
//! No logging of allocation (the log issue adds it), no shrinking of the file, no per-tree
//! extent ownership on disk.

mod cache;
mod header;
mod map;
pub mod wal;

#[cfg(all(test, not(loom)))]
mod tests;

pub use cache::ExtentCache;
pub use header::{group_pages, probe_page_size, FileHeader, FILE_FORMAT_VERSION, MAGIC};
pub use wal::{ReservationLog, RM_SPACE};

use crate::buffer::BufferPool;
use crate::error::{Error, Result};
use crate::options::EXTENT_PAGES;
use crate::page::{PageType, PageWrite};
use crate::stats::stripe_index;
use crate::types::{Lsn, PageId};
use cache::Reservation;
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::{Arc, OnceLock, Weak};

/// Most bytes the data file grows by at once (64 MiB; invariant 3).
pub const GROW_MAX_BYTES: u64 = 64 << 20;

/// Number of shards of the [`SpaceManager::allocate`] extent caches.
const CACHE_SHARDS: usize = 16;

/// The space manager of one data file. See the module doc.
pub struct SpaceManager {
    pool: Arc<BufferPool>,
    group_pages: u64,
    /// Pages the file has been grown to (invariant 3).
    page_count: AtomicU64,
    grow: Mutex<()>,
    /// Lowest group that may hold a non-full extent.
    hint_group: AtomicU64,
    /// Bumped by every free, so a scan that found a group full can tell whether a page was
    /// freed there meanwhile before advancing the hint past it.
    free_epoch: AtomicU64,
    /// Invariant 6: bumped whenever a page is made unreachable or freed.
    unlink_epoch: AtomicU64,
    caches: Box<[CachePadded<Mutex<Option<Reservation>>>]>,
    /// Pages to free once the log is durable up to their LSN (invariant 5).
    pending_frees: Mutex<Vec<(Lsn, PageId)>>,
    /// How reservations are logged, once installed (invariant 2); weak, since the logger
    /// (the transaction manager) holds this space manager through its resource managers.
    reservation_log: OnceLock<Weak<dyn ReservationLog>>,
}

impl SpaceManager {
    fn new(pool: Arc<BufferPool>, page_count: u64) -> SpaceManager {
        let group_pages = group_pages(pool.page_size());
        SpaceManager {
            pool,
            group_pages,
            page_count: AtomicU64::new(page_count),
            grow: Mutex::new(()),
            hint_group: AtomicU64::new(0),
            free_epoch: AtomicU64::new(0),
            unlink_epoch: AtomicU64::new(0),
            pending_frees: Mutex::new(Vec::new()),
            caches: (0..CACHE_SHARDS)
                .map(|_| CachePadded::new(Mutex::new(None)))
                .collect(),
            reservation_log: OnceLock::new(),
        }
    }

    /// From now on, reservations are logged through `log` instead of written and synced at
    /// once (invariant 2). Installed once, by the engine after restart; later calls are
    /// ignored. While `log` is gone (the engine is closing), the synced protocol is used.
    pub fn set_reservation_log(&self, log: Weak<dyn ReservationLog>) {
        let _ = self.reservation_log.set(log);
    }

    /// Formats an empty data file: the file header (page 0) and the first space map (page 1),
    /// one extent long, written and synced.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the file is not empty; I/O errors from growing, writing
    /// or syncing it.
    pub fn create(pool: Arc<BufferPool>) -> Result<SpaceManager> {
        let file = pool.file().clone();
        if !file.is_empty()? {
            return Err(Error::invalid(
                "file",
                format!("{} is not empty; refusing to format it", file.name()),
            ));
        }
        let ps = pool.page_size();
        file.set_len(EXTENT_PAGES * ps as u64)?;
        // Invariant 3: the length is durable before a header that records it can be (a
        // crash that kept the header write but not the extension left a header naming pages
        // the file did not have; found by the transaction crash matrix).
        file.sync_data()?;
        {
            let mut h = pool.fix_new(PageId(0), PageType::FileHeader)?;
            FileHeader {
                page_size: ps,
                extent_pages: EXTENT_PAGES,
                page_count: EXTENT_PAGES,
                group_pages: group_pages(ps),
            }
            .write(&mut h.page_mut());
            let mut m = pool.fix_new(PageId(1), PageType::SpaceMap)?;
            map::init(&mut m.page_mut(), 0);
        }
        // The header is the commit point of creation: the map is durable before it.
        pool.flush_page(PageId(1))?;
        pool.sync()?;
        pool.flush_all()?;
        Ok(SpaceManager::new(pool, EXTENT_PAGES))
    }

    /// Opens the space manager of an existing data file.
    ///
    /// # Errors
    /// [`Error::BadFile`] if page 0 is not a Shoal header of this page size or the file is
    /// shorter than the header says; [`Error::Corruption`] if page 0 fails its checksum.
    pub fn open(pool: Arc<BufferPool>) -> Result<SpaceManager> {
        let h = {
            let g = pool.fix_shared(PageId(0))?;
            FileHeader::read(g.bytes(), pool.file().name())?
        };
        let len = pool.file().len()?;
        if len < h.page_count * h.page_size as u64 {
            return Err(Error::BadFile {
                path: pool.file().name().to_string(),
                reason: format!(
                    "file is {len} bytes but its header records {} pages of {} bytes",
                    h.page_count, h.page_size
                ),
            });
        }
        Ok(SpaceManager::new(pool, h.page_count))
    }

    /// The buffer pool this space manager allocates in.
    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }

    /// Number of pages the file has been grown to (a multiple of 64).
    pub fn page_count(&self) -> u64 {
        self.page_count.load(Acquire)
    }

    fn group_count(&self, page_count: u64) -> u64 {
        page_count.div_ceil(self.group_pages)
    }

    fn locate(&self, pid: PageId) -> (PageId, u64, u64) {
        let g = pid.0 / self.group_pages;
        let in_group = pid.0 % self.group_pages;
        (
            PageId(map::map_page_of_group(g, self.group_pages)),
            in_group / EXTENT_PAGES,
            in_group % EXTENT_PAGES,
        )
    }

    /// Allocates one page using this thread's shard of extent caches. The page's contents are
    /// undefined: initialise it with `BufferPool::fix_new`.
    ///
    /// # Errors
    /// I/O errors from reading map pages or growing the file ([`Error::NoSpace`] when full).
    pub fn allocate(&self) -> Result<PageId> {
        let mut slot = self.caches[stripe_index() % CACHE_SHARDS].lock();
        loop {
            if let Some(p) = slot.as_mut().and_then(Reservation::take) {
                return Ok(p);
            }
            *slot = Some(self.reserve()?);
        }
    }

    /// A private extent cache for one thread or one tree (invariant 2).
    pub fn extent_cache(&self) -> ExtentCache<'_> {
        ExtentCache::new(self)
    }

    /// Reserves every free page of one extent with free pages, growing the file if none has.
    pub(crate) fn reserve(&self) -> Result<Reservation> {
        loop {
            let pages = self.page_count();
            let start = self.hint_group.load(Relaxed);
            for g in start..self.group_count(pages) {
                let epoch = self.free_epoch.load(Acquire);
                if let Some(r) = self.reserve_in_group(g, pages)? {
                    return Ok(r);
                }
                // Only a complete group can be skipped for good: the last one still grows.
                let complete = (g + 1) * self.group_pages <= pages;
                if complete
                    && self.free_epoch.load(Acquire) == epoch
                    && self
                        .hint_group
                        .compare_exchange(g, g + 1, AcqRel, Relaxed)
                        .is_ok()
                    && self.free_epoch.load(Acquire) != epoch
                {
                    // A free in g raced with the advance (it bumps the epoch before lowering
                    // the hint): put the hint back so the freed page is found.
                    self.hint_group.fetch_min(g, AcqRel);
                }
            }
            self.grow(pages)?;
        }
    }

    fn reserve_in_group(&self, g: u64, pages: u64) -> Result<Option<Reservation>> {
        let base = g * self.group_pages;
        let extents = (pages.min(base + self.group_pages) - base) / EXTENT_PAGES;
        let mpid = PageId(map::map_page_of_group(g, self.group_pages));
        let reservation = {
            let mut m = self.pool.fix_exclusive(mpid)?;
            let Some(e) = (0..extents).find(|&e| map::word(m.bytes(), e) != u64::MAX) else {
                return Ok(None);
            };
            let w = map::word(m.bytes(), e);
            if let Some(log) = self.reservation_log.get().and_then(Weak::upgrade) {
                // Invariant 2, logged: the record (made under the map latch, before any page
                // is handed out) precedes every record that uses a page of the extent.
                log.log_reservation(&mut m, wal::reserve_redo(e, !w))?;
                return Ok(Some(Reservation::new(base + e * EXTENT_PAGES, !w)));
            }
            map::set_word(&mut m.page_mut(), e, u64::MAX);
            m.mark_dirty();
            Reservation::new(base + e * EXTENT_PAGES, !w)
        };
        // Invariant 2: the reservation is durable before any of its pages is used. The latch
        // is released first (principle 6: no I/O under a latch others need); the map page
        // written then holds at least our bits.
        if let Err(e) = self.pool.flush_page(mpid).and_then(|()| self.pool.sync()) {
            let _ = self.unreserve(reservation);
            return Err(e);
        }
        Ok(Some(reservation))
    }

    /// Extents the file grows by when it has `pages` pages (invariant 3): an eighth of the
    /// file, at least one extent and at most [`GROW_MAX_BYTES`], so that a growing database
    /// pays the growth's two syncs about once per eighth of its size rather than once per
    /// extent (the syncs wait for every page write the cleaner has in flight: the insert
    /// benchmark spent a tenth of its time in them).
    fn grow_extents(&self, pages: u64) -> u64 {
        let max = (GROW_MAX_BYTES / self.pool.page_size() as u64 / EXTENT_PAGES).max(1);
        (pages / 8 / EXTENT_PAGES).clamp(1, max)
    }

    /// Grows the file (by [`grow_extents`](Self::grow_extents), or by one extent where the
    /// storage has no room for more) unless another thread already grew it past `seen`.
    fn grow(&self, seen: u64) -> Result<()> {
        let _g = self.grow.lock();
        let pages = self.page_count();
        if pages != seen {
            return Ok(());
        }
        let file = self.pool.file();
        let page_bytes = self.pool.page_size() as u64;
        let mut new_count = pages + self.grow_extents(pages) * EXTENT_PAGES;
        match file.set_len(new_count * page_bytes) {
            Err(Error::NoSpace { .. }) if new_count > pages + EXTENT_PAGES => {
                new_count = pages + EXTENT_PAGES;
                file.set_len(new_count * page_bytes)?;
            }
            r => r?,
        }
        // Every group that starts in the new pages gets its map (the group's first page).
        let first_group = pages.div_ceil(self.group_pages).max(1);
        for g in (first_group..).take_while(|g| g * self.group_pages < new_count) {
            let mpid = PageId(map::map_page_of_group(g, self.group_pages));
            {
                let mut m = self.pool.fix_new(mpid, PageType::SpaceMap)?;
                map::init(&mut m.page_mut(), g);
            }
            self.pool.flush_page(mpid)?;
        }
        // Invariant 3: the longer file (and a new map page) are durable before the header
        // names the new pages.
        self.pool.sync()?;
        {
            let mut h = self.pool.fix_exclusive(PageId(0))?;
            h.page_mut().put_u64(header::OFF_PAGE_COUNT, new_count);
            h.mark_dirty();
        }
        // ... and the header is durable before any page of the new extent can be handed out
        // (a page in use beyond the header's page count would read as free after a crash).
        self.pool.flush_page(PageId(0))?;
        self.pool.sync()?;
        self.page_count.store(new_count, Release);
        Ok(())
    }

    /// Returns the pages of a reservation that were not handed out (clears their bits).
    pub(crate) fn unreserve(&self, r: Reservation) -> Result<()> {
        if r.is_empty() {
            return Ok(());
        }
        let (mpid, e, _) = self.locate(r.base());
        let mut m = self.pool.fix_exclusive(mpid)?;
        let w = map::word(m.bytes(), e);
        debug_assert_eq!(w & r.mask(), r.mask(), "reserved pages must be marked");
        map::set_word(&mut m.page_mut(), e, w & !r.mask());
        m.mark_dirty();
        drop(m);
        self.note_free(r.base());
        Ok(())
    }

    /// Records that a page was made unreachable (invariant 6). The caller holds that page's
    /// X latch; Release pairs with the Acquire of [`SpaceManager::unlink_epoch`], though a
    /// reader that checks after taking the same latch is ordered by the latch already.
    pub fn note_unlinked(&self) {
        self.unlink_epoch.fetch_add(1, Release);
    }

    /// The unlink epoch (invariant 6): how many times a page was made unreachable or freed.
    pub fn unlink_epoch(&self) -> u64 {
        self.unlink_epoch.load(Acquire)
    }

    /// Queues data pages `pids` to be freed once the log is durable up to `lsn`, an LSN past
    /// every record that made them unreachable (invariant 5). Returns how many pages are
    /// queued now.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if a page is not a data page of the file (then none is
    /// queued).
    pub fn free_after(&self, pids: &[PageId], lsn: Lsn) -> Result<usize> {
        for &pid in pids {
            self.check_data_page(pid)?;
        }
        let mut q = self.pending_frees.lock();
        q.extend(pids.iter().map(|&pid| (lsn, pid)));
        Ok(q.len())
    }

    /// Frees every page queued by [`SpaceManager::free_after`] whose LSN is at most
    /// `durable`, the log's durable LSN (every record below it is on stable storage).
    /// Returns how many were freed.
    ///
    /// # Errors
    /// As [`SpaceManager::free`], for the first page that failed; the others are freed.
    pub fn free_durable(&self, durable: Lsn) -> Result<usize> {
        let ready: Vec<PageId> = {
            let mut q = self.pending_frees.lock();
            let mut ready = Vec::new(); // allocates only if a page is due
            q.retain(|&(lsn, pid)| {
                let due = lsn <= durable;
                if due {
                    ready.push(pid);
                }
                !due
            });
            ready
        };
        let mut first_error = None;
        for &pid in &ready {
            if let Err(e) = self.free(pid) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(ready.len()), Err)
    }

    /// Pages queued by [`SpaceManager::free_after`] and not freed yet.
    pub fn pending_free_count(&self) -> usize {
        self.pending_frees.lock().len()
    }

    fn note_free(&self, pid: PageId) {
        self.note_unlinked();
        self.free_epoch.fetch_add(1, Release);
        self.hint_group.fetch_min(pid.0 / self.group_pages, Relaxed);
    }

    /// True if `pid` lies in the file and is not a file header or space-map page.
    pub fn is_data_page(&self, pid: PageId) -> bool {
        self.check_data_page(pid).is_ok()
    }

    fn check_data_page(&self, pid: PageId) -> Result<()> {
        if pid.0 >= self.page_count() {
            return Err(Error::PageNotAllocated {
                page_id: pid,
                reason: format!("beyond the file's {} pages", self.page_count()),
            });
        }
        let (_, e, bit) = self.locate(pid);
        let g = pid.0 / self.group_pages;
        if e == 0 && map::metadata_mask(g) & (1 << bit) != 0 {
            return Err(Error::invalid(
                "page_id",
                format!("page {pid} is a file header or space-map page"),
            ));
        }
        Ok(())
    }

    /// Frees an allocated page so that it can be handed out again.
    ///
    /// # Errors
    /// [`Error::PageNotAllocated`] if the page is beyond the file or already free (double
    /// free); [`Error::InvalidArgument`] for a header or map page; I/O errors reading the map.
    pub fn free(&self, pid: PageId) -> Result<()> {
        self.check_data_page(pid)?;
        let (mpid, e, bit) = self.locate(pid);
        let mut m = self.pool.fix_exclusive(mpid)?;
        let w = map::word(m.bytes(), e);
        if w & (1 << bit) == 0 {
            return Err(Error::PageNotAllocated {
                page_id: pid,
                reason: "it is already free (double free)".into(),
            });
        }
        map::set_word(&mut m.page_mut(), e, w & !(1 << bit));
        m.mark_dirty();
        drop(m);
        self.note_free(pid);
        Ok(())
    }

    /// Whether `pid` is marked allocated. Pages reserved by a cache but not yet handed out
    /// count as allocated.
    ///
    /// # Errors
    /// I/O errors reading the map page.
    pub fn is_allocated(&self, pid: PageId) -> Result<bool> {
        if pid.0 >= self.page_count() {
            return Ok(false);
        }
        let (mpid, e, bit) = self.locate(pid);
        let g = self.pool.fix_shared(mpid)?;
        Ok(map::word(g.bytes(), e) & (1 << bit) != 0)
    }

    /// Number of pages marked allocated, including header and map pages (O(file size)).
    ///
    /// # Errors
    /// I/O errors reading map pages.
    pub fn allocated_count(&self) -> Result<u64> {
        let pages = self.page_count();
        let mut n = 0;
        for g in 0..self.group_count(pages) {
            let base = g * self.group_pages;
            let extents = (pages.min(base + self.group_pages) - base) / EXTENT_PAGES;
            let m = self
                .pool
                .fix_shared(PageId(map::map_page_of_group(g, self.group_pages)))?;
            if map::group_of(m.bytes()) != g {
                return Err(Error::corruption(
                    m.page_id(),
                    "space map names another group",
                ));
            }
            n += (0..extents)
                .map(|e| map::word(m.bytes(), e).count_ones() as u64)
                .sum::<u64>();
        }
        Ok(n)
    }

    /// Returns every page held by the shared allocation caches to the map. Call before
    /// closing (then flush the pool) so that no reserved page stays marked allocated.
    ///
    /// # Errors
    /// I/O errors reading map pages; the remaining caches are still released.
    pub fn release_caches(&self) -> Result<()> {
        let mut first = Ok(());
        for c in self.caches.iter() {
            if let Some(r) = c.lock().take() {
                if let Err(e) = self.unreserve(r) {
                    if first.is_ok() {
                        first = Err(e);
                    }
                }
            }
        }
        first
    }
}

impl std::fmt::Debug for SpaceManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpaceManager")
            .field("page_count", &self.page_count())
            .field("group_pages", &self.group_pages)
            .finish()
    }
}
