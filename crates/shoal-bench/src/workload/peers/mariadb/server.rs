//! The private MariaDB server of one workload setup: a data directory made by
//! `mariadb-install-db` in the run's database directory, one `mariadbd` listening on a Unix
//! socket only (`--skip-networking`), stopped (SIGTERM, then waited for) when the
//! [`Server`] is dropped — also after a failed setup. Should this process die without
//! dropping it (killed, Ctrl-C), the kernel sends the server SIGTERM (`PR_SET_PDEATHSIG`:
//! sent when the thread that started it ends, so a setup must run on a thread that lives as
//! long as its state, as the runner's and the tests' do); no server outlives its run.
//!
//! Settings (DESIGN.md §4, module rule 3 of [`super::super`]):
//! - `innodb_buffer_pool_size` = the run's pool, rounded up to whole MiB (InnoDB's unit);
//! - `innodb_flush_log_at_trx_commit` = 1 for `full` (the redo log is written and synced at
//!   every commit), 2 for `lazy` (written to the OS at commit, synced about once a second:
//!   a commit does not wait for the disk, the closest to Shoal's lazy commit; 0 would not
//!   even write at commit);
//! - no binary log (`--skip-log-bin`, `sync_binlog=0`): the other engines have no
//!   replication log either;
//! - a 256 MiB redo log, `max_connections` = workers + [`SPARE_CONNECTIONS`],
//!   `innodb_lock_wait_timeout` = [`LOCK_WAIT_TIMEOUT_S`]; the buffer pool is neither
//!   dumped at shutdown nor loaded at startup. Everything else is InnoDB's default
//!   (doublewrite buffer on, `O_DIRECT`).

use super::super::super::dbdir::DbDir;
use super::super::super::{Durability, WorkloadOptions};
use super::ENGINE;
use crate::error::{BenchError, Result};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long the server may take to accept connections after it is started.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the server may take to shut down before it is killed.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(60);
/// Seconds a statement waits for a row lock before failing with error 1205.
pub const LOCK_WAIT_TIMEOUT_S: u32 = 10;
/// Connections allowed beyond the workers' (the loader's and the checks').
pub const SPARE_CONNECTIONS: usize = 10;
/// Redo log size in bytes.
pub const REDO_LOG_BYTES: u64 = 256 << 20;
/// The database the tables are created in.
pub const DATABASE: &str = "bench";
/// Longest Unix socket path the kernel accepts (`sun_path` less its terminating NUL).
const MAX_SOCKET_PATH: usize = 107;

