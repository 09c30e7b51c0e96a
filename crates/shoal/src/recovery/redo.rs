//! Restart's redo pass (recovery rule 3).

use super::analysis::Analysis;
use crate::buffer::ExclusiveGuard;
use crate::error::{Error, Result};
use crate::log::record::{LogRecord, RecordKind};
use crate::txn::{ImageView, TxnManager};
use crate::types::{Lsn, PageId};
use std::collections::HashSet;

pub(crate) struct RedoCounts {
    pub(crate) redone: u64,
    pub(crate) images_installed: u64,
}

pub(crate) fn redo(txns: &TxnManager, a: &Analysis) -> Result<RedoCounts> {
    let log = txns.log();
    let pool = txns.pool();
    let mut counts = RedoCounts {
        redone: 0,
        images_installed: 0,
    };
    // Pages whose base (image or disk copy) this pass has already established.
    let mut based: HashSet<PageId> = HashSet::new();
    let mut reader = log.reader(a.redo_lsn)?;
    while let Some((lsn, rec)) = reader.next_record()? {
        if lsn >= a.end {
            break;
        }
        let changes_page = matches!(
            rec.kind,
            RecordKind::Update
                | RecordKind::Compensation
                | RecordKind::SystemRedo
                | RecordKind::SystemUpdate
                | RecordKind::PageImage
        );
        if !changes_page {
            continue;
        }
        let pid = rec.page_id;
        let mut page = if based.insert(pid) {
            // Analysis kept only images at or after the redo LSN (recovery rule 2).
            match a.images.get(&pid) {
                Some(best) => {
                    counts.images_installed += 1;
                    install_image(txns, pid, best.record_lsn, lsn, &rec)?
                }
                None => pool.fix_exclusive(pid).map_err(|e| match e {
                    Error::Corruption { page_id, reason } => Error::Corruption {
                        page_id,
                        reason: format!(
                            "{reason} (restart found no full-page image to replace it: the \
                             page was damaged, not torn by a crash)"
                        ),
                    },
                    e => e,
                })?,
            }
        } else {
            pool.fix_exclusive(pid)?
        };
        if rec.kind == RecordKind::PageImage || page.page_lsn() >= lsn {
            continue; // images act only as bases; the page already holds this change
        }
        if !page.is_dirty() {
            // Read from disk and about to change: the torn-page rule applies in redo too.
            page.mark_dirty_since(lsn);
            let image = txns.append_image(&page, 0)?;
            page.set_image_lsn(image);
        }
        txns.resources()
            .redo(lsn, pid, &rec.redo, &mut page.page_mut(), None)
            .map_err(|e| match e {
                Error::Corruption { page_id, reason } => Error::Corruption {
                    page_id,
                    reason: format!("{reason} (redo of the {:?} record at LSN {lsn})", rec.kind),
                },
                e => e,
            })?;
        page.mark_dirty_since(lsn);
        page.set_page_lsn(lsn);
        counts.redone += 1;
    }
    Ok(counts)
}

/// Installs the image carried by the record at `image_lsn` as page `pid` without reading
/// the page, marking it dirty with a recovery LSN at or below both that record and the
/// record `now` being redone. `current` is the record at `now` (reused if it is the image).
fn install_image<'p>(
    txns: &'p TxnManager,
    pid: PageId,
    image_lsn: Lsn,
    now: Lsn,
    current: &LogRecord,
) -> Result<ExclusiveGuard<'p>> {
    let owned;
    let rec = if image_lsn == now {
        current
    } else {
        owned = txns.log().read_record(image_lsn)?;
        &owned
    };
    if rec.kind != RecordKind::PageImage || rec.page_id != pid {
        return Err(Error::log_corruption(
            image_lsn,
            format!("expected the image of page {pid} here"),
        ));
    }
    let pool = txns.pool();
    let view = ImageView::parse(&rec.redo, pool.page_size(), image_lsn)?;
    let mut page = pool.fix_uninit(pid)?;
    view.write_to(&mut page.page_mut(), image_lsn);
    page.mark_dirty_since(image_lsn.min(now));
    page.set_image_lsn(image_lsn); // redo logs nothing else: every later change follows it
    Ok(page)
}
