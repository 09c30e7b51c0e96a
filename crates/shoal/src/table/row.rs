//! [`Row`]: values by name or position, as an application builds and reads them; and the
//! resolution of a row against its table (module rules 3 and 4).

use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};

use super::check::check;
use super::codec::decode_row;
use super::schema::TableDef;
use super::value::{FromValue, Value};

/// The table name errors give for a row built by hand, which has no table.
const NO_TABLE: &str = "<row>";

/// A row: values, each named by a column name or by its position.
///
/// A row built by an application ([`Row::new`] + [`Row::with`], or [`row!`](crate::row))
/// holds values named by column name or by position (positional values take the columns in
/// order, named ones their column); [`TableDef::check_row`] resolves it against a table. A
/// row read from a table ([`Row::decode`], [`Row::from_table`]) holds one value per column
/// and shares the table's definition for its names (no copy per row). Sharing is an
/// `Arc` clone, one atomic write to the definition's count per row: a hot read path that
/// must write no shared memory (DESIGN.md principle 3) reads columns with
/// [`RowView`](super::RowView) or [`decode_row`] instead.
///
/// ```
/// use shoal::row;
/// use shoal::table::{Column, ColumnType, Row, TableDef, Value};
///
/// let def = TableDef::new(
///     "accounts",
///     vec![
///         Column::new("id", ColumnType::Int8),
///         Column::new("owner", ColumnType::Varchar(40)),
///         Column::new("balance", ColumnType::Int8),
///     ],
///     &["id"],
/// )?;
///
/// // By name, in any order; a column left out is NULL.
/// let named = Row::new().with("owner", "alice").with("id", 7i64);
/// assert_eq!(def.check_row(&named)?, [Value::Int8(7), Value::from("alice"), Value::Null]);
///
/// // By position; an `i32` widens to INT8, `None` is NULL.
/// let positional = row![7, "alice", None::<i64>];
/// assert_eq!(def.check_row(&positional)?, def.check_row(&named)?);
///
/// // Typed getters, by name or position.
/// let stored = Row::from_table(def.into(), vec![7i64.into(), "bob".into(), 100i64.into()])?;
/// assert_eq!(stored.get::<i64>("balance")?, 100);
/// assert_eq!(stored.get_at::<&str>(1)?, "bob");
/// assert!(stored.get::<String>("balance").is_err()); // TypeMismatch
/// assert_eq!(stored.project(&["owner"])?.to_string(), "(owner: 'bob')");
/// # Ok::<(), shoal::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Row {
    values: Vec<Value>,
    names: Names,
}

#[derive(Clone, Debug)]
enum Names {
    /// Built by hand: a name per value, `None` for a positional one; values past the end
    /// of the list are positional too (a positional row allocates no list).
    Own(Vec<Option<String>>),
    /// Read from a table: one value per column, named by the definition.
    Table(Arc<TableDef>),
}

/// Builds a positional [`Row`] from expressions convertible into [`Value`]:
/// `row![7i64, "alice", Value::Null]`.
#[macro_export]
macro_rules! row {
    ($($v:expr),* $(,)?) => {
        $crate::table::Row::from_values(vec![$($crate::table::Value::from($v)),*])
    };
}

impl Default for Row {
    fn default() -> Row {
        Row::new()
    }
}

impl Row {
    /// An empty row, to be filled with [`Row::with`].
    pub fn new() -> Row {
        Row {
            values: Vec::new(),
            names: Names::Own(Vec::new()),
        }
    }

    /// A row of positional values: the `i`-th value is for the `i`-th column.
    pub fn from_values(values: Vec<Value>) -> Row {
        Row {
            values,
            names: Names::Own(Vec::new()),
        }
    }

    /// A row of table `def`: `values` are its columns' values in order (normally already
    /// checked with [`TableDef::check_row`] or decoded).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (`values`) unless there is one value per column.
    pub fn from_table(def: Arc<TableDef>, values: Vec<Value>) -> Result<Row> {
        if values.len() != def.columns().len() {
            return Err(Error::invalid(
                "values",
                format!(
                    "{} values for the {} columns of table `{}`",
                    values.len(),
                    def.columns().len(),
                    def.name()
                ),
            ));
        }
        Ok(Row {
            values,
            names: Names::Table(def),
        })
    }

    /// Decodes a stored row of table `def` ([`decode_row`]).
    ///
    /// # Errors
    /// [`Error::CorruptRecord`] if `bytes` is not a row of `def`.
    pub fn decode(def: &Arc<TableDef>, bytes: &[u8]) -> Result<Row> {
        let values = decode_row(def, bytes)?;
        Row::from_table(Arc::clone(def), values)
    }

    /// This row with `value` for the column named `name`, replacing a value already given
    /// that name. Never fails: a name that is not a column is reported by
    /// [`TableDef::check_row`] (or [`Row::get`]).
    pub fn with(mut self, name: impl Into<String>, value: impl Into<Value>) -> Row {
        let name = name.into();
        let value = value.into();
        if let Some(i) = self.position(&name) {
            self.values[i] = value;
            return self;
        }
        let mut names = self.take_names();
        names.resize(self.values.len(), None);
        names.push(Some(name));
        self.values.push(value);
        self.names = Names::Own(names);
        self
    }

