//! Tests of the MariaDB peer against a real private server: each workload runs for a
//! moment with two threads and passes its consistency check; a value corrupted through a
//! connection of the test's own is reported; the server has the chosen settings and is gone
//! after the state is dropped. When MariaDB is not installed each test prints
//! "skipped: …" and returns.

use super::super::testkit::{smoke, tpcc_smoke};
use super::super::{InsertPeer, PeerSetup};
use super::server::{self, Server};
use super::*;
use crate::runner::{MicroBench, ThreadCtx};
use crate::workload::insert::Insert;
use crate::workload::select1::Select1;
use crate::workload::tpcb::Tpcb;
use crate::workload::tpcc::{Tpcc, TpccScale};
use crate::workload::{Durability, WorkloadOptions};
use serde_json::Value as J;
use std::path::Path;

/// Whether MariaDB can run here; prints why not.
fn installed() -> bool {
    match Mariadb.availability() {
        Ok(()) => true,
        Err(why) => {
            eprintln!("skipped: {why}");
            false
        }
    }
}

/// Options for the peer, its database kept under `root` (so the test can reach its socket).
fn opts(root: &Path) -> WorkloadOptions {
    let mut o = WorkloadOptions::new(EngineKind::Mariadb);
    o.progress = false;
    o.db_dir = Some(root.to_path_buf());
    o
}

/// A connection of the test's own to the server whose database is kept under `root`.
fn own_conn(root: &Path) -> mysql::Conn {
    let socket = root.join(ENGINE).join("mysqld.sock");
    let o = mysql::OptsBuilder::new()
        .socket(Some(socket.to_string_lossy()))
        .user(Some("root"))
        .db_name(Some(server::DATABASE));
    mysql::Conn::new(o).unwrap()
}

fn failed(m: &serde_json::Map<String, J>) -> String {
    let c = m["consistency"].as_str().unwrap_or("").to_string();
    assert!(c.starts_with("FAIL"), "{c}");
    c
}

#[test]
fn select1_reads_every_key_and_counts_its_rows() {
    if !installed() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let b = Select1 {
        opts: opts(root.path()),
        scale: 1,
    };
    let state = smoke(&b, "select1");
    own_conn(root.path())
        .query_drop("DELETE FROM test WHERE a = 17")
        .unwrap();
    let c = failed(&Select1::after_point(&state).unwrap());
    assert!(c.contains("99999 rows"), "{c}");
}

#[test]
fn tpcb_keeps_its_sums_and_reports_a_corrupted_balance() {
    if !installed() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let b = Tpcb {
        opts: opts(root.path()),
        scale: 1,
    };
    let state = smoke(&b, "tpcb");
    let sums = match &state {
        crate::workload::tpcb::TpcbState::Peer { db, .. } => db.sums().unwrap(),
        _ => panic!("a peer state"),
    };
    assert!(sums[3] != 0 || sums == [0; 4], "{sums:?}");
    own_conn(root.path())
        .query_drop("UPDATE pgbench_branches SET bbalance = bbalance + 5 WHERE bid = 1")
        .unwrap();
    let c = failed(&Tpcb::after_point(&state).unwrap());
    assert!(c.contains("sum(bbalance)"), "{c}");
}

#[test]
fn insert_keeps_what_it_commits() {
    if !installed() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let b = Insert {
        opts: opts(root.path()),
    };
    let state = smoke(&b, "insert");
    let counts = state.counts().unwrap();
    assert!(
        counts.iter().all(|n| *n > 0 && n % 1_000 == 0),
        "{counts:?}"
    );
    own_conn(root.path())
        .query_drop("DELETE FROM insert_1 WHERE k = 0")
        .unwrap();
    let c = failed(&Insert::after_point(&state).unwrap());
    assert!(c.contains("insert_1"), "{c}");
}

