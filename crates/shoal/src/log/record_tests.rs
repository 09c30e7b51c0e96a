//! Tests of the log record format: round trips, hand-checked layout, and decode fuzzing
//! (record rule 6: never a panic, never a wrong record).

use super::*;
use proptest::prelude::*;

fn record(kind: RecordKind, redo: Vec<u8>, undo: Vec<u8>) -> LogRecord {
    LogRecord {
        kind,
        txn_id: TxnId(0x0102_0304_0506_0708),
        prev_lsn: Lsn(4096),
        page_id: if kind.role() == RecordRole::Control {
            PageId::INVALID
        } else {
            PageId(77)
        },
        undo_next_lsn: if kind.role() == RecordRole::Compensation {
            Lsn(2048)
        } else {
            Lsn::ZERO
        },
        redo,
        undo,
    }
}

/// A record of `kind` with payload lengths legal for its role.
fn legal(kind: RecordKind, redo_len: usize, undo_len: usize) -> LogRecord {
    let redo = (0..redo_len).map(|i| (i * 7 + 1) as u8).collect();
    let undo = if kind.role() == RecordRole::Undoable {
        (0..undo_len).map(|i| (i * 13) as u8).collect()
    } else {
        Vec::new()
    };
    record(kind, redo, undo)
}

#[test]
fn every_kind_round_trips_with_empty_small_and_large_payloads() {
    let sizes = [(0, 0), (1, 0), (0, 1), (3, 5), (8, 8), (100_000, 77_777)];
    for kind in RecordKind::ALL {
        assert_eq!(RecordKind::from_u8(kind as u8), Some(kind));
        for (redo_len, undo_len) in sizes {
            let rec = legal(kind, redo_len, undo_len);
            let lsn = Lsn(123 * 8);
            let bytes = rec.encode(lsn);
            assert_eq!(bytes.len() % RECORD_ALIGN, 0);
            assert_eq!(bytes.len(), rec.encoded_len());
            match LogRecord::decode(&bytes, lsn) {
                Decoded::Record(got, len) => {
                    assert_eq!(got, rec);
                    assert_eq!(len, bytes.len());
                }
                other => panic!("{kind:?} {redo_len}/{undo_len}: {other:?}"),
            }
            // Trailing bytes after the record are not part of it.
            let mut longer = bytes.clone();
            longer.extend_from_slice(&[0xAB; 24]);
            assert!(
                matches!(LogRecord::decode(&longer, lsn), Decoded::Record(r, l) if r == rec && l == bytes.len())
            );
            // Every strict prefix is incomplete, never invalid or a record.
            for cut in [0, 1, 55, 56, bytes.len() - 1]
                .into_iter()
                .filter(|&c| c < bytes.len())
            {
                assert_eq!(LogRecord::decode(&bytes[..cut], lsn), Decoded::Incomplete);
            }
        }
    }
}

#[test]
fn largest_record_round_trips_and_one_more_byte_is_rejected() {
    let redo = vec![0x5A; MAX_RECORD_BYTES - RECORD_HEADER_BYTES];
    let rec = record(RecordKind::PageImage, redo, Vec::new());
    assert!(rec.validate().is_ok());
    let bytes = rec.encode(Lsn(0));
    assert!(matches!(LogRecord::decode(&bytes, Lsn(0)), Decoded::Record(r, _) if r == rec));
    let mut big = rec.clone();
    big.redo.push(1);
    assert!(matches!(big.validate(), Err(Error::InvalidArgument { .. })));
}

