//! The five TPC-C transactions on PostgreSQL, with the reads and writes of the Shoal and
//! SQLite sides, as prepared statements at READ COMMITTED. Rows that are read and then
//! written are locked first: New-Order takes D_NEXT_O_ID with `UPDATE ... RETURNING` and
//! updates each STOCK row with one `UPDATE ... RETURNING` computed from its newest
//! version; Payment adds to D_YTD and W_YTD in place and reads the customer `FOR UPDATE`
//! before writing it; Delivery takes the district's oldest NEW-ORDER row `FOR UPDATE`.
//!
//! Delivery and READ COMMITTED: `SELECT ... ORDER BY no_o_id LIMIT 1 FOR UPDATE` returns no
//! row when the row it found was deleted by a delivery that committed while it waited for
//! the lock (PostgreSQL locks after the `LIMIT`). A plain `SELECT` then tells whether the
//! district still has an undelivered order; if so the locking read is repeated, so a
//! district is skipped only when it has none (clause 2.7.4.2), and never leaves a gap: a
//! delete that rolls back leaves its row to the waiting delivery.

use super::super::super::tpcc::input::{
    bc_data, Customer, DeliveryIn, NewOrderIn, OrderStatusIn, PaymentIn, StockLevelIn,
    STOCK_LEVEL_ORDERS,
};
use super::{get, one_row, At, Body, Fail, ENGINE};
use crate::error::BenchError;
use postgres::types::Type;
use postgres::{Client, Statement};

/// Why New-Order rolls back on purpose: its last item is unused (clause 2.4.1.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnusedItem;

/// Times Delivery repeats the locking read of one district before giving up (each repeat
/// means another delivery of that district committed meanwhile).
const MAX_DELIVERY_RETRIES: usize = 1_000;

/// The statements of the five transactions, prepared on each connection.
pub struct TpccStatements {
    w_tax: Statement,
    d_next: Statement,
    c_new_order: Statement,
    ins_order: Statement,
    ins_new_order: Statement,
    item: Statement,
    /// One per district: the `s_dist_xx` column differs.
    stock: Vec<Statement>,
    ins_line: Statement,
    d_pay: Statement,
    c_by_name: Statement,
    c_lock: Statement,
    c_pay: Statement,
    c_pay_bc: Statement,
    w_pay: Statement,
    ins_history: Statement,
    c_status: Statement,
    last_order: Statement,
    lines: Statement,
    oldest_lock: Statement,
    oldest: Statement,
    del_new_order: Statement,
    o_carrier: Statement,
    ol_deliver: Statement,
    c_deliver: Statement,
    d_next_o_id: Statement,
    low_stock: Statement,
}

