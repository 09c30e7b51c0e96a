//! # Log readers: forward replay, lookup by LSN, and the end-of-log rule
//!
//! Job: read the records of a [`SegmentSet`] forward from an LSN in large chunks (recovery's
//! analysis and redo passes), read single records by LSN (undo follows `prev_lsn` chains
//! backward), and decide where the log ends after a crash, so that the log manager knows where
//! to append next.
//!
//! ```text
//!   ... | rec | rec | rec | ##### torn / zero / cut ##### |  (no valid record after)  → end
//!   ... | rec | rec | ##### damaged ##### | rec | rec |     (a valid record after)    → Corruption
//!                    ^ h: first position where decode is Incomplete or Invalid
//! ```
//!
//! Invariants (cited as "reader rule n"):
//! 1. **End of log.** Forward reading stops at the first position `h` where
//!    [`LogRecord::decode`] says Incomplete (the files end inside the record) or Invalid.
//!    That is the end of the log *unless* a valid record — correct self-LSN at its position
//!    and correct CRC (record rule 2) — starts at some later 8-aligned position of the files;
//!    then the log is damaged in the middle and reading fails with
//!    [`Error::LogCorruption`] at `h`, never with a silent truncation that would drop the
//!    committed work after `h`.
//! 2. **The scan is cheap.** Candidates are checked by the length and self-LSN fields first
//!    ([`plausible_at`]); only those are decoded in full. The scan reads the rest of the
//!    files once, in chunks, skipping holes (short middle segments).
//! 3. **Unsynced window.** Writes after the last successful sync may reach the disk in any
//!    subset (disk assumption 3 of `docs/format.md`), so after a crash a valid but never
//!    acknowledged record can lie after a hole *inside the unsynced tail*. If the log manager
//!    bounds its written-but-unsynced bytes by `W` (its buffer size), such a record lies less
//!    than `W` bytes after `h`; [`LogReader::with_unsynced_window`] then ignores candidates in
//!    `[h, h + W)` and reports damage only beyond. The default `W = 0` is the strict rule 1.
//! 4. **Cut before appending.** Bytes of the crashed incarnation after the end may hold valid
//!    records; the log manager must call [`SegmentSet::truncate_from`] with the end before
//!    appending again, or a later recovery could read them as a continuation.
//!
//! What it does not do: no backward iteration other than by LSN ([`read_record`]); no
//! interpretation of records (recovery does that); no repair; no concurrent reading of a log
//! that is being appended to (it reads what the files hold when it reads them).

use super::record::{claimed_len, plausible_at, Decoded, LogRecord, RECORD_ALIGN};
use super::segment::SegmentSet;
use crate::error::{Error, Result};
use crate::types::Lsn;

/// Bytes read from the segment files per call when reading forward (1 MiB).
pub const READ_CHUNK_BYTES: usize = 1 << 20;

/// Smallest prefix of a header that [`plausible_at`] can judge (length and self-LSN fields).
const PLAUSIBLE_BYTES: usize = 16;

/// Forward reader over the records of a [`SegmentSet`]; also an [`Iterator`] of
/// `Result<(Lsn, LogRecord)>` that ends (`None`) at the end of the log (reader rule 1).
#[derive(Debug)]
pub struct LogReader<'a> {
    segments: &'a SegmentSet,
    buf: Vec<u8>,
    /// LSN of `buf[0]`.
    buf_lsn: u64,
    /// Valid bytes in `buf`.
    buf_len: usize,
    /// The last fill returned fewer bytes than asked: nothing contiguous follows.
    buf_short: bool,
    pos: Lsn,
    unsynced_window_bytes: u64,
    end: Option<Lsn>,
    failed: bool,
}

