//! Typed values of columns: [`Value`], its conversions from Rust types and back
//! ([`FromValue`]).

use std::fmt;

use super::types::{Decimal, Timestamp};

/// One column value of a row, or NULL.
///
/// A value is checked against its column when a row is resolved against a table
/// ([`TableDef::check_row`](super::TableDef::check_row)): types must match, except that an
/// `Int4` fits INT8, FLOAT8 and DECIMAL columns and an `Int8` fits DECIMAL (when the number
/// fits). A `Str` fits CHAR(n) and VARCHAR(n) columns.
///
/// Equality is exact, as in a stored row: `Float8` compares bits (`NaN == NaN`,
/// `-0.0 != 0.0`) and `Decimal` compares representations (see [`Decimal`]).
///
/// ```
/// use shoal::table::{Decimal, Value};
///
/// assert_eq!(Value::from(7), Value::Int4(7));
/// assert_eq!(Value::from("alice"), Value::Str("alice".into()));
/// assert_eq!(Value::from(None::<i64>), Value::Null);
/// assert_eq!(Value::from(&b"\x00\x01"[..]), Value::Bytes(vec![0, 1]));
/// let price: Decimal = "9.95".parse().unwrap();
/// assert_eq!(Value::from(price).to_string(), "9.95");
/// assert_eq!(Value::Str("it's".into()).to_string(), "'it''s'");
/// ```
#[derive(Clone, Debug)]
pub enum Value {
    /// SQL NULL, of any type.
    Null,
    /// A BOOL value.
    Bool(bool),
    /// An INT4 value.
    Int4(i32),
    /// An INT8 value.
    Int8(i64),
    /// A FLOAT8 value.
    Float8(f64),
    /// A DECIMAL value.
    Decimal(Decimal),
    /// A CHAR(n) or VARCHAR(n) value. Read from a CHAR(n) column it has exactly `n`
    /// characters (blank-padded).
    Str(String),
    /// A BYTES value.
    Bytes(Vec<u8>),
    /// A TIMESTAMP value: microseconds since 1970-01-01 00:00:00 UTC.
    Timestamp(i64),
}

