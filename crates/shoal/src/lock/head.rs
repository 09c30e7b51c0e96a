//! Lock heads and their queues (module doc, rules T2–T6): the per-name state kept in a
//! bucket, and the grant rules that decide, under the bucket latch, who holds what.

use super::mode::{ModeTable, NONE};
use super::name::LockName;
use super::table::Wakeups;
use super::waits::Owners;

/// Times a waiter left to take a lock itself (rule T7) may be overtaken by requests that
/// conflict with it before the lock is handed to it directly (the fairness bound).
pub(crate) const MAX_PASSED: u8 = 8;

/// One owner's request on one name. `granted`: the mode it holds (or `NONE`); `wanted`: the
/// mode it waits for (`NONE` if not waiting). Granted and waiting: a conversion. `retry`: a
/// waiting new request whose thread was asked to take the lock itself (T7); `passed`: how
/// often conflicting requests were granted past it while it was so asked.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Request {
    pub(crate) owner: u32,
    pub(crate) granted: u8,
    pub(crate) wanted: u8,
    pub(crate) retry: bool,
    pub(crate) passed: u8,
}

const _: () = assert!(std::mem::size_of::<Request>() == 8);

impl Request {
    const EMPTY: Request = Request::new(u32::MAX, NONE, NONE);

    /// A request of `owner` holding `granted` and waiting for `wanted`.
    pub(crate) const fn new(owner: u32, granted: u8, wanted: u8) -> Request {
        Request {
            owner,
            granted,
            wanted,
            retry: false,
            passed: 0,
        }
    }

    pub(crate) fn is_converter(&self) -> bool {
        self.granted != NONE && self.wanted != NONE
    }

    /// T7: a waiter whose thread was asked to take the lock itself and that may still be
    /// overtaken: it does not hold back new requests.
    pub(crate) fn is_yielding(&self) -> bool {
        self.retry && self.wanted != NONE && self.passed < MAX_PASSED
    }
}

/// Requests stored inline in the head.
const INLINE_REQUESTS: usize = 3;

/// A head's queue in arrival order: the first [`INLINE_REQUESTS`] inline, the rest in
/// `spill` (whose capacity is kept when the head is recycled: T6).
pub(crate) struct Queue {
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

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub(crate) fn get(&self, i: usize) -> Request {
        if i < INLINE_REQUESTS {
            self.inline[i]
        } else {
            self.spill[i - INLINE_REQUESTS]
        }
    }

