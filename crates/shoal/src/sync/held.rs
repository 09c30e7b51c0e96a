//! Debug-build bookkeeping of the latches a thread holds (shared or exclusive; optimistic
//! reads hold nothing), so that code which must not wait while holding a latch — a lock
//! request that may block (DESIGN.md principle 5, seed 004) — can assert it. Release builds
//! keep no count and [`latches_held`] is always 0.
//!
//! The same count audits DESIGN.md principle 6 (no latch held across I/O other than the
//! frame being read): the buffer pool's miss path calls `note_miss_io` with its victim
//! frame's X latch held, before it writes a dirty victim back and before it reads the
//! page, and such I/O started while the thread held any other latch is counted
//! ([`miss_io_under_latch`]); with `SHOAL_AUDIT_LATCHED_READS` set, each one also prints
//! where it came from (a backtrace) on standard error.
//!
//! The count is per thread: a guard must be dropped on the thread that took it (guards are
//! never sent between threads in Shoal; a count that went wrong would only make the debug
//! assertion fire, never hide a held latch on the asserting thread).

#[cfg(all(debug_assertions, not(loom)))]
mod imp {
    use std::cell::Cell;

    thread_local! {
        static HELD: Cell<usize> = const { Cell::new(0) };
    }

    #[inline]
    pub(crate) fn acquired() {
        HELD.with(|h| h.set(h.get() + 1));
    }

    #[inline]
    pub(crate) fn released() {
        HELD.with(|h| h.set(h.get().saturating_sub(1)));
    }

    pub(crate) fn count() -> usize {
        HELD.with(Cell::get)
    }

    thread_local! {
        static MISS_IO_UNDER_LATCH: Cell<usize> = const { Cell::new(0) };
    }

    pub(crate) fn note_miss_io() {
        // The miss path holds exactly one latch of its own: the victim frame's.
        if count() > 1 {
            MISS_IO_UNDER_LATCH.with(|r| r.set(r.get() + 1));
            if std::env::var_os("SHOAL_AUDIT_LATCHED_READS").is_some() {
                eprintln!(
                    "miss I/O with {} other latch(es) held:\n{}",
                    count() - 1,
                    std::backtrace::Backtrace::force_capture()
                );
            }
        }
    }

    pub(crate) fn io_under_latch() -> usize {
        MISS_IO_UNDER_LATCH.with(Cell::get)
    }
}

#[cfg(not(all(debug_assertions, not(loom))))]
mod imp {
    #[inline]
    pub(crate) fn acquired() {}
    #[inline]
    pub(crate) fn released() {}
    pub(crate) fn count() -> usize {
        0
    }
    #[inline]
    pub(crate) fn note_miss_io() {}
    pub(crate) fn io_under_latch() -> usize {
        0
    }
}

pub(crate) use imp::{acquired, note_miss_io, released};

/// Shared and exclusive latches the calling thread holds now (debug builds; 0 in release
/// builds).
pub fn latches_held() -> usize {
    imp::count()
}

/// Buffer-pool miss I/O (a page read, or the write-back of a dirty victim) the calling
/// thread has started while it held a latch other than the victim frame's — breaches of
/// DESIGN.md principle 6 (module doc). Debug builds; 0 in release builds.
pub fn miss_io_under_latch() -> usize {
    imp::io_under_latch()
}
