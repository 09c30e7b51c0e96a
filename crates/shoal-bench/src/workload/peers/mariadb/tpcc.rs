//! TPC-C's five transactions on MariaDB, with the reads and writes of the SQLite side
//! ([`sqlite_txns`](super::super::super::tpcc::sqlite_txns)) as prepared statements at READ
//! COMMITTED. A row read and then written is read `FOR UPDATE` (district in New-Order,
//! stock rows, the paying customer, the oldest NEW-ORDER row in Delivery) or updated with
//! `SET x = x + ?` (D_YTD, W_YTD, the delivered customer), so no update is lost. New-Order
//! and Payment lock the district first and New-Order's stock rows in (warehouse, item)
//! order, as on Shoal. A Delivery whose oldest NEW-ORDER row was deleted under it (it
//! deletes no row) is rolled back and counted as the abort `delivery-race`, as on Shoal.

use super::super::super::tpcc::check::Snapshot;
use super::super::super::tpcc::gen::NuRandConstants;
use super::super::super::tpcc::input::{
    bc_data, Customer, DeliveryIn, NewOrderIn, OrderStatusIn, PaymentIn, StockLevelIn,
    STOCK_LEVEL_ORDERS,
};
use super::super::super::tpcc::load;
use super::super::super::tpcc::schema::TABLES;
use super::super::super::tpcc::TpccScale;
use super::super::{NewOrderEnd, PeerSetup, TpccPeer};
use super::server::Server;
use super::tpcc_load::{ddl, snapshot, MariaSink};
use super::{col, must_row, on_new_connection, Db, TxResult};
use crate::error::{BenchError, Result};
use crate::runner::ThreadCtx;
use mysql::prelude::Queryable;
use mysql::{Row, Statement};

/// Each connection's prepared statements.
pub struct St {
    w_tax: Statement,
    district_lock: Statement,
    district_next: Statement,
    customer_no: Statement,
    insert_order: Statement,
    insert_new_order: Statement,
    item: Statement,
    /// Per district 1..=10: the stock row with that district's `s_dist_xx`, locked.
    stock: Vec<Statement>,
    update_stock: Statement,
    insert_order_line: Statement,
    district_ytd: Statement,
    district_addr: Statement,
    customers_by_last: Statement,
    customer_pay: Statement,
    customer_paid_bc: Statement,
    customer_paid: Statement,
    warehouse_ytd: Statement,
    warehouse_addr: Statement,
    insert_history: Statement,
    customer_status: Statement,
    last_order: Statement,
    order_lines: Statement,
    oldest_new_order: Statement,
    delete_new_order: Statement,
    order_customer: Statement,
    set_carrier: Statement,
    set_delivery_d: Statement,
    sum_amount: Statement,
    customer_delivered: Statement,
    next_o_id: Statement,
    low_stock: Statement,
}

