//! Where a run's results go (DESIGN.md §6).
//!
//! 1. Standard output carries results only: with `--json` one [`Measurement`] per line as
//!    each point ends, and nothing else; without it, the table of [`report::text_table`]
//!    once the run is over.
//! 2. Standard error carries progress and logs: a progress bar per point when it is a
//!    terminal, otherwise one line when a point starts and one when it ends.
//! 3. With an output directory, `results.jsonl` (the same lines as `--json`, appended and
//!    flushed as each point ends, so an interrupted run keeps what it measured) and, at the
//!    end, the charts of [`chart::write_charts`] (SVG and PNG per bench and variant) and
//!    `report.md` ([`report::markdown`]), which shows them.

use crate::chart;
use crate::error::{BenchError, Result};
use crate::measurement::Measurement;
use crate::report;
use crate::runner::{Observer, Phase, PointInfo};
use indicatif::{ProgressBar, ProgressStyle};
use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};

/// File name of the JSON-lines results in the output directory.
pub const RESULTS_FILE: &str = "results.jsonl";
/// File name of the markdown report in the output directory.
pub const REPORT_FILE: &str = "report.md";

/// How a run reports.
#[derive(Clone, Debug, Default)]
pub struct OutputOptions {
    /// Print one JSON line per point on standard output and nothing else there.
    pub json: bool,
    /// Directory for `results.jsonl` and `report.md`; created (with parents) if missing.
    pub out_dir: Option<PathBuf>,
    /// The command line that started the run, quoted in the report.
    pub command_line: String,
    /// Extra sections appended to `report.md`, made from the run's measurements (e.g.
    /// `shoal bench compare`'s targets); `None`: none.
    pub appendix: Option<fn(&[Measurement]) -> String>,
}

/// An [`Observer`] that prints progress to standard error and results to standard output
/// (or another writer `W`) and the output directory (see the module doc). Call
/// [`Output::finish`] after the run.
pub struct Output<W: Write = std::io::Stdout> {
    opts: OutputOptions,
    stdout: W,
    results: Option<(PathBuf, BufWriter<File>)>,
    measurements: Vec<Measurement>,
    /// Progress bars when standard error is a terminal, plain lines otherwise.
    bar: Option<ProgressBar>,
    interactive: bool,
}

impl Output {
    /// Prepares the outputs, with results going to standard output; see
    /// [`Output::with_writer`].
    ///
    /// # Errors
    /// [`BenchError::Io`] naming the directory or file that could not be created.
    pub fn new(opts: OutputOptions) -> Result<Output> {
        Output::with_writer(opts, std::io::stdout())
    }
}

impl<W: Write> Output<W> {
    /// Prepares the outputs, with what belongs on standard output going to `stdout`: creates
    /// the output directory and an empty `results.jsonl` in it, so that a bad `--out` fails
    /// before any time is spent measuring.
    ///
    /// # Errors
    /// [`BenchError::Io`] naming the directory or file that could not be created.
    pub fn with_writer(opts: OutputOptions, stdout: W) -> Result<Output<W>> {
        let results = match &opts.out_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir)
                    .map_err(|e| BenchError::io("creating the --out directory", dir, e))?;
                let path = dir.join(RESULTS_FILE);
                let file = File::create(&path)
                    .map_err(|e| BenchError::io("creating the results file", &path, e))?;
                Some((path, BufWriter::new(file)))
            }
            None => None,
        };
        Ok(Output {
            opts,
            stdout,
            results,
            measurements: Vec::new(),
            bar: None,
            interactive: std::io::stderr().is_terminal(),
        })
    }

    /// The measurements received so far, in run order.
    pub fn measurements(&self) -> &[Measurement] {
        &self.measurements
    }

    /// Ends the run's output: without `--json` prints the result table on standard output;
    /// with an output directory writes the charts and `report.md` and says on standard error
    /// where the files are. A chart that fails does not stop `report.md` (which then shows
    /// no charts) from being written; its error is returned afterwards.
    ///
    /// Returns the writer that stood for standard output.
    ///
    /// # Errors
    /// [`BenchError::Io`] if standard output or a file cannot be written;
    /// [`BenchError::Chart`] if a chart cannot be drawn.
    pub fn finish(mut self) -> Result<W> {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        if !self.opts.json {
            let table = report::text_table(&self.measurements);
            self.stdout
                .write_all(table.as_bytes())
                .and_then(|()| self.stdout.flush())
                .map_err(|e| BenchError::io("writing the table to", "standard output", e))?;
        }
        if let (Some(dir), Some((results_path, mut results))) =
            (self.opts.out_dir.as_deref(), self.results.take())
        {
            results
                .flush()
                .map_err(|e| BenchError::io("writing", &results_path, e))?;
            let (charts, chart_error) = match chart::write_charts(&self.measurements, dir) {
                Ok(charts) => (charts, None),
                Err(e) => (Vec::new(), Some(e)),
            };
            let path = dir.join(REPORT_FILE);
            let mut md = report::markdown(&self.measurements, &self.opts.command_line, &charts);
            if let Some(appendix) = self.opts.appendix {
                md.push('\n');
                md.push_str(&appendix(&self.measurements));
            }
            std::fs::write(&path, md).map_err(|e| BenchError::io("writing", &path, e))?;
            eprintln!(
                "wrote {}, {} and {} chart file(s) in {}",
                results_path.display(),
                Path::new(&path).display(),
                charts
                    .iter()
                    .map(|c| 1 + usize::from(c.png.is_some()))
                    .sum::<usize>(),
                dir.display()
            );
            if let Some(e) = chart_error {
                return Err(e);
            }
        }
        Ok(self.stdout)
    }

    fn label(p: &PointInfo<'_>) -> String {
        format!(
            "[{}/{}] {} {} {} threads={}",
            p.index + 1,
            p.total,
            p.bench,
            p.variant,
            p.engine,
            p.threads
        )
    }
}

