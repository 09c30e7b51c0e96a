//! [`LogManager`]: appends, the flusher thread, group commit and the sticky failure.
//!
//! ```text
//!  append ──reserve (1 atomic)──encode──mark done──►  ring  ──flusher: longest done prefix──► segments
//!                                                            write, then fdatasync when a
//!  commit(lsn) ──► wait_durable: request lsn, sleep ◄─────── committer waits (one sync serves all)
//! ```
//!
//! Files: this one holds the manager's state, opening, appends, commit waits, reads and
//! closing; `flusher` the background work (the flusher thread's writes and syncs, which a
//! leader commit also runs, and the zero filler); `open` finding the log's end at open.
//!
//! ## Invariants
//! 1. `durable` only grows and every byte below it was written and synced; it is always a
//!    record boundary. The record at LSN `l` is durable iff `durable > l`.
//! 2. An append waits only when the ring is full (the flusher frees space by writing, not by
//!    syncing), never for a sync (Shore-MT §6.2.2).
//! 3. One sync serves every commit whose record lies below the synced point: committers
//!    publish what they need in `requested` (an atomic max) and sleep; the flusher writes the
//!    whole completed prefix, syncs once, advances `durable` and wakes them all.
//! 4. Sticky failure: after a failed write or sync nothing more is written; every waiter, and
//!    every append or commit that starts after the failure was recorded, gets
//!    `Error::LogFailed` naming the first failure, until the log is reopened (and recovered).
//! 5. No lost wake-ups: waiters check their condition under `ctl`, and the flusher changes
//!    `durable`/`released` before taking `ctl` to notify. An appender and a committer meet in
//!    a store-buffering pattern (slot store, then `requested` load; `requested` max, then
//!    completion check), so both sides have a SeqCst fence between their two accesses.
//! 6. Bounded unsynced log: the flusher syncs whenever a buffer's worth of log has been written
//!    since the last sync, so written-but-unsynced bytes never exceed twice the buffer size;
//!    the bound is recorded in the anchor (rule A4) for the next open.
//! 7. The flusher thread holds only a weak reference while it sleeps, so dropping the last
//!    `Arc<LogManager>` stops it (Drop joins it unless Drop runs on the flusher itself).
//! 8. At open, everything a predecessor wrote up to the end of the log is synced before it is
//!    counted as durable (a crashed or dropped predecessor may have written without syncing).
//!
//! ## Direct I/O (`LogOptions::direct_io`)
//!
//! Buffered, the flusher's `pwrite` copies the ring into the page cache, and on a small
//! machine that copy, not the disk, limits how fast the ring drains (`docs/benchmarks.md`).
//! With direct I/O the flusher writes the ring to the segment files with `O_DIRECT`, which
//! takes whole aligned 4 KiB blocks (segment rule 5); the completed prefix seldom ends on a
//! block boundary, so the partial block at its end is written padded and written again, with
//! more bytes, by the next flush:
//!
//! ```text
//!   LSN     |   block b   |  block b+1  |  block b+2  |
//!                 ^ written (previous flush)   ^ to (completed prefix now)
//!   write 1 [ b ....................... b+2 )             straight from the ring
//!   write 2                             [ b+2 .. to|0000 ] ring bytes copied to a 4 KiB
//!                                                          block, zeros after `to`
//! ```
//!
//! 9. **Whole blocks.** A flush writes `[align_down(written), align_down(to))` from the ring
//!    (aligned slices, buffer rule 5) and, if `to` is not a block boundary, the block holding
//!    `to` from a scratch block: ring bytes `[align_down(to), to)`, then zeros. Ring bytes at
//!    or past `to` are never written: they may belong to records still being copied, or to an
//!    earlier lap of the ring.
//! 10. **The same bytes again.** Every write puts at each LSN below `to` the log's own byte for
//!     that LSN, and zeros at or past `to`, where nothing was written before (flushes only move
//!     forward, and open cuts the files at the end first, format rule L4). So the partial block
//!     that the next flush rewrites gets the same earlier bytes plus new ones. The bytes of that
//!     block stay in the ring for it: the flusher releases ring space only up to
//!     `align_down(written)`, and open reads the partial block below the end back into the ring
//!     (`LogBuffer::with_head`). An inserter still gets room: the oldest unfinished record
//!     ends less than a quarter ring plus one block past the released point.
//! 11. **Torn rewrites and the end of the log.** The disk model (`docs/format.md`) makes a
//!     512-byte sector the unit of atomicity: a torn or failed write leaves each sector either
//!     as it was or as written. In a rewritten block the two agree on every byte below the
//!     previous `written`, so a torn rewrite never damages a byte already written or durable:
//!     the durable prefix stays intact (invariant 1) and the end of the log found at open is
//!     never below the durable point. Beyond that point a crash leaves, sector by sector, the
//!     log's own bytes or zeros — the shapes a torn buffered write leaves too: a short tail,
//!     zeros, a torn record, valid records after a hole inside the unsynced tail. The end-of-log
//!     rule (reader rules 1 and 3, anchor rule A4) therefore needs no change: zeros never
//!     decode as a record, a record is valid only at its own LSN (so no stale byte can pass for
//!     one), and the records written but not synced are bounded as in invariant 6 (the padding
//!     holds none). Nor does the disk see anything new: with buffered writes the kernel also
//!     writes the partial last page again and again, as whole pages.
//! 12. **Fallback.** At open, the anchor file (beside the segments, on the same file system) is
//!     opened with `O_DIRECT`; if the storage refuses (`EINVAL`), the log writes through the
//!     page cache exactly as without the option. [`LogManager::direct_io`] reports the mode.
//!     Reads (open, undo, recovery) always go through the page cache (segment rule 5).
//!
//! ## Who writes
//!
//! 13. **Leader commits.** Writing and syncing need the `flushing` mutex, whose holder alone
//!     stores `written`. A committer that finds it free flushes for itself and every other
//!     waiter (the leader of a group commit, as in MySQL's binary-log group commit); those
//!     that find it taken sleep until the holder's notify and then try again. The flusher
//!     thread takes the same mutex for lazy syncs, ring pressure and whatever a leader left.
//!     On a machine with more busy threads than cores, a flusher thread that must be woken
//!     waits for a core before every sync, a committer that is already running does not
//!     (`Full` TPC-B on 2 cores: 6.0k -> 7.0k commits/s at 1 thread, 3.7k -> 4.1k syncs/s at
//!     8). A failed round stops all writing (invariant 4): `do_work` refuses to run after a
//!     failure.
//!
//! ## Zero-filling ahead
//!
//! 14. **The zero filler.** With `LogOptions::preallocate_bytes > 0` a second thread keeps
//!     the segment files zero-filled and synced up to that many bytes past the written end
//!     (segment rule 6), so that the writes and syncs of commits overwrite allocated blocks
//!     instead of growing the file (`Full` TPC-B, 8 threads on 2 cores: 15.8–16.3k ->
//!     18.7–19.7k commits/s). Whoever writes wakes it when the zeros reach less than half
//!     that far. It never holds `flushing`: segment rule 6 alone keeps its zeros off log
//!     bytes, and a writer waits for it only when it overtakes the zeros, for at most one
//!     1 MiB step. With `Lazy` durability it does not run: no commit waits for a sync
//!     there, and zeros would only double the bytes written (insert benchmark, 1 thread:
//!     about 3 % slower with it). A failed step (say, a full disk) stops zero-filling for
//!     good, is reported in [`LogStats::zero_fill_failure`], and fails no commit: log
//!     writes then grow the files as they would without it. It holds a strong reference
//!     only while deciding and counting, never during a step's I/O, and whoever stops the
//!     log stops zero-filling first (`SegmentSet::stop_zero_fill` waits for a step in
//!     progress), so no step writes after `close`, `stop_threads` or the last drop.
//!
//! Latching: `ctl` (a mutex) is held only to sleep and to notify; never across I/O.
//! `flushing` is held across a round of writing and syncing, and is taken before `ctl`
//! (never while holding it).

