//! The log manager's background work: what the flusher thread and a leader commit do
//! (write the completed prefix, sync, advance the durable end, raise the anchor's durable
//! floor: anchor rule A3), and the zero filler that keeps the segment files allocated ahead
//! of the written end. The rules cited ("invariant n") are the log manager's, in
//! `manager.rs`.
//!
//! Latching: writing and syncing need the manager's `flushing` mutex (invariant 13), so one
//! writer at a time advances the log buffer's completed prefix (its invariant 4); the
//! threads sleep on `Signals` with no strong reference to the manager (invariant 7).

use super::*;

impl LogManager {
    /// How far past the written end the zero filler reaches, in bytes: the option, but at
    /// most one segment; 0 (off) with `Lazy` durability, whose commits wait for no sync.
    pub(super) fn zero_fill_lead(&self) -> u64 {
        match self.options.durability {
            Durability::Full => self
                .options
                .preallocate_bytes
                .min(self.options.segment_size_bytes),
            Durability::Lazy => 0,
        }
    }

    /// Whether the zero filler should run a step, the log being written up to `written`
    /// (invariant 14: the zeros reach less than half the lead past it).
    fn zero_fill_wanted(&self, written: u64) -> bool {
        let lead = self.zero_fill_lead();
        lead > 0
            && self.zero_fill_failure.get().is_none()
            && self.segments.zeroed_end().0 < written.saturating_add(lead / 2)
    }

    /// What the flusher should do now (called under `ctl`).
    fn next_work(&self) -> Work {
        if self.failed.get().is_some() {
            return Work::Exit;
        }
        let cap = self.buffer.capacity();
        let completed = self.buffer.peek_completed();
        let released = self.buffer.released_end();
        let written = self.written.load(Relaxed);
        let durable = self.durable.load(Acquire);
        let writable = completed > written;
        let unsynced = written > durable || writable;
        if self.closed.load(Acquire) {
            // Finish what is complete; records still being copied by a racing append are
            // not waited for forever (the flusher exits once nothing more can be done).
            return if unsynced { Work::Run } else { Work::Exit };
        }
        let want_sync = self.requested.load(Acquire) > durable && completed > durable;
        // Pressure only when there is something to write (invariant 2's waiters, or a
        // filling ring); an incomplete oldest record is waited for, not spun on.
        let pressure = writable
            && (completed - written >= cap / 4 || self.buffer.reserved_end() - released > cap);
        let lazy_due = self.options.durability == Durability::Lazy && unsynced && self.sync_due();
        if want_sync || pressure || lazy_due {
            Work::Run
        } else {
            Work::Sleep
        }
    }

    /// One round of work: write the completed prefix, sync if someone waits, the lazy
    /// interval is due, the unsynced bound is reached (invariant 6) or the log is closing.
    /// Returns false if the log failed.
    pub(super) fn do_work(&self, block: &mut AlignedBuf) -> bool {
        if self.failed.get().is_some() {
            return false; // invariant 4: nothing is written after a failure
        }
        let closing = self.closed.load(Acquire);
        if closing {
            // Lane rule L6: the last rounds write everything appended, past every chunk.
            self.close_chunks_below(u64::MAX);
        }
        let to = self.buffer.advance_completed();
        let from = self.written.load(Relaxed);
        if to > from {
            let direct = self.segments.direct_writes();
            let w = if direct {
                self.write_direct(from, to, block)
            } else {
                self.buffer.with_bytes(from, to, |lsn, b| {
                    self.segments.write_at(Lsn(lsn), b)?;
                    self.bytes_written.fetch_add(b.len() as u64, Relaxed);
                    Ok(())
                })
            };
            if let Err(e) = w {
                self.fail(format!("writing the log at {from}..{to}: {e}"));
                return false;
            }
            self.written.store(to, Release);
            // Rule 10: with direct I/O the partial block at the end stays in the ring.
            self.buffer
                .release(if direct { align_down(to) } else { to });
            self.flushes.fetch_add(1, Relaxed);
            let _g = self.sig.ctl.lock();
            self.sig.waiters_cv.notify_all(); // room in the ring
            if self.zero_fill_wanted(to) {
                self.sig.zero_cv.notify_one(); // invariant 14
            }
        }
        let durable = self.durable.load(Relaxed);
        let lazy_due = self.options.durability == Durability::Lazy && self.sync_due();
        let need_sync = self.requested.load(Acquire) > durable
            || lazy_due
            || closing
            || to - durable >= self.buffer.capacity();
        if need_sync && to > durable {
            if let Err(e) = self.segments.sync() {
                self.fail(format!("syncing the log up to {to}: {e}"));
                return false;
            }
            self.syncs.fetch_add(1, Relaxed);
            self.last_sync_ns
                .store(self.opened.elapsed().as_nanos() as u64, Relaxed);
            self.durable.store(to, Release);
            {
                let _g = self.sig.ctl.lock();
                self.sig.waiters_cv.notify_all();
            }
            self.raise_durable_floor(to); // after waking the committers: off their path
        }
        true
    }

