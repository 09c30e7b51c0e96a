//! # `bdb`: Berkeley DB (Debian's libdb 5.3) as a peer, through its C API
//!
//! Job: run `select1`, `tpcb`, `insert` and `tpcc` on Berkeley DB's transactional B-tree
//! store — transactions, locking and logging, no SQL — as the Shore-MT paper drove it
//! (seed 001 §3–5), with the same logical work as on Shoal.
//!
//! ```text
//!  workload ─► PeerEngine::{select1,tpcb,insert,tpcc} (this module) ─► Store (store.rs)
//!                │ micro.rs: select1, tpcb, insert     │ one DB_ENV + one B-tree per table
//!                │ tpcc.rs, tpcc_txns.rs: TPC-C         ▼
//!                └── codec.rs: keys and rows as bytes   ffi.rs (Env, Db, Txn, Cursor)
//!                                                       └─► shim.c ─► libdb-5.3
//! ```
//!
//! ## Build and install
//! The build script compiles `shim.c` and links `-ldb-5.3` only when `db.h` is installed
//! (`peers/bdb/install.sh` installs Debian's `libdb5.3-dev`; `SHOAL_BDB_INCLUDE` names
//! another include directory). Without it the crate builds without the peer (cfg
//! `shoal_bdb` unset) and [`Bdb::availability`] says how to install it.
//!
//! ## Settings (equal to Shoal's where Berkeley DB has the knob)
//! - **Environment**: `DB_CREATE | DB_INIT_TXN | DB_INIT_LOCK | DB_INIT_LOG | DB_INIT_MPOOL |
//!   DB_THREAD | DB_RECOVER | DB_PRIVATE` in a new directory (`DbDir`, `<db_dir>/bdb/` when
//!   kept). `DB_PRIVATE` keeps the regions (cache, locks, log buffer) in this process's heap
//!   instead of files: one process with many threads uses the environment, as here.
//! - **Cache** (`set_cachesize`, one region) = the run's pool bytes, as Shoal's buffer pool
//!   (Berkeley DB adds 25% to caches under 500 MB for its own overhead). Pages of 8 KiB,
//!   Shoal's page size.
//! - **Durability**: `full` = Berkeley DB's default, a commit returns once its log record
//!   is written and synced. `lazy` = `DB_TXN_WRITE_NOSYNC`: a commit writes its log record to
//!   the operating system (`write`) without syncing, so the OS makes it durable within its
//!   write-back delay — the bounded delay of Shoal's `Lazy`, and what SQLite's
//!   `synchronous=OFF` and InnoDB's `flush_log_at_trx_commit=2` do. `DB_TXN_NOSYNC` is not
//!   used: it leaves the record in the log buffer until the buffer fills, which bounds
//!   nothing (an idle run would keep its commits in memory indefinitely).
//! - **Isolation**: degree 2 (`DB_READ_COMMITTED`), Shoal's READ COMMITTED: read locks are
//!   released after the read; every row a transaction updates is read with `DB_RMW` (write
//!   lock at the read, held to commit), so no update is lost. Berkeley DB's B-tree locks
//!   pages, not rows (the seed's point about it).
//! - **Locking**: deadlocks detected on every conflict (`set_lk_detect(DB_LOCK_DEFAULT)`);
//!   the victim gets `DB_LOCK_DEADLOCK`, is aborted and counted as cause `deadlock`
//!   (`DB_LOCK_NOTGRANTED`, a lock timeout, as `lock_timeout`; no timeout is set). Lock
//!   table: 50,000 locks and lock objects plus 2,000 per worker (a TPC-C load batch of
//!   5,000 rows touches under 1,000 pages), 2,000 lockers plus 8 per worker, 200
//!   transactions plus 2 per worker.
//! - **Log**: 4 MiB buffer, 64 MiB files. **No checkpoint thread**: the runs last minutes,
//!   the cache of a `memory` run holds every dirty page, and a checkpoint would only add
//!   writes to Berkeley DB's measured time; dirty pages are written when evicted (`disk`)
//!   and when the databases close after the run. The log files are removed with the
//!   directory (or kept with `--db-dir`).
//! - **Handles**: the `DB_ENV` and `DB` handles are free-threaded (`DB_THREAD`) and shared;
//!   each worker has its own transactions, cursors and buffers.
//!
//! ## Data
//! One B-tree database per table, keyed by the table's primary key (`codec.rs`:
//! order-preserving bytes). `tpcc`'s secondary indexes `customer_by_name` and
//! `orders_by_customer` are B-trees of their own, keyed by the index columns plus the
//! primary key's last column (unique keys, empty values), written in the same transaction
//! as the row — not `DB->associate`, whose callback would have to decode every row put and
//! whose index would need sorted duplicates for the non-unique name key.

