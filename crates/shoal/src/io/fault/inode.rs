//! One simulated file: the bytes reads see, the bytes on the platter, and the writes in
//! between (fault rules 1–3).

/// A change made to a file's volatile image and not yet durable.
#[derive(Debug)]
enum Pending {
    /// `write_all_at(bytes, offset)`.
    Write { offset: usize, bytes: Vec<u8> },
    /// `set_len(len)`, in bytes.
    SetLen(usize),
}

/// The contents of one file, whatever names it has (a removed file lives on while a handle
/// to it is open, as on a POSIX file system).
#[derive(Debug, Default)]
pub(super) struct Inode {
    /// What reads see: the durable image with the pending changes applied (except after a
    /// failed sync, fault rule 5).
    volatile: Vec<u8>,
    /// What survives a power loss.
    durable: Vec<u8>,
    /// Changes since the last successful `sync_data`, oldest first.
    pending: Vec<Pending>,
    /// Open handles of the current generation.
    pub(super) handles: usize,
}

/// Writes `bytes` at `offset` into `image`, growing it with zeroes as needed.
fn put(image: &mut Vec<u8>, offset: usize, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    let end = offset + bytes.len();
    if image.len() < end {
        image.resize(end, 0);
    }
    image[offset..end].copy_from_slice(bytes);
}

impl Inode {
    /// The volatile image (what reads see).
    pub(super) fn volatile(&self) -> &[u8] {
        &self.volatile
    }

    /// The durable image (what a power loss leaves).
    pub(super) fn durable(&self) -> &[u8] {
        &self.durable
    }

    /// Length in bytes of the volatile image.
    pub(super) fn len(&self) -> usize {
        self.volatile.len()
    }

    /// A write that succeeded: visible now, durable at the next sync.
    pub(super) fn write(&mut self, offset: usize, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        put(&mut self.volatile, offset, bytes);
        self.pending.push(Pending::Write {
            offset,
            bytes: bytes.to_vec(),
        });
    }

    /// A `set_len` that succeeded: visible now, durable at the next sync.
    pub(super) fn set_len(&mut self, len: usize) {
        self.volatile.resize(len, 0);
        self.pending.push(Pending::SetLen(len));
    }

    /// A successful `sync_data`: every pending change becomes durable, in order.
    pub(super) fn sync(&mut self) {
        for change in self.pending.drain(..) {
            match change {
                Pending::Write { offset, bytes } => put(&mut self.durable, offset, &bytes),
                Pending::SetLen(len) => self.durable.resize(len, 0),
            }
        }
    }

    /// A failed `sync_data`: the pending changes will never become durable, although reads
    /// still see them until the next power loss (fault rule 5).
    pub(super) fn lose_pending(&mut self) {
        self.pending.clear();
    }

    /// The persisted part of a torn write, applied right after the power loss it caused:
    /// `bytes` at `offset` are now on the platter (and so in both images).
    pub(super) fn persist_after_crash(&mut self, offset: usize, bytes: &[u8]) {
        put(&mut self.durable, offset, bytes);
        put(&mut self.volatile, offset, bytes);
    }

    /// Power loss: the pending changes for which `survives()` says so reach the durable
    /// image, in order; the rest are lost, and the volatile image becomes the durable one.
    pub(super) fn power_loss(&mut self, mut survives: impl FnMut() -> bool) {
        for change in self.pending.drain(..) {
            if !survives() {
                continue;
            }
            match change {
                Pending::Write { offset, bytes } => put(&mut self.durable, offset, &bytes),
                Pending::SetLen(len) => self.durable.resize(len, 0),
            }
        }
        self.volatile.clone_from(&self.durable);
        self.pending.clear();
        self.handles = 0;
    }

    /// Corruption of the medium (and of the cached copy): each byte of `offset..offset+len`
    /// is replaced by `f(index within the range, old byte)` in both images, where each image
    /// has it.
    pub(super) fn corrupt(&mut self, offset: usize, len: usize, f: impl Fn(usize, u8) -> u8) {
        for image in [&mut self.volatile, &mut self.durable] {
            let end = image.len().min(offset.saturating_add(len));
            for (i, b) in image.iter_mut().enumerate().take(end).skip(offset) {
                *b = f(i - offset, *b);
            }
        }
    }
}
