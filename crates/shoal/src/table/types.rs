//! Column types (DESIGN.md §3.10) and the two value types Rust lacks: [`Decimal`] and
//! [`Timestamp`].

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// Most characters of a CHAR(n) or VARCHAR(n), and most bytes of a BYTES(n): 10,485,760
/// (PostgreSQL's limit for `n`). A whole row is further limited by the B-tree
/// ([`crate::btree::MAX_VALUE_BYTES`], 64 MiB).
pub const MAX_LENGTH: u32 = 10 * 1024 * 1024;

/// Most decimal digits of a DECIMAL(p,s): 18, so that every value fits a scaled `i64`.
pub const MAX_DECIMAL_PRECISION: u8 = 18;

/// The type of a column.
///
/// The variants are plain data; [`ColumnType::validate`] (called by
/// [`TableDef::new`](super::TableDef::new)) rejects parameters out of range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColumnType {
    /// `true` or `false`. 1 byte in a row.
    Bool,
    /// A signed 32-bit integer. 4 bytes in a row.
    Int4,
    /// A signed 64-bit integer. 8 bytes in a row.
    Int8,
    /// A 64-bit IEEE float; every bit pattern is kept (NaN payloads, `-0.0`). 8 bytes in a
    /// row. In keys `-0.0` is `+0.0` and every NaN is one NaN above `+∞`, as SQL (PostgreSQL)
    /// compares them.
    Float8,
    /// DECIMAL(precision, scale): an exact number of at most `precision` decimal digits,
    /// `scale` of them after the point (`1 <= precision <= 18`, `scale <= precision`),
    /// stored as an `i64` count of `10^-scale` units. 8 bytes in a row.
    Decimal {
        /// Total significant digits, 1 to [`MAX_DECIMAL_PRECISION`].
        precision: u8,
        /// Digits after the decimal point, 0 to `precision`.
        scale: u8,
    },
    /// CHAR(n): exactly `n` characters (Unicode scalar values), blank-padded. A value is
    /// padded with spaces to `n` characters when read and stored without its trailing
    /// spaces; keys hold the padded value, so values compare as SQL's PAD SPACE does
    /// (`'ab'` = `'ab  '`). `1 <= n <= MAX_LENGTH`.
    Char(u32),
    /// VARCHAR(n): at most `n` characters; trailing spaces are significant.
    /// `1 <= n <= MAX_LENGTH`.
    Varchar(u32),
    /// A byte string of at most `max` bytes (`None`: only the row limit).
    /// `1 <= max <= MAX_LENGTH`.
    Bytes(Option<u32>),
    /// A point in time: microseconds since 1970-01-01 00:00:00 UTC, as an `i64`. 8 bytes in
    /// a row.
    Timestamp,
}

impl ColumnType {
    /// DECIMAL(precision, scale), checked.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (`precision` or `scale`) unless
    /// `1 <= precision <= 18` and `scale <= precision`.
    pub fn decimal(precision: u8, scale: u8) -> Result<ColumnType> {
        let ty = ColumnType::Decimal { precision, scale };
        ty.validate()?;
        Ok(ty)
    }

    /// Checks the type's parameters.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`]: `precision` / `scale` of a DECIMAL out of range (see
    /// [`ColumnType::Decimal`]), `length` of a CHAR, VARCHAR or BYTES of 0 or above
    /// [`MAX_LENGTH`].
    pub fn validate(&self) -> Result<()> {
        match *self {
            ColumnType::Decimal { precision, scale } => {
                if precision == 0 || precision > MAX_DECIMAL_PRECISION {
                    return Err(Error::invalid(
                        "precision",
                        format!("{self}: precision must be 1 to {MAX_DECIMAL_PRECISION}"),
                    ));
                }
                if scale > precision {
                    return Err(Error::invalid(
                        "scale",
                        format!("{self}: scale must be 0 to the precision ({precision})"),
                    ));
                }
            }
            ColumnType::Char(n) | ColumnType::Varchar(n) | ColumnType::Bytes(Some(n))
                if n == 0 || n > MAX_LENGTH =>
            {
                return Err(Error::invalid(
                    "length",
                    format!("{self}: length must be 1 to {MAX_LENGTH}"),
                ));
            }
            _ => {}
        }
        Ok(())
    }

