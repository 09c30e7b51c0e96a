//! Values as memcomparable B-tree keys (module rules 5 and 6): primary keys, index keys and
//! their prefixes, through [`crate::btree::key`].

use crate::btree::key::{encode_value, Decoder, Direction, KeyType, KeyValue};
use crate::error::{Error, Result};

use super::check::{check, check_all, Cell};
use super::row::Row;
use super::schema::{Column, TableDef};
use super::types::{ColumnType, Decimal};
use super::value::Value;

/// The key field type of a column type: BOOL → `Bool`; INT4 → `I32`; INT8, DECIMAL (units
/// at the column's scale) and TIMESTAMP → `I64`; FLOAT8 → `F64`; CHAR (padded) and VARCHAR
/// → `Str`; BYTES → `Bytes`.
pub fn key_type(ty: ColumnType) -> KeyType {
    match ty {
        ColumnType::Bool => KeyType::Bool,
        ColumnType::Int4 => KeyType::I32,
        ColumnType::Int8 | ColumnType::Decimal { .. } | ColumnType::Timestamp => KeyType::I64,
        ColumnType::Float8 => KeyType::F64,
        ColumnType::Char(_) | ColumnType::Varchar(_) => KeyType::Str,
        ColumnType::Bytes(_) => KeyType::Bytes,
    }
}

/// `value` checked against column `column` of `def` and turned into its key field, so that
/// key order is the SQL order of the column's type (module rule 5).
///
/// # Errors
/// [`Error::NoSuchColumn`] (`#column`) for a bad position; [`Error::NotNull`],
/// [`Error::TypeMismatch`], [`Error::ValueTooLong`] as [`TableDef::check_row`] returns them.
pub fn key_value(def: &TableDef, column: usize, value: &Value) -> Result<KeyValue> {
    let c = column_at(def, column)?;
    // The common integer keys, which `check` passes unchanged: without its `Result` of a
    // cell, a point read's key costs a few nanoseconds less (select1).
    match (c.ty, value) {
        (ColumnType::Int4, Value::Int4(i)) => return Ok(KeyValue::I32(*i)),
        (ColumnType::Int8, Value::Int8(i)) => return Ok(KeyValue::I64(*i)),
        _ => {}
    }
    Ok(check(def.name(), c, value)?.to_key(c.ty))
}

/// The key of the columns `columns` (positions, most significant first) of a row of `def`
/// given as all its values in column order — a primary key, or any index key.
///
/// ```
/// use shoal::table::{encode_key, Column, ColumnType, TableDef, Value};
///
/// let def = TableDef::new(
///     "t",
///     vec![Column::new("a", ColumnType::Int4), Column::new("b", ColumnType::Char(3))],
///     &["b", "a"],
/// )?;
/// let k1 = encode_key(&def, def.primary_key(), &[Value::Int4(9), Value::from("x")])?;
/// let k2 = encode_key(&def, def.primary_key(), &[Value::Int4(1), Value::from("x\t")])?;
/// assert!(k1 > k2); // 'x  ' > 'x\t ' in PAD SPACE order: ' ' sorts after '\t'
/// # Ok::<(), shoal::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] (`row`) if `row` does not have one value per column of
/// `def`; otherwise as [`key_value`].
pub fn encode_key(def: &TableDef, columns: &[usize], row: &[Value]) -> Result<Vec<u8>> {
    if row.len() != def.columns().len() {
        return Err(Error::invalid(
            "row",
            format!(
                "{} values for the {} columns of table `{}`",
                row.len(),
                def.columns().len(),
                def.name()
            ),
        ));
    }
    let mut out = Vec::with_capacity(FIXED_FIELD_BYTES * columns.len());
    for &c in columns {
        let v = row.get(c).unwrap_or(&Value::Null);
        encode_value(&mut out, &key_value(def, c, v)?, Direction::Asc);
    }
    Ok(out)
}

/// The key of the leading columns of `columns` given by `values` (one per column, at most
/// `columns.len()`): a whole key for a lookup (`values` are the primary-key values), or a
/// prefix for a range scan. The encoding of a prefix is a byte prefix of every key that
/// extends it (key invariant 2), so `[prefix, prefix_successor(prefix))` scans it.
///
/// # Errors
/// [`Error::InvalidArgument`] (`values`) if there are more values than columns; otherwise
/// as [`key_value`] (a NULL for a NOT NULL column is [`Error::NotNull`]).
pub fn encode_key_prefix(def: &TableDef, columns: &[usize], values: &[Value]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(FIXED_FIELD_BYTES * values.len());
    encode_key_prefix_into(def, columns, values, &mut out)?;
    Ok(out)
}

