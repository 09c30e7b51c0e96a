//! The five transactions on Shoal, at READ COMMITTED: every row a transaction writes is
//! read under an X lock (`Table::update_with_view`, or `delete`, which locks first), so no update
//! is lost; the reads of rows it does not write take S locks only for the read.
//!
//! Delivery at READ COMMITTED: the oldest NEW-ORDER row of a district is found by a
//! one-row scan and deleted (X lock). If another Delivery deleted it first, the delete finds
//! nothing and the scan is repeated. While another Delivery's delete of the oldest row is
//! uncommitted, the scan waits at the next row (that delete's next-key lock) and, if the
//! delete rolls back, returns the restored row (the engine's locking scan reads again after
//! a wait; test `read_committed_scan_does_not_skip_a_row_whose_delete_rolls_back` in
//! `crates/shoal/tests/database.rs`). As a guard, after its delete the transaction checks
//! that no older NEW-ORDER row of the district exists; if one did, it would roll back and be
//! counted as an abort with cause `delivery-race` — a report showing that cause points at
//! an engine bug, not at the driver.

use super::input::{
    bc_data, Customer, DeliveryIn, NewOrderIn, OrderStatusIn, PaymentIn, StockLevelIn,
    STOCK_LEVEL_ORDERS,
};
use super::load::Sink;
use super::schema::{col, T, TABLES};
use crate::error::Result;
use shoal::btree::ScanDirection;
use shoal::table::{Row, RowView, Table, Value as V};
use shoal::txn::Transaction;
use shoal::{Database, IsolationLevel};
use std::collections::HashSet;
use std::ops::Bound;

/// The nine tables, in [`T`] order.
pub struct ShoalTables {
    /// The tables.
    pub t: Vec<Table>,
}

impl ShoalTables {
    /// Creates the nine tables in `db`.
    ///
    /// # Errors
    /// Shoal's errors.
    pub fn create(db: &Database) -> Result<ShoalTables> {
        let mut tx = db.begin(IsolationLevel::ReadCommitted);
        let mut t = Vec::new();
        for spec in TABLES {
            t.push(db.create_table(&mut tx, spec.shoal_def()?)?);
        }
        tx.commit()?;
        Ok(ShoalTables { t })
    }

    /// Table `t`.
    pub fn get(&self, t: T) -> &Table {
        &self.t[t as usize]
    }
}

/// Loads rows into Shoal, one transaction per batch.
pub struct ShoalSink<'a> {
    /// The tables.
    pub tables: &'a ShoalTables,
    /// The open load transaction.
    pub tx: Option<Transaction<'a>>,
    /// The database.
    pub db: &'a Database,
}

impl Sink for ShoalSink<'_> {
    fn row(&mut self, t: T, values: Vec<V>) -> Result<()> {
        let db = self.db;
        let tx = self
            .tx
            .get_or_insert_with(|| db.begin(IsolationLevel::ReadCommitted));
        self.tables.get(t).insert(tx, &Row::from_values(values))?;
        Ok(())
    }

    fn commit(&mut self) -> Result<()> {
        if let Some(tx) = self.tx.take() {
            tx.commit()?;
        }
        Ok(())
    }
}

/// Why a transaction asks to be rolled back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rollback {
    /// New-Order's unused item (clause 2.4.2.3): part of the workload.
    UnusedItem,
    /// Delivery found an older NEW-ORDER row after its delete (module doc).
    DeliveryRace,
}

type Outcome = shoal::Result<std::result::Result<(), Rollback>>;

fn missing(what: &str) -> shoal::Error {
    shoal::Error::invalid("tpcc", format!("{what} does not exist"))
}

fn i4(w: i32) -> V {
    V::Int4(w)
}

/// Integer column `i` of a row read in place.
fn int(v: &RowView<'_>, i: usize) -> shoal::Result<i64> {
    match v.value(i)? {
        V::Int4(x) => Ok(i64::from(x)),
        V::Int8(x) | V::Timestamp(x) => Ok(x),
        other => Err(shoal::Error::invalid(
            "tpcc",
            format!("column {i} holds a {}, not an integer", other.type_name()),
        )),
    }
}

