//! `tpcb` on MariaDB: pgbench's four tables (InnoDB; `pgbench_history` without a primary
//! key, as in pgbench, so InnoDB clusters it on its hidden row id) and its built-in
//! script as five prepared statements in one transaction. The balances are updated with
//! `SET x = x + ?`, which locks the row before reading it, so no update is lost.

use super::super::super::tpcb::{ACCOUNTS_PER_BRANCH, TELLERS_PER_BRANCH};
use super::super::{PeerSetup, TpcbPeer, TpcbTxn};
use super::load::Bulk;
use super::server::Server;
use super::{col, must_row, on_new_connection, scalar, Db};
use crate::error::Result;
use crate::runner::ThreadCtx;
use mysql::prelude::Queryable;
use mysql::{Statement, Value};

/// Rows per load transaction.
const LOAD_TXN_ROWS: u64 = 10_000;

/// The tables (`CHAR` fillers are blank-padded, as pgbench stores them).
const DDL: [&str; 4] = [
    "CREATE TABLE pgbench_branches(bid INT NOT NULL PRIMARY KEY, bbalance INT NOT NULL, filler CHAR(88)) ENGINE=InnoDB",
    "CREATE TABLE pgbench_tellers(tid INT NOT NULL PRIMARY KEY, bid INT NOT NULL, tbalance INT NOT NULL, filler CHAR(84)) ENGINE=InnoDB",
    "CREATE TABLE pgbench_accounts(aid INT NOT NULL PRIMARY KEY, bid INT NOT NULL, abalance INT NOT NULL, filler CHAR(84)) ENGINE=InnoDB",
    "CREATE TABLE pgbench_history(tid INT, bid INT, aid INT, delta INT, mtime BIGINT, filler CHAR(22)) ENGINE=InnoDB",
];

/// Each connection's statements.
pub struct St {
    update_account: Statement,
    select_account: Statement,
    update_teller: Statement,
    update_branch: Statement,
    insert_history: Statement,
}

/// pgbench's tables on a private server.
pub struct TpcbDb {
    /// The server and its connections.
    pub db: Db<St>,
}

/// Starts a server, creates the tables and loads `scale` branches (balances 0).
///
/// # Errors
/// [`BenchError::Peer`](crate::BenchError::Peer) if the server fails to start, create or
/// load.
pub fn setup(setup: &PeerSetup<'_>, scale: u64) -> Result<TpcbDb> {
    let server = Server::start(setup.opts, setup.pool_bytes, setup.workers)?;
    on_new_connection(&server, "loading the pgbench tables", |c| {
        for sql in DDL {
            c.query_drop(sql)?;
        }
        let blank = || Value::Bytes(Vec::new());
        c.query_drop("START TRANSACTION")?;
        let mut branches = Bulk::new("pgbench_branches", 3);
        for b in 1..=scale {
            branches.push(c, [Value::Int(b as i64), Value::Int(0), blank()])?;
        }
        branches.flush(c)?;
        let mut tellers = Bulk::new("pgbench_tellers", 4);
        for t in 1..=scale * TELLERS_PER_BRANCH {
            let bid = (t - 1) / TELLERS_PER_BRANCH + 1;
            tellers.push(
                c,
                [
                    Value::Int(t as i64),
                    Value::Int(bid as i64),
                    Value::Int(0),
                    blank(),
                ],
            )?;
        }
        tellers.flush(c)?;
        c.query_drop("COMMIT")?;
        let mut accounts = Bulk::new("pgbench_accounts", 4);
        let n = scale * ACCOUNTS_PER_BRANCH;
        let mut a = 1;
        while a <= n {
            let end = (a + LOAD_TXN_ROWS).min(n + 1);
            c.query_drop("START TRANSACTION")?;
            for aid in a..end {
                let bid = (aid - 1) / ACCOUNTS_PER_BRANCH + 1;
                accounts.push(
                    c,
                    [
                        Value::Int(aid as i64),
                        Value::Int(bid as i64),
                        Value::Int(0),
                        blank(),
                    ],
                )?;
            }
            accounts.flush(c)?;
            c.query_drop("COMMIT")?;
            a = end;
        }
        Ok(())
    })?;
    let db = Db::open(server, setup.workers, |_, c| {
        Ok(St {
            update_account: c
                .prep("UPDATE pgbench_accounts SET abalance = abalance + ? WHERE aid = ?")?,
            select_account: c.prep("SELECT abalance FROM pgbench_accounts WHERE aid = ?")?,
            update_teller: c
                .prep("UPDATE pgbench_tellers SET tbalance = tbalance + ? WHERE tid = ?")?,
            update_branch: c
                .prep("UPDATE pgbench_branches SET bbalance = bbalance + ? WHERE bid = ?")?,
            insert_history: c.prep(
                "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (?, ?, ?, ?, ?)",
            )?,
        })
    })?;
    Ok(TpcbDb { db })
}

impl TpcbPeer for TpcbDb {
    fn transaction(&self, thread_idx: usize, ctx: &mut ThreadCtx, t: &TpcbTxn) -> Result<bool> {
        let r = self
            .db
            .run(thread_idx, ctx, "tpcb transaction", false, |c, st| {
                c.exec_drop(&st.update_account, (t.delta, t.aid))?;
                let mut row = must_row(c, &st.select_account, (t.aid,), || {
                    format!("pgbench_accounts aid {}", t.aid)
                })?;
                col::<i64>(&mut row, 0)?;
                c.exec_drop(&st.update_teller, (t.delta, t.tid))?;
                c.exec_drop(&st.update_branch, (t.delta, t.bid))?;
                c.exec_drop(
                    &st.insert_history,
                    (t.tid, t.bid, t.aid, t.delta, t.mtime_us),
                )?;
                Ok(Ok::<_, ()>(()))
            })?;
        Ok(r.is_some())
    }

    fn sums(&self) -> Result<[i64; 4]> {
        self.db.with("summing the balances", |c, _| {
            let mut sum = |sql: &str| scalar::<Option<i64>>(c, sql).map(|v| v.unwrap_or(0));
            Ok([
                sum("SELECT CAST(sum(abalance) AS SIGNED) FROM pgbench_accounts")?,
                sum("SELECT CAST(sum(tbalance) AS SIGNED) FROM pgbench_tellers")?,
                sum("SELECT CAST(sum(bbalance) AS SIGNED) FROM pgbench_branches")?,
                sum("SELECT CAST(sum(delta) AS SIGNED) FROM pgbench_history")?,
            ])
        })
    }
}