impl St {
    /// Prepares every statement on `c`.
    fn prepare(c: &mut mysql::Conn) -> mysql::Result<St> {
        let stock = (1..=10)
            .map(|d| {
                c.prep(format!(
                    "SELECT s_quantity, s_dist_{d:02}, s_data, s_ytd, s_order_cnt, s_remote_cnt \
                     FROM stock WHERE s_w_id = ? AND s_i_id = ? FOR UPDATE"
                ))
            })
            .collect::<mysql::Result<_>>()?;
        let cust = "WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?";
        let ol = "WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?";
        Ok(St {
            w_tax: c.prep("SELECT w_tax FROM warehouse WHERE w_id = ?")?,
            district_lock: c.prep(
                "SELECT d_tax, d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ? FOR UPDATE",
            )?,
            district_next: c
                .prep("UPDATE district SET d_next_o_id = ? WHERE d_w_id = ? AND d_id = ?")?,
            customer_no: c.prep(format!(
                "SELECT c_discount, c_last, c_credit FROM customer {cust}"
            ))?,
            insert_order: c.prep("INSERT INTO orders VALUES (?, ?, ?, ?, ?, NULL, ?, ?)")?,
            insert_new_order: c.prep("INSERT INTO new_order VALUES (?, ?, ?)")?,
            item: c.prep("SELECT i_price, i_name, i_data FROM item WHERE i_id = ?")?,
            stock,
            update_stock: c.prep(
                "UPDATE stock SET s_quantity = ?, s_ytd = ?, s_order_cnt = ?, s_remote_cnt = ? \
                 WHERE s_w_id = ? AND s_i_id = ?",
            )?,
            insert_order_line: c
                .prep("INSERT INTO order_line VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)")?,
            district_ytd: c
                .prep("UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = ? AND d_id = ?")?,
            district_addr: c.prep(
                "SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM district \
                 WHERE d_w_id = ? AND d_id = ?",
            )?,
            customers_by_last: c.prep(
                "SELECT c_id FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? \
                 ORDER BY c_first",
            )?,
            customer_pay: c.prep(format!(
                "SELECT c_credit, c_balance, c_ytd_payment, c_payment_cnt, c_data, c_first, \
                 c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, \
                 c_since, c_credit_lim, c_discount FROM customer {cust} FOR UPDATE"
            ))?,
            customer_paid_bc: c.prep(format!(
                "UPDATE customer SET c_balance = ?, c_ytd_payment = ?, c_payment_cnt = ?, \
                 c_data = ? {cust}"
            ))?,
            customer_paid: c.prep(format!(
                "UPDATE customer SET c_balance = ?, c_ytd_payment = ?, c_payment_cnt = ? {cust}"
            ))?,
            warehouse_ytd: c.prep("UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ?")?,
            warehouse_addr: c.prep(
                "SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM warehouse \
                 WHERE w_id = ?",
            )?,
            insert_history: c.prep("INSERT INTO history VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")?,
            customer_status: c.prep(format!(
                "SELECT c_balance, c_first, c_middle, c_last FROM customer {cust}"
            ))?,
            last_order: c.prep(
                "SELECT o_id, o_entry_d, o_carrier_id FROM orders WHERE o_w_id = ? AND \
                 o_d_id = ? AND o_c_id = ? ORDER BY o_id DESC LIMIT 1",
            )?,
            order_lines: c.prep(format!(
                "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d \
                 FROM order_line {ol}"
            ))?,
            oldest_new_order: c.prep(
                "SELECT no_o_id FROM new_order WHERE no_w_id = ? AND no_d_id = ? \
                 ORDER BY no_o_id LIMIT 1 FOR UPDATE",
            )?,
            delete_new_order: c
                .prep("DELETE FROM new_order WHERE no_w_id = ? AND no_d_id = ? AND no_o_id = ?")?,
            order_customer: c
                .prep("SELECT o_c_id FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?")?,
            set_carrier: c.prep(
                "UPDATE orders SET o_carrier_id = ? WHERE o_w_id = ? AND o_d_id = ? AND o_id = ?",
            )?,
            set_delivery_d: c.prep(format!("UPDATE order_line SET ol_delivery_d = ? {ol}"))?,
            sum_amount: c.prep(format!(
                "SELECT CAST(sum(ol_amount) AS SIGNED) FROM order_line {ol}"
            ))?,
            customer_delivered: c.prep(format!(
                "UPDATE customer SET c_balance = c_balance + ?, \
                 c_delivery_cnt = c_delivery_cnt + 1 {cust}"
            ))?,
            next_o_id: c.prep("SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?")?,
            low_stock: c.prep(
                "SELECT count(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = ? \
                 AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ? AND s_w_id = ? \
                 AND s_i_id = ol_i_id AND s_quantity < ?",
            )?,
        })
    }
}

/// TPC-C's tables on a private server.
pub struct TpccDb {
    /// The server and its connections.
    pub db: Db<St>,
}

