//! # Synchronisation: hybrid latches
//!
//! Job: the latch every page frame and page-table bucket carries — one 64-bit word that
//! offers three modes (Böttcher, Leis, Giceva, Neumann, Kemper, "Scalable and Robust
//! Latches for Database Systems", DaMoN 2020; Leis et al., "The ART of Practical
//! Synchronization", DaMoN 2016):
//!
//! ```text
//!   optimistic  read the version, read the data, validate the version   (no shared write)
//!   shared      many readers, counted in the word                       (one RMW in, one out)
//!               — or, on a reader-biased latch, published in a slot of the
//!               global visible-readers table                            (no write to the word)
//!   exclusive   one writer; its release bumps the version               (one RMW in, one out)
//!
//!   state word:  63     62       61     60 ........ 42   41 ............... 0
//!               [ X ][ PARKED ][ BIAS ][ shared count ][       version        ]
//! ```
//!
//! ## Invariants
//! 1. **X excludes S**: the X bit is set only by a CAS that saw it clear; a thread that sets it
//!    then waits until the shared count drains to zero before it touches the data. New shared
//!    acquisitions never start while X is set — so a waiting writer is not starved by a stream
//!    of readers.
//! 2. **Version**: changes only when an exclusive holder releases (or downgrades), by exactly
//!    one (mod 2^42). An optimistic read is valid iff at validation X is clear and the version
//!    equals the one read at the start.
//! 3. **Wake-ups are never lost**: a thread parks only after setting PARKED, and re-checks
//!    (`validate` under the parking-lot bucket lock) that it must still wait and that PARKED is
//!    still set. Every release that can unblock someone (exclusive release/downgrade, last
//!    shared release while X is set) clears PARKED *before* `unpark_all`, so a waiter either is
//!    in the queue when `unpark_all` runs or sees PARKED clear and does not sleep.
//! 4. **Reader bias** (BRAVO: Dice and Kogan, "BRAVO — Biased Locking for Reader-Writer
//!    Locks", USENIX ATC 2019): while BIAS is set, a shared acquisition CASes the latch's
//!    address into its slot of the visible-readers table (`readers`), then re-reads the word
//!    and keeps the hold only if BIAS is still set and X clear. A writer clears BIAS in the same
//!    CAS that sets X and then scans the table, waiting until no slot names the latch. All four
//!    accesses are SeqCst, so (Dekker) either the reader sees X / no BIAS and backs out, or the
//!    writer's scan sees the reader's slot and waits. BIAS is never set while X is held, and is
//!    cleared by every exclusive acquisition (so every writer that clears it scans). BIAS is
//!    set only when readers are seen to overlap on the counted path, and not again until
//!    `INHIBIT_ACQUISITIONS` such overlaps after a revocation, so cold latches never pay the
//!    scan and write-heavy latches stop being biased. A `try_exclusive` that finds published
//!    readers puts the word back exactly as it was (one swap) and fails.
//!
//! ## Why the optimistic read path is sound in Rust
//! An optimistic reader reads memory that an exclusive holder may be writing at the same
//! moment. Rust's memory model (C++20's) makes that undefined behaviour if either access is
//! non-atomic, *even if the reader throws the value away after failing validation*. Shoal
//! therefore never lets an optimistic reader touch non-atomic memory: page frames are arrays
//! of `AtomicU64` words read with relaxed loads (`page::AtomicBytes`) and written, under the X
//! latch, with relaxed stores of the same size (`page::AtomicBytesMut`) — rules O1/O2. Frame
//! metadata read optimistically (page id, hash links) are atomics too. What remains is the
//! classic seqlock ordering argument (Boehm, "Can Seqlocks Get Along With Programming Language
//! Memory Models?", MSPC 2012):
//!
//! * writer: `CAS(set X, Acquire)` → `fence(Release)` → relaxed data stores →
//!   `swap(version+1, X clear, Release)`;
//! * reader: `load(Acquire)` = v → relaxed data loads → `fence(Acquire)` → `load(Relaxed)` = v'.
//!
//! If any relaxed load read a value stored by a writer after its `fence(Release)`, that fence
//! synchronises with the reader's `fence(Acquire)`, so the writer's X-setting CAS happens
//! before the reader's second load, which therefore sees X set or a later version: validation
//! fails. If validation succeeds, every load read values from before the writer's critical
//! section, i.e. a consistent snapshot published by the previous release (whose Release the
//! reader's first Acquire load synchronised with). Values read before validation may be torn
//! garbage; code on the optimistic path treats them as untrusted (bounds-checks every offset)
//! until `validate` succeeds.
//!
//! Rules for users: (O1) memory read optimistically is only ever accessed atomically; (O2)
//! nothing read optimistically is acted upon (beyond bounds-checked reading) before
//! validation; (O3) a failed validation is `Err(Restart)`, retried by one loop at the top of
//! the operation (STYLE.md practice 5).
//!
//! Why bias matters: a counted shared latch is two atomic read-modify-writes on one cache
//! line per hold; on a hot page (a B-tree root, seed 000's 99.2% hot spot) that line
//! ping-pongs between cores and shared holds stop scaling. Published holds write a line that
//! is (nearly always) private to the reading thread.
//!
//! ## Waiting
//! A blocked acquisition spins with exponential backoff for a bounded number of rounds
//! (`SPIN_ROUNDS`), then parks on the latch's address in `parking_lot_core`'s global table.
//! Parking costs nothing while nobody waits: the uncontended path is one CAS.
//!
//! ## Not done here
//! No fairness between writers (the next writer is whoever wins the CAS); no recursion; no
//! upgrade from shared to exclusive (it deadlocks two upgraders — release and take X instead,
//! or upgrade from an optimistic guard, which fails cleanly).
//!
//! The `loom` models in `loom_tests.rs` check invariants 1–4 (`RUSTFLAGS="--cfg loom"`);
//! `stress_tests.rs` runs the same checks on real threads, with and without bias.
//!
//! Also here: `periodic`, the stoppable periodic thread behind the page cleaner and the
//! checkpointer.

pub mod held;
mod latch;
pub(crate) mod periodic;
mod readers;
mod shim;

#[cfg(all(test, loom))]
mod loom_tests;
#[cfg(all(test, not(loom)))]
mod stress_tests;

pub use latch::{ExclusiveGuard, HybridLatch, OptimisticGuard, Restart, SharedGuard};

/// Issues a software prefetch (to all cache levels) of the cache line holding `*r`: a hint
/// that the caller will touch it soon, issued far enough ahead to hide a miss. Changes
/// nothing and never fails; a no-op off x86-64 and under loom.
#[inline(always)]
pub(crate) fn prefetch<T>(r: &T) {
    prefetch_addr((r as *const T).cast());
}

/// [`prefetch`] of every cache line (64 bytes) that `*r` spans.
#[inline(always)]
pub(crate) fn prefetch_all<T>(r: &T) {
    let start = (r as *const T).cast::<u8>();
    let size = std::mem::size_of::<T>();
    // One address per 64 bytes, and the last byte: every line `*r` touches, aligned or not.
    for at in (0..size).step_by(64).chain(size.checked_sub(1)) {
        prefetch_addr(start.wrapping_add(at));
    }
}

/// [`prefetch`] of the line holding address `p`, which need not point into anything live:
/// a prefetch reads nothing into the program and never faults.
#[inline(always)]
pub(crate) fn prefetch_addr(p: *const u8) {
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    // SAFETY: PREFETCHT0 only hints the cache; it reads no value into the program and cannot
    // fault, whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.cast());
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom))))]
    let _ = p;
}
