//! Byte access to page images, the same for plain buffers and for buffer-pool frames.
//!
//! A frame's bytes are stored as `[AtomicU64]` (see `buffer` and the soundness argument in
//! `sync`): an optimistic reader may read a frame while the X-latch holder writes it, and in
//! Rust's memory model that is only defined when *both* sides use atomic accesses of the same
//! size. [`AtomicBytes`] reads with relaxed 8-byte loads and [`AtomicBytesMut`] writes with
//! relaxed 8-byte stores (read-modify-write of a partial word is safe because only the X
//! holder writes). Page-format code is written once against [`PageRead`] / [`PageWrite`] and
//! runs on both `[u8]` (scratch buffers, tests, I/O) and frames.
//!
//! All multi-byte integers are little-endian (STYLE.md practice 12). Offsets and lengths are
//! in bytes; an access outside the page is a programmer error and panics (callers validate
//! on-disk offsets before using them; see `page::slotted`).

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Read access to a page image of [`PageRead::page_len`] bytes.
pub trait PageRead {
    /// Length of the image in bytes (the page size).
    fn page_len(&self) -> usize;

    /// Copies `dst.len()` bytes starting at `offset` into `dst`.
    ///
    /// # Panics
    /// If `offset + dst.len()` exceeds the page.
    fn read_into(&self, offset: usize, dst: &mut [u8]);

    /// The byte at `offset`.
    fn u8_at(&self, offset: usize) -> u8 {
        let mut b = [0u8; 1];
        self.read_into(offset, &mut b);
        b[0]
    }
    /// Little-endian `u16` at `offset`.
    fn u16_at(&self, offset: usize) -> u16 {
        let mut b = [0u8; 2];
        self.read_into(offset, &mut b);
        u16::from_le_bytes(b)
    }
    /// Little-endian `u32` at `offset`.
    fn u32_at(&self, offset: usize) -> u32 {
        let mut b = [0u8; 4];
        self.read_into(offset, &mut b);
        u32::from_le_bytes(b)
    }
    /// Little-endian `u64` at `offset`.
    fn u64_at(&self, offset: usize) -> u64 {
        let mut b = [0u8; 8];
        self.read_into(offset, &mut b);
        u64::from_le_bytes(b)
    }
    /// The `n <= 8` bytes at `offset` as the high-order bytes of a big-endian `u64`, the rest
    /// zero: the "head" of a byte string, so that comparing heads compares the strings' first
    /// eight bytes (B-tree key search).
    ///
    /// # Panics
    /// If `n > 8` or the bytes lie outside the page.
    fn head_be(&self, offset: usize, n: usize) -> u64 {
        let mut b = [0u8; 8];
        self.read_into(offset, &mut b[..n]);
        u64::from_be_bytes(b)
    }
    /// Hints that the cache line holding byte `offset` will be read soon (a software
    /// prefetch). Changes nothing and never fails; an `offset` past the page is ignored. The
    /// default does nothing; byte slices and the atomic frame images prefetch.
    #[inline(always)]
    fn prefetch(&self, offset: usize) {
        let _ = offset;
    }
    /// Copies `len` bytes at `offset` into a new vector.
    ///
    /// # Panics
    /// If the bytes lie outside the page.
    fn to_vec(&self, offset: usize, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        self.read_into(offset, &mut v);
        v
    }
    /// Appends the `len` bytes at `offset` to `out`, which allocates only if its capacity is
    /// short (the atomic frame images store 8 bytes at a time and need 7 bytes of spare
    /// capacity past the value): a reader that keeps one vector for many reads copies each
    /// value without an allocation ([`crate::btree::BTree::get_into`]).
    ///
    /// # Panics
    /// If the bytes lie outside the page.
    fn extend_vec(&self, offset: usize, len: usize, out: &mut Vec<u8>) {
        let at = out.len();
        out.resize(at + len, 0);
        self.read_into(offset, &mut out[at..]);
    }
}

/// Write access to a page image. Implementations exist for `[u8]` and for frames held in
/// exclusive mode ([`AtomicBytesMut`]).
pub trait PageWrite: PageRead {
    /// Copies `src` to the page at `offset`.
    ///
    /// # Panics
    /// If `offset + src.len()` exceeds the page.
    fn write_from(&mut self, offset: usize, src: &[u8]);

