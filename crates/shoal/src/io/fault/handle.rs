//! An open file of a [`FaultStorage`](super::FaultStorage).

use super::check_direct;
use super::state::{InodeId, State};
use crate::error::Result;
use crate::io::StorageFile;
use parking_lot::Mutex;
use std::fmt;
use std::sync::Arc;

/// A handle on one simulated file, valid for the generation it was opened in (fault rule 7).
pub(super) struct FaultFile {
    state: Arc<Mutex<State>>,
    id: InodeId,
    generation: u64,
    name: String,
    direct: bool,
}

impl FaultFile {
    pub(super) fn new(
        state: Arc<Mutex<State>>,
        id: InodeId,
        generation: u64,
        name: &str,
        direct: bool,
    ) -> FaultFile {
        FaultFile {
            state,
            id,
            generation,
            name: name.to_owned(),
            direct,
        }
    }

    /// Locks the machine after checking that it is up and this handle is current.
    fn up(&self, op: &'static str) -> Result<parking_lot::MutexGuard<'_, State>> {
        let state = self.state.lock();
        state.check_up(self.generation, op, &self.name)?;
        Ok(state)
    }

    fn aligned(&self, op: &'static str, addr: usize, len: usize, offset: u64) -> Result<()> {
        if self.direct && len > 0 {
            check_direct(op, &self.name, addr, len, offset)?;
        }
        Ok(())
    }
}

impl StorageFile for FaultFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let mut state = self.up("read")?;
        self.aligned("read", buf.as_ptr() as usize, buf.len(), offset)?;
        state.read(self.id, &self.name, buf, offset)
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        let mut state = self.up("write")?;
        self.aligned("write", buf.as_ptr() as usize, buf.len(), offset)?;
        state.write(self.id, &self.name, buf, offset)
    }

    fn sync_data(&self) -> Result<()> {
        self.up("sync")?.sync(self.id, &self.name)
    }

    fn len(&self) -> Result<u64> {
        self.up("len")?.len(self.id, &self.name)
    }

    fn set_len(&self, len_bytes: u64) -> Result<()> {
        self.up("set_len")?.set_len(self.id, &self.name, len_bytes)
    }

    fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for FaultFile {
    fn drop(&mut self) {
        self.state.lock().release(self.id, self.generation);
    }
}

impl fmt::Debug for FaultFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultFile")
            .field("name", &self.name)
            .field("inode", &self.id)
            .field("generation", &self.generation)
            .field("direct", &self.direct)
            .finish()
    }
}
