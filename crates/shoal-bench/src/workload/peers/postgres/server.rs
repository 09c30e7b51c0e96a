//! The private PostgreSQL server of one workload setup: `initdb` in a new directory under
//! the run's database directory, `postgres` listening on a Unix socket in that directory
//! only, stopped (fast shutdown) when the [`PgServer`] is dropped — also after an error.
//!
//! PostgreSQL refuses to run as root. When this process is root, `initdb` and `postgres`
//! run as the `postgres` system user (made by Debian's package), and the directories they
//! write are given to that user; otherwise they run as the current user.
//!
//! Layout of the engine directory ([`DbDir`], `<db_dir>/postgres/` or a temporary one):
//!
//! ```text
//! data/          the cluster (initdb -D)
//! run/           the server's Unix socket (mode 0700: only its owner and root connect)
//! postgres.log   the server's standard error, quoted in errors when it fails to start
//! ```
//!
//! Settings, all on the server's command line ([`ServerSettings::args`]):
//! - `shared_buffers` = the run's pool size (Shoal's pool).
//! - `fsync=on` always; `synchronous_commit=on` for durability `full` (a commit returns
//!   once its WAL record is flushed), `off` for `lazy` — PostgreSQL's relaxed commit: the
//!   WAL writer flushes within `wal_writer_delay` (200 ms), so a crash loses at most the
//!   last moments of commits but never leaves the database inconsistent, as Shoal's lazy
//!   commit.
//! - `wal_level=minimal`, `max_wal_senders=0`: no replication or archiving for a private
//!   server; every change of the measured transactions is still logged (minimal only lets
//!   a bulk load into a table made in the same transaction skip the log).
//! - `max_wal_size=4GB`: PostgreSQL's default (1 GB) would start checkpoints every few
//!   seconds of a write-heavy run; Shoal checkpoints by log volume too.
//! - `jit=off`: the consistency checks' large queries would otherwise be compiled with
//!   LLVM; the measured transactions are too cheap for JIT either way.
//! - `max_connections` = the workers plus a few (loader, checks, pgbench).

use super::super::super::dbdir::DbDir;
use super::super::super::Durability;
use super::ENGINE;
use crate::error::{BenchError, Result};
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Port number in the socket's name (`run/.s.PGSQL.<port>`); the socket directory is
/// private, so the standard port never collides.
pub const PORT: u16 = 5432;
/// The superuser `initdb` creates, which the harness connects as.
pub const USER: &str = "bench";
/// The database the harness uses (made by `initdb`).
pub const DATABASE: &str = "postgres";
/// The system user the server runs as when this process is root.
pub const SYSTEM_USER: &str = "postgres";
/// How long the server may take to accept connections after it was started.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a fast shutdown may take before the server is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections beyond the workers: the loader or checker, pgbench's extra, spare.
const EXTRA_CONNECTIONS: usize = 5;
/// Longest Unix socket path Linux accepts (`sun_path` less its terminating NUL).
const MAX_SOCKET_PATH: usize = 107;
/// Lines of the server log quoted in an error.
const LOG_TAIL_LINES: usize = 15;

/// Where PostgreSQL's server programs are.
#[derive(Clone, Debug)]
pub struct Binaries {
    /// The directory holding `initdb`, `postgres` and `pgbench`.
    pub bindir: PathBuf,
}

impl Binaries {
    /// Finds the server programs: `pg_config --bindir` if it names a directory with
    /// `initdb`, else the newest `/usr/lib/postgresql/<version>/bin` (Debian's layout).
    ///
    /// # Errors
    /// "initdb not found; run peers/install.sh" when neither has them.
    pub fn find() -> std::result::Result<Binaries, String> {
        let mut candidates = Vec::new();
        if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
            if out.status.success() {
                let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
                candidates.push(PathBuf::from(dir));
            }
        }
        candidates.extend(debian_bindirs(Path::new("/usr/lib/postgresql")));
        Binaries::find_in(&candidates)
    }

    /// The first of `dirs` that holds `initdb` and `postgres`.
    ///
    /// # Errors
    /// As [`Binaries::find`].
    pub fn find_in(dirs: &[PathBuf]) -> std::result::Result<Binaries, String> {
        dirs.iter()
            .find(|d| d.join("initdb").is_file() && d.join("postgres").is_file())
            .map(|d| Binaries { bindir: d.clone() })
            .ok_or_else(|| "initdb not found; run peers/install.sh".to_string())
    }

    /// The program `name` in [`Binaries::bindir`].
    pub fn program(&self, name: &str) -> PathBuf {
        self.bindir.join(name)
    }
}

