//! The inputs of the five transactions, drawn as clauses 2.4.1, 2.5.1, 2.6.1, 2.7.1 and
//! 2.8.1 say (engine-neutral: both engines run the same inputs), and the transaction mixes.

use super::gen::{self, NuRandConstants, A_C_ID, A_C_LAST, A_OL_I_ID};
use super::TpccScale;
use rand::Rng;

/// The five transactions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// New-Order (clause 2.4).
    NewOrder,
    /// Payment (clause 2.5).
    Payment,
    /// Order-Status (clause 2.6).
    OrderStatus,
    /// Delivery (clause 2.7).
    Delivery,
    /// Stock-Level (clause 2.8).
    StockLevel,
}

impl Kind {
    /// Every kind, in counter order.
    pub const ALL: [Kind; 5] = [
        Kind::NewOrder,
        Kind::Payment,
        Kind::OrderStatus,
        Kind::Delivery,
        Kind::StockLevel,
    ];

    /// Name in counters and reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::NewOrder => "new_order",
            Kind::Payment => "payment",
            Kind::OrderStatus => "order_status",
            Kind::Delivery => "delivery",
            Kind::StockLevel => "stock_level",
        }
    }
}

/// Which transactions a variant runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mix {
    /// Clause 5.2.3's mix: 45% New-Order, 43% Payment, 4% each of the others (a weighted
    /// draw per transaction).
    Standard,
    /// Only Payment.
    Payment,
    /// Only New-Order.
    NewOrder,
}

impl Mix {
    /// The mix of variant `name` (`standard`, `payment`, `new-order`).
    pub fn of_variant(name: &str) -> Option<Mix> {
        match name {
            "standard" => Some(Mix::Standard),
            "payment" => Some(Mix::Payment),
            "new-order" => Some(Mix::NewOrder),
            _ => None,
        }
    }

    /// Draws the next transaction.
    pub fn draw(self, rng: &mut impl Rng) -> Kind {
        match self {
            Mix::Payment => Kind::Payment,
            Mix::NewOrder => Kind::NewOrder,
            Mix::Standard => match rng.random_range(0..100u32) {
                0..45 => Kind::NewOrder,
                45..88 => Kind::Payment,
                88..92 => Kind::OrderStatus,
                92..96 => Kind::Delivery,
                _ => Kind::StockLevel,
            },
        }
    }
}

/// What every draw needs: warehouses, scale and the run-time NURand constants.
#[derive(Clone, Copy, Debug)]
pub struct Env {
    /// Warehouses (at least 1).
    pub warehouses: u32,
    /// Data scale.
    pub scale: TpccScale,
    /// NURand's `C` values (the run uses `c_last_run`).
    pub k: NuRandConstants,
}

impl Env {
    fn warehouse(&self, rng: &mut impl Rng) -> i32 {
        rng.random_range(1..=self.warehouses) as i32
    }

    /// A warehouse other than `home` (only called with more than one warehouse).
    fn other_warehouse(&self, rng: &mut impl Rng, home: i32) -> i32 {
        let w = rng.random_range(1..self.warehouses) as i32;
        if w >= home {
            w + 1
        } else {
            w
        }
    }

    /// C_ID by NURand(1023, 1, customers).
    fn customer_id(&self, rng: &mut impl Rng) -> i32 {
        gen::nurand(rng, A_C_ID, self.k.c_id, 1, self.scale.customers) as i32
    }

    /// A run-time last name: NURand(255, 0, 999), limited to the names the load gave
    /// (fewer than 1,000 at a scale with fewer customers).
    fn last_name(&self, rng: &mut impl Rng) -> String {
        let max = self.scale.customers.min(1000) - 1;
        gen::last_name(gen::nurand(rng, A_C_LAST, self.k.c_last_run, 0, max))
    }

    /// 60% by last name, 40% by number (clauses 2.5.1.2 and 2.6.1.2).
    fn customer(&self, rng: &mut impl Rng) -> Customer {
        if rng.random_range(1..=100) <= 60 {
            Customer::Last(self.last_name(rng))
        } else {
            Customer::Id(self.customer_id(rng))
        }
    }
}

/// How a transaction names its customer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Customer {
    /// By C_ID.
    Id(i32),
    /// By C_LAST: the one at position ceil(n/2) of the n customers with that name, sorted
    /// by C_FIRST.
    Last(String),
}

