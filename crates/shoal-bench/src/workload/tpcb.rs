//! `tpcb` (seed 003, DESIGN.md §4): the TPC-B-like transaction of `pgbench` on its four
//! tables, with `--scale` branches:
//!
//! | table | rows | columns |
//! |---|---|---|
//! | `pgbench_branches` | scale | `bid`, `bbalance`, `filler CHAR(88)` |
//! | `pgbench_tellers` | 10 × scale | `tid`, `bid`, `tbalance`, `filler CHAR(84)` |
//! | `pgbench_accounts` | 100,000 × scale | `aid`, `bid`, `abalance`, `filler CHAR(84)` |
//! | `pgbench_history` | grows | `tid`, `bid`, `aid`, `delta`, `mtime`, `filler CHAR(22)` |
//!
//! A transaction draws `aid`, `tid`, `bid` uniformly and `delta` uniformly from −5,000 to
//! 5,000 (pgbench's built-in script) and runs
//!
//! ```text
//! UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
//! SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
//! UPDATE pgbench_tellers  SET tbalance = tbalance + :delta WHERE tid = :tid;
//! UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
//! INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (...);
//! ```
//!
//! Shoal runs it at READ COMMITTED with each `UPDATE` as `Table::update_with_view` (X lock,
//! read, write: no update can be lost; the balance is patched in the stored row) and the
//! `SELECT` as `Table::get_with` of the balance, which it checks is the updated one. Shoal's
//! tables need a primary key, so history has a surrogate `hid` (worker number × 2^40 +
//! the worker's sequence); SQLite's history is a rowid table as in pgbench.
//!
//! Consistency (checked after every point): the sums of account, teller and branch balances
//! and of history deltas are equal (the TPC-B consistency condition pgbench's data keeps).

use super::peers::{self, TpcbPeer, TpcbTxn};
use super::progress::LoadProgress;
use super::shoal_side::{self, ShoalDb};
use super::sqlite_side::SqliteDb;
use super::{consistency_field, EngineKind, WorkloadOptions};
use crate::error::{BenchError, Result};
use crate::runner::{MicroBench, RunConfig, ThreadCtx};
use crossbeam_utils::CachePadded;
use rand::Rng;
use rusqlite::params;
use serde_json::{Map, Value};
use shoal::btree::ScanDirection;
use shoal::table::{Column, ColumnType, Row, Table, TableDef, Value as V};
use shoal::IsolationLevel;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};

/// Tellers per branch.
pub const TELLERS_PER_BRANCH: u64 = 10;
/// Accounts per branch.
pub const ACCOUNTS_PER_BRANCH: u64 = 100_000;
/// Largest |delta| of one transaction.
pub const MAX_DELTA: i64 = 5_000;
/// Rows per load transaction.
const LOAD_TXN_ROWS: u64 = 10_000;
/// Estimated bytes per account row in a leaf (with pgbench's blank filler).
const ACCOUNT_BYTES_ESTIMATE: u64 = 150;
/// Rows a history table may reach per second of run, estimated for the pool (bytes/row).
const HISTORY_BYTES_ESTIMATE: u64 = 100;

/// The `tpcb` workload on one engine.
pub struct Tpcb {
    /// Engine and settings.
    pub opts: WorkloadOptions,
    /// Branches (at least 1); pgbench's `-s`.
    pub scale: u32,
}

/// Shoal's four tables, and the positions of their balance columns (looked up once).
pub struct ShoalTables {
    branches: Table,
    tellers: Table,
    accounts: Table,
    history: Table,
    /// Position of `bbalance`, `tbalance` and `abalance` in their tables.
    bbalance: usize,
    tbalance: usize,
    abalance: usize,
}

/// What a `tpcb` setup built.
pub enum TpcbState {
    /// Shoal.
    Shoal {
        /// The database.
        db: ShoalDb,
        /// Its tables (boxed: four `Table`s make the variant large).
        t: Box<ShoalTables>,
        /// Scale (branches).
        scale: u64,
        /// Next history sequence number of each worker.
        seq: Vec<CachePadded<AtomicU64>>,
    },
    /// SQLite.
    Sqlite {
        /// The database and its connections.
        db: SqliteDb,
        /// Scale (branches).
        scale: u64,
    },
    /// An in-process peer ([`super::peers`]) with the tables.
    Peer {
        /// The peer's connections.
        db: Box<dyn TpcbPeer>,
        /// Scale (branches).
        scale: u64,
    },
}

