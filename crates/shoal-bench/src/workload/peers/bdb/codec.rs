//! How the `bdb` peer turns keys and rows into the bytes Berkeley DB stores (its own
//! encoding: Berkeley DB must not get Shoal's row code).
//!
//! **Keys** sort as their columns do under Berkeley DB's default byte-wise B-tree order:
//! an integer is big-endian with its sign bit flipped (so −1 < 0 < 1 byte-wise), a string
//! is its bytes with each 0x00 written as 0x00 0xFF and a 0x00 0x00 terminator (so a prefix
//! sorts first and the columns after it do not mix into it). A composite key is its
//! columns' encodings one after another.
//!
//! **TPC-C rows** ([`encode_row`], [`decode_row`]) follow their table's column types
//! ([`Ty`]): INT4 4 bytes and INT8/TIMESTAMP 8 bytes little-endian, text a 2-byte
//! little-endian length and its UTF-8 bytes, a nullable column one more byte in front
//! (0 = NULL, 1 = a value). Decoding checks every length and fails on short, long or
//! ill-typed bytes instead of panicking.

use crate::workload::tpcc::schema::{TableSpec, Ty};

/// One column's value in a TPC-C row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Field {
    /// SQL NULL.
    Null,
    /// An INT4, INT8 or TIMESTAMP (microseconds).
    Int(i64),
    /// A CHAR or VARCHAR.
    Text(String),
}

impl Field {
    /// The integer, or an error naming the column for anything else.
    ///
    /// # Errors
    /// A message if the field is not an integer.
    pub fn int(&self) -> Result<i64, String> {
        match self {
            Field::Int(v) => Ok(*v),
            other => Err(format!("expected an integer, found {other:?}")),
        }
    }

    /// The text, or an error for anything else.
    ///
    /// # Errors
    /// A message if the field is not text.
    pub fn text(&self) -> Result<&str, String> {
        match self {
            Field::Text(s) => Ok(s),
            other => Err(format!("expected text, found {other:?}")),
        }
    }
}

/// Appends an INT4 key column.
pub fn push_i32(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&((v as u32) ^ 0x8000_0000).to_be_bytes());
}

/// Appends an INT8 key column.
pub fn push_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&((v as u64) ^ (1 << 63)).to_be_bytes());
}

/// Appends a text key column (escaped and terminated, module doc).
pub fn push_str(out: &mut Vec<u8>, s: &[u8]) {
    for &b in s {
        if b == 0 {
            out.extend_from_slice(&[0, 0xFF]);
        } else {
            out.push(b);
        }
    }
    out.extend_from_slice(&[0, 0]);
}

/// The key of INT4 columns `cols`.
pub fn key_i32s(cols: &[i32]) -> Vec<u8> {
    let mut k = Vec::with_capacity(4 * cols.len());
    for &c in cols {
        push_i32(&mut k, c);
    }
    k
}

/// Reads key columns back, in order, from the start of a key.
#[derive(Debug)]
pub struct KeyReader<'a> {
    rest: &'a [u8],
}

impl<'a> KeyReader<'a> {
    /// A reader of `key`.
    pub fn new(key: &'a [u8]) -> KeyReader<'a> {
        KeyReader { rest: key }
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let (head, rest) = self
            .rest
            .split_first_chunk::<N>()
            .ok_or_else(|| format!("key too short for a {N}-byte column"))?;
        self.rest = rest;
        Ok(*head)
    }

    /// The next INT4 column.
    ///
    /// # Errors
    /// A message if fewer than 4 bytes are left.
    pub fn i32(&mut self) -> Result<i32, String> {
        Ok((u32::from_be_bytes(self.take::<4>()?) ^ 0x8000_0000) as i32)
    }

    /// The next INT8 column (the peer reads none back; tests do).
    #[cfg(test)]
    ///
    /// # Errors
    /// A message if fewer than 8 bytes are left.
    pub fn i64(&mut self) -> Result<i64, String> {
        Ok((u64::from_be_bytes(self.take::<8>()?) ^ (1 << 63)) as i64)
    }

    /// The next text column, unescaped.
    ///
    /// # Errors
    /// A message if the terminator is missing or an escape is malformed.
    pub fn bytes(&mut self) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        let mut i = 0;
        loop {
            match self.rest.get(i) {
                None => return Err("text key column not terminated".to_string()),
                Some(0) => match self.rest.get(i + 1) {
                    Some(0) => {
                        self.rest = &self.rest[i + 2..];
                        return Ok(out);
                    }
                    Some(0xFF) => {
                        out.push(0);
                        i += 2;
                    }
                    _ => return Err("bad escape in a text key column".to_string()),
                },
                Some(&b) => {
                    out.push(b);
                    i += 1;
                }
            }
        }
    }

