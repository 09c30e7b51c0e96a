//! # Fault-injecting storage: a simulated disk that crashes on schedule
//!
//! Job: a deterministic, in-memory [`Storage`] for crash and error tests, in the manner of
//! SQLite's crash VFS (`test6.c`), redb's crash backend and TigerBeetle's simulated storage.
//! It keeps, for every file, the bytes that reads see and the bytes that would survive a power
//! loss, and injects faults — power loss, torn writes, `EIO`, full disk — at calls chosen by a
//! seeded schedule ([`FaultConfig`]), so that any failure a test finds is reproduced by
//! running the same calls with the same seed.
//!
//! ```text
//!   write_all_at / set_len ──► volatile image ──(pending list)──► sync_data ──► durable image
//!        reads see ───────────────┘                                            │
//!   power loss / torn write: volatile := durable (+ the torn write's first sectors) ◄┘
//!
//!   a crash test:   run workload, n = op_counts().crash_points
//!                   for k in 1..=n: fresh storage, PowerLoss at CrashPoint k, run workload,
//!                                   restart(), reopen, recover, check
//! ```
//!
//! Invariants and semantics (cited as "fault rule n"):
//! 1. **Two images.** Each file has a volatile image (what `read_exact_at` and `len` see) and
//!    a durable image (what survives a power loss). A successful `write_all_at` or `set_len`
//!    changes the volatile image and is appended to the file's pending list; a successful
//!    `sync_data` applies the pending list to the durable image in order. Without a failed
//!    sync, volatile = durable + pending, always.
//! 2. **Power loss** drops every pending change of every file (volatile := durable), unless
//!    [`FaultConfig::unsynced_survival`] lets some reach the disk first, as the kernel's
//!    write-back may have done.
//! 3. **Torn write.** The triggering write is split at the 512-byte sector boundaries of the
//!    file offset into n pieces; the first k (0 ≤ k ≤ n, uniform, from the rule's generator)
//!    are applied to the durable image — only the write's own bytes; the durable image grows
//!    with zeroes if they reach past its end — and then power is lost as in rule 2. A sector
//!    is never torn inside (the disk assumption of the module essay in `io`).
//! 4. **Directory.** Names have a volatile and a durable map too. Creating a file makes the
//!    whole directory durable at once (as [`FileStorage`](crate::io::FileStorage) syncs the
//!    directory after a create); a removal is durable only after `sync_dir`. After a power
//!    loss the names revert to the durable map: a file whose removal was not synced comes
//!    back with its durable contents, a file without a durable name is gone. A removed file
//!    stays readable and writable through handles opened before the removal.
//! 5. **Failed calls.** An injected `EIO` on a read, write or `set_len` changes nothing. An
//!    injected `EIO` on `sync_data` *loses the file's pending changes*: reads still see them
//!    until the next power loss, but no later sync makes them durable — the harsh choice, as
//!    Linux may mark dirty pages clean after a failed write-back (PostgreSQL's "fsyncgate",
//!    2018), so callers must treat a failed sync as sticky. A failed `sync_dir` makes nothing
//!    durable; a later one may succeed. `NoSpace` changes nothing.
//! 6. **Schedule and determinism.** Each call is first counted in [`OpCounts`]; then every
//!    armed rule that watches it counts it too ([`FaultRule`]); a rule with `Nth(n)` fires
//!    when its count reaches n (once), a `Probability(p)` rule draws from its own generator,
//!    seeded from the seed and the rule's arming index. When several fire, the first rule in
//!    arming order wins. A fault strikes *before* the call takes effect (apart from the
//!    persisted sectors of a torn write), so "power loss at crash point k" leaves exactly the
//!    effects of the first k−1 writes and syncs. Given the seed and the sequence of calls (the
//!    order in which callers take the internal lock), the outcome is fully determined.
//! 7. **Down until restart.** After a power loss every call on the storage and on every
//!    handle fails with an `Error::Io` whose source is the simulated crash
//!    ([`FaultStorage::is_crash_error`]) until [`FaultStorage::restart`]. Handles opened
//!    before a crash stay dead after the restart (a generation counter); reopen the files.
//! 8. **`O_DIRECT` alignment.** A handle opened with `direct` refuses offsets, lengths and
//!    buffer addresses that are not multiples of [`SECTOR_SIZE`] with raw os error `EINVAL`,
//!    as Linux does, so a test catches misaligned direct I/O without a real device. Such
//!    calls, like calls with a bad name, are refused before they are counted. With
//!    [`FaultConfig::refuse_direct`], opening with `direct` fails with `EINVAL` instead, as on
//!    a file system without direct I/O. Zero-length
//!    reads and writes succeed at any offset without being counted, as `std`'s
//!    `read_exact_at` / `write_all_at` make no system call for them.
//!
//! Latching: one `parking_lot::Mutex` guards the whole machine; it is held for the copy of
//! each call's bytes and never across calls into anything else (io module essay). That makes
//! the simulation `Send + Sync` but serial: it is a test device, not a fast one.
//!
//! What it deliberately does not do: no reordering of writes *within* the durable image
//! other than by rule 2's survival draw, no lying `fsync` that returns `Ok` without
//! persisting (the harsh `EIO` of rule 5 covers the kernel's known lie), no silent bit rot
//! (corruption is explicit, through [`FaultStorage::corrupt`] and
//! [`FaultStorage::flip_bits`]), no latency or timing model, no sparse files (a file's
//! images are plain byte vectors, at most [`FaultConfig::max_file_bytes`] long), and no
//! faults on `open`, `exists`, `remove`, `list` or `len` beyond the crash of rule 7.

