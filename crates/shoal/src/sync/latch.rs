//! [`HybridLatch`] and its per-mode guards. Rules and the soundness argument: module `sync`.

use super::readers;
use super::shim::{fence, spin_hint, AtomicU32, AtomicU64, Parker, SPIN_ROUNDS};
use std::fmt;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release, SeqCst};
use std::time::{Duration, Instant};

const X_BIT: u64 = 1 << 63;
const PARKED: u64 = 1 << 62;
const BIAS: u64 = 1 << 61;
const S_SHIFT: u32 = 42;
const S_ONE: u64 = 1 << S_SHIFT;
const S_MASK: u64 = ((1 << 19) - 1) << S_SHIFT;
const V_MASK: u64 = S_ONE - 1;
/// `SharedGuard::slot` of a hold counted in the state word (not published in the table).
const COUNTED: u32 = u32::MAX;
/// Contended counted shared acquisitions to wait after a revocation before biasing again.
const INHIBIT_ACQUISITIONS: u32 = 256;

const _: () = assert!(S_MASK & (X_BIT | PARKED | BIAS | V_MASK) == 0);
const _: () = assert!(X_BIT | PARKED | BIAS | S_MASK | V_MASK == u64::MAX);
const _: () = assert!(readers::SLOTS < COUNTED as usize);

/// The Dekker handshake of invariant 4 is correct with SeqCst accesses alone (C++20
/// [atomics.order]: the single total order of SeqCst operations is consistent with coherence
/// order, so of "publish slot; load word" and "CAS word; load slots" at least one load sees the
/// other thread's store). loom models SeqCst *accesses* only as AcqRel (its README: "use
/// `fence(SeqCst)`"), so under loom the reader adds the fence that the hardware and the
/// language model already give us; the writer's side always has it (it is off the hot path).
#[inline(always)]
fn loom_sc_fence() {
    #[cfg(loom)]
    fence(SeqCst);
}

/// A failed optimistic validation: the data read may be inconsistent and the operation must
/// restart from its beginning (sync rule O3). Also returned by [`OptimisticGuard::upgrade`]
/// when the version moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Restart;

impl fmt::Display for Restart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("optimistic validation failed; restart the operation")
    }
}

impl std::error::Error for Restart {}

/// A hybrid latch: optimistic, shared and exclusive modes in one 64-bit word (see `sync`).
///
/// Size: 16 bytes (plus a mutex and condition variable under loom).
pub struct HybridLatch {
    state: AtomicU64,
    /// Contended shared acquisitions left before the latch may become reader-biased again
    /// (a heuristic: racy updates are harmless).
    inhibit: AtomicU32,
    parker: Parker,
    #[cfg(loom)]
    table: Box<readers::Table>,
}

impl Default for HybridLatch {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for HybridLatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.load(Relaxed);
        f.debug_struct("HybridLatch")
            .field("exclusive", &(s & X_BIT != 0))
            .field("shared", &((s & S_MASK) >> S_SHIFT))
            .field("parked", &(s & PARKED != 0))
            .field("biased", &(s & BIAS != 0))
            .field("version", &(s & V_MASK))
            .finish()
    }
}

