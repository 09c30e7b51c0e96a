//! `tpcc` on PostgreSQL: the nine tables of [`schema`](super::super::super::tpcc::schema)
//! (same columns, primary keys and secondary indexes), the population of
//! [`load`] written through [`PgSink`] (binary `COPY` per
//! table and load transaction), `VACUUM ANALYZE`, the five transactions of [`super::tpcc_txns`]
//! and the [`Snapshot`] the consistency conditions are checked on.

use super::super::super::tpcc::check::Snapshot;
use super::super::super::tpcc::gen::NuRandConstants;
use super::super::super::tpcc::input::{
    DeliveryIn, NewOrderIn, OrderStatusIn, PaymentIn, StockLevelIn,
};
use super::super::super::tpcc::load::{self, Sink};
use super::super::super::tpcc::schema::{TableSpec, Ty, T, TABLES};
use super::super::super::tpcc::sql_snapshot::{self, Dialect};
use super::super::super::tpcc::TpccScale;
use super::super::{NewOrderEnd, PeerSetup, TpccPeer};
use super::tpcc_txns::{self, TpccStatements, UnusedItem};
use super::{describe, start_server, PgDb, ENGINE};
use crate::error::{BenchError, Result};
use crate::runner::ThreadCtx;
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::types::{ToSql, Type};
use postgres::Client;
use shoal::table::Value as V;

/// The PostgreSQL type of a column type.
fn pg_type(ty: Ty) -> (&'static str, Type) {
    match ty {
        Ty::I4 => ("int4", Type::INT4),
        Ty::I8 | Ty::Ts => ("int8", Type::INT8),
        Ty::Ch(_) => ("char", Type::BPCHAR),
        Ty::Vc(_) => ("varchar", Type::VARCHAR),
    }
}

/// The DDL of `spec`: the table with its primary key, and its secondary indexes.
pub fn postgres_ddl(spec: &TableSpec) -> String {
    let cols: Vec<String> = spec
        .columns
        .iter()
        .map(|&(name, ty, nullable)| {
            let t = match ty {
                Ty::Ch(n) => format!("char({n})"),
                Ty::Vc(n) => format!("varchar({n})"),
                other => pg_type(other).0.to_string(),
            };
            format!("{name} {t}{}", if nullable { "" } else { " NOT NULL" })
        })
        .collect();
    let mut sql = format!(
        "CREATE TABLE {} ({}, PRIMARY KEY ({}));\n",
        spec.name,
        cols.join(", "),
        spec.pk.join(", ")
    );
    for (name, icols) in spec.indexes {
        sql.push_str(&format!(
            "CREATE INDEX {name} ON {} ({});\n",
            spec.name,
            icols.join(", ")
        ));
    }
    sql
}

/// One loaded value as a parameter of column type `ty`.
fn to_param(ty: Ty, v: V) -> std::result::Result<Box<dyn ToSql + Sync>, String> {
    Ok(match (ty, v) {
        (Ty::I4, V::Int4(i)) => Box::new(i),
        (Ty::I8 | Ty::Ts, V::Int8(i) | V::Timestamp(i)) => Box::new(i),
        (Ty::Ch(_) | Ty::Vc(_), V::Str(s)) => Box::new(s),
        (Ty::I4, V::Null) => Box::new(None::<i32>),
        (Ty::I8 | Ty::Ts, V::Null) => Box::new(None::<i64>),
        (Ty::Ch(_) | Ty::Vc(_), V::Null) => Box::new(None::<String>),
        (ty, v) => return Err(format!("value {v:?} does not fit a column of type {ty:?}")),
    })
}

/// Loads rows into PostgreSQL: rows are kept per table until [`Sink::commit`], which
/// writes each table's rows with one binary `COPY` in one transaction.
pub struct PgSink<'a> {
    client: &'a mut Client,
    pending: Vec<Vec<Vec<V>>>,
}

