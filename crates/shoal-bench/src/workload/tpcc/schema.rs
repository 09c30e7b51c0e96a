//! The nine TPC-C tables (clause 1.3), described once and turned into Shoal table
//! definitions and SQLite DDL, so both engines get the same columns, keys and indexes.
//!
//! Money is a scaled integer (INT8 cents: `w_ytd`, `c_balance`, `i_price`, `ol_amount`,
//! ...) and the rates `w_tax`, `d_tax`, `c_discount` are INT4 ten-thousandths (the spec's
//! `signed numeric(4,4)`), so both engines do exact integer arithmetic. Dates are
//! `TIMESTAMP` (SQLite: INTEGER microseconds). `history` has a surrogate key `h_id` (the
//! spec gives it none; Shoal's tables need one, SQLite gets the same column as its rowid).

use crate::error::Result;
use shoal::table::{Column, ColumnType, IndexDef, TableDef};

/// A column's type, as both engines see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// 32-bit integer (SQLite INTEGER).
    I4,
    /// 64-bit integer (SQLite INTEGER).
    I8,
    /// Time stamp (SQLite INTEGER microseconds).
    Ts,
    /// Fixed-length text of n characters (SQLite TEXT).
    Ch(u32),
    /// Variable-length text of at most n characters (SQLite TEXT).
    Vc(u32),
}

/// One table: name, columns `(name, type, nullable)`, primary key, secondary indexes.
#[derive(Debug)]
pub struct TableSpec {
    /// Table name.
    pub name: &'static str,
    /// Columns in order.
    pub columns: &'static [(&'static str, Ty, bool)],
    /// Primary-key columns.
    pub pk: &'static [&'static str],
    /// Secondary indexes: name and columns.
    pub indexes: &'static [(&'static str, &'static [&'static str])],
}

use Ty::{Ch, Ts, Vc, I4, I8};

/// WAREHOUSE (one per `--warehouses`).
pub const WAREHOUSE: TableSpec = TableSpec {
    name: "warehouse",
    columns: &[
        ("w_id", I4, false),
        ("w_name", Vc(10), false),
        ("w_street_1", Vc(20), false),
        ("w_street_2", Vc(20), false),
        ("w_city", Vc(20), false),
        ("w_state", Ch(2), false),
        ("w_zip", Ch(9), false),
        ("w_tax", I4, false),
        ("w_ytd", I8, false),
    ],
    pk: &["w_id"],
    indexes: &[],
};

/// DISTRICT (10 per warehouse).
pub const DISTRICT: TableSpec = TableSpec {
    name: "district",
    columns: &[
        ("d_w_id", I4, false),
        ("d_id", I4, false),
        ("d_name", Vc(10), false),
        ("d_street_1", Vc(20), false),
        ("d_street_2", Vc(20), false),
        ("d_city", Vc(20), false),
        ("d_state", Ch(2), false),
        ("d_zip", Ch(9), false),
        ("d_tax", I4, false),
        ("d_ytd", I8, false),
        ("d_next_o_id", I4, false),
    ],
    pk: &["d_w_id", "d_id"],
    indexes: &[],
};

/// CUSTOMER, with the index Payment and Order-Status find a customer by last name with.
pub const CUSTOMER: TableSpec = TableSpec {
    name: "customer",
    columns: &[
        ("c_w_id", I4, false),
        ("c_d_id", I4, false),
        ("c_id", I4, false),
        ("c_first", Vc(16), false),
        ("c_middle", Ch(2), false),
        ("c_last", Vc(16), false),
        ("c_street_1", Vc(20), false),
        ("c_street_2", Vc(20), false),
        ("c_city", Vc(20), false),
        ("c_state", Ch(2), false),
        ("c_zip", Ch(9), false),
        ("c_phone", Ch(16), false),
        ("c_since", Ts, false),
        ("c_credit", Ch(2), false),
        ("c_credit_lim", I8, false),
        ("c_discount", I4, false),
        ("c_balance", I8, false),
        ("c_ytd_payment", I8, false),
        ("c_payment_cnt", I4, false),
        ("c_delivery_cnt", I4, false),
        ("c_data", Vc(500), false),
    ],
    pk: &["c_w_id", "c_d_id", "c_id"],
    indexes: &[(
        "customer_by_name",
        &["c_w_id", "c_d_id", "c_last", "c_first"],
    )],
};

