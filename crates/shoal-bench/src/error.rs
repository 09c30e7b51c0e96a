//! The benchmark crate's error type: engine errors, file errors of the harness itself, bad
//! settings, failed result checks and panicking worker threads.

use std::path::PathBuf;

/// Result alias of the benchmark crate.
pub type Result<T, E = BenchError> = std::result::Result<T, E>;

/// Everything that can stop a benchmark run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// The engine under test returned an error (during setup or an operation).
    #[error(transparent)]
    Engine(#[from] shoal::Error),

    /// A peer engine (SQLite) returned an error that retrying cannot cure. `what` names the
    /// statement or step.
    #[error("sqlite: {what}: {source}")]
    Sqlite {
        /// The statement or step that failed.
        what: String,
        /// The driver's error.
        #[source]
        source: rusqlite::Error,
    },

    /// A peer engine (PostgreSQL, MariaDB, Berkeley DB, Derby) failed in a way that retrying
    /// cannot cure: its server did not start, a statement failed, its harness exited with an
    /// error. `what` names the step or statement.
    #[error("{engine}: {what}: {message}")]
    Peer {
        /// The engine's name, e.g. `postgres`.
        engine: &'static str,
        /// The step or statement that failed.
        what: String,
        /// The driver's or server's message.
        message: String,
    },

    /// A file or directory of the harness (database directory, `--out` directory, report
    /// file) could not be created, read or written. `what` says what the harness was doing.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What the harness was doing, e.g. "creating the output directory".
        what: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating-system error.
        #[source]
        source: std::io::Error,
    },

    /// A setting is out of range or names something that does not exist. `name` is the
    /// setting as the user typed it (e.g. `--threads`, `variant`).
    #[error("invalid {name}: {reason}")]
    InvalidArgument {
        /// The setting.
        name: &'static str,
        /// Why it is rejected, with what is accepted.
        reason: String,
    },

    /// An operation saw a result that the data set up for it rules out (e.g. a page holding
    /// another page's content): the engine under test is wrong, so the run stops.
    #[error("result check failed: {0}")]
    Check(String),

    /// A chart of the `--out` directory could not be drawn or written (see `chart`).
    #[error("drawing the chart {}: {message}", path.display())]
    Chart {
        /// The chart file (SVG or PNG).
        path: PathBuf,
        /// What the drawing library reported.
        message: String,
    },

    /// A worker thread panicked; the payload's message, if it had one.
    #[error("benchmark thread {thread_idx} panicked: {message}")]
    Panicked {
        /// Index of the worker thread, from 0.
        thread_idx: usize,
        /// The panic message (or a placeholder when the payload is not a string).
        message: String,
    },
}

impl BenchError {
    /// Shorthand for [`BenchError::InvalidArgument`].
    pub fn invalid(name: &'static str, reason: impl Into<String>) -> BenchError {
        BenchError::InvalidArgument {
            name,
            reason: reason.into(),
        }
    }

    /// Shorthand for [`BenchError::Sqlite`].
    pub fn sqlite(what: impl Into<String>, source: rusqlite::Error) -> BenchError {
        BenchError::Sqlite {
            what: what.into(),
            source,
        }
    }

    /// Shorthand for [`BenchError::Peer`].
    pub fn peer(
        engine: &'static str,
        what: impl Into<String>,
        message: impl std::fmt::Display,
    ) -> BenchError {
        BenchError::Peer {
            engine,
            what: what.into(),
            message: message.to_string(),
        }
    }

    /// Shorthand for [`BenchError::Io`].
    pub fn io(what: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> BenchError {
        BenchError::Io {
            what,
            path: path.into(),
            source,
        }
    }
}