    /// Whether every byte has been read (for tests).
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }
}

/// Encodes a row of `spec` (one field per column, in order).
///
/// # Errors
/// A message naming the column if the number of fields differs from the columns, a field
/// does not fit its column's type, a NULL is given for a NOT NULL column or a text is
/// longer than 65,535 bytes.
pub fn encode_row(spec: &TableSpec, fields: &[Field]) -> Result<Vec<u8>, String> {
    if fields.len() != spec.columns.len() {
        return Err(format!(
            "{}: {} fields for {} columns",
            spec.name,
            fields.len(),
            spec.columns.len()
        ));
    }
    let mut out = Vec::with_capacity(16 * fields.len());
    for (&(name, ty, nullable), f) in spec.columns.iter().zip(fields) {
        let bad = |why: &str| format!("{}.{name}: {why} ({f:?})", spec.name);
        if nullable {
            out.push(u8::from(*f != Field::Null));
        }
        match (ty, f) {
            (_, Field::Null) if nullable => {}
            (_, Field::Null) => return Err(bad("NULL in a NOT NULL column")),
            (Ty::I4, Field::Int(v)) => {
                let v = i32::try_from(*v).map_err(|_| bad("out of INT4 range"))?;
                out.extend_from_slice(&v.to_le_bytes());
            }
            (Ty::I8 | Ty::Ts, Field::Int(v)) => out.extend_from_slice(&v.to_le_bytes()),
            (Ty::Ch(_) | Ty::Vc(_), Field::Text(s)) => {
                let n = u16::try_from(s.len()).map_err(|_| bad("text too long"))?;
                out.extend_from_slice(&n.to_le_bytes());
                out.extend_from_slice(s.as_bytes());
            }
            _ => return Err(bad("wrong type for the column")),
        }
    }
    Ok(out)
}

