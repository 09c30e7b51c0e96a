//! Memcomparable keys: typed values encoded so that byte order is value order.
//!
//! The B-tree compares keys as plain byte strings (`[u8]::cmp`, DESIGN.md §3.9): no schema,
//! no comparator callback on the descent path. This module is where a typed key — a tuple of
//! integers, floats, strings, byte strings, booleans and NULLs, such as a primary key or
//! `(index key ‖ primary key)` — becomes such a byte string, and back.
//!
//! ```text
//!   (U64 5, Str "a\0b", NULL)                      KeyBuilder / encode_value
//!        │
//!        ▼
//!   0E │ 01 61 00 FF 62 00 00 │ 00
//!   └ 5 ┘  └ tag, escaped, end ┘  └ NULL
//!        │
//!        ▼  decode(&key, &[KeyType::U64, KeyType::Str, KeyType::I32])
//!   [U64(5), Str("a\0b"), Null]
//! ```
//!
//! # Layout
//!
//! Every field starts with a tag byte: `00` for NULL (nothing follows), `01` for a value
//! (its payload follows) — except integers, whose first byte is a header that is both tag
//! and length. Payloads:
//!
//! | type            | payload (ascending)                                              | bytes with tag |
//! |-----------------|------------------------------------------------------------------|----------------|
//! | NULL            | none (tag `00`)                                                  | 1              |
//! | `Bool`          | `00` false, `01` true                                            | 2              |
//! | integer `0..=237` | none: the header is `09 + v`                                    | 1              |
//! | integer `≥ 238` | header `F6 + n`, then `v` big-endian in its shortest `n` bytes (1–8) | 2–9        |
//! | integer `< 0`   | header `09 - n`, then the low `n` bytes of `v`'s two's complement, `n` the shortest that holds `-v - 1` (1–8) | 2–9 |
//! | `F64`           | big-endian of the IEEE bits: sign bit flipped if clear, all bits inverted if set | 9 |
//! | `Str` / `Bytes` | each byte `b ≠ 00` as is, each `00` as `00 FF`, then `00 00`     | 1 + n + zeros + 2 |
//!
//! The four integer types (`U32`, `U64`, `I32`, `I64`) share that variable-length form, an
//! order-preserving varint in the manner of SQLite4's and CockroachDB's key encodings:
//! headers `01`–`08` are negatives (the longer, the smaller), `09`–`F6` the values
//! `0..=237` themselves, `F7`–`FE` larger values (the longer, the larger); `FF` is never a
//! header. A TPC-C order line's key (warehouse, district, order, line) takes 6 bytes instead
//! of 20, and a B-tree node's 4-byte slot hints (`btree::node`) then reach the bytes that
//! tell its keys apart: with fixed 4-byte integers, the constant high bytes of an order
//! number filled the hint, and about 256 orders shared one.
//!
//! A field encoded in [`Direction::Desc`] has every byte of its ascending encoding, tag
//! included, inverted (`XOR FF`).
//!
//! Integer payloads are big-endian here, not little-endian as STYLE.md practice 12 asks of
//! on-disk integers: a key is compared byte by byte, most significant byte first, so the most
//! significant byte must come first. The key is an opaque byte string to the page format.
//!
//! # Invariants
//!
//! 1. **Order.** For two tuples `a`, `b` encoded with the same field types and directions,
//!    `encode(a).cmp(&encode(b)) == a.cmp(&b)`, where tuples compare field by field
//!    (lexicographically, a tuple that is a prefix of the other first) and fields compare as:
//!    NULL before every value; `false < true`; integers numerically; `F64` by IEEE total order
//!    ([`f64::total_cmp`]: `-NaN < -∞ < … < -0.0 < +0.0 < … < +∞ < +NaN`); strings and byte
//!    strings byte-wise, a prefix before its extensions (so strings by code point). A
//!    descending field reverses its field's order, NULL included (NULL sorts last).
//! 2. **Self-delimiting.** No field encoding is a proper prefix of another encoding of the
//!    same type and direction, so a decoder finds each field's end without a length, and the
//!    encoding of a prefix of a tuple is a byte prefix of the tuple's encoding. (The string
//!    terminator `00 00` sorts below the escape `00 FF` and below every other byte, which is
//!    what puts `"ab"` before `"ab\0"` and before `"abc"` whatever field follows.)
//! 3. **Canonical.** Encoding is injective (`F64` by bits: `-0.0`, `+0.0` and each NaN are
//!    distinct keys) and [`decode`] accepts exactly the encodings: any other byte string is an
//!    error, so `decode(b) == Ok(v)` implies that encoding `v` gives back `b`.
//! 4. **Schema outside.** Keys carry no type information beyond NULL; bytes from keys of
//!    different field types compare meaninglessly (except among the four integer types,
//!    which share one form: a value has the same bytes whatever its integer type), and
//!    decoding needs the types.
//! 5. **Prefix ranges.** Every key that starts with `p` lies in
//!    `[p, prefix_successor(p))` (an unbounded range when [`prefix_successor`] is `None`).
//!
//! # What it does not do
//!
//! - No collations: strings compare by their UTF-8 bytes (code point order), with no case
//!   folding, locale or trailing-space rules; CHAR(n) padding belongs to the table layer.
//! - No SQL equality for floats: `-0.0` and `+0.0` (and different NaNs) are different keys.
//!   A caller that wants them equal normalises them before encoding.
//! - No tagless NOT NULL fields: strings, floats and booleans keep a tag byte before their
//!   payload, the price of a single scheme; integers fold theirs into the length header.
//! - No DECIMAL or TIMESTAMP types: the table layer stores them as scaled `I64`.
//! - No prefix truncation or key compression: that is the page's business.
//!
//! # Sources
//!
//! The escape (`00` as `00 FF`) follows the FoundationDB tuple layer and CockroachDB's key
//! encoding; the integers' length header follows the order-preserving varints of SQLite4's
//! key encoding and CockroachDB's `EncodeVarintAscending` (our header ranges differ); the
//! floating-point transform is the usual memcomparable one (MySQL/MyRocks), and the float
//! order is IEEE 754-2008 §5.10 `totalOrder`. The code is ours.