/// `root/<version>/bin` for each version directory under `root`, newest version first.
fn debian_bindirs(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut versions: Vec<(u32, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((v, e.path().join("bin")))
        })
        .collect();
    versions.sort_by_key(|v| std::cmp::Reverse(v.0));
    versions.into_iter().map(|(_, p)| p).collect()
}

/// The user and group the server runs as: `None` to stay the current user (not root).
///
/// # Errors
/// A one-line reason when this process is root and there is no [`SYSTEM_USER`].
pub fn run_as() -> std::result::Result<Option<(u32, u32)>, String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    system_user(&passwd, SYSTEM_USER).map(Some).ok_or_else(|| {
        format!(
            "{ENGINE}: running as root and there is no `{SYSTEM_USER}` system user to run the \
             server as; run peers/install.sh"
        )
    })
}

/// The uid and gid of `user` in the text of an `/etc/passwd` file.
fn system_user(passwd: &str, user: &str) -> Option<(u32, u32)> {
    passwd.lines().find_map(|line| {
        let f: Vec<&str> = line.split(':').collect();
        if f.len() >= 4 && f[0] == user {
            Some((f[2].parse().ok()?, f[3].parse().ok()?))
        } else {
            None
        }
    })
}

/// How to start the server.
#[derive(Clone, Copy, Debug)]
pub struct ServerSettings {
    /// `shared_buffers` in bytes (rounded down to kB, at least 128 kB).
    pub shared_buffers: u64,
    /// `synchronous_commit` on (`full`) or off (`lazy`).
    pub durability: Durability,
    /// Client connections the server must accept at once (workers, or pgbench clients).
    pub connections: usize,
}

impl ServerSettings {
    /// The `-c name=value` settings of the module doc.
    pub fn args(&self) -> Vec<String> {
        let sync = match self.durability {
            Durability::Full => "on",
            Durability::Lazy => "off",
        };
        let kb = (self.shared_buffers / 1024).max(128);
        [
            format!("shared_buffers={kb}kB"),
            "fsync=on".into(),
            format!("synchronous_commit={sync}"),
            "wal_level=minimal".into(),
            "max_wal_senders=0".into(),
            "max_wal_size=4GB".into(),
            "jit=off".into(),
            format!("max_connections={}", self.connections + EXTRA_CONNECTIONS),
            "listen_addresses=".into(),
            "unix_socket_permissions=0700".into(),
            "logging_collector=off".into(),
        ]
        .into_iter()
        .flat_map(|s| ["-c".to_string(), s])
        .collect()
    }
}

/// A running private server; stopped and waited for on drop.
pub struct PgServer {
    child: Option<Child>,
    socket_dir: PathBuf,
    log: PathBuf,
    // Dropped after the server stopped (field order): a temporary directory goes then.
    dir: DbDir,
}