impl Tpcb {
    fn scale(&self) -> u64 {
        u64::from(self.scale.max(1))
    }

    /// The pool (page cache) size in bytes for this run.
    pub fn pool_bytes(&self) -> u64 {
        let s = self.scale();
        // The accounts, plus room for a few million history rows.
        self.opts.pool_bytes(
            s * ACCOUNTS_PER_BRANCH * ACCOUNT_BYTES_ESTIMATE + 2_000_000 * HISTORY_BYTES_ESTIMATE,
        )
    }

    fn setup_shoal(&self, workers: usize) -> Result<TpcbState> {
        let scale = self.scale();
        let db = ShoalDb::create(&self.opts, self.pool_bytes())?;
        let int4 = |n: &str| Column::new(n, ColumnType::Int4).not_null();
        let defs = [
            TableDef::new(
                "pgbench_branches",
                vec![
                    int4("bid"),
                    int4("bbalance"),
                    Column::new("filler", ColumnType::Char(88)),
                ],
                &["bid"],
            )?,
            TableDef::new(
                "pgbench_tellers",
                vec![
                    int4("tid"),
                    int4("bid"),
                    int4("tbalance"),
                    Column::new("filler", ColumnType::Char(84)),
                ],
                &["tid"],
            )?,
            TableDef::new(
                "pgbench_accounts",
                vec![
                    int4("aid"),
                    int4("bid"),
                    int4("abalance"),
                    Column::new("filler", ColumnType::Char(84)),
                ],
                &["aid"],
            )?,
            TableDef::new(
                "pgbench_history",
                vec![
                    Column::new("hid", ColumnType::Int8),
                    int4("tid"),
                    int4("bid"),
                    int4("aid"),
                    int4("delta"),
                    Column::new("mtime", ColumnType::Timestamp),
                    Column::new("filler", ColumnType::Char(22)),
                ],
                &["hid"],
            )?,
        ];
        let mut tx = db.db().begin(IsolationLevel::ReadCommitted);
        let mut tables = Vec::new();
        for def in defs {
            tables.push(db.db().create_table(&mut tx, def)?);
        }
        tx.commit()?;
        let [branches, tellers, accounts, history]: [Table; 4] = tables
            .try_into()
            .map_err(|_| BenchError::Check("four tables".into()))?;
        let total = scale * (1 + TELLERS_PER_BRANCH + ACCOUNTS_PER_BRANCH);
        let mut progress = LoadProgress::new("tpcb shoal: loading", total, !self.opts.progress);
        let mut tx = db.db().begin(IsolationLevel::ReadCommitted);
        let blank = || V::Str(String::new());
        for b in 1..=scale {
            branches.insert(
                &mut tx,
                &Row::from_values(vec![V::Int4(b as i32), V::Int4(0), blank()]),
            )?;
        }
        for t in 1..=scale * TELLERS_PER_BRANCH {
            let bid = (t - 1) / TELLERS_PER_BRANCH + 1;
            tellers.insert(
                &mut tx,
                &Row::from_values(vec![
                    V::Int4(t as i32),
                    V::Int4(bid as i32),
                    V::Int4(0),
                    blank(),
                ]),
            )?;
        }
        tx.commit()?;
        progress.inc(scale * (1 + TELLERS_PER_BRANCH));
        let accounts_n = scale * ACCOUNTS_PER_BRANCH;
        let mut a = 1;
        while a <= accounts_n {
            let end = (a + LOAD_TXN_ROWS).min(accounts_n + 1);
            let mut tx = db.db().begin(IsolationLevel::ReadCommitted);
            for aid in a..end {
                let bid = (aid - 1) / ACCOUNTS_PER_BRANCH + 1;
                accounts.insert(
                    &mut tx,
                    &Row::from_values(vec![
                        V::Int4(aid as i32),
                        V::Int4(bid as i32),
                        V::Int4(0),
                        blank(),
                    ]),
                )?;
            }
            tx.commit()?;
            progress.inc(end - a);
            a = end;
        }
        progress.finish();
        db.settle();
        let balance = |t: &Table, col: &str| t.def().column(col).map(|(at, _)| at);
        Ok(TpcbState::Shoal {
            db,
            t: Box::new(ShoalTables {
                bbalance: balance(&branches, "bbalance")?,
                tbalance: balance(&tellers, "tbalance")?,
                abalance: balance(&accounts, "abalance")?,
                branches,
                tellers,
                accounts,
                history,
            }),
            scale,
            seq: (0..workers)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
        })
    }

