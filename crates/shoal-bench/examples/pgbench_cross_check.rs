//! Runs the pgbench cross-check of the `postgres` peer (issue 8) and prints one line per
//! script and client count:
//!
//! ```text
//! cargo run --release -p shoal-bench --example pgbench_cross_check -- \
//!     [--scale N] [--threads 1,2,...] [--duration-s S] [--durability lazy|full]
//! ```
//!
//! Compare its `tps` with `shoal bench tpcb --engine postgres` and `shoal bench select1
//! --engine postgres` at the same scale, threads and durability.

use shoal_bench::workload::peers::postgres::pgbench::pgbench_cross_check;
use shoal_bench::workload::{Durability, EngineKind, WorkloadOptions};

fn main() {
    if let Err(e) = run() {
        eprintln!("pgbench_cross_check: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let (mut scale, mut threads, mut secs) = (1u32, vec![1usize, 2], 5u32);
    let mut opts = WorkloadOptions::new(EngineKind::Postgres);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
        match flag.as_str() {
            "--scale" => scale = value.parse().map_err(|e| bad(&e))?,
            "--duration-s" => secs = value.parse().map_err(|e| bad(&e))?,
            "--threads" => {
                threads = value
                    .split(',')
                    .map(|t| t.trim().parse::<usize>())
                    .collect::<Result<_, _>>()
                    .map_err(|e| bad(&e))?
            }
            "--durability" => opts.durability = Durability::parse(&value).map_err(|e| bad(&e))?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    let points = pgbench_cross_check(&opts, scale, &threads, secs).map_err(|e| e.to_string())?;
    println!(
        "pgbench cross-check: scale {scale}, {secs} s per point, durability {}",
        opts.durability.name()
    );
    for p in points {
        println!("{:<12} clients={:<3} tps={:.1}", p.script, p.clients, p.tps);
    }
    Ok(())
}
