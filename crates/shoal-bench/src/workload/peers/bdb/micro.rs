//! `select1`, `tpcb` and `insert` on Berkeley DB: one B-tree database per table, keyed by
//! the primary key ([`super::codec`]), rows in fixed layouts (below). Updates read with
//! `DB_RMW`.
//!
//! | database | key | value |
//! |---|---|---|
//! | `test` | `a` INT4 | `a` (4 bytes LE), `b` (96 bytes) |
//! | `pgbench_accounts` | `aid` | `bid`, `abalance` (INT4 LE), filler (84 blanks) |
//! | `pgbench_tellers` | `tid` | `bid`, `tbalance`, filler (84 blanks) |
//! | `pgbench_branches` | `bid` | `bbalance`, filler (88 blanks) |
//! | `pgbench_history` | `hid` INT8 (worker × 2^40 + its sequence) | `tid`, `bid`, `aid`, `delta`, `mtime` (INT8), filler (22 blanks) |
//! | `insert_<i>` | `k` INT8 | `insert::value_of(k)` (100 bytes) |

use super::codec::{key_i32s, push_i64};
use super::ffi::{Db, DbErr, DbResult, Move, Txn};
use super::store::{End, Store};
use crate::error::{BenchError, Result};
use crate::runner::ThreadCtx;
use crate::workload::peers::{InsertPeer, PeerSetup, Select1Peer, TpcbPeer, TpcbTxn};
use crate::workload::progress::LoadProgress;
use crate::workload::{insert, select1, tpcb};
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering};

/// Rows per load transaction.
const LOAD_TXN_ROWS: u64 = 10_000;

/// Counts the records of `db` with a cursor in one transaction of `store`.
fn count(store: &Store, db: &Db) -> Result<u64> {
    let txn = store.begin()?;
    let n = scan(db, &txn, |_, _| Ok(())).map_err(|e| e.into_bench("counting records"))?;
    txn.commit()
        .map_err(|e| e.into_bench("committing a count"))?;
    Ok(n)
}

/// Visits every record of `db` in key order; returns how many there were.
pub(super) fn scan(
    db: &Db,
    txn: &Txn<'_>,
    mut f: impl FnMut(&[u8], &[u8]) -> DbResult<()>,
) -> DbResult<u64> {
    let mut c = db.cursor(txn)?;
    let mut n = 0;
    let mut to = Move::First;
    while let Some((k, v)) = c.get(to, false)? {
        f(k, v)?;
        n += 1;
        to = Move::Next;
    }
    Ok(n)
}

/// The INT4 at byte `at` of a value.
fn i32_at(v: &[u8], at: usize, what: &str) -> DbResult<i32> {
    v.get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map(i32::from_le_bytes)
        .ok_or_else(|| DbErr::invalid(what, format!("record of {} bytes too short", v.len())))
}

/// Converts a workload key to INT4.
fn int4(key: i64, what: &str) -> Result<i32> {
    i32::try_from(key).map_err(|_| BenchError::invalid("key", format!("{what}: {key} is not INT4")))
}

/// Loads `rows` records `make(i)` for `i in 0..rows` into `db`, a transaction per
/// [`LOAD_TXN_ROWS`].
fn load(
    store: &Store,
    db: &Db,
    rows: u64,
    progress: &mut LoadProgress,
    mut make: impl FnMut(u64) -> Result<(Vec<u8>, Vec<u8>)>,
) -> Result<()> {
    let mut i = 0;
    while i < rows {
        let end = (i + LOAD_TXN_ROWS).min(rows);
        let txn = store.begin()?;
        for j in i..end {
            let (k, v) = make(j)?;
            db.put(&txn, &k, &v, true)
                .map_err(|e| e.into_bench(format!("loading {}", db.name()).as_str()))?;
        }
        txn.commit()
            .map_err(|e| e.into_bench("committing a load batch"))?;
        progress.inc(end - i);
        i = end;
    }
    Ok(())
}

/// `select1`'s table on Berkeley DB.
pub struct BdbSelect1 {
    store: Store,
}

impl BdbSelect1 {
    /// Creates `test` and loads `rows` rows.
    ///
    /// # Errors
    /// [`BenchError::Peer`] (or the directory's errors) if Berkeley DB fails.
    pub fn create(setup: &PeerSetup<'_>, rows: u64) -> Result<BdbSelect1> {
        let store = Store::open(setup, &["test".to_string()])?;
        let mut progress =
            LoadProgress::new("select1 bdb: loading test", rows, !setup.opts.progress);
        load(&store, store.db(0)?, rows, &mut progress, |a| {
            let a4 = int4(a as i64, "select1 load")?;
            let mut v = Vec::with_capacity(4 + select1::B_BYTES);
            v.extend_from_slice(&a4.to_le_bytes());
            v.extend_from_slice(&select1::b_value(a));
            Ok((key_i32s(&[a4]), v))
        })?;
        progress.finish();
        Ok(BdbSelect1 { store })
    }
}

