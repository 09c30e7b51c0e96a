//! # Engine — one open database's storage manager
//!
//! Job: open (and recover) or create the files of one database in a [`Storage`] directory —
//! the data file [`DATA_FILE`] and the log — and wire the components together: the log is the
//! buffer pool's WAL hook, the space manager allocates pages of the pool's file, the
//! transaction manager logs page changes, and ARIES restart runs before anyone else can see
//! the pages (DESIGN.md §2: "recovery drives log + buffer + txn at open").
//!
//! ```text
//!  open:  log (find end) ─► pool(WAL = log) ─► space (create or open) ─► restart ─► ready
//!  close: pool flush + sync ─► checkpoint ─► log close
//! ```
//!
//! Invariants: (1) nothing but restart touches a page before [`Engine::open`] returns;
//! (2) checkpoints are serialised by one mutex (they are rare; transactions never take it);
//! (3) a data file left empty or unformatted by a crash during creation is formatted again
//! only if the log holds no record (nothing can depend on it yet); (4) once an engine is
//! dropped or closed, no thread of its log writes to the files any more (a later open of the
//! same directory in this process cannot meet a late write of the old log); (5) the
//! background checkpoint thread is stopped and joined before close touches the pool and when
//! the engine is dropped.
//!
//! Background checkpoints by log volume run in their own thread ([`checkpointer`]), started
//! after restart unless `Options::checkpoint_log_bytes` is 0.
//!
//! Not done here: the catalog, tables and the `Database` API (`db`, `table`).

use crate::buffer::BufferPool;
use crate::error::{Error, Result};
use crate::io::{OpenOptions, Storage};
use crate::log::{LogManager, LogOptions, FIRST_LSN};
use crate::options::Options;
use crate::recovery::{self, CheckpointInfo, RestartReport};
use crate::space::SpaceManager;
use crate::txn::{Resources, Transaction, TxnManager};
use parking_lot::Mutex;
use std::sync::Arc;

pub mod checkpointer;

use checkpointer::{CheckpointCounts, Checkpointer};

/// Name of the data file in the database's storage directory.
pub const DATA_FILE: &str = "data.shoal";

/// An open database's storage manager: log, buffer pool, space, transactions.
pub struct Engine {
    /// In an `Arc` so that the space manager can hold it weakly, to log reservations.
    txns: Arc<TxnManager>,
    space: Arc<SpaceManager>,
    checkpoint_lock: Arc<Mutex<()>>,
    checkpoints: Arc<CheckpointCounts>,
    /// `None` when `Options::checkpoint_log_bytes` is 0.
    checkpointer: Option<Checkpointer>,
    restart: RestartReport,
}

impl Engine {
    /// Opens the database in `storage`, creating it if the directory holds none, and runs
    /// restart (analysis, redo, undo, checkpoint) before returning.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for bad options; [`Error::BadFile`] for a file that is not a
    /// Shoal file or has another page size; corruption errors from the log or pages that
    /// restart cannot repair; I/O errors.
    pub fn open(
        storage: Arc<dyn Storage>,
        options: &Options,
        log_options: &LogOptions,
    ) -> Result<Engine> {
        options.validate()?;
        let log = LogManager::open(storage.clone(), log_options)?;
        let file = storage.open(
            DATA_FILE,
            OpenOptions {
                create: true,
                direct: options.direct_io,
                ..Default::default()
            },
        )?;
        let fresh_log = log.end_lsn() <= FIRST_LSN;
        if fresh_log && file.len()? > 0 && crate::space::probe_page_size(&*file).is_err() {
            file.set_len(0)?; // invariant 3
        }
        let pool = BufferPool::open(file.clone(), options, log.clone())?;
        let space = Arc::new(if file.len()? == 0 {
            SpaceManager::create(pool.clone())?
        } else {
            SpaceManager::open(pool.clone())?
        });
        let mut resources = Resources::default();
        resources.register(Arc::new(crate::kvstore::KvStoreRm));
        resources.register(Arc::new(crate::btree::BTreeRm::new(space.clone())));
        resources.register(Arc::new(crate::txn::SpaceRm));
        let locks = Arc::new(crate::lock::LockManager::new(
            &crate::lock::MGL,
            options.lock_options(),
        )?);
        let mut txns = TxnManager::new(log, pool, resources, locks);
        txns.set_admission(options.max_running_txns, options.admission_turns);
        let txns = Arc::new(txns);
        let restart = recovery::restart(&txns)?;
        // Space invariant 2: from now on a reservation is a logged system transaction
        // (restart itself used the synced protocol).
        let weak: std::sync::Weak<TxnManager> = Arc::downgrade(&txns);
        space.set_reservation_log(weak);
        let checkpoint_lock = Arc::new(Mutex::new(()));
        let checkpoints = Arc::new(CheckpointCounts::default());
        let checkpointer = match options.checkpoint_log_bytes {
            0 => None,
            every => Some(
                Checkpointer::start(
                    Arc::downgrade(&txns),
                    Arc::downgrade(&space),
                    checkpoint_lock.clone(),
                    checkpoints.clone(),
                    every,
                )
                .map_err(|e| Error::from_io("spawn", "checkpoint thread", e))?,
            ),
        };
        Ok(Engine {
            txns,
            space,
            checkpoint_lock,
            checkpoints,
            checkpointer,
            restart,
        })
    }

