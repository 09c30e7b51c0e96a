//! Micro-benchmarks: one component of the engine at a time, each a [`MicroBench`] run by
//! [`crate::runner::run_micro`] — except `recovery`, a one-shot measurement of one restart
//! (there is no operation to repeat), which builds its measurement itself.
//!
//! | name | component | file |
//! |---|---|---|
//! | `buffer` | buffer pool (DESIGN.md §3.3) | [`buffer`] |
//! | `log` | write-ahead log manager (DESIGN.md §3.5) | [`log`] |
//! | `recovery` | ARIES restart after a crash (DESIGN.md §3.6) | [`recovery`] |
//! | `btree` | B+-tree lookups, inserts and scans (DESIGN.md §3.9) | [`btree`] |
//! | `lock` | lock manager: lock + release pairs, hot intention locks (DESIGN.md §3.7) | [`lock`] |
//!
//! [`MicroBench`]: crate::runner::MicroBench

pub mod btree;
pub mod buffer;
pub mod lock;
pub mod log;
pub mod recovery;

/// Names of the micro-benchmarks, as typed after `shoal bench`.
pub const NAMES: &[&str] = &["buffer", "log", "recovery", "btree", "lock"];