/// Where `program` is: the first directory of `$PATH` holding it, else `/usr/sbin` or
/// `/usr/bin` (Debian installs `mariadbd` in `/usr/sbin`, which a user's `$PATH` may lack).
pub fn find_program(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")])
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// The buffer pool size passed to InnoDB for a pool of `pool_bytes`: rounded up to a whole
/// MiB, at least 8 MiB.
pub fn buffer_pool_bytes(pool_bytes: u64) -> u64 {
    const MIB: u64 = 1 << 20;
    pool_bytes.max(8 * MIB).div_ceil(MIB) * MIB
}

/// `innodb_flush_log_at_trx_commit` for `durability` (module doc).
pub fn flush_log_at_trx_commit(durability: Durability) -> u8 {
    match durability {
        Durability::Full => 1,
        Durability::Lazy => 2,
    }
}

/// A running private `mariadbd`.
pub struct Server {
    child: Option<Child>,
    socket: PathBuf,
    error_log: PathBuf,
    // Dropped after the process has stopped (declaration order): a socket directory made
    // because the database directory's path was too long, then the database directory.
    _socket_dir: Option<tempfile::TempDir>,
    _dir: DbDir,
}

impl Server {
    /// Makes a data directory in a new database directory for `opts` and starts a server
    /// on it with a buffer pool of `pool_bytes` serving `connections` clients; returns once
    /// it accepts connections, with the database [`DATABASE`] created.
    ///
    /// # Errors
    /// The harness's directory errors; [`BenchError::Peer`] if `mariadbd` or
    /// `mariadb-install-db` is missing, fails, or the server does not accept connections
    /// within [`START_TIMEOUT`] (the message ends with its error log's last lines).
    pub fn start(opts: &WorkloadOptions, pool_bytes: u64, connections: usize) -> Result<Server> {
        let dir = DbDir::new(opts.db_dir.as_deref(), ENGINE)?;
        let data = dir.path().join("data");
        let install_log = dir.path().join("install-db.log");
        install_db(&data, &install_log, dir.path())?;
        let (socket, socket_dir) = socket_path(dir.path())?;
        let error_log = dir.path().join("mariadbd.err");
        let mariadbd = find_program("mariadbd")
            .ok_or_else(|| BenchError::peer(ENGINE, "starting the server", "mariadbd not found"))?;
        let mut cmd = Command::new(mariadbd);
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg("--skip-networking")
            .arg(format!(
                "--pid-file={}",
                dir.path().join("mariadbd.pid").display()
            ))
            .arg(format!("--log-error={}", error_log.display()))
            .arg(format!("--tmpdir={}", dir.path().display()))
            .arg(format!(
                "--innodb-buffer-pool-size={}",
                buffer_pool_bytes(pool_bytes)
            ))
            .arg(format!(
                "--innodb-flush-log-at-trx-commit={}",
                flush_log_at_trx_commit(opts.durability)
            ))
            .arg(format!("--innodb-log-file-size={REDO_LOG_BYTES}"))
            .arg(format!("--innodb-lock-wait-timeout={LOCK_WAIT_TIMEOUT_S}"))
            .arg("--innodb-buffer-pool-dump-at-shutdown=OFF")
            .arg("--innodb-buffer-pool-load-at-startup=OFF")
            .arg("--skip-log-bin")
            .arg("--sync-binlog=0")
            .arg("--skip-name-resolve")
            .arg(format!(
                "--max-connections={}",
                connections + SPARE_CONNECTIONS
            ))
            .arg("--transaction-isolation=READ-COMMITTED");
        if running_as_root() {
            cmd.arg("--user=root");
        }
        // SAFETY: the closure runs in the forked child before exec and only calls
        // prctl(2), which is async-signal-safe and touches no memory of the parent's.
        unsafe {
            cmd.pre_exec(|| {
                // The server gets SIGTERM (a clean shutdown) if this process dies without
                // dropping the `Server` (killed, Ctrl-C), so it never outlives the run.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| BenchError::peer(ENGINE, "starting mariadbd", e))?;
        let mut server = Server {
            child: Some(child),
            socket,
            error_log,
            _socket_dir: socket_dir,
            _dir: dir,
        };
        server.wait_until_ready()?;
        let mut c = server.connect(None)?;
        mysql::prelude::Queryable::query_drop(
            &mut c,
            format!("CREATE DATABASE {DATABASE} CHARACTER SET latin1 COLLATE latin1_bin"),
        )
        .map_err(|e| BenchError::peer(ENGINE, "CREATE DATABASE", e))?;
        Ok(server)
    }

    /// The server's Unix socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Opens a connection as `root` to database `db` (none: no default database), at READ
    /// COMMITTED, with autocommit on and no client-side statement cache (prepared
    /// statements are kept by their owners; a cache that evicts would close them).
    ///
    /// # Errors
    /// [`BenchError::Peer`] if the server refuses the connection.
    pub fn connect(&self, db: Option<&str>) -> Result<mysql::Conn> {
        let opts = mysql::OptsBuilder::new()
            .socket(Some(self.socket.to_string_lossy()))
            .user(Some("root"))
            .db_name(db)
            .stmt_cache_size(0)
            .init(vec![
                "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
                "SET SESSION autocommit = 1",
            ]);
        mysql::Conn::new(opts).map_err(|e| BenchError::peer(ENGINE, "connecting", e))
    }

    /// Polls the socket until a connection succeeds.
    fn wait_until_ready(&mut self) -> Result<()> {
        let start = Instant::now();
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    self.child = None;
                    return Err(BenchError::peer(
                        ENGINE,
                        "starting mariadbd",
                        format!("it exited with {status}; {}", self.log_tail()),
                    ));
                }
            }
            if self.socket.exists() && self.connect(None).is_ok() {
                return Ok(());
            }
            if start.elapsed() > START_TIMEOUT {
                return Err(BenchError::peer(
                    ENGINE,
                    "starting mariadbd",
                    format!(
                        "no connection after {} s; {}",
                        START_TIMEOUT.as_secs(),
                        self.log_tail()
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The telling lines of the server's error log, for an error message.
    fn log_tail(&self) -> String {
        format!(
            "error log {}: {}",
            self.error_log.display(),
            log_excerpt(&self.error_log)
        )
    }

    /// Stops the server: SIGTERM (a clean shutdown), then waits up to [`STOP_TIMEOUT`];
    /// kills it if it is still running then. Does nothing if it has stopped already.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // SAFETY: kill(2) with a process id and a signal number touches no memory of
        // ours; the id is our own child's, not yet waited for, so it names that process.
        let terminated = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) } == 0;
        if terminated {
            let start = Instant::now();
            while start.elapsed() < STOP_TIMEOUT {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs `mariadb-install-db` for a new data directory `data`, its output in `log`, its
/// temporary files in `tmp` (a private one: bootstrap servers sharing `/tmp` were seen to
/// crash on each other's temporary tables).
fn install_db(data: &Path, log: &Path, tmp: &Path) -> Result<()> {
    let program = find_program("mariadb-install-db").ok_or_else(|| {
        BenchError::peer(
            ENGINE,
            "making the data directory",
            "mariadb-install-db not found",
        )
    })?;
    let out = std::fs::File::create(log).map_err(|e| BenchError::io("creating", log, e))?;
    let err = out
        .try_clone()
        .map_err(|e| BenchError::io("opening", log, e))?;
    let mut cmd = Command::new(program);
    cmd.arg("--no-defaults")
        .arg(format!("--datadir={}", data.display()))
        .arg("--auth-root-authentication-method=normal")
        .arg("--skip-test-db")
        .arg("--skip-name-resolve")
        .arg(format!("--tmpdir={}", tmp.display()));
    if running_as_root() {
        cmd.arg("--user=root");
    }
    let status = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(|e| BenchError::peer(ENGINE, "running mariadb-install-db", e))?;
    if status.success() {
        Ok(())
    } else {
        Err(BenchError::peer(
            ENGINE,
            "running mariadb-install-db",
            format!("{status}; {}: {}", log.display(), log_excerpt(log)),
        ))
    }
}

/// The lines of the log file `path` that say what went wrong: its first three lines with
/// `ERROR` in them, else its last five, joined with ` | `.
fn log_excerpt(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let errors: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("ERROR"))
        .take(3)
        .collect();
    if !errors.is_empty() {
        return errors.join(" | ");
    }
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

/// The socket's path: `dir/mysqld.sock`, or one in a new temporary directory if that path
/// is too long for a Unix socket.
fn socket_path(dir: &Path) -> Result<(PathBuf, Option<tempfile::TempDir>)> {
    let socket = dir.join("mysqld.sock");
    if socket.as_os_str().len() <= MAX_SOCKET_PATH {
        return Ok((socket, None));
    }
    let temp = tempfile::Builder::new()
        .prefix("shoal-mariadb-")
        .tempdir()
        .map_err(|e| BenchError::io("creating a temporary directory in", "$TMPDIR", e))?;
    let socket = temp.path().join("mysqld.sock");
    if socket.as_os_str().len() > MAX_SOCKET_PATH {
        return Err(BenchError::peer(
            ENGINE,
            "choosing the socket path",
            format!(
                "{} is longer than a Unix socket path may be ({MAX_SOCKET_PATH} bytes); \
                 set TMPDIR to a shorter directory",
                socket.display()
            ),
        ));
    }
    Ok((socket, Some(temp)))
}

/// Whether this process runs as root (then `mariadbd` must be told `--user=root`).
fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_lines_are_picked_from_a_log() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        std::fs::write(&log, "a\n[ERROR] first\nb\n[ERROR] second\nc\n").unwrap();
        assert_eq!(log_excerpt(&log), "[ERROR] first | [ERROR] second");
        std::fs::write(&log, "1\n2\n3\n4\n5\n6\n").unwrap();
        assert_eq!(log_excerpt(&log), "2 | 3 | 4 | 5 | 6");
        assert_eq!(log_excerpt(&dir.path().join("missing")), "");
    }

    #[test]
    fn a_socket_path_that_is_too_long_moves_to_a_temporary_directory() {
        let (short, temp) = socket_path(Path::new("/tmp/x")).unwrap();
        assert_eq!(short, Path::new("/tmp/x/mysqld.sock"));
        assert!(temp.is_none());
        let long = PathBuf::from("/tmp").join("d".repeat(120));
        let (moved, temp) = socket_path(&long).unwrap();
        let temp = temp.unwrap();
        assert!(moved.starts_with(temp.path()));
        assert!(moved.as_os_str().len() <= MAX_SOCKET_PATH);
    }
}
