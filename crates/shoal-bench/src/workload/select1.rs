//! `select1` (seed 000 §4.1, DESIGN.md §4): the table `test(a INT4 PRIMARY KEY, b CHAR(96)
//! FOR BIT DATA)` with 100,000 rows per `--scale` inserted in key order; one transaction is
//! `SELECT a FROM test WHERE a = ?` for a uniformly random key, answered from the primary
//! key's B-tree. This is the workload whose root-latch hot spot stopped Derby scaling.
//!
//! Shoal: `Table::get_with` at READ COMMITTED in a transaction, converting column `a` only
//! (the tree is clustered on `a`).
//! SQLite: `a INTEGER PRIMARY KEY`, so the table is clustered on `a` too (its rowid B-tree),
//! the query one prepared statement in autocommit mode (one implicit transaction).
//! Every answer is checked: the row must exist and hold its key.

use super::peers::{self, Select1Peer};
use super::progress::LoadProgress;
use super::shoal_side::{self, ShoalDb};
use super::sqlite_side::SqliteDb;
use super::{consistency_field, EngineKind, WorkloadOptions};
use crate::error::{BenchError, Result};
use crate::runner::{MicroBench, RunConfig, ThreadCtx};
use rand::Rng;
use rusqlite::params;
use serde_json::{Map, Value};
use shoal::table::{Column, ColumnType, Row, Table, TableDef, Value as V};
use shoal::IsolationLevel;
use std::collections::BTreeMap;

/// Rows per unit of `--scale`.
pub const ROWS_PER_SCALE: u64 = 100_000;
/// Bytes of the `b` column.
pub const B_BYTES: usize = 96;
/// Rows per load transaction.
const LOAD_TXN_ROWS: u64 = 10_000;
/// Estimated bytes per row in a B-tree leaf (4-byte key, 96 bytes, headers, slot, fill).
const ROW_BYTES_ESTIMATE: u64 = 140;

/// The `select1` workload on one engine.
pub struct Select1 {
    /// Engine and settings.
    pub opts: WorkloadOptions,
    /// Hundreds of thousands of rows (at least 1).
    pub scale: u32,
}

/// What a `select1` setup built.
pub enum Select1State {
    /// A Shoal database with the table.
    Shoal {
        /// The database.
        db: ShoalDb,
        /// The `test` table.
        table: Table,
        /// Rows loaded.
        rows: u64,
    },
    /// A SQLite database with the table.
    Sqlite {
        /// The database and its connections.
        db: SqliteDb,
        /// Rows loaded.
        rows: u64,
    },
    /// An in-process peer ([`super::peers`]) with the table.
    Peer {
        /// The peer's connections.
        db: Box<dyn Select1Peer>,
        /// Rows loaded.
        rows: u64,
    },
}

/// The value of `b` for key `a` (deterministic, so a read could be checked byte for byte).
pub fn b_value(a: u64) -> [u8; B_BYTES] {
    let mut b = [0u8; B_BYTES];
    for (i, chunk) in b.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&(a ^ i as u64).to_le_bytes());
    }
    b
}

impl Select1 {
    fn rows(&self) -> u64 {
        ROWS_PER_SCALE * u64::from(self.scale.max(1))
    }

    /// The pool (page cache) size in bytes for this run.
    pub fn pool_bytes(&self) -> u64 {
        self.opts.pool_bytes(self.rows() * ROW_BYTES_ESTIMATE)
    }

    fn setup_shoal(&self) -> Result<Select1State> {
        let rows = self.rows();
        let db = ShoalDb::create(&self.opts, self.pool_bytes())?;
        let def = TableDef::new(
            "test",
            vec![
                Column::new("a", ColumnType::Int4),
                Column::new("b", ColumnType::Bytes(Some(B_BYTES as u32))).not_null(),
            ],
            &["a"],
        )?;
        let mut tx = db.db().begin(IsolationLevel::ReadCommitted);
        let table = db.db().create_table(&mut tx, def)?;
        tx.commit()?;
        let mut progress =
            LoadProgress::new("select1 shoal: loading test", rows, !self.opts.progress);
        let mut a = 0;
        while a < rows {
            let end = (a + LOAD_TXN_ROWS).min(rows);
            let mut tx = db.db().begin(IsolationLevel::ReadCommitted);
            for k in a..end {
                let row = Row::from_values(vec![V::Int4(k as i32), V::Bytes(b_value(k).to_vec())]);
                table.insert(&mut tx, &row)?;
            }
            tx.commit()?;
            progress.inc(end - a);
            a = end;
        }
        progress.finish();
        db.settle();
        Ok(Select1State::Shoal { db, table, rows })
    }

    fn setup_sqlite(&self, connections: usize) -> Result<Select1State> {
        let rows = self.rows();
        let db = SqliteDb::create(&self.opts, self.pool_bytes(), connections)?;
        let c = db.conn(0)?;
        let e = |what: &str| {
            let what = what.to_string();
            move |e| BenchError::sqlite(what, e)
        };
        c.execute_batch("CREATE TABLE test(a INTEGER PRIMARY KEY, b BLOB NOT NULL)")
            .map_err(e("CREATE TABLE test"))?;
        let mut progress =
            LoadProgress::new("select1 sqlite: loading test", rows, !self.opts.progress);
        let mut a = 0;
        while a < rows {
            let end = (a + LOAD_TXN_ROWS).min(rows);
            c.execute_batch("BEGIN").map_err(e("BEGIN"))?;
            {
                let mut ins = c
                    .prepare_cached("INSERT INTO test(a, b) VALUES (?1, ?2)")
                    .map_err(e("preparing the load"))?;
                for k in a..end {
                    ins.execute(params![k as i64, &b_value(k)[..]])
                        .map_err(e("INSERT INTO test"))?;
                }
            }
            c.execute_batch("COMMIT").map_err(e("COMMIT"))?;
            progress.inc(end - a);
            a = end;
        }
        progress.finish();
        drop(c);
        Ok(Select1State::Sqlite { db, rows })
    }
}

