//! End-to-end tests of the `shoal` binary: argument errors, and short real runs of
//! `shoal bench buffer` and `shoal bench log` whose standard output must be JSON lines and
//! nothing else.

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

#[test]
fn bench_without_a_name_lists_the_benchmarks() {
    let o = shoal(&["bench"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("name a benchmark") && e.contains("buffer") && e.contains("log"),
        "{e}"
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn bad_arguments_are_named_and_fail() {
    for (args, code, needle) in [
        (&["bench", "buffer", "--threads", "0"][..], 2, "--threads"),
        (&["bench", "buffer", "--threads", "x"][..], 2, "--threads"),
        (&["bench", "nosuch"][..], 2, "nosuch"),
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
    ] {
        let o = shoal(args);
        assert!(o.status.success(), "{args:?}");
        assert!(String::from_utf8_lossy(&o.stdout).contains("Usage: shoal"));
    }
}

#[test]
fn buffer_json_run_prints_only_json_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("out");
    let db_dir = tmp.path().join("db");
    let o = shoal(&[
        "bench",
        "buffer",
        "--threads",
        "1,2",
        "--duration-s",
        "0.1",
        "--warmup-s",
        "0",
        "--pool-size",
        "1MiB",
        "--page-size",
        "4096",
        "--json",
        "--out",
        out_dir.to_str().unwrap(),
        "--db-dir",
        db_dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4 * 2, "{stdout}");
    for line in &lines {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        for key in shoal_bench::measurement::REQUIRED_JSON_FIELDS {
            assert!(v.get(key).is_some(), "{key} missing in {line}");
        }
        assert_eq!(v["bench"], "buffer");
        assert!(v["ops"].as_u64().unwrap() > 0, "{line}");
    }
    let results = std::fs::read_to_string(out_dir.join("results.jsonl")).unwrap();
    assert_eq!(results, stdout);
    let report = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(report.contains("| miss-random | 2 |"), "{report}");
    // The temporary databases are removed after the run.
    assert_eq!(std::fs::read_dir(&db_dir).unwrap().count(), 0);
}

#[test]
fn log_json_run_prints_only_json_lines_with_fdatasync_per_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let out_dir = tmp.path().join("out");
    let db_dir = tmp.path().join("db");
    let o = shoal(&[
        "bench",
        "log",
        "--threads",
        "1,2",
        "--duration-s",
        "0.1",
        "--warmup-s",
        "0",
        "--segment-size",
        "1MiB",
        "--log-buffer-size",
        "256KiB",
        "--json",
        "--out",
        out_dir.to_str().unwrap(),
        "--db-dir",
        db_dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    // insert, commit-full, commit-lazy at 1 and 2 threads.
    assert_eq!(lines.len(), 3 * 2, "{stdout}");
    for line in &lines {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        for key in shoal_bench::measurement::REQUIRED_JSON_FIELDS {
            assert!(v.get(key).is_some(), "{key} missing in {line}");
        }
        assert_eq!(v["bench"], "log");
        assert!(v["ops"].as_u64().unwrap() > 0, "{line}");
        assert!(v["engine_stats"]["syncs"].is_u64(), "{line}");
        let commits = v["variant"] != "insert";
        assert_eq!(v.get("fdatasync_per_commit").is_some(), commits, "{line}");
        if v["variant"] == "commit-full" {
            let f = v["fdatasync_per_commit"].as_f64().unwrap();
            assert!(f > 0.0, "{line}");
        }
    }
    let results = std::fs::read_to_string(out_dir.join("results.jsonl")).unwrap();
    assert_eq!(results, stdout);
    let report = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(report.contains("| commit-full | 2 |"), "{report}");
    assert!(report.contains("fdatasync_per_commit="), "{report}");
    // The temporary logs are removed after the run.
    assert_eq!(std::fs::read_dir(&db_dir).unwrap().count(), 0);
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
