//! The fault schedule: which faults [`FaultStorage`](super::FaultStorage) injects, at which
//! operations, and the counters a test reads back.
//!
//! A schedule is a seed plus an ordered list of [`FaultRule`]s. A rule is a [`FaultKind`]
//! (what goes wrong), an [`OpClass`] (which calls it watches), a [`Trigger`] (the n-th
//! watched call, or each watched call with probability p) and an optional file-name prefix.
//! Each rule counts the calls it watches from the moment it is armed and draws from its own
//! random-number generator, seeded from the schedule's seed and the rule's arming index, so
//! adding a rule does not change when the others fire.

use crate::error::{Error, Result};

/// What goes wrong when a rule fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// Power loss before the call takes effect: every unsynced write on every file is
    /// dropped and the machine is down until [`restart`](super::FaultStorage::restart).
    PowerLoss,
    /// The write being made persists only a prefix of its 512-byte sectors (sector boundaries
    /// are those of the file offset; the number of sectors, possibly zero, is drawn from the
    /// rule's generator), then power is lost as for [`FaultKind::PowerLoss`]. On a call that
    /// is not a write (a sync watched by [`OpClass::CrashPoint`], or a `set_len`) it is plain
    /// power loss.
    TornWrite,
    /// The call fails with `Error::Io` whose source has raw os error `EIO`. A failed write
    /// changes nothing; a failed `sync_data` drops the file's pending writes (fault rule 5).
    Eio,
    /// The call fails with `Error::NoSpace`. Only calls that would grow a file (a write past
    /// the end, a growing `set_len`) are watched by a rule of this kind.
    NoSpace,
}

/// Which calls a rule watches (and which counter of [`OpCounts`] they advance).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpClass {
    /// `read_exact_at`.
    Read,
    /// `write_all_at` and `set_len`: the calls that change a file's contents.
    Write,
    /// `sync_data` and `sync_dir`: the calls that make changes durable.
    Sync,
    /// Every write or sync: the points at which a crash can leave a different durable state.
    CrashPoint,
}

impl OpClass {
    /// Whether a call of class `op` (never `CrashPoint` itself) is watched by this class.
    pub(super) fn watches(self, op: OpClass) -> bool {
        self == op || (self == OpClass::CrashPoint && matches!(op, OpClass::Write | OpClass::Sync))
    }
}

/// When a rule fires among the calls it watches.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Trigger {
    /// At the n-th watched call after the rule was armed, counting from 1; once.
    Nth(u64),
    /// At each watched call with probability `p` (0.0 to 1.0), drawn from the rule's seeded
    /// generator.
    Probability(f64),
}

/// One entry of a fault schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultRule {
    /// What goes wrong.
    pub kind: FaultKind,
    /// Which calls are watched.
    pub class: OpClass,
    /// When it fires among them.
    pub trigger: Trigger,
    /// If set, only calls on files whose name starts with this prefix are watched
    /// (`sync_dir` has the empty name, so it is watched only by rules without a prefix or
    /// with an empty one).
    pub file_prefix: Option<String>,
}

impl FaultRule {
    /// A rule firing `kind` at the `n`-th call (from 1) of `class`.
    pub fn nth(kind: FaultKind, class: OpClass, n: u64) -> FaultRule {
        FaultRule {
            kind,
            class,
            trigger: Trigger::Nth(n),
            file_prefix: None,
        }
    }

    /// A rule firing `kind` at each call of `class` with probability `p` (0.0 to 1.0).
    pub fn probability(kind: FaultKind, class: OpClass, p: f64) -> FaultRule {
        FaultRule {
            kind,
            class,
            trigger: Trigger::Probability(p),
            file_prefix: None,
        }
    }

    /// Restricts the rule to files whose name starts with `prefix`.
    pub fn on_files(mut self, prefix: impl Into<String>) -> FaultRule {
        self.file_prefix = Some(prefix.into());
        self
    }

    /// Checks that the rule can fire and means what it says.
    ///
    /// # Errors
    /// `Error::InvalidArgument` (parameter `rule`) for `Nth(0)`, a probability outside
    /// 0.0..=1.0 (or NaN), a torn write on reads or syncs only, or no-space on reads or syncs.
    pub fn validate(&self) -> Result<()> {
        let bad = |reason: &str| Err(Error::invalid("rule", format!("{self:?}: {reason}")));
        match self.trigger {
            Trigger::Nth(0) => return bad("Nth counts from 1"),
            Trigger::Probability(p) if !(0.0..=1.0).contains(&p) => {
                return bad("probability must be within 0.0..=1.0")
            }
            _ => {}
        }
        let writes = self.class.watches(OpClass::Write);
        match self.kind {
            FaultKind::TornWrite if !writes => bad("a torn write needs a class that has writes"),
            FaultKind::NoSpace if !writes => bad("no-space needs a class that has writes"),
            _ => Ok(()),
        }
    }

