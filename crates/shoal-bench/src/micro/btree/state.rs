//! The data of a `btree` variant, its operations and their checks (see the module doc).

use super::*;
use crate::runner::{MicroBench, ThreadCtx};
use crossbeam_utils::CachePadded;
use rand::Rng;
use serde_json::Map;
use shoal::btree::{BTree, ScanDirection};
use shoal::io::{FileStorage, Storage};
use shoal::txn::Transaction;
use shoal::Engine;
use std::ops::Bound;
use std::sync::{Arc, Mutex};
use std::time::Instant;

impl BtreeBench {
    /// Creates a database in a new temporary directory.
    fn create_engine(&self) -> Result<(Arc<Engine>, tempfile::TempDir)> {
        let dir = crate::micro::buffer::temp_db_dir(self.config.db_dir.as_deref(), "btree")?;
        let storage: Arc<dyn Storage> = Arc::new(FileStorage::open_dir(dir.path(), true)?);
        let engine = Engine::open(storage, &self.options, &self.log_options)?;
        Ok((Arc::new(engine), dir))
    }

    /// Loads keys `0 .. keys` with `value_bytes`-byte values into `tree` in ascending order,
    /// writes every page, and checks the tree (see "Data" in the module doc).
    fn load(
        &self,
        variant: Variant,
        engine: &Engine,
        tree: &BTree,
        keys: u64,
        value_bytes: usize,
    ) -> Result<Shape> {
        let start = Instant::now();
        let mut last_report = start;
        let mut value = vec![0u8; value_bytes];
        let mut next = 0u64;
        while next < keys {
            let end = (next + LOAD_TXN_KEYS).min(keys);
            let mut txn = engine.begin();
            for key in next..end {
                fill_value(&mut value, key);
                tree.insert(&mut txn, &key.to_be_bytes(), &value)?;
                if self.config.progress && last_report.elapsed() >= PROGRESS_INTERVAL {
                    last_report = Instant::now();
                    eprintln!(
                        "{NAME} {}: loaded {key} of {keys} keys ({:.0}%) in {:.1} s",
                        variant.name(),
                        key as f64 * 100.0 / keys as f64,
                        start.elapsed().as_secs_f64()
                    );
                }
            }
            txn.commit()?;
            next = end;
        }
        engine.pool().flush_all()?;
        let report = tree.verify()?;
        if !report.is_ok() || report.keys != keys {
            return Err(BenchError::Check(format!(
                "after loading {keys} keys the tree holds {} keys; problems: {:?}",
                report.keys, report.problems
            )));
        }
        let frames = self.options.frame_count() as u64;
        let pages = report.pages.len() as u64;
        if pages + POOL_SLACK_PAGES > frames {
            return Err(BenchError::invalid(
                "--pool-size",
                format!(
                    "{keys} keys of {value_bytes}-byte values take {pages} pages; the pool \
                     has {frames} frames and must hold them and {POOL_SLACK_PAGES} more"
                ),
            ));
        }
        if self.config.progress {
            eprintln!(
                "{NAME} {}: loaded {keys} keys in {:.1} s: {} levels, {pages} pages, leaf fill {:.2}",
                variant.name(),
                start.elapsed().as_secs_f64(),
                report.height,
                report.leaf_fill()
            );
        }
        Ok(Shape::of(&report))
    }
}

/// A tree's shape, as `verify` found it.
#[derive(Clone, Debug)]
struct Shape {
    height: u16,
    pages_by_level: Vec<u64>,
    leaf_fill: f64,
}

impl Shape {
    fn of(r: &shoal::btree::VerifyReport) -> Shape {
        Shape {
            height: r.height,
            pages_by_level: r.pages_by_level.clone(),
            leaf_fill: r.leaf_fill(),
        }
    }
}

/// The data of one variant.
pub struct BtreeState {
    variant: Variant,
    /// Keys loaded (0 for the insert variants).
    keys: u64,
    /// Value length of the loaded keys.
    value_bytes: usize,
    data: Data,
}

/// What a variant's operations work on.
enum Data {
    /// The BTreeMap context.
    Map(BTreeMap<u64, [u8; VALUE_BYTES]>),
    /// A Shoal tree.
    Tree(TreeState),
}