#[test]
fn layout_matches_the_documented_table() {
    let rec = record(RecordKind::Update, vec![1, 2, 3], vec![9, 8]);
    let lsn = Lsn(0x1000);
    let b = rec.encode(lsn);
    // 56 + 3 + 2 = 61 → 64 bytes, 3 bytes of padding.
    assert_eq!(b.len(), 64);
    assert_eq!(&b[0..4], &64u32.to_le_bytes());
    assert_eq!(&b[4..8], &crc32c::crc32c(&b[8..]).to_le_bytes());
    assert_eq!(&b[8..16], &0x1000u64.to_le_bytes());
    assert_eq!(b[16], 5, "Update kind byte");
    assert_eq!(b[17], 3, "padding count in flags");
    assert_eq!(&b[18..20], &[0, 0]);
    assert_eq!(&b[20..24], &3u32.to_le_bytes());
    assert_eq!(&b[24..32], &0x0102_0304_0506_0708u64.to_le_bytes());
    assert_eq!(&b[32..40], &4096u64.to_le_bytes());
    assert_eq!(&b[40..48], &77u64.to_le_bytes());
    assert_eq!(&b[48..56], &0u64.to_le_bytes());
    assert_eq!(&b[56..61], &[1, 2, 3, 9, 8]);
    assert_eq!(&b[61..64], &[0, 0, 0]);
}

#[test]
fn undo_payload_ending_in_zeros_keeps_its_length() {
    let rec = record(RecordKind::Update, vec![7], vec![0, 0, 0]);
    let b = rec.encode(Lsn(8));
    assert!(
        matches!(LogRecord::decode(&b, Lsn(8)), Decoded::Record(r, _) if r.undo == vec![0, 0, 0])
    );
}

#[test]
fn roles_of_kinds() {
    use RecordKind::*;
    assert_eq!(Update.role(), RecordRole::Undoable);
    assert_eq!(SystemUpdate.role(), RecordRole::Undoable);
    assert_eq!(Compensation.role(), RecordRole::Compensation);
    for k in [SystemRedo, PageImage] {
        assert_eq!(k.role(), RecordRole::RedoOnly);
    }
    for k in [
        Begin,
        Commit,
        Abort,
        End,
        CheckpointBegin,
        CheckpointEnd,
        Padding,
    ] {
        assert_eq!(k.role(), RecordRole::Control);
    }
    assert_eq!(RecordKind::from_u8(0), None);
    assert_eq!(RecordKind::from_u8(11), Some(SystemUpdate));
    assert_eq!(RecordKind::from_u8(12), Some(Padding));
    assert_eq!(RecordKind::from_u8(13), None);
}

#[test]
fn role_violations_are_rejected_on_both_sides() {
    let bad = record(RecordKind::SystemRedo, vec![1], vec![2]);
    assert!(matches!(bad.validate(), Err(Error::InvalidArgument { .. })));
    let mut bad = record(RecordKind::Update, vec![1], vec![2]);
    bad.undo_next_lsn = Lsn(8);
    assert!(bad.validate().is_err());
    // A hand-made Update with an undo-next LSN and a valid CRC still does not decode.
    let good = record(RecordKind::Update, vec![1], vec![2]);
    let mut b = good.encode(Lsn(0));
    b[48] = 8;
    let crc = crc32c::crc32c(&b[8..]);
    b[4..8].copy_from_slice(&crc.to_le_bytes());
    assert!(matches!(LogRecord::decode(&b, Lsn(0)), Decoded::Invalid(_)));
}

#[test]
fn header_damage_is_invalid_with_a_reason() {
    let rec = record(RecordKind::Commit, vec![1, 2, 3, 4], Vec::new());
    let b = rec.encode(Lsn(64));
    let reason = |b: &[u8], lsn| match LogRecord::decode(b, lsn) {
        Decoded::Invalid(why) => why,
        other => panic!("expected Invalid, got {other:?}"),
    };
    assert!(reason(&b, Lsn(72)).contains("self-LSN"));
    let mut x = b.clone();
    x[0] = 60; // not a multiple of 8
    assert!(reason(&x, Lsn(64)).contains("length"));
    let mut x = b.clone();
    x[16] = 0;
    assert!(reason(&x, Lsn(64)).contains("kind"));
    let mut x = b.clone();
    x[18] = 1;
    assert!(reason(&x, Lsn(64)).contains("reserved"));
    let mut x = b.clone();
    x[17] |= 0x10;
    assert!(reason(&x, Lsn(64)).contains("flag"));
    let mut x = b.clone();
    x[56] ^= 1;
    assert!(reason(&x, Lsn(64)).contains("checksum"));
    // All zeros (a never-written tail) is invalid, not a record.
    assert!(matches!(
        LogRecord::decode(&[0u8; 64], Lsn(64)),
        Decoded::Invalid(_)
    ));
}