impl PgServer {
    /// Makes a new cluster under `dir` and starts a server on it with `settings`; returns
    /// once it accepts connections.
    ///
    /// # Errors
    /// [`BenchError::Peer`] if PostgreSQL is not installed, `initdb` fails, the server exits
    /// or does not accept connections within a minute (with the end of its log);
    /// [`BenchError::Io`] for the directories.
    pub fn start(dir: DbDir, settings: &ServerSettings) -> Result<PgServer> {
        let bins = Binaries::find().map_err(|why| BenchError::peer(ENGINE, "starting", why))?;
        let owner = run_as().map_err(|why| BenchError::peer(ENGINE, "starting", why))?;
        let data = dir.path().join("data");
        let socket_dir = dir.path().join("run");
        let log = dir.path().join("postgres.log");
        let socket = socket_dir.join(format!(".s.PGSQL.{PORT}"));
        if socket.as_os_str().len() > MAX_SOCKET_PATH {
            return Err(BenchError::invalid(
                "--db-dir",
                format!(
                    "PostgreSQL's socket {} would be longer than {MAX_SOCKET_PATH} bytes; \
                     choose a shorter directory",
                    socket.display()
                ),
            ));
        }
        // The server user must reach its directories: open the engine directory (a
        // temporary one is 0700) for traversal and listing.
        set_mode(dir.path(), 0o755)?;
        for d in [&data, &socket_dir] {
            std::fs::create_dir(d).map_err(|e| BenchError::io("creating", d, e))?;
            set_mode(d, 0o700)?;
            if let Some((uid, gid)) = owner {
                std::os::unix::fs::chown(d, Some(uid), Some(gid))
                    .map_err(|e| BenchError::io("giving the postgres user", d, e))?;
            }
        }
        initdb(&bins, owner, &data)?;
        let log_file = File::create(&log).map_err(|e| BenchError::io("creating", &log, e))?;
        let log_err = log_file
            .try_clone()
            .map_err(|e| BenchError::io("opening", &log, e))?;
        let mut cmd = Command::new(bins.program("postgres"));
        cmd.arg("-D")
            .arg(&data)
            .arg("-p")
            .arg(PORT.to_string())
            .arg("-k")
            .arg(&socket_dir)
            .args(settings.args())
            .current_dir(&data)
            .stdin(Stdio::null())
            .stdout(log_file)
            .stderr(log_err);
        if let Some((uid, gid)) = owner {
            cmd.uid(uid).gid(gid);
        }
        let child = cmd.spawn().map_err(|e| {
            BenchError::peer(
                ENGINE,
                "starting the server",
                format!(
                    "{}: {e}{}",
                    bins.program("postgres").display(),
                    reach_hint(owner, &data)
                ),
            )
        })?;
        let mut server = PgServer {
            child: Some(child),
            socket_dir,
            log,
            dir,
        };
        server.wait_ready()?;
        Ok(server)
    }

    /// The directory of the server's Unix socket (libpq's `host`).
    pub fn socket_dir(&self) -> &Path {
        &self.socket_dir
    }

    /// The engine directory the cluster lives in.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Client settings for a connection to this server.
    pub fn config(&self) -> postgres::Config {
        let mut c = postgres::Config::new();
        c.host_path(&self.socket_dir)
            .port(PORT)
            .user(USER)
            .dbname(DATABASE)
            .application_name("shoal-bench");
        c
    }

    /// Opens a connection.
    ///
    /// # Errors
    /// [`BenchError::Peer`] if the server refuses it.
    pub fn connect(&self) -> Result<postgres::Client> {
        self.config()
            .connect(postgres::NoTls)
            .map_err(|e| BenchError::peer(ENGINE, "connecting", super::describe(&e)))
    }

    /// Polls until a connection succeeds, the server exits or [`START_TIMEOUT`] passes.
    fn wait_ready(&mut self) -> Result<()> {
        let t0 = Instant::now();
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    self.child = None;
                    return Err(BenchError::peer(
                        ENGINE,
                        "starting the server",
                        format!("it exited ({status}); its log ends:\n{}", self.log_tail()),
                    ));
                }
            }
            match self.connect() {
                Ok(c) => {
                    drop(c);
                    return Ok(());
                }
                Err(e) if t0.elapsed() > START_TIMEOUT => {
                    return Err(BenchError::peer(
                        ENGINE,
                        "starting the server",
                        format!(
                            "no connection after {START_TIMEOUT:?} ({e}); its log ends:\n{}",
                            self.log_tail()
                        ),
                    ));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// The last lines of the server's log.
    pub fn log_tail(&self) -> String {
        log_tail(&self.log)
    }

    /// Stops the server with a fast shutdown (SIGINT: clients are disconnected, open
    /// transactions rolled back, a checkpoint written) and waits for it; kills it if it
    /// has not exited after 30 s. Does nothing if it is not running.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let Ok(pid) = libc::pid_t::try_from(child.id()) else {
            let _ = child.kill();
            let _ = child.wait();
            return;
        };
        // SAFETY: kill has no memory preconditions; `pid` is our own child, not yet waited
        // for, so the id cannot have been reused.
        unsafe { libc::kill(pid, libc::SIGINT) };
        let t0 = Instant::now();
        while t0.elapsed() < STOP_TIMEOUT {
            match child.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs `initdb` for `data` as `owner`.
fn initdb(bins: &Binaries, owner: Option<(u32, u32)>, data: &Path) -> Result<()> {
    let mut cmd = Command::new(bins.program("initdb"));
    cmd.arg("-D")
        .arg(data)
        .args(["-U", USER, "--auth=trust", "-E", "UTF8", "--locale=C"])
        .arg("--no-instructions")
        .stdin(Stdio::null())
        .current_dir(data);
    if let Some((uid, gid)) = owner {
        cmd.uid(uid).gid(gid);
    }
    let out = cmd.output().map_err(|e| {
        BenchError::peer(
            ENGINE,
            "initdb",
            format!(
                "{}: {e}{}",
                bins.program("initdb").display(),
                reach_hint(owner, data)
            ),
        )
    })?;
    if !out.status.success() {
        let mut msg = String::from_utf8_lossy(&out.stderr).trim().to_string();
        if msg.is_empty() {
            msg = String::from_utf8_lossy(&out.stdout).trim().to_string();
        }
        msg.push_str(&reach_hint(owner, data));
        return Err(BenchError::peer(
            ENGINE,
            format!("initdb -D {}", data.display()),
            format!("{}: {msg}", out.status),
        ));
    }
    Ok(())
}

/// When the server runs as [`SYSTEM_USER`], a reminder that it must reach `dir`.
fn reach_hint(owner: Option<(u32, u32)>, dir: &Path) -> String {
    match owner {
        Some(_) => format!(
            " (PostgreSQL runs as the `{SYSTEM_USER}` user, which must be able to reach {}: \
             every directory above it needs o+x)",
            dir.display()
        ),
        None => String::new(),
    }
}

fn set_mode(path: &Path, mode: u32) -> Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| BenchError::io("setting the mode of", path, e))
}

