//! # PostgreSQL as a peer (issue 8)
//!
//! Job: run `select1`, `tpcb`, `insert` and `tpcc` on a private PostgreSQL server with the
//! same logical work as on Shoal, and run `pgbench` on the same kind of server as a
//! cross-check of the `tpcb` and `select1` numbers ([`pgbench`]).
//!
//! ```text
//!  Postgres (PeerEngine) ── setup ──► PgServer (server.rs: initdb, postgres on a Unix
//!        │                              socket, settings, stopped on drop)
//!        └─ PgDb<S>: one connection per worker, S = the workload's statements prepared
//!           once on that connection; run() = BEGIN ISOLATION LEVEL READ COMMITTED,
//!           body, COMMIT or ROLLBACK; aborts counted by SQLSTATE
//! ```
//!
//! Rules kept here (the peer rules of [`super`]):
//! - Every transaction runs at READ COMMITTED; a row that is read and then written is
//!   written by `UPDATE ... SET x = x + ...` (PostgreSQL re-reads the newest version under
//!   the row lock) or read with `SELECT ... FOR UPDATE` first, so no update is lost.
//! - SQLSTATE `40P01` aborts are counted as `deadlock`, `40001` as `serialization`,
//!   `55P03` as `lock_timeout` (rule 1); any other error stops the run as
//!   [`BenchError::Peer`] naming the transaction and statement.
//! - Types: INT4 `int4`, INT8 `int8`, CHAR(n) `char(n)`, VARCHAR(n) `varchar(n)`, bytes
//!   `bytea`, time stamps `int8` microseconds since the Unix epoch (as SQLite's INTEGER).
//! - Loads use `COPY ... (FORMAT binary)` or set-based `INSERT ... SELECT`, then `VACUUM
//!   ANALYZE` (as `pgbench -i`), outside the measured time.

pub mod insert;
pub mod pgbench;
pub mod select1;
pub mod server;
pub mod tpcb;
pub mod tpcc;
pub mod tpcc_txns;

#[cfg(test)]
mod tests;

use super::super::dbdir::DbDir;
use super::super::per_worker::PerWorker;
use super::super::tpcc::gen::NuRandConstants;
use super::super::tpcc::TpccScale;
use super::super::EngineKind;
use super::{InsertPeer, PeerEngine, PeerSetup, Select1Peer, TpcbPeer, TpccPeer};
use crate::error::{BenchError, Result};
use crate::runner::ThreadCtx;
use postgres::error::SqlState;
use postgres::Client;
use server::{Binaries, PgServer, ServerSettings};
use std::sync::MutexGuard;

/// The engine's name in errors and reports.
pub const ENGINE: &str = "postgres";

/// The PostgreSQL peer (registered in [`super::in_process`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Postgres;

impl PeerEngine for Postgres {
    fn kind(&self) -> EngineKind {
        EngineKind::Postgres
    }

    fn availability(&self) -> std::result::Result<(), String> {
        Binaries::find()?;
        server::run_as()?;
        Ok(())
    }

    fn select1(&self, setup: &PeerSetup<'_>, rows: u64) -> Result<Box<dyn Select1Peer>> {
        Ok(Box::new(select1::PgSelect1::create(setup, rows)?))
    }

    fn tpcb(&self, setup: &PeerSetup<'_>, scale: u64) -> Result<Box<dyn TpcbPeer>> {
        Ok(Box::new(tpcb::PgTpcb::create(setup, scale)?))
    }

    fn insert(&self, setup: &PeerSetup<'_>) -> Result<Box<dyn InsertPeer>> {
        Ok(Box::new(insert::PgInsert::create(setup)?))
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
        Ok(Box::new(tpcc::PgTpcc::create(
            setup, warehouses, scale, k, seed, progress,
        )?))
    }
}

