//! Tests of the PostgreSQL peer on a real private server: each workload at a small scale
//! with two threads through the workload's `MicroBench` (the path `shoal bench` takes)
//! passes its consistency check; a value corrupted through our own connection is reported;
//! the server and its directory are gone after drop; the pgbench cross-check reports tps.
//! Without PostgreSQL installed each test prints "skipped: ..." and returns.

use super::super::testkit::{smoke, tpcc_smoke};
use super::*;
use crate::workload::insert::Insert;
use crate::workload::select1::Select1;
use crate::workload::tpcb::{check_sums, Tpcb};
use crate::workload::tpcc::{Tpcc, TpccScale};
use crate::workload::WorkloadOptions;

/// Whether PostgreSQL can run here; prints why not.
fn installed() -> bool {
    match Postgres.availability() {
        Ok(()) => true,
        Err(why) => {
            eprintln!("skipped: {why}");
            false
        }
    }
}

fn opts() -> WorkloadOptions {
    let mut o = WorkloadOptions::new(EngineKind::Postgres);
    o.progress = false;
    o
}

#[test]
fn select1_runs_consistently_with_two_threads() {
    if !installed() {
        return;
    }
    smoke(
        &Select1 {
            opts: opts(),
            scale: 1,
        },
        "select1",
    );
}

#[test]
fn tpcb_runs_consistently_with_two_threads() {
    if !installed() {
        return;
    }
    smoke(
        &Tpcb {
            opts: opts(),
            scale: 1,
        },
        "tpcb",
    );
}

#[test]
fn insert_runs_consistently_with_two_threads() {
    if !installed() {
        return;
    }
    smoke(&Insert { opts: opts() }, "insert");
}

#[test]
fn tpcc_standard_mix_runs_consistently_with_two_threads() {
    if !installed() {
        return;
    }
    let b = Tpcc {
        opts: opts(),
        warehouses: 2,
        scale: TpccScale::tiny(),
    };
    tpcc_smoke(&b);
}

fn setup_for(o: &WorkloadOptions, workers: usize, pool_bytes: u64) -> PeerSetup<'_> {
    PeerSetup {
        opts: o,
        pool_bytes,
        workers,
    }
}

#[test]
fn corrupted_values_are_reported() {
    if !installed() {
        return;
    }
    let o = opts();
    // tpcb: one branch balance off.
    let tpcb = tpcb::PgTpcb::create(&setup_for(&o, 1, 16 << 20), 1).unwrap();
    assert!(check_sums(tpcb.sums().unwrap()).is_empty());
    tpcb.db()
        .conn(0)
        .unwrap()
        .client
        .execute(
            "UPDATE pgbench_branches SET bbalance = bbalance + 5 WHERE bid = 1",
            &[],
        )
        .unwrap();
    let f = check_sums(tpcb.sums().unwrap());
    assert!(f.len() == 1 && f[0].contains("sum(bbalance) 5"), "{f:?}");
    drop(tpcb);

    // tpcc: one D_YTD off breaks conditions 1 and 9.
    let scale = TpccScale::tiny();
    let k = crate::workload::tpcc::gen::NuRandConstants::random(
        &mut <rand::rngs::SmallRng as rand::SeedableRng>::seed_from_u64(1),
    );
    let tpcc =
        tpcc::PgTpcc::create(&setup_for(&o, 1, 16 << 20), 1, &scale, &k, 1, &mut |_| {}).unwrap();
    let delivered = i64::from(scale.orders - scale.new_orders);
    assert_eq!(
        tpcc.snapshot().unwrap().check(delivered),
        Vec::<String>::new()
    );
    tpcc.db()
        .conn(0)
        .unwrap()
        .client
        .execute(
            "UPDATE district SET d_ytd = d_ytd + 1 WHERE d_w_id = 1 AND d_id = 3",
            &[],
        )
        .unwrap();
    let f = tpcc.snapshot().unwrap().check(delivered);
    assert!(f.iter().any(|x| x.starts_with("condition 1:")), "{f:?}");
    assert!(f.iter().any(|x| x.starts_with("condition 9:")), "{f:?}");
}

