//! Charts of a run in the style of the Shore-MT paper (Johnson et al., EDBT 2009, Figure 4),
//! written with `--out` beside `report.md` (DESIGN.md §6).
//!
//! For each (bench, variant) group of measurements, in first-seen order, two charts with
//! worker threads on a log2 x axis (a tick at each thread count measured) and one line with
//! markers per engine:
//!
//! 1. `STEM-throughput`: `ops_per_s_per_thread` (operations, i.e. transactions, per second
//!    per thread) on a logarithmic y axis. A point whose throughput is zero (or not finite)
//!    cannot sit on a log axis: it is left out, and the chart says how many were.
//! 2. `STEM-aborts`: the abort rate in percent ([`abort_rate_percent`]) on a linear axis.
//!
//! `STEM` is [`file_stem`] of bench and variant. Each chart is written as SVG and as PNG. The
//! SVG needs no font file (its text is drawn by the viewer); the PNG is rasterised with a
//! TrueType font read at run time from `SHOAL_BENCH_FONT` or a few standard system paths
//! ([`ChartOptions::font_candidates`]). Without one, the SVGs are still written, the PNGs are
//! skipped and a warning naming the font files looked for goes to standard error.
//!
//! Non-goals: styling options, other chart kinds, fonts embedded in the binary.

use crate::error::{BenchError, Result};
use crate::measurement::Measurement;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Environment variable naming a TrueType font file to use for PNG text before the standard
/// locations.
pub const FONT_ENV: &str = "SHOAL_BENCH_FONT";

/// Standard locations of a sans-serif TrueType font on Linux and macOS, tried in order.
pub const STANDARD_FONTS: [&str; 9] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
];

/// Which quantity a chart shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChartKind {
    /// Operations per second per thread, log y axis; file suffix `throughput`.
    Throughput,
    /// Aborted share of attempted operations in percent; file suffix `aborts`.
    AbortRate,
}

impl ChartKind {
    /// The file-name suffix: `throughput` or `aborts`.
    pub fn suffix(self) -> &'static str {
        match self {
            ChartKind::Throughput => "throughput",
            ChartKind::AbortRate => "aborts",
        }
    }
}

/// One chart that [`write_charts`] wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct ChartFile {
    /// Benchmark of the group, e.g. `tpcc`.
    pub bench: String,
    /// Variant of the group, e.g. `standard`.
    pub variant: String,
    /// What the chart shows.
    pub kind: ChartKind,
    /// The SVG file (always written).
    pub svg: PathBuf,
    /// The PNG file; `None` when no font was found to draw its text.
    pub png: Option<PathBuf>,
}

/// Size and font of the charts.
#[derive(Clone, Debug)]
pub struct ChartOptions {
    /// Width of each chart in pixels (SVG user units and PNG pixels); at least 200 is used.
    pub width_px: u32,
    /// Height of each chart in pixels; at least 150 is used.
    pub height_px: u32,
    /// TrueType font files for PNG text, tried in order; the first that loads is used.
    pub font_candidates: Vec<PathBuf>,
}

impl Default for ChartOptions {
    /// 800 × 500 pixels; fonts from `SHOAL_BENCH_FONT` (if set), then [`STANDARD_FONTS`].
    fn default() -> ChartOptions {
        let env = std::env::var_os(FONT_ENV).map(PathBuf::from);
        ChartOptions {
            width_px: 800,
            height_px: 500,
            font_candidates: env
                .into_iter()
                .chain(STANDARD_FONTS.iter().map(PathBuf::from))
                .collect(),
        }
    }
}

/// Abort rate of `m` in percent: `sum(aborts) / (ops + sum(aborts)) * 100`; 0 when nothing
/// was attempted.
pub fn abort_rate_percent(m: &Measurement) -> f64 {
    let aborts: u64 = m.aborts.values().fold(0u64, |a, &b| a.saturating_add(b));
    let attempted = m.ops.saturating_add(aborts);
    if attempted == 0 {
        0.0
    } else {
        aborts as f64 / attempted as f64 * 100.0
    }
}

