//! # Recovery — ARIES restart and fuzzy checkpoints
//!
//! Job: after a crash, bring the data pages back to the state that the durable log
//! describes and roll back every transaction that had not committed (DESIGN.md §3.6; Mohan
//! et al., "ARIES", TODS 17(1) 1992, §6 restart processing, §5.4 checkpoints); and take
//! checkpoints that bound how much log a restart reads and keeps.
//!
//! ```text
//!  log start ─────────── redo LSN ──── CheckpointBegin ── CheckpointEnd ─────────── end
//!  analysis:  ├──────────────────────────────────────────────────────────────────────┤
//!  redo:                 ├───────────────────────────────────────────────────────────┤
//!  undo:      ◄───────── losers' chains, newest record first, CLRs appended at end ─────►
//! ```
//!
//! ## Rules
//! 1. **Checkpoint** ([`checkpoint`]): append `CheckpointBegin`; read the buffer pool's oldest
//!    recovery LSN (which syncs the data file first, so every page it counts as clean is
//!    durable); the redo LSN is the lowest of that, the begin LSN and the lowest claim of
//!    an open log-lane chunk (read before the pool: log lane rule L5); append `CheckpointEnd`
//!    `[begin u64][redo u64][start u64]` and force it; then the log before
//!    `start = min(redo LSN, first LSN of every active transaction)` is dropped. No page is
//!    written and no transaction waits: the checkpoint is fuzzy.
//! 2. **Analysis** scans the whole kept log (from its start, not from the checkpoint as ARIES
//!    does: rule 1 keeps every record of every transaction that may lose, so the transaction
//!    table is rebuilt from the log alone and no checkpoint snapshot can disagree with it).
//!    It finds the losers (transactions with records but no `Commit` or `End`), the highest
//!    transaction id, the redo LSN of the last `CheckpointEnd`, and for each page its
//!    *best image*: the full-page image with the highest base LSN (`txn` module, rule 3),
//!    if that image was logged at or after the redo LSN. An older one is no base: the page
//!    was written after it and its write synced by the checkpoint (otherwise the page was
//!    dirty at the checkpoint and its image lies at or after the redo LSN), so the disk copy
//!    holds the changes below the redo LSN that redo does not replay.
//! 3. **Redo** repeats history from the redo LSN to the end found at open. A page's first
//!    touch either installs its best image (never reading the page, so a torn copy on disk is
//!    never loaded) or reads it from disk (a checksum failure there is corruption: the
//!    torn-page rule says it cannot be torn). Then the page-LSN test: a record is applied only
//!    if page LSN < record LSN. A page dirtied by redo gets a recovery LSN at or below the
//!    record applied, and, if it was clean (read from disk), an image first (torn-page rule:
//!    a crash during restart must find it protected as well).
//! 4. **Undo** rolls the losers back in one backward sweep, always the highest LSN first,
//!    writing compensation records (CLRs) whose undo-next LSN skips what they undid; a CLR
//!    met on the chain is never undone, its undo-next is followed. Each loser ends with `End`.
//!    Incomplete *system* transactions (structure modifications cut by the crash) are rolled
//!    back first, in a sweep of their own, so that the logical undo of user transactions
//!    (a B-tree delete that descends the tree to find its key) walks a structurally
//!    consistent tree. This order is safe: a system transaction holds the X latches of all
//!    its pages until its `Commit` is appended, so no record of another transaction on those
//!    pages can follow one of its records unless its `Commit` does too (ARIES nested top
//!    actions, Mohan et al. §10.3, with the `Commit` in the role of the dummy CLR).
//! 5. **Idempotence**: redo writes nothing but images, undo continues from what earlier CLRs
//!    did, so a crash at any point of restart is recovered by the next restart.
//! 6. Restart ends with a checkpoint, so the next one starts its redo at the end of this one.
//! 7. While the database runs, the engine takes a checkpoint whenever the log has grown by
//!    `Options::checkpoint_log_bytes` (default 512 MiB) since the newest one began
//!    (`engine::checkpointer`), and a clean close takes one. A hot page's recovery LSN stays
//!    at its newest image until a checkpoint begins after it (`txn` rule 3), so the kept log
//!    spans about two checkpoint intervals, plus the cleaner's lag and the log of the oldest
//!    active transaction.
//!
//! ## Latching
//! Restart runs before the database is handed to users: one thread, one page latch at a time.
//! A checkpoint holds no latch; it runs concurrently with transactions.
//!
//! ## Not done here
//! Parallel redo by page partition; a dirty-page table to skip the page-LSN test's reads (with
//! full-page images, pages changed since the redo LSN are installed, not read).

mod analysis;
mod redo;

use crate::error::Result;
use crate::log::record::{LogRecord, RecordKind};
use crate::txn::TxnManager;
use crate::types::{Lsn, TxnId};
use std::collections::BinaryHeap;
use std::time::Instant;

/// What a restart found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RestartReport {
    /// Where analysis started (the log's start).
    pub start_lsn: Lsn,
    /// Where redo started (the last checkpoint's redo LSN, or the start).
    pub redo_lsn: Lsn,
    /// The end of the log at open.
    pub end_lsn: Lsn,
    /// Bytes of log analysed (`end_lsn - start_lsn`).
    pub log_bytes: u64,
    /// Records analysed.
    pub records: u64,
    /// Records redone (applied to a page after the page-LSN test).
    pub redone: u64,
    /// Pages installed from full-page images instead of being read.
    pub images_installed: u64,
    /// Transactions rolled back.
    pub losers: u64,
    /// Of `losers`, the system transactions (structure modifications the crash cut short).
    pub system_losers: u64,
    /// Records undone (compensation records written).
    pub undone: u64,
    /// Microseconds in analysis, redo and undo.
    pub analysis_us: u64,
    /// See `analysis_us`.
    pub redo_us: u64,
    /// See `analysis_us`.
    pub undo_us: u64,
}