/// Starts a server, creates the nine tables and loads `warehouses` warehouses at `scale`
/// (module doc of [`super::super::super::tpcc::load`]), then analyzes the tables.
///
/// # Errors
/// [`BenchError::Peer`] if the server fails to start, create or load.
pub fn setup(
    setup: &PeerSetup<'_>,
    warehouses: u32,
    scale: &TpccScale,
    k: &NuRandConstants,
    seed: u64,
    progress: &mut dyn FnMut(u64),
) -> Result<TpccDb> {
    let server = Server::start(setup.opts, setup.pool_bytes, setup.workers)?;
    on_new_connection(&server, "creating the TPC-C tables", |c| {
        for t in TABLES {
            c.query_drop(ddl(t))?;
        }
        Ok(())
    })?;
    let mut conn = server.connect(Some(super::server::DATABASE))?;
    let mut sink = MariaSink::new(&mut conn);
    load::load(&mut sink, scale, warehouses, k, seed, progress)?;
    drop(sink);
    let names: Vec<&str> = TABLES.iter().map(|t| t.name).collect();
    conn.query_drop(format!("ANALYZE TABLE {}", names.join(", ")))
        .map_err(|e| BenchError::peer(super::ENGINE, "ANALYZE TABLE", e))?;
    drop(conn);
    let db = Db::open(server, setup.workers, |_, c| St::prepare(c))?;
    Ok(TpccDb { db })
}

/// New-Order's purposeful rollback, or Delivery's lost race.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rollback {
    UnusedItem,
    DeliveryRace,
}

/// New-Order (clause 2.4.2).
fn new_order(
    c: &mut mysql::Conn,
    st: &St,
    inp: &NewOrderIn,
    now: i64,
) -> TxResult<std::result::Result<(), Rollback>> {
    let (w, d, cid) = (inp.w, inp.d, inp.c);
    let mut r = must_row(c, &st.w_tax, (w,), || format!("warehouse {w}"))?;
    let w_tax: i64 = col(&mut r, 0)?;
    let mut r = must_row(c, &st.district_lock, (w, d), || {
        format!("district ({w},{d})")
    })?;
    let (d_tax, o_id): (i64, i32) = (col(&mut r, 0)?, col(&mut r, 1)?);
    c.exec_drop(&st.district_next, (o_id + 1, w, d))?;
    let mut r = must_row(c, &st.customer_no, (w, d, cid), || {
        format!("customer ({w},{d},{cid})")
    })?;
    let c_discount: i64 = col(&mut r, 0)?;
    let (_last, _credit): (String, String) = (col(&mut r, 1)?, col(&mut r, 2)?);
    let n_lines = inp.lines.len() as i64;
    c.exec_drop(
        &st.insert_order,
        (w, d, o_id, cid, now, n_lines, i64::from(inp.all_local)),
    )?;
    c.exec_drop(&st.insert_new_order, (w, d, o_id))?;
    let stock = usize::try_from(d - 1)
        .ok()
        .and_then(|i| st.stock.get(i))
        .ok_or_else(|| BenchError::invalid("district", format!("{d} is not in 1..=10")))?;
    let mut total = 0i64;
    for (n, line) in inp.lines.iter().enumerate() {
        let Some(mut item) = c.exec_first::<Row, _, _>(&st.item, (line.i_id,))? else {
            return Ok(Err(Rollback::UnusedItem));
        };
        let price: i64 = col(&mut item, 0)?;
        let (_name, i_data): (String, String) = (col(&mut item, 1)?, col(&mut item, 2)?);
        let mut s = must_row(c, stock, (line.supply_w, line.i_id), || {
            format!("stock ({},{})", line.supply_w, line.i_id)
        })?;
        let q: i32 = col(&mut s, 0)?;
        let dist_info: String = col(&mut s, 1)?;
        let s_data: String = col(&mut s, 2)?;
        let (ytd, cnt, remote): (i64, i32, i32) =
            (col(&mut s, 3)?, col(&mut s, 4)?, col(&mut s, 5)?);
        let new_q = if q >= line.qty + 10 {
            q - line.qty
        } else {
            q - line.qty + 91
        };
        c.exec_drop(
            &st.update_stock,
            (
                new_q,
                ytd + i64::from(line.qty),
                cnt + 1,
                remote + i32::from(line.supply_w != w),
                line.supply_w,
                line.i_id,
            ),
        )?;
        let _brand = i_data.contains("ORIGINAL") && s_data.contains("ORIGINAL");
        let amount = price * i64::from(line.qty);
        total += amount;
        c.exec_drop(
            &st.insert_order_line,
            (
                w,
                d,
                o_id,
                n as i64 + 1,
                line.i_id,
                line.supply_w,
                line.qty,
                amount,
                dist_info,
            ),
        )?;
    }
    let _total = total * (10_000 - c_discount) * (10_000 + w_tax + d_tax) / 100_000_000;
    Ok(Ok(()))
}

