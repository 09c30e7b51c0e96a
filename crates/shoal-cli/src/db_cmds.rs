//! `shoal inspect DB` and `shoal verify DB`: open a database directory (running restart
//! recovery, as any open does), report, close. Both need the database not to be open
//! elsewhere (the directory lock).

use clap::Args;
use shoal::db::DatabaseReport;
use shoal::{Database, Options};
use shoal_bench::parse::ByteSize;
use std::path::PathBuf;

/// Arguments of `inspect` and `verify`.
#[derive(Debug, Args)]
pub struct DbArgs {
    /// The database directory.
    pub db: PathBuf,
    /// Buffer pool size for the check: a number of MiB, or with a unit (B, KiB, MiB, GiB).
    #[arg(long, default_value = "64MiB", value_name = "SIZE")]
    pub pool_size: ByteSize,
}

fn open(args: &DbArgs) -> Result<Database, String> {
    if !args.db.is_dir() {
        return Err(format!("{}: no such database directory", args.db.display()));
    }
    let options = Options {
        pool_size_bytes: args.pool_size.bytes() as usize,
        ..Options::default()
    };
    Database::open(&args.db, &options).map_err(|e| e.to_string())
}

fn print_summary(r: &DatabaseReport) {
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let page = r.page_size_bytes as u64;
    println!(
        "data file: {} pages of {} bytes ({:.1} MiB), {} allocated, {} free",
        r.file_pages,
        r.page_size_bytes,
        mib(r.file_pages * page),
        r.allocated_pages,
        r.file_pages.saturating_sub(r.allocated_pages)
    );
    println!("log kept: {:.1} MiB", mib(r.log_bytes));
    println!("{} tables", r.tables.len());
    if !r.tables.is_empty() {
        println!(
            "{:<24} {:>6} {:>12} {:>8} {:>7}  indexes",
            "table", "id", "rows", "pages", "height"
        );
    }
    for t in &r.tables {
        println!(
            "{:<24} {:>6} {:>12} {:>8} {:>7}  {}",
            t.name,
            t.id,
            t.rows,
            t.pages,
            t.height,
            if t.indexes.is_empty() {
                "-".to_string()
            } else {
                t.indexes.join(", ")
            }
        );
    }
}

/// `shoal inspect DB`.
pub fn inspect(args: &DbArgs) -> Result<(), String> {
    let db = open(args)?;
    let r = db.inspect().map_err(|e| e.to_string())?;
    print_summary(&r);
    db.close().map_err(|e| e.to_string())
}

/// `shoal verify DB`: exit status 0 only if no problem is found.
pub fn verify(args: &DbArgs) -> Result<(), String> {
    let db = open(args)?;
    let r = db.verify().map_err(|e| e.to_string())?;
    print_summary(&r);
    println!(
        "unreachable allocated pages (leaks, not damage): {}",
        r.unreachable_pages
    );
    let result = if r.is_ok() {
        println!("verify: OK");
        Ok(())
    } else {
        for p in &r.problems {
            println!("problem: {p}");
        }
        Err(format!("verify found {} problems", r.problems.len()))
    };
    db.close().map_err(|e| e.to_string())?;
    result
}

/// `shoal stats DB`: the counters the database's last clean close saved (the database may be
/// open in another process meanwhile; its live counters are in that process).
pub fn stats(args: &DbArgs) -> Result<(), String> {
    if !args.db.is_dir() {
        return Err(format!("{}: no such database directory", args.db.display()));
    }
    match shoal::db::saved_stats(&args.db).map_err(|e| e.to_string())? {
        Some(text) => {
            print!("{text}");
            Ok(())
        }
        None => Err(format!(
            "{}: no saved statistics (the database has not been closed cleanly since it was created)",
            args.db.display()
        )),
    }
}
