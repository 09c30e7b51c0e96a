//! Damaged files: a database whose files on disk take random damage — a flipped byte, a
//! zeroed 512-byte sector, a file cut short, a file removed — must either refuse to open or
//! to read with an error that reports damage ([`shoal::Error`]: `Corruption`,
//! `LogCorruption`, `BadFile`, ...; its message names what is wrong), or open and return
//! exactly the rows of a committed state. It must never panic (on any thread: a panic hook
//! counts them), and never return rows that no committed state had.
//!
//! Three images are damaged:
//! - **clean**: the database after `close` (a checkpoint wrote every page). The rows must
//!   be the final state, or an error.
//! - **crash**: the files copied while the database is open, after the last commit was
//!   durable (`Full`), with one more transaction in flight: what a power cut leaves.
//!   Recovery must redo the committed transactions and undo the one in flight.
//! - **crash after a checkpoint**: the same with a cleaner that writes every dirty page at
//!   once and a checkpoint before the last transaction, so the log restart reads starts in
//!   the middle of one segment file and the data file holds pages newer than the checkpoint.
//!
//! In a crash image, damage to the last records of the log (within the writer's unsynced
//! window, log anchor rule A4) reads as a torn tail: the log ends early, and the rows may be
//! those of an earlier committed state — the transactions whose records were lost, none of
//! whose pages reached the data file. Anywhere else the rows must be the final state, or an
//! error. What this test found, all fixed: a damaged tail opened with pages the cleaner had
//! written holding changes of transactions whose records were gone, which no redo or undo
//! can repair (log anchor rule A6, which covers every page write, an eviction's included;
//! this test fails in about one run in three without it); a log whose record
//! at the start was lost could open empty (rule A5; a unit test in `log/tests.rs`); a removed
//! first segment was an `InvalidArgument`, a removed anchor beside recycled segments was
//! not reported, and a shortened last segment tripped a debug assertion.
//!
//! CI runs [`TRIALS`] damaged copies of each image; the ignored `damaged_files_long` runs
//! [`LONG_TRIALS`] (`cargo test --release -p shoal --test damaged_files -- --ignored`).
//! With `SHOAL_DAMAGE_DEBUG` set (and `--nocapture`) every damage and every error that
//! refused the open is printed, and a copy that breaks a rule is kept in the temporary
//! directory.

mod common;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use shoal::btree::ScanDirection;
use shoal::db::LOCK_FILE;
use shoal::engine::DATA_FILE;
use shoal::log::segment::parse_segment_file_name;
use shoal::log::{LogOptions, ANCHOR_FILE};
use shoal::table::{Column, ColumnType, IndexDef, Row, TableDef, Value};
use shoal::{Database, IsolationLevel, Options};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

/// Damaged copies of each image in CI.
const TRIALS: usize = 150;
/// Damaged copies of each image in the ignored long run.
const LONG_TRIALS: usize = 3_000;
/// Committed transactions the images hold.
const TXNS: i64 = 12;
/// Rows each transaction inserts.
const ROWS_PER_TXN: i64 = 40;

/// Set (to anything) to print each damage and each error `Database::open` returned.
const DEBUG_ENV: &str = "SHOAL_DAMAGE_DEBUG";

fn debug() -> bool {
    std::env::var_os(DEBUG_ENV).is_some()
}

/// Panics seen on any thread since the hook was installed.
static PANICS: AtomicUsize = AtomicUsize::new(0);

fn count_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            default(info);
        }));
    });
}

fn options() -> Options {
    Options {
        pool_size_bytes: 64 * 4096,
        page_size_bytes: 4096,
        ..Options::default()
    }
}

/// Bytes of the log's insert buffer in these databases.
const LOG_BUFFER_BYTES: usize = 64 << 10;

/// Log segments of `segment_kib` KiB: 64 makes the images span several segment files; 1024
/// keeps a whole image in one.
fn log_options(segment_kib: u64) -> LogOptions {
    LogOptions {
        segment_size_bytes: segment_kib << 10,
        buffer_size_bytes: LOG_BUFFER_BYTES,
        preallocate_bytes: 0,
        ..LogOptions::default()
    }
}

