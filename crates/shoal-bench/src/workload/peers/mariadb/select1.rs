//! `select1` on MariaDB: `test(a INT PRIMARY KEY, b BINARY(96) NOT NULL)` (InnoDB, clustered
//! on `a`), loaded in key order; one transaction is the prepared `SELECT a FROM test WHERE
//! a = ?` in autocommit mode (one implicit transaction, as on SQLite).

use super::super::super::select1::{b_value, B_BYTES};
use super::super::{PeerSetup, Select1Peer};
use super::load::Bulk;
use super::server::Server;
use super::{abort_cause, col, on_new_connection, scalar, Db, ENGINE};
use crate::error::{BenchError, Result};
use crate::runner::ThreadCtx;
use mysql::prelude::Queryable;
use mysql::{Row, Statement, Value};

/// Rows per load transaction.
const LOAD_TXN_ROWS: u64 = 10_000;

/// Each connection's statement.
pub struct St {
    select: Statement,
}

/// The `select1` table on a private server.
pub struct Select1Db {
    /// The server and its connections.
    pub db: Db<St>,
}

/// Starts a server, creates `test` and loads `rows` rows.
///
/// # Errors
/// [`BenchError::Peer`] if the server fails to start, create or load.
pub fn setup(setup: &PeerSetup<'_>, rows: u64) -> Result<Select1Db> {
    let server = Server::start(setup.opts, setup.pool_bytes, setup.workers)?;
    on_new_connection(&server, "loading test", |c| {
        c.query_drop(format!(
            "CREATE TABLE test(a INT NOT NULL PRIMARY KEY, b BINARY({B_BYTES}) NOT NULL) ENGINE=InnoDB"
        ))?;
        let mut bulk = Bulk::new("test", 2);
        let mut a = 0;
        while a < rows {
            let end = (a + LOAD_TXN_ROWS).min(rows);
            c.query_drop("START TRANSACTION")?;
            for k in a..end {
                bulk.push(c, [Value::Int(k as i64), Value::Bytes(b_value(k).to_vec())])?;
            }
            bulk.flush(c)?;
            c.query_drop("COMMIT")?;
            a = end;
        }
        Ok(())
    })?;
    let db = Db::open(server, setup.workers, |_, c| {
        Ok(St {
            select: c.prep("SELECT a FROM test WHERE a = ?")?,
        })
    })?;
    Ok(Select1Db { db })
}

impl Select1Peer for Select1Db {
    fn select(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        key: i64,
    ) -> Result<Option<Option<i64>>> {
        let mut s = self.db.session(thread_idx)?;
        let super::Session { conn, st } = &mut *s;
        match conn.exec_first::<Row, _, _>(&st.select, (key,)) {
            Ok(None) => Ok(Some(None)),
            Ok(Some(mut row)) => col::<i64>(&mut row, 0)
                .map(|a| Some(Some(a)))
                .map_err(|e| super::peer_error(e, "select1")),
            Err(e) => match abort_cause(&e) {
                Some(cause) => {
                    ctx.abort(cause);
                    Ok(None)
                }
                None => Err(BenchError::peer(ENGINE, "SELECT a FROM test", e)),
            },
        }
    }

    fn count(&self) -> Result<u64> {
        self.db.with("counting test", |c, _| {
            scalar::<u64>(c, "SELECT count(*) FROM test")
        })
    }
}