/// Runs ARIES restart (rules 2–6) over the log and pool of `txns`, which must not be used by
/// anyone else until it returns.
///
/// # Errors
/// [`Error::LogCorruption`](crate::Error::LogCorruption) for a record that cannot be
/// interpreted; [`Error::Corruption`](crate::Error::Corruption) for a page that fails its
/// checksum and has no image to replace it; log, buffer and I/O errors. After an error the
/// database must not be used; a later restart begins again (rule 5).
pub fn restart(txns: &TxnManager) -> Result<RestartReport> {
    let t0 = Instant::now();
    let a = analysis::analyse(txns)?;
    txns.reserve_ids_through(a.max_txn_id);
    let mut report = RestartReport {
        start_lsn: a.start,
        redo_lsn: a.redo_lsn,
        end_lsn: a.end,
        log_bytes: a.end.0 - a.start.0,
        records: a.records,
        losers: a.losers.len() as u64,
        system_losers: a.losers.values().filter(|l| l.system).count() as u64,
        analysis_us: t0.elapsed().as_micros() as u64,
        ..Default::default()
    };
    let t1 = Instant::now();
    let r = redo::redo(txns, &a)?;
    report.redone = r.redone;
    report.images_installed = r.images_installed;
    report.redo_us = t1.elapsed().as_micros() as u64;

    let t2 = Instant::now();
    // Rule 4: incomplete system transactions first, then the user losers; each group in one
    // sweep, highest LSN first.
    for system in [true, false] {
        let mut heap = BinaryHeap::new();
        let mut entries = std::collections::HashMap::new();
        for (&id, l) in a.losers.iter().filter(|(_, l)| l.system == system) {
            entries.insert(id, txns.adopt(id, l.first_lsn, l.last_lsn));
            heap.push((l.last_lsn, id));
        }
        while let Some((lsn, id)) = heap.pop() {
            let e = &entries[&id];
            let before = e.last();
            let next = txns.undo_step(e, lsn)?;
            if e.last() != before {
                report.undone += 1;
            }
            if next == Lsn::ZERO {
                txns.end(e)?;
            } else {
                heap.push((next, id));
            }
        }
    }
    report.undo_us = t2.elapsed().as_micros() as u64;
    checkpoint(txns)?; // rule 6
    Ok(report)
}

/// Where a checkpoint put its marks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointInfo {
    /// LSN of its `CheckpointBegin`.
    pub begin_lsn: Lsn,
    /// LSN of its `CheckpointEnd`.
    pub end_lsn: Lsn,
    /// Where the next restart's redo starts.
    pub redo_lsn: Lsn,
    /// The new start of the log (older segments were removed).
    pub start_lsn: Lsn,
}

/// Takes a fuzzy checkpoint (rule 1) and drops the log segments no restart needs any more.
/// Callers serialise checkpoints (the engine holds a mutex).
///
/// # Errors
/// Log errors; the data-file sync error ([`Error::PoolFailed`](crate::Error::PoolFailed)
/// afterwards).
pub fn checkpoint(txns: &TxnManager) -> Result<CheckpointInfo> {
    let log = txns.log();
    let control = |kind, redo| LogRecord::control(kind, TxnId::NONE, Lsn::ZERO, redo);
    let begin = log.append(&control(RecordKind::CheckpointBegin, Vec::new()))?;
    txns.publish_checkpoint_begin(begin);
    // Log lane rule L5: read after the begin record and before the scan, so that a record a
    // lane claims below `begin` after the scan lies at or above the redo LSN.
    let lanes = log.lanes_low_water();
    let redo_lsn = txns.pool().oldest_rec_lsn_now()?.min(begin).min(lanes);
    let start = redo_lsn.min(txns.oldest_first_lsn());
    let mut payload = Vec::with_capacity(24);
    for v in [begin, redo_lsn, start] {
        payload.extend_from_slice(&v.0.to_le_bytes());
    }
    let end = log.append(&control(RecordKind::CheckpointEnd, payload))?;
    log.wait_durable(end)?;
    log.remove_before(start)?;
    Ok(CheckpointInfo {
        begin_lsn: begin,
        end_lsn: end,
        redo_lsn,
        start_lsn: start,
    })
}

/// Parses a `CheckpointEnd` payload: (begin, redo, start).
pub(crate) fn parse_checkpoint_end(lsn: Lsn, p: &[u8]) -> Result<(Lsn, Lsn, Lsn)> {
    if p.len() != 24 {
        return Err(crate::Error::log_corruption(
            lsn,
            format!("checkpoint end payload of {} bytes, expected 24", p.len()),
        ));
    }
    let at = |i: usize| Lsn(u64::from_le_bytes(p[i..i + 8].try_into().expect("8 bytes")));
    let (begin, redo, start) = (at(0), at(8), at(16));
    if !(redo <= begin && start <= redo && begin < lsn) {
        return Err(crate::Error::log_corruption(
            lsn,
            format!("checkpoint end with begin {begin}, redo {redo}, start {start}"),
        ));
    }
    Ok((begin, redo, start))
}

#[cfg(all(test, not(loom)))]
mod tests;
