//! The log anchor: a 36-byte file `log.anchor` recording where a scan of the log may start,
//! how far the log is known to be durable, and how much the writer may leave written but
//! unsynced.
//!
//! ```text
//! offset size field
//!      0    8 magic                  b"SHLOGANC"
//!      8    8 start_lsn              a record boundary at or after which all needed records lie
//!     16    8 durable_floor          every byte below is known to have been synced
//!     24    8 unsynced_window_bytes  the writer never has more written-but-unsynced bytes
//!     32    4 crc                    CRC32C of bytes [0, 32)
//! ```
//!
//! Invariants: (A1) the anchor is rewritten in place with one write of less than one 512-byte
//! sector, which the disk model makes atomic, then synced; (A2) `start_lsn` is raised before
//! segments below it are removed; (A3) `durable_floor` is raised only after a sync covered it,
//! so the log must reach the floor; (A4) the writer of the log never has more than
//! `unsynced_window_bytes` written but not synced, so a valid record further than that after
//! a bad one proves damage in the middle of the log (format rule L3), while closer ones may be
//! leftovers of writes a crash reordered; (A5) raising `start_lsn` raises `durable_floor` to
//! the log's durable end at that moment (which a sync covered, as A3 asks), so the records
//! from the start up to there must all be found again at open — a segment file holding the
//! start that went missing, or a damaged first record, is reported as corruption instead of
//! opening an empty log that silently drops every commit since the checkpoint; (A6) before
//! any page with page LSN `L` is written to the data file (by the cleaner, a checkpoint, a
//! close or an eviction), `durable_floor` is raised above `L` (to the end of the log, made
//! durable first), so such a page never depends on log records that a restart could take
//! for a torn tail (`LogManager`'s `WalHook::force_log`). To keep that off the path of a
//! miss, the flusher also raises the floor whenever a sync has gone a sixteenth of a
//! segment past it, and the buffer pool's victim choice prefers pages below the floor
//! (buffer rule 10). A missing
//! anchor is taken for one whose creation a crash interrupted only while no segment has been
//! removed yet (segments are removed only behind a complete anchor, A2).

use crate::error::{Error, Result};
use crate::io::{OpenOptions, Storage};
use crate::types::Lsn;

/// File name of the anchor.
pub const ANCHOR_FILE: &str = "log.anchor";
const MAGIC: [u8; 8] = *b"SHLOGANC";
const LEN: usize = 36;

/// The anchor's contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Anchor {
    /// Where a forward scan of the log starts.
    pub start_lsn: Lsn,
    /// Below this LSN the log is known durable.
    pub durable_floor: Lsn,
    /// Largest amount of log, in bytes, the writer leaves written but unsynced (rule A4).
    pub unsynced_window_bytes: u64,
}

impl Anchor {
    /// This anchor with its durable floor raised to `floor` (never lowered: rule A3).
    pub fn with_floor(self, floor: Lsn) -> Anchor {
        Anchor {
            durable_floor: self.durable_floor.max(floor),
            ..self
        }
    }

    /// Reads the anchor, `None` if the file does not exist or is empty. An empty anchor is
    /// what a crash between creating the file and syncing its first write leaves (rule A1
    /// makes the write itself atomic); no segment can have been removed before the first
    /// anchor was complete, so the log then starts at its first LSN, as for a missing one.
    ///
    /// # Errors
    /// [`Error::BadFile`] if it is between 1 and 35 bytes long, has a bad magic or checksum,
    /// or `durable_floor < start_lsn`; I/O errors.
    pub fn read(storage: &dyn Storage) -> Result<Option<Anchor>> {
        if !storage.exists(ANCHOR_FILE)? {
            return Ok(None);
        }
        let f = storage.open(ANCHOR_FILE, OpenOptions::default())?;
        let bad = |reason: &str| Error::BadFile {
            path: f.name().to_string(),
            reason: reason.to_string(),
        };
        let len = f.len()?;
        if len == 0 {
            return Ok(None); // creation interrupted by a crash (see above)
        }
        if len < LEN as u64 {
            return Err(bad("log anchor is shorter than 36 bytes"));
        }
        let mut b = [0u8; LEN];
        f.read_exact_at(&mut b, 0)?;
        if b[0..8] != MAGIC {
            return Err(bad("bad magic: not a Shoal log anchor"));
        }
        let crc = u32::from_le_bytes(b[32..36].try_into().expect("4 bytes"));
        if crc != crc32c::crc32c(&b[0..32]) {
            return Err(bad("log anchor checksum mismatch"));
        }
        let a = Anchor {
            start_lsn: Lsn(u64::from_le_bytes(b[8..16].try_into().expect("8 bytes"))),
            durable_floor: Lsn(u64::from_le_bytes(b[16..24].try_into().expect("8 bytes"))),
            unsynced_window_bytes: u64::from_le_bytes(b[24..32].try_into().expect("8 bytes")),
        };
        if a.durable_floor < a.start_lsn {
            return Err(bad("log anchor's durable floor lies below its start"));
        }
        Ok(Some(a))
    }

    /// Writes and syncs the anchor (rule A1).
    ///
    /// # Errors
    /// I/O errors.
    pub fn write(&self, storage: &dyn Storage) -> Result<()> {
        let created = !storage.exists(ANCHOR_FILE)?;
        let f = storage.open(
            ANCHOR_FILE,
            OpenOptions {
                create: true,
                ..Default::default()
            },
        )?;
        let mut b = [0u8; LEN];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..16].copy_from_slice(&self.start_lsn.0.to_le_bytes());
        b[16..24].copy_from_slice(&self.durable_floor.0.to_le_bytes());
        b[24..32].copy_from_slice(&self.unsynced_window_bytes.to_le_bytes());
        let crc = crc32c::crc32c(&b[0..32]);
        b[32..36].copy_from_slice(&crc.to_le_bytes());
        f.write_all_at(&b, 0)?;
        f.sync_data()?;
        if created {
            storage.sync_dir()?;
        }
        Ok(())
    }
}
