//! The consistency [`Snapshot`] of an engine that is read with SQL (SQLite, PostgreSQL,
//! MariaDB): one set of queries, written once with each dialect's integer cast, whose rows
//! the engine's driver hands over as lists of integers, and one place that turns those rows
//! into the snapshot — so the engines differ only in how they run a query.
//!
//! Every column of every query is an integer (a condition is 1 or 0), so a driver needs to
//! convert nothing but 64-bit integers.

use super::check::{CustomerSnap, DistrictSnap, LinesSnap, OrderSnap, Snapshot};
use crate::error::{BenchError, Result};

/// A SQL dialect: how a query casts an expression to a 64-bit integer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite: integers are 64-bit already.
    Sqlite,
    /// PostgreSQL: `(expr)::int8` (its `sum` of `int8` is `numeric`).
    Postgres,
    /// MySQL and MariaDB: `CAST(expr AS SIGNED)` (its `sum` is `DECIMAL`).
    Mysql,
}

impl Dialect {
    fn int(self, expr: &str) -> String {
        match self {
            Dialect::Sqlite => expr.to_string(),
            Dialect::Postgres => format!("({expr})::int8"),
            Dialect::Mysql => format!("CAST({expr} AS SIGNED)"),
        }
    }
}

/// One query of the snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapQuery {
    /// `w_id, w_ytd`.
    Warehouses,
    /// `d_w_id, d_id, d_ytd, d_next_o_id`.
    Districts,
    /// `h_w_id, h_d_id, sum(h_amount)`.
    HistoryByDistrict,
    /// `h_c_w_id, h_c_d_id, h_c_id, sum(h_amount)`.
    HistoryByCustomer,
    /// `c_w_id, c_d_id, c_id, c_balance, c_ytd_payment, c_delivery_cnt`.
    Customers,
    /// `no_w_id, no_d_id, no_o_id` in key order.
    NewOrders,
    /// `o_w_id, o_d_id, o_id, o_c_id, o_carrier_id IS NULL, o_ol_cnt`.
    Orders,
    /// Per order: `ol_w_id, ol_d_id, ol_o_id`, lines, undelivered lines, delivered amount.
    OrderLines,
}

impl SnapQuery {
    /// Every query, in the order [`read`] runs them.
    pub const ALL: [SnapQuery; 8] = [
        SnapQuery::Warehouses,
        SnapQuery::Districts,
        SnapQuery::HistoryByDistrict,
        SnapQuery::HistoryByCustomer,
        SnapQuery::Customers,
        SnapQuery::NewOrders,
        SnapQuery::Orders,
        SnapQuery::OrderLines,
    ];

    /// The columns of each row.
    pub fn columns(self) -> usize {
        match self {
            SnapQuery::Warehouses => 2,
            SnapQuery::HistoryByDistrict | SnapQuery::NewOrders => 3,
            SnapQuery::Districts | SnapQuery::HistoryByCustomer => 4,
            SnapQuery::Customers | SnapQuery::Orders | SnapQuery::OrderLines => 6,
        }
    }

    /// The query in `d`, every column cast to a 64-bit integer.
    pub fn sql(self, d: Dialect) -> String {
        let cols = |cs: &[&str]| cs.iter().map(|c| d.int(c)).collect::<Vec<_>>().join(", ");
        let undelivered = "sum(CASE WHEN ol_delivery_d IS NULL THEN 1 ELSE 0 END)";
        let delivered = "sum(CASE WHEN ol_delivery_d IS NULL THEN 0 ELSE ol_amount END)";
        match self {
            SnapQuery::Warehouses => format!("SELECT {} FROM warehouse", cols(&["w_id", "w_ytd"])),
            SnapQuery::Districts => format!(
                "SELECT {} FROM district",
                cols(&["d_w_id", "d_id", "d_ytd", "d_next_o_id"])
            ),
            SnapQuery::HistoryByDistrict => format!(
                "SELECT {} FROM history GROUP BY h_w_id, h_d_id",
                cols(&["h_w_id", "h_d_id", "sum(h_amount)"])
            ),
            SnapQuery::HistoryByCustomer => format!(
                "SELECT {} FROM history GROUP BY h_c_w_id, h_c_d_id, h_c_id",
                cols(&["h_c_w_id", "h_c_d_id", "h_c_id", "sum(h_amount)"])
            ),
            SnapQuery::Customers => format!(
                "SELECT {} FROM customer",
                cols(&[
                    "c_w_id",
                    "c_d_id",
                    "c_id",
                    "c_balance",
                    "c_ytd_payment",
                    "c_delivery_cnt"
                ])
            ),
            SnapQuery::NewOrders => format!(
                "SELECT {} FROM new_order ORDER BY no_w_id, no_d_id, no_o_id",
                cols(&["no_w_id", "no_d_id", "no_o_id"])
            ),
            SnapQuery::Orders => format!(
                "SELECT {} FROM orders",
                cols(&[
                    "o_w_id",
                    "o_d_id",
                    "o_id",
                    "o_c_id",
                    "CASE WHEN o_carrier_id IS NULL THEN 1 ELSE 0 END",
                    "o_ol_cnt"
                ])
            ),
            SnapQuery::OrderLines => format!(
                "SELECT {} FROM order_line GROUP BY ol_w_id, ol_d_id, ol_o_id",
                cols(&[
                    "ol_w_id",
                    "ol_d_id",
                    "ol_o_id",
                    "count(*)",
                    undelivered,
                    delivered
                ])
            ),
        }
    }
}

