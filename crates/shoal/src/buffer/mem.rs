//! Memory of the buffer pool's large arrays (page images, frame descriptors, page-table
//! buckets), backed by transparent huge pages where the kernel offers them.
//!
//! A descent touches a few random frames, their descriptors and their page-table buckets in
//! arrays far larger than what the TLB maps with 4 KiB pages (a 1 GiB pool: 1 GiB of images,
//! 8 MiB of descriptors, 2 MiB of buckets), so on base pages nearly every one of those
//! touches also costs a TLB miss and a page walk, which under virtualisation is a walk of two
//! page tables. `madvise(MADV_HUGEPAGE)` on an array before it is first touched lets the
//! kernel back it with 2 MiB pages at fault time. It is advice only: with THP off, or on
//! other systems, the arrays work the same on base pages.
//!
//! No latching: these are allocation helpers, run once when the pool opens.

use std::sync::atomic::AtomicU64;

/// Bytes of a transparent huge page (x86-64 and aarch64 with 4 KiB base pages).
const HUGE_PAGE_BYTES: usize = 2 << 20;

/// Allocates `n` zeroed atomic words with `calloc`-like lazy zeroing, so untouched frames
/// cost no resident memory, advised to use huge pages.
pub(super) fn zeroed_words(n: usize) -> Box<[AtomicU64]> {
    let v: Vec<u64> = vec![0; n];
    let mut v = std::mem::ManuallyDrop::new(v.into_boxed_slice());
    let len = v.len();
    let ptr = v.as_mut_ptr() as *mut AtomicU64;
    advise_huge_pages(ptr as *mut u8, len * 8);
    // SAFETY: AtomicU64 has the same size, bit validity and (on every 64-bit target we
    // support, checked below) alignment as u64; the allocation is handed over whole.
    const _: () =
        assert!(std::mem::align_of::<AtomicU64>() == std::mem::align_of::<u64>() || cfg!(loom));
    unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) }
}

/// `n` elements made by `make(i)`, in one allocation advised to use huge pages before the
/// elements are written (so that the first touches fault in huge pages).
pub(super) fn huge_slice<T>(n: usize, make: impl FnMut(usize) -> T) -> Box<[T]> {
    let mut v: Vec<T> = Vec::with_capacity(n);
    advise_huge_pages(v.as_mut_ptr() as *mut u8, n * std::mem::size_of::<T>());
    v.extend((0..n).map(make));
    v.into_boxed_slice()
}

/// Bytes [`prefault`] asks the kernel to fault in per call (between two looks at `stop`).
const PREFAULT_CHUNK_BYTES: usize = 8 << 20;

/// Faults in `[addr, addr + len)` for writing without changing a byte of it
/// (`madvise(MADV_POPULATE_WRITE)`), a chunk at a time, until done or `stop` is set.
/// Returns at once where the kernel does not support it (before Linux 5.14, other systems).
/// Safe alongside readers and writers of the memory: faulting in a page that is already
/// present does nothing, and a missing page is filled with the zeros it would read as.
///
/// # Safety
/// `[addr, addr + len)` must stay allocated until this returns.
pub(super) unsafe fn prefault(addr: usize, len: usize, stop: &std::sync::atomic::AtomicBool) {
    #[cfg(all(target_os = "linux", not(loom)))]
    {
        use std::sync::atomic::Ordering::Relaxed;
        // madvise takes page-aligned ranges: the whole 4 KiB pages inside the allocation
        // (a system with larger pages answers EINVAL, and nothing is done).
        let (start, end) = (addr.next_multiple_of(4096), (addr + len) / 4096 * 4096);
        let (addr, len) = (start, end.saturating_sub(start));
        let mut done = 0;
        while done < len && !stop.load(Relaxed) {
            let n = PREFAULT_CHUNK_BYTES.min(len - done);
            // SAFETY: inside the allocation (caller's contract); the advice changes no
            // contents, only which pages are present.
            let r = unsafe {
                libc::madvise(
                    (addr + done) as *mut libc::c_void,
                    n,
                    libc::MADV_POPULATE_WRITE,
                )
            };
            if r != 0 {
                return; // EINVAL: not supported here; anything else: leave it to faults
            }
            done += n;
        }
    }
    #[cfg(not(all(target_os = "linux", not(loom))))]
    let _ = (addr, len, stop, PREFAULT_CHUNK_BYTES);
}