use crate::error::{Error, Result};
use crate::types::PageId;

/// Tag byte of a NULL field (ascending).
const TAG_NULL: u8 = 0x00;
/// Tag byte of a present field (ascending).
const TAG_PRESENT: u8 = 0x01;
/// In a string payload, the byte that starts a two-byte escape or terminator.
const ESCAPE: u8 = 0x00;
/// Second byte after [`ESCAPE`]: the string ends here.
const ESCAPED_END: u8 = 0x00;
/// Second byte after [`ESCAPE`]: a literal `00` byte.
const ESCAPED_ZERO: u8 = 0xFF;

/// Header of a negative integer whose payload is `n` bytes: `INT_NEG_BASE - n`, `01`–`08`
/// (the more bytes, the more negative, the smaller).
const INT_NEG_BASE: u8 = 0x09;
/// Header of a small non-negative integer `v` (no payload): `INT_SMALL_BASE + v`, `09`–`F6`.
const INT_SMALL_BASE: u8 = 0x09;
/// The largest integer that is its header alone.
const INT_SMALL_MAX: u64 = 0xF6 - INT_SMALL_BASE as u64;
/// Header of a larger non-negative integer whose payload is `n` bytes: `INT_LARGE_BASE + n`,
/// `F7`–`FE`. `FF` is no header.
const INT_LARGE_BASE: u8 = 0xF6;

const _: () = assert!(TAG_NULL < TAG_PRESENT, "NULL must sort first (invariant 1)");
const _: () = assert!(
    TAG_NULL < INT_NEG_BASE - 8 && INT_LARGE_BASE + 8 < 0xFF,
    "integer headers lie strictly between NULL and FF (invariant 1)"
);
const _: () = assert!(
    ESCAPED_END < ESCAPED_ZERO,
    "a prefix must sort first (invariant 2)"
);

/// The type of one key field, for [`decode`] and [`Decoder`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyType {
    /// A boolean (`false < true`).
    Bool,
    /// An unsigned 32-bit integer.
    U32,
    /// An unsigned 64-bit integer.
    U64,
    /// A signed 32-bit integer (SQL INT4).
    I32,
    /// A signed 64-bit integer (SQL INT8).
    I64,
    /// A 64-bit IEEE float (SQL FLOAT8), ordered by total order.
    F64,
    /// A UTF-8 string, ordered by its bytes.
    Str,
    /// A byte string, ordered lexicographically.
    Bytes,
}

