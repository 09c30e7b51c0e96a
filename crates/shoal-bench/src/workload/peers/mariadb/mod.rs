//! # MariaDB/InnoDB as a peer (issue 8, deliverable 3)
//!
//! Job: run the four workloads on a private MariaDB server with InnoDB tables, driven from
//! this process through the `mysql` crate, with the same logical work as Shoal and SQLite.
//!
//! - [`server`] starts the private `mariadbd` (Unix socket only) in the run's database
//!   directory and stops it when the setup's state is dropped; its module doc lists the
//!   server settings (durability: `innodb_flush_log_at_trx_commit` 1 for `full`, 2 for
//!   `lazy`; buffer pool = the run's pool).
//! - [`Db`] holds one connection per worker ([`Session`]), each with the workload's
//!   prepared statements, prepared once when the connection opens and reused; the driver's
//!   own statement cache is off. Sessions run at READ COMMITTED. [`Db::run`] wraps one
//!   transaction (`START TRANSACTION` … `COMMIT`, or a single autocommit statement for
//!   `select1`): InnoDB's error 1213 (deadlock victim) is counted as the abort `deadlock`,
//!   1205 (lock wait timeout) as `lock_timeout`, the transaction rolled back and
//!   `Ok(None)` returned; any other error is [`BenchError::Peer`].
//! - Rows that a transaction reads and then writes are read with `SELECT … FOR UPDATE`
//!   or written as `UPDATE … SET x = x + ?`, so no update is lost at READ COMMITTED.
//! - Tables are `ENGINE=InnoDB`, clustered on their primary keys as Shoal's are, in a
//!   `latin1_bin` database (one byte per character, byte order as in Shoal and SQLite).
//!   Loads use multi-row prepared `INSERT`s ([`load::Bulk`]).
//!
//! Workloads: [`select1`], [`tpcb`], [`insert`], [`tpcc`] (with [`tpcc_load`] for its
//! schema, load and consistency snapshot). `peers/mariadb/install.sh` (run by
//! `peers/install.sh`) installs the server from Debian's packages.

pub mod insert;
pub mod load;
pub mod select1;
pub mod server;
#[cfg(test)]
mod tests;
pub mod tpcb;
pub mod tpcc;
pub mod tpcc_load;

use super::super::per_worker::PerWorker;
use super::super::tpcc::gen::NuRandConstants;
use super::super::tpcc::TpccScale;
use super::super::EngineKind;
use super::{InsertPeer, PeerEngine, PeerSetup, Select1Peer, TpcbPeer, TpccPeer};
use crate::error::{BenchError, Result};
use crate::runner::ThreadCtx;
use mysql::prelude::{FromValue, Queryable};
use mysql::Row;
use server::Server;
use std::sync::MutexGuard;

/// The engine's name in reports and errors.
pub const ENGINE: &str = "mariadb";
/// InnoDB's error for a transaction chosen as a deadlock victim (rolled back by InnoDB).
pub const ER_LOCK_DEADLOCK: u16 = 1213;
/// InnoDB's error for a row lock not granted within `innodb_lock_wait_timeout`.
pub const ER_LOCK_WAIT_TIMEOUT: u16 = 1205;

/// The MariaDB/InnoDB peer ([`PeerEngine`]).
pub struct Mariadb;

impl PeerEngine for Mariadb {
    fn kind(&self) -> EngineKind {
        EngineKind::Mariadb
    }

    fn availability(&self) -> std::result::Result<(), String> {
        for program in ["mariadbd", "mariadb-install-db"] {
            if server::find_program(program).is_none() {
                return Err(format!("{program} not found; run peers/install.sh"));
            }
        }
        Ok(())
    }

    fn select1(&self, setup: &PeerSetup<'_>, rows: u64) -> Result<Box<dyn Select1Peer>> {
        Ok(Box::new(select1::setup(setup, rows)?))
    }

    fn tpcb(&self, setup: &PeerSetup<'_>, scale: u64) -> Result<Box<dyn TpcbPeer>> {
        Ok(Box::new(tpcb::setup(setup, scale)?))
    }

    fn insert(&self, setup: &PeerSetup<'_>) -> Result<Box<dyn InsertPeer>> {
        Ok(Box::new(insert::setup(setup)?))
    }