/// Decodes a row of `spec` encoded by [`encode_row`].
///
/// # Errors
/// A message if the bytes are too short, too long, hold a bad NULL marker or text that is
/// not UTF-8.
pub fn decode_row(spec: &TableSpec, mut bytes: &[u8]) -> Result<Vec<Field>, String> {
    let mut out = Vec::with_capacity(spec.columns.len());
    let short = |name: &str| format!("{}.{name}: record too short", spec.name);
    for &(name, ty, nullable) in spec.columns {
        if nullable {
            let (&flag, rest) = bytes.split_first().ok_or_else(|| short(name))?;
            bytes = rest;
            match flag {
                0 => {
                    out.push(Field::Null);
                    continue;
                }
                1 => {}
                _ => return Err(format!("{}.{name}: bad NULL marker {flag}", spec.name)),
            }
        }
        let f = match ty {
            Ty::I4 => {
                let (b, rest) = bytes.split_first_chunk::<4>().ok_or_else(|| short(name))?;
                bytes = rest;
                Field::Int(i64::from(i32::from_le_bytes(*b)))
            }
            Ty::I8 | Ty::Ts => {
                let (b, rest) = bytes.split_first_chunk::<8>().ok_or_else(|| short(name))?;
                bytes = rest;
                Field::Int(i64::from_le_bytes(*b))
            }
            Ty::Ch(_) | Ty::Vc(_) => {
                let (b, rest) = bytes.split_first_chunk::<2>().ok_or_else(|| short(name))?;
                let n = usize::from(u16::from_le_bytes(*b));
                if rest.len() < n {
                    return Err(short(name));
                }
                let (text, rest) = rest.split_at(n);
                bytes = rest;
                Field::Text(
                    String::from_utf8(text.to_vec())
                        .map_err(|_| format!("{}.{name}: text is not UTF-8", spec.name))?,
                )
            }
        };
        out.push(f);
    }
    if !bytes.is_empty() {
        return Err(format!(
            "{}: {} bytes after the last column",
            spec.name,
            bytes.len()
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::tpcc::schema::{CUSTOMER, ORDERS, ORDER_LINE};

    #[test]
    fn integer_keys_round_trip_and_sort_as_numbers() {
        let ints = [
            i32::MIN,
            -70_000,
            -256,
            -1,
            0,
            1,
            255,
            256,
            70_000,
            i32::MAX,
        ];
        let keys: Vec<Vec<u8>> = ints.iter().map(|&v| key_i32s(&[v])).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
        for (k, &v) in keys.iter().zip(&ints) {
            let mut r = KeyReader::new(k);
            assert_eq!(r.i32().unwrap(), v);
            assert!(r.is_empty());
        }
        let longs = [i64::MIN, -(1 << 40), -1, 0, 1, 1 << 40, i64::MAX];
        let mut prev: Option<Vec<u8>> = None;
        for &v in &longs {
            let mut k = Vec::new();
            push_i64(&mut k, v);
            assert_eq!(KeyReader::new(&k).i64().unwrap(), v);
            if let Some(p) = prev {
                assert!(p < k, "{v}");
            }
            prev = Some(k);
        }
        // Composite keys sort by their first column, then the next.
        assert!(key_i32s(&[-1, 5]) < key_i32s(&[0, -5]));
        assert!(key_i32s(&[1, -5]) < key_i32s(&[1, 5]));
        assert!(KeyReader::new(&[1, 2]).i32().is_err());
    }

    #[test]
    fn text_keys_round_trip_and_keep_column_order() {
        let mut a = Vec::new();
        push_str(&mut a, b"BAR");
        push_i32(&mut a, 9);
        let mut b = Vec::new();
        push_str(&mut b, b"BARB");
        push_i32(&mut b, 1);
        assert!(a < b, "a prefix sorts first whatever follows");
        let mut z = Vec::new();
        push_str(&mut z, b"a\0b");
        push_i32(&mut z, -3);
        let mut r = KeyReader::new(&z);
        assert_eq!(r.bytes().unwrap(), b"a\0b");
        assert_eq!(r.i32().unwrap(), -3);
        assert!(r.is_empty());
        assert!(KeyReader::new(b"abc").bytes().is_err(), "no terminator");
        assert!(KeyReader::new(&[b'a', 0, 7]).bytes().is_err(), "bad escape");
    }

    #[test]
    fn rows_round_trip_and_bad_bytes_are_errors() {
        let order = vec![
            Field::Int(1),
            Field::Int(2),
            Field::Int(3001),
            Field::Int(7),
            Field::Int(1_700_000_000_000_000),
            Field::Null,
            Field::Int(11),
            Field::Int(1),
        ];
        let bytes = encode_row(&ORDERS, &order).unwrap();
        assert_eq!(decode_row(&ORDERS, &bytes).unwrap(), order);
        let mut delivered = order.clone();
        delivered[5] = Field::Int(4);
        let bytes2 = encode_row(&ORDERS, &delivered).unwrap();
        assert_eq!(decode_row(&ORDERS, &bytes2).unwrap(), delivered);
        for cut in 0..bytes.len() {
            assert!(decode_row(&ORDERS, &bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert!(decode_row(&ORDERS, &long).is_err());
        let mut line: Vec<Field> = (0..ORDER_LINE.columns.len())
            .map(|i| Field::Int(i as i64 - 3))
            .collect();
        line[6] = Field::Null;
        line[9] = Field::Text("ünïcode dist info 24 chr".into());
        let b = encode_row(&ORDER_LINE, &line).unwrap();
        assert_eq!(decode_row(&ORDER_LINE, &b).unwrap(), line);
        // Wrong arity, a NULL where none is allowed, a string for an integer.
        assert!(encode_row(&ORDERS, &order[..3]).is_err());
        let mut bad = order.clone();
        bad[0] = Field::Null;
        assert!(encode_row(&ORDERS, &bad).is_err());
        bad[0] = Field::Text("x".into());
        assert!(encode_row(&ORDERS, &bad).is_err());
        bad[0] = Field::Int(i64::from(i32::MAX) + 1);
        assert!(encode_row(&ORDERS, &bad).is_err());
        assert!(CUSTOMER.columns.len() > 20);
    }
}
