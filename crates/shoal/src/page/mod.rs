//! # Page format
//!
//! Job: define the bytes of a page — the common header ([`header`]), byte access that works
//! on plain buffers and on buffer-pool frames alike ([`bytes`]), and the slotted-page layout
//! that access methods store records in ([`slotted`]). The full byte layout, with
//! endianness (little) and what is assumed of the disk, is in `docs/format.md`.
//!
//! Invariants:
//! 1. Every page starts with the 32-byte header of [`header`]; its CRC32C is set on a
//!    private copy when the page is written and verified when it is read.
//! 2. Nothing in this module trusts an offset read from a page without bounds-checking it:
//!    a corrupt page yields `Error::Corruption`, never a panic or out-of-bounds access.
//!
//! Latching: none here. Callers hold the frame latch the operation needs (S to read, X to
//! write, or an optimistic version they validate afterwards).

pub mod bytes;
pub mod header;
pub mod slotted;

pub use bytes::{AtomicBytes, AtomicBytesMut, PageRead, PageWrite};
pub use header::{PageType, HEADER_SIZE, PAGE_FORMAT_VERSION};
