//! # Workloads: the seeds' benchmarks against Shoal and its peers (DESIGN.md §4)
//!
//! Job: run the same logical transactions on several engines and report them side by side.
//! Each workload ([`select1`], [`tpcb`], [`insert`], [`tpcc`]) is a
//! [`MicroBench`](crate::MicroBench) whose state is built for one [`EngineKind`]: the
//! harness's runner measures it exactly as it measures the micro-benchmarks (warm-up,
//! measured time, per-thread counts, sampled latencies, aborts by cause).
//!
//! ```text
//!  WorkloadOptions { engine, durability, size, pool, db_dir }
//!        │
//!        ├── engine = shoal  ─► shoal_side: Database::create_with(Lazy|Full), run_txn (retries
//!        │                     deadlock/timeout victims as aborts), counters and hot spots
//!        └── engine = sqlite ─► sqlite_side: one connection per thread, WAL,
//!                              synchronous=FULL|OFF, cached prepared statements, BEGIN
//!                              IMMEDIATE for writers, SQLITE_BUSY counted as an abort
//! ```
//!
//! Rules every workload keeps:
//! 1. An operation is one transaction (for `insert`, one transaction of 1,000 inserts). A
//!    transaction chosen as a deadlock victim, timed out or refused with `SQLITE_BUSY` is
//!    rolled back and counted under `aborts` with its cause, not in `ops`; the worker then
//!    draws a new transaction.
//! 2. Each engine does the same logical work: the same rows, the same reads and writes per
//!    transaction, at each engine's READ COMMITTED-or-stronger level with row updates that
//!    cannot lose an update (Shoal: X lock at the read, `Table::update_with` or `get_for_update`; SQLite:
//!    one writer at a time).
//! 3. After each point the workload's consistency conditions are checked on the database
//!    (outside the measured time); the result is the point's `consistency` field, `"pass"`
//!    or the list of failures, and a failure makes the command exit non-zero.
//! 4. Durability is the same on every engine: `full` = a commit returns once its log record
//!    is on stable storage (Shoal `Durability::Full`, SQLite `synchronous=FULL`); `lazy` =
//!    the commit does not wait (Shoal `Durability::Lazy`, SQLite `synchronous=OFF`).
//! 5. Sizes as in seed 003: `memory` gives a pool (SQLite: page cache) that holds the whole
//!    database; `disk` one a tenth of the data's estimated size. `--pool-size` overrides
//!    both.

pub mod compare;
pub mod dbdir;
pub mod insert;
pub mod peers;
pub mod per_worker;
pub mod progress;
pub mod select1;
pub mod shoal_side;
pub mod sqlite_side;
pub mod suite;
pub mod tpcb;
pub mod tpcc;

use crate::error::{BenchError, Result};
use serde_json::{Map, Value};
use std::path::PathBuf;

/// An engine the workloads can drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EngineKind {
    /// Shoal through its embedded API ([`shoal::Database`]).
    Shoal,
    /// SQLite through `rusqlite` (the bundled SQLite library).
    Sqlite,
    /// PostgreSQL: a private server started for the run, driven by the `postgres` crate.
    Postgres,
    /// MariaDB with InnoDB: a private `mariadbd` started for the run.
    Mariadb,
    /// Berkeley DB (`libdb` 5.3) through its C API: B-tree databases with transactions.
    Bdb,
    /// Apache Derby embedded in the JVM of the Java harness `peers/derby/`.
    DerbyEmbedded,
    /// Apache Derby's network server on 127.0.0.1, driven by the same Java harness.
    DerbyNetwork,
}

impl EngineKind {
    /// Every engine, in report order.
    pub const ALL: [EngineKind; 7] = [
        EngineKind::Shoal,
        EngineKind::Sqlite,
        EngineKind::Postgres,
        EngineKind::Mariadb,
        EngineKind::Bdb,
        EngineKind::DerbyEmbedded,
        EngineKind::DerbyNetwork,
    ];

    /// The engines of the default suite: the two that need nothing installed.
    pub const EMBEDDED: [EngineKind; 2] = [EngineKind::Shoal, EngineKind::Sqlite];

