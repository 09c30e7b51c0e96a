//! Checking a value against its column: the one place that decides whether a value fits a
//! column type, and what it becomes there (module rules 3 and 4).
//!
//! [`check`] turns a `&Value` into a [`Cell`]: the value in its column's stored form,
//! borrowed — an integer widened, a decimal rescaled to the column's scale, a CHAR without
//! its trailing spaces, a string cut of spaces beyond its maximum length. The row encoder
//! writes cells, the key encoder turns them into key fields, and
//! [`TableDef::check_row`](super::TableDef::check_row) turns them back into normalized
//! values. Every rejection is a typed error naming the column.

use crate::btree::key::KeyValue;
use crate::error::{Error, Result};

use super::schema::Column;
use super::types::{digit_count, pow10, ColumnType, Decimal};
use super::value::Value;

/// A value checked against its column, in the column's stored form.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Cell<'a> {
    /// NULL (the column is nullable).
    Null,
    /// BOOL.
    Bool(bool),
    /// INT4.
    Int4(i32),
    /// INT8; DECIMAL units at the column's scale; TIMESTAMP microseconds.
    Int8(i64),
    /// FLOAT8, bits as given.
    Float8(f64),
    /// VARCHAR (at most `n` characters); CHAR without trailing spaces (at most `n`).
    Str(&'a str),
    /// BYTES.
    Bytes(&'a [u8]),
}

/// Checks each of `values` against the column at its position in `columns` (as [`check`]),
/// in a plain loop: `collect::<Result<Vec<_>>>()` moved each cell through three stack copies
/// at odd offsets, whose loads stalled on store forwarding (6 % of an insert-workload
/// transaction in a profile).
///
/// # Errors
/// As [`check`], for the first value that fails.
pub(super) fn check_all<'a>(
    table: &str,
    columns: &[Column],
    values: impl IntoIterator<Item = &'a Value>,
) -> Result<Vec<Cell<'a>>> {
    let mut cells = Vec::with_capacity(columns.len());
    for (c, v) in columns.iter().zip(values) {
        cells.push(check(table, c, v)?);
    }
    Ok(cells)
}

/// Checks `value` against `column` of table `table`.
///
/// # Errors
/// [`Error::NotNull`], [`Error::TypeMismatch`], [`Error::ValueTooLong`] as the module rules
/// say (module doc of `table`, rule 4).
pub(super) fn check<'a>(table: &str, column: &Column, value: &'a Value) -> Result<Cell<'a>> {
    let mismatch = || Error::TypeMismatch {
        column: column.name.clone(),
        expected: column.ty.to_string(),
        got: value.type_name().to_string(),
    };
    let cell = match (column.ty, value) {
        (_, Value::Null) => {
            if !column.nullable {
                return Err(Error::NotNull {
                    table: table.to_string(),
                    column: column.name.clone(),
                });
            }
            Cell::Null
        }
        (ColumnType::Bool, Value::Bool(b)) => Cell::Bool(*b),
        (ColumnType::Int4, Value::Int4(i)) => Cell::Int4(*i),
        (ColumnType::Int8, Value::Int8(i)) => Cell::Int8(*i),
        (ColumnType::Int8, Value::Int4(i)) => Cell::Int8(i64::from(*i)),
        (ColumnType::Float8, Value::Float8(x)) => Cell::Float8(*x),
        (ColumnType::Float8, Value::Int4(i)) => Cell::Float8(f64::from(*i)),
        (ColumnType::Decimal { precision, scale }, v) => {
            let d = match v {
                Value::Decimal(d) => *d,
                Value::Int4(i) => Decimal::new(i64::from(*i), 0)?,
                Value::Int8(i) => Decimal::new(*i, 0)?,
                _ => return Err(mismatch()),
            };
            Cell::Int8(decimal_units(&column.name, precision, scale, d)?)
        }
        (ColumnType::Timestamp, Value::Timestamp(t)) => Cell::Int8(*t),
        (ColumnType::Char(n), Value::Str(s)) => {
            Cell::Str(fit_chars(&column.name, n, s)?.trim_end_matches(' '))
        }
        (ColumnType::Varchar(n), Value::Str(s)) => Cell::Str(fit_chars(&column.name, n, s)?),
        (ColumnType::Bytes(max), Value::Bytes(b)) => {
            if let Some(max) = max {
                if b.len() as u64 > u64::from(max) {
                    return Err(too_long(&column.name, max, b.len(), "bytes"));
                }
            }
            Cell::Bytes(b)
        }
        _ => return Err(mismatch()),
    };
    Ok(cell)
}

fn too_long(column: &str, max: impl Into<u64>, got: usize, unit: &'static str) -> Error {
    Error::ValueTooLong {
        column: column.to_string(),
        max: max.into(),
        got: got as u64,
        unit,
    }
}

