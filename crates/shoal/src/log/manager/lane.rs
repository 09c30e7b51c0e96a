//! Log lanes: a write-heavy transaction reserves log space a chunk at a time and fills it
//! alone, so that two cores appending at once stop trading the reservation counter's and
//! the ring's cache lines record by record (`docs/benchmarks.md`, engine updates 23 and 26:
//! at two insert threads every extra microsecond of a worker was the shared append).
//!
//! **On by default for bulk writers** (`LogOptions::lane_after_records`, 256 page changes):
//! the concurrent B-tree crash matrix with lanes on failed in about one run in three until
//! transaction rule 13 (a record that carries other pages' content, such as a merge's,
//! goes above their LSNs), and has passed 60 runs since; the whole test suite passes with
//! lanes on from every transaction's second change (the `lanes-everywhere` feature, run in
//! CI; `docs/benchmarks.md`, engine update 27).
//!
//! ```text
//!   LSN:  ... global ... | chunk of T1: [T1 records | unclaimed] | global | chunk of T2: [..
//!                          start        claim ─┘           end
//!   close: claim |= CLOSED, then a Padding record fills [claim, end)
//! ```
//!
//! A chunk is an ordinary reservation of the log buffer (buffer invariant 1) that its
//! owner hands out to its own records with a compare-and-swap on a word no other core
//! writes. Records in it are written, completed (slot store) and flushed exactly as other
//! records; the flusher's completed prefix simply stops at the chunk's unclaimed part until
//! the chunk is closed. LSNs stay byte offsets in one log; what changes is that a record's
//! LSN may be lower than that of a record appended earlier by another thread. The rules
//! below keep everything ARIES and the layers above rely on:
//!
//! - **L1, order on a page.** A record for a page gets an LSN above the page's LSN
//!   ([`LogManager::append_in_lane`]'s `after`, read under the page's X latch): a chunk
//!   whose next LSN is not above it is closed and a new one reserved, which lies past every
//!   reservation so far. Redo, which replays in LSN order, therefore replays each page's
//!   changes in the order they were made.
//! - **L2, order in a transaction.** `after` is also at least the transaction's last LSN,
//!   so its records ascend whichever way each was appended (a global append lies past
//!   every reservation), as analysis's chain check and savepoints need.
//! - **L3, commits stay in order.** A user transaction's commit, abort and end records
//!   never go in a chunk. A transaction that read another's change, released early
//!   (transaction rule 9), commits after that commit record was appended, and so,
//!   reserving globally, above it: making its own commit durable makes that one durable
//!   too. A system transaction's commit may (transaction rule 12: it raises the LSNs of
//!   the pages it changed to its own, so whatever depends on it lies above it by rule L1).
//! - **L4, lower bounds.** Where a layer above needs an LSN at or below every record a
//!   thread will append — a page's recovery LSN when it is dirtied, a transaction's first
//!   LSN when it registers — it takes [`LogManager::lane_bound`] of the thread's lane (its
//!   next claim), not the log's end, which may lie above the lane's next record. Where it
//!   needs one for every thread (Commit_LSN), [`LogManager::lanes_low_water`].
//! - **L5, checkpoints.** A checkpoint's redo LSN is at most the lanes' low water, read
//!   after its begin record and before it scans the pool: a record below it was claimed,
//!   and its page marked dirty, before that read, so the scan sees the page. Chunks are
//!   reserved and registered under the registry mutex, which the low water also takes, so
//!   no chunk reserved before the begin record escapes the read.
//! - **L6, progress.** A chunk never stops the log for long: whoever waits for the log
//!   to reach past a chunk's claim (a commit, a page write, an append waiting for room, a
//!   close) closes it; the flusher closes a chunk whose claim did not move between two of
//!   its rounds (an idle or exited owner). A closed chunk's rest is a `Padding` record,
//!   which recovery skips; the owner takes a new chunk at its next record.
//! - **L7, the claim word.** `claim` holds the next unclaimed LSN, [`NOT_READY`] until the
//!   ring has room for the whole chunk, and [`CLOSED`] once closed. Only the owner adds to
//!   it (compare-and-swap, so it never claims in a closed chunk); anyone sets `CLOSED`
//!   (`fetch_or`), and whoever turns it on writes the padding — the owner itself if the
//!   chunk was not ready yet. Both are read-modify-writes of one word, so the owner's
//!   records and the padding never overlap, and what precedes a claim (its page marked
//!   dirty) happens before any later reader of the word (AcqRel). The unclaimed rest of a
//!   chunk is always 0 or at least [`MIN_RECORD_BYTES`], so a padding record fits it.
//!
//! **Who uses a lane.** Each thread has one lane per log, kept in thread-local storage so
//! that it outlives transactions: the transactions of a bulk loader follow each other in
//! one chunk, and the system transactions of the splits it causes append in it too (so a
//! split does not close the chunk by rule L1). A lane turns on when a transaction of the
//! thread logs more than [`LogOptions::lane_after_records`] page changes — short
//! transactions (TPC-B, TPC-C) never turn it on and pay nothing — and off again when a
//! user transaction of the thread commits having logged no more than that while no bulk
//! transaction that turned it on is open (the thread no longer writes in bulk: a loader's
//! later short transactions would otherwise pad a chunk at every full-page image that does
//! not fit the chunk's rest, 10 % of the log of `shoal bench recovery`'s updates after its
//! load; [`LogManager::hold_lane`]), or after [`WASTE_LIMIT`] chunks in a
//! row were closed with more than half unused (the thread's pages are shared with other
//! writers, and padding would outweigh what lanes save).
//!
//! Latching: the registry mutex is held to reserve and register a chunk, to remove one,
//! and by closers while they walk it (writing padding under it); never across waiting for
//! room or I/O.