impl KeyType {
    /// This type as an ascending field.
    pub const fn asc(self) -> Field {
        Field {
            ty: self,
            dir: Direction::Asc,
        }
    }

    /// This type as a descending field.
    pub const fn desc(self) -> Field {
        Field {
            ty: self,
            dir: Direction::Desc,
        }
    }
}

/// The sort direction of one key field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Smallest value first, NULL before every value.
    #[default]
    Asc,
    /// Largest value first, NULL after every value: every byte of the field is inverted.
    Desc,
}

impl Direction {
    /// The byte every encoded byte of a field is XORed with.
    #[inline]
    fn mask(self) -> u8 {
        match self {
            Direction::Asc => 0x00,
            Direction::Desc => 0xFF,
        }
    }
}

/// One field of a key schema: a type and a direction. A bare [`KeyType`] converts into an
/// ascending field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Field {
    /// The field's type.
    pub ty: KeyType,
    /// The field's sort direction.
    pub dir: Direction,
}

impl From<KeyType> for Field {
    fn from(ty: KeyType) -> Field {
        ty.asc()
    }
}

/// One decoded (or to-be-encoded) key field.
///
/// Equality is exact: two `F64` values are equal when their bits are, as their encodings are
/// (invariant 3), so `NaN == NaN` and `-0.0 != 0.0` here.
#[derive(Clone, Debug)]
pub enum KeyValue {
    /// SQL NULL, of any type.
    Null,
    /// A boolean.
    Bool(bool),
    /// An unsigned 32-bit integer.
    U32(u32),
    /// An unsigned 64-bit integer.
    U64(u64),
    /// A signed 32-bit integer.
    I32(i32),
    /// A signed 64-bit integer.
    I64(i64),
    /// A 64-bit float.
    F64(f64),
    /// A UTF-8 string.
    Str(String),
    /// A byte string.
    Bytes(Vec<u8>),
}

impl KeyValue {
    /// The value's type, or `None` for [`KeyValue::Null`].
    pub fn key_type(&self) -> Option<KeyType> {
        let ty = match self {
            KeyValue::Null => return None,
            KeyValue::Bool(_) => KeyType::Bool,
            KeyValue::U32(_) => KeyType::U32,
            KeyValue::U64(_) => KeyType::U64,
            KeyValue::I32(_) => KeyType::I32,
            KeyValue::I64(_) => KeyType::I64,
            KeyValue::F64(_) => KeyType::F64,
            KeyValue::Str(_) => KeyType::Str,
            KeyValue::Bytes(_) => KeyType::Bytes,
        };
        Some(ty)
    }
}