/// A database with one tree, and the insert workers' open transactions.
///
/// Safety of the open transactions: a [`Transaction`] borrows the engine's transaction
/// manager, and a worker's transaction must outlive one operation, so it is kept in
/// `slots` as a `Transaction<'static>` (made by [`TreeState::begin`]) although it borrows
/// `engine`. That is sound because (1) the engine is behind an `Arc` that this state holds
/// for its whole life, so it neither moves nor drops while the state exists (an `Arc`, not a
/// `Box`, so that moving the state asserts no unique access to the engine); (2) a
/// transaction never leaves its slot except to be committed or ended within the call that
/// took it; (3) [`Drop`] ends every transaction left in a slot before any field is dropped,
/// and `slots` is declared before `engine` as well.
struct TreeState {
    // Field order is drop order: the transactions, then the tree and the engine, then the
    // directory holding the files.
    slots: Vec<CachePadded<Mutex<InsertSlot>>>,
    tree: BTree,
    engine: Arc<Engine>,
    inserts_per_txn: u32,
    /// The tree's shape after setup.
    loaded: Shape,
    db_path: PathBuf,
    _dir: tempfile::TempDir,
}

impl TreeState {
    /// A transaction of `self.engine` with its borrow widened to `'static`; it must only be
    /// stored in `self.slots` (see the safety note of [`TreeState`]).
    fn begin(&self) -> Transaction<'static> {
        let txn = self.engine.begin();
        // SAFETY: see the safety note of `TreeState`: the engine outlives every transaction
        // kept in `slots`, which are ended before the state's fields drop.
        unsafe { std::mem::transmute::<Transaction<'_>, Transaction<'static>>(txn) }
    }

    /// Commits every worker's open transaction.
    fn commit_all(&self) -> Result<()> {
        for slot in &self.slots {
            let txn = lock(slot)?.txn.take();
            if let Some(txn) = txn {
                txn.commit()?;
            }
        }
        Ok(())
    }
}

impl Drop for TreeState {
    fn drop(&mut self) {
        // End the transactions before the engine they borrow goes (safety note, point 3).
        // The database is temporary and dropped unclosed right after, so the transactions
        // are abandoned rather than rolled back.
        for slot in &self.slots {
            let txn = match slot.lock() {
                Ok(mut s) => s.txn.take(),
                Err(poisoned) => poisoned.into_inner().txn.take(),
            };
            if let Some(txn) = txn {
                txn.abandon();
            }
        }
    }
}

/// What one insert worker keeps between its operations; only that worker locks it (and the
/// controller between points).
struct InsertSlot {
    /// The open transaction, if any (a `'static` lie: see [`TreeState`]).
    txn: Option<Transaction<'static>>,
    /// Inserts in `txn` so far.
    in_txn: u32,
    /// Keys this worker has inserted: its next key is number `inserted`.
    inserted: u64,
}

fn lock(slot: &Mutex<InsertSlot>) -> Result<std::sync::MutexGuard<'_, InsertSlot>> {
    slot.lock()
        .map_err(|_| BenchError::Check("an insert worker's slot was poisoned".into()))
}

impl MicroBench for BtreeBench {
    type State = BtreeState;

