//! # Real file-system storage
//!
//! Job: implement [`Storage`] over one directory of the real file system, with the narrowest
//! set of system calls that gives the guarantees the layers above rely on: positioned reads
//! and writes (`pread`/`pwrite` through [`FileExt`]), `fdatasync` for durability, optional
//! `O_DIRECT` to bypass the page cache, and an `fsync` of the directory to make file creation
//! and removal durable.
//!
//! ```text
//!   FileStorage { dir }  ── open(name) ──►  RealFile { File, path }
//!        │                                     read_exact_at  = pread  (loops until full)
//!        │ sync_dir = fsync(dir)               write_all_at   = pwrite (loops until done)
//!        │ list / exists / remove              sync_data      = fdatasync
//!        ▼                                     set_len / len  = ftruncate / fstat
//!   <dir>/<name> ...
//! ```
//!
//! Invariants (io rules 1–3 of the module essay hold here; these add to them):
//! 1. A name is checked with [`check_file_name`] before it touches the file system, so no
//!    call can reach outside the directory (`/`, `.`, `..` are refused).
//! 2. Every error is an [`Error`] that names the operation and the *full* path of the file or
//!    directory (`<dir>/<name>`, made absolute at `open_dir`); `ENOSPC` becomes
//!    `Error::NoSpace` (through [`Error::from_io`]). The OS error is kept as the source, so
//!    its raw error number (`EIO`, `EINVAL`, ...) stays visible to callers.
//! 3. A file created by [`Storage::open`] is followed by an `fsync` of the directory before
//!    `open` returns, so a created file survives a crash once its data is synced.
//! 4. Nothing here panics on any input: offsets past `i64::MAX`, misaligned `O_DIRECT`
//!    buffers and the like come back from the kernel as `Error::Io` (`EINVAL`/`EFBIG`).
//!
//! What it deliberately does not do: no locking of the directory against other processes
//! (that belongs to the database's open path), no retry of `EINTR` beyond what `std` does,
//! no retry of a failed `fdatasync` (after a failed sync the caller must treat the failure as
//! sticky, see the module essay), no `fsync` of the directory after [`Storage::remove`]
//! (call [`Storage::sync_dir`]), and no check of `O_DIRECT` alignment before the call — the
//! kernel's `EINVAL` is the check.

use super::{check_file_name, OpenOptions, Storage, StorageFile};
use crate::error::{Error, Result};
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A [`Storage`] over one directory of the real file system.
///
/// Cheap to share behind an `Arc`; it holds only the directory's path.
#[derive(Debug, Clone)]
pub struct FileStorage {
    /// The directory, made absolute when opened.
    dir: PathBuf,
}

impl FileStorage {
    /// Opens the directory `path` as a storage. With `create`, the directory (and missing
    /// parents) is created first, and its parent directory is synced so that the creation
    /// is durable.
    ///
    /// # Errors
    /// `Error::Io` (op `open_dir`, naming the path) if the path is missing (`NotFound`) and
    /// `create` is false, if it exists but is not a directory (raw os error `ENOTDIR`), or if
    /// it cannot be created or examined; `Error::InvalidArgument` if `path` is empty.
    pub fn open_dir(path: impl AsRef<Path>, create: bool) -> Result<FileStorage> {
        let path = path.as_ref();
        if path.as_os_str().is_empty() {
            return Err(Error::invalid("path", "directory path must not be empty"));
        }
        let dir = std::path::absolute(path)
            .map_err(|e| Error::from_io("open_dir", path.display().to_string(), e))?;
        let shown = dir.display().to_string();
        if create && fs::symlink_metadata(&dir).is_err() {
            fs::create_dir_all(&dir).map_err(|e| Error::from_io("create_dir", &shown, e))?;
            if let Some(parent) = dir.parent() {
                sync_directory(parent)?;
            }
        }
        let meta = fs::metadata(&dir).map_err(|e| Error::from_io("open_dir", &shown, e))?;
        if !meta.is_dir() {
            let source = io::Error::from_raw_os_error(libc::ENOTDIR);
            return Err(Error::from_io("open_dir", shown, source));
        }
        Ok(FileStorage { dir })
    }

    /// The directory, as an absolute path.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Full path of file `name`, after checking the name (file rule 1).
    fn file_path(&self, name: &str) -> Result<PathBuf> {
        check_file_name(name)?;
        Ok(self.dir.join(name))
    }

    fn shown(&self) -> String {
        self.dir.display().to_string()
    }
}

/// `fsync` of a directory: makes the creation and removal of its entries durable.
fn sync_directory(dir: &Path) -> Result<()> {
    let shown = || dir.display().to_string();
    let handle = File::open(dir).map_err(|e| Error::from_io("sync_dir", shown(), e))?;
    handle
        .sync_all()
        .map_err(|e| Error::from_io("sync_dir", shown(), e))
}