impl MicroBench for Select1 {
    type State = Select1State;

    fn name(&self) -> &'static str {
        "select1"
    }

    fn engine(&self) -> &'static str {
        self.opts.engine.name()
    }

    fn variants(&self) -> &'static [&'static str] {
        &["select1"]
    }

    fn config(&self) -> Map<String, Value> {
        let mut m = self.opts.to_json(self.pool_bytes());
        m.insert("scale".into(), self.scale.into());
        m.insert("rows".into(), self.rows().into());
        m
    }

    fn setup(&self, _variant: &str, run: &RunConfig) -> Result<Select1State> {
        let workers = run.threads.iter().copied().max().unwrap_or(1);
        match self.opts.engine {
            EngineKind::Shoal => self.setup_shoal(),
            EngineKind::Sqlite => self.setup_sqlite(workers),
            _ => {
                let (peer, setup) = peers::peer_for(&self.opts, self.pool_bytes(), workers)?;
                let db = peer.select1(&setup, self.rows())?;
                Ok(Select1State::Peer {
                    db,
                    rows: self.rows(),
                })
            }
        }
    }

    fn op(state: &Select1State, thread_idx: usize, ctx: &mut ThreadCtx) -> Result<()> {
        let found = match state {
            Select1State::Shoal { db, table, rows } => {
                let key = ctx.rng.random_range(0..*rows) as i32;
                // `SELECT a`: only column `a` of the row is read and converted.
                let r = db.run(IsolationLevel::ReadCommitted, ctx, |tx| {
                    let a = table.get_with(tx, &[V::Int4(key)], |row| row.get::<i32>(0))?;
                    Ok(Ok::<_, ()>(a))
                })?;
                match r {
                    None => return Ok(()),
                    Some(r) => (i64::from(key), r.ok().flatten().map(i64::from)),
                }
            }
            Select1State::Sqlite { db, rows } => {
                let key = ctx.rng.random_range(0..*rows) as i64;
                let c = db.conn(thread_idx)?;
                let mut q = c
                    .prepare_cached("SELECT a FROM test WHERE a = ?1")
                    .map_err(|e| BenchError::sqlite("preparing select1", e))?;
                match q.query_row([key], |r| r.get::<_, i64>(0)) {
                    Ok(a) => (key, Some(a)),
                    Err(rusqlite::Error::QueryReturnedNoRows) => (key, None),
                    Err(e) if super::sqlite_side::is_busy(&e) => {
                        ctx.abort("busy");
                        return Ok(());
                    }
                    Err(e) => return Err(BenchError::sqlite("SELECT a FROM test", e)),
                }
            }
            Select1State::Peer { db, rows } => {
                let key = ctx.rng.random_range(0..*rows) as i64;
                match db.select(thread_idx, ctx, key)? {
                    None => return Ok(()),
                    Some(a) => (key, a),
                }
            }
        };
        match found {
            (k, Some(a)) if a == k => Ok(()),
            (k, other) => Err(BenchError::Check(format!(
                "select1: key {k} read back as {other:?}"
            ))),
        }
    }

    fn counters(state: &Select1State) -> BTreeMap<String, u64> {
        match state {
            Select1State::Shoal { db, .. } => db.counters(),
            Select1State::Sqlite { .. } | Select1State::Peer { .. } => BTreeMap::new(),
        }
    }

    fn derived(_: &str, stats: &BTreeMap<String, u64>, ops: u64) -> Map<String, Value> {
        if stats.is_empty() {
            return Map::new();
        }
        shoal_side::derived(stats, ops)
    }

    fn after_point(state: &Select1State) -> Result<Map<String, Value>> {
        let mut m = Map::new();
        let (count, rows) = match state {
            Select1State::Shoal { db, table, rows } => {
                m.insert(
                    "hot_latches".into(),
                    db.hot_latches(&[(table.primary_tree().root(), "test".into())]),
                );
                m.insert(
                    "hot_locks".into(),
                    db.hot_locks(&[(table.id(), "test".into())]),
                );
                let mut tx = db.db().begin(IsolationLevel::ReadCommitted);
                let n = table
                    .scan(
                        &mut tx,
                        std::ops::Bound::Unbounded,
                        std::ops::Bound::Unbounded,
                        shoal::btree::ScanDirection::Forward,
                    )?
                    .len() as u64;
                tx.commit()?;
                (n, *rows)
            }
            Select1State::Sqlite { db, rows } => {
                let n: i64 = db
                    .conn(0)?
                    .query_row("SELECT count(*) FROM test", [], |r| r.get(0))
                    .map_err(|e| BenchError::sqlite("counting test", e))?;
                (n as u64, *rows)
            }
            Select1State::Peer { db, rows } => (db.count()?, *rows),
        };
        let failures = if count == rows {
            vec![]
        } else {
            vec![format!("test holds {count} rows, {rows} were loaded")]
        };
        let (k, v) = consistency_field(&failures);
        m.insert(k, v);
        Ok(m)
    }
}