use super::*;
use crate::log::buffer::{Reservation, MIN_RECORD_BYTES};
use crate::log::record::{encoded_len_for, RecordKind, RECORD_HEADER_BYTES};
use crate::types::TxnId;
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering::Relaxed};

/// Set in a chunk's claim word once it is closed (rule L7).
const CLOSED: u64 = 1 << 63;
/// Set in a chunk's claim word until the ring has room for the whole chunk (rule L7).
const NOT_READY: u64 = 1 << 62;
const POS: u64 = NOT_READY - 1;

/// A lane's first chunk, in bytes; each chunk it fills doubles the next, up to
/// [`CHUNK_MAX_BYTES`] (`Lazy`) or [`CHUNK_MAX_FULL_BYTES`] (`Full`); one closed early keeps
/// the size.
const CHUNK_FIRST_BYTES: u64 = 4 << 10;
/// The largest chunk under `Durability::Lazy`, in bytes (or a quarter of the ring, if
/// less): large enough that the reservation counter is touched once per hundred or so
/// records, small enough that a chunk closed early pads little beside a bulk writer's log.
const CHUNK_MAX_BYTES: u64 = 32 << 10;
/// Chunks in a row closed with more than half unused after which a lane turns off.
const WASTE_LIMIT: u8 = 4;
/// The largest chunk under `Durability::Full`, in bytes: there every commit closes the
/// other lanes' chunks below its record (rule L3 and the wait for durability), about half
/// a chunk of padding each; twice the default page, so that a full-page image fits.
const CHUNK_MAX_FULL_BYTES: u64 = 16 << 10;

/// A chunk of the log reserved by one lane (module doc).
pub(crate) struct Chunk {
    start: u64,
    end: u64,
    /// Rule L7.
    claim: AtomicU64,
    /// The claim word the flusher saw at its last round (rule L6); the flusher's alone.
    seen: AtomicU64,
}

impl Chunk {
    fn is_closed(&self) -> bool {
        self.claim.load(Acquire) & CLOSED != 0
    }
}

/// The open chunks of a log (rule L5).
#[derive(Default)]
pub(crate) struct Lanes {
    open: Mutex<Vec<Arc<Chunk>>>,
    /// `open.len()`, read without the mutex so that a log without lanes pays one load.
    count: AtomicUsize,
}

