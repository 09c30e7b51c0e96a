//! The binary form of a [`TableDef`], for the catalog to keep in a B-tree (module rule 9;
//! `docs/format.md`, "Table definition").

use crate::error::{Error, Result};

use super::schema::{Column, IndexDef, TableDef};
use super::types::ColumnType;

/// The table-definition format version, its first byte. Readers accept only this version.
pub const TABLE_DEF_FORMAT_VERSION: u8 = 1;

/// Type tags (`docs/format.md`, "Table definition").
const TAG_BOOL: u8 = 1;
const TAG_INT4: u8 = 2;
const TAG_INT8: u8 = 3;
const TAG_FLOAT8: u8 = 4;
const TAG_DECIMAL: u8 = 5;
const TAG_CHAR: u8 = 6;
const TAG_VARCHAR: u8 = 7;
const TAG_BYTES: u8 = 8;
const TAG_TIMESTAMP: u8 = 9;

/// Column flag: nullable. Index flag: unique.
const FLAG_NULLABLE: u8 = 1;
const FLAG_UNIQUE: u8 = 1;

impl TableDef {
    /// The definition's binary form: self-describing (names, types and key columns
    /// spelled out), versioned, little-endian.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![TABLE_DEF_FORMAT_VERSION];
        put_name(&mut out, self.name());
        out.extend((self.columns().len() as u16).to_le_bytes());
        for c in self.columns() {
            put_name(&mut out, &c.name);
            match c.ty {
                ColumnType::Bool => out.push(TAG_BOOL),
                ColumnType::Int4 => out.push(TAG_INT4),
                ColumnType::Int8 => out.push(TAG_INT8),
                ColumnType::Float8 => out.push(TAG_FLOAT8),
                ColumnType::Decimal { precision, scale } => {
                    out.extend([TAG_DECIMAL, precision, scale]);
                }
                ColumnType::Char(n) => {
                    out.push(TAG_CHAR);
                    out.extend(n.to_le_bytes());
                }
                ColumnType::Varchar(n) => {
                    out.push(TAG_VARCHAR);
                    out.extend(n.to_le_bytes());
                }
                ColumnType::Bytes(max) => {
                    out.push(TAG_BYTES);
                    out.extend(max.unwrap_or(0).to_le_bytes());
                }
                ColumnType::Timestamp => out.push(TAG_TIMESTAMP),
            }
            out.push(if c.nullable { FLAG_NULLABLE } else { 0 });
        }
        put_positions(&mut out, self.primary_key());
        out.push(self.indexes().len() as u8);
        for (i, ix) in self.indexes().iter().enumerate() {
            put_name(&mut out, &ix.name);
            out.push(if ix.unique { FLAG_UNIQUE } else { 0 });
            put_positions(&mut out, self.index_columns(i));
        }
        out
    }

    /// Reads a definition written by [`TableDef::encode`], and checks it as
    /// [`TableDef::new`] does.
    ///
    /// # Errors
    /// [`Error::CorruptRecord`] (`table definition`) for any other bytes: another version,
    /// an unknown type tag or flag, a length past the end, bytes left over, or a definition
    /// that breaks a schema rule. Never panics.
    pub fn decode(bytes: &[u8]) -> Result<TableDef> {
        let mut r = Reader { bytes, pos: 0 };
        let version = r.u8("version")?;
        if version != TABLE_DEF_FORMAT_VERSION {
            return Err(r.error(format!(
                "format version {version}, expected {TABLE_DEF_FORMAT_VERSION}"
            )));
        }
        let name = r.name("table name")?;
        let column_count = usize::from(r.u16("column count")?);
        let mut columns = Vec::with_capacity(column_count.min(bytes.len()));
        for _ in 0..column_count {
            let col_name = r.name("column name")?;
            let ty = match r.u8("type tag")? {
                TAG_BOOL => ColumnType::Bool,
                TAG_INT4 => ColumnType::Int4,
                TAG_INT8 => ColumnType::Int8,
                TAG_FLOAT8 => ColumnType::Float8,
                TAG_DECIMAL => ColumnType::Decimal {
                    precision: r.u8("precision")?,
                    scale: r.u8("scale")?,
                },
                TAG_CHAR => ColumnType::Char(r.u32("length")?),
                TAG_VARCHAR => ColumnType::Varchar(r.u32("length")?),
                TAG_BYTES => match r.u32("length")? {
                    0 => ColumnType::Bytes(None),
                    n => ColumnType::Bytes(Some(n)),
                },
                TAG_TIMESTAMP => ColumnType::Timestamp,
                tag => return Err(r.error(format!("unknown type tag {tag}"))),
            };
            let nullable = match r.u8("column flags")? {
                0 => false,
                FLAG_NULLABLE => true,
                f => return Err(r.error(format!("unknown column flags {f:#04x}"))),
            };
            columns.push(Column {
                name: col_name,
                ty,
                nullable,
            });
        }
        let primary_key = r.positions("primary key")?;
        let index_count = usize::from(r.u8("index count")?);
        let mut indexes = Vec::with_capacity(index_count);
        for _ in 0..index_count {
            let ix_name = r.name("index name")?;
            let unique = match r.u8("index flags")? {
                0 => false,
                FLAG_UNIQUE => true,
                f => return Err(r.error(format!("unknown index flags {f:#04x}"))),
            };
            let positions = r.positions("index columns")?;
            let mut names = Vec::with_capacity(positions.len());
            for p in positions {
                match columns.get(p) {
                    Some(c) => names.push(c.name.clone()),
                    None => return Err(r.error(format!("index column #{p} out of range"))),
                }
            }
            indexes.push(IndexDef {
                name: ix_name,
                columns: names,
                unique,
            });
        }
        if r.pos != bytes.len() {
            return Err(r.error(format!("{} bytes left over", bytes.len() - r.pos)));
        }
        TableDef::build(name, columns, primary_key, indexes).map_err(|e| Error::CorruptRecord {
            what: "table definition".into(),
            reason: e.to_string(),
        })
    }
}

