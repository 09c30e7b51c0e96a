use super::*;
use crate::page::header;

#[test]
fn payload_round_trip_through_the_resource_manager() {
    let mut page = vec![0u8; 4096];
    slotted::init(&mut page[..], PageId(3), PageType::Slotted, 0);
    let words: Vec<std::sync::atomic::AtomicU64> = (0..512)
        .map(|_| std::sync::atomic::AtomicU64::new(0))
        .collect();
    let mut m = AtomicBytesMut::new(&words);
    crate::page::PageWrite::write_from(&mut m, 0, &page);
    let rm = KvStoreRm;
    let lsn = Lsn(64);
    rm.redo(lsn, PageId(3), &payload(OP_ADD, 5, 1, b"abc"), &mut m)
        .unwrap();
    rm.redo(lsn, PageId(3), &payload(OP_ADD, 2, 1, b"xyz"), &mut m)
        .unwrap();
    assert!(rm
        .redo(lsn, PageId(3), &payload(OP_ADD, 5, 1, b"abc"), &mut m)
        .is_err());
    rm.redo(lsn, PageId(3), &payload(OP_PUT, 5, 0, b"abd"), &mut m)
        .unwrap();
    assert!(rm
        .redo(lsn, PageId(3), &payload(OP_PUT, 5, 0, b"ab"), &mut m)
        .is_err());
    assert!(rm
        .redo(lsn, PageId(3), &payload(OP_REMOVE, 9, 0, b""), &mut m)
        .is_err());
    assert!(rm
        .redo(
            lsn,
            PageId(3),
            &[RM_KVSTORE, 99, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            &mut m
        )
        .is_err());
    assert!(rm.redo(lsn, PageId(3), &[RM_KVSTORE], &mut m).is_err());
    let v = Slotted::open(&m).unwrap();
    assert_eq!(v.slot_count(), 2);
    assert_eq!(key_of(&v.get(0).unwrap()), 2);
    assert_eq!(v.get(1).unwrap()[8..], [0, b'a', b'b', b'd']);
    rm.redo(lsn, PageId(3), &payload(OP_REMOVE, 2, 0, b""), &mut m)
        .unwrap();
    assert_eq!(Slotted::open(&m).unwrap().slot_count(), 1);
    assert_eq!(header::page_id(&m), PageId(3));
}
