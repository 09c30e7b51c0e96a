//! Human-readable results: the table printed at the end of a run without `--json`, and the
//! `report.md` written with `--out`. Both show, for every variant, the throughput of each
//! thread count relative to the smallest thread count measured (normally 1): the scaling
//! ratio that DESIGN.md §6 asks to measure within one invocation.
//!
//! Rows and ratios are per series: benchmark, variant (labelled with its durability when a
//! workload sets one) and engine; `report.md` also compares Shoal with each other engine.
//! The charts themselves are drawn by [`crate::chart`]; `report.md` links them.

use crate::chart::{ChartFile, ChartKind};
use crate::measurement::Measurement;
use serde_json::Value;
use std::fmt::Write as _;

/// Formats a rate or count with three significant digits and a k/M/G suffix (`12.3M`).
pub fn si(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{:.3}G", v / 1e9)
    } else if a >= 1e6 {
        format!("{:.3}M", v / 1e6)
    } else if a >= 1e3 {
        format!("{:.3}k", v / 1e3)
    } else {
        format!("{v:.1}")
    }
}

/// Formats an optional latency in microseconds; `-` when absent.
fn us(v: Option<f64>) -> String {
    match v {
        Some(v) if v < 10.0 => format!("{v:.3}"),
        Some(v) if v < 1000.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.0}"),
        None => "-".to_string(),
    }
}

/// The smallest thread count among `ms`: the base of the scaling ratios.
fn base_threads(ms: &[Measurement]) -> Option<usize> {
    ms.iter().map(|m| m.threads).min()
}

/// The variant as reports show it: with the workload's durability (`tpcb [full]`) when its
/// config names one, so that runs of one variant under two settings stay apart, and with
/// `disk` when the pool holds only part of the data (`tpcb [full, disk]`). A variant whose
/// name already ends with its durability (`commit-full`) is shown as it is.
pub fn label(m: &Measurement) -> String {
    let disk = m.config.get("size").and_then(|s| s.as_str()) == Some("disk");
    match m.config.get("durability").and_then(|d| d.as_str()) {
        Some(d) if !m.variant.ends_with(&format!("-{d}")) => {
            if disk {
                format!("{} [{d}, disk]", m.variant)
            } else {
                format!("{} [{d}]", m.variant)
            }
        }
        _ if disk => format!("{} [disk]", m.variant),
        _ => m.variant.clone(),
    }
}

/// Whether `a` and `b` are points of the same benchmark, labelled variant and engine.
fn same_series(a: &Measurement, b: &Measurement) -> bool {
    a.bench == b.bench && a.engine == b.engine && a.variant == b.variant && label(a) == label(b)
}

/// Throughput of `m` divided by that of the point of the same benchmark, engine and
/// labelled variant at `base` threads, if that point exists and measured anything.
fn ratio(ms: &[Measurement], m: &Measurement, base: usize) -> Option<f64> {
    let b = ms.iter().find(|b| b.threads == base && same_series(b, m))?;
    (b.ops_per_s > 0.0).then(|| m.ops_per_s / b.ops_per_s)
}

/// For each point of engine `shoal` and each point of another engine with the same
/// benchmark, labelled variant and thread count: `(bench, label, threads, other engine,
/// shoal ops/s ÷ other ops/s)`, in run order.
pub fn engine_ratios(ms: &[Measurement]) -> Vec<(String, String, usize, String, f64)> {
    let mut out = Vec::new();
    for s in ms.iter().filter(|m| m.engine == "shoal") {
        for o in ms.iter().filter(|o| {
            o.engine != "shoal"
                && o.bench == s.bench
                && o.variant == s.variant
                && o.threads == s.threads
                && label(o) == label(s)
        }) {
            if o.ops_per_s > 0.0 {
                out.push((
                    s.bench.clone(),
                    label(s),
                    s.threads,
                    o.engine.clone(),
                    s.ops_per_s / o.ops_per_s,
                ));
            }
        }
    }
    out
}

