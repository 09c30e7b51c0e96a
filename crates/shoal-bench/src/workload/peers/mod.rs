//! # Peers: the other engines the workloads run on (issue 8, DESIGN.md §4)
//!
//! Job: let each workload ([`select1`](super::select1), [`tpcb`](super::tpcb),
//! [`insert`](super::insert), [`tpcc`](super::tpcc)) run on PostgreSQL, MariaDB/InnoDB,
//! Berkeley DB and Apache Derby with the same logical work as on Shoal, and skip an engine
//! that is not installed with a message saying how to install it.
//!
//! Two kinds of peer:
//! - **In-process peers** (PostgreSQL, MariaDB, Berkeley DB) implement [`PeerEngine`]. The
//!   workload keeps everything that is not engine work — the key and input draws, the mix,
//!   the consistency logic, the measurement — and calls the peer for each transaction
//!   through one small trait per workload ([`Select1Peer`], [`TpcbPeer`], [`InsertPeer`],
//!   [`TpccPeer`]). The runner measures them exactly as it measures Shoal and SQLite.
//! - **External peers** (Derby, embedded and network server) run in their own process, a
//!   Java harness in `peers/derby/`, which measures each point itself and prints the JSON
//!   lines of DESIGN.md §6; [`external`] starts it and folds its lines into the run.
//!
//! Rules every peer keeps (module rules of [`super`] apply too):
//! 1. A transaction the engine refuses for a reason that retrying can cure (deadlock,
//!    serialization failure, lock timeout) is rolled back and counted with
//!    [`ThreadCtx::abort`] under its cause; the peer's method then returns `Ok(false)`
//!    (or `Ok(None)`). Any other engine error is returned as
//!    [`BenchError::Peer`](crate::BenchError::Peer).
//! 2. One connection (or handle) per worker thread, prepared statements prepared once per
//!    connection and reused.
//! 3. Durability as [`Durability`](super::Durability) says, with the engine's own setting
//!    documented in `docs/benchmarks.md`; buffer pool of the size [`PeerSetup::pool_bytes`].
//! 4. A server the peer starts (PostgreSQL, MariaDB) is private: a new data directory under
//!    the run's database directory, listening on a Unix socket or 127.0.0.1 only, stopped
//!    when the peer is dropped.

pub mod bdb;
pub mod external;
pub mod mariadb;
pub mod postgres;
#[cfg(test)]
mod testkit;

use super::tpcc::check::Snapshot;
use super::tpcc::gen::NuRandConstants;
use super::tpcc::input::{DeliveryIn, NewOrderIn, OrderStatusIn, PaymentIn, StockLevelIn};
use super::tpcc::TpccScale;
use super::{EngineKind, WorkloadOptions};
use crate::error::Result;
use crate::runner::ThreadCtx;

/// What every peer setup gets.
#[derive(Clone, Copy, Debug)]
pub struct PeerSetup<'a> {
    /// The run's settings (durability, size, `db_dir`, progress).
    pub opts: &'a WorkloadOptions,
    /// Buffer pool (page cache) size in bytes, as Shoal's for the same run.
    pub pool_bytes: u64,
    /// Worker threads the state must serve (the largest thread count of the run): open this
    /// many connections.
    pub workers: usize,
}

/// A peer engine driven from this process (module doc).
pub trait PeerEngine: Sync {
    /// Which engine this is.
    fn kind(&self) -> EngineKind;

    /// Whether the engine can run here.
    ///
    /// # Errors
    /// A one-line reason naming what is missing and how to install it, without the engine's
    /// name, which [`availability`] adds (e.g. "initdb not found; run peers/install.sh");
    /// the run then skips this engine.
    fn availability(&self) -> std::result::Result<(), String>;