    /// Moves `src` (a byte range of the page) to start at `dst`; the ranges may overlap
    /// (memmove semantics).
    fn copy_within(&mut self, src: Range<usize>, dst: usize);

    /// Sets every byte of `range` to `byte`.
    fn fill(&mut self, range: Range<usize>, byte: u8);

    /// Stores one byte.
    fn put_u8(&mut self, offset: usize, v: u8) {
        self.write_from(offset, &[v]);
    }
    /// Stores a little-endian `u16`.
    fn put_u16(&mut self, offset: usize, v: u16) {
        self.write_from(offset, &v.to_le_bytes());
    }
    /// Stores a little-endian `u32`.
    fn put_u32(&mut self, offset: usize, v: u32) {
        self.write_from(offset, &v.to_le_bytes());
    }
    /// Stores a little-endian `u64`.
    fn put_u64(&mut self, offset: usize, v: u64) {
        self.write_from(offset, &v.to_le_bytes());
    }
}

impl PageRead for [u8] {
    #[inline]
    fn page_len(&self) -> usize {
        self.len()
    }
    #[inline]
    fn read_into(&self, offset: usize, dst: &mut [u8]) {
        dst.copy_from_slice(&self[offset..offset + dst.len()]);
    }
    /// One copy into an uninitialised allocation (the default zeroes it first: a split
    /// copying 150 entries out of an X-latched leaf spent 4 % of its instructions there).
    #[inline]
    fn to_vec(&self, offset: usize, len: usize) -> Vec<u8> {
        <[u8]>::to_vec(&self[offset..offset + len])
    }
    #[inline]
    fn extend_vec(&self, offset: usize, len: usize, out: &mut Vec<u8>) {
        out.extend_from_slice(&self[offset..offset + len]);
    }
    /// One unaligned 8-byte load when 8 bytes follow `offset`, masked to `n`; else a byte
    /// loop (the default's `memcpy` call into a stack buffer cost a search key's probe more
    /// than the comparison it fed).
    #[inline(always)]
    fn head_be(&self, offset: usize, n: usize) -> u64 {
        slice_head_be(self, offset, n)
    }
    #[inline(always)]
    fn prefetch(&self, offset: usize) {
        if let Some(b) = self.get(offset) {
            crate::sync::prefetch(b);
        }
    }
}

/// [`PageRead::head_be`] of a byte slice: the `n` (at most 8) bytes at `offset` as the high
/// bytes of a big-endian number, the rest zero.
///
/// # Panics
/// If `n > 8` or the bytes lie outside `bytes`.
#[inline(always)]
pub(crate) fn slice_head_be(bytes: &[u8], offset: usize, n: usize) -> u64 {
    assert!(n <= 8, "a head is at most 8 bytes");
    let src = &bytes[offset..offset + n];
    if n == 0 {
        return 0;
    }
    if let Some(w) = bytes.get(offset..offset + 8) {
        let word = u64::from_be_bytes(w.try_into().expect("8 bytes"));
        // n is 1..=8, so the shift is 0..=56.
        return word & (u64::MAX << ((8 - n) * 8));
    }
    if let Some(back) = bytes.len().checked_sub(8) {
        // Fewer than 8 bytes follow `offset`, but the slice has 8: read its last 8 bytes
        // (one load) and shift the `offset - back` (1..=7) bytes before `offset` out.
        let w = &bytes[back..];
        let word = u64::from_be_bytes(w.try_into().expect("8 bytes"));
        return (word << ((offset - back) * 8)) & (u64::MAX << ((8 - n) * 8));
    }
    let mut head = 0u64;
    for (i, &b) in src.iter().enumerate() {
        head |= u64::from(b) << (56 - 8 * i);
    }
    head
}

impl PageWrite for [u8] {
    #[inline]
    fn write_from(&mut self, offset: usize, src: &[u8]) {
        self[offset..offset + src.len()].copy_from_slice(src);
    }
    #[inline]
    fn copy_within(&mut self, src: Range<usize>, dst: usize) {
        <[u8]>::copy_within(self, src, dst);
    }
    #[inline]
    fn fill(&mut self, range: Range<usize>, byte: u8) {
        self[range].fill(byte);
    }
}

