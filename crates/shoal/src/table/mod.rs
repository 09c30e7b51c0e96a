//! # Tables: schemas, typed values, rows and their keys
//!
//! Job: say what a table is and what its rows and keys look like as bytes (DESIGN.md
//! §3.10) — column types, table definitions with a primary key and secondary indexes, typed
//! [`Value`]s checked against their columns, the [`Row`] an application builds and reads,
//! the row codec, and the memcomparable keys of primary and secondary indexes. This is the
//! part of the table layer that needs no lock and no page: the catalog, the `Database` API
//! and the table operations (insert, get, update, delete, scans) are built on it.
//!
//! ```text
//!   Row::new().with("id", 7)            TableDef (columns, primary key, indexes)
//!   row![7, "alice", None::<i64>]            │ encode / decode ──► catalog B-tree
//!        │                                   ▼
//!        └── TableDef::check_row ──► Vec<Value> (one per column, normalized)
//!                                      │                        │
//!                   encode_row / decode_row               primary_key_of / index_key_of
//!                                      ▼                        ▼
//!             [ver|n|nulls|fixed|offsets|var bytes]      memcomparable key bytes
//!                     (B-tree leaf value)                  (B-tree key, btree::key)
//! ```
//!
//! ## Rules
//! 1. **Definitions are valid and immutable.** Every [`TableDef`] passed the checks of
//!    [`TableDef::new`]: 1 to 1,024 columns, names 1 to 128 bytes without control
//!    characters and unique (case-sensitive), type parameters in range, at most 64 indexes.
//!    A schema change ([`TableDef::with_index`], [`TableDef::with_added_column`]) makes a new
//!    definition, checked again.
//! 2. **The primary key** names 1 to 16 distinct columns, which are NOT NULL (made so by
//!    [`TableDef::new`]). The table's B-tree is keyed by it (DESIGN.md §3.10); the row
//!    stores every column, key columns included.
//! 3. **A value meets its column in one place** (`check.rs`) — for rows, keys and updates
//!    alike. NULL in a NOT NULL column is [`Error::NotNull`](crate::Error::NotNull); a value of another type is
//!    [`Error::TypeMismatch`](crate::Error::TypeMismatch), except lossless widenings (an `Int4` into INT8, FLOAT8 or
//!    DECIMAL, an `Int8` into DECIMAL); a value too large is [`Error::ValueTooLong`](crate::Error::ValueTooLong) (unit
//!    `characters`, `bytes`, `digits` or `fractional digits`). None of them is retryable.
//! 4. **What a value becomes in its column.** A CHAR(n) value is read back padded with
//!    spaces to `n` characters and stored without its trailing spaces. A string longer than
//!    `n` characters fits CHAR(n) or VARCHAR(n) only if the excess is spaces, which are cut
//!    (SQL's assignment rule). A DECIMAL(p,s) value is rescaled exactly to scale `s`: more
//!    significant fractional digits than `s` is `ValueTooLong` (`fractional digits`), more
//!    than `p` digits in all `ValueTooLong` (`digits`) — never rounded. Characters are
//!    Unicode scalar values. FLOAT8 bits are stored as given.
//! 5. **Key order is the SQL order of the type.** Keys are [`crate::btree::key`] encodings
//!    (see [`key_type`]): NULL first; BOOL false < true; integers, TIMESTAMP (by time) and
//!    DECIMAL (by numeric value: units at the column's one scale) numerically; CHAR by its
//!    padded value, which is SQL's PAD SPACE comparison (`'a' = 'a  '`, `'a\t' < 'a'`);
//!    VARCHAR by code point (no collation, trailing spaces count); BYTES byte-wise; FLOAT8
//!    as PostgreSQL orders it: `-0.0 = +0.0` and every NaN one value above `+∞` (a key holds
//!    `+0.0` and [`f64::NAN`] for them, so they collide as SQL says they are equal).
//! 6. **Index keys.** A primary key is its columns' fields. A secondary index key is the
//!    index columns' fields followed by the primary key's — always for a non-unique index
//!    (making every key distinct), and for a unique index only when an index column is NULL
//!    (NULLs never conflict, as in SQL). So a unique index rejects a duplicate by the
//!    B-tree's own `DuplicateKey`, and a key's prefix of index columns is a byte prefix of
//!    every key extending it (prefix scans).
//! 7. **Rows** are laid out as `docs/format.md`, "Row", says: fixed-width fields first, at
//!    offsets that depend only on the column and the stored column count (a NULL keeps its
//!    space), then end offsets of the variable fields; so one column is read in O(1)
//!    ([`RowView`]) — unlike a PostgreSQL heap tuple, where a NULL or a variable field
//!    before a column moves it. Decoding checks every length and byte, accepts exactly the
//!    encodings ([`RowView::validate`]) and never panics; a bad row is
//!    [`Error::CorruptRecord`](crate::Error::CorruptRecord) naming its table (no page is known at this level; a caller
//!    that knows it may report [`Error::Corruption`](crate::Error::Corruption)).
//! 8. **Schema evolution** only appends nullable columns: a row stores its column count, and
//!    a row written before a column was added reads it as NULL. Columns are never dropped,
//!    renamed or retyped in place (that would need rewriting the rows).
//! 9. **A table definition's binary form** ([`TableDef::encode`], `docs/format.md`, "Table
//!    definition") is versioned and self-describing; [`TableDef::decode`] checks it as
//!    rule 1 does, and returns [`Error::CorruptRecord`](crate::Error::CorruptRecord) for any other bytes.
//!
//! ## What it does not do
//! - No catalog, table ids, B-tree roots, locks or transactions: the layer above.
//! - No default values, CHECK constraints, collations or case folding of names.
//! - No rounding or implicit narrowing: an application converts first.
//! - No compression, and the primary-key columns are stored twice (in the key and in the
//!   row); large values go to the B-tree's overflow pages (64 MiB per row at most).
//!
//! ## Sources
//! The null bitmap and the version byte follow PostgreSQL's heap tuple header; a variable
//! area addressed by end offsets is the usual slotted-record layout (InnoDB's COMPACT row
//! keeps a list of variable lengths and a NULL bitmap before the fields). CHAR's PAD SPACE
//! comparison and the assignment rule for excess spaces are SQL's (ISO 9075 §8.2, §9.2),
//! as PostgreSQL implements them. The code is ours.

mod catalog;
mod changes;
mod check;
mod codec;
mod handle;
mod keys;
mod row;
mod schema;
mod schema_codec;
mod types;
mod value;

#[cfg(all(test, not(loom)))]
mod prop_tests;
#[cfg(all(test, not(loom)))]
mod tests;

pub use catalog::Catalog;
pub use codec::{decode_row, encode_row, RowView, ROW_FORMAT_VERSION, ROW_MAX_BYTES};
pub use handle::Table;
pub use keys::{decode_key, encode_key, encode_key_prefix, key_type, key_value};
pub use row::Row;
pub use schema::{
    Column, IndexDef, TableDef, MAX_COLUMNS, MAX_INDEXES, MAX_KEY_COLUMNS, MAX_NAME_BYTES,
};
pub use schema_codec::TABLE_DEF_FORMAT_VERSION;
pub use types::{ColumnType, Decimal, Timestamp, MAX_DECIMAL_PRECISION, MAX_LENGTH};
pub use value::{FromValue, Value};
