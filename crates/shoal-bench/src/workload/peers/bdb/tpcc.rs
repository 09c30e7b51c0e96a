//! TPC-C's tables on Berkeley DB: nine B-tree databases keyed by their primary keys and
//! the two index databases (module doc of [`super`]), the loader's [`Sink`], the
//! consistency [`Snapshot`] read by cursor scans, and the [`TpccPeer`] methods, which run
//! the transactions of [`super::tpcc_txns`] through [`Store::run`].

use super::codec::{self, decode_row, encode_row, push_i32, push_i64, push_str, Field};
use super::ffi::{Db, DbErr, DbResult, Move, Txn};
use super::store::{End, Store};
use super::tpcc_txns as txns;
use crate::error::{BenchError, Result};
use crate::runner::ThreadCtx;
use crate::workload::peers::{NewOrderEnd, PeerSetup, TpccPeer};
use crate::workload::tpcc::check::{CustomerSnap, DistrictSnap, LinesSnap, OrderSnap, Snapshot};
use crate::workload::tpcc::gen::NuRandConstants;
use crate::workload::tpcc::input::{
    DeliveryIn, NewOrderIn, OrderStatusIn, PaymentIn, StockLevelIn,
};
use crate::workload::tpcc::load::{self, Sink};
use crate::workload::tpcc::schema::{col, TableSpec, Ty, T, TABLES};
use crate::workload::tpcc::TpccScale;
use shoal::table::Value as V;

/// Database number of the index `customer_by_name (c_w_id, c_d_id, c_last, c_first, c_id)`.
pub const CUSTOMER_BY_NAME: usize = 9;
/// Database number of the index `orders_by_customer (o_w_id, o_d_id, o_c_id, o_id)`.
pub const ORDERS_BY_CUSTOMER: usize = 10;

/// The TPC-C tables (databases 0..9 in [`T`] order) and the two indexes.
pub struct Tables {
    pub(super) store: Store,
}

/// The message of a record that does not decode, as a [`DbErr`].
pub fn corrupt(spec: &TableSpec, msg: String) -> DbErr {
    DbErr::invalid(format!("decoding {}", spec.name), msg)
}

impl Tables {
    /// Database of table `t`.
    pub fn db(&self, t: T) -> &Db {
        &self.store.dbs()[t as usize]
    }

    /// Database `i` (an index).
    pub fn index(&self, i: usize) -> &Db {
        &self.store.dbs()[i]
    }

    /// The primary key of a row of `t`.
    pub fn pk(t: T, row: &[Field]) -> DbResult<Vec<u8>> {
        let spec = TABLES[t as usize];
        let mut k = Vec::with_capacity(16);
        for name in spec.pk {
            let i = spec
                .position(name)
                .ok_or_else(|| corrupt(spec, format!("no key column {name}")))?;
            let v = row
                .get(i)
                .ok_or_else(|| corrupt(spec, "short row".into()))?
                .int()
                .map_err(|m| corrupt(spec, m))?;
            match spec.columns[i].1 {
                Ty::I8 | Ty::Ts => push_i64(&mut k, v),
                _ => push_i32(
                    &mut k,
                    i32::try_from(v).map_err(|_| corrupt(spec, format!("{name} = {v}")))?,
                ),
            }
        }
        Ok(k)
    }

    /// Reads the row of `t` with `key` (`rmw`: write-locked); `None` if there is none.
    pub fn read(
        &self,
        txn: &Txn<'_>,
        t: T,
        key: &[u8],
        rmw: bool,
        buf: &mut Vec<u8>,
    ) -> DbResult<Option<Vec<Field>>> {
        if !self.db(t).get(txn, key, rmw, buf)? {
            return Ok(None);
        }
        let spec = TABLES[t as usize];
        decode_row(spec, buf)
            .map(Some)
            .map_err(|m| corrupt(spec, m))
    }

    /// As [`Tables::read`] for a row that must exist.
    pub fn must_read(
        &self,
        txn: &Txn<'_>,
        t: T,
        key: &[u8],
        rmw: bool,
        buf: &mut Vec<u8>,
    ) -> DbResult<Vec<Field>> {
        self.read(txn, t, key, rmw, buf)?.ok_or_else(|| {
            DbErr::invalid(
                "tpcc",
                format!("{}: the row does not exist", TABLES[t as usize].name),
            )
        })
    }

    /// Writes `row` of `t` under `key` (replacing it).
    pub fn write(&self, txn: &Txn<'_>, t: T, key: &[u8], row: &[Field]) -> DbResult<()> {
        let spec = TABLES[t as usize];
        let v = encode_row(spec, row).map_err(|m| corrupt(spec, m))?;
        self.db(t).put(txn, key, &v, false)
    }

