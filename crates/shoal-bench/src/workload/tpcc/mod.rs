//! # `tpcc`: TPC-C (revision 5.11) on Shoal and SQLite
//!
//! Job: run TPC-C's five transactions on its nine tables, with the spec's population and
//! input rules, the same logical work on each engine, and check the spec's consistency
//! conditions after every point (DESIGN.md §4).
//!
//! ## Schema ([`schema`]; per warehouse at full scale)
//!
//! | table | rows | primary key | secondary index |
//! |---|---|---|---|
//! | `warehouse` | 1 | `w_id` | |
//! | `district` | 10 | `d_w_id, d_id` | |
//! | `customer` | 30,000 | `c_w_id, c_d_id, c_id` | `customer_by_name (c_w_id, c_d_id, c_last, c_first)` |
//! | `history` | 30,000, grows | `h_id` (surrogate) | |
//! | `new_order` | 9,000 | `no_w_id, no_d_id, no_o_id` | |
//! | `orders` | 30,000, grows | `o_w_id, o_d_id, o_id` | `orders_by_customer (o_w_id, o_d_id, o_c_id, o_id)` |
//! | `order_line` | ~300,000, grows | `ol_w_id, ol_d_id, ol_o_id, ol_number` | |
//! | `item` | 100,000 (in all) | `i_id` | |
//! | `stock` | 100,000 | `s_w_id, s_i_id` | |
//!
//! Columns and lengths are the spec's (clause 1.3); money is INT8 cents and the tax and
//! discount rates INT4 ten-thousandths (exact integers on both engines). The population is
//! clause 4.3.3.1's ([`load`]); [`TpccScale::tiny`] keeps its rules with fewer items,
//! customers and orders, for tests.
//!
//! ## Transactions ([`input`], [`shoal_txns`], [`sqlite_txns`])
//! - **New-Order** (2.4): warehouse tax; district D_NEXT_O_ID incremented; customer
//!   discount and credit; ORDER and NEW-ORDER rows; per line (5..=15, NURand items, 1%
//!   supplied remotely when there are several warehouses) the item, the stock row updated
//!   and an ORDER-LINE row. 1% end with an unused item and roll back (counted as done).
//! - **Payment** (2.5): D_YTD, the customer (60% by last name, 15% in a remote
//!   warehouse) paid, C_DATA prefixed for bad credit, W_YTD (last: the warehouse row is
//!   the hot spot, its lock is best held shortest), a HISTORY row.
//! - **Order-Status** (2.6, read-only): the customer (60% by last name), its newest order
//!   (backward scan of `orders_by_customer`, one row) and that order's lines.
//! - **Delivery** (2.7): for each of the 10 districts the oldest NEW-ORDER row is deleted,
//!   its order gets a carrier, its lines a delivery date and its customer the amount.
//! - **Stock-Level** (2.8, read-only): distinct items of the district's last 20 orders
//!   whose stock is below a threshold of 10..=20.
//!
//! Variants: `standard` (45% New-Order, 43% Payment, 4% each of the others, drawn per
//! transaction), `payment` and `new-order` (only that transaction). Shoal runs at READ
//! COMMITTED with an X lock on every row it writes before reading it (`update_with`,
//! `delete`); SQLite with `BEGIN IMMEDIATE` for the three writers. The counts per
//! transaction type are reported as `mix_<type>` (share of the point's transactions).
//!
//! ## Consistency ([`check`]; clause 3.3.2, after every point)
//!
//! | # | condition |
//! |---|---|
//! | 1 | W_YTD = sum(D_YTD) of the warehouse's districts |
//! | 2 | D_NEXT_O_ID − 1 = max(O_ID) = max(NO_O_ID) of the district |
//! | 3 | max(NO_O_ID) − min(NO_O_ID) + 1 = count(NEW-ORDER) of the district |
//! | 4 | sum(O_OL_CNT) = count(ORDER-LINE) of the district |
//! | 5 | O_CARRIER_ID is NULL iff the order has a NEW-ORDER row |
//! | 6 | O_OL_CNT = the order's ORDER-LINE rows |
//! | 7 | OL_DELIVERY_D is NULL iff the order's O_CARRIER_ID is |
//! | 8 | W_YTD = sum(H_AMOUNT) of the warehouse |
//! | 9 | D_YTD = sum(H_AMOUNT) of the district |
//! | 10 | C_BALANCE = sum(OL_AMOUNT of its delivered lines) − sum(H_AMOUNT of its payments) |
//! | 11 | count(ORDER) − count(NEW-ORDER) = the district's orders delivered at load (2,100) + sum(C_DELIVERY_CNT) of its customers |
//! | 12 | C_BALANCE + C_YTD_PAYMENT = sum(OL_AMOUNT of its delivered lines) |
//!
//! Condition 11 is stated by the spec for the initial database, where sum(C_DELIVERY_CNT)
//! is 0; adding the deliveries since makes it hold after a run too.