impl HybridLatch {
    /// A free latch with version 0.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        HybridLatch {
            state: AtomicU64::new(0),
            inhibit: AtomicU32::new(0),
            parker: Parker::new(),
        }
    }

    /// A free latch with version 0.
    #[cfg(loom)]
    pub fn new() -> Self {
        HybridLatch {
            state: AtomicU64::new(0),
            inhibit: AtomicU32::new(0),
            parker: Parker::new(),
            table: readers::new_table(),
        }
    }

    #[inline]
    fn key(&self) -> usize {
        self as *const Self as usize
    }

    /// The visible-readers table this latch publishes in.
    #[inline]
    fn table(&self) -> &readers::Table {
        #[cfg(not(loom))]
        return readers::global();
        #[cfg(loom)]
        return &self.table;
    }

    /// The current version (changes on every exclusive release). For diagnostics and tests.
    pub fn version(&self) -> u64 {
        self.state.load(Relaxed) & V_MASK
    }

    /// True if some thread holds (or is acquiring) the latch exclusively.
    pub fn is_exclusive(&self) -> bool {
        self.state.load(Relaxed) & X_BIT != 0
    }

    /// Number of shared holders counted in the latch word right now (holders published in
    /// the visible-readers table of a biased latch are not included).
    pub fn shared_count(&self) -> u64 {
        (self.state.load(Relaxed) & S_MASK) >> S_SHIFT
    }

    /// True if the latch is reader-biased (shared holds are published in the visible-readers
    /// table instead of counted in the word).
    pub fn is_biased(&self) -> bool {
        self.state.load(Relaxed) & BIAS != 0
    }

    /// Makes the latch reader-biased now if no writer holds it (normally this happens by
    /// itself once readers are seen to overlap). For tests and benchmarks.
    pub fn enable_bias(&self) {
        let mut s = self.state.load(Relaxed);
        while s & (X_BIT | BIAS) == 0 {
            match self
                .state
                .compare_exchange_weak(s, s | BIAS, Relaxed, Relaxed)
            {
                Ok(_) => return,
                Err(now) => s = now,
            }
        }
    }

    // ---------------------------------------------------------------- optimistic

    /// Starts an optimistic read if no exclusive holder is present.
    ///
    /// # Errors
    /// [`Restart`] if the latch is held exclusively (the caller may retry or wait).
    #[inline]
    pub fn try_optimistic(&self) -> Result<OptimisticGuard<'_>, Restart> {
        let s = self.state.load(Acquire);
        if s & X_BIT == 0 {
            Ok(OptimisticGuard {
                latch: self,
                version: s & V_MASK,
            })
        } else {
            Err(Restart)
        }
    }

    /// Starts an optimistic read, waiting (spin, then park) while an exclusive holder is
    /// present. Never writes to the latch word unless it has to park.
    #[inline]
    pub fn optimistic(&self) -> OptimisticGuard<'_> {
        match self.try_optimistic() {
            Ok(g) => g,
            Err(Restart) => self.optimistic_slow(),
        }
    }

    #[cold]
    fn optimistic_slow(&self) -> OptimisticGuard<'_> {
        loop {
            self.wait_while(|s| s & X_BIT != 0);
            if let Ok(g) = self.try_optimistic() {
                return g;
            }
        }
    }

    // ---------------------------------------------------------------- shared

    /// Acquires the latch in shared mode if that is possible without waiting.
    ///
    /// On a reader-biased latch the hold is published in the visible-readers table (no
    /// write to the latch word); otherwise it is counted in the word. Readers that are seen
    /// to overlap turn the bias on (invariant 4).
    #[inline]
    pub fn try_shared(&self) -> Option<SharedGuard<'_>> {
        let mut s = self.state.load(Relaxed);
        if s & BIAS != 0 {
            let idx = readers::slot_for(self.key());
            if readers::try_publish(self.table(), idx, self.key()) {
                // Dekker with the writer's SeqCst CAS of X: either we see X/no bias here, or
                // the writer's scan sees our slot (invariant 4).
                loom_sc_fence();
                if self.state.load(SeqCst) & (BIAS | X_BIT) == BIAS {
                    return Some(SharedGuard::held(self, idx as u32));
                }
                readers::retire(self.table(), idx);
            }
            s = self.state.load(Relaxed);
        }
        let mut contended = false;
        loop {
            if s & X_BIT != 0 {
                return None;
            }
            assert!(s & S_MASK != S_MASK, "shared count overflow");
            contended |= s & S_MASK != 0;
            match self
                .state
                .compare_exchange_weak(s, s + S_ONE, Acquire, Relaxed)
            {
                Ok(_) => break,
                Err(now) => {
                    contended = true;
                    s = now;
                }
            }
        }
        if contended && s & BIAS == 0 {
            self.consider_bias();
        }
        Some(SharedGuard::held(self, COUNTED))
    }

    /// Readers overlapped on the counted path: bias the latch unless a recent revocation
    /// says writers come often (then count down instead).
    #[cold]
    fn consider_bias(&self) {
        let left = self.inhibit.load(Relaxed);
        if left > 0 {
            self.inhibit.store(left - 1, Relaxed);
        } else {
            self.enable_bias();
        }
    }

    /// After a CAS that set X and cleared a bias that was set (`prev & BIAS != 0`): wait for
    /// the published readers to leave and hold off re-biasing for a while.
    #[cold]
    fn revoke_bias(&self) {
        fence(SeqCst);
        readers::wait_gone(self.table(), self.key());
        self.inhibit.store(INHIBIT_ACQUISITIONS, Relaxed);
    }

    /// Acquires the latch in shared mode, waiting while an exclusive holder is present.
    #[inline]
    pub fn shared(&self) -> SharedGuard<'_> {
        self.shared_timed().0
    }

    /// As [`HybridLatch::shared`], and says how long it waited (`None` if it did not wait),
    /// for latch-wait statistics.
    #[inline]
    pub fn shared_timed(&self) -> (SharedGuard<'_>, Option<Duration>) {
        if let Some(g) = self.try_shared() {
            return (g, None);
        }
        self.shared_slow()
    }

    #[cold]
    fn shared_slow(&self) -> (SharedGuard<'_>, Option<Duration>) {
        let start = Instant::now();
        loop {
            self.wait_while(|s| s & X_BIT != 0);
            if let Some(g) = self.try_shared() {
                return (g, Some(start.elapsed()));
            }
        }
    }

    fn unlock_shared(&self, slot: u32) {
        if slot != COUNTED {
            readers::retire(self.table(), slot as usize);
            return;
        }
        // Release: our reads happen before a writer's drain check (Acquire) sees the count.
        let prev = self.state.fetch_sub(S_ONE, Release);
        debug_assert!(prev & S_MASK != 0, "unlock_shared without a shared holder");
        if prev & S_MASK == S_ONE && prev & (X_BIT | PARKED) == X_BIT | PARKED {
            // Last reader out while a writer waits for the drain: wake it (rule 3).
            self.wake_all();
        }
    }

    // ---------------------------------------------------------------- exclusive

    /// Acquires the latch exclusively if it is free (no holder in any mode); never waits.
    /// Used for CLOCK victims.
    #[inline]
    pub fn try_exclusive(&self) -> Option<ExclusiveGuard<'_>> {
        let s = self.state.load(Relaxed);
        if s & (X_BIT | S_MASK) != 0 {
            return None;
        }
        if self
            .state
            .compare_exchange(s, (s | X_BIT) & !BIAS, SeqCst, Relaxed)
            .is_err()
        {
            return None;
        }
        if s & BIAS != 0 && {
            fence(SeqCst);
            readers::any(self.table(), self.key())
        } {
            // Published readers are inside and we may not wait: put everything back as it
            // was (same version: nothing was written) and wake anyone who parked meanwhile.
            // One swap: we own X, so only PARKED can have changed since our CAS; restoring X
            // clear and BIAS set in two steps would let a writer in unbiased in between.
            let prev = self.state.swap(s & !PARKED, Release);
            if (prev | s) & PARKED != 0 {
                self.parker.unpark_all(self.key());
            }
            return None;
        }
        if s & BIAS != 0 {
            // Revoked (no published reader was inside): hold off re-biasing for a while.
            self.inhibit.store(INHIBIT_ACQUISITIONS, Relaxed);
        }
        fence(Release); // seqlock: X is visible before any data store (module doc)
        Some(ExclusiveGuard::held(self))
    }

    /// Acquires the latch exclusively, waiting for other holders to leave.
    #[inline]
    pub fn exclusive(&self) -> ExclusiveGuard<'_> {
        self.exclusive_timed().0
    }

    /// As [`HybridLatch::exclusive`], and says how long it waited (`None` if it did not).
    #[inline]
    pub fn exclusive_timed(&self) -> (ExclusiveGuard<'_>, Option<Duration>) {
        if let Some(g) = self.try_exclusive() {
            return (g, None);
        }
        self.exclusive_slow()
    }

    #[cold]
    fn exclusive_slow(&self) -> (ExclusiveGuard<'_>, Option<Duration>) {
        let start = Instant::now();
        // Phase 1: claim the X bit (blocks new shared and optimistic entries; rule 1) and
        // clear the bias in the same CAS (invariant 4).
        let prev = loop {
            let s = self.state.load(Relaxed);
            if s & X_BIT == 0 {
                if self
                    .state
                    .compare_exchange_weak(s, (s | X_BIT) & !BIAS, SeqCst, Relaxed)
                    .is_ok()
                {
                    break s;
                }
                continue;
            }
            self.wait_while(|s| s & X_BIT != 0);
        };
        self.finish_exclusive(prev);
        (ExclusiveGuard::held(self), Some(start.elapsed()))
    }

    /// After the CAS that set X (replacing `prev`): seqlock fence, revoke a bias that was
    /// set, then wait for the counted readers that were inside to leave (phase 2).
    fn finish_exclusive(&self, prev: u64) {
        fence(Release); // seqlock: X is visible before any data store (module doc)
        if prev & BIAS != 0 {
            self.revoke_bias();
        }
        if self.state.load(Acquire) & S_MASK != 0 {
            self.wait_while(|s| s & S_MASK != 0);
            // Acquire: pairs with the readers' Release decrement.
            fence(Acquire);
        }
    }

    fn unlock_exclusive(&self) {
        // We own X and the shared count is zero, so only PARKED can change under us (set by
        // waiters with CAS); swap captures it atomically.
        let s = self.state.load(Relaxed);
        debug_assert!(s & X_BIT != 0 && s & S_MASK == 0);
        let next = (s + 1) & V_MASK;
        let prev = self.state.swap(next, Release);
        if prev & PARKED != 0 {
            self.parker.unpark_all(self.key());
        }
    }

    fn downgrade_exclusive(&self) {
        let s = self.state.load(Relaxed);
        debug_assert!(s & X_BIT != 0 && s & S_MASK == 0);
        let next = ((s + 1) & V_MASK) | S_ONE;
        let prev = self.state.swap(next, Release);
        if prev & PARKED != 0 {
            self.parker.unpark_all(self.key());
        }
    }

    // ---------------------------------------------------------------- waiting

    /// Waits until `blocked(state)` is false: bounded exponential spinning, then parking.
    /// Returns without guaranteeing anything: callers re-try their CAS.
    fn wait_while(&self, blocked: impl Fn(u64) -> bool) {
        for round in 0..SPIN_ROUNDS {
            if !blocked(self.state.load(Relaxed)) {
                return;
            }
            for _ in 0..(1u32 << round.min(6)) {
                spin_hint();
            }
        }
        loop {
            let s = self.state.load(Relaxed);
            if !blocked(s) {
                return;
            }
            if s & PARKED == 0
                && self
                    .state
                    .compare_exchange_weak(s, s | PARKED, Relaxed, Relaxed)
                    .is_err()
            {
                continue;
            }
            // Rule 3: sleep only if we still must wait and nobody cleared PARKED since.
            self.parker.park(self.key(), || {
                let s = self.state.load(Relaxed);
                blocked(s) && s & PARKED != 0
            });
        }
    }

    /// Clears PARKED and wakes every parked thread (rule 3: clear before unpark).
    fn wake_all(&self) {
        let prev = self.state.fetch_and(!PARKED, Relaxed);
        if prev & PARKED != 0 {
            self.parker.unpark_all(self.key());
        }
    }
}