    fn name(&self) -> &'static str {
        NAME
    }

    fn variant_engine(&self, variant: &str) -> &'static str {
        if variant == BTREEMAP_VARIANT {
            BTREEMAP_ENGINE
        } else {
            self.engine()
        }
    }

    fn variants(&self) -> &'static [&'static str] {
        VARIANTS
    }

    fn latency_sample_every_default(&self) -> u32 {
        LATENCY_SAMPLE_EVERY_FAST
    }

    fn config(&self) -> Map<String, Value> {
        let (o, l, c) = (&self.options, &self.log_options, &self.config);
        let mut m = Map::new();
        m.insert("pool_size_bytes".into(), Value::from(o.pool_size_bytes));
        m.insert("page_size_bytes".into(), Value::from(o.page_size_bytes));
        m.insert("pool_frames".into(), Value::from(o.frame_count()));
        m.insert("cleaner_enabled".into(), Value::from(o.cleaner_enabled));
        m.insert("durability".into(), Value::from("lazy"));
        m.insert(
            "lazy_flush_interval_ms".into(),
            Value::from(l.lazy_flush_interval_ms),
        );
        m.insert(
            "segment_size_bytes".into(),
            Value::from(l.segment_size_bytes),
        );
        m.insert(
            "log_buffer_size_bytes".into(),
            Value::from(l.buffer_size_bytes),
        );
        m.insert("key_bytes".into(), Value::from(8));
        m.insert("keys".into(), Value::from(c.keys));
        m.insert("hot_keys".into(), Value::from(c.hot_keys));
        m.insert("hot_value_bytes".into(), Value::from(HOT_VALUE_BYTES));
        m.insert("scan_keys".into(), Value::from(SCAN_KEYS));
        m.insert("inserts_per_txn".into(), Value::from(c.inserts_per_txn));
        m
    }

    fn setup(&self, variant: &str, run: &RunConfig) -> Result<BtreeState> {
        let variant = Variant::from_name(variant)?;
        let (keys, value_bytes) = match variant {
            Variant::LookupHotRoot => (self.config.hot_keys, HOT_VALUE_BYTES),
            Variant::InsertSequential | Variant::InsertRandom => (0, VALUE_BYTES),
            _ => (self.config.keys, VALUE_BYTES),
        };
        if variant == Variant::LookupBTreeMap {
            let map = (0..keys)
                .map(|k| {
                    let mut v = [0u8; VALUE_BYTES];
                    fill_value(&mut v, k);
                    (k, v)
                })
                .collect();
            return Ok(BtreeState {
                variant,
                keys,
                value_bytes,
                data: Data::Map(map),
            });
        }
        let workers = run.threads.iter().copied().max().unwrap_or(1);
        if variant.is_insert() && workers > INSERT_THREADS_MAX {
            return Err(BenchError::invalid(
                "--threads",
                format!("the insert variants take at most {INSERT_THREADS_MAX} threads"),
            ));
        }
        let (engine, dir) = self.create_engine()?;
        let tree = BTree::create(engine.txns(), engine.space())?;
        let loaded = if keys > 0 {
            self.load(variant, &engine, &tree, keys, value_bytes)?
        } else {
            Shape::of(&tree.verify()?)
        };
        // The pool's one-time prefault belongs to setup, not to the first measured point.
        engine.pool().wait_prefaulted();
        if variant == Variant::LookupHotRoot && loaded.height != HOT_HEIGHT {
            return Err(BenchError::invalid(
                "--hot-keys",
                format!(
                    "{keys} keys of {value_bytes}-byte values make a tree of {} levels with \
                     {}-byte pages; lookup-hot-root needs exactly {HOT_HEIGHT}",
                    loaded.height, self.options.page_size_bytes
                ),
            ));
        }
        let slots = if variant.is_insert() { workers } else { 0 };
        let slots = (0..slots)
            .map(|_| {
                CachePadded::new(Mutex::new(InsertSlot {
                    txn: None,
                    in_txn: 0,
                    inserted: 0,
                }))
            })
            .collect();
        Ok(BtreeState {
            variant,
            keys,
            value_bytes,
            data: Data::Tree(TreeState {
                slots,
                tree,
                engine,
                inserts_per_txn: self.config.inserts_per_txn,
                loaded,
                db_path: dir.path().to_path_buf(),
                _dir: dir,
            }),
        })
    }

    fn describe(state: &BtreeState) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("keys_loaded".into(), Value::from(state.keys));
        m.insert("value_bytes".into(), Value::from(state.value_bytes));
        if let Data::Tree(t) = &state.data {
            let r = &t.loaded;
            m.insert("root_page".into(), Value::from(t.tree.root().0));
            m.insert("loaded_height".into(), Value::from(r.height));
            m.insert(
                "loaded_pages_by_level".into(),
                Value::from(r.pages_by_level.clone()),
            );
            m.insert("loaded_leaf_fill".into(), Value::from(r.leaf_fill));
            m.insert(
                "db_dir".into(),
                Value::from(t.db_path.display().to_string()),
            );
        }
        m
    }

    // Not inlined, so that `scripts/instructions-per-txn.py` finds and counts it (a call
    // costs about a nanosecond of a lookup's few hundred).
    #[inline(never)]
    fn op(state: &BtreeState, thread_idx: usize, ctx: &mut ThreadCtx) -> Result<()> {
        let t = match &state.data {
            Data::Map(map) => {
                let key = ctx.rng.random_range(0..state.keys);
                let mut expected = [0u8; VALUE_BYTES];
                fill_value(&mut expected, key);
                return match map.get(&key) {
                    Some(v) if *v == expected => Ok(()),
                    _ => Err(BenchError::Check(format!(
                        "the BTreeMap lost key {key} or its value"
                    ))),
                };
            }
            Data::Tree(t) => t,
        };
        match state.variant {
            Variant::LookupResident | Variant::LookupHotRoot | Variant::LookupBTreeMap => {
                let key = ctx.rng.random_range(0..state.keys);
                let mut buf = [0u8; HOT_VALUE_BYTES];
                let expected = &mut buf[..state.value_bytes];
                fill_value(expected, key);
                // Into the worker's own vector, as a reader that keeps one would: no
                // allocation per lookup (`BTree::get_into`).
                match t.tree.get_into(&key.to_be_bytes(), &mut ctx.scratch)? {
                    true if ctx.scratch == expected => Ok(()),
                    true => Err(BenchError::Check(format!(
                        "key {key} holds another value than the one loaded"
                    ))),
                    false => Err(BenchError::Check(format!(
                        "key {key} was loaded but is not found"
                    ))),
                }
            }
            Variant::LookupBatch => {
                let ks: [u64; BATCH_KEYS as usize] =
                    std::array::from_fn(|_| ctx.rng.random_range(0..state.keys));
                let keys = ks.map(u64::to_be_bytes);
                let refs: [&[u8]; BATCH_KEYS as usize] = std::array::from_fn(|i| &keys[i][..]);
                let mut expected = [0u8; VALUE_BYTES];
                for (k, v) in ks.iter().zip(t.tree.get_many(&refs)?) {
                    fill_value(&mut expected, *k);
                    if v.as_deref() != Some(&expected[..]) {
                        return Err(BenchError::Check(format!(
                            "key {k} of a batch is missing or holds another value than the \
                             one loaded"
                        )));
                    }
                }
                Ok(())
            }
            Variant::Scan => {
                let start = ctx.rng.random_range(0..=state.keys - SCAN_KEYS);
                scan_check(&t.tree, start)
            }
            Variant::InsertSequential | Variant::InsertRandom => {
                insert_one(t, state.variant, thread_idx)
            }
        }
    }

    fn counters(state: &BtreeState) -> BTreeMap<String, u64> {
        let Data::Tree(t) = &state.data else {
            return BTreeMap::new();
        };
        let p = t.engine.pool().stats();
        let root = p.hottest_pages.iter().find(|w| w.page_id == t.tree.root());
        let l = t.engine.log().stats();
        BTreeMap::from([
            ("hits".to_string(), p.hits),
            ("misses".to_string(), p.misses),
            ("evictions".to_string(), p.evictions),
            ("dirty_writes".to_string(), p.dirty_writes),
            ("optimistic_restarts".to_string(), p.optimistic_restarts),
            ("latch_waits".to_string(), p.latch_waits),
            ("latch_wait_us".to_string(), p.latch_wait_us),
            ("root_latch_waits".to_string(), root.map_or(0, |w| w.waits)),
            (
                "root_latch_wait_us".to_string(),
                root.map_or(0, |w| w.wait_us),
            ),
            ("log_appends".to_string(), l.appends),
            ("log_bytes_appended".to_string(), l.bytes_appended),
            ("log_syncs".to_string(), l.syncs),
        ])
    }

    fn after_point(state: &BtreeState) -> Result<Map<String, Value>> {
        let Data::Tree(t) = &state.data else {
            return Ok(Map::new());
        };
        if !state.variant.is_insert() {
            return Ok(Map::new());
        }
        t.commit_all()?;
        let mut inserted = 0u64;
        for (thread_idx, slot) in t.slots.iter().enumerate() {
            let n = lock(slot)?.inserted;
            inserted += n;
            if n > 0 {
                let key = insert_key(state.variant, thread_idx, n - 1);
                let mut expected = [0u8; VALUE_BYTES];
                fill_value(&mut expected, key);
                if t.tree.get(&key.to_be_bytes())?.as_deref() != Some(&expected[..]) {
                    return Err(BenchError::Check(format!(
                        "worker {thread_idx}'s last insert, key {key:#x}, is not found with \
                         its value"
                    )));
                }
            }
        }
        let r = t.tree.verify()?;
        if !r.is_ok() || r.keys != inserted {
            return Err(BenchError::Check(format!(
                "after {inserted} inserts the tree holds {} keys; problems: {:?}",
                r.keys, r.problems
            )));
        }
        let mut m = Map::new();
        m.insert("leaf_fill".into(), Value::from(r.leaf_fill()));
        m.insert("tree_height".into(), Value::from(r.height));
        m.insert("tree_keys".into(), Value::from(r.keys));
        Ok(m)
    }

    fn derived(
        variant: &str,
        engine_stats: &BTreeMap<String, u64>,
        ops: u64,
    ) -> Map<String, Value> {
        derived_values(variant, engine_stats, ops)
    }
}

