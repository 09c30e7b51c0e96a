//! The changes of an update of selected columns, as [`Table::update_with_view`] takes them
//! (a [`Row`] of named or positional values) or as [`Table::update_columns_with_view`]
//! takes them (a list of `(column position, value)` pairs).
//!
//! Both resolve to one slot per column ([`ChangeSet::assign`]); the positional form skips
//! what makes a `Row` of changes cost: a `String` per name, the row's two vectors, and a
//! lookup of each name among the table's columns. In a TPC-C New-Order, whose ten stock
//! updates change four columns each, building and resolving those rows was 4–5 % of the
//! transaction's instructions.
//!
//! [`Table::update_with_view`]: super::Table::update_with_view
//! [`Table::update_columns_with_view`]: super::Table::update_columns_with_view

use super::{Row, TableDef, Value};
use crate::error::{Error, Result};
use std::borrow::Cow;

/// Changes to selected columns of one row.
pub(crate) trait ChangeSet {
    /// Puts each changed value into the slot of its column (`slots` has one per column,
    /// all `None`).
    ///
    /// # Errors
    /// [`Error::NoSuchColumn`] for a column the table does not have;
    /// [`Error::InvalidArgument`] (`row`) for a column given twice (and, for a `Row`, as
    /// [`TableDef::check_row`] resolves it).
    fn assign<'r>(&'r self, def: &TableDef, slots: &mut [Option<&'r Value>]) -> Result<()>;

    /// Number of changed values (as given; `assign` refuses a column given twice).
    fn len(&self) -> usize;

    /// The same changes as a [`Row`] (of named values, for the positional form), for the
    /// paths that take one (an update that cannot be patched in place).
    fn to_row(&self, def: &TableDef) -> Cow<'_, Row>;
}

impl ChangeSet for Row {
    fn assign<'r>(&'r self, def: &TableDef, slots: &mut [Option<&'r Value>]) -> Result<()> {
        def.assign(self, slots)
    }

    fn len(&self) -> usize {
        Row::len(self)
    }

    fn to_row(&self, _def: &TableDef) -> Cow<'_, Row> {
        Cow::Borrowed(self)
    }
}

/// `(column position, new value)` pairs: the changes of
/// [`Table::update_columns_with_view`](super::Table::update_columns_with_view).
pub(crate) struct Columns<C>(pub(crate) C);

impl<C: AsRef<[(usize, Value)]>> ChangeSet for Columns<C> {
    fn assign<'r>(&'r self, def: &TableDef, slots: &mut [Option<&'r Value>]) -> Result<()> {
        for (column, value) in self.0.as_ref() {
            let Some(slot) = slots.get_mut(*column) else {
                return Err(Error::NoSuchColumn {
                    table: def.name().to_string(),
                    column: format!("#{column}"),
                });
            };
            if slot.replace(value).is_some() {
                return Err(Error::invalid(
                    "row",
                    format!("column `{}` is given twice", def.columns()[*column].name),
                ));
            }
        }
        Ok(())
    }

    fn len(&self) -> usize {
        self.0.as_ref().len()
    }

    fn to_row(&self, def: &TableDef) -> Cow<'_, Row> {
        Cow::Owned(self.0.as_ref().iter().fold(Row::new(), |row, (i, v)| {
            // `assign` has checked every position before a caller gets here.
            row.with(def.columns()[*i].name.clone(), v.clone())
        }))
    }
}
