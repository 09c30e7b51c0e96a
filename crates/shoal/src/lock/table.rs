//! The shared lock table: a hash of lock heads partitioned into buckets, each with its own
//! latch (module doc, rules T1–T6).
//!
//! ```text
//!   bucket (latch, its own cache lines) ─ first head (inline) ─ more heads: [H1 H2 | spare..]
//!   head: name, group (supremum of granted modes), waiting count,
//!         queue: [Request{owner, granted, wanted}] in arrival order, 3 inline, more spilled
//! ```
//!
//! A request on a name that is alone in its bucket touches only the bucket's own padded
//! lines: no pointer to follow, no heap block shared (by the allocator's packing) with
//! another bucket's data that another core writes.

use super::head::{Bucket, Request};
use super::mode::{ModeTable, NONE};
use super::name::LockName;
use super::shim::Mutex;
use super::waits::Owners;

/// Owners to wake once the bucket latch is released (no allocation for up to 8).
#[derive(Default)]
pub(crate) struct Wakeups {
    first: [u32; 8],
    len: usize,
    more: Vec<u32>,
}

impl Wakeups {
    pub(crate) fn push(&mut self, owner: u32) {
        if self.len < self.first.len() {
            self.first[self.len] = owner;
            self.len += 1;
        } else {
            self.more.push(owner);
        }
    }

    /// Wakes everyone collected and empties the list.
    #[inline]
    pub(crate) fn wake(&mut self, owners: &Owners) {
        if self.len == 0 {
            return;
        }
        for &o in &self.first[..self.len] {
            owners.notify(o);
        }
        for o in self.more.drain(..) {
            owners.notify(o);
        }
        self.len = 0;
    }
}

/// What a request got.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Granted,
    WouldBlock,
    /// Queued; the owner waits for the given epoch (see `waits`).
    Enqueued(u64),
}

/// A bucket aligned to a cache line, so that no line holds parts of two buckets (which
/// different cores latch). 64 bytes, not `CachePadded`'s 128: a bucket is about 170 bytes,
/// and padding it to 256 would cost a third more memory for a 2-line prefetch pairing.
#[repr(align(64))]
struct Slot(Mutex<Bucket>);

const _: () = assert!(std::mem::size_of::<Slot>() <= 192);

pub(crate) struct LockTable {
    buckets: Box<[Slot]>,
    mask: usize,
    modes: &'static ModeTable,
}

impl LockTable {
    /// A table with `partitions` buckets (a power of two).
    pub(crate) fn new(partitions: usize, modes: &'static ModeTable) -> LockTable {
        debug_assert!(partitions.is_power_of_two());
        LockTable {
            buckets: (0..partitions)
                .map(|_| Slot(Mutex::new(Bucket::default())))
                .collect(),
            mask: partitions - 1,
            modes,
        }
    }

    /// The bucket of `name`, as a number (for [`LockTable::prefetch_bucket`]).
    #[inline]
    pub(crate) fn bucket_of(&self, name: &LockName) -> usize {
        name.place() as usize & self.mask
    }

    /// Prefetches bucket `b` (a [`LockTable::bucket_of`]): its latch, count and first
    /// head, which a request or release touches first. Issued well before the request — a
    /// row lock's name is known before other work, a release walks many names — it hides
    /// the miss on a bucket that is rarely in cache (buckets are spread over the whole
    /// table by design). An index out of range is ignored.
    #[inline]
    pub(crate) fn prefetch_bucket(&self, b: usize) {
        if let Some(slot) = self.buckets.get(b) {
            crate::sync::prefetch_all(slot);
        }
    }