#[test]
fn transactions_commit_roll_back_and_count_deadlocks() {
    if !installed() {
        return;
    }
    let o = opts();
    let server = start_server(&setup_for(&o, 2, 16 << 20)).unwrap();
    server
        .connect()
        .unwrap()
        .batch_execute(
            "CREATE TABLE t(k int4 PRIMARY KEY, v int4); INSERT INTO t VALUES (1, 0), (2, 0)",
        )
        .unwrap();
    let db = PgDb::open(server, 2, |_, c| {
        c.prepare("UPDATE t SET v = v + 1 WHERE k = $1")
    })
    .unwrap();
    let mut ctx = crate::runner::ThreadCtx::new(1, 0);
    let r = db
        .run(0, &mut ctx, "test", |c, st| {
            c.execute(st, &[&1i32]).at("UPDATE t")?;
            Ok(Ok::<_, ()>(()))
        })
        .unwrap();
    assert_eq!(r, Some(Ok(())));
    let r = db
        .run(0, &mut ctx, "test", |c, st| {
            c.execute(st, &[&2i32]).at("UPDATE t")?;
            Ok(Err::<(), _>("on purpose"))
        })
        .unwrap();
    assert_eq!(r, Some(Err("on purpose")));
    let v: Vec<i32> = db
        .conn(1)
        .unwrap()
        .client
        .query("SELECT v FROM t ORDER BY k", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(v, vec![1, 0], "the second update was rolled back");

    // Two workers lock rows 1 and 2 in opposite orders: one is the deadlock victim.
    let barrier = std::sync::Barrier::new(2);
    let outcomes: Vec<(Option<std::result::Result<(), ()>>, u64)> = std::thread::scope(|s| {
        let handles: Vec<_> = [(1i32, 2i32), (2, 1)]
            .into_iter()
            .enumerate()
            .map(|(i, (a, b))| {
                let (db, barrier) = (&db, &barrier);
                s.spawn(move || {
                    let mut ctx = crate::runner::ThreadCtx::new(1, i);
                    let r = db
                        .run(i, &mut ctx, "test", |c, st| {
                            c.execute(st, &[&a]).at("UPDATE first")?;
                            barrier.wait();
                            c.execute(st, &[&b]).at("UPDATE second")?;
                            Ok(Ok(()))
                        })
                        .unwrap();
                    (r, ctx.aborts_of("deadlock"))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let victims = outcomes.iter().filter(|(r, _)| r.is_none()).count();
    let counted: u64 = outcomes.iter().map(|(_, n)| n).sum();
    assert_eq!((victims, counted), (1, 1), "{outcomes:?}");

    // Any other error stops the run, naming the statement.
    let e = db
        .run(0, &mut ctx, "test", |c, _| {
            c.batch_execute("SELECT * FROM no_such_table")
                .at("SELECT no_such_table")?;
            Ok(Ok::<_, ()>(()))
        })
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("postgres: test: SELECT no_such_table") && e.contains("42P01"),
        "{e}"
    );
    // The connection is usable after it.
    assert!(db
        .run(0, &mut ctx, "test", |_, _| Ok(Ok::<_, ()>(())))
        .is_ok());
}

#[test]
fn the_server_is_gone_after_drop() {
    if !installed() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let mut o = opts();
    o.db_dir = Some(root.path().to_path_buf());
    let peer = select1::PgSelect1::create(&setup_for(&o, 1, 16 << 20), 10).unwrap();
    let pid = peer.db().server().pid().unwrap();
    let socket = peer
        .db()
        .server()
        .socket_dir()
        .join(format!(".s.PGSQL.{}", server::PORT));
    assert!(socket.exists());
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    assert_eq!(peer.count().unwrap(), 10);
    drop(peer);
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "server {pid} still runs"
    );
    assert!(!socket.exists(), "the socket is left");
    // A kept directory stays, with the stopped cluster in it.
    assert!(root.path().join("postgres/data/PG_VERSION").exists());

    // A server that fails to start is reported with its log, and nothing is left running.
    let bad = tempfile::tempdir().unwrap();
    let dir = crate::workload::dbdir::DbDir::new(Some(bad.path()), ENGINE).unwrap();
    let e = PgServer::start(
        dir,
        &ServerSettings {
            shared_buffers: 1 << 60,
            durability: crate::workload::Durability::Lazy,
            connections: 1,
        },
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("starting the server"), "{e}");
}

#[test]
fn pgbench_cross_check_reports_tps() {
    if !installed() {
        return;
    }
    let points = pgbench::pgbench_cross_check(&opts(), 1, &[1], 1).unwrap();
    assert_eq!(points.len(), 2);
    assert_eq!(points[0].script, "tpcb-like");
    assert!(
        points.iter().all(|p| p.tps > 0.0 && p.clients == 1),
        "{points:?}"
    );
}

#[test]
fn availability_names_the_install_command() {
    // Whatever is installed here, the message for missing binaries is the one `shoal bench`
    // prints when it skips the engine.
    let e = server::Binaries::find_in(&[]).unwrap_err();
    assert!(e.contains("run peers/install.sh"), "{e}");
    assert_eq!(
        super::super::in_process(EngineKind::Postgres).map(|p| p.kind()),
        Some(EngineKind::Postgres)
    );
}

#[test]
fn an_unreachable_directory_is_explained() {
    if !installed() {
        return;
    }
    if server::run_as().unwrap().is_none() {
        eprintln!("skipped: not root, the server runs as this user");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let root = tempfile::tempdir().unwrap();
    let private = root.path().join("private");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
    let dir = crate::workload::dbdir::DbDir::new(Some(&private), ENGINE).unwrap();
    let e = PgServer::start(
        dir,
        &ServerSettings {
            shared_buffers: 16 << 20,
            durability: crate::workload::Durability::Lazy,
            connections: 1,
        },
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("initdb") && e.contains("o+x"), "{e}");
}
