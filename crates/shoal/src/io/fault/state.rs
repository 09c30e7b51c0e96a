//! The simulated machine behind the lock: namespace, files, rules, counters, and the
//! transitions of every call (fault rules 1–8 of the module essay).

use super::config::{FaultConfig, FaultEvent, FaultKind, FaultRule, OpClass, OpCounts, Trigger};
use super::inode::Inode;
use crate::error::{Error, Result};
use crate::io::{OpenOptions, SECTOR_SIZE};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::fmt;
use std::io;

/// Identity of a file's contents, independent of its name.
pub(super) type InodeId = u64;

/// The payload of the `io::Error` in every error caused by the simulated crash.
#[derive(Debug)]
pub(super) struct SimulatedCrash {
    /// True when the machine is back up but the handle predates the crash.
    pub(super) stale_handle: bool,
}

impl fmt::Display for SimulatedCrash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.stale_handle {
            f.write_str("file handle was opened before a simulated crash; reopen the file")
        } else {
            f.write_str("the simulated machine crashed (power loss); call FaultStorage::restart")
        }
    }
}

impl std::error::Error for SimulatedCrash {}

fn crash_error(op: &'static str, name: &str, stale_handle: bool) -> Error {
    let source = io::Error::other(SimulatedCrash { stale_handle });
    Error::Io {
        op,
        path: name.to_owned(),
        source,
    }
}

/// An error as the kernel would return it, with raw os error `errno`.
pub(super) fn os_error(op: &'static str, name: &str, errno: i32) -> Error {
    Error::from_io(op, name, io::Error::from_raw_os_error(errno))
}

/// A rule with its run-time state.
#[derive(Debug)]
struct ArmedRule {
    rule: FaultRule,
    /// Watched calls since arming.
    seen: u64,
    /// Generator of this rule's random choices.
    rng: SmallRng,
}

