//! [`LogManager`]: appends, the flusher thread, group commit and the sticky failure.
//!
//! ```text
//!  append ──reserve (1 atomic)──copy──mark done──►  ring  ──flusher: longest done prefix──► segments
//!                                                            write, then fdatasync when a
//!  commit(lsn) ──► wait_durable: request lsn, sleep ◄─────── committer waits (one sync serves all)
//! ```
//!
//! ## Invariants
//! 1. `durable` only grows and every byte below it was written and synced; it is always a
//!    record boundary. The record at LSN `l` is durable iff `durable > l`.
//! 2. An append waits only when the ring is full (the flusher frees space by writing, not by
//!    syncing), never for a sync (Shore-MT §6.2.2).
//! 3. One sync serves every commit whose record lies below the synced point: committers
//!    publish what they need in `requested` (an atomic max) and sleep; the flusher writes the
//!    whole completed prefix, syncs once, advances `durable` and wakes them all.
//! 4. Sticky failure: after a failed write or sync nothing more is written, every waiter and
//!    every later append or commit gets `Error::LogFailed` naming the first failure, until the
//!    log is reopened (and recovery runs).
//! 5. No lost wake-ups: waiters check their condition under `ctl`, and the flusher changes
//!    `durable`/`released` before taking `ctl` to notify.
//!
//! Latching: `ctl` (a mutex) is held only to sleep and to notify; never across I/O.

use super::anchor::Anchor;
use super::buffer::LogBuffer;
use super::options::{Durability, LogOptions};
use super::reader;
use super::record::LogRecord;
use super::segment::SegmentSet;
use crate::buffer::WalHook;
use crate::error::{Error, Result};
use crate::io::Storage;
use crate::stats::StripedCounter;
use crate::types::Lsn;
use crossbeam_utils::CachePadded;
use parking_lot::{Condvar, Mutex};
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// LSN of the first record of a new log. LSN 0 means "no record" (page LSNs, prev LSNs).
pub const FIRST_LSN: Lsn = Lsn(64);

/// Longest the flusher sleeps without being woken, in milliseconds (a safety net; work
/// normally wakes it).
const FLUSHER_NAP_MS: u64 = 20;

/// Counters of the log manager since it was opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogStats {
    /// Records appended.
    pub appends: u64,
    /// Bytes appended (encoded records, headers and padding included).
    pub bytes_appended: u64,
    /// Batches written to the segment files.
    pub flushes: u64,
    /// `fdatasync` calls on the segment files.
    pub syncs: u64,
}

