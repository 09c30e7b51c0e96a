//! Property tests of the table layer: random schemas and rows round-trip through the row
//! codec and the key codec, key order is the SQL order of each type (module rule 5, checked
//! against a reference comparator written independently of the encoding), and decoding
//! garbage never panics and accepts only canonical encodings.

use std::cmp::Ordering;

use proptest::prelude::*;

use super::*;
use crate::error::Error;

// --- Strategies: small lengths and edge values over-weighted, so limits and ties occur. ---

fn column_type() -> impl Strategy<Value = ColumnType> {
    prop_oneof![
        Just(ColumnType::Bool),
        Just(ColumnType::Int4),
        Just(ColumnType::Int8),
        Just(ColumnType::Float8),
        (1u8..=18)
            .prop_flat_map(|p| (Just(p), 0..=p))
            .prop_map(|(precision, scale)| ColumnType::Decimal { precision, scale }),
        (1u32..4).prop_map(ColumnType::Char),
        (1u32..5).prop_map(ColumnType::Varchar),
        prop_oneof![Just(None), (1u32..4).prop_map(Some)].prop_map(ColumnType::Bytes),
        Just(ColumnType::Timestamp),
    ]
}

/// 1 to 7 columns named `c0`, `c1`, ...; the primary key is a random non-empty subset.
fn table_def() -> impl Strategy<Value = TableDef> {
    prop::collection::vec((column_type(), any::<bool>()), 1..8)
        .prop_flat_map(|cols| {
            let n = cols.len();
            (
                Just(cols),
                prop::sample::subsequence((0..n).collect::<Vec<_>>(), 1..=n.min(3)),
            )
        })
        .prop_flat_map(|(cols, pk)| (Just(cols), Just(pk).prop_shuffle()))
        .prop_map(|(cols, pk)| {
            let columns = cols
                .iter()
                .enumerate()
                .map(|(i, &(ty, nullable))| Column {
                    name: format!("c{i}"),
                    ty,
                    nullable,
                })
                .collect();
            let names: Vec<String> = pk.iter().map(|i| format!("c{i}")).collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            TableDef::new("t", columns, &names).expect("generated definitions are valid")
        })
}

fn text(max_chars: u32) -> impl Strategy<Value = String> {
    let ch = prop_oneof![
        Just(' '),
        Just('a'),
        Just('b'),
        Just('\t'),
        Just('\0'),
        Just('é'),
        Just('\u{10FFFF}'),
        any::<char>(),
    ];
    prop::collection::vec(ch, 0..=max_chars as usize).prop_map(|cs| cs.into_iter().collect())
}

fn present(ty: ColumnType) -> BoxedStrategy<Value> {
    match ty {
        ColumnType::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
        ColumnType::Int4 => prop_oneof![
            prop::sample::select(vec![i32::MIN, -1, 0, 1, i32::MAX]),
            any::<i32>()
        ]
        .prop_map(Value::Int4)
        .boxed(),
        ColumnType::Int8 | ColumnType::Timestamp => prop_oneof![
            prop::sample::select(vec![i64::MIN, -1, 0, 1, i64::MAX]),
            -3i64..3,
            any::<i64>()
        ]
        .prop_map(move |v| {
            if ty == ColumnType::Timestamp {
                Value::Timestamp(v)
            } else {
                Value::Int8(v)
            }
        })
        .boxed(),
        ColumnType::Float8 => prop_oneof![
            prop::sample::select(vec![
                0.0,
                -0.0,
                f64::NAN,
                -f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::MIN_POSITIVE,
                1.0,
                -1.0
            ]),
            any::<u64>().prop_map(f64::from_bits),
        ]
        .prop_map(Value::Float8)
        .boxed(),
        ColumnType::Decimal { precision, scale } => {
            let max = 10i64.pow(u32::from(precision)) - 1;
            (
                prop_oneof![Just(max), Just(-max), -3i64..3, -max..=max],
                0..=scale,
            )
                .prop_map(move |(units, drop)| {
                    // The same number at a smaller scale where that is exact, to exercise
                    // rescaling.
                    let d = Decimal::new(units, scale).unwrap();
                    Value::Decimal(d.rescale(scale - drop).unwrap_or(d))
                })
                .boxed()
        }
        ColumnType::Char(n) | ColumnType::Varchar(n) => text(n).prop_map(Value::Str).boxed(),
        ColumnType::Bytes(max) => prop::collection::vec(
            prop_oneof![Just(0u8), Just(b' '), Just(0xFF), any::<u8>()],
            0..=max.unwrap_or(6) as usize,
        )
        .prop_map(Value::Bytes)
        .boxed(),
    }
}

fn value(column: &Column) -> BoxedStrategy<Value> {
    if column.nullable {
        prop_oneof![1 => Just(Value::Null), 4 => present(column.ty)].boxed()
    } else {
        present(column.ty)
    }
}

fn row_of(def: &TableDef) -> Vec<BoxedStrategy<Value>> {
    def.columns().iter().map(value).collect()
}