/// The derived fields of a point from its counters (see "Reported" in the module doc); a
/// ratio over zero operations is `null`.
pub(super) fn derived_values(
    variant: &str,
    engine_stats: &BTreeMap<String, u64>,
    ops: u64,
) -> Map<String, Value> {
    let mut m = Map::new();
    if variant == BTREEMAP_VARIANT {
        return m;
    }
    if let Some(&n) = engine_stats.get("root_latch_waits") {
        m.insert("root_latch_waits".into(), Value::from(n));
    }
    if variant.starts_with("insert-") {
        let per_op = match (engine_stats.get("log_bytes_appended"), ops) {
            (Some(&n), 1..) => Value::from(n as f64 / ops as f64),
            _ => Value::Null,
        };
        m.insert("log_bytes_per_op".into(), per_op);
    }
    m
}

/// One insert of worker `thread_idx` (see "Data" in the module doc).
#[inline]
fn insert_one(t: &TreeState, variant: Variant, thread_idx: usize) -> Result<()> {
    let slot = t.slots.get(thread_idx).ok_or_else(|| {
        BenchError::Check(format!(
            "worker {thread_idx} has no slot: setup saw fewer threads"
        ))
    })?;
    let mut guard = lock(slot)?;
    let s = &mut *guard;
    if s.inserted > THREAD_KEY_MASK {
        return Err(BenchError::Check(format!(
            "worker {thread_idx} ran out of keys"
        )));
    }
    let key = insert_key(variant, thread_idx, s.inserted);
    let mut value = [0u8; VALUE_BYTES];
    fill_value(&mut value, key);
    let txn = s.txn.get_or_insert_with(|| t.begin());
    match t.tree.insert(txn, &key.to_be_bytes(), &value) {
        Ok(()) => {}
        Err(shoal::Error::DuplicateKey { .. }) => {
            return Err(BenchError::Check(format!(
                "worker {thread_idx}'s new key {key:#x} is already in the tree"
            )))
        }
        Err(e) => return Err(e.into()),
    }
    s.inserted += 1;
    s.in_txn += 1;
    if s.in_txn >= t.inserts_per_txn {
        s.in_txn = 0;
        if let Some(txn) = s.txn.take() {
            txn.commit()?;
        }
    }
    Ok(())
}

