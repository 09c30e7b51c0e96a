//! The catalog: one B-tree of the database that maps each table's name to its number, its
//! trees' roots and its definition (DESIGN.md §3.10: "the catalog is stored in B-trees of the
//! database itself"). Its root page is recorded once, at creation, in the `catalog` file of
//! the database directory (`db` module).
//!
//! Entries (catalog keys are ASCII tags followed by bytes, so they sort by kind):
//!
//! ```text
//!  "N"          → next number u32 (tables and indexes draw numbers from it; 0 = the catalog)
//!  "T" ‖ name   → [version u8 = 1][table number u32][primary root u64]
//!                 [index count u16]([index number u32][index root u64])*[TableDef bytes]
//! ```
//!
//! Catalog changes are ordinary changes of the catalog tree in the caller's transaction
//! (its key locks serialise two transactions creating the same name; the counter's X lock
//! serialises number allocation), so a rolled-back CREATE TABLE leaves no entry. The
//! table's new trees are made by system transactions; a rollback frees their pages
//! (`Transaction::on_rollback`), a crash before the commit leaves them allocated and
//! unreachable (a leak that `verify` counts, like an interrupted split's). DROP TABLE
//! removes the entry and, once its commit is durable, frees every page of the table's trees.

use super::handle::Table;
use super::TableDef;
use crate::btree::{BTree, LockSpace};
use crate::error::{Error, Result};
use crate::lock::{mgl, LockDuration, LockName, Wait};
use crate::space::SpaceManager;
use crate::txn::{Transaction, TxnManager};
use crate::types::PageId;
use std::sync::Arc;

const ENTRY_VERSION: u8 = 1;
const NEXT_KEY: &[u8] = b"N";
const TABLE_TAG: u8 = b'T';

/// Lock-name database number of Shoal's tables and indexes.
pub const LOCK_DB: u32 = 0;

/// The catalog tree of one database.
#[derive(Clone, Debug)]
pub struct Catalog {
    tree: BTree,
    space: Arc<SpaceManager>,
}

fn table_key(name: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + name.len());
    k.push(TABLE_TAG);
    k.extend_from_slice(name.as_bytes());
    k
}

struct Entry {
    id: u32,
    primary: PageId,
    indexes: Vec<(u32, PageId)>,
    def: TableDef,
}

impl Entry {
    fn encode(&self) -> Vec<u8> {
        let mut v = vec![ENTRY_VERSION];
        v.extend_from_slice(&self.id.to_le_bytes());
        v.extend_from_slice(&self.primary.0.to_le_bytes());
        v.extend_from_slice(&(self.indexes.len() as u16).to_le_bytes());
        for (id, root) in &self.indexes {
            v.extend_from_slice(&id.to_le_bytes());
            v.extend_from_slice(&root.0.to_le_bytes());
        }
        v.extend_from_slice(&self.def.encode());
        v
    }

    fn decode(name: &str, b: &[u8]) -> Result<Entry> {
        let bad = |why: &str| Error::CorruptRecord {
            what: format!("catalog entry of table `{name}`"),
            reason: why.to_string(),
        };
        let mut at = 0usize;
        let mut take = |n: usize| -> Result<&[u8]> {
            let s = b.get(at..at + n).ok_or_else(|| bad("truncated"))?;
            at += n;
            Ok(s)
        };
        if take(1)?[0] != ENTRY_VERSION {
            return Err(bad("unknown entry version"));
        }
        let u32_of = |s: &[u8]| u32::from_le_bytes(s.try_into().expect("4 bytes"));
        let u64_of = |s: &[u8]| u64::from_le_bytes(s.try_into().expect("8 bytes"));
        let id = u32_of(take(4)?);
        let primary = PageId(u64_of(take(8)?));
        let n = u16::from_le_bytes(take(2)?.try_into().expect("2 bytes")) as usize;
        let mut indexes = Vec::with_capacity(n);
        for _ in 0..n {
            let iid = u32_of(take(4)?);
            indexes.push((iid, PageId(u64_of(take(8)?))));
        }
        let def = TableDef::decode(&b[at..])?;
        if def.indexes().len() != n || def.name() != name {
            return Err(bad("definition does not match the entry"));
        }
        Ok(Entry {
            id,
            primary,
            indexes,
            def,
        })
    }
}