/// Text column `i` of a row read in place, as its value (a CHAR padded to its length).
fn string(v: &RowView<'_>, i: usize) -> shoal::Result<String> {
    v.get(i)
}

/// `update_columns_with_view` of the row with primary key `key` (the changes by column
/// position, `col::*`), or an error naming `what` if there is none.
fn update<C: AsRef<[(usize, V)]>>(
    t: &Table,
    tx: &mut Transaction<'_>,
    key: &[V],
    what: &str,
    change: impl FnOnce(&RowView<'_>) -> shoal::Result<C>,
) -> shoal::Result<()> {
    if t.update_columns_with_view(tx, key, change)? {
        Ok(())
    } else {
        Err(missing(what))
    }
}

/// The stored bytes of text column `i` (empty for NULL).
fn text<'a>(v: &RowView<'a>, i: usize) -> shoal::Result<&'a [u8]> {
    Ok(v.raw(i)?.unwrap_or_default())
}

/// Whether `data` holds "ORIGINAL" (I_DATA, S_DATA: the brand-generic flag).
fn original(data: &[u8]) -> bool {
    data.windows(8).any(|w| w == b"ORIGINAL")
}

/// New-Order (clause 2.4.2).
pub fn new_order(t: &ShoalTables, tx: &mut Transaction<'_>, inp: &NewOrderIn, now: i64) -> Outcome {
    let (w, d, c) = (inp.w, inp.d, inp.c);
    let w_tax = t
        .get(T::Warehouse)
        .get_with(tx, &[i4(w)], |v| int(v, col::W_TAX))?
        .ok_or_else(|| missing("warehouse"))?;
    let mut o_id = 0;
    let mut d_tax = 0;
    update(t.get(T::District), tx, &[i4(w), i4(d)], "district", |r| {
        o_id = int(r, col::D_NEXT_O_ID)? as i32;
        d_tax = int(r, col::D_TAX)? as i32;
        Ok([(col::D_NEXT_O_ID, V::from(o_id + 1))])
    })?;
    let (c_discount, bc) = t
        .get(T::Customer)
        .get_with(tx, &[i4(w), i4(d), i4(c)], |v| {
            v.value(col::C_LAST)?;
            Ok((int(v, col::C_DISCOUNT)?, text(v, col::C_CREDIT)? == b"BC"))
        })?
        .ok_or_else(|| missing("customer"))?;
    t.get(T::Orders).insert(
        tx,
        &Row::from_values(vec![
            i4(w),
            i4(d),
            i4(o_id),
            i4(c),
            V::Timestamp(now),
            V::Null,
            i4(inp.lines.len() as i32),
            i4(i32::from(inp.all_local)),
        ]),
    )?;
    t.get(T::NewOrder)
        .insert(tx, &Row::from_values(vec![i4(w), i4(d), i4(o_id)]))?;
    // The items are read together, their cache misses overlapped (`get_many_with`); each
    // line still meets its item's absence where the spec puts it, after the lines before.
    let item_keys: Vec<[V; 1]> = inp.lines.iter().map(|l| [i4(l.i_id)]).collect();
    let item_refs: Vec<&[V]> = item_keys.iter().map(|k| &k[..]).collect();
    let items = t.get(T::Item).get_many_with(tx, &item_refs, |v| {
        v.value(col::I_NAME)?;
        Ok((int(v, col::I_PRICE)?, original(text(v, col::I_DATA)?)))
    })?;
    // The lines before the first unused item (all of them but in the 1 % of orders that
    // roll back): their stock rows are updated together, their misses overlapped
    // (`update_many_with_view`), then their order lines inserted — the spec's work per line,
    // grouped by table.
    let priced: Vec<(i64, bool)> = items.iter().map_while(|item| *item).collect();
    let valid = priced.len();
    let lines = &inp.lines[..valid];
    let stock_keys: Vec<[V; 2]> = lines.iter().map(|l| [i4(l.supply_w), i4(l.i_id)]).collect();
    let stock_refs: Vec<&[V]> = stock_keys.iter().map(|k| &k[..]).collect();
    let mut dist_info = vec![String::new(); valid];
    let mut s_original = vec![false; valid];
    let found = t
        .get(T::Stock)
        .update_many_columns_with_view(tx, &stock_refs, |n, s| {
            let line = &lines[n];
            let q = int(s, col::S_QUANTITY)? as i32;
            let new_q = if q >= line.qty + 10 {
                q - line.qty
            } else {
                q - line.qty + 91
            };
            dist_info[n] = string(s, col::S_DIST_01 + d as usize - 1)?;
            s_original[n] = original(text(s, col::S_DATA)?);
            Ok([
                (col::S_QUANTITY, V::from(new_q)),
                (
                    col::S_YTD,
                    V::from(int(s, col::S_YTD)? + i64::from(line.qty)),
                ),
                (
                    col::S_ORDER_CNT,
                    V::from(int(s, col::S_ORDER_CNT)? as i32 + 1),
                ),
                (
                    col::S_REMOTE_CNT,
                    V::from(int(s, col::S_REMOTE_CNT)? as i32 + i32::from(line.supply_w != w)),
                ),
            ])
        })?;
    if found.contains(&false) {
        return Err(missing("stock"));
    }
    let mut total = 0i64;
    for (n, ((line, dist_info), &(price, i_original))) in
        lines.iter().zip(dist_info).zip(&priced).enumerate()
    {
        // The brand-generic flag is shown to the terminal only.
        let _brand = i_original && s_original[n];
        let amount = price * i64::from(line.qty);
        total += amount;
        t.get(T::OrderLine).insert(
            tx,
            &Row::from_values(vec![
                i4(w),
                i4(d),
                i4(o_id),
                i4(n as i32 + 1),
                i4(line.i_id),
                i4(line.supply_w),
                V::Null,
                i4(line.qty),
                V::Int8(amount),
                V::Str(dist_info),
            ]),
        )?;
    }
    if valid < items.len() {
        return Ok(Err(Rollback::UnusedItem));
    }
    // The total the terminal would show (clause 2.4.2.2).
    let _total = total * (10_000 - c_discount) * (10_000 + w_tax + i64::from(d_tax)) / 100_000_000;
    let _ = bc;
    Ok(Ok(()))
}

