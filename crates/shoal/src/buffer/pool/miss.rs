//! The pool's misses and writes: bringing a page into a frame (`load`: a victim found by
//! the CLOCK search `find_victim`, installed X-latched, read and checked; buffer rules 3, 4,
//! 9 and 10), writing a dirty frame back (`write_back`: the WAL rule first, the checksum
//! sealed on a private copy, clean only after the write; rules 5, 7 and 8), flushing,
//! syncing and closing, and the sticky write-back failure (rule 6). The rules are in the
//! module doc of `buffer`.
//!
//! Latching: a miss holds only its victim frame's X latch while it reads (rule 3); a
//! write-back runs under the caller's S or X latch on the frame, which keeps the page from
//! changing while it is copied and written, and takes no other latch (rule 4).

use super::*;

thread_local! {
    /// Per-thread I/O scratch page (aligned for O_DIRECT), reused across calls.
    static SCRATCH: RefCell<Option<AlignedBuf>> = const { RefCell::new(None) };
}

fn with_scratch<R>(page_size: usize, f: impl FnOnce(&mut [u8]) -> R) -> R {
    SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        if s.as_ref().map(|b| b.len()) != Some(page_size) {
            *s = Some(AlignedBuf::new(page_size));
        }
        f(s.as_mut().expect("just set"))
    })
}