/// A page image in atomic 8-byte words, read with relaxed atomic loads. Safe to use while
/// another thread writes the same words through [`AtomicBytesMut`]; the values read may then
/// be a mix of old and new bytes, which is why optimistic readers validate their latch
/// version before trusting anything they read (sync rule O2).
#[derive(Clone, Copy)]
pub struct AtomicBytes<'a> {
    words: &'a [AtomicU64],
}

impl<'a> AtomicBytes<'a> {
    /// Wraps the words of a page image; its length is `8 * words.len()` bytes.
    pub fn new(words: &'a [AtomicU64]) -> Self {
        AtomicBytes { words }
    }
}

/// Copies bytes `[offset, offset + dst.len())` of `words` into `dst` with relaxed loads:
/// the first 8 bytes from any offset ([`atomic_read_small`]: one load, or two where they
/// straddle a word boundary), the whole words after them one load each, and the range's
/// last 8 bytes the same way as the first, overlapping what came before. Under 8 bytes, one
/// piece and a byte loop. No byte loops at either end of a longer read, and no
/// variable-length `memcpy` call per piece (which would cost more than the copy on the
/// short reads that dominate: headers, keys, 8-byte values).
///
/// # Panics
/// If the range lies outside the page.
#[inline]
fn atomic_read(words: &[AtomicU64], offset: usize, dst: &mut [u8]) {
    let len = dst.len();
    let page_len = words.len() * 8;
    offset
        .checked_add(len)
        .filter(|&e| e <= page_len)
        .expect("read past end of page");
    if len >= 8 {
        // The first 8 bytes, then every whole word after them with one load each, then the
        // last 8 bytes; the pieces overlap where the range is not word-aligned.
        dst[..8].copy_from_slice(&atomic_read_small::<8>(words, offset));
        let end = offset + len;
        let mut at = (offset + 1).next_multiple_of(8);
        while at + 8 <= end {
            let i = at - offset;
            dst[i..i + 8].copy_from_slice(&words[at / 8].load(Relaxed).to_ne_bytes());
            at += 8;
        }
        if at < end {
            dst[len - 8..].copy_from_slice(&atomic_read_small::<8>(words, end - 8));
        }
    } else if len > 0 {
        // The 8 bytes from `offset` if the page has them, else the page's last 8 (a page is
        // whole words, so at least 8 bytes, and the range ends inside them).
        let from = offset.min(page_len - 8);
        let w = atomic_read_small::<8>(words, from);
        for (d, &b) in dst.iter_mut().zip(&w[offset - from..]) {
            *d = b;
        }
    }
}

/// [`PageRead::extend_vec`] of atomic words: writes the bytes into the vector's
/// uninitialised capacity past its length with 8-byte stores: the bytes up to the first
/// word boundary shifted out of their word, then each whole word after them as it is
/// loaded. Not by zeroing `len` bytes and then overwriting them (the zeroing, a `rep stosb`
/// per copy, was 4 % of a single-row read's samples), by pushing them (a capacity check per
/// word: copying a TPC-C customer row this way was 7 % of Payment's instructions), nor by
/// copying the partial words at either end byte by byte (two `memcpy` calls per 8-byte
/// value of a `lookup-resident` lookup). The stores may write up to 7 bytes of capacity
/// past the new length (so the vector needs capacity for `len + 7` more bytes, and
/// reserves it), which stay uninitialised to the vector.
///
/// # Panics
/// If the range lies outside the page (as [`atomic_read`]).
#[inline]
fn atomic_extend(words: &[AtomicU64], offset: usize, len: usize, v: &mut Vec<u8>) {
    // The range lies in the page, so every word indexed below exists.
    offset
        .checked_add(len)
        .filter(|&e| e <= words.len() * 8)
        .expect("read past end of page");
    if len == 0 {
        return;
    }
    // The stores end below `len + 7`: the first at byte 8 (`len >= 1`), the others at most
    // 7 bytes past `len` (each starts below `len`).
    v.reserve(len + 7);
    let old = v.len();
    let dst = v.spare_capacity_mut().as_mut_ptr().cast::<u8>();
    // Bytes from `offset` to the next word boundary (0 if `offset` is on one).
    let lead = offset.next_multiple_of(8) - offset;
    let mut at = 0; // bytes of `dst` written
    if lead > 0 {
        // The word holding `offset`, shifted so that its byte `offset % 8` comes first
        // (read as a little-endian number, byte `i` of a word is its bits `8i..8i + 8`).
        let w = u64::from_le_bytes(words[offset / 8].load(Relaxed).to_ne_bytes());
        // SAFETY: 8 bytes at the start of the reserved `len + 7 >= 8` bytes of capacity.
        unsafe {
            dst.cast::<[u8; 8]>()
                .write_unaligned((w >> (8 * (offset % 8))).to_le_bytes())
        };
        at = lead;
    }
    // Then whole words: the one starting at byte `offset + at` while that is in the range
    // (so in the page), each stored 8 bytes at `dst + at` (the last one past `len` by up
    // to 7 bytes: within `len + 7`).
    while at < len {
        let w = words[(offset + at) / 8].load(Relaxed).to_ne_bytes();
        // SAFETY: `at < len`, so `at + 8 <= len + 7`, inside the reserved capacity.
        unsafe { dst.add(at).cast::<[u8; 8]>().write_unaligned(w) };
        at += 8;
    }
    // SAFETY: the stores above wrote every byte of `[0, max(at, 8))` of the capacity after
    // the old length, and `len <= max(at, 8)` (the loop ends at `at >= len`, and a range
    // within the first word has `len <= lead <= 8`).
    unsafe { v.set_len(old + len) };
}

