//! `insert` on PostgreSQL: one table `insert_<i>(k int8 PRIMARY KEY, v bytea NOT NULL)` per
//! worker. A transaction inserts its 1,000 records with one prepared statement,
//! `INSERT ... SELECT * FROM unnest($1::int8[], $2::bytea[])`: the server still inserts
//! each record into the heap and the primary key's B-tree one by one, but the client sends
//! one message instead of 1,000 round trips, so the number measures the engine rather than
//! the socket (Shoal and SQLite insert in-process).

use super::super::super::insert::value_of;
use super::super::{InsertPeer, PeerSetup};
use super::{describe, start_server, At, Fail, PgDb, ENGINE};
use crate::error::{BenchError, Result};
use crate::runner::ThreadCtx;
use postgres::Statement;

/// The worker tables on a private server.
pub struct PgInsert {
    db: PgDb<Statement>,
    workers: usize,
}

impl PgInsert {
    /// Starts a server for `setup` and creates one empty table per worker.
    ///
    /// # Errors
    /// [`BenchError::Peer`] if the server fails to start or a statement fails.
    pub fn create(setup: &PeerSetup<'_>) -> Result<PgInsert> {
        let workers = setup.workers.max(1);
        let server = start_server(setup)?;
        let mut c = server.connect()?;
        let ddl: String = (0..workers)
            .map(|i| format!("CREATE TABLE insert_{i}(k int8 PRIMARY KEY, v bytea NOT NULL);\n"))
            .collect();
        c.batch_execute(&ddl)
            .map_err(|e| BenchError::peer(ENGINE, "creating the insert tables", describe(&e)))?;
        drop(c);
        let db = PgDb::open(server, workers, |i, c| {
            c.prepare(&format!(
                "INSERT INTO insert_{i} (k, v) SELECT * FROM unnest($1::int8[], $2::bytea[])"
            ))
        })?;
        Ok(PgInsert { db, workers })
    }
}

impl InsertPeer for PgInsert {
    fn insert_batch(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        first: u64,
        n: u64,
    ) -> Result<bool> {
        let end = first
            .checked_add(n)
            .filter(|&e| i64::try_from(e).is_ok())
            .ok_or_else(|| BenchError::invalid("keys", format!("{first} + {n} exceed INT8")))?;
        let keys: Vec<i64> = (first..end).map(|k| k as i64).collect();
        let values: Vec<[u8; super::super::super::insert::VALUE_BYTES]> =
            (first..end).map(value_of).collect();
        let refs: Vec<&[u8]> = values.iter().map(|v| &v[..]).collect();
        let r = self.db.run(thread_idx, ctx, "insert", |c, st| {
            let done = c.execute(st, &[&keys, &refs]).at("INSERT")?;
            if done != n {
                return Err(Fail::Bench(BenchError::Check(format!(
                    "{ENGINE}: insert_{thread_idx} took {done} of {n} records"
                ))));
            }
            Ok(Ok::<_, ()>(()))
        })?;
        Ok(r.is_some())
    }

    fn count(&self, worker: usize) -> Result<u64> {
        if worker >= self.workers {
            return Err(BenchError::invalid(
                "worker",
                format!("{worker}: there are {} insert tables", self.workers),
            ));
        }
        let sql = format!("SELECT count(*) FROM insert_{worker}");
        let mut c = self.db.conn(0)?;
        let n: i64 = c
            .client
            .query_one(&sql, &[])
            .and_then(|r| r.try_get(0))
            .map_err(|e| BenchError::peer(ENGINE, sql.clone(), describe(&e)))?;
        Ok(n.max(0) as u64)
    }
}
