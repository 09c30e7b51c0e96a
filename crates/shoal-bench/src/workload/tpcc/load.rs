//! The initial population of clause 4.3.3.1, generated once and written to either engine
//! through a [`Sink`], so both engines load the same rows from the same seed.
//!
//! Per warehouse: STOCK (one row per item), 10 DISTRICTs, CUSTOMERs (the first 1,000 of a
//! district named by the syllables of `c_id - 1`, the rest by NURand), one HISTORY row per
//! customer, ORDERs (customers in a random permutation), 5..=15 ORDER-LINEs per order, and
//! NEW-ORDER rows for the last `new_orders` orders. ITEM once. At a scale smaller than the
//! spec's the year-to-date totals shrink with the number of customers (`d_ytd` = 10.00 per
//! customer, `w_ytd` = the districts' sum), so consistency conditions 1, 8 and 9 hold.

use super::gen::{self, NuRandConstants};
use super::schema::T;
use super::TpccScale;
use crate::error::Result;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use shoal::table::Value as V;

/// Rows per load transaction.
pub const LOAD_TXN_ROWS: u64 = 5_000;
/// Initial H_AMOUNT, C_YTD_PAYMENT (10.00) in cents.
pub const INITIAL_PAYMENT: i64 = 1_000;

/// Where loaded rows go.
pub trait Sink {
    /// Writes one row of table `t` (values in column order).
    ///
    /// # Errors
    /// The engine's errors.
    fn row(&mut self, t: T, values: Vec<V>) -> Result<()>;

    /// Commits the rows written so far and begins a new transaction.
    ///
    /// # Errors
    /// The engine's errors.
    fn commit(&mut self) -> Result<()>;
}

/// Rows the population has in all (for progress).
pub fn total_rows(scale: &TpccScale, warehouses: u32) -> u64 {
    let per_district =
        u64::from(scale.customers) * 2 + u64::from(scale.orders) * 11 + u64::from(scale.new_orders);
    u64::from(scale.items)
        + u64::from(warehouses) * (1 + u64::from(scale.items) + 10 * (1 + per_district))
}

fn s(x: String) -> V {
    V::Str(x)
}

/// STREET_1, STREET_2, CITY, STATE and ZIP of a warehouse, district or customer (clause
/// 4.3.3.1).
fn address(r: &mut impl Rng) -> [V; 5] {
    [
        s(gen::a_string(r, 10, 20)),
        s(gen::a_string(r, 10, 20)),
        s(gen::a_string(r, 10, 20)),
        s(gen::a_string(r, 2, 2)),
        s(gen::zip(r)),
    ]
}