impl<'a> LogReader<'a> {
    /// A reader whose first record is the one at `from` (a record boundary, e.g. a
    /// checkpoint's redo LSN, or [`SegmentSet::first_lsn`]).
    ///
    /// # Errors
    /// `Error::InvalidArgument` if `from` is not a multiple of [`RECORD_ALIGN`] or lies below
    /// the oldest segment.
    pub fn new(segments: &'a SegmentSet, from: Lsn) -> Result<LogReader<'a>> {
        if from.0 % RECORD_ALIGN as u64 != 0 || from < segments.first_lsn() {
            return Err(Error::invalid(
                "from",
                format!(
                    "{from} is not 8-aligned or is below the first LSN {}",
                    segments.first_lsn()
                ),
            ));
        }
        Ok(LogReader {
            segments,
            buf: Vec::new(),
            buf_lsn: from.0,
            buf_len: 0,
            buf_short: false,
            pos: from,
            unsynced_window_bytes: 0,
            end: None,
            failed: false,
        })
    }

    /// Ignores valid records less than `bytes` after the first bad position when deciding
    /// whether the log is damaged (reader rule 3). `bytes` must bound what the writer had
    /// written but not synced at any time.
    pub fn with_unsynced_window(mut self, bytes: u64) -> LogReader<'a> {
        self.unsynced_window_bytes = bytes;
        self
    }

    /// The LSN of the next record to read (after the end: the end).
    pub fn position(&self) -> Lsn {
        self.pos
    }

    /// The end of the log, once reading has reached it (`None` before).
    pub fn end(&self) -> Option<Lsn> {
        self.end
    }

    /// The next record and its LSN; `Ok(None)` at the end of the log (reader rule 1).
    ///
    /// # Errors
    /// `Error::LogCorruption` at the first bad position if a valid record follows it;
    /// `Error::Io` from the storage. After an error the reader returns `Ok(None)`.
    pub fn next_record(&mut self) -> Result<Option<(Lsn, LogRecord)>> {
        if self.end.is_some() || self.failed {
            return Ok(None);
        }
        loop {
            let off = (self.pos.0 - self.buf_lsn) as usize;
            let avail = &self.buf[off..self.buf_len];
            match LogRecord::decode(avail, self.pos) {
                Decoded::Record(rec, len) => {
                    let lsn = self.pos;
                    self.pos = Lsn(lsn.0 + len as u64);
                    return Ok(Some((lsn, rec)));
                }
                Decoded::Incomplete if off > 0 || !self.buf_short => {
                    let need = claimed_len(avail).unwrap_or(0);
                    if let Err(e) = self.fill(need) {
                        self.failed = true;
                        return Err(e);
                    }
                }
                Decoded::Incomplete => return self.at_bad_position("the files end inside it"),
                Decoded::Invalid(why) => return self.at_bad_position(&why),
            }
        }
    }

    /// Reads `segments` from `from` to the end of the log, calling `f` for each record in
    /// order, and returns the end (where the next record would be appended).
    ///
    /// # Errors
    /// As [`next_record`](Self::next_record), and whatever `f` returns (reading stops).
    pub fn scan_to_end(
        segments: &SegmentSet,
        from: Lsn,
        mut f: impl FnMut(Lsn, &LogRecord) -> Result<()>,
    ) -> Result<Lsn> {
        let mut reader = LogReader::new(segments, from)?;
        while let Some((lsn, rec)) = reader.next_record()? {
            f(lsn, &rec)?;
        }
        Ok(reader.pos)
    }

    /// Refills the buffer from `pos` with at least `need` bytes asked for.
    fn fill(&mut self, need: usize) -> Result<()> {
        let cap = need.max(READ_CHUNK_BYTES);
        if self.buf.len() < cap {
            self.buf.resize(cap, 0);
        }
        let n = self.segments.read_at(self.pos, &mut self.buf[..cap])?;
        self.buf_lsn = self.pos.0;
        self.buf_len = n;
        self.buf_short = n < cap;
        Ok(())
    }