/// The customer `sel` of district `(w, d)`: by id, or the middle one by first name of
/// those with the last name. Returns its C_ID, or `None` if there is none.
fn find_customer(
    t: &ShoalTables,
    tx: &mut Transaction<'_>,
    w: i32,
    d: i32,
    sel: &Customer,
) -> shoal::Result<Option<i32>> {
    match sel {
        Customer::Id(c) => Ok(Some(*c)),
        Customer::Last(last) => {
            // From the index alone, as SQLite's `SELECT c_id ... ORDER BY c_first` runs:
            // its entries are in first-name order and hold the primary key.
            let keys = t.get(T::Customer).scan_index_keys(
                tx,
                "customer_by_name",
                &[i4(w), i4(d), V::Str(last.clone())],
                ScanDirection::Forward,
                usize::MAX,
            )?;
            if keys.is_empty() {
                return Ok(None);
            }
            // ceil(n / 2), 1-based; the primary key is (c_w_id, c_d_id, c_id).
            match keys[(keys.len() - 1) / 2].as_slice() {
                [_, _, V::Int4(c)] => Ok(Some(*c)),
                other => Err(shoal::Error::invalid(
                    "customer key",
                    format!("expected (w, d, c_id), got {other:?}"),
                )),
            }
        }
    }
}

