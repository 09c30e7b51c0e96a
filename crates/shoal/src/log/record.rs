//! # Log records and their byte format
//!
//! Job: turn a [`LogRecord`] into bytes at a given LSN and back, and say — without ever
//! panicking, whatever the input — whether a byte range holds a whole valid record, the start
//! of one that is cut short, or something that is not a record at all ([`Decoded`]). The
//! format is documented in `docs/format.md` ("Log records"); this table is the same.
//!
//! ```text
//! offset size field          meaning
//!      0    4 len            total bytes of the record: header + redo + undo + padding;
//!                            a multiple of 8, in [56, MAX_RECORD_BYTES]
//!      4    4 crc            CRC32C of bytes [8, len) (everything after this field)
//!      8    8 lsn            the record's own LSN (its byte offset in the log address space)
//!     16    1 kind           RecordKind (1..=10); 0 and 11..=255 are invalid
//!     17    1 flags          bits 0..=2: padding byte count (0..=7); bits 3..=7: 0
//!     18    2 reserved       0
//!     20    4 redo_len       bytes of redo payload
//!     24    8 txn_id         TxnId; 0 = no transaction
//!     32    8 prev_lsn       previous record of the same transaction; 0 = none
//!     40    8 page_id        PageId; u64::MAX = none
//!     48    8 undo_next_lsn  compensation records: next record to undo; 0 otherwise
//!     56    redo_len         redo payload
//!     ..    undo_len         undo payload; undo_len = len - 56 - redo_len - padding
//!     ..    padding          zero bytes up to the next multiple of 8
//! ```
//!
//! Invariants (cited as "record rule n"):
//! 1. **Alignment.** `len` is a multiple of [`RECORD_ALIGN`], so every record of a log that
//!    starts at an aligned LSN starts at an aligned LSN; readers look for records only there.
//! 2. **Self-identification.** The header holds the record's own LSN and the CRC covers it,
//!    so a stale record (left in a file by an earlier incarnation of the log at a different
//!    address) or a misdirected read never decodes as the record at another LSN.
//! 3. **Total checksum.** The CRC covers every byte of the record after the `crc` field,
//!    padding included; the padding count is stored (in `flags`), so the split of the payload
//!    into redo and undo is exact even when the undo payload ends in zero bytes.
//! 4. **Roles.** Only [`RecordRole::Undoable`] records carry an undo payload, and only
//!    [`RecordRole::Compensation`] records carry a non-zero `undo_next_lsn` (STYLE.md
//!    practice 4: a redo-only record cannot be undone). Encoding asserts it; decoding reports
//!    a violation as invalid.
//! 5. **Bounded.** `len ≤ MAX_RECORD_BYTES`; larger values go to overflow pages (later).
//! 6. **Total decode.** [`LogRecord::decode`] and [`RecordView::decode`] return a value for
//!    every input: they index only after checking lengths, and never return a record whose
//!    CRC and self-LSN were not both verified.
//!
//! What it does not do: it does not know where records live (see [`super::segment`]) or
//! decide where the log ends (see [`super::reader`]); it does not interpret payloads (access
//! methods and recovery do); no compression; no format version in each record (the version is
//! a property of the whole log, bumped with `PAGE_FORMAT_VERSION` for now).

use crate::error::{Error, Result};
use crate::types::{Lsn, PageId, TxnId};

/// Size of the fixed record header in bytes.
pub const RECORD_HEADER_BYTES: usize = 56;
/// Every record's length and LSN are multiples of this many bytes (record rule 1).
pub const RECORD_ALIGN: usize = 8;
/// Largest encoded record in bytes (4 MiB), header and padding included (record rule 5).
pub const MAX_RECORD_BYTES: usize = 4 << 20;

const OFF_LEN: usize = 0;
const OFF_CRC: usize = 4;
const OFF_LSN: usize = 8;
const OFF_KIND: usize = 16;
const OFF_FLAGS: usize = 17;
const OFF_RESERVED: usize = 18;
const OFF_REDO_LEN: usize = 20;
const OFF_TXN: usize = 24;
const OFF_PREV_LSN: usize = 32;
const OFF_PAGE_ID: usize = 40;
const OFF_UNDO_NEXT: usize = 48;
/// Bits of `flags` holding the padding byte count.
const FLAGS_PAD_MASK: u8 = 0x07;

