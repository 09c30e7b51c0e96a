//! Tests of forward reading, lookup by LSN and the end-of-log rule (reader rule 1).

use super::*;
use crate::io::{FaultConfig, FaultStorage, Storage};
use crate::log::record::{RecordKind, RecordRole};
use crate::log::segment::segment_file_name;
use crate::types::{PageId, TxnId};
use std::sync::Arc;

const SEG: u64 = 4096;

fn new_set(segment_bytes: u64) -> (FaultStorage, SegmentSet) {
    let fs = FaultStorage::new(FaultConfig::new(11)).unwrap();
    let st: Arc<dyn Storage> = Arc::new(fs.clone());
    (fs, SegmentSet::open(st, segment_bytes).unwrap())
}

/// Record `i` of a test log: kinds cycle, payload sizes vary (0 to ~700 bytes).
fn test_record(i: usize, prev: Lsn) -> LogRecord {
    let kind = RecordKind::ALL[i % RecordKind::ALL.len()];
    let redo_len = (i * 37) % 300;
    let undo_len = if kind.role() == RecordRole::Undoable {
        (i * 53) % 400
    } else {
        0
    };
    LogRecord {
        kind,
        txn_id: TxnId(1 + (i % 3) as u64),
        prev_lsn: prev,
        page_id: PageId(i as u64),
        undo_next_lsn: if kind.role() == RecordRole::Compensation {
            prev
        } else {
            Lsn::ZERO
        },
        redo: vec![(i % 251) as u8; redo_len],
        undo: vec![(i % 13) as u8; undo_len],
    }
}

/// Writes `n` records from LSN `start`; returns them with their LSNs, and the end.
fn write_log(set: &SegmentSet, start: Lsn, n: usize) -> (Vec<(Lsn, LogRecord)>, Lsn) {
    let mut out = Vec::new();
    let mut bytes = Vec::new();
    let mut lsn = start;
    for i in 0..n {
        let prev = out
            .iter()
            .rev()
            .nth(2)
            .map_or(Lsn::ZERO, |(l, _): &(Lsn, _)| *l);
        let rec = test_record(i, prev);
        bytes.extend_from_slice(&rec.encode(lsn));
        out.push((lsn, rec));
        lsn = Lsn(start.0 + bytes.len() as u64);
    }
    set.write_at(start, &bytes).unwrap();
    set.sync().unwrap();
    (out, lsn)
}

fn read_all(set: &SegmentSet, from: Lsn) -> Result<(Vec<(Lsn, LogRecord)>, Lsn)> {
    let mut got = Vec::new();
    let end = LogReader::scan_to_end(set, from, |l, r| {
        got.push((l, r.clone()));
        Ok(())
    })?;
    Ok((got, end))
}

#[test]
fn forward_and_backward_reading_round_trip() {
    let (_fs, set) = new_set(SEG);
    let (recs, end) = write_log(&set, Lsn::ZERO, 200);
    assert!(end.0 > 10 * SEG, "spans many segments");
    let (got, got_end) = read_all(&set, Lsn::ZERO).unwrap();
    assert_eq!(got, recs);
    assert_eq!(got_end, end);
    // Start in the middle; iterate with the Iterator impl.
    let mid = recs[120].0;
    let it: Vec<_> = LogReader::new(&set, mid)
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(it, recs[120..]);
    // Backward along prev_lsn chains.
    let mut lsn = recs[199].0;
    let mut hops = 0;
    while lsn != Lsn::ZERO {
        let rec = read_record(&set, lsn).unwrap();
        assert_eq!(
            Some(&rec),
            recs.iter().find(|(l, _)| *l == lsn).map(|(_, r)| r)
        );
        lsn = rec.prev_lsn;
        hops += 1;
    }
    assert!(hops > 50);
    assert!(matches!(
        read_record(&set, Lsn(8)),
        Err(Error::LogCorruption { .. })
    ));
    assert!(matches!(
        read_record(&set, end),
        Err(Error::LogCorruption { .. })
    ));
    assert!(LogReader::new(&set, Lsn(3)).is_err());
}

#[test]
fn empty_log_ends_where_it_starts() {
    let (_fs, set) = new_set(SEG);
    assert_eq!(read_all(&set, Lsn::ZERO).unwrap().1, Lsn::ZERO);
}