impl<'a> PgSink<'a> {
    /// A sink writing through `client`.
    pub fn new(client: &'a mut Client) -> PgSink<'a> {
        PgSink {
            client,
            pending: (0..TABLES.len()).map(|_| Vec::new()).collect(),
        }
    }
}

impl Sink for PgSink<'_> {
    fn row(&mut self, t: T, values: Vec<V>) -> Result<()> {
        let spec = TABLES[t as usize];
        if values.len() != spec.columns.len() {
            return Err(BenchError::peer(
                ENGINE,
                format!("loading {}", spec.name),
                format!("{} values for {} columns", values.len(), spec.columns.len()),
            ));
        }
        self.pending[t as usize].push(values);
        Ok(())
    }

    fn commit(&mut self) -> Result<()> {
        if self.pending.iter().all(Vec::is_empty) {
            return Ok(());
        }
        let e =
            |what: String| move |e: postgres::Error| BenchError::peer(ENGINE, what, describe(&e));
        let mut tx = self
            .client
            .transaction()
            .map_err(e("BEGIN of a load batch".into()))?;
        for (i, rows) in self.pending.iter_mut().enumerate() {
            if rows.is_empty() {
                continue;
            }
            let spec = TABLES[i];
            let what = format!("loading {}", spec.name);
            let types: Vec<Type> = spec.columns.iter().map(|c| pg_type(c.1).1).collect();
            let writer = tx
                .copy_in(&format!("COPY {} FROM STDIN (FORMAT binary)", spec.name))
                .map_err(e(what.clone()))?;
            let mut w = BinaryCopyInWriter::new(writer, &types);
            for row in rows.drain(..) {
                let params = row
                    .into_iter()
                    .zip(spec.columns)
                    .map(|(v, c)| to_param(c.1, v))
                    .collect::<std::result::Result<Vec<_>, String>>()
                    .map_err(|m| BenchError::peer(ENGINE, what.clone(), m))?;
                let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| &**p).collect();
                w.write(&refs).map_err(e(what.clone()))?;
            }
            w.finish().map_err(e(what))?;
        }
        tx.commit().map_err(e("COMMIT of a load batch".into()))
    }
}

/// TPC-C's tables on a private server.
pub struct PgTpcc {
    db: PgDb<TpccStatements>,
}

impl PgTpcc {
    /// Starts a server for `setup`, creates the nine tables and loads `warehouses`
    /// warehouses at `scale` (NURand constants `k`, `seed`), calling `progress` with the
    /// rows loaded since its last call.
    ///
    /// # Errors
    /// [`BenchError::Peer`] if the server fails to start or a statement fails.
    pub fn create(
        setup: &PeerSetup<'_>,
        warehouses: u32,
        scale: &TpccScale,
        k: &NuRandConstants,
        seed: u64,
        progress: &mut dyn FnMut(u64),
    ) -> Result<PgTpcc> {
        let server = start_server(setup)?;
        let mut c = server.connect()?;
        let ddl: String = TABLES.iter().map(|t| postgres_ddl(t)).collect();
        c.batch_execute(&ddl)
            .map_err(|e| BenchError::peer(ENGINE, "creating the TPC-C tables", describe(&e)))?;
        load::load(
            &mut PgSink::new(&mut c),
            scale,
            warehouses,
            k,
            seed,
            progress,
        )?;
        c.batch_execute("VACUUM ANALYZE")
            .map_err(|e| BenchError::peer(ENGINE, "VACUUM ANALYZE", describe(&e)))?;
        drop(c);
        let db = PgDb::open(server, setup.workers, |_, c| TpccStatements::prepare(c))?;
        Ok(PgTpcc { db })
    }

    /// The server and connections (for tests).
    pub fn db(&self) -> &PgDb<TpccStatements> {
        &self.db
    }
}

impl TpccPeer for PgTpcc {
    fn new_order(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        inp: &NewOrderIn,
        now: i64,
    ) -> Result<Option<NewOrderEnd>> {
        let r = self.db.run(thread_idx, ctx, "tpcc new_order", |c, s| {
            tpcc_txns::new_order(c, s, inp, now)
        })?;
        Ok(r.map(|r| match r {
            Ok(()) => NewOrderEnd::Committed,
            Err(UnusedItem) => NewOrderEnd::UnusedItem,
        }))
    }