/// File-name stem of a (bench, variant) group: `BENCH-VARIANT`, lower-cased, with every run
/// of characters outside `[a-z0-9_-]` replaced by one `-` and no `-` at either end
/// (`chart` when nothing is left). E.g. `("TPC-C", "standard mix")` gives
/// `tpc-c-standard-mix`.
pub fn file_stem(bench: &str, variant: &str) -> String {
    let mut out = String::new();
    for c in format!("{bench}-{variant}")
        .chars()
        .flat_map(char::to_lowercase)
    {
        let c = if c.is_ascii_alphanumeric() || c == '_' {
            c
        } else {
            '-'
        };
        if !(c == '-' && (out.is_empty() || out.ends_with('-'))) {
            out.push(c);
        }
    }
    let out = out.trim_end_matches('-');
    if out.is_empty() {
        "chart".to_string()
    } else {
        out.to_string()
    }
}

/// Writes the throughput and abort-rate charts of every (bench, variant) group of `ms` into
/// `dir` with [`ChartOptions::default`]; see [`write_charts_with`].
///
/// # Errors
/// As [`write_charts_with`].
pub fn write_charts(ms: &[Measurement], dir: &Path) -> Result<Vec<ChartFile>> {
    write_charts_with(ms, dir, &ChartOptions::default())
}

/// Writes, for every (bench, variant) group of `ms` in first-seen order, the throughput chart
/// and then the abort-rate chart into the existing directory `dir` as `STEM-throughput.svg`
/// and `.png`, `STEM-aborts.svg` and `.png` (module doc), and returns what it wrote. Groups
/// whose stems collide get `-2`, `-3`, ... appended. Empty `ms` writes nothing. When no font
/// in `opts.font_candidates` loads, only the SVGs are written and a warning goes to standard
/// error.
///
/// # Errors
/// [`BenchError::Chart`] naming the file when a chart cannot be drawn or written.
pub fn write_charts_with(
    ms: &[Measurement],
    dir: &Path,
    opts: &ChartOptions,
) -> Result<Vec<ChartFile>> {
    // Groups by the variant as reports label it (with a workload's durability), so runs of
    // one variant under two settings get two charts.
    let mut groups: Vec<(&str, String)> = Vec::new();
    for m in ms {
        let g = (m.bench.as_str(), crate::report::label(m));
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    if groups.is_empty() {
        return Ok(Vec::new());
    }
    let font = load_font(&opts.font_candidates);
    if font.is_none() {
        let tried: Vec<String> = opts
            .font_candidates
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        eprintln!(
            "warning: no TrueType font found to draw PNG charts (looked for {}; set {FONT_ENV} \
             to a .ttf file): writing SVG charts only",
            if tried.is_empty() {
                "none".to_string()
            } else {
                tried.join(", ")
            }
        );
    }
    let size = (opts.width_px.max(200), opts.height_px.max(150));
    let mut stems = HashSet::new();
    let mut files = Vec::new();
    for (bench, variant) in groups {
        let variant = variant.as_str();
        let base = file_stem(bench, variant);
        let (mut stem, mut n) = (base.clone(), 1);
        while !stems.insert(stem.clone()) {
            n += 1;
            stem = format!("{base}-{n}");
        }
        let group: Vec<&Measurement> = ms
            .iter()
            .filter(|m| m.bench == bench && crate::report::label(m) == variant)
            .collect();
        for kind in [ChartKind::Throughput, ChartKind::AbortRate] {
            let plot = Plot::new(bench, variant, kind, &group);
            let svg = dir.join(format!("{stem}-{}.svg", kind.suffix()));
            plot.render(SVGBackend::new(&svg, size).into_drawing_area())
                .map_err(|message| BenchError::Chart {
                    path: svg.clone(),
                    message,
                })?;
            let png = match font {
                Some(_) => {
                    let png = dir.join(format!("{stem}-{}.png", kind.suffix()));
                    plot.render(BitMapBackend::new(&png, size).into_drawing_area())
                        .map_err(|message| BenchError::Chart {
                            path: png.clone(),
                            message,
                        })?;
                    Some(png)
                }
                None => None,
            };
            files.push(ChartFile {
                bench: bench.to_string(),
                variant: variant.to_string(),
                kind,
                svg,
                png,
            });
        }
    }
    Ok(files)
}

/// Font family name under which the loaded font is registered; SVG viewers read it as
/// their own sans-serif font.
const FAMILY: &str = "sans-serif";

/// Registers the first loadable font of `candidates` with plotters and returns its path.
/// Each path is read at most once per process and its bytes stay in memory for the
/// process's life (plotters keeps a `'static` reference); a path that loaded before counts
/// as loaded again without being read.
fn load_font(candidates: &[PathBuf]) -> Option<PathBuf> {
    // Paths tried so far and whether they loaded; a file is read at most once.
    static TRIED: Mutex<Vec<(PathBuf, bool)>> = Mutex::new(Vec::new());
    let mut tried = TRIED.lock().unwrap_or_else(|e| e.into_inner());
    for path in candidates {
        if let Some((_, ok)) = tried.iter().find(|(p, _)| p == path) {
            if *ok {
                return Some(path.clone());
            }
            continue;
        }
        let ok = match std::fs::read(path) {
            Ok(bytes) => {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                plotters::style::register_font(FAMILY, FontStyle::Normal, bytes).is_ok()
            }
            Err(_) => false,
        };
        tried.push((path.clone(), ok));
        if ok {
            return Some(path.clone());
        }
    }
    None
}

/// Line and marker colours, one per engine (Okabe–Ito, readable by colour-blind readers).
const COLORS: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
];

