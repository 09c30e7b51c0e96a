//! Tests of the command line: what each command and flag parses to, and the errors a
//! wrong argument gives.

use super::*;

/// The benchmark `args` (a whole command line) name, parsed.
fn bench<const N: usize>(args: [&str; N]) -> Option<Benchmark> {
    match Cli::try_parse_from(args).unwrap().command {
        Command::Bench(b) => b.bench,
        other => panic!("expected the bench command, got {other:?}"),
    }
}

#[test]
fn cli_definition_is_consistent() {
    <Cli as clap::CommandFactory>::command().debug_assert();
}

#[test]
fn defaults() {
    let Some(Benchmark::Buffer(a)) = bench(["shoal", "bench", "buffer"]) else {
        panic!("buffer expected")
    };
    assert!(a.variant.is_empty());
    assert_eq!(a.pool_size.bytes(), 64 << 20);
    assert_eq!(a.page_size, 8192);
    assert_eq!(a.common.threads, None);
    assert_eq!(a.common.duration_s.0, 5.0);
    assert_eq!(a.common.warmup_s.0, 1.0);
    assert!(!a.common.json);
}

#[test]
fn lists_and_sizes() {
    let Some(Benchmark::Buffer(a)) = bench([
        "shoal",
        "bench",
        "buffer",
        "--variant",
        "miss-random,hot-page-shared",
        "--threads",
        "1,4",
        "--pool-size",
        "16",
        "--page-size",
        "4096",
        "--duration-s",
        "0.5",
    ]) else {
        panic!("buffer expected")
    };
    assert_eq!(a.variant, ["miss-random", "hot-page-shared"]);
    assert_eq!(a.common.threads.as_ref().unwrap().0, vec![1, 4]);
    assert_eq!(a.pool_size.bytes(), 16 << 20);
    assert_eq!(a.page_size, 4096);
    assert_eq!(a.common.duration_s.0, 0.5);
}

#[test]
fn log_defaults_and_flags() {
    let Some(Benchmark::Log(a)) = bench(["shoal", "bench", "log"]) else {
        panic!("log expected")
    };
    assert!(a.variant.is_empty());
    assert_eq!(a.common.threads, None);
    assert_eq!(a.segment_size.bytes(), 64 << 20);
    assert_eq!(a.log_buffer_size.bytes(), 16 << 20);
    assert_eq!(a.lazy_flush_interval_ms, None);
    assert_eq!(a.log_io, "direct");

    let Some(Benchmark::Log(a)) = bench([
        "shoal",
        "bench",
        "log",
        "--variant",
        "commit-full,insert",
        "--threads",
        "1,8",
        "--segment-size",
        "1MiB",
        "--log-buffer-size",
        "256KiB",
        "--lazy-flush-interval-ms",
        "5",
        "--log-io",
        "buffered",
    ]) else {
        panic!("log expected")
    };
    assert_eq!(a.variant, ["commit-full", "insert"]);
    assert_eq!(a.common.threads.as_ref().unwrap().0, vec![1, 8]);
    assert_eq!(a.segment_size.bytes(), 1 << 20);
    assert_eq!(a.log_buffer_size.bytes(), 256 << 10);
    assert_eq!(a.lazy_flush_interval_ms, Some(5));
    assert_eq!(a.log_io, "buffered");

    for (args, needle) in [
        (vec!["--variant", "append"], "--variant"),
        (vec!["--segment-size", "1MB"], "--segment-size"),
        (vec!["--log-buffer-size", "x"], "--log-buffer-size"),
        (vec!["--threads", "0"], "--threads"),
        (vec!["--log-io", "mmap"], "--log-io"),
    ] {
        let mut argv = vec!["shoal", "bench", "log"];
        argv.extend(args.iter().copied());
        let e = Cli::try_parse_from(&argv).unwrap_err().to_string();
        assert!(e.contains(needle), "{argv:?}: {e}");
    }
}