/// Payment (clause 2.5.2); `h_id` is the new HISTORY row's key. The warehouse, every
/// Payment's hot spot at few warehouses, is updated after the district and the customer,
/// so its X lock is held only for the end of the transaction (the order of the updates
/// does not change their result; SQLite runs them in the same order).
pub fn payment(
    t: &ShoalTables,
    tx: &mut Transaction<'_>,
    inp: &PaymentIn,
    h_id: i64,
    now: i64,
) -> Outcome {
    let amount = inp.amount;
    let mut d_name = String::new();
    update(
        t.get(T::District),
        tx,
        &[i4(inp.w), i4(inp.d)],
        "district",
        |r| {
            d_name = string(r, col::D_NAME)?;
            Ok([(col::D_YTD, V::from(int(r, col::D_YTD)? + amount))])
        },
    )?;
    let c = match &inp.customer {
        Customer::Id(c) => *c,
        sel => find_customer(t, tx, inp.c_w, inp.c_d, sel)?
            .ok_or_else(|| missing("customer of that last name"))?,
    };
    let c_key = [i4(inp.c_w), i4(inp.c_d), i4(c)];
    update(t.get(T::Customer), tx, &c_key, "customer", |r| {
        let mut ch = vec![
            (col::C_BALANCE, V::from(int(r, col::C_BALANCE)? - amount)),
            (
                col::C_YTD_PAYMENT,
                V::from(int(r, col::C_YTD_PAYMENT)? + amount),
            ),
            (
                col::C_PAYMENT_CNT,
                V::from(int(r, col::C_PAYMENT_CNT)? as i32 + 1),
            ),
        ];
        // Bad credit: C_DATA (variable-width) changes too, so the row is re-encoded whole.
        if text(r, col::C_CREDIT)? == b"BC" {
            ch.push((
                col::C_DATA,
                V::from(bc_data(c, inp, &string(r, col::C_DATA)?)),
            ));
        }
        Ok(ch)
    })?;
    let mut w_name = String::new();
    update(t.get(T::Warehouse), tx, &[i4(inp.w)], "warehouse", |r| {
        w_name = string(r, col::W_NAME)?;
        Ok([(col::W_YTD, V::from(int(r, col::W_YTD)? + amount))])
    })?;
    let h_data = format!("{w_name}    {d_name}");
    t.get(T::History).insert(
        tx,
        &Row::from_values(vec![
            V::Int8(h_id),
            i4(c),
            i4(inp.c_d),
            i4(inp.c_w),
            i4(inp.d),
            i4(inp.w),
            V::Timestamp(now),
            V::Int8(amount),
            V::Str(h_data),
        ]),
    )?;
    Ok(Ok(()))
}

/// Order-Status (clause 2.6.2): the customer, its newest order and that order's lines.
/// Returns the number of lines read.
pub fn order_status(
    t: &ShoalTables,
    tx: &mut Transaction<'_>,
    inp: &OrderStatusIn,
) -> shoal::Result<usize> {
    let c =
        find_customer(t, tx, inp.w, inp.d, &inp.customer)?.ok_or_else(|| missing("customer"))?;
    // The columns the spec's Order-Status shows (as the SQLite side selects them).
    let _customer = t
        .get(T::Customer)
        .get_with(tx, &[i4(inp.w), i4(inp.d), i4(c)], |v| {
            Ok((
                int(v, col::C_BALANCE)?,
                v.value(col::C_FIRST)?,
                v.value(col::C_MIDDLE)?,
                v.value(col::C_LAST)?,
            ))
        })?
        .ok_or_else(|| missing("customer"))?;
    let orders = t.get(T::Orders).scan_index_first(
        tx,
        "orders_by_customer",
        &[i4(inp.w), i4(inp.d), i4(c)],
        ScanDirection::Backward,
        1,
    )?;
    let Some(o) = orders.first() else {
        return Ok(0);
    };
    let o_id: i32 = o.get_at(col::O_ID)?;
    let key = [i4(inp.w), i4(inp.d), i4(o_id)];
    t.get(T::OrderLine).scan_first_with(
        tx,
        Bound::Included(&key),
        Bound::Included(&key),
        ScanDirection::Forward,
        usize::MAX,
        |v| {
            // OL_I_ID, OL_SUPPLY_W_ID, OL_QUANTITY, OL_AMOUNT, OL_DELIVERY_D.
            for i in [col::OL_I_ID, 5, 7, col::OL_AMOUNT, col::OL_DELIVERY_D] {
                v.value(i)?;
            }
            Ok(())
        },
    )
}