impl Catalog {
    /// Creates the catalog tree of a new database.
    ///
    /// # Errors
    /// Allocation, log and buffer-pool errors.
    pub(crate) fn create(txns: &TxnManager, space: &Arc<SpaceManager>) -> Result<Catalog> {
        let tree = BTree::create(txns, space)?;
        Ok(Catalog::with_tree(tree, space))
    }

    /// Opens the catalog tree at `root`.
    ///
    /// # Errors
    /// [`Error::Corruption`] if `root` is not a B-tree root; buffer-pool errors.
    pub(crate) fn open(
        txns: &TxnManager,
        space: &Arc<SpaceManager>,
        root: PageId,
    ) -> Result<Catalog> {
        let tree = BTree::open(txns.pool().clone(), space.clone(), root)?;
        Ok(Catalog::with_tree(tree, space))
    }

    fn with_tree(tree: BTree, space: &Arc<SpaceManager>) -> Catalog {
        Catalog {
            tree: tree.with_locking(LockSpace {
                db: LOCK_DB,
                table: 0,
            }),
            space: space.clone(),
        }
    }

    /// The catalog tree's root page.
    pub fn root(&self) -> PageId {
        self.tree.root()
    }

    /// The catalog tree itself (for `verify`).
    pub fn tree(&self) -> &BTree {
        &self.tree
    }

    fn next_number(&self, txn: &mut Transaction<'_>) -> Result<u32> {
        let n = match self.tree.get_in_for_update(txn, NEXT_KEY)? {
            Some(b) if b.len() == 4 => u32::from_le_bytes(b.try_into().expect("4 bytes")),
            Some(_) => {
                return Err(Error::CorruptRecord {
                    what: "catalog counter".into(),
                    reason: "not 4 bytes".into(),
                })
            }
            None => 1,
        };
        let next = n.checked_add(1).ok_or_else(|| {
            Error::invalid("table", "the database has used every table number (2^32)")
        })?;
        self.tree.upsert(txn, NEXT_KEY, &next.to_le_bytes())?;
        Ok(n)
    }

    /// Creates table `def` (its primary tree and one tree per index) in `txn`.
    ///
    /// # Errors
    /// [`Error::DuplicateKey`] (index `catalog.tables`) if a table of that name exists;
    /// lock, allocation, log and buffer-pool errors.
    pub fn create_table(&self, txn: &mut Transaction<'_>, def: TableDef) -> Result<Table> {
        let key = table_key(def.name());
        if self.tree.get_in(txn, &key)?.is_some() {
            return Err(Error::DuplicateKey {
                index: "catalog.tables".into(),
                key: def.name().to_string(),
            });
        }
        let mgr = txn.manager();
        let id = self.next_number(txn)?;
        let primary = BTree::create(mgr, &self.space)?;
        self.free_on_rollback(txn, primary.clone());
        let mut indexes = Vec::with_capacity(def.indexes().len());
        for _ in def.indexes() {
            let iid = self.next_number(txn)?;
            let tree = BTree::create(mgr, &self.space)?;
            self.free_on_rollback(txn, tree.clone());
            indexes.push((iid, tree.root()));
        }
        let entry = Entry {
            id,
            primary: primary.root(),
            indexes,
            def,
        };
        self.tree
            .insert(txn, &key, &entry.encode())
            .map_err(|e| match e {
                Error::DuplicateKey { key, .. } => Error::DuplicateKey {
                    index: "catalog.tables".into(),
                    key,
                },
                e => e,
            })?;
        self.handle(entry)
    }

