//! SQLite as a workload engine (DESIGN.md §4's peer settings): one database file in WAL
//! mode, one connection per worker thread, `synchronous=FULL` (durability `full`) or `OFF`
//! (`lazy`), prepared statements kept in each connection's statement cache and reused, and
//! busy handling that retries.
//!
//! Busy handling: every connection has a busy timeout ([`BUSY_TIMEOUT`]), so a writer that
//! finds the write lock taken sleeps and retries inside SQLite. A transaction that still
//! gets `SQLITE_BUSY` or `SQLITE_LOCKED` is rolled back and counted as an abort with cause
//! `busy`; the worker then runs a new transaction (module rule 1 of [`super`]). Writers
//! begin with `BEGIN IMMEDIATE`, taking the write lock first, so they never fail to
//! upgrade a read snapshot halfway through.
//!
//! The page cache is per connection in SQLite: each connection gets `cache_size` equal to
//! the pool size the run gives Shoal, so SQLite has at least as much cache as Shoal.

use super::dbdir::DbDir;
use super::per_worker::PerWorker;
use super::{Durability, WorkloadOptions};
use crate::error::{BenchError, Result};
use crate::runner::ThreadCtx;
use rusqlite::{Connection, ErrorCode};
use std::path::PathBuf;
use std::sync::MutexGuard;
use std::time::Duration;

/// How long SQLite's busy handler keeps retrying a lock before returning `SQLITE_BUSY`.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// Prepared statements each connection keeps for reuse.
pub const STATEMENT_CACHE: usize = 64;
/// Name of the database file in the engine's directory.
pub const DB_FILE: &str = "bench.sqlite";

/// A SQLite database for one workload setup, with one connection per worker thread.
pub struct SqliteDb {
    conns: PerWorker<Connection>,
    path: PathBuf,
    pool_bytes: u64,
    // Dropped last: the connections close before a temporary directory is removed.
    _dir: DbDir,
}

impl SqliteDb {
    /// Creates an empty database for `opts` and opens `connections` connections to it (at
    /// least one), each with a page cache of `pool_bytes` bytes.
    ///
    /// # Errors
    /// The harness's directory errors; [`BenchError::Sqlite`] if a connection cannot be
    /// opened or configured.
    pub fn create(opts: &WorkloadOptions, pool_bytes: u64, connections: usize) -> Result<SqliteDb> {
        let dir = DbDir::new(opts.db_dir.as_deref(), opts.engine.name())?;
        let path = dir.path().join(DB_FILE);
        let conns = PerWorker::new("SQLite connection", connections.max(1), |_| {
            open(&path, opts.durability, pool_bytes)
        })?;
        Ok(SqliteDb {
            conns,
            path,
            pool_bytes,
            _dir: dir,
        })
    }

    /// The database file.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The page cache of each connection in bytes.
    pub fn pool_bytes(&self) -> u64 {
        self.pool_bytes
    }

    /// Worker `thread_idx`'s connection (uncontended: each worker has its own).
    ///
    /// # Errors
    /// [`BenchError::InvalidArgument`] if there is no connection for that worker (the
    /// setup made fewer than the run's thread count); [`BenchError::Check`] if another
    /// thread panicked holding it.
    pub fn conn(&self, thread_idx: usize) -> Result<MutexGuard<'_, Connection>> {
        self.conns.get(thread_idx)
    }

    /// Runs `body` as one transaction on worker `thread_idx`'s connection: `BEGIN
    /// IMMEDIATE` if `writes`, else `BEGIN`; then `COMMIT`. Returns as
    /// [`ShoalDb::run`](super::shoal_side::ShoalDb::run): `None` for a transaction
    /// rolled back because of `SQLITE_BUSY`/`SQLITE_LOCKED` (counted as `busy`),
    /// `Some(Err(r))` for a rollback the body asked for.
    ///
    /// # Errors
    /// [`BenchError::Sqlite`] for any other SQLite error, naming the step.
    pub fn run<T, R>(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        writes: bool,
        body: impl FnOnce(&Connection) -> rusqlite::Result<std::result::Result<T, R>>,
    ) -> Result<Option<std::result::Result<T, R>>> {
        let conn = self.conn(thread_idx)?;
        let begin = if writes { "BEGIN IMMEDIATE" } else { "BEGIN" };
        if let Err(e) = conn.execute_batch(begin) {
            return busy_or(e, ctx, begin);
        }
        let outcome = body(&conn);
        let end = match &outcome {
            Ok(Ok(_)) => "COMMIT",
            _ => "ROLLBACK",
        };
        let ended = conn.execute_batch(end);
        match (outcome, ended) {
            (Ok(v), Ok(())) => Ok(Some(v)),
            (Ok(Ok(_)), Err(e)) => {
                let _ = conn.execute_batch("ROLLBACK");
                busy_or(e, ctx, "COMMIT")
            }
            (Ok(Err(_)), Err(e)) => Err(BenchError::sqlite("ROLLBACK", e)),
            (Err(e), _) => busy_or(e, ctx, "a statement of the transaction"),
        }
    }
}