#[cfg_attr(not(shoal_bdb), allow(dead_code))]
mod codec;
#[cfg(shoal_bdb)]
mod ffi;
#[cfg(shoal_bdb)]
mod micro;
#[cfg(shoal_bdb)]
mod store;
#[cfg(test)]
mod tests;
#[cfg(shoal_bdb)]
mod tpcc;
#[cfg(shoal_bdb)]
mod tpcc_txns;

use super::{InsertPeer, PeerEngine, PeerSetup, Select1Peer, TpcbPeer, TpccPeer};
use crate::error::Result;
use crate::workload::tpcc::gen::NuRandConstants;
use crate::workload::tpcc::TpccScale;
use crate::workload::EngineKind;

/// The Berkeley DB peer.
#[derive(Clone, Copy, Debug, Default)]
pub struct Bdb;

/// Why the peer cannot run in a build without Berkeley DB's header.
pub const NOT_BUILT: &str = "libdb5.3-dev was not installed when shoal-bench was built; \
     run peers/install.sh (or peers/bdb/install.sh), then rebuild";

/// The environment settings of a setup (module doc): cache = the pool, locks for the
/// largest transaction of a load batch times the workers, `DB_TXN_WRITE_NOSYNC` for `lazy`.
#[cfg(shoal_bdb)]
pub(crate) fn env_config(setup: &PeerSetup<'_>) -> ffi::EnvConfig {
    let workers = u32::try_from(setup.workers).unwrap_or(u32::MAX / 4096);
    // A load batch of TPC-C touches up to ~1,000 pages; a worker's transaction far fewer.
    let locks = 50_000u32.saturating_add(workers.saturating_mul(2_000));
    ffi::EnvConfig {
        cache_bytes: setup.pool_bytes,
        max_locks: locks,
        max_lockers: 2_000u32.saturating_add(workers.saturating_mul(8)),
        max_objects: locks,
        max_txns: 200u32.saturating_add(workers.saturating_mul(2)),
        log_buffer: 4 << 20,
        log_file: 64 << 20,
        write_nosync: setup.opts.durability == crate::workload::Durability::Lazy,
    }
}

impl PeerEngine for Bdb {
    fn kind(&self) -> EngineKind {
        EngineKind::Bdb
    }

    fn availability(&self) -> std::result::Result<(), String> {
        if cfg!(shoal_bdb) {
            Ok(())
        } else {
            Err(NOT_BUILT.to_string())
        }
    }

    fn select1(&self, setup: &PeerSetup<'_>, rows: u64) -> Result<Box<dyn Select1Peer>> {
        #[cfg(shoal_bdb)]
        return Ok(Box::new(micro::BdbSelect1::create(setup, rows)?));
        #[cfg(not(shoal_bdb))]
        return Err(not_built(setup, rows));
    }

    fn tpcb(&self, setup: &PeerSetup<'_>, scale: u64) -> Result<Box<dyn TpcbPeer>> {
        #[cfg(shoal_bdb)]
        return Ok(Box::new(micro::BdbTpcb::create(setup, scale)?));
        #[cfg(not(shoal_bdb))]
        return Err(not_built(setup, scale));
    }

    fn insert(&self, setup: &PeerSetup<'_>) -> Result<Box<dyn InsertPeer>> {
        #[cfg(shoal_bdb)]
        return Ok(Box::new(micro::BdbInsert::create(setup)?));
        #[cfg(not(shoal_bdb))]
        return Err(not_built(setup, 0));
    }

    fn tpcc(
        &self,
        setup: &PeerSetup<'_>,
        warehouses: u32,
        scale: &TpccScale,
        k: &NuRandConstants,
        seed: u64,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Box<dyn TpccPeer>> {
        #[cfg(shoal_bdb)]
        return Ok(Box::new(tpcc::BdbTpcc::create(
            setup, warehouses, scale, k, seed, progress,
        )?));
        #[cfg(not(shoal_bdb))]
        {
            let _ = (warehouses, scale, k, seed, progress);
            Err(not_built(setup, 0))
        }
    }
}

/// The error of a setup in a build without the peer.
#[cfg(not(shoal_bdb))]
fn not_built(_setup: &PeerSetup<'_>, _size: u64) -> crate::BenchError {
    crate::BenchError::peer("bdb", "setup", NOT_BUILT)
}