/// The write-ahead log of one database (DESIGN.md §3.5; module doc for its invariants).
pub struct LogManager {
    storage: Arc<dyn Storage>,
    segments: SegmentSet,
    buffer: LogBuffer,
    options: LogOptions,
    durable: CachePadded<AtomicU64>,
    requested: CachePadded<AtomicU64>,
    failed: OnceLock<String>,
    closed: AtomicBool,
    ctl: Mutex<()>,
    flusher_cv: Condvar,
    waiters_cv: Condvar,
    anchor: Mutex<Anchor>,
    appends: StripedCounter,
    bytes: StripedCounter,
    flushes: AtomicU64,
    syncs: AtomicU64,
    flusher: Mutex<Option<JoinHandle<()>>>,
}

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl LogManager {
    /// Opens the log in `storage` (a directory), creating it if empty: finds the end of the
    /// log (the last complete record) and starts the flusher.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for bad options; [`Error::BadFile`] for a damaged anchor or
    /// unexpected segment files; a corruption error if a record below the durable floor does
    /// not decode (the log is damaged, not merely torn at its tail); I/O errors.
    pub fn open(storage: Arc<dyn Storage>, options: &LogOptions) -> Result<Arc<LogManager>> {
        options.validate()?;
        let segments = SegmentSet::open(storage.clone(), options.segment_size_bytes)?;
        let anchor = match Anchor::read(&*storage)? {
            Some(a) => a,
            None => {
                let a = Anchor {
                    start_lsn: FIRST_LSN,
                    durable_floor: FIRST_LSN,
                };
                a.write(&*storage)?;
                a
            }
        };
        let end = find_end(&segments, anchor)?;
        // Reader rule 4: nothing past the end may survive to be read as part of the new log.
        segments.truncate_from(end)?;
        segments.sync()?;
        let log = Arc::new(LogManager {
            storage,
            segments,
            buffer: LogBuffer::new(options.buffer_size_bytes, end.0)?,
            options: options.clone(),
            durable: CachePadded::new(AtomicU64::new(end.0)),
            requested: CachePadded::new(AtomicU64::new(0)),
            failed: OnceLock::new(),
            closed: AtomicBool::new(false),
            ctl: Mutex::new(()),
            flusher_cv: Condvar::new(),
            waiters_cv: Condvar::new(),
            anchor: Mutex::new(anchor),
            appends: StripedCounter::default(),
            bytes: StripedCounter::default(),
            flushes: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            flusher: Mutex::new(None),
        });
        let weak = Arc::downgrade(&log);
        let handle = std::thread::Builder::new()
            .name("shoal-log-flusher".into())
            .spawn(move || flusher_main(weak))
            .map_err(|e| Error::from_io("spawn log flusher thread", "log", e))?;
        *log.flusher.lock() = Some(handle);
        Ok(log)
    }

    fn check_usable(&self) -> Result<()> {
        if let Some(f) = self.failed.get() {
            return Err(Error::LogFailed {
                first_failure: f.clone(),
            });
        }
        if self.closed.load(Acquire) {
            return Err(Error::LogFailed {
                first_failure: "the log was closed".into(),
            });
        }
        Ok(())
    }

    fn fail(&self, what: String) {
        let _ = self.failed.set(what);
        let _g = self.ctl.lock();
        self.waiters_cv.notify_all();
        self.flusher_cv.notify_all();
    }

    fn wake_flusher(&self) {
        let _g = self.ctl.lock();
        self.flusher_cv.notify_one();
    }

    /// Appends `record` and returns its LSN. Reserves space with one atomic operation and
    /// copies outside any lock; waits only if the insert buffer is full (invariant 2).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the record is larger than a quarter of the buffer;
    /// [`Error::LogFailed`] after a log I/O failure or `close`.
    pub fn append(&self, record: &LogRecord) -> Result<Lsn> {
        self.check_usable()?;
        let len = record.encoded_len() as u64;
        if len > self.buffer.capacity() / 4 {
            return Err(Error::invalid(
                "record",
                format!(
                    "{len} bytes is more than a quarter of the {}-byte log buffer",
                    self.buffer.capacity()
                ),
            ));
        }
        let r = self.buffer.reserve(len);
        SCRATCH.with(|s| -> Result<()> {
            let mut s = s.borrow_mut();
            s.resize(len as usize, 0);
            record.encode_into(Lsn(r.start), &mut s);
            if !self.buffer.has_room(r) {
                self.wait_for_room(r)?;
            }
            self.buffer.write(r, &s);
            Ok(())
        })?;
        let quarter = self.buffer.capacity() / 4;
        if r.start / quarter != r.end / quarter || self.requested.load(Relaxed) > r.start {
            self.wake_flusher(); // the buffer is filling, or a committer waits on us
        }
        self.appends.incr();
        self.bytes.add(len);
        Ok(Lsn(r.start))
    }

    #[cold]
    fn wait_for_room(&self, r: super::buffer::Reservation) -> Result<()> {
        let mut g = self.ctl.lock();
        self.flusher_cv.notify_one();
        while !self.buffer.has_room(r) {
            if let Some(f) = self.failed.get() {
                return Err(Error::LogFailed {
                    first_failure: f.clone(),
                });
            }
            self.waiters_cv.wait(&mut g);
        }
        Ok(())
    }

    /// Waits until the record at `lsn` is durable (group commit: one sync serves all waiters,
    /// invariant 3).
    ///
    /// # Errors
    /// [`Error::LogFailed`] if a log write or sync failed (before or while waiting).
    pub fn wait_durable(&self, lsn: Lsn) -> Result<()> {
        let need = lsn.0 + 1;
        if self.durable.load(Acquire) >= need {
            return Ok(());
        }
        if let Some(f) = self.failed.get() {
            return Err(Error::LogFailed {
                first_failure: f.clone(),
            });
        }
        self.requested.fetch_max(need, AcqRel);
        let mut g = self.ctl.lock();
        self.flusher_cv.notify_one();
        while self.durable.load(Acquire) < need {
            if let Some(f) = self.failed.get() {
                return Err(Error::LogFailed {
                    first_failure: f.clone(),
                });
            }
            self.waiters_cv.wait(&mut g);
        }
        Ok(())
    }

    /// Completes a commit whose commit record is at `lsn`, as the durability option says:
    /// `Full` waits until it is durable, `Lazy` returns at once.
    ///
    /// # Errors
    /// As [`LogManager::wait_durable`] (with `Full`); [`Error::LogFailed`] (with `Lazy`) if
    /// the log has already failed.
    pub fn commit(&self, lsn: Lsn) -> Result<()> {
        match self.options.durability {
            Durability::Full => self.wait_durable(lsn),
            Durability::Lazy => self.check_usable(),
        }
    }

    /// LSN just past the last record appended so far (the next record's LSN).
    pub fn end_lsn(&self) -> Lsn {
        Lsn(self.buffer.reserved_end())
    }

    /// Everything below this LSN is durable.
    pub fn durable_lsn(&self) -> Lsn {
        Lsn(self.durable.load(Acquire))
    }

    /// Reads the record at `lsn` (for undo along a transaction's previous-LSN chain). The log
    /// is made durable up to it first, since records still in the buffer are not in the files.
    ///
    /// # Errors
    /// [`Error::LogFailed`]; a corruption error if no valid record starts at `lsn`; I/O errors.
    pub fn read_record(&self, lsn: Lsn) -> Result<LogRecord> {
        self.wait_durable(lsn)?;
        reader::read_record(&self.segments, lsn)
    }

    /// The records from `from` (a record boundary) up to the current durable end, in order.
    ///
    /// # Errors
    /// As [`reader::LogReader::next_record`].
    pub fn records_from(&self, from: Lsn) -> Result<Vec<(Lsn, LogRecord)>> {
        let durable = self.durable_lsn();
        let mut out = Vec::new();
        let mut r = reader::LogReader::new(&self.segments, from)?.with_unsynced_window(u64::MAX);
        while let Some((lsn, rec)) = r.next_record()? {
            if lsn >= durable {
                break;
            }
            out.push((lsn, rec));
        }
        Ok(out)
    }

    /// Segment recycling behind a checkpoint: `start` (a record boundary at or below the
    /// durable end) becomes the first LSN recovery will ever need; whole segments below it
    /// are removed.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `start` is beyond the durable end; I/O errors.
    pub fn remove_before(&self, start: Lsn) -> Result<()> {
        if start > self.durable_lsn() {
            return Err(Error::invalid(
                "start",
                format!("{start} is beyond the durable end of the log"),
            ));
        }
        let mut a = self.anchor.lock();
        if start > a.start_lsn {
            a.start_lsn = start;
            a.durable_floor = a.durable_floor.max(start);
            a.write(&*self.storage)?; // anchor rule A2: before the removal
        }
        self.segments.remove_before(start)
    }

    /// Counters since open.
    pub fn stats(&self) -> LogStats {
        LogStats {
            appends: self.appends.get(),
            bytes_appended: self.bytes.get(),
            flushes: self.flushes.load(Relaxed),
            syncs: self.syncs.load(Relaxed),
        }
    }

    /// Writes and syncs everything appended, stops the flusher and refuses further appends.
    /// Callers must not append concurrently with `close`.
    ///
    /// # Errors
    /// [`Error::LogFailed`] if the final write or sync (or an earlier one) failed.
    pub fn close(&self) -> Result<()> {
        let end = self.end_lsn();
        let r = if end.0 > self.durable.load(Acquire) {
            // The last record starts before `end`; making `end - 1` durable covers it.
            self.wait_durable(Lsn(end.0 - 1))
        } else {
            Ok(())
        };
        self.closed.store(true, Release);
        self.stop_flusher();
        r.and_then(|()| match self.failed.get() {
            Some(f) => Err(Error::LogFailed {
                first_failure: f.clone(),
            }),
            None => Ok(()),
        })
    }

    fn stop_flusher(&self) {
        self.closed.store(true, Release);
        {
            let _g = self.ctl.lock();
            self.flusher_cv.notify_all();
        }
        if let Some(h) = self.flusher.lock().take() {
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
    }

    /// One round of the flusher: sleep until there is work, write the completed prefix, sync
    /// if someone waits (or the lazy interval is due). Returns false when it should exit.
    fn flush_round(&self, last_sync: &mut Instant) -> bool {
        let cap = self.buffer.capacity();
        let lazy_interval = Duration::from_millis(self.options.lazy_flush_interval_ms);
        let lazy = self.options.durability == Durability::Lazy;
        {
            let mut g = self.ctl.lock();
            loop {
                if self.failed.get().is_some() {
                    return false;
                }
                let stop = self.closed.load(Acquire);
                let completed = self.buffer.advance_completed();
                let released = self.buffer.released_end();
                let durable = self.durable.load(Relaxed);
                let want_sync = self.requested.load(Acquire) > durable && completed > durable;
                let pressure =
                    completed - released >= cap / 4 || self.buffer.reserved_end() - released > cap;
                let lazy_due = lazy && completed > durable && last_sync.elapsed() >= lazy_interval;
                if stop || want_sync || pressure || lazy_due {
                    break;
                }
                let nap = if lazy {
                    lazy_interval
                } else {
                    Duration::from_millis(FLUSHER_NAP_MS)
                };
                self.flusher_cv.wait_for(&mut g, nap);
            }
        }
        let stop = self.closed.load(Acquire);
        let to = self.buffer.advance_completed();
        let from = self.buffer.released_end();
        if to > from {
            let w = self
                .buffer
                .with_bytes(from, to, |lsn, b| self.segments.write_at(Lsn(lsn), b));
            if let Err(e) = w {
                self.fail(format!("writing the log at {from}..{to}: {e}"));
                return false;
            }
            self.buffer.release(to);
            self.flushes.fetch_add(1, Relaxed);
            let _g = self.ctl.lock();
            self.waiters_cv.notify_all(); // room in the ring
        }
        let durable = self.durable.load(Relaxed);
        let need_sync = self.requested.load(Acquire) > durable
            || (lazy && last_sync.elapsed() >= lazy_interval)
            || stop;
        if need_sync && to > durable {
            if let Err(e) = self.segments.sync() {
                self.fail(format!("syncing the log up to {to}: {e}"));
                return false;
            }
            self.syncs.fetch_add(1, Relaxed);
            *last_sync = Instant::now();
            self.durable.store(to, Release);
            self.raise_durable_floor(to);
            let _g = self.ctl.lock();
            self.waiters_cv.notify_all();
        }
        !(stop && self.buffer.completed_end() == self.durable.load(Acquire))
    }

    /// Anchor rule A3: once a sync crossed into a new segment, record the synced point so
    /// that damage below it is reported as corruption rather than taken for a torn tail.
    fn raise_durable_floor(&self, synced: u64) {
        let seg = self.options.segment_size_bytes;
        let mut a = self.anchor.lock();
        if synced / seg > a.durable_floor.0 / seg {
            let new = Anchor {
                start_lsn: a.start_lsn,
                durable_floor: Lsn(synced),
            };
            match new.write(&*self.storage) {
                Ok(()) => *a = new,
                Err(e) => {
                    drop(a);
                    self.fail(format!("writing the log anchor: {e}"));
                }
            }
        }
    }
}

/// Finds the end of the log: the position after the last record that decodes, scanning from
/// the anchor's start. Past the durable floor a bad record is simply the torn end (writes
/// made after the last sync may reach the disk in any subset, so valid records after a hole
/// prove nothing); the log must however reach the floor, or synced records were damaged.
fn find_end(segments: &SegmentSet, anchor: Anchor) -> Result<Lsn> {
    let mut r = reader::LogReader::new(segments, anchor.start_lsn)?.with_unsynced_window(u64::MAX);
    while r.next_record()?.is_some() {}
    let end = r.position();
    if end < anchor.durable_floor {
        return Err(Error::log_corruption(
            end,
            format!(
                "the log ends at {end}, below {} which was synced: records were damaged",
                anchor.durable_floor
            ),
        ));
    }
    Ok(end)
}

fn flusher_main(log: Weak<LogManager>) {
    let mut last_sync = Instant::now();
    loop {
        let Some(log) = log.upgrade() else { return };
        if !log.flush_round(&mut last_sync) {
            return;
        }
    }
}

impl WalHook for LogManager {
    fn force_log(&self, lsn: Lsn) -> Result<()> {
        if lsn == Lsn::ZERO {
            return Ok(()); // the page was never changed under logging
        }
        self.wait_durable(lsn)
    }

    fn current_lsn(&self) -> Lsn {
        // Acquire load of the reservation counter that appends advance with AcqRel
        // (the ordering contract of `WalHook::current_lsn`).
        self.end_lsn()
    }
}

impl Drop for LogManager {
    fn drop(&mut self) {
        self.stop_flusher();
    }
}

impl std::fmt::Debug for LogManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogManager")
            .field("end", &self.end_lsn())
            .field("durable", &self.durable_lsn())
            .field("failed", &self.failed.get())
            .finish()
    }
}
