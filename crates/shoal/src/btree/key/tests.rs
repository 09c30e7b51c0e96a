//! Tests of the key encoding: the order it preserves against a reference order written
//! independently of it, round trips, and decoding of damaged keys.

use super::*;
use proptest::prelude::*;
use std::cmp::Ordering;

// --- The reference order (invariant 1), written independently of the encoding. ---------

/// Field order: NULL first, then the type's own order; floats by total order.
fn cmp_value(a: &KeyValue, b: &KeyValue) -> Ordering {
    use KeyValue::*;
    match (a, b) {
        (Null, Null) => Ordering::Equal,
        (Null, _) => Ordering::Less,
        (_, Null) => Ordering::Greater,
        (Bool(a), Bool(b)) => a.cmp(b),
        (U32(a), U32(b)) => a.cmp(b),
        (U64(a), U64(b)) => a.cmp(b),
        (I32(a), I32(b)) => a.cmp(b),
        (I64(a), I64(b)) => a.cmp(b),
        (F64(a), F64(b)) => a.total_cmp(b),
        (Str(a), Str(b)) => a.cmp(b),
        (Bytes(a), Bytes(b)) => a.cmp(b),
        _ => panic!("fields of different types: {a:?} vs {b:?}"),
    }
}

/// Tuple order: field by field (reversed for descending fields), then the shorter first.
fn cmp_tuple(schema: &[Field], a: &[KeyValue], b: &[KeyValue]) -> Ordering {
    for ((field, x), y) in schema.iter().zip(a).zip(b) {
        let o = match field.dir {
            Direction::Asc => cmp_value(x, y),
            Direction::Desc => cmp_value(x, y).reverse(),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

fn enc(schema: &[Field], values: &[KeyValue]) -> Vec<u8> {
    let mut out = Vec::new();
    for (field, v) in schema.iter().zip(values) {
        encode_value(&mut out, v, field.dir);
    }
    out
}

// --- Strategies: edge values are over-weighted so that ties and boundaries occur. -------

fn key_type() -> impl Strategy<Value = KeyType> {
    prop_oneof![
        Just(KeyType::Bool),
        Just(KeyType::U32),
        Just(KeyType::U64),
        Just(KeyType::I32),
        Just(KeyType::I64),
        Just(KeyType::F64),
        Just(KeyType::Str),
        Just(KeyType::Bytes),
    ]
}

fn field() -> impl Strategy<Value = Field> {
    (key_type(), any::<bool>()).prop_map(|(ty, desc)| if desc { ty.desc() } else { ty.asc() })
}

fn present(ty: KeyType) -> BoxedStrategy<KeyValue> {
    match ty {
        KeyType::Bool => any::<bool>().prop_map(KeyValue::Bool).boxed(),
        KeyType::U32 => prop_oneof![
            prop::sample::select(vec![0, 1, 1 << 31, u32::MAX - 1, u32::MAX]),
            0u32..4,
            prop::sample::select(vec![
                237,
                238,
                255,
                256,
                0xFFFF,
                0x1_0000,
                0xFF_FFFF,
                1 << 24
            ]),
            any::<u32>(),
        ]
        .prop_map(KeyValue::U32)
        .boxed(),
        KeyType::U64 => prop_oneof![
            prop::sample::select(vec![0, 1, 1 << 63, u64::MAX - 1, u64::MAX]),
            0u64..4,
            prop::sample::select(vec![237, 238, 255, 256, 1 << 32, (1 << 56) - 1, 1 << 56]),
            any::<u64>(),
        ]
        .prop_map(KeyValue::U64)
        .boxed(),
        KeyType::I32 => prop_oneof![
            prop::sample::select(vec![i32::MIN, i32::MIN + 1, -1, 0, 1, i32::MAX]),
            -3i32..3,
            prop::sample::select(vec![
                -257, -256, -255, 237, 238, -0x1_0000, -0x1_0001, 0xFFFF
            ]),
            any::<i32>(),
        ]
        .prop_map(KeyValue::I32)
        .boxed(),
        KeyType::I64 => prop_oneof![
            prop::sample::select(vec![i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX]),
            -3i64..3,
            prop::sample::select(vec![
                -257,
                -256,
                237,
                238,
                -(1 << 55),
                -(1 << 55) - 1,
                1 << 40
            ]),
            any::<i64>(),
        ]
        .prop_map(KeyValue::I64)
        .boxed(),
        KeyType::F64 => prop_oneof![
            prop::sample::select(vec![
                0.0,
                -0.0,
                f64::NAN,
                -f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::MIN_POSITIVE,
                -f64::MIN_POSITIVE,
                f64::from_bits(1),
                f64::MAX,
                f64::MIN,
            ]),
            (-4i32..4).prop_map(|i| f64::from(i) / 2.0),
            any::<u64>().prop_map(f64::from_bits),
        ]
        .prop_map(KeyValue::F64)
        .boxed(),
        KeyType::Str => prop::collection::vec(
            prop_oneof![
                Just('\0'),
                Just('a'),
                Just('b'),
                Just('\u{FF}'),
                Just('\u{10FFFF}'),
                any::<char>(),
            ],
            0..5,
        )
        .prop_map(|cs| KeyValue::Str(cs.into_iter().collect()))
        .boxed(),
        KeyType::Bytes => prop::collection::vec(
            prop_oneof![Just(0u8), Just(1), Just(0xFE), Just(0xFF), any::<u8>()],
            0..6,
        )
        .prop_map(KeyValue::Bytes)
        .boxed(),
    }
}

fn value(ty: KeyType) -> BoxedStrategy<KeyValue> {
    prop_oneof![1 => Just(KeyValue::Null), 6 => present(ty)].boxed()
}

fn tuple(schema: &[Field]) -> Vec<BoxedStrategy<KeyValue>> {
    schema.iter().map(|f| value(f.ty)).collect()
}

/// A schema and two tuples of it, each cut to a random length (prefix tuples).
fn two_tuples(
    schema: impl Strategy<Value = Vec<Field>>,
) -> impl Strategy<Value = (Vec<Field>, Vec<KeyValue>, Vec<KeyValue>)> {
    schema.prop_flat_map(|s| {
        let n = s.len();
        (
            Just(s.clone()),
            tuple(&s),
            tuple(&s),
            0..=n,
            0..=n,
            any::<bool>(),
        )
            .prop_map(|(s, mut a, mut b, la, lb, cut)| {
                if cut {
                    a.truncate(la);
                    b.truncate(lb);
                }
                (s, a, b)
            })
    })
}

/// Schemas of one to three fields of a single type, either direction.
fn single_type_schema() -> impl Strategy<Value = Vec<Field>> {
    (key_type(), prop::collection::vec(any::<bool>(), 1..=3)).prop_map(|(ty, dirs)| {
        dirs.into_iter()
            .map(|d| if d { ty.desc() } else { ty.asc() })
            .collect()
    })
}

/// Checks invariants 1 and 3 on one pair.
fn check_pair(schema: &[Field], a: &[KeyValue], b: &[KeyValue]) -> Result<(), TestCaseError> {
    let (ea, eb) = (enc(schema, a), enc(schema, b));
    prop_assert_eq!(ea.cmp(&eb), cmp_tuple(schema, a, b), "{:?} vs {:?}", a, b);
    // Invariant 2: the encoding of a prefix tuple is a byte prefix.
    if a.len() <= b.len() && a == &b[..a.len()] {
        prop_assert!(eb.starts_with(&ea));
    }
    let da = decode(&ea, &schema[..a.len()]).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&da[..], a);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Invariant 1 per type: encoded order is value order, both directions.
    #[test]
    fn order_single_type((schema, a, b) in two_tuples(single_type_schema())) {
        check_pair(&schema, &a, &b)?;
    }

    /// Invariant 1 on composite keys of mixed types and directions, prefixes included.
    #[test]
    fn order_composite((schema, a, b) in two_tuples(prop::collection::vec(field(), 0..5))) {
        check_pair(&schema, &a, &b)?;
    }

    /// Decoding any bytes returns a value or an error, never a panic; what it accepts is
    /// exactly an encoding (invariant 3).
    #[test]
    fn decode_arbitrary_bytes(
        schema in prop::collection::vec(field(), 0..4),
        bytes in prop::collection::vec(
            prop_oneof![Just(0u8), Just(1), Just(0xFE), Just(0xFF), any::<u8>()], 0..40),
    ) {
        if let Ok(values) = decode(&bytes, &schema) {
            prop_assert_eq!(enc(&schema, &values), bytes);
        }
    }

    /// Valid keys with one byte changed, cut or inserted: no panic, and canonical.
    #[test]
    fn decode_mutated_keys(
        (schema, a, _b) in two_tuples(prop::collection::vec(field(), 1..4)),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        how in 0..3,
    ) {
        let mut bytes = enc(&schema, &a);
        if !bytes.is_empty() {
            let i = at.index(bytes.len());
            match how {
                0 => bytes[i] = byte,
                1 => bytes.truncate(i),
                _ => bytes.insert(i, byte),
            }
        }
        if let Ok(values) = decode(&bytes, &schema) {
            prop_assert_eq!(enc(&schema, &values), bytes);
        }
    }

    /// Invariant 5: `[p, prefix_successor(p))` holds exactly the keys that start with `p`.
    #[test]
    fn prefix_successor_bounds(
        p in prop::collection::vec(prop_oneof![Just(0xFFu8), Just(0), any::<u8>()], 0..5),
        k in prop::collection::vec(prop_oneof![Just(0xFFu8), Just(0), any::<u8>()], 0..7),
    ) {
        let below_successor = match prefix_successor(&p) {
            Some(s) => k < s,
            None => true,
        };
        let in_range = k >= p && below_successor;
        prop_assert_eq!(in_range, k.starts_with(&p), "p={:?} k={:?}", p, k);
    }
}

// --- Edge cases. ---------------------------------------------------------------------------

/// Encodes each value alone (ascending) and checks the encodings sort in the given order.
fn assert_strictly_ascending(values: &[KeyValue]) {
    let encoded: Vec<Vec<u8>> = values
        .iter()
        .map(|v| encode(std::slice::from_ref(v)))
        .collect();
    for (i, pair) in encoded.windows(2).enumerate() {
        assert!(
            pair[0] < pair[1],
            "{:?} should sort before {:?}",
            values[i],
            values[i + 1]
        );
    }
    for (v, e) in values.iter().zip(&encoded) {
        let ty = v.key_type().unwrap_or(KeyType::U64);
        assert_eq!(&decode(e, &[ty]).unwrap()[0], v);
    }
}

#[test]
fn layout_matches_the_table() {
    let key = KeyBuilder::new().u64(5).str("a\0b").null().finish();
    assert_eq!(key, [0x0E, 1, b'a', 0, 0xFF, b'b', 0, 0, 0]);
    assert_eq!(KeyBuilder::new().bool(true).finish(), [1, 1]);
    // Integers: the header alone up to 237, then a header naming the payload's length.
    assert_eq!(
        KeyBuilder::new().u32(0x0102_0304).finish(),
        [0xFA, 1, 2, 3, 4]
    );
    assert_eq!(KeyBuilder::new().i32(0).finish(), [0x09]);
    assert_eq!(KeyBuilder::new().i32(237).finish(), [0xF6]);
    assert_eq!(KeyBuilder::new().i32(238).finish(), [0xF7, 238]);
    assert_eq!(KeyBuilder::new().i32(256).finish(), [0xF8, 1, 0]);
    assert_eq!(KeyBuilder::new().i32(-1).finish(), [0x08, 0xFF]);
    assert_eq!(KeyBuilder::new().i32(-256).finish(), [0x08, 0x00]);
    assert_eq!(KeyBuilder::new().i32(-257).finish(), [0x07, 0xFE, 0xFF]);
    assert_eq!(
        KeyBuilder::new().i64(i64::MIN).finish(),
        [0x01, 0x80, 0, 0, 0, 0, 0, 0, 0]
    );
    assert_eq!(
        KeyBuilder::new().u64(u64::MAX).finish(),
        [0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
    );
    // The same value has the same bytes whatever its integer type.
    assert_eq!(
        KeyBuilder::new().u64(70_000).finish(),
        KeyBuilder::new().i32(70_000).finish()
    );
    assert_eq!(
        KeyBuilder::new().f64(0.0).finish(),
        [1, 0x80, 0, 0, 0, 0, 0, 0, 0]
    );
    assert_eq!(
        KeyBuilder::new().f64(-0.0).finish(),
        [1, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
    );
    assert_eq!(KeyBuilder::new().str("").finish(), [1, 0, 0]);
    // Descending: every byte inverted, tag included.
    assert_eq!(KeyBuilder::new().desc().u32(1).finish(), [!0x0A]);
    assert_eq!(KeyBuilder::new().desc().u32(300).finish(), [!0xF8, !1, !44]);
    assert_eq!(KeyBuilder::new().desc().null().finish(), [0xFF]);
    assert_eq!(
        KeyBuilder::new().desc().bytes(&[0]).finish(),
        [0xFE, 0xFF, 0, 0xFF, 0xFF]
    );
    // The builder and `encode` agree.
    let values = [
        KeyValue::I64(-7),
        KeyValue::Bytes(vec![0, 0xFF]),
        KeyValue::Null,
    ];
    let built = KeyBuilder::new().i64(-7).bytes(&[0, 0xFF]).null().finish();
    assert_eq!(encode(&values), built);
}

#[test]
fn null_sorts_before_every_value_of_every_type() {
    let null = encode(&[KeyValue::Null]);
    for v in [
        KeyValue::Bool(false),
        KeyValue::U32(0),
        KeyValue::U64(0),
        KeyValue::I32(i32::MIN),
        KeyValue::I64(i64::MIN),
        KeyValue::F64(-f64::NAN),
        KeyValue::Str(String::new()),
        KeyValue::Bytes(Vec::new()),
    ] {
        assert!(null < encode(std::slice::from_ref(&v)), "{v:?}");
        let desc = KeyBuilder::new().desc().value(&v).finish();
        assert!(
            KeyBuilder::new().desc().null().finish() > desc,
            "{v:?} desc"
        );
    }
}

#[test]
fn integer_extremes() {
    let i64s = [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX];
    assert_strictly_ascending(&i64s.map(KeyValue::I64));
    let i32s = [i32::MIN, -256, -1, 0, 1, 256, i32::MAX];
    assert_strictly_ascending(&i32s.map(KeyValue::I32));
    assert_strictly_ascending(&[0, 1, 255, 256, u64::MAX].map(KeyValue::U64));
    assert_strictly_ascending(&[0, 1, 255, 256, u32::MAX].map(KeyValue::U32));
    assert_strictly_ascending(&[false, true].map(KeyValue::Bool));
}

#[test]
fn floats_by_total_order() {
    let nan_payload = f64::from_bits(0x7FF8_0000_0000_0123);
    let floats = [
        -f64::NAN,
        f64::NEG_INFINITY,
        f64::MIN,
        -1.0,
        -f64::MIN_POSITIVE,
        -f64::from_bits(1),
        -0.0,
        0.0,
        f64::from_bits(1),
        f64::MIN_POSITIVE,
        1.0,
        f64::MAX,
        f64::INFINITY,
        f64::NAN,
        nan_payload,
    ];
    assert_strictly_ascending(&floats.map(KeyValue::F64));
    // Round trip keeps the exact bits: the sign of zero and the NaN payload.
    for f in floats {
        let back = decode(&KeyBuilder::new().f64(f).finish(), &[KeyType::F64]).unwrap();
        match back[0] {
            KeyValue::F64(g) => assert_eq!(g.to_bits(), f.to_bits()),
            ref other => panic!("{other:?}"),
        }
    }
    assert_ne!(KeyValue::F64(0.0), KeyValue::F64(-0.0));
    assert_eq!(KeyValue::F64(f64::NAN), KeyValue::F64(f64::NAN));
}

#[test]
fn strings_with_zero_and_ff_bytes() {
    let bytes: [&[u8]; 9] = [
        b"",
        &[0],
        &[0, 0],
        &[0, 0xFF],
        &[1],
        &[0xFE, 0xFF],
        &[0xFF],
        &[0xFF, 0],
        &[0xFF, 0xFF],
    ];
    assert_strictly_ascending(&bytes.map(|b| KeyValue::Bytes(b.to_vec())));
    let strs = [
        "",
        "\0",
        "\0\0",
        "\0a",
        "a",
        "a\0",
        "ab",
        "\u{FF}",
        "\u{10FFFF}",
    ];
    assert_strictly_ascending(&strs.map(|s| KeyValue::Str(s.to_string())));
}

#[test]
fn string_prefix_sorts_first_inside_a_composite() {
    // ("ab", MAX) < ("ab\0", 0) < ("ab\0", MAX) < ("abc", 0), whatever follows the string.
    let keys = [
        KeyBuilder::new().str("ab").u64(u64::MAX).finish(),
        KeyBuilder::new().str("ab\0").u64(0).finish(),
        KeyBuilder::new().str("ab\0").u64(u64::MAX).finish(),
        KeyBuilder::new().str("abc").u64(0).finish(),
    ];
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
    // The same when the next field is descending and starts with 0xFF/0xFE.
    let a = KeyBuilder::new().str("ab").desc().null().finish();
    let b = KeyBuilder::new().str("ab\0").desc().null().finish();
    assert!(a < b);
    // A prefix tuple sorts before its extensions and is their byte prefix.
    let short = KeyBuilder::new().str("ab").finish();
    assert!(short < keys[0] && keys[0].starts_with(&short));
    // The prefix's successor bounds exactly the keys with that string field.
    let succ = prefix_successor(&short).unwrap();
    assert!(keys[0] < succ && keys[1] > succ);
    let schema = [KeyType::Str, KeyType::U64];
    assert_eq!(
        decode(&keys[1], &schema).unwrap(),
        [KeyValue::Str("ab\0".into()), KeyValue::U64(0)]
    );
}

#[test]
fn prefix_successor_cases() {
    assert_eq!(prefix_successor(&[]), None);
    assert_eq!(prefix_successor(&[0xFF, 0xFF]), None);
    assert_eq!(prefix_successor(&[0]), Some(vec![1]));
    assert_eq!(prefix_successor(&[1, 0xFE]), Some(vec![1, 0xFF]));
    assert_eq!(prefix_successor(&[1, 0xFF, 0xFF]), Some(vec![2]));
}

/// The reason of a corruption error, or a panic if `r` is anything else.
fn corruption_reason(r: Result<Vec<KeyValue>>) -> (PageId, String) {
    match r {
        Err(Error::Corruption { page_id, reason }) => (page_id, reason),
        other => panic!("expected a corruption error, got {other:?}"),
    }
}

#[test]
fn malformed_keys_are_corruption_errors() {
    let cases: [(&[u8], KeyType, &str); 20] = [
        (&[], KeyType::U64, "before the tag"),
        (&[0xFA, 0, 0], KeyType::U64, "ends inside an integer"),
        (&[0x01, 0xFF], KeyType::I64, "ends inside an integer"),
        (&[0xFF], KeyType::I32, "integer header 0xff"),
        (
            &[0x08, 0x80],
            KeyType::U32,
            "negative integer in an unsigned field",
        ),
        // Not the shortest form (invariant 3): 5 in a payload byte, 255 in two, -1 in two.
        (&[0xF7, 5], KeyType::I32, "not its shortest form"),
        (&[0xF8, 0, 0xFF], KeyType::U64, "not its shortest form"),
        (&[0x07, 0xFF, 0xFF], KeyType::I64, "not its shortest form"),
        (
            &[0x01, 0, 0, 0, 0, 0, 0, 0, 0],
            KeyType::I64,
            "negative header 0x01 on 0",
        ),
        // Out of the type's range.
        (&[0xFB, 1, 0, 0, 0, 0], KeyType::U32, "out of range for U32"),
        (&[0xFA, 0x80, 0, 0, 0], KeyType::I32, "out of range for I32"),
        (
            &[0x04, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF],
            KeyType::I32,
            "out of range for I32",
        ),
        (
            &[0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0],
            KeyType::I64,
            "out of range for I64",
        ),
        (&[2], KeyType::Str, "tag 0x02"),
        (&[1, 2], KeyType::Bool, "bool byte 0x02"),
        (&[1, b'a', 0, 1], KeyType::Bytes, "bad escape"),
        (&[1, b'a'], KeyType::Str, "no terminator"),
        (&[1, b'a', 0], KeyType::Str, "inside an escape"),
        (&[1, 0xC3, 0, 0], KeyType::Str, "not UTF-8"),
        (&[0, 0], KeyType::Str, "1 bytes left"),
    ];
    for (bytes, ty, want) in cases {
        let (page_id, reason) = corruption_reason(decode(bytes, &[ty]));
        assert_eq!(page_id, PageId::INVALID);
        assert!(reason.contains(want), "{bytes:?} as {ty:?}: {reason}");
    }
    // The message names the field and the offset; `decode_in_page` names the page.
    let key = KeyBuilder::new().u32(1).bytes(&[1, 2]).finish();
    let (page_id, reason) = corruption_reason(decode_in_page(
        &key[..key.len() - 1],
        &[KeyType::U32, KeyType::Bytes],
        PageId(42),
    ));
    assert_eq!(page_id, PageId(42));
    assert!(reason.starts_with("key field 1 at byte"), "{reason}");
    // Right bytes, wrong direction.
    let desc = KeyBuilder::new().desc().str("x").finish();
    assert!(decode(&desc, &[KeyType::Str]).is_err());
    assert_eq!(
        decode(&desc, &[KeyType::Str.desc()]).unwrap(),
        [KeyValue::Str("x".into())]
    );
}

#[test]
fn decoder_reads_a_prefix() {
    let key = KeyBuilder::new()
        .i32(-5)
        .desc()
        .str("q")
        .asc()
        .null()
        .finish();
    let mut d = Decoder::new(&key);
    assert_eq!(d.next_field(KeyType::I32).unwrap(), KeyValue::I32(-5));
    assert_eq!(d.remaining().len(), key.len() - 2);
    assert!(d.clone().finish().is_err());
    assert_eq!(
        d.next_field(KeyType::Str.desc()).unwrap(),
        KeyValue::Str("q".into())
    );
    assert_eq!(d.next_field(KeyType::F64).unwrap(), KeyValue::Null);
    assert!(d.finish().is_ok());
}
