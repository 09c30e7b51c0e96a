//! # Shoal benchmarks
//!
//! Job: measure Shoal the way DESIGN.md §4 and §6 ask — throughput in total and per thread,
//! latency percentiles, aborts by cause, CPU time per operation and peak memory, for a sweep
//! of thread counts, with every ratio (2 threads vs 1) measured within one invocation — and
//! report it as JSON lines, a table, a markdown report and charts (per-thread throughput on
//! a log axis and abort rate against threads, one line per engine: Shore-MT Figure 4 style).
//!
//! ```text
//!  shoal bench buffer ...            (crates/shoal-cli)
//!        │
//!        ▼
//!  runner::run_micro(bench, variants, RunConfig, &mut Output)
//!        │  for each variant:      MicroBench::setup ─► State
//!        │    for each threads:    runner::measure_point ─► PointResult ─► Measurement
//!        ▼
//!  output::Output (observer)  ── stderr: progress
//!        │                     ── stdout: JSON lines (--json) or report::text_table
//!        └── --out DIR: results.jsonl, report.md (report::markdown),
//!                       charts: STEM-throughput/-aborts .svg + .png (chart::write_charts)
//! ```
//!
//! Modules: [`runner`] (threads, phases, counting, latency sampling), [`measurement`] (the
//! JSON record), [`output`], [`report`] and [`chart`] (where results go), [`parse`] (thread
//! lists, sizes, seconds), [`sys`] (peak RSS, CPU time), [`micro`] (the micro-benchmarks).
//!
//! [`workload`] has the seeds' workloads (`select1`, `tpcb`, `insert`, `tpcc`), each a
//! [`MicroBench`] built for one engine — Shoal through its embedded API, SQLite through
//! `rusqlite`, or a peer of [`workload::peers`] (PostgreSQL, MariaDB and Berkeley DB in this
//! process, Derby through its Java harness) — and [`workload::suite`] runs one workload on
//! several engines in one invocation, plus the default suite of `shoal bench`;
//! [`workload::compare`] is `shoal bench compare`, every installed engine over the peers
//! issue's sweep.

pub mod chart;
pub mod error;
pub mod measurement;
pub mod micro;
pub mod output;
pub mod parse;
pub mod probe;
pub mod report;
pub mod runner;
pub mod sys;
pub mod workload;

pub use error::{BenchError, Result};
pub use measurement::Measurement;
pub use runner::{MicroBench, Observer, RunConfig, ThreadCtx};