/// [`encode_key_prefix`] appended to `out`, which allocates only if its capacity is short
/// (a point read that keeps one vector encodes its key without an allocation).
///
/// # Errors
/// As [`encode_key_prefix`]; `out` may then hold part of the key.
pub(crate) fn encode_key_prefix_into(
    def: &TableDef,
    columns: &[usize],
    values: &[Value],
    out: &mut Vec<u8>,
) -> Result<()> {
    if values.len() > columns.len() {
        return Err(Error::invalid(
            "values",
            format!(
                "{} values for a key of {} columns",
                values.len(),
                columns.len()
            ),
        ));
    }
    for (&c, v) in columns.iter().zip(values) {
        encode_value(out, &key_value(def, c, v)?, Direction::Asc);
    }
    Ok(())
}

/// Decodes a key of the columns `columns` of `def`: one normalized value per column (a
/// FLOAT8 comes back as its key form: `+0.0` for `-0.0`, [`f64::NAN`] for any NaN).
///
/// # Errors
/// [`Error::CorruptRecord`] (`key of table …`) unless `key` is exactly the encoding of such
/// values (types, NOT NULL and lengths of the columns included); [`Error::NoSuchColumn`]
/// for a bad position.
pub fn decode_key(def: &TableDef, columns: &[usize], key: &[u8]) -> Result<Vec<Value>> {
    let what = || format!("key of table `{}`", def.name());
    let mut d = Decoder::new(key);
    let values = decode_fields(def, columns, &mut d, &what)?;
    d.finish().map_err(|e| as_corrupt(e, &what))?;
    Ok(values)
}

/// Bytes of the longest fixed-width key field (an `F64`'s tag and 8 bytes, or an integer's
/// header and 8-byte payload): keys are allocated for this many per column, so a key of
/// fixed-width columns is built in one allocation.
const FIXED_FIELD_BYTES: usize = 9;

/// What an insert stores for one row: its primary key, its encoded bytes, and its key in each
/// secondary index (in index order).
pub(super) struct InsertEncoding {
    pub(super) primary_key: Vec<u8>,
    pub(super) row: Vec<u8>,
    pub(super) index_keys: Vec<Vec<u8>>,
}

impl TableDef {
    /// For an insert: checks `row` (as [`TableDef::check_row`]) and encodes its primary key,
    /// its bytes (as `encode_row`) and its index keys (as [`TableDef::index_key_of`]) from
    /// the checked cells, each value checked once and none copied into a checked row first.
    ///
    /// # Errors
    /// As [`TableDef::check_row`] and `encode_row`.
    pub(super) fn insert_encoding(&self, row: &Row) -> Result<InsertEncoding> {
        let cells = match self.in_column_order(row) {
            // The common case (a positional row, or one read from this table): no mapping.
            Some(values) => check_all(self.name(), self.columns(), values)?,
            None => {
                let mut slots: Vec<Option<&Value>> = vec![None; self.columns().len()];
                self.assign(row, &mut slots)?;
                check_all(
                    self.name(),
                    self.columns(),
                    slots.iter().map(|v| v.unwrap_or(&Value::Null)),
                )?
            }
        };
        let key_of = |columns: &[usize]| {
            let mut out = Vec::with_capacity(FIXED_FIELD_BYTES * columns.len());
            for &c in columns {
                let key = cells[c].to_key(self.columns()[c].ty);
                encode_value(&mut out, &key, Direction::Asc);
            }
            out
        };
        let primary_key = key_of(self.primary_key());
        let index_keys = (0..self.indexes().len())
            .map(|i| {
                let own = self.index_columns(i);
                let mut key = key_of(own);
                if self.index_key_has_pk(i, |c| matches!(cells[c], Cell::Null)) {
                    key.extend_from_slice(&primary_key);
                }
                key
            })
            .collect();
        Ok(InsertEncoding {
            row: super::codec::encode_cells(self, &cells)?,
            primary_key,
            index_keys,
        })
    }

    /// The primary key of a row (all its values, in column order).
    ///
    /// # Errors
    /// As [`encode_key`].
    pub fn primary_key_of(&self, row: &[Value]) -> Result<Vec<u8>> {
        encode_key(self, self.primary_key(), row)
    }

    /// The key of a row in secondary index `index` (module rule 6): the index columns,
    /// then the primary key if the index is not unique or one of its columns is NULL.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (`index`) for a bad index position; otherwise as
    /// [`encode_key`].
    pub fn index_key_of(&self, index: usize, row: &[Value]) -> Result<Vec<u8>> {
        self.index_at(index)?;
        let mut key = encode_key(self, self.index_columns(index), row)?;
        if self.index_key_has_pk(index, |c| row[c].is_null()) {
            key.extend(self.primary_key_of(row)?);
        }
        Ok(key)
    }

