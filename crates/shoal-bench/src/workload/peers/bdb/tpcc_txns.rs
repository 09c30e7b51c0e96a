//! The five TPC-C transactions on Berkeley DB, with the reads and writes of the Shoal and
//! SQLite sides (`tpcc::shoal_txns`, `tpcc::sqlite_txns`) at degree 2: every row a
//! transaction updates is read with `DB_RMW` (write lock held to commit), other reads
//! release their locks after reading.
//!
//! - Customers by last name: a cursor range over `customer_by_name` at the prefix
//!   `(w, d, c_last)`, sorted by `c_first` (then `c_id`); the middle one is taken.
//! - Order-Status's newest order: a cursor placed after the prefix `(w, d, c_id)` of
//!   `orders_by_customer` and moved back one record.
//! - Delivery's oldest NEW-ORDER row: a `DB_RMW` cursor at the district's prefix `(w, d)`,
//!   deleted through the cursor. The write lock is taken before the row is read, so a
//!   concurrent Delivery of the district waits for this one to end and then sees the next
//!   row (or this one again if it rolled back): no row is skipped or delivered twice.
//! - Stock-Level's last 20 orders: a cursor range over `order_line` from `(w, d, next −
//!   20)` to before `(w, d, next)`.

use super::codec::{key_i32s, push_str, Field, KeyReader};
use super::ffi::{DbErr, DbResult, Move, Txn};
use super::tpcc::{Tables, CUSTOMER_BY_NAME, ORDERS_BY_CUSTOMER};
use crate::workload::tpcc::input::{
    bc_data, Customer, DeliveryIn, NewOrderIn, OrderStatusIn, PaymentIn, StockLevelIn,
    STOCK_LEVEL_ORDERS,
};
use crate::workload::tpcc::schema::{col, T};
use std::collections::HashSet;

/// New-Order's last item was unused: roll the transaction back (clause 2.4.2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnusedItem;

fn int(r: &[Field], i: usize) -> DbResult<i64> {
    r.get(i)
        .ok_or_else(|| DbErr::invalid("tpcc", format!("no column {i}")))?
        .int()
        .map_err(|m| DbErr::invalid("tpcc", m))
}

fn int4(r: &[Field], i: usize) -> DbResult<i32> {
    let v = int(r, i)?;
    i32::try_from(v).map_err(|_| DbErr::invalid("tpcc", format!("column {i} = {v} is not INT4")))
}

fn text(r: &[Field], i: usize) -> DbResult<&str> {
    r.get(i)
        .ok_or_else(|| DbErr::invalid("tpcc", format!("no column {i}")))?
        .text()
        .map_err(|m| DbErr::invalid("tpcc", m))
}

fn bad_key(m: String) -> DbErr {
    DbErr::invalid("tpcc index key", m)
}