    /// Reader rule 1 at the first bad position `pos`.
    fn at_bad_position(&mut self, why: &str) -> Result<Option<(Lsn, LogRecord)>> {
        let h = self.pos;
        let from = h.0.saturating_add(self.unsynced_window_bytes.max(1));
        let found = if from >= self.segments.end_of_files()?.0 {
            Ok(None) // the window reaches past the files: nothing later can count
        } else {
            find_valid_record(self.segments, from, &mut self.buf)
        };
        match found {
            Ok(None) => {
                self.end = Some(h);
                Ok(None)
            }
            Ok(Some(later)) => {
                self.failed = true;
                Err(Error::log_corruption(
                    h,
                    format!(
                        "no valid record here ({why}), but a valid record exists at LSN {later}: \
                         the log is damaged in the middle, not torn at its end"
                    ),
                ))
            }
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }
}

impl Iterator for LogReader<'_> {
    type Item = Result<(Lsn, LogRecord)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

/// Reads the record at `lsn` (for backward traversal along `prev_lsn` chains).
///
/// # Errors
/// `Error::LogCorruption` if no valid record starts at `lsn` (the reason names what
/// [`LogRecord::decode`] found); `Error::InvalidArgument` if `lsn` is below the oldest segment;
/// `Error::Io` from the storage.
pub fn read_record(segments: &SegmentSet, lsn: Lsn) -> Result<LogRecord> {
    read_record_sized(segments, lsn).map(|(rec, _)| rec)
}

/// [`read_record`], with the record's encoded length in bytes (the distance to the next
/// record).
///
/// # Errors
/// As [`read_record`].
pub fn read_record_sized(segments: &SegmentSet, lsn: Lsn) -> Result<(LogRecord, usize)> {
    let mut buf = vec![0u8; super::record::RECORD_HEADER_BYTES];
    let n = segments.read_at(lsn, &mut buf)?;
    if let Some(len) = claimed_len(&buf[..n]) {
        buf.resize(len, 0);
        let n = segments.read_at(lsn, &mut buf)?;
        buf.truncate(n);
    } else {
        buf.truncate(n);
    }
    match LogRecord::decode(&buf, lsn) {
        Decoded::Record(rec, len) => Ok((rec, len)),
        Decoded::Incomplete => Err(Error::log_corruption(
            lsn,
            "no record: the log files end inside or before it",
        )),
        Decoded::Invalid(why) => Err(Error::log_corruption(lsn, format!("no record: {why}"))),
    }
}

/// The LSN of the first valid record at an 8-aligned position `≥ from` in the files, if any
/// (reader rule 2). `scratch` is reused as the read buffer.
fn find_valid_record(
    segments: &SegmentSet,
    from: u64,
    scratch: &mut Vec<u8>,
) -> Result<Option<Lsn>> {
    let end = segments.end_of_files()?.0;
    let seg = segments.segment_bytes();
    let mut p = from.next_multiple_of(RECORD_ALIGN as u64);
    if scratch.len() < READ_CHUNK_BYTES {
        scratch.resize(READ_CHUNK_BYTES, 0);
    }
    while p < end {
        let n = segments.read_at(Lsn(p), &mut scratch[..READ_CHUNK_BYTES])?;
        let checked = if n >= PLAUSIBLE_BYTES {
            (n - PLAUSIBLE_BYTES) / RECORD_ALIGN * RECORD_ALIGN + RECORD_ALIGN
        } else {
            0
        };
        for q in (0..checked).step_by(RECORD_ALIGN) {
            let lsn = Lsn(p + q as u64);
            if !plausible_at(&scratch[q..n], lsn) {
                continue;
            }
            let valid = match LogRecord::decode(&scratch[q..n], lsn) {
                Decoded::Record(..) => true,
                Decoded::Invalid(_) => false,
                Decoded::Incomplete => read_record(segments, lsn).is_ok(),
            };
            if valid {
                return Ok(Some(lsn));
            }
        }
        p = if n < READ_CHUNK_BYTES {
            // End of a short segment (a hole) or of the files: go on with the next segment.
            ((p + n as u64) / seg + 1) * seg
        } else {
            p + checked as u64
        };
    }
    Ok(None)
}

#[cfg(test)]
#[path = "reader_tests.rs"]
mod tests;
