//! # Storage I/O
//!
//! Job: every byte Shoal reads or writes goes through the [`Storage`] / [`StorageFile`]
//! traits, so that tests can swap the real file system ([`file::FileStorage`]) for a
//! fault-injecting simulation ([`fault::FaultStorage`]) that loses unsynced writes, tears
//! writes at 512-byte boundaries, fails calls with `EIO` or runs out of space, on a schedule
//! fixed by a seed (STYLE.md practice 10; in the manner of SQLite's `test6.c` and redb's crash
//! backend).
//!
//! What is assumed of the disk (also in `docs/format.md`): writes of 512-byte aligned sectors
//! are atomic per sector but a multi-sector write may be torn at any sector boundary; data is
//! durable only after `sync_data` returns `Ok`; after a failed `sync_data` the state of
//! unsynced data is unknown (the kernel may have dropped it), so callers must treat the
//! failure as sticky.
//!
//! Invariants:
//! 1. Positioned I/O only: no shared file cursor, so concurrent reads and writes of
//!    different ranges need no lock.
//! 2. `read_exact_at` either fills the whole buffer or fails; a read past end of file is an
//!    error, never a short read passed upward.
//! 3. Every error names the operation and the file.
//!
//! Latching: implementations may hold internal mutexes for bookkeeping (the fault
//! injector does), never across calls into other Shoal components.

pub mod aligned;
pub mod fault;
pub mod file;

pub use aligned::AlignedBuf;
pub use fault::{
    FaultConfig, FaultEvent, FaultKind, FaultRule, FaultStorage, OpClass, OpCounts, Trigger,
};
pub use file::FileStorage;

use crate::error::{Error, Result};
use std::fmt;
use std::sync::Arc;

/// Alignment in bytes of buffers and offsets for `O_DIRECT` I/O, and the sector size at which
/// writes may tear.
pub const SECTOR_SIZE: usize = 512;
/// Alignment in bytes of [`AlignedBuf`] (the largest logical block size we support for
/// `O_DIRECT`).
pub const IO_ALIGN: usize = 4096;

/// Longest file name in bytes accepted by [`check_file_name`] (Linux `NAME_MAX`).
pub const FILE_NAME_MAX_BYTES: usize = 255;

/// Checks that `name` is a plain file name usable by every [`Storage`]: non-empty, at most
/// [`FILE_NAME_MAX_BYTES`] bytes, no `/` and no NUL byte, and neither `.` nor `..`.
///
/// Both storages call it first in every method that takes a name, so that a bad name is the
/// same typed error on the real file system and in the simulation.
///
/// # Errors
/// `Error::InvalidArgument` (parameter `name`) saying which rule the name breaks.
pub fn check_file_name(name: &str) -> Result<()> {
    let reason = if name.is_empty() {
        "must not be empty"
    } else if name == "." || name == ".." {
        "must not be `.` or `..`"
    } else if name.contains('/') {
        "must not contain `/`"
    } else if name.contains('\0') {
        "must not contain a NUL byte"
    } else if name.len() > FILE_NAME_MAX_BYTES {
        "must be at most 255 bytes long"
    } else {
        return Ok(());
    };
    Err(Error::invalid(
        "name",
        format!("file name {name:?} {reason}"),
    ))
}

/// How to open a file of a [`Storage`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// Create the file if it does not exist (and `sync_dir` the directory after creating it).
    pub create: bool,
    /// Fail with `Error::Io` (`AlreadyExists`) if the file exists.
    pub create_new: bool,
    /// Bypass the OS page cache (`O_DIRECT`). Buffers, offsets and lengths must then be
    /// multiples of [`SECTOR_SIZE`]; use [`AlignedBuf`].
    pub direct: bool,
}

/// One open file: positioned reads and writes, durability and size.
///
/// All offsets and lengths are in bytes. Implementations are `Send + Sync`; concurrent calls
/// on disjoint ranges are allowed (io rule 1).
pub trait StorageFile: Send + Sync + fmt::Debug {
    /// Reads exactly `buf.len()` bytes at `offset`.
    ///
    /// # Errors
    /// `Error::Io` if the OS call fails or the range extends past end of file
    /// (`UnexpectedEof`).
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()>;

    /// Writes all of `buf` at `offset`, extending the file if needed.
    ///
    /// # Errors
    /// `Error::NoSpace` when the device is full, `Error::Io` otherwise.
    fn write_all_at(&self, buf: &[u8], offset: u64) -> Result<()>;

    /// Makes all completed writes durable (`fdatasync`).
    ///
    /// # Errors
    /// `Error::Io`. After an error, which earlier writes are durable is unknown.
    fn sync_data(&self) -> Result<()>;

    /// Current length of the file in bytes.
    ///
    /// # Errors
    /// `Error::Io`.
    fn len(&self) -> Result<u64>;

    /// Whether the file has length zero.
    ///
    /// # Errors
    /// `Error::Io`.
    fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Sets the file length in bytes (grows with zeroes or truncates). Growth is durable
    /// only after the next `sync_data`.
    ///
    /// # Errors
    /// `Error::NoSpace` when the device is full, `Error::Io` otherwise.
    fn set_len(&self, len_bytes: u64) -> Result<()>;

    /// The file's name, for error messages.
    fn name(&self) -> &str;
}

/// A directory of files: the data file(s) of a database and, later, its log segments.
pub trait Storage: Send + Sync + fmt::Debug {
    /// Opens (or with `opts.create` creates) the file `name` in this directory.
    ///
    /// # Errors
    /// `Error::Io` if the file is missing (without `create`), exists (with `create_new`) or
    /// cannot be opened; `Error::InvalidArgument` if `name` is not a plain file name
    /// ([`check_file_name`]).
    fn open(&self, name: &str, opts: OpenOptions) -> Result<Arc<dyn StorageFile>>;

    /// Whether file `name` exists.
    ///
    /// # Errors
    /// `Error::InvalidArgument` for a bad name ([`check_file_name`]); `Error::Io` if the
    /// directory cannot be examined.
    fn exists(&self, name: &str) -> Result<bool>;

    /// Deletes file `name`. The removal is durable only after the next
    /// [`sync_dir`](Storage::sync_dir).
    ///
    /// # Errors
    /// `Error::InvalidArgument` for a bad name ([`check_file_name`]); `Error::Io` (including
    /// `NotFound`).
    fn remove(&self, name: &str) -> Result<()>;

    /// Names of the files in the directory, sorted.
    ///
    /// # Errors
    /// `Error::Io`.
    fn list(&self) -> Result<Vec<String>>;

    /// Makes file creations and removals in the directory durable (`fsync` of the directory).
    ///
    /// # Errors
    /// `Error::Io`.
    fn sync_dir(&self) -> Result<()>;
}

/// Opens (creating it) the file `data.shoal` in directory `dir` of the real file system.
/// For tests.
#[cfg(test)]
#[cfg_attr(loom, allow(dead_code))] // its tests do not run under loom
pub(crate) fn test_data_file(dir: &std::path::Path) -> Arc<dyn StorageFile> {
    FileStorage::open_dir(dir, true)
        .expect("open test directory")
        .open(
            "data.shoal",
            OpenOptions {
                create: true,
                ..Default::default()
            },
        )
        .expect("open test data file")
}
