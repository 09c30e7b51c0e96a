//! Tests of segment files: names, spanning writes and reads, durability, deletion.

use super::*;
use crate::io::{FaultConfig, FaultStorage};

const SEG: u64 = 4096;

fn storage() -> (FaultStorage, Arc<dyn Storage>) {
    let fs = FaultStorage::new(FaultConfig::new(7)).unwrap();
    let dyn_fs: Arc<dyn Storage> = Arc::new(fs.clone());
    (fs, dyn_fs)
}

fn pattern(start: u64, len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| ((start + i) * 31 % 251) as u8)
        .collect()
}

#[test]
fn names_round_trip_and_bad_names_are_rejected() {
    assert_eq!(segment_file_name(0x2a), "log-000000000000002a.seg");
    assert_eq!(
        parse_segment_file_name("log-000000000000002a.seg").unwrap(),
        Some(0x2a)
    );
    assert_eq!(parse_segment_file_name("data.shoal").unwrap(), None);
    for bad in [
        "log-2a.seg",
        "log-000000000000002A.seg",
        "log-000000000000002a.tmp",
        "log-",
    ] {
        assert!(
            matches!(parse_segment_file_name(bad), Err(Error::BadFile { .. })),
            "{bad}"
        );
    }
}

#[test]
fn writes_and_reads_span_segments() {
    let (fs, st) = storage();
    let set = SegmentSet::open(Arc::clone(&st), SEG).unwrap();
    assert_eq!(set.end_of_files().unwrap(), Lsn::ZERO);
    // 3.5 segments in one write starting inside segment 0.
    let data = pattern(100, 14_000);
    set.write_at(Lsn(100), &data).unwrap();
    set.sync().unwrap();
    assert_eq!(set.end_of_files().unwrap(), Lsn(14_100));
    let mut buf = vec![0u8; 20_000];
    assert_eq!(set.read_at(Lsn(100), &mut buf).unwrap(), 14_000);
    assert_eq!(&buf[..14_000], &data[..]);
    let mut buf = vec![0u8; 5000];
    assert_eq!(set.read_at(Lsn(4000), &mut buf).unwrap(), 5000);
    assert_eq!(&buf[..], &data[3900..8900]);
    assert_eq!(set.read_at(Lsn(14_100), &mut buf).unwrap(), 0);
    assert_eq!(set.read_at(Lsn(99_999), &mut buf).unwrap(), 0);
    // Durable after sync, and found again after a crash.
    fs.crash_now();
    fs.restart();
    let set = SegmentSet::open(st, SEG).unwrap();
    assert_eq!(
        fs.durable_contents(&segment_file_name(3)).unwrap().len(),
        14_100 - 3 * 4096
    );
    let mut buf = vec![0u8; 14_000];
    assert_eq!(set.read_at(Lsn(100), &mut buf).unwrap(), 14_000);
    assert_eq!(buf, data);
}

#[test]
fn unsynced_writes_are_lost_but_segment_names_survive() {
    let (fs, st) = storage();
    let set = SegmentSet::open(Arc::clone(&st), SEG).unwrap();
    set.write_at(Lsn(0), &pattern(0, 5000)).unwrap();
    fs.crash_now();
    fs.restart();
    let set = SegmentSet::open(st, SEG).unwrap();
    // Both files exist (created + dir synced) but hold no durable bytes.
    assert_eq!(set.segment_len(0).unwrap(), Some(0));
    assert_eq!(set.segment_len(1).unwrap(), Some(0));
    assert_eq!(set.end_of_files().unwrap(), Lsn(4096));
    assert_eq!(set.read_at(Lsn(0), &mut [0u8; 16]).unwrap(), 0);
}