/// Starts a private server for `setup` (module doc of [`server`]): a new directory
/// `<db_dir>/postgres/` or a temporary one, `shared_buffers` = the pool, the run's
/// durability, connections for every worker.
///
/// # Errors
/// As [`PgServer::start`]; the directory errors of [`DbDir::new`].
pub fn start_server(setup: &PeerSetup<'_>) -> Result<PgServer> {
    let dir = DbDir::new(setup.opts.db_dir.as_deref(), ENGINE)?;
    PgServer::start(
        dir,
        &ServerSettings {
            shared_buffers: setup.pool_bytes,
            durability: setup.opts.durability,
            connections: setup.workers.max(1),
        },
    )
}

/// A message for a driver error: SQLSTATE, message and detail for an error the server
/// sent, the driver's own text otherwise.
pub fn describe(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut s = format!("{} {}: {}", db.severity(), db.code().code(), db.message());
            if let Some(d) = db.detail() {
                s.push_str(&format!(" ({d})"));
            }
            s
        }
        None => e.to_string(),
    }
}

/// The abort cause of an error that retrying the transaction can cure (peer rule 1), or
/// `None` for any other error.
pub fn abort_cause(e: &postgres::Error) -> Option<&'static str> {
    let code = e.code()?;
    if *code == SqlState::T_R_DEADLOCK_DETECTED {
        Some("deadlock")
    } else if *code == SqlState::T_R_SERIALIZATION_FAILURE {
        Some("serialization")
    } else if *code == SqlState::LOCK_NOT_AVAILABLE {
        Some("lock_timeout")
    } else {
        None
    }
}

/// `Ok(None)` after counting the abort of a retryable error, else the error as
/// [`BenchError::Peer`] with `what`.
///
/// # Errors
/// [`BenchError::Peer`] for an error that is not retryable.
pub fn abort_or<T>(e: &postgres::Error, ctx: &mut ThreadCtx, what: &str) -> Result<Option<T>> {
    match abort_cause(e) {
        Some(cause) => {
            ctx.abort(cause);
            Ok(None)
        }
        None => Err(BenchError::peer(ENGINE, what, describe(e))),
    }
}

/// Why a transaction body stopped: a driver error at a named statement (retryable or
/// not, [`abort_cause`] decides), or an error of the harness (a result check).
#[derive(Debug)]
pub enum Fail {
    /// The driver or server failed at the statement named.
    Pg(&'static str, postgres::Error),
    /// The harness's own error (e.g. a row the data set up guarantees is missing).
    Bench(BenchError),
}

impl From<BenchError> for Fail {
    fn from(e: BenchError) -> Fail {
        Fail::Bench(e)
    }
}

/// Names the statement of a driver result: `client.execute(..).at("UPDATE district")?`.
pub trait At<T> {
    /// The result with its error tagged by `what`.
    ///
    /// # Errors
    /// [`Fail::Pg`] with `what` if `self` is an error.
    fn at(self, what: &'static str) -> std::result::Result<T, Fail>;
}

impl<T> At<T> for std::result::Result<T, postgres::Error> {
    fn at(self, what: &'static str) -> std::result::Result<T, Fail> {
        self.map_err(|e| Fail::Pg(what, e))
    }
}

/// What a transaction body returns: `Ok(Ok(v))` to commit, `Ok(Err(r))` to roll back on
/// purpose (New-Order's unused item), `Err` for a failure.
pub type Body<T, R> = std::result::Result<std::result::Result<T, R>, Fail>;

/// One worker's connection and the statements prepared on it.
pub struct PgConn<S> {
    /// The connection.
    pub client: Client,
    /// The workload's statements, prepared once on `client`.
    pub st: S,
}

/// A server with one connection per worker.
pub struct PgDb<S> {
    // Dropped first (field order): the connections close before the server stops.
    conns: PerWorker<PgConn<S>>,
    server: PgServer,
}

impl<S> PgDb<S> {
    /// Opens `workers` connections (at least one) to `server` and prepares each one's
    /// statements with `prepare(worker, client)`.
    ///
    /// # Errors
    /// [`BenchError::Peer`] if a connection or a statement fails (the server is stopped).
    pub fn open(
        server: PgServer,
        workers: usize,
        prepare: impl Fn(usize, &mut Client) -> std::result::Result<S, postgres::Error>,
    ) -> Result<PgDb<S>> {
        let conns = PerWorker::new("PostgreSQL connection", workers.max(1), |i| {
            let mut client = server.connect()?;
            let st = prepare(i, &mut client)
                .map_err(|e| BenchError::peer(ENGINE, "preparing the statements", describe(&e)))?;
            Ok(PgConn { client, st })
        })?;
        Ok(PgDb { conns, server })
    }

