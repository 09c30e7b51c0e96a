//! Opening a log: where its records end (the torn tail or the durable floor), whether the
//! file system takes `O_DIRECT`, and the partial last block a direct-I/O writer rewrites.
//! The rules cited are the log manager's ("invariant n"), the anchor's ("rule An") and the
//! record format's ("rule Ln").

use super::*;

/// Finds the end of the log: the position after the last record that decodes, scanning from
/// the anchor's start. A bad record is the torn end unless a valid record lies further after
/// it than the previous writer could have left unsynced (anchor rule A4, format rule L3: then
/// the log is damaged in the middle); and the log must reach the durable floor (rule A3).
pub(super) fn find_end(segments: &SegmentSet, anchor: Anchor) -> Result<Lsn> {
    // Recycling removes only segments wholly below the start (anchor rule A2), so an
    // oldest file above the start means the file holding the start is gone.
    let first = segments.first_lsn();
    if anchor.start_lsn < first {
        let seg = segments.segment_bytes();
        return Err(Error::log_corruption(
            anchor.start_lsn,
            format!(
                "segment file {} holding the log's start is missing (the oldest is {})",
                segment::segment_file_name(anchor.start_lsn.0 / seg),
                segment::segment_file_name(first.0 / seg)
            ),
        ));
    }
    let mut r = reader::LogReader::new(segments, anchor.start_lsn)?
        .with_unsynced_window(anchor.unsynced_window_bytes);
    while r.next_record()?.is_some() {}
    let end = r.position();
    if end < anchor.durable_floor {
        return Err(Error::log_corruption(
            end,
            format!(
                "the log ends at {end}, below {} which was synced: records were damaged",
                anchor.durable_floor
            ),
        ));
    }
    Ok(end)
}

/// Whether `storage` accepts `O_DIRECT` (rule 12), tried on the anchor file, which exists
/// once the log is open: `false` if opening it so fails with `EINVAL`.
///
/// # Errors
/// Any other error of the open.
pub(super) fn accepts_direct_io(storage: &dyn Storage) -> Result<bool> {
    let direct = OpenOptions {
        direct: true,
        ..Default::default()
    };
    match storage.open(ANCHOR_FILE, direct) {
        Ok(_) => Ok(true),
        Err(Error::Io { source, .. }) if source.raw_os_error() == Some(libc::EINVAL) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The log bytes `[align_down(end), end)`, which the first direct write rewrites (rule 10).
/// Below the first record of a new log nothing was ever written; those bytes are zeros, as
/// a file read would return for a hole.
///
/// # Errors
/// I/O errors of the read; [`Error::LogCorruption`] if the files end inside that block
/// (after the first record).
pub(super) fn partial_block_below(segments: &SegmentSet, end: Lsn) -> Result<Vec<u8>> {
    let start = align_down(end.0);
    let mut head = vec![0u8; (end.0 - start) as usize];
    if !head.is_empty() {
        // `start` lies in the segment holding `end`, which recycling keeps (it removes only
        // segments wholly below the start LSN, and the start LSN is at most the end).
        let n = segments.read_at(Lsn(start), &mut head)?;
        if n != head.len() && end > FIRST_LSN {
            // The end was found by reading up to it, so only a file damaged or removed
            // meanwhile (or a log whose only segment is gone) gets here.
            return Err(Error::log_corruption(
                end,
                format!(
                    "the log ends at {end}, but its files hold only {n} of the {} bytes of \
                     the block below it",
                    head.len()
                ),
            ));
        }
    }
    Ok(head)
}