    fn setup_sqlite(&self, workers: usize) -> Result<TpcbState> {
        let scale = self.scale();
        let db = SqliteDb::create(&self.opts, self.pool_bytes(), workers)?;
        let c = db.conn(0)?;
        let e = |what: &'static str| move |e| BenchError::sqlite(what, e);
        c.execute_batch(
            "CREATE TABLE pgbench_branches(bid INTEGER PRIMARY KEY, bbalance INT NOT NULL, filler CHAR(88));
             CREATE TABLE pgbench_tellers(tid INTEGER PRIMARY KEY, bid INT NOT NULL, tbalance INT NOT NULL, filler CHAR(84));
             CREATE TABLE pgbench_accounts(aid INTEGER PRIMARY KEY, bid INT NOT NULL, abalance INT NOT NULL, filler CHAR(84));
             CREATE TABLE pgbench_history(tid INT, bid INT, aid INT, delta INT, mtime INT, filler CHAR(22));",
        )
        .map_err(e("creating the pgbench tables"))?;
        let total = scale * (1 + TELLERS_PER_BRANCH + ACCOUNTS_PER_BRANCH);
        let mut progress = LoadProgress::new("tpcb sqlite: loading", total, !self.opts.progress);
        // pgbench stores blank-padded CHAR(n) fillers; SQLite keeps text as given.
        let (f88, f84) = (" ".repeat(88), " ".repeat(84));
        c.execute_batch("BEGIN").map_err(e("BEGIN"))?;
        for b in 1..=scale {
            c.execute(
                "INSERT INTO pgbench_branches VALUES (?1, 0, ?2)",
                params![b as i64, f88],
            )
            .map_err(e("loading pgbench_branches"))?;
        }
        for t in 1..=scale * TELLERS_PER_BRANCH {
            let bid = (t - 1) / TELLERS_PER_BRANCH + 1;
            c.execute(
                "INSERT INTO pgbench_tellers VALUES (?1, ?2, 0, ?3)",
                params![t as i64, bid as i64, f84],
            )
            .map_err(e("loading pgbench_tellers"))?;
        }
        c.execute_batch("COMMIT").map_err(e("COMMIT"))?;
        progress.inc(scale * (1 + TELLERS_PER_BRANCH));
        let accounts_n = scale * ACCOUNTS_PER_BRANCH;
        let mut a = 1;
        while a <= accounts_n {
            let end = (a + LOAD_TXN_ROWS).min(accounts_n + 1);
            c.execute_batch("BEGIN").map_err(e("BEGIN"))?;
            {
                let mut ins = c
                    .prepare_cached("INSERT INTO pgbench_accounts VALUES (?1, ?2, 0, ?3)")
                    .map_err(e("preparing the accounts load"))?;
                for aid in a..end {
                    let bid = (aid - 1) / ACCOUNTS_PER_BRANCH + 1;
                    ins.execute(params![aid as i64, bid as i64, f84])
                        .map_err(e("loading pgbench_accounts"))?;
                }
            }
            c.execute_batch("COMMIT").map_err(e("COMMIT"))?;
            progress.inc(end - a);
            a = end;
        }
        progress.finish();
        drop(c);
        Ok(TpcbState::Sqlite { db, scale })
    }
}

/// One transaction's inputs, drawn as pgbench draws them.
struct Input {
    aid: i32,
    tid: i32,
    bid: i32,
    delta: i32,
}