    /// True once the lazy flush interval has passed since the last sync.
    fn sync_due(&self) -> bool {
        // Saturating: another thread may store a sync time later than our clock reading.
        let since = (self.opened.elapsed().as_nanos() as u64)
            .saturating_sub(self.last_sync_ns.load(Relaxed));
        since >= self.options.lazy_flush_interval_ms * 1_000_000
    }

    /// Writes the log bytes `[from, to)` with direct I/O as whole blocks (rules 9 and 10):
    /// from the block holding `from` (whose earlier bytes are still in the ring) to the last
    /// block boundary straight from the ring, then the partial block holding `to`, padded with
    /// zeros, from `block`.
    fn write_direct(&self, from: u64, to: u64, block: &mut AlignedBuf) -> Result<()> {
        let body_start = align_down(from);
        let body_end = align_down(to);
        if body_end > body_start {
            self.buffer.with_bytes(body_start, body_end, |lsn, b| {
                self.segments.write_at(Lsn(lsn), b)?;
                self.bytes_written.fetch_add(b.len() as u64, Relaxed);
                Ok(())
            })?;
        }
        if to > body_end {
            let n = (to - body_end) as usize;
            self.buffer.with_bytes(body_end, to, |lsn, b| {
                let at = (lsn - body_end) as usize;
                block[at..at + b.len()].copy_from_slice(b);
                Ok(())
            })?;
            block[n..].fill(0);
            self.segments.write_at(Lsn(body_end), block)?;
            self.bytes_written.fetch_add(block.len() as u64, Relaxed);
        }
        Ok(())
    }

    /// Anchor rule A6: before a page whose page LSN is `lsn` (durable already) is written,
    /// the durable floor is raised above it, to the durable end, unless it is there already.
    /// A page on disk then never depends on log records that a restart could take for a
    /// torn tail: a log that lost them ends below the floor, which is reported as damage,
    /// instead of a restart that redoes and undoes around a page already holding changes of
    /// transactions whose records are gone (rows of no committed state). Costs one anchor
    /// write and sync, after making the whole appended log durable, for each page written
    /// whose LSN is above the floor: the raise goes to the end of the log, so it covers
    /// every page changed until then (the rest of a cleaner pass). None otherwise. Every
    /// page write takes this path, an eviction's included; the buffer pool's victim choice
    /// prefers dirty pages below the floor ([`WalHook::durable_floor`]), so that a miss
    /// rarely pays for the raise (buffer rule 10).
    ///
    /// # Errors
    /// I/O errors writing the anchor (the page is then not written).
    pub(super) fn floor_above(&self, lsn: Lsn) -> Result<()> {
        // The mirror first: the flusher holds the anchor's mutex across an anchor write
        // and sync, which a write of a page below the floor must not wait for. The mirror
        // never leads the floor, so a page it covers is covered.
        if lsn < self.durable_floor() {
            return Ok(());
        }
        // Invariant 4: a failed or closed log writes nothing more, its anchor included (a
        // pool outliving its engine must not overwrite a later session's anchor).
        self.check_usable()?;
        // Raise past every record appended so far, not just past `lsn`: the pages written
        // after this one (the rest of a cleaner pass or of a checkpoint's flush) were mostly
        // changed before now, and are then covered without an anchor write of their own.
        // Waited for without the anchor's mutex, which the flusher takes after each sync
        // (and holds across an anchor write when it raises the floor).
        self.wait_all_durable()?;
        let mut a = self.anchor.lock();
        if lsn < a.durable_floor {
            return Ok(()); // raised meanwhile
        }
        let new = a.with_floor(self.durable_lsn());
        new.write(&*self.storage)?;
        self.set_anchor(&mut a, new);
        Ok(())
    }

    /// Installs `new`, just written, as the anchor (`a` is the locked current one) and
    /// publishes its floor to [`WalHook::durable_floor`].
    pub(super) fn set_anchor(&self, a: &mut Anchor, new: Anchor) {
        *a = new;
        self.floor.store(new.durable_floor.0, Release);
    }

