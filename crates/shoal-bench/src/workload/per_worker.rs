//! One connection (or session) per worker thread, as every SQL engine's driver keeps them
//! (module rule 2 of [`super::peers`]): worker `i` uses slot `i` only, so its mutex is never
//! contended; it exists so that the state can be shared with the runner's threads.

use crate::error::{BenchError, Result};
use std::sync::{Mutex, MutexGuard};

/// Worker-indexed slots of `T`, e.g. a connection with its prepared statements.
pub struct PerWorker<T> {
    slots: Vec<Mutex<T>>,
    /// What a slot is, for error messages, e.g. "PostgreSQL connection".
    what: &'static str,
}

impl<T> PerWorker<T> {
    /// Slots `0..n` made by `make(i)`; `what` names a slot in errors.
    ///
    /// # Errors
    /// The first error of `make`.
    pub fn new(what: &'static str, n: usize, make: impl FnMut(usize) -> Result<T>) -> Result<Self> {
        let slots = (0..n)
            .map(make)
            .map(|r| r.map(Mutex::new))
            .collect::<Result<Vec<_>>>()?;
        Ok(PerWorker { slots, what })
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there are no slots.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Worker `thread_idx`'s slot.
    ///
    /// # Errors
    /// [`BenchError::InvalidArgument`] (`threads`) if there is no slot for that worker (the
    /// setup made fewer than the run's thread count); [`BenchError::Check`] if another
    /// thread panicked holding it.
    pub fn get(&self, thread_idx: usize) -> Result<MutexGuard<'_, T>> {
        let m = self.slots.get(thread_idx).ok_or_else(|| {
            BenchError::invalid(
                "threads",
                format!(
                    "worker {thread_idx} has no {} ({} were opened)",
                    self.what,
                    self.slots.len()
                ),
            )
        })?;
        m.lock()
            .map_err(|_| BenchError::Check(format!("{} {thread_idx} poisoned", self.what)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_per_worker_and_a_missing_one_is_named() {
        let p = PerWorker::new("test slot", 2, |i| Ok(i * 10)).unwrap();
        assert_eq!(*p.get(1).unwrap(), 10);
        assert_eq!(p.len(), 2);
        let e = p.get(2).unwrap_err().to_string();
        assert!(
            e.contains("worker 2 has no test slot (2 were opened)"),
            "{e}"
        );
        let e = PerWorker::<usize>::new("x", 3, |i| {
            if i == 1 {
                Err(BenchError::Check("no".into()))
            } else {
                Ok(i)
            }
        })
        .err()
        .unwrap();
        assert!(e.to_string().contains("no"));
    }
}
