//! The five transactions on SQLite, with the same reads and writes as on Shoal: writers
//! (New-Order, Payment, Delivery) begin with `BEGIN IMMEDIATE` (one writer at a time, so no
//! update is lost), readers (Order-Status, Stock-Level) with `BEGIN` (a WAL snapshot).
//! Statements are prepared once per connection and reused (`prepare_cached`).

use super::input::{
    bc_data, Customer, DeliveryIn, NewOrderIn, OrderStatusIn, PaymentIn, StockLevelIn,
    STOCK_LEVEL_ORDERS,
};
use super::load::Sink;
use super::schema::{T, TABLES};
use crate::error::{BenchError, Result};
use rusqlite::types::Value as SV;
use rusqlite::{params, Connection, OptionalExtension};
use shoal::table::Value as V;

/// Loads rows into SQLite, one transaction per batch.
pub struct SqliteSink<'a> {
    /// The loading connection.
    pub conn: &'a Connection,
    /// Whether a transaction is open.
    pub open: bool,
}

fn to_sql(v: V) -> SV {
    match v {
        V::Null => SV::Null,
        V::Int4(i) => SV::Integer(i64::from(i)),
        V::Int8(i) | V::Timestamp(i) => SV::Integer(i),
        V::Str(s) => SV::Text(s),
        V::Bool(b) => SV::Integer(i64::from(b)),
        V::Float8(f) => SV::Real(f),
        V::Bytes(b) => SV::Blob(b),
        V::Decimal(d) => SV::Integer(d.units()),
    }
}

impl Sink for SqliteSink<'_> {
    fn row(&mut self, t: T, values: Vec<V>) -> Result<()> {
        let e = |e| BenchError::sqlite(format!("loading {}", TABLES[t as usize].name), e);
        if !self.open {
            self.conn.execute_batch("BEGIN").map_err(e)?;
            self.open = true;
        }
        self.conn
            .prepare_cached(&TABLES[t as usize].sqlite_insert())
            .map_err(e)?
            .execute(rusqlite::params_from_iter(values.into_iter().map(to_sql)))
            .map_err(e)?;
        Ok(())
    }

    fn commit(&mut self) -> Result<()> {
        if self.open {
            self.conn
                .execute_batch("COMMIT")
                .map_err(|e| BenchError::sqlite("COMMIT of a load batch", e))?;
            self.open = false;
        }
        Ok(())
    }
}

/// Why a transaction asks to be rolled back (New-Order's unused item).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnusedItem;

type Outcome = rusqlite::Result<std::result::Result<(), UnusedItem>>;

/// `SELECT s_quantity, s_dist_xx, ...` for district `xx` (1..=10).
const STOCK_SELECT: [&str; 10] = [
    "SELECT s_quantity, s_dist_01, s_data, s_ytd, s_order_cnt, s_remote_cnt FROM stock WHERE s_w_id = ?1 AND s_i_id = ?2",
    "SELECT s_quantity, s_dist_02, s_data, s_ytd, s_order_cnt, s_remote_cnt FROM stock WHERE s_w_id = ?1 AND s_i_id = ?2",
    "SELECT s_quantity, s_dist_03, s_data, s_ytd, s_order_cnt, s_remote_cnt FROM stock WHERE s_w_id = ?1 AND s_i_id = ?2",
    "SELECT s_quantity, s_dist_04, s_data, s_ytd, s_order_cnt, s_remote_cnt FROM stock WHERE s_w_id = ?1 AND s_i_id = ?2",
    "SELECT s_quantity, s_dist_05, s_data, s_ytd, s_order_cnt, s_remote_cnt FROM stock WHERE s_w_id = ?1 AND s_i_id = ?2",
    "SELECT s_quantity, s_dist_06, s_data, s_ytd, s_order_cnt, s_remote_cnt FROM stock WHERE s_w_id = ?1 AND s_i_id = ?2",
    "SELECT s_quantity, s_dist_07, s_data, s_ytd, s_order_cnt, s_remote_cnt FROM stock WHERE s_w_id = ?1 AND s_i_id = ?2",
    "SELECT s_quantity, s_dist_08, s_data, s_ytd, s_order_cnt, s_remote_cnt FROM stock WHERE s_w_id = ?1 AND s_i_id = ?2",
    "SELECT s_quantity, s_dist_09, s_data, s_ytd, s_order_cnt, s_remote_cnt FROM stock WHERE s_w_id = ?1 AND s_i_id = ?2",
    "SELECT s_quantity, s_dist_10, s_data, s_ytd, s_order_cnt, s_remote_cnt FROM stock WHERE s_w_id = ?1 AND s_i_id = ?2",
];