impl TpccStatements {
    /// Prepares every statement on `c`.
    ///
    /// # Errors
    /// The driver's error for the first statement the server refuses.
    pub fn prepare(c: &mut Client) -> Result<TpccStatements, postgres::Error> {
        let stock = (1..=10)
            .map(|d| {
                c.prepare_typed(
                    &format!(
                        "UPDATE stock SET \
                         s_quantity = CASE WHEN s_quantity >= $3 + 10 THEN s_quantity - $3 \
                                           ELSE s_quantity - $3 + 91 END, \
                         s_ytd = s_ytd + $3, s_order_cnt = s_order_cnt + 1, \
                         s_remote_cnt = s_remote_cnt + $4 \
                         WHERE s_w_id = $1 AND s_i_id = $2 RETURNING s_dist_{d:02}, s_data"
                    ),
                    &[Type::INT4, Type::INT4, Type::INT4, Type::INT4],
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        const CUSTOMER: &str = "WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3";
        Ok(TpccStatements {
            w_tax: c.prepare("SELECT w_tax FROM warehouse WHERE w_id = $1")?,
            d_next: c.prepare(
                "UPDATE district SET d_next_o_id = d_next_o_id + 1 \
                 WHERE d_w_id = $1 AND d_id = $2 RETURNING d_tax, d_next_o_id - 1",
            )?,
            c_new_order: c.prepare(&format!(
                "SELECT c_discount, c_last, c_credit FROM customer {CUSTOMER}"
            ))?,
            ins_order: c.prepare("INSERT INTO orders VALUES ($1, $2, $3, $4, $5, NULL, $6, $7)")?,
            ins_new_order: c.prepare("INSERT INTO new_order VALUES ($1, $2, $3)")?,
            item: c.prepare("SELECT i_price, i_name, i_data FROM item WHERE i_id = $1")?,
            stock,
            ins_line: c.prepare(
                "INSERT INTO order_line VALUES ($1, $2, $3, $4, $5, $6, NULL, $7, $8, $9)",
            )?,
            d_pay: c.prepare(
                "UPDATE district SET d_ytd = d_ytd + $3 WHERE d_w_id = $1 AND d_id = $2 \
                 RETURNING d_name, d_street_1, d_street_2, d_city, d_state, d_zip",
            )?,
            c_by_name: c.prepare(
                "SELECT c_id FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_last = $3 \
                 ORDER BY c_first",
            )?,
            c_lock: c.prepare(&format!(
                "SELECT c_credit, c_balance, c_ytd_payment, c_payment_cnt, c_data, c_first, \
                 c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, \
                 c_since, c_credit_lim, c_discount FROM customer {CUSTOMER} FOR UPDATE"
            ))?,
            c_pay: c.prepare(&format!(
                "UPDATE customer SET c_balance = $4, c_ytd_payment = $5, c_payment_cnt = $6 \
                 {CUSTOMER}"
            ))?,
            c_pay_bc: c.prepare(&format!(
                "UPDATE customer SET c_balance = $4, c_ytd_payment = $5, c_payment_cnt = $6, \
                 c_data = $7 {CUSTOMER}"
            ))?,
            w_pay: c.prepare(
                "UPDATE warehouse SET w_ytd = w_ytd + $2 WHERE w_id = $1 \
                 RETURNING w_name, w_street_1, w_street_2, w_city, w_state, w_zip",
            )?,
            ins_history: c
                .prepare("INSERT INTO history VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)")?,
            c_status: c.prepare(&format!(
                "SELECT c_balance, c_first, c_middle, c_last FROM customer {CUSTOMER}"
            ))?,
            last_order: c.prepare(
                "SELECT o_id, o_entry_d, o_carrier_id FROM orders \
                 WHERE o_w_id = $1 AND o_d_id = $2 AND o_c_id = $3 ORDER BY o_id DESC LIMIT 1",
            )?,
            lines: c.prepare(
                "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d \
                 FROM order_line WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3",
            )?,
            oldest_lock: c.prepare(
                "SELECT no_o_id FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 \
                 ORDER BY no_o_id LIMIT 1 FOR UPDATE",
            )?,
            oldest: c.prepare(
                "SELECT no_o_id FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 \
                 ORDER BY no_o_id LIMIT 1",
            )?,
            del_new_order: c.prepare(
                "DELETE FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 AND no_o_id = $3",
            )?,
            o_carrier: c.prepare(
                "UPDATE orders SET o_carrier_id = $4 \
                 WHERE o_w_id = $1 AND o_d_id = $2 AND o_id = $3 RETURNING o_c_id",
            )?,
            ol_deliver: c.prepare(
                "UPDATE order_line SET ol_delivery_d = $4 \
                 WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3 RETURNING ol_amount",
            )?,
            c_deliver: c.prepare(&format!(
                "UPDATE customer SET c_balance = c_balance + $4, \
                 c_delivery_cnt = c_delivery_cnt + 1 {CUSTOMER}"
            ))?,
            d_next_o_id: c
                .prepare("SELECT d_next_o_id FROM district WHERE d_w_id = $1 AND d_id = $2")?,
            low_stock: c.prepare(
                "SELECT count(DISTINCT s_i_id) FROM order_line JOIN stock ON s_i_id = ol_i_id \
                 WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id < $3 AND ol_o_id >= $4 \
                 AND s_w_id = $1 AND s_quantity < $5",
            )?,
        })
    }
}

/// A row the loaded data guarantees was missing.
fn missing(what: String) -> Fail {
    Fail::Bench(BenchError::Check(format!("{ENGINE}: {what}")))
}

/// New-Order (clause 2.4.2).
pub fn new_order(
    c: &mut Client,
    s: &TpccStatements,
    inp: &NewOrderIn,
    now: i64,
) -> Body<(), UnusedItem> {
    let (w, d, cid) = (inp.w, inp.d, inp.c);
    let row = c.query_one(&s.w_tax, &[&w]).at("SELECT w_tax")?;
    let w_tax: i32 = get(&row, 0, "SELECT w_tax")?;
    let row = c
        .query_one(&s.d_next, &[&w, &d])
        .at("UPDATE district d_next_o_id")?;
    let d_tax: i32 = get(&row, 0, "UPDATE district d_next_o_id")?;
    let o_id: i32 = get(&row, 1, "UPDATE district d_next_o_id")?;
    let row = c
        .query_one(&s.c_new_order, &[&w, &d, &cid])
        .at("SELECT c_discount")?;
    let c_discount: i32 = get(&row, 0, "SELECT c_discount")?;
    let ol_cnt = inp.lines.len() as i32;
    let all_local = i32::from(inp.all_local);
    c.execute(
        &s.ins_order,
        &[&w, &d, &o_id, &cid, &now, &ol_cnt, &all_local],
    )
    .at("INSERT INTO orders")?;
    c.execute(&s.ins_new_order, &[&w, &d, &o_id])
        .at("INSERT INTO new_order")?;
    let stock = s
        .stock
        .get((d - 1) as usize)
        .ok_or_else(|| missing(format!("district {d} out of 1..=10")))?;
    let mut total = 0i64;
    for (n, line) in inp.lines.iter().enumerate() {
        let Some(item) = c.query_opt(&s.item, &[&line.i_id]).at("SELECT item")? else {
            return Ok(Err(UnusedItem));
        };
        let price: i64 = get(&item, 0, "SELECT item")?;
        let i_data: &str = get(&item, 2, "SELECT item")?;
        let remote = i32::from(line.supply_w != w);
        let row = c
            .query_opt(stock, &[&line.supply_w, &line.i_id, &line.qty, &remote])
            .at("UPDATE stock")?
            .ok_or_else(|| missing(format!("no stock row ({}, {})", line.supply_w, line.i_id)))?;
        let dist_info: &str = get(&row, 0, "UPDATE stock")?;
        let s_data: &str = get(&row, 1, "UPDATE stock")?;
        let _brand = i_data.contains("ORIGINAL") && s_data.contains("ORIGINAL");
        let amount = price * i64::from(line.qty);
        total += amount;
        let number = n as i32 + 1;
        c.execute(
            &s.ins_line,
            &[
                &w,
                &d,
                &o_id,
                &number,
                &line.i_id,
                &line.supply_w,
                &line.qty,
                &amount,
                &dist_info,
            ],
        )
        .at("INSERT INTO order_line")?;
    }
    let _total = total * (10_000 - i64::from(c_discount)) * (10_000 + i64::from(w_tax + d_tax))
        / 100_000_000;
    Ok(Ok(()))
}

/// The C_ID of customer `sel` of district `(w, d)`: by number, or the one at position
/// ceil(n/2) of the n with that last name sorted by C_FIRST.
fn find_customer(
    c: &mut Client,
    s: &TpccStatements,
    w: i32,
    d: i32,
    sel: &Customer,
) -> Result<i32, Fail> {
    match sel {
        Customer::Id(id) => Ok(*id),
        Customer::Last(last) => {
            let rows = c
                .query(&s.c_by_name, &[&w, &d, &last.as_str()])
                .at("SELECT customer by name")?;
            let row = rows
                .get(rows.len().saturating_sub(1) / 2)
                .ok_or_else(|| missing(format!("no customer named {last} in ({w}, {d})")))?;
            get(row, 0, "SELECT customer by name")
        }
    }
}

/// Payment (clause 2.5.2), in the order of the Shoal side (district, customer, warehouse,
/// history); `h_id` is the new HISTORY row's key.
pub fn payment(
    c: &mut Client,
    s: &TpccStatements,
    inp: &PaymentIn,
    h_id: i64,
    now: i64,
) -> Result<(), Fail> {
    let amount = inp.amount;
    let row = c
        .query_opt(&s.d_pay, &[&inp.w, &inp.d, &amount])
        .at("UPDATE district d_ytd")?
        .ok_or_else(|| missing(format!("no district ({}, {})", inp.w, inp.d)))?;
    let d_name: String = get(&row, 0, "UPDATE district d_ytd")?;
    let cid = find_customer(c, s, inp.c_w, inp.c_d, &inp.customer)?;
    let row = c
        .query_opt(&s.c_lock, &[&inp.c_w, &inp.c_d, &cid])
        .at("SELECT customer FOR UPDATE")?
        .ok_or_else(|| missing(format!("no customer ({}, {}, {cid})", inp.c_w, inp.c_d)))?;
    let what = "SELECT customer FOR UPDATE";
    let credit: &str = get(&row, 0, what)?;
    let balance: i64 = get(&row, 1, what)?;
    let ytd: i64 = get(&row, 2, what)?;
    let cnt: i32 = get(&row, 3, what)?;
    let data: &str = get(&row, 4, what)?;
    let (new_balance, new_ytd, new_cnt) = (balance - amount, ytd + amount, cnt + 1);
    let n = if credit == "BC" {
        let new_data = bc_data(cid, inp, data);
        c.execute(
            &s.c_pay_bc,
            &[
                &inp.c_w,
                &inp.c_d,
                &cid,
                &new_balance,
                &new_ytd,
                &new_cnt,
                &new_data,
            ],
        )
        .at("UPDATE customer (bad credit)")?
    } else {
        c.execute(
            &s.c_pay,
            &[&inp.c_w, &inp.c_d, &cid, &new_balance, &new_ytd, &new_cnt],
        )
        .at("UPDATE customer")?
    };
    one_row(n, "UPDATE customer")?;
    let row = c
        .query_opt(&s.w_pay, &[&inp.w, &amount])
        .at("UPDATE warehouse w_ytd")?
        .ok_or_else(|| missing(format!("no warehouse {}", inp.w)))?;
    let w_name: String = get(&row, 0, "UPDATE warehouse w_ytd")?;
    let h_data = format!("{w_name}    {d_name}");
    c.execute(
        &s.ins_history,
        &[
            &h_id, &cid, &inp.c_d, &inp.c_w, &inp.d, &inp.w, &now, &amount, &h_data,
        ],
    )
    .at("INSERT INTO history")?;
    Ok(())
}

/// Order-Status (clause 2.6.2); returns the number of lines read.
pub fn order_status(
    c: &mut Client,
    s: &TpccStatements,
    inp: &OrderStatusIn,
) -> Result<usize, Fail> {
    let cid = find_customer(c, s, inp.w, inp.d, &inp.customer)?;
    let row = c
        .query_opt(&s.c_status, &[&inp.w, &inp.d, &cid])
        .at("SELECT customer")?
        .ok_or_else(|| missing(format!("no customer ({}, {}, {cid})", inp.w, inp.d)))?;
    let _balance: i64 = get(&row, 0, "SELECT customer")?;
    let Some(order) = c
        .query_opt(&s.last_order, &[&inp.w, &inp.d, &cid])
        .at("SELECT newest order")?
    else {
        return Ok(0);
    };
    let o: i32 = get(&order, 0, "SELECT newest order")?;
    let lines = c
        .query(&s.lines, &[&inp.w, &inp.d, &o])
        .at("SELECT order lines")?;
    for l in &lines {
        let _amount: i64 = get(l, 3, "SELECT order lines")?;
        let _delivered: Option<i64> = get(l, 4, "SELECT order lines")?;
    }
    Ok(lines.len())
}

/// The oldest NEW-ORDER row of district `(w, d)`, locked; `None` if the district has none
/// (module doc).
fn lock_oldest(c: &mut Client, s: &TpccStatements, w: i32, d: i32) -> Result<Option<i32>, Fail> {
    for _ in 0..MAX_DELIVERY_RETRIES {
        if let Some(row) = c
            .query_opt(&s.oldest_lock, &[&w, &d])
            .at("SELECT oldest new_order FOR UPDATE")?
        {
            return get(&row, 0, "SELECT oldest new_order FOR UPDATE").map(Some);
        }
        if c.query_opt(&s.oldest, &[&w, &d])
            .at("SELECT oldest new_order")?
            .is_none()
        {
            return Ok(None);
        }
    }
    Err(missing(format!(
        "delivery of district ({w}, {d}) lost the oldest order {MAX_DELIVERY_RETRIES} times"
    )))
}

/// Delivery (clause 2.7.4) of all ten districts; returns the orders delivered.
pub fn delivery(
    c: &mut Client,
    s: &TpccStatements,
    inp: &DeliveryIn,
    now: i64,
) -> Result<u32, Fail> {
    let w = inp.w;
    let mut delivered = 0;
    for d in 1..=10i32 {
        let Some(o) = lock_oldest(c, s, w, d)? else {
            continue;
        };
        let n = c
            .execute(&s.del_new_order, &[&w, &d, &o])
            .at("DELETE FROM new_order")?;
        one_row(n, "DELETE FROM new_order")?;
        let row = c
            .query_opt(&s.o_carrier, &[&w, &d, &o, &inp.carrier])
            .at("UPDATE orders o_carrier_id")?
            .ok_or_else(|| missing(format!("no order ({w}, {d}, {o})")))?;
        let cid: i32 = get(&row, 0, "UPDATE orders o_carrier_id")?;
        let mut sum = 0i64;
        for l in &c
            .query(&s.ol_deliver, &[&w, &d, &o, &now])
            .at("UPDATE order_line ol_delivery_d")?
        {
            sum += get::<i64>(l, 0, "UPDATE order_line ol_delivery_d")?;
        }
        let n = c
            .execute(&s.c_deliver, &[&w, &d, &cid, &sum])
            .at("UPDATE customer c_balance")?;
        one_row(n, "UPDATE customer c_balance")?;
        delivered += 1;
    }
    Ok(delivered)
}

/// Stock-Level (clause 2.8.2); returns the number of items below the threshold.
pub fn stock_level(c: &mut Client, s: &TpccStatements, inp: &StockLevelIn) -> Result<i64, Fail> {
    let row = c
        .query_opt(&s.d_next_o_id, &[&inp.w, &inp.d])
        .at("SELECT d_next_o_id")?
        .ok_or_else(|| missing(format!("no district ({}, {})", inp.w, inp.d)))?;
    let next: i32 = get(&row, 0, "SELECT d_next_o_id")?;
    let low = next - STOCK_LEVEL_ORDERS;
    let row = c
        .query_one(&s.low_stock, &[&inp.w, &inp.d, &next, &low, &inp.threshold])
        .at("SELECT count of low stock")?;
    get(&row, 0, "SELECT count of low stock")
}