//! ## What differs from the spec
//! - A closed-loop throughput test: no terminals, no keying or think time, no response-
//!   time constraints and no tpmC; each worker runs transactions back to back, and the
//!   home warehouse and district are drawn per transaction (uniformly), not fixed per
//!   terminal. Delivery runs in the worker, not deferred.
//! - Order lines are processed sorted by (supply warehouse, item) so that New-Orders lock
//!   STOCK rows in one order; HISTORY has a surrogate key.
//! - The transactions' outputs (totals, names, addresses) are read but not displayed.
//! - At a smaller [`TpccScale`] NURand ranges shrink to the data (e.g. C_ID in
//!   1..=customers) and the year-to-date totals with it.

pub mod check;
pub mod gen;
pub mod input;
pub mod load;
pub mod schema;
pub mod shoal_txns;
pub mod sql_snapshot;
pub mod sqlite_txns;

use super::peers::{self, NewOrderEnd, TpccPeer};
use super::progress::LoadProgress;
use super::shoal_side::{self, ShoalDb};
use super::sqlite_side::SqliteDb;
use super::{consistency_field, EngineKind, WorkloadOptions};
use crate::error::{BenchError, Result};
use crate::runner::{MicroBench, RunConfig, ThreadCtx};
use check::Snapshot;
use crossbeam_utils::CachePadded;
use gen::NuRandConstants;
use input::{DeliveryIn, Env, Kind, Mix, NewOrderIn, OrderStatusIn, PaymentIn, StockLevelIn};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use schema::T;
use serde_json::{Map, Value};
use shoal::IsolationLevel;
use shoal_txns::{Rollback, ShoalSink, ShoalTables};
use sqlite_txns::SqliteSink;
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

/// The sizes of the population (clause 4.3.3.1 at [`TpccScale::full`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TpccScale {
    /// ITEM rows, and STOCK rows per warehouse.
    pub items: u32,
    /// CUSTOMERs per district.
    pub customers: u32,
    /// ORDERs per district at load (equal to `customers`: one per customer).
    pub orders: u32,
    /// Of those, the last `new_orders` are undelivered (have NEW-ORDER rows).
    pub new_orders: u32,
}

impl TpccScale {
    /// The spec's: 100,000 items; 3,000 customers and orders per district, 900 new.
    pub fn full() -> TpccScale {
        TpccScale {
            items: 100_000,
            customers: 3_000,
            orders: 3_000,
            new_orders: 900,
        }
    }

    /// For tests: 1,000 items; 60 customers and orders per district, 18 new.
    pub fn tiny() -> TpccScale {
        TpccScale {
            items: 1_000,
            customers: 60,
            orders: 60,
            new_orders: 18,
        }
    }

    /// Checks the sizes.
    ///
    /// # Errors
    /// [`BenchError::InvalidArgument`] unless `items >= 1`, `customers >= 1`, `orders ==
    /// customers`, `new_orders <= orders` and every count fits an INT4 key.
    pub fn validate(&self) -> Result<()> {
        let bad = |why: &str| {
            Err(BenchError::invalid(
                "tpcc scale",
                format!("{self:?}: {why}"),
            ))
        };
        if self.items == 0 || self.customers == 0 {
            return bad("needs at least one item and one customer");
        }
        if self.orders != self.customers {
            return bad("orders must equal customers (one order per customer)");
        }
        if self.new_orders > self.orders {
            return bad("more new orders than orders");
        }
        if self.items >= i32::MAX as u32 || self.orders >= (i32::MAX as u32) / 2 {
            return bad("too large for INT4 keys");
        }
        Ok(())
    }