/// New-Order (clause 2.4.2).
pub fn new_order(c: &Connection, inp: &NewOrderIn, now: i64) -> Outcome {
    let (w, d, cid) = (inp.w, inp.d, inp.c);
    let w_tax: i64 = c
        .prepare_cached("SELECT w_tax FROM warehouse WHERE w_id = ?1")?
        .query_row([w], |r| r.get(0))?;
    let (d_tax, o_id): (i64, i32) = c
        .prepare_cached("SELECT d_tax, d_next_o_id FROM district WHERE d_w_id = ?1 AND d_id = ?2")?
        .query_row([w, d], |r| Ok((r.get(0)?, r.get(1)?)))?;
    c.prepare_cached("UPDATE district SET d_next_o_id = ?3 WHERE d_w_id = ?1 AND d_id = ?2")?
        .execute([w, d, o_id + 1])?;
    let (c_discount, _c_last, _c_credit): (i64, String, String) = c
        .prepare_cached(
            "SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
        )?
        .query_row([w, d, cid], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    c.prepare_cached("INSERT INTO orders VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, ?7)")?
        .execute(params![
            w,
            d,
            o_id,
            cid,
            now,
            inp.lines.len() as i64,
            i64::from(inp.all_local)
        ])?;
    c.prepare_cached("INSERT INTO new_order VALUES (?1, ?2, ?3)")?
        .execute([w, d, o_id])?;
    let mut total = 0i64;
    for (n, line) in inp.lines.iter().enumerate() {
        let item: Option<(i64, String, String)> = c
            .prepare_cached("SELECT i_price, i_name, i_data FROM item WHERE i_id = ?1")?
            .query_row([line.i_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?;
        let Some((price, _name, i_data)) = item else {
            return Ok(Err(UnusedItem));
        };
        let (q, dist_info, s_data, ytd, cnt, remote): (i32, String, String, i64, i32, i32) = c
            .prepare_cached(STOCK_SELECT[d as usize - 1])?
            .query_row([line.supply_w, line.i_id], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })?;
        let new_q = if q >= line.qty + 10 {
            q - line.qty
        } else {
            q - line.qty + 91
        };
        c.prepare_cached(
            "UPDATE stock SET s_quantity = ?3, s_ytd = ?4, s_order_cnt = ?5, s_remote_cnt = ?6 WHERE s_w_id = ?1 AND s_i_id = ?2",
        )?
        .execute(params![
            line.supply_w,
            line.i_id,
            new_q,
            ytd + i64::from(line.qty),
            cnt + 1,
            remote + i32::from(line.supply_w != w)
        ])?;
        let _brand = i_data.contains("ORIGINAL") && s_data.contains("ORIGINAL");
        let amount = price * i64::from(line.qty);
        total += amount;
        c.prepare_cached(
            "INSERT INTO order_line VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, ?7, ?8, ?9)",
        )?
        .execute(params![
            w,
            d,
            o_id,
            n as i64 + 1,
            line.i_id,
            line.supply_w,
            line.qty,
            amount,
            dist_info
        ])?;
    }
    let _total = total * (10_000 - c_discount) * (10_000 + w_tax + d_tax) / 100_000_000;
    Ok(Ok(()))
}

/// The C_ID of customer `sel` of district `(w, d)`, or `None`.
fn find_customer(c: &Connection, w: i32, d: i32, sel: &Customer) -> rusqlite::Result<Option<i32>> {
    match sel {
        Customer::Id(id) => Ok(Some(*id)),
        Customer::Last(last) => {
            let ids: Vec<i32> = c
                .prepare_cached(
                    "SELECT c_id FROM customer WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_last = ?3 ORDER BY c_first",
                )?
                .query_map(params![w, d, last], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            Ok(ids
                .get(ids.len().saturating_sub(1) / 2)
                .copied()
                .filter(|_| !ids.is_empty()))
        }
    }
}

/// Payment (clause 2.5.2); `h_id` is the new HISTORY row's key.
pub fn payment(c: &Connection, inp: &PaymentIn, h_id: i64, now: i64) -> rusqlite::Result<()> {
    let amount = inp.amount;
    c.prepare_cached("UPDATE warehouse SET w_ytd = w_ytd + ?2 WHERE w_id = ?1")?
        .execute(params![inp.w, amount])?;
    let w_name: String = c
        .prepare_cached(
            "SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM warehouse WHERE w_id = ?1",
        )?
        .query_row([inp.w], |r| r.get(0))?;
    c.prepare_cached("UPDATE district SET d_ytd = d_ytd + ?3 WHERE d_w_id = ?1 AND d_id = ?2")?
        .execute(params![inp.w, inp.d, amount])?;
    let d_name: String = c
        .prepare_cached(
            "SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM district WHERE d_w_id = ?1 AND d_id = ?2",
        )?
        .query_row([inp.w, inp.d], |r| r.get(0))?;
    let cid = find_customer(c, inp.c_w, inp.c_d, &inp.customer)?
        .ok_or(rusqlite::Error::QueryReturnedNoRows)?;
    let (credit, balance, ytd, cnt, data): (String, i64, i64, i32, String) = c
        .prepare_cached(
            "SELECT c_credit, c_balance, c_ytd_payment, c_payment_cnt, c_data, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, c_credit_lim, c_discount FROM customer WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
        )?
        .query_row([inp.c_w, inp.c_d, cid], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?;
    if credit == "BC" {
        c.prepare_cached(
            "UPDATE customer SET c_balance = ?4, c_ytd_payment = ?5, c_payment_cnt = ?6, c_data = ?7 WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
        )?
        .execute(params![
            inp.c_w,
            inp.c_d,
            cid,
            balance - amount,
            ytd + amount,
            cnt + 1,
            bc_data(cid, inp, &data)
        ])?;
    } else {
        c.prepare_cached(
            "UPDATE customer SET c_balance = ?4, c_ytd_payment = ?5, c_payment_cnt = ?6 WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
        )?
        .execute(params![
            inp.c_w,
            inp.c_d,
            cid,
            balance - amount,
            ytd + amount,
            cnt + 1
        ])?;
    }
    c.prepare_cached("INSERT INTO history VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")?
        .execute(params![
            h_id,
            cid,
            inp.c_d,
            inp.c_w,
            inp.d,
            inp.w,
            now,
            amount,
            format!("{w_name}    {d_name}")
        ])?;
    Ok(())
}

/// Order-Status (clause 2.6.2); returns the number of lines read.
pub fn order_status(c: &Connection, inp: &OrderStatusIn) -> rusqlite::Result<usize> {
    let cid = find_customer(c, inp.w, inp.d, &inp.customer)?
        .ok_or(rusqlite::Error::QueryReturnedNoRows)?;
    let _cust: (i64, String, String, String) = c
        .prepare_cached(
            "SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
        )?
        .query_row([inp.w, inp.d, cid], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
    let o: Option<i32> = c
        .prepare_cached(
            "SELECT o_id, o_entry_d, o_carrier_id FROM orders WHERE o_w_id = ?1 AND o_d_id = ?2 AND o_c_id = ?3 ORDER BY o_id DESC LIMIT 1",
        )?
        .query_row([inp.w, inp.d, cid], |r| r.get(0))
        .optional()?;
    let Some(o) = o else { return Ok(0) };
    let mut st = c.prepare_cached(
        "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line WHERE ol_w_id = ?1 AND ol_d_id = ?2 AND ol_o_id = ?3",
    )?;
    let mut rows = st.query([inp.w, inp.d, o])?;
    let mut n = 0;
    while let Some(r) = rows.next()? {
        let _: (i64, i64, i64, i64, Option<i64>) =
            (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?);
        n += 1;
    }
    Ok(n)
}

/// Delivery (clause 2.7.4) of all ten districts; returns the orders delivered.
pub fn delivery(c: &Connection, inp: &DeliveryIn, now: i64) -> rusqlite::Result<u32> {
    let w = inp.w;
    let mut delivered = 0;
    for d in 1..=10 {
        let o: Option<i32> = c
            .prepare_cached(
                "SELECT no_o_id FROM new_order WHERE no_w_id = ?1 AND no_d_id = ?2 ORDER BY no_o_id LIMIT 1",
            )?
            .query_row([w, d], |r| r.get(0))
            .optional()?;
        let Some(o) = o else { continue };
        c.prepare_cached(
            "DELETE FROM new_order WHERE no_w_id = ?1 AND no_d_id = ?2 AND no_o_id = ?3",
        )?
        .execute([w, d, o])?;
        let cid: i32 = c
            .prepare_cached(
                "SELECT o_c_id FROM orders WHERE o_w_id = ?1 AND o_d_id = ?2 AND o_id = ?3",
            )?
            .query_row([w, d, o], |r| r.get(0))?;
        c.prepare_cached(
            "UPDATE orders SET o_carrier_id = ?4 WHERE o_w_id = ?1 AND o_d_id = ?2 AND o_id = ?3",
        )?
        .execute([w, d, o, inp.carrier])?;
        c.prepare_cached(
            "UPDATE order_line SET ol_delivery_d = ?4 WHERE ol_w_id = ?1 AND ol_d_id = ?2 AND ol_o_id = ?3",
        )?
        .execute(params![w, d, o, now])?;
        let sum: i64 = c
            .prepare_cached(
                "SELECT sum(ol_amount) FROM order_line WHERE ol_w_id = ?1 AND ol_d_id = ?2 AND ol_o_id = ?3",
            )?
            .query_row([w, d, o], |r| r.get::<_, Option<i64>>(0))?
            .unwrap_or(0);
        c.prepare_cached(
            "UPDATE customer SET c_balance = c_balance + ?4, c_delivery_cnt = c_delivery_cnt + 1 WHERE c_w_id = ?1 AND c_d_id = ?2 AND c_id = ?3",
        )?
        .execute(params![w, d, cid, sum])?;
        delivered += 1;
    }
    Ok(delivered)
}

/// Stock-Level (clause 2.8.2).
pub fn stock_level(c: &Connection, inp: &StockLevelIn) -> rusqlite::Result<i64> {
    let next: i32 = c
        .prepare_cached("SELECT d_next_o_id FROM district WHERE d_w_id = ?1 AND d_id = ?2")?
        .query_row([inp.w, inp.d], |r| r.get(0))?;
    c.prepare_cached(
        "SELECT count(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = ?1 AND ol_d_id = ?2 AND ol_o_id < ?3 AND ol_o_id >= ?4 AND s_w_id = ?1 AND s_i_id = ol_i_id AND s_quantity < ?5",
    )?
    .query_row(
        [inp.w, inp.d, next, next - STOCK_LEVEL_ORDERS, inp.threshold],
        |r| r.get(0),
    )
}