const _: () = assert!(OFF_UNDO_NEXT + 8 == RECORD_HEADER_BYTES);
const _: () = assert!(RECORD_HEADER_BYTES % RECORD_ALIGN == 0);
const _: () =
    assert!(RECORD_ALIGN.is_power_of_two() && RECORD_ALIGN - 1 <= FLAGS_PAD_MASK as usize);
const _: () =
    assert!(MAX_RECORD_BYTES % RECORD_ALIGN == 0 && MAX_RECORD_BYTES <= u32::MAX as usize);

/// What a log record records. Stored as one byte at offset 16; values are fixed forever.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RecordKind {
    /// A transaction started.
    Begin = 1,
    /// A transaction committed; durable once the log is flushed past this record.
    Commit = 2,
    /// A transaction decided to roll back; its undo follows as compensation records.
    Abort = 3,
    /// A transaction is finished (after commit or after its rollback); it leaves the
    /// transaction table.
    End = 4,
    /// An undoable change to one page: redo and undo payloads.
    Update = 5,
    /// A compensation log record (CLR), written by undo: redo-only, with `undo_next_lsn`.
    Compensation = 6,
    /// A redo-only change of a system transaction (page split, allocation): never undone.
    SystemRedo = 7,
    /// A full-page image, for torn-page protection: redo payload is the page.
    PageImage = 8,
    /// Start of a fuzzy checkpoint.
    CheckpointBegin = 9,
    /// End of a fuzzy checkpoint: redo payload holds the transaction and dirty-page tables.
    CheckpointEnd = 10,
    /// An undoable change of a system transaction (a B-tree structure modification): redone
    /// always, undone (page-oriented) only if its system transaction had not committed at a
    /// crash — the records of an ARIES nested top action (Mohan et al., TODS 1992, §10.3).
    SystemUpdate = 11,
    /// Filler over the unused rest of a closed log-lane chunk (`log::manager::lane`): no
    /// transaction, no page; its redo payload is zeros. Recovery skips it.
    Padding = 12,
}

/// The ARIES role of a record kind (STYLE.md practice 4): what recovery may do with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordRole {
    /// Transaction or checkpoint bookkeeping; changes no page.
    Control,
    /// Redone in redo, undone (producing a compensation record) when its transaction loses.
    Undoable,
    /// Produced only by undo; redone, never undone; `undo_next_lsn` continues the rollback.
    Compensation,
    /// Redone, never undone (system transactions, page images).
    RedoOnly,
}

impl RecordKind {
    /// Every kind, in value order.
    pub const ALL: [RecordKind; 12] = [
        RecordKind::Begin,
        RecordKind::Commit,
        RecordKind::Abort,
        RecordKind::End,
        RecordKind::Update,
        RecordKind::Compensation,
        RecordKind::SystemRedo,
        RecordKind::PageImage,
        RecordKind::CheckpointBegin,
        RecordKind::CheckpointEnd,
        RecordKind::SystemUpdate,
        RecordKind::Padding,
    ];

    /// Decodes the kind byte; `None` for an unknown value.
    pub fn from_u8(v: u8) -> Option<RecordKind> {
        RecordKind::ALL.get(usize::from(v).wrapping_sub(1)).copied()
    }

    /// The record's ARIES role.
    pub fn role(self) -> RecordRole {
        match self {
            RecordKind::Begin
            | RecordKind::Commit
            | RecordKind::Abort
            | RecordKind::End
            | RecordKind::CheckpointBegin
            | RecordKind::CheckpointEnd
            | RecordKind::Padding => RecordRole::Control,
            RecordKind::Update | RecordKind::SystemUpdate => RecordRole::Undoable,
            RecordKind::Compensation => RecordRole::Compensation,
            RecordKind::SystemRedo | RecordKind::PageImage => RecordRole::RedoOnly,
        }
    }
}

/// One log record, owning its payloads. Its LSN is not a field: it is where the record is
/// written ([`encode_into`](Self::encode_into)) or read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    /// What the record records.
    pub kind: RecordKind,
    /// The transaction that wrote it; [`TxnId::NONE`] for checkpoints.
    pub txn_id: TxnId,
    /// The previous record of the same transaction; [`Lsn::ZERO`] for its first.
    pub prev_lsn: Lsn,
    /// The page changed; [`PageId::INVALID`] for records that change no page.
    pub page_id: PageId,
    /// For compensation records, the next record of the transaction to undo; otherwise
    /// [`Lsn::ZERO`] (record rule 4).
    pub undo_next_lsn: Lsn,
    /// Redo payload, interpreted by the component that wrote the record.
    pub redo: Vec<u8>,
    /// Undo payload; empty unless the kind is [`RecordRole::Undoable`] (record rule 4).
    pub undo: Vec<u8>,
}

