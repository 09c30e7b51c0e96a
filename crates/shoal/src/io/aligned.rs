//! Heap buffers aligned for `O_DIRECT` I/O.

use super::IO_ALIGN;
use std::alloc::{alloc_zeroed, dealloc, handle_alloc_error, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// A zero-initialised byte buffer aligned to [`IO_ALIGN`] (4096) bytes, usable for `O_DIRECT`
/// reads and writes. Its length is fixed at creation.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: AlignedBuf owns its allocation exclusively, like a Box<[u8]>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access only hands out &[u8].
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// Allocates `len` zero bytes aligned to 4096.
    ///
    /// # Panics
    /// If `len` is zero. Aborts (as `Vec` does) if memory is exhausted.
    pub fn new(len: usize) -> AlignedBuf {
        assert!(len > 0, "AlignedBuf of zero bytes");
        let layout = Layout::from_size_align(len, IO_ALIGN).expect("layout");
        // SAFETY: layout has non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| handle_alloc_error(layout));
        AlignedBuf { ptr, len }
    }

    /// The start of the allocation, for a buffer shared between threads that synchronise
    /// their accesses themselves (the log ring: one writer per byte range, readers after a
    /// Release/Acquire hand-over). The pointer is not derived from a reference, so writing
    /// through it while only `&self` is held is sound, provided no `&[u8]` or `&mut [u8]`
    /// obtained through `Deref`/`DerefMut` overlaps the bytes written.
    pub fn as_raw_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr is valid for len initialised bytes for the lifetime of self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout = Layout::from_size_align(self.len, IO_ALIGN).expect("layout");
        // SAFETY: allocated in `new` with this same layout.
        unsafe { dealloc(self.ptr.as_ptr(), layout) }
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AlignedBuf({} bytes)", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn aligned_and_zeroed() {
        let mut b = AlignedBuf::new(8192);
        assert_eq!(b.as_ptr() as usize % IO_ALIGN, 0);
        assert!(b.iter().all(|&x| x == 0));
        b[8191] = 1;
        assert_eq!(b.len(), 8192);
    }
}
