//! Micro-benchmarks: one component of the engine at a time, each a [`MicroBench`] run by
//! [`crate::runner::run_micro`].
//!
//! | name | component | file |
//! |---|---|---|
//! | `buffer` | buffer pool (DESIGN.md §3.3) | [`buffer`] |
//!
//! Planned (DESIGN.md §6): `log`, `btree`, `lock`, as their components land.
//!
//! [`MicroBench`]: crate::runner::MicroBench

pub mod buffer;

/// Names of the micro-benchmarks, as typed after `shoal bench`.
pub const NAMES: &[&str] = &["buffer"];
