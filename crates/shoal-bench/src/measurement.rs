//! One measured point — a benchmark variant at one thread count — as it is printed with
//! `--json` (one object per line, DESIGN.md §6) and stored in `results.jsonl`.
//!
//! Field names carry their units: `_s` seconds, `_us` microseconds, `_bytes` bytes,
//! `_per_s` per second. A reading that could not be taken is `null`, never a made-up zero.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The fields every measured point carries in its JSON line (the contract of DESIGN.md §6
/// plus this harness's additions that later tools rely on).
pub const REQUIRED_JSON_FIELDS: [&str; 15] = [
    "bench",
    "engine",
    "variant",
    "threads",
    "duration_s",
    "ops",
    "ops_per_s",
    "ops_per_s_per_thread",
    "p50_us",
    "p95_us",
    "p99_us",
    "aborts",
    "cpu_s_per_op",
    "max_rss_bytes",
    "config",
];

/// The result of one point: `threads` threads running one variant of one benchmark for
/// `duration_s` seconds after a warm-up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Benchmark name, e.g. `buffer`.
    pub bench: String,
    /// Engine measured, e.g. `shoal`.
    pub engine: String,
    /// Sub-case of the benchmark, e.g. `hot-page-optimistic`.
    pub variant: String,
    /// Number of worker threads.
    pub threads: usize,
    /// Measured wall-clock time in seconds (warm-up excluded): from the moment the workers
    /// were told to start counting to the moment they were told to stop.
    pub duration_s: f64,
    /// Completed operations (transactions) in the measured time, all threads together;
    /// aborted ones are not counted here but in `aborts`.
    pub ops: u64,
    /// `ops / duration_s`: throughput in operations per second.
    pub ops_per_s: f64,
    /// `ops_per_s / threads`: throughput per thread in operations per second.
    pub ops_per_s_per_thread: f64,
    /// Completed operations per thread, indexed by thread; shows whether threads were
    /// treated fairly.
    pub ops_by_thread: Vec<u64>,
    /// Median latency of one operation in microseconds, from the sampled operations; `null`
    /// when nothing was sampled.
    pub p50_us: Option<f64>,
    /// 95th-percentile latency in microseconds.
    pub p95_us: Option<f64>,
    /// 99th-percentile latency in microseconds.
    pub p99_us: Option<f64>,
    /// Largest sampled latency in microseconds.
    pub max_us: Option<f64>,
    /// Number of operations whose latency was recorded (one in `latency_sample_every`).
    pub latency_samples: u64,
    /// Aborted operations by cause (e.g. `deadlock`); empty for micro-benchmarks.
    pub aborts: BTreeMap<String, u64>,
    /// Process CPU time (user + system, all threads, background threads included) per
    /// completed operation in seconds; `null` when CPU time is unavailable or `ops` is 0.
    pub cpu_s_per_op: Option<f64>,
    /// Peak resident set size of the process in bytes (`VmHWM`) when the point ended; its
    /// scope (since the variant's setup, or since process start) is `config.max_rss_scope`.
    pub max_rss_bytes: Option<u64>,
    /// Engine counters accumulated during the measured time only (e.g. buffer-pool `hits`,
    /// `misses`, `evictions`); names are the engine's.
    pub engine_stats: BTreeMap<String, u64>,
    /// Benchmark-specific values derived from `engine_stats` and `ops` by
    /// [`MicroBench::derived`], written as top-level fields of the JSON line (e.g. `log`'s
    /// `fdatasync_per_commit`: `fdatasync` calls per committed transaction). Names carry
    /// their units like the fixed fields and never repeat a fixed field's name; empty for
    /// benchmarks that derive nothing.
    ///
    /// [`MicroBench::derived`]: crate::runner::MicroBench::derived
    #[serde(flatten)]
    pub derived: Map<String, Value>,
    /// The settings that produced this point: run settings, benchmark settings and the
    /// variant's data-set description.
    pub config: Map<String, Value>,
}

impl Measurement {
    /// This measurement as one line of JSON, without the trailing newline.
    pub fn to_json_line(&self) -> String {
        // Serialising plain data (strings, numbers, maps with string keys) cannot fail.
        serde_json::to_string(self).expect("a Measurement always serialises")
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A plausible measurement for tests of the report code.
    pub(crate) fn sample() -> Measurement {
        let mut config = Map::new();
        config.insert("pool_size_bytes".into(), Value::from(64u64 << 20));
        Measurement {
            bench: "buffer".into(),
            engine: "shoal".into(),
            variant: "hot-page-shared".into(),
            threads: 2,
            duration_s: 5.0,
            ops: 1000,
            ops_per_s: 200.0,
            ops_per_s_per_thread: 100.0,
            ops_by_thread: vec![500, 500],
            p50_us: Some(1.5),
            p95_us: Some(2.0),
            p99_us: Some(3.25),
            max_us: Some(10.0),
            latency_samples: 1000,
            aborts: BTreeMap::new(),
            cpu_s_per_op: None,
            max_rss_bytes: Some(1 << 20),
            engine_stats: BTreeMap::from([("hits".to_string(), 7)]),
            derived: Map::new(),
            config,
        }
    }

    #[test]
    fn json_line_shape() {
        let m = sample();
        let line = m.to_json_line();
        assert!(!line.contains('\n'));
        let v: Value = serde_json::from_str(&line).unwrap();
        let obj = v.as_object().unwrap();
        for key in REQUIRED_JSON_FIELDS {
            assert!(obj.contains_key(key), "missing {key} in {line}");
        }
        assert_eq!(obj["bench"], "buffer");
        assert_eq!(obj["threads"], 2);
        assert!(obj["aborts"].as_object().unwrap().is_empty());
        assert!(obj["cpu_s_per_op"].is_null());
        assert_eq!(obj["config"]["pool_size_bytes"], 64u64 << 20);
        assert_eq!(obj["engine_stats"]["hits"], 7);
        let back: Measurement = serde_json::from_str(&line).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn derived_values_are_top_level_fields() {
        let mut m = sample();
        m.derived
            .insert("fdatasync_per_commit".into(), Value::from(0.25));
        let line = m.to_json_line();
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["fdatasync_per_commit"], 0.25, "{line}");
        assert!(v.get("derived").is_none(), "{line}");
        let back: Measurement = serde_json::from_str(&line).unwrap();
        assert_eq!(back, m);
    }
}
