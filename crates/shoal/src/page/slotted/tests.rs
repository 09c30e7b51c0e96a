//! Tests of the slotted layout: examples, a model test against a `Vec` of records (and hints) on plain and
//! atomic pages of 4 and 64 KiB, and fuzz-style tests that no page bytes make it panic.

use super::view::RECORD_GUESS_SLACK;
use super::*;
use crate::page::bytes::{AtomicBytes, AtomicBytesMut, PageWrite};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::cmp::Ordering;
use std::sync::atomic::AtomicU64;

const ID: PageId = PageId(42);

fn words(page_len: usize) -> Vec<AtomicU64> {
    (0..page_len / 8).map(|_| AtomicU64::new(0)).collect()
}

fn image(words: &[AtomicU64]) -> Vec<u8> {
    AtomicBytes::new(words).to_vec(0, words.len() * 8)
}

fn record(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| seed.wrapping_add((i as u8).wrapping_mul(31)))
        .collect()
}

fn corruption_reason(e: Error) -> (PageId, String) {
    match e {
        Error::Corruption { page_id, reason } => (page_id, reason),
        other => panic!("expected corruption, got {other}"),
    }
}

#[test]
fn insert_get_delete_in_slot_order() {
    let mut buf = vec![0u8; 4096];
    let mut page = init(buf.as_mut_slice(), ID, PageType::BTreeLeaf, 16);
    assert_eq!(page.push(b"bbb").unwrap(), Ok(()));
    assert_eq!(page.insert(0, b"a").unwrap(), Ok(()));
    assert_eq!(page.push(b"").unwrap(), Ok(()));
    assert_eq!(page.insert(2, b"cccc").unwrap(), Ok(()));
    assert_eq!(page.slot_count(), 4);
    page.write_special(8, &7u64.to_le_bytes()).unwrap();
    check(buf.as_slice(), ID).unwrap();

    let view = Slotted::open(buf.as_slice()).unwrap();
    let all: Vec<&[u8]> = (0..4).map(|i| view.get_slice(i).unwrap()).collect();
    assert_eq!(all, [&b"a"[..], b"bbb", b"cccc", b""]);
    assert_eq!(view.compare(1, b"bbb").unwrap(), Ordering::Equal);
    assert_eq!(view.compare(1, b"bb").unwrap(), Ordering::Greater);
    assert_eq!(view.compare(1, b"bbc").unwrap(), Ordering::Less);
    assert_eq!(view.special_range(), 48..64);
    let mut sibling = [0u8; 8];
    view.read_special(8, &mut sibling).unwrap();
    assert_eq!(u64::from_le_bytes(sibling), 7);
    assert!(view.read_special(12, &mut sibling).is_err());
    assert_eq!(view.used_space(), 4 * SLOT_SIZE + 8);
    assert_eq!(
        view.free_space_total(),
        capacity_bytes(4096, 16) - view.used_space()
    );
    let e = view.get(4).unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument { name: "slot", .. }),
        "{e}"
    );

    let mut page = SlottedMut::open(buf.as_mut_slice()).unwrap();
    page.delete(1).unwrap();
    assert_eq!(page.get(1).unwrap(), b"cccc");
    page.delete(0).unwrap();
    page.delete(0).unwrap();
    page.delete(0).unwrap();
    // The heap is empty again: all free space is contiguous.
    let view = page.view();
    assert_eq!(view.free_space(), capacity_bytes(4096, 16));
    assert_eq!(view.free_space_total(), view.free_space());
    check(buf.as_slice(), ID).unwrap();
}

#[test]
fn full_page_reports_no_room_and_compacts_when_fragmented() {
    let mut buf = vec![0u8; 4096];
    let mut page = init(buf.as_mut_slice(), ID, PageType::Slotted, 0);
    let mut n = 0;
    while page.push(&record(100, n as u8)).unwrap().is_ok() {
        n += 1;
    }
    let cap = capacity_bytes(4096, 0);
    assert_eq!(n, cap / 104);
    let no_room = page.push(&record(100, 0)).unwrap().unwrap_err();
    assert_eq!(no_room.needed_bytes, 104);
    assert_eq!(no_room.free_bytes, cap - n * 104);
    // Delete the records of even slots, keeping the lowest one in the heap (the last): the
    // freed bytes are 100-byte holes, the contiguous space grows only by the freed slots.
    assert_eq!(n % 2, 0);
    for i in (0..n).step_by(2).rev() {
        page.delete(i).unwrap();
    }
    assert_eq!(page.view().free_space(), cap - n * 104 + n / 2 * SLOT_SIZE);
    assert!(page.view().free_space() < 204);
    assert!(page.can_fit(200));
    assert_eq!(page.insert(1, &record(200, 9)).unwrap(), Ok(()));
    assert_eq!(page.get(1).unwrap(), record(200, 9));
    assert_eq!(page.get(2).unwrap(), record(100, 3));
    // Grow a record beyond the contiguous space: relocation with compaction.
    let big = page.view().free_space_total() + 100;
    assert_eq!(page.update(0, &record(big, 3)).unwrap(), Ok(()));
    assert_eq!(page.get(0).unwrap(), record(big, 3));
    assert_eq!(page.view().free_space_total(), 0);
    let e = page.update(0, &record(big + 1, 3)).unwrap().unwrap_err();
    assert_eq!((e.needed_bytes, e.free_bytes), (big + 1, big));
    check(buf.as_slice(), ID).unwrap();
}