/// A forward scan of [`SCAN_KEYS`] keys from `start`, checking every key and value.
fn scan_check(tree: &BTree, start: u64) -> Result<()> {
    let (lo, hi) = (start.to_be_bytes(), (start + SCAN_KEYS).to_be_bytes());
    let mut expect = start;
    let mut value = [0u8; VALUE_BYTES];
    for item in tree.scan(
        Bound::Included(&lo[..]),
        Bound::Excluded(&hi[..]),
        ScanDirection::Forward,
    ) {
        let (k, v) = item?;
        fill_value(&mut value, expect);
        if k[..] != expect.to_be_bytes() || v[..] != value {
            return Err(BenchError::Check(format!(
                "scan from key {start}: expected key {expect} with its value, got key {:02x?}",
                k
            )));
        }
        expect += 1;
    }
    if expect != start + SCAN_KEYS {
        return Err(BenchError::Check(format!(
            "scan from key {start} returned {} keys, not {SCAN_KEYS}",
            expect - start
        )));
    }
    Ok(())
}

/// Worker `thread_idx`'s `n`-th insert key of `variant` (see "Data" in the module doc).
pub(super) fn insert_key(variant: Variant, thread_idx: usize, n: u64) -> u64 {
    let low = if variant == Variant::InsertRandom {
        permute48(n)
    } else {
        n & THREAD_KEY_MASK
    };
    (thread_idx as u64) << THREAD_KEY_SHIFT | low
}

/// A bijection on the numbers below 2^48 that scatters consecutive inputs: each step
/// (multiplication by an odd number mod 2^48, xor with the value shifted right) is
/// invertible on 48 bits.
pub fn permute48(n: u64) -> u64 {
    let mut x = n & THREAD_KEY_MASK;
    x = x.wrapping_mul(0x9E37_79B9_7F4B) & THREAD_KEY_MASK;
    x ^= x >> 25;
    x = x.wrapping_mul(0xC2B2_AE3D_27D5) & THREAD_KEY_MASK;
    x ^= x >> 22;
    x
}

/// The value of `key`: bytes of a SplitMix64 stream seeded by the key.
pub fn fill_value(out: &mut [u8], key: u64) {
    let mut x = key.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ VALUE_SALT;
    for chunk in out.chunks_mut(8) {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
    }
}