#[test]
fn view_borrows_payloads() {
    let rec = record(RecordKind::Update, vec![1, 2], vec![3]);
    let b = rec.encode(Lsn(16));
    match RecordView::decode(&b, Lsn(16)) {
        Decoded::Record(v, len) => {
            assert_eq!(v.redo, &[1, 2]);
            assert_eq!(v.undo, &[3]);
            assert_eq!(len, 64);
            assert_eq!(v.to_owned(), rec);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn plausibility_and_claimed_len() {
    let b = legal(RecordKind::Begin, 0, 0).encode(Lsn(800));
    assert!(plausible_at(&b, Lsn(800)));
    assert!(!plausible_at(&b, Lsn(808)));
    assert!(!plausible_at(&b[..15], Lsn(800)));
    assert_eq!(claimed_len(&b), Some(56));
    assert_eq!(claimed_len(&[1, 0, 0]), None);
    assert_eq!(claimed_len(&[0; 8]), None);
}

fn arb_record() -> impl Strategy<Value = LogRecord> {
    (
        0..RecordKind::ALL.len(),
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
        proptest::collection::vec(any::<u8>(), 0..300),
        proptest::collection::vec(any::<u8>(), 0..300),
    )
        .prop_map(|(k, txn, prev, page, next, redo, undo)| {
            let kind = RecordKind::ALL[k];
            LogRecord {
                kind,
                txn_id: TxnId(txn),
                prev_lsn: Lsn(prev),
                page_id: PageId(page),
                undo_next_lsn: if kind.role() == RecordRole::Compensation {
                    Lsn(next)
                } else {
                    Lsn::ZERO
                },
                redo,
                undo: if kind.role() == RecordRole::Undoable {
                    undo
                } else {
                    Vec::new()
                },
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn decode_of_random_bytes_never_panics_or_succeeds(
        bytes in proptest::collection::vec(any::<u8>(), 0..600),
        lsn in any::<u64>(),
    ) {
        // A random byte string passing a 32-bit CRC and the self-LSN check has probability
        // far below 2^-60 per case: a Record here is a bug.
        let lsn = Lsn(lsn & !7);
        prop_assert!(!matches!(LogRecord::decode(&bytes, lsn), Decoded::Record(..)));
    }

    #[test]
    fn random_header_with_right_lsn_never_panics(
        mut bytes in proptest::collection::vec(any::<u8>(), 56..400),
        len in 0u32..500,
        kind in 0u8..12,
        flags in 0u8..16,
        redo_len in any::<u32>(),
    ) {
        // Steer the fields past the cheap checks so the later ones are exercised too.
        bytes[0..4].copy_from_slice(&len.to_le_bytes());
        bytes[8..16].copy_from_slice(&64u64.to_le_bytes());
        bytes[16] = kind;
        bytes[17] = flags;
        bytes[18] = 0;
        bytes[19] = 0;
        bytes[20..24].copy_from_slice(&(redo_len % 512).to_le_bytes());
        let _ = LogRecord::decode(&bytes, Lsn(64));
    }

    #[test]
    fn bit_flips_in_valid_records_are_caught(
        rec in arb_record(),
        lsn in 0u64..1_000_000,
        flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let lsn = Lsn(lsn * 8);
        let bytes = rec.encode(lsn);
        prop_assert_eq!(LogRecord::decode(&bytes, lsn), Decoded::Record(rec.clone(), bytes.len()));
        let mut damaged = bytes.clone();
        for (at, mask) in &flips {
            let i = at.index(damaged.len());
            damaged[i] ^= mask;
        }
        if damaged != bytes {
            // CRC32C detects every error of up to 3 bits in records this short (its Hamming
            // distance is ≥ 4 up to ~2^31 bits); flips of whole bytes are caught with
            // probability 1 - 2^-32. Either way: never a record.
            let got = LogRecord::decode(&damaged, lsn);
            prop_assert!(!matches!(got, Decoded::Record(..)), "{:?}", got);
        }
        let cut = cut.index(bytes.len());
        prop_assert_eq!(LogRecord::decode(&bytes[..cut], lsn), Decoded::Incomplete);
    }
}
