//! `tpcb` on PostgreSQL: pgbench's four tables and its built-in TPC-B-like script, statement
//! for statement (`UPDATE pgbench_accounts ... SET abalance = abalance + $1`, the `SELECT`,
//! the teller and branch updates, the history insert) as prepared statements between
//! `BEGIN ISOLATION LEVEL READ COMMITTED` and `COMMIT`. Each `UPDATE` adds to the newest
//! version of its row under the row lock, so no update is lost.
//!
//! The load is `pgbench -i`'s, generated on the server (`INSERT ... SELECT FROM
//! generate_series`) in the transaction that creates the tables, primary keys added
//! afterwards, then `VACUUM ANALYZE`. Balances start at 0, fillers blank (`''` in `char(n)`
//! is stored blank-padded, as pgbench's). `mtime` is `int8` microseconds.

use super::super::super::tpcb::{ACCOUNTS_PER_BRANCH, TELLERS_PER_BRANCH};
use super::super::{PeerSetup, TpcbPeer, TpcbTxn};
use super::{describe, get, one_row, start_server, At, PgDb, ENGINE};
use crate::error::{BenchError, Result};
use crate::runner::ThreadCtx;
use postgres::{Client, Statement};

/// The five statements of the script, prepared on each connection.
pub struct TpcbStatements {
    update_account: Statement,
    select_account: Statement,
    update_teller: Statement,
    update_branch: Statement,
    insert_history: Statement,
}

impl TpcbStatements {
    fn prepare(c: &mut Client) -> std::result::Result<TpcbStatements, postgres::Error> {
        Ok(TpcbStatements {
            update_account: c.prepare(
                "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
            )?,
            select_account: c.prepare("SELECT abalance FROM pgbench_accounts WHERE aid = $1")?,
            update_teller: c
                .prepare("UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2")?,
            update_branch: c
                .prepare("UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2")?,
            insert_history: c.prepare(
                "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, $5)",
            )?,
        })
    }
}

/// The DDL and load of `pgbench -i` for `$1` branches, in one transaction.
const LOAD: &str = "
CREATE TABLE pgbench_branches(bid int4 NOT NULL, bbalance int4 NOT NULL, filler char(88));
CREATE TABLE pgbench_tellers(tid int4 NOT NULL, bid int4 NOT NULL, tbalance int4 NOT NULL, filler char(84));
CREATE TABLE pgbench_accounts(aid int4 NOT NULL, bid int4 NOT NULL, abalance int4 NOT NULL, filler char(84));
CREATE TABLE pgbench_history(tid int4, bid int4, aid int4, delta int4, mtime int8, filler char(22));
";

/// `tpcb`'s tables on a private server.
pub struct PgTpcb {
    db: PgDb<TpcbStatements>,
}

