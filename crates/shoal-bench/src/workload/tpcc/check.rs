//! The consistency conditions of clause 3.3.2, checked on a [`Snapshot`] that each engine
//! reads from its tables (Shoal: scans per district; SQLite: `GROUP BY` queries), so the
//! checking logic is one and the same for both engines.

use super::schema::{col, T};
use super::shoal_txns::ShoalTables;
use super::sql_snapshot::{self, Dialect};
use crate::error::{BenchError, Result};
use shoal::btree::ScanDirection;
use shoal::table::{Row, Value as V};
use shoal::{Database, IsolationLevel};
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;

/// Failures listed per condition before the rest are only counted.
const MAX_LISTED: usize = 3;

/// A district's fields.
#[derive(Clone, Copy, Debug, Default)]
pub struct DistrictSnap {
    /// D_YTD.
    pub ytd: i64,
    /// D_NEXT_O_ID.
    pub next_o_id: i32,
}

/// An order's fields.
#[derive(Clone, Copy, Debug, Default)]
pub struct OrderSnap {
    /// O_C_ID.
    pub c_id: i32,
    /// O_CARRIER_ID is NULL.
    pub carrier_null: bool,
    /// O_OL_CNT.
    pub ol_cnt: i32,
}

/// An order's lines, summed.
#[derive(Clone, Copy, Debug, Default)]
pub struct LinesSnap {
    /// Lines.
    pub count: i64,
    /// Lines with OL_DELIVERY_D NULL.
    pub undelivered: i64,
    /// Sum of OL_AMOUNT of the lines with OL_DELIVERY_D not NULL.
    pub delivered_amount: i64,
}

/// A customer's fields.
#[derive(Clone, Copy, Debug, Default)]
pub struct CustomerSnap {
    /// C_BALANCE.
    pub balance: i64,
    /// C_YTD_PAYMENT.
    pub ytd_payment: i64,
    /// C_DELIVERY_CNT.
    pub delivery_cnt: i64,
}

/// Keys: `(w, d)` for districts, `(w, d, o)` for orders, `(w, d, c)` for customers.
type Wd = (i32, i32);
type Wdx = (i32, i32, i32);

/// What the conditions read, from either engine.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// W_YTD by warehouse.
    pub w_ytd: BTreeMap<i32, i64>,
    /// Districts.
    pub districts: BTreeMap<Wd, DistrictSnap>,
    /// Orders.
    pub orders: HashMap<Wdx, OrderSnap>,
    /// NEW-ORDER rows: their O_IDs per district.
    pub new_orders: BTreeMap<Wd, Vec<i32>>,
    /// Order lines per order.
    pub lines: HashMap<Wdx, LinesSnap>,
    /// Sum of H_AMOUNT per (H_W_ID, H_D_ID).
    pub hist_district: HashMap<Wd, i64>,
    /// Sum of H_AMOUNT per (H_C_W_ID, H_C_D_ID, H_C_ID).
    pub hist_customer: HashMap<Wdx, i64>,
    /// Customers.
    pub customers: HashMap<Wdx, CustomerSnap>,
}

/// Collects failures per condition.
struct Failures {
    out: Vec<String>,
    per: BTreeMap<u32, usize>,
}

impl Failures {
    fn add(&mut self, cond: u32, msg: impl FnOnce() -> String) {
        let n = self.per.entry(cond).or_insert(0);
        *n += 1;
        if *n <= MAX_LISTED {
            self.out.push(format!("condition {cond}: {}", msg()));
        }
    }

    fn finish(mut self) -> Vec<String> {
        for (cond, n) in &self.per {
            if *n > MAX_LISTED {
                self.out.push(format!(
                    "condition {cond}: {} more failures",
                    n - MAX_LISTED
                ));
            }
        }
        self.out
    }
}

