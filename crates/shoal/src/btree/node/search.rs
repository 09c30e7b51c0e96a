//! Searching a node: the probe, the hint search by interpolation, the comparisons that
//! decide among equal hints, and the prefetches a search or a batched lookup issues ahead of
//! its reads (the node module's doc, "Search keys"; btree rules 15–17).
//!
//! Invariants: a search reads only bounds-checked offsets (a bad one is `Corruption`,
//! believed by an optimistic reader only after its latch validates, sync rule O2); a
//! prefetch is a hint that reads nothing into the program. Latching: none here — the caller
//! holds the node's frame latched or reads it optimistically.

use super::*;

/// A search key with its head (first 8 bytes, big-endian, zero-padded) and its hint in the
/// node computed once.
pub(super) struct Probe<'k> {
    key: &'k [u8],
    pub(super) head: u64,
    pub(super) hint: u32,
}

impl<'k> Probe<'k> {
    /// `hint_offset` is the node's (invariant H), in bytes.
    #[inline(always)]
    pub(super) fn new(key: &'k [u8], hint_offset: usize) -> Self {
        let head = key.head_be(0, key.len().min(8));
        // The hint's bytes lie in the head when they end by byte 8, or when the key does
        // (the head is zero-padded past the key's end, as a hint is): then the hint is the
        // head shifted, with no second read of the key.
        let hint = if hint_offset + HINT_BYTES <= 8 || (key.len() <= 8 && hint_offset < 8) {
            ((head << (8 * hint_offset)) >> 32) as u32
        } else {
            hint_of(key, hint_offset)
        };
        Probe { key, head, hint }
    }
}

/// The first index of `[start, end)` for which `below` is false, where `below` is true on a
/// prefix of the range and false after it; `end` if it is true throughout. Branch-free: each
/// step halves the range with a conditional move, `log2(end - start) + 1` calls of `below`.
#[inline(always)]
pub(super) fn lower_bound(start: usize, end: usize, below: impl Fn(usize) -> bool) -> usize {
    if start >= end {
        return start;
    }
    let (mut base, mut size) = (start, end - start);
    while size > 1 {
        let half = size / 2;
        let mid = base + half;
        base = if below(mid) { mid } else { base };
        size -= half;
    }
    base + usize::from(below(base))
}

/// Slots on either side of an interpolated guess that [`hint_lower_bound`] searches before it
/// gives up on the guess: one 64-byte line of 8-byte slots.
pub(super) const INTERPOLATION_WINDOW: usize = 8;
/// Records of a run of equal hints that [`Node::search`] prefetches at most before it
/// bisects the run (`Node::prefetch_run`).
const RUN_PREFETCH_MAX: usize = 32;
/// Nodes with fewer entries than this are searched by plain bisection.
pub(super) const INTERPOLATION_MIN_ENTRIES: usize = 16;

/// The first index of `[0, count)` whose hint (`hint_at`, non-decreasing in the index) is not
/// below `hint`; `count` if there is none. Interpolation search (Graefe, "Modern B-Tree
/// Techniques", 2011, §4.3; Van Sandt et al., "Efficiently Searching In-Memory Sorted Arrays:
/// Revenge of the Interpolation Search?", SIGMOD 2019): the first hint and `last` place a
/// guess on the line between them, then one window of [`INTERPOLATION_WINDOW`] slots beside
/// the guess is bisected if it brackets the answer, else the rest of that side. Keys that are
/// dense within a node (consecutive integers, a sequence number after a fixed prefix) are
/// found with two slot reads — the first and the guess — where bisection of a 300-entry leaf
/// reads nine slots on five or six cache lines; skewed keys cost at most four reads more
/// than bisection.
///
/// `last` is the caller's copy of the last hint, `hint_at(count - 1)`: the page keeps one in
/// its header line (slotted rule 9), so the guess need not wait for the slot array's last
/// line. Only the guess and the choice of side depend on it; every answer is confirmed by
/// slot reads, so a wrong `last` costs reads, never a wrong index.
///
/// `hint_at` may return anything (an optimistic reader's page may change under it): every
/// index passed to it is below `count` whatever it returns, and the caller validates.
#[inline(always)]
pub(super) fn hint_lower_bound(
    count: usize,
    hint: u32,
    last: u32,
    hint_at: impl Fn(usize) -> u32,
) -> usize {
    let below = |i: usize| hint_at(i) < hint;
    if count < INTERPOLATION_MIN_ENTRIES {
        return lower_bound(0, count, below);
    }
    let first = hint_at(0);
    if hint <= first {
        return 0;
    }
    // From here the answer lies in [1, count].
    if hint > last {
        // Past the last entry, as an append is: the last slot confirms it (an appender has
        // just written that line), else `last` was stale and the answer is in [1, count - 1].
        return if below(count - 1) {
            count
        } else {
            lower_bound(1, count - 1, below)
        };
    }
    // Here first < hint <= last, so last > first.
    hint_search_from(count, interpolate(count, hint, first, last), below)
}