impl PartialEq for KeyValue {
    fn eq(&self, other: &KeyValue) -> bool {
        use KeyValue::*;
        match (self, other) {
            (Null, Null) => true,
            (Bool(a), Bool(b)) => a == b,
            (U32(a), U32(b)) => a == b,
            (U64(a), U64(b)) => a == b,
            (I32(a), I32(b)) => a == b,
            (I64(a), I64(b)) => a == b,
            (F64(a), F64(b)) => a.to_bits() == b.to_bits(),
            (Str(a), Str(b)) => a == b,
            (Bytes(a), Bytes(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for KeyValue {}

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

/// Appends big-endian `bytes`, each XORed with `mask`.
#[inline]
fn put(out: &mut Vec<u8>, bytes: &[u8], mask: u8) {
    out.extend(bytes.iter().map(|b| b ^ mask));
}

/// Appends a present field's tag.
#[inline]
fn put_tag(out: &mut Vec<u8>, dir: Direction) {
    out.push(TAG_PRESENT ^ dir.mask());
}

/// Bytes of the shortest big-endian form of `v`, 1 to 8 (1 for 0).
#[inline]
fn int_bytes(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(8)
}

/// Appends a non-negative integer (layout table, integer rows): one header byte for
/// `0..=INT_SMALL_MAX`, else a header naming the payload's length and the shortest
/// big-endian payload.
#[inline]
fn put_uint(out: &mut Vec<u8>, v: u64, mask: u8) {
    if v <= INT_SMALL_MAX {
        out.push((INT_SMALL_BASE + v as u8) ^ mask);
        return;
    }
    let n = int_bytes(v);
    out.push((INT_LARGE_BASE + n as u8) ^ mask);
    put(out, &v.to_be_bytes()[8 - n..], mask);
}

/// Appends a signed integer (layout table, integer rows): a non-negative one as
/// [`put_uint`]; a negative one as a header that falls as its length grows and the low
/// bytes of its two's complement, as few as keep `!v` (that is `-v - 1`).
#[inline]
fn put_int(out: &mut Vec<u8>, v: i64, mask: u8) {
    if v >= 0 {
        return put_uint(out, v as u64, mask);
    }
    let n = int_bytes(!(v as u64));
    out.push((INT_NEG_BASE - n as u8) ^ mask);
    put(out, &(v as u64).to_be_bytes()[8 - n..], mask);
}

/// The order-preserving bits of a float (layout table, `F64` row): positive values get the
/// sign bit set so they sort above negatives; negative values are inverted so that a larger
/// magnitude sorts lower.
#[inline]
fn f64_to_ordered(v: f64) -> u64 {
    let bits = v.to_bits();
    if bits >> 63 == 0 {
        bits | (1 << 63)
    } else {
        !bits
    }
}

/// Inverse of [`f64_to_ordered`]; a bijection on `u64`.
#[inline]
fn f64_from_ordered(ordered: u64) -> f64 {
    let bits = if ordered >> 63 == 1 {
        ordered & !(1 << 63)
    } else {
        !ordered
    };
    f64::from_bits(bits)
}

/// Appends an escaped, terminated byte string (layout table, `Str` / `Bytes` row).
fn put_escaped(out: &mut Vec<u8>, bytes: &[u8], mask: u8) {
    out.reserve(bytes.len() + 2);
    for &b in bytes {
        if b == ESCAPE {
            out.push(ESCAPE ^ mask);
            out.push(ESCAPED_ZERO ^ mask);
        } else {
            out.push(b ^ mask);
        }
    }
    out.push(ESCAPE ^ mask);
    out.push(ESCAPED_END ^ mask);
}

/// Appends the encoding of one field to `out` (tag and payload, see the layout table).
pub fn encode_value(out: &mut Vec<u8>, value: &KeyValue, dir: Direction) {
    let mask = dir.mask();
    match value {
        KeyValue::Null => out.push(TAG_NULL ^ mask),
        KeyValue::Bool(v) => {
            put_tag(out, dir);
            out.push(u8::from(*v) ^ mask);
        }
        KeyValue::U32(v) => put_uint(out, u64::from(*v), mask),
        KeyValue::U64(v) => put_uint(out, *v, mask),
        KeyValue::I32(v) => put_int(out, i64::from(*v), mask),
        KeyValue::I64(v) => put_int(out, *v, mask),
        KeyValue::F64(v) => {
            put_tag(out, dir);
            put(out, &f64_to_ordered(*v).to_be_bytes(), mask);
        }
        KeyValue::Str(v) => {
            put_tag(out, dir);
            put_escaped(out, v.as_bytes(), mask);
        }
        KeyValue::Bytes(v) => {
            put_tag(out, dir);
            put_escaped(out, v, mask);
        }
    }
}

/// Encodes a tuple of values, every field ascending.
pub fn encode(values: &[KeyValue]) -> Vec<u8> {
    let mut out = Vec::new();
    for v in values {
        encode_value(&mut out, v, Direction::Asc);
    }
    out
}

/// Builds a key field by field.
///
/// ```
/// use shoal::btree::key::{decode, KeyBuilder, KeyType, KeyValue};
///
/// let key = KeyBuilder::new().u64(5).str("abc").null().finish();
/// let fields = decode(&key, &[KeyType::U64, KeyType::Str, KeyType::I32]).unwrap();
/// assert_eq!(fields, [KeyValue::U64(5), KeyValue::Str("abc".into()), KeyValue::Null]);
///
/// // `desc()` makes the following fields descending, until `asc()`.
/// let key = KeyBuilder::new().i32(1).desc().i64(-3).asc().bytes(b"x").finish();
/// let fields = decode(&key, &[KeyType::I32.asc(), KeyType::I64.desc(), KeyType::Bytes.asc()]);
/// assert!(fields.is_ok());
/// ```
#[derive(Clone, Debug, Default)]
pub struct KeyBuilder {
    buf: Vec<u8>,
    dir: Direction,
}

impl KeyBuilder {
    /// An empty key; fields are ascending until [`KeyBuilder::desc`].
    pub fn new() -> KeyBuilder {
        KeyBuilder::default()
    }

    /// An empty key with room for `bytes` bytes.
    pub fn with_capacity(bytes: usize) -> KeyBuilder {
        KeyBuilder {
            buf: Vec::with_capacity(bytes),
            dir: Direction::Asc,
        }
    }

    /// The fields that follow are ascending (the default).
    pub fn asc(mut self) -> KeyBuilder {
        self.dir = Direction::Asc;
        self
    }

    /// The fields that follow are descending.
    pub fn desc(mut self) -> KeyBuilder {
        self.dir = Direction::Desc;
        self
    }

    /// Appends any value.
    pub fn value(mut self, value: &KeyValue) -> KeyBuilder {
        encode_value(&mut self.buf, value, self.dir);
        self
    }

    /// Appends a NULL.
    pub fn null(self) -> KeyBuilder {
        self.value(&KeyValue::Null)
    }

    /// Appends a boolean.
    pub fn bool(self, v: bool) -> KeyBuilder {
        self.value(&KeyValue::Bool(v))
    }

    /// Appends an unsigned 32-bit integer.
    pub fn u32(self, v: u32) -> KeyBuilder {
        self.value(&KeyValue::U32(v))
    }

    /// Appends an unsigned 64-bit integer.
    pub fn u64(self, v: u64) -> KeyBuilder {
        self.value(&KeyValue::U64(v))
    }

    /// Appends a signed 32-bit integer.
    pub fn i32(self, v: i32) -> KeyBuilder {
        self.value(&KeyValue::I32(v))
    }

    /// Appends a signed 64-bit integer.
    pub fn i64(self, v: i64) -> KeyBuilder {
        self.value(&KeyValue::I64(v))
    }

    /// Appends a float (total order; `-0.0 < +0.0`).
    pub fn f64(self, v: f64) -> KeyBuilder {
        self.value(&KeyValue::F64(v))
    }

    /// Appends a string.
    pub fn str(mut self, v: &str) -> KeyBuilder {
        put_tag(&mut self.buf, self.dir);
        put_escaped(&mut self.buf, v.as_bytes(), self.dir.mask());
        self
    }

    /// Appends a byte string.
    pub fn bytes(mut self, v: &[u8]) -> KeyBuilder {
        put_tag(&mut self.buf, self.dir);
        put_escaped(&mut self.buf, v, self.dir.mask());
        self
    }

    /// The key built so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// The finished key.
    pub fn finish(self) -> Vec<u8> {
        self.buf
    }
}

/// The smallest byte string greater than every byte string that starts with `prefix`, or
/// `None` when there is none (`prefix` empty or all `FF`): the exclusive upper bound of a
/// range scan over the prefix (invariant 5).
///
/// ```
/// use shoal::btree::key::prefix_successor;
/// assert_eq!(prefix_successor(&[0x01, 0x02]), Some(vec![0x01, 0x03]));
/// assert_eq!(prefix_successor(&[0x01, 0xFF, 0xFF]), Some(vec![0x02]));
/// assert_eq!(prefix_successor(&[0xFF]), None);
/// ```
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|&b| b != 0xFF)?;
    let mut succ = prefix[..=last].to_vec();
    succ[last] += 1;
    Some(succ)
}

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

/// Decodes a whole key: exactly one value per field of `schema`, and no bytes left over.
///
/// `schema` is a slice of [`KeyType`] (all ascending) or of [`Field`]. Bytes that are not an
/// encoding of such a tuple give [`Error::Corruption`] with page [`PageId::INVALID`]; use
/// [`decode_in_page`] for a key read from a page.
pub fn decode<F: Copy + Into<Field>>(key: &[u8], schema: &[F]) -> Result<Vec<KeyValue>> {
    decode_in_page(key, schema, PageId::INVALID)
}

/// [`decode`] for a key read from page `page_id`, which errors name.
pub fn decode_in_page<F: Copy + Into<Field>>(
    key: &[u8],
    schema: &[F],
    page_id: PageId,
) -> Result<Vec<KeyValue>> {
    let mut decoder = Decoder::new(key).in_page(page_id);
    let mut values = Vec::with_capacity(schema.len());
    for &field in schema {
        values.push(decoder.next_field(field)?);
    }
    decoder.finish()?;
    Ok(values)
}

/// Reads a key field by field, for callers that decode only a prefix of a key or choose the
/// next type from what they have read.
///
/// Every error is an [`Error::Corruption`] naming the field index and byte offset; no input
/// makes it panic or read out of bounds.
#[derive(Clone, Debug)]
pub struct Decoder<'a> {
    key: &'a [u8],
    pos: usize,
    field_index: usize,
    page_id: PageId,
}

impl<'a> Decoder<'a> {
    /// A decoder at the start of `key`.
    pub fn new(key: &'a [u8]) -> Decoder<'a> {
        Decoder {
            key,
            pos: 0,
            field_index: 0,
            page_id: PageId::INVALID,
        }
    }

    /// Errors will name `page_id` as the page the key came from.
    pub fn in_page(mut self, page_id: PageId) -> Decoder<'a> {
        self.page_id = page_id;
        self
    }

    /// The bytes not read yet.
    pub fn remaining(&self) -> &'a [u8] {
        &self.key[self.pos..]
    }

    /// Succeeds if the whole key has been read.
    pub fn finish(self) -> Result<()> {
        if self.pos == self.key.len() {
            Ok(())
        } else {
            Err(self.error(format!(
                "{} bytes left after the last field",
                self.key.len() - self.pos
            )))
        }
    }

    /// Reads the next field, expected of `field`'s type and direction. NULL is accepted for
    /// every type.
    pub fn next_field(&mut self, field: impl Into<Field>) -> Result<KeyValue> {
        let Field { ty, dir } = field.into();
        let mask = dir.mask();
        let tag = self.byte(mask, "tag")?;
        let value = match ty {
            _ if tag == TAG_NULL => KeyValue::Null,
            KeyType::U32 | KeyType::U64 | KeyType::I32 | KeyType::I64 => {
                self.integer(tag, ty, mask)?
            }
            _ if tag != TAG_PRESENT => {
                self.pos -= 1;
                return Err(self.error(format!("tag {tag:#04x} is neither NULL nor present")));
            }
            KeyType::Bool => match self.byte(mask, "bool")? {
                0 => KeyValue::Bool(false),
                1 => KeyValue::Bool(true),
                b => return Err(self.error(format!("bool byte {b:#04x} is not 0 or 1"))),
            },
            KeyType::F64 => {
                let u = u64::from_be_bytes(self.array(mask, "f64")?);
                KeyValue::F64(f64_from_ordered(u))
            }
            KeyType::Bytes => KeyValue::Bytes(self.escaped(mask)?),
            KeyType::Str => {
                let start = self.pos;
                let bytes = self.escaped(mask)?;
                match String::from_utf8(bytes) {
                    Ok(s) => KeyValue::Str(s),
                    Err(e) => {
                        self.pos = start;
                        return Err(self.error(format!("string is not UTF-8: {e}")));
                    }
                }
            }
        };
        self.field_index += 1;
        Ok(value)
    }

    /// The rest of an integer field of type `ty` (one of the four integer types) whose
    /// header, unmasked, is `header` (layout table, integer rows): its payload, checked to
    /// be the shortest (invariant 3) and in the type's range.
    fn integer(&mut self, header: u8, ty: KeyType, mask: u8) -> Result<KeyValue> {
        // (value, payload bytes stored, payload bytes of its shortest form)
        let (value, stored, shortest): (i128, usize, usize) = match header {
            h if h < INT_NEG_BASE => {
                if !matches!(ty, KeyType::I32 | KeyType::I64) {
                    self.pos -= 1;
                    return Err(self.error(format!(
                        "header {h:#04x} of a negative integer in an unsigned field"
                    )));
                }
                let n = usize::from(INT_NEG_BASE - h);
                let low = self.uint(n, mask)?;
                // The bytes above the payload are all ones in two's complement.
                let v = (low | u64::MAX.checked_shl(8 * n as u32).unwrap_or(0)) as i64;
                if v >= 0 {
                    // Only an 8-byte payload can say so: its top bit is clear.
                    return Err(self.error(format!("negative header {h:#04x} on {v}")));
                }
                (i128::from(v), n, int_bytes(!(v as u64)))
            }
            h if h <= INT_LARGE_BASE => (i128::from(h - INT_SMALL_BASE), 0, 0),
            h if h < 0xFF => {
                let n = usize::from(h - INT_LARGE_BASE);
                let v = self.uint(n, mask)?;
                let shortest = if v <= INT_SMALL_MAX { 0 } else { int_bytes(v) };
                (i128::from(v), n, shortest)
            }
            h => {
                self.pos -= 1;
                return Err(self.error(format!("integer header {h:#04x}")));
            }
        };
        if stored != shortest {
            return Err(self.error(format!(
                "integer {value} in {stored} payload bytes, not its shortest form of {shortest}"
            )));
        }
        let value_of = match ty {
            KeyType::U32 => u32::try_from(value).ok().map(KeyValue::U32),
            KeyType::U64 => u64::try_from(value).ok().map(KeyValue::U64),
            KeyType::I32 => i32::try_from(value).ok().map(KeyValue::I32),
            _ => i64::try_from(value).ok().map(KeyValue::I64),
        };
        value_of.ok_or_else(|| self.error(format!("integer {value} is out of range for {ty:?}")))
    }

    /// The next `n` bytes (1 to 8), unmasked, as a big-endian number.
    fn uint(&mut self, n: usize, mask: u8) -> Result<u64> {
        let rest = self.remaining();
        if rest.len() < n {
            return Err(self.error(format!(
                "key ends inside an integer: {n} bytes needed, {} left",
                rest.len()
            )));
        }
        let v = rest[..n]
            .iter()
            .fold(0u64, |v, b| (v << 8) | u64::from(b ^ mask));
        self.pos += n;
        Ok(v)
    }

    /// A corruption error at the current field and offset.
    fn error(&self, what: String) -> Error {
        Error::corruption(
            self.page_id,
            format!(
                "key field {} at byte {}: {what}",
                self.field_index, self.pos
            ),
        )
    }

    /// The next byte, unmasked.
    fn byte(&mut self, mask: u8, what: &str) -> Result<u8> {
        match self.key.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b ^ mask)
            }
            None => Err(self.error(format!("key ends before the {what} byte"))),
        }
    }

    /// The next `N` bytes, unmasked.
    fn array<const N: usize>(&mut self, mask: u8, what: &str) -> Result<[u8; N]> {
        let rest = self.remaining();
        if rest.len() < N {
            return Err(self.error(format!(
                "key ends inside a {what}: {N} bytes needed, {} left",
                rest.len()
            )));
        }
        let mut out = [0u8; N];
        for (o, b) in out.iter_mut().zip(rest) {
            *o = b ^ mask;
        }
        self.pos += N;
        Ok(out)
    }

    /// An escaped, terminated byte string, unescaped (layout table, `Str` / `Bytes` row).
    fn escaped(&mut self, mask: u8) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        loop {
            // Copy the run up to the next escape byte in one go.
            let rest = self.remaining();
            let run = rest.iter().position(|&b| b ^ mask == ESCAPE);
            let run = match run {
                Some(n) => n,
                None => {
                    self.pos = self.key.len();
                    return Err(self.error("string has no terminator".to_string()));
                }
            };
            out.extend(rest[..run].iter().map(|b| b ^ mask));
            self.pos += run + 1;
            match self.key.get(self.pos).map(|b| b ^ mask) {
                Some(ESCAPED_END) => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(ESCAPED_ZERO) => {
                    self.pos += 1;
                    out.push(0);
                }
                Some(b) => {
                    return Err(self.error(format!("bad escape 0x00 {b:#04x} in a string")));
                }
                None => return Err(self.error("string ends inside an escape".to_string())),
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