    /// The engine's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Shoal => "shoal",
            EngineKind::Sqlite => "sqlite",
            EngineKind::Postgres => "postgres",
            EngineKind::Mariadb => "mariadb",
            EngineKind::Bdb => "bdb",
            EngineKind::DerbyEmbedded => "derby-embedded",
            EngineKind::DerbyNetwork => "derby-network",
        }
    }

    /// Whether the engine is measured by a harness in another process (Derby's Java
    /// harness, [`peers::external`]) rather than by this crate's runner.
    pub fn is_external(self) -> bool {
        matches!(self, EngineKind::DerbyEmbedded | EngineKind::DerbyNetwork)
    }

    /// Parses a comma-separated list such as `shoal,sqlite` (no repeats); `all` names every
    /// engine.
    ///
    /// # Errors
    /// [`BenchError::InvalidArgument`] (`--engine`) naming an unknown or repeated engine.
    pub fn parse_list(s: &str) -> Result<Vec<EngineKind>> {
        if s.trim() == "all" {
            return Ok(EngineKind::ALL.to_vec());
        }
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim) {
            let e = EngineKind::ALL
                .into_iter()
                .find(|e| e.name() == part)
                .ok_or_else(|| {
                    BenchError::invalid(
                        "--engine",
                        format!(
                            "`{part}` is not an engine; choose from {} or all",
                            EngineKind::ALL.map(EngineKind::name).join(", ")
                        ),
                    )
                })?;
            if out.contains(&e) {
                return Err(BenchError::invalid(
                    "--engine",
                    format!("`{part}` is named twice"),
                ));
            }
            out.push(e);
        }
        Ok(out)
    }
}

/// When a commit returns (rule 4 of the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Once the commit's log record is on stable storage.
    Full,
    /// At once; the log reaches the disk shortly after.
    Lazy,
}

impl Durability {
    /// `full` or `lazy`.
    pub fn name(self) -> &'static str {
        match self {
            Durability::Full => "full",
            Durability::Lazy => "lazy",
        }
    }

    /// Parses `full` or `lazy`.
    ///
    /// # Errors
    /// [`BenchError::InvalidArgument`] (`--durability`) for anything else.
    pub fn parse(s: &str) -> Result<Durability> {
        match s {
            "full" => Ok(Durability::Full),
            "lazy" => Ok(Durability::Lazy),
            _ => Err(BenchError::invalid(
                "--durability",
                format!("`{s}` is not full or lazy"),
            )),
        }
    }
}

/// How the pool compares with the data (seed 003's two database sizes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataSize {
    /// The pool holds the whole database.
    Memory,
    /// The pool holds a tenth of the data.
    Disk,
}

impl DataSize {
    /// `memory` or `disk`.
    pub fn name(self) -> &'static str {
        match self {
            DataSize::Memory => "memory",
            DataSize::Disk => "disk",
        }
    }

    /// Parses `memory` or `disk`.
    ///
    /// # Errors
    /// [`BenchError::InvalidArgument`] (`--size`) for anything else.
    pub fn parse(s: &str) -> Result<DataSize> {
        match s {
            "memory" => Ok(DataSize::Memory),
            "disk" => Ok(DataSize::Disk),
            _ => Err(BenchError::invalid(
                "--size",
                format!("`{s}` is not memory or disk"),
            )),
        }
    }
}

/// Smallest pool a workload gets, in bytes (8 MiB): below it the fixed overheads of the
/// catalog and the log's images dominate.
pub const MIN_POOL_BYTES: u64 = 8 << 20;

/// The settings a workload runs one engine with.
#[derive(Clone, Debug)]
pub struct WorkloadOptions {
    /// The engine to drive.
    pub engine: EngineKind,
    /// When commits return.
    pub durability: Durability,
    /// Pool size relative to the data, unless `pool_size_bytes` is given.
    pub size: DataSize,
    /// Buffer pool (SQLite: page cache) size in bytes; `None`: from `size` and the
    /// workload's estimate of its data.
    pub pool_size_bytes: Option<u64>,
    /// Keep each engine's database in `db_dir/<engine>/` after the run (for `shoal verify`
    /// and `shoal inspect`); `None`: a temporary directory, removed afterwards.
    pub db_dir: Option<PathBuf>,
    /// Report the load's progress on standard error.
    pub progress: bool,
    /// Shoal only: its log's `LogOptions::lane_after_records` (page changes a transaction
    /// logs before its thread claims log a chunk at a time; 0 turns lanes off); `None`:
    /// Shoal's default.
    pub log_lane_after_records: Option<u32>,
}