/// `s` cut to at most `n` characters, if only spaces are cut (SQL's assignment rule for
/// CHAR and VARCHAR).
fn fit_chars<'a>(column: &str, n: u32, s: &'a str) -> Result<&'a str> {
    let n = n as usize;
    // At most n bytes are at most n characters: no need to walk them.
    if s.len() <= n {
        return Ok(s);
    }
    // Byte offset of the character after the first n, if there is one.
    let Some((cut, _)) = s.char_indices().nth(n) else {
        return Ok(s);
    };
    if s[cut..].bytes().all(|b| b == b' ') {
        Ok(&s[..cut])
    } else {
        Err(too_long(column, n as u64, s.chars().count(), "characters"))
    }
}

/// The units of `d` at `scale`, if exact and within `precision` digits.
fn decimal_units(column: &str, precision: u8, scale: u8, d: Decimal) -> Result<i64> {
    if d.scale() > scale {
        let div = pow10(d.scale() - scale);
        if d.units() % div != 0 {
            // Significant fractional digits: the scale less the trailing zeros.
            let (mut units, mut frac) = (d.units(), d.scale());
            while units % 10 == 0 {
                units /= 10;
                frac -= 1;
            }
            return Err(too_long(
                column,
                scale,
                usize::from(frac),
                "fractional digits",
            ));
        }
    }
    let units = d.rescale(scale).map(|r| r.units());
    let digits = match units {
        Some(u) => digit_count(u),
        // Overflowed an i64 while scaling up: at least 19 digits.
        None => digit_count(d.units()) + u32::from(scale - d.scale()),
    };
    match units {
        Some(u) if digits <= u32::from(precision) => Ok(u),
        _ => Err(too_long(column, precision, digits as usize, "digits")),
    }
}

impl Cell<'_> {
    /// The normalized owned value of a cell of a column of type `ty`: CHAR padded to `n`
    /// characters, DECIMAL at the column's scale, TIMESTAMP as such.
    pub(super) fn to_value(self, ty: ColumnType) -> Value {
        match (self, ty) {
            (Cell::Null, _) => Value::Null,
            (Cell::Bool(b), _) => Value::Bool(b),
            (Cell::Int4(i), _) => Value::Int4(i),
            (Cell::Int8(u), ColumnType::Decimal { scale, .. }) => {
                Value::Decimal(Decimal::from_parts(u, scale))
            }
            (Cell::Int8(t), ColumnType::Timestamp) => Value::Timestamp(t),
            (Cell::Int8(i), _) => Value::Int8(i),
            (Cell::Float8(x), _) => Value::Float8(x),
            (Cell::Str(s), ColumnType::Char(n)) => Value::Str(pad(s, n)),
            (Cell::Str(s), _) => Value::Str(s.to_string()),
            (Cell::Bytes(b), _) => Value::Bytes(b.to_vec()),
        }
    }

    /// The key field of a cell of a column of type `ty` (module rule 5): CHAR padded,
    /// `-0.0` as `+0.0`, every NaN as the one positive quiet NaN.
    pub(super) fn to_key(self, ty: ColumnType) -> KeyValue {
        match self {
            Cell::Null => KeyValue::Null,
            Cell::Bool(b) => KeyValue::Bool(b),
            Cell::Int4(i) => KeyValue::I32(i),
            Cell::Int8(i) => KeyValue::I64(i),
            Cell::Float8(x) => KeyValue::F64(normalize_float(x)),
            Cell::Str(s) => match ty {
                ColumnType::Char(n) => KeyValue::Str(pad(s, n)),
                _ => KeyValue::Str(s.to_string()),
            },
            Cell::Bytes(b) => KeyValue::Bytes(b.to_vec()),
        }
    }
}

/// `x` as SQL compares it: `-0.0` is `+0.0` and every NaN is [`f64::NAN`] (module rule 5).
pub(super) fn normalize_float(x: f64) -> f64 {
    if x.is_nan() {
        f64::NAN
    } else if x == 0.0 {
        0.0
    } else {
        x
    }
}

/// Spaces [`pad`] copies in one piece.
const SPACES: &str = "                                                                                                                                ";