/// The end of [`hint_lower_bound`] once it has its guess: the first index of `[1, count)`
/// whose hint is not below the probe's (`below` false), `count` if none, searched outward
/// from `guess` in `[1, count - 1]` (the answer is known not to be 0: the probe's hint is
/// above entry 0's). Every index passed to `below` is in `[1, count)`.
#[inline(always)]
fn hint_search_from(count: usize, guess: usize, below: impl Fn(usize) -> bool) -> usize {
    if below(guess) {
        // The answer is in (guess, count].
        let end = (guess + INTERPOLATION_WINDOW).min(count - 1);
        if below(end) {
            lower_bound(end + 1, count, below)
        } else {
            lower_bound(guess + 1, end, below)
        }
    } else {
        // The answer is in [1, guess].
        let start = guess.saturating_sub(INTERPOLATION_WINDOW).max(1);
        if below(start) {
            lower_bound(start + 1, guess, below)
        } else {
            lower_bound(1, start, below)
        }
    }
}

/// Prefetches the slot lines [`hint_search_from`] reads from guess `g` of a node of
/// `count` entries: the guess's and those of the window's two ends, `INTERPOLATION_WINDOW`
/// slots (one line of hinted slots) either side, of which the search reads one after the
/// guess says which: without them, that second line was a miss of its own after the
/// guess's. Advisory.
#[inline(always)]
fn prefetch_window<P: PageRead + ?Sized>(page: &P, count: usize, g: usize) {
    let lo = g.saturating_sub(INTERPOLATION_WINDOW);
    let hi = (g + INTERPOLATION_WINDOW).min(count.saturating_sub(1));
    for i in [lo, g, hi] {
        page.prefetch(HINTS_AT + NODE_SLOT_SIZE * i);
    }
}

/// The prefetches of an interpolated search for `hint` in a node of `count` entries whose
/// first and last hints are `ends`: the guess's slot window ([`prefetch_window`]) and the
/// lines where the guessed entry's record (and the `before` records before it) lie if the
/// records are in slot order, from the heap `layout` (`Slotted::record_layout`, asked only
/// when there is a guess). Returns the guess, as [`Node::search`]'s `prefetch_guess` does;
/// `None`, prefetching nothing, where there is none. Shared by that search, which reads
/// its numbers from the page header, and by the search summary's prefetch
/// ([`summary::prefetch`]), which has them before the header arrives. Advisory: any
/// numbers prefetch lines of `page` only.
#[inline(always)]
pub(super) fn prefetch_interpolated<P: PageRead + ?Sized>(
    page: &P,
    count: usize,
    hint: u32,
    (first, last): (u32, u32),
    layout: impl FnOnce() -> Option<(usize, usize)>,
    before: usize,
) -> Option<usize> {
    let g = interpolated_guess(count, hint, (first, last))?;
    prefetch_window(page, count, g);
    if let Some((free_end, avg)) = layout() {
        if let Some(r) = slotted::record_guess(page.page_len(), free_end, avg, count, g, before) {
            slotted::prefetch_lines(page, r);
        }
    }
    Some(g)
}

/// The guess [`hint_lower_bound`] starts from for `hint` in a node of `count` entries
/// whose first and last hints are `ends`: `None` where it decides without one (a node too
/// small to interpolate, a hint at or below the first entry's or above the last).
#[inline(always)]
fn interpolated_guess(count: usize, hint: u32, (first, last): (u32, u32)) -> Option<usize> {
    if count < INTERPOLATION_MIN_ENTRIES || hint <= first || hint > last {
        return None;
    }
    Some(interpolate(count, hint, first, last))
}

