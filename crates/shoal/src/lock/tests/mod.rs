//! Lock manager tests: matrices entry by entry, names, queueing, durations, deadlocks,
//! timeouts, the fast path and escalation.

mod deadlock;
mod escalation;
mod fastpath;
mod handoff;
mod modes;
mod names;
mod queue;

use super::*;
use crate::testing::eventually;
use crate::types::TxnId;
use std::time::{Duration, Instant};

/// A manager for MGL with a short timeout (tests must not hang on a bug).
fn mgl(timeout_ms: u64) -> LockManager {
    LockManager::new(
        &MGL,
        LockOptions {
            timeout: Duration::from_millis(timeout_ms),
            ..LockOptions::default()
        },
    )
    .expect("valid options")
}

fn owner(m: &LockManager, txn: u64) -> LockOwner {
    m.owner(TxnId(txn)).expect("owner slot")
}

fn row(r: u64) -> LockName {
    LockName::row(1, 7, r)
}

fn table() -> LockName {
    LockName::table(1, 7)
}
