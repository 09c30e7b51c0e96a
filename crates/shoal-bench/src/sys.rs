//! Process resource readings for measurements: peak resident memory (`VmHWM` from
//! `/proc/self/status`) and process CPU time (`getrusage`). Both are Linux-first; where a
//! reading is unavailable the functions return `None` and the measurement says so (`null`)
//! instead of inventing a number.

use std::time::Duration;

/// Peak resident set size of this process in bytes (`VmHWM` in `/proc/self/status`), or
/// `None` where the file or the line is missing (not Linux).
///
/// The peak covers the whole process since start, or since the last successful
/// [`reset_peak_rss`].
pub fn max_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_vm_hwm(&status)
}

/// Extracts `VmHWM` (in kB in the file) from the text of `/proc/<pid>/status`, in bytes.
fn parse_vm_hwm(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let mut fields = line["VmHWM:".len()..].split_whitespace();
    let kib: u64 = fields.next()?.parse().ok()?;
    match fields.next() {
        Some("kB") => kib.checked_mul(1024),
        _ => None,
    }
}

/// Resets the peak resident set size to the current one by writing `5` to
/// `/proc/self/clear_refs` (Linux 4.0 and later). Returns whether the reset happened; when it
/// did not, [`max_rss_bytes`] keeps reporting the peak since process start.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", b"5").is_ok()
}

/// User plus system CPU time consumed so far by all threads of this process, or `None` if
/// `getrusage` fails.
pub fn process_cpu_time() -> Option<Duration> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` points to writable memory of the size of `rusage`; `getrusage` fills it
    // completely when it returns 0, and we read it only then.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: `getrusage` returned 0, so it initialised `usage` (and it was zeroed before).
    let usage = unsafe { usage.assume_init() };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    Some(tv(usage.ru_utime) + tv(usage.ru_stime))
}

/// Number of CPUs this process may run on (`available_parallelism`), or 1 if unknown.
pub fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The machine's physical memory in bytes (`sysconf(_SC_PHYS_PAGES) × page size`), or
/// `None` where the system does not say.
pub fn physical_memory_bytes() -> Option<u64> {
    #[cfg(unix)]
    {
        // SAFETY: sysconf reads system constants; it has no preconditions.
        let (pages, page) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        (pages > 0 && page > 0).then(|| pages as u64 * page as u64)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vm_hwm_parses() {
        let text = "Name:\tx\nVmPeak:\t  2000 kB\nVmHWM:\t    1234 kB\nVmRSS:\t 1000 kB\n";
        assert_eq!(parse_vm_hwm(text), Some(1234 * 1024));
        assert_eq!(parse_vm_hwm("VmRSS:\t 1000 kB\n"), None);
        assert_eq!(parse_vm_hwm("VmHWM:\t 12 MB\n"), None);
    }

    #[test]
    fn readings_on_linux() {
        if cfg!(target_os = "linux") {
            let rss = max_rss_bytes().expect("VmHWM on Linux");
            assert!(rss > 0);
            let before = process_cpu_time().expect("getrusage");
            let mut x = 0u64;
            for i in 0..2_000_000u64 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
            std::hint::black_box(x);
            assert!(process_cpu_time().unwrap() >= before);
        }
    }
}