    /// Asks for `target` on `name` for `owner`, which holds `held` there in the table
    /// (`NONE`: a new request). `instant`: a new request granted at once is not recorded
    /// (it is released as it is granted). Without `wait`, a request that cannot be granted
    /// now is not queued (`WouldBlock`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn request(
        &self,
        owners: &Owners,
        owner: u32,
        name: &LockName,
        held: u8,
        target: u8,
        wait: bool,
        instant: bool,
    ) -> Outcome {
        let m = self.modes;
        let b = self.bucket_of(name);
        let mut bk = self.buckets[b].0.lock();
        let i = match bk.find(name) {
            Some(i) => i,
            None if instant => return Outcome::Granted,
            None => {
                // T2: nobody else has a request here; a missing own request (held != NONE)
                // cannot happen, but granting `target` is right either way.
                let i = bk.insert(name);
                let h = &mut bk.head_mut(i);
                h.requests.push(Request::new(owner, target, NONE));
                h.group = target;
                return Outcome::Granted;
            }
        };
        let h = &mut bk.head_mut(i);
        let mine = if held == NONE {
            None
        } else {
            h.position(owner)
        };
        match mine {
            None => {
                let p = h.requests.len();
                let fast = h.waiting == 0 && (h.group == NONE || m.compat_raw(target, h.group));
                if fast || h.grantable(m, p, target, false, true) {
                    if !fast {
                        h.note_passed(m, p, target);
                    }
                    if !instant {
                        h.requests.push(Request::new(owner, target, NONE));
                        h.group = if h.group == NONE {
                            target
                        } else {
                            m.sup_raw(h.group, target)
                        };
                    }
                    return Outcome::Granted;
                }
                if !wait {
                    return Outcome::WouldBlock;
                }
                h.requests.push(Request::new(owner, NONE, target));
                h.waiting += 1;
                let spin = h.waiting == 1;
                Outcome::Enqueued(owners.begin_wait(owner, name, target, b, spin))
            }
            Some(p) => {
                if h.grantable(m, p, target, true, true) {
                    h.requests.get_mut(p).granted = target;
                    h.group = m.sup_raw(h.group, target);
                    return Outcome::Granted;
                }
                if !wait {
                    return Outcome::WouldBlock;
                }
                h.requests.get_mut(p).wanted = target;
                h.waiting += 1;
                let spin = h.waiting == 1;
                Outcome::Enqueued(owners.begin_wait(owner, name, target, b, spin))
            }
        }
    }

    /// Releases `owner`'s request on `name` (granted or not). False if it had none.
    pub(crate) fn release(
        &self,
        owners: &Owners,
        owner: u32,
        name: &LockName,
        wake: &mut Wakeups,
    ) -> bool {
        let mut bk = self.buckets[self.bucket_of(name)].0.lock();
        let Some(i) = bk.find(name) else { return false };
        let h = &mut bk.head_mut(i);
        let Some(p) = h.position(owner) else {
            return false;
        };
        let r = h.requests.remove(p);
        if r.wanted != NONE {
            h.waiting -= 1;
        }
        if h.requests.is_empty() {
            bk.remove(i);
        } else {
            h.recompute_group(self.modes);
            h.grant_waiters(self.modes, owners, wake);
        }
        true
    }

    /// Lowers `owner`'s granted mode on `name` to `to` (which the old mode covers, so it
    /// never waits) and grants whoever that unblocks. False if it held nothing there.
    pub(crate) fn downgrade(
        &self,
        owners: &Owners,
        owner: u32,
        name: &LockName,
        to: u8,
        wake: &mut Wakeups,
    ) -> bool {
        let mut bk = self.buckets[self.bucket_of(name)].0.lock();
        let Some(i) = bk.find(name) else { return false };
        let h = &mut bk.head_mut(i);
        let Some(p) = h.position(owner) else {
            return false;
        };
        h.requests.get_mut(p).granted = to;
        h.recompute_group(self.modes);
        h.grant_waiters(self.modes, owners, wake);
        true
    }

    /// T7: `owner`'s thread, whose wait `epoch` on `name` was left for it to take (RETRY),
    /// takes the lock if it can. `None`: granted (now, or directly meanwhile); `Some(e)`:
    /// not grantable, so the request waits again, as wait `e` (a new epoch, so that
    /// waits-for edges read before are not trusted: the caller searches for a deadlock
    /// again, as after any block).
    pub(crate) fn retry(
        &self,
        owners: &Owners,
        owner: u32,
        name: &LockName,
        epoch: u64,
        wake: &mut Wakeups,
    ) -> Option<u64> {
        let b = self.bucket_of(name);
        let mut bk = self.buckets[b].0.lock();
        if owners.is_granted(owner, epoch) {
            return None;
        }
        debug_assert!(owners.is_retry(owner, epoch));
        let i = bk
            .find(name)
            .expect("a request asked to retry is still queued (only its owner withdraws it)");
        let h = &mut bk.head_mut(i);
        let p = h.position(owner).expect("queued request");
        if h.take_retry(self.modes, p, owners, wake) {
            return None;
        }
        let wanted = h.requests.get(p).wanted;
        let spin = h.waiting == 1;
        Some(owners.begin_wait(owner, name, wanted, b, spin))
    }

    /// Withdraws `owner`'s wait `epoch` on `name` (timeout or deadlock victim). Returns true
    /// if the request had been granted meanwhile (then nothing is withdrawn).
    pub(crate) fn cancel(
        &self,
        owners: &Owners,
        owner: u32,
        name: &LockName,
        epoch: u64,
        wake: &mut Wakeups,
    ) -> bool {
        let mut bk = self.buckets[self.bucket_of(name)].0.lock();
        if owners.is_granted(owner, epoch) {
            return true;
        }
        let Some((i, p)) = bk
            .find(name)
            .and_then(|i| bk.head(i).position(owner).map(|p| (i, p)))
        else {
            owners.cancel(owner, epoch);
            return false;
        };
        let h = &mut bk.head_mut(i);
        // T7: the lock was left for this waiter to take just as it gave up (deadline or
        // deadlock victim). Take it if it is still free, as a grant in that window would have
        // been honoured.
        if owners.is_retry(owner, epoch) && h.take_retry(self.modes, p, owners, wake) {
            return true;
        }
        owners.cancel(owner, epoch);
        if h.requests.get(p).wanted != NONE {
            h.waiting -= 1;
        }
        if h.requests.get(p).granted != NONE {
            h.requests.get_mut(p).wanted = NONE;
        } else {
            h.requests.remove(p);
        }
        if h.requests.is_empty() {
            bk.remove(i);
        } else {
            // Waiters behind the withdrawn request may be grantable now.
            h.grant_waiters(self.modes, owners, wake);
        }
        false
    }

    /// Records `mode` on `name` as granted to `owner` (a fast-path lock moved here, F4). The
    /// owner has no other request on `name`.
    pub(crate) fn insert_granted(&self, owner: u32, name: &LockName, mode: u8) {
        let mut bk = self.buckets[self.bucket_of(name)].0.lock();
        let i = match bk.find(name) {
            Some(i) => i,
            None => bk.insert(name),
        };
        let h = &mut bk.head_mut(i);
        debug_assert!(h.position(owner).is_none());
        h.requests.push(Request::new(owner, mode, NONE));
        h.group = if h.group == NONE {
            mode
        } else {
            self.modes.sup_raw(h.group, mode)
        };
    }

    /// The waits-for edges out of `owner`'s wait `epoch` on the name in `bucket`, as
    /// `(blocker, blocker's wait epoch)` for blockers that are themselves waiting (D2: read
    /// under this bucket's latch). False if the owner no longer waits there.
    pub(crate) fn blockers(
        &self,
        owners: &Owners,
        owner: u32,
        epoch: u64,
        name: &LockName,
        out: &mut Vec<(u32, u64)>,
    ) -> bool {
        let m = self.modes;
        let bk = self.buckets[self.bucket_of(name)].0.lock();
        if owners.waiting_epoch(owner) != Some(epoch) {
            return false;
        }
        let Some(i) = bk.find(name) else { return false };
        let h = bk.head(i);
        let Some(p) = h.position(owner) else {
            return false;
        };
        let me = h.requests.get(p);
        for (j, r) in h.requests.iter().enumerate() {
            if j == p {
                continue;
            }
            let by_grant = r.granted != NONE && !m.compat_raw(me.wanted, r.granted);
            let ahead = r.is_converter() || (r.wanted != NONE && j < p);
            let by_wait = !me.is_converter() && ahead && !m.compatible_both(me.wanted, r.wanted);
            if by_grant || by_wait {
                if let Some(e) = owners.waiting_epoch(r.owner) {
                    out.push((r.owner, e));
                }
            }
        }
        true
    }

    /// Number of active heads (tests: everything released means zero).
    pub(crate) fn active_heads(&self) -> usize {
        self.buckets.iter().map(|b| b.0.lock().active).sum()
    }
}