use super::anchor::{Anchor, ANCHOR_FILE};
use super::buffer::LogBuffer;
use super::options::{Durability, LogOptions};
use super::reader;
use super::record::{Decoded, LogRecord};
use super::segment::{self, SegmentSet};
use crate::buffer::WalHook;
use crate::error::{Error, Result};
use crate::io::{AlignedBuf, OpenOptions, Storage, IO_ALIGN};
use crate::stats::StripedCounter;
use crate::types::Lsn;
use crossbeam_utils::CachePadded;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

mod flusher;
mod lane;
mod open;

use flusher::{flusher_main, zero_filler_main};
pub use lane::Lane;
pub(crate) use lane::LaneHold;
use lane::Lanes;
use open::{accepts_direct_io, find_end, partial_block_below};

/// The flusher raises the durable floor whenever a sync has gone this fraction of a segment
/// past it (4 MiB of the default 64 MiB), besides at each segment crossing (rule A3), so
/// that the floor trails the durable end closely and the pages an eviction writes are
/// mostly below it (buffer rule 10; log anchor rule A6).
pub(super) const FLOOR_STEPS_PER_SEGMENT: u64 = 16;

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
    /// Bytes written to the segment files: the appended bytes, plus (with direct I/O) the
    /// rewritten parts of partial blocks and the zero padding after the end.
    pub bytes_written: u64,
    /// Bytes of zeros written ahead of the log (invariant 14).
    pub bytes_zero_filled: u64,
    /// Why zero-filling stopped, if a step failed (invariant 14); `None` while it works or
    /// when it is off.
    pub zero_fill_failure: Option<String>,
    /// Chunks reserved by log lanes (`lane` module doc).
    pub lane_chunks: u64,
    /// Bytes of the `Padding` records written over the unused rest of closed chunks
    /// (lane rule L6; counted in `bytes_appended` too).
    pub lane_padding_bytes: u64,
}

