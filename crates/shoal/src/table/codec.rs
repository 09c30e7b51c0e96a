//! The row codec (module rule 7): a row's values as the bytes a table's B-tree stores, with
//! O(1) access to any one column. The byte layout is `docs/format.md`, "Row":
//!
//! ```text
//!   0        1            3                 3+B                  3+B+F           3+B+F+V·w
//!   │version │ column     │ null bitmap     │ fixed-width fields │ end offsets of  │ variable
//!   │  u8    │ count n u16│ B = ⌈n/8⌉ bytes │ F bytes, in column │ the V variable  │ bytes, in
//!   │        │            │ bit i: col i NULL│ order (LE)        │ fields (u16|u32)│ column order
//! ```

use crate::btree::MAX_VALUE_BYTES;
use crate::error::{Error, Result};

use super::check::{check_all, Cell};
use super::schema::{Column, TableDef};
use super::types::{digit_count, ColumnType};
use super::value::{FromValue, Value};

/// The row format version, the first byte of every row. Readers accept only this version.
pub const ROW_FORMAT_VERSION: u8 = 1;

/// Largest encoded row: the B-tree's largest value ([`MAX_VALUE_BYTES`], 64 MiB).
pub const ROW_MAX_BYTES: usize = MAX_VALUE_BYTES;

/// Version byte and column count.
const HEADER_BYTES: usize = 3;

/// Rows up to this many bytes use 2-byte end offsets, longer rows 4-byte ones.
const SMALL_ROW_MAX_BYTES: usize = 0xFFFF;

/// Where each column's field lies, for every prefix of the columns (a row written before
/// columns were added stores a prefix): computed once per [`TableDef`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct RowLayout {
    /// `fixed_start[i]`: bytes of the fixed-width fields of columns `0..i`; `n + 1` entries.
    fixed_start: Vec<u32>,
    /// `var_rank[i]`: how many of columns `0..i` are variable-width; `n + 1` entries.
    var_rank: Vec<u16>,
}

impl RowLayout {
    pub(super) fn new(columns: &[Column]) -> RowLayout {
        let mut fixed_start = Vec::with_capacity(columns.len() + 1);
        let mut var_rank = Vec::with_capacity(columns.len() + 1);
        let (mut fixed, mut vars) = (0u32, 0u16);
        for c in columns {
            fixed_start.push(fixed);
            var_rank.push(vars);
            match c.ty.fixed_width() {
                Some(w) => fixed += w as u32,
                None => vars += 1,
            }
        }
        fixed_start.push(fixed);
        var_rank.push(vars);
        RowLayout {
            fixed_start,
            var_rank,
        }
    }
}

/// Byte positions of the parts of one row of `n` stored columns and `len` bytes.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    /// Start of the fixed-width fields.
    fixed: usize,
    /// Start of the end offsets.
    offsets: usize,
    /// Bytes per end offset: 2 or 4.
    width: usize,
    /// Start of the variable bytes.
    data: usize,
}

impl Geometry {
    fn new(layout: &RowLayout, n: usize, width: usize) -> Geometry {
        let fixed = HEADER_BYTES + n.div_ceil(8);
        let offsets = fixed + layout.fixed_start[n] as usize;
        let data = offsets + usize::from(layout.var_rank[n]) * width;
        Geometry {
            fixed,
            offsets,
            width,
            data,
        }
    }
}

/// Encodes a row of `def`: `values` in column order, one per column, each checked against
/// its column as [`TableDef::check_row`] does (so un-normalized values are accepted).
///
/// # Errors
/// [`Error::InvalidArgument`] (`row`) if `values` has the wrong length or the row would be
/// larger than [`ROW_MAX_BYTES`]; [`Error::NotNull`], [`Error::TypeMismatch`],
/// [`Error::ValueTooLong`] for a value that does not fit its column.
pub fn encode_row(def: &TableDef, values: &[Value]) -> Result<Vec<u8>> {
    let columns = def.columns();
    if values.len() != columns.len() {
        return Err(Error::invalid(
            "row",
            format!(
                "{} values for the {} columns of table `{}`",
                values.len(),
                columns.len(),
                def.name()
            ),
        ));
    }
    let cells = check_all(def.name(), columns, values)?;
    encode_cells(def, &cells)
}

