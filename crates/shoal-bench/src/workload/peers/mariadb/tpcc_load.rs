//! TPC-C's tables on MariaDB: the DDL made from the shared [`TableSpec`]s (InnoDB,
//! clustered on the primary key, the same secondary indexes), the loader's [`Sink`]
//! writing multi-row `INSERT`s, and the [`Snapshot`] the consistency check reads.
//!
//! Types: INT4 → `INT`, INT8 → `BIGINT`, time stamps → `BIGINT` microseconds (as on
//! SQLite), `CHAR(n)`/`VARCHAR(n)` as specified, in the database's `latin1_bin`.

use super::super::super::tpcc::check::Snapshot;
use super::super::super::tpcc::load::Sink;
use super::super::super::tpcc::schema::{TableSpec, Ty, T, TABLES};
use super::super::super::tpcc::sql_snapshot::{self, Dialect};
use super::load::Bulk;
use super::{col, peer_error, query_rows, TxResult};
use crate::error::Result;
use mysql::prelude::Queryable;
use mysql::Value;
use shoal::table::Value as V;

/// `CREATE TABLE` for `t`, with its primary key and secondary indexes.
pub fn ddl(t: &TableSpec) -> String {
    let mut parts: Vec<String> = t
        .columns
        .iter()
        .map(|&(name, ty, nullable)| {
            let ty = match ty {
                Ty::I4 => "INT".to_string(),
                Ty::I8 | Ty::Ts => "BIGINT".to_string(),
                Ty::Ch(n) => format!("CHAR({n})"),
                Ty::Vc(n) => format!("VARCHAR({n})"),
            };
            format!("{name} {ty}{}", if nullable { "" } else { " NOT NULL" })
        })
        .collect();
    parts.push(format!("PRIMARY KEY ({})", t.pk.join(", ")));
    for (name, cols) in t.indexes {
        parts.push(format!("INDEX {name} ({})", cols.join(", ")));
    }
    format!(
        "CREATE TABLE {} ({}) ENGINE=InnoDB",
        t.name,
        parts.join(", ")
    )
}

/// A loader value as a driver value.
pub fn to_value(v: V) -> Value {
    match v {
        V::Null => Value::NULL,
        V::Int4(i) => Value::Int(i64::from(i)),
        V::Int8(i) | V::Timestamp(i) => Value::Int(i),
        V::Str(s) => Value::Bytes(s.into_bytes()),
        V::Bool(b) => Value::Int(i64::from(b)),
        V::Float8(f) => Value::Double(f),
        V::Bytes(b) => Value::Bytes(b),
        V::Decimal(d) => Value::Int(d.units()),
    }
}

/// Writes the loader's rows: one [`Bulk`] per table, a transaction per load batch.
pub struct MariaSink<'a> {
    conn: &'a mut mysql::Conn,
    bulks: Vec<Bulk>,
    open: bool,
}

impl<'a> MariaSink<'a> {
    /// A sink writing through `conn` into the tables made by [`ddl`].
    pub fn new(conn: &'a mut mysql::Conn) -> MariaSink<'a> {
        MariaSink {
            conn,
            bulks: TABLES
                .iter()
                .map(|t| Bulk::new(t.name, t.columns.len()))
                .collect(),
            open: false,
        }
    }

    fn try_row(&mut self, t: T, values: Vec<V>) -> TxResult<()> {
        if !self.open {
            self.conn.query_drop("START TRANSACTION")?;
            self.open = true;
        }
        self.bulks[t as usize].push(self.conn, values.into_iter().map(to_value))
    }

    fn try_commit(&mut self) -> TxResult<()> {
        for b in &mut self.bulks {
            b.flush(self.conn)?;
        }
        if self.open {
            self.conn.query_drop("COMMIT")?;
            self.open = false;
        }
        Ok(())
    }
}

impl Sink for MariaSink<'_> {
    fn row(&mut self, t: T, values: Vec<V>) -> Result<()> {
        let table = TABLES[t as usize].name;
        self.try_row(t, values)
            .map_err(|e| peer_error(e, &format!("loading {table}")))
    }

    fn commit(&mut self) -> Result<()> {
        self.try_commit()
            .map_err(|e| peer_error(e, "committing a load batch"))
    }
}

/// Reads what the consistency conditions need, with the queries every SQL engine runs
/// ([`sql_snapshot`]).
///
/// # Errors
/// The server's errors; a value that does not convert.
pub fn snapshot(c: &mut mysql::Conn) -> TxResult<Snapshot> {
    let s = sql_snapshot::read(Dialect::Mysql, |sql, each| {
        let mut vals = Vec::new();
        for mut r in query_rows(c, sql).map_err(|e| peer_error(e, sql))? {
            vals.clear();
            for i in 0..r.len() {
                vals.push(col::<i64>(&mut r, i).map_err(|e| peer_error(e, sql))?);
            }
            each(&vals)?;
        }
        Ok(())
    })?;
    Ok(s)
}