/// `Ok(None)` after counting a busy abort, or the error as [`BenchError::Sqlite`].
fn busy_or<T>(e: rusqlite::Error, ctx: &mut ThreadCtx, what: &str) -> Result<Option<T>> {
    if is_busy(&e) {
        ctx.abort("busy");
        Ok(None)
    } else {
        Err(BenchError::sqlite(what, e))
    }
}

/// Whether `e` is `SQLITE_BUSY` or `SQLITE_LOCKED` (retrying the transaction may succeed).
pub fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Opens and configures one connection (see the module doc).
fn open(path: &std::path::Path, durability: Durability, pool_bytes: u64) -> Result<Connection> {
    let what = |step: &str| format!("{step} on {}", path.display());
    let conn = Connection::open(path).map_err(|e| BenchError::sqlite(what("opening"), e))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| BenchError::sqlite(what("busy_timeout"), e))?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    let sync = match durability {
        Durability::Full => "FULL",
        Durability::Lazy => "OFF",
    };
    let cache_kib = (pool_bytes / 1024).max(1);
    conn.execute_batch(&format!(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous={sync}; PRAGMA cache_size=-{cache_kib};"
    ))
    .map_err(|e| BenchError::sqlite(what("setting the pragmas"), e))?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .map_err(|e| BenchError::sqlite(what("reading journal_mode"), e))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(BenchError::Check(format!(
            "SQLite refused WAL mode for {} (journal_mode is {mode})",
            path.display()
        )));
    }
    Ok(conn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::EngineKind;

    #[test]
    fn connections_use_wal_and_the_chosen_sync() {
        for (d, expect) in [(Durability::Full, 2), (Durability::Lazy, 0)] {
            let mut o = WorkloadOptions::new(EngineKind::Sqlite);
            o.durability = d;
            let db = SqliteDb::create(&o, 16 << 20, 2).unwrap();
            let c = db.conn(1).unwrap();
            let sync: i64 = c.query_row("PRAGMA synchronous", [], |r| r.get(0)).unwrap();
            assert_eq!(sync, expect);
            let cache: i64 = c.query_row("PRAGMA cache_size", [], |r| r.get(0)).unwrap();
            assert_eq!(cache, -16384);
            drop(c);
            assert!(db.conn(2).is_err(), "only two connections");
        }
    }

    #[test]
    fn transactions_commit_roll_back_and_count_busy() {
        let db = SqliteDb::create(&WorkloadOptions::new(EngineKind::Sqlite), 8 << 20, 2).unwrap();
        db.conn(0)
            .unwrap()
            .execute_batch("CREATE TABLE t(k INTEGER PRIMARY KEY, v INT)")
            .unwrap();
        let mut ctx = ThreadCtx::new(1, 0);
        let r = db
            .run(0, &mut ctx, true, |c| {
                c.execute("INSERT INTO t VALUES (1, 1)", [])?;
                Ok(Ok::<_, ()>(()))
            })
            .unwrap();
        assert_eq!(r, Some(Ok(())));
        let r = db
            .run(0, &mut ctx, true, |c| {
                c.execute("INSERT INTO t VALUES (2, 2)", [])?;
                Ok(Err::<(), _>("unused item"))
            })
            .unwrap();
        assert_eq!(r, Some(Err("unused item")));
        let n: i64 = db
            .conn(1)
            .unwrap()
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1, "the second insert was rolled back");

        // Worker 1 holds the write lock; worker 0's writer is refused after the busy
        // timeout... which is long, so take the lock with a short timeout instead.
        let c1 = db.conn(1).unwrap();
        c1.execute_batch("BEGIN IMMEDIATE").unwrap();
        db.conn(0)
            .unwrap()
            .busy_timeout(Duration::from_millis(10))
            .unwrap();
        let r = db.run(0, &mut ctx, true, |_| Ok(Ok::<_, ()>(()))).unwrap();
        assert_eq!(r, None);
        assert_eq!(ctx.aborts_of("busy"), 1);
        c1.execute_batch("ROLLBACK").unwrap();
    }
}
