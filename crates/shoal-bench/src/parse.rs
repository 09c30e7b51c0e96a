//! Parsers for benchmark settings typed on the command line: thread lists (`1,2,4`), sizes
//! (`64MiB`) and durations in seconds. Each implements [`FromStr`] with an error message that
//! says what is accepted, so that `clap` can report it next to the argument's name.

use std::fmt;
use std::str::FromStr;

/// Largest thread count accepted in a [`ThreadList`]: far above any machine this runs on, low
/// enough to catch a typo such as `--threads 10000`.
pub const THREADS_MAX: usize = 1024;

/// A list of thread counts, in the order given, e.g. `1,2,4,8`. Every count is from 1 to
/// [`THREADS_MAX`]; a count may not repeat.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadList(pub Vec<usize>);

impl FromStr for ThreadList {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        if s.trim().is_empty() {
            return Err("expected a comma-separated list of thread counts, e.g. 1,2,4".into());
        }
        let mut counts = Vec::new();
        for item in s.split(',') {
            let item = item.trim();
            let n: usize = item.parse().map_err(|_| {
                format!("`{item}` is not a thread count (expected whole numbers such as 1,2,4)")
            })?;
            if n == 0 || n > THREADS_MAX {
                return Err(format!(
                    "thread count {n} is out of range (1 to {THREADS_MAX})"
                ));
            }
            if counts.contains(&n) {
                return Err(format!("thread count {n} is listed twice"));
            }
            counts.push(n);
        }
        Ok(ThreadList(counts))
    }
}

impl fmt::Display for ThreadList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(|n| n.to_string()).collect();
        f.write_str(&parts.join(","))
    }
}

/// A size in bytes, typed as a whole number of mebibytes (`64`) or with a binary suffix:
/// `B`, `KiB`/`K`, `MiB`/`M`, `GiB`/`G` (case-insensitive; 1 MiB = 2^20 bytes). Decimal
/// suffixes (`MB`) are rejected rather than guessed at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl ByteSize {
    /// The size in bytes.
    pub fn bytes(self) -> u64 {
        self.0
    }
}

impl FromStr for ByteSize {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        let (digits, suffix) = s.split_at(split);
        if digits.is_empty() {
            return Err(format!(
                "`{s}` is not a size (expected e.g. 64, 64MiB, 512KiB or 1GiB)"
            ));
        }
        let shift = match suffix.trim().to_ascii_lowercase().as_str() {
            "b" => 0,
            "k" | "kib" => 10,
            "" | "m" | "mib" => 20,
            "g" | "gib" => 30,
            "kb" | "mb" | "gb" => {
                return Err(format!(
                    "`{s}`: decimal units are ambiguous here; use KiB, MiB or GiB"
                ))
            }
            other => {
                return Err(format!(
                "`{other}` is not a size unit (expected B, KiB, MiB or GiB; a bare number is MiB)"
            ))
            }
        };
        let value: u64 = digits.parse().map_err(|_| format!("`{s}` is too large"))?;
        value
            .checked_mul(1u64 << shift)
            .map(ByteSize)
            .ok_or_else(|| format!("`{s}` is too large"))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
            if b >= 1 << shift && b % (1 << shift) == 0 {
                return write!(f, "{}{unit}", b >> shift);
            }
        }
        write!(f, "{b}B")
    }
}

/// A duration in seconds: a finite, non-negative decimal number (`5`, `0.5`).
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct Seconds(pub f64);

/// Longest duration accepted, in seconds (one day): catches milliseconds typed as seconds.
pub const SECONDS_MAX: f64 = 86_400.0;

impl FromStr for Seconds {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let v: f64 = s
            .trim()
            .parse()
            .map_err(|_| format!("`{s}` is not a number of seconds (expected e.g. 5 or 0.5)"))?;
        if !v.is_finite() || v < 0.0 {
            return Err(format!("`{s}`: seconds must be a finite number >= 0"));
        }
        if v > SECONDS_MAX {
            return Err(format!("`{s}`: at most {SECONDS_MAX} seconds"));
        }
        Ok(Seconds(v))
    }
}

impl fmt::Display for Seconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_lists() {
        assert_eq!("1,2,4".parse::<ThreadList>().unwrap().0, vec![1, 2, 4]);
        assert_eq!(" 8 , 1".parse::<ThreadList>().unwrap().0, vec![8, 1]);
        assert_eq!("3".parse::<ThreadList>().unwrap().to_string(), "3");
        for (bad, needle) in [
            ("0", "out of range"),
            ("1,0", "out of range"),
            ("x", "`x` is not a thread count"),
            ("1,,2", "`` is not a thread count"),
            ("-1", "`-1` is not"),
            ("", "comma-separated"),
            ("2,2", "listed twice"),
            ("5000", "out of range"),
        ] {
            let e = bad.parse::<ThreadList>().unwrap_err();
            assert!(e.contains(needle), "{bad:?}: {e}");
        }
    }

    #[test]
    fn byte_sizes() {
        assert_eq!("64".parse::<ByteSize>().unwrap().bytes(), 64 << 20);
        assert_eq!("64MiB".parse::<ByteSize>().unwrap().bytes(), 64 << 20);
        assert_eq!("64m".parse::<ByteSize>().unwrap().bytes(), 64 << 20);
        assert_eq!("512KiB".parse::<ByteSize>().unwrap().bytes(), 512 << 10);
        assert_eq!("2GiB".parse::<ByteSize>().unwrap().bytes(), 2 << 30);
        assert_eq!("8192B".parse::<ByteSize>().unwrap().bytes(), 8192);
        assert_eq!(ByteSize(64 << 20).to_string(), "64MiB");
        assert_eq!(ByteSize(1536 << 10).to_string(), "1536KiB");
        assert_eq!(ByteSize(100).to_string(), "100B");
        for (bad, needle) in [
            ("64MB", "ambiguous"),
            ("MiB", "not a size"),
            ("64XB", "not a size unit"),
            ("-5", "not a size"),
            ("99999999999999999999", "too large"),
            ("99999999999GiB", "too large"),
        ] {
            let e = bad.parse::<ByteSize>().unwrap_err();
            assert!(e.contains(needle), "{bad:?}: {e}");
        }
    }

    #[test]
    fn seconds() {
        assert_eq!("5".parse::<Seconds>().unwrap().0, 5.0);
        assert_eq!("0.25".parse::<Seconds>().unwrap().0, 0.25);
        assert_eq!("0".parse::<Seconds>().unwrap().0, 0.0);
        for bad in ["-1", "abc", "inf", "NaN", "1e9"] {
            assert!(bad.parse::<Seconds>().is_err(), "{bad}");
        }
    }
}
