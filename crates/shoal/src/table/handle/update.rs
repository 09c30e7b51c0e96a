//! A table's updates: whole-row and column changes, read-modify-writes through a
//! [`RowView`], and batches of them; a change of fixed-width columns outside every key
//! patches the stored bytes in place, anything else re-encodes the row and moves the index
//! entries whose keys change (the module doc of `table`, its rules on rows and indexes).
//!
//! Locking: every update X-locks the row's primary key before it reads the row (strict
//! 2PL); index entries are locked as they are changed. No latch is held across a lock wait.

use super::*;

impl Table {
    /// Sets the columns named in `changes` of the row with primary key `key`; returns
    /// whether the row exists. Indexes whose columns change are updated; a change of a
    /// primary-key column moves the row (delete and insert).
    ///
    /// # Errors
    /// As [`Table::insert`]; nothing is changed on error.
    pub fn update(&self, txn: &mut Transaction<'_>, key: &[Value], changes: &Row) -> Result<bool> {
        let pk = self.primary_key(key)?;
        // X on the row first, so the read below is of the row this transaction will change.
        let Some(read) = self.primary.read_for_update(txn, &pk)? else {
            return Ok(false);
        };
        let old = decode_row(&self.def, read.value())?;
        self.apply_update(txn, &pk, &old, changes, read)?;
        Ok(true)
    }

    /// Read-modify-write of one row (`UPDATE ... SET c = c + 1`): locks the row with
    /// primary key `key` exclusively, reads it, and sets the columns named in the [`Row`]
    /// that `change` returns for it — one lock, one read, one write. Returns the row as it
    /// was before the change, or `None` (and `change` is not called) if there is none.
    ///
    /// # Errors
    /// As [`Table::update`]; an error returned by `change` (nothing is changed then).
    pub fn update_with(
        &self,
        txn: &mut Transaction<'_>,
        key: &[Value],
        change: impl FnOnce(&Row) -> Result<Row>,
    ) -> Result<Option<Row>> {
        let pk = self.primary_key(key)?;
        let Some(read) = self.primary.read_for_update(txn, &pk)? else {
            return Ok(None);
        };
        let old = Row::decode(&self.def, read.value())?;
        let changes = change(&old)?;
        self.apply_update(txn, &pk, old.values(), &changes, read)?;
        Ok(Some(old))
    }