impl Snapshot {
    /// Checks conditions 1 to 12 of clause 3.3.2; returns the failures (empty: all hold).
    /// `delivered_at_load` is the number of orders per district the load delivered
    /// (orders minus new orders), used by condition 11 (module doc of [`super`]).
    pub fn check(&self, delivered_at_load: i64) -> Vec<String> {
        let mut f = Failures {
            out: Vec::new(),
            per: BTreeMap::new(),
        };
        let mut o_max: HashMap<Wd, i32> = HashMap::new();
        let mut o_count: HashMap<Wd, i64> = HashMap::new();
        let mut ol_cnt_sum: HashMap<Wd, i64> = HashMap::new();
        let mut ol_count: HashMap<Wd, i64> = HashMap::new();
        let mut delivered_by_customer: HashMap<Wdx, i64> = HashMap::new();
        let mut delivery_cnt: HashMap<Wd, i64> = HashMap::new();
        for (&(w, d, _), cs) in &self.customers {
            *delivery_cnt.entry((w, d)).or_insert(0) += cs.delivery_cnt;
        }
        for (&(w, d, o), l) in &self.lines {
            *ol_count.entry((w, d)).or_insert(0) += l.count;
            if !self.orders.contains_key(&(w, d, o)) {
                f.add(6, || format!("order lines of missing order ({w},{d},{o})"));
            }
        }
        for (&(w, d, o), os) in &self.orders {
            let m = o_max.entry((w, d)).or_insert(0);
            *m = (*m).max(o);
            *o_count.entry((w, d)).or_insert(0) += 1;
            *ol_cnt_sum.entry((w, d)).or_insert(0) += i64::from(os.ol_cnt);
            let is_new = self
                .new_orders
                .get(&(w, d))
                .is_some_and(|v| v.binary_search(&o).is_ok());
            if os.carrier_null != is_new {
                f.add(5, || {
                    format!(
                        "order ({w},{d},{o}): carrier null {} but NEW-ORDER row {}",
                        os.carrier_null, is_new
                    )
                });
            }
            let l = self.lines.get(&(w, d, o)).copied().unwrap_or_default();
            if l.count != i64::from(os.ol_cnt) {
                f.add(6, || {
                    format!(
                        "order ({w},{d},{o}): O_OL_CNT {} but {} lines",
                        os.ol_cnt, l.count
                    )
                });
            }
            let all_undelivered = l.undelivered == l.count;
            let none_undelivered = l.undelivered == 0;
            if (os.carrier_null && !all_undelivered) || (!os.carrier_null && !none_undelivered) {
                f.add(7, || {
                    format!(
                        "order ({w},{d},{o}): carrier null {} but {} of {} lines undelivered",
                        os.carrier_null, l.undelivered, l.count
                    )
                });
            }
            *delivered_by_customer.entry((w, d, os.c_id)).or_insert(0) += l.delivered_amount;
        }
        for (&w, &w_ytd) in &self.w_ytd {
            let d_sum: i64 = self
                .districts
                .range((w, i32::MIN)..=(w, i32::MAX))
                .map(|(_, ds)| ds.ytd)
                .sum();
            if w_ytd != d_sum {
                f.add(1, || {
                    format!("warehouse {w}: W_YTD {w_ytd} != sum(D_YTD) {d_sum}")
                });
            }
            let h_sum: i64 = self
                .hist_district
                .iter()
                .filter(|(k, _)| k.0 == w)
                .map(|(_, v)| *v)
                .sum();
            if w_ytd != h_sum {
                f.add(8, || {
                    format!("warehouse {w}: W_YTD {w_ytd} != sum(H_AMOUNT) {h_sum}")
                });
            }
        }
        for (&(w, d), ds) in &self.districts {
            let no = self.new_orders.get(&(w, d)).map_or(&[][..], Vec::as_slice);
            let om = o_max.get(&(w, d)).copied().unwrap_or(0);
            if ds.next_o_id - 1 != om {
                f.add(2, || {
                    format!(
                        "district ({w},{d}): D_NEXT_O_ID - 1 = {} != max(O_ID) {om}",
                        ds.next_o_id - 1
                    )
                });
            }
            if let (Some(&lo), Some(&hi)) = (no.first(), no.last()) {
                if hi != ds.next_o_id - 1 {
                    f.add(2, || {
                        format!(
                            "district ({w},{d}): D_NEXT_O_ID - 1 = {} != max(NO_O_ID) {hi}",
                            ds.next_o_id - 1
                        )
                    });
                }
                if i64::from(hi - lo) + 1 != no.len() as i64 {
                    f.add(3, || {
                        format!(
                            "district ({w},{d}): NEW-ORDER {lo}..={hi} holds {} rows",
                            no.len()
                        )
                    });
                }
            }
            let (ocs, olc) = (
                ol_cnt_sum.get(&(w, d)).copied().unwrap_or(0),
                ol_count.get(&(w, d)).copied().unwrap_or(0),
            );
            if ocs != olc {
                f.add(4, || {
                    format!("district ({w},{d}): sum(O_OL_CNT) {ocs} != {olc} lines")
                });
            }
            let h = self.hist_district.get(&(w, d)).copied().unwrap_or(0);
            if ds.ytd != h {
                f.add(9, || {
                    format!("district ({w},{d}): D_YTD {} != sum(H_AMOUNT) {h}", ds.ytd)
                });
            }
            let oc = o_count.get(&(w, d)).copied().unwrap_or(0);
            let dc = delivery_cnt.get(&(w, d)).copied().unwrap_or(0);
            if oc - no.len() as i64 != delivered_at_load + dc {
                f.add(11, || {
                    format!(
                        "district ({w},{d}): {oc} orders - {} new orders != {delivered_at_load} + sum(C_DELIVERY_CNT) {dc}",
                        no.len()
                    )
                });
            }
        }
        for (&(w, d, c), cs) in &self.customers {
            let delivered = delivered_by_customer.get(&(w, d, c)).copied().unwrap_or(0);
            let paid = self.hist_customer.get(&(w, d, c)).copied().unwrap_or(0);
            if cs.balance != delivered - paid {
                f.add(10, || {
                    format!("customer ({w},{d},{c}): C_BALANCE {} != {delivered} delivered - {paid} paid", cs.balance)
                });
            }
            if cs.balance + cs.ytd_payment != delivered {
                f.add(12, || {
                    format!(
                        "customer ({w},{d},{c}): C_BALANCE {} + C_YTD_PAYMENT {} != {delivered} delivered",
                        cs.balance, cs.ytd_payment
                    )
                });
            }
        }
        f.finish()
    }