/// Delivery (clause 2.7.4) of all ten districts of `inp.w`. Returns the orders delivered.
pub fn delivery(
    t: &ShoalTables,
    tx: &mut Transaction<'_>,
    inp: &DeliveryIn,
    now: i64,
) -> shoal::Result<std::result::Result<u32, Rollback>> {
    let w = inp.w;
    let mut delivered = 0;
    for d in 1..=10 {
        let dk = [i4(w), i4(d)];
        let mut o_id = None;
        // Retry while another Delivery takes the oldest row first.
        for _ in 0..16 {
            let mut first = None;
            t.get(T::NewOrder).scan_first_with(
                tx,
                Bound::Included(&dk),
                Bound::Included(&dk),
                ScanDirection::Forward,
                1,
                |v| {
                    first = Some(int(v, col::NO_O_ID)? as i32);
                    Ok(())
                },
            )?;
            let Some(o) = first else { break };
            if t.get(T::NewOrder)
                .delete(tx, &[i4(w), i4(d), i4(o)])?
                .is_some()
            {
                o_id = Some(o);
                break;
            }
        }
        let Some(o) = o_id else { continue };
        let older = t.get(T::NewOrder).scan_first_with(
            tx,
            Bound::Included(&dk),
            Bound::Excluded(&[i4(w), i4(d), i4(o)]),
            ScanDirection::Forward,
            1,
            |_| Ok(()),
        )?;
        if older > 0 {
            return Ok(Err(Rollback::DeliveryRace));
        }
        let ok = [i4(w), i4(d), i4(o)];
        let (mut c, mut ol_cnt) = (0, 0);
        update(t.get(T::Orders), tx, &ok, "order of a NEW-ORDER row", |r| {
            c = int(r, col::O_C_ID)? as i32;
            ol_cnt = int(r, col::O_OL_CNT)? as i32;
            Ok([(col::O_CARRIER_ID, V::from(inp.carrier))])
        })?;
        let mut sum = 0i64;
        for n in 1..=ol_cnt {
            let line = [i4(w), i4(d), i4(o), i4(n)];
            update(t.get(T::OrderLine), tx, &line, "order line", |r| {
                sum += int(r, col::OL_AMOUNT)?;
                Ok([(col::OL_DELIVERY_D, V::Timestamp(now))])
            })?;
        }
        update(
            t.get(T::Customer),
            tx,
            &[i4(w), i4(d), i4(c)],
            "customer of an order",
            |r| {
                Ok([
                    (col::C_BALANCE, V::from(int(r, col::C_BALANCE)? + sum)),
                    (
                        col::C_DELIVERY_CNT,
                        V::from(int(r, col::C_DELIVERY_CNT)? as i32 + 1),
                    ),
                ])
            },
        )?;
        delivered += 1;
    }
    Ok(Ok(delivered))
}

/// Stock-Level (clause 2.8.2): the number of distinct items of the district's last 20
/// orders whose stock is below the threshold.
pub fn stock_level(
    t: &ShoalTables,
    tx: &mut Transaction<'_>,
    inp: &StockLevelIn,
    items: &mut HashSet<i32>,
) -> shoal::Result<usize> {
    let (w, d) = (inp.w, inp.d);
    let next = t
        .get(T::District)
        .get_with(tx, &[i4(w), i4(d)], |v| int(v, col::D_NEXT_O_ID))?
        .ok_or_else(|| missing("district"))? as i32;
    items.clear();
    t.get(T::OrderLine).scan_first_with(
        tx,
        Bound::Included(&[i4(w), i4(d), i4(next - STOCK_LEVEL_ORDERS)]),
        Bound::Excluded(&[i4(w), i4(d), i4(next)]),
        ScanDirection::Forward,
        usize::MAX,
        |v| {
            items.insert(int(v, col::OL_I_ID)? as i32);
            Ok(())
        },
    )?;
    // The distinct items' stock rows, read together in key order (`get_many_with`).
    let mut ids: Vec<i32> = items.iter().copied().collect();
    ids.sort_unstable();
    let keys: Vec<[V; 2]> = ids.iter().map(|&i| [i4(w), i4(i)]).collect();
    let refs: Vec<&[V]> = keys.iter().map(|k| &k[..]).collect();
    let mut low = 0;
    for q in t
        .get(T::Stock)
        .get_many_with(tx, &refs, |v| int(v, col::S_QUANTITY))?
    {
        if q.ok_or_else(|| missing("stock"))? < i64::from(inp.threshold) {
            low += 1;
        }
    }
    Ok(low)
}
