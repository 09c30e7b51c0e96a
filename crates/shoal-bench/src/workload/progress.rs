//! Progress of a workload's data load on standard error: a progress bar when standard error
//! is a terminal, otherwise one line every [`LINE_INTERVAL`] and one at the end (so logs of
//! CI runs stay short).

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Time between two progress lines when standard error is not a terminal.
pub const LINE_INTERVAL: Duration = Duration::from_secs(5);

/// Progress of one load: `total` units (rows) of `label`.
pub struct LoadProgress {
    label: String,
    total: u64,
    done: u64,
    start: Instant,
    last_line: Instant,
    bar: Option<ProgressBar>,
    quiet: bool,
}

impl LoadProgress {
    /// Starts reporting the load of `total` rows described by `label` (e.g. `select1 shoal:
    /// loading test`); `quiet` reports nothing.
    pub fn new(label: impl Into<String>, total: u64, quiet: bool) -> LoadProgress {
        let label = label.into();
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(total);
            if let Ok(style) = ProgressStyle::with_template(
                "{msg} [{bar:30}] {pos}/{len} rows {per_sec} eta {eta}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(label.clone());
            bar
        });
        let now = Instant::now();
        LoadProgress {
            label,
            total,
            done: 0,
            start: now,
            last_line: now,
            bar,
            quiet,
        }
    }

    /// Counts `n` more rows loaded.
    pub fn inc(&mut self, n: u64) {
        self.done += n;
        if let Some(bar) = &self.bar {
            bar.inc(n);
        } else if !self.quiet && self.last_line.elapsed() >= LINE_INTERVAL {
            self.last_line = Instant::now();
            eprintln!(
                "{}: {} of {} rows ({:.0}%) in {:.1} s",
                self.label,
                self.done,
                self.total,
                self.done as f64 * 100.0 / self.total.max(1) as f64,
                self.start.elapsed().as_secs_f64()
            );
        }
    }

    /// Ends the report with one line: rows and seconds. Returns the load time in seconds.
    pub fn finish(self) -> f64 {
        let s = self.start.elapsed().as_secs_f64();
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        if !self.quiet {
            eprintln!(
                "{}: {} rows in {s:.1} s ({:.0} rows/s)",
                self.label,
                self.done,
                self.done as f64 / s.max(1e-9)
            );
        }
        s
    }
}
