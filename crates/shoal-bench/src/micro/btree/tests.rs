//! Tests of the `btree` benchmark at a tiny scale.

use super::state::{derived_values, insert_key};
use super::*;
use crate::runner::NoObserver;
use std::collections::HashSet;

/// Small settings: 4 KiB pages, so that a few thousand keys make three levels.
fn small(db_dir: &std::path::Path) -> BtreeConfig {
    BtreeConfig {
        pool_size_bytes: 32 << 20,
        page_size_bytes: 4096,
        keys: 5000,
        hot_keys: 10_000,
        inserts_per_txn: 100,
        db_dir: Some(db_dir.to_path_buf()),
        progress: false,
    }
}

fn short_run() -> RunConfig {
    RunConfig {
        warmup_s: 0.0,
        duration_s: 0.1,
        seed: 3,
        ..RunConfig::default()
    }
}

#[test]
fn plan_uses_per_variant_defaults_and_adds_the_context() {
    let base = RunConfig::default();
    let p = plan(&[], None, None, &base).unwrap();
    let names: Vec<&str> = p.iter().map(|(v, _)| *v).collect();
    assert_eq!(names, VARIANTS);
    for (v, run) in &p {
        let expect: &[usize] = if *v == "lookup-hot-root" {
            &[1, 2, 4, 8, 16, 32, 64, 128]
        } else {
            &[1, 2]
        };
        assert_eq!(run.threads, expect, "{v}");
        let every = if *v == "scan" { 1 } else { 64 };
        assert_eq!(run.latency_sample_every, every, "{v}");
    }

    // lookup-resident brings its context along, before it, with its threads.
    let p = plan(
        &["scan".into(), "lookup-resident".into()],
        Some(&[3]),
        Some(5),
        &base,
    )
    .unwrap();
    let names: Vec<&str> = p.iter().map(|(v, _)| *v).collect();
    assert_eq!(names, [BTREEMAP_VARIANT, "lookup-resident", "scan"]);
    assert!(p
        .iter()
        .all(|(_, r)| r.threads == [3] && r.latency_sample_every == 5));
    // So does lookup-batch.
    let p = plan(&["lookup-batch".into()], None, None, &base).unwrap();
    let names: Vec<&str> = p.iter().map(|(v, _)| *v).collect();
    assert_eq!(names, [BTREEMAP_VARIANT, "lookup-batch"]);

    let e = plan(&["nope".into()], None, None, &base)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("variant") && e.contains("lookup-hot-root"),
        "{e}"
    );
}

#[test]
fn insert_keys_are_distinct_and_partitioned() {
    let mut seen = HashSet::new();
    for t in [0usize, 1, 300] {
        for n in 0..20_000 {
            for v in [Variant::InsertSequential, Variant::InsertRandom] {
                let k = insert_key(v, t, n);
                assert_eq!(k >> THREAD_KEY_SHIFT, t as u64);
                assert!(
                    seen.insert((v == Variant::InsertRandom, k)),
                    "{v:?} {t} {n}"
                );
            }
        }
    }
    // Random keys are scattered: consecutive inserts land far apart.
    let gaps = (0..1000)
        .filter(|&n| permute48(n).abs_diff(permute48(n + 1)) > 1 << 30)
        .count();
    assert!(gaps > 900, "{gaps}");
    assert_eq!(insert_key(Variant::InsertSequential, 2, 7), 2 << 48 | 7);
}

#[test]
fn values_depend_on_the_key() {
    let (mut a, mut b) = ([0u8; 96], [0u8; 96]);
    fill_value(&mut a, 5);
    fill_value(&mut b, 5);
    assert_eq!(a, b);
    fill_value(&mut b, 6);
    assert_ne!(a, b);
    let mut short = [0u8; 8];
    fill_value(&mut short, 5);
    assert_eq!(short, a[..8]);
}

#[test]
fn derived_values_per_variant() {
    let stats = BTreeMap::from([
        ("root_latch_waits".to_string(), 3),
        ("log_bytes_appended".to_string(), 4000),
    ]);
    let d = derived_values("insert-random", &stats, 40);
    assert_eq!(d["log_bytes_per_op"], 100.0);
    assert_eq!(d["root_latch_waits"], 3);
    assert!(derived_values("insert-random", &stats, 0)["log_bytes_per_op"].is_null());
    let d = derived_values("lookup-hot-root", &stats, 40);
    assert_eq!(d["root_latch_waits"], 3);
    assert!(d.get("log_bytes_per_op").is_none());
    assert!(derived_values(BTREEMAP_VARIANT, &BTreeMap::new(), 40).is_empty());
    for key in crate::measurement::REQUIRED_JSON_FIELDS {
        assert!(d.get(key).is_none());
    }
}

