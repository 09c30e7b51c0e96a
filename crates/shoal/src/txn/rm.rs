//! Resource managers: the components whose log records change pages (the test access method
//! `kvstore` now, the B-tree later). Redo and undo dispatch on the first byte of a record's
//! redo payload, the resource manager id. Ids: 1 = kvstore (`kvstore::RM_KVSTORE`), 2 = B-tree
//! (`btree::RM_BTREE`), 3 = space manager (`space::RM_SPACE`, logged extent reservations).

use super::UndoContext;
use crate::error::{Error, Result};
use crate::log::record::LogRecord;
use crate::page::AtomicBytesMut;
use crate::types::{Lsn, PageId};
use std::sync::Arc;

/// A component whose log records change pages. Registered per database: an implementation keeps
/// no state of its own beyond handles to the database's components (the B-tree's holds the
/// space manager, for the splits a logical undo may need); everything else is in pages.
pub trait ResourceManager: Send + Sync {
    /// The id in the first byte of this manager's redo payloads; unique, fixed forever.
    fn id(&self) -> u8;

    /// A name for error messages.
    fn name(&self) -> &'static str;

    /// Applies the change `payload` (a redo payload starting with [`ResourceManager::id`]) to
    /// page `page_id`. Used both to make a change (transaction rule 1: a change is made by
    /// applying its own redo record) and to repeat it during restart.
    ///
    /// Contract: every check comes before the first byte is changed, so an `Err` leaves the
    /// page untouched; and `Ok` for a payload it accepted once must be `Ok` again on the same
    /// page image (redo cannot fail where do succeeded).
    ///
    /// `lsn` is the record's LSN and serves only to name the record in errors. A change made
    /// for the first time ([`ResourceManager::redo_near`] from the transaction manager) has no
    /// LSN yet: its record is appended after the change is applied, and `lsn` is
    /// [`Lsn::ZERO`]. (Reading the end of the log instead would touch the log's most
    /// contended cache line once more per change.)
    ///
    /// # Errors
    /// [`Error::LogCorruption`] (naming `lsn`) for a payload it cannot parse; a page that does
    /// not fit the change (a duplicate key, no room) as the manager's own typed error.
    fn redo(
        &self,
        lsn: Lsn,
        page_id: PageId,
        payload: &[u8],
        page: &mut AtomicBytesMut<'_>,
    ) -> Result<()>;

    /// [`ResourceManager::redo`] for a change being made for the first time (transaction rule
    /// 1), with `near`: where the operation making it found the change's place on the page
    /// (for a B-tree, the number of the entry it replaces or removes, or of the slot a new
    /// entry goes to). A hint only: the manager checks it before it uses it and otherwise
    /// finds the place itself, so a wrong hint costs a search, never a wrong change. Restart
    /// calls [`ResourceManager::redo`]. The default ignores the hint.
    ///
    /// # Errors
    /// As [`ResourceManager::redo`].
    fn redo_near(
        &self,
        lsn: Lsn,
        page_id: PageId,
        payload: &[u8],
        page: &mut AtomicBytesMut<'_>,
        near: Option<usize>,
    ) -> Result<()> {
        let _ = near;
        self.redo(lsn, page_id, payload, page)
    }

    /// Undoes the undoable record `rec` of a losing or aborting transaction by making the
    /// compensating change(s) through `ctx`, which logs each as a compensation record.
    /// The default is page-oriented undo: the undo payload is itself the redo payload of the
    /// compensating change to the same page. A logical undo (a B-tree key that may have moved)
    /// overrides this.
    ///
    /// # Errors
    /// Those of [`UndoContext::compensate`].
    fn undo(&self, ctx: &mut UndoContext<'_>, rec: &LogRecord) -> Result<()> {
        ctx.compensate(rec.page_id, rec.undo.clone())
    }
}

/// The set of resource managers a database knows, indexed by id.
#[derive(Clone)]
pub struct Resources {
    by_id: Vec<Option<Arc<dyn ResourceManager>>>,
}

impl Default for Resources {
    /// No resource managers (the engine registers the built-in ones).
    fn default() -> Self {
        Resources {
            by_id: vec![None; 256],
        }
    }
}

impl Resources {
    /// Adds (or replaces) a resource manager under its id.
    pub fn register(&mut self, rm: Arc<dyn ResourceManager>) {
        let id = usize::from(rm.id());
        self.by_id[id] = Some(rm);
    }

    /// The manager that owns `payload` (by its first byte).
    ///
    /// # Errors
    /// [`Error::LogCorruption`] naming `lsn` if the payload is empty or names no known
    /// manager.
    pub fn for_payload(&self, lsn: Lsn, payload: &[u8]) -> Result<&Arc<dyn ResourceManager>> {
        let id = *payload
            .first()
            .ok_or_else(|| Error::log_corruption(lsn, "page change with an empty payload"))?;
        self.by_id[usize::from(id)]
            .as_ref()
            .ok_or_else(|| Error::log_corruption(lsn, format!("no resource manager with id {id}")))
    }

    /// Applies a redo payload to a page through its manager
    /// ([`ResourceManager::redo_near`], which without a hint is [`ResourceManager::redo`]).
    ///
    /// # Errors
    /// As [`Resources::for_payload`] and [`ResourceManager::redo`].
    pub fn redo(
        &self,
        lsn: Lsn,
        page_id: PageId,
        payload: &[u8],
        page: &mut AtomicBytesMut<'_>,
        near: Option<usize>,
    ) -> Result<()> {
        self.for_payload(lsn, payload)?
            .redo_near(lsn, page_id, payload, page, near)
    }
}

impl std::fmt::Debug for Resources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = self.by_id.iter().flatten().map(|r| r.name()).collect();
        f.debug_struct("Resources")
            .field("managers", &names)
            .finish()
    }
}