/// An INT4 key column's value.
fn key(q: SnapQuery, v: i64) -> Result<i32> {
    i32::try_from(v).map_err(|_| BenchError::Check(format!("{q:?}: key {v} is not an INT4")))
}

impl Snapshot {
    /// Adds one row of `q` (its columns in the order of [`SnapQuery::sql`]).
    ///
    /// # Errors
    /// [`BenchError::Check`] if the row has the wrong number of columns or a key does not
    /// fit an INT4.
    pub fn add_sql_row(&mut self, q: SnapQuery, r: &[i64]) -> Result<()> {
        if r.len() != q.columns() {
            return Err(BenchError::Check(format!(
                "{q:?}: a row of {} columns, {} expected",
                r.len(),
                q.columns()
            )));
        }
        let k = |i: usize| key(q, r[i]);
        match q {
            SnapQuery::Warehouses => {
                self.w_ytd.insert(k(0)?, r[1]);
            }
            SnapQuery::Districts => {
                let next_o_id = k(3)?;
                self.districts.insert(
                    (k(0)?, k(1)?),
                    DistrictSnap {
                        ytd: r[2],
                        next_o_id,
                    },
                );
            }
            SnapQuery::HistoryByDistrict => {
                self.hist_district.insert((k(0)?, k(1)?), r[2]);
            }
            SnapQuery::HistoryByCustomer => {
                self.hist_customer.insert((k(0)?, k(1)?, k(2)?), r[3]);
            }
            SnapQuery::Customers => {
                let c = CustomerSnap {
                    balance: r[3],
                    ytd_payment: r[4],
                    delivery_cnt: r[5],
                };
                self.customers.insert((k(0)?, k(1)?, k(2)?), c);
            }
            SnapQuery::NewOrders => {
                let o = k(2)?;
                self.new_orders.entry((k(0)?, k(1)?)).or_default().push(o);
            }
            SnapQuery::Orders => {
                let o = OrderSnap {
                    c_id: k(3)?,
                    carrier_null: r[4] != 0,
                    ol_cnt: k(5)?,
                };
                self.orders.insert((k(0)?, k(1)?, k(2)?), o);
            }
            SnapQuery::OrderLines => {
                let l = LinesSnap {
                    count: r[3],
                    undelivered: r[4],
                    delivered_amount: r[5],
                };
                self.lines.insert((k(0)?, k(1)?, k(2)?), l);
            }
        }
        Ok(())
    }
}

/// Reads a snapshot with the queries of `dialect`: `query(sql, each)` runs `sql` and calls
/// `each` with every row as integers.
///
/// # Errors
/// What `query` returns; [`Snapshot::add_sql_row`]'s errors.
pub fn read(
    dialect: Dialect,
    mut query: impl FnMut(&str, &mut dyn FnMut(&[i64]) -> Result<()>) -> Result<()>,
) -> Result<Snapshot> {
    let mut s = Snapshot::default();
    for q in SnapQuery::ALL {
        query(&q.sql(dialect), &mut |row| s.add_sql_row(q, row))?;
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dialect_casts_every_column() {
        for q in SnapQuery::ALL {
            let pg = q.sql(Dialect::Postgres);
            assert_eq!(pg.matches("::int8").count(), q.columns(), "{pg}");
            let my = q.sql(Dialect::Mysql);
            assert_eq!(my.matches("AS SIGNED)").count(), q.columns(), "{my}");
        }
        assert_eq!(
            SnapQuery::Warehouses.sql(Dialect::Sqlite),
            "SELECT w_id, w_ytd FROM warehouse"
        );
    }

    #[test]
    fn rows_fill_the_snapshot_and_bad_rows_are_named() {
        let mut s = Snapshot::default();
        s.add_sql_row(SnapQuery::Orders, &[1, 2, 3, 4, 1, 10])
            .unwrap();
        let o = s.orders[&(1, 2, 3)];
        assert!(o.carrier_null && o.c_id == 4 && o.ol_cnt == 10);
        s.add_sql_row(SnapQuery::NewOrders, &[1, 2, 3]).unwrap();
        s.add_sql_row(SnapQuery::NewOrders, &[1, 2, 4]).unwrap();
        assert_eq!(s.new_orders[&(1, 2)], vec![3, 4]);
        let e = s.add_sql_row(SnapQuery::Orders, &[1, 2]).unwrap_err();
        assert!(e.to_string().contains("2 columns, 6 expected"), "{e}");
        let e = s
            .add_sql_row(SnapQuery::Warehouses, &[1 << 40, 0])
            .unwrap_err();
        assert!(e.to_string().contains("not an INT4"), "{e}");
    }
}
