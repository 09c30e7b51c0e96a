//! The log anchor: a 28-byte file `log.anchor` recording where a scan of the log may start
//! and how far the log is known to be durable.
//!
//! ```text
//! offset size field
//!      0    8 magic          b"SHLOGANC"
//!      8    8 start_lsn      a record boundary at or after which all needed records lie
//!     16    8 durable_floor  every byte below is known to have been synced
//!     24    4 crc            CRC32C of bytes [0, 24)
//! ```
//!
//! Invariants: (A1) the anchor is rewritten in place with one write of less than one 512-byte
//! sector, which the disk model makes atomic, then synced; (A2) `start_lsn` is raised before
//! segments below it are removed; (A3) `durable_floor` is raised only after a sync covered it,
//! so a record that fails to decode below the floor is corruption, above it the end of a log
//! whose tail was torn by a crash.

use crate::error::{Error, Result};
use crate::io::{OpenOptions, Storage};
use crate::types::Lsn;

/// File name of the anchor.
pub const ANCHOR_FILE: &str = "log.anchor";
const MAGIC: [u8; 8] = *b"SHLOGANC";
const LEN: usize = 28;

/// The anchor's contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Anchor {
    /// Where a forward scan of the log starts.
    pub start_lsn: Lsn,
    /// Below this LSN the log is known durable.
    pub durable_floor: Lsn,
}

impl Anchor {
    /// Reads the anchor, `None` if the file does not exist or is empty. An empty anchor is
    /// what a crash between creating the file and syncing its first write leaves (rule A1
    /// makes the write itself atomic); no segment can have been removed before the first
    /// anchor was complete, so the log then starts at its first LSN, as for a missing one.
    ///
    /// # Errors
    /// [`Error::BadFile`] if it is between 1 and 27 bytes long, has a bad magic or checksum,
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
            return Err(bad("log anchor is shorter than 28 bytes"));
        }
        let mut b = [0u8; LEN];
        f.read_exact_at(&mut b, 0)?;
        if b[0..8] != MAGIC {
            return Err(bad("bad magic: not a Shoal log anchor"));
        }
        let crc = u32::from_le_bytes(b[24..28].try_into().expect("4 bytes"));
        if crc != crc32c::crc32c(&b[0..24]) {
            return Err(bad("log anchor checksum mismatch"));
        }
        let a = Anchor {
            start_lsn: Lsn(u64::from_le_bytes(b[8..16].try_into().expect("8 bytes"))),
            durable_floor: Lsn(u64::from_le_bytes(b[16..24].try_into().expect("8 bytes"))),
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
        let crc = crc32c::crc32c(&b[0..24]);
        b[24..28].copy_from_slice(&crc.to_le_bytes());
        f.write_all_at(&b, 0)?;
        f.sync_data()?;
        if created {
            storage.sync_dir()?;
        }
        Ok(())
    }
}