fn put_name(out: &mut Vec<u8>, name: &str) {
    // Names are at most MAX_NAME_BYTES (128) bytes: one length byte.
    out.push(name.len() as u8);
    out.extend_from_slice(name.as_bytes());
}

fn put_positions(out: &mut Vec<u8>, positions: &[usize]) {
    out.push(positions.len() as u8);
    for &p in positions {
        out.extend((p as u16).to_le_bytes());
    }
}

/// A cursor over a definition's bytes whose every read is bounds-checked.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn error(&self, reason: String) -> Error {
        Error::CorruptRecord {
            what: "table definition".into(),
            reason: format!("at byte {}: {reason}", self.pos),
        }
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&[u8]> {
        match self.bytes.get(self.pos..self.pos.saturating_add(n)) {
            Some(b) => {
                self.pos += n;
                Ok(b)
            }
            None => Err(self.error(format!("ends inside the {what}"))),
        }
    }

    fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.take(1, what)?[0])
    }

    fn u16(&mut self, what: &str) -> Result<u16> {
        let b = self.take(2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn name(&mut self, what: &str) -> Result<String> {
        let len = usize::from(self.u8(what)?);
        let start = self.pos;
        let b = self.take(len, what)?;
        match std::str::from_utf8(b) {
            Ok(s) => Ok(s.to_string()),
            Err(e) => {
                self.pos = start;
                Err(self.error(format!("{what} is not UTF-8: {e}")))
            }
        }
    }

    fn positions(&mut self, what: &str) -> Result<Vec<usize>> {
        let n = usize::from(self.u8(what)?);
        (0..n).map(|_| Ok(usize::from(self.u16(what)?))).collect()
    }
}