    /// Inserts `row` into `t` and its index entries ([`DbErr::KeyExists`] if its key is
    /// taken).
    pub fn insert(&self, txn: &Txn<'_>, t: T, row: &[Field]) -> DbResult<()> {
        let spec = TABLES[t as usize];
        let k = Self::pk(t, row)?;
        let v = encode_row(spec, row).map_err(|m| corrupt(spec, m))?;
        self.db(t).put(txn, &k, &v, true)?;
        let int = |i: usize| -> DbResult<i32> {
            let v = row[i].int().map_err(|m| corrupt(spec, m))?;
            i32::try_from(v).map_err(|_| corrupt(spec, format!("column {i} = {v}")))
        };
        match t {
            T::Customer => {
                let mut ik = codec::key_i32s(&[int(0)?, int(1)?]);
                let text = |i: usize| row[i].text().map_err(|m| corrupt(spec, m));
                push_str(&mut ik, text(col::C_LAST)?.as_bytes());
                push_str(&mut ik, text(col::C_FIRST)?.as_bytes());
                push_i32(&mut ik, int(col::C_ID)?);
                self.index(CUSTOMER_BY_NAME).put(txn, &ik, &[], true)
            }
            T::Orders => {
                let ik = codec::key_i32s(&[int(0)?, int(1)?, int(col::O_C_ID)?, int(col::O_ID)?]);
                self.index(ORDERS_BY_CUSTOMER).put(txn, &ik, &[], true)
            }
            _ => Ok(()),
        }
    }

    /// Visits the rows of `t` whose keys start with `prefix`, in key order, until `f`
    /// returns `false`.
    pub fn scan_prefix(
        &self,
        txn: &Txn<'_>,
        t: T,
        prefix: &[u8],
        mut f: impl FnMut(&[u8], Vec<Field>) -> DbResult<bool>,
    ) -> DbResult<()> {
        let spec = TABLES[t as usize];
        let mut c = self.db(t).cursor(txn)?;
        let mut to = if prefix.is_empty() {
            Move::First
        } else {
            Move::SetRange(prefix)
        };
        while let Some((k, v)) = c.get(to, false)? {
            if !k.starts_with(prefix) {
                break;
            }
            let row = decode_row(spec, v).map_err(|m| corrupt(spec, m))?;
            if !f(k, row)? {
                break;
            }
            to = Move::Next;
        }
        Ok(())
    }
}

/// Loads rows into the tables, one transaction per batch.
struct BdbSink<'a> {
    tables: &'a Tables,
    txn: Option<Txn<'a>>,
}

fn field(v: V) -> std::result::Result<Field, String> {
    match v {
        V::Null => Ok(Field::Null),
        V::Int4(i) => Ok(Field::Int(i64::from(i))),
        V::Int8(i) | V::Timestamp(i) => Ok(Field::Int(i)),
        V::Str(s) => Ok(Field::Text(s)),
        other => Err(format!("a {} value in a TPC-C row", other.type_name())),
    }
}

impl Sink for BdbSink<'_> {
    fn row(&mut self, t: T, values: Vec<V>) -> Result<()> {
        let name = TABLES[t as usize].name;
        let row = values
            .into_iter()
            .map(field)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|m| BenchError::peer("bdb", format!("loading {name}"), m))?;
        if self.txn.is_none() {
            self.txn = Some(self.tables.store.begin()?);
        }
        let Some(txn) = &self.txn else {
            return Err(BenchError::peer("bdb", "loading", "no load transaction"));
        };
        self.tables
            .insert(txn, t, &row)
            .map_err(|e| e.into_bench(format!("loading {name}").as_str()))
    }

    fn commit(&mut self) -> Result<()> {
        if let Some(txn) = self.txn.take() {
            txn.commit()
                .map_err(|e| e.into_bench("committing a load batch"))?;
        }
        Ok(())
    }
}

/// TPC-C on Berkeley DB.
pub struct BdbTpcc {
    pub(super) t: Tables,
}

impl BdbTpcc {
    /// Creates the tables and indexes and loads the population.
    ///
    /// # Errors
    /// [`BenchError::Peer`] (or the directory's errors) if Berkeley DB fails.
    pub fn create(
        setup: &PeerSetup<'_>,
        warehouses: u32,
        scale: &TpccScale,
        k: &NuRandConstants,
        seed: u64,
        progress: &mut dyn FnMut(u64),
    ) -> Result<BdbTpcc> {
        let mut names: Vec<String> = TABLES.iter().map(|s| s.name.to_string()).collect();
        names.push("customer_by_name".into());
        names.push("orders_by_customer".into());
        let t = Tables {
            store: Store::open(setup, &names)?,
        };
        {
            let mut sink = BdbSink {
                tables: &t,
                txn: None,
            };
            load::load(&mut sink, scale, warehouses, k, seed, progress)?;
            sink.commit()?;
        }
        Ok(BdbTpcc { t })
    }