    /// Estimated bytes of one warehouse's data (for the pool size).
    fn bytes_per_warehouse(&self) -> u64 {
        let d =
            10 * (u64::from(self.customers) * (700 + 80) + u64::from(self.orders) * (60 + 10 * 80));
        d + u64::from(self.items) * (330 + 90)
    }
}

/// Most warehouses a run may have.
pub const MAX_WAREHOUSES: u32 = 1_000;

/// The `tpcc` workload on one engine.
pub struct Tpcc {
    /// Engine and settings.
    pub opts: WorkloadOptions,
    /// Warehouses (at least 1).
    pub warehouses: u32,
    /// Sizes.
    pub scale: TpccScale,
}

/// An engine with its tables.
pub enum Engine {
    /// Shoal.
    Shoal {
        /// The database.
        db: ShoalDb,
        /// Its tables.
        t: Box<ShoalTables>,
    },
    /// SQLite.
    Sqlite {
        /// The database and its connections.
        db: SqliteDb,
    },
    /// An in-process peer ([`super::peers`]) with the tables.
    Peer {
        /// The peer's connections.
        db: Box<dyn TpccPeer>,
    },
}

/// What a `tpcc` setup built.
pub struct TpccState {
    /// The engine.
    pub engine: Engine,
    /// Warehouses, scale and NURand constants.
    pub env: Env,
    /// The variant's mix.
    pub mix: Mix,
    /// Transactions done per [`Kind`] (cumulative).
    done: [CachePadded<AtomicU64>; 5],
    /// New-Orders rolled back for their unused item.
    rollbacks: CachePadded<AtomicU64>,
    /// Next HISTORY key of each worker.
    seq: Vec<CachePadded<AtomicU64>>,
}

impl Tpcc {
    fn warehouses(&self) -> u32 {
        self.warehouses.max(1)
    }

    /// The pool (page cache) size in bytes for this run.
    pub fn pool_bytes(&self) -> u64 {
        let w = u64::from(self.warehouses());
        // The data plus the growth of a few minutes' run.
        self.opts
            .pool_bytes(w * self.scale.bytes_per_warehouse() + 200 * (1 << 20))
    }

    fn setup_engine(&self, workers: usize, k: &NuRandConstants, seed: u64) -> Result<Engine> {
        let (w, scale) = (self.warehouses(), &self.scale);
        let total = load::total_rows(scale, w);
        let label = format!("tpcc {}: loading {w} warehouse(s)", self.opts.engine.name());
        let mut progress = LoadProgress::new(label, total, !self.opts.progress);
        let engine = match self.opts.engine {
            EngineKind::Shoal => {
                let db = ShoalDb::create(&self.opts, self.pool_bytes())?;
                let t = Box::new(ShoalTables::create(db.db())?);
                let mut sink = ShoalSink {
                    tables: &t,
                    tx: None,
                    db: db.db(),
                };
                load::load(&mut sink, scale, w, k, seed, &mut |n| progress.inc(n))?;
                drop(sink);
                db.settle();
                Engine::Shoal { db, t }
            }
            EngineKind::Sqlite => {
                let db = SqliteDb::create(&self.opts, self.pool_bytes(), workers)?;
                {
                    let c = db.conn(0)?;
                    let ddl: String = schema::TABLES.iter().map(|t| t.sqlite_ddl()).collect();
                    c.execute_batch(&ddl)
                        .map_err(|e| BenchError::sqlite("creating the TPC-C tables", e))?;
                    let mut sink = SqliteSink {
                        conn: &c,
                        open: false,
                    };
                    load::load(&mut sink, scale, w, k, seed, &mut |n| progress.inc(n))?;
                    c.execute_batch("ANALYZE")
                        .map_err(|e| BenchError::sqlite("ANALYZE", e))?;
                }
                Engine::Sqlite { db }
            }
            _ => {
                let (peer, setup) = peers::peer_for(&self.opts, self.pool_bytes(), workers)?;
                let db = peer.tpcc(&setup, w, scale, k, seed, &mut |n| progress.inc(n))?;
                Engine::Peer { db }
            }
        };
        progress.finish();
        Ok(engine)
    }
}

