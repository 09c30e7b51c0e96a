//! Where an engine's database lives during a workload run: a temporary directory removed
//! afterwards, or `DIR/<engine>/` kept for `shoal verify` and `shoal inspect`.
//!
//! A kept directory carries a marker file, [`MARKER`]; a later run replaces a directory
//! that has the marker and refuses one that is not empty and lacks it, so `--db-dir` never
//! deletes what the harness did not make.

use crate::error::{BenchError, Result};
use std::path::{Path, PathBuf};

/// Name of the marker file in a kept database directory.
pub const MARKER: &str = ".shoal-bench";

/// An engine's database directory for one workload setup.
#[derive(Debug)]
pub struct DbDir {
    path: PathBuf,
    _temp: Option<tempfile::TempDir>,
}

impl DbDir {
    /// A fresh, empty directory for `engine`: `keep_root/<engine>/` when `keep_root` is
    /// given (replacing an earlier run's), else a new temporary directory.
    ///
    /// # Errors
    /// [`BenchError::InvalidArgument`] (`--db-dir`) if `keep_root/<engine>` exists, is not
    /// empty and has no [`MARKER`]; [`BenchError::Io`] if a directory cannot be made or
    /// cleared.
    pub fn new(keep_root: Option<&Path>, engine: &str) -> Result<DbDir> {
        let Some(root) = keep_root else {
            let temp = tempfile::Builder::new()
                .prefix(&format!("shoal-bench-{engine}-"))
                .tempdir()
                .map_err(|e| BenchError::io("creating a temporary directory in", "$TMPDIR", e))?;
            return Ok(DbDir {
                path: temp.path().to_path_buf(),
                _temp: Some(temp),
            });
        };
        let path = root.join(engine);
        if path.exists() {
            let empty = std::fs::read_dir(&path)
                .map_err(|e| BenchError::io("reading", &path, e))?
                .next()
                .is_none();
            if !empty {
                if !path.join(MARKER).exists() {
                    return Err(BenchError::invalid(
                        "--db-dir",
                        format!(
                            "{} exists and was not made by `shoal bench` (no {MARKER} file); \
                             remove it or choose another directory",
                            path.display()
                        ),
                    ));
                }
                std::fs::remove_dir_all(&path)
                    .map_err(|e| BenchError::io("removing the previous run's", &path, e))?;
            }
        }
        std::fs::create_dir_all(&path).map_err(|e| BenchError::io("creating", &path, e))?;
        let marker = path.join(MARKER);
        std::fs::write(&marker, b"made by shoal bench; replaced by the next run\n")
            .map_err(|e| BenchError::io("writing", &marker, e))?;
        Ok(DbDir { path, _temp: None })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_directories_are_replaced_only_when_marked() {
        let root = tempfile::tempdir().unwrap();
        let d = DbDir::new(Some(root.path()), "shoal").unwrap();
        std::fs::write(d.path().join("data"), b"x").unwrap();
        drop(d);
        assert!(root.path().join("shoal/data").exists(), "kept after drop");
        let d = DbDir::new(Some(root.path()), "shoal").unwrap();
        assert!(!d.path().join("data").exists(), "replaced by the next run");

        let foreign = root.path().join("sqlite");
        std::fs::create_dir_all(&foreign).unwrap();
        std::fs::write(foreign.join("precious"), b"x").unwrap();
        let e = DbDir::new(Some(root.path()), "sqlite").unwrap_err();
        assert!(e.to_string().contains("not made by"), "{e}");
        assert!(foreign.join("precious").exists());
    }

    #[test]
    fn temporary_directories_go_away() {
        let d = DbDir::new(None, "shoal").unwrap();
        let p = d.path().to_path_buf();
        assert!(p.is_dir());
        drop(d);
        assert!(!p.exists());
    }
}