    fn snapshot_in(&self, txn: &Txn<'_>) -> DbResult<Snapshot> {
        let t = &self.t;
        let mut s = Snapshot::default();
        let i4 = |r: &[Field], i: usize| -> DbResult<i32> {
            let v = r[i].int().map_err(|m| DbErr::invalid("snapshot", m))?;
            i32::try_from(v).map_err(|_| DbErr::invalid("snapshot", format!("{v} is not INT4")))
        };
        let i8 = |r: &[Field], i: usize| r[i].int().map_err(|m| DbErr::invalid("snapshot", m));
        t.scan_prefix(txn, T::Warehouse, &[], |_, r| {
            s.w_ytd.insert(i4(&r, 0)?, i8(&r, col::W_YTD)?);
            Ok(true)
        })?;
        t.scan_prefix(txn, T::District, &[], |_, r| {
            let ds = DistrictSnap {
                ytd: i8(&r, col::D_YTD)?,
                next_o_id: i4(&r, col::D_NEXT_O_ID)?,
            };
            s.districts.insert((i4(&r, 0)?, i4(&r, 1)?), ds);
            Ok(true)
        })?;
        t.scan_prefix(txn, T::History, &[], |_, r| {
            let a = i8(&r, col::H_AMOUNT)?;
            let (c, cd, cw, d, w) = (i4(&r, 1)?, i4(&r, 2)?, i4(&r, 3)?, i4(&r, 4)?, i4(&r, 5)?);
            *s.hist_district.entry((w, d)).or_insert(0) += a;
            *s.hist_customer.entry((cw, cd, c)).or_insert(0) += a;
            Ok(true)
        })?;
        t.scan_prefix(txn, T::Customer, &[], |_, r| {
            let cs = CustomerSnap {
                balance: i8(&r, col::C_BALANCE)?,
                ytd_payment: i8(&r, col::C_YTD_PAYMENT)?,
                delivery_cnt: i8(&r, col::C_DELIVERY_CNT)?,
            };
            s.customers.insert((i4(&r, 0)?, i4(&r, 1)?, i4(&r, 2)?), cs);
            Ok(true)
        })?;
        t.scan_prefix(txn, T::NewOrder, &[], |_, r| {
            s.new_orders
                .entry((i4(&r, 0)?, i4(&r, 1)?))
                .or_default()
                .push(i4(&r, col::NO_O_ID)?);
            Ok(true)
        })?;
        t.scan_prefix(txn, T::Orders, &[], |_, r| {
            let os = OrderSnap {
                c_id: i4(&r, col::O_C_ID)?,
                carrier_null: r[col::O_CARRIER_ID] == Field::Null,
                ol_cnt: i4(&r, col::O_OL_CNT)?,
            };
            s.orders.insert((i4(&r, 0)?, i4(&r, 1)?, i4(&r, 2)?), os);
            Ok(true)
        })?;
        t.scan_prefix(txn, T::OrderLine, &[], |_, r| {
            let e: &mut LinesSnap = s
                .lines
                .entry((i4(&r, 0)?, i4(&r, 1)?, i4(&r, col::OL_O_ID)?))
                .or_default();
            e.count += 1;
            if r[col::OL_DELIVERY_D] == Field::Null {
                e.undelivered += 1;
            } else {
                e.delivered_amount += i8(&r, col::OL_AMOUNT)?;
            }
            Ok(true)
        })?;
        Ok(s)
    }
}

impl TpccPeer for BdbTpcc {
    fn new_order(
        &self,
        _: usize,
        ctx: &mut ThreadCtx,
        inp: &NewOrderIn,
        now: i64,
    ) -> Result<Option<NewOrderEnd>> {
        self.t.store.run(ctx, "tpcc new-order", |txn| {
            Ok(match txns::new_order(&self.t, txn, inp, now)? {
                Ok(()) => End::Commit(NewOrderEnd::Committed),
                Err(txns::UnusedItem) => End::Rollback(NewOrderEnd::UnusedItem),
            })
        })
    }

    fn payment(
        &self,
        _: usize,
        ctx: &mut ThreadCtx,
        inp: &PaymentIn,
        h_id: i64,
        now: i64,
    ) -> Result<bool> {
        let r = self.t.store.run(ctx, "tpcc payment", |txn| {
            txns::payment(&self.t, txn, inp, h_id, now).map(End::Commit)
        })?;
        Ok(r.is_some())
    }

    fn order_status(&self, _: usize, ctx: &mut ThreadCtx, inp: &OrderStatusIn) -> Result<bool> {
        let r = self.t.store.run(ctx, "tpcc order-status", |txn| {
            txns::order_status(&self.t, txn, inp).map(End::Commit)
        })?;
        Ok(r.is_some())
    }

    fn delivery(&self, _: usize, ctx: &mut ThreadCtx, inp: &DeliveryIn, now: i64) -> Result<bool> {
        let r = self.t.store.run(ctx, "tpcc delivery", |txn| {
            txns::delivery(&self.t, txn, inp, now).map(End::Commit)
        })?;
        Ok(r.is_some())
    }

    fn stock_level(&self, _: usize, ctx: &mut ThreadCtx, inp: &StockLevelIn) -> Result<bool> {
        let r = self.t.store.run(ctx, "tpcc stock-level", |txn| {
            txns::stock_level(&self.t, txn, inp).map(End::Commit)
        })?;
        Ok(r.is_some())
    }

    fn snapshot(&self) -> Result<Snapshot> {
        let txn = self.t.store.begin()?;
        let s = self
            .snapshot_in(&txn)
            .map_err(|e| e.into_bench("reading the consistency snapshot"))?;
        txn.commit()
            .map_err(|e| e.into_bench("committing the snapshot"))?;
        Ok(s)
    }
}
