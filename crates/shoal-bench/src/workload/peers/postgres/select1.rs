//! `select1` on PostgreSQL: `test(a int4 PRIMARY KEY, b bytea NOT NULL)` loaded with one
//! binary `COPY` in the transaction that creates the table, then `VACUUM ANALYZE` (so the
//! query may answer from the primary key's index alone, PostgreSQL's best plan for it).
//! One operation is the prepared `SELECT a FROM test WHERE a = $1` in autocommit mode: one
//! statement, one implicit transaction, as on SQLite and as `pgbench -S` runs its query.

use super::super::super::select1::b_value;
use super::super::{PeerSetup, Select1Peer};
use super::{abort_or, describe, start_server, PgConn, PgDb, ENGINE};
use crate::error::{BenchError, Result};
use crate::runner::ThreadCtx;
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::Type;
use postgres::Statement;

/// `select1`'s table on a private server.
pub struct PgSelect1 {
    db: PgDb<Statement>,
}

impl PgSelect1 {
    /// Starts a server for `setup`, creates `test` and loads `rows` rows (keys `0..rows`).
    ///
    /// # Errors
    /// [`BenchError::Peer`] if the server fails to start or a statement fails;
    /// [`BenchError::InvalidArgument`] if `rows` does not fit INT4 keys.
    pub fn create(setup: &PeerSetup<'_>, rows: u64) -> Result<PgSelect1> {
        let n = i32::try_from(rows)
            .map_err(|_| BenchError::invalid("--scale", format!("{rows} rows exceed INT4 keys")))?;
        let server = start_server(setup)?;
        let mut c = server.connect()?;
        let e = |what: &'static str| {
            move |e: postgres::Error| BenchError::peer(ENGINE, what, describe(&e))
        };
        let mut tx = c.transaction().map_err(e("BEGIN"))?;
        tx.batch_execute("CREATE TABLE test(a int4 PRIMARY KEY, b bytea NOT NULL)")
            .map_err(e("CREATE TABLE test"))?;
        let writer = tx
            .copy_in("COPY test (a, b) FROM STDIN (FORMAT binary)")
            .map_err(e("COPY test"))?;
        let mut w = BinaryCopyInWriter::new(writer, &[Type::INT4, Type::BYTEA]);
        for a in 0..n {
            let b = b_value(a as u64);
            w.write(&[&a, &&b[..]]).map_err(e("COPY test"))?;
        }
        w.finish().map_err(e("COPY test"))?;
        tx.commit().map_err(e("COMMIT of the load"))?;
        c.batch_execute("VACUUM ANALYZE test")
            .map_err(e("VACUUM ANALYZE test"))?;
        drop(c);
        let db = PgDb::open(server, setup.workers, |_, c| {
            c.prepare("SELECT a FROM test WHERE a = $1")
        })?;
        Ok(PgSelect1 { db })
    }

    /// The server and connections (for tests and the cross-check).
    pub fn db(&self) -> &PgDb<Statement> {
        &self.db
    }
}

impl Select1Peer for PgSelect1 {
    fn select(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        key: i64,
    ) -> Result<Option<Option<i64>>> {
        let a = i32::try_from(key)
            .map_err(|_| BenchError::invalid("key", format!("{key} does not fit INT4")))?;
        let mut guard = self.db.conn(thread_idx)?;
        let PgConn { client, st } = &mut *guard;
        let what = "select1: SELECT a FROM test";
        match client.query_opt(&*st, &[&a]) {
            Ok(None) => Ok(Some(None)),
            Ok(Some(row)) => match row.try_get::<_, i32>(0) {
                Ok(v) => Ok(Some(Some(i64::from(v)))),
                Err(e) => Err(BenchError::peer(ENGINE, what, describe(&e))),
            },
            Err(e) => abort_or(&e, ctx, what),
        }
    }

    fn count(&self) -> Result<u64> {
        let mut c = self.db.conn(0)?;
        let what = "select1: SELECT count(*) FROM test";
        let row = c
            .client
            .query_one("SELECT count(*) FROM test", &[])
            .map_err(|e| BenchError::peer(ENGINE, what, describe(&e)))?;
        let n: i64 = row
            .try_get(0)
            .map_err(|e| BenchError::peer(ENGINE, what, describe(&e)))?;
        Ok(n.max(0) as u64)
    }
}