#[test]
fn empty_64k_page_stores_page_end_as_zero() {
    let mut buf = vec![0u8; 65536];
    let mut page = init(buf.as_mut_slice(), ID, PageType::BTreeInner, 0);
    assert_eq!(page.push(b"").unwrap(), Ok(()));
    check(buf.as_slice(), ID).unwrap();
    // free_end (bytes 36..38) and the empty record's offset are both 65536, stored as 0.
    assert_eq!(&buf[36..38], &[0, 0]);
    assert_eq!(&buf[48..52], &[0, 0, 0, 0]);
    assert_eq!(&buf[32..36], &[1, 0, 52, 0]);
    // Fill the page with empty records until the slot array ends at 65536 too.
    let mut page = SlottedMut::open(buf.as_mut_slice()).unwrap();
    while page.push(b"").unwrap().is_ok() {}
    assert_eq!(page.slot_count(), capacity_bytes(65536, 0) / SLOT_SIZE);
    assert_eq!(page.view().free_space(), 0);
    assert_eq!(&buf[34..36], &[0, 0]);
    check(buf.as_slice(), ID).unwrap();
    // The same zero on a 4 KiB page means 65536: past the end, hence corrupt.
    let mut small = vec![0u8; 4096];
    init(small.as_mut_slice(), ID, PageType::Slotted, 0);
    small[36..38].copy_from_slice(&[0, 0]);
    let (_, reason) = corruption_reason(Slotted::open(small.as_slice()).err().unwrap());
    assert!(reason.contains("free_end 65536"), "{reason}");
}

#[test]
fn corrupt_slot_offset_is_reported_naming_the_page() {
    let mut buf = vec![0u8; 8192];
    let mut page = init(buf.as_mut_slice(), PageId(17), PageType::BTreeLeaf, 8);
    for i in 0..5u8 {
        assert_eq!(page.push(&record(40, i)).unwrap(), Ok(()));
    }
    check(buf.as_slice(), PageId(17)).unwrap();
    // Slot 3's offset (bytes [48 + 8 + 12, +2)) pointed past the page end.
    let pos = SPECIAL_OFFSET + 8 + 3 * SLOT_SIZE;
    buf[pos..pos + 2].copy_from_slice(&8170u16.to_le_bytes());
    let (page_id, reason) = corruption_reason(check(buf.as_slice(), PageId(17)).unwrap_err());
    assert_eq!(page_id, PageId(17));
    assert!(
        reason.contains("slot 3") && reason.contains("outside"),
        "{reason}"
    );
    let view = Slotted::open(buf.as_slice()).unwrap();
    let (page_id, _) = corruption_reason(view.get(3).unwrap_err());
    assert_eq!(page_id, PageId(17));
    assert_eq!(view.get(2).unwrap(), record(40, 2));
    let mut page = SlottedMut::open(buf.as_mut_slice()).unwrap();
    let before = page.view().page().to_vec();
    corruption_reason(page.compact().unwrap_err());
    corruption_reason(page.delete(3).unwrap_err());
    assert_eq!(
        page.view().page(),
        &before[..],
        "a failed mutator changed the page"
    );

    // Overlap: slot 1 pointed at slot 0's record.
    let mut buf = vec![0u8; 4096];
    let mut page = init(buf.as_mut_slice(), PageId(5), PageType::Slotted, 0);
    page.push(&record(40, 0)).unwrap().unwrap();
    page.push(&record(40, 1)).unwrap().unwrap();
    let slot0 = buf[48..50].to_vec();
    buf[52..54].copy_from_slice(&slot0);
    let (_, reason) = corruption_reason(check(buf.as_slice(), PageId(5)).unwrap_err());
    assert!(reason.contains("overlap"), "{reason}");
    // A wrong page id in the header.
    let (page_id, reason) = corruption_reason(check(buf.as_slice(), PageId(6)).unwrap_err());
    assert_eq!(page_id, PageId(6));
    assert!(reason.contains("header names page 5"), "{reason}");
}

