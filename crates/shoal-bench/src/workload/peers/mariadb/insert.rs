//! `insert` on MariaDB: one table `insert_<i>(k BIGINT PRIMARY KEY, v BINARY(100))`
//! (InnoDB) per worker. A batch is one transaction whose records go in prepared multi-row
//! `INSERT`s of [`ROWS_PER_STATEMENT`] rows (a single-row one for any remainder): the same
//! records as on Shoal, with one round trip per hundred records instead of per record.

use super::super::super::insert::{value_of, VALUE_BYTES};
use super::super::{InsertPeer, PeerSetup};
use super::load::insert_sql;
use super::server::Server;
use super::{on_new_connection, scalar, Db};
use crate::error::Result;
use crate::runner::ThreadCtx;
use mysql::prelude::Queryable;
use mysql::{Statement, Value};

/// Records per multi-row `INSERT`.
pub const ROWS_PER_STATEMENT: u64 = 100;

/// A connection's statements, on its own worker's table.
pub struct St {
    many: Statement,
    one: Statement,
}

/// The workers' tables on a private server.
pub struct InsertDb {
    /// The server and its connections (connection `i` inserts into `insert_<i>`).
    pub db: Db<St>,
}

/// Starts a server and creates one empty table per worker.
///
/// # Errors
/// [`BenchError::Peer`](crate::BenchError::Peer) if the server fails to start or create.
pub fn setup(setup: &PeerSetup<'_>) -> Result<InsertDb> {
    let server = Server::start(setup.opts, setup.pool_bytes, setup.workers)?;
    let workers = setup.workers.max(1);
    on_new_connection(&server, "creating the insert tables", |c| {
        for i in 0..workers {
            c.query_drop(format!(
                "CREATE TABLE insert_{i}(k BIGINT NOT NULL PRIMARY KEY, v BINARY({VALUE_BYTES}) NOT NULL) ENGINE=InnoDB"
            ))?;
        }
        Ok(())
    })?;
    let db = Db::open(server, workers, |i, c| {
        let table = format!("insert_{i}");
        Ok(St {
            many: c.prep(insert_sql(&table, 2, ROWS_PER_STATEMENT as usize))?,
            one: c.prep(insert_sql(&table, 2, 1))?,
        })
    })?;
    Ok(InsertDb { db })
}

/// The parameters of records `keys` (key, value, key, value, …).
fn params(keys: std::ops::Range<u64>) -> Vec<Value> {
    keys.flat_map(|k| [Value::Int(k as i64), Value::Bytes(value_of(k).to_vec())])
        .collect()
}

impl InsertPeer for InsertDb {
    fn insert_batch(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        first: u64,
        n: u64,
    ) -> Result<bool> {
        let r = self
            .db
            .run(thread_idx, ctx, "insert batch", false, |c, st| {
                let end = first + n;
                let mut k = first;
                while k + ROWS_PER_STATEMENT <= end {
                    c.exec_drop(&st.many, params(k..k + ROWS_PER_STATEMENT))?;
                    k += ROWS_PER_STATEMENT;
                }
                for k in k..end {
                    c.exec_drop(&st.one, params(k..k + 1))?;
                }
                Ok(Ok::<_, ()>(()))
            })?;
        Ok(r.is_some())
    }

    fn count(&self, worker: usize) -> Result<u64> {
        self.db.with("counting an insert table", |c, _| {
            scalar::<u64>(c, &format!("SELECT count(*) FROM insert_{worker}"))
        })
    }
}