    /// Reads the snapshot from Shoal (one READ COMMITTED transaction on a quiet database).
    ///
    /// # Errors
    /// Shoal's errors.
    pub fn from_shoal(db: &Database, t: &ShoalTables, warehouses: u32) -> Result<Snapshot> {
        let mut s = Snapshot::default();
        let mut tx = db.begin(IsolationLevel::ReadCommitted);
        let all = Bound::Unbounded;
        for r in t
            .get(T::Warehouse)
            .scan(&mut tx, all, all, ScanDirection::Forward)?
        {
            s.w_ytd.insert(r.get_at(0)?, r.get_at(col::W_YTD)?);
        }
        for r in t
            .get(T::District)
            .scan(&mut tx, all, all, ScanDirection::Forward)?
        {
            s.districts.insert(
                (r.get_at(0)?, r.get_at(1)?),
                DistrictSnap {
                    ytd: r.get_at(col::D_YTD)?,
                    next_o_id: r.get_at(col::D_NEXT_O_ID)?,
                },
            );
        }
        for r in t
            .get(T::History)
            .scan(&mut tx, all, all, ScanDirection::Forward)?
        {
            let a: i64 = r.get_at(col::H_AMOUNT)?;
            let (c, cd, cw, d, w): (i32, i32, i32, i32, i32) = (
                r.get_at(1)?,
                r.get_at(2)?,
                r.get_at(3)?,
                r.get_at(4)?,
                r.get_at(5)?,
            );
            *s.hist_district.entry((w, d)).or_insert(0) += a;
            *s.hist_customer.entry((cw, cd, c)).or_insert(0) += a;
        }
        let wd_key =
            |r: &Row| -> shoal::Result<Wdx> { Ok((r.get_at(0)?, r.get_at(1)?, r.get_at(2)?)) };
        for w in 1..=warehouses as i32 {
            for d in 1..=10 {
                let k = [V::Int4(w), V::Int4(d)];
                let range = |tx: &mut shoal::txn::Transaction<'_>, tt: T| {
                    t.get(tt).scan(
                        tx,
                        Bound::Included(&k[..]),
                        Bound::Included(&k[..]),
                        ScanDirection::Forward,
                    )
                };
                for r in range(&mut tx, T::Customer)? {
                    s.customers.insert(
                        wd_key(&r)?,
                        CustomerSnap {
                            balance: r.get_at(col::C_BALANCE)?,
                            ytd_payment: r.get_at(col::C_YTD_PAYMENT)?,
                            delivery_cnt: i64::from(r.get_at::<i32>(col::C_DELIVERY_CNT)?),
                        },
                    );
                }
                let mut no = Vec::new();
                for r in range(&mut tx, T::NewOrder)? {
                    no.push(r.get_at::<i32>(col::NO_O_ID)?);
                }
                s.new_orders.insert((w, d), no);
                for r in range(&mut tx, T::Orders)? {
                    s.orders.insert(
                        wd_key(&r)?,
                        OrderSnap {
                            c_id: r.get_at(col::O_C_ID)?,
                            carrier_null: r.get_at::<Option<i32>>(col::O_CARRIER_ID)?.is_none(),
                            ol_cnt: r.get_at(col::O_OL_CNT)?,
                        },
                    );
                }
                for r in range(&mut tx, T::OrderLine)? {
                    let e = s.lines.entry(wd_key(&r)?).or_default();
                    e.count += 1;
                    if r.get_at::<&V>(col::OL_DELIVERY_D)?.is_null() {
                        e.undelivered += 1;
                    } else {
                        e.delivered_amount += r.get_at::<i64>(col::OL_AMOUNT)?;
                    }
                }
            }
        }
        tx.commit()?;
        Ok(s)
    }

    /// Reads the snapshot from SQLite.
    ///
    /// # Errors
    /// [`BenchError::Sqlite`].
    pub fn from_sqlite(c: &rusqlite::Connection) -> Result<Snapshot> {
        sql_snapshot::read(Dialect::Sqlite, |sql, each| {
            let e = |err| BenchError::sqlite(sql.to_string(), err);
            let mut st = c.prepare(sql).map_err(e)?;
            let n = st.column_count();
            let mut rows = st.query([]).map_err(e)?;
            let mut vals = Vec::with_capacity(n);
            while let Some(r) = rows.next().map_err(e)? {
                vals.clear();
                for i in 0..n {
                    vals.push(r.get::<_, i64>(i).map_err(e)?);
                }
                each(&vals)?;
            }
            Ok(())
        })
    }
}