    /// Sets the column named `name`, as [`Row::with`] does; for a row read from a table the
    /// column must exist.
    ///
    /// # Errors
    /// [`Error::NoSuchColumn`] for a row of a table that has no such column.
    pub fn set(&mut self, name: &str, value: impl Into<Value>) -> Result<()> {
        if let Names::Table(_) = self.names {
            let i = self.position(name).ok_or_else(|| self.no_column(name))?;
            self.values[i] = value.into();
        } else {
            *self = std::mem::take(self).with(name, value);
        }
        Ok(())
    }

    /// Sets the value at position `index`.
    ///
    /// # Errors
    /// [`Error::NoSuchColumn`] (`#index`) if the row has no value there.
    pub fn set_at(&mut self, index: usize, value: impl Into<Value>) -> Result<()> {
        let slot = self.values.get_mut(index);
        match slot {
            Some(v) => {
                *v = value.into();
                Ok(())
            }
            None => Err(self.no_column(&format!("#{index}"))),
        }
    }

    /// Applies `changes` (an update of selected columns): each named value of `changes`
    /// sets that column, and its positional values set positions 0, 1, ... in order (as
    /// [`TableDef::check_row`] assigns them).
    ///
    /// # Errors
    /// [`Error::NoSuchColumn`] if this row is a table's and lacks a named column, or has no
    /// value at a position; nothing is changed then.
    pub fn update(&mut self, changes: &Row) -> Result<()> {
        let mut next = self.clone();
        let mut positional = 0;
        for (i, value) in changes.values.iter().enumerate() {
            match changes.name_at(i) {
                Some(name) => next.set(name, value.clone())?,
                None => {
                    next.set_at(positional, value.clone())?;
                    positional += 1;
                }
            }
        }
        *self = next;
        Ok(())
    }

    /// The value of the column named `name`, converted to `T`.
    ///
    /// # Errors
    /// [`Error::NoSuchColumn`] if the row has no such column; [`Error::TypeMismatch`] if
    /// the value does not convert to `T` (NULL converts only to an `Option`).
    pub fn get<'a, T: FromValue<'a>>(&'a self, name: &str) -> Result<T> {
        let i = self.position(name).ok_or_else(|| self.no_column(name))?;
        convert(name, &self.values[i])
    }

    /// The value at position `index`, converted to `T`.
    ///
    /// # Errors
    /// [`Error::NoSuchColumn`] (`#index`) if there is none; [`Error::TypeMismatch`] as
    /// [`Row::get`].
    pub fn get_at<'a, T: FromValue<'a>>(&'a self, index: usize) -> Result<T> {
        match self.values.get(index) {
            // The `#index` name is built only for a row without names (no allocation
            // per read of a table's row).
            Some(v) => match self.name_at(index) {
                Some(name) => convert(name, v),
                None => convert(&format!("#{index}"), v),
            },
            None => Err(self.no_column(&format!("#{index}"))),
        }
    }

    /// The value of the column named `name`, if the row has one.
    pub fn value(&self, name: &str) -> Option<&Value> {
        self.position(name).map(|i| &self.values[i])
    }

    /// The values, in order.
    pub fn values(&self) -> &[Value] {
        &self.values
    }

    /// The values, in order.
    pub fn into_values(self) -> Vec<Value> {
        self.values
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// True if the row has no values.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The name of the value at `index`, `None` for a positional value (or no value).
    pub fn name_at(&self, index: usize) -> Option<&str> {
        match &self.names {
            Names::Own(names) => names.get(index)?.as_deref(),
            Names::Table(def) => def.columns().get(index).map(|c| c.name.as_str()),
        }
    }

    /// The table this row was read from, if any.
    pub fn table(&self) -> Option<&Arc<TableDef>> {
        match &self.names {
            Names::Table(def) => Some(def),
            Names::Own(_) => None,
        }
    }

    /// A row of the named columns only, in the order given (a projection).
    ///
    /// # Errors
    /// [`Error::NoSuchColumn`] for a name the row lacks.
    pub fn project(&self, names: &[&str]) -> Result<Row> {
        let mut out = Row::new();
        for &name in names {
            let i = self.position(name).ok_or_else(|| self.no_column(name))?;
            out = out.with(name, self.values[i].clone());
        }
        Ok(out)
    }

    fn position(&self, name: &str) -> Option<usize> {
        match &self.names {
            Names::Own(names) => names.iter().position(|n| n.as_deref() == Some(name)),
            Names::Table(def) => def.column_index(name),
        }
    }

    /// The names as a list of its own, taken out of the row (moved, not copied: a row
    /// built by a chain of [`Row::with`] copies no names).
    fn take_names(&mut self) -> Vec<Option<String>> {
        match std::mem::replace(&mut self.names, Names::Own(Vec::new())) {
            Names::Own(names) => names,
            Names::Table(def) => def.columns().iter().map(|c| Some(c.name.clone())).collect(),
        }
    }

    fn no_column(&self, name: &str) -> Error {
        Error::NoSuchColumn {
            table: match &self.names {
                Names::Table(def) => def.name().to_string(),
                Names::Own(_) => NO_TABLE.to_string(),
            },
            column: name.to_string(),
        }
    }
}

fn convert<'a, T: FromValue<'a>>(column: &str, value: &'a Value) -> Result<T> {
    T::from_value(value).ok_or_else(|| Error::TypeMismatch {
        column: column.to_string(),
        expected: T::NAME.to_string(),
        got: value.type_name().to_string(),
    })
}

impl From<Vec<Value>> for Row {
    /// A positional row.
    fn from(values: Vec<Value>) -> Row {
        Row::from_values(values)
    }
}

impl PartialEq for Row {
    /// Same values under the same names (a table's row equals a built row with the same
    /// names and values).
    fn eq(&self, other: &Row) -> bool {
        self.values == other.values && (0..self.len()).all(|i| self.name_at(i) == other.name_at(i))
    }
}

impl fmt::Display for Row {
    /// `(id: 7, owner: 'alice')`; positional values without a name: `(7, 'alice')`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        for (i, v) in self.values.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            match self.name_at(i) {
                Some(name) => write!(f, "{name}: {v}")?,
                None => write!(f, "{v}")?,
            }
        }
        f.write_str(")")
    }
}