fn aborts_cell(m: &Measurement) -> String {
    if m.aborts.is_empty() {
        return "-".to_string();
    }
    m.aborts
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A benchmark's derived values (`Measurement::derived`) as `name=value` pairs; numbers
/// with four significant digits, `-` when there are none.
fn derived_cell(m: &Measurement) -> String {
    if m.derived.is_empty() {
        return "-".to_string();
    }
    m.derived
        .iter()
        .map(|(k, v)| match v.as_f64() {
            Some(x) if v.is_f64() => format!("{k}={}", sig4(x)),
            _ => format!("{k}={v}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `x` with four significant digits, without an exponent for ordinary magnitudes.
fn sig4(x: f64) -> String {
    let a = x.abs();
    if a == 0.0 || !x.is_finite() {
        format!("{x}")
    } else if (1e-4..1e6).contains(&a) {
        let decimals = (3 - a.log10().floor() as i32).max(0) as usize;
        format!("{x:.decimals$}")
    } else {
        format!("{x:.3e}")
    }
}

/// The rows of the result table: a header and one row per measurement, in run order. A last
/// column of derived values appears when some measurement has them.
fn rows(ms: &[Measurement]) -> Vec<Vec<String>> {
    let base = base_threads(ms).unwrap_or(1);
    let with_derived = ms.iter().any(|m| !m.derived.is_empty());
    let mut rows = vec![vec![
        "bench".to_string(),
        "variant".to_string(),
        "engine".to_string(),
        "threads".to_string(),
        "ops/s".to_string(),
        "ops/s/thread".to_string(),
        format!("x vs {base} thr"),
        "p50 us".to_string(),
        "p95 us".to_string(),
        "p99 us".to_string(),
        "cpu us/op".to_string(),
        "max RSS MiB".to_string(),
        "aborts".to_string(),
    ]];
    if with_derived {
        rows[0].push("derived".to_string());
    }
    for m in ms {
        let mut row = vec![
            m.bench.clone(),
            label(m),
            m.engine.clone(),
            m.threads.to_string(),
            si(m.ops_per_s),
            si(m.ops_per_s_per_thread),
            ratio(ms, m, base).map_or("-".to_string(), |r| format!("{r:.2}")),
            us(m.p50_us),
            us(m.p95_us),
            us(m.p99_us),
            us(m.cpu_s_per_op.map(|s| s * 1e6)),
            m.max_rss_bytes.map_or("-".to_string(), |b| {
                format!("{:.0}", b as f64 / (1 << 20) as f64)
            }),
            aborts_cell(m),
        ];
        if with_derived {
            row.push(derived_cell(m));
        }
        rows.push(row);
    }
    rows
}

/// Whether column `c` of a table with header row `header` holds text (left-aligned): the
/// bench, variant and engine, and the aborts and derived columns at the end.
fn is_text_column(c: usize, header: &[String]) -> bool {
    c <= 2 || header[c] == "aborts" || header[c] == "derived"
}

/// The result table as aligned plain text (first column left-aligned, numbers right-aligned),
/// one line per measurement, ending with a newline. Empty input gives an empty string.
pub fn text_table(ms: &[Measurement]) -> String {
    if ms.is_empty() {
        return String::new();
    }
    let rows = rows(ms);
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let header = rows[0].clone();
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, cell)| {
                if is_text_column(c, &header) {
                    format!("{cell:<w$}", w = widths[c])
                } else {
                    format!("{cell:>w$}", w = widths[c])
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
        if i == 0 {
            let total: usize = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
            out.push_str(&"-".repeat(total));
            out.push('\n');
        }
    }
    out
}

/// The machine probe's readings ([`crate::probe`]) as a report paragraph, or `None` if
/// `v` is not the probe's JSON.
fn latency_line(v: &Value) -> Option<String> {
    let alone = v.get("alone")?.as_object()?;
    // Keys are "<n>MiB"; a JSON object has no order of its own, so sort by size.
    let mut sizes: Vec<(u64, f64)> = alone
        .iter()
        .filter_map(|(size, ns)| Some((size.strip_suffix("MiB")?.parse().ok()?, ns.as_f64()?)))
        .collect();
    sizes.sort_by_key(|&(mib, _)| mib);
    let cells: Vec<String> = sizes
        .iter()
        .map(|(mib, ns)| format!("{mib} MiB {ns:.0} ns"))
        .collect();
    let mut line = format!(
        "Memory latency (a random pointer chase, one load at a time) by working set: {}",
        cells.join(", ")
    );
    if let Some(t) = v.get("together") {
        let _ = write!(
            line,
            "; {} MiB on {} threads at once: {:.0} ns",
            t.get("bytes")?.as_u64()? >> 20,
            t.get("threads")?,
            t.get("ns")?.as_f64()?
        );
    }
    line.push_str(
        ". Where the latency jumps, the usable cache ends; a two-thread latency far above \
         the one-thread one means the cores share that cache.\n\n",
    );
    Some(line)
}

/// The `report.md` of a run: the command, the table, the scaling ratios per variant, the
/// `charts` (one section per bench and variant, SVG images linked by file name, so the
/// report must sit in the charts' directory; nothing when `charts` is empty), the engine
/// counters (and the values derived from them) of each point and the settings of each
/// variant.
pub fn markdown(ms: &[Measurement], command_line: &str, charts: &[ChartFile]) -> String {
    let mut md = String::new();
    let benches: Vec<&str> = dedup(ms.iter().map(|m| m.bench.as_str()));
    let _ = writeln!(md, "# Shoal benchmark report: {}\n", benches.join(", "));
    let _ = writeln!(md, "Command: `{command_line}`\n");
    if let Some(cpus) = ms.first().and_then(|m| m.config.get("host_cpus")) {
        let _ = writeln!(md, "Host CPUs available to the process: {cpus}\n");
    }
    if let Some(line) = ms
        .first()
        .and_then(|m| m.config.get("memory_latency_ns"))
        .and_then(latency_line)
    {
        md.push_str(&line);
    }
    if ms.is_empty() {
        md.push_str("No points were measured.\n");
        return md;
    }

    md.push_str("## Results\n\n");
    md.push_str(
        "Throughput in operations per second; latencies in microseconds from sampled \
         operations; `x vs N thr` is the throughput relative to the same variant at the \
         smallest thread count measured.\n\n",
    );
    let rows = rows(ms);
    let header = rows[0].clone();
    for (i, row) in rows.iter().enumerate() {
        let _ = writeln!(md, "| {} |", row.join(" | "));
        if i == 0 {
            let seps: Vec<&str> = (0..row.len())
                .map(|c| {
                    if is_text_column(c, &header) {
                        "---"
                    } else {
                        "---:"
                    }
                })
                .collect();
            let _ = writeln!(md, "| {} |", seps.join(" | "));
        }
    }

    let base = base_threads(ms).unwrap_or(1);
    let _ = writeln!(md, "\n## Scaling relative to {base} thread(s)\n");
    let series: Vec<&Measurement> = ms
        .iter()
        .enumerate()
        .filter(|(i, m)| !ms[..*i].iter().any(|p| same_series(p, m)))
        .map(|(_, m)| m)
        .collect();
    for first in series {
        let parts: Vec<String> = ms
            .iter()
            .filter(|m| same_series(m, first) && m.threads != base)
            .filter_map(|m| {
                ratio(ms, m, base).map(|r| {
                    format!(
                        "{} threads: {r:.2}x total, {:.2}x per thread",
                        m.threads,
                        r * base as f64 / m.threads as f64
                    )
                })
            })
            .collect();
        let text = if parts.is_empty() {
            "no other thread count measured".to_string()
        } else {
            parts.join("; ")
        };
        let _ = writeln!(
            md,
            "- `{} {}` on {}: {text}",
            first.bench,
            label(first),
            first.engine
        );
    }

    let vs = engine_ratios(ms);
    if !vs.is_empty() {
        md.push_str("\n## Shoal relative to the other engines\n\n");
        md.push_str("Shoal's throughput divided by the other engine's, same workload, settings and threads.\n\n");
        for (bench, label, threads, other, r) in vs {
            let _ = writeln!(
                md,
                "- `{bench} {label}`, {threads} thread(s): {r:.2}x {other}"
            );
        }
    }

    md.push_str(&charts_section(charts));

    md.push_str("\n## Engine counters during the measured time\n\n");
    for m in ms {
        let mut counters: Vec<String> = m
            .engine_stats
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if !m.derived.is_empty() {
            counters.push(format!("derived: {}", derived_cell(m)));
        }
        let _ = writeln!(
            md,
            "- `{} {}` {} threads={}, {:.2} s: {}",
            m.bench,
            label(m),
            m.engine,
            m.threads,
            m.duration_s,
            if counters.is_empty() {
                "-".to_string()
            } else {
                counters.join(", ")
            }
        );
    }

    md.push_str("\n## Settings\n\n");
    md.push_str(&settings(ms));
    md
}

/// The charts part of `report.md`: a heading per (bench, variant) group, its SVG charts as
/// images and its PNGs as links.
fn charts_section(charts: &[ChartFile]) -> String {
    if charts.is_empty() {
        return String::new();
    }
    let name = |p: &std::path::Path| {
        p.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    };
    let mut md = String::from(
        "\n## Charts\n\nWorker threads on a log2 axis, one line per engine: throughput per \
         thread (log scale; zero throughput cannot be shown) and aborts in percent of \
         attempted operations.\n",
    );
    let mut last: Option<(&str, &str)> = None;
    for c in charts {
        if last != Some((&c.bench, &c.variant)) {
            let _ = writeln!(md, "\n### `{}` `{}`", c.bench, c.variant);
            last = Some((&c.bench, &c.variant));
        }
        let what = match c.kind {
            ChartKind::Throughput => "throughput per thread",
            ChartKind::AbortRate => "abort rate",
        };
        let _ = write!(
            md,
            "\n![{} {}: {what}]({})",
            c.bench,
            c.variant,
            name(&c.svg)
        );
        match &c.png {
            Some(png) => {
                let _ = writeln!(md, " ([PNG]({}))", name(png));
            }
            None => md.push('\n'),
        }
    }
    md
}

/// The `config` of each variant's first point: the entries all variants share, then each
/// variant's own.
fn settings(ms: &[Measurement]) -> String {
    let firsts: Vec<&Measurement> = dedup(ms.iter().map(|m| m.variant.as_str()))
        .into_iter()
        .filter_map(|v| ms.iter().find(|m| m.variant == v))
        .collect();
    let Some(first) = firsts.first() else {
        return String::new();
    };
    let shared = |k: &str, v: &serde_json::Value| firsts.iter().all(|m| m.config.get(k) == Some(v));
    let mut out = String::from("Shared by all variants:\n\n");
    for (k, v) in &first.config {
        if shared(k, v) {
            let _ = writeln!(out, "- `{k}`: `{v}`");
        }
    }
    for m in &firsts {
        let own: Vec<String> = m
            .config
            .iter()
            .filter(|(k, v)| !shared(k, v))
            .map(|(k, v)| format!("`{k}`: `{v}`"))
            .collect();
        if !own.is_empty() {
            let _ = writeln!(out, "\n`{}`: {}", m.variant, own.join(", "));
        }
    }
    out
}

/// The distinct values of `it` in first-seen order.
fn dedup<'a>(it: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for s in it {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measurement::tests::sample;

    fn points() -> Vec<Measurement> {
        let mut a1 = sample();
        a1.variant = "a".into();
        a1.threads = 1;
        a1.ops_per_s = 1000.0;
        let mut a2 = a1.clone();
        a2.threads = 2;
        a2.ops_per_s = 1900.0;
        let mut b1 = a1.clone();
        b1.variant = "b".into();
        b1.ops_per_s = 5e6;
        b1.p50_us = None;
        let mut b2 = b1.clone();
        b2.threads = 2;
        b2.ops_per_s = 2.5e6;
        b2.aborts.insert("deadlock".into(), 3);
        vec![a1, a2, b1, b2]
    }

    #[test]
    fn si_formatting() {
        assert_eq!(si(12.0), "12.0");
        assert_eq!(si(12_345.0), "12.345k");
        assert_eq!(si(12_345_678.0), "12.346M");
        assert_eq!(si(2.5e9), "2.500G");
    }

    #[test]
    fn table_has_ratios_to_one_thread() {
        let t = text_table(&points());
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 2 + 4, "{t}");
        assert!(lines[0].contains("x vs 1 thr"), "{t}");
        assert!(
            lines[2].starts_with("buffer  a        shoal") && lines[2].contains("1.00"),
            "{t}"
        );
        assert!(lines[3].contains("1.90"), "{t}");
        assert!(
            lines[5].contains("0.50") && lines[5].contains("deadlock=3"),
            "{t}"
        );
        // Missing latency is shown as "-", never as 0.
        assert!(lines[4].contains(" - "), "{t}");
        assert_eq!(text_table(&[]), "");
    }

    #[test]
    fn engines_and_durabilities_are_separate_series() {
        let mut ms = points();
        ms.retain(|m| m.variant == "a");
        let mut sqlite = ms.clone();
        for m in &mut sqlite {
            m.engine = "sqlite".into();
            m.ops_per_s /= 4.0;
        }
        let mut full = ms.clone();
        for m in &mut full {
            m.config.insert("durability".into(), "full".into());
            m.ops_per_s /= 100.0;
        }
        ms.extend(sqlite);
        ms.extend(full);
        let t = text_table(&ms);
        // Each series is relative to its own first point.
        assert_eq!(t.matches(" 1.90  ").count(), 3, "{t}");
        assert!(t.contains("a [full]"), "{t}");
        let vs = engine_ratios(&ms);
        assert_eq!(vs.len(), 2, "{vs:?}");
        assert!(vs
            .iter()
            .all(|v| v.3 == "sqlite" && (v.4 - 4.0).abs() < 1e-9));
        let md = markdown(&ms, "shoal bench tpcb", &[]);
        assert!(
            md.contains("- `buffer a`, 2 thread(s): 4.00x sqlite"),
            "{md}"
        );
    }

    #[test]
    fn ratio_base_is_the_smallest_thread_count() {
        let mut ms = points();
        ms.retain(|m| m.variant == "a");
        for m in &mut ms {
            m.threads *= 2;
        }
        let t = text_table(&ms);
        assert!(t.contains("x vs 2 thr"), "{t}");
        assert!(t.contains("1.90"), "{t}");
    }

    #[test]
    fn markdown_report() {
        let md = markdown(&points(), "shoal bench buffer --threads 1,2", &[]);
        assert!(md.starts_with("# Shoal benchmark report: buffer"));
        assert!(md.contains("`shoal bench buffer --threads 1,2`"));
        assert!(md.contains("| bench | variant | engine | threads |"));
        assert!(md.contains("| --- | --- | --- | ---: |"));
        assert!(
            md.contains("- `buffer a` on shoal: 2 threads: 1.90x total, 0.95x per thread"),
            "{md}"
        );
        assert!(
            md.contains("- `buffer b` on shoal: 2 threads: 0.50x total, 0.25x per thread"),
            "{md}"
        );
        assert!(
            md.contains("- `buffer a` shoal threads=1, 5.00 s: hits=7"),
            "{md}"
        );
        assert!(md.contains("- `pool_size_bytes`: `67108864`"), "{md}");
    }

    #[test]
    fn the_machine_probe_is_one_paragraph_in_size_order() {
        let mut ms = points();
        let probe = serde_json::json!({
            "alone": {"16MiB": 231.7, "1MiB": 20.04, "4MiB": 42.0, "64MiB": 250.0},
            "together": {"bytes": 4 << 20, "threads": 2, "ns": 150.4}
        });
        ms[0].config.insert("memory_latency_ns".into(), probe);
        let md = markdown(&ms, "shoal bench buffer", &[]);
        assert!(
            md.contains(
                "by working set: 1 MiB 20 ns, 4 MiB 42 ns, 16 MiB 232 ns, 64 MiB 250 ns; \
                 4 MiB on 2 threads at once: 150 ns."
            ),
            "{md}"
        );
        // Without the probe (an older results file), no paragraph.
        assert!(!markdown(&points(), "shoal bench buffer", &[]).contains("Memory latency"));
        assert_eq!(latency_line(&serde_json::json!({"x": 1})), None);
    }

    #[test]
    fn derived_values_get_a_column_and_a_counter_line() {
        let mut ms = points();
        assert!(!text_table(&ms).contains("derived"));
        ms[1].derived.insert(
            "fdatasync_per_commit".into(),
            serde_json::Value::from(0.031_25),
        );
        let t = text_table(&ms);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].ends_with("derived"), "{t}");
        assert!(lines[3].ends_with("fdatasync_per_commit=0.03125"), "{t}");
        assert!(lines[2].ends_with(" -"), "{t}");
        let md = markdown(&ms, "shoal bench log", &[]);
        assert!(md.contains("| aborts | derived |"), "{md}");
        assert!(md.contains("| --- | --- |\n"), "{md}");
        assert!(
            md.contains(
                "- `buffer a` shoal threads=2, 5.00 s: hits=7, derived: fdatasync_per_commit=0.03125"
            ),
            "{md}"
        );
        assert_eq!(sig4(1234.5678), "1235");
        assert_eq!(sig4(0.5), "0.5000");
        assert_eq!(sig4(2e-7), "2.000e-7");
    }

    #[test]
    fn markdown_shows_charts_per_group() {
        let chart = |variant: &str, kind, png: bool| ChartFile {
            bench: "tpcc".into(),
            variant: variant.into(),
            kind,
            svg: format!("/out/tpcc-{variant}-{}.svg", kind.suffix()).into(),
            png: png.then(|| format!("/out/tpcc-{variant}-{}.png", kind.suffix()).into()),
        };
        let charts = [
            chart("standard", ChartKind::Throughput, true),
            chart("standard", ChartKind::AbortRate, true),
            chart("b", ChartKind::Throughput, false),
        ];
        let md = markdown(&points(), "shoal bench tpcc", &charts);
        assert_eq!(md.matches("## Charts").count(), 1, "{md}");
        assert_eq!(md.matches("### `tpcc` `standard`").count(), 1, "{md}");
        assert!(md.contains(
            "![tpcc standard: throughput per thread](tpcc-standard-throughput.svg) \
             ([PNG](tpcc-standard-throughput.png))"
        ));
        assert!(md.contains("![tpcc standard: abort rate](tpcc-standard-aborts.svg)"));
        assert!(md.contains(
            "### `tpcc` `b`\n\n![tpcc b: throughput per thread](tpcc-b-throughput.svg)\n"
        ));
        assert!(md.find("## Charts") < md.find("## Engine counters"));
        assert!(!markdown(&points(), "x", &[]).contains("## Charts"));
    }

    #[test]
    fn settings_show_shared_entries_once() {
        let mut ms = points();
        ms[0].config.insert("page_count".into(), 1.into());
        ms[2].config.insert("page_count".into(), 96.into());
        let text = settings(&ms);
        assert_eq!(text.matches("pool_size_bytes").count(), 1, "{text}");
        assert!(text.contains("`a`: `page_count`: `1`"), "{text}");
        assert!(text.contains("`b`: `page_count`: `96`"), "{text}");
    }
}
