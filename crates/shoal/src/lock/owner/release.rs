//! Releasing an owner's locks: one name, the short ones (the end of a READ COMMITTED
//! read or statement), or all of them at the end of the transaction (strict 2PL), with the
//! lock-table buckets of a big map prefetched ahead of the walk; and what an owner leaves
//! to its thread when dropped (its parked locks under inheritance, its emptied map).
//!
//! Latching: each release latches one lock-table bucket at a time (the table's rules);
//! nothing here waits.

use super::*;

/// Maps with fewer entries than this are released without prefetching ([`Ahead`]).
const AHEAD_MIN_ENTRIES: usize = 32;

/// How many entries ahead of the one being released [`Ahead`] prefetches: enough misses in
/// flight to cover one release's work, few enough to stay in the L1 cache.
const AHEAD_DISTANCE: usize = 8;

/// Prefetching for a walk that releases a big map's locks (commit of a transaction of
/// many row locks): each release latches the name's lock-table bucket, which is rarely in
/// cache, so the buckets are prefetched [`AHEAD_DISTANCE`] entries ahead of the walk.
///
/// The bucket list is taken from `map.keys()`; the walk (`retain` or `drain` of the same
/// map, with no change in between) visits the entries in that same order (hashbrown walks
/// its table in slot order for all three). Were it not so, the prefetches would only be
/// wasted: they are hints, and nothing depends on them.
pub(super) struct Ahead {
    buckets: Vec<usize>,
    next: usize,
}

impl Ahead {
    pub(super) fn new(sh: &Shared, map: &HeldMap) -> Ahead {
        let buckets: Vec<usize> = if map.len() >= AHEAD_MIN_ENTRIES {
            map.iter()
                .map(|(n, h)| {
                    if h.fast {
                        usize::MAX
                    } else {
                        sh.table.bucket_of(n)
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        for &b in buckets.iter().take(AHEAD_DISTANCE) {
            sh.table.prefetch_bucket(b);
        }
        Ahead { buckets, next: 0 }
    }

    /// Called once per entry of the walk, before its release.
    #[inline]
    pub(super) fn step(&mut self, sh: &Shared) {
        if let Some(&b) = self.buckets.get(self.next + AHEAD_DISTANCE) {
            sh.table.prefetch_bucket(b);
        }
        self.next += 1;
    }
}

impl LockOwner {
    /// Releases every lock on `name` now, whatever its duration. For callers that know
    /// the protocol allows it (an index's lock coupling, cursor stability); strict 2PL
    /// releases only through [`LockOwner::release_all`]. False if nothing was held.
    pub fn release(&mut self, name: &LockName) -> bool {
        let Some(mut h) = self.map.remove(name) else {
            return false;
        };
        self.rows -= usize::from(name.is_row_level());
        if h.long != NONE && name.is_row_level() {
            if let Some(t) = table_index(&self.tables, name.db(), name.container()) {
                self.tables[t].rows_long = self.tables[t].rows_long.saturating_sub(1);
            }
        }
        lower(&self.sh, self.id, name, &mut h, NONE, &mut self.wake);
        if name.kind() == NameKind::Table {
            refresh_cover(&self.sh, &mut self.tables, name, None);
        }
        true
    }

    /// Ends the statement: releases every short lock; a name also held long goes back to
    /// its long mode.
    pub fn release_short(&mut self) {
        let Self {
            sh,
            map,
            id,
            wake,
            tables,
            rows,
            ..
        } = self;
        map.retain(|name, h| {
            if h.short == NONE {
                return true;
            }
            h.short = NONE;
            let to = h.long;
            lower(sh, *id, name, h, to, wake);
            refresh_cover(sh, tables, name, (to != NONE).then_some(&*h));
            *rows -= usize::from(to == NONE && name.is_row_level());
            to != NONE
        });
    }

    /// Releases the short part of the lock on `name` only — the end of one read under
    /// cursor stability — in O(1); a long part stays (the name goes back to its long mode).
    /// False if no short lock was held on `name`. [`LockOwner::release_short`] does this for
    /// every name, at O(locks held).
    pub fn release_short_on(&mut self, name: &LockName) -> bool {
        let Self {
            sh,
            map,
            id,
            wake,
            tables,
            rows,
            ..
        } = self;
        let Some(h) = map.get_mut(name) else {
            return false;
        };
        if h.short == NONE {
            return false;
        }
        h.short = NONE;
        let to = h.long;
        lower(sh, *id, name, h, to, wake);
        refresh_cover(sh, tables, name, (to != NONE).then_some(&*h));
        if to == NONE {
            map.remove(name);
            *rows -= usize::from(name.is_row_level());
        }
        true
    }

    /// Ends the transaction: releases every lock (commit or rollback, strict 2PL).
    pub fn release_all(&mut self) {
        let Self {
            sh,
            map,
            id,
            wake,
            tables,
            ..
        } = self;
        let mut ahead = Ahead::new(sh, map);
        for (name, mut h) in map.drain() {
            ahead.step(sh);
            lower(sh, *id, &name, &mut h, NONE, wake);
        }
        tables.clear();
        self.rows = 0;
    }

    /// Releases everything and starts over for transaction `txn`, keeping this owner's
    /// slot and allocations.
    pub fn reset(&mut self, txn: TxnId) {
        self.release_all();
        self.sh.fast.clear_moved(self.id);
        self.txn = txn;
        self.sh.owners.set_txn(self.id, txn);
    }
}

impl Drop for LockOwner {
    fn drop(&mut self) {
        if self.sh.options.inheritance && self.park() {
            return;
        }
        let used = self.map.len();
        self.release_all();
        self.sh.fast.free(self.id);
        // SAFETY: `self.sh` is taken once and not used again (nothing below reads it, and
        // the field is not dropped: it is a `ManuallyDrop`).
        let sh = unsafe { ManuallyDrop::take(&mut self.sh) };
        // Fails only while the thread is exiting; the reference is then simply dropped. A
        // spare already there (two owners alive on this thread) is dropped instead.
        let _ = SPARE_SHARED.try_with(|s| s.set(Some(sh)));
        let mut map = std::mem::take(&mut self.map);
        if keeps_capacity(map.capacity(), used) {
            map.clear();
            // Fails only while the thread is exiting; the map is then simply freed.
            let _ = SPARE_MAP.try_with(|s| s.set(Some(map)));
        }
    }
}