/// What one chart shows, independent of the backend it is drawn on.
struct Plot {
    title: String,
    y_desc: &'static str,
    log_y: bool,
    /// Thread counts measured (x tick positions), ascending.
    threads: Vec<f64>,
    /// One line per engine, first-seen order: name and (threads, value) points by threads.
    series: Vec<(String, Vec<(f64, f64)>)>,
    /// Points left out (zero throughput on the log axis, or zero threads).
    skipped: usize,
}

impl Plot {
    fn new(bench: &str, variant: &str, kind: ChartKind, group: &[&Measurement]) -> Plot {
        let mut plot = Plot {
            title: format!("{bench} {variant}"),
            y_desc: match kind {
                ChartKind::Throughput => "transactions (ops) / s per thread, log scale",
                ChartKind::AbortRate => "abort rate, % of attempted transactions",
            },
            log_y: kind == ChartKind::Throughput,
            threads: Vec::new(),
            series: Vec::new(),
            skipped: 0,
        };
        for m in group {
            let y = match kind {
                ChartKind::Throughput => m.ops_per_s_per_thread,
                ChartKind::AbortRate => abort_rate_percent(m),
            };
            // Every engine and thread count gets its legend entry and tick, even when none
            // of its points can be drawn.
            let x = m.threads as f64;
            if m.threads > 0 && !plot.threads.contains(&x) {
                plot.threads.push(x);
            }
            let i = match plot.series.iter().position(|(e, _)| *e == m.engine) {
                Some(i) => i,
                None => {
                    plot.series.push((m.engine.clone(), Vec::new()));
                    plot.series.len() - 1
                }
            };
            if m.threads == 0 || !y.is_finite() || (plot.log_y && y <= 0.0) {
                plot.skipped += 1;
            } else {
                plot.series[i].1.push((x, y));
            }
        }
        plot.threads.sort_by(f64::total_cmp);
        for (_, pts) in &mut plot.series {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        plot
    }

    /// Draws the chart on `root` and finishes the file; errors as text.
    fn render<DB: DrawingBackend>(&self, root: DrawingArea<DB, Shift>) -> Result<(), String> {
        let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
        root.fill(&WHITE).map_err(err)?;
        let (w, _) = root.dim_in_pixel();
        let style = |size: u32| TextStyle::from((FAMILY, size).into_font()).color(&BLACK);
        let centred = |size| style(size).pos(Pos::new(HPos::Center, VPos::Top));
        root.draw(&Text::new(
            self.title.clone(),
            (w as i32 / 2, 8),
            centred(22),
        ))
        .map_err(err)?;
        if self.skipped > 0 {
            let note = if self.log_y {
                format!(
                    "{} point(s) not shown: zero throughput cannot go on a log axis",
                    self.skipped
                )
            } else {
                format!("{} point(s) not shown: zero threads", self.skipped)
            };
            root.draw(&Text::new(note, (w as i32 / 2, 34), centred(13)))
                .map_err(err)?;
        }
        // The legend gets a column of its own on the right, so it never hides a line.
        let longest = self.series.iter().map(|(e, _)| e.chars().count()).max();
        let legend_w = (60 + 9 * longest.unwrap_or(6).max(6) as u32).min(w / 3);
        let (plot_area, legend) = root.split_horizontally(w.saturating_sub(legend_w));
        let (t0, t1) = match (self.threads.first(), self.threads.last()) {
            (Some(&a), Some(&b)) => (a, b),
            _ => (1.0, 1.0),
        };
        let x = (t0 / 1.5..t1 * 1.5)
            .log_scale()
            .base(2.0)
            .with_key_points(self.threads.clone());
        let values = self.series.iter().flat_map(|(_, p)| p.iter().map(|p| p.1));
        let (lo, hi) = values.fold((f64::INFINITY, 0.0f64), |(l, h), v| (l.min(v), h.max(v)));
        if self.log_y {
            let (lo, hi) = if hi > 0.0 { (lo, hi) } else { (1.0, 1.0) };
            let lo = 10f64.powf((lo / 1.5).log10().floor());
            let hi = 10f64.powf((hi * 1.5).log10().ceil());
            let ticks = log_ticks(lo, hi);
            let y = (lo..hi).log_scale().with_key_points(ticks);
            self.draw_lines(&root, &plot_area, x, y).map_err(err)?;
        } else {
            let hi = (hi * 1.15).clamp(1.0, 100.0);
            let y = 0.0..hi;
            self.draw_lines(&root, &plot_area, x, y).map_err(err)?;
        }
        for (i, (engine, _)) in self.series.iter().enumerate() {
            let (lx, _) = legend.get_base_pixel();
            let y = 70 + 26 * i as i32;
            let color = COLORS[i % COLORS.len()];
            root.draw(&PathElement::new(
                vec![(lx + 5, y), (lx + 35, y)],
                color.stroke_width(2),
            ))
            .map_err(err)?;
            marker(&root, i, (lx + 20, y)).map_err(err)?;
            let left = style(15).pos(Pos::new(HPos::Left, VPos::Center));
            root.draw(&Text::new(engine.clone(), (lx + 44, y), left))
                .map_err(err)?;
        }
        root.present().map_err(err)
    }

    /// Axes, grid and one line with markers per engine; markers and legend go on `root`.
    fn draw_lines<DB: DrawingBackend, X, Y>(
        &self,
        root: &DrawingArea<DB, Shift>,
        area: &DrawingArea<DB, Shift>,
        x: X,
        y: Y,
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
    where
        X: AsRangedCoord<Value = f64>,
        Y: AsRangedCoord<Value = f64>,
        X::CoordDescType: ValueFormatter<f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        let mut chart = ChartBuilder::on(area)
            .margin(12)
            .margin_top(56)
            .x_label_area_size(52)
            .y_label_area_size(84)
            .build_cartesian_2d(x, y)?;
        let font = |size| (FAMILY, size).into_font();
        chart
            .configure_mesh()
            .x_desc("worker threads")
            .y_desc(self.y_desc)
            .x_label_formatter(&|v| format!("{}", v.round()))
            .y_label_formatter(&|v| tick_label(*v))
            .label_style(font(14))
            .axis_desc_style(font(15))
            .light_line_style(TRANSPARENT)
            .draw()?;
        for (i, (_, pts)) in self.series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            chart.draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))?;
            for p in pts {
                marker(root, i, chart.backend_coord(p))?;
            }
        }
        Ok(())
    }
}