/// The write-ahead log of one database (DESIGN.md §3.5; module doc for its invariants).
pub struct LogManager {
    storage: Arc<dyn Storage>,
    /// Shared with the zero filler, which must not hold the manager during a step.
    segments: Arc<SegmentSet>,
    buffer: LogBuffer,
    options: LogOptions,
    durable: CachePadded<AtomicU64>,
    /// End of what has been written to the segment files (stored only by the holder of
    /// `flushing`, with Release after the write returned, so that a reader that loads it
    /// with Acquire finds those bytes in the files: `read_record`).
    written: AtomicU64,
    /// The right to write and sync (invariant 13): held by the flusher thread or by a
    /// committer that flushes for itself; it keeps the scratch block of direct writes.
    flushing: Mutex<AlignedBuf>,
    /// When the last sync finished, in nanoseconds since `opened`.
    last_sync_ns: AtomicU64,
    opened: Instant,
    requested: CachePadded<AtomicU64>,
    failed: OnceLock<String>,
    closed: AtomicBool,
    sig: Arc<Signals>,
    anchor: Mutex<Anchor>,
    /// `anchor.durable_floor`, readable without the mutex ([`WalHook::durable_floor`], asked
    /// for each dirty eviction candidate; the first checks of rules A3 and A6). Stored with
    /// Release under the mutex after the anchor file holding it was written and synced
    /// (`set_anchor`), loaded with Acquire. It only rises and never leads the anchor on
    /// disk, so a stale value is low: a page it says is covered is covered.
    floor: AtomicU64,
    appends: StripedCounter,
    /// The end of the log at open: the bytes appended since are the reserved end less this
    /// (one reservation per record, so no counter is needed).
    opened_end: u64,
    flushes: AtomicU64,
    syncs: AtomicU64,
    bytes_written: AtomicU64,
    bytes_zero_filled: AtomicU64,
    zero_fill_failure: OnceLock<String>,
    flusher: Mutex<Option<JoinHandle<()>>>,
    zero_filler: Mutex<Option<JoinHandle<()>>>,
    /// The open chunks of log lanes (`lane` module doc).
    lanes: Arc<Lanes>,
    lane_chunks: StripedCounter,
    lane_padding_bytes: StripedCounter,
}

/// The mutex and condition variables the flusher sleeps on; shared with the flusher thread
/// so that it can sleep without holding the manager alive (invariant 7).
#[derive(Default)]
struct Signals {
    ctl: Mutex<()>,
    flusher_cv: Condvar,
    waiters_cv: Condvar,
    zero_cv: Condvar,
}