impl WorkloadOptions {
    /// Options for `engine` with the defaults: `lazy`, `memory`, pool from the estimate,
    /// temporary directory, progress shown.
    pub fn new(engine: EngineKind) -> WorkloadOptions {
        WorkloadOptions {
            engine,
            durability: Durability::Lazy,
            size: DataSize::Memory,
            pool_size_bytes: None,
            db_dir: None,
            progress: true,
            log_lane_after_records: None,
        }
    }

    /// The pool size in bytes for a database of about `data_bytes` bytes: `--pool-size` if
    /// given; otherwise twice the data for `memory` (room for page fill and the indexes the
    /// estimate leaves out) and a tenth of it for `disk`; never below [`MIN_POOL_BYTES`].
    pub fn pool_bytes(&self, data_bytes: u64) -> u64 {
        let chosen = self.pool_size_bytes.unwrap_or(match self.size {
            DataSize::Memory => data_bytes.saturating_mul(2),
            DataSize::Disk => data_bytes / 10,
        });
        chosen.max(MIN_POOL_BYTES)
    }

    /// The settings as JSON fields for a measurement's `config`; `pool_bytes` is the pool
    /// actually used.
    pub fn to_json(&self, pool_bytes: u64) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("durability".into(), self.durability.name().into());
        m.insert("size".into(), self.size.name().into());
        m.insert("pool_size_bytes".into(), pool_bytes.into());
        if self.engine == EngineKind::Shoal {
            let lanes = self
                .log_lane_after_records
                .unwrap_or(shoal::log::LogOptions::default().lane_after_records);
            m.insert("log_lane_after_records".into(), lanes.into());
        }
        if let Some(d) = &self.db_dir {
            m.insert(
                "db_dir".into(),
                d.join(self.engine.name()).display().to_string().into(),
            );
        }
        m
    }
}

/// The outcome of a point's consistency check, as the `consistency` field of its JSON line.
pub fn consistency_field(failures: &[String]) -> (String, Value) {
    let v = if failures.is_empty() {
        Value::from("pass")
    } else {
        Value::from(format!("FAIL: {}", failures.join("; ")))
    };
    ("consistency".to_string(), v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_lists_parse_and_reject() {
        assert_eq!(
            EngineKind::parse_list("shoal,sqlite").unwrap(),
            vec![EngineKind::Shoal, EngineKind::Sqlite]
        );
        assert_eq!(
            EngineKind::parse_list(" sqlite ").unwrap(),
            vec![EngineKind::Sqlite]
        );
        let e = EngineKind::parse_list("shoal,oracle")
            .unwrap_err()
            .to_string();
        assert!(e.contains("oracle") && e.contains("--engine"), "{e}");
        assert!(EngineKind::parse_list("shoal,shoal").is_err());
        assert!(Durability::parse("sometimes").is_err());
        assert_eq!(DataSize::parse("disk").unwrap(), DataSize::Disk);
    }

    #[test]
    fn pool_follows_size_unless_given() {
        let mut o = WorkloadOptions::new(EngineKind::Shoal);
        assert_eq!(o.pool_bytes(100 << 20), 200 << 20);
        o.size = DataSize::Disk;
        assert_eq!(o.pool_bytes(100 << 20), 10 << 20);
        assert_eq!(o.pool_bytes(1 << 20), MIN_POOL_BYTES);
        o.pool_size_bytes = Some(64 << 20);
        assert_eq!(o.pool_bytes(100 << 20), 64 << 20);
    }

    #[test]
    fn consistency_field_names_failures() {
        assert_eq!(consistency_field(&[]).1, Value::from("pass"));
        let f = consistency_field(&["sum of balances 3 != 4".into()]).1;
        assert!(f.as_str().unwrap().starts_with("FAIL: sum"));
    }
}