/// An optimistic read of a [`HybridLatch`]: holds nothing, remembers the version.
/// Copyable; dropping it does nothing.
#[derive(Clone, Copy)]
pub struct OptimisticGuard<'a> {
    latch: &'a HybridLatch,
    version: u64,
}

impl<'a> OptimisticGuard<'a> {
    /// The version this read started at.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Checks that no exclusive holder has been or is inside since the read started.
    ///
    /// # Errors
    /// [`Restart`] if the data read since the start may be inconsistent.
    #[inline]
    pub fn validate(&self) -> Result<(), Restart> {
        fence(Acquire); // seqlock: order the data loads before the version re-read
        let s = self.latch.state.load(Relaxed);
        if s & (X_BIT | V_MASK) == self.version {
            Ok(())
        } else {
            Err(Restart)
        }
    }

    /// Turns this read into an exclusive hold if the version has not changed, waiting for
    /// shared holders to leave.
    ///
    /// # Errors
    /// [`Restart`] if a writer was or is inside since the read started.
    pub fn upgrade(self) -> Result<ExclusiveGuard<'a>, Restart> {
        let l = self.latch;
        let mut s = l.state.load(Relaxed);
        loop {
            if s & (X_BIT | V_MASK) != self.version {
                return Err(Restart);
            }
            match l
                .state
                .compare_exchange_weak(s, (s | X_BIT) & !BIAS, SeqCst, Relaxed)
            {
                Ok(_) => break,
                Err(now) => s = now,
            }
        }
        l.finish_exclusive(s);
        Ok(ExclusiveGuard::held(l))
    }
}