impl LogRecord {
    /// A record that changes no page (transaction and checkpoint bookkeeping): no page id, no
    /// undo payload, no undo-next LSN.
    pub fn control(kind: RecordKind, txn_id: TxnId, prev_lsn: Lsn, redo: Vec<u8>) -> LogRecord {
        LogRecord {
            kind,
            txn_id,
            prev_lsn,
            page_id: PageId::INVALID,
            undo_next_lsn: Lsn::ZERO,
            redo,
            undo: Vec::new(),
        }
    }
}

/// A decoded record that borrows its payloads from the decoded bytes (no copy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordView<'a> {
    /// See [`LogRecord::kind`].
    pub kind: RecordKind,
    /// See [`LogRecord::txn_id`].
    pub txn_id: TxnId,
    /// See [`LogRecord::prev_lsn`].
    pub prev_lsn: Lsn,
    /// See [`LogRecord::page_id`].
    pub page_id: PageId,
    /// See [`LogRecord::undo_next_lsn`].
    pub undo_next_lsn: Lsn,
    /// Redo payload.
    pub redo: &'a [u8],
    /// Undo payload.
    pub undo: &'a [u8],
}

/// The result of decoding bytes that should start with the record at a given LSN.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decoded<R = LogRecord> {
    /// A valid record and its encoded length in bytes (the distance to the next record).
    Record(R, usize),
    /// Fewer bytes than the header, or than the header's `len`, and nothing seen so far is
    /// invalid: more bytes are needed to decide.
    Incomplete,
    /// Not the record at this LSN: bad CRC, wrong self-LSN, unknown kind, bad length, non-zero
    /// reserved bits, or a role violation (record rule 4). The string says which.
    Invalid(String),
}

/// Total encoded length in bytes of a record with these payload lengths (before the
/// [`MAX_RECORD_BYTES`] check).
pub fn encoded_len_for(redo_len: usize, undo_len: usize) -> usize {
    let raw = RECORD_HEADER_BYTES + redo_len + undo_len;
    raw.next_multiple_of(RECORD_ALIGN)
}

impl LogRecord {
    /// Encoded length in bytes, header and padding included.
    pub fn encoded_len(&self) -> usize {
        encoded_len_for(self.redo.len(), self.undo.len())
    }

    /// Checks that the record can be encoded: at most [`MAX_RECORD_BYTES`] and record rule 4.
    ///
    /// # Errors
    /// `Error::InvalidArgument` (parameter `record`) saying which rule is broken.
    pub fn validate(&self) -> Result<()> {
        if self.encoded_len() > MAX_RECORD_BYTES {
            return Err(Error::invalid(
                "record",
                format!(
                    "{} bytes encoded, more than MAX_RECORD_BYTES ({MAX_RECORD_BYTES})",
                    self.encoded_len()
                ),
            ));
        }
        role_check(self.kind, self.undo.len(), self.undo_next_lsn)
            .map_err(|reason| Error::invalid("record", reason))
    }

    /// Writes the record as it is stored at `lsn` into `buf`, CRC included.
    ///
    /// # Panics
    /// If `buf.len() != self.encoded_len()`, if `lsn` is not a multiple of [`RECORD_ALIGN`],
    /// or if [`validate`](Self::validate) fails: callers check size and roles first.
    pub fn encode_into(&self, lsn: Lsn, buf: &mut [u8]) {
        if let Err(e) = self.validate() {
            panic!("encode_into: {e}");
        }
        self.encode_validated(lsn, buf);
    }

