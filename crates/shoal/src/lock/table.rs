//! The shared lock table: a hash of lock heads partitioned into buckets, each with its own
//! latch (module doc, rules T1–T6).
//!
//! ```text
//!   bucket (latch, its own cache lines) ─ first head (inline) ─ more heads: [H1 H2 | spare..]
//!   head: name, group (supremum of granted modes), waiting count,
//!         queue: [Request{owner, granted, wanted}] in arrival order, 3 inline, more spilled
//! ```
//!
//! Everything a request on a name with at most one other active name in its bucket touches
//! is in the bucket's own padded lines: no pointer to follow, no heap block shared (by the
//! allocator's packing) with another bucket's data that another core writes.

use super::mode::{ModeTable, NONE};
use super::name::LockName;
use super::shim::Mutex;
use super::waits::Owners;
use crossbeam_utils::CachePadded;

/// One owner's request on one name. `granted`: the mode it holds (or `NONE`); `wanted`: the
/// mode it waits for (`NONE` if not waiting). Granted and waiting: a conversion.
#[derive(Clone, Copy, Debug)]
struct Request {
    owner: u32,
    granted: u8,
    wanted: u8,
}

impl Request {
    const EMPTY: Request = Request {
        owner: u32::MAX,
        granted: NONE,
        wanted: NONE,
    };

    fn is_converter(&self) -> bool {
        self.granted != NONE && self.wanted != NONE
    }
}

/// Requests stored inline in the head.
const INLINE_REQUESTS: usize = 3;

/// A head's queue in arrival order: the first [`INLINE_REQUESTS`] inline, the rest in
/// `spill` (whose capacity is kept when the head is recycled: T6).
struct Queue {
    len: usize,
    inline: [Request; INLINE_REQUESTS],
    spill: Vec<Request>,
}