/// HISTORY (grows with Payment).
pub const HISTORY: TableSpec = TableSpec {
    name: "history",
    columns: &[
        ("h_id", I8, false),
        ("h_c_id", I4, false),
        ("h_c_d_id", I4, false),
        ("h_c_w_id", I4, false),
        ("h_d_id", I4, false),
        ("h_w_id", I4, false),
        ("h_date", Ts, false),
        ("h_amount", I8, false),
        ("h_data", Vc(24), false),
    ],
    pk: &["h_id"],
    indexes: &[],
};

/// NEW-ORDER (orders not yet delivered).
pub const NEW_ORDER: TableSpec = TableSpec {
    name: "new_order",
    columns: &[
        ("no_w_id", I4, false),
        ("no_d_id", I4, false),
        ("no_o_id", I4, false),
    ],
    pk: &["no_w_id", "no_d_id", "no_o_id"],
    indexes: &[],
};

/// ORDER (`orders`), with the index Order-Status finds a customer's newest order with.
pub const ORDERS: TableSpec = TableSpec {
    name: "orders",
    columns: &[
        ("o_w_id", I4, false),
        ("o_d_id", I4, false),
        ("o_id", I4, false),
        ("o_c_id", I4, false),
        ("o_entry_d", Ts, false),
        ("o_carrier_id", I4, true),
        ("o_ol_cnt", I4, false),
        ("o_all_local", I4, false),
    ],
    pk: &["o_w_id", "o_d_id", "o_id"],
    indexes: &[(
        "orders_by_customer",
        &["o_w_id", "o_d_id", "o_c_id", "o_id"],
    )],
};

/// ORDER-LINE.
pub const ORDER_LINE: TableSpec = TableSpec {
    name: "order_line",
    columns: &[
        ("ol_w_id", I4, false),
        ("ol_d_id", I4, false),
        ("ol_o_id", I4, false),
        ("ol_number", I4, false),
        ("ol_i_id", I4, false),
        ("ol_supply_w_id", I4, false),
        ("ol_delivery_d", Ts, true),
        ("ol_quantity", I4, false),
        ("ol_amount", I8, false),
        ("ol_dist_info", Ch(24), false),
    ],
    pk: &["ol_w_id", "ol_d_id", "ol_o_id", "ol_number"],
    indexes: &[],
};

/// ITEM (100,000 at full scale, shared by every warehouse).
pub const ITEM: TableSpec = TableSpec {
    name: "item",
    columns: &[
        ("i_id", I4, false),
        ("i_im_id", I4, false),
        ("i_name", Vc(24), false),
        ("i_price", I8, false),
        ("i_data", Vc(50), false),
    ],
    pk: &["i_id"],
    indexes: &[],
};

/// STOCK (one row per item and warehouse).
pub const STOCK: TableSpec = TableSpec {
    name: "stock",
    columns: &[
        ("s_w_id", I4, false),
        ("s_i_id", I4, false),
        ("s_quantity", I4, false),
        ("s_dist_01", Ch(24), false),
        ("s_dist_02", Ch(24), false),
        ("s_dist_03", Ch(24), false),
        ("s_dist_04", Ch(24), false),
        ("s_dist_05", Ch(24), false),
        ("s_dist_06", Ch(24), false),
        ("s_dist_07", Ch(24), false),
        ("s_dist_08", Ch(24), false),
        ("s_dist_09", Ch(24), false),
        ("s_dist_10", Ch(24), false),
        ("s_ytd", I8, false),
        ("s_order_cnt", I4, false),
        ("s_remote_cnt", I4, false),
        ("s_data", Vc(50), false),
    ],
    pk: &["s_w_id", "s_i_id"],
    indexes: &[],
};

/// Table numbers: positions in [`TABLES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum T {
    /// `warehouse`.
    Warehouse,
    /// `district`.
    District,
    /// `customer`.
    Customer,
    /// `history`.
    History,
    /// `new_order`.
    NewOrder,
    /// `orders`.
    Orders,
    /// `order_line`.
    OrderLine,
    /// `item`.
    Item,
    /// `stock`.
    Stock,
}

/// The nine tables, in [`T`] order.
pub const TABLES: [&TableSpec; 9] = [
    &WAREHOUSE,
    &DISTRICT,
    &CUSTOMER,
    &HISTORY,
    &NEW_ORDER,
    &ORDERS,
    &ORDER_LINE,
    &ITEM,
    &STOCK,
];