fn def() -> TableDef {
    TableDef::new(
        "t",
        vec![
            Column::new("id", ColumnType::Int8),
            Column::new("grp", ColumnType::Int4).not_null(),
            Column::new("pad", ColumnType::Varchar(400)).not_null(),
        ],
        &["id"],
    )
    .unwrap()
    .with_index(IndexDef::new("by_grp", ["grp"]))
    .unwrap()
}

/// A row's columns other than the key.
type Cols = (i32, String);

fn pad(id: i64, version: i64) -> String {
    let len = 20 + (id * 37 + version * 11) % 300;
    (0..len)
        .map(|i| char::from(b'a' + ((id + i + version) % 26) as u8))
        .collect()
}

/// One transaction's changes: rows inserted, a row changed, a row deleted.
type Changes = (Vec<(i64, Cols)>, Option<(i64, Cols)>, Option<i64>);

/// Transaction `k`: inserts rows `[k R, (k + 1) R)`, changes an earlier row's group and
/// pad (an index change and a longer or shorter row) and deletes another earlier row.
fn changes(k: i64) -> Changes {
    let inserts = (k * ROWS_PER_TXN..(k + 1) * ROWS_PER_TXN)
        .map(|id| (id, ((id % 9) as i32, pad(id, 0))))
        .collect();
    if k == 0 {
        return (inserts, None, None);
    }
    let before = k * ROWS_PER_TXN;
    let upd = (k * 31) % before;
    let del = (k * 53 + 7) % before;
    let update = (upd != del).then(|| (upd, ((k % 5) as i32 + 100, pad(upd, k))));
    (inserts, update, Some(del))
}

/// The rows after the first `k` transactions.
fn state(k: i64) -> BTreeMap<i64, Cols> {
    let mut m = BTreeMap::new();
    for t in 0..k {
        let (ins, upd, del) = changes(t);
        m.extend(ins);
        if let Some((id, c)) = upd {
            if m.contains_key(&id) {
                m.insert(id, c);
            }
        }
        if let Some(id) = del {
            m.remove(&id);
        }
    }
    m
}

fn row(id: i64, (grp, pad): &Cols) -> Row {
    Row::new()
        .with("id", id)
        .with("grp", *grp)
        .with("pad", pad.clone())
}

/// Runs transaction `k` on `db` and commits it.
fn run_txn(db: &Database, k: i64) {
    let mut tx = db.begin(IsolationLevel::ReadCommitted);
    let t = db.table(&mut tx, "t").unwrap();
    let (ins, upd, del) = changes(k);
    for (id, c) in &ins {
        t.insert(&mut tx, &row(*id, c)).unwrap();
    }
    if let Some((id, (grp, pad))) = upd {
        let change = Row::new().with("grp", grp).with("pad", pad);
        // The row may be gone (deleted by an earlier transaction): then nothing changes.
        let _ = t.update(&mut tx, &[Value::Int8(id)], &change).unwrap();
    }
    if let Some(id) = del {
        let _ = t.delete(&mut tx, &[Value::Int8(id)]).unwrap();
    }
    tx.commit().unwrap();
}

/// A database directory's files, by name.
type Files = Vec<(String, Vec<u8>)>;

/// A database's files and the segment size (KiB) its log was written with.
#[derive(Clone)]
struct Image {
    files: Files,
    segment_kib: u64,
}

fn read_files(dir: &Path) -> Files {
    let mut files: Files = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file() && e.file_name() != LOCK_FILE)
        .map(|e| {
            let name = e.file_name().into_string().unwrap();
            (name, std::fs::read(e.path()).unwrap())
        })
        .collect();
    // The anchor first: copied before the segments, it is never newer than they are (as
    // on disk, where it is raised only after what it promises was synced).
    files.sort_by_key(|(n, _)| (n != ANCHOR_FILE, n.clone()));
    files
}

