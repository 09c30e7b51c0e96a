//! # Shoal — a transactional storage manager for multicore machines
//!
//! Shoal is a library that an application embeds (as it would embed Berkeley DB, Apache Derby
//! or SQLite). It is built bottom-up from the components of `DESIGN.md` §2:
//!
//! ```text
//!   db (Database: a directory, its lock file and catalog; inspect, verify)
//!        │
//!   table (schemas, rows, codecs, catalog, Table operations) ──► btree (+ key locking)
//!        │
//!   engine (Engine: open = restart, close, checkpoint)
//!        │
//!   recovery (ARIES restart, checkpoints) ──► txn (transactions, logged page changes, images)
//!        │                                        │        ▲ resource managers: kvstore (test AM)
//!        ▼                                        ▼
//!   buffer pool (buffer) ──► space manager (space)      log (log) ◄── WAL hook of the pool
//!        │   page format (page)
//!        ▼
//!   storage I/O (io): data files, log segments, fault injection
//!   synchronisation (sync): hybrid latches          statistics (stats)
//!
//!   lock manager (lock): modes as data (MGL, taDOM), partitioned lock table, fast-path
//!   intention locks, deadlock detection, escalation — beside the stack, used by txn
//! ```
//!
//! Lower layers never import higher ones: `sync` and `io` import nothing of Shoal but
//! [`error`] and [`types`]; `page` uses `sync`-free byte access; `buffer` uses `io`, `page`,
//! `sync` and `stats` (and sees the log only through its `WalHook` trait); `space` uses
//! `buffer`; `log` uses `io` and implements the pool's hook; `txn` uses `log`, `buffer` and
//! `lock`;
//! `lock` imports only [`error`], [`types`] and [`stats`];
//! `recovery` uses `txn`; `engine` wires them together and registers the resource managers
//! of the access methods (`kvstore`, the B-tree), which sit on `txn`; the B-tree locks keys
//! through `txn` and `lock`. `table` sits above `btree` (its catalog and tables are
//! B-trees), and `db` above `table` and `engine`.

//! The guiding principles (DESIGN.md §1, from the Shore-MT paper, Johnson et al., EDBT 2009):
//! no global mutex on any per-operation path; hot spots removed even when read-mostly; never
//! wait for a lock while holding a latch; never do I/O while holding anything other threads
//! need except the X latch of the frame being read or written.

pub mod btree;
pub mod buffer;
pub mod db;
pub mod engine;
pub mod error;
pub mod io;
pub mod kvstore;
pub mod lock;
pub mod log;
pub mod options;
pub mod page;
pub mod recovery;
pub mod space;
pub mod stats;
pub mod sync;
pub mod table;
#[cfg(all(test, not(loom)))]
mod testing;
pub mod txn;
pub mod types;

pub use db::Database;
pub use engine::Engine;
pub use error::{Error, Result};
pub use options::Options;
pub use txn::IsolationLevel;
pub use types::{Lsn, PageId, TxnId};