/// Writes the whole population to `sink`, committing every [`LOAD_TXN_ROWS`] rows and
/// calling `progress` with the rows written since the last call.
///
/// # Errors
/// The sink's errors.
pub fn load(
    sink: &mut dyn Sink,
    scale: &TpccScale,
    warehouses: u32,
    k: &NuRandConstants,
    seed: u64,
    progress: &mut dyn FnMut(u64),
) -> Result<()> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let now = shoal::table::Timestamp::now().0;
    let mut pending = 0u64;
    let mut put = |sink: &mut dyn Sink, t: T, values: Vec<V>| -> Result<()> {
        sink.row(t, values)?;
        pending += 1;
        if pending == LOAD_TXN_ROWS {
            sink.commit()?;
            progress(pending);
            pending = 0;
        }
        Ok(())
    };
    let r = &mut rng;
    for i in 1..=scale.items as i32 {
        let row = vec![
            V::Int4(i),
            V::Int4(r.random_range(1..=10_000)),
            s(gen::a_string(r, 14, 24)),
            V::Int8(r.random_range(100..=10_000)),
            s(gen::data_field(r)),
        ];
        put(sink, T::Item, row)?;
    }
    let mut h_id = 0i64;
    for w in 1..=warehouses as i32 {
        let mut row = vec![V::Int4(w), s(gen::a_string(r, 6, 10))];
        row.extend(address(r));
        row.extend([
            V::Int4(r.random_range(0..=2_000)),
            V::Int8(10 * i64::from(scale.customers) * INITIAL_PAYMENT),
        ]);
        put(sink, T::Warehouse, row)?;
        for i in 1..=scale.items as i32 {
            let mut row = Vec::with_capacity(17);
            row.extend([V::Int4(w), V::Int4(i), V::Int4(r.random_range(10..=100))]);
            for _ in 0..10 {
                row.push(s(gen::a_string(r, 24, 24)));
            }
            row.extend([V::Int8(0), V::Int4(0), V::Int4(0), s(gen::data_field(r))]);
            put(sink, T::Stock, row)?;
        }
        for d in 1..=10 {
            let mut row = vec![V::Int4(w), V::Int4(d), s(gen::a_string(r, 6, 10))];
            row.extend(address(r));
            row.extend([
                V::Int4(r.random_range(0..=2_000)),
                V::Int8(i64::from(scale.customers) * INITIAL_PAYMENT),
                V::Int4(scale.orders as i32 + 1),
            ]);
            put(sink, T::District, row)?;
            for c in 1..=scale.customers as i32 {
                let credit = if r.random_range(0..10) == 0 {
                    "BC"
                } else {
                    "GC"
                };
                let mut row = vec![
                    V::Int4(w),
                    V::Int4(d),
                    V::Int4(c),
                    s(gen::a_string(r, 8, 16)),
                    s("OE".into()),
                    s(gen::load_last_name(r, k, c as u32)),
                ];
                row.extend(address(r));
                row.extend([
                    s(gen::n_string(r, 16, 16)),
                    V::Timestamp(now),
                    s(credit.into()),
                    V::Int8(5_000_000),
                    V::Int4(r.random_range(0..=5_000)),
                    V::Int8(-INITIAL_PAYMENT),
                    V::Int8(INITIAL_PAYMENT),
                    V::Int4(1),
                    V::Int4(0),
                    s(gen::a_string(r, 300, 500)),
                ]);
                put(sink, T::Customer, row)?;
                h_id += 1;
                let row = vec![
                    V::Int8(h_id),
                    V::Int4(c),
                    V::Int4(d),
                    V::Int4(w),
                    V::Int4(d),
                    V::Int4(w),
                    V::Timestamp(now),
                    V::Int8(INITIAL_PAYMENT),
                    s(gen::a_string(r, 12, 24)),
                ];
                put(sink, T::History, row)?;
            }
            let mut perm: Vec<i32> = (1..=scale.customers as i32).collect();
            perm.shuffle(r);
            let delivered = (scale.orders - scale.new_orders) as i32;
            for o in 1..=scale.orders as i32 {
                let ol_cnt = r.random_range(5..=15);
                let old = o <= delivered;
                let row = vec![
                    V::Int4(w),
                    V::Int4(d),
                    V::Int4(o),
                    V::Int4(perm[(o - 1) as usize % perm.len()]),
                    V::Timestamp(now),
                    if old {
                        V::Int4(r.random_range(1..=10))
                    } else {
                        V::Null
                    },
                    V::Int4(ol_cnt),
                    V::Int4(1),
                ];
                put(sink, T::Orders, row)?;
                for n in 1..=ol_cnt {
                    let row = vec![
                        V::Int4(w),
                        V::Int4(d),
                        V::Int4(o),
                        V::Int4(n),
                        V::Int4(r.random_range(1..=scale.items as i32)),
                        V::Int4(w),
                        if old { V::Timestamp(now) } else { V::Null },
                        V::Int4(5),
                        V::Int8(if old { 0 } else { r.random_range(1..=999_999) }),
                        s(gen::a_string(r, 24, 24)),
                    ];
                    put(sink, T::OrderLine, row)?;
                }
                if !old {
                    put(sink, T::NewOrder, vec![V::Int4(w), V::Int4(d), V::Int4(o)])?;
                }
            }
        }
    }
    sink.commit()?;
    progress(pending);
    Ok(())
}
