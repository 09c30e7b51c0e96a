//! Persistence across a SIGKILL (issue 6): a child process (this test binary, re-run with
//! `SHOAL_KILL_CHILD_DIR` set) inserts rows in transactions and reports each commit on
//! standard output as soon as `commit` returns; the parent kills it with SIGKILL mid-run,
//! reopens the database (restart recovery) and finds every reported row, a table that
//! verifies, and no row of an uncommitted transaction.

use shoal::table::{Column, ColumnType, IndexDef, Row, TableDef, Value};
use shoal::{Database, IsolationLevel, Options};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

const CHILD_ENV: &str = "SHOAL_KILL_CHILD_DIR";
const PER_TXN: i64 = 20;

fn options() -> Options {
    Options {
        pool_size_bytes: 64 * 8192, // small: pages are written and evicted during the run
        ..Options::default()
    }
}

fn def() -> TableDef {
    TableDef::new(
        "item",
        vec![
            Column::new("id", ColumnType::Int8),
            Column::new("grp", ColumnType::Int4).not_null(),
            Column::new("payload", ColumnType::Varchar(300)).not_null(),
        ],
        &["id"],
    )
    .unwrap()
    .with_index(IndexDef::new("by_grp", ["grp"]))
    .unwrap()
}

/// The child: creates the database, then commits batches of rows forever, printing
/// `committed <last id>` after each commit returns (full durability: the commit is on disk).
fn child(dir: &str) {
    let db = Database::create(dir, &options()).unwrap();
    let mut tx = db.begin(IsolationLevel::ReadCommitted);
    let t = db.create_table(&mut tx, def()).unwrap();
    tx.commit().unwrap();
    println!("ready");
    let mut out = std::io::stdout();
    for batch in 0.. {
        let mut tx = db.begin(IsolationLevel::ReadCommitted);
        for i in 0..PER_TXN {
            let id = batch * PER_TXN + i;
            let row = Row::new()
                .with("id", id)
                .with("grp", (id % 13) as i32)
                .with("payload", format!("{id:>8}").repeat(30));
            t.insert(&mut tx, &row).unwrap();
        }
        tx.commit().unwrap();
        writeln!(out, "committed {}", batch * PER_TXN + PER_TXN - 1).unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn committed_rows_survive_sigkill() {
    if let Ok(dir) = std::env::var(CHILD_ENV) {
        child(&dir);
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let mut proc = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "committed_rows_survive_sigkill", "--nocapture"])
        .env(CHILD_ENV, &dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(proc.stdout.take().unwrap()).lines();
    let mut last = -1i64;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(n) = line.strip_prefix("committed ") {
            last = n.trim().parse().unwrap();
            if last >= 60 * PER_TXN {
                break;
            }
        }
    }
    proc.kill().unwrap(); // SIGKILL
    proc.wait().unwrap();
    // Commits the parent did not read about may also have happened: count them too.
    for line in lines.map_while(Result::ok) {
        if let Some(n) = line.strip_prefix("committed ") {
            last = n.trim().parse().unwrap();
        }
    }
    assert!(
        last >= 60 * PER_TXN - 1,
        "the child committed too little: {last}"
    );

    let db = Database::open(&dir, &options()).unwrap();
    let mut tx = db.begin(IsolationLevel::ReadCommitted);
    let t = db.table(&mut tx, "item").unwrap();
    for id in 0..=last {
        let row = t.get(&mut tx, &[Value::Int8(id)]).unwrap();
        assert!(
            row.is_some(),
            "committed row {id} lost (last reported {last})"
        );
    }
    tx.commit().unwrap();
    let (rows, problems) = t.verify().unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    // Whole transactions only: no partial batch beyond the last commit the child made.
    assert_eq!(
        rows % PER_TXN as u64,
        0,
        "{rows} rows: a partial transaction survived"
    );
    assert!(rows as i64 > last);
    let report = db.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    db.close().unwrap();
}