impl Value {
    /// True for [`Value::Null`].
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The name of the value's type as errors print it: `NULL`, `BOOL`, `INT4`, `INT8`,
    /// `FLOAT8`, `DECIMAL`, `TEXT` (a string, before it meets a CHAR or VARCHAR column),
    /// `BYTES`, `TIMESTAMP`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "NULL",
            Value::Bool(_) => "BOOL",
            Value::Int4(_) => "INT4",
            Value::Int8(_) => "INT8",
            Value::Float8(_) => "FLOAT8",
            Value::Decimal(_) => "DECIMAL",
            Value::Str(_) => "TEXT",
            Value::Bytes(_) => "BYTES",
            Value::Timestamp(_) => "TIMESTAMP",
        }
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        use Value::*;
        match (self, other) {
            (Null, Null) => true,
            (Bool(a), Bool(b)) => a == b,
            (Int4(a), Int4(b)) => a == b,
            (Int8(a), Int8(b)) => a == b,
            (Float8(a), Float8(b)) => a.to_bits() == b.to_bits(),
            (Decimal(a), Decimal(b)) => a == b,
            (Str(a), Str(b)) => a == b,
            (Bytes(a), Bytes(b)) => a == b,
            (Timestamp(a), Timestamp(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Value {}

impl fmt::Display for Value {
    /// SQL-literal style: `NULL`, `true`, `7`, `1.5`, `12.50`, `'it''s'`, `x'00ff'`,
    /// `TIMESTAMP '2024-02-29 12:34:56.123456'`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Bool(v) => write!(f, "{v}"),
            Value::Int4(v) => write!(f, "{v}"),
            Value::Int8(v) => write!(f, "{v}"),
            Value::Float8(v) => write!(f, "{v:?}"),
            Value::Decimal(v) => write!(f, "{v}"),
            Value::Str(v) => write!(f, "'{}'", v.replace('\'', "''")),
            Value::Bytes(v) => {
                f.write_str("x'")?;
                for b in v {
                    write!(f, "{b:02x}")?;
                }
                f.write_str("'")
            }
            Value::Timestamp(v) => write!(f, "TIMESTAMP '{}'", Timestamp(*v)),
        }
    }
}

macro_rules! value_from {
    ($($t:ty => |$v:ident| $e:expr;)*) => {$(
        impl From<$t> for Value {
            fn from($v: $t) -> Value {
                $e
            }
        }
    )*};
}

value_from! {
    bool => |v| Value::Bool(v);
    i32 => |v| Value::Int4(v);
    i64 => |v| Value::Int8(v);
    f64 => |v| Value::Float8(v);
    Decimal => |v| Value::Decimal(v);
    Timestamp => |v| Value::Timestamp(v.0);
    &str => |v| Value::Str(v.to_owned());
    String => |v| Value::Str(v);
    &String => |v| Value::Str(v.clone());
    Vec<u8> => |v| Value::Bytes(v);
    &[u8] => |v| Value::Bytes(v.to_vec());
}

impl<T: Into<Value>> From<Option<T>> for Value {
    /// `None` is NULL.
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

/// A Rust type a [`Value`] converts to, for the typed getters
/// [`Row::get`](super::Row::get) and [`Row::get_at`](super::Row::get_at).
///
/// Conversions are exact: `i64` accepts `Int8` and `Int4`; every other type accepts only
/// its own variant; `&str` and `&[u8]` borrow from the row. `Option<T>` accepts NULL (as
/// `None`) and whatever `T` accepts; a plain `T` rejects NULL.
pub trait FromValue<'a>: Sized {
    /// The type's name in a [`TypeMismatch`](crate::Error::TypeMismatch) error (`i64`).
    const NAME: &'static str;

    /// The converted value, or `None` if `value` does not convert to this type.
    fn from_value(value: &'a Value) -> Option<Self>;
}

macro_rules! from_value {
    ($($t:ty, $name:literal, |$v:ident| $e:expr;)*) => {$(
        impl<'a> FromValue<'a> for $t {
            const NAME: &'static str = $name;
            fn from_value($v: &'a Value) -> Option<$t> {
                $e
            }
        }
    )*};
}

from_value! {
    bool, "bool", |v| match v { Value::Bool(b) => Some(*b), _ => None };
    i32, "i32", |v| match v { Value::Int4(i) => Some(*i), _ => None };
    i64, "i64", |v| match v {
        Value::Int8(i) => Some(*i),
        Value::Int4(i) => Some(i64::from(*i)),
        _ => None,
    };
    f64, "f64", |v| match v { Value::Float8(x) => Some(*x), _ => None };
    Decimal, "Decimal", |v| match v { Value::Decimal(d) => Some(*d), _ => None };
    Timestamp, "Timestamp", |v| match v { Value::Timestamp(t) => Some(Timestamp(*t)), _ => None };
    String, "String", |v| match v { Value::Str(s) => Some(s.clone()), _ => None };
    &'a str, "&str", |v| match v { Value::Str(s) => Some(s.as_str()), _ => None };
    Vec<u8>, "Vec<u8>", |v| match v { Value::Bytes(b) => Some(b.clone()), _ => None };
    &'a [u8], "&[u8]", |v| match v { Value::Bytes(b) => Some(b.as_slice()), _ => None };
    Value, "Value", |v| Some(v.clone());
    &'a Value, "&Value", |v| Some(v);
}

impl<'a, T: FromValue<'a>> FromValue<'a> for Option<T> {
    const NAME: &'static str = T::NAME;

    fn from_value(value: &'a Value) -> Option<Option<T>> {
        match value {
            Value::Null => Some(None),
            v => T::from_value(v).map(Some),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_both_ways() {
        assert_eq!(Value::from(true), Value::Bool(true));
        assert_eq!(Value::from(-3i64), Value::Int8(-3));
        assert_eq!(Value::from(String::from("x")), Value::Str("x".into()));
        assert_eq!(Value::from(vec![1u8]), Value::Bytes(vec![1]));
        assert_eq!(Value::from(Some(2.5)), Value::Float8(2.5));
        assert_eq!(Value::from(Timestamp(5)), Value::Timestamp(5));

        assert_eq!(i64::from_value(&Value::Int4(-7)), Some(-7));
        assert_eq!(i32::from_value(&Value::Int8(1)), None);
        assert_eq!(<&str>::from_value(&Value::Str("a".into())), Some("a"));
        assert_eq!(<Option<i64>>::from_value(&Value::Null), Some(None));
        assert_eq!(<Option<i64>>::from_value(&Value::Int8(1)), Some(Some(1)));
        assert_eq!(i64::from_value(&Value::Null), None);
        assert_eq!(<Option<bool>>::from_value(&Value::Int4(1)), None);
        assert_eq!(
            <&[u8]>::from_value(&Value::Bytes(vec![9])),
            Some(&[9u8][..])
        );
    }

    #[test]
    fn equality_is_exact() {
        assert_eq!(Value::Float8(f64::NAN), Value::Float8(f64::NAN));
        assert_ne!(Value::Float8(0.0), Value::Float8(-0.0));
        assert_ne!(Value::Int4(1), Value::Int8(1));
        let (a, b) = (Decimal::new(10, 1).unwrap(), Decimal::new(100, 2).unwrap());
        assert_ne!(Value::Decimal(a), Value::Decimal(b));
    }

    #[test]
    fn display_as_literals() {
        assert_eq!(Value::Null.to_string(), "NULL");
        assert_eq!(Value::Float8(1.0).to_string(), "1.0");
        assert_eq!(Value::Bytes(vec![0, 0xFF]).to_string(), "x'00ff'");
        assert_eq!(
            Value::Timestamp(0).to_string(),
            "TIMESTAMP '1970-01-01 00:00:00.000000'"
        );
    }
}