impl Select1Peer for BdbSelect1 {
    fn select(&self, _: usize, ctx: &mut ThreadCtx, key: i64) -> Result<Option<Option<i64>>> {
        let k = key_i32s(&[int4(key, "select1")?]);
        let db = self.store.db(0)?;
        self.store.run(ctx, "select1", |txn| {
            let mut buf = Vec::with_capacity(128);
            Ok(End::Commit(if db.get(txn, &k, false, &mut buf)? {
                Some(i64::from(i32_at(&buf, 0, "reading test")?))
            } else {
                None
            }))
        })
    }

    fn count(&self) -> Result<u64> {
        count(&self.store, self.store.db(0)?)
    }
}

/// Database numbers of `tpcb`'s tables.
const BRANCHES: usize = 0;
const TELLERS: usize = 1;
const ACCOUNTS: usize = 2;
const HISTORY: usize = 3;
/// Byte offsets of the balances (and of history's delta).
const BRANCH_BALANCE_AT: usize = 0;
const TELLER_BALANCE_AT: usize = 4;
const ACCOUNT_BALANCE_AT: usize = 4;
const HISTORY_DELTA_AT: usize = 12;

/// A record of INT4s followed by `filler` blanks.
fn fixed(ints: &[i32], filler: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(4 * ints.len() + filler);
    for i in ints {
        v.extend_from_slice(&i.to_le_bytes());
    }
    v.resize(v.len() + filler, b' ');
    v
}

/// `tpcb`'s four tables on Berkeley DB.
pub struct BdbTpcb {
    pub(super) store: Store,
    /// Next history sequence number of each worker.
    seq: Vec<CachePadded<AtomicU64>>,
}

impl BdbTpcb {
    /// Creates and loads the four tables for `scale` branches (balances 0).
    ///
    /// # Errors
    /// [`BenchError::Peer`] (or the directory's errors) if Berkeley DB fails.
    pub fn create(setup: &PeerSetup<'_>, scale: u64) -> Result<BdbTpcb> {
        let names = [
            "pgbench_branches",
            "pgbench_tellers",
            "pgbench_accounts",
            "pgbench_history",
        ]
        .map(String::from);
        let store = Store::open(setup, &names)?;
        let tellers = scale * tpcb::TELLERS_PER_BRANCH;
        let accounts = scale * tpcb::ACCOUNTS_PER_BRANCH;
        let total = scale + tellers + accounts;
        let mut progress = LoadProgress::new("tpcb bdb: loading", total, !setup.opts.progress);
        load(&store, store.db(BRANCHES)?, scale, &mut progress, |i| {
            let bid = int4(i as i64 + 1, "tpcb load")?;
            Ok((key_i32s(&[bid]), fixed(&[0], 88)))
        })?;
        load(&store, store.db(TELLERS)?, tellers, &mut progress, |i| {
            let tid = int4(i as i64 + 1, "tpcb load")?;
            let bid = int4((i / tpcb::TELLERS_PER_BRANCH) as i64 + 1, "tpcb load")?;
            Ok((key_i32s(&[tid]), fixed(&[bid, 0], 84)))
        })?;
        load(&store, store.db(ACCOUNTS)?, accounts, &mut progress, |i| {
            let aid = int4(i as i64 + 1, "tpcb load")?;
            let bid = int4((i / tpcb::ACCOUNTS_PER_BRANCH) as i64 + 1, "tpcb load")?;
            Ok((key_i32s(&[aid]), fixed(&[bid, 0], 84)))
        })?;
        progress.finish();
        Ok(BdbTpcb {
            store,
            seq: (0..setup.workers.max(1))
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
        })
    }

    /// Adds `delta` to the INT4 at byte `at` of record `key` of database `db`, read with
    /// `DB_RMW`; returns the new value.
    pub(super) fn add(
        db: &Db,
        txn: &Txn<'_>,
        key: i32,
        at: usize,
        delta: i32,
        buf: &mut Vec<u8>,
    ) -> DbResult<i32> {
        let k = key_i32s(&[key]);
        if !db.get(txn, &k, true, buf)? {
            return Err(DbErr::invalid(db.name(), format!("no row {key}")));
        }
        let new = i32_at(buf, at, db.name())?.wrapping_add(delta);
        buf[at..at + 4].copy_from_slice(&new.to_le_bytes());
        db.put(txn, &k, buf, false)?;
        Ok(new)
    }
}

