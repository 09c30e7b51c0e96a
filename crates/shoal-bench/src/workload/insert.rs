//! `insert` (seed 001 §3.2, DESIGN.md §4): the Shore-MT record-insertion micro-benchmark.
//! Each worker inserts records into a private table backed by a B-tree, committing every
//! [`RECORDS_PER_TXN`] records; there is no logical contention, so what limits scaling is
//! the engine's free-space management, buffer pool and log.
//!
//! Table `insert_<worker>(k INT8 PRIMARY KEY, v BYTES(100))`, keys ascending per worker,
//! values of [`VALUE_BYTES`] bytes derived from the key. Every point starts from empty
//! tables in a new database whose pool holds what the point can insert
//! ([`Insert::pool_bytes`]; `MicroBench::setup_per_point`), so a later point neither starts
//! from a larger tree nor runs with a pool that the earlier points filled. An
//! operation is one transaction of 1,000 inserts, so `ops_per_s` counts transactions; the
//! derived `records_per_s` counts records.
//!
//! Consistency (after every point): each table holds exactly the records its worker
//! committed, keys `0..n` (counted by a full scan).

use super::peers::{self, InsertPeer};
use super::shoal_side::{self, ShoalDb};
use super::sqlite_side::SqliteDb;
use super::{consistency_field, EngineKind, WorkloadOptions};
use crate::error::{BenchError, Result};
use crate::runner::{MicroBench, RunConfig, ThreadCtx};
use crossbeam_utils::CachePadded;
use rusqlite::params;
use serde_json::{Map, Value};
use shoal::table::{Column, ColumnType, Row, Table, TableDef, Value as V};
use shoal::IsolationLevel;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Records per transaction (seed 001: "Transactions commit every 1000 records").
pub const RECORDS_PER_TXN: u64 = 1_000;
/// Bytes of each record's value.
pub const VALUE_BYTES: usize = 100;
/// Records per second one busy processor is assumed not to exceed, for sizing the pool:
/// about 1.2 × the 1.27 M records/s one Shoal worker reached on the development machine
/// (2026-11-27, docs/benchmarks.md update 14).
pub const RECORDS_PER_CPU_S_CEILING: u64 = 1_500_000;
/// Pool bytes a record takes in the tree (its 108 B of key and value, slot and record
/// headers, leaves loaded in key order nearly full: about 125 B), with some to spare.
pub const TREE_BYTES_PER_RECORD: u64 = 140;

/// The `insert` workload on one engine.
pub struct Insert {
    /// Engine and settings (`size` is ignored: the tables start empty and grow).
    pub opts: WorkloadOptions,
}

/// What an `insert` setup built: one table per worker and each worker's committed count.
pub enum InsertState {
    /// Shoal.
    Shoal {
        /// Pool size in bytes.
        pool_bytes: u64,
        /// The database.
        db: ShoalDb,
        /// Worker `i`'s table.
        tables: Vec<Table>,
        /// Records worker `i` has committed (its next key).
        committed: Vec<CachePadded<AtomicU64>>,
    },
    /// SQLite.
    Sqlite {
        /// Page cache size per connection in bytes.
        pool_bytes: u64,
        /// The database and its connections.
        db: SqliteDb,
        /// Records worker `i` has committed.
        committed: Vec<CachePadded<AtomicU64>>,
    },
    /// An in-process peer ([`super::peers`]) with the tables.
    Peer {
        /// Buffer size in bytes.
        pool_bytes: u64,
        /// The peer's connections.
        db: Box<dyn InsertPeer>,
        /// Records worker `i` has committed.
        committed: Vec<CachePadded<AtomicU64>>,
    },
}

/// The value stored with key `k` (deterministic, so a read could be checked).
pub fn value_of(k: u64) -> [u8; VALUE_BYTES] {
    let mut v = [0u8; VALUE_BYTES];
    for (i, chunk) in v.chunks_mut(8).enumerate() {
        let b = (k.rotate_left(i as u32 * 7)).to_le_bytes();
        chunk.copy_from_slice(&b[..chunk.len()]);
    }
    v
}

