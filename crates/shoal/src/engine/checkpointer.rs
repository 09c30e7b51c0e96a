//! # Background checkpoints by log volume
//!
//! Job: take a fuzzy checkpoint (recovery rule 1) whenever the log has grown by
//! `Options::checkpoint_log_bytes` since the newest checkpoint began, so that while a
//! database runs, the log kept on disk and the log a restart must read stay bounded
//! (DESIGN.md §3.5: segments before the last checkpoint's redo point are recycled; ARIES,
//! Mohan et al., TODS 1992, §5.4). Without it, only a clean close checkpoints, and a database
//! that runs for a day keeps a day of log and redoes all of it after a crash.
//!
//! A checkpoint also lets hot pages' recovery LSNs move on: a page's recovery LSN stays at
//! its full-page image until a checkpoint begins after that image (txn rule 3), so the page
//! cleaner can advance the redo point only across checkpoints (`buffer::cleaner`, "Futile
//! writes"). The log a restart reads is thus at most about two checkpoint intervals plus the
//! cleaner's lag, and an active transaction's log since its first record.
//!
//! Invariants:
//! 1. Checkpoints are serialised by the engine's checkpoint mutex, which
//!    [`Engine::checkpoint`](super::Engine::checkpoint) takes too.
//! 2. The thread holds only `Weak` references to the transaction and space managers, so it
//!    never keeps a dropped engine's parts alive; it stops when they are gone.
//! 3. The engine stops and joins the thread before it closes the pool (`Engine::close`) and
//!    when it is dropped, so no background checkpoint runs against a closing engine.
//! 4. A failed checkpoint is counted and its error kept ([`CheckpointCounts`]); the thread
//!    tries again only after another interval of log, so a lasting failure (a failed log or
//!    pool, which every transaction sees anyway) is not retried in a loop.

use crate::error::Result;
use crate::recovery::{self, CheckpointInfo};
use crate::space::SpaceManager;
use crate::sync::periodic::Periodic;
use crate::txn::TxnManager;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Weak};
use std::time::Duration;

/// How often the thread compares the log's end with the newest checkpoint's begin.
const POLL: Duration = Duration::from_millis(100);

/// Checkpoints taken and failed since the engine was opened (not counting the one that
/// ends restart).
#[derive(Debug, Default)]
pub struct CheckpointCounts {
    taken: AtomicU64,
    failed: AtomicU64,
    last_error: Mutex<Option<String>>,
}

impl CheckpointCounts {
    /// Checkpoints that completed, in the background or by [`super::Engine::checkpoint`].
    pub fn taken(&self) -> u64 {
        self.taken.load(Relaxed)
    }

    /// Checkpoints that failed.
    pub fn failed(&self) -> u64 {
        self.failed.load(Relaxed)
    }

    /// The error of the newest failed checkpoint, if any failed.
    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().clone()
    }
}

/// Takes one checkpoint under `lock` (invariant 1), after freeing the pages whose unlinking
/// is durable (space invariant 5), and counts it in `counts`.
///
/// # Errors
/// As [`recovery::checkpoint`] and [`SpaceManager::free_durable`].
pub(crate) fn take(
    txns: &TxnManager,
    space: &SpaceManager,
    lock: &Mutex<()>,
    counts: &CheckpointCounts,
) -> Result<CheckpointInfo> {
    let _g = lock.lock();
    let r = space
        .free_durable(txns.log().durable_lsn())
        .and_then(|_freed| recovery::checkpoint(txns));
    match &r {
        Ok(_) => {
            counts.taken.fetch_add(1, Relaxed);
        }
        Err(e) => {
            counts.failed.fetch_add(1, Relaxed);
            *counts.last_error.lock() = Some(e.to_string());
        }
    }
    r
}

/// The background checkpoint thread (module doc).
pub(crate) struct Checkpointer {
    thread: Periodic,
}

impl Checkpointer {
    /// Starts the thread: a checkpoint whenever the log's end is `every_bytes` (at least 1)
    /// past the newest checkpoint's begin.
    ///
    /// # Errors
    /// The OS error if the thread cannot be spawned.
    pub(crate) fn start(
        txns: Weak<TxnManager>,
        space: Weak<SpaceManager>,
        lock: Arc<Mutex<()>>,
        counts: Arc<CheckpointCounts>,
        every_bytes: u64,
    ) -> std::io::Result<Checkpointer> {
        // After a failure: the log's end then (invariant 4).
        let mut retry_from = 0;
        let thread = Periodic::spawn("shoal-checkpoint", POLL, move || {
            let (Some(txns), Some(space)) = (txns.upgrade(), space.upgrade()) else {
                return false;
            };
            let since = txns.checkpoint_begin().0.max(retry_from);
            if txns.log().end_lsn().0.saturating_sub(since) >= every_bytes
                && take(&txns, &space, &lock, &counts).is_err()
            {
                retry_from = txns.log().end_lsn().0;
            }
            true
        })?;
        Ok(Checkpointer { thread })
    }

    /// Stops the thread and waits for it (a checkpoint in progress completes first).
    /// Idempotent.
    pub(crate) fn stop(&self) {
        self.thread.stop();
    }
}
