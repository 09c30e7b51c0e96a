//! Engine options with documented defaults and units.

use crate::error::{Error, Result};

/// Smallest page size accepted, in bytes (DESIGN.md §3.2).
pub const PAGE_SIZE_MIN_BYTES: usize = 4096;
/// Largest page size accepted, in bytes (DESIGN.md §3.2).
pub const PAGE_SIZE_MAX_BYTES: usize = 65536;
/// Default page size, in bytes.
pub const PAGE_SIZE_DEFAULT_BYTES: usize = 8192;
/// Pages per extent: the unit in which the space manager grows files and reserves pages.
pub const EXTENT_PAGES: u64 = 64;

/// Settings of a Shoal database. Every field has a unit in its name and a default that suits
/// a small server; [`Options::validate`] rejects values out of range.
#[derive(Clone, Debug)]
pub struct Options {
    /// Size of the buffer pool in bytes; the pool has `pool_size_bytes / page_size_bytes`
    /// frames, allocated once at open. Default 128 MiB. At least 16 frames.
    pub pool_size_bytes: usize,
    /// Page size in bytes, fixed when the database is created: a power of two from 4 KiB to
    /// 64 KiB. Default 8 KiB.
    pub page_size_bytes: usize,
    /// Open data files with `O_DIRECT` (bypass the OS page cache). Default `false`. Where the
    /// file system refuses `O_DIRECT` (tmpfs), opening fails with [`Error::Io`].
    pub direct_io: bool,
    /// Run the background page cleaner. Default `true`.
    pub cleaner_enabled: bool,
    /// Milliseconds the page cleaner sleeps between passes when nobody wakes it. Default 100.
    pub cleaner_interval_ms: u64,
    /// Largest number of pages the cleaner writes in one batch before it yields. Default 128.
    pub cleaner_batch_pages: usize,
    /// How far, in bytes of log, a dirty page's recovery LSN may lag the end of the log
    /// before the cleaner writes it back, while dirty pages fill at most half the pool.
    /// Writing a page that is dirtied again at once buys nothing but I/O, so a hot page of
    /// a memory-resident database is written about once per this much log rather than on
    /// every pass — and, once written since its full-page image, not again until a checkpoint
    /// begins after that image (before then the write cannot advance its recovery LSN:
    /// `buffer::cleaner`, "Futile writes"). Default 64 MiB. 0: every pass writes every
    /// dirty page.
    pub cleaner_lag_bytes: u64,
    /// Take a fuzzy checkpoint in the background whenever the log has grown by this many
    /// bytes since the newest checkpoint began (`engine::checkpointer`). It bounds the log
    /// kept on disk and the log a restart redoes to about twice this plus
    /// `cleaner_lag_bytes` (and an active transaction's log since its first record). Each
    /// checkpoint costs a full-page image in the log per page changed after it (torn-page
    /// protection, txn rule 3), so a shorter interval logs more. Default 512 MiB. 0: no
    /// background checkpoints (only [`Engine::checkpoint`](crate::Engine::checkpoint) and a
    /// clean close take one; the log then grows until the database is closed).
    pub checkpoint_log_bytes: u64,
    /// Milliseconds a lock request waits before it fails with `Error::LockTimeout`. Default
    /// 60,000, as Derby's `derby.locks.waitTimeout`; 0 fails at once instead of waiting.
    pub lock_timeout_ms: u64,
    /// Long row locks of one table a transaction may hold before the lock manager tries to
    /// escalate them to a table lock. Default 5,000 (Derby's `derby.locks.escalationThreshold`);
    /// 0 disables escalation.
    pub lock_escalation_threshold: usize,
    /// Most transactions that may hold locks at once. Default 1,024; at most 2^20.
    pub max_lock_owners: usize,
    /// Speculative lock inheritance (Johnson et al., "Improving OLTP Scalability using
    /// Speculative Lock Inheritance", VLDB 2009; `lock` module doc, rule F5): a committed
    /// transaction's table intention locks (IS, IX) stay with its thread, and the thread's
    /// next transaction starts out holding them instead of taking them again. A request
    /// that conflicts with them (DROP TABLE, a table S or X lock) revokes them; it never
    /// waits for an idle thread, nor for an inherited lock the thread's running
    /// transaction has not asked for. Default `true`.
    pub lock_inheritance: bool,
    /// Fault in the buffer pool's memory in a background thread right after open, so that
    /// the first use of a frame does not stall a transaction while the kernel zeroes its
    /// page (about a tenth of the time of an insert-heavy run into fresh memory). The whole
    /// pool is then resident from shortly after open; with `false` it becomes resident as
    /// frames are first used. Linux 5.14 and later (`MADV_POPULATE_WRITE`); elsewhere it
    /// does nothing. Default `true`.
    pub prefault_pool: bool,
    /// Most writing transactions running at once (`txn::admission`): one beyond it waits
    /// before its first write lock for one to end (readers never wait), so that with more
    /// threads than processors a transaction holding a hot lock keeps its processor. A soft
    /// limit: after 50 ms of waiting a transaction runs anyway. Default: one more than the
    /// processors the process may use (the extra slot keeps a processor busy while one
    /// transaction waits for a lock); 0 removes the limit. On 2 cores (`docs/benchmarks.md`,
    /// update 3), limits 0 / 2 / 3 / 4 gave TPC-B at 16 threads 36 k / 129 k / 106 k / 70 k
    /// transactions/s and the TPC-C mix 14.4 k / 12.5 k / 13.9 k / 13.5 k.
    pub max_running_txns: usize,
    /// Transactions in a row a thread may start under the admission limit while others wait
    /// for a slot; then it hands its slot to the longest waiter (`txn::admission`, invariant
    /// 3). At least 1; default [`crate::txn::admission::TURNS`] (16). More turns mean fewer
    /// hand-offs, so more throughput when threads outnumber slots, and longer waits for the
    /// queued threads. On 2 cores with 64 threads (`docs/benchmarks.md`, update 9), 16 / 32 /
    /// 64 turns gave TPC-B 119 k / 128 k / 136 k transactions/s with a 99th-percentile latency
    /// of 9 / 15 / 27 ms, and TPC-C Payment 73 k / 75 k / 80 k/s at 14 / 27 / 46 ms.
    pub admission_turns: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            pool_size_bytes: 128 << 20,
            page_size_bytes: PAGE_SIZE_DEFAULT_BYTES,
            direct_io: false,
            cleaner_enabled: true,
            cleaner_interval_ms: 100,
            cleaner_batch_pages: 128,
            cleaner_lag_bytes: 64 << 20,
            checkpoint_log_bytes: 512 << 20,
            lock_timeout_ms: 60_000,
            lock_escalation_threshold: 5_000,
            max_lock_owners: 1024,
            lock_inheritance: true,
            prefault_pool: true,
            max_running_txns: std::thread::available_parallelism().map_or(4, |n| n.get()) + 1,
            admission_turns: crate::txn::admission::TURNS,
        }
    }
}