/// A definition, two rows of it, and a list of distinct key columns (some of them maybe
/// nullable).
fn def_and_two_rows() -> impl Strategy<Value = (TableDef, Vec<Value>, Vec<Value>, Vec<usize>)> {
    table_def().prop_flat_map(|def| {
        let n = def.columns().len();
        let cols = prop::sample::subsequence((0..n).collect::<Vec<_>>(), 1..=n).prop_shuffle();
        (Just(def.clone()), row_of(&def), row_of(&def), cols)
    })
}

// --- The reference order: SQL's, written without the encodings. ------------------------------

fn sql_cmp(ty: ColumnType, a: &Value, b: &Value) -> Ordering {
    use Value::*;
    match (a, b) {
        (Null, Null) => Ordering::Equal,
        (Null, _) => Ordering::Less,
        (_, Null) => Ordering::Greater,
        (Bool(x), Bool(y)) => x.cmp(y),
        (Int4(x), Int4(y)) => x.cmp(y),
        (Int8(x), Int8(y)) | (Timestamp(x), Timestamp(y)) => x.cmp(y),
        // PostgreSQL: NaNs equal each other and exceed everything; -0 = +0.
        (Float8(x), Float8(y)) => match (x.is_nan(), y.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => x.partial_cmp(y).unwrap(),
        },
        (Decimal(x), Decimal(y)) => x.numeric_cmp(y),
        (Str(x), Str(y)) => match ty {
            // PAD SPACE: the shorter is compared as if padded with spaces.
            ColumnType::Char(_) => {
                let len = x.chars().count().max(y.chars().count());
                let (px, py) = (
                    x.chars().chain(std::iter::repeat(' ')).take(len),
                    y.chars().chain(std::iter::repeat(' ')).take(len),
                );
                px.cmp(py)
            }
            _ => x.chars().cmp(y.chars()),
        },
        (Bytes(x), Bytes(y)) => x.cmp(y),
        _ => panic!("values of different types: {a:?} vs {b:?}"),
    }
}

