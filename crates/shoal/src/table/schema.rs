//! Table definitions: columns, the primary key and secondary indexes, validated once
//! (module rules 1 and 2).

use std::collections::HashMap;

use crate::error::{Error, Result};

use super::codec::RowLayout;
use super::types::ColumnType;

/// Column positions by name. Hashed with `foldhash`, not the standard library's SipHash:
/// the names are the schema's own, not input an attacker picks, and SipHash of a name was
/// 1.6 % of New-Order's instructions (the stock table's 17 columns are past the scan of
/// [`TableDef::column_index`]).
type ColumnMap = HashMap<String, usize, foldhash::fast::FixedState>;

/// Most columns of a table: 1,024 (the row header counts columns in a `u16`).
pub const MAX_COLUMNS: usize = 1024;
/// Most columns of a primary key or of an index's own column list: 16.
pub const MAX_KEY_COLUMNS: usize = 16;
/// Most secondary indexes of a table: 64.
pub const MAX_INDEXES: usize = 64;
/// Longest table, column or index name, in bytes of UTF-8: 128.
pub const MAX_NAME_BYTES: usize = 128;

/// Tables with at most this many columns find a column by name with a scan
/// ([`TableDef::column_index`]), larger ones with their name map.
const SCAN_COLUMNS: usize = 16;

/// One column of a table.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Column {
    /// The column's name: 1 to [`MAX_NAME_BYTES`] bytes, no control characters, unique in
    /// its table (case-sensitive).
    pub name: String,
    /// The column's type.
    pub ty: ColumnType,
    /// True if the column may hold NULL. Primary-key columns never do.
    pub nullable: bool,
}

impl Column {
    /// A nullable column (SQL's default).
    pub fn new(name: impl Into<String>, ty: ColumnType) -> Column {
        Column {
            name: name.into(),
            ty,
            nullable: true,
        }
    }

    /// The same column, NOT NULL.
    pub fn not_null(mut self) -> Column {
        self.nullable = false;
        self
    }
}

/// A secondary index: a B-tree on the named columns of its table (DESIGN.md §3.10).
///
/// Its keys are laid out as module rule 6 says: the index columns followed by the primary
/// key (non-unique index; and a unique index's key where an index column is NULL, since
/// NULLs never conflict).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IndexDef {
    /// The index's name, unique among the table's indexes.
    pub name: String,
    /// The indexed columns, most significant first: 1 to [`MAX_KEY_COLUMNS`], no repeats.
    pub columns: Vec<String>,
    /// True if no two rows may have equal non-NULL values in all index columns.
    pub unique: bool,
}

impl IndexDef {
    /// A non-unique index on `columns`.
    pub fn new<S: Into<String>>(
        name: impl Into<String>,
        columns: impl IntoIterator<Item = S>,
    ) -> IndexDef {
        IndexDef {
            name: name.into(),
            columns: columns.into_iter().map(Into::into).collect(),
            unique: false,
        }
    }

    /// The same index, unique.
    pub fn unique(mut self) -> IndexDef {
        self.unique = true;
        self
    }
}

/// The definition of a table: its name, columns, primary key and secondary indexes.
///
/// Always valid (module rule 1): every constructor checks the whole definition, and a
/// change makes a new `TableDef`.
///
/// ```
/// use shoal::table::{Column, ColumnType, IndexDef, TableDef};
///
/// let def = TableDef::new(
///     "accounts",
///     vec![
///         Column::new("id", ColumnType::Int8),
///         Column::new("owner", ColumnType::Varchar(40)).not_null(),
///         Column::new("balance", ColumnType::decimal(12, 2)?),
///     ],
///     &["id"],
/// )?
/// .with_index(IndexDef::new("by_owner", ["owner"]))?;
/// assert_eq!(def.column_index("balance"), Some(2));
/// assert!(!def.columns()[0].nullable); // primary-key columns are NOT NULL
/// assert_eq!(TableDef::decode(&def.encode())?, def);
/// # Ok::<(), shoal::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableDef {
    name: String,
    columns: Vec<Column>,
    primary_key: Vec<usize>,
    indexes: Vec<IndexDef>,
    /// Column positions of each index's own columns, parallel to `indexes`.
    index_columns: Vec<Vec<usize>>,
    by_name: ColumnMap,
    layout: RowLayout,
}