fn write_files(dir: &Path, files: &Files) {
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

/// A database in `dir` with the table and every transaction committed; with
/// `checkpoint_after`, a checkpoint is taken before transaction `k` (after a pause for the
/// cleaner).
fn build(dir: &Path, opts: &Options, segment_kib: u64, checkpoint_after: Option<i64>) -> Database {
    let db = Database::create_with(dir, opts, &log_options(segment_kib)).unwrap();
    let mut tx = db.begin(IsolationLevel::ReadCommitted);
    db.create_table(&mut tx, def()).unwrap();
    tx.commit().unwrap();
    for k in 0..TXNS {
        if checkpoint_after == Some(k) {
            std::thread::sleep(std::time::Duration::from_millis(50));
            db.engine().checkpoint().unwrap();
        }
        run_txn(&db, k);
    }
    db
}

/// The image of a database closed cleanly after every transaction.
fn clean_image() -> Image {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path(), &options(), 64, None).close().unwrap();
    Image {
        files: read_files(dir.path()),
        segment_kib: 64,
    }
}

/// The files of a database copied while it runs, after every transaction committed
/// durably and while one more is in flight (its rows inserted, not committed); with
/// `checkpoint_after`, a checkpoint was taken after that many transactions, so the log
/// recovery needs starts in the middle of the files.
fn crash_image(checkpoint_after: Option<i64>, segment_kib: u64) -> Image {
    let dir = tempfile::tempdir().unwrap();
    // A cleaner that writes every dirty page at once, so that a checkpoint finds them clean
    // and moves the log's start up to itself (and keeps writing pages after it).
    let opts = Options {
        cleaner_lag_bytes: 0,
        cleaner_interval_ms: 2,
        ..options()
    };
    let db = build(dir.path(), &opts, segment_kib, checkpoint_after);
    let mut tx = db.begin(IsolationLevel::ReadCommitted);
    let t = db.table(&mut tx, "t").unwrap();
    for id in 0..ROWS_PER_TXN {
        let id = 1_000_000 + id;
        t.insert(&mut tx, &row(id, &(7, pad(id, 3)))).unwrap();
    }
    // Push the in-flight rows' log records to disk, as other commits would, and write every
    // dirty page (uncommitted changes included, for restart to undo), so that no page write
    // is under way while the files are copied: the copy of the data file must not hold a
    // torn page that no full-page image could repair.
    db.engine().log().wait_all_durable().unwrap();
    db.engine().pool().flush_all().unwrap();
    let image = Image {
        files: read_files(dir.path()),
        segment_kib,
    };
    tx.abort().unwrap();
    db.close().unwrap();
    image
}

/// What was done to the files.
#[derive(Debug)]
enum Damage {
    Flip {
        file: String,
        at: usize,
        /// The bits flipped (read through `Debug`, in failure messages).
        #[allow(dead_code)]
        mask: u8,
    },
    ZeroSector {
        file: String,
        at: usize,
    },
    Truncate {
        file: String,
        len: usize,
    },
    Remove {
        file: String,
    },
}

/// The most log a writer of [`log_options`] leaves written but unsynced (twice its buffer,
/// anchor rule A4).
const UNSYNCED_WINDOW_BYTES: u64 = 2 * LOG_BUFFER_BYTES as u64;

/// The LSN just past the last segment file of `files`.
fn log_end(files: &Files, segment_kib: u64) -> u64 {
    files
        .iter()
        .filter_map(|(n, b)| Some(segment_index(n)? * (segment_kib << 10) + b.len() as u64))
        .max()
        .unwrap_or(0)
}

/// The index of segment file `name` (`None` for another file).
fn segment_index(name: &str) -> Option<u64> {
    parse_segment_file_name(name).ok().flatten()
}

impl Damage {
    /// The log address of the damage, for damage to a segment file.
    fn log_lsn(&self, segment_kib: u64) -> Option<u64> {
        let base = segment_index(self.file())? * (segment_kib << 10);
        Some(
            base + match self {
                Damage::Flip { at, .. } | Damage::ZeroSector { at, .. } => *at as u64,
                Damage::Truncate { len, .. } => *len as u64,
                Damage::Remove { .. } => 0,
            },
        )
    }

    fn file(&self) -> &str {
        match self {
            Damage::Flip { file, .. }
            | Damage::ZeroSector { file, .. }
            | Damage::Truncate { file, .. }
            | Damage::Remove { file } => file,
        }
    }
}