impl Storage for FileStorage {
    fn open(&self, name: &str, opts: OpenOptions) -> Result<Arc<dyn StorageFile>> {
        let path = self.file_path(name)?;
        let shown = path.display().to_string();
        let open = |create: bool, create_new: bool| {
            let mut o = fs::OpenOptions::new();
            o.read(true)
                .write(true)
                .create(create)
                .create_new(create_new);
            if opts.direct {
                o.custom_flags(libc::O_DIRECT);
            }
            o.open(&path)
        };
        // Open without creating first, so that we know whether this call created the file
        // and must sync the directory (file rule 3).
        let (file, created) = if opts.create_new {
            (open(false, true), true)
        } else {
            match open(false, false) {
                Err(e) if e.kind() == io::ErrorKind::NotFound && opts.create => {
                    (open(true, false), true)
                }
                other => (other, false),
            }
        };
        let file = file.map_err(|e| Error::from_io("open", &shown, e))?;
        if created {
            sync_directory(&self.dir)?;
        }
        Ok(Arc::new(RealFile {
            file,
            name: name.to_owned(),
            path: shown,
        }))
    }

    fn exists(&self, name: &str) -> Result<bool> {
        let path = self.file_path(name)?;
        match fs::symlink_metadata(&path) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::from_io("exists", path.display().to_string(), e)),
        }
    }

    fn remove(&self, name: &str) -> Result<()> {
        let path = self.file_path(name)?;
        fs::remove_file(&path).map_err(|e| Error::from_io("remove", path.display().to_string(), e))
    }

    fn list(&self) -> Result<Vec<String>> {
        let entries =
            fs::read_dir(&self.dir).map_err(|e| Error::from_io("list", self.shown(), e))?;
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::from_io("list", self.shown(), e))?;
            let kind = entry
                .file_type()
                .map_err(|e| Error::from_io("list", entry.path().display().to_string(), e))?;
            // Directories and names that are not UTF-8 cannot be opened through this API,
            // so they are not files of this storage.
            if kind.is_dir() {
                continue;
            }
            if let Ok(name) = entry.file_name().into_string() {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    fn sync_dir(&self) -> Result<()> {
        sync_directory(&self.dir)
    }
}

/// One open file of a [`FileStorage`].
#[derive(Debug)]
struct RealFile {
    file: File,
    /// The name within the storage directory.
    name: String,
    /// The full path, for error messages (file rule 2).
    path: String,
}