impl TableDef {
    /// A table with `columns` and the primary key `primary_key` (column names, most
    /// significant first), no secondary indexes. Primary-key columns are made NOT NULL.
    ///
    /// # Errors
    /// [`Error::InvalidSchema`]: a bad or duplicate name, no columns or more than
    /// [`MAX_COLUMNS`], an empty primary key, more than [`MAX_KEY_COLUMNS`] key columns or a
    /// column named twice in it. [`Error::NoSuchColumn`]: a key column that is not a
    /// column. [`Error::InvalidArgument`]: a column type's parameters out of range
    /// ([`ColumnType::validate`]).
    pub fn new(
        name: impl Into<String>,
        mut columns: Vec<Column>,
        primary_key: &[&str],
    ) -> Result<TableDef> {
        let name = name.into();
        for key_column in primary_key {
            if let Some(c) = columns.iter_mut().find(|c| c.name == *key_column) {
                c.nullable = false;
            }
        }
        let by_name = column_map(&name, &columns)?;
        let primary_key = resolve(&name, &by_name, primary_key)?;
        TableDef::build(name, columns, primary_key, Vec::new())
    }

    /// This table with one more secondary index.
    ///
    /// # Errors
    /// [`Error::InvalidSchema`]: the name is bad or taken, the table has
    /// [`MAX_INDEXES`] already, the column list is empty, too long or repeats a column.
    /// [`Error::NoSuchColumn`]: an index column that is not a column.
    pub fn with_index(self, index: IndexDef) -> Result<TableDef> {
        let mut indexes = self.indexes;
        indexes.push(index);
        TableDef::build(self.name, self.columns, self.primary_key, indexes)
    }

    /// This table without the index named `name`.
    ///
    /// # Errors
    /// [`Error::InvalidSchema`] if there is no such index.
    pub fn without_index(self, name: &str) -> Result<TableDef> {
        let Some(i) = self.index_position(name) else {
            return Err(invalid(&self.name, format!("no index named `{name}`")));
        };
        let mut indexes = self.indexes;
        indexes.remove(i);
        TableDef::build(self.name, self.columns, self.primary_key, indexes)
    }

    /// This table with `column` appended (schema evolution, module rule 8). Rows written
    /// before read it as NULL, so it must be nullable.
    ///
    /// # Errors
    /// [`Error::InvalidSchema`] if `column` is NOT NULL, its name is bad or taken, or the
    /// table has [`MAX_COLUMNS`] columns; [`Error::InvalidArgument`] for a bad type.
    pub fn with_added_column(self, column: Column) -> Result<TableDef> {
        if !column.nullable {
            return Err(invalid(
                &self.name,
                format!(
                    "added column `{}` must be nullable: existing rows read it as NULL",
                    column.name
                ),
            ));
        }
        let mut columns = self.columns;
        columns.push(column);
        TableDef::build(self.name, columns, self.primary_key, self.indexes)
    }

    /// Checks a whole definition given by column positions; every constructor ends here.
    pub(super) fn build(
        name: String,
        columns: Vec<Column>,
        primary_key: Vec<usize>,
        indexes: Vec<IndexDef>,
    ) -> Result<TableDef> {
        let by_name = column_map(&name, &columns)?;
        for column in &columns {
            column.ty.validate().map_err(|e| match e {
                Error::InvalidArgument { name: arg, reason } => Error::InvalidArgument {
                    name: arg,
                    reason: format!("column `{}` of table `{name}`: {reason}", column.name),
                },
                other => other,
            })?;
        }
        if primary_key.is_empty() {
            return Err(invalid(&name, "the primary key has no columns".into()));
        }
        check_key_positions(&name, &columns, &primary_key, "the primary key")?;
        for &i in &primary_key {
            if columns[i].nullable {
                return Err(invalid(
                    &name,
                    format!("primary-key column `{}` is nullable", columns[i].name),
                ));
            }
        }
        if indexes.len() > MAX_INDEXES {
            return Err(invalid(
                &name,
                format!("{} indexes, at most {MAX_INDEXES}", indexes.len()),
            ));
        }
        let mut index_columns = Vec::with_capacity(indexes.len());
        for (i, index) in indexes.iter().enumerate() {
            check_name(&name, "index", &index.name)?;
            if indexes[..i].iter().any(|other| other.name == index.name) {
                return Err(invalid(
                    &name,
                    format!("two indexes named `{}`", index.name),
                ));
            }
            let what = format!("index `{}`", index.name);
            let names: Vec<&str> = index.columns.iter().map(String::as_str).collect();
            let positions = resolve(&name, &by_name, &names)?;
            if positions.is_empty() {
                return Err(invalid(&name, format!("{what} has no columns")));
            }
            check_key_positions(&name, &columns, &positions, &what)?;
            index_columns.push(positions);
        }
        let layout = RowLayout::new(&columns);
        Ok(TableDef {
            name,
            columns,
            primary_key,
            indexes,
            index_columns,
            by_name,
            layout,
        })
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The columns, in row order.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// The position of the column named `name` (case-sensitive): a scan of at most 16
    /// names, or a hash lookup.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        // For the usual few columns a scan (a length compare per column, bytes only on a
        // length match) beats hashing the name: 2.6 % of TPC-B's samples went to the hash.
        if self.columns.len() <= SCAN_COLUMNS {
            return self.columns.iter().position(|c| c.name == name);
        }
        self.by_name.get(name).copied()
    }

