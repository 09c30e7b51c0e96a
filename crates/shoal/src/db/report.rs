//! What `shoal inspect` and `shoal verify` report about a database: its tables and their
//! sizes, and every problem a full check finds (DESIGN.md §3.9 "verify", issue 6).

use super::Database;
use crate::error::{Error, Result};
use crate::types::PageId;
use std::collections::BTreeSet;

/// One table as `inspect` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableSummary {
    /// The table's name.
    pub name: String,
    /// Its catalog number.
    pub id: u32,
    /// Rows (primary-tree entries).
    pub rows: u64,
    /// Secondary indexes, by name.
    pub indexes: Vec<String>,
    /// Pages of its primary tree and indexes (nodes and overflow pages).
    pub pages: u64,
    /// Height of the primary tree (1 = one leaf).
    pub height: u16,
}

/// What [`Database::inspect`] and [`Database::verify`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DatabaseReport {
    /// Page size in bytes.
    pub page_size_bytes: usize,
    /// Pages the data file has (allocated or free).
    pub file_pages: u64,
    /// Pages marked allocated (including the file header and space maps).
    pub allocated_pages: u64,
    /// Bytes of log kept on disk.
    pub log_bytes: u64,
    /// The tables, by name.
    pub tables: Vec<TableSummary>,
    /// Allocated data pages no tree reaches: leaks of structure changes or CREATEs cut short
    /// by a crash or a rollback, and of merged-away pages or overflow chains still queued to
    /// be freed at a crash (`btree` module doc, rules 10 and 11). Not corruption.
    pub unreachable_pages: u64,
    /// Problems found (empty for a healthy database): damaged pages (checksums), tree
    /// invariants, rows that do not decode, indexes that disagree with their table.
    pub problems: Vec<String>,
}

impl DatabaseReport {
    /// True if no problem was found.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

impl Database {
    /// Summarises the database: tables with row counts, indexes, pages, file and log size.
    /// Reads every table (no locks: meant for a quiet database).
    ///
    /// # Errors
    /// Buffer-pool and I/O errors; a damaged page is an error here (use
    /// [`Database::verify`] to list every problem).
    pub fn inspect(&self) -> Result<DatabaseReport> {
        self.report(false)
    }

    /// Checks everything: the checksum of every allocated page (read from disk unless it
    /// is in the buffer pool), the catalog tree, every table's trees, rows and indexes
    /// ([`crate::table::Table::verify`]), and that every page a tree uses is allocated.
    /// Run it on a quiet database; it takes no locks.
    ///
    /// # Errors
    /// Only failures to run the check (I/O errors on the log or the space maps); damage is
    /// reported in [`DatabaseReport::problems`].
    pub fn verify(&self) -> Result<DatabaseReport> {
        self.report(true)
    }

    fn report(&self, full: bool) -> Result<DatabaseReport> {
        let engine = self.engine();
        let space = engine.space();
        let pool = engine.pool();
        if full {
            // Reserved-but-unused pages are marked allocated: give them back first, and
            // free the merged-away pages waiting for the log (space invariant 5), so that
            // only real leaks count as unreachable.
            engine.free_pending()?;
            space.release_caches()?;
        }
        let mut r = DatabaseReport {
            page_size_bytes: pool.page_size(),
            file_pages: space.page_count(),
            allocated_pages: space.allocated_count()?,
            log_bytes: engine
                .log()
                .end_lsn()
                .0
                .saturating_sub(engine.log().start_lsn().0),
            ..DatabaseReport::default()
        };
        let mut never_written = BTreeSet::new();
        if full {
            for p in 0..r.file_pages {
                let pid = PageId(p);
                if !space.is_allocated(pid).unwrap_or(true) {
                    continue;
                }
                match pool.fix_shared(pid) {
                    Ok(_) => {}
                    // Allocated but never written: an allocation reserved before a crash
                    // and never used is a leak, not damage — unless a tree reaches it
                    // (then that tree's check reports it).
                    Err(Error::Corruption { reason, .. })
                        if reason == crate::page::header::NEVER_WRITTEN =>
                    {
                        never_written.insert(pid);
                    }
                    Err(e) => r.problems.push(format!("page {pid}: {e}")),
                }
            }
        }
        let mut reached: BTreeSet<PageId> = BTreeSet::new();
        let cat = self.catalog().tree().verify()?;
        r.problems
            .extend(cat.problems.iter().map(|p| format!("catalog: {p}")));
        reached.extend(cat.pages.iter().copied());
        let names = self.catalog().table_names()?;
        let mut tx = self.begin(crate::IsolationLevel::ReadUncommitted);
        for name in names {
            let t = match self.table(&mut tx, &name) {
                Ok(t) => t,
                Err(e) if full && !matches!(e, Error::Io { .. }) => {
                    r.problems.push(format!("table `{name}`: {e}"));
                    continue;
                }
                Err(e) => return Err(e),
            };
            let mut pages = 0u64;
            let mut height = 0;
            for (i, tree) in std::iter::once(&t.primary)
                .chain(t.indexes.iter())
                .enumerate()
            {
                let v = tree.verify()?;
                pages += v.pages.len() as u64;
                if i == 0 {
                    height = v.height;
                }
                reached.extend(v.pages.iter().copied());
            }
            let (rows, problems) = if full {
                t.verify()?
            } else {
                (t.primary.iter().count() as u64, Vec::new())
            };
            r.problems.extend(problems);
            r.tables.push(TableSummary {
                name: name.clone(),
                id: t.id(),
                rows,
                indexes: t.def().indexes().iter().map(|ix| ix.name.clone()).collect(),
                pages,
                height,
            });
        }
        tx.commit()?;
        if full {
            let mut unreachable = 0;
            for p in 0..r.file_pages {
                let pid = PageId(p);
                if space.is_data_page(pid) && space.is_allocated(pid)? && !reached.contains(&pid) {
                    unreachable += 1;
                }
            }
            r.unreachable_pages = unreachable;
            for pid in never_written.iter().filter(|p| reached.contains(p)) {
                r.problems.push(format!(
                    "page {pid}: {}",
                    crate::page::header::NEVER_WRITTEN
                ));
            }
        }
        Ok(r)
    }
}