    #[inline]
    pub(crate) fn get_mut(&mut self, i: usize) -> &mut Request {
        if i < INLINE_REQUESTS {
            &mut self.inline[i]
        } else {
            &mut self.spill[i - INLINE_REQUESTS]
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = Request> + '_ {
        (0..self.len).map(|i| self.get(i))
    }

    #[inline]
    pub(crate) fn push(&mut self, r: Request) {
        if self.len < INLINE_REQUESTS {
            self.inline[self.len] = r;
        } else {
            self.spill.push(r);
        }
        self.len += 1;
    }

    /// Removes request `i`, keeping the order of the others.
    #[inline(always)]
    pub(crate) fn remove(&mut self, i: usize) -> Request {
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
    pub(crate) fn position(&self, owner: u32) -> Option<usize> {
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

pub(crate) struct Head {
    pub(crate) name: LockName,
    /// Supremum of the granted modes (an upper bound: T3), `NONE` if none.
    pub(crate) group: u8,
    /// Requests with `wanted != NONE`.
    pub(crate) waiting: u32,
    pub(crate) requests: Queue,
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
pub(crate) struct Bucket {
    pub(crate) active: usize,
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

impl Bucket {
    #[inline]
    pub(crate) fn head(&self, i: usize) -> &Head {
        if i == 0 {
            &self.first
        } else {
            &self.more[i - 1]
        }
    }

    #[inline]
    pub(crate) fn head_mut(&mut self, i: usize) -> &mut Head {
        if i == 0 {
            &mut self.first
        } else {
            &mut self.more[i - 1]
        }
    }

    #[inline(always)]
    pub(crate) fn find(&self, name: &LockName) -> Option<usize> {
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
    #[inline(always)]
    pub(crate) fn insert(&mut self, name: &LockName) -> usize {
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
    #[inline(always)]
    pub(crate) fn remove(&mut self, i: usize) {
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
    pub(crate) fn position(&self, owner: u32) -> Option<usize> {
        self.requests.position(owner)
    }

    pub(crate) fn recompute_group(&mut self, m: &ModeTable) {
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
    /// (either way) with any waiter ahead of it — all conversions and earlier new waiters —
    /// except, where `pass_yielding` (a request made by a running thread: a new arrival or
    /// a retry, T7), waiters that are yielding.
    pub(crate) fn grantable(
        &self,
        m: &ModeTable,
        p: usize,
        target: u8,
        converter: bool,
        pass_yielding: bool,
    ) -> bool {
        self.requests.iter().enumerate().all(|(j, r)| {
            if j == p {
                return true;
            }
            if r.granted != NONE && !m.compat_raw(target, r.granted) {
                return false;
            }
            let ahead = r.is_converter() || (r.wanted != NONE && j < p);
            converter
                || !ahead
                || (pass_yielding && r.is_yielding())
                || m.compatible_both(target, r.wanted)
        })
    }

    /// T7: counts a grant of `target` to request `p` (`p` may be the queue's length: a new
    /// arrival) against every yielding waiter it overtook, that is, that conflicts with it
    /// and stays queued.
    pub(crate) fn note_passed(&mut self, m: &ModeTable, p: usize, target: u8) {
        for j in 0..self.requests.len() {
            let r = self.requests.get(j);
            if j != p && r.is_yielding() && !m.compatible_both(target, r.wanted) {
                self.requests.get_mut(j).passed += 1;
            }
        }
    }

    /// Grants waiting request `p` its wanted mode (the caller checked T4, and wakes the
    /// owner's thread unless it is the caller's own).
    fn grant(&mut self, m: &ModeTable, p: usize, owners: &Owners) {
        let r = self.requests.get(p);
        let req = self.requests.get_mut(p);
        // A conversion's `wanted` is already its target (held ⊔ asked).
        req.granted = r.wanted;
        req.wanted = NONE;
        req.retry = false;
        req.passed = 0;
        self.waiting -= 1;
        self.group = if self.group == NONE {
            r.wanted
        } else {
            m.sup_raw(self.group, r.wanted)
        };
        owners.grant(r.owner);
    }

    /// T5 and T7: grants every waiter that has become grantable, conversions first — except
    /// that a grantable new request whose thread is not responsive (rule W3) and that has
    /// been overtaken fewer than [`MAX_PASSED`] times is not granted but asked to take the
    /// lock itself (`retry`, and its thread woken); it then holds back the waiters behind
    /// it in this scan as if it were granted, so one release wakes one such thread, not a
    /// herd. A waiter already asked is left alone until it has been overtaken
    /// [`MAX_PASSED`] times; then it is granted like any other.
    pub(crate) fn grant_waiters(&mut self, m: &ModeTable, owners: &Owners, wake: &mut Wakeups) {
        if self.waiting == 0 {
            return;
        }
        for pass_converters in [true, false] {
            for p in 0..self.requests.len() {
                let r = self.requests.get(p);
                if r.wanted == NONE || r.is_converter() != pass_converters {
                    continue;
                }
                if !self.grantable(m, p, r.wanted, pass_converters, false) {
                    continue;
                }
                if r.is_yielding() {
                    continue; // its thread is on its way (T7)
                }
                if !pass_converters && r.passed < MAX_PASSED && !owners.is_responsive(r.owner) {
                    self.requests.get_mut(p).retry = true;
                    owners.ask_retry(r.owner);
                    wake.push(r.owner);
                    continue;
                }
                self.grant(m, p, owners);
                wake.push(r.owner);
            }
        }
    }

    /// T7: the thread of waiting request `p`, asked to take the lock itself, takes it if T4
    /// allows (passing yielding waiters, as a new arrival would). Returns whether it did;
    /// if not, the request is an ordinary waiter again (no longer `retry`). After a take the
    /// queue is scanned again (T5): the waiters the marked request held back are judged
    /// against the grant now — one may be compatible with it only one way (MGL's U after a
    /// granted S), and would otherwise wait for the next release.
    pub(crate) fn take_retry(
        &mut self,
        m: &ModeTable,
        p: usize,
        owners: &Owners,
        wake: &mut Wakeups,
    ) -> bool {
        let r = self.requests.get(p);
        if self.grantable(m, p, r.wanted, false, true) {
            self.note_passed(m, p, r.wanted);
            self.grant(m, p, owners);
            self.grant_waiters(m, owners, wake);
            true
        } else {
            self.requests.get_mut(p).retry = false;
            false
        }
    }
}