mod config;
mod handle;
mod inode;
mod state;
#[cfg(test)]
mod tests;

pub use config::{
    FaultConfig, FaultEvent, FaultKind, FaultRule, OpClass, OpCounts, Trigger,
    DEFAULT_MAX_FILE_BYTES,
};

use super::{check_file_name, OpenOptions, Storage, StorageFile, SECTOR_SIZE};
use crate::error::{Error, Result};
use handle::FaultFile;
use parking_lot::Mutex;
use state::{SimulatedCrash, State};
use std::fmt;
use std::sync::Arc;

/// A deterministic in-memory simulated disk that injects faults on a seeded schedule (see the
/// module documentation for its rules).
///
/// Cloning is cheap and yields another handle on the *same* simulated machine, so a test can
/// hand one clone to the database and keep one to crash, restart and inspect it.
#[derive(Clone)]
pub struct FaultStorage {
    state: Arc<Mutex<State>>,
}

impl FaultStorage {
    /// A running machine with no files and the schedule `config`.
    ///
    /// # Errors
    /// `Error::InvalidArgument` (parameter `rule`) if a rule is invalid
    /// ([`FaultRule::validate`]).
    pub fn new(config: FaultConfig) -> Result<FaultStorage> {
        Ok(FaultStorage {
            state: Arc::new(Mutex::new(State::new(config)?)),
        })
    }

    /// Adds `rule` to the schedule; it counts the calls it watches from now on (fault rule 6).
    ///
    /// # Errors
    /// `Error::InvalidArgument` if the rule is invalid ([`FaultRule::validate`]).
    pub fn arm(&self, rule: FaultRule) -> Result<()> {
        self.state.lock().arm(rule)
    }

    /// Removes every rule; no fault is injected until one is armed again. The arming index
    /// that seeds the next rule's generator keeps counting.
    pub fn disarm_all(&self) {
        self.state.lock().disarm_all();
    }

    /// Power loss now (fault rule 2), as if the power cord were pulled between two calls.
    /// Does nothing if the machine is already down.
    pub fn crash_now(&self) {
        self.state.lock().crash_now("crash_now");
    }

    /// Returns the machine to service: reads see the durable images (fault rule 7). If the
    /// machine is running, it first loses power (a restart without clean shutdown). Rules
    /// stay armed; [`disarm_all`](Self::disarm_all) first if recovery should run fault-free.
    pub fn restart(&self) {
        let mut state = self.state.lock();
        state.crash_now("restart");
        state.crashed = false;
    }

    /// Whether the machine is down (between a crash and [`restart`](Self::restart)).
    pub fn is_crashed(&self) -> bool {
        self.state.lock().crashed
    }

    /// The calls counted so far, across restarts.
    pub fn op_counts(&self) -> OpCounts {
        self.state.lock().counts
    }

    /// Every fault injected so far, oldest first (including `crash_now` and the power loss
    /// of `restart` on a running machine).
    pub fn events(&self) -> Vec<FaultEvent> {
        self.state.lock().events.clone()
    }

    /// Whether `err` was caused by the simulated crash: a call on a machine that is down, or
    /// on a handle opened before the last crash.
    pub fn is_crash_error(err: &Error) -> bool {
        match err {
            Error::Io { source, .. } => source
                .get_ref()
                .is_some_and(|inner| inner.is::<SimulatedCrash>()),
            _ => false,
        }
    }