/// The guess of [`hint_lower_bound`]: where `hint` falls on the line from entry 0's hint
/// `first` to entry `count - 1`'s hint `last`, as an entry number in `[1, count - 1]`.
/// Requires `first < hint <= last` and `count >= 2`.
#[inline(always)]
fn interpolate(count: usize, hint: u32, first: u32, last: u32) -> usize {
    let span = u64::from(last - first);
    let guess = (u64::from(hint - first) * (count as u64 - 1) / span) as usize;
    // `min`/`max`, not `clamp`: the compiler left `clamp` an out-of-line call here.
    guess.max(1).min(count - 1)
}

impl<'a, P: PageRead + ?Sized> Node<'a, P> {
    /// [`hint_of`] entry `i`'s key for hint offset `offset`, read in place.
    pub(super) fn hint_at(&self, i: usize, offset: usize) -> Result<u32> {
        let r = self.key_range(i)?;
        let n = r.len().saturating_sub(offset).min(HINT_BYTES);
        if n == 0 {
            return Ok(0);
        }
        Ok((self.s.page().head_be(r.start + offset, n) >> 32) as u32)
    }

    /// Compares entry `i`'s key with a probe: first the 8-byte heads (one or two loads, no
    /// copy), then, only if both keys are longer than 8 bytes and their heads are equal, the
    /// rest, 8 bytes at a time in the same way (composite keys of 4-byte integers differ in
    /// their second or third word).
    #[inline]
    pub(super) fn cmp_probe(&self, i: usize, p: &Probe<'_>) -> Result<Ordering> {
        let (_, r) = self.ranges(i)?;
        Ok(self.cmp_probe_cut(&r, p, usize::MAX))
    }

    /// [`Node::cmp_probe`] of the key at page bytes `r`, both keys cut at `end` bytes (one
    /// or more): the heads of their first `min(end, 8)` bytes decide unless equal (the
    /// probe's head masked, not read again), then the lengths if either key (cut) ends by
    /// byte 8, then the rest from byte 8 ([`Node::cmp_from`]). Zero padding cannot make
    /// unequal keys tie: with equal heads, a key that ends by byte 8 is a prefix of the
    /// other, so the lengths order them.
    #[inline(always)]
    fn cmp_probe_cut(&self, r: &Range<usize>, p: &Probe<'_>, end: usize) -> Ordering {
        let n = end.clamp(1, 8);
        let (rl, kl) = (r.len().min(end), p.key.len().min(end));
        let head = self.s.page().head_be(r.start, rl.min(n));
        let probe = p.head & (u64::MAX << (8 * (8 - n)));
        if head != probe {
            return head.cmp(&probe);
        }
        if rl <= 8 || kl <= 8 {
            return rl.cmp(&kl);
        }
        self.cmp_from(r, p.key, 8, end)
    }

    /// The first 8-byte words in which the key at page bytes `r` and `key`, both cut at
    /// `end` bytes, differ, compared from byte `from` on (the caller knows bytes
    /// `[0, from)` are equal; `from` is at most both lengths): `Err(n)` if they agree on
    /// their first `n = min(lengths, end)` bytes, else `Ok((at, x, y))`, the words from
    /// byte `at` as big-endian numbers. Each word holds the same number of real bytes and
    /// zeros after them, so the first set bit of `x ^ y` lies in the first differing byte
    /// and `x.cmp(&y)` is the order of that byte.
    #[inline(always)]
    fn first_difference(
        &self,
        r: &Range<usize>,
        key: &[u8],
        from: usize,
        end: usize,
    ) -> std::result::Result<(usize, u64, u64), usize> {
        let page = self.s.page();
        let n = r.len().min(key.len()).min(end);
        let mut at = from;
        while at < n {
            let m = (n - at).min(8);
            let (x, y) = (page.head_be(r.start + at, m), key.head_be(at, m));
            if x != y {
                return Ok((at, x, y));
            }
            at += m;
        }
        Err(at)
    }