impl TpccState {
    /// Checks consistency conditions 1–12 now (module doc); returns the failures.
    ///
    /// # Errors
    /// The engine's errors while reading.
    pub fn check(&self) -> Result<Vec<String>> {
        let snap = match &self.engine {
            Engine::Shoal { db, t } => Snapshot::from_shoal(db.db(), t, self.env.warehouses)?,
            Engine::Sqlite { db } => Snapshot::from_sqlite(&*db.conn(0)?)?,
            Engine::Peer { db } => db.snapshot()?,
        };
        let delivered = i64::from(self.env.scale.orders - self.env.scale.new_orders);
        Ok(snap.check(delivered))
    }

    fn next_h_id(&self, thread_idx: usize) -> Result<i64> {
        let seq = self.seq.get(thread_idx).ok_or_else(|| {
            BenchError::invalid("threads", format!("worker {thread_idx} has no sequence"))
        })?;
        // Relaxed: the counter is this worker's own; it only has to be unique. Load keys
        // are below 2^40.
        Ok((((thread_idx as i64) + 1) << 40) | seq.fetch_add(1, Ordering::Relaxed) as i64)
    }
}

thread_local! {
    static ITEMS: std::cell::RefCell<HashSet<i32>> = std::cell::RefCell::new(HashSet::new());
}

/// Runs one transaction of `kind` on Shoal; `true` if it completed (committed, or rolled
/// back as New-Order's unused item).
fn op_shoal(
    s: &TpccState,
    db: &ShoalDb,
    t: &ShoalTables,
    kind: Kind,
    thread_idx: usize,
    ctx: &mut ThreadCtx,
) -> Result<bool> {
    let now = shoal::table::Timestamp::now().0;
    let rc = IsolationLevel::ReadCommitted;
    let env = &s.env;
    let r = match kind {
        Kind::NewOrder => {
            let inp = NewOrderIn::draw(env, &mut ctx.rng);
            let r = db.run(rc, ctx, |tx| shoal_txns::new_order(t, tx, &inp, now))?;
            if r == Some(Err(Rollback::UnusedItem)) {
                s.rollbacks.fetch_add(1, Ordering::Relaxed);
            }
            r
        }
        Kind::Payment => {
            let inp = PaymentIn::draw(env, &mut ctx.rng);
            let h_id = s.next_h_id(thread_idx)?;
            db.run(rc, ctx, |tx| shoal_txns::payment(t, tx, &inp, h_id, now))?
        }
        Kind::OrderStatus => {
            let inp = OrderStatusIn::draw(env, &mut ctx.rng);
            db.run(rc, ctx, |tx| {
                shoal_txns::order_status(t, tx, &inp).map(|_| Ok::<_, Rollback>(()))
            })?
        }
        Kind::Delivery => {
            let inp = DeliveryIn::draw(env, &mut ctx.rng);
            let r = db.run(rc, ctx, |tx| {
                shoal_txns::delivery(t, tx, &inp, now).map(|r| r.map(|_| ()))
            })?;
            if r == Some(Err(Rollback::DeliveryRace)) {
                ctx.abort("delivery-race");
                return Ok(false);
            }
            r
        }
        Kind::StockLevel => {
            let inp = StockLevelIn::draw(env, &mut ctx.rng);
            ITEMS.with_borrow_mut(|items| {
                db.run(rc, ctx, |tx| {
                    shoal_txns::stock_level(t, tx, &inp, items).map(|_| Ok::<_, Rollback>(()))
                })
            })?
        }
    };
    Ok(r.is_some())
}