/// Column positions used by the transactions (must match the specs above; a test checks).
pub mod col {
    /// `w_name`.
    pub const W_NAME: usize = 1;
    /// `w_tax`.
    pub const W_TAX: usize = 7;
    /// `w_ytd`.
    pub const W_YTD: usize = 8;
    /// `d_name`.
    pub const D_NAME: usize = 2;
    /// `d_tax`.
    pub const D_TAX: usize = 8;
    /// `d_ytd`.
    pub const D_YTD: usize = 9;
    /// `d_next_o_id`.
    pub const D_NEXT_O_ID: usize = 10;
    /// `c_id`.
    pub const C_ID: usize = 2;
    /// `c_first`.
    pub const C_FIRST: usize = 3;
    /// `c_middle`.
    pub const C_MIDDLE: usize = 4;
    /// `c_last`.
    pub const C_LAST: usize = 5;
    /// `c_credit`.
    pub const C_CREDIT: usize = 13;
    /// `c_discount`.
    pub const C_DISCOUNT: usize = 15;
    /// `c_balance`.
    pub const C_BALANCE: usize = 16;
    /// `c_ytd_payment`.
    pub const C_YTD_PAYMENT: usize = 17;
    /// `c_payment_cnt`.
    pub const C_PAYMENT_CNT: usize = 18;
    /// `c_delivery_cnt`.
    pub const C_DELIVERY_CNT: usize = 19;
    /// `c_data`.
    pub const C_DATA: usize = 20;
    /// `no_o_id`.
    pub const NO_O_ID: usize = 2;
    /// `o_id`.
    pub const O_ID: usize = 2;
    /// `o_c_id`.
    pub const O_C_ID: usize = 3;
    /// `o_carrier_id`.
    pub const O_CARRIER_ID: usize = 5;
    /// `o_ol_cnt`.
    pub const O_OL_CNT: usize = 6;
    /// `ol_o_id`.
    pub const OL_O_ID: usize = 2;
    /// `ol_i_id`.
    pub const OL_I_ID: usize = 4;
    /// `ol_delivery_d`.
    pub const OL_DELIVERY_D: usize = 6;
    /// `ol_amount`.
    pub const OL_AMOUNT: usize = 8;
    /// `i_name`.
    pub const I_NAME: usize = 2;
    /// `i_price`.
    pub const I_PRICE: usize = 3;
    /// `i_data`.
    pub const I_DATA: usize = 4;
    /// `s_quantity`.
    pub const S_QUANTITY: usize = 2;
    /// `s_dist_01` (`s_dist_xx` is at `S_DIST_01 + xx - 1`).
    pub const S_DIST_01: usize = 3;
    /// `s_ytd`.
    pub const S_YTD: usize = 13;
    /// `s_order_cnt`.
    pub const S_ORDER_CNT: usize = 14;
    /// `s_remote_cnt`.
    pub const S_REMOTE_CNT: usize = 15;
    /// `s_data`.
    pub const S_DATA: usize = 16;
    /// `h_amount`.
    pub const H_AMOUNT: usize = 7;
}

impl TableSpec {
    /// The Shoal definition of the table.
    ///
    /// # Errors
    /// Shoal's schema errors (none for these specs).
    pub fn shoal_def(&self) -> Result<TableDef> {
        let columns = self
            .columns
            .iter()
            .map(|&(name, ty, nullable)| {
                let ty = match ty {
                    I4 => ColumnType::Int4,
                    I8 => ColumnType::Int8,
                    Ts => ColumnType::Timestamp,
                    Ch(n) => ColumnType::Char(n),
                    Vc(n) => ColumnType::Varchar(n),
                };
                let c = Column::new(name, ty);
                if nullable {
                    c
                } else {
                    c.not_null()
                }
            })
            .collect();
        let mut def = TableDef::new(self.name, columns, self.pk)?;
        for (name, cols) in self.indexes {
            def = def.with_index(IndexDef::new(*name, cols.iter().copied()))?;
        }
        Ok(def)
    }