/// One thread's lane of one log (module doc, "Who uses a lane").
#[derive(Default)]
pub struct Lane {
    chunk: Option<Arc<Chunk>>,
    /// Size of the next chunk, bytes; 0 means [`CHUNK_FIRST_BYTES`].
    next: u64,
    active: bool,
    /// Chunks in a row closed with more than half unused.
    wasted: u8,
    /// Bulk transactions that turned this lane on and have not ended ([`LaneHold`]):
    /// while any is open, a short transaction's commit leaves the lane on
    /// ([`LogManager::lane_off`]). Counted from whatever thread the transaction ends on.
    bulk_open: Arc<AtomicU32>,
}

/// A bulk transaction's claim on the lane it turned on ([`LogManager::hold_lane`]);
/// dropped when the transaction ends. Only a hint for [`LogManager::lane_off`]: lanes are
/// correct whether on or off, so the count needs no ordering with anything (relaxed).
pub(crate) struct LaneHold(Arc<AtomicU32>);

impl Drop for LaneHold {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

/// A thread's lanes: one per log it appended to in lane mode. A dead log's entry is dropped
/// when the thread next adds one; a chunk of an exited thread is closed by the flusher
/// (rule L6) and then dropped from the registry.
struct ThreadLane {
    log: std::sync::Weak<Lanes>,
    lane: Lane,
}

thread_local! {
    static THREAD_LANES: RefCell<Vec<ThreadLane>> = const { RefCell::new(Vec::new()) };
    /// False while no lane of this thread is on (true from a lane's turning on until the
    /// next [`LogManager::lane_off`] finds none on; a lane that turned itself off at the
    /// waste limit leaves it true, which costs only the slower lookup). While false,
    /// [`LogManager::with_lane`] without `activate` is one thread-local load (TPC-B's
    /// short transactions paid about 45 instructions a change for the lookup in
    /// `THREAD_LANES`).
    static ANY_LANE: Cell<bool> = const { Cell::new(false) };
}

impl LogManager {
    /// [`LogOptions::lane_after_records`] of this log (0: lanes are off).
    pub fn lane_after_records(&self) -> u32 {
        self.options.lane_after_records
    }

    /// Runs `f` with this thread's lane of this log if it is on, turning it on first if
    /// `activate`; with `None` otherwise (and when called again from inside `f`).
    #[inline]
    pub(crate) fn with_lane<R>(&self, activate: bool, f: impl FnOnce(Option<&mut Lane>) -> R) -> R {
        if !activate && !ANY_LANE.with(Cell::get) {
            return f(None);
        }
        self.with_thread_lane(activate, f)
    }

    fn with_thread_lane<R>(&self, activate: bool, f: impl FnOnce(Option<&mut Lane>) -> R) -> R {
        THREAD_LANES.with(|t| {
            let Ok(mut t) = t.try_borrow_mut() else {
                return f(None);
            };
            let me = Arc::as_ptr(&self.lanes);
            let i = match t.iter().position(|e| std::ptr::eq(e.log.as_ptr(), me)) {
                Some(i) => i,
                None if activate => {
                    t.retain(|e| e.log.strong_count() > 0);
                    t.push(ThreadLane {
                        log: Arc::downgrade(&self.lanes),
                        lane: Lane::default(),
                    });
                    t.len() - 1
                }
                None => return f(None),
            };
            let lane = &mut t[i].lane;
            if activate && !lane.active {
                lane.active = true;
                lane.wasted = 0;
                ANY_LANE.with(|a| a.set(true));
            }
            if lane.active {
                f(Some(lane))
            } else {
                f(None)
            }
        })
    }

    /// Counts the calling transaction as a bulk writer of this thread's lane of this log,
    /// if that lane is on: until the returned hold is dropped (the transaction ends), a
    /// short transaction's commit on this thread leaves the lane on. `None` if the lane is
    /// off.
    pub(crate) fn hold_lane(&self) -> Option<LaneHold> {
        if !ANY_LANE.with(Cell::get) {
            return None;
        }
        THREAD_LANES.with(|t| {
            let t = t.try_borrow().ok()?;
            let me = Arc::as_ptr(&self.lanes);
            let e = t.iter().find(|e| std::ptr::eq(e.log.as_ptr(), me))?;
            if !e.lane.active {
                return None;
            }
            e.lane.bulk_open.fetch_add(1, Relaxed);
            Some(LaneHold(Arc::clone(&e.lane.bulk_open)))
        })
    }