impl Options {
    /// Number of frames these options give the buffer pool.
    pub fn frame_count(&self) -> usize {
        self.pool_size_bytes / self.page_size_bytes.max(1)
    }

    /// Checks every field's range.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the first field out of range and its accepted range.
    pub fn validate(&self) -> Result<()> {
        validate_page_size(self.page_size_bytes)?;
        if self.frame_count() < 16 {
            return Err(Error::invalid(
                "pool_size_bytes",
                format!(
                    "{} bytes gives {} frames of {} bytes; at least 16 frames are needed",
                    self.pool_size_bytes,
                    self.frame_count(),
                    self.page_size_bytes
                ),
            ));
        }
        if u32::try_from(self.frame_count()).is_err() || self.frame_count() >= u32::MAX as usize {
            return Err(Error::invalid(
                "pool_size_bytes",
                "more than 2^32 - 1 frames are not supported",
            ));
        }
        if self.cleaner_interval_ms == 0 {
            return Err(Error::invalid("cleaner_interval_ms", "must be at least 1"));
        }
        if self.cleaner_batch_pages == 0 {
            return Err(Error::invalid("cleaner_batch_pages", "must be at least 1"));
        }
        if self.admission_turns == 0 {
            return Err(Error::invalid("admission_turns", "must be at least 1"));
        }
        self.lock_options().validate()
    }

    /// The lock manager's options these options give.
    pub fn lock_options(&self) -> crate::lock::LockOptions {
        crate::lock::LockOptions {
            timeout: std::time::Duration::from_millis(self.lock_timeout_ms),
            escalation_threshold: self.lock_escalation_threshold,
            max_owners: self.max_lock_owners,
            inheritance: self.lock_inheritance,
            ..crate::lock::LockOptions::default()
        }
    }
}

/// Checks that `page_size_bytes` is a power of two in `[4096, 65536]`.
///
/// # Errors
/// [`Error::InvalidArgument`] naming `page_size_bytes`.
pub fn validate_page_size(page_size_bytes: usize) -> Result<()> {
    if !page_size_bytes.is_power_of_two()
        || !(PAGE_SIZE_MIN_BYTES..=PAGE_SIZE_MAX_BYTES).contains(&page_size_bytes)
    {
        return Err(Error::invalid(
            "page_size_bytes",
            format!("{page_size_bytes} is not a power of two from 4096 to 65536"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        Options::default().validate().unwrap();
        assert_eq!(Options::default().frame_count(), 16384);
    }

    #[test]
    fn bad_values_are_named() {
        let o = Options {
            page_size_bytes: 3000,
            ..Options::default()
        };
        let e = o.validate().unwrap_err().to_string();
        assert!(e.contains("page_size_bytes"), "{e}");
        let o = Options {
            pool_size_bytes: 8192 * 15,
            ..Options::default()
        };
        let e = o.validate().unwrap_err().to_string();
        assert!(e.contains("pool_size_bytes"), "{e}");
        let o = Options {
            admission_turns: 0,
            ..Options::default()
        };
        let e = o.validate().unwrap_err().to_string();
        assert!(e.contains("admission_turns"), "{e}");
    }
}