/// Encodes checked cells, one per column (module rule 7, `docs/format.md` "Row").
pub(super) fn encode_cells(def: &TableDef, cells: &[Cell<'_>]) -> Result<Vec<u8>> {
    let layout = def.layout();
    let n = cells.len();
    let var_bytes: usize = cells
        .iter()
        .map(|c| match c {
            Cell::Str(s) => s.len(),
            Cell::Bytes(b) => b.len(),
            _ => 0,
        })
        .sum();
    let small = Geometry::new(layout, n, 2);
    let g = if small.data + var_bytes <= SMALL_ROW_MAX_BYTES {
        small
    } else {
        Geometry::new(layout, n, 4)
    };
    let len = g.data + var_bytes;
    if len > ROW_MAX_BYTES {
        return Err(Error::invalid(
            "row",
            format!(
                "a row of table `{}` would be {len} bytes, at most {ROW_MAX_BYTES}",
                def.name()
            ),
        ));
    }
    // One allocation of the final length: the fixed part zeroed, the variable part appended.
    let mut out = Vec::with_capacity(len);
    out.resize(g.data, 0);
    out[0] = ROW_FORMAT_VERSION;
    out[1..3].copy_from_slice(&(n as u16).to_le_bytes());
    let mut var_end = 0usize;
    for (i, (cell, column)) in cells.iter().zip(def.columns()).enumerate() {
        match *cell {
            Cell::Null => out[HEADER_BYTES + i / 8] |= 1 << (i % 8),
            Cell::Bool(_) | Cell::Int4(_) | Cell::Int8(_) | Cell::Float8(_) => {
                let at = g.fixed + layout.fixed_start[i] as usize;
                let w = column.ty.fixed_width().unwrap_or(0);
                let written = write_fixed(cell, &mut out[at..at + w]);
                debug_assert!(written, "`check` gives fixed cells of their column's width");
            }
            Cell::Str(s) => {
                out.extend_from_slice(s.as_bytes());
                var_end += s.len();
            }
            Cell::Bytes(b) => {
                out.extend_from_slice(b);
                var_end += b.len();
            }
        }
        if column.ty.fixed_width().is_none() {
            let at = g.offsets + usize::from(layout.var_rank[i]) * g.width;
            if g.width == 2 {
                out[at..at + 2].copy_from_slice(&(var_end as u16).to_le_bytes());
            } else {
                out[at..at + 4].copy_from_slice(&(var_end as u32).to_le_bytes());
            }
        }
    }
    debug_assert_eq!(out.len(), len);
    Ok(out)
}

/// Writes fixed-width `cell` into `field`, its column's bytes in the row: the value's
/// little-endian bytes, or zeros for NULL (the null bit is the caller's). Returns false,
/// writing nothing, for a variable-width cell or one whose width is not `field`'s.
fn write_fixed(cell: &Cell<'_>, field: &mut [u8]) -> bool {
    match (*cell, field.len()) {
        (Cell::Null, _) => field.fill(0),
        (Cell::Bool(b), 1) => field[0] = u8::from(b),
        (Cell::Int4(v), 4) => field.copy_from_slice(&v.to_le_bytes()),
        (Cell::Int8(v), 8) => field.copy_from_slice(&v.to_le_bytes()),
        (Cell::Float8(v), 8) => field.copy_from_slice(&v.to_bits().to_le_bytes()),
        _ => return false,
    }
    true
}

/// Decodes a whole row of `def`, checking every byte (module rule 7): one value per column
/// of `def`, normalized; columns the row does not store (added later) are NULL.
///
/// # Errors
/// [`Error::CorruptRecord`] naming the row's table if `bytes` is not an encoding of a row
/// of `def`; never panics.
pub fn decode_row(def: &TableDef, bytes: &[u8]) -> Result<Vec<Value>> {
    let view = RowView::new(def, bytes)?;
    let mut values = Vec::with_capacity(def.columns().len());
    // One pass: each column is checked once and converted as it is checked.
    view.validate_with(|c, cell| values.push(cell.to_value(c.ty)))?;
    Ok(values)
}

/// A stored row, read in place: one column at a time in O(1) (module rule 7), without
/// decoding the others.
///
/// [`RowView::new`] checks only the header and that the row is long enough for its fixed
/// part; each accessor checks what it reads (its null bit, field, end offsets, UTF-8 and the
/// column's limits), and [`RowView::validate`] the rest of the row.
///
/// ```
/// use shoal::table::{encode_row, Column, ColumnType, RowView, TableDef, Value};
///
/// let def = TableDef::new(
///     "t",
///     vec![Column::new("id", ColumnType::Int4), Column::new("name", ColumnType::Varchar(9))],
///     &["id"],
/// )?;
/// let bytes = encode_row(&def, &[Value::Int4(7), Value::from("ann")])?;
/// let view = RowView::new(&def, &bytes)?;
/// assert_eq!(view.raw(0)?, Some(&7i32.to_le_bytes()[..]));
/// assert_eq!(view.value(1)?, Value::from("ann"));
/// # Ok::<(), shoal::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct RowView<'a> {
    def: &'a TableDef,
    bytes: &'a [u8],
    /// Columns stored in the row (at most the table's).
    n: usize,
    g: Geometry,
}

