//! Debug-build bookkeeping of the latches a thread holds (shared or exclusive; optimistic
//! reads hold nothing), so that code which must not wait while holding a latch — a lock
//! request that may block (DESIGN.md principle 5, seed 004) — can assert it. Release builds
//! keep no count and [`latches_held`] is always 0.
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
}

pub(crate) use imp::{acquired, released};

/// Shared and exclusive latches the calling thread holds now (debug builds; 0 in release
/// builds).
pub fn latches_held() -> usize {
    imp::count()
}