/// One step of the model test; `at` is reduced modulo the valid range when applied.
#[derive(Clone, Debug)]
enum Op {
    Insert {
        at: usize,
        len: usize,
        seed: u8,
    },
    Push {
        len: usize,
        seed: u8,
    },
    Delete {
        at: usize,
    },
    Update {
        at: usize,
        len: usize,
        seed: u8,
    },
    SetHint {
        at: usize,
        hint: u32,
    },
    Compact,
    /// `extend_hinted` with records of these lengths and seeds.
    Extend {
        recs: Vec<(usize, u8)>,
    },
    /// `truncate` to `keep % (slot_count + 1)` slots.
    Truncate {
        keep: usize,
    },
}

fn op_strategy(max_len: usize) -> impl Strategy<Value = Op> {
    let len = prop_oneof![3 => 0..16usize, 3 => 0..200usize, 1 => 0..max_len];
    prop_oneof![
        4 => (any::<usize>(), len.clone(), any::<u8>())
            .prop_map(|(at, len, seed)| Op::Insert { at, len, seed }),
        2 => (len.clone(), any::<u8>()).prop_map(|(len, seed)| Op::Push { len, seed }),
        3 => any::<usize>().prop_map(|at| Op::Delete { at }),
        3 => (any::<usize>(), len, any::<u8>())
            .prop_map(|(at, len, seed)| Op::Update { at, len, seed }),
        1 => (any::<usize>(), any::<u32>()).prop_map(|(at, hint)| Op::SetHint { at, hint }),
        1 => Just(Op::Compact),
        1 => vec((0..300usize, any::<u8>()), 0..12).prop_map(|recs| Op::Extend { recs }),
        1 => any::<usize>().prop_map(|keep| Op::Truncate { keep }),
    ]
}

/// The hint an inserted record gets in the model tests (distinct per record, never 0).
fn hint_of(len: usize, seed: u8) -> u32 {
    0xA500_0000 | ((len as u32) << 8) | seed as u32
}

/// What an operation did: `Some(true)` placed, `Some(false)` no room, `None` skipped (no
/// slot to delete or update).
fn apply<P: PageWrite + ?Sized>(page: &mut P, op: &Op) -> Option<bool> {
    let mut s = SlottedMut::open(page).expect("valid page");
    let n = s.slot_count();
    let placed = |r: Result<Result<(), NoRoom>>| Some(r.expect("no corruption").is_ok());
    match *op {
        Op::Insert { at, len, seed } => {
            placed(s.insert_hinted(at % (n + 1), &record(len, seed), hint_of(len, seed)))
        }
        Op::Push { len, seed } => {
            placed(s.insert_hinted(n, &record(len, seed), hint_of(len, seed)))
        }
        Op::Delete { at } if n > 0 => {
            s.delete(at % n).expect("delete");
            Some(true)
        }
        Op::Update { at, len, seed } if n > 0 => placed(s.update(at % n, &record(len, seed))),
        Op::SetHint { at, hint } if n > 0 => {
            s.set_hint(at % n, hint).expect("set_hint");
            Some(true)
        }
        Op::Compact => {
            s.compact().expect("compact");
            assert_eq!(s.view().free_space(), s.view().free_space_total());
            Some(true)
        }
        Op::Extend { ref recs } => {
            let recs: Vec<(Vec<u8>, u32)> = recs
                .iter()
                .map(|&(len, seed)| (record(len, seed), hint_of(len, seed)))
                .collect();
            placed(s.extend_hinted(recs.iter().map(|(r, h)| (r.as_slice(), *h))))
        }
        Op::Truncate { keep } => {
            s.truncate(keep % (n + 1)).expect("truncate");
            Some(true)
        }
        _ => None,
    }
}

/// The model: each slot's record and the hint it was inserted with.
type Model = Vec<(Vec<u8>, u32)>;