/// The C_ID of customer `sel` of district `(w, d)` (by last name: the one at position
/// ceil(n/2) sorted by C_FIRST).
fn find_customer(c: &mut mysql::Conn, st: &St, w: i32, d: i32, sel: &Customer) -> TxResult<i32> {
    match sel {
        Customer::Id(id) => Ok(*id),
        Customer::Last(last) => {
            let mut rows = c.exec::<Row, _, _>(&st.customers_by_last, (w, d, last.as_str()))?;
            if rows.is_empty() {
                return Err(BenchError::Check(format!(
                    "mariadb: no customer named {last} in district ({w},{d})"
                ))
                .into());
            }
            let mid = (rows.len() - 1) / 2;
            col(&mut rows[mid], 0)
        }
    }
}

/// Payment (clause 2.5.2): district, customer, warehouse, history, as on Shoal.
fn payment(c: &mut mysql::Conn, st: &St, inp: &PaymentIn, h_id: i64, now: i64) -> TxResult<()> {
    let amount = inp.amount;
    c.exec_drop(&st.district_ytd, (amount, inp.w, inp.d))?;
    let mut r = must_row(c, &st.district_addr, (inp.w, inp.d), || {
        format!("district ({},{})", inp.w, inp.d)
    })?;
    let d_name: String = col(&mut r, 0)?;
    let cid = find_customer(c, st, inp.c_w, inp.c_d, &inp.customer)?;
    let mut r = must_row(c, &st.customer_pay, (inp.c_w, inp.c_d, cid), || {
        format!("customer ({},{},{cid})", inp.c_w, inp.c_d)
    })?;
    let credit: String = col(&mut r, 0)?;
    let (balance, ytd, cnt): (i64, i64, i32) = (col(&mut r, 1)?, col(&mut r, 2)?, col(&mut r, 3)?);
    let data: String = col(&mut r, 4)?;
    if credit == "BC" {
        c.exec_drop(
            &st.customer_paid_bc,
            (
                balance - amount,
                ytd + amount,
                cnt + 1,
                bc_data(cid, inp, &data),
                inp.c_w,
                inp.c_d,
                cid,
            ),
        )?;
    } else {
        c.exec_drop(
            &st.customer_paid,
            (
                balance - amount,
                ytd + amount,
                cnt + 1,
                inp.c_w,
                inp.c_d,
                cid,
            ),
        )?;
    }
    c.exec_drop(&st.warehouse_ytd, (amount, inp.w))?;
    let mut r = must_row(c, &st.warehouse_addr, (inp.w,), || {
        format!("warehouse {}", inp.w)
    })?;
    let w_name: String = col(&mut r, 0)?;
    c.exec_drop(
        &st.insert_history,
        (
            h_id,
            cid,
            inp.c_d,
            inp.c_w,
            inp.d,
            inp.w,
            now,
            amount,
            format!("{w_name}    {d_name}"),
        ),
    )?;
    Ok(())
}

/// Order-Status (clause 2.6.2); returns the lines read.
fn order_status(c: &mut mysql::Conn, st: &St, inp: &OrderStatusIn) -> TxResult<usize> {
    let cid = find_customer(c, st, inp.w, inp.d, &inp.customer)?;
    let mut r = must_row(c, &st.customer_status, (inp.w, inp.d, cid), || {
        format!("customer ({},{},{cid})", inp.w, inp.d)
    })?;
    let _balance: i64 = col(&mut r, 0)?;
    let Some(mut o) = c.exec_first::<Row, _, _>(&st.last_order, (inp.w, inp.d, cid))? else {
        return Ok(0);
    };
    let o_id: i32 = col(&mut o, 0)?;
    let mut lines = c.exec::<Row, _, _>(&st.order_lines, (inp.w, inp.d, o_id))?;
    for l in &mut lines {
        let _: (i64, i64, i64, i64, Option<i64>) =
            (col(l, 0)?, col(l, 1)?, col(l, 2)?, col(l, 3)?, col(l, 4)?);
    }
    Ok(lines.len())
}