    /// Turns this thread's lane of this log off and closes its chunk: called when a user
    /// transaction commits having logged no more than [`LogOptions::lane_after_records`]
    /// page changes, which shows that the thread no longer writes in bulk (module doc, "Who
    /// uses a lane"), unless a bulk transaction that turned it on is still open
    /// ([`LogManager::hold_lane`]). One thread-local load when the thread has no lane on.
    pub(crate) fn lane_off(&self) {
        if !ANY_LANE.with(Cell::get) {
            return;
        }
        THREAD_LANES.with(|t| {
            let Ok(mut t) = t.try_borrow_mut() else {
                return;
            };
            let me = Arc::as_ptr(&self.lanes);
            if let Some(e) = t.iter_mut().find(|e| std::ptr::eq(e.log.as_ptr(), me)) {
                if e.lane.active && e.lane.bulk_open.load(Relaxed) == 0 {
                    self.end_chunk(&mut e.lane);
                    e.lane.active = false;
                    e.lane.next = 0;
                    e.lane.wasted = 0;
                }
            }
            // Back to the one-load fast path once no lane of this thread is on.
            let any = t.iter().any(|e| e.lane.active);
            ANY_LANE.with(|a| a.set(any));
        })
    }

    /// A lower bound of the LSN of every record this thread appends from now on (rule L4):
    /// its lane's next claim if it holds an open chunk, else the end of the reserved log.
    pub(crate) fn thread_bound(&self) -> Lsn {
        if self.lanes.count.load(Acquire) == 0 {
            return self.end_lsn();
        }
        THREAD_LANES.with(|t| {
            let me = Arc::as_ptr(&self.lanes);
            match t.try_borrow() {
                Ok(t) => t
                    .iter()
                    .find(|e| std::ptr::eq(e.log.as_ptr(), me))
                    .map_or_else(|| self.end_lsn(), |e| self.lane_bound(&e.lane)),
                // Only `with_lane`'s `f` runs with it borrowed: the lane is then passed
                // down, and its users take `lane_bound` of it.
                Err(_) => self.lanes_low_water(),
            }
        })
    }

    /// Appends `record` in `lane` with an LSN above `after` (at least the page's LSN for a
    /// page record, rule L1, and the transaction's last LSN, rule L2; always an LSN below
    /// the log's end, or [`Lsn::ZERO`]) and returns it. Claims
    /// the record's bytes in the lane's chunk, or closes the chunk and reserves a new one
    /// when the record does not fit, the chunk was closed, or its next LSN is not above
    /// `after`. A record too large for a chunk is appended globally.
    ///
    /// A lane not used for a while (its owner idle, or dropped) is closed by the flusher
    /// within two of its rounds (rule L6), so a caller may drop a [`Lane`] at any time.
    ///
    /// # Errors
    /// As [`LogManager::append`]: [`Error::InvalidArgument`] for a record larger than a
    /// quarter of the buffer or breaking the record rules, or a `Commit`, `Abort` or `End`
    /// record (rule L3); [`Error::LogFailed`] after a log I/O failure or `close`.
    pub fn append_in_lane(&self, lane: &mut Lane, record: &LogRecord, after: Lsn) -> Result<Lsn> {
        self.check_append(record)?;
        if matches!(
            record.kind,
            RecordKind::Commit | RecordKind::Abort | RecordKind::End
        ) {
            return Err(Error::invalid(
                "record",
                "commit, abort and end records are appended globally (lane rule L3)",
            ));
        }
        self.append_in_lane_checked(lane, record, after)
    }