impl<'a> RowView<'a> {
    /// Reads the header of the row `bytes` of table `def`.
    ///
    /// # Errors
    /// [`Error::CorruptRecord`]: shorter than the header, another format version, more
    /// columns than `def`, or too short for its null bitmap, fixed fields and offsets.
    pub fn new(def: &'a TableDef, bytes: &'a [u8]) -> Result<RowView<'a>> {
        let corrupt = |reason: String| corrupt_row(def, reason);
        if bytes.len() < HEADER_BYTES {
            return Err(corrupt(format!(
                "{} bytes, shorter than the {HEADER_BYTES}-byte header",
                bytes.len()
            )));
        }
        if bytes[0] != ROW_FORMAT_VERSION {
            return Err(corrupt(format!(
                "format version {}, expected {ROW_FORMAT_VERSION}",
                bytes[0]
            )));
        }
        let n = usize::from(u16::from_le_bytes([bytes[1], bytes[2]]));
        if n > def.columns().len() {
            return Err(corrupt(format!(
                "{n} columns stored, the table has {}",
                def.columns().len()
            )));
        }
        let width = if bytes.len() <= SMALL_ROW_MAX_BYTES {
            2
        } else {
            4
        };
        let g = Geometry::new(def.layout(), n, width);
        if bytes.len() < g.data {
            return Err(corrupt(format!(
                "{} bytes, but {n} columns need {} before the variable bytes",
                bytes.len(),
                g.data
            )));
        }
        Ok(RowView { def, bytes, n, g })
    }

    /// How many columns the row stores: the table's column count when it was written.
    pub fn stored_columns(&self) -> usize {
        self.n
    }

    /// True if column `column` is NULL (always true for a column added after the row was
    /// written).
    ///
    /// # Errors
    /// [`Error::NoSuchColumn`] (`#column`) if the table has no such column.
    pub fn is_null(&self, column: usize) -> Result<bool> {
        self.column(column)?;
        Ok(column >= self.n || self.null_bit(column))
    }

    /// The stored bytes of column `column`, `None` if it is NULL: a fixed-width field's
    /// little-endian bytes, or a variable field's bytes (a CHAR without its trailing
    /// spaces). Not checked against the column's limits; [`RowView::value`] is.
    ///
    /// # Errors
    /// [`Error::NoSuchColumn`] for a bad position; [`Error::CorruptRecord`] if the field's
    /// offsets are out of bounds.
    pub fn raw(&self, column: usize) -> Result<Option<&'a [u8]>> {
        self.column(column)?;
        if column >= self.n || self.null_bit(column) {
            return Ok(None);
        }
        self.field(column).map(Some)
    }

    /// The normalized value of column `column` (a CHAR padded to its length).
    ///
    /// # Errors
    /// [`Error::NoSuchColumn`] for a bad position; [`Error::CorruptRecord`] if the field is
    /// not a valid value of its column (out of bounds, NULL in a NOT NULL column, a bool
    /// byte other than 0 or 1, a decimal beyond its precision, bad UTF-8, a string or byte
    /// string over its length, a CHAR stored with trailing spaces, a NULL field not zero).
    pub fn value(&self, column: usize) -> Result<Value> {
        let c = self.column(column)?;
        Ok(self.cell(column, c)?.to_value(c.ty))
    }

    /// Column `column` converted to an owned `T` (`i32`, `i64`, `String`, `Option<i32>`,
    /// ...), as [`super::Row::get_at`] converts.
    ///
    /// # Errors
    /// As [`RowView::value`]; [`Error::TypeMismatch`] naming the column if its value does
    /// not convert to `T`.
    pub fn get<T: for<'v> FromValue<'v>>(&self, column: usize) -> Result<T> {
        let v = self.value(column)?;
        T::from_value(&v).ok_or_else(|| Error::TypeMismatch {
            column: self.def.columns()[column].name.clone(),
            expected: T::NAME.to_string(),
            got: v.type_name().to_string(),
        })
    }

    /// Checks what the accessors do not: every column's field, the null bitmap's padding
    /// bits, that the variable bytes end exactly at the row's end, and that the offsets are
    /// 4 bytes wide only where 2 would not do. A row that passes is exactly the encoding of
    /// its values (for a row storing all the table's columns).
    ///
    /// # Errors
    /// [`Error::CorruptRecord`] naming the first problem.
    pub fn validate(&self) -> Result<()> {
        self.validate_with(|_, _| {})
    }

    /// [`RowView::validate`], handing each column's checked cell to `each` in column order
    /// (so a decoder checks and converts every column in one pass).
    fn validate_with(&self, mut each: impl FnMut(&Column, Cell<'a>)) -> Result<()> {
        let pad_bits = self.n.div_ceil(8) * 8 - self.n;
        if pad_bits > 0 && self.bytes[HEADER_BYTES + self.n / 8] >> (8 - pad_bits) != 0 {
            return Err(self.corrupt("padding bits of the null bitmap are set".into()));
        }
        for (i, c) in self.def.columns().iter().enumerate() {
            each(c, self.cell(i, c)?);
        }
        let vars = usize::from(self.def.layout().var_rank[self.n]);
        let data_len = self.bytes.len() - self.g.data;
        let end = if vars == 0 {
            0
        } else {
            self.end_offset(vars - 1)
        };
        if end != data_len {
            return Err(self.corrupt(format!(
                "variable fields end at byte {end} of {data_len} variable bytes"
            )));
        }
        if self.g.width == 4 && self.bytes.len() - 2 * vars <= SMALL_ROW_MAX_BYTES {
            return Err(self.corrupt(format!(
                "4-byte offsets in a row that fits {SMALL_ROW_MAX_BYTES} bytes with 2-byte ones"
            )));
        }
        Ok(())
    }

    /// This row with the fixed-width fields of `changes` — (column position, checked cell)
    /// pairs — rewritten in place and their null bits set or cleared: a copy of the stored
    /// bytes in which no other byte differs (a NULL field is zeros, as the format requires).
    /// `None` if the row stores fewer columns than its table (written before columns were
    /// added: it must be re-encoded whole), or if a change is not a fixed-width cell of a
    /// fixed-width column of its width.
    pub(super) fn with_fixed(&self, changes: &[(usize, Cell<'_>)]) -> Option<Vec<u8>> {
        let columns = self.def.columns();
        if self.n != columns.len() {
            return None;
        }
        let layout = self.def.layout();
        let mut out = self.bytes.to_vec();
        for (i, cell) in changes {
            let (i, w) = (*i, columns.get(*i)?.ty.fixed_width()?);
            let bit = (HEADER_BYTES + i / 8, 1u8 << (i % 8));
            // In bounds: `new` checked the row holds every fixed field of its n columns.
            let at = self.g.fixed + layout.fixed_start[i] as usize;
            if !write_fixed(cell, &mut out[at..at + w]) {
                return None;
            }
            if matches!(cell, Cell::Null) {
                out[bit.0] |= bit.1;
            } else {
                out[bit.0] &= !bit.1;
            }
        }
        Some(out)
    }

    fn corrupt(&self, reason: String) -> Error {
        corrupt_row(self.def, reason)
    }

    fn column(&self, column: usize) -> Result<&'a Column> {
        self.def
            .columns()
            .get(column)
            .ok_or_else(|| Error::NoSuchColumn {
                table: self.def.name().to_string(),
                column: format!("#{column}"),
            })
    }

    fn null_bit(&self, column: usize) -> bool {
        self.bytes[HEADER_BYTES + column / 8] & (1 << (column % 8)) != 0
    }

    /// End of variable field `rank`, relative to the start of the variable bytes.
    fn end_offset(&self, rank: usize) -> usize {
        let at = self.g.offsets + rank * self.g.width;
        let b = &self.bytes[at..at + self.g.width];
        if self.g.width == 2 {
            usize::from(u16::from_le_bytes([b[0], b[1]]))
        } else {
            u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize
        }
    }

    /// The bytes of stored column `i`'s field (NULL or not), bounds-checked.
    fn field(&self, i: usize) -> Result<&'a [u8]> {
        let layout = self.def.layout();
        let c = &self.def.columns()[i];
        if let Some(w) = c.ty.fixed_width() {
            // In bounds: `new` checked the row holds every fixed field of its n columns.
            let at = self.g.fixed + layout.fixed_start[i] as usize;
            return Ok(&self.bytes[at..at + w]);
        }
        let rank = usize::from(layout.var_rank[i]);
        let start = if rank == 0 {
            0
        } else {
            self.end_offset(rank - 1)
        };
        let end = self.end_offset(rank);
        let data_len = self.bytes.len() - self.g.data;
        if start > end || end > data_len {
            return Err(self.corrupt(format!(
                "column `{}` spans variable bytes [{start}, {end}) of {data_len}",
                c.name
            )));
        }
        Ok(&self.bytes[self.g.data + start..self.g.data + end])
    }

    /// Column `i` (of column definition `c`) as a checked cell. Inlined into its two
    /// callers: returned through memory, its `Result` was reloaded across the stores that
    /// wrote it (a failed store forwarding: a quarter of `decode_row`'s samples in TPC-C).
    #[inline(always)]
    fn cell(&self, i: usize, c: &Column) -> Result<Cell<'a>> {
        if i >= self.n || self.null_bit(i) {
            if !c.nullable {
                return Err(self.corrupt(if i >= self.n {
                    format!(
                        "NOT NULL column `{}` is not stored (the row has {} columns)",
                        c.name, self.n
                    )
                } else {
                    format!("NOT NULL column `{}` is marked NULL", c.name)
                }));
            }
            // A NULL's field is as the encoder writes it: zeros of a fixed width, or empty.
            let stray = |f: &[u8]| match c.ty.fixed_width() {
                Some(_) => f.iter().any(|&b| b != 0),
                None => !f.is_empty(),
            };
            if i < self.n && stray(self.field(i)?) {
                return Err(self.corrupt(format!("NULL column `{}` has a non-empty field", c.name)));
            }
            return Ok(Cell::Null);
        }
        let f = self.field(i)?;
        let bad = |what: String| self.corrupt(format!("column `{}`: {what}", c.name));
        let le8 = || i64::from_le_bytes(f.try_into().unwrap_or([0; 8]));
        let cell = match c.ty {
            ColumnType::Bool => match f[0] {
                0 => Cell::Bool(false),
                1 => Cell::Bool(true),
                b => return Err(bad(format!("bool byte {b:#04x} is not 0 or 1"))),
            },
            ColumnType::Int4 => Cell::Int4(i32::from_le_bytes(f.try_into().unwrap_or([0; 4]))),
            ColumnType::Int8 | ColumnType::Timestamp => Cell::Int8(le8()),
            ColumnType::Float8 => Cell::Float8(f64::from_bits(le8() as u64)),
            ColumnType::Decimal { precision, .. } => {
                let units = le8();
                if digit_count(units) > u32::from(precision) {
                    return Err(bad(format!("{units} has more than {precision} digits")));
                }
                Cell::Int8(units)
            }
            ColumnType::Char(n) | ColumnType::Varchar(n) => {
                let s = std::str::from_utf8(f).map_err(|e| bad(format!("not UTF-8: {e}")))?;
                // At most n bytes are at most n characters: the walk is needed only
                // for longer fields.
                if s.len() > n as usize && s.chars().nth(n as usize).is_some() {
                    return Err(bad(format!("more than {n} characters")));
                }
                if matches!(c.ty, ColumnType::Char(_)) && s.ends_with(' ') {
                    return Err(bad("a CHAR stored with trailing spaces".into()));
                }
                Cell::Str(s)
            }
            ColumnType::Bytes(max) => {
                if let Some(max) = max {
                    if f.len() as u64 > u64::from(max) {
                        return Err(bad(format!("{} bytes, more than {max}", f.len())));
                    }
                }
                Cell::Bytes(f)
            }
        };
        Ok(cell)
    }
}

fn corrupt_row(def: &TableDef, reason: String) -> Error {
    Error::CorruptRecord {
        what: format!("row of table `{}`", def.name()),
        reason,
    }
}