    /// Module rule 6: whether a row's key in index `index` (a valid position) ends with its
    /// primary key — when the index is not unique, or one of its columns (`is_null` of a
    /// column position) is NULL.
    fn index_key_has_pk(&self, index: usize, is_null: impl Fn(usize) -> bool) -> bool {
        !self.indexes()[index].unique || self.index_columns(index).iter().any(|&c| is_null(c))
    }

    /// Decodes a key of secondary index `index`: the index columns' values, and the
    /// primary key's if the key holds them (module rule 6), else an empty vector.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (`index`) for a bad index position;
    /// [`Error::CorruptRecord`] (`key of index … of table …`) unless `key` is exactly such
    /// an encoding.
    pub fn decode_index_key(&self, index: usize, key: &[u8]) -> Result<(Vec<Value>, Vec<Value>)> {
        let ix = self.index_at(index)?;
        let what = || format!("key of index `{}` of table `{}`", ix.name, self.name());
        let mut d = Decoder::new(key);
        let own = decode_fields(self, self.index_columns(index), &mut d, &what)?;
        let pk = if !ix.unique || own.iter().any(Value::is_null) {
            decode_fields(self, self.primary_key(), &mut d, &what)?
        } else {
            Vec::new()
        };
        d.finish().map_err(|e| as_corrupt(e, &what))?;
        Ok((own, pk))
    }

    fn index_at(&self, index: usize) -> Result<&super::schema::IndexDef> {
        self.indexes().get(index).ok_or_else(|| {
            Error::invalid(
                "index",
                format!(
                    "index #{index}, table `{}` has {}",
                    self.name(),
                    self.indexes().len()
                ),
            )
        })
    }
}

fn column_at(def: &TableDef, column: usize) -> Result<&Column> {
    def.columns()
        .get(column)
        .ok_or_else(|| Error::NoSuchColumn {
            table: def.name().to_string(),
            column: format!("#{column}"),
        })
}

/// A key decoder's error (a `Corruption` without a page) as a corrupt record.
fn as_corrupt(e: Error, what: &dyn Fn() -> String) -> Error {
    match e {
        Error::Corruption { reason, .. } => Error::CorruptRecord {
            what: what(),
            reason,
        },
        other => other,
    }
}

/// Reads one field per column of `columns`, each checked to be canonical for its column.
fn decode_fields(
    def: &TableDef,
    columns: &[usize],
    d: &mut Decoder<'_>,
    what: &dyn Fn() -> String,
) -> Result<Vec<Value>> {
    let mut values = Vec::with_capacity(columns.len());
    for &i in columns {
        let c = column_at(def, i)?;
        let kv = d
            .next_field(key_type(c.ty))
            .map_err(|e| as_corrupt(e, what))?;
        // Integers of their own column type: every encoding decodes to a value of the
        // column that encodes back to it (the order-preserving integer encoding is a
        // bijection), so the check below could not fail; it cost ~290 instructions a field
        // in an index scan's primary keys.
        match (&kv, c.ty) {
            (KeyValue::I32(v), ColumnType::Int4) => {
                values.push(Value::Int4(*v));
                continue;
            }
            (KeyValue::I64(v), ColumnType::Int8) => {
                values.push(Value::Int8(*v));
                continue;
            }
            _ => {}
        }
        let bad = |reason: String| Error::CorruptRecord {
            what: what(),
            reason: format!("column `{}`: {reason}", c.name),
        };
        let v = match (kv.clone(), c.ty) {
            (KeyValue::Null, _) => Value::Null,
            (KeyValue::Bool(b), _) => Value::Bool(b),
            (KeyValue::I32(v), _) => Value::Int4(v),
            (KeyValue::I64(v), ColumnType::Decimal { scale, .. }) => {
                Value::Decimal(Decimal::from_parts(v, scale))
            }
            (KeyValue::I64(v), ColumnType::Timestamp) => Value::Timestamp(v),
            (KeyValue::I64(v), _) => Value::Int8(v),
            (KeyValue::F64(v), _) => Value::Float8(v),
            (KeyValue::Str(s), _) => Value::Str(s),
            (KeyValue::Bytes(b), _) => Value::Bytes(b),
            (other, _) => return Err(bad(format!("unexpected key field {other:?}"))),
        };
        // Canonical: the value fits its column and encodes back to the same field.
        let again = check(def.name(), c, &v)
            .map_err(|e| bad(e.to_string()))?
            .to_key(c.ty);
        if again != kv {
            return Err(bad(format!("{v} is not in its key form")));
        }
        values.push(v);
    }
    Ok(values)
}