    /// As [`Table::update_with`], but `change` reads the stored row through a [`RowView`]
    /// (only the columns it asks for are checked and converted) instead of a decoded
    /// [`Row`]. When the changes it returns set only fixed-width columns that belong to no
    /// key (a balance, a quantity, a counter), the stored bytes are patched in place — those
    /// fields and their null bits — without decoding and re-encoding the other columns;
    /// otherwise the row is decoded and updated as by [`Table::update_with`]. Returns false
    /// (and `change` is not called) if there is no row.
    ///
    /// # Errors
    /// As [`Table::update_with`].
    pub fn update_with_view(
        &self,
        txn: &mut Transaction<'_>,
        key: &[Value],
        change: impl FnOnce(&RowView<'_>) -> Result<Row>,
    ) -> Result<bool> {
        self.update_view(txn, key, change)
    }

    /// As [`Table::update_with_view`], with the changes given by column position:
    /// `change` returns `(column, new value)` pairs, `column` as in
    /// [`TableDef::column_index`] (an array such as `[(2, v), (5, w)]` or a `Vec`). The
    /// same update without a [`Row`] to build and no column names to look up: for the hot
    /// updates of a program that resolved its column positions once.
    ///
    /// # Errors
    /// As [`Table::update_with_view`]; [`Error::NoSuchColumn`] (`#i`) for a position the
    /// table does not have, [`Error::InvalidArgument`] for a column given twice.
    pub fn update_columns_with_view<C: AsRef<[(usize, Value)]>>(
        &self,
        txn: &mut Transaction<'_>,
        key: &[Value],
        change: impl FnOnce(&RowView<'_>) -> Result<C>,
    ) -> Result<bool> {
        self.update_view(txn, key, |view| change(view).map(Columns))
    }

    /// [`Table::update_with_view`] and [`Table::update_columns_with_view`].
    fn update_view<Ch: ChangeSet>(
        &self,
        txn: &mut Transaction<'_>,
        key: &[Value],
        change: impl FnOnce(&RowView<'_>) -> Result<Ch>,
    ) -> Result<bool> {
        let pk = self.primary_key(key)?;
        let Some(read) = self.primary.read_for_update(txn, &pk)? else {
            return Ok(false);
        };
        self.write_changed(txn, &pk, read, change)?;
        Ok(true)
    }

    /// [`Table::update_with_view`] of many rows: X-locks every row (in the order given),
    /// reads them together, their cache misses overlapped
    /// ([`BTree::read_many_for_update`]), then, in order, hands row `i` to `change(i, view)`
    /// and writes the changes it returns. Element `i` of the result is false (and `change`
    /// is not called for it) if there is no row with key `keys[i]`. Each row's write is a
    /// statement of its own, as a call of `update_with_view` is, and each row is seen as
    /// the earlier changes left it: a key given more than once is read again for its later
    /// occurrences, and after a change that moved a row to another primary key every later
    /// key is read again. Finding repeated keys
    /// costs O(n²) key comparisons: this is meant for the handful of rows of one
    /// transaction.
    ///
    /// # Errors
    /// As [`Table::update_with_view`], for the first row that fails; the rows before it
    /// stay changed, as after as many separate calls. Every key is encoded (and checked)
    /// before any row is locked.
    pub fn update_many_with_view(
        &self,
        txn: &mut Transaction<'_>,
        keys: &[&[Value]],
        change: impl FnMut(usize, &RowView<'_>) -> Result<Row>,
    ) -> Result<Vec<bool>> {
        self.update_many_view(txn, keys, change)
    }

    /// [`Table::update_many_with_view`] with the changes given by column position, as
    /// [`Table::update_columns_with_view`] takes them.
    ///
    /// # Errors
    /// As [`Table::update_many_with_view`] and [`Table::update_columns_with_view`].
    pub fn update_many_columns_with_view<C: AsRef<[(usize, Value)]>>(
        &self,
        txn: &mut Transaction<'_>,
        keys: &[&[Value]],
        mut change: impl FnMut(usize, &RowView<'_>) -> Result<C>,
    ) -> Result<Vec<bool>> {
        self.update_many_view(txn, keys, |i, view| change(i, view).map(Columns))
    }

    /// [`Table::update_many_with_view`] and [`Table::update_many_columns_with_view`].
    fn update_many_view<Ch: ChangeSet>(
        &self,
        txn: &mut Transaction<'_>,
        keys: &[&[Value]],
        mut change: impl FnMut(usize, &RowView<'_>) -> Result<Ch>,
    ) -> Result<Vec<bool>> {
        let pks = keys
            .iter()
            .map(|k| self.primary_key(k))
            .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&[u8]> = pks.iter().map(Vec::as_slice).collect();
        let reads = self.primary.read_many_for_update(txn, &refs)?;
        let mut out = Vec::with_capacity(keys.len());
        // True once a write moved its row to a new primary key: the batch's reads of the
        // keys after it may then be out of date (the new key may be one of them).
        let mut moved = false;
        for (i, (pk, read)) in pks.iter().zip(reads).enumerate() {
            // A key given again is read again, after the earlier change of its row (the
            // batch read it before that change); so is every key after a move.
            let read = match moved || pks[..i].contains(pk) {
                true => self.primary.read_for_update(txn, pk)?,
                false => read,
            };
            out.push(read.is_some());
            if let Some(read) = read {
                moved |= self.write_changed(txn, pk, read, |view| change(i, view))?;
            }
        }
        Ok(out)
    }

    /// The write of [`Table::update_with_view`]: the row `read` (of primary key `pk`)
    /// changed as `change` says, patched in place when it can be. Returns true if the
    /// change moved the row to a new primary key.
    fn write_changed<Ch: ChangeSet>(
        &self,
        txn: &mut Transaction<'_>,
        pk: &[u8],
        read: ReadForUpdate<'_>,
        change: impl FnOnce(&RowView<'_>) -> Result<Ch>,
    ) -> Result<bool> {
        let (changes, patched) = {
            let view = RowView::new(&self.def, read.value())?;
            let changes = change(&view)?;
            let patched = self.patch_fixed(&view, &changes)?;
            (changes, patched)
        };
        match patched {
            Some(new) => {
                statement(txn, |txn| self.primary.write_read(txn, pk, read, &new))?;
                Ok(false)
            }
            None => {
                let old = decode_row(&self.def, read.value())?;
                self.apply_update(txn, pk, &old, &changes.to_row(&self.def), read)
            }
        }
    }

    /// The row `view` with `changes` applied by [`RowView::with_fixed`], or `None` if a
    /// change is not to a fixed-width column outside every key (or the row is from before
    /// a column was added). Each value is checked against its column as an update checks it.
    ///
    /// # Errors
    /// As [`TableDef::check_update`] for a bad column name or value.
    fn patch_fixed(&self, view: &RowView<'_>, changes: &impl ChangeSet) -> Result<Option<Vec<u8>>> {
        let def = &self.def;
        let n = def.columns().len();
        // The slots on the stack for tables of up to `STACK_SLOTS` columns (TPC-C's widest
        // has 21): this runs for every balance or counter update.
        let (mut stack, mut heap) = ([None; STACK_SLOTS], Vec::new());
        let slots: &mut [Option<&Value>] = if n <= STACK_SLOTS {
            &mut stack[..n]
        } else {
            heap.resize(n, None);
            &mut heap
        };
        changes.assign(def, slots)?;
        let in_key = |i: usize| {
            def.primary_key().contains(&i)
                || (0..def.indexes().len()).any(|x| def.index_columns(x).contains(&i))
        };
        let mut cells = Vec::with_capacity(changes.len());
        for (i, v) in slots.iter().enumerate() {
            let Some(v) = v else { continue };
            let c = &def.columns()[i];
            if c.ty.fixed_width().is_none() || in_key(i) {
                return Ok(None);
            }
            cells.push((i, crate::table::check::check(def.name(), c, v)?));
        }
        Ok(view.with_fixed(&cells))
    }

    /// Replaces the X-locked row `old` at `pk` (as `read` from the primary tree) by `old`
    /// with `changes`, as one statement. A row that keeps its primary key is written on the
    /// leaf it was read from when that is unchanged (`BTree::write_read`: no second
    /// descent). Returns true if the row moved to a new primary key.
    fn apply_update(
        &self,
        txn: &mut Transaction<'_>,
        pk: &[u8],
        old: &[Value],
        changes: &Row,
        read: ReadForUpdate<'_>,
    ) -> Result<bool> {
        let (new, _changed) = self.def.check_update(old, changes)?;
        let new_pk = self.def.primary_key_of(&new)?;
        statement(txn, |txn| {
            if new_pk != pk {
                self.primary.delete(txn, pk)?;
                self.primary
                    .insert(txn, &new_pk, &encode_row(&self.def, &new)?)
                    .map_err(|e| self.name_duplicate(None, e))?;
            } else {
                self.primary
                    .write_read(txn, pk, read, &encode_row(&self.def, &new)?)?;
            }
            for (i, tree) in self.indexes.iter().enumerate() {
                let (ok, nk) = (
                    self.def.index_key_of(i, old)?,
                    self.def.index_key_of(i, &new)?,
                );
                if ok != nk || new_pk != pk {
                    tree.delete(txn, &ok)?;
                    tree.insert(txn, &nk, &new_pk)
                        .map_err(|e| self.name_duplicate(Some(i), e))?;
                }
            }
            Ok(new_pk != pk)
        })
    }

    /// The row bytes at `pk`, after an X lock on it.
    pub(super) fn read_for_update(
        &self,
        txn: &mut Transaction<'_>,
        pk: &[u8],
    ) -> Result<Option<Vec<u8>>> {
        self.primary.get_in_for_update(txn, pk)
    }
}
