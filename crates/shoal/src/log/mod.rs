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
//! window), [`LogManager`] (flusher, group commit, durability, sticky failure; its module
//! doc lists the invariants).
//!
//! Not done here yet (log issue): ARIES restart (analysis, redo, undo), checkpoints,
//! full-page images for torn data pages, and transactions; segment files are not preallocated.

mod anchor;
mod buffer;
mod manager;
mod options;
pub mod reader;
pub mod record;
pub mod segment;

pub use anchor::{Anchor, ANCHOR_FILE};
pub use manager::{LogManager, LogStats, FIRST_LSN};
pub use options::{Durability, LogOptions};

#[cfg(all(test, not(loom)))]
mod tests;