fn sql_cmp_tuple(def: &TableDef, cols: &[usize], a: &[Value], b: &[Value]) -> Ordering {
    cols.iter()
        .map(|&c| sql_cmp(def.columns()[c].ty, &a[c], &b[c]))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

/// What a key decodes to: FLOAT8 in its key form.
fn key_form(v: &Value) -> Value {
    match v {
        Value::Float8(x) if x.is_nan() => Value::Float8(f64::NAN),
        Value::Float8(x) if *x == 0.0 => Value::Float8(0.0),
        other => other.clone(),
    }
}

fn fail(e: Error) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Rows round-trip: decode(encode(check(row))) == check(row), column by column too.
    #[test]
    fn rows_round_trip((def, a, _b, _cols) in def_and_two_rows()) {
        let norm = def.check_row(&Row::from_values(a.clone())).map_err(fail)?;
        let bytes = encode_row(&def, &norm).map_err(fail)?;
        prop_assert_eq!(&encode_row(&def, &a).map_err(fail)?, &bytes);
        prop_assert_eq!(&decode_row(&def, &bytes).map_err(fail)?, &norm);
        let view = RowView::new(&def, &bytes).map_err(fail)?;
        for (i, v) in norm.iter().enumerate() {
            prop_assert_eq!(&view.value(i).map_err(fail)?, v);
        }
        // Checking is idempotent.
        prop_assert_eq!(&def.check_row(&Row::from_values(norm.clone())).map_err(fail)?, &norm);
    }

    /// An insert's one-pass encoding (each value checked once) is the checked row's primary
    /// key, bytes and index keys, unique and not, for any row — or the same error.
    #[test]
    fn insert_encoding_matches_the_checked_row((def, a, _b, cols) in def_and_two_rows()) {
        let names: Vec<String> = cols.iter().map(|&c| format!("c{c}")).collect();
        let def = def
            .with_index(IndexDef::new("u", names.clone()).unique())
            .and_then(|d| d.with_index(IndexDef::new("n", names)))
            .map_err(fail)?;
        let row = Row::from_values(a);
        let old = def.check_row(&row).and_then(|norm| {
            let pk = def.primary_key_of(&norm)?;
            let bytes = encode_row(&def, &norm)?;
            let ix = (0..2).map(|i| def.index_key_of(i, &norm)).collect::<crate::error::Result<Vec<_>>>()?;
            Ok((pk, bytes, ix))
        });
        match (old, def.insert_encoding(&row)) {
            (Ok((pk, bytes, ix)), Ok(enc)) => {
                prop_assert_eq!(enc.primary_key, pk);
                prop_assert_eq!(enc.row, bytes);
                prop_assert_eq!(enc.index_keys, ix);
            }
            (Err(e), Err(f)) => prop_assert_eq!(e.to_string(), f.to_string()),
            (o, n) => prop_assert!(false, "old {:?}, one pass {:?}", o.is_ok(), n.is_ok()),
        }
    }

    /// Key order is SQL order, and keys decode to the values' key forms.
    #[test]
    fn key_order_is_sql_order((def, a, b, cols) in def_and_two_rows()) {
        let (a, b) = (
            def.check_row(&Row::from_values(a)).map_err(fail)?,
            def.check_row(&Row::from_values(b)).map_err(fail)?,
        );
        let (ka, kb) = (encode_key(&def, &cols, &a).map_err(fail)?, encode_key(&def, &cols, &b).map_err(fail)?);
        prop_assert_eq!(ka.cmp(&kb), sql_cmp_tuple(&def, &cols, &a, &b), "{:?} vs {:?}", a, b);
        let decoded = decode_key(&def, &cols, &ka).map_err(fail)?;
        let expected: Vec<Value> = cols.iter().map(|&c| key_form(&a[c])).collect();
        prop_assert_eq!(decoded, expected);
        // A prefix of the key columns encodes to a byte prefix.
        let prefix: Vec<Value> = cols.iter().take(1).map(|&c| a[c].clone()).collect();
        let p = encode_key_prefix(&def, &cols, &prefix).map_err(fail)?;
        prop_assert!(ka.starts_with(&p));
        // Index keys decode back to their parts.
        let names: Vec<String> = cols.iter().map(|&c| format!("c{c}")).collect();
        for ix in [IndexDef::new("u", names.clone()).unique(), IndexDef::new("n", names)] {
            let d = def.clone().with_index(ix).map_err(fail)?;
            let key = d.index_key_of(0, &a).map_err(fail)?;
            let (own, pk) = d.decode_index_key(0, &key).map_err(fail)?;
            prop_assert_eq!(own, cols.iter().map(|&c| key_form(&a[c])).collect::<Vec<_>>());
            if !pk.is_empty() {
                prop_assert_eq!(pk, d.primary_key().iter().map(|&c| key_form(&a[c])).collect::<Vec<_>>());
            }
        }
    }

    /// Table definitions round-trip through their binary form.
    #[test]
    fn definitions_round_trip(def in table_def(), unique in any::<bool>()) {
        let n = def.columns().len();
        let ix = IndexDef::new("ix", [format!("c{}", n - 1)]);
        let def = def.with_index(if unique { ix.unique() } else { ix }).map_err(fail)?;
        prop_assert_eq!(TableDef::decode(&def.encode()).map_err(fail)?, def);
    }

    /// Garbage and damaged rows: an error or a value, never a panic; what decodes is the
    /// canonical encoding (for a row of all the table's columns).
    #[test]
    fn damaged_rows_never_panic(
        (def, a, _b, _cols) in def_and_two_rows(),
        garbage in prop::collection::vec(prop_oneof![Just(0u8), Just(1), Just(0xFF), any::<u8>()], 0..40),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        how in 0..4,
    ) {
        let mut bytes = encode_row(&def, &a).map_err(fail)?;
        let i = at.index(bytes.len());
        match how {
            0 => bytes[i] = byte,
            1 => bytes.truncate(i),
            2 => bytes.insert(i, byte),
            _ => bytes = garbage,
        }
        if let Ok(values) = decode_row(&def, &bytes) {
            prop_assert_eq!(values.len(), def.columns().len());
            if RowView::new(&def, &bytes).map_err(fail)?.stored_columns() == def.columns().len() {
                prop_assert_eq!(&encode_row(&def, &values).map_err(fail)?, &bytes);
            }
        }
        // The O(1) accessors never panic either.
        if let Ok(view) = RowView::new(&def, &bytes) {
            for c in 0..=def.columns().len() {
                let _ = view.value(c);
                let _ = view.raw(c);
                let _ = view.is_null(c);
            }
        }
    }

    /// Damaged keys: never a panic; what decodes is canonical.
    #[test]
    fn damaged_keys_never_panic(
        (def, a, _b, cols) in def_and_two_rows(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        how in 0..3,
    ) {
        let mut key = encode_key(&def, &cols, &a).map_err(fail)?;
        let i = at.index(key.len());
        match how {
            0 => key[i] = byte,
            1 => key.truncate(i),
            _ => key.insert(i, byte),
        }
        if let Ok(values) = decode_key(&def, &cols, &key) {
            prop_assert_eq!(&encode_key_prefix(&def, &cols, &values).map_err(fail)?, &key);
        }
    }

    /// Damaged or random table definitions: never a panic; what decodes is canonical.
    #[test]
    fn damaged_definitions_never_panic(
        def in table_def(),
        garbage in prop::collection::vec(prop_oneof![Just(0u8), Just(1), Just(2), any::<u8>()], 0..60),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        how in 0..4,
    ) {
        let mut bytes = def.encode();
        let i = at.index(bytes.len());
        match how {
            0 => bytes[i] = byte,
            1 => bytes.truncate(i),
            2 => bytes.insert(i, byte),
            _ => bytes = garbage,
        }
        if let Ok(d) = TableDef::decode(&bytes) {
            prop_assert_eq!(&d.encode(), &bytes);
        }
    }
}