#[test]
fn records_larger_than_the_read_chunk_are_read() {
    let (_fs, set) = new_set(1 << 20);
    let big = LogRecord {
        redo: vec![9; 3 << 20],
        ..test_record(7, Lsn::ZERO)
    };
    let mut bytes = test_record(0, Lsn::ZERO).encode(Lsn(0));
    let at = Lsn(bytes.len() as u64);
    bytes.extend(big.encode(at));
    set.write_at(Lsn(0), &bytes).unwrap();
    let (got, end) = read_all(&set, Lsn(0)).unwrap();
    assert_eq!(got[1], (at, big));
    assert_eq!(end, Lsn(bytes.len() as u64));
}

/// The end a reader must find when only the bytes below `cut` are intact.
fn expected_end(recs: &[(Lsn, LogRecord)], cut: u64) -> Lsn {
    let mut end = Lsn::ZERO;
    for (lsn, rec) in recs {
        let next = lsn.0 + rec.encoded_len() as u64;
        if next <= cut {
            end = Lsn(next);
        }
    }
    end
}

#[test]
fn tail_cut_or_zeroed_at_every_offset_of_the_last_4k_ends_at_last_whole_record() {
    let (_fs, set) = new_set(SEG);
    let (recs, end) = write_log(&set, Lsn::ZERO, 60);
    let mut image = vec![0u8; end.0 as usize];
    assert_eq!(set.read_at(Lsn(0), &mut image).unwrap(), image.len());
    for cut in end.0 - 4096..=end.0 {
        let want = expected_end(&recs, cut);
        // (a) the files end at `cut`.
        let (_fs, cut_set) = new_set(SEG);
        cut_set.write_at(Lsn(0), &image[..cut as usize]).unwrap();
        let (got, got_end) = read_all(&cut_set, Lsn::ZERO).unwrap();
        assert_eq!(got_end, want, "cut at {cut}");
        assert_eq!(got.len(), recs.iter().filter(|(l, _)| *l < want).count());
        // (b) the bytes from `cut` to the old end are zeros (a file extended but not written).
        let (_fs, zero_set) = new_set(SEG);
        let mut zeroed = image.clone();
        zeroed[cut as usize..].fill(0);
        zero_set.write_at(Lsn(0), &zeroed).unwrap();
        // Zeroing bytes that were zero already (padding, zero payload) damages nothing.
        let want_zeroed = recs
            .iter()
            .map(|(l, r)| l.0 + r.encoded_len() as u64)
            .filter(|&next| image[..next as usize] == zeroed[..next as usize])
            .max()
            .map_or(Lsn::ZERO, Lsn);
        assert!(want_zeroed >= want);
        assert_eq!(
            read_all(&zero_set, Lsn::ZERO).unwrap().1,
            want_zeroed,
            "zeroed from {cut}"
        );
    }
}

#[test]
fn torn_final_record_with_garbage_ends_the_log_there() {
    let (fs, set) = new_set(SEG);
    let (recs, end) = write_log(&set, Lsn::ZERO, 40);
    let (last, _) = recs[39];
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    for start in [last.0, last.0 + 1, last.0 + 8, last.0 + 60, end.0 - 1] {
        // Garbage from `start` to 600 bytes past the old end.
        let garbage: Vec<u8> = (start..end.0 + 600)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect();
        set.write_at(Lsn(start), &garbage).unwrap();
        let (got, got_end) = read_all(&set, Lsn::ZERO).unwrap();
        assert_eq!(got_end, last, "garbage from {start}");
        assert_eq!(got.len(), 39);
    }
    drop(fs);
}

#[test]
fn a_damaged_record_in_the_middle_is_corruption_not_the_end() {
    let (fs, set) = new_set(SEG);
    let (recs, _end) = write_log(&set, Lsn::ZERO, 50);
    for k in [0, 1, 17, 30, 48] {
        let (lsn, rec) = &recs[k];
        for at in [0, 4, 9, 16, 30, rec.encoded_len() as u64 - 1] {
            let pos = lsn.0 + at;
            let name = segment_file_name(pos / SEG);
            fs.flip_bits(&name, pos % SEG, 0x20).unwrap();
            match read_all(&set, Lsn::ZERO) {
                Err(Error::LogCorruption { lsn: bad, reason }) => {
                    assert_eq!(bad, *lsn, "record {k} byte {at}: {reason}");
                    assert!(reason.contains("valid record exists"), "{reason}");
                }
                other => panic!("record {k} byte {at}: {:?}", other.map(|(_, e)| e)),
            }
            fs.flip_bits(&name, pos % SEG, 0x20).unwrap();
        }
    }
    assert!(read_all(&set, Lsn::ZERO).is_ok());
}