/// Delivery (clause 2.7.4) of all ten districts; returns the orders delivered, or the
/// race lost to another Delivery.
fn delivery(
    c: &mut mysql::Conn,
    st: &St,
    inp: &DeliveryIn,
    now: i64,
) -> TxResult<std::result::Result<u32, Rollback>> {
    let w = inp.w;
    let mut delivered = 0;
    for d in 1..=10 {
        let Some(mut r) = c.exec_first::<Row, _, _>(&st.oldest_new_order, (w, d))? else {
            continue;
        };
        let o: i32 = col(&mut r, 0)?;
        c.exec_drop(&st.delete_new_order, (w, d, o))?;
        if c.affected_rows() != 1 {
            return Ok(Err(Rollback::DeliveryRace));
        }
        let mut r = must_row(c, &st.order_customer, (w, d, o), || {
            format!("order ({w},{d},{o})")
        })?;
        let cid: i32 = col(&mut r, 0)?;
        c.exec_drop(&st.set_carrier, (inp.carrier, w, d, o))?;
        c.exec_drop(&st.set_delivery_d, (now, w, d, o))?;
        let mut r = must_row(c, &st.sum_amount, (w, d, o), || {
            format!("order lines of ({w},{d},{o})")
        })?;
        let sum: i64 = col::<Option<i64>>(&mut r, 0)?.unwrap_or(0);
        c.exec_drop(&st.customer_delivered, (sum, w, d, cid))?;
        delivered += 1;
    }
    Ok(Ok(delivered))
}

/// Stock-Level (clause 2.8.2).
fn stock_level(c: &mut mysql::Conn, st: &St, inp: &StockLevelIn) -> TxResult<i64> {
    let mut r = must_row(c, &st.next_o_id, (inp.w, inp.d), || {
        format!("district ({},{})", inp.w, inp.d)
    })?;
    let next: i32 = col(&mut r, 0)?;
    let mut r = must_row(
        c,
        &st.low_stock,
        (
            inp.w,
            inp.d,
            next,
            next - STOCK_LEVEL_ORDERS,
            inp.w,
            inp.threshold,
        ),
        || "the low-stock count".into(),
    )?;
    col(&mut r, 0)
}

impl TpccPeer for TpccDb {
    fn new_order(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        inp: &NewOrderIn,
        now: i64,
    ) -> Result<Option<NewOrderEnd>> {
        let r = self.db.run(thread_idx, ctx, "New-Order", false, |c, st| {
            new_order(c, st, inp, now)
        })?;
        Ok(r.map(|r| match r {
            Ok(()) => NewOrderEnd::Committed,
            Err(_) => NewOrderEnd::UnusedItem,
        }))
    }

    fn payment(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        inp: &PaymentIn,
        h_id: i64,
        now: i64,
    ) -> Result<bool> {
        let r = self.db.run(thread_idx, ctx, "Payment", false, |c, st| {
            payment(c, st, inp, h_id, now).map(Ok::<_, ()>)
        })?;
        Ok(r.is_some())
    }

    fn order_status(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        inp: &OrderStatusIn,
    ) -> Result<bool> {
        let r = self
            .db
            .run(thread_idx, ctx, "Order-Status", true, |c, st| {
                order_status(c, st, inp).map(Ok::<_, ()>)
            })?;
        Ok(r.is_some())
    }

    fn delivery(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        inp: &DeliveryIn,
        now: i64,
    ) -> Result<bool> {
        let r = self.db.run(thread_idx, ctx, "Delivery", false, |c, st| {
            delivery(c, st, inp, now)
        })?;
        match r {
            Some(Err(_)) => {
                ctx.abort("delivery-race");
                Ok(false)
            }
            other => Ok(other.is_some()),
        }
    }

    fn stock_level(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        inp: &StockLevelIn,
    ) -> Result<bool> {
        let r = self.db.run(thread_idx, ctx, "Stock-Level", true, |c, st| {
            stock_level(c, st, inp).map(Ok::<_, ()>)
        })?;
        Ok(r.is_some())
    }

    fn snapshot(&self) -> Result<Snapshot> {
        self.db
            .with("reading the consistency snapshot", |c, _| snapshot(c))
    }
}