/// New-Order (clause 2.4.2).
pub fn new_order(
    t: &Tables,
    txn: &Txn<'_>,
    inp: &NewOrderIn,
    now: i64,
) -> DbResult<Result<(), UnusedItem>> {
    let (w, d, c) = (inp.w, inp.d, inp.c);
    let mut buf = Vec::with_capacity(1024);
    let wrow = t.must_read(txn, T::Warehouse, &key_i32s(&[w]), false, &mut buf)?;
    let w_tax = int(&wrow, col::W_TAX)?;
    let dk = key_i32s(&[w, d]);
    let mut drow = t.must_read(txn, T::District, &dk, true, &mut buf)?;
    let o_id = int4(&drow, col::D_NEXT_O_ID)?;
    let d_tax = int(&drow, col::D_TAX)?;
    drow[col::D_NEXT_O_ID] = Field::Int(i64::from(o_id) + 1);
    t.write(txn, T::District, &dk, &drow)?;
    let crow = t.must_read(txn, T::Customer, &key_i32s(&[w, d, c]), false, &mut buf)?;
    let c_discount = int(&crow, col::C_DISCOUNT)?;
    let _c_last = text(&crow, col::C_LAST)?;
    let _bc = text(&crow, col::C_CREDIT)? == "BC";
    let ints = |v: &[i64]| v.iter().map(|&x| Field::Int(x)).collect::<Vec<_>>();
    let mut orow = ints(&[
        i64::from(w),
        i64::from(d),
        i64::from(o_id),
        i64::from(c),
        now,
    ]);
    orow.push(Field::Null);
    orow.extend(ints(&[inp.lines.len() as i64, i64::from(inp.all_local)]));
    t.insert(txn, T::Orders, &orow)?;
    t.insert(
        txn,
        T::NewOrder,
        &ints(&[i64::from(w), i64::from(d), i64::from(o_id)]),
    )?;
    // S_DIST_xx of the district (1..=10).
    let dist_col = usize::try_from(d - 1)
        .ok()
        .filter(|&i| i < 10)
        .map(|i| col::S_DIST_01 + i)
        .ok_or_else(|| DbErr::invalid("tpcc new-order", format!("district {d}")))?;
    let mut total = 0i64;
    for (n, line) in inp.lines.iter().enumerate() {
        let Some(item) = t.read(txn, T::Item, &key_i32s(&[line.i_id]), false, &mut buf)? else {
            return Ok(Err(UnusedItem));
        };
        let price = int(&item, col::I_PRICE)?;
        let _name = text(&item, col::I_NAME)?;
        let i_original = text(&item, col::I_DATA)?.contains("ORIGINAL");
        let sk = key_i32s(&[line.supply_w, line.i_id]);
        let mut s = t.must_read(txn, T::Stock, &sk, true, &mut buf)?;
        let q = int4(&s, col::S_QUANTITY)?;
        let new_q = if q >= line.qty + 10 {
            q - line.qty
        } else {
            q - line.qty + 91
        };
        let dist_info = text(&s, dist_col)?.to_string();
        let s_original = text(&s, col::S_DATA)?.contains("ORIGINAL");
        s[col::S_QUANTITY] = Field::Int(i64::from(new_q));
        s[col::S_YTD] = Field::Int(int(&s, col::S_YTD)? + i64::from(line.qty));
        s[col::S_ORDER_CNT] = Field::Int(int(&s, col::S_ORDER_CNT)? + 1);
        s[col::S_REMOTE_CNT] =
            Field::Int(int(&s, col::S_REMOTE_CNT)? + i64::from(line.supply_w != w));
        t.write(txn, T::Stock, &sk, &s)?;
        // The brand-generic flag is shown to the terminal only.
        let _brand = i_original && s_original;
        let amount = price * i64::from(line.qty);
        total += amount;
        let mut ol = ints(&[
            i64::from(w),
            i64::from(d),
            i64::from(o_id),
            n as i64 + 1,
            i64::from(line.i_id),
            i64::from(line.supply_w),
        ]);
        ol.push(Field::Null);
        ol.extend(ints(&[i64::from(line.qty), amount]));
        ol.push(Field::Text(dist_info));
        t.insert(txn, T::OrderLine, &ol)?;
    }
    // The total the terminal would show (clause 2.4.2.2).
    let _total = total * (10_000 - c_discount) * (10_000 + w_tax + d_tax) / 100_000_000;
    Ok(Ok(()))
}

/// The C_ID of customer `sel` of district `(w, d)`, or `None`.
fn find_customer(
    t: &Tables,
    txn: &Txn<'_>,
    w: i32,
    d: i32,
    sel: &Customer,
) -> DbResult<Option<i32>> {
    let last = match sel {
        Customer::Id(c) => return Ok(Some(*c)),
        Customer::Last(last) => last,
    };
    let mut prefix = key_i32s(&[w, d]);
    push_str(&mut prefix, last.as_bytes());
    let mut c = t.index(CUSTOMER_BY_NAME).cursor(txn)?;
    let mut ids = Vec::new();
    let mut to = Move::SetRange(&prefix);
    while let Some((k, _)) = c.get(to, false)? {
        if !k.starts_with(&prefix) {
            break;
        }
        let mut r = KeyReader::new(&k[prefix.len()..]);
        r.bytes().map_err(bad_key)?;
        ids.push(r.i32().map_err(bad_key)?);
        to = Move::Next;
    }
    // ceil(n / 2), 1-based.
    Ok(ids.get(ids.len().saturating_sub(1) / 2).copied())
}