    /// The column named `name` and its position.
    ///
    /// # Errors
    /// [`Error::NoSuchColumn`] if there is none.
    pub fn column(&self, name: &str) -> Result<(usize, &Column)> {
        match self.column_index(name) {
            Some(i) => Ok((i, &self.columns[i])),
            None => Err(Error::NoSuchColumn {
                table: self.name.clone(),
                column: name.to_string(),
            }),
        }
    }

    /// Positions of the primary-key columns, most significant first.
    pub fn primary_key(&self) -> &[usize] {
        &self.primary_key
    }

    /// The secondary indexes, in definition order.
    pub fn indexes(&self) -> &[IndexDef] {
        &self.indexes
    }

    /// The position (in [`TableDef::indexes`]) of the index named `name`.
    pub fn index_position(&self, name: &str) -> Option<usize> {
        self.indexes.iter().position(|ix| ix.name == name)
    }

    /// Column positions of index `index`'s own columns (without the primary key).
    ///
    /// # Panics
    /// If `index >= self.indexes().len()` (a programmer error).
    pub fn index_columns(&self, index: usize) -> &[usize] {
        &self.index_columns[index]
    }

    /// The row layout (offsets of fixed fields, ranks of variable ones).
    pub(super) fn layout(&self) -> &RowLayout {
        &self.layout
    }
}

fn invalid(table: &str, reason: String) -> Error {
    Error::InvalidSchema {
        table: table.to_string(),
        reason,
    }
}