    fn payment(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        inp: &PaymentIn,
        h_id: i64,
        now: i64,
    ) -> Result<bool> {
        let r = self.db.run(thread_idx, ctx, "tpcc payment", |c, s| {
            tpcc_txns::payment(c, s, inp, h_id, now).map(Ok::<_, ()>)
        })?;
        Ok(r.is_some())
    }

    fn order_status(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        inp: &OrderStatusIn,
    ) -> Result<bool> {
        let r = self.db.run(thread_idx, ctx, "tpcc order_status", |c, s| {
            tpcc_txns::order_status(c, s, inp).map(Ok::<_, ()>)
        })?;
        Ok(r.is_some())
    }

    fn delivery(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        inp: &DeliveryIn,
        now: i64,
    ) -> Result<bool> {
        let r = self.db.run(thread_idx, ctx, "tpcc delivery", |c, s| {
            tpcc_txns::delivery(c, s, inp, now).map(Ok::<_, ()>)
        })?;
        Ok(r.is_some())
    }

    fn stock_level(
        &self,
        thread_idx: usize,
        ctx: &mut ThreadCtx,
        inp: &StockLevelIn,
    ) -> Result<bool> {
        let r = self.db.run(thread_idx, ctx, "tpcc stock_level", |c, s| {
            tpcc_txns::stock_level(c, s, inp).map(Ok::<_, ()>)
        })?;
        Ok(r.is_some())
    }

    fn snapshot(&self) -> Result<Snapshot> {
        let mut g = self.db.conn(0)?;
        snapshot(&mut g.client)
    }
}

/// Reads the [`Snapshot`] in one REPEATABLE READ transaction (one view of the database),
/// with the same queries as SQLite's (`GROUP BY` per district, order, customer).
///
/// # Errors
/// [`BenchError::Peer`] if a query fails or returns other types than expected.
pub fn snapshot(c: &mut Client) -> Result<Snapshot> {
    let mut tx = c
        .build_transaction()
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .map_err(|e| BenchError::peer(ENGINE, "BEGIN of the snapshot", describe(&e)))?;
    let s = sql_snapshot::read(Dialect::Postgres, |sql, each| {
        let e = |err: postgres::Error| BenchError::peer(ENGINE, sql, describe(&err));
        let mut vals = Vec::new();
        for r in &tx.query(sql, &[]).map_err(e)? {
            vals.clear();
            for i in 0..r.len() {
                vals.push(r.try_get::<_, i64>(i).map_err(e)?);
            }
            each(&vals)?;
        }
        Ok(())
    })?;
    tx.commit()
        .map_err(|e| BenchError::peer(ENGINE, "COMMIT of the snapshot", describe(&e)))?;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddl_has_every_table_key_and_index() {
        let ddl = postgres_ddl(&super::super::super::super::tpcc::schema::CUSTOMER);
        assert!(
            ddl.starts_with("CREATE TABLE customer (c_w_id int4 NOT NULL,"),
            "{ddl}"
        );
        assert!(ddl.contains("c_middle char(2) NOT NULL"));
        assert!(ddl.contains("c_since int8 NOT NULL"));
        assert!(ddl.contains("PRIMARY KEY (c_w_id, c_d_id, c_id))"));
        assert!(ddl.contains(
            "CREATE INDEX customer_by_name ON customer (c_w_id, c_d_id, c_last, c_first)"
        ));
        let orders = postgres_ddl(&super::super::super::super::tpcc::schema::ORDERS);
        assert!(orders.contains("o_carrier_id int4,"), "{orders}");
    }

    #[test]
    fn values_must_fit_their_columns() {
        assert!(to_param(Ty::I4, V::Int4(3)).is_ok());
        assert!(to_param(Ty::Ts, V::Timestamp(3)).is_ok());
        assert!(to_param(Ty::Vc(3), V::Null).is_ok());
        let e = to_param(Ty::I4, V::Str("x".into())).err().unwrap();
        assert!(e.contains("does not fit"), "{e}");
    }
}
