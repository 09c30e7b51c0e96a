//! The transaction layer's side of logged extent reservations (space invariant 2,
//! `space::wal`): the resource manager that redoes them ([`SpaceRm`], id
//! [`RM_SPACE`](crate::space::RM_SPACE)), and [`ReservationLog`] for [`TxnManager`], which
//! logs each reservation as a one-record system transaction (DESIGN.md §3.5: page allocation
//! runs as a system transaction that commits on its own).
//!
//! Latching: the caller holds the map page's X latch; the system transaction takes no lock
//! and no other latch, and its commit does not wait for the log.

use super::rm::ResourceManager;
use super::TxnManager;
use crate::buffer::ExclusiveGuard;
use crate::error::Result;
use crate::page::AtomicBytesMut;
use crate::space::{wal, ReservationLog, RM_SPACE};
use crate::types::{Lsn, PageId};

/// The resource manager of the space manager's records: redo only (they are `SystemRedo`
/// records, never undone).
#[derive(Debug, Default)]
pub struct SpaceRm;

impl ResourceManager for SpaceRm {
    fn id(&self) -> u8 {
        RM_SPACE
    }

    fn name(&self) -> &'static str {
        "space"
    }

    fn redo(
        &self,
        lsn: Lsn,
        page_id: PageId,
        payload: &[u8],
        page: &mut AtomicBytesMut<'_>,
    ) -> Result<()> {
        wal::redo(lsn, page_id, payload, page)
    }
}

impl ReservationLog for TxnManager {
    fn log_reservation(&self, map_page: &mut ExclusiveGuard<'_>, redo: Vec<u8>) -> Result<Lsn> {
        let mut sys = self.begin_system();
        let lsn = sys.change(map_page, redo, Vec::new())?;
        // Transaction rule 8: the commit is appended before the caller releases the latch.
        sys.commit()?;
        Ok(lsn)
    }
}