    /// The durable bytes of the file that the durable directory calls `name`: what a power
    /// loss now would leave. Works while the machine is down; not counted.
    ///
    /// # Errors
    /// `Error::InvalidArgument` for a bad name; `Error::Io` (`ENOENT`) if no durable name
    /// `name` exists.
    pub fn durable_contents(&self, name: &str) -> Result<Vec<u8>> {
        check_file_name(name)?;
        Ok(self
            .state
            .lock()
            .lookup(name, true, "durable_contents")?
            .durable()
            .to_vec())
    }

    /// The bytes reads of file `name` see now. Works while the machine is down; not counted.
    ///
    /// # Errors
    /// `Error::InvalidArgument` for a bad name; `Error::Io` (`ENOENT`) if there is no file
    /// `name`.
    pub fn contents(&self, name: &str) -> Result<Vec<u8>> {
        check_file_name(name)?;
        Ok(self
            .state
            .lock()
            .lookup(name, false, "contents")?
            .volatile()
            .to_vec())
    }

    /// Overwrites `bytes.len()` bytes at byte `offset` of file `name` with `bytes`, in both
    /// images, as damage to the medium would (a later sync of pending writes to the same
    /// bytes overwrites the damage, as it would on a disk). Not counted; no fault fires.
    ///
    /// # Errors
    /// `Error::InvalidArgument` for a bad name or if the range reaches past the end of both
    /// images; `Error::Io` (`ENOENT`) if there is no file `name`.
    pub fn corrupt(&self, name: &str, offset: u64, bytes: &[u8]) -> Result<()> {
        self.damage(name, offset, bytes.len(), |i, _| bytes[i])
    }

    /// XORs the byte at `offset` of file `name` with `mask` (flips the bits set in `mask`), in
    /// both images. Not counted; no fault fires.
    ///
    /// # Errors
    /// As [`corrupt`](Self::corrupt).
    pub fn flip_bits(&self, name: &str, offset: u64, mask: u8) -> Result<()> {
        self.damage(name, offset, 1, |_, old| old ^ mask)
    }

    fn damage(
        &self,
        name: &str,
        offset: u64,
        len: usize,
        f: impl Fn(usize, u8) -> u8,
    ) -> Result<()> {
        check_file_name(name)?;
        let mut state = self.state.lock();
        let inode = state.lookup(name, false, "corrupt")?;
        let size = inode.volatile().len().max(inode.durable().len());
        let start = usize::try_from(offset).ok().filter(|&s| s <= size);
        let Some(start) = start.filter(|&s| len <= size - s) else {
            return Err(Error::invalid(
                "offset",
                format!("{len} bytes at {offset} reach past the end of {name} ({size} bytes)"),
            ));
        };
        inode.corrupt(start, len, f);
        Ok(())
    }
}

impl fmt::Debug for FaultStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("FaultStorage");
        match self.state.try_lock() {
            Some(state) => d
                .field("crashed", &state.crashed)
                .field("generation", &state.generation)
                .field("op_counts", &state.counts),
            None => d.field("state", &"<locked>"),
        };
        d.finish()
    }
}

impl Storage for FaultStorage {
    fn open(&self, name: &str, opts: OpenOptions) -> Result<Arc<dyn StorageFile>> {
        check_file_name(name)?;
        let mut state = self.state.lock();
        let id = state.open(name, opts)?;
        Ok(Arc::new(FaultFile::new(
            Arc::clone(&self.state),
            id,
            state.generation,
            name,
            opts.direct,
        )))
    }

    fn exists(&self, name: &str) -> Result<bool> {
        check_file_name(name)?;
        self.state.lock().exists(name)
    }

    fn remove(&self, name: &str) -> Result<()> {
        check_file_name(name)?;
        self.state.lock().remove(name)
    }

    fn list(&self) -> Result<Vec<String>> {
        self.state.lock().list()
    }

    fn sync_dir(&self) -> Result<()> {
        self.state.lock().sync_dir()
    }
}

/// Checks `O_DIRECT` alignment (fault rule 8).
fn check_direct(op: &'static str, name: &str, addr: usize, len: usize, offset: u64) -> Result<()> {
    let s = SECTOR_SIZE;
    if addr % s == 0 && len % s == 0 && offset % s as u64 == 0 {
        Ok(())
    } else {
        Err(state::os_error(op, name, libc::EINVAL))
    }
}