/// The last [`LOG_TAIL_LINES`] lines of the file at `path` (empty if it cannot be read).
fn log_tail(path: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut f) = File::open(path) {
        let _ = f.read_to_string(&mut text);
    }
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_binaries_say_how_to_install() {
        let empty = tempfile::tempdir().unwrap();
        let e = Binaries::find_in(&[empty.path().to_path_buf()]).unwrap_err();
        assert_eq!(e, "initdb not found; run peers/install.sh");
        assert!(Binaries::find_in(&[]).is_err());
        std::fs::write(empty.path().join("initdb"), b"").unwrap();
        std::fs::write(empty.path().join("postgres"), b"").unwrap();
        let b = Binaries::find_in(&[empty.path().to_path_buf()]).unwrap();
        assert_eq!(b.program("pgbench"), empty.path().join("pgbench"));
    }

    #[test]
    fn debian_versions_newest_first() {
        let root = tempfile::tempdir().unwrap();
        for v in ["13", "15", "not-a-version"] {
            std::fs::create_dir(root.path().join(v)).unwrap();
        }
        let dirs = debian_bindirs(root.path());
        assert_eq!(
            dirs,
            vec![root.path().join("15/bin"), root.path().join("13/bin")]
        );
        assert!(debian_bindirs(&root.path().join("missing")).is_empty());
    }

    #[test]
    fn the_system_user_is_read_from_passwd() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\n\
                      postgres:x:101:104:PostgreSQL administrator:/var/lib/postgresql:/bin/bash\n\
                      broken:x:y\n";
        assert_eq!(system_user(passwd, "postgres"), Some((101, 104)));
        assert_eq!(system_user(passwd, "broken"), None);
        assert_eq!(system_user(passwd, "nobody"), None);
    }

    #[test]
    fn settings_follow_durability_and_pool() {
        let s = ServerSettings {
            shared_buffers: 64 << 20,
            durability: Durability::Full,
            connections: 8,
        };
        let a = s.args().join(" ");
        assert!(a.contains("-c shared_buffers=65536kB"), "{a}");
        assert!(a.contains("-c synchronous_commit=on") && a.contains("-c fsync=on"));
        assert!(a.contains("-c max_connections=13"));
        assert!(a.contains("-c listen_addresses= "), "{a}");
        let lazy = ServerSettings {
            durability: Durability::Lazy,
            shared_buffers: 1,
            ..s
        };
        let a = lazy.args().join(" ");
        assert!(a.contains("synchronous_commit=off") && a.contains("fsync=on"));
        assert!(a.contains("shared_buffers=128kB"));
    }
}
