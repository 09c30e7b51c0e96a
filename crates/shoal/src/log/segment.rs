//! # Log segment files: the log address space on disk
//!
//! Job: store the endless log address space (LSN = byte offset) in files of `segment_size`
//! bytes each, named `log-<16 lowercase hex digits of the segment index>.seg`; segment `i`
//! holds LSNs `[i * segment_size, (i + 1) * segment_size)` at file offset `lsn - i *
//! segment_size`. [`SegmentSet`] writes and reads byte ranges of that space across file
//! boundaries, makes them durable, and deletes whole segments behind the checkpoint.
//!
//! ```text
//!   LSN  0 ........ S ........ 2S ........ 3S          (S = segment_size, a power of two)
//!        | log-…00.seg | log-…01.seg | log-…02.seg |    first_lsn() = start of the oldest file
//!                                          ^ end_of_files() = last file's start + its length
//! ```
//!
//! Invariants (cited as "segment rule n"):
//! 1. **No gaps.** The segment indexes present form one contiguous run. `open` refuses a
//!    directory with a gap; `write_at` into a segment beyond the last creates the missing
//!    ones in between (empty), so a crash can never leave a gap it made itself.
//! 2. **Durable names.** A segment file is created under the set's lock and the directory is
//!    synced before any byte is written to it; `remove_before` syncs the directory after
//!    deleting.
//! 3. **Durable bytes.** [`SegmentSet::sync`] makes durable every write that *returned*
//!    before `sync` was called (a segment is marked for syncing after its write completes).
//!    After a failed sync, which writes are durable is unknown (io module essay): the caller
//!    (the log manager) must treat it as sticky.
//! 4. **Contiguous reads.** `read_at` returns only bytes contiguous with its start: it stops at
//!    the end of a segment file that is shorter than `segment_size` even if later files exist
//!    (the reader then decides whether that is the end of the log or damage).
//! 5. **Direct writes, buffered reads.** After [`SegmentSet::set_direct_writes`], `write_at`
//!    goes through a second handle of each segment opened with `O_DIRECT` and accepts only
//!    whole 4 KiB blocks ([`IO_ALIGN`]: offset, length and memory address); everything else
//!    (reads, lengths, truncation, `sync_data`) keeps using the ordinary handle of the same
//!    file. What this relies on, of Linux and of its local file systems (ext4, XFS; the
//!    fault-injecting storage models the same by keeping one image per file):
//!    (a) `fdatasync` is a property of the file, not of the descriptor: on the ordinary
//!    handle it makes durable the completed `O_DIRECT` writes too (the data of a completed
//!    direct write is in the device, perhaps in its volatile cache, which `fdatasync`
//!    flushes; a size or allocation change a direct write made is committed like any other);
//!    (b) a buffered read after a direct write returned sees the written bytes: before a
//!    direct write the kernel writes back and drops cached pages of the range, and after it
//!    drops them again (pages that a concurrent buffered read brought in meanwhile). Shoal
//!    never maps segment files and never writes them through the page cache in this mode, so
//!    that invalidation cannot fail. Reads of a range race with no write of *different*
//!    bytes: the log manager reads only below what it wrote, and rewrites bytes there only
//!    with their own values (log manager rule 10).
//! 6. **Zero-filled ahead.** [`SegmentSet::zero_fill_ahead`] writes zeros past the end of
//!    what has been written, and syncs them, so that log writes land in blocks the file
//!    system has already allocated and recorded: the `fdatasync` after such an overwrite
//!    need not also write a change of the file's size or block map (to the journal, or the
//!    inode itself), and on ext4 it takes about half as long (`docs/benchmarks.md`). A
//!    zero-fill step never writes over a log byte: a step runs under the `zero` mutex and
//!    starts at or above both `zeroed_end` and the end of every write that reached past
//!    `zeroed_end`; a write that reaches past `zeroed_end` takes that mutex first (so it
//!    waits for a step in progress and records its end there), and a write that ends at or
//!    below it lies in bytes no later step touches (steps only move up). `zeroed_end` is
//!    stored with Release after the step's write and sync, and loaded with Acquire by
//!    writers. [`SegmentSet::stop_zero_fill`] sets it to `u64::MAX`: no step runs after
//!    that, and no write takes the mutex any more (a log that never zero-fills, such as a
//!    `Lazy` one, stops it at open). Zeros are what the reader already takes for the end of
//!    the log (reader rule 1), and open cuts them off with the rest of the tail
//!    ([`SegmentSet::truncate_from`]).
//!
//! Latching: one `parking_lot::Mutex` over the map of open file handles, held only to look
//! up, create or delete a segment (never during a read or write of log bytes); one over the
//! set of segments written since the last sync; the `zero` mutex, held across one zero-fill
//! step (its write and sync) and taken before the map's (rule 6). Positioned I/O (io rule 1)
//! lets writes of disjoint ranges and reads run in parallel.
//!
//! What it does not do: no record boundaries (it moves bytes; see [`super::record`]); no
//! reuse of old segment files (a later optimisation that must then rely on record rule 2 to
//! reject stale records); no `O_DIRECT` reads; no decision about what may be deleted (the
//! checkpoint decides; this only deletes what it is told to).