    fn tpcc(
        &self,
        setup: &PeerSetup<'_>,
        warehouses: u32,
        scale: &TpccScale,
        k: &NuRandConstants,
        seed: u64,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Box<dyn TpccPeer>> {
        Ok(Box::new(tpcc::setup(
            setup, warehouses, scale, k, seed, progress,
        )?))
    }
}

/// Why a transaction's body stopped: an error of the server or driver (classified by
/// [`Db::run`]), or one of the harness (a wrong or undecodable result).
#[derive(Debug)]
pub enum TxError {
    /// The server or the driver failed.
    Db(mysql::Error),
    /// The harness refuses what it read.
    Bench(BenchError),
}

impl From<mysql::Error> for TxError {
    fn from(e: mysql::Error) -> TxError {
        TxError::Db(e)
    }
}

impl From<BenchError> for TxError {
    fn from(e: BenchError) -> TxError {
        TxError::Bench(e)
    }
}

/// The result of a transaction's step.
pub type TxResult<T> = std::result::Result<T, TxError>;

/// One worker's connection and its prepared statements `S`.
pub struct Session<S> {
    /// The connection.
    pub conn: mysql::Conn,
    /// The statements prepared on it.
    pub st: S,
}

/// A private server with one [`Session`] per worker.
pub struct Db<S> {
    // Closed before the server stops (declaration order).
    sessions: PerWorker<Session<S>>,
    server: Server,
}

impl<S> Db<S> {
    /// Opens `connections` (at least one) connections to database
    /// [`server::DATABASE`] of `server` and prepares each one's statements with `prepare`
    /// (given the session's number and its connection).
    ///
    /// # Errors
    /// [`BenchError::Peer`] if a connection or a statement fails (the server is stopped).
    pub fn open(
        server: Server,
        connections: usize,
        prepare: impl Fn(usize, &mut mysql::Conn) -> mysql::Result<S>,
    ) -> Result<Db<S>> {
        let sessions = PerWorker::new("MariaDB connection", connections.max(1), |i| {
            let mut conn = server.connect(Some(server::DATABASE))?;
            let st = prepare(i, &mut conn)
                .map_err(|e| BenchError::peer(ENGINE, "preparing the statements", e))?;
            Ok(Session { conn, st })
        })?;
        Ok(Db { sessions, server })
    }

    /// The server.
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// Worker `thread_idx`'s session (uncontended: each worker has its own).
    ///
    /// # Errors
    /// [`BenchError::InvalidArgument`] if there is no session for that worker;
    /// [`BenchError::Check`] if another thread panicked holding it.
    pub fn session(&self, thread_idx: usize) -> Result<MutexGuard<'_, Session<S>>> {
        self.sessions.get(thread_idx)
    }

    /// Runs `body` as one transaction named `what` on worker `thread_idx`'s session:
    /// `START TRANSACTION` (`READ ONLY` if `read_only`), the body, then `COMMIT`, or
    /// `ROLLBACK` if the body failed or returned `Err(r)` (a rollback it asked for).
    /// Returns `None` for a transaction aborted by a deadlock or lock wait timeout
    /// (counted on `ctx`, module doc).
    ///
    /// # Errors
    /// [`BenchError::Peer`] for any other server error, naming `what`; the body's
    /// [`TxError::Bench`].
    pub fn run<T, R>(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        what: &str,
        read_only: bool,
        body: impl FnOnce(&mut mysql::Conn, &S) -> TxResult<std::result::Result<T, R>>,
    ) -> Result<Option<std::result::Result<T, R>>> {
        let mut guard = self.session(thread_idx)?;
        let Session { conn, st } = &mut *guard;
        let begin = if read_only {
            "START TRANSACTION READ ONLY"
        } else {
            "START TRANSACTION"
        };
        if let Err(e) = conn.query_drop(begin) {
            return abort_or(e.into(), ctx, what);
        }
        let outcome = body(conn, st);
        let end = match &outcome {
            Ok(Ok(_)) => "COMMIT",
            _ => "ROLLBACK",
        };
        let ended = conn.query_drop(end);
        match (outcome, ended) {
            (Ok(v), Ok(())) => Ok(Some(v)),
            (Ok(Ok(_)), Err(e)) => {
                let _ = conn.query_drop("ROLLBACK");
                abort_or(e.into(), ctx, what)
            }
            (Ok(Err(_)), Err(e)) => Err(BenchError::peer(ENGINE, format!("{what}: ROLLBACK"), e)),
            (Err(e), _) => abort_or(e, ctx, what),
        }
    }

