//! A probe of the machine's memory hierarchy, recorded with every run so that a reader can
//! tell what the caches of the machine that produced the numbers allowed.
//!
//! Storage-engine workloads are bound by cache misses more than by anything else, and a
//! virtual machine may get far less of the last-level cache than its CPU model promises
//! (docs/benchmarks.md, engine update 13: a 32 MB L3 of which about 4 MB was usable, shared
//! by both vCPUs). The probe is a random pointer chase — each load's address is the value
//! of the one before, so no two loads overlap — over working sets from 1 MiB to 64 MiB,
//! alone and, at 4 MiB, on two threads at once. Where the latency jumps is where the usable
//! cache ends; how much the two-thread latency exceeds the one-thread one says whether the
//! cores share it.
//!
//! It runs once per process, on first use, before any engine is set up, and takes about a
//! second.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{Map, Value};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::Instant;

/// Working sets of the one-thread chase, in bytes.
const ALONE_BYTES: [usize; 4] = [1 << 20, 4 << 20, 16 << 20, 64 << 20];
/// Working set of the chase run on two threads at once, in bytes.
const TOGETHER_BYTES: usize = 4 << 20;
/// Dependent loads timed per chase.
const LOADS: usize = 1 << 20;
/// Bytes per element of the chase: one cache line, so every load touches a new line.
const LINE: usize = 64;

/// Memory latency by working-set size, in nanoseconds per dependent load.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryLatency {
    /// `(working set in bytes, ns per load)`, one thread, smallest set first.
    pub alone: Vec<(usize, f64)>,
    /// `(working set in bytes, threads, ns per load)` with that many threads chasing their
    /// own sets at once (the slowest thread's latency); `None` on a single CPU.
    pub together: Option<(usize, usize, f64)>,
}

impl MemoryLatency {
    /// The readings as JSON: `{"alone": {"1MiB": ns, …}, "together": {"bytes", "threads",
    /// "ns"}}` (ns per load, rounded to 0.1).
    pub fn to_json(&self) -> Value {
        let round = |ns: f64| (ns * 10.0).round() / 10.0;
        let alone: Map<String, Value> = self
            .alone
            .iter()
            .map(|&(b, ns)| (format!("{}MiB", b >> 20), Value::from(round(ns))))
            .collect();
        let mut m = Map::new();
        m.insert("alone".into(), Value::Object(alone));
        if let Some((b, t, ns)) = self.together {
            let mut t_m = Map::new();
            t_m.insert("bytes".into(), Value::from(b));
            t_m.insert("threads".into(), Value::from(t));
            t_m.insert("ns".into(), Value::from(round(ns)));
            m.insert("together".into(), Value::Object(t_m));
        }
        Value::Object(m)
    }
}

/// This machine's [`MemoryLatency`], measured on the first call and remembered.
pub fn memory_latency() -> &'static MemoryLatency {
    static CELL: OnceLock<MemoryLatency> = OnceLock::new();
    CELL.get_or_init(measure)
}

fn measure() -> MemoryLatency {
    let alone = ALONE_BYTES
        .iter()
        .map(|&b| (b, chase_ns(&cycle(b, b as u64), LOADS)))
        .collect();
    let threads = crate::sys::available_cpus().min(2);
    let together = (threads > 1).then(|| {
        // Every thread builds its cycle first, so that the timed chases overlap.
        let start = Arc::new(Barrier::new(threads));
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let start = Arc::clone(&start);
                std::thread::spawn(move || {
                    let next = cycle(TOGETHER_BYTES, 1000 + t as u64);
                    start.wait();
                    chase_ns(&next, LOADS)
                })
            })
            .collect();
        // A thread that panicked (it cannot: no fallible step) counts as no reading.
        let worst = handles
            .into_iter()
            .filter_map(|h| h.join().ok())
            .fold(0.0, f64::max);
        (TOGETHER_BYTES, threads, worst)
    });
    MemoryLatency { alone, together }
}

/// A single random cycle through the cache lines of a `bytes`-byte buffer: element `i × 8`
/// (the first word of line `i`) holds the word index of the next line (Sattolo's shuffle,
/// so the cycle visits every line).
fn cycle(bytes: usize, seed: u64) -> Vec<usize> {
    let words_per_line = LINE / std::mem::size_of::<usize>();
    let lines = (bytes / LINE).max(2);
    let mut order: Vec<usize> = (0..lines).collect();
    let mut rng = SmallRng::seed_from_u64(seed);
    for i in (1..lines).rev() {
        let j = rng.random_range(0..i);
        order.swap(i, j);
    }
    let mut next = vec![0usize; lines * words_per_line];
    for (i, &succ) in order.iter().enumerate() {
        next[i * words_per_line] = succ * words_per_line;
    }
    next
}

/// Nanoseconds per load of `loads` dependent loads following `next` from element 0.
fn chase_ns(next: &[usize], loads: usize) -> f64 {
    let start = Instant::now();
    let mut at = 0usize;
    for _ in 0..loads {
        at = next[at];
    }
    std::hint::black_box(at);
    start.elapsed().as_nanos() as f64 / loads as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cycle_visits_every_line_once() {
        let next = cycle(64 * 100, 7);
        let (mut at, mut seen) = (0usize, vec![false; 100]);
        for _ in 0..100 {
            assert_eq!(at % 8, 0);
            assert!(!seen[at / 8], "line {} visited twice", at / 8);
            seen[at / 8] = true;
            at = next[at];
        }
        assert_eq!(at, 0, "the cycle closes after every line");
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn readings_are_positive_and_ordered_by_size() {
        let m = memory_latency();
        assert_eq!(m.alone.len(), ALONE_BYTES.len());
        for (&(b, ns), &want) in m.alone.iter().zip(&ALONE_BYTES) {
            assert_eq!(b, want);
            assert!(ns.is_finite() && ns > 0.0, "{b} bytes: {ns} ns");
        }
        let j = m.to_json();
        assert!(j["alone"]["64MiB"].as_f64().unwrap() > 0.0);
        if let Some((b, t, ns)) = m.together {
            assert_eq!((b, t), (TOGETHER_BYTES, 2));
            assert!(ns > 0.0);
            assert_eq!(j["together"]["threads"], 2);
        }
    }
}
