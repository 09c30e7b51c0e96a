//! Bulk loading for the MariaDB peer: rows are buffered per table and written with one
//! prepared multi-row `INSERT` per batch, so a load costs one round trip per batch rather
//! than per row.

use super::{TxResult, ENGINE};
use crate::error::BenchError;
use mysql::prelude::Queryable;
use mysql::{Statement, Value};

/// Most placeholders one batch statement has (the server allows 65,535).
const MAX_PLACEHOLDERS: usize = 60_000;
/// Most rows one batch statement inserts.
const MAX_BATCH_ROWS: usize = 1_000;

/// `INSERT INTO table VALUES (?, …), …` for `rows` rows of `cols` columns.
pub fn insert_sql(table: &str, cols: usize, rows: usize) -> String {
    let one = format!("({})", vec!["?"; cols].join(", "));
    format!("INSERT INTO {table} VALUES {}", vec![one; rows].join(", "))
}

/// A table's rows waiting to be inserted.
pub struct Bulk {
    table: String,
    cols: usize,
    batch_rows: usize,
    /// The prepared statement for a full batch, made at the first full batch.
    full: Option<Statement>,
    buf: Vec<Value>,
}

impl Bulk {
    /// A buffer for `table` with `cols` columns.
    pub fn new(table: impl Into<String>, cols: usize) -> Bulk {
        let cols = cols.max(1);
        let batch_rows = (MAX_PLACEHOLDERS / cols).clamp(1, MAX_BATCH_ROWS);
        Bulk {
            table: table.into(),
            cols,
            batch_rows,
            full: None,
            buf: Vec::with_capacity(batch_rows * cols),
        }
    }

    /// Rows buffered and not yet inserted.
    pub fn pending(&self) -> usize {
        self.buf.len() / self.cols
    }

    /// Adds one row (its values in column order); inserts the batch when it is full.
    ///
    /// # Errors
    /// [`BenchError::Peer`] if the row has the wrong number of values; the server's errors.
    pub fn push(
        &mut self,
        conn: &mut mysql::Conn,
        row: impl IntoIterator<Item = Value>,
    ) -> TxResult<()> {
        let before = self.buf.len();
        self.buf.extend(row);
        if self.buf.len() - before != self.cols {
            return Err(BenchError::peer(
                ENGINE,
                format!("loading {}", self.table),
                format!(
                    "a row of {} values for {} columns",
                    self.buf.len() - before,
                    self.cols
                ),
            )
            .into());
        }
        if self.pending() == self.batch_rows {
            let stmt = match &self.full {
                Some(s) => s.clone(),
                None => {
                    let s = conn.prep(insert_sql(&self.table, self.cols, self.batch_rows))?;
                    self.full = Some(s.clone());
                    s
                }
            };
            conn.exec_drop(&stmt, std::mem::take(&mut self.buf))?;
            self.buf.reserve(self.batch_rows * self.cols);
        }
        Ok(())
    }

    /// Inserts the buffered rows (a statement prepared for their number, then closed).
    ///
    /// # Errors
    /// The server's errors.
    pub fn flush(&mut self, conn: &mut mysql::Conn) -> TxResult<()> {
        let n = self.pending();
        if n == 0 {
            return Ok(());
        }
        let stmt = conn.prep(insert_sql(&self.table, self.cols, n))?;
        conn.exec_drop(&stmt, std::mem::take(&mut self.buf))?;
        conn.close(stmt)?;
        Ok(())
    }
}