    /// Bytes a value of this type takes in the fixed-width part of a row, or `None` for a
    /// variable-width type (CHAR, VARCHAR, BYTES). See `docs/format.md`, "Row".
    pub const fn fixed_width(&self) -> Option<usize> {
        match self {
            ColumnType::Bool => Some(1),
            ColumnType::Int4 => Some(4),
            ColumnType::Int8
            | ColumnType::Float8
            | ColumnType::Decimal { .. }
            | ColumnType::Timestamp => Some(8),
            ColumnType::Char(_) | ColumnType::Varchar(_) | ColumnType::Bytes(_) => None,
        }
    }
}

impl fmt::Display for ColumnType {
    /// The SQL spelling: `BOOL`, `INT4`, `DECIMAL(12,2)`, `CHAR(4)`, `BYTES`, ...
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ColumnType::Bool => f.write_str("BOOL"),
            ColumnType::Int4 => f.write_str("INT4"),
            ColumnType::Int8 => f.write_str("INT8"),
            ColumnType::Float8 => f.write_str("FLOAT8"),
            ColumnType::Decimal { precision, scale } => write!(f, "DECIMAL({precision},{scale})"),
            ColumnType::Char(n) => write!(f, "CHAR({n})"),
            ColumnType::Varchar(n) => write!(f, "VARCHAR({n})"),
            ColumnType::Bytes(None) => f.write_str("BYTES"),
            ColumnType::Bytes(Some(n)) => write!(f, "BYTES({n})"),
            ColumnType::Timestamp => f.write_str("TIMESTAMP"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Decimal
// ---------------------------------------------------------------------------------------------

/// `10^i` for `i` in `0..=18`.
const POW10: [i64; 19] = {
    let mut t = [1i64; 19];
    let mut i = 1;
    while i < 19 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

/// `10^exp` for `exp <= 18`.
pub(super) fn pow10(exp: u8) -> i64 {
    POW10[usize::from(exp.min(MAX_DECIMAL_PRECISION))]
}

/// Number of decimal digits of `|v|` (0 for 0).
pub(super) fn digit_count(v: i64) -> u32 {
    // `ilog10` compares against powers of ten instead of dividing once per digit.
    v.unsigned_abs().checked_ilog10().map_or(0, |l| l + 1)
}

/// An exact decimal number: `units × 10^-scale`, with `units` an `i64` and `scale <= 18`.
///
/// Equality is of the representation: `1.0` (`units` 10, scale 1) and `1.00` (100, 2) are
/// different `Decimal`s; [`Decimal::numeric_cmp`] compares values. A value checked against a
/// DECIMAL(p,s) column is rescaled to scale `s`, so the values of one column compare equal
/// exactly when they are numerically equal.
///
/// ```
/// use shoal::table::Decimal;
///
/// let d: Decimal = "-12.50".parse().unwrap();
/// assert_eq!((d.units(), d.scale()), (-1250, 2));
/// assert_eq!(d.to_string(), "-12.50");
/// assert!(d.numeric_cmp(&Decimal::new(-125, 1).unwrap()).is_eq());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Decimal {
    units: i64,
    scale: u8,
}

impl Decimal {
    /// `units × 10^-scale`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (`scale`) if `scale > 18`.
    pub fn new(units: i64, scale: u8) -> Result<Decimal> {
        if scale > MAX_DECIMAL_PRECISION {
            return Err(Error::invalid(
                "scale",
                format!("{scale}: a decimal scale is 0 to {MAX_DECIMAL_PRECISION}"),
            ));
        }
        Ok(Decimal { units, scale })
    }

    /// `units × 10^-scale` for a scale already checked (`scale <= 18`, e.g. a validated
    /// column's).
    pub(super) fn from_parts(units: i64, scale: u8) -> Decimal {
        debug_assert!(scale <= MAX_DECIMAL_PRECISION);
        Decimal {
            units,
            scale: scale.min(MAX_DECIMAL_PRECISION),
        }
    }

    /// The integer `units` such that the value is `units × 10^-scale`.
    pub fn units(&self) -> i64 {
        self.units
    }

    /// Digits after the decimal point.
    pub fn scale(&self) -> u8 {
        self.scale
    }

    /// The same value at another scale, if it is exact there and fits an `i64`: `1.50` to
    /// scale 1 is `1.5`, to scale 3 `1.500`; `1.55` to scale 1 is `None` (no rounding).
    pub fn rescale(&self, scale: u8) -> Option<Decimal> {
        if scale > MAX_DECIMAL_PRECISION {
            return None;
        }
        let units = match scale.cmp(&self.scale) {
            Ordering::Equal => self.units,
            Ordering::Greater => self.units.checked_mul(pow10(scale - self.scale))?,
            Ordering::Less => {
                let div = pow10(self.scale - scale);
                if self.units % div != 0 {
                    return None;
                }
                self.units / div
            }
        };
        Some(Decimal { units, scale })
    }

    /// Compares the numbers the two decimals stand for, whatever their scales.
    pub fn numeric_cmp(&self, other: &Decimal) -> Ordering {
        // |units| < 2^63 and 10^18 < 2^60, so both products fit an i128.
        let a = i128::from(self.units) * i128::from(pow10(MAX_DECIMAL_PRECISION - self.scale));
        let b = i128::from(other.units) * i128::from(pow10(MAX_DECIMAL_PRECISION - other.scale));
        a.cmp(&b)
    }
}

impl fmt::Display for Decimal {
    /// Plain notation with exactly `scale` digits after the point: `-12.50`, `0.05`, `7`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.units < 0 { "-" } else { "" };
        let abs = self.units.unsigned_abs();
        if self.scale == 0 {
            return write!(f, "{sign}{abs}");
        }
        let div = pow10(self.scale).unsigned_abs();
        let width = usize::from(self.scale);
        write!(f, "{sign}{}.{:0width$}", abs / div, abs % div)
    }
}

impl FromStr for Decimal {
    type Err = Error;