/// One order line of a New-Order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Line {
    /// OL_I_ID (an unused number for the rolled-back 1%).
    pub i_id: i32,
    /// OL_SUPPLY_W_ID.
    pub supply_w: i32,
    /// OL_QUANTITY, 1..=10.
    pub qty: i32,
}

/// New-Order's input (clause 2.4.1).
#[derive(Clone, Debug)]
pub struct NewOrderIn {
    /// W_ID.
    pub w: i32,
    /// D_ID.
    pub d: i32,
    /// C_ID.
    pub c: i32,
    /// The order lines (5..=15), sorted by supply warehouse and item so that concurrent
    /// New-Orders lock STOCK rows in one order (no deadlock between them).
    pub lines: Vec<Line>,
    /// O_ALL_LOCAL: every line is supplied by the home warehouse.
    pub all_local: bool,
}

impl NewOrderIn {
    /// Draws the input: 1% of orders end with an unused item (and are rolled back); each
    /// line is supplied by another warehouse with probability 1% when there is one.
    pub fn draw(env: &Env, rng: &mut impl Rng) -> NewOrderIn {
        let w = env.warehouse(rng);
        let d = rng.random_range(1..=10);
        let c = env.customer_id(rng);
        let n = rng.random_range(5..=15usize);
        let rollback = rng.random_range(1..=100) == 1;
        let mut lines: Vec<Line> = (0..n)
            .map(|i| {
                let i_id = if rollback && i == n - 1 {
                    env.scale.items as i32 + 1
                } else {
                    gen::nurand(rng, A_OL_I_ID, env.k.ol_i_id, 1, env.scale.items) as i32
                };
                let supply_w = if env.warehouses > 1 && rng.random_range(1..=100) == 1 {
                    env.other_warehouse(rng, w)
                } else {
                    w
                };
                Line {
                    i_id,
                    supply_w,
                    qty: rng.random_range(1..=10),
                }
            })
            .collect();
        lines.sort_by_key(|l| (l.supply_w, l.i_id));
        let all_local = lines.iter().all(|l| l.supply_w == w);
        NewOrderIn {
            w,
            d,
            c,
            lines,
            all_local,
        }
    }
}

/// Payment's input (clause 2.5.1).
#[derive(Clone, Debug)]
pub struct PaymentIn {
    /// W_ID.
    pub w: i32,
    /// D_ID.
    pub d: i32,
    /// C_W_ID: W_ID for 85%, another warehouse for 15% (when there is one).
    pub c_w: i32,
    /// C_D_ID.
    pub c_d: i32,
    /// The customer, 60% by last name.
    pub customer: Customer,
    /// H_AMOUNT in cents, 1.00..=5,000.00.
    pub amount: i64,
}

impl PaymentIn {
    /// Draws the input.
    pub fn draw(env: &Env, rng: &mut impl Rng) -> PaymentIn {
        let w = env.warehouse(rng);
        let d = rng.random_range(1..=10);
        let (c_w, c_d) = if env.warehouses > 1 && rng.random_range(1..=100) > 85 {
            (env.other_warehouse(rng, w), rng.random_range(1..=10))
        } else {
            (w, d)
        };
        PaymentIn {
            w,
            d,
            c_w,
            c_d,
            customer: env.customer(rng),
            amount: rng.random_range(100..=500_000),
        }
    }
}

/// Order-Status's input (clause 2.6.1).
#[derive(Clone, Debug)]
pub struct OrderStatusIn {
    /// W_ID.
    pub w: i32,
    /// D_ID.
    pub d: i32,
    /// The customer, 60% by last name.
    pub customer: Customer,
}

impl OrderStatusIn {
    /// Draws the input.
    pub fn draw(env: &Env, rng: &mut impl Rng) -> OrderStatusIn {
        OrderStatusIn {
            w: env.warehouse(rng),
            d: rng.random_range(1..=10),
            customer: env.customer(rng),
        }
    }
}

/// Delivery's input (clause 2.7.1).
#[derive(Clone, Copy, Debug)]
pub struct DeliveryIn {
    /// W_ID.
    pub w: i32,
    /// O_CARRIER_ID, 1..=10.
    pub carrier: i32,
}

impl DeliveryIn {
    /// Draws the input.
    pub fn draw(env: &Env, rng: &mut impl Rng) -> DeliveryIn {
        DeliveryIn {
            w: env.warehouse(rng),
            carrier: rng.random_range(1..=10),
        }
    }
}

/// Stock-Level's input (clause 2.8.1).
#[derive(Clone, Copy, Debug)]
pub struct StockLevelIn {
    /// W_ID.
    pub w: i32,
    /// D_ID.
    pub d: i32,
    /// The threshold, 10..=20.
    pub threshold: i32,
}