/// Asks the kernel to back the 2 MiB-aligned interior of `[ptr, ptr + len)` with
/// transparent huge pages. Advice only; a failure is ignored (the module doc says why).
fn advise_huge_pages(ptr: *mut u8, len: usize) {
    #[cfg(all(target_os = "linux", not(loom)))]
    {
        let start = (ptr as usize).next_multiple_of(HUGE_PAGE_BYTES);
        let end = (ptr as usize).saturating_add(len) / HUGE_PAGE_BYTES * HUGE_PAGE_BYTES;
        if end > start {
            // SAFETY: the range lies inside an allocation the caller owns; MADV_HUGEPAGE
            // changes no contents and no mapping, only how later faults are served.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(all(target_os = "linux", not(loom))))]
    let _ = (ptr, len, HUGE_PAGE_BYTES);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering::Relaxed;

    #[test]
    fn arrays_hold_what_was_made() {
        let w = zeroed_words(3 << 18); // 6 MiB: has a huge-page-aligned interior
        assert!(w.iter().all(|x| x.load(Relaxed) == 0));
        w[12345].store(7, Relaxed);
        assert_eq!(w[12345].load(Relaxed), 7);
        let s = huge_slice(1 << 20, |i| i as u32 * 3);
        assert_eq!(s.len(), 1 << 20);
        assert!(s.iter().enumerate().all(|(i, &x)| x == i as u32 * 3));
        assert!(huge_slice(0, |i| i).is_empty());
    }

    /// Pages of `w` that are resident (`mincore`), of the whole 4 KiB pages inside it.
    #[cfg(target_os = "linux")]
    fn resident_pages(w: &[AtomicU64]) -> (usize, usize) {
        let addr = (w.as_ptr() as usize).next_multiple_of(4096);
        let end = (w.as_ptr() as usize + std::mem::size_of_val(w)) / 4096 * 4096;
        let pages = (end - addr) / 4096;
        let mut vec = vec![0u8; pages];
        // SAFETY: the range lies inside `w`; `vec` has one byte per page.
        let r = unsafe { libc::mincore(addr as *mut libc::c_void, end - addr, vec.as_mut_ptr()) };
        assert_eq!(r, 0, "mincore");
        (vec.iter().filter(|&&b| b & 1 != 0).count(), pages)
    }

    /// True if the running kernel's release is at least `major.minor`.
    #[cfg(target_os = "linux")]
    fn kernel_at_least(major: u32, minor: u32) -> bool {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let mut parts = release
            .trim()
            .split(['.', '-'])
            .map(|p| p.parse::<u32>().unwrap_or(0));
        (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= (major, minor)
    }

    /// `prefault` makes every page resident and changes no byte; with `stop` set it does
    /// nothing. (Before Linux 5.14, which lacks `MADV_POPULATE_WRITE`, residency is not checked.)
    #[test]
    #[cfg(target_os = "linux")]
    fn prefault_faults_in_without_changing_contents() {
        use std::sync::atomic::AtomicBool;
        let w = zeroed_words(4 << 20); // 32 MiB, fresh: not resident yet
        w[1000].store(0xDEAD_BEEF, Relaxed);
        let untouched = resident_pages(&w).0;
        let stop = AtomicBool::new(true);
        // SAFETY: `w` lives until after the call.
        unsafe { prefault(w.as_ptr() as usize, std::mem::size_of_val(&*w), &stop) };
        assert_eq!(
            resident_pages(&w).0,
            untouched,
            "a stopped prefault faulted pages in"
        );
        let go = AtomicBool::new(false);
        // SAFETY: as above.
        unsafe { prefault(w.as_ptr() as usize, std::mem::size_of_val(&*w), &go) };
        let (resident, pages) = resident_pages(&w);
        if kernel_at_least(5, 14) {
            assert_eq!(resident, pages, "some pages were not faulted in");
        }
        assert_eq!(w[1000].load(Relaxed), 0xDEAD_BEEF);
        assert!(w
            .iter()
            .enumerate()
            .all(|(i, x)| i == 1000 || x.load(Relaxed) == 0));
    }
}