/// What the flusher should do next.
enum Work {
    Run,
    Sleep,
    Exit,
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
        let mut segments = SegmentSet::open(storage.clone(), options.segment_size_bytes)?;
        let old = match Anchor::read(&*storage)? {
            Some(a) => a,
            // Segments are removed only behind a complete anchor (rule A2): without one,
            // an oldest segment past the first LSN means the anchor was lost.
            None if segments.first_lsn() > FIRST_LSN => {
                return Err(Error::BadFile {
                    path: ANCHOR_FILE.to_string(),
                    reason: format!(
                        "missing or empty, yet the log's oldest segment starts at {}: \
                         segments are removed only after it was written, so it was lost",
                        segments.first_lsn()
                    ),
                });
            }
            None => Anchor {
                start_lsn: FIRST_LSN,
                durable_floor: FIRST_LSN,
                unsynced_window_bytes: 0,
            },
        };
        let end = find_end(&segments, old)?;
        // Reader rule 4: nothing past the end may survive to be read as part of the new log;
        // invariant 8: what lies before it is made durable before it is counted as such.
        segments.truncate_from(end)?;
        segments.sync_all()?;
        let anchor = Anchor {
            start_lsn: old.start_lsn,
            durable_floor: end,
            unsynced_window_bytes: 2 * options.buffer_size_bytes as u64,
        };
        anchor.write(&*storage)?;
        // Rule 12: direct I/O where the storage accepts it; rule 10: the partial block below
        // the end goes back into the ring, for the first flush to rewrite.
        let direct = options.direct_io && accepts_direct_io(&*storage)?;
        segments.set_direct_writes(direct);
        let head = if direct {
            partial_block_below(&segments, end)?
        } else {
            Vec::new()
        };
        let log = Arc::new(LogManager {
            storage,
            segments: Arc::new(segments),
            buffer: LogBuffer::with_head(options.buffer_size_bytes, end.0, &head)?,
            options: options.clone(),
            durable: CachePadded::new(AtomicU64::new(end.0)),
            written: AtomicU64::new(end.0),
            // The partial last block of a direct write (rule 9).
            flushing: Mutex::new(AlignedBuf::new(IO_ALIGN)),
            last_sync_ns: AtomicU64::new(0),
            opened: Instant::now(),
            requested: CachePadded::new(AtomicU64::new(0)),
            failed: OnceLock::new(),
            closed: AtomicBool::new(false),
            sig: Arc::default(),
            floor: AtomicU64::new(anchor.durable_floor.0),
            anchor: Mutex::new(anchor),
            appends: StripedCounter::default(),
            opened_end: end.0,
            flushes: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            bytes_written: AtomicU64::new(0),
            bytes_zero_filled: AtomicU64::new(0),
            zero_fill_failure: OnceLock::new(),
            flusher: Mutex::new(None),
            zero_filler: Mutex::new(None),
            lanes: Arc::default(),
            lane_chunks: StripedCounter::default(),
            lane_padding_bytes: StripedCounter::default(),
        });
        *log.flusher.lock() = Some(log.spawn("shoal-log-flusher", flusher_main)?);
        if log.zero_fill_lead() > 0 {
            *log.zero_filler.lock() = Some(log.spawn("shoal-log-zero", zero_filler_main)?);
        } else {
            log.segments.stop_zero_fill(); // segment rule 6: writes skip the zero-fill mutex
        }
        Ok(log)
    }

    /// Starts one of the log's threads, `main(weak manager, signals)` (invariant 7).
    ///
    /// # Errors
    /// [`Error::Io`] if the thread cannot be spawned.
    fn spawn(
        self: &Arc<Self>,
        name: &'static str,
        main: fn(Weak<LogManager>, Arc<Signals>),
    ) -> Result<JoinHandle<()>> {
        let (weak, sig) = (Arc::downgrade(self), self.sig.clone());
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || main(weak, sig))
            .map_err(|e| Error::from_io("spawn thread", name, e))
    }

    /// `Err(LogFailed)` naming the first failure, if the log has failed (invariant 4).
    fn failure(&self) -> Result<()> {
        match self.failed.get() {
            Some(f) => Err(Error::LogFailed {
                first_failure: f.clone(),
            }),
            None => Ok(()),
        }
    }

    /// As [`LogManager::failure`], and also refuses a closed log.
    fn check_usable(&self) -> Result<()> {
        self.failure()?;
        if self.closed.load(Acquire) {
            return Err(Error::LogFailed {
                first_failure: "the log was closed".into(),
            });
        }
        Ok(())
    }

    fn fail(&self, what: String) {
        let _ = self.failed.set(what);
        let _g = self.sig.ctl.lock();
        self.sig.waiters_cv.notify_all();
        self.sig.flusher_cv.notify_all();
    }

    fn wake_flusher(&self) {
        let _g = self.sig.ctl.lock();
        self.sig.flusher_cv.notify_one();
    }

    /// Appends `record` and returns its LSN. Reserves space with one atomic operation and
    /// encodes the record straight into its ring bytes outside any lock; waits only if the
    /// insert buffer is full (invariant 2).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the record is larger than a quarter of the buffer;
    /// [`Error::LogFailed`] after a log I/O failure or `close`.
    pub fn append(&self, record: &LogRecord) -> Result<Lsn> {
        self.check_append(record)?;
        self.append_checked(record)
    }

    /// [`LogManager::append`] for a record that [`LogManager::check_append`] has already
    /// passed (a logged change checks before it changes its page, transaction rule 2): the
    /// record's size and roles are not checked again, only that the log is still usable.
    ///
    /// # Errors
    /// [`Error::LogFailed`] after a log I/O failure or `close`.
    pub(crate) fn append_checked(&self, record: &LogRecord) -> Result<Lsn> {
        debug_assert!(
            record.validate().is_ok(),
            "append_checked of an unchecked record"
        );
        self.check_usable()?;
        // Nothing may fail or panic between `reserve` and `write_with`: a reserved range that is
        // never completed stops the completed prefix for good.
        let len = record.encoded_len() as u64;
        let r = self.buffer.reserve(len);
        if !self.buffer.has_room(r) {
            self.wait_for_room(r)?;
        }
        self.buffer
            .write_with(r, |buf| record.encode_validated(Lsn(r.start), buf));
        self.after_write(r);
        Ok(Lsn(r.start))
    }

    /// What every append does once its record is written and completed: wakes the flusher
    /// if the buffer is filling or a committer waits on it, and counts it.
    #[inline(always)]
    fn after_write(&self, r: super::buffer::Reservation) {
        fence(SeqCst); // invariant 5: slot store before the `requested` load
        let quarter = self.buffer.capacity() / 4;
        if r.start / quarter != r.end / quarter || self.requested.load(Relaxed) > r.start {
            self.wake_flusher(); // the buffer is filling, or a committer waits on us
        }
        self.appends.incr();
    }

    /// Checks everything [`LogManager::append`] checks before it reserves space: the log is
    /// usable and the record valid and small enough. A caller that must not change a page
    /// unless its record can be appended checks first (transaction rule 2).
    ///
    /// # Errors
    /// As [`LogManager::append`].
    pub fn check_append(&self, record: &LogRecord) -> Result<()> {
        self.check_usable()?;
        record.validate()?;
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
        Ok(())
    }

    #[cold]
    fn wait_for_room(&self, r: super::buffer::Reservation) -> Result<()> {
        // Lane rule L6: a chunk's unclaimed part may be what holds the ring's space.
        self.close_chunks_below(u64::MAX);
        let mut g = self.sig.ctl.lock();
        self.sig.flusher_cv.notify_one();
        while !self.buffer.has_room(r) {
            self.failure()?;
            self.sig.waiters_cv.wait(&mut g);
        }
        Ok(())
    }

    /// Waits until every record appended before the call is durable (a group-commit wait
    /// for the whole log so far; returns at once if nothing is pending). For callers that
    /// must order an unlogged action after their records, such as freeing a page a
    /// committed structure change made unreachable (space invariant 5).
    ///
    /// # Errors
    /// As [`LogManager::wait_durable`].
    pub fn wait_all_durable(&self) -> Result<()> {
        let end = self.end_lsn();
        if self.durable_lsn() >= end {
            return Ok(());
        }
        self.wait_durable(Lsn(end.0 - 1))
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
        if lsn.0 >= self.buffer.reserved_end() {
            return Err(Error::invalid(
                "lsn",
                format!(
                    "{lsn} is at or beyond the end of the log ({}): no record there",
                    self.buffer.reserved_end()
                ),
            ));
        }
        self.failure()?;
        self.close_chunks_below(need); // lane rule L6
        self.requested.fetch_max(need, AcqRel);
        fence(SeqCst); // invariant 5: `requested` before the flusher's completion check
        loop {
            // Invariant 13: if nobody is writing, flush here (this thread is running already;
            // waking the flusher thread would wait for a core on a busy machine). A failed
            // round is reported by `failure` below.
            if let Some(mut block) = self.flushing.try_lock() {
                if self.durable.load(Acquire) < need {
                    self.do_work(&mut block);
                }
            }
            let mut g = self.sig.ctl.lock();
            loop {
                if self.durable.load(Acquire) >= need {
                    return Ok(());
                }
                self.failure()?;
                if self.closed.load(Acquire) {
                    // `close` made everything appended before it durable; this record came
                    // later.
                    return Err(Error::LogFailed {
                        first_failure: "the log was closed".into(),
                    });
                }
                if !self.flushing.is_locked() {
                    break; // nobody is writing: flush ourselves
                }
                // A flush is running (it notifies under `ctl` when it ends); should it end
                // without syncing our record, the flusher thread is asked to go on.
                self.sig.flusher_cv.notify_one();
                self.sig.waiters_cv.wait(&mut g);
            }
        }
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

    /// When commits return: the durability the log was opened with.
    pub fn durability(&self) -> Durability {
        self.options.durability
    }

    /// LSN just past the last record appended so far (the next record's LSN).
    pub fn end_lsn(&self) -> Lsn {
        Lsn(self.buffer.reserved_end())
    }

    /// Everything below this LSN is durable.
    pub fn durable_lsn(&self) -> Lsn {
        Lsn(self.durable.load(Acquire))
    }

    /// Reads the record at `lsn` (for undo along a transaction's previous-LSN chain, and
    /// for a page's full image), wherever it is now and without waiting for a sync:
    /// 1. from the insert buffer's ring while it is not yet written
    ///    (`LogBuffer::copy_record`, buffer invariant 6);
    /// 2. else from the files, if it lies below the written end (written is enough to read
    ///    it back; synced is not needed). With direct I/O a record can straddle the released
    ///    end, which stays at a block boundary: its head is no longer in the ring, but all
    ///    of it is in the files;
    /// 3. else — `lsn` is not a record's start, or the files disagree — after making the
    ///    log durable up to `lsn`, from the files, which then give the answer or the typed
    ///    error.
    ///
    /// Before, every read took step 3, so a rollback under `Lazy` durability forced a write
    /// and a sync of the log: TPC-C's 1 % of New-Order rollbacks took 4.5 % of its time.
    ///
    /// # Errors
    /// [`Error::LogFailed`] (step 3); a corruption error if no valid record starts at `lsn`;
    /// I/O errors.
    pub fn read_record(&self, lsn: Lsn) -> Result<LogRecord> {
        if let Some(bytes) = self.buffer.copy_record(lsn.0) {
            if let Decoded::Record(rec, _) = LogRecord::decode(&bytes, lsn) {
                return Ok(rec);
            }
        }
        let written = self.written.load(Acquire);
        if lsn.0 < written {
            if let Ok((rec, len)) = reader::read_record_sized(&self.segments, lsn) {
                if lsn.0 + len as u64 <= written {
                    return Ok(rec);
                }
            }
        }
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
                return Ok(out);
            }
            out.push((lsn, rec));
        }
        if r.position() < durable {
            return Err(Error::log_corruption(
                r.position(),
                format!("the log's records end before its durable end {durable}"),
            ));
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
        // A start that is not a record boundary would make the log unreadable at open.
        if start < self.durable_lsn() {
            reader::read_record(&self.segments, start)?;
        }
        {
            let mut a = self.anchor.lock();
            if start > a.start_lsn {
                // Anchor rule A5: the floor rises to the durable end, not just to `start`.
                // With the floor at `start`, a log whose record at `start` was lost (its
                // segment file removed, or the record damaged) ended at `start`, reached the
                // floor and opened empty: every commit since the checkpoint silently gone.
                let new = Anchor {
                    start_lsn: start,
                    ..*a
                }
                .with_floor(self.durable_lsn());
                new.write(&*self.storage)?; // anchor rule A2: before the removal
                self.set_anchor(&mut a, new);
            }
        }
        self.segments.remove_before(start)
    }

    /// The first LSN of the log kept on disk: where restart's analysis begins.
    pub fn start_lsn(&self) -> Lsn {
        self.anchor.lock().start_lsn
    }

    /// A forward reader of the log files from `from` (a record boundary). It reads only what
    /// has been written to the files; records still in the insert buffer are not seen, and
    /// callers bound their scan by an end they know to be durable.
    ///
    /// # Errors
    /// As [`reader::LogReader::new`].
    pub fn reader(&self, from: Lsn) -> Result<reader::LogReader<'_>> {
        Ok(reader::LogReader::new(&self.segments, from)?.with_unsynced_window(u64::MAX))
    }

    /// Counters since open.
    pub fn stats(&self) -> LogStats {
        LogStats {
            appends: self.appends.get(),
            bytes_appended: self.buffer.reserved_end() - self.opened_end,
            flushes: self.flushes.load(Relaxed),
            syncs: self.syncs.load(Relaxed),
            bytes_written: self.bytes_written.load(Relaxed),
            bytes_zero_filled: self.bytes_zero_filled.load(Relaxed),
            zero_fill_failure: self.zero_fill_failure.get().cloned(),
            lane_chunks: self.lane_chunks.get(),
            lane_padding_bytes: self.lane_padding_bytes.get(),
        }
    }

    /// Whether the log is written with `O_DIRECT` (rules 9–12): `LogOptions::direct_io` was
    /// set and the storage accepted it at open.
    pub fn direct_io(&self) -> bool {
        self.segments.direct_writes()
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
        self.stop_threads();
        r.and_then(|()| self.failure())
    }

    /// Stops the log's threads now, even while other references to the manager exist:
    /// zero-filling stops first (waiting for a step in progress); the flusher writes and
    /// syncs everything appended (as at the last drop); then both threads exit and are
    /// joined. Appends and commits fail afterwards with [`Error::LogFailed`] ("closed").
    /// The engine calls it when it is dropped, so that no thread of this log still writes
    /// to its files once the drop returns — even if the flusher held the last reference at
    /// that moment and would otherwise have run `Drop` (and its writes) later, perhaps after
    /// the directory was opened again. Run by one of the log's own threads (its reference
    /// was the last; it may hold `ctl`), it joins neither and takes no lock they need: both
    /// find the manager gone at their next upgrade and exit.
    pub fn stop_threads(&self) {
        self.closed.store(true, Release);
        // Whichever thread this is, no zero-fill step writes after this line.
        self.segments.stop_zero_fill();
        let handles = [self.flusher.lock().take(), self.zero_filler.lock().take()];
        let me = std::thread::current().id();
        if handles.iter().flatten().any(|h| h.thread().id() == me) {
            return;
        }
        // Lane rule L6: the flusher's last rounds then write past every chunk (taken here,
        // off the log's threads: closing appends padding, which may take `ctl`).
        self.close_chunks_below(u64::MAX);
        {
            let _g = self.sig.ctl.lock();
            self.sig.flusher_cv.notify_all();
            self.sig.zero_cv.notify_all();
        }
        for h in handles.into_iter().flatten() {
            let _ = h.join();
        }
    }
}

/// `lsn` rounded down to a 4 KiB block boundary.
fn align_down(lsn: u64) -> u64 {
    lsn & !(IO_ALIGN as u64 - 1)
}

impl WalHook for LogManager {
    fn force_log(&self, lsn: Lsn) -> Result<()> {
        if lsn == Lsn::ZERO {
            return Ok(()); // the page was never changed under logging
        }
        self.wait_durable(lsn)?;
        self.floor_above(lsn) // anchor rule A6
    }

    fn durable_floor(&self) -> Lsn {
        Lsn(self.floor.load(Acquire))
    }

    fn current_lsn(&self) -> Lsn {
        // Acquire load of the reservation counter that appends advance with AcqRel
        // (the ordering contract of `WalHook::current_lsn`).
        self.end_lsn()
    }
}

impl Drop for LogManager {
    fn drop(&mut self) {
        self.stop_threads();
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