    /// What restart did at open.
    pub fn restart_report(&self) -> &RestartReport {
        &self.restart
    }

    /// The transaction manager.
    pub fn txns(&self) -> &TxnManager {
        &self.txns
    }

    /// Starts a user transaction at READ COMMITTED.
    pub fn begin(&self) -> Transaction<'_> {
        self.txns.begin()
    }

    /// Starts a user transaction at `isolation`.
    pub fn begin_with(&self, isolation: crate::txn::IsolationLevel) -> Transaction<'_> {
        self.txns.begin_with(isolation)
    }

    /// The space manager.
    pub fn space(&self) -> &Arc<SpaceManager> {
        &self.space
    }

    /// The buffer pool.
    pub fn pool(&self) -> &Arc<BufferPool> {
        self.txns.pool()
    }

    /// The log.
    pub fn log(&self) -> &Arc<LogManager> {
        self.txns.log()
    }

    /// Takes a fuzzy checkpoint (recovery rule 1) and drops log segments no restart needs.
    ///
    /// # Errors
    /// As [`recovery::checkpoint`].
    pub fn checkpoint(&self) -> Result<CheckpointInfo> {
        checkpointer::take(
            &self.txns,
            &self.space,
            &self.checkpoint_lock,
            &self.checkpoints,
        )
    }

    /// Checkpoints taken and failed since open, by [`Engine::checkpoint`] and in the
    /// background (`Options::checkpoint_log_bytes`), with the newest failure's error.
    pub fn checkpoint_counts(&self) -> &CheckpointCounts {
        &self.checkpoints
    }

    /// Makes the log durable and frees every page queued to be freed once it is
    /// ([`SpaceManager::free_after`]): afterwards the space map shows every page that no
    /// structure reaches as free.
    ///
    /// # Errors
    /// Log errors ([`Error::LogFailed`]); as [`SpaceManager::free`].
    pub fn free_pending(&self) -> Result<()> {
        let log = self.txns.log();
        if self.space.pending_free_count() > 0 {
            log.wait_all_durable()?;
            self.space.free_durable(log.durable_lsn())?;
        }
        Ok(())
    }

    /// Closes cleanly: writes and syncs every dirty page, takes a checkpoint (so the next
    /// open redoes nothing) and closes the log. Active transactions must have ended.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if transactions are still active; write, sync and log
    /// errors (the database is then recovered at the next open).
    pub fn close(self) -> Result<()> {
        let active = self.txns.active_count();
        if active > 0 {
            return Err(Error::invalid(
                "engine",
                format!("{active} transactions are still active"),
            ));
        }
        self.stop_checkpointer(); // invariant 5
        self.free_pending()?;
        self.space.release_caches()?;
        self.pool().close()?;
        self.checkpoint()?;
        self.log().close()
    }
}

impl Engine {
    fn stop_checkpointer(&self) {
        if let Some(c) = &self.checkpointer {
            c.stop();
        }
    }
}

impl Drop for Engine {
    /// Invariant 4: the log's threads are stopped and joined (after the flusher has written
    /// and synced what was appended), whoever else still holds the log.
    fn drop(&mut self) {
        self.stop_checkpointer();
        self.txns.log().stop_threads();
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("txns", &self.txns)
            .field("restart", &self.restart)
            .finish()
    }
}