    /// [`encode_into`](Self::encode_into) for a record that [`validate`](Self::validate)
    /// has already passed (the log manager's append, after `check_append`): the same bytes,
    /// without checking the record's size and roles a second time.
    ///
    /// # Panics
    /// If `buf.len() != self.encoded_len()` or `lsn` is not a multiple of [`RECORD_ALIGN`].
    pub(crate) fn encode_validated(&self, lsn: Lsn, buf: &mut [u8]) {
        let len = self.encoded_len();
        assert_eq!(buf.len(), len, "encode: buffer must be encoded_len bytes");
        assert_eq!(
            lsn.0 % RECORD_ALIGN as u64,
            0,
            "record LSN {lsn} not aligned"
        );
        let redo_end = RECORD_HEADER_BYTES + self.redo.len();
        let undo_end = redo_end + self.undo.len();
        let pad = len - undo_end;
        put_u32(buf, OFF_LEN, len as u32);
        put_u64(buf, OFF_LSN, lsn.0);
        buf[OFF_KIND] = self.kind as u8;
        buf[OFF_FLAGS] = pad as u8;
        buf[OFF_RESERVED..OFF_RESERVED + 2].fill(0);
        put_u32(buf, OFF_REDO_LEN, self.redo.len() as u32);
        put_u64(buf, OFF_TXN, self.txn_id.0);
        put_u64(buf, OFF_PREV_LSN, self.prev_lsn.0);
        put_u64(buf, OFF_PAGE_ID, self.page_id.0);
        put_u64(buf, OFF_UNDO_NEXT, self.undo_next_lsn.0);
        buf[RECORD_HEADER_BYTES..redo_end].copy_from_slice(&self.redo);
        buf[redo_end..undo_end].copy_from_slice(&self.undo);
        buf[undo_end..].fill(0);
        let crc = crc32c::crc32c(&buf[OFF_LSN..]);
        put_u32(buf, OFF_CRC, crc);
    }

    /// Encodes into a new vector (tests and tools; the log manager encodes into its buffer with `encode_validated`).
    ///
    /// # Panics
    /// As [`encode_into`](Self::encode_into).
    pub fn encode(&self, lsn: Lsn) -> Vec<u8> {
        let mut buf = vec![0u8; self.encoded_len()];
        self.encode_into(lsn, &mut buf);
        buf
    }

    /// Decodes the record that should start at `bytes[0]` and lie at `expected_lsn`, copying
    /// its payloads. Never panics (record rule 6).
    pub fn decode(bytes: &[u8], expected_lsn: Lsn) -> Decoded {
        match RecordView::decode(bytes, expected_lsn) {
            Decoded::Record(view, len) => Decoded::Record(view.to_owned(), len),
            Decoded::Incomplete => Decoded::Incomplete,
            Decoded::Invalid(why) => Decoded::Invalid(why),
        }
    }
}