/// A shared hold of a [`HybridLatch`]; released on drop.
pub struct SharedGuard<'a> {
    latch: &'a HybridLatch,
    /// Visible-readers slot of a published hold, or `COUNTED`.
    slot: u32,
}

impl<'a> SharedGuard<'a> {
    #[inline]
    fn held(latch: &'a HybridLatch, slot: u32) -> Self {
        super::held::acquired();
        SharedGuard { latch, slot }
    }
}

impl Drop for SharedGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.latch.unlock_shared(self.slot);
        super::held::released();
    }
}

/// An exclusive hold of a [`HybridLatch`]; released on drop, which bumps the version.
pub struct ExclusiveGuard<'a> {
    latch: &'a HybridLatch,
}

impl<'a> ExclusiveGuard<'a> {
    #[inline]
    fn held(latch: &'a HybridLatch) -> Self {
        super::held::acquired();
        ExclusiveGuard { latch }
    }

    /// Atomically turns the exclusive hold into a shared one (bumping the version, since the
    /// data may have changed). Waiting readers are woken.
    pub fn downgrade(self) -> SharedGuard<'a> {
        let latch = self.latch;
        std::mem::forget(self);
        latch.downgrade_exclusive();
        SharedGuard {
            latch,
            slot: COUNTED,
        }
    }
}

