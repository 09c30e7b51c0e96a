//! Table operations in a transaction: a [`Table`] is a primary B-tree keyed by the primary
//! key, holding whole rows, plus one B-tree per secondary index mapping its key (rule 6 of
//! the module doc) to the primary key (DESIGN.md §3.10).
//!
//! Invariants (checked by [`Table::verify`]): every row's index entries exist in every index
//! and every index entry names a row whose indexed columns give that key. Each operation
//! changes the primary tree and the indexes inside the caller's transaction, so a rollback
//! (or a crash before commit) undoes them together. Locking is the trees': the primary tree
//! locks primary keys, each index its own keys (`btree::locking`), at the transaction's
//! isolation level.

use super::changes::{ChangeSet, Columns};
use super::codec::{decode_row, encode_row, RowView};
use super::{Row, TableDef, Value};
use crate::btree::{BTree, ReadForUpdate, ScanDirection};
use crate::error::{Error, Result};
use crate::txn::Transaction;
use std::ops::Bound;
use std::sync::Arc;

mod update;

thread_local! {
    /// The primary key and the row of this thread's [`Table::get_with`]: kept between
    /// reads so that their capacity is reused (borrowed while a read uses them).
    static READ_BUFFERS: std::cell::RefCell<(Vec<u8>, Vec<u8>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Largest row buffer, in bytes, that [`READ_BUFFERS`] keeps after a read.
const READ_BUFFER_KEEP_BYTES: usize = 64 << 10;

/// Columns up to which [`Table::patch_fixed`] keeps its per-column slots on the stack.
const STACK_SLOTS: usize = 32;

/// An open table: its definition and trees. Cheap to clone; share it between threads.
///
/// ```
/// use shoal::table::{Column, ColumnType, IndexDef, Row, TableDef, Value};
/// use shoal::{Database, IsolationLevel, Options};
/// # fn main() -> shoal::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let db = Database::create(dir.path(), &Options::default())?;
/// let def = TableDef::new(
///     "customer",
///     vec![
///         Column::new("id", ColumnType::Int8),
///         Column::new("city", ColumnType::Varchar(40)).not_null(),
///         Column::new("name", ColumnType::Varchar(40)),
///     ],
///     &["id"],
/// )?
/// .with_index(IndexDef::new("by_city", ["city"]))?;
/// let mut tx = db.begin(IsolationLevel::ReadCommitted);
/// let customers = db.create_table(&mut tx, def)?;
/// for (id, city) in [(1i64, "Oslo"), (2, "Bergen"), (3, "Oslo")] {
///     customers.insert(&mut tx, &Row::new().with("id", id).with("city", city))?;
/// }
/// customers.update(&mut tx, &[Value::Int8(2)], &Row::new().with("city", "Oslo"))?;
/// let in_oslo = customers.scan_index(&mut tx, "by_city", &[Value::from("Oslo")])?;
/// assert_eq!(in_oslo.len(), 3);
/// assert!(customers.delete(&mut tx, &[Value::Int8(3)])?.is_some());
/// tx.commit()?;
/// assert!(customers.verify()?.1.is_empty());
/// db.close()?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Table {
    pub(crate) def: Arc<TableDef>,
    pub(crate) id: u32,
    pub(crate) primary: BTree,
    pub(crate) indexes: Vec<BTree>,
}

impl Table {
    /// The table's definition.
    pub fn def(&self) -> &Arc<TableDef> {
        &self.def
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        self.def.name()
    }

    /// The primary tree (rows by primary key).
    pub fn primary_tree(&self) -> &BTree {
        &self.primary
    }

    /// The secondary indexes' trees, in the order of [`TableDef::indexes`].
    pub fn index_trees(&self) -> &[BTree] {
        &self.indexes
    }

    /// The table's number in the catalog (its lock name is `table(0, id)`).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Names a `DuplicateKey` of the tree of `index` (`None`: the primary key).
    fn name_duplicate(&self, index: Option<usize>, e: Error) -> Error {
        match e {
            Error::DuplicateKey { key, .. } => Error::DuplicateKey {
                index: match index {
                    None => format!("{}.PRIMARY KEY", self.name()),
                    Some(i) => format!("{}.{}", self.name(), self.def.indexes()[i].name),
                },
                key,
            },
            e => e,
        }
    }

    /// Inserts `row` (its columns by name or position, see [`Row`]).
    ///
    /// # Errors
    /// [`Error::DuplicateKey`] naming the primary key or the unique index that already holds
    /// the key (nothing is changed: a partial insert is rolled back to a savepoint);
    /// [`Error::NotNull`], [`Error::TypeMismatch`], [`Error::ValueTooLong`],
    /// [`Error::NoSuchColumn`] for a row that does not fit the table; lock errors
    /// ([`Error::Deadlock`], [`Error::LockTimeout`]: roll back and retry); log and
    /// buffer-pool errors.
    pub fn insert(&self, txn: &mut Transaction<'_>, row: &Row) -> Result<()> {
        let enc = self.def.insert_encoding(row)?;
        let pk = &enc.primary_key;
        statement(txn, |txn| {
            self.primary
                .insert(txn, pk, &enc.row)
                .map_err(|e| self.name_duplicate(None, e))?;
            for ((i, tree), key) in self.indexes.iter().enumerate().zip(&enc.index_keys) {
                tree.insert(txn, key, pk)
                    .map_err(|e| self.name_duplicate(Some(i), e))?;
            }
            Ok(())
        })
    }

    /// The row whose primary key columns hold `key` (in primary-key column order), read
    /// with the locks of the transaction's isolation level; `None` if there is none.
    ///
    /// # Errors
    /// [`Error::TypeMismatch`] and friends for key values that do not fit the key columns;
    /// [`Error::InvalidArgument`] for the wrong number of values; lock, log and
    /// buffer-pool errors; [`Error::CorruptRecord`] for a row that does not decode.
    pub fn get(&self, txn: &mut Transaction<'_>, key: &[Value]) -> Result<Option<Row>> {
        self.read_row(txn, key, |bytes| Row::decode(&self.def, bytes))
    }

    /// As [`Table::get`], but the stored row is handed to `read` as a [`RowView`] instead
    /// of being decoded: only the columns `read` asks for are checked and converted (a
    /// point read of two columns of a wide row costs two columns, not the row). Returns
    /// `read`'s result, or `None` if there is no row (and `read` is not called).
    ///
    /// # Errors
    /// As [`Table::get`]; an error returned by `read`.
    pub fn get_with<T>(
        &self,
        txn: &mut Transaction<'_>,
        key: &[Value],
        read: impl FnOnce(&RowView<'_>) -> Result<T>,
    ) -> Result<Option<T>> {
        self.read_row(txn, key, |bytes| read(&RowView::new(&self.def, bytes)?))
    }

    /// The stored row with primary key `key` handed to `read` (not called if there is
    /// none), read as [`Table::get`] reads it. The key and the row go into this thread's
    /// read buffers, so that a point read allocates nothing once they have grown; a `read`
    /// that reads again on this thread finds them borrowed and uses new vectors, as does a
    /// read during the thread's exit after they were destroyed. (Borrowed
    /// in place: taking the pair out of a `Cell` and back moved it through the stack with
    /// a store-forwarding stall that made select1 4 % slower.)
    fn read_row<T>(
        &self,
        txn: &mut Transaction<'_>,
        key: &[Value],
        read: impl FnOnce(&[u8]) -> Result<T>,
    ) -> Result<Option<T>> {
        // `try_with`: a read from another thread-local's destructor, after these buffers
        // were destroyed, uses new vectors too.
        let mut read = Some(read);
        let kept = READ_BUFFERS.try_with(|bufs| {
            let mut bufs = bufs.try_borrow_mut().ok()?;
            let (pk, row) = &mut *bufs;
            let read = read.take().expect("not taken before");
            let result = self.read_row_into(txn, key, pk, row, read);
            if row.capacity() > READ_BUFFER_KEEP_BYTES {
                *row = Vec::new(); // a large row's buffer is not kept for the thread's life
            }
            Some(result)
        });
        match (kept, read) {
            (Ok(Some(result)), _) => result,
            (_, Some(read)) => self.read_row_into(txn, key, &mut Vec::new(), &mut Vec::new(), read),
            (_, None) => unreachable!("`read` is taken only by a read that returns its result"),
        }
    }

    /// [`Table::read_row`] with the key encoded into `pk` and the row read into `row`.
    #[inline(always)]
    fn read_row_into<T>(
        &self,
        txn: &mut Transaction<'_>,
        key: &[Value],
        pk: &mut Vec<u8>,
        row: &mut Vec<u8>,
        read: impl FnOnce(&[u8]) -> Result<T>,
    ) -> Result<Option<T>> {
        pk.clear();
        self.primary_key_into(key, pk)?;
        match self.primary.get_in_into(txn, pk, row)? {
            true => read(row).map(Some),
            false => Ok(None),
        }
    }

    /// [`Table::get_with`] of many rows: the row whose primary key is `keys[i]` is handed to
    /// `read` and its result is element `i` (`None` if there is no such row). The rows are
    /// looked up together, their cache misses overlapped ([`BTree::get_many_in`]): worth it
    /// for a few keys or more in a table larger than the CPU caches. Pass keys sorted
    /// where the order is free.
    ///
    /// # Errors
    /// As [`Table::get_with`], for the first key or row that fails; every key is encoded
    /// (and checked) before any row is read.
    pub fn get_many_with<T>(
        &self,
        txn: &mut Transaction<'_>,
        keys: &[&[Value]],
        mut read: impl FnMut(&RowView<'_>) -> Result<T>,
    ) -> Result<Vec<Option<T>>> {
        let encoded = keys
            .iter()
            .map(|k| self.primary_key(k))
            .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&[u8]> = encoded.iter().map(Vec::as_slice).collect();
        self.primary
            .get_many_in(txn, &refs)?
            .into_iter()
            .map(|row| match row {
                Some(bytes) => read(&RowView::new(&self.def, &bytes)?).map(Some),
                None => Ok(None),
            })
            .collect()
    }

    /// As [`Table::scan_first`], but each row is handed to `each` as a [`RowView`] (see
    /// [`Table::get_with`]) instead of being decoded and collected. Returns the number of
    /// rows visited.
    ///
    /// # Errors
    /// As [`Table::scan_first`]; the first error returned by `each` (the scan stops).
    pub fn scan_first_with(
        &self,
        txn: &mut Transaction<'_>,
        lower: Bound<&[Value]>,
        upper: Bound<&[Value]>,
        dir: ScanDirection,
        n: usize,
        mut each: impl FnMut(&RowView<'_>) -> Result<()>,
    ) -> Result<usize> {
        self.scan_stored(txn, lower, upper, dir, n, |bytes| {
            each(&RowView::new(&self.def, bytes)?)
        })
    }

    /// The stored bytes of the first `n` rows in `dir` order between `lower` and `upper`
    /// (primary-key prefixes), each handed to `each`; returns how many were visited. What
    /// [`Table::scan_first`] and [`Table::scan_first_with`] share.
    fn scan_stored(
        &self,
        txn: &mut Transaction<'_>,
        lower: Bound<&[Value]>,
        upper: Bound<&[Value]>,
        dir: ScanDirection,
        n: usize,
        mut each: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<usize> {
        let cols = self.def.primary_key();
        let Some((lo, hi)) = key_range(&self.def, cols, lower, upper)? else {
            return Ok(0);
        };
        let mut visited = 0;
        for kv in self
            .primary
            .scan_in(txn, as_bound(&lo), as_bound(&hi), dir)
            .with_batch_limit(n)
            .take(n)
        {
            each(&kv?.1)?;
            visited += 1;
        }
        Ok(visited)
    }

    /// As [`Table::get`], but the row is locked exclusively (X, held to the end of the
    /// transaction) before it is read, whatever the isolation level: SQL's `SELECT ... FOR
    /// UPDATE`. A read-modify-write (`get_for_update`, then [`Table::update`]) therefore
    /// cannot lose a concurrent update, and two such transactions queue instead of
    /// deadlocking on a shared-to-exclusive conversion.
    ///
    /// # Errors
    /// As [`Table::get`].
    pub fn get_for_update(&self, txn: &mut Transaction<'_>, key: &[Value]) -> Result<Option<Row>> {
        let pk = self.primary_key(key)?;
        match self.read_for_update(txn, &pk)? {
            Some(bytes) => Row::decode(&self.def, &bytes).map(Some),
            None => Ok(None),
        }
    }

    fn primary_key(&self, key: &[Value]) -> Result<Vec<u8>> {
        super::encode_key_prefix(&self.def, self.primary_key_columns(key)?, key)
    }

    /// [`Table::primary_key`] appended to `out`.
    fn primary_key_into(&self, key: &[Value], out: &mut Vec<u8>) -> Result<()> {
        let cols = self.primary_key_columns(key)?;
        super::keys::encode_key_prefix_into(&self.def, cols, key, out)
    }

    /// The primary-key columns, if `key` has a value for each.
    fn primary_key_columns(&self, key: &[Value]) -> Result<&[usize]> {
        let cols = self.def.primary_key();
        if key.len() != cols.len() {
            return Err(Error::invalid(
                "key",
                format!(
                    "table `{}` has {} primary-key columns, {} values given",
                    self.name(),
                    cols.len(),
                    key.len()
                ),
            ));
        }
        Ok(cols)
    }

    /// Deletes the row with primary key `key`; returns it, or `None` if there was none.
    ///
    /// # Errors
    /// As [`Table::get`].
    pub fn delete(&self, txn: &mut Transaction<'_>, key: &[Value]) -> Result<Option<Row>> {
        let pk = self.primary_key(key)?;
        let Some(old_bytes) = self.read_for_update(txn, &pk)? else {
            return Ok(None);
        };
        let old = decode_row(&self.def, &old_bytes)?;
        statement(txn, |txn| {
            for (i, tree) in self.indexes.iter().enumerate() {
                tree.delete(txn, &self.def.index_key_of(i, &old)?)?;
            }
            self.primary.delete(txn, &pk)
        })?;
        Row::from_table(self.def.clone(), old).map(Some)
    }

    /// The rows whose primary keys lie between `lower` and `upper` (prefixes of the primary
    /// key, in its column order: `[]` is unbounded), in key order or its reverse, read with
    /// the locks of the transaction's isolation level.
    ///
    /// # Errors
    /// As [`Table::get`].
    pub fn scan(
        &self,
        txn: &mut Transaction<'_>,
        lower: Bound<&[Value]>,
        upper: Bound<&[Value]>,
        dir: ScanDirection,
    ) -> Result<Vec<Row>> {
        self.scan_first(txn, lower, upper, dir, usize::MAX)
    }

    /// As [`Table::scan`], but at most the first `n` rows in `dir` order (`LIMIT n`): the
    /// scan stops after them, so finding the oldest row of a range costs one row's reads
    /// and locks, not the range's.
    ///
    /// # Errors
    /// As [`Table::get`].
    pub fn scan_first(
        &self,
        txn: &mut Transaction<'_>,
        lower: Bound<&[Value]>,
        upper: Bound<&[Value]>,
        dir: ScanDirection,
        n: usize,
    ) -> Result<Vec<Row>> {
        let mut rows = Vec::new();
        self.scan_stored(txn, lower, upper, dir, n, |bytes| {
            rows.push(Row::decode(&self.def, bytes)?);
            Ok(())
        })?;
        Ok(rows)
    }

    /// The rows whose values in the columns of index `index` begin with `prefix` (a prefix
    /// of the index's columns, in order), in index order.
    ///
    /// # Errors
    /// [`Error::NoSuchColumn`]-like [`Error::InvalidArgument`] for an unknown index; as
    /// [`Table::get`].
    pub fn scan_index(
        &self,
        txn: &mut Transaction<'_>,
        index: &str,
        prefix: &[Value],
    ) -> Result<Vec<Row>> {
        self.scan_index_first(txn, index, prefix, ScanDirection::Forward, usize::MAX)
    }

    /// As [`Table::scan_index`], in index order or its reverse (`dir`), at most the first
    /// `n` rows: e.g. a customer's newest order is the first row of a backward scan of an
    /// index on `(customer, order id)`.
    ///
    /// # Errors
    /// As [`Table::scan_index`].
    pub fn scan_index_first(
        &self,
        txn: &mut Transaction<'_>,
        index: &str,
        prefix: &[Value],
        dir: ScanDirection,
        n: usize,
    ) -> Result<Vec<Row>> {
        let pks = self.index_entries(txn, index, prefix, dir, n)?;
        let mut rows = Vec::with_capacity(pks.len());
        for pk in pks {
            match self.primary.get_in(txn, &pk)? {
                Some(bytes) => rows.push(Row::decode(&self.def, &bytes)?),
                None => {
                    return Err(Error::CorruptRecord {
                        what: format!("index `{index}` of table `{}`", self.name()),
                        reason: "an index entry names a row that does not exist".into(),
                    })
                }
            }
        }
        Ok(rows)
    }

    /// The primary keys (one value per primary-key column) of the rows that
    /// [`Table::scan_index_first`] would return, read from the index alone: an index-only
    /// scan, for a caller that needs no other column (TPC-C's customer by last name needs
    /// only the middle one's id). The index entries are locked as that scan locks them; the
    /// rows are neither read nor locked.
    ///
    /// # Errors
    /// As [`Table::scan_index`]; [`Error::CorruptRecord`] for an index entry whose primary
    /// key does not decode.
    pub fn scan_index_keys(
        &self,
        txn: &mut Transaction<'_>,
        index: &str,
        prefix: &[Value],
        dir: ScanDirection,
        n: usize,
    ) -> Result<Vec<Vec<Value>>> {
        self.index_entries(txn, index, prefix, dir, n)?
            .iter()
            .map(|pk| super::keys::decode_key(&self.def, self.def.primary_key(), pk))
            .collect()
    }

    /// The encoded primary keys held by the entries of index `index` that begin with
    /// `prefix`, in index order (or reversed), at most `n`.
    fn index_entries(
        &self,
        txn: &mut Transaction<'_>,
        index: &str,
        prefix: &[Value],
        dir: ScanDirection,
        n: usize,
    ) -> Result<Vec<Vec<u8>>> {
        let i = self.def.index_position(index).ok_or_else(|| {
            Error::invalid(
                "index",
                format!("table `{}` has no index `{index}`", self.name()),
            )
        })?;
        let cols = self.def.index_columns(i);
        let lo = super::encode_key_prefix(&self.def, cols, prefix)?;
        let hi = crate::btree::key::prefix_successor(&lo);
        let upper = match &hi {
            Some(h) => Bound::Excluded(h.as_slice()),
            None => Bound::Unbounded,
        };
        self.indexes[i]
            .scan_in(txn, Bound::Included(&lo), upper, dir)
            .with_batch_limit(n)
            .take(n)
            .map(|kv| kv.map(|(_, pk)| pk))
            .collect()
    }
}

impl Table {
    /// Checks the table (no locks: run it on a quiet database): every tree passes
    /// [`BTree::verify`], every row decodes, and the indexes hold exactly one entry per row,
    /// each naming its row's primary key. Returns the problems found (empty if none) and the
    /// number of rows.
    ///
    /// # Errors
    /// Buffer-pool errors (corruption is reported as a problem, not an error).
    pub fn verify(&self) -> Result<(u64, Vec<String>)> {
        let mut problems = Vec::new();
        let name = self.name().to_string();
        for (what, tree) in std::iter::once(("primary".to_string(), &self.primary)).chain(
            self.indexes
                .iter()
                .enumerate()
                .map(|(i, t)| (self.def.indexes()[i].name.clone(), t)),
        ) {
            let r = tree.verify()?;
            problems.extend(r.problems.iter().map(|p| format!("{name}.{what}: {p}")));
        }
        let mut rows = 0u64;
        let mut expected: Vec<std::collections::BTreeMap<Vec<u8>, Vec<u8>>> =
            vec![Default::default(); self.indexes.len()];
        for kv in self.primary.iter() {
            let (pk, bytes) = kv?;
            rows += 1;
            let values = match decode_row(&self.def, &bytes) {
                Ok(v) => v,
                Err(e) => {
                    problems.push(format!("{name}: row {}: {e}", crate::btree::printable(&pk)));
                    continue;
                }
            };
            match self.def.primary_key_of(&values) {
                Ok(k) if k == pk => {}
                _ => problems.push(format!(
                    "{name}: row {} is stored under another primary key",
                    crate::btree::printable(&pk)
                )),
            }
            for (i, map) in expected.iter_mut().enumerate() {
                if let Ok(k) = self.def.index_key_of(i, &values) {
                    map.insert(k, pk.clone());
                }
            }
        }
        for (i, tree) in self.indexes.iter().enumerate() {
            let ix = &self.def.indexes()[i].name;
            let found = tree
                .iter()
                .collect::<Result<std::collections::BTreeMap<Vec<u8>, Vec<u8>>>>()?;
            if found != expected[i] {
                let missing = expected[i]
                    .keys()
                    .filter(|k| !found.contains_key(*k))
                    .count();
                let extra = found
                    .iter()
                    .filter(|(k, v)| expected[i].get(*k) != Some(v))
                    .count();
                problems.push(format!(
                    "{name}.{ix}: {missing} rows without their entry, {extra} entries without their row"
                ));
            }
        }
        Ok((rows, problems))
    }
}

/// Runs one statement's changes `f` in `txn`: if `f` fails, its changes are rolled back to
/// a savepoint taken before it (statement atomicity), and the transaction goes on.
fn statement<T>(
    txn: &mut Transaction<'_>,
    f: impl FnOnce(&mut Transaction<'_>) -> Result<T>,
) -> Result<T> {
    let sp = txn.savepoint();
    let r = f(txn);
    if r.is_err() {
        txn.rollback_to(&sp)?;
    }
    r
}

fn as_bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Lower and upper byte bounds of a key range.
type KeyBounds = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// Byte bounds for value-prefix bounds: a lower prefix includes (or excludes) every key
/// extending it; so does an upper one. `None`: the range is empty (an excluded lower prefix
/// with no successor).
fn key_range(
    def: &TableDef,
    cols: &[usize],
    lower: Bound<&[Value]>,
    upper: Bound<&[Value]>,
) -> Result<Option<KeyBounds>> {
    let enc = |v: &[Value]| super::encode_key_prefix(def, cols, v);
    let lo = match lower {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included([]) => Bound::Unbounded,
        Bound::Included(v) => Bound::Included(enc(v)?),
        Bound::Excluded(v) => match crate::btree::key::prefix_successor(&enc(v)?) {
            Some(s) => Bound::Included(s),
            None => return Ok(None),
        },
    };
    let hi = match upper {
        Bound::Unbounded => Bound::Unbounded,
        Bound::Included([]) => Bound::Unbounded,
        Bound::Included(v) => match crate::btree::key::prefix_successor(&enc(v)?) {
            Some(s) => Bound::Excluded(s),
            None => Bound::Unbounded,
        },
        Bound::Excluded(v) => Bound::Excluded(enc(v)?),
    };
    Ok(Some((lo, hi)))
}
