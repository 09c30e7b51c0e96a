//! Lock heads and their queues (module doc, rules T2–T6): the per-name state kept in a
//! bucket, and the grant rules that decide, under the bucket latch, who holds what.

use super::mode::{ModeTable, NONE};
use super::name::LockName;
use super::table::Wakeups;
use super::waits::Owners;

/// One owner's request on one name. `granted`: the mode it holds (or `NONE`); `wanted`: the
/// mode it waits for (`NONE` if not waiting). Granted and waiting: a conversion.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Request {
    pub(crate) owner: u32,
    pub(crate) granted: u8,
    pub(crate) wanted: u8,
}

impl Request {
    const EMPTY: Request = Request {
        owner: u32::MAX,
        granted: NONE,
        wanted: NONE,
    };

    pub(crate) fn is_converter(&self) -> bool {
        self.granted != NONE && self.wanted != NONE
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
    /// (either way) with any waiter ahead of it — all conversions and earlier new waiters.
    pub(crate) fn grantable(&self, m: &ModeTable, p: usize, target: u8, converter: bool) -> bool {
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
