//! The `bdb` peer's open environment and databases ([`Store`]), and how one benchmark
//! transaction runs on them ([`Store::run`]): begin at degree 2, run the body, commit (or
//! roll back on the body's request); a deadlock victim or lock timeout is aborted and
//! counted with its cause (rule 1 of [`super::super`]).

use super::ffi::{Db, DbErr, DbResult, Env, Txn};
use crate::error::{BenchError, Result};
use crate::runner::ThreadCtx;
use crate::workload::dbdir::DbDir;
use crate::workload::peers::PeerSetup;
use std::sync::Arc;

/// Page size of every database in bytes (Shoal's page size).
pub const PAGE_BYTES: u32 = 8192;

/// How a transaction body wants its transaction to end.
#[derive(Debug)]
pub enum End<T> {
    /// Commit, then return the value.
    Commit(T),
    /// Roll back on purpose (e.g. New-Order's unused item), then return the value.
    Rollback(T),
}

/// An environment with its databases, in a directory of its own.
pub struct Store {
    /// The databases, in the order their names were given (closed before the environment:
    /// fields drop in declaration order).
    dbs: Vec<Db>,
    /// The environment.
    env: Arc<Env>,
    /// The directory (removed last, unless kept).
    _dir: DbDir,
}

impl Store {
    /// Opens a new environment for `setup` and creates the B-tree databases `names`.
    ///
    /// # Errors
    /// [`BenchError::Io`] or [`BenchError::InvalidArgument`] for the directory (see
    /// [`DbDir::new`]); [`BenchError::Peer`] if Berkeley DB refuses the environment or a
    /// database.
    pub fn open(setup: &PeerSetup<'_>, names: &[String]) -> Result<Store> {
        let dir = DbDir::new(setup.opts.db_dir.as_deref(), "bdb")?;
        let env = Env::open(dir.path(), &super::env_config(setup))
            .map_err(|e| e.into_bench("opening the environment"))?;
        let mut dbs = Vec::with_capacity(names.len());
        for name in names {
            dbs.push(
                Db::create(&env, name, PAGE_BYTES)
                    .map_err(|e| e.into_bench(format!("creating database {name}").as_str()))?,
            );
        }
        Ok(Store {
            dbs,
            env,
            _dir: dir,
        })
    }

    /// Database `i` (in the order of [`Store::open`]'s names).
    ///
    /// # Errors
    /// [`BenchError::InvalidArgument`] (`threads`) if there is no database `i` (e.g. a
    /// worker without a table of its own).
    pub fn db(&self, i: usize) -> Result<&Db> {
        self.dbs
            .get(i)
            .ok_or_else(|| BenchError::invalid("threads", format!("bdb: no database {i}")))
    }

    /// The databases.
    pub fn dbs(&self) -> &[Db] {
        &self.dbs
    }

    /// Begins a transaction at degree 2.
    ///
    /// # Errors
    /// [`BenchError::Peer`].
    pub fn begin(&self) -> Result<Txn<'_>> {
        self.env
            .begin(true)
            .map_err(|e| e.into_bench("beginning a transaction"))
    }

    /// Runs `body` as one transaction of a worker: `Ok(Some(v))` if it committed or rolled
    /// back on request, `Ok(None)` if it was a deadlock victim or timed out (aborted and
    /// counted in `ctx` with cause `deadlock` or `lock_timeout`).
    ///
    /// # Errors
    /// [`BenchError::Peer`] naming `what` for any other failure (the transaction is
    /// aborted first).
    pub fn run<T>(
        &self,
        ctx: &mut ThreadCtx,
        what: &str,
        body: impl FnOnce(&Txn<'_>) -> DbResult<End<T>>,
    ) -> Result<Option<T>> {
        let txn = self.begin()?;
        let failed = match body(&txn) {
            Ok(End::Commit(v)) => match txn.commit() {
                Ok(()) => return Ok(Some(v)),
                Err(e) => e,
            },
            Ok(End::Rollback(v)) => {
                txn.abort().map_err(|e| e.into_bench(what))?;
                return Ok(Some(v));
            }
            Err(e) => {
                // The body's failure is what is reported; an abort failing after it would
                // only hide it.
                let _ = txn.abort();
                e
            }
        };
        retry_or_fail(ctx, what, failed)
    }
}

/// A failed transaction: counted as an abort if retrying can cure it, else the error.
fn retry_or_fail<T>(ctx: &mut ThreadCtx, what: &str, e: DbErr) -> Result<Option<T>> {
    match e.retry_cause() {
        Some(cause) => {
            ctx.abort(cause);
            Ok(None)
        }
        None => Err(e.into_bench(what)),
    }
}