use crate::error::{Error, Result};
use crate::io::{AlignedBuf, OpenOptions, Storage, StorageFile, IO_ALIGN};
use crate::types::Lsn;
use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::Arc;

/// Default segment size in bytes (64 MiB).
pub const DEFAULT_SEGMENT_BYTES: u64 = 64 << 20;
/// Smallest accepted segment size in bytes (4 KiB; small sizes are for tests).
pub const MIN_SEGMENT_BYTES: u64 = 4 << 10;
/// Largest accepted segment size in bytes (1 GiB).
pub const MAX_SEGMENT_BYTES: u64 = 1 << 30;
// A 4 KiB block of the log never straddles two segments (segment rule 5).
const _: () = assert!(MIN_SEGMENT_BYTES % IO_ALIGN as u64 == 0);

/// Most bytes one [`SegmentSet::zero_fill_ahead`] step writes (1 MiB): one write and one
/// `fdatasync`.
pub const ZERO_FILL_STEP_BYTES: u64 = 1 << 20;

const PREFIX: &str = "log-";
const SUFFIX: &str = ".seg";
const HEX_DIGITS: usize = 16;

/// The file name of segment `index`: `log-<16 lowercase hex digits>.seg`.
pub fn segment_file_name(index: u64) -> String {
    format!("{PREFIX}{index:016x}{SUFFIX}")
}

/// Parses a directory entry: `Ok(None)` for a file that is not a log segment (no `log-`
/// prefix), `Ok(Some(index))` for a segment.
///
/// # Errors
/// `Error::BadFile` for a name with the `log-` prefix that is not exactly a segment name.
pub fn parse_segment_file_name(name: &str) -> Result<Option<u64>> {
    let Some(rest) = name.strip_prefix(PREFIX) else {
        return Ok(None);
    };
    let hex = rest.strip_suffix(SUFFIX).filter(|h| {
        h.len() == HEX_DIGITS && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    });
    match hex.map(|h| u64::from_str_radix(h, 16)) {
        Some(Ok(index)) => Ok(Some(index)),
        _ => Err(Error::BadFile {
            path: name.to_string(),
            reason: format!(
                "starts with `{PREFIX}` but is not a log segment name `{PREFIX}<16 lowercase hex digits>{SUFFIX}`"
            ),
        }),
    }
}

/// The log address space stored in segment files of one [`Storage`] directory (see the module
/// documentation). `Send + Sync`; share it with `Arc`.
pub struct SegmentSet {
    storage: Arc<dyn Storage>,
    segment_bytes: u64,
    files: Mutex<BTreeMap<u64, Segment>>,
    unsynced: Mutex<BTreeSet<u64>>,
    /// Writes go through `O_DIRECT` handles (segment rule 5).
    direct: bool,
    /// Every byte in `[end at open or cut, zeroed_end)` has been zero-filled and synced, or
    /// written by a log write; `u64::MAX` once zero-filling has stopped (segment rule 6).
    /// Stored only under `zero`.
    zeroed_end: AtomicU64,
    zero: Mutex<ZeroFill>,
}

/// What zero-fill steps need to know (segment rule 6), under `SegmentSet::zero`.
struct ZeroFill {
    /// The highest end of a write that reached past `zeroed_end` when it began.
    written_end: u64,
    /// Aligned zeros to write from, allocated at the first step.
    zeros: Option<AlignedBuf>,
}

/// The open handles of one segment file.
struct Segment {
    /// The ordinary handle: reads, length, truncation, sync, and buffered writes.
    file: Arc<dyn StorageFile>,
    /// The `O_DIRECT` handle for writes, opened at the first direct write (segment rule 5).
    direct: Option<Arc<dyn StorageFile>>,
}

impl Segment {
    fn new(file: Arc<dyn StorageFile>) -> Segment {
        Segment { file, direct: None }
    }
}

