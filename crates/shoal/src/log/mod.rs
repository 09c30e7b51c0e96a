//! # Log manager (in progress)
//!
//! Write-ahead log: LSNs are byte offsets in one endless address space stored in segment
//! files (DESIGN.md §3.5). Record format ([`record`]), segment files ([`segment`]), readers
//! ([`reader`]), the insert buffer (`buffer`), the anchor (`anchor`) and the manager with its
//! flusher and group commit ([`LogManager`]).

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