/// `s` padded with spaces to `n` characters (`s` has at most `n`).
pub(super) fn pad(s: &str, n: u32) -> String {
    let missing = (n as usize).saturating_sub(s.chars().count());
    // Spaces are one byte each: copy them from SPACES in one piece rather than push
    // `missing` chars one by one (CHAR(n) fillers are long).
    let mut out = String::with_capacity(s.len() + missing);
    out.push_str(s);
    out.push_str(&SPACES[..missing.min(SPACES.len())]);
    for _ in SPACES.len()..missing {
        out.push(' ');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pad_counts_characters_not_bytes_and_pads_past_the_stock_of_spaces() {
        assert_eq!(pad("ab", 3), "ab ");
        assert_eq!(pad("abc", 3), "abc");
        assert_eq!(pad("", 0), "");
        let long = pad("é", 300);
        assert_eq!(long.chars().count(), 300);
        assert!(long.starts_with('é') && long[2..].bytes().all(|b| b == b' '));
    }

    fn col(ty: ColumnType) -> Column {
        Column::new("c", ty)
    }

    fn cell(ty: ColumnType, v: &Value) -> Result<Cell<'_>> {
        check("t", &col(ty), v)
    }

    fn too_long_of(r: Result<Cell<'_>>) -> (u64, u64, &'static str) {
        match r {
            Err(Error::ValueTooLong { max, got, unit, .. }) => (max, got, unit),
            other => panic!("expected ValueTooLong, got {other:?}"),
        }
    }

    #[test]
    fn strings_fit_by_characters_and_lose_only_spaces() {
        let s = Value::Str("é€x  ".into()); // 3 characters and 2 spaces, 8 bytes
        assert_eq!(cell(ColumnType::Varchar(3), &s).unwrap(), Cell::Str("é€x"));
        assert_eq!(cell(ColumnType::Varchar(4), &s).unwrap(), Cell::Str("é€x "));
        assert_eq!(cell(ColumnType::Char(9), &s).unwrap(), Cell::Str("é€x"));
        assert_eq!(
            too_long_of(cell(ColumnType::Varchar(2), &s)),
            (2, 5, "characters")
        );
        assert_eq!(
            cell(ColumnType::Char(9), &s)
                .unwrap()
                .to_value(ColumnType::Char(9)),
            Value::Str("é€x      ".into())
        );
        let b = Value::Bytes(vec![0; 5]);
        assert_eq!(
            too_long_of(cell(ColumnType::Bytes(Some(4)), &b)),
            (4, 5, "bytes")
        );
        assert!(cell(ColumnType::Bytes(Some(5)), &b).is_ok());
    }

    #[test]
    fn decimals_rescale_exactly() {
        let ty = ColumnType::Decimal {
            precision: 5,
            scale: 2,
        };
        let d = |s: &str| Value::Decimal(s.parse().unwrap());
        assert_eq!(cell(ty, &d("1.5")).unwrap(), Cell::Int8(150));
        assert_eq!(cell(ty, &d("-999.990")).unwrap(), Cell::Int8(-99999));
        assert_eq!(cell(ty, &Value::Int4(-12)).unwrap(), Cell::Int8(-1200));
        assert_eq!(
            too_long_of(cell(ty, &d("1.234"))),
            (2, 3, "fractional digits")
        );
        assert_eq!(too_long_of(cell(ty, &d("1000"))), (5, 6, "digits"));
        assert_eq!(
            too_long_of(cell(ty, &Value::Int8(i64::MAX))),
            (5, 21, "digits")
        );
        assert_eq!(
            cell(ty, &d("7")).unwrap().to_value(ty),
            Value::Decimal(Decimal::new(700, 2).unwrap())
        );
    }

    #[test]
    fn widening_only() {
        assert_eq!(
            cell(ColumnType::Int8, &Value::Int4(-1)).unwrap(),
            Cell::Int8(-1)
        );
        assert_eq!(
            cell(ColumnType::Float8, &Value::Int4(3)).unwrap(),
            Cell::Float8(3.0)
        );
        for (ty, v) in [
            (ColumnType::Int4, Value::Int8(1)),
            (ColumnType::Float8, Value::Int8(1)),
            (ColumnType::Timestamp, Value::Int8(1)),
            (ColumnType::Bytes(None), Value::Str("a".into())),
            (ColumnType::Varchar(3), Value::Bytes(vec![])),
            (ColumnType::Bool, Value::Int4(1)),
        ] {
            match cell(ty, &v) {
                Err(Error::TypeMismatch { expected, got, .. }) => {
                    assert_eq!((expected, got), (ty.to_string(), v.type_name().to_string()))
                }
                other => panic!("{ty} {v:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn floats_normalize_in_keys_only() {
        let c = cell(ColumnType::Float8, &Value::Float8(-0.0)).unwrap();
        assert_eq!(c.to_value(ColumnType::Float8), Value::Float8(-0.0));
        assert_eq!(c.to_key(ColumnType::Float8), KeyValue::F64(0.0));
        let nan = f64::from_bits(0xFFF0_0000_0000_0001);
        let v = Value::Float8(nan);
        let c = cell(ColumnType::Float8, &v).unwrap();
        assert_eq!(c.to_key(ColumnType::Float8), KeyValue::F64(f64::NAN));
    }
}