    /// Anchor rule A3: once a sync crossed into a new segment, or went a
    /// `1 / FLOOR_STEPS_PER_SEGMENT` of a segment past the floor, record the synced point so
    /// that damage below it is reported as corruption rather than taken for a torn tail.
    fn raise_durable_floor(&self, synced: u64) {
        let seg = self.options.segment_size_bytes;
        let due = |floor: u64| {
            synced / seg > floor / seg
                || synced - floor.min(synced) >= seg / FLOOR_STEPS_PER_SEGMENT
        };
        // Most syncs raise nothing: decided from the mirror (never above the floor) without
        // the mutex, and again under it.
        if !due(self.floor.load(Acquire)) {
            return;
        }
        let mut a = self.anchor.lock();
        if due(a.durable_floor.0) {
            let new = a.with_floor(Lsn(synced));
            match new.write(&*self.storage) {
                Ok(()) => self.set_anchor(&mut a, new),
                Err(e) => {
                    drop(a);
                    self.fail(format!("writing the log anchor: {e}"));
                }
            }
        }
    }
}

/// The flusher thread. It holds a strong reference to the manager only while deciding and
/// working, never while sleeping (invariant 7); it exits when the manager is gone, closed or
/// failed.
pub(super) fn flusher_main(log: Weak<LogManager>, sig: Arc<Signals>) {
    let mut last_lane_check = Instant::now();
    loop {
        if let Some(strong) = log.upgrade() {
            // Lane rule L6, at most once a nap (so a claim has had time to move), before
            // `ctl` (closing a chunk appends a padding record, which may take it).
            let nap = Duration::from_millis(strong.options.lazy_flush_interval_ms.max(1));
            if last_lane_check.elapsed() >= nap.min(Duration::from_millis(FLUSHER_NAP_MS)) {
                strong.close_stale_chunks();
                last_lane_check = Instant::now();
            }
        }
        let mut g = sig.ctl.lock();
        let Some(strong) = log.upgrade() else { return };
        match strong.next_work() {
            Work::Exit => return,
            Work::Run => {
                drop(g);
                // Lock order: `flushing` before `ctl` (`do_work` notifies under `ctl`).
                let mut block = strong.flushing.lock();
                if !strong.do_work(&mut block) {
                    return;
                }
            }
            Work::Sleep => {
                let nap = if strong.options.durability == Durability::Lazy {
                    Duration::from_millis(strong.options.lazy_flush_interval_ms)
                } else {
                    Duration::from_millis(FLUSHER_NAP_MS)
                };
                // Dropping the last reference here runs `Drop`, which sees it is on the
                // flusher thread and does not take `ctl` (which we hold).
                drop(strong);
                sig.flusher_cv.wait_for(&mut g, nap);
            }
        }
    }
}

/// The zero-fill thread (invariant 14). It holds a strong reference to the manager only
/// while deciding and while counting a step, never while sleeping or during a step's I/O,
/// so that a step in progress does not keep the manager alive. Whichever thread runs `Drop`
/// or `close` stops zero-filling in the segment set first (`SegmentSet::stop_zero_fill`,
/// which waits for a step in progress), so no step writes to the files once they return.
/// It exits when the manager is gone, closed or failed, or when a step fails.
pub(super) fn zero_filler_main(log: Weak<LogManager>, sig: Arc<Signals>) {
    let mut idle = false;
    loop {
        let mut g = sig.ctl.lock();
        let Some(strong) = log.upgrade() else { return };
        if strong.closed.load(Acquire) || strong.failed.get().is_some() {
            return;
        }
        let written = strong.written.load(Relaxed);
        if idle || !strong.zero_fill_wanted(written) {
            idle = false;
            drop(strong); // as in `flusher_main`: `Drop` does not take `ctl` on this thread
            sig.zero_cv
                .wait_for(&mut g, Duration::from_millis(FLUSHER_NAP_MS * 5));
            continue;
        }
        let upto = Lsn(written.saturating_add(strong.zero_fill_lead()));
        let segments = Arc::clone(&strong.segments);
        drop(strong); // may run `Drop` here, which then joins nothing (see `stop_threads`)
        drop(g);
        let step = segments.zero_fill_ahead(upto);
        let Some(strong) = log.upgrade() else { return };
        match step {
            Ok(n) => {
                strong.bytes_zero_filled.fetch_add(n, Relaxed);
                idle = n == 0; // the writes got there first: wait for the next wake-up
            }
            Err(e) => {
                let _ = strong
                    .zero_fill_failure
                    .set(format!("zero-filling the log towards {upto}: {e}"));
                return;
            }
        }
    }
}