fn damage(image: &Files, rng: &mut StdRng) -> (Files, Damage) {
    let mut image = image.clone();
    let f = rng.random_range(0..image.len());
    let (name, bytes) = &mut image[f];
    let file = name.clone();
    let d = match rng.random_range(0..20) {
        _ if bytes.is_empty() => Damage::Remove { file },
        0..=13 => {
            let at = rng.random_range(0..bytes.len());
            let mask = rng.random_range(1..=255u8);
            bytes[at] ^= mask;
            Damage::Flip { file, at, mask }
        }
        14..=16 => {
            let at = rng.random_range(0..bytes.len()) / 512 * 512;
            let end = (at + 512).min(bytes.len());
            bytes[at..end].fill(0);
            Damage::ZeroSector { file, at }
        }
        17..=18 => {
            let len = rng.random_range(0..bytes.len());
            bytes.truncate(len);
            Damage::Truncate { file, len }
        }
        _ => Damage::Remove { file },
    };
    if let Damage::Remove { file } = &d {
        image.retain(|(n, _)| n != file);
    }
    (image, d)
}

/// How a damaged database behaved.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
enum Outcome {
    /// `Database::open` returned an error.
    RefusedToOpen,
    /// It opened, and reading the table returned an error.
    RefusedToRead,
    /// It opened and returned the final committed state.
    Final,
    /// It opened and returned an earlier committed state (the log ended early).
    Earlier,
}

/// Opens the damaged copy in `dir` and reads everything. `Err` describes a violation.
fn check(
    dir: &Path,
    segment_kib: u64,
    states: &[BTreeMap<i64, Cols>],
    d: Option<&Damage>,
) -> Result<Outcome, String> {
    // An error must say that something is damaged, and what: only a removed data file makes
    // the directory "not a database" (an invalid path) rather than a damaged one.
    let named = |e: shoal::Error| {
        use shoal::Error as E;
        let damage = matches!(
            e,
            E::Corruption { .. }
                | E::LogCorruption { .. }
                | E::BadFile { .. }
                | E::CorruptRecord { .. }
                | E::PageNotAllocated { .. }
        );
        let no_data_file = matches!(e, E::InvalidArgument { .. })
            && matches!(d, Some(Damage::Remove { file }) if file == DATA_FILE);
        if !(damage || no_data_file) {
            Err(format!("an error that does not report damage: {e:?}"))
        } else if e.to_string().trim().is_empty() {
            Err(format!("an error with an empty message: {e:?}"))
        } else {
            Ok(())
        }
    };
    let db = match Database::open_with(dir, &options(), &log_options(segment_kib)) {
        Ok(db) => db,
        Err(e) => {
            if debug() {
                eprintln!("open: {e}");
            }
            return named(e).map(|()| Outcome::RefusedToOpen);
        }
    };
    let read = (|| {
        let mut tx = db.begin(IsolationLevel::ReadCommitted);
        let t = db.table(&mut tx, "t")?;
        let rows = t.scan(
            &mut tx,
            Bound::Unbounded,
            Bound::Unbounded,
            ScanDirection::Forward,
        )?;
        // Every row through the secondary index too: it must agree or fail.
        let by_grp =
            t.scan_index_keys(&mut tx, "by_grp", &[], ScanDirection::Forward, usize::MAX)?;
        tx.commit()?;
        Ok::<_, shoal::Error>((rows, by_grp.len()))
    })();
    let outcome = match read {
        Err(e) => {
            named(e)?;
            Outcome::RefusedToRead
        }
        Ok((rows, indexed)) => {
            let mut got = BTreeMap::new();
            for r in &rows {
                let (Ok(id), Ok(grp), Ok(pad)) = (
                    r.get::<i64>("id"),
                    r.get::<i32>("grp"),
                    r.get::<String>("pad"),
                ) else {
                    return Err(format!("a row of unexpected shape: {r:?}"));
                };
                got.insert(id, (grp, pad));
            }
            if got.len() != rows.len() {
                return Err("a key returned twice".into());
            }
            let Some(k) = states.iter().rposition(|s| *s == got) else {
                return Err(format!(
                    "{} rows that match no committed state (final state: {} rows)",
                    got.len(),
                    states.last().map_or(0, BTreeMap::len)
                ));
            };
            if indexed != got.len() {
                // A damaged index page that still reads: verify must then see it.
                let report = db.verify().map_err(|e| format!("verify failed: {e}"))?;
                if report.is_ok() {
                    return Err(format!(
                        "the index holds {indexed} entries for {} rows and verify found nothing",
                        got.len()
                    ));
                }
            }
            if k + 1 == states.len() {
                Outcome::Final
            } else {
                Outcome::Earlier
            }
        }
    };
    // Verify runs on whatever opened: it reports problems, it must not panic.
    let _ = db.verify();
    let _ = db.close();
    Ok(outcome)
}