impl StorageFile for RealFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.file
            .read_exact_at(buf, offset)
            .map_err(|e| Error::from_io("read", &self.path, e))
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.file
            .write_all_at(buf, offset)
            .map_err(|e| Error::from_io("write", &self.path, e))
    }

    fn sync_data(&self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| Error::from_io("sync", &self.path, e))
    }

    fn len(&self) -> Result<u64> {
        self.file
            .metadata()
            .map(|m| m.len())
            .map_err(|e| Error::from_io("len", &self.path, e))
    }

    fn set_len(&self, len_bytes: u64) -> Result<()> {
        self.file
            .set_len(len_bytes)
            .map_err(|e| Error::from_io("set_len", &self.path, e))
    }

    fn name(&self) -> &str {
        &self.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{AlignedBuf, SECTOR_SIZE};

    fn storage() -> (tempfile::TempDir, FileStorage) {
        let tmp = tempfile::tempdir().unwrap();
        let s = FileStorage::open_dir(tmp.path(), false).unwrap();
        (tmp, s)
    }

    const CREATE: OpenOptions = OpenOptions {
        create: true,
        create_new: false,
        direct: false,
    };

    #[test]
    fn round_trip_and_len() {
        let (_tmp, s) = storage();
        let f = s.open("data", CREATE).unwrap();
        assert_eq!(f.name(), "data");
        assert!(f.is_empty().unwrap());
        f.write_all_at(b"hello", 0).unwrap();
        f.write_all_at(b"world", 8192).unwrap();
        f.sync_data().unwrap();
        assert_eq!(f.len().unwrap(), 8197);
        let mut buf = [0u8; 5];
        f.read_exact_at(&mut buf, 8192).unwrap();
        assert_eq!(&buf, b"world");
        // The hole reads as zeroes.
        f.read_exact_at(&mut buf, 100).unwrap();
        assert_eq!(buf, [0; 5]);
        f.set_len(3).unwrap();
        assert_eq!(f.len().unwrap(), 3);
        // Reopening sees the same bytes.
        drop(f);
        let f = s.open("data", OpenOptions::default()).unwrap();
        let mut buf = [0u8; 3];
        f.read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"hel");
    }

    #[test]
    fn read_past_end_is_an_error() {
        let (_tmp, s) = storage();
        let f = s.open("data", CREATE).unwrap();
        f.write_all_at(&[7; 100], 0).unwrap();
        let mut buf = [0u8; 10];
        let err = f.read_exact_at(&mut buf, 95).unwrap_err();
        match err {
            Error::Io { op, path, source } => {
                assert_eq!(op, "read");
                assert!(path.ends_with("/data"), "{path}");
                assert_eq!(source.kind(), io::ErrorKind::UnexpectedEof);
            }
            other => panic!("unexpected {other:?}"),
        }
        // Offsets the kernel cannot represent are errors, not panics.
        assert!(matches!(
            f.read_exact_at(&mut buf, u64::MAX - 3),
            Err(Error::Io { .. })
        ));
        assert!(f.write_all_at(&buf, u64::MAX - 3).is_err());
    }

    #[test]
    fn create_list_exists_remove() {
        let (tmp, s) = storage();
        assert_eq!(s.list().unwrap(), Vec::<String>::new());
        assert!(!s.exists("b").unwrap());
        // Without `create` a missing file is NotFound.
        let err = s.open("b", OpenOptions::default()).unwrap_err();
        assert!(
            matches!(&err, Error::Io { op: "open", source, .. } if source.kind() == io::ErrorKind::NotFound),
            "{err:?}"
        );
        s.open("b", CREATE).unwrap();
        s.open("a", CREATE).unwrap();
        fs::create_dir(tmp.path().join("subdir")).unwrap();
        assert_eq!(s.list().unwrap(), vec!["a".to_string(), "b".to_string()]);
        assert!(s.exists("a").unwrap());
        // create_new refuses an existing file.
        let new = OpenOptions {
            create_new: true,
            ..OpenOptions::default()
        };
        let err = s.open("a", new).unwrap_err();
        assert!(
            matches!(&err, Error::Io { source, .. } if source.kind() == io::ErrorKind::AlreadyExists),
            "{err:?}"
        );
        s.open("c", new).unwrap();
        s.remove("a").unwrap();
        s.sync_dir().unwrap();
        assert!(!s.exists("a").unwrap());
        assert_eq!(s.list().unwrap(), vec!["b".to_string(), "c".to_string()]);
        let err = s.remove("a").unwrap_err();
        assert!(matches!(err, Error::Io { op: "remove", .. }), "{err:?}");
    }

    #[test]
    fn bad_names_are_rejected() {
        let (_tmp, s) = storage();
        let long = "x".repeat(256);
        for name in ["", ".", "..", "a/b", "/etc", "../x", "a\0b", long.as_str()] {
            let err = s.open(name, CREATE).unwrap_err();
            assert!(
                matches!(err, Error::InvalidArgument { name: "name", .. }),
                "{name:?}: {err:?}"
            );
            assert!(matches!(s.exists(name), Err(Error::InvalidArgument { .. })));
            assert!(matches!(s.remove(name), Err(Error::InvalidArgument { .. })));
        }
        assert!(s.list().unwrap().is_empty());
        s.open(&"x".repeat(255), CREATE).unwrap();
    }

    /// Opens a file with `O_DIRECT` in `dir` and uses it if the file system allows it.
    fn direct_io_in(dir: &Path) {
        let s = FileStorage::open_dir(dir, false).unwrap();
        let opts = OpenOptions {
            create: true,
            direct: true,
            ..OpenOptions::default()
        };
        match s.open("direct", opts) {
            Ok(f) => {
                let mut buf = AlignedBuf::new(4096);
                buf.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
                f.write_all_at(&buf, 4096).unwrap();
                f.sync_data().unwrap();
                let mut back = AlignedBuf::new(4096);
                f.read_exact_at(&mut back, 4096).unwrap();
                assert_eq!(&back[..], &buf[..]);
                // A misaligned offset is the kernel's EINVAL, a typed error (tmpfs since
                // Linux 6.6 accepts O_DIRECT and ignores alignment, so it may also succeed).
                if let Err(err) = f.write_all_at(&buf[..SECTOR_SIZE], 1) {
                    assert!(matches!(err, Error::Io { op: "write", .. }), "{err:?}");
                }
            }
            // Some file systems (tmpfs before Linux 6.6) refuse O_DIRECT with EINVAL.
            Err(err) => assert!(matches!(err, Error::Io { op: "open", .. }), "{err:?}"),
        }
    }

    #[test]
    fn direct_io_works_or_fails_typed() {
        let tmp = tempfile::tempdir().unwrap();
        direct_io_in(tmp.path());
        // /dev/shm is usually tmpfs, which refuses O_DIRECT on older kernels.
        if let Ok(shm) = tempfile::tempdir_in("/dev/shm") {
            direct_io_in(shm.path());
        }
    }

    #[test]
    fn missing_directory_is_a_clear_error() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("nope");
        let err = FileStorage::open_dir(&missing, false).unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(&err, Error::Io { op: "open_dir", source, .. } if source.kind() == io::ErrorKind::NotFound),
            "{err:?}"
        );
        assert!(text.contains("nope"), "{text}");
        // A regular file is not a directory.
        fs::write(tmp.path().join("plain"), b"x").unwrap();
        let err = FileStorage::open_dir(tmp.path().join("plain"), true).unwrap_err();
        assert!(
            matches!(&err, Error::Io { source, .. } if source.raw_os_error() == Some(libc::ENOTDIR)),
            "{err:?}"
        );
        assert!(matches!(
            FileStorage::open_dir("", true),
            Err(Error::InvalidArgument { .. })
        ));
        // With `create` the directory and its parents are made.
        let s = FileStorage::open_dir(missing.join("deeper"), true).unwrap();
        assert!(s.path().is_absolute() && s.path().is_dir());
        s.open("f", CREATE).unwrap();
        assert_eq!(s.list().unwrap(), vec!["f".to_string()]);
    }
}