#[test]
fn unsynced_window_tolerates_valid_records_just_after_the_hole() {
    let (fs, set) = new_set(SEG);
    let (recs, end) = write_log(&set, Lsn::ZERO, 50);
    let (lsn, _) = recs[45];
    fs.flip_bits(&segment_file_name(lsn.0 / SEG), lsn.0 % SEG + 20, 1)
        .unwrap();
    let strict = LogReader::new(&set, Lsn::ZERO).unwrap();
    assert!(strict.collect::<Result<Vec<_>>>().is_err());
    let mut lenient = LogReader::new(&set, Lsn::ZERO)
        .unwrap()
        .with_unsynced_window(end.0 - lsn.0);
    while lenient.next_record().unwrap().is_some() {}
    assert_eq!(lenient.end(), Some(lsn));
    // A window too small to cover the later records still reports the damage.
    let small = LogReader::new(&set, Lsn::ZERO)
        .unwrap()
        .with_unsynced_window(64);
    assert!(small.collect::<Result<Vec<_>>>().is_err());
}

#[test]
fn a_short_middle_segment_is_corruption() {
    let (fs, set) = new_set(SEG);
    let (recs, _) = write_log(&set, Lsn::ZERO, 80);
    // Lose the durable tail of segment 2 only: the reader must find the records beyond.
    let name = segment_file_name(2);
    let st: Arc<dyn Storage> = Arc::new(fs.clone());
    st.open(&name, Default::default())
        .unwrap()
        .set_len(1000)
        .unwrap();
    let err = read_all(&set, Lsn::ZERO).unwrap_err();
    let Error::LogCorruption { lsn, .. } = err else {
        panic!("{err:?}")
    };
    assert!(
        recs.iter().any(|(l, _)| *l == lsn) && lsn.0 < 3 * SEG,
        "{lsn}"
    );
}

#[test]
fn reading_after_recycling_starts_at_the_first_segment() {
    let (_fs, set) = new_set(SEG);
    let (recs, end) = write_log(&set, Lsn::ZERO, 100);
    let keep = recs.iter().find(|(l, _)| l.0 >= 3 * SEG).unwrap().0;
    set.remove_before(keep).unwrap();
    assert!(LogReader::new(&set, Lsn::ZERO).is_err());
    let (got, got_end) = read_all(&set, keep).unwrap();
    assert_eq!(got_end, end);
    assert_eq!(got.first().map(|(l, _)| *l), Some(keep));
}

/// Replay throughput of the reader (decode + CRC + copy) over 256 MiB of ~200-byte records
/// held in the simulated disk. Run: `cargo test --release -p shoal --lib log::reader::tests::
/// replay_throughput -- --ignored --nocapture`.
#[test]
#[ignore]
fn replay_throughput() {
    let (_fs, set) = new_set(64 << 20);
    let target = 256usize << 20;
    let mut batch = Vec::with_capacity(8 << 20);
    let mut lsn = 0u64;
    let mut n = 0usize;
    while (lsn as usize) < target {
        let rec = LogRecord {
            redo: vec![n as u8; 96],
            undo: vec![1; 48],
            ..test_record(4, Lsn(lsn.saturating_sub(200)))
        };
        batch.extend(rec.encode(Lsn(lsn + batch.len() as u64)));
        n += 1;
        if batch.len() >= 8 << 20 {
            set.write_at(Lsn(lsn), &batch).unwrap();
            lsn += batch.len() as u64;
            batch.clear();
        }
    }
    let t = std::time::Instant::now();
    let mut count = 0usize;
    let end = LogReader::scan_to_end(&set, Lsn::ZERO, |_, _| {
        count += 1;
        Ok(())
    })
    .unwrap();
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(end, Lsn(lsn));
    println!(
        "replayed {count} records, {} MiB in {secs:.3} s: {:.0} MiB/s",
        lsn >> 20,
        (lsn as f64 / (1 << 20) as f64) / secs
    );
}