    /// [`LogManager::append_in_lane`] for a record [`LogManager::check_append`] passed.
    ///
    /// # Errors
    /// [`Error::LogFailed`] after a log I/O failure or `close`.
    pub(crate) fn append_in_lane_checked(
        &self,
        lane: &mut Lane,
        record: &LogRecord,
        after: Lsn,
    ) -> Result<Lsn> {
        // A system transaction's commit may come here (transaction rule 12); a user's may not.
        debug_assert!(!matches!(record.kind, RecordKind::Abort | RecordKind::End));
        self.check_usable()?;
        let len = record.encoded_len() as u64;
        let max = self.chunk_max();
        if len + MIN_RECORD_BYTES > max {
            // Globally, above every reservation; the chunk is closed so that the lane's
            // next records lie above this one too (a page image, then the change after it).
            self.end_chunk(lane);
            return self.append_checked(record);
        }
        loop {
            if let Some(c) = &lane.chunk {
                let v = c.claim.load(Relaxed); // only the owner adds to it
                let pos = v & POS;
                let rest = c.end.saturating_sub(pos + len);
                if v & (CLOSED | NOT_READY) == 0
                    && pos > after.0
                    && pos + len <= c.end
                    && (rest == 0 || rest >= MIN_RECORD_BYTES)
                    // Rule L7: fails only if a closer set CLOSED meanwhile.
                    && c
                        .claim
                        .compare_exchange(v, v + len, AcqRel, Relaxed)
                        .is_ok()
                {
                    let r = Reservation {
                        start: pos,
                        end: pos + len,
                    };
                    self.buffer.write_with_limit(
                        r,
                        |buf| record.encode_validated(Lsn(r.start), buf),
                        c.end,
                    );
                    self.after_write(r);
                    return Ok(Lsn(r.start));
                }
                let filled = v & CLOSED == 0 && pos > after.0;
                let unused = c.end - pos.min(c.end);
                if filled {
                    lane.next = (lane.next.max(CHUNK_FIRST_BYTES) * 2).min(max);
                    lane.wasted = 0;
                } else if unused * 2 > c.end - c.start {
                    lane.wasted = lane.wasted.saturating_add(1);
                }
                self.end_chunk(lane);
                if lane.wasted >= WASTE_LIMIT {
                    lane.active = false;
                    lane.next = 0;
                    lane.wasted = 0;
                    return self.append_checked(record);
                }
            }
            self.check_usable()?;
            let size = lane.next.max(CHUNK_FIRST_BYTES).min(max).max(len);
            lane.chunk = self.open_chunk(size)?;
            if lane.chunk.is_none() {
                // Closed before it was ready (the ring was full): append globally, which
                // satisfies `after` too.
                return self.append_checked(record);
            }
        }
    }

    /// The largest chunk for this log's ring, in bytes.
    fn chunk_max(&self) -> u64 {
        let max = match self.options.durability {
            Durability::Full => CHUNK_MAX_FULL_BYTES,
            Durability::Lazy => CHUNK_MAX_BYTES,
        };
        max.min(self.buffer.capacity() / 4)
    }

    /// Reserves a chunk of `size` bytes and registers it (rule L5), then waits for ring room
    /// and makes it ready (rule L7). `None` if a closer closed it before it was ready (it is
    /// then padded here and unregistered).
    fn open_chunk(&self, size: u64) -> Result<Option<Arc<Chunk>>> {
        let c = {
            let mut open = self.lanes.open.lock();
            let r = self.buffer.reserve(size);
            let c = Arc::new(Chunk {
                start: r.start,
                end: r.end,
                claim: AtomicU64::new(r.start | NOT_READY),
                seen: AtomicU64::new(u64::MAX),
            });
            open.push(c.clone());
            self.lanes.count.store(open.len(), Release);
            c
        };
        self.lane_chunks.incr();
        let r = Reservation {
            start: c.start,
            end: c.end,
        };
        let room = if self.buffer.has_room(r) {
            Ok(())
        } else {
            self.wait_for_room(r)
        };
        if let Err(e) = room {
            // The log failed (nothing more is written): closed, never made ready, so that no
            // closer writes padding where the ring has no room.
            c.claim.fetch_or(CLOSED, AcqRel);
            self.unregister(&c);
            return Err(e);
        }
        match c
            .claim
            .compare_exchange(c.start | NOT_READY, c.start, AcqRel, Acquire)
        {
            Ok(_) => Ok(Some(c)),
            Err(_) => {
                // Closed while not ready (its closer wrote nothing): the whole chunk becomes
                // padding so that the completed prefix can pass it.
                self.write_padding(c.start, c.end);
                self.unregister(&c);
                Ok(None)
            }
        }
    }