impl fmt::Debug for SegmentSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let files = self.files.lock();
        f.debug_struct("SegmentSet")
            .field("segment_bytes", &self.segment_bytes)
            .field("first", &files.keys().next())
            .field("last", &files.keys().next_back())
            .field("direct", &self.direct)
            .finish()
    }
}

impl SegmentSet {
    /// Opens the segments of `storage`: lists the directory, ignores files without the `log-`
    /// prefix and opens every segment. `segment_bytes` must be the size the log was written
    /// with (a power of two in [[`MIN_SEGMENT_BYTES`], [`MAX_SEGMENT_BYTES`]]).
    ///
    /// # Errors
    /// `Error::InvalidArgument` for a bad `segment_bytes`; `Error::BadFile` for a `log-…` name
    /// that is not a segment name or a segment longer than `segment_bytes`;
    /// `Error::LogCorruption` for a gap in the segment sequence (segment rule 1), naming the
    /// first missing LSN; `Error::Io` from the storage.
    pub fn open(storage: Arc<dyn Storage>, segment_bytes: u64) -> Result<SegmentSet> {
        if !segment_bytes.is_power_of_two()
            || !(MIN_SEGMENT_BYTES..=MAX_SEGMENT_BYTES).contains(&segment_bytes)
        {
            return Err(Error::invalid(
                "segment_bytes",
                format!(
                    "{segment_bytes} is not a power of two in [{MIN_SEGMENT_BYTES}, {MAX_SEGMENT_BYTES}]"
                ),
            ));
        }
        let mut files = BTreeMap::new();
        for name in storage.list()? {
            let Some(index) = parse_segment_file_name(&name)? else {
                continue;
            };
            if index
                .checked_add(1)
                .and_then(|i| i.checked_mul(segment_bytes))
                .is_none()
            {
                return Err(Error::BadFile {
                    path: name,
                    reason: format!(
                        "segment index {index} lies beyond the 64-bit log address space"
                    ),
                });
            }
            let file = storage.open(&name, OpenOptions::default())?;
            let len = file.len()?;
            if len > segment_bytes {
                return Err(Error::BadFile {
                    path: name,
                    reason: format!(
                        "{len} bytes, longer than the segment size {segment_bytes}: opened with the wrong segment size?"
                    ),
                });
            }
            files.insert(index, Segment::new(file));
        }
        if let (Some(&first), Some(&last)) = (files.keys().next(), files.keys().next_back()) {
            if let Some(missing) = (first..=last).find(|i| !files.contains_key(i)) {
                return Err(Error::log_corruption(
                    Lsn(missing.saturating_mul(segment_bytes)),
                    format!(
                        "segment file {} is missing between {} and {}",
                        segment_file_name(missing),
                        segment_file_name(first),
                        segment_file_name(last)
                    ),
                ));
            }
        }
        let end = match files.last_key_value() {
            Some((&index, seg)) => index * segment_bytes + seg.file.len()?,
            None => 0,
        };
        Ok(SegmentSet {
            storage,
            segment_bytes,
            files: Mutex::new(files),
            unsynced: Mutex::new(BTreeSet::new()),
            direct: false,
            zeroed_end: AtomicU64::new(end),
            zero: Mutex::new(ZeroFill {
                written_end: end,
                zeros: None,
            }),
        })
    }

    /// With `on`, later [`write_at`](Self::write_at) calls write through `O_DIRECT` handles
    /// and must be whole aligned 4 KiB blocks (segment rule 5). The caller has checked that
    /// the storage accepts `O_DIRECT`; a segment that refuses it fails the write.
    pub fn set_direct_writes(&mut self, on: bool) {
        self.direct = on;
    }

    /// Whether writes go through `O_DIRECT` handles (segment rule 5).
    pub fn direct_writes(&self) -> bool {
        self.direct
    }

    /// The segment size in bytes.
    pub fn segment_bytes(&self) -> u64 {
        self.segment_bytes
    }

    /// The first LSN of the oldest segment file; [`Lsn::ZERO`] when there is none.
    pub fn first_lsn(&self) -> Lsn {
        let first = self.files.lock().keys().next().copied().unwrap_or(0);
        Lsn(first * self.segment_bytes)
    }