fn torture(name: &str, image: &Image, trials: usize, seed: u64) {
    // One torture at a time: the panic count is global, and a panic of one test's database
    // must not be blamed on another's.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    count_panics();
    // Failures name the seed offset, so that a campaign's case can be run again.
    let label = format!("{name}{}", common::seed_note());
    let states: Vec<BTreeMap<i64, Cols>> = (0..=TXNS).map(state).collect();
    if debug() {
        for (n, b) in &image.files {
            eprintln!("{name}: {n}, {} bytes", b.len());
        }
    }
    // The undamaged image reads the final state.
    {
        let dir = tempfile::tempdir().unwrap();
        write_files(dir.path(), &image.files);
        assert_eq!(
            check(dir.path(), image.segment_kib, &states, None),
            Ok(Outcome::Final),
            "{name}"
        );
    }
    let mut rng = StdRng::seed_from_u64(common::seeded(seed));
    let mut seen: BTreeMap<Outcome, usize> = BTreeMap::new();
    for trial in 0..trials {
        let (damaged, d) = damage(&image.files, &mut rng);
        if debug() {
            eprintln!("{d:?}");
        }
        let dir = tempfile::tempdir().unwrap();
        write_files(dir.path(), &damaged);
        let before = PANICS.load(Ordering::SeqCst);
        let result =
            std::panic::catch_unwind(|| check(dir.path(), image.segment_kib, &states, Some(&d)));
        let panics = PANICS.load(Ordering::SeqCst) - before;
        let outcome = match result {
            Ok(Ok(o)) if panics == 0 => o,
            Ok(Ok(_)) => panic!("{label} trial {trial}, {d:?}: a background thread panicked"),
            Ok(Err(why)) => {
                if debug() {
                    let keep = std::env::temp_dir().join(format!("shoal-damaged-{name}-{trial}"));
                    let _ = std::fs::create_dir_all(&keep);
                    write_files(&keep, &damaged);
                    eprintln!("damaged copy kept in {}", keep.display());
                }
                panic!("{label} trial {trial}, {d:?}: {why}")
            }
            Err(_) => panic!("{label} trial {trial}, {d:?}: panicked"),
        };
        if outcome == Outcome::Earlier {
            // Only a log that ends early, at damage in its last unsynced window (rule A4),
            // may lose committed transactions, and only a crash image has committed
            // transactions that its data pages may lack.
            let tail = d.log_lsn(image.segment_kib).is_some_and(|l| {
                l + UNSYNCED_WINDOW_BYTES >= log_end(&image.files, image.segment_kib)
            });
            assert!(
                name == "crash" && tail,
                "{label} trial {trial}, {d:?}: committed transactions lost"
            );
        }
        *seen.entry(outcome).or_default() += 1;
    }
    eprintln!("{label}: {trials} damaged copies: {seen:?}");
}

#[test]
fn damaged_clean_database_gives_errors_or_the_committed_rows() {
    torture("clean", &clean_image(), TRIALS, 1);
}

#[test]
fn damaged_crash_image_gives_errors_or_committed_rows() {
    torture("crash", &crash_image(None, 64), TRIALS, 2);
}

/// Recovery starts at the checkpoint, in the middle of the log; the segment file holding
/// it may be removed, or its first record damaged (before anchor rule A5, either opened an
/// empty log and lost the commits since the checkpoint without a word).
#[test]
fn damaged_crash_image_after_a_checkpoint_gives_errors_or_committed_rows() {
    torture("crash", &crash_image(Some(TXNS - 1), 1024), TRIALS, 3);
}

#[test]
#[ignore = "long: thousands of damaged copies (see the module doc)"]
fn damaged_files_long() {
    torture("clean", &clean_image(), LONG_TRIALS, 11);
    torture("crash", &crash_image(None, 64), LONG_TRIALS, 12);
    torture("crash", &crash_image(Some(TXNS - 1), 1024), LONG_TRIALS, 13);
}