    /// Parses `[+-]digits[.digits]` (or `[+-].digits`); the scale is the number of digits
    /// after the point.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (`decimal`) for anything else, more than 18 fractional
    /// digits, or a value beyond the `i64` range of units.
    fn from_str(s: &str) -> Result<Decimal> {
        let bad = |why: &str| Error::invalid("decimal", format!("{s:?}: {why}"));
        let (negative, body) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        let (int_part, frac_part) = match body.split_once('.') {
            Some((i, f)) => (i, f),
            None => (body, ""),
        };
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(bad("no digits"));
        }
        if !int_part
            .bytes()
            .chain(frac_part.bytes())
            .all(|b| b.is_ascii_digit())
        {
            return Err(bad("not a decimal number"));
        }
        let scale = u8::try_from(frac_part.len())
            .ok()
            .filter(|&n| n <= MAX_DECIMAL_PRECISION)
            .ok_or_else(|| bad("more than 18 digits after the point"))?;
        // Accumulate negatively so that i64::MIN parses.
        let mut units: i64 = 0;
        for b in int_part.bytes().chain(frac_part.bytes()) {
            units = units
                .checked_mul(10)
                .and_then(|u| u.checked_sub(i64::from(b - b'0')))
                .ok_or_else(|| bad("out of range"))?;
        }
        if !negative {
            units = units.checked_neg().ok_or_else(|| bad("out of range"))?;
        }
        Ok(Decimal { units, scale })
    }
}

// ---------------------------------------------------------------------------------------------
// Timestamp
// ---------------------------------------------------------------------------------------------

/// A TIMESTAMP value: microseconds since 1970-01-01 00:00:00 UTC (negative before).
///
/// Only a convenience for building and reading rows (`row.get::<Timestamp>("at")`); a
/// [`Value::Timestamp`](super::Value::Timestamp) holds the bare `i64`.
///
/// ```
/// use shoal::table::Timestamp;
///
/// let t = Timestamp::from_micros(86_400_000_000 + 1_500_000);
/// assert_eq!(t.to_string(), "1970-01-02 00:00:01.500000");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// The timestamp `micros` microseconds after the Unix epoch.
    pub const fn from_micros(micros: i64) -> Timestamp {
        Timestamp(micros)
    }

    /// Microseconds since the Unix epoch.
    pub const fn micros(self) -> i64 {
        self.0
    }

    /// The current time of the system clock (saturating at the `i64` range).
    pub fn now() -> Timestamp {
        let micros = match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_micros()).unwrap_or(i64::MAX),
            Err(e) => i64::try_from(e.duration().as_micros()).map_or(i64::MIN, |m| -m),
        };
        Timestamp(micros)
    }
}

/// The proleptic Gregorian date of day `days` after 1970-01-01 (the inverse of the usual
/// days-from-civil computation over 400-year eras of 146,097 days).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468; // days since 0000-03-01
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // day of era, [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // year of era, [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of year from March 1, [0, 365]
    let mp = (5 * doy + 2) / 153; // month from March, [0, 11]
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