impl Queue {
    const fn new() -> Queue {
        Queue {
            len: 0,
            inline: [Request::EMPTY; INLINE_REQUESTS],
            spill: Vec::new(),
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn get(&self, i: usize) -> Request {
        if i < INLINE_REQUESTS {
            self.inline[i]
        } else {
            self.spill[i - INLINE_REQUESTS]
        }
    }

    #[inline]
    fn get_mut(&mut self, i: usize) -> &mut Request {
        if i < INLINE_REQUESTS {
            &mut self.inline[i]
        } else {
            &mut self.spill[i - INLINE_REQUESTS]
        }
    }

    fn iter(&self) -> impl Iterator<Item = Request> + '_ {
        (0..self.len).map(|i| self.get(i))
    }

    #[inline]
    fn push(&mut self, r: Request) {
        if self.len < INLINE_REQUESTS {
            self.inline[self.len] = r;
        } else {
            self.spill.push(r);
        }
        self.len += 1;
    }

    /// Removes request `i`, keeping the order of the others.
    fn remove(&mut self, i: usize) -> Request {
        let r = self.get(i);
        for j in i..self.len - 1 {
            *self.get_mut(j) = self.get(j + 1);
        }
        if self.len > INLINE_REQUESTS {
            self.spill.pop();
        }
        self.len -= 1;
        r
    }

    #[inline]
    fn position(&self, owner: u32) -> Option<usize> {
        let mut i = 0;
        while i < self.len {
            if self.get(i).owner == owner {
                return Some(i);
            }
            i += 1;
        }
        None
    }
}

struct Head {
    name: LockName,
    /// Supremum of the granted modes (an upper bound: T3), `NONE` if none.
    group: u8,
    /// Requests with `wanted != NONE`.
    waiting: u32,
    requests: Queue,
}

impl Head {
    fn new(name: LockName) -> Head {
        Head {
            name,
            group: NONE,
            waiting: 0,
            requests: Queue::new(),
        }
    }
}

/// A bucket's heads: `head(0)` is `first`, `head(i)` is `more[i - 1]`; the first `active`
/// are in use, the rest of `more` are spares (T6).
struct Bucket {
    active: usize,
    first: Head,
    more: Vec<Head>,
}

impl Default for Bucket {
    fn default() -> Bucket {
        Bucket {
            active: 0,
            first: Head::new(LockName::database(0)),
            more: Vec::new(),
        }
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

/// Owners to wake once the bucket latch is released (no allocation for up to 8).
#[derive(Default)]
pub(crate) struct Wakeups {
    first: [u32; 8],
    len: usize,
    more: Vec<u32>,
}

impl Wakeups {
    fn push(&mut self, owner: u32) {
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

pub(crate) struct LockTable {
    buckets: Box<[CachePadded<Mutex<Bucket>>]>,
    mask: usize,
    modes: &'static ModeTable,
}

impl Bucket {
    #[inline]
    fn head(&self, i: usize) -> &Head {
        if i == 0 {
            &self.first
        } else {
            &self.more[i - 1]
        }
    }

    #[inline]
    fn head_mut(&mut self, i: usize) -> &mut Head {
        if i == 0 {
            &mut self.first
        } else {
            &mut self.more[i - 1]
        }
    }

    #[inline]
    fn find(&self, name: &LockName) -> Option<usize> {
        if self.active == 0 {
            return None;
        }
        let h = name.hash64();
        if self.first.name.hash64() == h && self.first.name == *name {
            return Some(0);
        }
        let more = &self.more[..self.active - 1];
        let mut i = 0;
        while i < more.len() {
            if more[i].name.hash64() == h && more[i].name == *name {
                return Some(i + 1);
            }
            i += 1;
        }
        None
    }

    /// Activates a head for `name` (a spare one if there is one: T6).
    fn insert(&mut self, name: &LockName) -> usize {
        let i = self.active;
        self.active += 1;
        if i > self.more.len() {
            self.more.push(Head::new(name.clone()));
        } else {
            let h = self.head_mut(i);
            h.name.clone_from(name);
            h.group = NONE;
            h.waiting = 0;
            debug_assert!(h.requests.is_empty());
        }
        i
    }

    /// Makes head `i` (empty) a spare.
    fn remove(&mut self, i: usize) {
        debug_assert!(self.head(i).requests.is_empty());
        let last = self.active - 1;
        if i != last {
            if i == 0 {
                std::mem::swap(&mut self.first, &mut self.more[last - 1]);
            } else {
                self.more.swap(i - 1, last - 1);
            }
        }
        self.active = last;
    }
}

impl Head {
    #[inline]
    fn position(&self, owner: u32) -> Option<usize> {
        self.requests.position(owner)
    }

    fn recompute_group(&mut self, m: &ModeTable) {
        self.group = self
            .requests
            .iter()
            .filter(|r| r.granted != NONE)
            .fold(NONE, |g, r| {
                if g == NONE {
                    r.granted
                } else {
                    m.sup_raw(g, r.granted)
                }
            });
    }

    /// T4: may request `p` (waiting, or about to be) get `target` now? A conversion needs
    /// compatibility with every other granted mode; a new request also must not conflict
    /// (either way) with any waiter ahead of it — all conversions and earlier new waiters.
    fn grantable(&self, m: &ModeTable, p: usize, target: u8, converter: bool) -> bool {
        self.requests.iter().enumerate().all(|(j, r)| {
            if j == p {
                return true;
            }
            if r.granted != NONE && !m.compat_raw(target, r.granted) {
                return false;
            }
            let ahead = r.is_converter() || (r.wanted != NONE && j < p);
            converter || !ahead || m.compatible_both(target, r.wanted)
        })
    }

    /// T5: grants every waiter that has become grantable, conversions first.
    fn grant_waiters(&mut self, m: &ModeTable, owners: &Owners, wake: &mut Wakeups) {
        if self.waiting == 0 {
            return;
        }
        for pass_converters in [true, false] {
            for p in 0..self.requests.len() {
                let r = self.requests.get(p);
                if r.wanted == NONE || r.is_converter() != pass_converters {
                    continue;
                }
                if self.grantable(m, p, r.wanted, pass_converters) {
                    let req = self.requests.get_mut(p);
                    req.granted = req.wanted;
                    req.wanted = NONE;
                    self.waiting -= 1;
                    self.group = if self.group == NONE {
                        r.wanted
                    } else {
                        m.sup_raw(self.group, r.wanted)
                    };
                    owners.grant(r.owner);
                    wake.push(r.owner);
                }
            }
        }
    }
}

impl LockTable {
    /// A table with `partitions` buckets (a power of two).
    pub(crate) fn new(partitions: usize, modes: &'static ModeTable) -> LockTable {
        debug_assert!(partitions.is_power_of_two());
        LockTable {
            buckets: (0..partitions)
                .map(|_| CachePadded::new(Mutex::new(Bucket::default())))
                .collect(),
            mask: partitions - 1,
            modes,
        }
    }

    #[inline]
    fn bucket_of(&self, name: &LockName) -> usize {
        name.hash64() as usize & self.mask
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
        let mut bk = self.buckets[b].lock();
        let i = match bk.find(name) {
            Some(i) => i,
            None if instant => return Outcome::Granted,
            None => {
                // T2: nobody else has a request here; a missing own request (held != NONE)
                // cannot happen, but granting `target` is right either way.
                let i = bk.insert(name);
                let h = &mut bk.head_mut(i);
                h.requests.push(Request {
                    owner,
                    granted: target,
                    wanted: NONE,
                });
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
                if fast || h.grantable(m, p, target, false) {
                    if !instant {
                        h.requests.push(Request {
                            owner,
                            granted: target,
                            wanted: NONE,
                        });
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
                h.requests.push(Request {
                    owner,
                    granted: NONE,
                    wanted: target,
                });
                h.waiting += 1;
                Outcome::Enqueued(owners.begin_wait(owner, name, target, b))
            }
            Some(p) => {
                if h.grantable(m, p, target, true) {
                    h.requests.get_mut(p).granted = target;
                    h.group = m.sup_raw(h.group, target);
                    return Outcome::Granted;
                }
                if !wait {
                    return Outcome::WouldBlock;
                }
                h.requests.get_mut(p).wanted = target;
                h.waiting += 1;
                Outcome::Enqueued(owners.begin_wait(owner, name, target, b))
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
        let mut bk = self.buckets[self.bucket_of(name)].lock();
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
        let mut bk = self.buckets[self.bucket_of(name)].lock();
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
        let mut bk = self.buckets[self.bucket_of(name)].lock();
        if owners.is_granted(owner, epoch) {
            return true;
        }
        owners.cancel(owner, epoch);
        let Some(i) = bk.find(name) else { return false };
        let h = &mut bk.head_mut(i);
        let Some(p) = h.position(owner) else {
            return false;
        };
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
        let mut bk = self.buckets[self.bucket_of(name)].lock();
        let i = match bk.find(name) {
            Some(i) => i,
            None => bk.insert(name),
        };
        let h = &mut bk.head_mut(i);
        debug_assert!(h.position(owner).is_none());
        h.requests.push(Request {
            owner,
            granted: mode,
            wanted: NONE,
        });
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
        let bk = self.buckets[self.bucket_of(name)].lock();
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
        self.buckets.iter().map(|b| b.lock().active).sum()
    }
}