#[test]
fn settings_are_checked() {
    for (config, needle) in [
        (
            BtreeConfig {
                pool_size_bytes: 8192 * 4,
                ..BtreeConfig::default()
            },
            "--pool-size",
        ),
        (
            BtreeConfig {
                page_size_bytes: 5000,
                ..BtreeConfig::default()
            },
            "--page-size",
        ),
        (
            BtreeConfig {
                keys: 999,
                ..BtreeConfig::default()
            },
            "--keys",
        ),
        (
            BtreeConfig {
                hot_keys: 0,
                ..BtreeConfig::default()
            },
            "--hot-keys",
        ),
        (
            BtreeConfig {
                inserts_per_txn: 0,
                ..BtreeConfig::default()
            },
            "--inserts-per-txn",
        ),
    ] {
        let e = BtreeBench::new(config).unwrap_err().to_string();
        assert!(e.contains(needle), "{needle}: {e}");
    }
}

#[test]
fn a_tree_too_small_for_the_pool_or_not_three_levels_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let two_levels = BtreeBench::new(BtreeConfig {
        hot_keys: 500,
        ..small(tmp.path())
    })
    .unwrap();
    let e = run_micro(
        &two_levels,
        &["lookup-hot-root".into()],
        &short_run(),
        &mut NoObserver,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("--hot-keys") && e.contains("2 levels"), "{e}");

    let small_pool = BtreeBench::new(BtreeConfig {
        pool_size_bytes: 64 * 4096,
        keys: 20_000,
        ..small(tmp.path())
    })
    .unwrap();
    let e = run_micro(
        &small_pool,
        &["lookup-resident".into()],
        &short_run(),
        &mut NoObserver,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("--pool-size"), "{e}");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn every_variant_runs_and_checks_its_results() {
    let tmp = tempfile::tempdir().unwrap();
    let bench = BtreeBench::new(small(tmp.path())).unwrap();
    let p = plan(&[], Some(&[1, 2]), None, &short_run()).unwrap();
    let ms = run(&bench, &p, &mut NoObserver).unwrap();
    assert_eq!(ms.len(), VARIANTS.len() * 2);
    for m in &ms {
        assert!(m.ops > 0, "{} {}", m.variant, m.threads);
        assert!(m.aborts.is_empty());
        let engine = if m.variant == BTREEMAP_VARIANT {
            BTREEMAP_ENGINE
        } else {
            "shoal"
        };
        assert_eq!(m.engine, engine);
        assert_eq!(
            m.derived.contains_key("root_latch_waits"),
            m.variant != BTREEMAP_VARIANT
        );
    }
    let find = |v: &str, threads: usize| {
        ms.iter()
            .find(|m| m.variant == v && m.threads == threads)
            .unwrap()
    };
    // The lookups are answered from the pool; the ratio to the BTreeMap is reported.
    for threads in [1, 2] {
        let m = find("lookup-resident", threads);
        assert_eq!(m.engine_stats["misses"], 0, "{:?}", m.engine_stats);
        let b = find(BTREEMAP_VARIANT, threads);
        let ratio = m.derived["vs_btreemap"].as_f64().unwrap();
        assert!((ratio - m.ops_per_s / b.ops_per_s).abs() < 1e-9);
        // A batch is BATCH_KEYS lookups, and its ratio counts lookups.
        let batch = find("lookup-batch", threads);
        assert_eq!(batch.engine_stats["misses"], 0, "{:?}", batch.engine_stats);
        let lookups = batch.derived["lookups_per_s"].as_f64().unwrap();
        assert!((lookups - batch.ops_per_s * BATCH_KEYS as f64).abs() < 1e-6);
        let ratio = batch.derived["vs_btreemap"].as_f64().unwrap();
        assert!((ratio - lookups / b.ops_per_s).abs() < 1e-9);
    }
    let hot = find("lookup-hot-root", 1);
    assert_eq!(hot.config["loaded_height"], HOT_HEIGHT);
    assert_eq!(hot.config["keys_loaded"], 10_000);
    // Every insert is in the tree after each point; sequential loads fill the leaves.
    let seq1 = find("insert-sequential", 1);
    let seq2 = find("insert-sequential", 2);
    assert!(seq2.derived["tree_keys"].as_u64().unwrap() >= seq1.ops + seq2.ops);
    assert!(
        seq1.derived["leaf_fill"].as_f64().unwrap() > 0.5,
        "{seq1:?}"
    );
    assert!(seq2.derived["log_bytes_per_op"].as_f64().unwrap() > 16.0);
    let rnd = find("insert-random", 2);
    assert!(rnd.derived["tree_height"].as_u64().unwrap() >= 1);
    // An insert counted in the window may append after its closing snapshot: one per
    // thread at most.
    assert!(rnd.engine_stats["log_appends"] + 2 >= rnd.ops);
    // Each database directory is removed after its variant.
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}