/// As [`op_shoal`] on SQLite.
fn op_sqlite(
    s: &TpccState,
    db: &SqliteDb,
    kind: Kind,
    thread_idx: usize,
    ctx: &mut ThreadCtx,
) -> Result<bool> {
    let now = shoal::table::Timestamp::now().0;
    let env = &s.env;
    let r = match kind {
        Kind::NewOrder => {
            let inp = NewOrderIn::draw(env, &mut ctx.rng);
            let r = db.run(thread_idx, ctx, true, |c| {
                sqlite_txns::new_order(c, &inp, now)
            })?;
            if matches!(r, Some(Err(_))) {
                s.rollbacks.fetch_add(1, Ordering::Relaxed);
            }
            r.map(|_| ())
        }
        Kind::Payment => {
            let inp = PaymentIn::draw(env, &mut ctx.rng);
            let h_id = s.next_h_id(thread_idx)?;
            db.run(thread_idx, ctx, true, |c| {
                sqlite_txns::payment(c, &inp, h_id, now).map(Ok::<_, ()>)
            })?
            .map(|_| ())
        }
        Kind::OrderStatus => {
            let inp = OrderStatusIn::draw(env, &mut ctx.rng);
            db.run(thread_idx, ctx, false, |c| {
                sqlite_txns::order_status(c, &inp).map(Ok::<_, ()>)
            })?
            .map(|_| ())
        }
        Kind::Delivery => {
            let inp = DeliveryIn::draw(env, &mut ctx.rng);
            db.run(thread_idx, ctx, true, |c| {
                sqlite_txns::delivery(c, &inp, now).map(Ok::<_, ()>)
            })?
            .map(|_| ())
        }
        Kind::StockLevel => {
            let inp = StockLevelIn::draw(env, &mut ctx.rng);
            db.run(thread_idx, ctx, false, |c| {
                sqlite_txns::stock_level(c, &inp).map(Ok::<_, ()>)
            })?
            .map(|_| ())
        }
    };
    Ok(r.is_some())
}

/// As [`op_shoal`] on an in-process peer.
fn op_peer(
    s: &TpccState,
    db: &dyn TpccPeer,
    kind: Kind,
    thread_idx: usize,
    ctx: &mut ThreadCtx,
) -> Result<bool> {
    let now = shoal::table::Timestamp::now().0;
    let env = &s.env;
    match kind {
        Kind::NewOrder => {
            let inp = NewOrderIn::draw(env, &mut ctx.rng);
            let r = db.new_order(thread_idx, ctx, &inp, now)?;
            if r == Some(NewOrderEnd::UnusedItem) {
                s.rollbacks.fetch_add(1, Ordering::Relaxed);
            }
            Ok(r.is_some())
        }
        Kind::Payment => {
            let inp = PaymentIn::draw(env, &mut ctx.rng);
            let h_id = s.next_h_id(thread_idx)?;
            db.payment(thread_idx, ctx, &inp, h_id, now)
        }
        Kind::OrderStatus => {
            let inp = OrderStatusIn::draw(env, &mut ctx.rng);
            db.order_status(thread_idx, ctx, &inp)
        }
        Kind::Delivery => {
            let inp = DeliveryIn::draw(env, &mut ctx.rng);
            db.delivery(thread_idx, ctx, &inp, now)
        }
        Kind::StockLevel => {
            let inp = StockLevelIn::draw(env, &mut ctx.rng);
            db.stock_level(thread_idx, ctx, &inp)
        }
    }
}

/// Counter name of the transactions of `kind` done.
fn counter_name(kind: Kind) -> String {
    format!("tpcc.{}", kind.name())
}

impl MicroBench for Tpcc {
    type State = TpccState;