    /// The LSN just past the last byte of the last segment file (its start plus its length);
    /// [`Lsn::ZERO`] when there is none. Bytes below it may still be missing in a short
    /// middle segment (segment rule 4).
    ///
    /// # Errors
    /// `Error::Io` from the file's length.
    pub fn end_of_files(&self) -> Result<Lsn> {
        let last = self
            .files
            .lock()
            .last_key_value()
            .map(|(&i, s)| (i, Arc::clone(&s.file)));
        match last {
            None => Ok(Lsn::ZERO),
            Some((index, file)) => Ok(Lsn(index * self.segment_bytes + file.len()?)),
        }
    }

    /// Writes `bytes` at log address `lsn`, across segment boundaries, creating segment files
    /// as needed (segment rules 1 and 2). Durable only after [`sync`](Self::sync). With direct
    /// writes, `lsn`, the length and the address of `bytes` must be multiples of
    /// [`IO_ALIGN`] (segment rule 5).
    ///
    /// # Errors
    /// `Error::InvalidArgument` for a range below [`first_lsn`](Self::first_lsn) (deleted
    /// segments) or past `u64::MAX`, or a direct write that is not whole aligned blocks;
    /// `Error::NoSpace` / `Error::Io` from the storage (the range may then be partly written).
    pub fn write_at(&self, lsn: Lsn, bytes: &[u8]) -> Result<()> {
        self.check_range(lsn, bytes.len())?;
        let align = IO_ALIGN as u64;
        if self.direct
            && (lsn.0 % align != 0
                || bytes.len() as u64 % align != 0
                || bytes.as_ptr() as usize % IO_ALIGN != 0)
        {
            return Err(Error::invalid(
                "bytes",
                format!(
                    "a direct write of {} bytes at {lsn} is not whole 4 KiB blocks from an aligned buffer",
                    bytes.len()
                ),
            ));
        }
        let end = lsn.0 + bytes.len() as u64;
        if end > self.zeroed_end.load(Acquire) {
            // Segment rule 6: wait for a zero-fill step in progress, and keep later steps
            // above this write.
            let mut z = self.zero.lock();
            z.written_end = z.written_end.max(end);
        }
        let mut done = 0usize;
        while done < bytes.len() {
            let pos = lsn.0 + done as u64;
            let (index, offset) = self.locate(pos);
            let n = (self.segment_bytes - offset).min((bytes.len() - done) as u64) as usize;
            let file = self.file_for_write(index)?;
            file.write_all_at(&bytes[done..done + n], offset)?;
            self.unsynced.lock().insert(index);
            done += n;
        }
        Ok(())
    }

    /// One zero-fill step (segment rule 6) towards `upto`: writes zeros from the end of what
    /// has been written or zero-filled (rounded up to a 4 KiB block) for at most
    /// [`ZERO_FILL_STEP_BYTES`], never across a segment boundary (creating the segment if
    /// needed), and syncs them. Returns the bytes zero-filled: 0 when the zeros (or the
    /// writes) already reach `upto`.
    ///
    /// # Errors
    /// `Error::NoSpace` / `Error::Io` from the storage. Nothing is lost: the zeros are only an
    /// optimisation, and log writes past the zero-filled end extend the file as without them.
    pub fn zero_fill_ahead(&self, upto: Lsn) -> Result<u64> {
        let mut z = self.zero.lock();
        let start = self
            .zeroed_end
            .load(Relaxed)
            .max(z.written_end.next_multiple_of(IO_ALIGN as u64));
        // After `stop_zero_fill` the start is u64::MAX: nothing to do.
        if start >= upto.0 || start.checked_add(ZERO_FILL_STEP_BYTES).is_none() {
            return Ok(0);
        }
        let (index, offset) = self.locate(start);
        let n = ZERO_FILL_STEP_BYTES.min(self.segment_bytes - offset);
        let file = self.file_for_write(index)?;
        let zeros = z
            .zeros
            .get_or_insert_with(|| AlignedBuf::new(ZERO_FILL_STEP_BYTES as usize));
        file.write_all_at(&zeros[..n as usize], offset)?;
        // The ordinary handle: its `fdatasync` covers direct writes too (segment rule 5a).
        let plain = self.files.lock().get(&index).map(|s| Arc::clone(&s.file));
        if let Some(f) = plain {
            f.sync_data()?;
        }
        self.zeroed_end.store(start + n, Release);
        Ok(n)
    }

    /// Waits for a zero-fill step in progress to end; later steps do nothing, and writes no
    /// longer take the zero-fill mutex (segment rule 6). The log manager calls it at open
    /// when it will not zero-fill, and when it stops, so that no step of its zero filler can
    /// still write when a later incarnation of the log appends to the same files.
    pub fn stop_zero_fill(&self) {
        let _z = self.zero.lock();
        self.zeroed_end.store(u64::MAX, Release);
    }