    /// Frees `tree`'s pages if `txn` rolls back (its catalog entry is gone then, and no
    /// other transaction could see the tree: the entry was X-locked).
    ///
    /// Freed once the log is durable past the rollback (space invariant 5), so that every
    /// record of a page's old life lies below the durable end when the page is handed out
    /// again (what a new page's image in a log lane relies on: `Transaction::log_new_page`).
    fn free_on_rollback(&self, txn: &mut Transaction<'_>, tree: BTree) {
        let space = self.space.clone();
        let log = txn.manager().log().clone();
        txn.on_rollback(move || {
            let pages: Vec<_> = tree.verify()?.pages.into_iter().collect();
            space.free_after(&pages, log.end_lsn())?;
            space.free_durable(log.durable_lsn()).map(|_| ())
        });
    }

    fn handle(&self, e: Entry) -> Result<Table> {
        let pool = self.tree.pool.clone();
        let space = self.space.clone();
        let open = |id: u32, root: PageId| -> Result<BTree> {
            Ok(
                BTree::open(pool.clone(), space.clone(), root)?.with_locking(LockSpace {
                    db: LOCK_DB,
                    table: id,
                }),
            )
        };
        Ok(Table {
            primary: open(e.id, e.primary)?,
            indexes: e
                .indexes
                .iter()
                .map(|&(id, root)| open(id, root))
                .collect::<Result<_>>()?,
            id: e.id,
            def: Arc::new(e.def),
        })
    }

    /// Opens table `name`, read in `txn` (with its isolation level's locks on the catalog
    /// entry, so a concurrent DROP waits or is waited for).
    ///
    /// # Errors
    /// [`Error::NoSuchTable`]; [`Error::CorruptRecord`] for an entry that does not decode;
    /// lock and buffer-pool errors.
    pub fn table(&self, txn: &mut Transaction<'_>, name: &str) -> Result<Table> {
        match self.tree.get_in(txn, &table_key(name))? {
            Some(b) => self.handle(Entry::decode(name, &b)?),
            None => Err(Error::NoSuchTable {
                name: name.to_string(),
            }),
        }
    }

    /// The names of the tables, in byte order (read without locks).
    ///
    /// # Errors
    /// Buffer-pool errors; [`Error::CorruptRecord`] for a name that is not UTF-8.
    pub fn table_names(&self) -> Result<Vec<String>> {
        let lo = [TABLE_TAG];
        let hi = [TABLE_TAG + 1];
        self.tree
            .scan(
                std::ops::Bound::Included(&lo[..]),
                std::ops::Bound::Excluded(&hi[..]),
                crate::btree::ScanDirection::Forward,
            )
            .map(|kv| {
                let (k, _) = kv?;
                String::from_utf8(k[1..].to_vec()).map_err(|_| Error::CorruptRecord {
                    what: "catalog".into(),
                    reason: "a table name is not UTF-8".into(),
                })
            })
            .collect()
    }

    /// Drops table `name` in `txn`: X-locks the table, removes its entry, and frees its
    /// trees' pages once the commit is durable (nothing is freed if `txn` rolls back).
    ///
    /// # Errors
    /// As [`Catalog::table`].
    pub fn drop_table(&self, txn: &mut Transaction<'_>, name: &str) -> Result<()> {
        let table = self.table(txn, name)?;
        txn.lock(
            &LockName::table(LOCK_DB, table.id()),
            mgl::X,
            LockDuration::Long,
            Wait::Yes,
        )?;
        self.tree.delete(txn, &table_key(name))?;
        let space = self.space.clone();
        let trees: Vec<BTree> = std::iter::once(table.primary.clone())
            .chain(table.indexes.iter().cloned())
            .collect();
        txn.after_commit(move || {
            for t in trees {
                for p in t.verify()?.pages {
                    space.free(p)?;
                }
            }
            Ok(())
        });
        Ok(())
    }
}