impl<'a> RecordView<'a> {
    /// Decodes without copying; see [`LogRecord::decode`]. Never panics (record rule 6).
    pub fn decode(bytes: &'a [u8], expected_lsn: Lsn) -> Decoded<RecordView<'a>> {
        let Some(header) = bytes.get(..RECORD_HEADER_BYTES) else {
            return Decoded::Incomplete;
        };
        let h = match check_header(header, expected_lsn) {
            Ok(h) => h,
            Err(why) => return Decoded::Invalid(why),
        };
        let Some(record) = bytes.get(..h.len) else {
            return Decoded::Incomplete;
        };
        let stored = get_u32(record, OFF_CRC);
        let actual = crc32c::crc32c(&record[OFF_LSN..]);
        if stored != actual {
            return Decoded::Invalid(format!(
                "checksum mismatch: stored {stored:#010x}, computed {actual:#010x}"
            ));
        }
        let redo_end = RECORD_HEADER_BYTES + h.redo_len;
        let undo_end = h.len - h.pad;
        if record[undo_end..].iter().any(|&b| b != 0) {
            return Decoded::Invalid("non-zero padding".into());
        }
        let view = RecordView {
            kind: h.kind,
            txn_id: TxnId(get_u64(record, OFF_TXN)),
            prev_lsn: Lsn(get_u64(record, OFF_PREV_LSN)),
            page_id: PageId(get_u64(record, OFF_PAGE_ID)),
            undo_next_lsn: Lsn(get_u64(record, OFF_UNDO_NEXT)),
            redo: &record[RECORD_HEADER_BYTES..redo_end],
            undo: &record[redo_end..undo_end],
        };
        if let Err(why) = role_check(view.kind, view.undo.len(), view.undo_next_lsn) {
            return Decoded::Invalid(why);
        }
        Decoded::Record(view, h.len)
    }

    /// Copies the payloads into an owned [`LogRecord`].
    pub fn to_owned(&self) -> LogRecord {
        LogRecord {
            kind: self.kind,
            txn_id: self.txn_id,
            prev_lsn: self.prev_lsn,
            page_id: self.page_id,
            undo_next_lsn: self.undo_next_lsn,
            redo: self.redo.to_vec(),
            undo: self.undo.to_vec(),
        }
    }
}

/// The header fields needed to find the record's extent.
struct Header {
    len: usize,
    kind: RecordKind,
    redo_len: usize,
    pad: usize,
}

/// Checks every header field that can be checked without the rest of the record.
/// `header` is exactly [`RECORD_HEADER_BYTES`] long.
fn check_header(header: &[u8], expected_lsn: Lsn) -> std::result::Result<Header, String> {
    let len = get_u32(header, OFF_LEN) as usize;
    if claimed_len(header).is_none() {
        return Err(format!(
            "length {len} not a multiple of {RECORD_ALIGN} in [{RECORD_HEADER_BYTES}, {MAX_RECORD_BYTES}]"
        ));
    }
    let lsn = get_u64(header, OFF_LSN);
    if lsn != expected_lsn.0 {
        return Err(format!("self-LSN {lsn} is not the position {expected_lsn}"));
    }
    let Some(kind) = RecordKind::from_u8(header[OFF_KIND]) else {
        return Err(format!("unknown record kind {}", header[OFF_KIND]));
    };
    let flags = header[OFF_FLAGS];
    if flags & !FLAGS_PAD_MASK != 0 {
        return Err(format!("reserved flag bits set in {flags:#04x}"));
    }
    if get_u16(header, OFF_RESERVED) != 0 {
        return Err("non-zero reserved field".into());
    }
    let pad = usize::from(flags & FLAGS_PAD_MASK);
    let redo_len = get_u32(header, OFF_REDO_LEN) as usize;
    // redo_len ≤ u32::MAX and pad ≤ 7: checked arithmetic keeps 32-bit targets total too.
    let used = RECORD_HEADER_BYTES
        .checked_add(redo_len)
        .and_then(|n| n.checked_add(pad));
    if !matches!(used, Some(used) if used <= len) {
        return Err(format!(
            "redo length {redo_len} and padding {pad} do not fit in length {len}"
        ));
    }
    Ok(Header {
        len,
        kind,
        redo_len,
        pad,
    })
}

/// Record rule 4, as a reason string when broken.
fn role_check(
    kind: RecordKind,
    undo_len: usize,
    undo_next_lsn: Lsn,
) -> std::result::Result<(), String> {
    let role = kind.role();
    if undo_len != 0 && role != RecordRole::Undoable {
        return Err(format!(
            "{kind:?} record ({role:?}) carries an undo payload"
        ));
    }
    if undo_next_lsn != Lsn::ZERO && role != RecordRole::Compensation {
        return Err(format!("{kind:?} record ({role:?}) has an undo-next LSN"));
    }
    Ok(())
}

/// Whether the header at the start of `bytes` claims to be the record at `lsn`: the cheap
/// test (length and self-LSN fields only, no CRC) used by the reader's scan past the end of
/// the log before it decodes a candidate in full. False when `bytes` is shorter than 16.
pub fn plausible_at(bytes: &[u8], lsn: Lsn) -> bool {
    match (
        bytes.get(OFF_LEN..OFF_LEN + 4),
        bytes.get(OFF_LSN..OFF_LSN + 8),
    ) {
        (Some(_), Some(_)) => {
            let len = get_u32(bytes, OFF_LEN) as usize;
            get_u64(bytes, OFF_LSN) == lsn.0
                && (RECORD_HEADER_BYTES..=MAX_RECORD_BYTES).contains(&len)
                && len % RECORD_ALIGN == 0
        }
        _ => false,
    }
}

/// The `len` field of a header prefix of at least 4 bytes, if it is a legal length.
pub(crate) fn claimed_len(bytes: &[u8]) -> Option<usize> {
    let len = bytes.get(..4).map(|_| get_u32(bytes, OFF_LEN) as usize)?;
    ((RECORD_HEADER_BYTES..=MAX_RECORD_BYTES).contains(&len) && len % RECORD_ALIGN == 0)
        .then_some(len)
}

fn get_u16(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes([b[off], b[off + 1]])
}
fn get_u32(b: &[u8], off: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[off..off + 4]);
    u32::from_le_bytes(a)
}
fn get_u64(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}
fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