    /// The server.
    pub fn server(&self) -> &PgServer {
        &self.server
    }

    /// Worker `thread_idx`'s connection (uncontended: each worker has its own).
    ///
    /// # Errors
    /// [`BenchError::InvalidArgument`] if there is no connection for that worker;
    /// [`BenchError::Check`] if another thread panicked holding it.
    pub fn conn(&self, thread_idx: usize) -> Result<MutexGuard<'_, PgConn<S>>> {
        self.conns.get(thread_idx)
    }

    /// Runs `body` as one READ COMMITTED transaction on worker `thread_idx`'s connection
    /// (`txn` names it in errors). Returns `Some(Ok(v))` if it committed, `Some(Err(r))` if
    /// the body asked for a rollback, `None` if it was rolled back for a retryable error
    /// (counted with [`ThreadCtx::abort`]).
    ///
    /// # Errors
    /// [`BenchError::Peer`] for any other driver error, naming `txn` and the statement;
    /// the body's [`Fail::Bench`] (after a rollback).
    pub fn run<T, R>(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        txn: &str,
        body: impl FnOnce(&mut Client, &S) -> Body<T, R>,
    ) -> Result<Option<std::result::Result<T, R>>> {
        let mut guard = self.conn(thread_idx)?;
        let PgConn { client, st } = &mut *guard;
        if let Err(e) = client.batch_execute("BEGIN ISOLATION LEVEL READ COMMITTED") {
            return abort_or(&e, ctx, &format!("{txn}: BEGIN"));
        }
        match body(client, st) {
            Ok(Ok(v)) => match client.batch_execute("COMMIT") {
                Ok(()) => Ok(Some(Ok(v))),
                Err(e) => {
                    let _ = client.batch_execute("ROLLBACK");
                    abort_or(&e, ctx, &format!("{txn}: COMMIT"))
                }
            },
            Ok(Err(r)) => {
                client.batch_execute("ROLLBACK").map_err(|e| {
                    BenchError::peer(ENGINE, format!("{txn}: ROLLBACK"), describe(&e))
                })?;
                Ok(Some(Err(r)))
            }
            Err(Fail::Pg(what, e)) => {
                let rolled_back = client.batch_execute("ROLLBACK");
                let r = abort_or(&e, ctx, &format!("{txn}: {what}"));
                match (r, rolled_back) {
                    (Ok(_), Err(e)) => Err(BenchError::peer(
                        ENGINE,
                        format!("{txn}: ROLLBACK after an abort"),
                        describe(&e),
                    )),
                    (r, _) => r,
                }
            }
            Err(Fail::Bench(b)) => {
                let _ = client.batch_execute("ROLLBACK");
                Err(b)
            }
        }
    }
}

/// Column `i` of `row` as `T`, with a tagged error instead of the driver's panic on a
/// type mismatch.
///
/// # Errors
/// [`Fail::Pg`] with `what` if the column is missing or of another type.
pub fn get<'a, T: postgres::types::FromSql<'a>>(
    row: &'a postgres::Row,
    i: usize,
    what: &'static str,
) -> std::result::Result<T, Fail> {
    row.try_get(i).at(what)
}

/// Checks that a statement changed exactly one row (the data set up guarantees it).
///
/// # Errors
/// [`Fail::Bench`] ([`BenchError::Check`]) naming `what` otherwise.
pub fn one_row(n: u64, what: &str) -> std::result::Result<(), Fail> {
    if n == 1 {
        Ok(())
    } else {
        Err(Fail::Bench(BenchError::Check(format!(
            "{ENGINE}: {what} changed {n} rows, not 1"
        ))))
    }
}
