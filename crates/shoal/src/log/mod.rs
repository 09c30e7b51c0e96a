//! # Log manager
//!
//! Job: the write-ahead log (DESIGN.md §3.5). LSNs are byte offsets in one endless address
//! space stored in segment files; records are self-identifying, CRC-checked and 8-aligned
//! (`docs/format.md`, "Log records").
//!
//! ```text
//!  append ─► buffer (ring; 1 atomic per reservation, copy outside any lock)
//!                 │  flusher: longest completed prefix ─► segment files ─► fdatasync
//!  commit ─► wait_durable (group commit)  ◄── durable LSN ──┘
//!  open: anchor ─► reader (find the end; torn tail vs damage) ─► truncate, sync
//! ```
//!
//! Parts: [`record`] (format and roles), [`segment`] (files), [`reader`] (forward and
//! backward, end-of-log rule), `buffer` (the ring), `anchor` (start, durable floor, unsynced
//! window), [`LogManager`] (flusher, group commit, durability, sticky failure, direct I/O;
//! its module doc lists the invariants).
//!
//! I/O: by default ([`LogOptions::direct_io`]) the flusher writes the ring with `O_DIRECT`
//! in whole 4 KiB blocks, rewriting the partial last block at the next flush (manager rules
//! 9–12: why that never damages durable bytes), and falls back to buffered writes where the
//! file system refuses `O_DIRECT`; reads always go through the page cache.
//!
//! What the records mean is decided above this layer: transactions and full-page images in
//! [`crate::txn`], restart and checkpoints in [`crate::recovery`]. Not done here: segment
//! files are not preallocated.

mod anchor;
mod buffer;
mod manager;
mod options;
pub mod reader;
pub mod record;
pub mod segment;

pub use anchor::{Anchor, ANCHOR_FILE};
pub(crate) use manager::LaneHold;
pub use manager::{Lane, LogManager, LogStats, FIRST_LSN};
pub use options::{Durability, LogOptions, LANE_AFTER_RECORDS};

#[cfg(all(test, not(loom)))]
mod lane_tests;
#[cfg(all(test, not(loom)))]
mod tests;
