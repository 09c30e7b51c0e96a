//! Log manager options.

use crate::error::{Error, Result};

/// When `LogManager::commit` returns (DESIGN.md §3.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Durability {
    /// Commit returns after its commit record is on stable storage (fdatasync). Nothing a
    /// commit acknowledged is lost by a crash.
    #[default]
    Full,
    /// Commit returns at once; the flusher makes the log durable at least every
    /// `lazy_flush_interval_ms`. A crash loses at most the commits of that last interval
    /// (never a part of one: recovery rolls back what has no durable commit record).
    Lazy,
}

/// Settings of the log manager, with units in their names.
#[derive(Clone, Debug)]
pub struct LogOptions {
    /// Size of one segment file in bytes: a power of two from 64 KiB to 1 GiB. Default 64 MiB.
    pub segment_size_bytes: u64,
    /// Size of the in-memory insert buffer in bytes: a power of two of at least 64 KiB; a
    /// record may be at most a quarter of it. Default 16 MiB.
    pub buffer_size_bytes: usize,
    /// What a commit waits for. Default `Full`.
    pub durability: Durability,
    /// With `Lazy`, the longest time in milliseconds before appended records are synced.
    /// Default 10.
    pub lazy_flush_interval_ms: u64,
    /// Write the log with `O_DIRECT` where the file system accepts it: the flusher writes
    /// whole 4 KiB blocks straight from the insert buffer, with no copy into the OS page
    /// cache, and rewrites the partial last block at the next flush (log manager rules 9–12).
    /// Where `O_DIRECT` is refused (`EINVAL` at open, e.g. tmpfs before Linux 6.6) the log is
    /// written through the page cache instead, as with `false`;
    /// [`LogManager::direct_io`](super::LogManager::direct_io) says which mode is in use.
    /// Reads always go through the page cache. Default `true`.
    pub direct_io: bool,
    /// How far past the written end, in bytes, a background thread keeps the segment files
    /// filled with zeros and synced (segment rule 6), so that commits overwrite blocks the
    /// file system has already allocated and their `fdatasync` does not also commit a new
    /// file size (on ext4 it then takes about half as long). Zero-filling runs in steps of
    /// 1 MiB and reaches at most one segment ahead. Only with `Full` durability: with
    /// `Lazy` no commit waits for a sync, and zeros would only double the bytes written.
    /// 0 turns it off; otherwise it must be at least 64 KiB. Default 4 MiB.
    pub preallocate_bytes: u64,
    /// Page changes a user transaction logs before its thread's log lane turns on
    /// (`LogManager` lane rules; transaction rule 11): from then on that thread claims log a
    /// chunk at a time (up to 32 KiB under `Lazy`, 16 KiB under `Full`, where every commit
    /// pads the other lanes' open chunks) instead of touching the shared reservation
    /// counter for every record. Default [`LANE_AFTER_RECORDS`] (256): more than a TPC-C
    /// New-Order or Delivery logs, so only bulk writers use lanes. 0 turns lanes off.
    ///
    /// Tested with lanes on from every transaction's second change: the whole test suite in
    /// a `lanes-everywhere` build (CI), and the concurrent B-tree crash matrix
    /// (`concurrent_btree_in_log_lanes_*` in `tests/btree_crash.rs`; `docs/benchmarks.md`,
    /// engine updates 26 and 27).
    pub lane_after_records: u32,
}

/// The default [`LogOptions::lane_after_records`]: more page changes than a TPC-C
/// New-Order or Delivery logs, so only bulk writers, whose padding is small beside their
/// log, use lanes.
pub const LANE_AFTER_RECORDS: u32 = 256;

/// The default [`LogOptions::lane_after_records`]: [`LANE_AFTER_RECORDS`], or 1 (lanes on
/// from a user transaction's second page change) in a build with the test-only
/// `lanes-everywhere` feature, which runs the whole test suite in lanes.
const DEFAULT_LANE_AFTER_RECORDS: u32 = if cfg!(feature = "lanes-everywhere") {
    1
} else {
    LANE_AFTER_RECORDS
};

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions {
            segment_size_bytes: 64 << 20,
            buffer_size_bytes: 16 << 20,
            durability: Durability::Full,
            lazy_flush_interval_ms: 10,
            direct_io: true,
            preallocate_bytes: 4 << 20,
            lane_after_records: DEFAULT_LANE_AFTER_RECORDS,
        }
    }
}

impl LogOptions {
    /// Checks the ranges documented on each field.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        if !self.segment_size_bytes.is_power_of_two()
            || !(64 << 10..=1 << 30).contains(&self.segment_size_bytes)
        {
            return Err(Error::invalid(
                "segment_size_bytes",
                format!(
                    "{} is not a power of two from 65536 to 2^30",
                    self.segment_size_bytes
                ),
            ));
        }
        if !self.buffer_size_bytes.is_power_of_two() || self.buffer_size_bytes < 64 << 10 {
            return Err(Error::invalid(
                "buffer_size_bytes",
                format!(
                    "{} is not a power of two of at least 65536",
                    self.buffer_size_bytes
                ),
            ));
        }
        if self.preallocate_bytes != 0 && self.preallocate_bytes < 64 << 10 {
            return Err(Error::invalid(
                "preallocate_bytes",
                format!(
                    "{} is neither 0 (off) nor at least 65536",
                    self.preallocate_bytes
                ),
            ));
        }
        if self.lazy_flush_interval_ms == 0 {
            return Err(Error::invalid(
                "lazy_flush_interval_ms",
                "must be at least 1",
            ));
        }
        Ok(())
    }
}