    /// Length of the common prefix of the key at page bytes `r` and `key`, at most `end`,
    /// counting bytes `[0, from)` as equal ([`Node::first_difference`]): compared in place,
    /// 8 bytes at a time as big-endian words.
    fn common_from(&self, r: &Range<usize>, key: &[u8], from: usize, end: usize) -> usize {
        match self.first_difference(r, key, from, end) {
            Ok((at, x, y)) => at + ((x ^ y).leading_zeros() / 8) as usize,
            Err(n) => n,
        }
    }

    /// Compares the key at page bytes `r` with `key`, both cut at `end` bytes, as `[u8]`
    /// does; bytes `[0, from)` count as equal ([`Node::first_difference`]). The first
    /// differing words decide, without finding the byte in them. Inlined: out of line, a
    /// `lookup-resident` lookup ran 13 instructions more (callgrind, 3,637 against 3,624).
    #[inline(always)]
    pub(super) fn cmp_from(
        &self,
        r: &Range<usize>,
        key: &[u8],
        from: usize,
        end: usize,
    ) -> Ordering {
        match self.first_difference(r, key, from, end) {
            Ok((_, x, y)) => x.cmp(&y),
            Err(_) => r.len().min(end).cmp(&key.len().min(end)),
        }
    }

    /// Compares `key` with the node's prefix: `Less` (or `Greater`) if `key` sorts before
    /// (after) every key that begins with the prefix, `Equal` if it begins with it. Reads the
    /// low fence only for a prefix longer than 8 bytes whose head `key` matches.
    fn cmp_prefix(&self, key: &[u8]) -> Result<Ordering> {
        let p = self.prefix_len;
        if p == 0 {
            return Ok(Ordering::Equal);
        }
        let n = p.min(PREFIX_HEAD_BYTES);
        // The key's first min(len, n) bytes against as many of the prefix head's, as two
        // big-endian numbers (zero-padded, so equal bytes give equal numbers).
        let kn = key.len().min(n);
        let head = key.head_be(0, kn);
        let mask = u64::MAX.checked_shl(8 * (8 - kn as u32)).unwrap_or(0);
        match head.cmp(&(u64::from_be_bytes(self.prefix_head) & mask)) {
            Ordering::Equal if kn < n => return Ok(Ordering::Less), // a proper prefix
            Ordering::Equal => {}
            unequal => return Ok(unequal),
        }
        if p <= PREFIX_HEAD_BYTES {
            return Ok(Ordering::Equal);
        }
        let low = self.s.record_range(0)?;
        if low.len() < 1 + p {
            return Err(self.corrupt(format!("prefix of {p} bytes is longer than the low fence")));
        }
        // The prefix is the low fence's first `p` key bytes, compared in place from byte
        // `n` on (the head matched); `cmp_from` orders the fence against the key, so the
        // order is reversed. A key that ends inside the prefix, matching, sorts before it.
        let prefix = low.start + 1..low.start + 1 + p;
        Ok(self.cmp_from(&prefix, key, n, p).reverse())
    }

    /// Compares the probe key's bytes `[prefix_len, hint_offset)` with those every entry
    /// shares (invariant H; read from entry 0, so the node must have one): `Less`
    /// (`Greater`) if the key sorts before (after) every entry, `Equal` if it has those
    /// bytes. A key that ends inside them, matching so far, is `Less`. The caller has found
    /// the key to have the node's prefix (bytes `[0, prefix_len)`).
    ///
    /// # Errors
    /// [`Error::Corruption`] if entry 0 is shorter than the hint offset.
    fn cmp_shared(&self, p: &Probe<'_>) -> Result<Ordering> {
        let (_, r) = self.ranges(0)?;
        let end = self.hint_offset;
        if r.len() < end {
            return Err(self.corrupt(format!(
                "entry 0 ({} bytes) is shorter than the hint offset {end}",
                r.len()
            )));
        }
        // Bytes `[0, prefix_len)` are equal (the caller's `cmp_prefix`); comparing them again
        // inside the first word costs nothing. `end` is at least 1: the caller asks only
        // where the hints start past the prefix.
        Ok(self.cmp_probe_cut(&r, p, end).reverse())
    }