/// Applies `op` to the model and returns whether it should have been placed.
fn apply_model(model: &mut Model, slot_size: usize, free_total: usize, op: &Op) -> Option<bool> {
    let n = model.len();
    match *op {
        Op::Insert { at, len, seed } => {
            let fits = len + slot_size <= free_total;
            if fits {
                model.insert(at % (n + 1), (record(len, seed), hint_of(len, seed)));
            }
            Some(fits)
        }
        Op::Push { len, seed } => {
            let fits = len + slot_size <= free_total;
            if fits {
                model.push((record(len, seed), hint_of(len, seed)));
            }
            Some(fits)
        }
        Op::Delete { at } if n > 0 => {
            model.remove(at % n);
            Some(true)
        }
        Op::Update { at, len, seed } if n > 0 => {
            let fits = len <= free_total + model[at % n].0.len();
            if fits {
                model[at % n].0 = record(len, seed); // the hint stays with the slot
            }
            Some(fits)
        }
        Op::SetHint { at, hint } if n > 0 => {
            model[at % n].1 = hint;
            Some(true)
        }
        Op::Compact => Some(true),
        Op::Extend { ref recs } => {
            let needed: usize = recs.iter().map(|&(len, _)| len + slot_size).sum();
            let fits = needed <= free_total;
            if fits {
                model.extend(
                    recs.iter()
                        .map(|&(len, seed)| (record(len, seed), hint_of(len, seed))),
                );
            }
            Some(fits)
        }
        Op::Truncate { keep } => {
            model.truncate(keep % (n + 1));
            Some(true)
        }
        _ => None,
    }
}

fn model_free_total(page_len: usize, special: usize, slot_size: usize, model: &Model) -> usize {
    capacity_bytes(page_len, special)
        - model.len() * slot_size
        - model.iter().map(|(r, _)| r.len()).sum::<usize>()
}

fn assert_matches_model<P: PageRead + ?Sized>(
    page: &P,
    page_len: usize,
    special: usize,
    hinted: bool,
    model: &Model,
) -> Result<(), TestCaseError> {
    check(page, ID).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let view = Slotted::open(page).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(view.slot_count(), model.len());
    let slot_size = if hinted { HINTED_SLOT_SIZE } else { SLOT_SIZE };
    prop_assert_eq!(view.slot_size(), slot_size);
    let mut buf = Vec::new();
    for (i, (rec, hint)) in model.iter().enumerate() {
        view.read_record(i, &mut buf).unwrap();
        prop_assert_eq!(&buf, rec);
        prop_assert_eq!(view.compare(i, rec).unwrap(), Ordering::Equal);
        prop_assert_eq!(view.hint(i).unwrap(), if hinted { *hint } else { 0 });
    }
    prop_assert!(view.get(model.len()).is_err());
    prop_assert!(view.hint(model.len()).is_err());
    let last_hint = match model.last() {
        Some(&(_, hint)) if hinted => hint,
        _ => 0,
    };
    prop_assert_eq!(view.last_hint(), last_hint, "slotted rule 9");
    let free_total = model_free_total(page_len, special, slot_size, model);
    prop_assert_eq!(view.free_space_total(), free_total);
    prop_assert_eq!(
        view.used_space(),
        capacity_bytes(page_len, special) - free_total
    );
    prop_assert!(view.free_space() <= free_total);
    Ok(())
}

