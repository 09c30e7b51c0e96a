//! Restart's analysis pass (recovery rule 2).

use crate::error::{Error, Result};
use crate::log::record::RecordKind;
use crate::txn::{ImageView, TxnManager};
use crate::types::{Lsn, PageId, TxnId};
use std::collections::HashMap;

/// A transaction that must be rolled back.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Loser {
    pub(crate) first_lsn: Lsn,
    pub(crate) last_lsn: Lsn,
    /// A system transaction (it wrote `SystemUpdate` or `SystemRedo` records): an incomplete
    /// structure modification, undone before every user transaction (recovery rule 4).
    pub(crate) system: bool,
}

/// The best full-page image of a page: the one with the highest base LSN.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BestImage {
    pub(crate) base_lsn: Lsn,
    pub(crate) record_lsn: Lsn,
}

/// What analysis found.
pub(crate) struct Analysis {
    pub(crate) start: Lsn,
    pub(crate) end: Lsn,
    pub(crate) redo_lsn: Lsn,
    pub(crate) records: u64,
    pub(crate) max_txn_id: TxnId,
    pub(crate) losers: HashMap<TxnId, Loser>,
    pub(crate) images: HashMap<PageId, BestImage>,
}

fn is_system(kind: RecordKind) -> bool {
    matches!(kind, RecordKind::SystemUpdate | RecordKind::SystemRedo)
}

pub(crate) fn analyse(txns: &TxnManager) -> Result<Analysis> {
    let log = txns.log();
    let page_size = txns.pool().page_size();
    let start = log.start_lsn();
    let end = log.end_lsn();
    let mut a = Analysis {
        start,
        end,
        redo_lsn: start,
        records: 0,
        max_txn_id: TxnId::NONE,
        losers: HashMap::new(),
        images: HashMap::new(),
    };
    let mut reader = log.reader(start)?;
    while let Some((lsn, rec)) = reader.next_record()? {
        if lsn >= end {
            break;
        }
        a.records += 1;
        if rec.txn_id != TxnId::NONE {
            a.max_txn_id = a.max_txn_id.max(rec.txn_id);
            match rec.kind {
                RecordKind::Commit | RecordKind::End => {
                    a.losers.remove(&rec.txn_id);
                }
                _ => match a.losers.get_mut(&rec.txn_id) {
                    // The chain must continue where it stopped.
                    Some(l) if rec.prev_lsn != l.last_lsn => {
                        return Err(Error::log_corruption(
                            lsn,
                            format!(
                                "record of transaction {} names previous LSN {} but its last \
                                 record is at {}",
                                rec.txn_id, rec.prev_lsn, l.last_lsn
                            ),
                        ));
                    }
                    Some(l) => {
                        l.last_lsn = lsn;
                        l.system |= is_system(rec.kind);
                    }
                    // First record seen. Its predecessors may lie before the start if the
                    // transaction committed before the checkpoint that moved the start (its
                    // Commit follows); a loser's predecessors are never dropped (rule 1).
                    None => {
                        a.losers.insert(
                            rec.txn_id,
                            Loser {
                                first_lsn: lsn,
                                last_lsn: lsn,
                                system: is_system(rec.kind),
                            },
                        );
                    }
                },
            }
        }
        match rec.kind {
            RecordKind::PageImage => {
                let base = ImageView::parse(&rec.redo, page_size, lsn)?.base_lsn(lsn);
                let best = a.images.entry(rec.page_id).or_insert(BestImage {
                    base_lsn: base,
                    record_lsn: lsn,
                });
                if base >= best.base_lsn {
                    *best = BestImage {
                        base_lsn: base,
                        record_lsn: lsn,
                    };
                }
            }
            RecordKind::CheckpointEnd => {
                let (_, redo, _) = super::parse_checkpoint_end(lsn, &rec.redo)?;
                a.redo_lsn = redo.max(start);
            }
            _ => {}
        }
    }
    // Only an image logged at or after the redo LSN may replace a page's disk copy (recovery
    // rule 3): a page whose newest image is older was written whole and synced by the
    // checkpoint after that image, and redo does not replay the records between the image
    // and the redo LSN, which the disk copy holds. (Analysis starts before the redo LSN when
    // an older transaction was still active, so it can meet such images.)
    let redo_lsn = a.redo_lsn;
    a.images.retain(|_, best| best.record_lsn >= redo_lsn);
    if reader.position() < end {
        return Err(Error::log_corruption(
            reader.position(),
            format!("the log's records end before its end at open ({end})"),
        ));
    }
    Ok(a)
}