impl TableDef {
    /// Resolves `row` against this table (module rules 3 and 4): one normalized value per
    /// column, in column order. Positional values take the columns in order, named values
    /// their column; a column given no value is NULL.
    ///
    /// # Errors
    /// [`Error::NoSuchColumn`] for a name that is not a column; [`Error::InvalidArgument`]
    /// (`row`) for more positional values than columns or a column given twice;
    /// [`Error::NotNull`], [`Error::TypeMismatch`], [`Error::ValueTooLong`] for a value
    /// that does not fit its column.
    pub fn check_row(&self, row: &Row) -> Result<Vec<Value>> {
        let mut slots: Vec<Option<&Value>> = vec![None; self.columns().len()];
        self.assign(row, &mut slots)?;
        self.columns()
            .iter()
            .zip(slots)
            .map(|(c, v)| Ok(check(self.name(), c, v.unwrap_or(&Value::Null))?.to_value(c.ty)))
            .collect()
    }

    /// Applies `changes` to `current` (a row of this table, e.g. as read) for an update of
    /// selected columns: returns the new row and the positions of the columns whose value
    /// changed, ascending. Only the changed values are checked.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (`current`) unless `current` has one value per column; as
    /// [`TableDef::check_row`] for `changes`.
    pub fn check_update(
        &self,
        current: &[Value],
        changes: &Row,
    ) -> Result<(Vec<Value>, Vec<usize>)> {
        if current.len() != self.columns().len() {
            return Err(Error::invalid(
                "current",
                format!(
                    "{} values for the {} columns of table `{}`",
                    current.len(),
                    self.columns().len(),
                    self.name()
                ),
            ));
        }
        let mut slots: Vec<Option<&Value>> = vec![None; self.columns().len()];
        self.assign(changes, &mut slots)?;
        let mut next = current.to_vec();
        let mut changed = Vec::new();
        for (i, slot) in slots.into_iter().enumerate() {
            if let Some(v) = slot {
                let c = &self.columns()[i];
                let v = check(self.name(), c, v)?.to_value(c.ty);
                if v != next[i] {
                    next[i] = v;
                    changed.push(i);
                }
            }
        }
        Ok((next, changed))
    }

    /// The values of `row` if they are this table's columns' values in column order, one
    /// per column: a row read from this table, or a positional row of as many values as
    /// there are columns: then value `i` is column `i`'s, and [`TableDef::assign`] needs no
    /// name lookups.
    pub(super) fn in_column_order<'r>(&self, row: &'r Row) -> Option<&'r [Value]> {
        let ordered = match &row.names {
            Names::Table(def) => std::ptr::eq(&**def, self),
            Names::Own(names) => names.iter().all(Option::is_none),
        };
        (ordered && row.values.len() == self.columns().len()).then_some(&row.values[..])
    }

    /// Puts each value of `row` into the slot of its column.
    pub(super) fn assign<'r>(&self, row: &'r Row, slots: &mut [Option<&'r Value>]) -> Result<()> {
        if let Some(values) = self.in_column_order(row) {
            for (slot, v) in slots.iter_mut().zip(values) {
                *slot = Some(v);
            }
            return Ok(());
        }
        let mut next_positional = 0;
        for (i, v) in row.values.iter().enumerate() {
            let column = match row.name_at(i) {
                Some(name) => self.column(name)?.0,
                None => {
                    next_positional += 1;
                    if next_positional > slots.len() {
                        return Err(Error::invalid(
                            "row",
                            format!(
                                "more than {} positional values for table `{}`",
                                slots.len(),
                                self.name()
                            ),
                        ));
                    }
                    next_positional - 1
                }
            };
            if slots[column].replace(v).is_some() {
                return Err(Error::invalid(
                    "row",
                    format!("column `{}` is given twice", self.columns()[column].name),
                ));
            }
        }
        Ok(())
    }
}