impl<W: Write> Observer for Output<W> {
    fn setup_started(&mut self, bench: &str, variant: &str) {
        eprintln!("{bench} {variant}: setting up");
    }

    fn setup_finished(&mut self, bench: &str, variant: &str, elapsed_s: f64) {
        eprintln!("{bench} {variant}: set up in {elapsed_s:.2} s");
    }

    fn point_started(&mut self, p: &PointInfo<'_>) {
        if self.interactive {
            let total_ms = ((p.warmup_s + p.duration_s) * 1000.0).ceil() as u64;
            let bar = ProgressBar::new(total_ms.max(1));
            if let Ok(style) = ProgressStyle::with_template("{msg} [{bar:30}] {percent:>3}%") {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(format!("{} warm-up", Self::label(p)));
            self.bar = Some(bar);
        } else {
            eprintln!(
                "{}: warm-up {} s, measuring {} s",
                Self::label(p),
                p.warmup_s,
                p.duration_s
            );
        }
    }

    fn point_progress(&mut self, p: &PointInfo<'_>, phase: Phase, phase_elapsed_s: f64) {
        if let Some(bar) = &self.bar {
            let (done_s, what) = match phase {
                Phase::Warmup => (phase_elapsed_s, "warm-up"),
                Phase::Measure => (p.warmup_s + phase_elapsed_s, "measuring"),
            };
            bar.set_message(format!("{} {what}", Self::label(p)));
            bar.set_position((done_s * 1000.0) as u64);
        }
    }

    fn point_finished(&mut self, p: &PointInfo<'_>, m: &Measurement) -> Result<()> {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        let p50 = m.p50_us.map_or("-".to_string(), |v| format!("{v:.3}"));
        let p99 = m.p99_us.map_or("-".to_string(), |v| format!("{v:.3}"));
        eprintln!(
            "{}: {} ops/s ({} per thread), p50 {p50} us, p99 {p99} us",
            Self::label(p),
            report::si(m.ops_per_s),
            report::si(m.ops_per_s_per_thread)
        );
        let line = m.to_json_line();
        if self.opts.json {
            writeln!(self.stdout, "{line}")
                .and_then(|()| self.stdout.flush())
                .map_err(|e| BenchError::io("writing a result to", "standard output", e))?;
        }
        if let Some((path, results)) = &mut self.results {
            writeln!(results, "{line}")
                .and_then(|()| results.flush())
                .map_err(|e| BenchError::io("writing", path.as_path(), e))?;
        }
        self.measurements.push(m.clone());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measurement::tests::sample;

    #[test]
    fn out_dir_gets_results_and_report() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        let mut out = Output::with_writer(
            OutputOptions {
                json: true,
                out_dir: Some(dir.clone()),
                command_line: "shoal bench buffer".into(),
                appendix: None,
            },
            Vec::new(),
        )
        .unwrap();
        // The results file exists before anything is measured.
        assert!(dir.join(RESULTS_FILE).exists());
        let info = PointInfo {
            bench: "buffer",
            variant: "hot-page-shared",
            engine: "shoal",
            threads: 2,
            index: 0,
            total: 1,
            warmup_s: 0.0,
            duration_s: 1.0,
        };
        let m = sample();
        out.point_finished(&info, &m).unwrap();
        // Flushed line by line: readable before finish.
        let text = std::fs::read_to_string(dir.join(RESULTS_FILE)).unwrap();
        assert_eq!(text.lines().count(), 1);
        let back: Measurement = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(back, m);
        assert_eq!(out.measurements().len(), 1);
        let stdout = String::from_utf8(out.finish().unwrap()).unwrap();
        // With --json, standard output holds exactly the JSON lines: no table.
        assert_eq!(stdout, format!("{}\n", m.to_json_line()));
        let md = std::fs::read_to_string(dir.join(REPORT_FILE)).unwrap();
        assert!(md.contains("`shoal bench buffer`"));
        // The charts are beside the report, which shows them.
        assert!(dir.join("buffer-hot-page-shared-throughput.svg").exists());
        assert!(dir.join("buffer-hot-page-shared-aborts.svg").exists());
        assert!(
            md.contains("](buffer-hot-page-shared-throughput.svg)"),
            "{md}"
        );
    }

    #[test]
    fn without_json_stdout_gets_only_the_table() {
        let mut out = Output::with_writer(OutputOptions::default(), Vec::new()).unwrap();
        let info = PointInfo {
            bench: "buffer",
            variant: "hot-page-shared",
            engine: "shoal",
            threads: 2,
            index: 0,
            total: 1,
            warmup_s: 0.0,
            duration_s: 1.0,
        };
        out.point_finished(&info, &sample()).unwrap();
        let stdout = String::from_utf8(out.finish().unwrap()).unwrap();
        assert_eq!(stdout, report::text_table(&[sample()]));
    }

    #[test]
    fn bad_out_dir_fails_early() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        let e = Output::new(OutputOptions {
            out_dir: Some(file.join("sub")),
            ..OutputOptions::default()
        })
        .err()
        .unwrap();
        let msg = e.to_string();
        assert!(msg.contains("creating the --out directory"), "{msg}");
        assert!(msg.contains(&file.display().to_string()), "{msg}");
    }
}