impl Insert {
    /// The pool (page cache) size in bytes for a point of `run` (one thread count): room for
    /// everything its workers can insert during warm-up and measurement, at most
    /// [`RECORDS_PER_CPU_S_CEILING`] records per second on each processor they can keep
    /// busy, [`TREE_BYTES_PER_RECORD`] bytes each, twice that as `--size memory` gives
    /// every workload, but at most a quarter of the machine's memory; `--pool-size`
    /// overrides it. A faster machine than assumed, or a point longer than a quarter of the
    /// memory holds, fills the pool before the point ends and shows it in the point's
    /// `buffer_hit_ratio` and write-back counters.
    pub fn pool_bytes(&self, run: &RunConfig) -> u64 {
        let workers = run.threads.iter().copied().max().unwrap_or(1);
        let busy = workers.min(crate::sys::available_cpus()) as f64;
        let seconds = run.warmup_s + run.duration_s;
        let data = busy * seconds * (RECORDS_PER_CPU_S_CEILING * TREE_BYTES_PER_RECORD) as f64;
        // A long point would ask for more than the machine has: the pool (twice this) takes
        // at most a quarter of its memory (then the point runs with evictions, and its hit
        // ratio says so).
        let data =
            data.min(crate::sys::physical_memory_bytes().map_or(f64::MAX, |m| m as f64 / 8.0));
        // `--size memory` makes the pool twice the data, as for the other workloads: the
        // page cleaner writes every dirty page, old or not, once over half the pool is dirty
        // (`DIRTY_HIGH_PERCENT`), and here every page is dirty.
        self.opts.pool_bytes(data as u64)
    }
}

impl InsertState {
    /// The pool (page cache, buffer) size the engine was given, in bytes.
    pub fn pool_bytes(&self) -> u64 {
        match self {
            InsertState::Shoal { pool_bytes, .. }
            | InsertState::Sqlite { pool_bytes, .. }
            | InsertState::Peer { pool_bytes, .. } => *pool_bytes,
        }
    }

    fn committed(&self) -> &[CachePadded<AtomicU64>] {
        match self {
            InsertState::Shoal { committed, .. }
            | InsertState::Sqlite { committed, .. }
            | InsertState::Peer { committed, .. } => committed,
        }
    }

    /// Records in each worker's table, counted by a full scan (Shoal: `Table::verify`,
    /// which also checks the tree).
    ///
    /// # Errors
    /// The engine's errors while reading.
    pub fn counts(&self) -> Result<Vec<u64>> {
        match self {
            InsertState::Shoal { tables, .. } => tables
                .iter()
                .map(|t| {
                    let (rows, problems) = t.verify()?;
                    if problems.is_empty() {
                        Ok(rows)
                    } else {
                        Err(BenchError::Check(format!("{}: {problems:?}", t.name())))
                    }
                })
                .collect(),
            InsertState::Sqlite { db, committed, .. } => {
                let c = db.conn(0)?;
                (0..committed.len())
                    .map(|i| {
                        let sql = format!("SELECT count(*) FROM insert_{i}");
                        c.query_row(&sql, [], |r| r.get::<_, i64>(0))
                            .map(|n| n as u64)
                            .map_err(|e| BenchError::sqlite(sql, e))
                    })
                    .collect()
            }
            InsertState::Peer { db, committed, .. } => {
                (0..committed.len()).map(|i| db.count(i)).collect()
            }
        }
    }
}

impl MicroBench for Insert {
    type State = InsertState;