#[test]
fn recovery_defaults_and_flags() {
    let Some(Benchmark::Recovery(a)) = bench(["shoal", "bench", "recovery"]) else {
        panic!("recovery expected")
    };
    assert_eq!(a.log_size.bytes(), 1 << 30);
    assert_eq!(a.keys, recovery::KEYS_DEFAULT);
    assert_eq!(a.value_bytes, 100);
    assert_eq!(a.pool_size.bytes(), 256 << 20);
    assert!(!a.cleaner && !a.drop_caches && !a.json);

    let Some(Benchmark::Recovery(a)) = bench([
        "shoal",
        "bench",
        "recovery",
        "--log-size",
        "4",
        "--keys",
        "1000",
        "--cleaner",
        "--drop-caches",
    ]) else {
        panic!("recovery expected")
    };
    assert_eq!(a.log_size.bytes(), 4 << 20);
    assert_eq!(a.keys, 1000);
    assert!(a.cleaner && a.drop_caches);
    let e = Cli::try_parse_from(["shoal", "bench", "recovery", "--threads", "1"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("--threads"), "{e}");
}

#[test]
fn btree_defaults_and_flags() {
    let Some(Benchmark::Btree(a)) = bench(["shoal", "bench", "btree"]) else {
        panic!("btree expected")
    };
    assert!(a.variant.is_empty());
    assert_eq!(a.common.threads, None);
    assert_eq!(a.pool_size.bytes(), 1 << 30);
    assert_eq!(a.page_size, 8192);
    assert_eq!(a.keys, 1_000_000);
    assert_eq!(a.hot_keys, 100_000);
    assert_eq!(a.inserts_per_txn, 1000);

    let Some(Benchmark::Btree(a)) = bench([
        "shoal",
        "bench",
        "btree",
        "--variant",
        "scan,lookup-hot-root",
        "--threads",
        "1,64",
        "--keys",
        "5000",
        "--hot-keys",
        "20000",
        "--inserts-per-txn",
        "10",
        "--pool-size",
        "32",
    ]) else {
        panic!("btree expected")
    };
    assert_eq!(a.variant, ["scan", "lookup-hot-root"]);
    assert_eq!(a.common.threads.as_ref().unwrap().0, vec![1, 64]);
    assert_eq!((a.keys, a.hot_keys, a.inserts_per_txn), (5000, 20_000, 10));
    assert_eq!(a.pool_size.bytes(), 32 << 20);

    for (args, needle) in [
        (vec!["--variant", "lookup"], "--variant"),
        (vec!["--keys", "x"], "--keys"),
        (vec!["--page-size", "1000"], "--page-size"),
    ] {
        let mut argv = vec!["shoal", "bench", "btree"];
        argv.extend(args.iter().copied());
        let e = Cli::try_parse_from(&argv).unwrap_err().to_string();
        assert!(e.contains(needle), "{argv:?}: {e}");
    }
}

#[test]
fn lock_defaults_and_flags() {
    let Some(Benchmark::Lock(a)) = bench(["shoal", "bench", "lock"]) else {
        panic!("lock expected")
    };
    assert!(a.variant.is_empty());
    assert_eq!(a.common.threads, None);
    assert_eq!((a.partitions, a.rows_per_thread), (16_384, 1024));

    let Some(Benchmark::Lock(a)) = bench([
        "shoal",
        "bench",
        "lock",
        "--variant",
        "hot-table",
        "--threads",
        "1,2,32",
        "--partitions",
        "1024",
    ]) else {
        panic!("lock expected")
    };
    assert_eq!(a.variant, ["hot-table"]);
    assert_eq!(a.common.threads.as_ref().unwrap().0, vec![1, 2, 32]);
    assert_eq!(a.partitions, 1024);
    let e = Cli::try_parse_from(["shoal", "bench", "lock", "--variant", "rows"])
        .unwrap_err()
        .to_string();
    assert!(e.contains("--variant"), "{e}");
}

#[test]
fn bad_arguments_are_named() {
    for (args, needle) in [
        (vec!["--threads", "0"], "--threads"),
        (vec!["--threads", "x"], "--threads"),
        (vec!["--variant", "cold-page"], "--variant"),
        (vec!["--pool-size", "64MB"], "--pool-size"),
        (vec!["--page-size", "5000"], "--page-size"),
        (vec!["--duration-s", "-1"], "--duration-s"),
        (vec!["--warmup-s", "x"], "--warmup-s"),
        (vec!["--threads", "-1"], "--threads"),
        (vec!["--miss-write-percent", "101"], "--miss-write-percent"),
        (
            vec!["--latency-sample-every", "0"],
            "--latency-sample-every",
        ),
    ] {
        let mut argv = vec!["shoal", "bench", "buffer"];
        argv.extend(args.iter().copied());
        let e = Cli::try_parse_from(&argv).unwrap_err().to_string();
        assert!(e.contains(needle), "{argv:?}: {e}");
    }
}