impl StockLevelIn {
    /// Draws the input.
    pub fn draw(env: &Env, rng: &mut impl Rng) -> StockLevelIn {
        StockLevelIn {
            w: env.warehouse(rng),
            d: rng.random_range(1..=10),
            threshold: rng.random_range(10..=20),
        }
    }
}

/// Orders Stock-Level examines: the district's last 20.
pub const STOCK_LEVEL_ORDERS: i32 = 20;

/// C_DATA after a Payment by a bad-credit customer (clause 2.5.2.2): the payment's ids and
/// amount in front of the old value, cut to 500 characters.
pub fn bc_data(c: i32, inp: &PaymentIn, old: &str) -> String {
    let mut s = format!(
        "{c} {} {} {} {} {}.{:02} ",
        inp.c_d,
        inp.c_w,
        inp.d,
        inp.w,
        inp.amount / 100,
        inp.amount % 100
    );
    s.push_str(old);
    s.truncate(500);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    fn env(warehouses: u32) -> Env {
        let mut rng = SmallRng::seed_from_u64(1);
        Env {
            warehouses,
            scale: TpccScale::full(),
            k: NuRandConstants::random(&mut rng),
        }
    }

    #[test]
    fn new_order_inputs_follow_clause_2_4_1() {
        let mut rng = SmallRng::seed_from_u64(2);
        let e = env(3);
        let (mut rollbacks, mut remote, mut lines) = (0, 0, 0);
        for _ in 0..20_000 {
            let o = NewOrderIn::draw(&e, &mut rng);
            assert!((5..=15).contains(&o.lines.len()));
            assert!((1..=3).contains(&o.w) && (1..=10).contains(&o.d));
            assert!((1..=3000).contains(&o.c));
            rollbacks += usize::from(o.lines.iter().any(|l| l.i_id == 100_001));
            remote += o.lines.iter().filter(|l| l.supply_w != o.w).count();
            lines += o.lines.len();
            assert_eq!(o.all_local, o.lines.iter().all(|l| l.supply_w == o.w));
            assert!(o
                .lines
                .windows(2)
                .all(|p| (p[0].supply_w, p[0].i_id) <= (p[1].supply_w, p[1].i_id)));
        }
        assert!((120..=280).contains(&rollbacks), "{rollbacks}");
        let pct = remote as f64 * 100.0 / lines as f64;
        assert!((0.7..1.3).contains(&pct), "{pct}");
        let one = env(1);
        for _ in 0..1000 {
            let o = NewOrderIn::draw(&one, &mut rng);
            assert!(o.all_local);
        }
    }

    #[test]
    fn payment_inputs_follow_clause_2_5_1() {
        let mut rng = SmallRng::seed_from_u64(3);
        let e = env(2);
        let (mut by_name, mut remote) = (0, 0);
        for _ in 0..10_000 {
            let p = PaymentIn::draw(&e, &mut rng);
            assert!((100..=500_000).contains(&p.amount));
            by_name += usize::from(matches!(p.customer, Customer::Last(_)));
            remote += usize::from(p.c_w != p.w);
        }
        assert!((5700..=6300).contains(&by_name), "{by_name}");
        assert!((1300..=1700).contains(&remote), "{remote}");
    }

    #[test]
    fn the_standard_mix_has_its_shares() {
        let mut rng = SmallRng::seed_from_u64(4);
        let mut n = [0u32; 5];
        for _ in 0..100_000 {
            let k = Mix::Standard.draw(&mut rng);
            n[Kind::ALL.iter().position(|&x| x == k).unwrap()] += 1;
        }
        assert!((44_000..46_000).contains(&n[0]) && (42_000..44_000).contains(&n[1]));
        assert!(n[2..].iter().all(|&c| (3_500..4_500).contains(&c)), "{n:?}");
        assert_eq!(Mix::of_variant("payment"), Some(Mix::Payment));
        assert_eq!(Mix::of_variant("nope"), None);
    }

    #[test]
    fn bad_credit_data_is_prefixed_and_cut() {
        let p = PaymentIn {
            w: 1,
            d: 2,
            c_w: 1,
            c_d: 2,
            customer: Customer::Id(7),
            amount: 12_345,
        };
        let s = bc_data(7, &p, &"x".repeat(500));
        assert!(s.starts_with("7 2 1 2 1 123.45 x"));
        assert_eq!(s.len(), 500);
    }
}