impl Input {
    fn draw(ctx: &mut ThreadCtx, scale: u64) -> Input {
        let r = &mut ctx.rng;
        Input {
            aid: r.random_range(1..=scale * ACCOUNTS_PER_BRANCH) as i32,
            tid: r.random_range(1..=scale * TELLERS_PER_BRANCH) as i32,
            bid: r.random_range(1..=scale) as i32,
            delta: r.random_range(-MAX_DELTA..=MAX_DELTA) as i32,
        }
    }
}

/// Adds `delta` to the INT4 column at position `at` of the row with key `key` (one X lock,
/// one read, one write: `Table::update_columns_with_view`); returns the new value.
fn add_to(
    tx: &mut shoal::txn::Transaction<'_>,
    table: &Table,
    key: i32,
    at: usize,
    delta: i32,
) -> shoal::Result<i32> {
    let mut new = 0;
    // The balance is a fixed-width column in no key: patched in place.
    let found = table.update_columns_with_view(tx, &[V::Int4(key)], |row| {
        new = row.get::<i32>(at)? + delta;
        Ok([(at, V::Int4(new))])
    })?;
    if !found {
        return Err(shoal::Error::invalid(
            "key",
            format!("{}: no row {key}", table.name()),
        ));
    }
    Ok(new)
}

fn op_shoal(
    db: &ShoalDb,
    t: &ShoalTables,
    scale: u64,
    seq: &AtomicU64,
    thread_idx: usize,
    ctx: &mut ThreadCtx,
) -> Result<()> {
    let inp = Input::draw(ctx, scale);
    let r = db.run(IsolationLevel::ReadCommitted, ctx, |tx| {
        let updated = add_to(tx, &t.accounts, inp.aid, t.abalance, inp.delta)?;
        // `SELECT abalance`: that column only.
        let read = t
            .accounts
            .get_with(tx, &[V::Int4(inp.aid)], |r| r.get::<i32>(t.abalance))?;
        add_to(tx, &t.tellers, inp.tid, t.tbalance, inp.delta)?;
        add_to(tx, &t.branches, inp.bid, t.bbalance, inp.delta)?;
        // Relaxed: the counter is this worker's own; it only has to be unique.
        let hid = ((thread_idx as i64) << 40) | seq.fetch_add(1, Ordering::Relaxed) as i64;
        t.history.insert(
            tx,
            &Row::from_values(vec![
                V::Int8(hid),
                V::Int4(inp.tid),
                V::Int4(inp.bid),
                V::Int4(inp.aid),
                V::Int4(inp.delta),
                V::Timestamp(shoal::table::Timestamp::now().0),
                V::Str(String::new()),
            ]),
        )?;
        Ok(if read == Some(updated) {
            Ok(())
        } else {
            Err((updated, read))
        })
    })?;
    match r {
        Some(Err((updated, read))) => Err(BenchError::Check(format!(
            "tpcb: account {} was updated to {updated} but read back as {read:?}",
            inp.aid
        ))),
        _ => Ok(()),
    }
}