/// Payment (clause 2.5.2), in the order of the Shoal side: district, customer, warehouse,
/// history.
pub fn payment(t: &Tables, txn: &Txn<'_>, inp: &PaymentIn, h_id: i64, now: i64) -> DbResult<()> {
    let amount = inp.amount;
    let mut buf = Vec::with_capacity(1024);
    let dk = key_i32s(&[inp.w, inp.d]);
    let mut drow = t.must_read(txn, T::District, &dk, true, &mut buf)?;
    drow[col::D_YTD] = Field::Int(int(&drow, col::D_YTD)? + amount);
    t.write(txn, T::District, &dk, &drow)?;
    let cid = find_customer(t, txn, inp.c_w, inp.c_d, &inp.customer)?
        .ok_or_else(|| DbErr::invalid("tpcc payment", "no customer of that last name"))?;
    let ck = key_i32s(&[inp.c_w, inp.c_d, cid]);
    let mut crow = t.must_read(txn, T::Customer, &ck, true, &mut buf)?;
    crow[col::C_BALANCE] = Field::Int(int(&crow, col::C_BALANCE)? - amount);
    crow[col::C_YTD_PAYMENT] = Field::Int(int(&crow, col::C_YTD_PAYMENT)? + amount);
    crow[col::C_PAYMENT_CNT] = Field::Int(int(&crow, col::C_PAYMENT_CNT)? + 1);
    if text(&crow, col::C_CREDIT)? == "BC" {
        crow[col::C_DATA] = Field::Text(bc_data(cid, inp, text(&crow, col::C_DATA)?));
    }
    t.write(txn, T::Customer, &ck, &crow)?;
    let wk = key_i32s(&[inp.w]);
    let mut wrow = t.must_read(txn, T::Warehouse, &wk, true, &mut buf)?;
    wrow[col::W_YTD] = Field::Int(int(&wrow, col::W_YTD)? + amount);
    t.write(txn, T::Warehouse, &wk, &wrow)?;
    let h_data = format!(
        "{}    {}",
        text(&wrow, col::W_NAME)?,
        text(&drow, col::D_NAME)?
    );
    let i = |v: i32| Field::Int(i64::from(v));
    let hrow = vec![
        Field::Int(h_id),
        i(cid),
        i(inp.c_d),
        i(inp.c_w),
        i(inp.d),
        i(inp.w),
        Field::Int(now),
        Field::Int(amount),
        Field::Text(h_data),
    ];
    t.insert(txn, T::History, &hrow)
}

/// Order-Status (clause 2.6.2); returns the number of lines read.
pub fn order_status(t: &Tables, txn: &Txn<'_>, inp: &OrderStatusIn) -> DbResult<usize> {
    let (w, d) = (inp.w, inp.d);
    let cid = find_customer(t, txn, w, d, &inp.customer)?
        .ok_or_else(|| DbErr::invalid("tpcc order-status", "no customer of that last name"))?;
    let mut buf = Vec::with_capacity(1024);
    let crow = t.must_read(txn, T::Customer, &key_i32s(&[w, d, cid]), false, &mut buf)?;
    let _balance = int(&crow, col::C_BALANCE)?;
    let _names = (
        text(&crow, col::C_FIRST)?,
        text(&crow, 4)?,
        text(&crow, col::C_LAST)?,
    );
    let prefix = key_i32s(&[w, d, cid]);
    let o_id = {
        let mut c = t.index(ORDERS_BY_CUSTOMER).cursor(txn)?;
        let after = cid.checked_add(1).map(|next| key_i32s(&[w, d, next]));
        let placed = match &after {
            Some(a) => c.get(Move::SetRange(a), false)?.is_some(),
            None => false,
        };
        let newest = c.get(if placed { Move::Prev } else { Move::Last }, false)?;
        match newest {
            Some((k, _)) if k.starts_with(&prefix) => {
                Some(KeyReader::new(&k[prefix.len()..]).i32().map_err(bad_key)?)
            }
            _ => None,
        }
    };
    let Some(o_id) = o_id else { return Ok(0) };
    let orow = t.must_read(txn, T::Orders, &key_i32s(&[w, d, o_id]), false, &mut buf)?;
    let _entry = (int(&orow, 4)?, &orow[col::O_CARRIER_ID]);
    let mut n = 0;
    t.scan_prefix(txn, T::OrderLine, &key_i32s(&[w, d, o_id]), |_, r| {
        // OL_I_ID, OL_SUPPLY_W_ID, OL_QUANTITY, OL_AMOUNT, OL_DELIVERY_D.
        let _line = (
            int(&r, col::OL_I_ID)?,
            int(&r, 5)?,
            int(&r, 7)?,
            int(&r, col::OL_AMOUNT)?,
        );
        let _delivered = &r[col::OL_DELIVERY_D];
        n += 1;
        Ok(true)
    })?;
    Ok(n)
}