    /// Runs `body` outside a transaction of the harness's (autocommit) on session 0, for
    /// setups and checks.
    ///
    /// # Errors
    /// As [`Db::run`], with no error counted as an abort.
    pub fn with<T>(
        &self,
        what: &str,
        body: impl FnOnce(&mut mysql::Conn, &S) -> TxResult<T>,
    ) -> Result<T> {
        let mut guard = self.session(0)?;
        let Session { conn, st } = &mut *guard;
        body(conn, st).map_err(|e| peer_error(e, what))
    }
}

/// Runs `body` on a new connection to database [`server::DATABASE`] of `server` (for
/// creating and loading tables before [`Db::open`] prepares statements on them).
///
/// # Errors
/// [`BenchError::Peer`] if the connection or the body fails, naming `what`.
pub fn on_new_connection<T>(
    server: &Server,
    what: &str,
    body: impl FnOnce(&mut mysql::Conn) -> TxResult<T>,
) -> Result<T> {
    let mut conn = server.connect(Some(server::DATABASE))?;
    body(&mut conn).map_err(|e| peer_error(e, what))
}

/// The error `e` of transaction `what` as the harness reports it.
pub fn peer_error(e: TxError, what: &str) -> BenchError {
    match e {
        TxError::Db(e) => BenchError::peer(ENGINE, what, e),
        TxError::Bench(b) => b,
    }
}

/// The abort cause of a server error that retrying the transaction can cure (module doc).
pub fn abort_cause(e: &mysql::Error) -> Option<&'static str> {
    match e {
        mysql::Error::MySqlError(m) if m.code == ER_LOCK_DEADLOCK => Some("deadlock"),
        mysql::Error::MySqlError(m) if m.code == ER_LOCK_WAIT_TIMEOUT => Some("lock_timeout"),
        _ => None,
    }
}

/// `Ok(None)` after counting an abort, or the error as [`BenchError::Peer`].
fn abort_or<T>(e: TxError, ctx: &mut ThreadCtx, what: &str) -> Result<Option<T>> {
    if let TxError::Db(db) = &e {
        if let Some(cause) = abort_cause(db) {
            ctx.abort(cause);
            return Ok(None);
        }
    }
    Err(peer_error(e, what))
}

/// Column `i` of `row`, taken out and converted to `T` (`Option<T>` for a nullable one).
///
/// # Errors
/// [`TxError::Bench`] ([`BenchError::Peer`]) if the row has no column `i` or its value does
/// not convert.
pub fn col<T: FromValue>(row: &mut Row, i: usize) -> TxResult<T> {
    match row.take_opt::<T, usize>(i) {
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) => Err(BenchError::peer(ENGINE, format!("reading column {i}"), e).into()),
        None => {
            Err(BenchError::peer(ENGINE, format!("reading column {i}"), "no such column").into())
        }
    }
}

/// The first row `stmt` returns, which must exist; `what` names it for the error.
///
/// # Errors
/// The server's errors; [`TxError::Bench`] ([`BenchError::Check`]) if there is no row.
pub fn must_row(
    conn: &mut mysql::Conn,
    stmt: &mysql::Statement,
    params: impl Into<mysql::Params>,
    what: impl FnOnce() -> String,
) -> TxResult<Row> {
    conn.exec_first::<Row, _, _>(stmt, params)?
        .ok_or_else(|| BenchError::Check(format!("{ENGINE}: no row for {}", what())).into())
}

/// The first column of the one row the text statement `sql` returns.
///
/// # Errors
/// The server's errors; [`TxError::Bench`] if there is no row or the value does not
/// convert.
pub fn scalar<T: FromValue>(conn: &mut mysql::Conn, sql: &str) -> TxResult<T> {
    let mut row = conn
        .query_first::<Row, _>(sql)?
        .ok_or_else(|| BenchError::Check(format!("{ENGINE}: no row from {sql}")))?;
    col(&mut row, 0)
}

/// Runs the text statement `sql` and returns its rows.
///
/// # Errors
/// The server's errors.
pub fn query_rows(conn: &mut mysql::Conn, sql: &str) -> TxResult<Vec<Row>> {
    Ok(conn.query::<Row, _>(sql)?)
}