#[test]
fn tpcc_standard_mix_is_consistent_and_a_corrupted_d_ytd_is_reported() {
    if !installed() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let b = Tpcc {
        opts: opts(root.path()),
        warehouses: 1,
        scale: TpccScale::tiny(),
    };
    let state = tpcc_smoke(&b);
    own_conn(root.path())
        .query_drop("UPDATE district SET d_ytd = d_ytd + 1 WHERE d_w_id = 1 AND d_id = 3")
        .unwrap();
    let failures = state.check().unwrap();
    assert!(
        failures.iter().any(|f| f.starts_with("condition 1:")),
        "{failures:?}"
    );
    assert!(failures.iter().any(|f| f.starts_with("condition 9:")));
}

#[test]
fn the_server_has_the_settings_and_is_gone_after_drop() {
    if !installed() {
        return;
    }
    let mut o = WorkloadOptions::new(EngineKind::Mariadb);
    o.durability = Durability::Full;
    let server = Server::start(&o, 20 << 20, 3).unwrap();
    let pid = server.pid().unwrap();
    let socket = server.socket().to_path_buf();
    let mut c = server.connect(Some(server::DATABASE)).unwrap();
    let row: (u64, u64, String, u64) = c
        .query_first(
            "SELECT @@innodb_flush_log_at_trx_commit, @@innodb_buffer_pool_size, \
             @@tx_isolation, @@max_connections",
        )
        .unwrap()
        .unwrap();
    assert_eq!(row.0, 1);
    assert_eq!(row.1, 20 << 20);
    assert_eq!(row.2, "READ-COMMITTED");
    assert_eq!(row.3, 3 + server::SPARE_CONNECTIONS as u64);
    drop(c);
    drop(server);
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "mariadbd {pid} still runs"
    );
    assert!(!socket.exists(), "its directory is removed");
}

#[test]
fn a_lock_wait_timeout_is_rolled_back_and_counted_as_an_abort() {
    if !installed() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let o = opts(root.path());
    let setup = PeerSetup {
        opts: &o,
        pool_bytes: 16 << 20,
        workers: 1,
    };
    let db = insert::setup(&setup).unwrap();
    db.db
        .session(0)
        .unwrap()
        .conn
        .query_drop("SET SESSION innodb_lock_wait_timeout = 1")
        .unwrap();
    // Another transaction holds key 5 of worker 0's table uncommitted.
    let mut other = own_conn(root.path());
    other.query_drop("START TRANSACTION").unwrap();
    other
        .exec_drop("INSERT INTO insert_0 VALUES (?, ?)", (5i64, vec![0u8; 100]))
        .unwrap();
    let mut ctx = ThreadCtx::new(1, 0);
    assert!(!db.insert_batch(0, &mut ctx, 0, 1_000).unwrap());
    assert_eq!(ctx.aborts_of("lock_timeout"), 1);
    other.query_drop("ROLLBACK").unwrap();
    assert_eq!(db.count(0).unwrap(), 0, "the aborted batch left nothing");
    assert!(db.insert_batch(0, &mut ctx, 0, 1_050).unwrap());
    assert_eq!(db.count(0).unwrap(), 1_050);
}

#[test]
fn lock_errors_are_aborts_and_other_errors_are_not() {
    let e = |code| {
        mysql::Error::MySqlError(mysql::MySqlError {
            state: "40001".into(),
            message: "x".into(),
            code,
        })
    };
    assert_eq!(abort_cause(&e(ER_LOCK_DEADLOCK)), Some("deadlock"));
    assert_eq!(abort_cause(&e(ER_LOCK_WAIT_TIMEOUT)), Some("lock_timeout"));
    assert_eq!(abort_cause(&e(1062)), None);
    assert_eq!(server::buffer_pool_bytes(1), 8 << 20);
    assert_eq!(server::buffer_pool_bytes((64 << 20) + 1), 65 << 20);
    assert_eq!(server::flush_log_at_trx_commit(Durability::Lazy), 2);
    assert_eq!(
        load::insert_sql("t", 2, 2),
        "INSERT INTO t VALUES (?, ?), (?, ?)"
    );
}
