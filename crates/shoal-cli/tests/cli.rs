//! End-to-end tests of the `shoal` binary: argument errors, and short real runs of
//! `shoal bench buffer`, `shoal bench log`, `shoal bench recovery` and `shoal bench btree`
//! whose standard output must be JSON lines and nothing else.

use std::process::{Command, Output};

fn shoal(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args(args)
        .output()
        .expect("run the shoal binary")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The JSON lines of a successful workload run of `bench` on Shoal then SQLite at two
/// thread counts, each checked for its engine, a passing consistency check and some work.
fn workload_lines(o: &Output, bench: &str) -> Vec<serde_json::Value> {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    for (l, engine) in lines.iter().zip(["shoal", "shoal", "sqlite", "sqlite"]) {
        assert_eq!(l["bench"], bench);
        assert_eq!(l["engine"], engine);
        assert_eq!(l["consistency"], "pass");
        assert!(l["ops"].as_u64().unwrap() > 0);
    }
    lines
}

#[test]
fn bench_help_lists_the_benchmarks_and_workloads() {
    let o = shoal(&["bench", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    for name in [
        "buffer", "log", "recovery", "btree", "lock", "select1", "tpcb", "insert", "tpcc",
    ] {
        assert!(out.contains(name), "{name} missing from:\n{out}");
    }
}

/// A workload on both engines with a kept --db-dir: JSON lines for both engines, a passing
/// consistency check, and a Shoal database that `shoal verify` accepts afterwards.
#[test]
fn tpcb_runs_on_both_engines_and_leaves_a_verifiable_database() {
    let dir = tempfile::tempdir().unwrap();
    let db_dir = dir.path().join("dbs");
    let o = shoal(&[
        "bench",
        "tpcb",
        "--engine",
        "shoal,sqlite",
        "--threads",
        "1,2",
        "--duration-s",
        "0.3",
        "--warmup-s",
        "0",
        "--json",
        "--db-dir",
        db_dir.to_str().unwrap(),
    ]);
    let lines = workload_lines(&o, "tpcb");
    assert!(lines[0]["buffer_hit_ratio"].as_f64().is_some());
    assert!(db_dir.join("sqlite/bench.sqlite").exists());
    let o = shoal(&["verify", db_dir.join("shoal").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// TPC-C on both engines, briefly, at the spec's cardinalities for 1 warehouse (about 15 s
/// in a debug build, most of it the two loads): JSON lines for both engines with the
/// transaction mix and a passing consistency check.
#[test]
fn tpcc_runs_briefly_on_both_engines() {
    let o = shoal(&[
        "bench",
        "tpcc",
        "--engine",
        "shoal,sqlite",
        "--warehouses",
        "1",
        "--variant",
        "standard",
        "--threads",
        "1,2",
        "--duration-s",
        "0.3",
        "--warmup-s",
        "0",
        "--json",
    ]);
    for l in workload_lines(&o, "tpcc") {
        assert_eq!(l["variant"], "standard");
        assert!(l["mix_payment"].as_f64().unwrap() > 0.0, "{l}");
    }
    let o = shoal(&["bench", "tpcc", "--warehouses", "0"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(stderr(&o).contains("--warehouses"), "{}", stderr(&o));
}

#[test]
fn bad_arguments_are_named_and_fail() {
    for (args, code, needle) in [
        (&["bench", "buffer", "--threads", "0"][..], 2, "--threads"),
        (&["bench", "buffer", "--threads", "x"][..], 2, "--threads"),
        (&["bench", "nosuch"][..], 2, "nosuch"),
        (
            &["bench", "select1", "--engine", "oracle"][..],
            1,
            "--engine",
        ),
        (
            &["bench", "tpcb", "--durability", "sometimes"][..],
            2,
            "--durability",
        ),
        (&["bench", "insert", "--size", "huge"][..], 2, "--size"),
        (&["bench", "tpcb", "--variant", "nope"][..], 1, "--variant"),
        (
            &[
                "bench",
                "buffer",
                "--db-dir",
                "/nonexistent-shoal-parent/db",
            ][..],
            1,
            "--db-dir",
        ),
        (
            &["bench", "buffer", "--pool-size", "64KiB"][..],
            1,
            "--pool-size",
        ),
        (&["bench", "log", "--variant", "nosuch"][..], 2, "--variant"),
        (
            &["bench", "log", "--segment-size", "0"][..],
            1,
            "--segment-size",
        ),
        (
            &["bench", "log", "--db-dir", "/nonexistent-shoal-parent/db"][..],
            1,
            "--db-dir",
        ),
        (
            &["bench", "recovery", "--log-size", "1KiB"][..],
            1,
            "--log-size",
        ),
        (
            &[
                "bench",
                "recovery",
                "--keys",
                "1000000",
                "--pool-size",
                "16MiB",
            ][..],
            1,
            "--pool-size",
        ),
        (
            &["bench", "recovery", "--duration-s", "1"][..],
            2,
            "--duration-s",
        ),
        (&["bench", "btree", "--keys", "10"][..], 1, "--keys"),
        (
            &["bench", "btree", "--variant", "lookup"][..],
            2,
            "--variant",
        ),
        (
            &[
                "bench",
                "btree",
                "--variant",
                "lookup-hot-root",
                "--hot-keys",
                "100",
                "--pool-size",
                "16MiB",
                "--threads",
                "1",
                "--duration-s",
                "0.1",
            ][..],
            1,
            "--hot-keys",
        ),
    ] {
        let o = shoal(args);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(needle), "{args:?}: {e}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn help_works_for_every_command() {
    for args in [
        &["--help"][..],
        &["bench", "--help"],
        &["bench", "buffer", "--help"],
        &["bench", "log", "--help"],
        &["bench", "recovery", "--help"],
        &["bench", "btree", "--help"],
    ] {
        let o = shoal(args);
        assert!(o.status.success(), "{args:?}");
        assert!(String::from_utf8_lossy(&o.stdout).contains("Usage: shoal"));
    }
}

/// The short-run settings of the benchmarks that sweep thread counts.
const SWEEP_ARGS: &[&str] = &["--threads", "1,2", "--duration-s", "0.1", "--warmup-s", "0"];

/// Runs `shoal bench <bench> <args> --threads 1,2 --duration-s 0.1 --warmup-s 0 --json --out
/// --db-dir` and checks what every benchmark promises (see [`json_run_with`]).
fn json_run(bench: &str, args: &[&str]) -> (Vec<serde_json::Value>, String) {
    let mut all = SWEEP_ARGS.to_vec();
    all.extend_from_slice(args);
    json_run_with(bench, &all)
}

/// Runs `shoal bench <bench> <args> --json --out --db-dir` and checks what every benchmark
/// promises: success, only JSON lines on stdout, each with the required fields, the bench
/// name and some operations, `results.jsonl` equal to stdout, and the temporary databases
/// removed. Returns the lines and `report.md`.
fn json_run_with(bench: &str, args: &[&str]) -> (Vec<serde_json::Value>, String) {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("out");
    let db_dir = tmp.path().join("db");
    let mut all = vec![
        "bench",
        bench,
        "--json",
        "--out",
        out_dir.to_str().unwrap(),
        "--db-dir",
        db_dir.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let o = shoal(&all);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8(o.stdout).unwrap();
    let mut lines = Vec::new();
    for line in stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        for key in shoal_bench::measurement::REQUIRED_JSON_FIELDS {
            assert!(v.get(key).is_some(), "{key} missing in {line}");
        }
        assert_eq!(v["bench"], bench);
        assert!(v["ops"].as_u64().unwrap() > 0, "{line}");
        lines.push(v);
    }
    let results = std::fs::read_to_string(out_dir.join("results.jsonl")).unwrap();
    assert_eq!(results, stdout);
    let report = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    // The temporary databases are removed after the run.
    assert_eq!(std::fs::read_dir(&db_dir).unwrap().count(), 0);
    (lines, report)
}

#[test]
fn buffer_json_run_prints_only_json_lines() {
    let (lines, report) = json_run("buffer", &["--pool-size", "1MiB", "--page-size", "4096"]);
    assert_eq!(lines.len(), 4 * 2);
    assert!(report.contains("| miss-random | shoal | 2 |"), "{report}");
}

#[test]
fn log_json_run_prints_only_json_lines_with_fdatasync_per_commit() {
    let (lines, report) = json_run(
        "log",
        &["--segment-size", "1MiB", "--log-buffer-size", "256KiB"],
    );
    // insert, insert-lane, commit-full, commit-lazy at 1 and 2 threads.
    assert_eq!(lines.len(), 4 * 2);
    for v in &lines {
        assert!(v["engine_stats"]["syncs"].is_u64(), "{v}");
        let commits = !v["variant"].as_str().unwrap().starts_with("insert");
        assert_eq!(v.get("fdatasync_per_commit").is_some(), commits, "{v}");
        if v["variant"] == "commit-full" {
            let f = v["fdatasync_per_commit"].as_f64().unwrap();
            assert!(f > 0.0, "{v}");
        }
    }
    assert!(report.contains("| commit-full | shoal | 2 |"), "{report}");
    assert!(report.contains("fdatasync_per_commit="), "{report}");
}

#[test]
fn recovery_json_run_replays_the_log_it_was_asked_for() {
    let (lines, report) = json_run_with(
        "recovery",
        &[
            "--log-size",
            "4MiB",
            "--keys",
            "10000",
            "--pool-size",
            "64MiB",
            "--segment-size",
            "1MiB",
            "--log-buffer-size",
            "256KiB",
        ],
    );
    assert_eq!(lines.len(), 1);
    let v = &lines[0];
    assert_eq!(v["variant"], "kv-update");
    assert_eq!(v["threads"], 1);
    let stats = &v["engine_stats"];
    let log_bytes = stats["log_bytes"].as_u64().unwrap();
    assert!(
        (4 << 20..(4 << 20) + (64 << 10)).contains(&log_bytes),
        "{v}"
    );
    assert_eq!(v["ops"], stats["records"], "{v}");
    assert_eq!(stats["losers"], 1, "{v}");
    assert!(stats["redone"].as_u64().unwrap() > 10_000, "{v}");
    for key in ["analysis_us", "redo_us", "undo_us", "images_installed"] {
        assert!(stats[key].is_u64(), "{key} in {v}");
    }
    let rate = v["replay_mib_per_s"].as_f64().unwrap();
    assert!(rate > 0.0, "{v}");
    assert!(v["log_mib"].as_f64().unwrap() >= 4.0, "{v}");
    assert!(report.contains("| kv-update | shoal | 1 |"), "{report}");
    assert!(report.contains("replay_mib_per_s="), "{report}");
}

#[test]
fn btree_json_run_prints_only_json_lines_with_its_derived_fields() {
    let (lines, report) = json_run(
        "btree",
        &[
            "--keys",
            "5000",
            "--hot-keys",
            "10000",
            "--page-size",
            "4096",
            "--pool-size",
            "32MiB",
            "--inserts-per-txn",
            "100",
        ],
    );
    // Seven variants (the BTreeMap context included) at 1 and 2 threads.
    assert_eq!(lines.len(), 7 * 2);
    for v in &lines {
        let variant = v["variant"].as_str().unwrap();
        let context = variant == "lookup-resident-btreemap";
        assert_eq!(
            v["engine"],
            if context { "std-btreemap" } else { "shoal" },
            "{v}"
        );
        assert_eq!(v.get("root_latch_waits").is_some(), !context, "{v}");
        assert_eq!(
            v.get("vs_btreemap").is_some(),
            variant == "lookup-resident" || variant == "lookup-batch",
            "{v}"
        );
        if variant.starts_with("insert-") {
            assert!(v["leaf_fill"].as_f64().unwrap() > 0.0, "{v}");
            assert!(v["log_bytes_per_op"].as_f64().unwrap() > 0.0, "{v}");
        }
        if variant == "lookup-hot-root" {
            assert_eq!(v["config"]["loaded_height"], 3, "{v}");
            assert!(v["engine_stats"]["root_latch_waits"].is_u64(), "{v}");
        }
    }
    assert!(
        report.contains("| lookup-hot-root [lazy] | shoal | 2 |"),
        "{report}"
    );
    assert!(report.contains("vs_btreemap="), "{report}");
}

#[test]
fn log_thread_lists_are_per_variant_by_default() {
    let o = shoal(&[
        "bench",
        "log",
        "--variant",
        "insert",
        "--duration-s",
        "0.05",
        "--warmup-s",
        "0",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let threads: Vec<u64> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["threads"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(threads, [1, 2]);
}

/// `shoal inspect` and `shoal verify` on a database made with the library: verify exits 0
/// on a healthy database, and non-zero naming the page after a page is damaged on disk;
/// a missing directory is a clear error.
#[test]
fn verify_passes_a_healthy_database_and_reports_a_damaged_page() {
    use shoal::table::{Column, ColumnType, Row, TableDef};
    use std::os::unix::fs::FileExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let (catalog_root, table_root);
    let page_size = shoal::Options::default().page_size_bytes as u64;
    {
        let db = shoal::Database::create(&path, &shoal::Options::default()).unwrap();
        let mut tx = db.begin(shoal::IsolationLevel::ReadCommitted);
        let def = TableDef::new(
            "t",
            vec![
                Column::new("k", ColumnType::Int8),
                Column::new("v", ColumnType::Varchar(100)),
            ],
            &["k"],
        )
        .unwrap();
        let t = db.create_table(&mut tx, def).unwrap();
        for k in 0..2_000i64 {
            t.insert(
                &mut tx,
                &Row::new().with("k", k).with("v", format!("value {k}")),
            )
            .unwrap();
        }
        tx.commit().unwrap();
        catalog_root = db.catalog().root();
        table_root = t.primary_tree().root();
        db.close().unwrap();
    }
    let p = path.to_str().unwrap();
    let o = shoal(&["inspect", p]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("1 tables") && out.contains("2000"), "{out}");
    let o = shoal(&["verify", p]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("verify: OK"));
    let o = shoal(&["stats", p]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("buffer.hits ")
            && out.contains("log.syncs ")
            && out.contains("lock.deadlocks 0"),
        "{out}"
    );
    let damage = |page: shoal::PageId| {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(path.join("data.shoal"))
            .unwrap();
        f.write_all_at(&[0xA5; 512], page.0 * page_size + 1024)
            .unwrap();
    };
    // A table's page: the database opens, verify lists the problem and fails.
    damage(table_root);
    let o = shoal(&["verify", p]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("problem:") && out.contains(&format!("page {table_root}")),
        "{out}\n{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("verify found"), "{}", stderr(&o));
    // The catalog's root: the database cannot be opened; the error names the page.
    damage(catalog_root);
    let o = shoal(&["verify", p]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("page {catalog_root} is corrupt")),
        "{}",
        stderr(&o)
    );
    let o = shoal(&["verify", dir.path().join("nope").to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("no such database directory"),
        "{}",
        stderr(&o)
    );
}