    /// The SQLite DDL: the table (`WITHOUT ROWID`, clustered on its primary key as Shoal's
    /// is; `history` a rowid table keyed by `h_id`) and its indexes.
    pub fn sqlite_ddl(&self) -> String {
        let cols: Vec<String> = self
            .columns
            .iter()
            .map(|&(name, ty, nullable)| {
                let t = match ty {
                    I4 | I8 | Ts => "INTEGER",
                    Ch(_) | Vc(_) => "TEXT",
                };
                format!("{name} {t}{}", if nullable { "" } else { " NOT NULL" })
            })
            .collect();
        let mut sql = if self.pk.len() == 1 && self.columns[0].1 == I8 {
            // A rowid table: the single INT8 key is the rowid.
            let mut cols = cols;
            cols[0] = format!("{} INTEGER PRIMARY KEY", self.pk[0]);
            format!("CREATE TABLE {} ({});\n", self.name, cols.join(", "))
        } else {
            format!(
                "CREATE TABLE {} ({}, PRIMARY KEY ({})) WITHOUT ROWID;\n",
                self.name,
                cols.join(", "),
                self.pk.join(", ")
            )
        };
        for (name, icols) in self.indexes {
            sql.push_str(&format!(
                "CREATE INDEX {name} ON {} ({});\n",
                self.name,
                icols.join(", ")
            ));
        }
        sql
    }

    /// `INSERT INTO <table> VALUES (?1, ..., ?n)`.
    pub fn sqlite_insert(&self) -> String {
        let qs: Vec<String> = (1..=self.columns.len()).map(|i| format!("?{i}")).collect();
        format!("INSERT INTO {} VALUES ({})", self.name, qs.join(", "))
    }

    /// The position of column `name`, if the table has it.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.0 == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_constants_match_the_specs() {
        let checks: [(&TableSpec, usize, &str); 36] = [
            (&WAREHOUSE, col::W_NAME, "w_name"),
            (&WAREHOUSE, col::W_TAX, "w_tax"),
            (&WAREHOUSE, col::W_YTD, "w_ytd"),
            (&DISTRICT, col::D_NAME, "d_name"),
            (&DISTRICT, col::D_TAX, "d_tax"),
            (&DISTRICT, col::D_YTD, "d_ytd"),
            (&DISTRICT, col::D_NEXT_O_ID, "d_next_o_id"),
            (&CUSTOMER, col::C_ID, "c_id"),
            (&CUSTOMER, col::C_FIRST, "c_first"),
            (&CUSTOMER, col::C_LAST, "c_last"),
            (&CUSTOMER, col::C_CREDIT, "c_credit"),
            (&CUSTOMER, col::C_DISCOUNT, "c_discount"),
            (&CUSTOMER, col::C_BALANCE, "c_balance"),
            (&CUSTOMER, col::C_YTD_PAYMENT, "c_ytd_payment"),
            (&CUSTOMER, col::C_PAYMENT_CNT, "c_payment_cnt"),
            (&CUSTOMER, col::C_DELIVERY_CNT, "c_delivery_cnt"),
            (&CUSTOMER, col::C_DATA, "c_data"),
            (&NEW_ORDER, col::NO_O_ID, "no_o_id"),
            (&ORDERS, col::O_ID, "o_id"),
            (&ORDERS, col::O_C_ID, "o_c_id"),
            (&ORDERS, col::O_CARRIER_ID, "o_carrier_id"),
            (&ORDERS, col::O_OL_CNT, "o_ol_cnt"),
            (&ORDER_LINE, col::OL_O_ID, "ol_o_id"),
            (&ORDER_LINE, col::OL_I_ID, "ol_i_id"),
            (&ORDER_LINE, col::OL_DELIVERY_D, "ol_delivery_d"),
            (&ORDER_LINE, col::OL_AMOUNT, "ol_amount"),
            (&ITEM, col::I_NAME, "i_name"),
            (&ITEM, col::I_PRICE, "i_price"),
            (&ITEM, col::I_DATA, "i_data"),
            (&STOCK, col::S_QUANTITY, "s_quantity"),
            (&STOCK, col::S_DIST_01, "s_dist_01"),
            (&STOCK, col::S_YTD, "s_ytd"),
            (&STOCK, col::S_ORDER_CNT, "s_order_cnt"),
            (&STOCK, col::S_REMOTE_CNT, "s_remote_cnt"),
            (&STOCK, col::S_DATA, "s_data"),
            (&HISTORY, col::H_AMOUNT, "h_amount"),
        ];
        for (t, i, name) in checks {
            assert_eq!(t.position(name), Some(i), "{}.{name}", t.name);
        }
        assert_eq!(STOCK.position("s_dist_10"), Some(col::S_DIST_01 + 9));
        for (i, t) in TABLES.iter().enumerate() {
            t.shoal_def().unwrap();
            assert!(t.sqlite_ddl().starts_with("CREATE TABLE"), "{i}");
        }
        assert!(HISTORY.sqlite_ddl().contains("h_id INTEGER PRIMARY KEY,"));
        assert!(STOCK.sqlite_ddl().contains("WITHOUT ROWID"));
    }
}