    /// Closes the lane's chunk, if any (the owner pads its rest), and unregisters it.
    fn end_chunk(&self, lane: &mut Lane) {
        if let Some(c) = lane.chunk.take() {
            self.close_chunk(&c);
            self.unregister(&c);
        }
    }

    fn unregister(&self, c: &Arc<Chunk>) {
        let mut open = self.lanes.open.lock();
        if let Some(i) = open.iter().position(|o| Arc::ptr_eq(o, c)) {
            open.swap_remove(i);
        }
        self.lanes.count.store(open.len(), Release);
    }

    /// Closes `c` (rule L7): sets `CLOSED` and, if this call did so on a ready chunk with an
    /// unclaimed rest, writes the padding record over it.
    fn close_chunk(&self, c: &Chunk) {
        let v = c.claim.fetch_or(CLOSED, AcqRel);
        if v & (CLOSED | NOT_READY) == 0 && v & POS < c.end {
            self.write_padding(v & POS, c.end);
        }
    }

    /// Writes a `Padding` record over `[start, end)` (at least [`MIN_RECORD_BYTES`], a
    /// multiple of the record alignment, ring room ensured) and completes it.
    fn write_padding(&self, start: u64, end: u64) {
        let len = (end - start) as usize;
        let rec = LogRecord::control(
            RecordKind::Padding,
            TxnId::NONE,
            Lsn::ZERO,
            vec![0; len - RECORD_HEADER_BYTES],
        );
        debug_assert_eq!(encoded_len_for(rec.redo.len(), 0), len);
        let r = Reservation { start, end };
        self.buffer
            .write_with_limit(r, |buf| rec.encode_validated(Lsn(start), buf), end);
        self.after_write(r);
        self.lane_padding_bytes.add(len as u64);
    }

    /// Closes every open chunk whose unclaimed part lies below `need`, so the completed
    /// prefix can reach `need` (rule L6); chunks at or past `need` stay open. Drops closed
    /// chunks whose owner is gone from the registry.
    pub(crate) fn close_chunks_below(&self, need: u64) {
        if self.lanes.count.load(Acquire) == 0 {
            return;
        }
        let mut open = self.lanes.open.lock();
        for c in open.iter() {
            let v = c.claim.load(Acquire);
            if v & CLOSED == 0 && c.start < need && v & POS < need {
                self.close_chunk(c);
            }
        }
        self.drop_orphans(&mut open);
    }

    /// The flusher's round (rule L6): closes every chunk whose claim word has not changed
    /// since the previous round, so an idle or exited owner does not hold the log back.
    pub(super) fn close_stale_chunks(&self) {
        if self.lanes.count.load(Acquire) == 0 {
            return;
        }
        let mut open = self.lanes.open.lock();
        for c in open.iter() {
            let v = c.claim.load(Acquire);
            if v & CLOSED == 0 && c.seen.swap(v, Relaxed) == v {
                self.close_chunk(c);
            }
        }
        self.drop_orphans(&mut open);
    }

    /// Removes closed chunks that only the registry still holds (their thread exited).
    fn drop_orphans(&self, open: &mut Vec<Arc<Chunk>>) {
        open.retain(|c| !(c.is_closed() && Arc::strong_count(c) == 1));
        self.lanes.count.store(open.len(), Release);
    }

    /// The lowest LSN any lane may still give a record (rules L4, L5): the lowest claim of
    /// an open chunk, else the end of the reserved log.
    pub fn lanes_low_water(&self) -> Lsn {
        let open = self.lanes.open.lock();
        let end = self.buffer.reserved_end();
        Lsn(open
            .iter()
            .map(|c| c.claim.load(Acquire))
            .filter(|v| v & CLOSED == 0)
            .map(|v| v & POS)
            .fold(end, u64::min))
    }

    /// A lower bound of the LSN of the next record `lane` appends (rule L4): its chunk's
    /// claim if it has an open one, else the end of the reserved log (a new chunk starts
    /// there or later).
    pub(crate) fn lane_bound(&self, lane: &Lane) -> Lsn {
        if let Some(c) = &lane.chunk {
            let v = c.claim.load(Relaxed);
            if v & (CLOSED | NOT_READY) == 0 {
                return Lsn(v & POS);
            }
        }
        self.end_lsn()
    }
}
