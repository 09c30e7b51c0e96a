//! Helpers shared by the crate's unit tests (compiled only for tests).

use std::time::{Duration, Instant};

/// Polls `cond` every millisecond for up to 10 s; panics naming `what` if it never holds.
pub(crate) fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}
