//! A bank on Shoal's embedded API: accounts in a table with a secondary index, threads
//! transferring money between them at SERIALIZABLE (retrying deadlock and lock-timeout
//! victims), and an audit at the end that the total is unchanged.
//!
//! ```text
//! cargo run --release -p shoal --example bank -- DIR [THREADS] [SECONDS]
//! ```
//!
//! DIR is created (it must not hold a database); it is left for `shoal inspect DIR` and
//! `shoal verify DIR`.

use shoal::table::{Column, ColumnType, IndexDef, Row, TableDef, Value};
use shoal::{Database, IsolationLevel, Options};
use std::time::{Duration, Instant};

const ACCOUNTS: i64 = 1_000;
const INITIAL: i64 = 10_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().ok_or("usage: bank DIR [THREADS] [SECONDS]")?;
    let threads: u64 = args.next().map_or(Ok(4), |s| s.parse())?;
    let seconds: u64 = args.next().map_or(Ok(3), |s| s.parse())?;
    let db = Database::create(&dir, &Options::default())?;

    let def = TableDef::new(
        "account",
        vec![
            Column::new("id", ColumnType::Int8),
            Column::new("branch", ColumnType::Int4).not_null(),
            Column::new("balance", ColumnType::Int8).not_null(),
        ],
        &["id"],
    )?
    .with_index(IndexDef::new("by_branch", ["branch"]))?;
    let mut tx = db.begin(IsolationLevel::ReadCommitted);
    let accounts = db.create_table(&mut tx, def)?;
    for id in 0..ACCOUNTS {
        let row = Row::new()
            .with("id", id)
            .with("branch", (id % 10) as i32)
            .with("balance", INITIAL);
        accounts.insert(&mut tx, &row)?;
    }
    tx.commit()?;
    eprintln!("bank: {ACCOUNTS} accounts; {threads} threads transfer for {seconds} s");

    let deadline = Instant::now() + Duration::from_secs(seconds);
    let (done, retried) = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (db, accounts) = (&db, &accounts);
                s.spawn(move || -> shoal::Result<(u64, u64)> {
                    let mut x = t.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                    let mut rand = move || {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x
                    };
                    let (mut done, mut retried) = (0, 0);
                    while Instant::now() < deadline {
                        let from = (rand() % ACCOUNTS as u64) as i64;
                        let to = (rand() % ACCOUNTS as u64) as i64;
                        let amount = (rand() % 100) as i64;
                        let mut tx = db.begin(IsolationLevel::Serializable);
                        let r = (|| -> shoal::Result<()> {
                            for (id, delta) in [(from, -amount), (to, amount)] {
                                let row = accounts
                                    .get(&mut tx, &[Value::Int8(id)])?
                                    .expect("every account exists");
                                let balance: i64 = row.get("balance")?;
                                let change = Row::new().with("balance", balance + delta);
                                accounts.update(&mut tx, &[Value::Int8(id)], &change)?;
                            }
                            Ok(())
                        })();
                        match r {
                            Ok(()) => {
                                tx.commit()?;
                                done += 1;
                            }
                            Err(e) if e.is_retryable() => {
                                tx.abort()?;
                                retried += 1;
                            }
                            Err(e) => return Err(e),
                        }
                    }
                    Ok((done, retried))
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("worker panicked"))
            .try_fold((0, 0), |acc, r| r.map(|(d, x)| (acc.0 + d, acc.1 + x)))
    })?;

    let mut tx = db.begin(IsolationLevel::Serializable);
    let total: i64 = accounts
        .scan(
            &mut tx,
            std::ops::Bound::Unbounded,
            std::ops::Bound::Unbounded,
            shoal::btree::ScanDirection::Forward,
        )?
        .iter()
        .map(|r| r.get::<i64>("balance"))
        .sum::<shoal::Result<i64>>()?;
    tx.commit()?;
    println!(
        "bank: {done} transfers ({:.0}/s), {retried} retried; total {total} (expected {})",
        done as f64 / seconds as f64,
        ACCOUNTS * INITIAL
    );
    if total != ACCOUNTS * INITIAL {
        return Err("the total changed: money was created or lost".into());
    }
    db.close()?;
    Ok(())
}