    /// Creates `select1`'s table `test(a INT4 PRIMARY KEY, b 96 bytes)` and loads `rows`
    /// rows with keys `0..rows` and `b = select1::b_value(a)`.
    ///
    /// # Errors
    /// [`BenchError::Peer`](crate::BenchError::Peer) if the engine fails to start, create
    /// or load.
    fn select1(&self, setup: &PeerSetup<'_>, rows: u64) -> Result<Box<dyn Select1Peer>>;

    /// Creates and loads pgbench's four tables for `scale` branches (see
    /// [`tpcb`](super::tpcb)'s module doc: balances 0, blank fillers).
    ///
    /// # Errors
    /// As [`PeerEngine::select1`].
    fn tpcb(&self, setup: &PeerSetup<'_>, scale: u64) -> Result<Box<dyn TpcbPeer>>;

    /// Creates one empty table `insert_<i>(k INT8 PRIMARY KEY, v 100 bytes)` per worker.
    ///
    /// # Errors
    /// As [`PeerEngine::select1`].
    fn insert(&self, setup: &PeerSetup<'_>) -> Result<Box<dyn InsertPeer>>;

    /// Creates TPC-C's nine tables and loads `warehouses` warehouses at `scale` with
    /// [`tpcc::load::load`](super::tpcc::load::load) (NURand constants `k`, `seed`), calling
    /// `progress` with the rows loaded since its last call.
    ///
    /// # Errors
    /// As [`PeerEngine::select1`].
    fn tpcc(
        &self,
        setup: &PeerSetup<'_>,
        warehouses: u32,
        scale: &TpccScale,
        k: &NuRandConstants,
        seed: u64,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Box<dyn TpccPeer>>;
}

/// `select1` on a peer.
pub trait Select1Peer: Send + Sync {
    /// Runs `SELECT a FROM test WHERE a = key` as worker `thread_idx`: `Ok(Some(Some(a)))`
    /// with the row's `a`, `Ok(Some(None))` if no row has that key, `Ok(None)` if the
    /// transaction was aborted (rule 1).
    ///
    /// # Errors
    /// [`BenchError::Peer`](crate::BenchError::Peer) for an engine error.
    fn select(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        key: i64,
    ) -> Result<Option<Option<i64>>>;

    /// Rows in `test` now.
    ///
    /// # Errors
    /// As [`Select1Peer::select`].
    fn count(&self) -> Result<u64>;
}

/// The input of one `tpcb` transaction (pgbench's built-in script).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TpcbTxn {
    /// Account.
    pub aid: i32,
    /// Teller.
    pub tid: i32,
    /// Branch.
    pub bid: i32,
    /// Amount added to the three balances and recorded in history.
    pub delta: i32,
    /// History time stamp, microseconds since the Unix epoch.
    pub mtime_us: i64,
}

/// `tpcb` on a peer.
pub trait TpcbPeer: Send + Sync {
    /// Runs one transaction as worker `thread_idx`: update the account, read its balance
    /// back, update the teller and the branch, insert a history row, commit. `Ok(true)` if
    /// it committed, `Ok(false)` if it was aborted (rule 1).
    ///
    /// # Errors
    /// [`BenchError::Peer`](crate::BenchError::Peer) for an engine error.
    fn transaction(&self, thread_idx: usize, ctx: &mut ThreadCtx, t: &TpcbTxn) -> Result<bool>;

    /// `[sum(abalance), sum(tbalance), sum(bbalance), sum(delta)]` now.
    ///
    /// # Errors
    /// As [`TpcbPeer::transaction`].
    fn sums(&self) -> Result<[i64; 4]>;
}

/// `insert` on a peer.
pub trait InsertPeer: Send + Sync {
    /// Inserts keys `first..first + n` with values `insert::value_of(k)` into worker
    /// `thread_idx`'s table in one transaction: `Ok(true)` if it committed, `Ok(false)` if
    /// it was aborted (rule 1).
    ///
    /// # Errors
    /// [`BenchError::Peer`](crate::BenchError::Peer) for an engine error.
    fn insert_batch(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        first: u64,
        n: u64,
    ) -> Result<bool>;

    /// Records in worker `worker`'s table now.
    ///
    /// # Errors
    /// As [`InsertPeer::insert_batch`].
    fn count(&self, worker: usize) -> Result<u64>;
}

/// How a New-Order ended that was not aborted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NewOrderEnd {
    /// Committed.
    Committed,
    /// Rolled back on purpose: its last item was unused (clause 2.4.1.4).
    UnusedItem,
}

/// `tpcc` on a peer: the five transactions of [`tpcc`](super::tpcc), each one transaction
/// on worker `thread_idx`'s connection, at READ COMMITTED or stronger with no lost update.
/// `now` is the transaction's time stamp in microseconds since the Unix epoch. A method
/// returns `Ok(None)` / `Ok(false)` for an aborted transaction (rule 1).
///
/// # Errors (every method)
/// [`BenchError::Peer`](crate::BenchError::Peer) for an engine error.
pub trait TpccPeer: Send + Sync {
    /// New-Order (clause 2.4).
    fn new_order(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        inp: &NewOrderIn,
        now: i64,
    ) -> Result<Option<NewOrderEnd>>;

    /// Payment (clause 2.5); `h_id` is the HISTORY row's surrogate key.
    fn payment(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        inp: &PaymentIn,
        h_id: i64,
        now: i64,
    ) -> Result<bool>;

    /// Order-Status (clause 2.6).
    fn order_status(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        inp: &OrderStatusIn,
    ) -> Result<bool>;

    /// Delivery (clause 2.7), all ten districts in one transaction.
    fn delivery(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        inp: &DeliveryIn,
        now: i64,
    ) -> Result<bool>;

    /// Stock-Level (clause 2.8).
    fn stock_level(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        inp: &StockLevelIn,
    ) -> Result<bool>;

    /// The rows the consistency conditions read, for
    /// [`Snapshot::check`](super::tpcc::check::Snapshot::check).
    fn snapshot(&self) -> Result<Snapshot>;
}

/// The in-process peer for `kind`, if `kind` is one (Shoal and SQLite are not peers here:
/// the workloads drive them directly; Derby is [`external`]).
pub fn in_process(kind: EngineKind) -> Option<&'static dyn PeerEngine> {
    match kind {
        EngineKind::Shoal
        | EngineKind::Sqlite
        | EngineKind::DerbyEmbedded
        | EngineKind::DerbyNetwork => None,
        EngineKind::Bdb => Some(&bdb::Bdb),
        EngineKind::Mariadb => Some(&mariadb::Mariadb),
        EngineKind::Postgres => Some(&postgres::Postgres),
    }
}

/// Whether `kind` can run on this machine: `Err` with a one-line reason, `<engine>: <what is
/// missing and the install command>`, for a peer that is not installed (the run skips it).
pub fn availability(kind: EngineKind) -> std::result::Result<(), String> {
    let reason = if kind.is_external() {
        external::availability()
    } else {
        in_process(kind).map_or(Ok(()), |p| p.availability())
    };
    reason.map_err(|why| format!("{}: {why}", kind.name()))
}

/// The in-process peer for `opts.engine`, checked to be available, and the setup a workload
/// gives it: a pool of `pool_bytes` bytes and `workers` connections.
///
/// # Errors
/// [`BenchError::InvalidArgument`](crate::BenchError::InvalidArgument) (`--engine`) if the
/// engine is not an in-process peer or is not installed (with the reason).
pub fn peer_for(
    opts: &WorkloadOptions,
    pool_bytes: u64,
    workers: usize,
) -> Result<(&'static dyn PeerEngine, PeerSetup<'_>)> {
    let kind = opts.engine;
    let peer = in_process(kind).ok_or_else(|| {
        crate::BenchError::invalid(
            "--engine",
            format!("{} is not an in-process peer", kind.name()),
        )
    })?;
    availability(kind).map_err(|why| crate::BenchError::invalid("--engine", why))?;
    let setup = PeerSetup {
        opts,
        pool_bytes,
        workers,
    };
    Ok((peer, setup))
}