    /// Whether this rule watches a call of class `op` on file `name` that grows the file
    /// (`grows`) or not.
    pub(super) fn watches(&self, op: OpClass, name: &str, grows: bool) -> bool {
        self.class.watches(op)
            && (self.kind != FaultKind::NoSpace || grows)
            && match &self.file_prefix {
                Some(prefix) => name.starts_with(prefix.as_str()),
                None => true,
            }
    }
}

/// Default of [`FaultConfig::max_file_bytes`]: 1 GiB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 1 << 30;

/// A fault schedule for [`FaultStorage`](super::FaultStorage): a seed and rules, plus the
/// size limits of the simulated disk.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultConfig {
    /// Seed of every random choice (probabilistic triggers, torn-write lengths).
    pub seed: u64,
    /// Rules, checked in order; when several fire at one call the first one wins (all of
    /// them still count the call).
    pub rules: Vec<FaultRule>,
    /// If set, the total length in bytes of all files may not exceed this; a write or
    /// `set_len` that would exceed it fails with `Error::NoSpace`.
    pub capacity_bytes: Option<u64>,
    /// Largest length in bytes one file may reach (as a file system's maximum file size);
    /// beyond it a write or `set_len` fails with `Error::Io` (raw os error `EFBIG`). Keeps a
    /// bogus offset from exhausting the test machine's memory.
    pub max_file_bytes: u64,
    /// Probability (0.0 to 1.0) that each unsynced change of a file reaches the disk anyway
    /// at a power loss, as the kernel's write-back may have written it before the crash; the
    /// survivors are chosen independently and applied in their original order. The default
    /// 0.0 drops every unsynced change (fault rule 2); a higher value finds callers that
    /// rely on an unsynced write *not* being durable (a page written before its log record).
    pub unsynced_survival: f64,
    /// Refuse to open files with `O_DIRECT` (raw os error `EINVAL`), as file systems without
    /// direct I/O do (tmpfs before Linux 6.6), so that fallbacks to buffered I/O can be
    /// tested. Default `false`: direct handles work and check alignment (fault rule 8).
    pub refuse_direct: bool,
}

impl Default for FaultConfig {
    fn default() -> FaultConfig {
        FaultConfig::new(0)
    }
}

impl FaultConfig {
    /// A schedule with seed `seed`, no rules, no capacity limit and a 1 GiB file size limit.
    pub fn new(seed: u64) -> FaultConfig {
        FaultConfig {
            seed,
            rules: Vec::new(),
            capacity_bytes: None,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            unsynced_survival: 0.0,
            refuse_direct: false,
        }
    }

    /// Adds a rule (checked when the storage is built).
    pub fn rule(mut self, rule: FaultRule) -> FaultConfig {
        self.rules.push(rule);
        self
    }

    /// Limits the total length of all files to `bytes`.
    pub fn capacity_bytes(mut self, bytes: u64) -> FaultConfig {
        self.capacity_bytes = Some(bytes);
        self
    }

    /// Sets the largest length of one file to `bytes`.
    pub fn max_file_bytes(mut self, bytes: u64) -> FaultConfig {
        self.max_file_bytes = bytes;
        self
    }

    /// Sets [`unsynced_survival`](Self::unsynced_survival), the probability that an unsynced
    /// change survives a power loss (checked when the storage is built).
    pub fn unsynced_survival(mut self, p: f64) -> FaultConfig {
        self.unsynced_survival = p;
        self
    }

    /// Sets [`refuse_direct`](Self::refuse_direct): opening with `O_DIRECT` fails with
    /// `EINVAL`.
    pub fn refuse_direct(mut self) -> FaultConfig {
        self.refuse_direct = true;
        self
    }
}

/// How many calls of each class the storage has counted since it was built (across
/// restarts). Calls refused because the machine is down, or refused before reaching the
/// disk (a bad name, a misaligned `O_DIRECT` buffer), are not counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpCounts {
    /// `read_exact_at` calls.
    pub reads: u64,
    /// `write_all_at` and `set_len` calls.
    pub writes: u64,
    /// `sync_data` and `sync_dir` calls.
    pub syncs: u64,
    /// Writes plus syncs: the crash points, numbered from 1 for [`OpClass::CrashPoint`].
    pub crash_points: u64,
}

/// A record of one fault that fired, for test diagnostics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultEvent {
    /// What happened.
    pub kind: FaultKind,
    /// The call it happened at (`read`, `write`, `set_len`, `sync`, `sync_dir`, or `crash_now`).
    pub op: &'static str,
    /// The file's name (empty for `sync_dir` and `crash_now`).
    pub file: String,
    /// The crash-point count at the time (how many writes and syncs had been counted).
    pub crash_point: u64,
    /// For a torn write: how many of the write's sectors persisted, out of how many.
    pub torn_sectors: Option<(u64, u64)>,
}
