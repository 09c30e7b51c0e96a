//! A background thread that runs a pass every interval, sooner when woken, until stopped:
//! the shape of the page cleaner (`buffer::cleaner`) and the checkpointer
//! (`engine::checkpointer`).
//!
//! Invariants: (1) a pass never runs after [`Periodic::stop`] has returned; (2) a wake-up is
//! never lost: `wake` sets its flag under the mutex the thread checks before it sleeps;
//! (3) `stop` joins the thread unless it runs on that thread (a pass that dropped the last
//! reference to its owner), so it never waits for itself. The mutex is held only to check
//! and set the flags, never during a pass.

use parking_lot::{Condvar, Mutex};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

#[derive(Default)]
struct Control {
    stop: bool,
    wake: bool,
}

/// A named thread calling a pass every `interval` (or when woken) until stopped or until the
/// pass returns `false`.
pub(crate) struct Periodic {
    ctl: Arc<(Mutex<Control>, Condvar)>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Periodic {
    /// Spawns the thread `name`, which waits `interval` (or for [`Periodic::wake`]) before
    /// each call of `pass` and ends when stopped or when `pass` returns `false`.
    ///
    /// # Errors
    /// The OS error if the thread cannot be spawned.
    pub(crate) fn spawn(
        name: &str,
        interval: Duration,
        mut pass: impl FnMut() -> bool + Send + 'static,
    ) -> std::io::Result<Periodic> {
        let ctl: Arc<(Mutex<Control>, Condvar)> = Arc::default();
        let ctl2 = ctl.clone();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || loop {
                {
                    let (m, cv) = &*ctl2;
                    let mut c = m.lock();
                    if !c.stop && !c.wake {
                        cv.wait_for(&mut c, interval);
                    }
                    if c.stop {
                        return;
                    }
                    c.wake = false;
                }
                if !pass() {
                    return;
                }
            })?;
        Ok(Periodic {
            ctl,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Runs the next pass now rather than at the end of the interval.
    pub(crate) fn wake(&self) {
        let (m, cv) = &*self.ctl;
        m.lock().wake = true;
        cv.notify_one();
    }

    /// Stops the thread and waits for a pass in progress to end (invariant 3). Idempotent.
    pub(crate) fn stop(&self) {
        {
            let (m, cv) = &*self.ctl;
            m.lock().stop = true;
            cv.notify_one();
        }
        let handle = self.thread.lock().take();
        if let Some(h) = handle {
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Periodic;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// A wake runs a pass long before the interval; after `stop` returns no pass runs.
    #[test]
    fn wake_runs_a_pass_and_stop_ends_them() {
        let passes = Arc::new(AtomicUsize::new(0));
        let p2 = passes.clone();
        let t = Periodic::spawn("periodic-test", Duration::from_secs(3600), move || {
            p2.fetch_add(1, SeqCst);
            true
        })
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        t.wake();
        while passes.load(SeqCst) == 0 {
            assert!(Instant::now() < deadline, "a wake ran no pass");
            std::thread::sleep(Duration::from_millis(1));
        }
        t.stop();
        let after = passes.load(SeqCst);
        t.wake();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(passes.load(SeqCst), after, "a pass ran after stop");
        t.stop(); // idempotent
    }
}