/// Reads `N` (at most 8) bytes at `offset` with one relaxed load when they lie in one word
/// (the common case for aligned header fields and keys), else with two, joined by shifts in
/// registers. (Joined in a 16-byte stack buffer instead, the read of the result spanned the
/// buffer's two 8-byte stores and waited for them to retire, a failed store forwarding:
/// about a quarter of `Node::child`'s samples in select1, perf.)
///
/// # Panics
/// If the bytes lie outside the page.
#[inline(always)]
fn atomic_read_small<const N: usize>(words: &[AtomicU64], offset: usize) -> [u8; N] {
    const { assert!(N <= 8, "at most one word") };
    let (w, start) = (offset / 8, offset % 8);
    // Each word as a little-endian number: byte `i` of the word is its bits `8i..8i + 8`.
    let word = |i: usize| u64::from_le_bytes(words[i].load(Relaxed).to_ne_bytes());
    let mut v = word(w) >> (8 * start);
    if start + N > 8 {
        // Here `start >= 1`, so the shift is below 64.
        v |= word(w + 1) << (64 - 8 * start);
    }
    let mut out = [0u8; N];
    out.copy_from_slice(&v.to_le_bytes()[..N]);
    out
}

/// [`PageRead::head_be`] with at most two relaxed loads and no copy: the bytes of the one or
/// two words read big-endian make a 128-bit number whose top 64 bits, after a shift by the
/// start within the first word, are the 8 bytes at `offset`; the bytes past `n` are masked.
#[inline(always)]
fn atomic_head_be(words: &[AtomicU64], offset: usize, n: usize) -> u64 {
    assert!(n <= 8, "a head is at most 8 bytes");
    if n == 0 {
        return 0;
    }
    let (w, start) = (offset / 8, offset % 8);
    // A word's bytes in memory order are its native-endian bytes (as in `atomic_read`), so
    // `from_be_bytes` of them is the word read as a big-endian number.
    let hi = u64::from_be_bytes(words[w].load(Relaxed).to_ne_bytes());
    let lo = if start + n > 8 {
        u64::from_be_bytes(words[w + 1].load(Relaxed).to_ne_bytes())
    } else {
        0
    };
    let both = ((hi as u128) << 64) | lo as u128;
    let head = ((both << (start * 8)) >> 64) as u64;
    // Keep the first n bytes: n is 1..=8, so the shift is 0..=56.
    head & (u64::MAX << ((8 - n) * 8))
}