impl Drop for ExclusiveGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.latch.unlock_exclusive();
        super::held::released();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn modes_exclude_as_documented() {
        let l = HybridLatch::new();
        let o = l.optimistic();
        {
            let _s1 = l.shared();
            let _s2 = l.try_shared().expect("shared is shared");
            assert!(l.try_exclusive().is_none());
            assert_eq!(l.shared_count(), 2);
            o.validate().expect("readers do not invalidate");
        }
        {
            let _x = l.exclusive();
            assert!(l.try_shared().is_none());
            assert!(l.try_exclusive().is_none());
            assert_eq!(l.try_optimistic().err(), Some(Restart));
            assert_eq!(o.validate(), Err(Restart));
        }
        assert_eq!(o.validate(), Err(Restart), "version moved");
        assert_eq!(l.version(), 1);
        let o2 = l.optimistic();
        let x = o2.upgrade().expect("unchanged version upgrades");
        let s = x.downgrade();
        assert_eq!(l.version(), 2);
        assert_eq!(l.shared_count(), 1);
        assert_eq!(o2.upgrade().err(), Some(Restart));
        drop(s);
        assert_eq!(l.shared_count(), 0);
    }

    #[test]
    fn overlapping_readers_bias_the_latch_and_writers_revoke_it() {
        let l = HybridLatch::new();
        assert!(!l.is_biased());
        {
            let _a = l.shared();
            assert!(!l.is_biased(), "a lone reader does not bias");
            let _b = l.shared(); // overlaps _a: contended counted acquisition
            assert!(l.is_biased());
        }
        {
            // A published hold leaves the word's shared count alone; a second hold by the
            // same thread hashes to the same slot and is counted instead ...
            let _a = l.shared();
            assert_eq!(l.shared_count(), 0);
            let _b = l.shared();
            assert_eq!(l.shared_count(), 1);
            // ... and a writer that may not wait backs out without a trace.
            let v = l.version();
            assert!(l.try_exclusive().is_none());
            assert!(l.is_biased());
            assert_eq!(l.version(), v);
            assert!(!l.is_exclusive());
        }
        drop(l.exclusive()); // revokes
        assert!(!l.is_biased());
        // Right after a revocation, overlapping readers count down instead of re-biasing.
        for _ in 0..INHIBIT_ACQUISITIONS {
            let _a = l.shared();
            let _b = l.shared();
            assert!(!l.is_biased());
        }
        let _a = l.shared();
        let _b = l.shared();
        assert!(l.is_biased(), "bias returns after the inhibit window");
    }

    #[test]
    fn version_wraps_without_touching_other_bits() {
        let l = HybridLatch::new();
        l.state.store(V_MASK, Relaxed);
        drop(l.exclusive());
        assert_eq!(l.version(), 0);
        assert!(!l.is_exclusive());
        assert_eq!(l.shared_count(), 0);
    }
}
