//! Lock names: hierarchy, equality of long keys, hashing, printing.

use super::super::{EdgeKind, LockName, NameKind, INLINE_BYTES};

#[test]
fn parents_follow_the_hierarchy() {
    let r = LockName::row(3, 9, 42);
    assert_eq!(r.parent(), Some(LockName::table(3, 9)));
    assert_eq!(LockName::table(3, 9).parent(), Some(LockName::database(3)));
    assert_eq!(LockName::database(3).parent(), None);
    let k = LockName::key(3, 9, b"abc");
    assert_eq!(k.parent(), Some(LockName::table(3, 9)));
    let e = LockName::edge(3, 5, &[1, 5, 3], EdgeKind::NextSibling);
    assert_eq!(e.parent(), Some(LockName::node(3, 5, &[1, 5, 3])));
    assert_eq!(
        e.parent().and_then(|n| n.parent()),
        Some(LockName::document(3, 5))
    );
    assert_eq!(
        LockName::document(3, 5).parent(),
        Some(LockName::database(3))
    );
    assert_eq!(e.edge_kind(), Some(EdgeKind::NextSibling));
    assert_eq!(r.row_id(), Some(42));
    assert_eq!(k.kind(), NameKind::Key);
    assert!(r.is_row_level() && k.is_row_level() && !LockName::table(3, 9).is_row_level());
    assert!(LockName::table(1, 1).is_fast_path_eligible());
    assert!(!r.is_fast_path_eligible());
}

#[test]
fn names_differ_by_every_field() {
    let all = [
        LockName::database(1),
        LockName::database(2),
        LockName::table(1, 1),
        LockName::table(1, 2),
        LockName::table(2, 1),
        LockName::row(1, 1, 1),
        LockName::row(1, 1, 2),
        LockName::row(1, 2, 1),
        LockName::key(1, 1, b""),
        LockName::key(1, 1, b"a"),
        LockName::key(1, 1, b"a\0"),
        LockName::document(1, 1),
        LockName::node(1, 1, b"a"),
        LockName::edge(1, 1, b"a", EdgeKind::FirstChild),
        LockName::edge(1, 1, b"a", EdgeKind::LastChild),
    ];
    for (i, a) in all.iter().enumerate() {
        for (j, b) in all.iter().enumerate() {
            assert_eq!(a == b, i == j, "{a} vs {b}");
            if i != j {
                assert_ne!(a.hash64(), b.hash64(), "{a} vs {b}");
            }
        }
    }
}

#[test]
fn long_keys_compare_by_their_full_bytes() {
    for len in [
        0,
        1,
        7,
        8,
        9,
        INLINE_BYTES - 1,
        INLINE_BYTES,
        INLINE_BYTES + 1,
        100,
        5000,
    ] {
        let a: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
        let mut b = a.clone();
        let x = LockName::key(1, 2, &a);
        let y = LockName::key(1, 2, &b);
        assert_eq!(x, y);
        assert_eq!(x.hash64(), y.hash64());
        assert_eq!(x.bytes(), &a[..]);
        assert_eq!(x.clone(), x);
        if len > 0 {
            // The last byte differs: equal only if the whole key is compared.
            *b.last_mut().unwrap_or(&mut 0) ^= 1;
            assert_ne!(x, LockName::key(1, 2, &b));
        }
    }
}

#[test]
fn hashes_spread_over_buckets() {
    // 1M consecutive row ids over 4096 buckets: every bucket used, none more than 2x the mean.
    let mut counts = vec![0u32; 4096];
    for r in 0..1_000_000u64 {
        counts[(LockName::row(1, 1, r).hash64() & 4095) as usize] += 1;
    }
    let mean = 1_000_000 / 4096;
    assert!(
        counts.iter().all(|&c| c > mean / 2 && c < mean * 2),
        "{:?}",
        counts.iter().max()
    );
}

#[test]
fn names_print_readably() {
    assert_eq!(LockName::row(1, 7, 42).to_string(), "db1.table7.row42");
    assert_eq!(
        LockName::key(1, 7, &[0xab, 1]).to_string(),
        "db1.table7.key[ab01]"
    );
    let long = LockName::key(1, 7, &[0; 40]).to_string();
    assert!(long.ends_with("..(40 bytes)]"), "{long}");
    assert_eq!(
        LockName::edge(2, 3, &[1], EdgeKind::NextSibling).to_string(),
        "db2.doc3.node[01].NextSibling"
    );
}

#[test]
fn keys_that_differ_in_their_last_byte_get_consecutive_places() {
    let key = |i: u64| {
        let mut k = vec![0x80u8];
        k.extend_from_slice(&i.to_be_bytes());
        k
    };
    // A bulk insert's keys: runs of consecutive places, restarting at every carry.
    for run in [0u64, 256, 70_144] {
        let base = LockName::key(1, 9, &key(run)).place();
        for i in 1..256 {
            assert_eq!(
                LockName::key(1, 9, &key(run + i)).place(),
                base.wrapping_add(i as u32)
            );
        }
    }
    // The same key in another table or database, or another kind, is placed elsewhere;
    // equal names are placed alike.
    let k = key(5);
    let p = LockName::key(1, 9, &k).place();
    assert_eq!(LockName::key(1, 9, &k).place(), p);
    assert_ne!(LockName::key(1, 8, &k).place(), p);
    assert_ne!(LockName::key(2, 9, &k).place(), p);
    assert_ne!(LockName::node(1, 9, &k).place(), p);
    // The hash still depends on the last byte and does not run in steps.
    let (a, b) = (LockName::key(1, 9, &key(1)), LockName::key(1, 9, &key(2)));
    assert_ne!(a.hash64(), b.hash64());
    assert_ne!(a.hash64().wrapping_add(1), b.hash64());
}

#[test]
fn places_of_scattered_keys_spread_over_buckets() {
    // 1M keys of a composite shape (two 4-byte ids) in random order over 4096 buckets:
    // none more than 2x the mean, none below half of it.
    let mut counts = vec![0u32; 4096];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..1_000_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let mut k = (x as u32).to_be_bytes().to_vec();
        k.extend_from_slice(&((x >> 32) as u32).to_be_bytes());
        counts[(LockName::key(1, 3, &k).place() & 4095) as usize] += 1;
    }
    let mean = 1_000_000 / 4096;
    assert!(
        counts.iter().all(|&c| c > mean / 2 && c < mean * 2),
        "{:?}",
        counts.iter().min().zip(counts.iter().max())
    );
}