    /// Where the entries' hints start in their keys (invariant H), in bytes.
    pub(super) fn hint_offset(&self) -> usize {
        self.hint_offset
    }

    /// Length in bytes of the common prefix of entry `i`'s key and `key`, compared in place
    /// (no copy of the entry).
    ///
    /// # Errors
    /// As [`Node::search`].
    pub(super) fn common_with(&self, i: usize, key: &[u8]) -> Result<usize> {
        let (_, r) = self.ranges(i)?;
        Ok(self.common_from(&r, key, 0, usize::MAX))
    }

    /// True if `key` begins with the node's prefix (so it may lie inside the fences).
    ///
    /// # Errors
    /// As [`Node::search`].
    pub(crate) fn has_prefix_of(&self, key: &[u8]) -> Result<bool> {
        Ok(self.cmp_prefix(key)? == Ordering::Equal)
    }

    /// Binary search: `Ok(i)` if entry `i` has `key`, `Err(i)` if `key` belongs before entry
    /// `i` (`i` may be [`Node::entry_count`]). `key` may lie outside the node's fences.
    /// Compares slot hints first and reads an entry's record only on an equal hint (module
    /// doc, "Search keys"). In a run of entries with the probe's hint, the run's last entry
    /// is compared first (btree rule 17), so a key past the run — an insert in ascending
    /// order, or the descent of one — is placed with one comparison instead of a bisection
    /// of the run. TPC-C's order lines are such keys: in a leaf that holds the end of one
    /// district's lines and the start of the next's, the hints hold the district and order
    /// numbers, so one order's lines make one run that each new line extends. (With the
    /// fixed-width integer keys of page format 4 the hints held only the order number's
    /// high bytes, so a whole district's lines made one run; this cut New-Order's
    /// instructions by 4 % then.)
    pub(crate) fn search(&self, key: &[u8]) -> Result<std::result::Result<usize, usize>> {
        self.search_in_runs::<true, true>(key)
    }

    /// [`Node::search`] of a leaf whose search lines the descent has just prefetched from
    /// its search summary (`summary::prefetch` returned true): the same answer, without
    /// prefetching the same lines again (`prefetch_guess`'s heap-layout and record-guess
    /// arithmetic: 146 of a `lookup-resident` lookup's instructions, callgrind). A stale summary makes
    /// it search with wrong lines prefetched, never give a wrong answer.
    ///
    /// # Errors
    /// As [`Node::search`].
    pub(crate) fn search_prefetched(
        &self,
        key: &[u8],
    ) -> Result<std::result::Result<usize, usize>> {
        self.search_in_runs::<true, false>(key)
    }

    /// [`Node::search`] without trying a run's last entry first, for the bound where a
    /// scan starts: such a bound is often a prefix of the keys it finds (the last name of a
    /// TPC-C `customer_by_name` scan), which lies at the start of its run, so trying the
    /// end first would cost a record read (on a cold leaf, a cache miss) for nothing.
    ///
    /// # Errors
    /// As [`Node::search`].
    pub(crate) fn search_scan_start(
        &self,
        key: &[u8],
    ) -> Result<std::result::Result<usize, usize>> {
        self.search_in_runs::<false, true>(key)
    }