fn op_sqlite(db: &SqliteDb, scale: u64, thread_idx: usize, ctx: &mut ThreadCtx) -> Result<()> {
    let inp = Input::draw(ctx, scale);
    let now = shoal::table::Timestamp::now().0;
    db.run(thread_idx, ctx, true, |c| {
        c.prepare_cached("UPDATE pgbench_accounts SET abalance = abalance + ?1 WHERE aid = ?2")?
            .execute(params![inp.delta, inp.aid])?;
        c.prepare_cached("SELECT abalance FROM pgbench_accounts WHERE aid = ?1")?
            .query_row([inp.aid], |r| r.get::<_, i64>(0))?;
        c.prepare_cached("UPDATE pgbench_tellers SET tbalance = tbalance + ?1 WHERE tid = ?2")?
            .execute(params![inp.delta, inp.tid])?;
        c.prepare_cached("UPDATE pgbench_branches SET bbalance = bbalance + ?1 WHERE bid = ?2")?
            .execute(params![inp.delta, inp.bid])?;
        c.prepare_cached(
            "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![inp.tid, inp.bid, inp.aid, inp.delta, now])?;
        Ok(Ok::<_, ()>(()))
    })?;
    Ok(())
}

/// The four sums: accounts, tellers, branches, history deltas.
fn sums_shoal(db: &ShoalDb, t: &ShoalTables) -> Result<[i64; 4]> {
    let mut tx = db.db().begin(IsolationLevel::ReadCommitted);
    let mut sum = |table: &Table, col: &str| -> Result<i64> {
        let rows = table.scan(
            &mut tx,
            Bound::Unbounded,
            Bound::Unbounded,
            ScanDirection::Forward,
        )?;
        rows.iter()
            .map(|r| r.get::<i32>(col).map(i64::from))
            .sum::<shoal::Result<i64>>()
            .map_err(Into::into)
    };
    let s = [
        sum(&t.accounts, "abalance")?,
        sum(&t.tellers, "tbalance")?,
        sum(&t.branches, "bbalance")?,
        sum(&t.history, "delta")?,
    ];
    tx.commit()?;
    Ok(s)
}

fn sums_sqlite(db: &SqliteDb) -> Result<[i64; 4]> {
    let c = db.conn(0)?;
    let one = |sql: &str| -> Result<i64> {
        c.query_row(sql, [], |r| r.get::<_, Option<i64>>(0))
            .map(|v| v.unwrap_or(0))
            .map_err(|e| BenchError::sqlite(sql.to_string(), e))
    };
    Ok([
        one("SELECT sum(abalance) FROM pgbench_accounts")?,
        one("SELECT sum(tbalance) FROM pgbench_tellers")?,
        one("SELECT sum(bbalance) FROM pgbench_branches")?,
        one("SELECT sum(delta) FROM pgbench_history")?,
    ])
}

/// The consistency condition's failures for the four sums (empty if they agree).
pub fn check_sums(s: [i64; 4]) -> Vec<String> {
    let [a, t, b, h] = s;
    if a == t && t == b && b == h {
        Vec::new()
    } else {
        vec![format!(
            "sum(abalance) {a}, sum(tbalance) {t}, sum(bbalance) {b}, sum(history.delta) {h} differ"
        )]
    }
}

impl TpcbState {
    /// Checks the consistency condition now (module doc); returns the failures.
    ///
    /// # Errors
    /// The engine's errors while reading.
    pub fn check(&self) -> Result<Vec<String>> {
        Ok(check_sums(match self {
            TpcbState::Shoal { db, t, .. } => sums_shoal(db, t)?,
            TpcbState::Sqlite { db, .. } => sums_sqlite(db)?,
            TpcbState::Peer { db, .. } => db.sums()?,
        }))
    }
}

impl MicroBench for Tpcb {
    type State = TpcbState;

    fn name(&self) -> &'static str {
        "tpcb"
    }

    fn engine(&self) -> &'static str {
        self.opts.engine.name()
    }

    fn variants(&self) -> &'static [&'static str] {
        &["tpcb"]
    }

    fn config(&self) -> Map<String, Value> {
        let mut m = self.opts.to_json(self.pool_bytes());
        m.insert("scale".into(), self.scale().into());
        m.insert(
            "accounts".into(),
            (self.scale() * ACCOUNTS_PER_BRANCH).into(),
        );
        m
    }

    fn setup(&self, _variant: &str, run: &RunConfig) -> Result<TpcbState> {
        let workers = run.threads.iter().copied().max().unwrap_or(1);
        match self.opts.engine {
            EngineKind::Shoal => self.setup_shoal(workers),
            EngineKind::Sqlite => self.setup_sqlite(workers),
            _ => {
                let (peer, setup) = peers::peer_for(&self.opts, self.pool_bytes(), workers)?;
                let db = peer.tpcb(&setup, self.scale())?;
                Ok(TpcbState::Peer {
                    db,
                    scale: self.scale(),
                })
            }
        }
    }

    fn op(state: &TpcbState, thread_idx: usize, ctx: &mut ThreadCtx) -> Result<()> {
        match state {
            TpcbState::Shoal { db, t, scale, seq } => {
                let seq = seq.get(thread_idx).ok_or_else(|| {
                    BenchError::invalid("threads", format!("worker {thread_idx} has no sequence"))
                })?;
                op_shoal(db, t, *scale, seq, thread_idx, ctx)
            }
            TpcbState::Sqlite { db, scale } => op_sqlite(db, *scale, thread_idx, ctx),
            TpcbState::Peer { db, scale } => {
                let inp = Input::draw(ctx, *scale);
                let t = TpcbTxn {
                    aid: inp.aid,
                    tid: inp.tid,
                    bid: inp.bid,
                    delta: inp.delta,
                    mtime_us: shoal::table::Timestamp::now().0,
                };
                db.transaction(thread_idx, ctx, &t).map(|_| ())
            }
        }
    }

    fn counters(state: &TpcbState) -> BTreeMap<String, u64> {
        match state {
            TpcbState::Shoal { db, .. } => db.counters(),
            TpcbState::Sqlite { .. } | TpcbState::Peer { .. } => BTreeMap::new(),
        }
    }

    fn derived(_: &str, stats: &BTreeMap<String, u64>, ops: u64) -> Map<String, Value> {
        if stats.is_empty() {
            return Map::new();
        }
        shoal_side::derived(stats, ops)
    }

    fn after_point(state: &TpcbState) -> Result<Map<String, Value>> {
        let mut m = Map::new();
        if let TpcbState::Shoal { db, t, .. } = state {
            let roots = [
                (&t.branches, "pgbench_branches"),
                (&t.tellers, "pgbench_tellers"),
                (&t.accounts, "pgbench_accounts"),
                (&t.history, "pgbench_history"),
            ]
            .map(|(t, n)| (t.primary_tree().root(), n.to_string()));
            m.insert("hot_latches".into(), db.hot_latches(&roots));
            let ids = [&t.branches, &t.tellers, &t.accounts, &t.history]
                .map(|t| (t.id(), t.name().to_string()));
            m.insert("hot_locks".into(), db.hot_locks(&ids));
        }
        let (k, v) = consistency_field(&state.check()?);
        m.insert(k, v);
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::{measure_point, PointSpec};

    fn small(engine: EngineKind) -> Tpcb {
        let mut opts = WorkloadOptions::new(engine);
        opts.progress = false;
        Tpcb { opts, scale: 1 }
    }

    fn run_and_check(engine: EngineKind, threads: usize) {
        let b = small(engine);
        let run = RunConfig {
            threads: vec![threads],
            ..RunConfig::default()
        };
        let state = b.setup("tpcb", &run).unwrap();
        assert!(state.check().unwrap().is_empty());
        let spec = PointSpec {
            threads,
            warmup_s: 0.0,
            duration_s: 0.5,
            latency_sample_every: 1,
            seed: 7,
        };
        let r = measure_point(&spec, &state, Tpcb::op, Tpcb::counters, &mut |_, _| {}).unwrap();
        assert!(r.ops() > 0, "{engine:?} ran no transaction");
        let after = Tpcb::after_point(&state).unwrap();
        assert_eq!(after["consistency"], Value::from("pass"), "{engine:?}");
    }

    #[test]
    fn shoal_runs_consistently_with_two_threads() {
        run_and_check(EngineKind::Shoal, 2);
    }

    #[test]
    fn sqlite_runs_consistently_with_two_threads() {
        run_and_check(EngineKind::Sqlite, 2);
    }

    #[test]
    fn a_corrupted_balance_is_reported() {
        for engine in EngineKind::EMBEDDED {
            let b = small(engine);
            let state = b.setup("tpcb", &RunConfig::default()).unwrap();
            match &state {
                TpcbState::Shoal { db, t, .. } => {
                    let mut tx = db.db().begin(IsolationLevel::ReadCommitted);
                    add_to(&mut tx, &t.accounts, 17, t.abalance, 5).unwrap();
                    tx.commit().unwrap();
                }
                TpcbState::Sqlite { db, .. } => {
                    db.conn(0)
                        .unwrap()
                        .execute(
                            "UPDATE pgbench_accounts SET abalance = 5 WHERE aid = 17",
                            [],
                        )
                        .unwrap();
                }
                TpcbState::Peer { .. } => unreachable!("only the embedded engines"),
            }
            let failures = state.check().unwrap();
            assert_eq!(failures.len(), 1, "{engine:?}");
            assert!(failures[0].contains("sum(abalance) 5"), "{}", failures[0]);
            let after = Tpcb::after_point(&state).unwrap();
            assert!(after["consistency"].as_str().unwrap().starts_with("FAIL"));
        }
    }
}