/// Checks a name's length and characters; `what` is `table`, `column` or `index`.
fn check_name(table: &str, what: &str, name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_NAME_BYTES {
        return Err(invalid(
            table,
            format!(
                "{what} name {name:?} is {} bytes, must be 1 to {MAX_NAME_BYTES}",
                name.len()
            ),
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(invalid(
            table,
            format!("{what} name {name:?} has a control character"),
        ));
    }
    Ok(())
}

/// Checks the table name, the column count and names; returns the name → position map.
fn column_map(table: &str, columns: &[Column]) -> Result<ColumnMap> {
    check_name(table, "table", table)?;
    if columns.is_empty() || columns.len() > MAX_COLUMNS {
        return Err(invalid(
            table,
            format!("{} columns, must be 1 to {MAX_COLUMNS}", columns.len()),
        ));
    }
    let mut map = ColumnMap::with_capacity_and_hasher(columns.len(), Default::default());
    for (i, c) in columns.iter().enumerate() {
        check_name(table, "column", &c.name)?;
        if map.insert(c.name.clone(), i).is_some() {
            return Err(invalid(table, format!("two columns named `{}`", c.name)));
        }
    }
    Ok(map)
}

/// Positions of the named columns.
fn resolve(table: &str, by_name: &ColumnMap, names: &[&str]) -> Result<Vec<usize>> {
    names
        .iter()
        .map(|n| {
            by_name.get(*n).copied().ok_or_else(|| Error::NoSuchColumn {
                table: table.to_string(),
                column: n.to_string(),
            })
        })
        .collect()
}

/// Checks a key's column positions: in range, at most [`MAX_KEY_COLUMNS`], no repeats.
fn check_key_positions(
    table: &str,
    columns: &[Column],
    positions: &[usize],
    what: &str,
) -> Result<()> {
    if positions.len() > MAX_KEY_COLUMNS {
        return Err(invalid(
            table,
            format!(
                "{what} has {} columns, at most {MAX_KEY_COLUMNS}",
                positions.len()
            ),
        ));
    }
    for (j, &p) in positions.iter().enumerate() {
        let Some(column) = columns.get(p) else {
            return Err(invalid(
                table,
                format!("{what} names column #{p}, the table has {}", columns.len()),
            ));
        };
        if positions[..j].contains(&p) {
            return Err(invalid(
                table,
                format!("{what} names column `{}` twice", column.name),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols() -> Vec<Column> {
        vec![
            Column::new("id", ColumnType::Int8),
            Column::new("name", ColumnType::Varchar(20)),
            Column::new("at", ColumnType::Timestamp),
        ]
    }

    fn schema_error(r: Result<TableDef>) -> String {
        match r {
            Err(e @ Error::InvalidSchema { .. }) => e.to_string(),
            other => panic!("expected InvalidSchema, got {other:?}"),
        }
    }

    #[test]
    fn valid_definition_and_lookups() {
        let def = TableDef::new("t", cols(), &["name", "id"])
            .unwrap()
            .with_index(IndexDef::new("by_at", ["at", "name"]).unique())
            .unwrap();
        assert_eq!(def.primary_key(), [1, 0]);
        assert!(!def.columns()[0].nullable && !def.columns()[1].nullable);
        assert!(def.columns()[2].nullable);
        assert_eq!(def.index_position("by_at"), Some(0));
        assert_eq!(def.index_columns(0), [2, 1]);
        assert_eq!(def.column("at").unwrap().0, 2);
        let e = def.column("nope").unwrap_err();
        assert_eq!(e.to_string(), "no column `nope` in table `t`");
        let def = def.without_index("by_at").unwrap();
        assert!(def.indexes().is_empty());
    }

    #[test]
    fn every_rule_has_its_error() {
        let dup = vec![
            Column::new("a", ColumnType::Int4),
            Column::new("a", ColumnType::Int8),
        ];
        assert_eq!(
            schema_error(TableDef::new("t", dup, &["a"])),
            "invalid definition of table `t`: two columns named `a`"
        );
        assert!(schema_error(TableDef::new("t", cols(), &[]))
            .ends_with("the primary key has no columns"));
        assert!(schema_error(TableDef::new("t", vec![], &["a"]))
            .ends_with("0 columns, must be 1 to 1024"));
        let many: Vec<Column> = (0..=MAX_COLUMNS)
            .map(|i| Column::new(format!("c{i}"), ColumnType::Bool))
            .collect();
        assert!(schema_error(TableDef::new("t", many, &["c0"])).contains("1025 columns"));
        assert!(schema_error(TableDef::new("", cols(), &["id"])).contains("table name \"\""));
        assert!(schema_error(TableDef::new("t", cols(), &["id", "id"]))
            .ends_with("the primary key names column `id` twice"));
        let long: Vec<Column> = (0..=MAX_KEY_COLUMNS)
            .map(|i| Column::new(format!("c{i}"), ColumnType::Bool))
            .collect();
        let names: Vec<String> = long.iter().map(|c| c.name.clone()).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        assert!(schema_error(TableDef::new("t", long, &names)).contains("17 columns, at most 16"));
        match TableDef::new("t", cols(), &["nope"]) {
            Err(e @ Error::NoSuchColumn { .. }) => {
                assert_eq!(e.to_string(), "no column `nope` in table `t`")
            }
            other => panic!("{other:?}"),
        }
        let def = TableDef::new("t", cols(), &["id"]).unwrap();
        assert!(matches!(
            def.clone().with_index(IndexDef::new("i", ["zz"])),
            Err(Error::NoSuchColumn { .. })
        ));
        assert!(schema_error(
            def.clone()
                .with_index(IndexDef::new("i", Vec::<String>::new()))
        )
        .ends_with("index `i` has no columns"));
        let twice = def.clone().with_index(IndexDef::new("i", ["at"])).unwrap();
        assert!(schema_error(twice.with_index(IndexDef::new("i", ["name"])))
            .ends_with("two indexes named `i`"));
        assert!(
            schema_error(def.clone().with_index(IndexDef::new("i\n", ["at"])))
                .contains("control character")
        );
        assert!(schema_error(
            def.clone()
                .with_added_column(Column::new("x", ColumnType::Bool).not_null())
        )
        .contains("must be nullable"));
        assert!(schema_error(def.clone().without_index("zz")).ends_with("no index named `zz`"));
        match TableDef::new(
            "t",
            vec![Column::new(
                "d",
                ColumnType::Decimal {
                    precision: 19,
                    scale: 0,
                },
            )],
            &["d"],
        ) {
            Err(Error::InvalidArgument { name, reason }) => {
                assert_eq!(name, "precision");
                assert!(
                    reason.starts_with("column `d` of table `t`: DECIMAL(19,0)"),
                    "{reason}"
                );
            }
            other => panic!("{other:?}"),
        }
        let mut too_many = def;
        for i in 0..MAX_INDEXES {
            too_many = too_many
                .with_index(IndexDef::new(format!("i{i}"), ["at"]))
                .unwrap();
        }
        assert!(
            schema_error(too_many.with_index(IndexDef::new("x", ["at"]))).contains("65 indexes")
        );
    }
}