impl BufferPool {
    /// Brings `pid` into a frame and returns it X-latched, or `None` if another thread
    /// installed the page first (the caller looks it up again).
    pub(super) fn load(&self, pid: PageId) -> Result<Option<ExclusiveGuard<'_>>> {
        let (f, latch) = self.find_victim()?;
        if self.table.insert(&self.frames, pid, f).is_err() {
            return Ok(None); // the victim frame stays free
        }
        // Buffer rule 3: the frame is in the table X-latched ("being read"); no table latch
        // is held during the read. Until the read succeeds, `installed` takes the frame out of
        // the table again on any exit, error or panic, so no fixer ever sees it half-loaded.
        let installed = Installed {
            pool: self,
            pid,
            frame: f,
        };
        crate::sync::held::note_miss_io();
        self.read_into_frame(pid, f)?;
        std::mem::forget(installed);
        self.counters.misses.incr();
        Ok(Some(ExclusiveGuard::new(self, f, latch)))
    }

    fn read_into_frame(&self, pid: PageId, f: u32) -> Result<()> {
        let offset = pid
            .byte_offset(self.page_size)
            .ok_or_else(|| Error::invalid("page_id", format!("page {pid} is beyond 2^64 bytes")))?;
        with_scratch(self.page_size, |buf| {
            match self.file.read_exact_at(buf, offset) {
                Ok(()) => {}
                Err(Error::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::UnexpectedEof =>
                {
                    return Err(Error::PageNotAllocated {
                        page_id: pid,
                        reason: format!("beyond the end of file {}", self.file.name()),
                    })
                }
                Err(e) => return Err(e),
            }
            header::verify(buf, pid)?;
            // Buffer rule 9: the WAL rule wrote this page only after the log was durable up
            // to its page LSN, so a page LSN at or past the end of the log means the log lost
            // records this page depends on: redo could not bring the page's neighbours up to
            // it, nor undo undo it.
            let (lsn, end) = (header::page_lsn(&buf[..]), self.wal.current_lsn());
            if end != Lsn::ZERO && lsn >= end {
                return Err(Error::corruption(
                    pid,
                    format!(
                        "page LSN {lsn} is not below the end of the log {end}: log records \
                         this page depends on were lost"
                    ),
                ));
            }
            AtomicBytesMut::new(self.words(f)).write_from(0, buf);
            Ok(())
        })
    }

    /// CLOCK: advances the shared hand, clears reference bits, and takes the first frame it
    /// can X-latch without waiting (buffer rule 4). A dirty victim is written back first
    /// (under its X latch only). Returns the frame X-latched, out of the table, free.
    pub(super) fn find_victim(&self) -> Result<(u32, sync::ExclusiveGuard<'_>)> {
        match self.find_victim_with(true)? {
            Some(v) => Ok(v),
            None => Err(Error::PoolExhausted {
                frames: self.frames.len(),
                rounds: VICTIM_ROUNDS,
            }),
        }
    }

    /// [`BufferPool::find_victim`] that passes over dirty frames: no I/O at all, for a
    /// caller that holds latches (DESIGN.md principle 6). It visits at most
    /// [`CLEAN_SEARCH_FRAMES`] frames and takes the first clean one it can latch at once,
    /// whether or not it was referenced lately. `None` if there was none.
    pub(super) fn find_clean_victim(&self) -> Result<Option<(u32, sync::ExclusiveGuard<'_>)>> {
        self.find_victim_with(false)
    }

    fn find_victim_with(
        &self,
        write_back: bool,
    ) -> Result<Option<(u32, sync::ExclusiveGuard<'_>)>> {
        // Rule 6: after a failed write or sync nothing is evicted — a page written since the
        // last good sync may read back old after an fsync error (the kernel may have dropped
        // it), so only resident pages are served until the database is reopened.
        if self.failed.get().is_some() {
            return Err(self.pool_failed());
        }
        let n = self.frames.len();
        // Rule 10 passes over some frames in the first two rounds: two more rounds keep
        // every frame eligible for VICTIM_ROUNDS of them. Only while a cleaner runs: without
        // one nothing else writes those pages, and a pool of them leaves the search one clean
        // frame to recycle, which a descent needing a parent and a child at once evicts
        // under itself forever.
        let defer_dirty = if self.cleaner.get().is_some() {
            2 * n
        } else {
            0
        };
        let steps = match write_back {
            true => n * (VICTIM_ROUNDS + 2),
            false => n.min(CLEAN_SEARCH_FRAMES),
        };
        for step in 0..steps {
            let i = self.hand.fetch_add(1, Relaxed) % n;
            let fr = &self.frames[i];
            // A search for a clean frame takes the first it meets, referenced or not: it
            // runs under its caller's latches and is short (a split's new page, rarely).
            if write_back && fr.referenced.load(Relaxed) {
                fr.referenced.store(false, Relaxed);
                continue;
            }
            // Rule 10: in the first two rounds (the first may only clear reference bits), a
            // dirty page above the log's durable floor is left to the cleaner, whose pass
            // raises the floor once for many pages; written here, it would cost this miss
            // an anchor write and sync (log anchor rule A6). Decided before the latch is
            // tried, from relaxed reads of the flag and the page LSN (a racing change can
            // only make the guess wrong: `force_log` enforces rule A6 whatever it was), so
            // a frame passed over keeps its version and its readers' bias.
            if (!write_back || step < defer_dirty)
                && fr.dirty.load(Relaxed)
                && (!write_back || !self.below_floor(i as u32))
            {
                continue;
            }
            // A reader-biased latch marks a read-hot page, and trying it costs a scan of the
            // visible-readers table: leave such frames for the later rounds.
            if step < n && fr.latch.is_biased() {
                continue;
            }
            let Some(latch) = fr.latch.try_exclusive() else {
                continue;
            };
            let old = PageId(fr.page_id.load(Relaxed));
            if old.is_valid() {
                if fr.dirty.load(Relaxed) {
                    if !write_back {
                        continue; // dirtied since the test above; `latch` drops
                    }
                    crate::sync::held::note_miss_io();
                    self.write_back(i as u32)?;
                }
                self.table.remove(&self.frames, old, i as u32);
                self.counters.evictions.incr();
            }
            return Ok(Some((i as u32, latch)));
        }
        Ok(None)
    }

    /// True if frame `f`'s page can be written without raising the log's durable floor: its
    /// page LSN lies below [`WalHook::durable_floor`] (rule 10). A relaxed atomic read that
    /// needs no latch; without one it is a guess, as rule 10 needs no more.
    fn below_floor(&self, f: u32) -> bool {
        header::page_lsn(&AtomicBytes::new(self.words(f))) < self.wal.durable_floor()
    }

    // ------------------------------------------------------------------ write-back

    /// Records the first write-back or sync failure (rule 6).
    pub(crate) fn fail(&self, what: String) {
        let _ = self.failed.set(what);
    }

    /// Syncs the data file; a failure is sticky (rule 6).
    pub(crate) fn sync_file(&self) -> Result<()> {
        if self.failed.get().is_some() {
            return Err(self.pool_failed());
        }
        self.file.sync_data().inspect_err(|e| {
            self.fail(format!("syncing {}: {e}", self.file.name()));
        })
    }

    fn pool_failed(&self) -> Error {
        Error::PoolFailed {
            first_failure: self.failed.get().cloned().unwrap_or_default(),
        }
    }

    /// Writes frame `f`'s page to storage if it is dirty. The caller holds the frame's latch
    /// in S or X mode (so nobody changes the page). WAL rule first: the log is forced up to
    /// the page LSN (buffer rule 5), which raises the log's durable floor above it where
    /// needed (log anchor rule A6). The checksum is sealed on a private copy. The page is
    /// marked clean only after the write succeeded (rule 8).
    pub(crate) fn write_back(&self, f: u32) -> Result<()> {
        let fr = &self.frames[f as usize];
        if !fr.dirty.load(Acquire) {
            return Ok(());
        }
        if self.failed.get().is_some() {
            return Err(self.pool_failed());
        }
        let pid = PageId(fr.page_id.load(Relaxed));
        let offset = pid
            .byte_offset(self.page_size)
            .expect("resident page has an offset");
        with_scratch(self.page_size, |buf| {
            self.copy_latched_image(f, buf);
            let lsn = header::page_lsn(&buf[..]);
            self.wal.force_log(lsn)?;
            header::seal(buf);
            match self.file.write_all_at(buf, offset) {
                Ok(()) => {
                    // Clean only once the write is done: a concurrent flusher that finds the
                    // page still dirty writes it again (harmless) instead of syncing without
                    // it. No one can re-dirty it meanwhile: that needs X, and we hold S or X.
                    fr.dirty.store(false, Release);
                    self.dirty_map.clear(f); // after the flag (dirty map invariant 1)
                    fr.image_written.store(true, Relaxed);
                    self.counters.dirty_writes.incr();
                    Ok(())
                }
                Err(e) => {
                    self.fail(format!("writing page {pid} to {}: {e}", self.file.name()));
                    Err(e)
                }
            }
        })
    }

    /// Writes every dirty page (in page-id order) and syncs the file. Waits for each dirty
    /// frame's latch in shared mode, so the caller must not hold an exclusive page guard of
    /// this pool (it would wait for itself).
    ///
    /// # Errors
    /// The first write or sync error; [`Error::PoolFailed`] if write-back failed before.
    pub fn flush_all(&self) -> Result<()> {
        if self.failed.get().is_some() {
            return Err(self.pool_failed());
        }
        let mut dirty: Vec<(u64, u32)> = self
            .dirty_frames()
            .map(|f| (self.frames[f as usize].page_id.load(Relaxed), f))
            .collect();
        dirty.sort_unstable();
        for (_, f) in dirty {
            let _s = self.frames[f as usize].latch.shared();
            self.write_back(f)?;
        }
        self.sync_file()
    }

    /// Writes page `pid` now if it is resident and dirty (no sync), waiting for its latch in
    /// shared mode. Used to order writes where crash consistency needs it (e.g. a space map
    /// before the pages it hands out).
    ///
    /// # Errors
    /// The write error, or [`Error::PoolFailed`] after an earlier failure.
    pub fn flush_page(&self, pid: PageId) -> Result<()> {
        Self::check_pid(pid)?;
        let Some(f) = self.table.lookup(&self.frames, pid) else {
            return Ok(()); // not resident: nothing unwritten
        };
        let _s = self.frames[f as usize].latch.shared();
        if self.frames[f as usize].page_id.load(Relaxed) != pid.0 {
            return Ok(()); // evicted meanwhile, hence written
        }
        self.write_back(f)
    }

    /// Makes every completed page write durable (`fdatasync` of the data file).
    ///
    /// # Errors
    /// The sync error (sticky: the pool then refuses writes), or [`Error::PoolFailed`].
    pub fn sync(&self) -> Result<()> {
        self.sync_file()
    }

    /// Stops the cleaner and writes every dirty page ([`BufferPool::flush_all`]). The pool
    /// stays usable (without cleaner) afterwards.
    ///
    /// # Errors
    /// As [`BufferPool::flush_all`].
    pub fn close(&self) -> Result<()> {
        if let Some(c) = self.cleaner.get() {
            c.stop();
        }
        self.flush_all()
    }

    /// The description of the first write-back failure, if any (the pool then refuses
    /// writes: buffer rule 6).
    pub fn failure(&self) -> Option<&str> {
        self.failed.get().map(|s| s.as_str())
    }
}

/// A frame installed in the page table for a page whose read has not succeeded yet; dropping
/// it (on error or unwind) removes the frame from the table. Declared after the frame's latch
/// guard in `load`, so it is dropped first, while the frame is still X-latched.
struct Installed<'a> {
    pool: &'a BufferPool,
    pid: PageId,
    frame: u32,
}

impl Drop for Installed<'_> {
    fn drop(&mut self) {
        self.pool
            .table
            .remove(&self.pool.frames, self.pid, self.frame);
    }
}
