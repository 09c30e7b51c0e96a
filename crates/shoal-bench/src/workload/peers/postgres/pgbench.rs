//! The `pgbench` cross-check (issue 8): PostgreSQL's own benchmark client, with its built-in
//! TPC-B-like and select-only scripts, against a private server started exactly as for
//! `shoal bench tpcb --engine postgres` (same `shared_buffers`, durability and settings). Its
//! transactions per second are the reference the `tpcb` and `select1` numbers of this peer
//! are compared with: our driver runs the same statements, so they should be close.
//!
//! Steps: `pgbench -i -s <scale> -q` (load, primary keys, `VACUUM`), then for each script
//! and client count `pgbench -n -c <n> -j <n> -T <secs> -M prepared [-S]` (`-n`: no
//! `VACUUM` between points, as between our points), reading the `tps = ...` line. pgbench's select-only query reads `abalance` of a random account in
//! `pgbench_accounts`, 100,000 rows per scale as `select1`'s table.

use super::super::super::dbdir::DbDir;
use super::super::super::tpcb::Tpcb;
use super::super::super::WorkloadOptions;
use super::server::{Binaries, PgServer, ServerSettings, DATABASE, PORT, USER};
use super::ENGINE;
use crate::error::{BenchError, Result};
use std::path::Path;
use std::process::{Command, Stdio};

/// Name of the server's directory under `--db-dir` (beside the peer's `postgres/`).
pub const DIR_NAME: &str = "postgres-pgbench";

/// The scripts run: name and pgbench's flag for it.
pub const SCRIPTS: [(&str, &[&str]); 2] = [("tpcb-like", &[]), ("select-only", &["-S"])];

/// One pgbench measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct PgbenchPoint {
    /// `tpcb-like` or `select-only`.
    pub script: &'static str,
    /// Clients (and pgbench threads).
    pub clients: usize,
    /// Transactions per second pgbench reported (without initial connection time).
    pub tps: f64,
}

/// Runs the cross-check: loads `scale` (pgbench `-s`) on a private server set up as `opts`
/// says and runs each of [`SCRIPTS`] for `secs` seconds at each client count of `threads`.
///
/// # Errors
/// [`BenchError::InvalidArgument`] for no thread counts, a count of 0 or `secs` 0;
/// [`BenchError::Peer`] if PostgreSQL or pgbench is missing, the server fails, or pgbench
/// fails or prints no `tps` line (with its output).
pub fn pgbench_cross_check(
    opts: &WorkloadOptions,
    scale: u32,
    threads: &[usize],
    secs: u32,
) -> Result<Vec<PgbenchPoint>> {
    if threads.is_empty() || threads.contains(&0) {
        return Err(BenchError::invalid(
            "--threads",
            "pgbench needs one or more client counts, each at least 1",
        ));
    }
    if secs == 0 || scale == 0 {
        return Err(BenchError::invalid(
            "pgbench",
            "the duration and the scale must be at least 1",
        ));
    }
    let bins = Binaries::find().map_err(|why| BenchError::peer(ENGINE, "pgbench", why))?;
    let pgbench = bins.program("pgbench");
    if !pgbench.is_file() {
        return Err(BenchError::peer(
            ENGINE,
            "pgbench",
            format!("{} not found; run peers/install.sh", pgbench.display()),
        ));
    }
    let pool = Tpcb {
        opts: opts.clone(),
        scale,
    }
    .pool_bytes();
    let max_clients = threads.iter().copied().max().unwrap_or(1);
    let server = PgServer::start(
        DbDir::new(opts.db_dir.as_deref(), DIR_NAME)?,
        &ServerSettings {
            shared_buffers: pool,
            durability: opts.durability,
            connections: max_clients,
        },
    )?;
    let scale_arg = scale.to_string();
    run(&pgbench, &server, &["-i", "-q", "-s", &scale_arg])?;
    let mut out = Vec::new();
    for (script, flags) in SCRIPTS {
        for &clients in threads {
            let (n, t) = (clients.to_string(), secs.to_string());
            let mut args = vec!["-n", "-c", &n, "-j", &n, "-T", &t, "-M", "prepared"];
            args.extend_from_slice(flags);
            let stdout = run(&pgbench, &server, &args)?;
            let tps = parse_tps(&stdout).ok_or_else(|| {
                BenchError::peer(
                    ENGINE,
                    format!("pgbench {}", args.join(" ")),
                    format!("no `tps = ` line in its output:\n{stdout}"),
                )
            })?;
            out.push(PgbenchPoint {
                script,
                clients,
                tps,
            });
        }
    }
    Ok(out)
}

/// Runs pgbench with `args` against `server`; returns its standard output.
fn run(pgbench: &Path, server: &PgServer, args: &[&str]) -> Result<String> {
    let what = || format!("pgbench {}", args.join(" "));
    let out = Command::new(pgbench)
        .arg("-h")
        .arg(server.socket_dir())
        .args(["-p", &PORT.to_string(), "-U", USER])
        .args(args)
        .arg(DATABASE)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| BenchError::peer(ENGINE, what(), e))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(BenchError::peer(
            ENGINE,
            what(),
            format!(
                "{}: {}{}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim(),
                stdout.trim()
            ),
        ));
    }
    Ok(stdout)
}

/// The transactions per second of pgbench's report: the number after `tps = ` (pgbench
/// 14 and later print one such line, "without initial connection time"; older ones two,
/// the second excluding connections, which is taken).
pub fn parse_tps(stdout: &str) -> Option<f64> {
    stdout
        .lines()
        .rev()
        .filter_map(|l| l.trim().strip_prefix("tps = "))
        .find_map(|rest| rest.split_whitespace().next()?.parse::<f64>().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tps_lines_are_read() {
        let out = "transaction type: <builtin: TPC-B (sort of)>\n\
                   number of transactions actually processed: 1234\n\
                   latency average = 1.621 ms\n\
                   initial connection time = 3.001 ms\n\
                   tps = 616.883521 (without initial connection time)\n";
        assert_eq!(parse_tps(out), Some(616.883521));
        let old = "tps = 600.1 (including connections establishing)\n\
                   tps = 610.5 (excluding connections establishing)\n";
        assert_eq!(parse_tps(old), Some(610.5));
        assert_eq!(parse_tps("pgbench: error: no tps\n"), None);
    }

    #[test]
    fn bad_settings_are_errors() {
        let opts = WorkloadOptions::new(super::super::super::super::EngineKind::Postgres);
        assert!(pgbench_cross_check(&opts, 1, &[], 1).is_err());
        assert!(pgbench_cross_check(&opts, 1, &[0], 1).is_err());
        assert!(pgbench_cross_check(&opts, 1, &[1], 0).is_err());
    }
}
