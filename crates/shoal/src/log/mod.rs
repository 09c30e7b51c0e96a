//! # Log manager (in progress)
//!
//! Write-ahead log: LSNs are byte offsets in one endless address space stored in segment
//! files (DESIGN.md §3.5). Being built: record format ([`record`]), segment files
//! ([`segment`]), readers ([`reader`]) and the insert buffer with group commit.

mod buffer;
pub mod reader;
pub mod record;
pub mod segment;
