//! TPC-C's tables on MariaDB: the DDL made from the shared [`TableSpec`]s (InnoDB,
//! clustered on the primary key, the same secondary indexes), the loader's [`Sink`]
//! writing multi-row `INSERT`s, and the [`Snapshot`] the consistency check reads.
//!
//! Types: INT4 → `INT`, INT8 → `BIGINT`, time stamps → `BIGINT` microseconds (as on
//! SQLite), `CHAR(n)`/`VARCHAR(n)` as specified, in the database's `latin1_bin`.

use super::super::super::tpcc::check::{
    CustomerSnap, DistrictSnap, LinesSnap, OrderSnap, Snapshot,
};
use super::super::super::tpcc::load::Sink;
use super::super::super::tpcc::schema::{TableSpec, Ty, T, TABLES};
use super::load::Bulk;
use super::{col, peer_error, query_rows, TxResult};
use crate::error::Result;
use mysql::prelude::Queryable;
use mysql::{Row, Value};
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

/// Runs `sql` and hands each row to `f`.
fn each(
    c: &mut mysql::Conn,
    sql: &str,
    mut f: impl FnMut(&mut Row) -> TxResult<()>,
) -> TxResult<()> {
    for mut r in query_rows(c, sql)? {
        f(&mut r)?;
    }
    Ok(())
}

/// Reads what the consistency conditions need (as [`Snapshot::from_sqlite`]).
///
/// # Errors
/// The server's errors; a value that does not convert.
pub fn snapshot(c: &mut mysql::Conn) -> TxResult<Snapshot> {
    let mut s = Snapshot::default();
    each(c, "SELECT w_id, w_ytd FROM warehouse", |r| {
        s.w_ytd.insert(col(r, 0)?, col(r, 1)?);
        Ok(())
    })?;
    each(
        c,
        "SELECT d_w_id, d_id, d_ytd, d_next_o_id FROM district",
        |r| {
            let ds = DistrictSnap {
                ytd: col(r, 2)?,
                next_o_id: col(r, 3)?,
            };
            s.districts.insert((col(r, 0)?, col(r, 1)?), ds);
            Ok(())
        },
    )?;
    each(
        c,
        "SELECT h_w_id, h_d_id, CAST(sum(h_amount) AS SIGNED) FROM history GROUP BY h_w_id, h_d_id",
        |r| {
            s.hist_district.insert((col(r, 0)?, col(r, 1)?), col(r, 2)?);
            Ok(())
        },
    )?;
    each(
        c,
        "SELECT h_c_w_id, h_c_d_id, h_c_id, CAST(sum(h_amount) AS SIGNED) FROM history GROUP BY h_c_w_id, h_c_d_id, h_c_id",
        |r| {
            s.hist_customer
                .insert((col(r, 0)?, col(r, 1)?, col(r, 2)?), col(r, 3)?);
            Ok(())
        },
    )?;
    each(
        c,
        "SELECT c_w_id, c_d_id, c_id, c_balance, c_ytd_payment, c_delivery_cnt FROM customer",
        |r| {
            let cs = CustomerSnap {
                balance: col(r, 3)?,
                ytd_payment: col(r, 4)?,
                delivery_cnt: col(r, 5)?,
            };
            s.customers.insert((col(r, 0)?, col(r, 1)?, col(r, 2)?), cs);
            Ok(())
        },
    )?;
    each(
        c,
        "SELECT no_w_id, no_d_id, no_o_id FROM new_order ORDER BY no_w_id, no_d_id, no_o_id",
        |r| {
            let key = (col(r, 0)?, col(r, 1)?);
            s.new_orders.entry(key).or_default().push(col(r, 2)?);
            Ok(())
        },
    )?;
    each(
        c,
        "SELECT o_w_id, o_d_id, o_id, o_c_id, o_carrier_id IS NULL, o_ol_cnt FROM orders",
        |r| {
            let os = OrderSnap {
                c_id: col(r, 3)?,
                carrier_null: col::<i64>(r, 4)? != 0,
                ol_cnt: col(r, 5)?,
            };
            s.orders.insert((col(r, 0)?, col(r, 1)?, col(r, 2)?), os);
            Ok(())
        },
    )?;
    each(
        c,
        "SELECT ol_w_id, ol_d_id, ol_o_id, count(*), \
         CAST(sum(ol_delivery_d IS NULL) AS SIGNED), \
         CAST(sum(CASE WHEN ol_delivery_d IS NULL THEN 0 ELSE ol_amount END) AS SIGNED) \
         FROM order_line GROUP BY ol_w_id, ol_d_id, ol_o_id",
        |r| {
            let l = LinesSnap {
                count: col(r, 3)?,
                undelivered: col(r, 4)?,
                delivered_amount: col(r, 5)?,
            };
            s.lines.insert((col(r, 0)?, col(r, 1)?, col(r, 2)?), l);
            Ok(())
        },
    )?;
    Ok(s)
}