#[test]
fn writing_far_ahead_fills_the_gap_with_empty_segments() {
    let (_fs, st) = storage();
    let set = SegmentSet::open(Arc::clone(&st), SEG).unwrap();
    set.write_at(Lsn(0), &[1; 8]).unwrap();
    set.write_at(Lsn(3 * SEG), &[2; 8]).unwrap();
    set.sync().unwrap();
    drop(set);
    let set = SegmentSet::open(st, SEG).unwrap();
    assert_eq!(set.segment_len(1).unwrap(), Some(0));
    // A read stops at the short first segment (segment rule 4).
    assert_eq!(set.read_at(Lsn(0), &mut [0u8; 64]).unwrap(), 8);
}

#[test]
fn open_rejects_gaps_bad_names_bad_sizes_and_ignores_other_files() {
    let (_fs, st) = storage();
    let c = OpenOptions {
        create: true,
        ..Default::default()
    };
    st.open("data.shoal", c).unwrap();
    st.open(&segment_file_name(4), c).unwrap();
    st.open(&segment_file_name(6), c).unwrap();
    match SegmentSet::open(Arc::clone(&st), SEG) {
        Err(Error::LogCorruption { lsn, reason }) => {
            assert_eq!(lsn, Lsn(5 * SEG));
            assert!(reason.contains("log-0000000000000005.seg"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    st.open(&segment_file_name(5), c).unwrap();
    let set = SegmentSet::open(Arc::clone(&st), SEG).unwrap();
    assert_eq!(set.first_lsn(), Lsn(4 * SEG));
    assert!(matches!(
        set.write_at(Lsn(0), &[1]),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        set.read_at(Lsn(0), &mut [0]),
        Err(Error::InvalidArgument { .. })
    ));
    for bad in [0, 1000, 4097, 2048] {
        assert!(matches!(
            SegmentSet::open(Arc::clone(&st), bad),
            Err(Error::InvalidArgument { .. })
        ));
    }
    st.open(&segment_file_name(7), c)
        .unwrap()
        .write_all_at(&[0; 5000], 0)
        .unwrap();
    assert!(matches!(
        SegmentSet::open(Arc::clone(&st), SEG),
        Err(Error::BadFile { .. })
    ));
    st.remove(&segment_file_name(7)).unwrap();
    st.open("log-oops", c).unwrap();
    assert!(matches!(
        SegmentSet::open(st, SEG),
        Err(Error::BadFile { .. })
    ));
}

#[test]
fn remove_before_deletes_whole_segments_only() {
    let (fs, st) = storage();
    let set = SegmentSet::open(Arc::clone(&st), SEG).unwrap();
    set.write_at(Lsn(0), &pattern(0, 5 * SEG as usize)).unwrap();
    set.sync().unwrap();
    set.remove_before(Lsn(2 * SEG + 10)).unwrap();
    assert_eq!(set.first_lsn(), Lsn(2 * SEG));
    assert!(!st.exists(&segment_file_name(1)).unwrap());
    assert!(st.exists(&segment_file_name(2)).unwrap());
    let mut buf = vec![0u8; 100];
    assert_eq!(set.read_at(Lsn(2 * SEG), &mut buf).unwrap(), 100);
    assert_eq!(buf, pattern(2 * SEG, 100));
    // The removal is durable (directory synced).
    fs.crash_now();
    fs.restart();
    let set = SegmentSet::open(st, SEG).unwrap();
    assert_eq!(set.first_lsn(), Lsn(2 * SEG));
    assert_eq!(set.end_of_files().unwrap(), Lsn(5 * SEG));
}

#[test]
fn truncate_from_cuts_the_tail_durably() {
    let (fs, st) = storage();
    let set = SegmentSet::open(Arc::clone(&st), SEG).unwrap();
    set.write_at(Lsn(0), &pattern(0, 3 * SEG as usize)).unwrap();
    set.sync().unwrap();
    set.truncate_from(Lsn(SEG + 64)).unwrap();
    assert_eq!(set.end_of_files().unwrap(), Lsn(SEG + 64));
    fs.crash_now();
    fs.restart();
    let set = SegmentSet::open(st, SEG).unwrap();
    assert_eq!(set.end_of_files().unwrap(), Lsn(SEG + 64));
}

#[test]
fn concurrent_disjoint_writes_and_reads() {
    let (_fs, st) = storage();
    let set = Arc::new(SegmentSet::open(st, SEG).unwrap());
    let chunk = 3000usize;
    // The log starts with its first write (segment rule 1 fills gaps only above the first
    // segment): make it before the threads race, or one that starts in segment 1 first
    // would make the others' writes "below the oldest segment".
    set.write_at(Lsn(0), &pattern(0, chunk)).unwrap();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let set = Arc::clone(&set);
            s.spawn(move || {
                for k in (0..8u64).filter(|&k| k * 4 + t != 0) {
                    let lsn = (k * 4 + t) * chunk as u64;
                    set.write_at(Lsn(lsn), &pattern(lsn, chunk)).unwrap();
                }
            });
        }
    });
    set.sync().unwrap();
    let total = 32 * chunk;
    let mut buf = vec![0u8; total];
    assert_eq!(set.read_at(Lsn(0), &mut buf).unwrap(), total);
    assert_eq!(buf, pattern(0, total));
}

/// Segment rule 5: direct writes take whole aligned 4 KiB blocks only, across segments;
/// reads (through the ordinary handles) see them, and `sync` makes them durable.
#[test]
fn direct_writes_are_whole_blocks_and_read_back_buffered() {
    let (fs, st) = storage();
    let mut set = SegmentSet::open(Arc::clone(&st), SEG).unwrap();
    set.set_direct_writes(true);
    assert!(set.direct_writes());
    let mut block = crate::io::AlignedBuf::new(3 * IO_ALIGN);
    block.copy_from_slice(&pattern(SEG - 4096, 3 * IO_ALIGN));
    for (lsn, range) in [
        (100, 0..4096),    // misaligned offset
        (0, 0..100),       // short length
        (4096, 512..4608), // misaligned address
    ] {
        assert!(
            matches!(
                set.write_at(Lsn(lsn), &block[range]),
                Err(Error::InvalidArgument { name: "bytes", .. })
            ),
            "{lsn}"
        );
    }
    set.write_at(Lsn(SEG - 4096), &block).unwrap(); // spans segments 0, 1, 2
    set.sync().unwrap();
    fs.crash_now();
    fs.restart();
    let set = SegmentSet::open(st, SEG).unwrap();
    let mut buf = vec![0u8; 3 * IO_ALIGN];
    assert_eq!(set.read_at(Lsn(SEG - 4096), &mut buf).unwrap(), buf.len());
    assert_eq!(&buf[..], &block[..]);
}

/// Segment rule 6: zero-fill steps racing with a writer that appends past them never
/// overwrite a written byte, and leave synced zeros (not holes) past the end. Without the
/// writer's wait on the `zero` mutex, the filler, starting from its own zeroed end, would
/// write zeros over bytes the writer has just put beyond it.
#[test]
fn zero_fill_ahead_never_overwrites_written_bytes() {
    use std::sync::atomic::AtomicBool;
    const BIG_SEG: u64 = 64 << 10;
    for direct in [false, true] {
        let (fs, st) = storage();
        let mut set = SegmentSet::open(Arc::clone(&st), BIG_SEG).unwrap();
        set.set_direct_writes(direct);
        let set = Arc::new(set);
        let cursor = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let lead = 2 * BIG_SEG;
        let filler = {
            let (set, cursor, done) = (Arc::clone(&set), Arc::clone(&cursor), Arc::clone(&done));
            std::thread::spawn(move || {
                let mut steps = 0u64;
                while !done.load(Acquire) {
                    let upto = Lsn(cursor.load(Acquire) + lead);
                    if set.zero_fill_ahead(upto).unwrap() > 0 {
                        steps += 1;
                    } else {
                        std::thread::yield_now();
                    }
                }
                steps
            })
        };
        let mut pos = 0u64;
        for i in 0..1500u64 {
            let len = if direct {
                IO_ALIGN * (1 + i as usize % 3)
            } else {
                1 + (i as usize * 97) % 1500
            };
            let mut buf = crate::io::AlignedBuf::new(len);
            buf.copy_from_slice(&pattern(pos, len));
            set.write_at(Lsn(pos), &buf).unwrap();
            pos += len as u64;
            cursor.store(pos, Release);
            if i % 5 == 0 {
                std::thread::yield_now();
            }
        }
        done.store(true, Release);
        let steps = filler.join().unwrap();
        assert!(steps > 0, "direct {direct}: the filler never ran");
        while set.zero_fill_ahead(Lsn(pos + lead)).unwrap() > 0 {}
        set.sync().unwrap();
        let zeroed = set.zeroed_end().0;
        assert!(
            zeroed >= pos + lead,
            "direct {direct}: zeros end at {zeroed}"
        );
        let mut buf = vec![0xffu8; zeroed as usize];
        assert_eq!(set.read_at(Lsn(0), &mut buf).unwrap(), buf.len());
        assert!(
            buf[..pos as usize] == pattern(0, pos as usize)[..],
            "direct {direct}: a written byte was overwritten"
        );
        assert!(
            buf[pos as usize..].iter().all(|&b| b == 0),
            "direct {direct}"
        );
        // The zeros are durable: a power loss keeps the files' lengths and contents.
        fs.crash_now();
        fs.restart();
        let set = SegmentSet::open(Arc::clone(&st), BIG_SEG).unwrap();
        assert_eq!(set.end_of_files().unwrap().0, zeroed, "direct {direct}");
        assert_eq!(
            set.zeroed_end().0,
            zeroed,
            "open starts at the end of the files"
        );
    }
}

/// Segment rule 6 at the cut: after `truncate_from` zero-filling starts again at the cut, a
/// step never crosses a segment boundary, and a target below what is zeroed does nothing.
#[test]
fn zero_fill_restarts_at_a_cut_and_stops_at_segment_ends() {
    const S: u64 = 16 << 10;
    let (_fs, st) = storage();
    let set = SegmentSet::open(st, S).unwrap();
    set.write_at(Lsn(0), &pattern(0, 1000)).unwrap();
    assert_eq!(set.zero_fill_ahead(Lsn(3 * S)).unwrap(), S - 4096);
    assert_eq!(
        set.zeroed_end(),
        Lsn(S),
        "from the block after the write to the end"
    );
    assert_eq!(set.zero_fill_ahead(Lsn(3 * S)).unwrap(), S);
    assert_eq!(set.zero_fill_ahead(Lsn(S)).unwrap(), 0, "already there");
    assert_eq!(set.end_of_files().unwrap(), Lsn(2 * S));
    set.truncate_from(Lsn(600)).unwrap();
    assert_eq!(set.zeroed_end(), Lsn(600));
    assert_eq!(set.end_of_files().unwrap(), Lsn(600));
    assert_eq!(set.zero_fill_ahead(Lsn(S)).unwrap(), S - 4096);
    let mut buf = vec![0xffu8; S as usize];
    assert_eq!(set.read_at(Lsn(0), &mut buf).unwrap(), S as usize);
    assert_eq!(&buf[..600], &pattern(0, 600)[..]);
    assert!(
        buf[600..].iter().all(|&b| b == 0),
        "a hole reads as zeros too"
    );
    // Stopped: no step runs, even after a cut, and every write may skip the mutex.
    set.stop_zero_fill();
    assert_eq!(set.zeroed_end(), Lsn(u64::MAX));
    assert_eq!(set.zero_fill_ahead(Lsn(3 * S)).unwrap(), 0);
    set.truncate_from(Lsn(600)).unwrap();
    assert_eq!(set.zero_fill_ahead(Lsn(3 * S)).unwrap(), 0);
    assert_eq!(set.end_of_files().unwrap(), Lsn(600));
}