impl PgTpcb {
    /// Starts a server for `setup`, creates pgbench's tables and loads `scale` branches.
    ///
    /// # Errors
    /// [`BenchError::Peer`] if the server fails to start or a statement fails;
    /// [`BenchError::InvalidArgument`] if the accounts do not fit INT4 keys.
    pub fn create(setup: &PeerSetup<'_>, scale: u64) -> Result<PgTpcb> {
        let accounts = scale
            .checked_mul(ACCOUNTS_PER_BRANCH)
            .and_then(|n| i32::try_from(n).ok())
            .ok_or_else(|| {
                BenchError::invalid("--scale", format!("{scale} branches exceed INT4 keys"))
            })?;
        let server = start_server(setup)?;
        let mut c = server.connect()?;
        let e = |what: &'static str| {
            move |e: postgres::Error| BenchError::peer(ENGINE, what, describe(&e))
        };
        let scale = scale as i32;
        let mut tx = c.transaction().map_err(e("BEGIN"))?;
        tx.batch_execute(LOAD)
            .map_err(e("creating the pgbench tables"))?;
        tx.execute(
            "INSERT INTO pgbench_branches (bid, bbalance, filler) \
             SELECT b, 0, '' FROM generate_series(1, $1) b",
            &[&scale],
        )
        .map_err(e("loading pgbench_branches"))?;
        tx.execute(
            "INSERT INTO pgbench_tellers (tid, bid, tbalance, filler) \
             SELECT t, (t - 1) / $2 + 1, 0, '' FROM generate_series(1, $1) t",
            &[
                &(scale * TELLERS_PER_BRANCH as i32),
                &(TELLERS_PER_BRANCH as i32),
            ],
        )
        .map_err(e("loading pgbench_tellers"))?;
        tx.execute(
            "INSERT INTO pgbench_accounts (aid, bid, abalance, filler) \
             SELECT a, (a - 1) / $2 + 1, 0, '' FROM generate_series(1, $1) a",
            &[&accounts, &(ACCOUNTS_PER_BRANCH as i32)],
        )
        .map_err(e("loading pgbench_accounts"))?;
        tx.batch_execute(
            "ALTER TABLE pgbench_branches ADD PRIMARY KEY (bid);
             ALTER TABLE pgbench_tellers ADD PRIMARY KEY (tid);
             ALTER TABLE pgbench_accounts ADD PRIMARY KEY (aid);",
        )
        .map_err(e("adding the primary keys"))?;
        tx.commit().map_err(e("COMMIT of the load"))?;
        c.batch_execute("VACUUM ANALYZE")
            .map_err(e("VACUUM ANALYZE"))?;
        drop(c);
        let db = PgDb::open(server, setup.workers, |_, c| TpcbStatements::prepare(c))?;
        Ok(PgTpcb { db })
    }

    /// The server and connections (for tests).
    pub fn db(&self) -> &PgDb<TpcbStatements> {
        &self.db
    }
}

impl TpcbPeer for PgTpcb {
    fn transaction(&self, thread_idx: usize, ctx: &mut ThreadCtx, t: &TpcbTxn) -> Result<bool> {
        let r = self.db.run(thread_idx, ctx, "tpcb", |c, s| {
            let n = c
                .execute(&s.update_account, &[&t.delta, &t.aid])
                .at("UPDATE pgbench_accounts")?;
            one_row(n, "UPDATE pgbench_accounts")?;
            let row = c
                .query_one(&s.select_account, &[&t.aid])
                .at("SELECT abalance")?;
            let _abalance: i32 = get(&row, 0, "SELECT abalance")?;
            let n = c
                .execute(&s.update_teller, &[&t.delta, &t.tid])
                .at("UPDATE pgbench_tellers")?;
            one_row(n, "UPDATE pgbench_tellers")?;
            let n = c
                .execute(&s.update_branch, &[&t.delta, &t.bid])
                .at("UPDATE pgbench_branches")?;
            one_row(n, "UPDATE pgbench_branches")?;
            c.execute(
                &s.insert_history,
                &[&t.tid, &t.bid, &t.aid, &t.delta, &t.mtime_us],
            )
            .at("INSERT INTO pgbench_history")?;
            Ok(Ok::<_, ()>(()))
        })?;
        Ok(r.is_some())
    }

    fn sums(&self) -> Result<[i64; 4]> {
        let mut c = self.db.conn(0)?;
        let what = "tpcb: summing the balances";
        let row = c
            .client
            .query_one(
                "SELECT (SELECT coalesce(sum(abalance), 0) FROM pgbench_accounts)::int8, \
                        (SELECT coalesce(sum(tbalance), 0) FROM pgbench_tellers)::int8, \
                        (SELECT coalesce(sum(bbalance), 0) FROM pgbench_branches)::int8, \
                        (SELECT coalesce(sum(delta), 0) FROM pgbench_history)::int8",
                &[],
            )
            .map_err(|e| BenchError::peer(ENGINE, what, describe(&e)))?;
        let mut s = [0i64; 4];
        for (i, v) in s.iter_mut().enumerate() {
            *v = row
                .try_get(i)
                .map_err(|e| BenchError::peer(ENGINE, what, describe(&e)))?;
        }
        Ok(s)
    }
}