    /// [`Node::search`]; without `LAST_FIRST`, as [`Node::search_scan_start`]; without
    /// `PREFETCH`, as [`Node::search_prefetched`]. Out of line, as `search` was before it
    /// had several forms: inlined into its callers (the descents, the batch, the insert),
    /// it made New-Order run 2.5 % more instructions (callgrind).
    #[inline(never)]
    fn search_in_runs<const LAST_FIRST: bool, const PREFETCH: bool>(
        &self,
        key: &[u8],
    ) -> Result<std::result::Result<usize, usize>> {
        let count = self.entry_count();
        match self.cmp_prefix(key)? {
            Ordering::Less => return Ok(Err(0)),
            Ordering::Greater => return Ok(Err(count)),
            Ordering::Equal => {}
        }
        if count == 0 {
            return Ok(Err(0));
        }
        let probe = Probe::new(key, self.hint_offset);
        let guess = match PREFETCH {
            true => self.prefetch_guess(count, probe.hint),
            false => self.guess(count, probe.hint),
        };
        if self.hint_offset > self.prefix_len {
            match self.cmp_shared(&probe)? {
                Ordering::Less => return Ok(Err(0)),
                Ordering::Greater => return Ok(Err(count)),
                Ordering::Equal => {}
            }
        }
        // Lower bound on the hints by interpolation (`hint_lower_bound`): the first entry
        // whose hint is not below the probe's. Hints never decrease in key order, so the keys
        // with the probe's hint form one run from there; usually it is one entry long, but
        // keys that share more than four bytes past the hint offset make long runs, which a
        // binary search over the full keys then narrows.
        let page = self.s.page();
        // In bounds: Node::open checked the special area's length and the 8-byte slot
        // format, and Slotted::open that the slot array of `count + 2` slots ends inside
        // the page; every index passed is < count.
        let hint_at = |i: usize| page.u32_at(HINTS_AT + NODE_SLOT_SIZE * i);
        let lo = match guess {
            Some(g) => hint_search_from(count, g, |i| hint_at(i) < probe.hint),
            None => hint_lower_bound(count, probe.hint, self.s.last_hint(), hint_at),
        };
        if lo == count || hint_at(lo) != probe.hint {
            return Ok(Err(lo));
        }
        let mut hi = if lo + 1 == count || hint_at(lo + 1) != probe.hint {
            lo + 1
        } else {
            lower_bound(lo + 1, count, |i| hint_at(i) <= probe.hint)
        };
        if LAST_FIRST && hi - lo > 1 {
            match self.cmp_probe(hi - 1, &probe)? {
                Ordering::Less => return Ok(Err(hi)),
                Ordering::Equal => return Ok(Ok(hi - 1)),
                Ordering::Greater => hi -= 1,
            }
        }
        if hi - lo > 2 {
            self.prefetch_run(lo, hi);
        }
        let mut lo = lo;
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.cmp_probe(mid, &probe)? {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Ok(Ok(mid)),
            }
        }
        Ok(Err(lo))
    }

    /// Prefetches the first line of the records of entries `lo..hi`, a run of entries with
    /// the probe's hint that [`Node::search`] is about to bisect by their keys (evenly
    /// spaced, at most [`RUN_PREFETCH_MAX`] of a longer run): the bisection's record reads
    /// depend on one another (each picks the next), so without this each is a cache miss
    /// of its own on a cold node; with it they overlap. Runs are long where keys share more
    /// than four bytes past the hint offset, as the names of a TPC-C `customer_by_name`
    /// index do. Reads the run's slots, whose lines the hint search has mostly just read.
    /// Advisory, like every prefetch here.
    #[cold]
    #[inline(never)]
    fn prefetch_run(&self, lo: usize, hi: usize) {
        let page = self.s.page();
        let step = (hi - lo).div_ceil(RUN_PREFETCH_MAX).max(1);
        for i in (lo..hi).step_by(step) {
            if let Ok(r) = self.s.record_range(FIRST_ENTRY + i) {
                page.prefetch(r.start);
            }
        }
    }

    /// The interpolated guess of [`Node::prefetch_guess`] without its prefetches: the same
    /// entry number, or `None` under the same conditions ([`interpolated_guess`]).
    #[inline(always)]
    fn guess(&self, count: usize, hint: u32) -> Option<usize> {
        if count < INTERPOLATION_MIN_ENTRIES {
            return None; // before reading slot 0: a node may have no entries
        }
        // In bounds as in `prefetch_guess`.
        let ends = (self.s.page().u32_at(HINTS_AT), self.s.last_hint());
        interpolated_guess(count, hint, ends)
    }

    /// Starts the cache misses that [`Node::search`] for a key of hint `hint` will take
    /// after the first two lines of the page: the slot line of the interpolated guess
    /// (`hint_lower_bound`) and, on the assumption that the records lie in key order
    /// ([`Slotted::guess_record_in_order`]), the record of the guessed entry and, in an
    /// inner node, the one before it (whose child a key between two separators takes). So
    /// the slot's miss, the record's and `cmp_shared`'s miss on entry 0 overlap instead of
    /// following one another. Returns the guess, an entry number in `[1, count - 1]`, for
    /// `hint_search_from`; `None` (and nothing prefetched) for a node too small to
    /// interpolate, or a hint at or below the first entry's or above `last_hint`, where
    /// `hint_lower_bound` decides without a guess. Advisory: on a page changing under an
    /// optimistic reader it may prefetch wrong lines, never outside the page.
    #[inline(always)]
    fn prefetch_guess(&self, count: usize, hint: u32) -> Option<usize> {
        if count < INTERPOLATION_MIN_ENTRIES {
            return None;
        }
        let page = self.s.page();
        // In bounds: Node::open checked that the slot array of `count + 2` slots ends inside
        // the page, and every index below is < count.
        let (first, last) = (page.u32_at(HINTS_AT), self.s.last_hint());
        let before = usize::from(!self.is_leaf());
        let layout = || self.s.record_layout(FIRST_ENTRY);
        prefetch_interpolated(page, count, hint, (first, last), layout, before)
    }

    /// [`Node::search`], trying entry `near` first: `Ok(near)` if it holds `key`, `Err(near)`
    /// if `key` lies between entries `near - 1` and `near`, else the full search. A wrong or
    /// stale `near` costs two comparisons, nothing else. Where the hints start at the prefix
    /// and `key` has the prefix (checked from the special area), the two neighbours' hints
    /// decide unless they equal the probe's, so a new key's place is confirmed without
    /// reading a record; otherwise the records are compared.
    ///
    /// # Errors
    /// As [`Node::search`].
    pub(crate) fn search_near(
        &self,
        key: &[u8],
        near: Option<usize>,
    ) -> Result<std::result::Result<usize, usize>> {
        let count = self.entry_count();
        let Some(i) = near.filter(|&i| i <= count) else {
            return self.search(key);
        };
        let probe = Probe::new(key, self.hint_offset);
        // Hints order keys that share the node's prefix and the bytes up to the hint offset
        // (a smaller hint, a smaller key); with the offset at the prefix, the prefix is all
        // a key needs, and that is cheap to check.
        let hints_order =
            self.hint_offset == self.prefix_len && self.cmp_prefix(key)? == Ordering::Equal;
        let page = self.s.page();
        // In bounds: every index passed is < count (as in `search`).
        let cmp_entry = |j: usize| -> Result<Ordering> {
            if hints_order {
                let h = page.u32_at(HINTS_AT + NODE_SLOT_SIZE * j);
                if h != probe.hint {
                    return Ok(h.cmp(&probe.hint));
                }
            }
            self.cmp_probe(j, &probe)
        };
        if i < count {
            match cmp_entry(i)? {
                Ordering::Equal => return Ok(Ok(i)),
                Ordering::Less => return self.search(key),
                Ordering::Greater => {}
            }
        }
        // Entry `i` (if any) is above `key`: it goes at `i` if entry `i - 1` is below it.
        if i == 0 || cmp_entry(i - 1)? == Ordering::Less {
            return Ok(Err(i));
        }
        self.search(key)
    }

    /// The prefix length every key of the node shares, in bytes.
    pub(crate) fn prefix_len(&self) -> usize {
        self.prefix_len
    }

    /// Checks the search keys against the fences and entries (for `verify`): the prefix
    /// length and head, then every entry's hint and the header's copy of the last one
    /// (slotted rule 9). Returns the first mismatch, described.
    ///
    /// # Errors
    /// [`Error::Corruption`] if a fence or entry cannot be read.
    pub(crate) fn check_search_keys(&self) -> Result<Option<String>> {
        let low = self.low_fence()?;
        let p = common_prefix(&low, &self.high_fence()?);
        let (_, head) = prefix_fields(low.as_deref().unwrap_or(&[]), p);
        if p != self.prefix_len || head != self.prefix_head {
            return Ok(Some(format!(
                "prefix of {} bytes (head {:02x?}) stored, the fences share {p} (head {head:02x?})",
                self.prefix_len, self.prefix_head
            )));
        }
        // Invariant H: every entry has entry 0's bytes [prefix, hint offset).
        let off = self.hint_offset;
        let shared = match self.entry_count() {
            0 => Vec::new(),
            _ => self
                .key(0)?
                .get(p..off)
                .map(<[u8]>::to_vec)
                .unwrap_or_default(),
        };
        for i in 0..self.entry_count() {
            let key = self.key(i)?;
            if key.get(p..off) != Some(&shared[..]) {
                return Ok(Some(format!(
                    "entry {i} does not share bytes {p}..{off} with entry 0 (hint offset {off})"
                )));
            }
            let (want, got) = (hint_of(&key, off), self.s.hint(FIRST_ENTRY + i)?);
            if want != got {
                return Ok(Some(format!(
                    "entry {i} has hint {got:#010x}, its key {want:#010x}"
                )));
            }
        }
        // Slotted rule 9: the header's copy of the last slot's hint, which searches guess from.
        Ok(self.s.last_hint_problem())
    }

    /// The second step of a batched lookup ([`BTree::get_many`](crate::btree::BTree::get_many)),
    /// once the node's first two lines are cached: prefetches the slot-array lines that
    /// [`Node::search`] for `key` reads first — every slot of a node too small to
    /// interpolate, else the line of the interpolated guess and the line a window before it
    /// — and entry 0's record where the hints start past the prefix (`cmp_shared`
    /// reads it). Reads only the first two lines. Advisory: on a page changing under an
    /// optimistic reader it may prefetch the wrong lines, never out of the page.
    pub(crate) fn prefetch_search(&self, key: &[u8]) {
        let count = self.entry_count();
        if count == 0 {
            return;
        }
        let page = self.s.page();
        let slot = |i: usize| HINTS_AT + NODE_SLOT_SIZE * i;
        if self.hint_offset > self.prefix_len {
            if let Ok(r) = self.s.record_range(FIRST_ENTRY) {
                page.prefetch(r.start);
            }
        }
        if count < INTERPOLATION_MIN_ENTRIES {
            for i in (0..count).step_by(INTERPOLATION_WINDOW).chain([count - 1]) {
                page.prefetch(slot(i));
            }
            return;
        }
        // In bounds: Node::open checked that the slot array of `count + 2` slots ends inside
        // the page, and every index below is < count.
        let hint = hint_of(key, self.hint_offset);
        let (first, last) = (page.u32_at(slot(0)), self.s.last_hint());
        let at = match hint {
            h if h <= first => 0,
            h if h > last => count - 1,
            h => interpolate(count, h, first, last),
        };
        // The guess's line, and the one a window before it: a guess at or past the answer
        // (an exact guess included) reads both.
        page.prefetch(slot(at.saturating_sub(INTERPOLATION_WINDOW)));
        page.prefetch(slot(at));
    }

    /// The third step of a batched lookup, once the lines of
    /// [`Node::prefetch_search`] are cached: finds where `key` falls among the hints and
    /// prefetches the records that the search then compares and reads — in a leaf the
    /// entry there (its value: every line of the record, up to 1 KiB), in an inner node
    /// that entry and the one before it (the child of a key between two separators; first
    /// and last line of each). Advisory, as
    /// [`Node::prefetch_search`].
    pub(crate) fn prefetch_records(&self, key: &[u8]) {
        /// Lines of one record prefetched at most.
        const MAX_RECORD_LINES: usize = 16;
        let count = self.entry_count();
        if count == 0 {
            return;
        }
        let page = self.s.page();
        // In bounds: every index passed to `hint_at` is < count (as in `search`).
        let hint_at = |i: usize| page.u32_at(HINTS_AT + NODE_SLOT_SIZE * i);
        let hint = hint_of(key, self.hint_offset);
        let lo = hint_lower_bound(count, hint, self.s.last_hint(), hint_at).min(count - 1);
        if self.is_leaf() {
            if let Ok(r) = self.s.record_range(FIRST_ENTRY + lo) {
                let end = r.end.min(r.start + 64 * MAX_RECORD_LINES);
                for at in (r.start..end).step_by(64).chain([end.saturating_sub(1)]) {
                    page.prefetch(at);
                }
            }
            return;
        }
        for i in [lo.saturating_sub(1), lo] {
            if let Ok(r) = self.s.record_range(FIRST_ENTRY + i) {
                page.prefetch(r.start);
                page.prefetch(r.end.saturating_sub(1));
            }
        }
    }
}