/// Delivery (clause 2.7.4) of all ten districts of `inp.w`; returns the orders delivered.
pub fn delivery(t: &Tables, txn: &Txn<'_>, inp: &DeliveryIn, now: i64) -> DbResult<u32> {
    let w = inp.w;
    let mut delivered = 0;
    let mut buf = Vec::with_capacity(1024);
    for d in 1..=10 {
        let prefix = key_i32s(&[w, d]);
        let o = {
            let mut c = t.db(T::NewOrder).cursor(txn)?;
            let oldest = match c.get(Move::SetRange(&prefix), true)? {
                Some((k, _)) if k.starts_with(&prefix) => {
                    Some(KeyReader::new(&k[prefix.len()..]).i32().map_err(bad_key)?)
                }
                _ => None,
            };
            if oldest.is_some() {
                c.del()?;
            }
            oldest
        };
        let Some(o) = o else { continue };
        let ok = key_i32s(&[w, d, o]);
        let mut orow = t.must_read(txn, T::Orders, &ok, true, &mut buf)?;
        let c = int4(&orow, col::O_C_ID)?;
        let ol_cnt = int4(&orow, col::O_OL_CNT)?;
        orow[col::O_CARRIER_ID] = Field::Int(i64::from(inp.carrier));
        t.write(txn, T::Orders, &ok, &orow)?;
        let mut sum = 0i64;
        for n in 1..=ol_cnt {
            let lk = key_i32s(&[w, d, o, n]);
            let mut l = t.must_read(txn, T::OrderLine, &lk, true, &mut buf)?;
            sum += int(&l, col::OL_AMOUNT)?;
            l[col::OL_DELIVERY_D] = Field::Int(now);
            t.write(txn, T::OrderLine, &lk, &l)?;
        }
        let ck = key_i32s(&[w, d, c]);
        let mut crow = t.must_read(txn, T::Customer, &ck, true, &mut buf)?;
        crow[col::C_BALANCE] = Field::Int(int(&crow, col::C_BALANCE)? + sum);
        crow[col::C_DELIVERY_CNT] = Field::Int(int(&crow, col::C_DELIVERY_CNT)? + 1);
        t.write(txn, T::Customer, &ck, &crow)?;
        delivered += 1;
    }
    Ok(delivered)
}

/// Stock-Level (clause 2.8.2): the number of distinct items of the district's last 20
/// orders whose stock is below the threshold.
pub fn stock_level(t: &Tables, txn: &Txn<'_>, inp: &StockLevelIn) -> DbResult<usize> {
    let (w, d) = (inp.w, inp.d);
    let mut buf = Vec::with_capacity(256);
    let drow = t.must_read(txn, T::District, &key_i32s(&[w, d]), false, &mut buf)?;
    let next = int4(&drow, col::D_NEXT_O_ID)?;
    let prefix = key_i32s(&[w, d]);
    let end = key_i32s(&[w, d, next]);
    let mut items = HashSet::new();
    {
        let mut c = t.db(T::OrderLine).cursor(txn)?;
        let start = key_i32s(&[w, d, next.saturating_sub(STOCK_LEVEL_ORDERS)]);
        let mut to = Move::SetRange(&start);
        while let Some((k, v)) = c.get(to, false)? {
            if !k.starts_with(&prefix) || k >= &end[..] {
                break;
            }
            let r = super::codec::decode_row(&crate::workload::tpcc::schema::ORDER_LINE, v)
                .map_err(|m| DbErr::invalid("decoding order_line", m))?;
            items.insert(int4(&r, col::OL_I_ID)?);
            to = Move::Next;
        }
    }
    let mut low = 0;
    for &i in &items {
        let s = t.must_read(txn, T::Stock, &key_i32s(&[w, i]), false, &mut buf)?;
        if int4(&s, col::S_QUANTITY)? < inp.threshold {
            low += 1;
        }
    }
    Ok(low)
}