impl fmt::Display for Timestamp {
    /// `YYYY-MM-DD hh:mm:ss.ffffff` in UTC (proleptic Gregorian calendar).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const MICROS_PER_DAY: i64 = 86_400_000_000;
        let days = self.0.div_euclid(MICROS_PER_DAY);
        let in_day = self.0.rem_euclid(MICROS_PER_DAY);
        let (y, mo, d) = civil_from_days(days);
        let secs = in_day / 1_000_000;
        write!(
            f,
            "{y:04}-{mo:02}-{d:02} {:02}:{:02}:{:02}.{:06}",
            secs / 3600,
            secs / 60 % 60,
            secs % 60,
            in_day % 1_000_000
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digit_count_counts_decimal_digits() {
        let cases = [
            (0, 0),
            (1, 1),
            (-9, 1),
            (10, 2),
            (-99, 2),
            (123_456, 6),
            (999_999_999_999_999_999, 18),
            (i64::MAX, 19),
            (i64::MIN, 19),
        ];
        for (v, want) in cases {
            assert_eq!(digit_count(v), want, "{v}");
        }
    }

    #[test]
    fn decimal_parse_display_rescale() {
        for (s, units, scale, shown) in [
            ("0", 0, 0, "0"),
            ("-0.05", -5, 2, "-0.05"),
            ("+3", 3, 0, "3"),
            (".5", 5, 1, "0.5"),
            ("12.", 12, 0, "12"),
            ("9223372036854775807", i64::MAX, 0, "9223372036854775807"),
            ("-9223372036854775808", i64::MIN, 0, "-9223372036854775808"),
            ("-0.000000000000000001", -1, 18, "-0.000000000000000001"),
        ] {
            let d: Decimal = s.parse().unwrap();
            assert_eq!((d.units(), d.scale()), (units, scale), "{s}");
            assert_eq!(d.to_string(), shown);
        }
        for bad in [
            "",
            "-",
            ".",
            "1e5",
            "1.2.3",
            "9223372036854775808",
            "0.0000000000000000001",
        ] {
            let e = bad.parse::<Decimal>().unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::InvalidArgument {
                        name: "decimal",
                        ..
                    }
                ),
                "{bad}: {e}"
            );
        }
        let d = Decimal::new(150, 2).unwrap();
        assert_eq!(d.rescale(1), Some(Decimal::new(15, 1).unwrap()));
        assert_eq!(d.rescale(3).map(|d| d.units()), Some(1500));
        assert_eq!(Decimal::new(155, 2).unwrap().rescale(1), None);
        assert_eq!(Decimal::new(i64::MAX, 0).unwrap().rescale(1), None);
        assert!(Decimal::new(1, 19).is_err());
        assert!(Decimal::new(i64::MIN, 0)
            .unwrap()
            .numeric_cmp(&Decimal::new(i64::MAX, 18).unwrap())
            .is_lt());
    }

    #[test]
    fn column_type_parameters() {
        assert!(ColumnType::decimal(18, 18).is_ok());
        for (p, s, name) in [(0, 0, "precision"), (19, 2, "precision"), (5, 6, "scale")] {
            match ColumnType::decimal(p, s) {
                Err(Error::InvalidArgument { name: n, reason }) => {
                    assert_eq!(n, name);
                    assert!(reason.starts_with(&format!("DECIMAL({p},{s})")), "{reason}");
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(ColumnType::Char(0).validate().is_err());
        assert!(ColumnType::Varchar(MAX_LENGTH + 1).validate().is_err());
        assert!(ColumnType::Bytes(Some(0)).validate().is_err());
        assert!(ColumnType::Bytes(None).validate().is_ok());
        assert_eq!(ColumnType::Bytes(Some(7)).to_string(), "BYTES(7)");
    }

    #[test]
    fn timestamps_print_in_utc() {
        for (micros, shown) in [
            (0, "1970-01-01 00:00:00.000000"),
            (-1, "1969-12-31 23:59:59.999999"),
            (951_782_400_000_000, "2000-02-29 00:00:00.000000"),
            (1_709_210_096_123_456, "2024-02-29 12:34:56.123456"),
        ] {
            assert_eq!(Timestamp::from_micros(micros).to_string(), shown);
        }
        // The extremes print without overflow.
        assert!(Timestamp(i64::MIN).to_string().starts_with('-'));
        assert!(Timestamp(i64::MAX).to_string().starts_with("294247-01-10"));
        assert!(Timestamp::now().micros() > 1_700_000_000_000_000);
    }
}