impl TpcbPeer for BdbTpcb {
    fn transaction(&self, thread_idx: usize, ctx: &mut ThreadCtx, t: &TpcbTxn) -> Result<bool> {
        let seq = self.seq.get(thread_idx).ok_or_else(|| {
            BenchError::invalid(
                "threads",
                format!("bdb: worker {thread_idx} has no sequence"),
            )
        })?;
        let db = |i| self.store.db(i);
        let (branches, tellers, accounts, history) =
            (db(BRANCHES)?, db(TELLERS)?, db(ACCOUNTS)?, db(HISTORY)?);
        let r = self.store.run(ctx, "tpcb transaction", |txn| {
            let mut buf = Vec::with_capacity(128);
            let updated = Self::add(accounts, txn, t.aid, ACCOUNT_BALANCE_AT, t.delta, &mut buf)?;
            let read = if accounts.get(txn, &key_i32s(&[t.aid]), false, &mut buf)? {
                Some(i32_at(&buf, ACCOUNT_BALANCE_AT, "reading an account")?)
            } else {
                None
            };
            Self::add(tellers, txn, t.tid, TELLER_BALANCE_AT, t.delta, &mut buf)?;
            Self::add(branches, txn, t.bid, BRANCH_BALANCE_AT, t.delta, &mut buf)?;
            // Relaxed: the counter is this worker's own; it only has to be unique.
            let hid = ((thread_idx as i64) << 40) | seq.fetch_add(1, Ordering::Relaxed) as i64;
            let mut k = Vec::with_capacity(8);
            push_i64(&mut k, hid);
            let mut v = fixed(&[t.tid, t.bid, t.aid, t.delta], 0);
            v.extend_from_slice(&t.mtime_us.to_le_bytes());
            v.resize(v.len() + 22, b' ');
            history.put(txn, &k, &v, true)?;
            Ok(if read == Some(updated) {
                End::Commit(Ok(()))
            } else {
                End::Rollback(Err((updated, read)))
            })
        })?;
        match r {
            None => Ok(false),
            Some(Ok(())) => Ok(true),
            Some(Err((updated, read))) => Err(BenchError::Check(format!(
                "tpcb bdb: account {} was updated to {updated} but read back as {read:?}",
                t.aid
            ))),
        }
    }

    fn sums(&self) -> Result<[i64; 4]> {
        let txn = self.store.begin()?;
        let mut out = [0i64; 4];
        let parts = [
            (ACCOUNTS, ACCOUNT_BALANCE_AT),
            (TELLERS, TELLER_BALANCE_AT),
            (BRANCHES, BRANCH_BALANCE_AT),
            (HISTORY, HISTORY_DELTA_AT),
        ];
        for (slot, (db, at)) in out.iter_mut().zip(parts) {
            let db = self.store.db(db)?;
            scan(db, &txn, |_, v| {
                *slot += i64::from(i32_at(v, at, db.name())?);
                Ok(())
            })
            .map_err(|e| e.into_bench("summing balances"))?;
        }
        txn.commit()
            .map_err(|e| e.into_bench("committing the sums"))?;
        Ok(out)
    }
}

/// `insert`'s tables on Berkeley DB, one per worker.
pub struct BdbInsert {
    store: Store,
}

impl BdbInsert {
    /// Creates the empty databases `insert_0 .. insert_<workers - 1>`.
    ///
    /// # Errors
    /// [`BenchError::Peer`] (or the directory's errors) if Berkeley DB fails.
    pub fn create(setup: &PeerSetup<'_>) -> Result<BdbInsert> {
        let names: Vec<String> = (0..setup.workers.max(1))
            .map(|i| format!("insert_{i}"))
            .collect();
        Ok(BdbInsert {
            store: Store::open(setup, &names)?,
        })
    }
}

impl InsertPeer for BdbInsert {
    fn insert_batch(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        first: u64,
        n: u64,
    ) -> Result<bool> {
        let db = self.store.db(thread_idx)?;
        let last = first
            .checked_add(n)
            .and_then(|e| i64::try_from(e).ok())
            .ok_or_else(|| {
                BenchError::invalid("key", format!("insert: {first} + {n} is too large"))
            })?;
        let r = self.store.run(ctx, "insert batch", |txn| {
            let mut k = Vec::with_capacity(8);
            for key in first as i64..last {
                k.clear();
                push_i64(&mut k, key);
                db.put(txn, &k, &insert::value_of(key as u64), true)?;
            }
            Ok(End::Commit(()))
        })?;
        Ok(r.is_some())
    }

    fn count(&self, worker: usize) -> Result<u64> {
        count(&self.store, self.store.db(worker)?)
    }
}