/// Writes `src` at `offset` with relaxed stores; partial words are read-modify-written, which
/// is correct only because the caller holds the X latch (the only writer). The whole words
/// between the partial ends are stored from `src`'s 8-byte chunks zipped with the words (no
/// per-word branch or bounds check).
#[inline]
fn atomic_write(words: &[AtomicU64], offset: usize, src: &[u8]) {
    let end = offset
        .checked_add(src.len())
        .filter(|&e| e <= words.len() * 8)
        .expect("write past end of page");
    if src.is_empty() {
        return;
    }
    // A partial word is merged in registers, as little-endian numbers (byte `i` of a word
    // is its bits `8i..8i + 8`). (Merged in an 8-byte stack copy of the word instead, the
    // copy's reload waited on the narrower stores of the bytes into it: a failed store
    // forwarding, about half of this function's samples in TPC-C, perf.)
    let put_partial = |pos: usize, bytes: &[u8]| {
        let (idx, shift) = (pos / 8, 8 * (pos % 8));
        // `bytes` is 1 to 7 bytes that end inside the word, so `8 * len + shift < 64`.
        let mask = ((1u64 << (8 * bytes.len())) - 1) << shift;
        let old = u64::from_le_bytes(words[idx].load(Relaxed).to_ne_bytes());
        let new = (old & !mask) | (le_u64(bytes) << shift);
        words[idx].store(u64::from_ne_bytes(new.to_le_bytes()), Relaxed);
    };
    let start = offset % 8;
    let lead = if start == 0 {
        0
    } else {
        (8 - start).min(src.len())
    };
    let (head, rest) = src.split_at(lead);
    if lead > 0 {
        put_partial(offset, head);
    }
    let first = (offset + lead) / 8;
    let mut chunks = rest.chunks_exact(8);
    for (w, c) in words[first..].iter().zip(&mut chunks) {
        w.store(u64::from_ne_bytes(c.try_into().expect("8 bytes")), Relaxed);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        put_partial(end - tail.len(), tail);
    }
}

/// The 1 to 7 bytes of `b` as a little-endian number (byte `i` in bits `8i..8i + 8`),
/// from two overlapping loads of 4, 2 or 1 bytes: no loop and no read past `b`.
#[inline(always)]
fn le_u64(b: &[u8]) -> u64 {
    let n = b.len();
    debug_assert!((1..8).contains(&n), "{n} bytes");
    let u32_at = |i: usize| u64::from(u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]));
    let u16_at = |i: usize| u64::from(u16::from_le_bytes([b[i], b[i + 1]]));
    // The two loads overlap (wholly where `n` is 4 or 2): the shared bytes are ORed with
    // themselves.
    if n >= 4 {
        u32_at(0) | (u32_at(n - 4) << (8 * (n - 4)))
    } else if n >= 2 {
        u16_at(0) | (u16_at(n - 2) << (8 * (n - 2)))
    } else {
        u64::from(b[0])
    }
}

/// `PageRead` for the atomic page types: relaxed loads, one load for a small read within a
/// word.
macro_rules! impl_atomic_page_read {
    ($ty:ty) => {
        impl PageRead for $ty {
            #[inline(always)]
            fn page_len(&self) -> usize {
                self.words.len() * 8
            }
            #[inline(always)]
            fn read_into(&self, offset: usize, dst: &mut [u8]) {
                atomic_read(self.words, offset, dst);
            }
            #[inline(always)]
            fn to_vec(&self, offset: usize, len: usize) -> Vec<u8> {
                if len == 0 {
                    return Vec::new();
                }
                let mut v = Vec::with_capacity(len + 7);
                atomic_extend(self.words, offset, len, &mut v);
                v
            }
            #[inline(always)]
            fn extend_vec(&self, offset: usize, len: usize, out: &mut Vec<u8>) {
                atomic_extend(self.words, offset, len, out);
            }
            #[inline(always)]
            fn prefetch(&self, offset: usize) {
                if let Some(w) = self.words.get(offset / 8) {
                    crate::sync::prefetch(w);
                }
            }
            #[inline(always)]
            fn u8_at(&self, offset: usize) -> u8 {
                atomic_read_small::<1>(self.words, offset)[0]
            }
            #[inline(always)]
            fn u16_at(&self, offset: usize) -> u16 {
                u16::from_le_bytes(atomic_read_small(self.words, offset))
            }
            #[inline(always)]
            fn u32_at(&self, offset: usize) -> u32 {
                u32::from_le_bytes(atomic_read_small(self.words, offset))
            }
            #[inline(always)]
            fn head_be(&self, offset: usize, n: usize) -> u64 {
                atomic_head_be(self.words, offset, n)
            }
            #[inline(always)]
            fn u64_at(&self, offset: usize) -> u64 {
                u64::from_le_bytes(atomic_read_small(self.words, offset))
            }
        }
    };
}