    /// The end of the zero-filled bytes past the log (segment rule 6): every byte below it
    /// and at or above the end at open has been zero-filled or written; `u64::MAX` once
    /// zero-filling has stopped.
    pub fn zeroed_end(&self) -> Lsn {
        Lsn(self.zeroed_end.load(Acquire))
    }

    /// Syncs every segment file, whether or not this process wrote it: used at open, when
    /// what a crashed or dropped predecessor wrote but never synced must become durable
    /// before it is counted as such.
    ///
    /// # Errors
    /// `Error::Io` from the first failing sync.
    pub fn sync_all(&self) -> Result<()> {
        let files: Vec<Arc<dyn StorageFile>> = self
            .files
            .lock()
            .values()
            .map(|s| Arc::clone(&s.file))
            .collect();
        for f in files {
            f.sync_data()?;
        }
        self.unsynced.lock().clear();
        Ok(())
    }

    /// Makes durable every write that returned before this call (segment rule 3).
    ///
    /// # Errors
    /// `Error::Io` from `sync_data`: the failed segment and the ones not yet synced stay
    /// marked, but what is durable is unknown and the caller must treat this as sticky.
    pub fn sync(&self) -> Result<()> {
        let pending = std::mem::take(&mut *self.unsynced.lock());
        let mut iter = pending.iter();
        while let Some(&index) = iter.next() {
            // The ordinary handle: its `fdatasync` covers direct writes too (segment rule 5a).
            let file = self.files.lock().get(&index).map(|s| Arc::clone(&s.file));
            // A segment deleted since it was written needs no sync.
            let result = file.map_or(Ok(()), |f| f.sync_data());
            if let Err(e) = result {
                let mut unsynced = self.unsynced.lock();
                unsynced.insert(index);
                unsynced.extend(iter);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Reads log bytes starting at `lsn` into `buf`, across segment boundaries; returns how
    /// many bytes were read: fewer than `buf.len()` at the end of the last file or of a short
    /// middle file (segment rule 4), 0 at or past [`end_of_files`](Self::end_of_files).
    ///
    /// # Errors
    /// `Error::InvalidArgument` if `lsn` is below [`first_lsn`](Self::first_lsn) (the segment
    /// was deleted) or the range passes `u64::MAX`; `Error::Io` from the storage.
    pub fn read_at(&self, lsn: Lsn, buf: &mut [u8]) -> Result<usize> {
        self.check_range(lsn, buf.len())?;
        let mut done = 0usize;
        while done < buf.len() {
            let pos = lsn.0 + done as u64;
            let (index, offset) = self.locate(pos);
            let Some(file) = self.files.lock().get(&index).map(|s| Arc::clone(&s.file)) else {
                break;
            };
            let len = file.len()?;
            if offset >= len {
                break;
            }
            let want = (self.segment_bytes - offset).min((buf.len() - done) as u64);
            let n = want.min(len - offset) as usize;
            file.read_exact_at(&mut buf[done..done + n], offset)?;
            done += n;
            if (n as u64) < want {
                break;
            }
        }
        Ok(done)
    }

    /// The length in bytes of segment `index`'s file, `None` if it does not exist.
    ///
    /// # Errors
    /// `Error::Io` from the storage.
    pub fn segment_len(&self, index: u64) -> Result<Option<u64>> {
        let file = self.files.lock().get(&index).map(|s| Arc::clone(&s.file));
        file.map(|f| f.len()).transpose()
    }

    /// Deletes every segment that lies entirely below `lsn`, then syncs the directory
    /// (segment rule 2). The caller guarantees that nothing below `lsn` is needed (the
    /// checkpoint's redo point). Handles held by concurrent readers stay usable until dropped.
    ///
    /// # Errors
    /// `Error::Io` from `remove` or `sync_dir`; segments removed before the error stay
    /// removed, and a file whose removal failed stays on disk, unlisted, until the next open
    /// lists it again (below the anchor's start, where no reader looks) and a later call
    /// removes it.
    pub fn remove_before(&self, lsn: Lsn) -> Result<()> {
        let below = lsn.0 / self.segment_bytes;
        // Take the doomed segments out of the set under its lock, but delete their files and
        // sync the directory without it: the log writer takes that lock to find the segment
        // it writes, and a background checkpoint must not stall it for a deletion and a
        // directory sync. Lowest index first, so a crash midway leaves a contiguous run
        // (rule 1); a set that no longer lists a segment never writes or reads it again.
        let doomed: Vec<u64> = {
            let mut files = self.files.lock();
            let doomed: Vec<u64> = files.range(..below).map(|(&i, _)| i).collect();
            let mut unsynced = self.unsynced.lock();
            for index in &doomed {
                files.remove(index);
                unsynced.remove(index);
            }
            doomed
        };
        if doomed.is_empty() {
            return Ok(());
        }
        for index in doomed {
            self.storage.remove(&segment_file_name(index))?;
        }
        self.storage.sync_dir()
    }

    /// Cuts the log at `lsn`: the segment holding `lsn` is truncated to end there and every
    /// later segment is deleted; then the truncated segment and the directory are synced.
    /// Recovery calls it with the end of the log before appending again, so that stale bytes
    /// of the crashed incarnation past the end can never be read as a continuation of the
    /// new log.
    ///
    /// # Errors
    /// `Error::InvalidArgument` if `lsn` is below [`first_lsn`](Self::first_lsn);
    /// `Error::Io` from the storage.
    pub fn truncate_from(&self, lsn: Lsn) -> Result<()> {
        self.check_range(lsn, 0)?;
        let (index, offset) = self.locate(lsn.0);
        let mut files = self.files.lock();
        let later: Vec<u64> = files.range(index + 1..).map(|(&i, _)| i).collect();
        // Highest first: a crash or error midway leaves a shorter but gap-free sequence.
        for i in later.iter().rev() {
            self.storage.remove(&segment_file_name(*i))?;
            files.remove(i);
            self.unsynced.lock().remove(i);
        }
        if let Some(seg) = files.get(&index) {
            if seg.file.len()? > offset {
                seg.file.set_len(offset)?;
                seg.file.sync_data()?;
            }
        }
        if !later.is_empty() {
            self.storage.sync_dir()?;
        }
        drop(files);
        // Segment rule 6: zero-filling starts again at the cut, unless it has stopped.
        let mut z = self.zero.lock();
        z.written_end = lsn.0;
        if self.zeroed_end.load(Relaxed) != u64::MAX {
            self.zeroed_end.store(lsn.0, Release);
        }
        Ok(())
    }

    /// (segment index, offset in the segment file) of log address `pos`.
    fn locate(&self, pos: u64) -> (u64, u64) {
        (pos / self.segment_bytes, pos % self.segment_bytes)
    }

    fn check_range(&self, lsn: Lsn, len: usize) -> Result<()> {
        if lsn.0.checked_add(len as u64).is_none() {
            return Err(Error::invalid(
                "lsn",
                format!("{len} bytes at {lsn} pass u64::MAX"),
            ));
        }
        let first = self.first_lsn();
        if lsn < first {
            return Err(Error::invalid(
                "lsn",
                format!("{lsn} is below the oldest segment (first LSN {first}): deleted"),
            ));
        }
        Ok(())
    }

    /// The handle to write segment `index` with (the direct one in direct mode, opened
    /// here the first time: segment rule 5), creating the segment (and any missing segments
    /// between the last one and it) first: segment rules 1 and 2.
    fn file_for_write(&self, index: u64) -> Result<Arc<dyn StorageFile>> {
        let mut files = self.files.lock();
        if !files.contains_key(&index) {
            self.create_through(&mut files, index)?;
        }
        let seg = files.get_mut(&index).expect("segment created above");
        if !self.direct {
            return Ok(Arc::clone(&seg.file));
        }
        if let Some(d) = &seg.direct {
            return Ok(Arc::clone(d));
        }
        let direct = OpenOptions {
            direct: true,
            ..Default::default()
        };
        let d = self.storage.open(&segment_file_name(index), direct)?;
        seg.direct = Some(Arc::clone(&d));
        Ok(d)
    }

    /// Creates segment `index` and any missing segments between the last one and it, then
    /// syncs the directory (segment rules 1 and 2).
    fn create_through(&self, files: &mut BTreeMap<u64, Segment>, index: u64) -> Result<()> {
        let from = match files.last_key_value() {
            Some((&last, _)) if last < index => last + 1,
            _ => index,
        };
        let create = OpenOptions {
            create: true,
            ..Default::default()
        };
        for i in from..=index {
            let file = self.storage.open(&segment_file_name(i), create)?;
            files.insert(i, Segment::new(file));
        }
        self.storage.sync_dir()
    }
}

#[cfg(test)]
#[path = "segment_tests.rs"]
mod tests;