/// A 64-bit mix (SplitMix64's finaliser) so that nearby seeds and rule indexes give
/// unrelated generators.
fn mix(seed: u64, index: u64) -> u64 {
    let mut z = seed ^ index.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Everything the simulated machine knows; guarded by one mutex.
#[derive(Debug)]
pub(super) struct State {
    seed: u64,
    rules: Vec<ArmedRule>,
    /// Rules armed so far, ever: the index that seeds the next rule's generator.
    armed_total: u64,
    capacity_bytes: Option<u64>,
    max_file_bytes: u64,
    unsynced_survival: f64,
    refuse_direct: bool,
    /// Generator of the survival draws at power loss (fault rule 2).
    crash_rng: SmallRng,
    /// The directory as reads see it.
    names: BTreeMap<String, InodeId>,
    /// The directory as a power loss leaves it (fault rule 4).
    names_durable: BTreeMap<String, InodeId>,
    inodes: BTreeMap<InodeId, Inode>,
    next_inode: InodeId,
    /// Bumped at each crash; handles of an older generation are dead (fault rule 7).
    pub(super) generation: u64,
    pub(super) crashed: bool,
    pub(super) counts: OpCounts,
    pub(super) events: Vec<FaultEvent>,
}

impl State {
    pub(super) fn new(config: FaultConfig) -> Result<State> {
        let p = config.unsynced_survival;
        if !(0.0..=1.0).contains(&p) {
            let reason = format!("{p} is not a probability within 0.0..=1.0");
            return Err(Error::invalid("unsynced_survival", reason));
        }
        let mut state = State {
            seed: config.seed,
            rules: Vec::new(),
            armed_total: 0,
            capacity_bytes: config.capacity_bytes,
            max_file_bytes: config.max_file_bytes,
            unsynced_survival: p,
            refuse_direct: config.refuse_direct,
            crash_rng: SmallRng::seed_from_u64(mix(config.seed, u64::MAX)),
            names: BTreeMap::new(),
            names_durable: BTreeMap::new(),
            inodes: BTreeMap::new(),
            next_inode: 1,
            generation: 0,
            crashed: false,
            counts: OpCounts::default(),
            events: Vec::new(),
        };
        for rule in config.rules {
            state.arm(rule)?;
        }
        Ok(state)
    }

    pub(super) fn arm(&mut self, rule: FaultRule) -> Result<()> {
        rule.validate()?;
        let rng = SmallRng::seed_from_u64(mix(self.seed, self.armed_total));
        self.armed_total += 1;
        self.rules.push(ArmedRule { rule, seen: 0, rng });
        Ok(())
    }

    pub(super) fn disarm_all(&mut self) {
        self.rules.clear();
    }

    /// Fails if the machine is down, or if a handle of generation `generation` predates the
    /// last crash (fault rule 7).
    pub(super) fn check_up(&self, generation: u64, op: &'static str, name: &str) -> Result<()> {
        if self.crashed {
            Err(crash_error(op, name, false))
        } else if generation != self.generation {
            Err(crash_error(op, name, true))
        } else {
            Ok(())
        }
    }

    /// Counts a call of class `op` and asks every rule whether it fires (fault rule 6).
    /// Returns the first firing rule's kind and index, after recording the event.
    fn check_faults(
        &mut self,
        op: OpClass,
        op_name: &'static str,
        name: &str,
        grows: bool,
    ) -> Option<(FaultKind, usize)> {
        match op {
            OpClass::Read => self.counts.reads += 1,
            OpClass::Write => self.counts.writes += 1,
            OpClass::Sync => self.counts.syncs += 1,
            OpClass::CrashPoint => {}
        }
        if matches!(op, OpClass::Write | OpClass::Sync) {
            self.counts.crash_points += 1;
        }
        let mut fired = None;
        for (index, armed) in self.rules.iter_mut().enumerate() {
            if !armed.rule.watches(op, name, grows) {
                continue;
            }
            armed.seen += 1;
            let fires = match armed.rule.trigger {
                Trigger::Nth(n) => armed.seen == n,
                Trigger::Probability(p) => armed.rng.random_bool(p),
            };
            if fires && fired.is_none() {
                fired = Some((armed.rule.kind, index));
            }
        }
        if let Some((kind, _)) = fired {
            self.record(kind, op_name, name);
        }
        fired
    }

    fn record(&mut self, kind: FaultKind, op: &'static str, name: &str) {
        self.events.push(FaultEvent {
            kind,
            op,
            file: name.to_owned(),
            crash_point: self.counts.crash_points,
            torn_sectors: None,
        });
    }

    /// The error for a fired fault that needs no special handling by the call; crashes the
    /// machine for power loss (and a torn write on a call that is not a write).
    fn fail(&mut self, kind: FaultKind, op: &'static str, name: &str) -> Error {
        match kind {
            FaultKind::PowerLoss | FaultKind::TornWrite => {
                self.power_loss();
                crash_error(op, name, false)
            }
            FaultKind::Eio => os_error(op, name, libc::EIO),
            FaultKind::NoSpace => Error::NoSpace {
                op,
                path: name.to_owned(),
            },
        }
    }

    /// Power loss (fault rules 2 and 4): unsynced data and unsynced directory changes are
    /// gone, files no durable name refers to are gone, every handle is dead.
    pub(super) fn power_loss(&mut self) {
        self.crashed = true;
        self.generation += 1;
        self.names.clone_from(&self.names_durable);
        let live: Vec<InodeId> = self.names_durable.values().copied().collect();
        self.inodes.retain(|id, _| live.contains(id));
        let (p, rng) = (self.unsynced_survival, &mut self.crash_rng);
        for inode in self.inodes.values_mut() {
            // No draw at all when nothing can survive, so the default stays cheap.
            inode.power_loss(|| p > 0.0 && rng.random_bool(p));
        }
    }

    /// Crash on demand (`crash_now`, or `restart` of a running machine).
    pub(super) fn crash_now(&mut self, op: &'static str) {
        if !self.crashed {
            self.record(FaultKind::PowerLoss, op, "");
            self.power_loss();
        }
    }

    /// Drops an inode that no name, durable name or handle refers to any more.
    fn collect(&mut self, id: InodeId) {
        let referenced = self.names.values().any(|&i| i == id)
            || self.names_durable.values().any(|&i| i == id)
            || self.inodes.get(&id).is_some_and(|inode| inode.handles > 0);
        if !referenced {
            self.inodes.remove(&id);
        }
    }

    fn inode(&mut self, id: InodeId, op: &'static str, name: &str) -> Result<&mut Inode> {
        // A live handle keeps its inode (fault rule 7), so a miss is a bug of this module;
        // it is still reported as an error rather than a panic.
        self.inodes.get_mut(&id).ok_or_else(|| {
            let source = io::Error::other("simulated file vanished");
            Error::Io {
                op,
                path: name.to_owned(),
                source,
            }
        })
    }

    /// The checked length `offset + len` of a write or `set_len`, as `usize`.
    fn checked_end(&self, op: &'static str, name: &str, offset: u64, len: usize) -> Result<usize> {
        offset
            .checked_add(len as u64)
            .filter(|&end| end <= self.max_file_bytes)
            .and_then(|end| usize::try_from(end).ok())
            .ok_or_else(|| os_error(op, name, libc::EFBIG))
    }

    /// Fails with `NoSpace` if growing a file from `old` to `new` bytes exceeds the capacity.
    fn check_capacity(&self, op: &'static str, name: &str, old: usize, new: usize) -> Result<()> {
        let Some(capacity) = self.capacity_bytes else {
            return Ok(());
        };
        let total: u64 = self.inodes.values().map(|i| i.len() as u64).sum();
        if new > old && total - old as u64 + new as u64 > capacity {
            return Err(Error::NoSpace {
                op,
                path: name.to_owned(),
            });
        }
        Ok(())
    }

    pub(super) fn open(&mut self, name: &str, opts: OpenOptions) -> Result<InodeId> {
        self.check_up(self.generation, "open", name)?;
        if opts.direct && self.refuse_direct {
            return Err(os_error("open", name, libc::EINVAL)); // fault rule 8
        }
        let id = match self.names.get(name) {
            Some(_) if opts.create_new => return Err(os_error("open", name, libc::EEXIST)),
            Some(&id) => id,
            None if !(opts.create || opts.create_new) => {
                return Err(os_error("open", name, libc::ENOENT))
            }
            None => {
                let id = self.next_inode;
                self.next_inode += 1;
                self.inodes.insert(id, Inode::default());
                self.names.insert(name.to_owned(), id);
                // Creating syncs the directory, as `FileStorage` does (fault rule 4).
                self.names_durable.clone_from(&self.names);
                id
            }
        };
        self.inode(id, "open", name)?.handles += 1;
        Ok(id)
    }

    /// A handle of generation `generation` was dropped.
    pub(super) fn release(&mut self, id: InodeId, generation: u64) {
        if generation != self.generation {
            return;
        }
        if let Some(inode) = self.inodes.get_mut(&id) {
            inode.handles = inode.handles.saturating_sub(1);
        }
        self.collect(id);
    }

    pub(super) fn exists(&self, name: &str) -> Result<bool> {
        self.check_up(self.generation, "exists", name)?;
        Ok(self.names.contains_key(name))
    }

    pub(super) fn remove(&mut self, name: &str) -> Result<()> {
        self.check_up(self.generation, "remove", name)?;
        let id = self
            .names
            .remove(name)
            .ok_or_else(|| os_error("remove", name, libc::ENOENT))?;
        self.collect(id);
        Ok(())
    }

    pub(super) fn list(&self) -> Result<Vec<String>> {
        self.check_up(self.generation, "list", "")?;
        Ok(self.names.keys().cloned().collect())
    }

    /// `sync_dir`. A failed directory sync makes nothing durable, and a later one may.
    pub(super) fn sync_dir(&mut self) -> Result<()> {
        self.check_up(self.generation, "sync_dir", "")?;
        if let Some((kind, _)) = self.check_faults(OpClass::Sync, "sync_dir", "", false) {
            return Err(self.fail(kind, "sync_dir", ""));
        }
        self.names_durable.clone_from(&self.names);
        let ids: Vec<InodeId> = self.inodes.keys().copied().collect();
        for id in ids {
            self.collect(id);
        }
        Ok(())
    }

    pub(super) fn read(
        &mut self,
        id: InodeId,
        name: &str,
        buf: &mut [u8],
        offset: u64,
    ) -> Result<()> {
        if buf.is_empty() {
            return Ok(()); // as `FileExt::read_exact_at`: no system call, so not counted
        }
        if let Some((kind, _)) = self.check_faults(OpClass::Read, "read", name, false) {
            return Err(self.fail(kind, "read", name));
        }
        let data = self.inode(id, "read", name)?.volatile();
        let range = usize::try_from(offset)
            .ok()
            .and_then(|start| Some(start..start.checked_add(buf.len())?))
            .filter(|r| r.end <= data.len());
        match range {
            Some(r) => {
                buf.copy_from_slice(&data[r]);
                Ok(())
            }
            None => {
                let source = io::Error::new(io::ErrorKind::UnexpectedEof, "read past end of file");
                Err(Error::from_io("read", name, source))
            }
        }
    }

    pub(super) fn write(&mut self, id: InodeId, name: &str, buf: &[u8], offset: u64) -> Result<()> {
        if buf.is_empty() {
            return Ok(()); // as `FileExt::write_all_at`: no system call, so not counted
        }
        let end = self.checked_end("write", name, offset, buf.len())?;
        let start = end - buf.len();
        let old = self.inode(id, "write", name)?.len();
        let grows = end > old;
        if let Some((kind, rule)) = self.check_faults(OpClass::Write, "write", name, grows) {
            let torn_bytes =
                (kind == FaultKind::TornWrite).then(|| self.tear(rule, start, buf.len()));
            let err = self.fail(kind, "write", name);
            // After the power loss, so that no older unsynced change that survives it
            // (fault rule 2) lands on top of the newer torn sectors.
            if let (Some(n), Some(inode)) = (torn_bytes, self.inodes.get_mut(&id)) {
                inode.persist_after_crash(start, &buf[..n]);
            }
            return Err(err);
        }
        if grows {
            self.check_capacity("write", name, old, end)?;
        }
        self.inode(id, "write", name)?.write(start, buf);
        Ok(())
    }

    /// A torn write (fault rule 3): of the n sectors that a write of `len` bytes at `start`
    /// touches, the first k reach the platter, k drawn uniformly from 0..=n by the firing
    /// rule's generator. Returns how many of the write's bytes that is.
    fn tear(&mut self, rule: usize, start: usize, len: usize) -> usize {
        let sector = SECTOR_SIZE;
        let end = start + len;
        let sectors = if len == 0 {
            0
        } else {
            (end - 1) / sector - start / sector + 1
        };
        let kept = match self.rules.get_mut(rule) {
            Some(armed) => armed.rng.random_range(0..=sectors),
            None => 0,
        };
        if let Some(event) = self.events.last_mut() {
            event.torn_sectors = Some((kept as u64, sectors as u64));
        }
        if kept == sectors {
            len
        } else {
            ((start / sector + kept) * sector).saturating_sub(start)
        }
    }

    pub(super) fn set_len(&mut self, id: InodeId, name: &str, len: u64) -> Result<()> {
        let new = self.checked_end("set_len", name, len, 0)?;
        let old = self.inode(id, "set_len", name)?.len();
        if let Some((kind, _)) = self.check_faults(OpClass::Write, "set_len", name, new > old) {
            return Err(self.fail(kind, "set_len", name));
        }
        self.check_capacity("set_len", name, old, new)?;
        self.inode(id, "set_len", name)?.set_len(new);
        Ok(())
    }

    /// `sync_data`; on an injected EIO the pending writes are lost (fault rule 5).
    pub(super) fn sync(&mut self, id: InodeId, name: &str) -> Result<()> {
        if let Some((kind, _)) = self.check_faults(OpClass::Sync, "sync", name, false) {
            if kind == FaultKind::Eio {
                self.inode(id, "sync", name)?.lose_pending();
            }
            return Err(self.fail(kind, "sync", name));
        }
        self.inode(id, "sync", name)?.sync();
        Ok(())
    }

    pub(super) fn len(&mut self, id: InodeId, name: &str) -> Result<u64> {
        Ok(self.inode(id, "len", name)?.len() as u64)
    }

    /// The inode `name` refers to in the volatile (`durable == false`) or durable directory.
    pub(super) fn lookup(
        &mut self,
        name: &str,
        durable: bool,
        op: &'static str,
    ) -> Result<&mut Inode> {
        let names = if durable {
            &self.names_durable
        } else {
            &self.names
        };
        let id = *names
            .get(name)
            .ok_or_else(|| os_error(op, name, libc::ENOENT))?;
        self.inode(id, op, name)
    }
}