impl_atomic_page_read!(AtomicBytes<'_>);

/// A page image in atomic words with write access: made only by the holder of a frame's X
/// latch (or by code that owns the words outright). Writes use relaxed atomic stores so that
/// concurrent optimistic readers do not race (sync rule O1).
pub struct AtomicBytesMut<'a> {
    words: &'a [AtomicU64],
}

impl<'a> AtomicBytesMut<'a> {
    /// Wraps words the caller has the exclusive right to write.
    ///
    /// Not `unsafe`: every access is atomic, so a second writer could not cause undefined
    /// behaviour, only a garbled page; the buffer pool hands these out only under an X latch.
    pub fn new(words: &'a [AtomicU64]) -> Self {
        AtomicBytesMut { words }
    }
}

impl_atomic_page_read!(AtomicBytesMut<'_>);

impl PageWrite for AtomicBytesMut<'_> {
    #[inline]
    fn write_from(&mut self, offset: usize, src: &[u8]) {
        atomic_write(self.words, offset, src);
    }

    fn copy_within(&mut self, src: Range<usize>, dst: usize) {
        const CHUNK: usize = 256;
        let len = src.end.checked_sub(src.start).expect("reversed range");
        assert!(src.end <= self.page_len() && dst + len <= self.page_len());
        if src.start % 8 == 0 && dst % 8 == 0 && len % 8 == 0 {
            // Whole words (a hinted page's slot shifts): one load and one store per word, in
            // the direction that reads every source word before it is overwritten.
            // Both ranges are sliced once (shared references to atomics may overlap), so the
            // loops carry no bounds checks.
            let (s, d, n) = (src.start / 8, dst / 8, len / 8);
            // Four words per step, all four loaded before any is stored: the loop's own
            // instructions were as many as the copy's (an insert's slot shift moves about
            // 100 words). Loading a step's words first keeps memmove semantics for any
            // overlap: moving down, a step's stores land at or below its own source words,
            // never on a later (higher) step's; moving up, at or above them, never on a
            // later (lower) step's.
            let (from, to) = (&self.words[s..s + n], &self.words[d..d + n]);
            let copy4 = |t: &[AtomicU64], f: &[AtomicU64]| {
                let w = [
                    f[0].load(Relaxed),
                    f[1].load(Relaxed),
                    f[2].load(Relaxed),
                    f[3].load(Relaxed),
                ];
                for (t, w) in t.iter().zip(w) {
                    t.store(w, Relaxed);
                }
            };
            if d <= s {
                let whole = n / 4 * 4;
                for (t, f) in to[..whole]
                    .chunks_exact(4)
                    .zip(from[..whole].chunks_exact(4))
                {
                    copy4(t, f);
                }
                for (t, f) in to[whole..].iter().zip(&from[whole..]) {
                    t.store(f.load(Relaxed), Relaxed);
                }
            } else {
                let rest = n % 4;
                for (t, f) in to[rest..]
                    .rchunks_exact(4)
                    .zip(from[rest..].rchunks_exact(4))
                {
                    copy4(t, f);
                }
                for (t, f) in to[..rest].iter().zip(&from[..rest]).rev() {
                    t.store(f.load(Relaxed), Relaxed);
                }
            }
            return;
        }
        let mut buf = [0u8; CHUNK];
        if dst <= src.start {
            // Front to back: each chunk's destination ends at or before the next chunk's source.
            let mut done = 0;
            while done < len {
                let n = CHUNK.min(len - done);
                atomic_read(self.words, src.start + done, &mut buf[..n]);
                atomic_write(self.words, dst + done, &buf[..n]);
                done += n;
            }
        } else {
            // Back to front, mirror image of the above.
            let mut left = len;
            while left > 0 {
                let n = CHUNK.min(left);
                left -= n;
                atomic_read(self.words, src.start + left, &mut buf[..n]);
                atomic_write(self.words, dst + left, &buf[..n]);
            }
        }
    }

    /// Partial words at either end read-modify-written; the whole words between with one
    /// relaxed store each (a page format zero-fills a whole page, 1,024 words at 8 KiB).
    fn fill(&mut self, range: Range<usize>, byte: u8) {
        assert!(
            range.start <= range.end && range.end <= self.words.len() * 8,
            "fill past end of page"
        );
        let first = range.start.next_multiple_of(8).min(range.end);
        let last = (range.end / 8 * 8).max(first);
        let buf = [byte; 8];
        atomic_write(self.words, range.start, &buf[..first - range.start]);
        let word = u64::from_ne_bytes(buf);
        for w in &self.words[first / 8..last / 8] {
            w.store(word, Relaxed);
        }
        atomic_write(self.words, last, &buf[..range.end - last]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn words(n: usize) -> Vec<AtomicU64> {
        (0..n).map(|_| AtomicU64::new(0)).collect()
    }

    proptest! {
        /// The atomic image behaves exactly like a plain byte array under any sequence of
        /// writes, moves and fills.
        #[test]
        fn atomic_matches_plain(ops in proptest::collection::vec(
            (0usize..4, 0usize..512, 0usize..512, 0usize..100, any::<u8>()), 1..60)) {
            let w = words(64);
            let mut plain = vec![0u8; 512];
            let mut at = AtomicBytesMut::new(&w);
            for (kind, a, b, len, byte) in ops {
                let len = len.min(512 - a).min(512 - b);
                match kind {
                    0 => {
                        let src: Vec<u8> = (0..len).map(|i| byte.wrapping_add(i as u8)).collect();
                        plain.write_from(a, &src);
                        at.write_from(a, &src);
                    }
                    1 => {
                        PageWrite::copy_within(plain.as_mut_slice(), a..a + len, b);
                        at.copy_within(a..a + len, b);
                    }
                    3 => {
                        // Whole aligned words: the word-by-word path.
                        let (a, b, len) = (a & !7, b & !7, len & !7);
                        PageWrite::copy_within(plain.as_mut_slice(), a..a + len, b);
                        at.copy_within(a..a + len, b);
                    }
                    _ => {
                        PageWrite::fill(plain.as_mut_slice(), a..a + len, byte);
                        at.fill(a..a + len, byte);
                    }
                }
            }
            let mut out = vec![0u8; 512];
            AtomicBytes::new(&w).read_into(0, &mut out);
            prop_assert_eq!(out, plain);
        }
    }

    /// Whole-word moves of every length up to 20 words by every shift up to 5 words either
    /// way (the overlapping moves of a slot array's shift among them), from every word
    /// offset, move exactly what a plain `copy_within` moves: the four-word steps, their
    /// remainder and both directions.
    #[test]
    fn word_moves_match_plain_for_every_overlap() {
        for n in 0..=20usize {
            for shift in -5isize..=5 {
                for s in 5..=8usize {
                    let d = s.checked_add_signed(shift).unwrap();
                    let w = words(40);
                    let mut plain: Vec<u8> = (0..320u32).map(|i| (i * 7 + 3) as u8).collect();
                    AtomicBytesMut::new(&w).write_from(0, &plain);
                    AtomicBytesMut::new(&w).copy_within(8 * s..8 * (s + n), 8 * d);
                    PageWrite::copy_within(plain.as_mut_slice(), 8 * s..8 * (s + n), 8 * d);
                    let mut out = vec![0u8; 320];
                    AtomicBytes::new(&w).read_into(0, &mut out);
                    assert_eq!(out, plain, "n {n} shift {shift} from word {s}");
                }
            }
        }
    }

    /// Every range of a 48-byte image, at every start and length (head only, head and
    /// words, words and tail, within one word), reads the same bytes as the plain image.
    #[test]
    fn ranged_reads_match_plain_at_every_offset_and_length() {
        let w = words(6);
        let plain: Vec<u8> = (0..48u8).map(|i| i.wrapping_mul(53) ^ 0x5a).collect();
        AtomicBytesMut::new(&w).write_from(0, &plain);
        let r = AtomicBytes::new(&w);
        for o in 0..=48 {
            for n in 0..=48 - o {
                let mut out = vec![0xeeu8; n];
                r.read_into(o, &mut out);
                assert_eq!(out, &plain[o..o + n], "{n} bytes at {o}");
                assert_eq!(
                    r.to_vec(o, n),
                    &plain[o..o + n],
                    "to_vec of {n} bytes at {o}"
                );
                // After a prefix of 0 to 9 bytes, into an exact-size vector or one with
                // spare capacity (no reallocation: the stores land in it).
                let k = (o + n) % 10;
                let mut grown = vec![7u8; k];
                if n % 2 == 1 {
                    grown.reserve(n + 7);
                }
                let (cap, at) = (grown.capacity(), grown.as_ptr());
                r.extend_vec(o, n, &mut grown);
                assert_eq!(grown[..k], vec![7u8; k][..], "kept, {n} at {o}");
                assert_eq!(grown[k..], plain[o..o + n], "extend_vec of {n} at {o}");
                if n % 2 == 1 {
                    assert_eq!((grown.capacity(), grown.as_ptr()), (cap, at), "{n} at {o}");
                }
            }
        }
    }

    /// A write of every length at every offset of a 48-byte image changes exactly those
    /// bytes, as the same write to a plain slice does (partial words merged in registers).
    #[test]
    fn writes_match_plain_at_every_offset_and_length() {
        let before: Vec<u8> = (0..48u8).map(|i| i.wrapping_mul(29) ^ 0xa5).collect();
        for o in 0..=48 {
            for n in 0..=48 - o {
                let src: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(7) ^ 0x3c).collect();
                let w = words(6);
                AtomicBytesMut::new(&w).write_from(0, &before);
                AtomicBytesMut::new(&w).write_from(o, &src);
                let mut plain = before.clone();
                plain[o..o + n].copy_from_slice(&src);
                let mut got = vec![0u8; 48];
                AtomicBytes::new(&w).read_into(0, &mut got);
                assert_eq!(got, plain, "{n} bytes at {o}");
            }
        }
    }

    #[test]
    fn integer_reads_match_plain_at_every_offset() {
        let w = words(4);
        let mut at = AtomicBytesMut::new(&w);
        let plain: Vec<u8> = (0..32u8)
            .map(|i| i.wrapping_mul(37).wrapping_add(5))
            .collect();
        at.write_from(0, &plain);
        let r = AtomicBytes::new(&w);
        for o in 0..=24 {
            assert_eq!(r.u64_at(o), plain.as_slice().u64_at(o), "u64 at {o}");
            assert_eq!(r.u32_at(o), plain.as_slice().u32_at(o), "u32 at {o}");
            assert_eq!(r.u16_at(o), plain.as_slice().u16_at(o), "u16 at {o}");
            assert_eq!(r.u8_at(o), plain[o], "u8 at {o}");
        }
        for o in 0..32 {
            for n in 0..=8.min(32 - o) {
                let mut head = [0u8; 8];
                head[..n].copy_from_slice(&plain[o..o + n]);
                let want = u64::from_be_bytes(head);
                assert_eq!(r.head_be(o, n), want, "head of {n} at {o}");
                assert_eq!(
                    plain.as_slice().head_be(o, n),
                    want,
                    "plain head of {n} at {o}"
                );
            }
        }
        // Slices of every length up to 9 bytes: heads with and without 8 bytes after them.
        for len in 0..=9 {
            let short = &plain[..len];
            for o in 0..=len {
                for n in 0..=8.min(len - o) {
                    let mut head = [0u8; 8];
                    head[..n].copy_from_slice(&short[o..o + n]);
                    let want = u64::from_be_bytes(head);
                    assert_eq!(short.head_be(o, n), want, "{n} of {len} bytes at {o}");
                }
            }
        }
    }

    #[test]
    fn integers_are_little_endian() {
        let w = words(2);
        let mut at = AtomicBytesMut::new(&w);
        at.put_u32(6, 0x0403_0201);
        assert_eq!(at.u8_at(6), 1);
        assert_eq!(at.u8_at(9), 4);
        assert_eq!(at.u32_at(6), 0x0403_0201);
        at.put_u64(3, u64::MAX - 5);
        assert_eq!(at.u64_at(3), u64::MAX - 5);
    }
}
