//! The background page cleaner (DESIGN.md §3.3, Shore-MT §7.7).
//!
//! Each pass: read the end of the log `L`; collect the dirty frames that are due — those
//! whose recovery LSN lags `L` by at least the lag (`Options::cleaner_lag_bytes`), or every
//! dirty frame when dirty frames fill more than [`DIRTY_HIGH_PERCENT`] of the pool or when
//! frames were evicted since the last pass (so that a miss finds a clean victim rather than
//! writing one back itself), or when the lag is 0;
//! write them in page-id order (sequential-ish I/O) in batches, skipping frames it cannot
//! latch in shared mode at once (they are in use; the next pass gets them); compute
//! `min(L, rec_lsn of every frame still dirty)`; sync the data file (so every page seen clean
//! is durable: pages are marked clean only after their write, buffer rule 8); then publish the
//! minimum as the pool's oldest recovery LSN. A failed sync publishes nothing (rule 6).
//!
//! Why that bound is safe without latching every frame: a page becomes dirty (and gets its
//! recovery LSN) *before* its log record is appended (buffer rule 5), so a record with LSN
//! below `L` belongs to a page whose dirty flag was set before `L` was read and is seen by the
//! scan that follows; a page dirtied after the scan started has a recovery LSN ≥ `L`. The
//! scans walk the pool's dirty map (`dirty_map`: one bit per frame, set before a frame's
//! dirty flag and cleared after it), so a pass reads the control blocks of the dirty frames
//! only, not of the whole pool.
//!
//! Why a lag (the policy of InnoDB's and PostgreSQL's writers: write what is old, or what
//! eviction needs): a page written while it is still being changed is dirty again within
//! microseconds, so writing every dirty page on every pass turned a memory-resident TPC-B or
//! TPC-C into a stream of page writes (the cleaner took 6–10 % of the CPU of a two-core
//! machine) that bought nothing but a more recent redo point. The lag keeps that point
//! within a bounded distance of the log's end instead.
//!
//! Futile writes: a page dirtied after a checkpoint logs a full-page image first, and when it
//! is dirtied again after a write-back, before the next checkpoint begins, its recovery LSN
//! goes back to that image's LSN (txn rule 3: redo must start at the image, which repairs a
//! torn write). Writing such a page again cannot advance the redo point, so the lag policy
//! skips a page written since its image until a checkpoint begins past it; then one write
//! lets the next change log a fresh image. Without this, the hot pages of a memory-resident
//! TPC-C were written on every pass (New-Order: about 19,000 page writes per second, 18 %
//! of a core in the cleaner) for nothing. Pressure (evictions, over half the pool dirty)
//! still writes every dirty page.
//!
//! The thread holds only a `Weak` reference to the pool, so it never keeps a dropped pool
//! alive; it stops when told to or when the pool is gone.

use super::pool::BufferPool;
use crate::sync::periodic::Periodic;
use std::sync::atomic::Ordering::{Relaxed, Release};
use std::sync::Weak;
use std::time::Duration;

/// Dirty frames, in percent of the pool, above which a pass writes every dirty frame
/// whatever its lag.
pub(crate) const DIRTY_HIGH_PERCENT: usize = 50;

/// The page cleaner's thread.
pub(crate) struct Cleaner {
    thread: Periodic,
}

impl Cleaner {
    /// Starts the cleaner thread.
    ///
    /// # Errors
    /// The OS error if the thread cannot be spawned.
    pub(crate) fn start(
        pool: Weak<BufferPool>,
        interval: Duration,
        batch: usize,
        lag_bytes: u64,
    ) -> std::io::Result<Cleaner> {
        let mut last_evictions = 0;
        let thread = Periodic::spawn("shoal-cleaner", interval, move || {
            let Some(pool) = pool.upgrade() else {
                return false;
            };
            let evictions = pool.counters.evictions.get();
            // Frames were replaced since the last pass: misses need clean victims, so
            // clean everything rather than leave them to write pages back themselves.
            let pressure = evictions != last_evictions;
            last_evictions = evictions;
            clean_pass(&pool, batch, if pressure { 0 } else { lag_bytes });
            true
        })?;
        Ok(Cleaner { thread })
    }

    pub(crate) fn wake(&self) {
        self.thread.wake();
    }

    /// Stops the thread and waits for it (unless called from the cleaner thread itself,
    /// which happens when its pass held the last reference to the pool).
    pub(crate) fn stop(&self) {
        self.thread.stop();
    }
}

/// True if writing frame `f` back cannot advance its recovery LSN: it was written since its
/// image (`Frame::image_written`), so it is dirty again with that image's LSN as its recovery
/// LSN, and no checkpoint began after the image (so the next dirtying would not log a new
/// one either). Another write only costs I/O; once a checkpoint begins past the image, the
/// write is worth it again (module doc, "Futile writes").
fn futile(f: &super::frame::Frame, horizon: u64) -> bool {
    let image = f.image_lsn.load(Relaxed);
    image != 0 && image >= horizon && f.image_written.load(Relaxed)
}

/// One cleaning pass; see the module doc. Write errors make the pool refuse writes (rule 6);
/// the pass then stops early.
pub(crate) fn clean_pass(pool: &BufferPool, batch: usize, lag_bytes: u64) {
    let log_end = pool.wal.current_lsn().0;
    let horizon = pool.image_horizon().0;
    let mut dirty: Vec<(u64, u32, bool)> = Vec::new();
    let mut count = 0;
    for i in pool.dirty_frames() {
        let f = &pool.frames[i as usize];
        count += 1;
        // Due: recovery LSN at least `lag_bytes` behind the end of the log, and not futile.
        // (Stale values read here only delay or hasten a write; `oldest` below is exact.)
        let due =
            f.rec_lsn.load(Relaxed).saturating_add(lag_bytes) <= log_end && !futile(f, horizon);
        dirty.push((f.page_id.load(Relaxed), i, due));
    }
    let pressure = count * 100 > pool.frames.len() * DIRTY_HIGH_PERCENT;
    if lag_bytes > 0 && !pressure {
        dirty.retain(|&(_, _, due)| due);
    }
    dirty.sort_unstable(); // by page id
    'outer: for chunk in dirty.chunks(batch) {
        for &(pid, f, _) in chunk {
            let fr = &pool.frames[f as usize];
            let Some(_s) = fr.latch.try_shared() else {
                continue;
            };
            if fr.page_id.load(Relaxed) != pid {
                continue;
            }
            if pool.write_back(f).is_err() {
                break 'outer;
            }
        }
        std::thread::yield_now();
    }
    let oldest = pool.oldest_dirty_rec_lsn(log_end);
    // A page seen clean above was written (rule 8) but perhaps not synced: make those writes
    // durable before promising that nothing older than `oldest` needs redo.
    if pool.sync_file().is_ok() {
        pool.oldest_rec_lsn.store(oldest, Release);
    }
}