    fn name(&self) -> &'static str {
        "insert"
    }

    fn engine(&self) -> &'static str {
        self.opts.engine.name()
    }

    fn variants(&self) -> &'static [&'static str] {
        &["insert"]
    }

    fn config(&self) -> Map<String, Value> {
        // The pool is sized per point: `describe` reports it.
        let mut m = self.opts.to_json(0);
        m.remove("pool_size_bytes");
        m.insert("records_per_txn".into(), RECORDS_PER_TXN.into());
        m.insert("value_bytes".into(), VALUE_BYTES.into());
        m
    }

    fn setup(&self, _variant: &str, run: &RunConfig) -> Result<InsertState> {
        let workers = run.threads.iter().copied().max().unwrap_or(1);
        let committed = (0..workers)
            .map(|_| CachePadded::new(AtomicU64::new(0)))
            .collect();
        let pool = self.pool_bytes(run);
        match self.opts.engine {
            EngineKind::Shoal => {
                let db = ShoalDb::create(&self.opts, pool)?;
                let mut tx = db.db().begin(IsolationLevel::ReadCommitted);
                let mut tables = Vec::with_capacity(workers);
                for i in 0..workers {
                    let def = TableDef::new(
                        format!("insert_{i}"),
                        vec![
                            Column::new("k", ColumnType::Int8),
                            Column::new("v", ColumnType::Bytes(Some(VALUE_BYTES as u32)))
                                .not_null(),
                        ],
                        &["k"],
                    )?;
                    tables.push(db.db().create_table(&mut tx, def)?);
                }
                tx.commit()?;
                db.settle();
                Ok(InsertState::Shoal {
                    pool_bytes: pool,
                    db,
                    tables,
                    committed,
                })
            }
            EngineKind::Sqlite => {
                let db = SqliteDb::create(&self.opts, pool, workers)?;
                let c = db.conn(0)?;
                for i in 0..workers {
                    let sql =
                        format!("CREATE TABLE insert_{i}(k INTEGER PRIMARY KEY, v BLOB NOT NULL)");
                    c.execute_batch(&sql)
                        .map_err(|e| BenchError::sqlite(sql.clone(), e))?;
                }
                drop(c);
                Ok(InsertState::Sqlite {
                    pool_bytes: pool,
                    db,
                    committed,
                })
            }
            _ => {
                let (peer, setup) = peers::peer_for(&self.opts, pool, workers)?;
                let db = peer.insert(&setup)?;
                Ok(InsertState::Peer {
                    pool_bytes: pool,
                    db,
                    committed,
                })
            }
        }
    }

    fn setup_per_point(&self, _variant: &str) -> bool {
        true
    }

    fn describe(state: &InsertState) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("pool_size_bytes".into(), state.pool_bytes().into());
        m
    }

    fn op(state: &InsertState, thread_idx: usize, ctx: &mut ThreadCtx) -> Result<()> {
        let counter = state.committed().get(thread_idx).ok_or_else(|| {
            BenchError::invalid("threads", format!("worker {thread_idx} has no table"))
        })?;
        // Relaxed: only this worker writes its counter; `after_point` reads it after the
        // workers joined (the join orders the accesses).
        let first = counter.load(Ordering::Relaxed);
        let keys = first..first + RECORDS_PER_TXN;
        let done = match state {
            InsertState::Shoal { db, tables, .. } => {
                let table = &tables[thread_idx];
                db.run(IsolationLevel::ReadCommitted, ctx, |tx| {
                    for k in keys {
                        let row = Row::from_values(vec![
                            V::Int8(k as i64),
                            V::Bytes(value_of(k).to_vec()),
                        ]);
                        table.insert(tx, &row)?;
                    }
                    Ok(Ok::<_, ()>(()))
                })?
            }
            InsertState::Sqlite { db, .. } => {
                let sql = format!("INSERT INTO insert_{thread_idx}(k, v) VALUES (?1, ?2)");
                db.run(thread_idx, ctx, true, |c| {
                    let mut ins = c.prepare_cached(&sql)?;
                    for k in keys {
                        ins.execute(params![k as i64, &value_of(k)[..]])?;
                    }
                    Ok(Ok::<_, ()>(()))
                })?
            }
            InsertState::Peer { db, .. } => db
                .insert_batch(thread_idx, ctx, first, RECORDS_PER_TXN)?
                .then_some(Ok::<_, ()>(())),
        };
        if done.is_some() {
            counter.store(first + RECORDS_PER_TXN, Ordering::Relaxed);
        }
        Ok(())
    }

    fn counters(state: &InsertState) -> BTreeMap<String, u64> {
        match state {
            InsertState::Shoal { db, .. } => db.counters(),
            InsertState::Sqlite { .. } | InsertState::Peer { .. } => BTreeMap::new(),
        }
    }

    fn derived(_: &str, stats: &BTreeMap<String, u64>, ops: u64) -> Map<String, Value> {
        let mut m = if stats.is_empty() {
            Map::new()
        } else {
            shoal_side::derived(stats, ops)
        };
        m.insert("records".into(), (ops * RECORDS_PER_TXN).into());
        m
    }

    fn after_point(state: &InsertState) -> Result<Map<String, Value>> {
        let mut m = Map::new();
        if let InsertState::Shoal { db, tables, .. } = state {
            let roots: Vec<_> = tables
                .iter()
                .map(|t| (t.primary_tree().root(), t.name().to_string()))
                .collect();
            m.insert("hot_latches".into(), db.hot_latches(&roots));
            let ids: Vec<_> = tables
                .iter()
                .map(|t| (t.id(), t.name().to_string()))
                .collect();
            m.insert("hot_locks".into(), db.hot_locks(&ids));
        }
        let counts = state.counts()?;
        let failures: Vec<String> = counts
            .iter()
            .zip(state.committed())
            .enumerate()
            .filter(|(_, (&n, c))| n != c.load(Ordering::Relaxed))
            .map(|(i, (n, c))| {
                format!(
                    "insert_{i} holds {n} records, {} were committed",
                    c.load(Ordering::Relaxed)
                )
            })
            .collect();
        let (k, v) = consistency_field(&failures);
        m.insert(k, v);
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::{measure_point, PointSpec};

    /// The pool grows with the point's threads (up to the processors) and seconds, and a
    /// point too long for the machine gets at most a quarter of its memory.
    #[test]
    fn the_pool_holds_what_a_point_can_insert() {
        let b = Insert {
            opts: WorkloadOptions::new(EngineKind::Shoal),
        };
        let run = |threads, duration_s| RunConfig {
            threads: vec![threads],
            warmup_s: 1.0,
            duration_s,
            ..RunConfig::default()
        };
        // Data of `cpu_s` busy processor-seconds, capped at an eighth of the memory; the
        // pool is twice that (`--size memory`).
        let mem = crate::sys::physical_memory_bytes().unwrap();
        let pool = |cpu_s: u64| {
            let data = cpu_s * RECORDS_PER_CPU_S_CEILING * TREE_BYTES_PER_RECORD;
            2 * (data as f64).min(mem as f64 / 8.0) as u64
        };
        assert_eq!(b.pool_bytes(&run(1, 2.0)), pool(3));
        let busy = 2.min(crate::sys::available_cpus()) as u64;
        assert_eq!(b.pool_bytes(&run(2, 2.0)), pool(3 * busy));
        let cpus = crate::sys::available_cpus() as u64;
        assert_eq!(b.pool_bytes(&run(1_000, 2.0)), pool(3 * cpus));
        let long = b.pool_bytes(&run(1, 1e9));
        assert!(long <= mem / 4 && long >= mem / 4 - 4096, "{long} vs {mem}");
        // --pool-size wins.
        let mut fixed = b.opts.clone();
        fixed.pool_size_bytes = Some(64 << 20);
        assert_eq!(Insert { opts: fixed }.pool_bytes(&run(2, 2.0)), 64 << 20);
    }

    #[test]
    fn both_engines_insert_what_they_commit() {
        for engine in EngineKind::EMBEDDED {
            let mut opts = WorkloadOptions::new(engine);
            opts.progress = false;
            let b = Insert { opts };
            let run = RunConfig {
                threads: vec![2],
                warmup_s: 0.0,
                duration_s: 0.3,
                ..RunConfig::default()
            };
            let state = b.setup("insert", &run).unwrap();
            let spec = PointSpec {
                threads: 2,
                warmup_s: run.warmup_s,
                duration_s: run.duration_s,
                latency_sample_every: 1,
                seed: 3,
            };
            let r =
                measure_point(&spec, &state, Insert::op, Insert::counters, &mut |_, _| {}).unwrap();
            assert!(r.ops() > 0, "{engine:?}");
            let after = Insert::after_point(&state).unwrap();
            assert_eq!(after["consistency"], Value::from("pass"), "{engine:?}");
            let counts = state.counts().unwrap();
            assert!(
                counts.iter().all(|n| n % RECORDS_PER_TXN == 0),
                "{counts:?}"
            );
            // A lost record is reported.
            state.committed()[0].fetch_add(1, Ordering::Relaxed);
            let after = Insert::after_point(&state).unwrap();
            assert!(after["consistency"].as_str().unwrap().contains("insert_0"));
        }
    }
}