/// Draws engine `i`'s marker (circle, triangle, square or cross, by `i`) at pixel `at`.
fn marker<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    i: usize,
    at: (i32, i32),
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let color = COLORS[i % COLORS.len()];
    match i % 4 {
        0 => root.draw(&Circle::new(at, 5, color.filled())),
        1 => root.draw(&TriangleMarker::new(at, 7, color.filled())),
        2 => root.draw(&Rectangle::new(
            [(at.0 - 5, at.1 - 5), (at.0 + 5, at.1 + 5)],
            color.filled(),
        )),
        _ => root.draw(&Cross::new(at, 5, color.stroke_width(3))),
    }
}

/// Tick positions 1, 2 and 5 times each power of ten in `[lo, hi]`.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut ticks = Vec::new();
    let mut decade = lo;
    while decade <= hi * (1.0 + 1e-9) && ticks.len() < 64 {
        for f in [1.0, 2.0, 5.0] {
            if decade * f <= hi * (1.0 + 1e-9) {
                ticks.push(decade * f);
            }
        }
        decade *= 10.0;
    }
    ticks
}

/// A tick value with at most three significant digits and a k/M/G suffix: `500`, `2k`,
/// `1.5M`, `0.2`.
fn tick_label(v: f64) -> String {
    let (scaled, suffix) = match v.abs() {
        a if a >= 1e9 => (v / 1e9, "G"),
        a if a >= 1e6 => (v / 1e6, "M"),
        a if a >= 1e3 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    let text = format!("{scaled:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measurement::tests::sample;

    /// A TPC-C-like group: engines `shoal` and `sqlite` at 1, 2, 4 and 8 threads.
    fn tpcc() -> Vec<Measurement> {
        let mut ms = Vec::new();
        for (engine, base) in [("shoal", 20_000.0), ("sqlite", 3_000.0)] {
            for (i, threads) in [1usize, 2, 4, 8].into_iter().enumerate() {
                let mut m = sample();
                m.bench = "tpcc".into();
                m.variant = "standard".into();
                m.engine = engine.into();
                m.threads = threads;
                m.ops = 10_000 * threads as u64;
                m.ops_per_s_per_thread = base / (1.0 + i as f64);
                m.aborts
                    .insert("deadlock".into(), (base as u64 / 100) * i as u64);
                ms.push(m);
            }
        }
        ms
    }

    /// The contents of the `<text>` elements of an SVG document, trimmed, after checking
    /// that it is one `<svg>` element whose `<text>` tags are balanced.
    fn svg_texts(svg: &str) -> Vec<String> {
        let svg = svg.trim();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"), "{svg}");
        assert_eq!(svg.matches("<svg").count(), 1);
        assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
        svg.split("<text")
            .skip(1)
            .map(|t| {
                let body = &t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()];
                body.trim().to_string()
            })
            .collect()
    }

    /// Width and height from a PNG's IHDR chunk, after checking the signature.
    fn png_size(bytes: &[u8]) -> (u32, u32) {
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
        assert_eq!(&bytes[12..16], b"IHDR");
        let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        (be(&bytes[16..20]), be(&bytes[20..24]))
    }

    fn options(fonts: bool) -> ChartOptions {
        let mut opts = ChartOptions {
            width_px: 640,
            height_px: 400,
            ..ChartOptions::default()
        };
        if !fonts {
            opts.font_candidates.clear();
        }
        opts
    }

    #[test]
    fn writes_svg_and_png_per_group_and_kind() {
        let tmp = tempfile::tempdir().unwrap();
        let files = write_charts_with(&tpcc(), tmp.path(), &options(true)).unwrap();
        let kinds: Vec<ChartKind> = files.iter().map(|f| f.kind).collect();
        assert_eq!(kinds, [ChartKind::Throughput, ChartKind::AbortRate]);
        assert_eq!(
            files[0].svg,
            tmp.path().join("tpcc-standard-throughput.svg")
        );
        assert_eq!(files[1].svg, tmp.path().join("tpcc-standard-aborts.svg"));
        for f in &files {
            assert_eq!((f.bench.as_str(), f.variant.as_str()), ("tpcc", "standard"));
            let texts = svg_texts(&std::fs::read_to_string(&f.svg).unwrap());
            for text in [
                "tpcc standard",
                "shoal",
                "sqlite",
                "worker threads",
                "1",
                "8",
            ] {
                assert!(texts.iter().any(|t| t == text), "{text} missing: {texts:?}");
            }
            match &f.png {
                Some(png) => {
                    assert_eq!(png, &f.svg.with_extension("png"));
                    assert_eq!(png_size(&std::fs::read(png).unwrap()), (640, 400));
                }
                // Only on a machine without any of the standard fonts.
                None => eprintln!("no font here: PNG not checked"),
            }
        }
        let texts = svg_texts(&std::fs::read_to_string(&files[0].svg).unwrap());
        assert!(texts.iter().any(|t| t.ends_with("per thread, log scale")));
        assert!(texts.iter().any(|t| t == "20k"), "{texts:?}");
        let texts = svg_texts(&std::fs::read_to_string(&files[1].svg).unwrap());
        assert!(texts.iter().any(|t| t.starts_with("abort rate, %")));
    }

    #[test]
    fn without_a_font_only_svg_is_written() {
        let tmp = tempfile::tempdir().unwrap();
        let files = write_charts_with(&tpcc(), tmp.path(), &options(false)).unwrap();
        assert_eq!(files.len(), 2);
        for f in &files {
            assert!(f.svg.exists());
            assert_eq!(f.png, None);
            assert!(!f.svg.with_extension("png").exists());
        }
        let mut bad = options(false);
        bad.font_candidates = vec![tmp.path().join("none.ttf"), files[0].svg.clone()];
        let files = write_charts_with(&tpcc(), tmp.path(), &bad).unwrap();
        assert!(files.iter().all(|f| f.png.is_none()), "an SVG is no font");
    }

    #[test]
    fn odd_groups_do_not_fail() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(write_charts(&[], tmp.path()).unwrap().is_empty());
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
        // One thread count only, zero throughput, zero ops, and no aborts.
        let mut zero = sample();
        zero.threads = 1;
        zero.ops = 0;
        zero.ops_per_s = 0.0;
        zero.ops_per_s_per_thread = 0.0;
        let mut one = zero.clone();
        one.variant = "one".into();
        one.ops_per_s_per_thread = 5.0;
        let files = write_charts_with(&[zero, one], tmp.path(), &options(true)).unwrap();
        assert_eq!(files.len(), 4);
        let svg = std::fs::read_to_string(&files[0].svg).unwrap();
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        let texts = svg_texts(&svg);
        // The engine stays in the legend and the thread count on the axis.
        for text in ["shoal", "1"] {
            assert!(texts.iter().any(|t| t == text), "{text} missing: {texts:?}");
        }
        let note = "1 point(s) not shown: zero throughput cannot go on a log axis";
        assert!(texts.iter().any(|t| t == note), "{texts:?}");
        let texts = svg_texts(&std::fs::read_to_string(&files[2].svg).unwrap());
        assert!(texts.iter().any(|t| t == "shoal"), "{texts:?}");
        assert!(!texts.iter().any(|t| t.contains("not shown")), "{texts:?}");
        // Zero ops and zero aborts: an abort rate of 0, drawn.
        assert!(files[1].svg.exists() && files[3].svg.exists());
        // A tiny size and an engine name longer than the chart is wide.
        let mut long = sample();
        long.engine = "x".repeat(300);
        let tiny = ChartOptions {
            width_px: 1,
            height_px: 0,
            ..options(true)
        };
        let files = write_charts_with(&[long], tmp.path(), &tiny).unwrap();
        if let Some(png) = &files[0].png {
            assert_eq!(png_size(&std::fs::read(png).unwrap()), (200, 150));
        }
    }

    #[test]
    fn abort_rate_arithmetic() {
        let mut m = sample();
        m.ops = 900;
        m.aborts.insert("deadlock".into(), 60);
        m.aborts.insert("conflict".into(), 40);
        assert!((abort_rate_percent(&m) - 10.0).abs() < 1e-12);
        m.ops = 0;
        assert_eq!(abort_rate_percent(&m), 100.0);
        m.aborts.clear();
        assert_eq!(abort_rate_percent(&m), 0.0);
        m.ops = 5;
        assert_eq!(abort_rate_percent(&m), 0.0);
    }

    #[test]
    fn file_stems_are_sanitised_and_unique() {
        assert_eq!(file_stem("tpcc", "standard"), "tpcc-standard");
        assert_eq!(file_stem("TPC-C", "standard mix"), "tpc-c-standard-mix");
        assert_eq!(file_stem("a/../b", "x_y"), "a-b-x_y");
        assert_eq!(file_stem("--", "é!"), "chart");
        let tmp = tempfile::tempdir().unwrap();
        let mut a = sample();
        a.variant = "a b".into();
        let mut b = sample();
        b.variant = "a/b".into();
        let files = write_charts_with(&[a, b], tmp.path(), &options(false)).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|f| f.svg.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "buffer-a-b-throughput.svg",
                "buffer-a-b-aborts.svg",
                "buffer-a-b-2-throughput.svg",
                "buffer-a-b-2-aborts.svg"
            ]
        );
    }

    #[test]
    fn ticks_and_labels() {
        assert_eq!(
            log_ticks(10.0, 1000.0),
            [10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0]
        );
        assert_eq!(tick_label(0.0), "0");
        assert_eq!(tick_label(500.0), "500");
        assert_eq!(tick_label(2000.0), "2k");
        assert_eq!(tick_label(1.5e6), "1.5M");
        assert_eq!(tick_label(0.25), "0.25");
    }
}
