//! Micro-benchmarks: one component of the engine at a time, each a [`MicroBench`] run by
//! [`crate::runner::run_micro`].
//!
//! | name | component | file |
//! |---|---|---|
//! | `buffer` | buffer pool (DESIGN.md §3.3) | [`buffer`] |
//! | `log` | write-ahead log manager (DESIGN.md §3.5) | [`log`] |
//!
//! Planned (DESIGN.md §6): `btree`, `lock`, as their components land.
//!
//! [`MicroBench`]: crate::runner::MicroBench

pub mod buffer;
pub mod log;

/// Names of the micro-benchmarks, as typed after `shoal bench`.
pub const NAMES: &[&str] = &["buffer", "log"];