    fn name(&self) -> &'static str {
        "tpcc"
    }

    fn engine(&self) -> &'static str {
        self.opts.engine.name()
    }

    fn variants(&self) -> &'static [&'static str] {
        &["standard", "payment", "new-order"]
    }

    fn config(&self) -> Map<String, Value> {
        let mut m = self.opts.to_json(self.pool_bytes());
        m.insert("warehouses".into(), self.warehouses().into());
        m.insert("items".into(), self.scale.items.into());
        m.insert("customers_per_district".into(), self.scale.customers.into());
        m.insert("orders_per_district".into(), self.scale.orders.into());
        m
    }

    fn setup(&self, variant: &str, run: &RunConfig) -> Result<TpccState> {
        self.scale.validate()?;
        if self.warehouses > MAX_WAREHOUSES {
            return Err(BenchError::invalid(
                "--warehouses",
                format!("{} is over {MAX_WAREHOUSES}", self.warehouses),
            ));
        }
        let mix = Mix::of_variant(variant).ok_or_else(|| {
            BenchError::invalid("--variant", format!("`{variant}` is not a tpcc variant"))
        })?;
        let workers = run.threads.iter().copied().max().unwrap_or(1);
        let mut rng = SmallRng::seed_from_u64(run.seed);
        let k = NuRandConstants::random(&mut rng);
        let engine = self.setup_engine(workers, &k, run.seed)?;
        Ok(TpccState {
            engine,
            env: Env {
                warehouses: self.warehouses(),
                scale: self.scale,
                k,
            },
            mix,
            done: Default::default(),
            rollbacks: Default::default(),
            seq: (0..workers)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
        })
    }

    fn op(state: &TpccState, thread_idx: usize, ctx: &mut ThreadCtx) -> Result<()> {
        let kind = state.mix.draw(&mut ctx.rng);
        let done = match &state.engine {
            Engine::Shoal { db, t } => op_shoal(state, db, t, kind, thread_idx, ctx)?,
            Engine::Sqlite { db } => op_sqlite(state, db, kind, thread_idx, ctx)?,
            Engine::Peer { db } => op_peer(state, &**db, kind, thread_idx, ctx)?,
        };
        if done {
            let i = Kind::ALL.iter().position(|&k| k == kind).unwrap_or(0);
            state.done[i].fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    fn counters(state: &TpccState) -> BTreeMap<String, u64> {
        let mut m = match &state.engine {
            Engine::Shoal { db, .. } => db.counters(),
            Engine::Sqlite { .. } | Engine::Peer { .. } => BTreeMap::new(),
        };
        for (i, kind) in Kind::ALL.into_iter().enumerate() {
            m.insert(counter_name(kind), state.done[i].load(Ordering::Relaxed));
        }
        m.insert(
            "tpcc.new_order_rollbacks".into(),
            state.rollbacks.load(Ordering::Relaxed),
        );
        m
    }

    fn derived(_: &str, stats: &BTreeMap<String, u64>, ops: u64) -> Map<String, Value> {
        let mut m = if stats.contains_key("buffer.hits") {
            shoal_side::derived(stats, ops)
        } else {
            Map::new()
        };
        for kind in Kind::ALL {
            let n = stats.get(&counter_name(kind)).copied().unwrap_or(0);
            let share = if ops == 0 {
                Value::Null
            } else {
                Value::from(n as f64 / ops as f64)
            };
            m.insert(format!("mix_{}", kind.name()), share);
        }
        m
    }

    fn after_point(state: &TpccState) -> Result<Map<String, Value>> {
        let mut m = Map::new();
        if let Engine::Shoal { db, t } = &state.engine {
            let roots: Vec<_> = schema::TABLES
                .iter()
                .enumerate()
                .map(|(i, spec)| (t.t[i].primary_tree().root(), spec.name.to_string()))
                .collect();
            m.insert("hot_latches".into(), db.hot_latches(&roots));
            let ids: Vec<_> = t.t.iter().map(|t| (t.id(), t.name().to_string())).collect();
            m.insert("hot_locks".into(), db.hot_locks(&ids));
        }
        let (k, v) = consistency_field(&state.check()?);
        m.insert(k, v);
        Ok(m)
    }
}

/// The table number of `name` (for tests and tools).
pub fn table_of(name: &str) -> Option<T> {
    const ALL: [T; 9] = [
        T::Warehouse,
        T::District,
        T::Customer,
        T::History,
        T::NewOrder,
        T::Orders,
        T::OrderLine,
        T::Item,
        T::Stock,
    ];
    ALL.into_iter()
        .find(|&t| schema::TABLES[t as usize].name == name)
}

#[cfg(test)]
mod tests;