/// Runs `ops` on a plain page and an atomic page in lockstep with the model; the two images
/// must stay byte-identical. `hinted` picks 8-byte slots with hints.
fn run_model(
    page_len: usize,
    special: usize,
    hinted: bool,
    ops: &[Op],
) -> Result<(), TestCaseError> {
    let mut plain = vec![0u8; page_len];
    let atomic_words = words(page_len);
    let mut atomic = AtomicBytesMut::new(&atomic_words);
    let format = if hinted {
        init_hinted::<[u8]>
    } else {
        init::<[u8]>
    };
    format(plain.as_mut_slice(), ID, PageType::BTreeLeaf, special);
    if hinted {
        init_hinted(&mut atomic, ID, PageType::BTreeLeaf, special);
    } else {
        init(&mut atomic, ID, PageType::BTreeLeaf, special);
    }
    let slot_size = if hinted { HINTED_SLOT_SIZE } else { SLOT_SIZE };
    let mut model = Model::new();
    for op in ops {
        let free_total = model_free_total(page_len, special, slot_size, &model);
        let expected = apply_model(&mut model, slot_size, free_total, op);
        prop_assert_eq!(apply(plain.as_mut_slice(), op), expected, "{:?}", op);
        prop_assert_eq!(apply(&mut atomic, op), expected, "{:?}", op);
        assert_matches_model(plain.as_slice(), page_len, special, hinted, &model)?;
        assert_matches_model(&atomic, page_len, special, hinted, &model)?;
        let view = Slotted::open(plain.as_slice()).unwrap();
        for (i, (rec, _)) in model.iter().enumerate() {
            prop_assert_eq!(view.get_slice(i).unwrap(), &rec[..]);
        }
        prop_assert!(
            image(&atomic_words) == plain,
            "atomic and plain images differ"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn model_4k(
        special in 0..=SPECIAL_MAX_BYTES,
        hinted in any::<bool>(),
        ops in vec(op_strategy(1200), 1..250),
    ) {
        run_model(4096, special, hinted, &ops)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn model_64k(
        special in 0..=64usize,
        hinted in any::<bool>(),
        ops in vec(op_strategy(12_000), 1..500),
    ) {
        run_model(65536, special, hinted, &ops)?;
    }
}

/// `last_hint` of a page, as a view reads it.
fn s_last_hint(page: &[u8]) -> u32 {
    Slotted::open(page).unwrap().last_hint()
}

#[test]
fn hinted_page_set_hint_and_unknown_slot_format() {
    let mut buf = vec![0u8; 4096];
    let mut s = init_hinted(buf.as_mut_slice(), ID, PageType::BTreeLeaf, 32);
    s.push(b"abc").unwrap().unwrap();
    s.insert_hinted(0, b"x", 7).unwrap().unwrap();
    s.set_hint(1, 9).unwrap();
    assert!(s.set_hint(2, 1).is_err());
    let v = s.view();
    assert_eq!((v.hint(0).unwrap(), v.hint(1).unwrap()), (7, 9));
    assert_eq!(
        v.free_space_total(),
        capacity_bytes(4096, 32) - 2 * HINTED_SLOT_SIZE - 4
    );
    check(buf.as_slice(), ID).unwrap();
    assert_eq!(s_last_hint(&buf), 9, "slot 1 is the last one");
    // A `last_hint` that is not the last slot's hint is corruption, named (slotted rule 9).
    buf[LAST_HINT_OFFSET] ^= 1;
    let (_, reason) = corruption_reason(check(buf.as_slice(), ID).err().unwrap());
    assert!(reason.contains("rule 9"), "{reason}");
    buf[LAST_HINT_OFFSET] ^= 1;
    // Removing the last slot makes its predecessor's hint the copy; removing every slot, 0.
    let mut s = SlottedMut::open(buf.as_mut_slice()).unwrap();
    s.delete(1).unwrap();
    assert_eq!(s.view().last_hint(), 7);
    s.delete(0).unwrap();
    assert_eq!(s.view().last_hint(), 0);
    check(buf.as_slice(), ID).unwrap();
    // A slot format other than 0 or 1 is corruption, named.
    buf[42] = 2;
    let (_, reason) = corruption_reason(Slotted::open(buf.as_slice()).err().unwrap());
    assert!(reason.contains("unknown slot format 2"), "{reason}");
}

#[test]
fn extend_and_truncate_in_one_step() {
    let mut buf = vec![0u8; 4096];
    let mut s = init_hinted(buf.as_mut_slice(), ID, PageType::BTreeLeaf, 40);
    let recs = [(&b"aa"[..], 1), (b"", 2), (b"cccc", 3)];
    s.extend_hinted(recs).unwrap().unwrap();
    assert_eq!(s.view().last_hint(), 3);
    // Too much for the page: nothing is written.
    let big = vec![7u8; 4000];
    let before = s.view().page().to_vec();
    let no = s
        .extend_hinted([(b"d".as_slice(), 4), (big.as_slice(), 5)])
        .unwrap();
    assert!(no.is_err());
    assert!(
        s.view().page() == &before[..],
        "a refused extend changed the page"
    );
    assert!(s.truncate(4).is_err(), "more slots than the page has");
    s.truncate(1).unwrap();
    let v = s.view();
    assert_eq!((v.slot_count(), v.last_hint()), (1, 1));
    assert_eq!(v.get(0).unwrap(), b"aa");
    assert_eq!(
        v.free_space_total(),
        capacity_bytes(4096, 40) - HINTED_SLOT_SIZE - 2
    );
    s.truncate(0).unwrap();
    assert_eq!(s.view().last_hint(), 0);
    // Every record gone: the whole heap is contiguous free space again.
    assert_eq!(s.view().free_space(), capacity_bytes(4096, 40));
    check(buf.as_slice(), ID).unwrap();
}

#[test]
fn truncate_of_records_in_slot_order_frees_contiguous_space() {
    let mut buf = vec![0u8; 4096];
    let mut s = init_hinted(buf.as_mut_slice(), ID, PageType::BTreeLeaf, 40);
    let recs: Vec<Vec<u8>> = (0..10).map(|i| record(30 + i, i as u8)).collect();
    s.extend_hinted(recs.iter().map(|r| (r.as_slice(), 0)))
        .unwrap()
        .unwrap();
    s.truncate(4).unwrap();
    let v = s.view();
    assert_eq!(
        v.free_space(),
        v.free_space_total(),
        "no hole: the bottom records left"
    );
    // The kept records lie where a guess from `free_end` looks for them: the last kept
    // one at the bottom of the heap.
    assert_eq!(v.record_range(3).unwrap().start, 4096 - (30 + 31 + 32 + 33));
    check(buf.as_slice(), ID).unwrap();
}

#[test]
fn extend_compacts_a_fragmented_page_first() {
    let mut buf = vec![0u8; 4096];
    let mut s = init_hinted(buf.as_mut_slice(), ID, PageType::BTreeLeaf, 40);
    let big = vec![3u8; 1500];
    for _ in 0..2 {
        s.push(&big).unwrap().unwrap();
    }
    s.delete(0).unwrap(); // a 1,500-byte hole above the other record
    let room = s.view().free_space_total() - HINTED_SLOT_SIZE;
    assert!(
        room > s.view().free_space(),
        "the record fits only with the hole"
    );
    let rec = vec![9u8; room];
    s.extend_hinted([(rec.as_slice(), 7)]).unwrap().unwrap();
    let v = s.view();
    assert_eq!((v.slot_count(), v.last_hint()), (2, 7));
    assert_eq!((v.get(0).unwrap(), v.get(1).unwrap()), (big.clone(), rec));
    check(buf.as_slice(), ID).unwrap();
}

proptest! {
    /// `claim` against a model with one flag per byte: it reports exactly the ranges that
    /// meet a byte claimed before, across word boundaries too. (After a refusal the bitmap
    /// is partly marked, and compaction stops there; so does the test.)
    #[test]
    fn claim_matches_a_byte_model(ranges in vec((0usize..300, 1usize..80), 1..40)) {
        let mut bits = vec![0u64; 380usize.div_ceil(64)];
        let mut model = vec![false; 380];
        for (at, len) in ranges {
            let free = model[at..at + len].iter().all(|&b| !b);
            let claimed = edit::claim(&mut bits, at, len);
            prop_assert_eq!(claimed, free, "{}+{}", at, len);
            if !free {
                break;
            }
            model[at..at + len].iter_mut().for_each(|b| *b = true);
        }
    }
}

#[test]
fn compaction_lays_records_in_slot_order_and_refuses_overlaps() {
    let mut buf = vec![0u8; 4096];
    let mut s = init_hinted(buf.as_mut_slice(), ID, PageType::BTreeLeaf, 40);
    // Inserted in reverse slot order, so the heap holds them backwards.
    for (i, len) in [(0, 30), (0, 20), (0, 10)] {
        s.insert_hinted(i, &record(len, len as u8), 0)
            .unwrap()
            .unwrap();
    }
    s.delete(1).unwrap(); // a 20-byte hole between the other two
    s.compact().unwrap();
    let v = s.view();
    assert_eq!(v.free_space(), v.free_space_total());
    assert_eq!(v.record_range(0).unwrap(), 4096 - 10..4096);
    assert_eq!(v.record_range(1).unwrap(), 4096 - 40..4096 - 10);
    assert_eq!(
        (v.get(0).unwrap(), v.get(1).unwrap()),
        (record(10, 10), record(30, 30))
    );
    check(buf.as_slice(), ID).unwrap();
    // Slot 1 made to point into slot 0's record: compaction names the overlap and writes
    // nothing.
    let slot1 = SPECIAL_OFFSET + 40 + HINTED_SLOT_SIZE;
    buf[slot1..slot1 + 2].copy_from_slice(&(4096u16 - 35).to_le_bytes());
    let before = buf.clone();
    let mut s = SlottedMut::open(buf.as_mut_slice()).unwrap();
    let (page_id, reason) = corruption_reason(s.compact().unwrap_err());
    assert_eq!(page_id, ID);
    assert!(reason.contains("overlaps"), "{reason}");
    assert!(buf == before, "a refused compaction changed the page");
}

#[test]
fn record_guess_finds_records_laid_in_slot_order() {
    let mut buf = vec![0u8; 8192];
    let mut page = init_hinted(buf.as_mut_slice(), ID, PageType::BTreeLeaf, 40);
    // Two records of other lengths first (a B-tree node's fences, left out of the average),
    // then entries of 100 and 104 bytes alternately, appended in slot order.
    assert_eq!(page.push(&record(60, 200)).unwrap(), Ok(()));
    assert_eq!(page.push(&record(70, 201)).unwrap(), Ok(()));
    let mut n = 0u8;
    while page
        .push(&record(100 + 4 * usize::from(n % 2), n))
        .unwrap()
        .is_ok()
    {
        n += 1;
    }
    assert!(n > 50, "{n} entries");
    let view = Slotted::open(buf.as_slice()).unwrap();
    for slot in 2..view.slot_count() {
        let actual = view.record_range(slot).unwrap();
        let guess = view.guess_record_in_order(2, slot, 0).unwrap();
        assert!(
            guess.contains(&actual.start) && guess.end >= actual.end,
            "slot {slot}: record at {actual:?}, guess {guess:?}"
        );
        // The guess is one record wide (the average, 102 bytes) plus the slack.
        assert!(guess.len() <= 104 + 2 * RECORD_GUESS_SLACK, "{guess:?}");
        // With one record before it: the previous slot's record, which lies above.
        let wider = view.guess_record_in_order(2, slot, 1).unwrap();
        if slot > 2 {
            let above = view.record_range(slot - 1).unwrap();
            assert!(
                wider.start == guess.start && wider.end >= above.end,
                "slot {slot}"
            );
            assert!(wider.len() <= 2 * 104 + 2 * RECORD_GUESS_SLACK, "{wider:?}");
        } else {
            // There is no record before the first of the run.
            assert_eq!(wider, guess);
        }
    }
    assert_eq!(view.guess_record_in_order(2, view.slot_count(), 0), None);
    assert_eq!(view.guess_record_in_order(3, 2, 0), None);
    // Any count of records before is bounded by the run.
    let last = view.slot_count() - 1;
    let all = view.guess_record_in_order(2, last, usize::MAX).unwrap();
    assert!(all.end <= buf.len(), "{all:?}");
}

/// Calls every accessor and mutator on `page` (mutators on a copy). None may panic; on a
/// page that passes `check`, every accessor succeeds and every mutator keeps it valid.
fn exercise(page: &[u8]) -> Result<(), TestCaseError> {
    let valid = check(page, ID).is_ok();
    let mut mutated = page.to_vec();
    let atomic_words = words(page.len());
    AtomicBytesMut::new(&atomic_words).write_from(0, page);
    let atomic = AtomicBytes::new(&atomic_words);
    prop_assert_eq!(check(&atomic, ID).is_ok(), valid);

    if let Ok(view) = Slotted::open(page) {
        let atomic_view = Slotted::open(&atomic).unwrap();
        let mut buf = Vec::new();
        let mut special = [0u8; 16];
        let specials = [
            view.read_special(0, &mut special).is_ok(),
            view.read_special(view.special_len(), &mut special[..0])
                .is_ok(),
            view.read_special(usize::MAX, &mut special).is_ok(),
        ];
        prop_assert_eq!(specials, [view.special_len() >= 16, true, false]);
        let _ = (
            view.free_space(),
            view.free_space_total(),
            view.used_space(),
        );
        let _ = (view.can_fit(0), view.can_fit(usize::MAX), view.page_id());
        for (first, slot) in [(0, 0), (2, 2), (0, view.slot_count().saturating_sub(1))] {
            for before in [0, 2, usize::MAX] {
                if let Some(r) = view.guess_record_in_order(first, slot, before) {
                    prop_assert!(r.start <= r.end && r.end <= page.len(), "{:?}", r);
                }
                view.prefetch_record_in_order(first, slot, before);
            }
        }
        for slot in 0..view.slot_count() + 2 {
            let got = view.get(slot);
            if valid {
                prop_assert_eq!(got.is_ok(), slot < view.slot_count());
            }
            let _ = view.get_slice(slot);
            let _ = view.record_len(slot);
            let _ = view.read_record(slot, &mut buf);
            let _ = view.compare(slot, b"key");
            let _ = view.compare(slot, &page[..300]);
            prop_assert_eq!(got.ok(), atomic_view.get(slot).ok());
        }
    } else {
        prop_assert!(!valid);
    }

    // Each mutator with the record bytes and the slots it needs room for.
    type Mutator = fn(&mut SlottedMut<'_, [u8]>) -> Result<Result<(), NoRoom>>;
    let ops: [(usize, usize, Mutator); 10] = [
        (10, 1, |s| s.insert(0, b"0123456789")),
        // Usually the record just inserted, the lowest in the heap: `free_end` rises.
        (0, 0, |s| s.delete(0).map(Ok)),
        (300, 1, |s| s.push(&[7u8; 300])),
        (2000, 0, |s| s.update(0, &[1u8; 2000])),
        (0, 0, |s| s.update(0, b"")),
        (0, 0, |s| s.delete(s.slot_count().saturating_sub(1)).map(Ok)),
        (0, 0, |s| s.compact().map(Ok)),
        (0, 0, |s| s.write_special(0, &[9u8; 4]).map(Ok)),
        (503, 2, |s| {
            s.extend_hinted([(b"abc".as_slice(), 1), (&[5u8; 500][..], 2)])
        }),
        (0, 0, |s| s.truncate(s.slot_count() / 2).map(Ok)),
    ];
    // All mutators on one view, so that a state the view keeps in memory (never re-read from
    // the page) is exercised too.
    let Ok(mut s) = SlottedMut::open(mutated.as_mut_slice()) else {
        prop_assert!(!valid);
        return Ok(());
    };
    for _round in 0..2 {
        for (i, &(bytes, slots, op)) in ops.iter().enumerate() {
            let view = s.view();
            let (n, free_total) = (view.slot_count(), view.free_space_total());
            let needed = bytes + slots * view.slot_size();
            let before = view.page().to_vec();
            let result = op(&mut s);
            let view = s.view();
            // Every mutator leaves the page as it was when it fails or finds no room.
            if !matches!(result, Ok(Ok(()))) {
                prop_assert!(view.page() == &before[..], "mutator {} changed the page", i);
            }
            let _ = (
                view.free_space(),
                view.free_space_total(),
                view.used_space(),
            );
            let _ = (view.can_fit(100), view.get(0), view.compare(0, b"k"));
            if valid {
                match result {
                    Ok(Ok(())) => {}
                    // `needed` overstates an update's need by the old record's length.
                    Ok(Err(_)) => prop_assert!(needed > free_total),
                    Err(Error::InvalidArgument { .. }) => prop_assert_eq!(n, 0),
                    Err(Error::Corruption { .. }) => {
                        prop_assert!(i == 7 && view.special_len() < 4)
                    }
                    Err(e) => prop_assert!(false, "unexpected error {}", e),
                }
                check(view.page(), ID).map_err(|e| TestCaseError::fail(e.to_string()))?;
            }
        }
    }
    Ok(())
}

/// Builds a valid page from `ops`, then overwrites slotted header fields with `patches`
/// (field number, value) and bytes with `flips` (near the headers?, position, value).
fn corrupted_page(
    page_len: usize,
    special: usize,
    ops: &[Op],
    flips: &[(bool, usize, u8)],
    patches: &[(usize, u32)],
) -> Vec<u8> {
    let mut page = vec![0u8; page_len];
    init(page.as_mut_slice(), ID, PageType::BTreeLeaf, special);
    for op in ops {
        apply(page.as_mut_slice(), op);
    }
    let slots_end = Slotted::open(page.as_slice()).unwrap().head().free_start();
    for &(field, value) in patches {
        // slot_count, free_start, free_end, frag_bytes or special_len: plausible values.
        let pos = HEADER_SIZE + 2 * (field % 5);
        let value = (value as usize % (page_len + 1)) as u16;
        page[pos..pos + 2].copy_from_slice(&value.to_le_bytes());
    }
    for &(near, pos, value) in flips {
        let pos = if near {
            HEADER_SIZE + pos % (slots_end - HEADER_SIZE + 8)
        } else {
            pos % page_len
        };
        page[pos] = value;
    }
    page
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Valid pages with a few bytes overwritten: the checks must catch whatever matters.
    #[test]
    fn corrupted_pages_never_panic(
        big in any::<bool>(),
        special in 0..=32usize,
        ops in vec(op_strategy(600), 0..60),
        flips in vec((any::<bool>(), any::<usize>(), any::<u8>()), 0..6),
        patches in vec((any::<usize>(), any::<u32>()), 0..2),
    ) {
        let page_len = if big { 65536 } else { 4096 };
        exercise(&corrupted_page(page_len, special, &ops, &flips, &patches))?;
    }

    /// Random bytes, with the common and slotted headers optionally made plausible so that
    /// the slot checks are reached.
    #[test]
    fn random_bytes_never_panic(
        bytes in vec(any::<u8>(), 4096),
        plausible in any::<bool>(),
        slot_count in 0..64u16,
        special in 0..=16u16,
        free_end in any::<u16>(),
        frag in 0..4096u16,
    ) {
        let mut page = bytes;
        if plausible {
            page[4..6].copy_from_slice(&PAGE_FORMAT_VERSION.to_le_bytes());
            page[6] = PageType::BTreeLeaf as u8;
            page[8..16].copy_from_slice(&ID.0.to_le_bytes());
            let free_start = SPECIAL_OFFSET as u16 + special + 4 * slot_count;
            let free_end = free_start + free_end % (4096 - free_start + 1);
            for (i, v) in [slot_count, free_start, free_end, frag, special].iter().enumerate() {
                page[32 + 2 * i..34 + 2 * i].copy_from_slice(&v.to_le_bytes());
            }
            page[42..48].fill(0);
        }
        exercise(&page)?;
    }
}
