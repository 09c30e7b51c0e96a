//! Tests of the table layer across its files: round trips of every type, the row format's
//! layout and limits, schema evolution, the `Row` API, and every error with its message.
//! Property tests are in `prop_tests.rs`.

use std::sync::Arc;

use super::*;
use crate::error::Error;
use crate::row;

/// One column of every type, nullable, after a NOT NULL INT8 key.
fn all_types() -> TableDef {
    TableDef::new(
        "all",
        vec![
            Column::new("id", ColumnType::Int8),
            Column::new("b", ColumnType::Bool),
            Column::new("i4", ColumnType::Int4),
            Column::new("i8", ColumnType::Int8),
            Column::new("f", ColumnType::Float8),
            Column::new("d", ColumnType::decimal(18, 4).unwrap()),
            Column::new("c", ColumnType::Char(3)),
            Column::new("v", ColumnType::Varchar(4)),
            Column::new("y", ColumnType::Bytes(Some(5))),
            Column::new("yy", ColumnType::Bytes(None)),
            Column::new("t", ColumnType::Timestamp),
        ],
        &["id"],
    )
    .unwrap()
}

fn dec(units: i64, scale: u8) -> Value {
    Value::Decimal(Decimal::new(units, scale).unwrap())
}

/// Encodes, decodes and checks the round trip, column by column too.
fn round_trip(def: &TableDef, values: &[Value]) -> Vec<u8> {
    let norm = def.check_row(&Row::from_values(values.to_vec())).unwrap();
    let bytes = encode_row(def, &norm).unwrap();
    assert_eq!(encode_row(def, values).unwrap(), bytes, "normalizing twice");
    assert_eq!(decode_row(def, &bytes).unwrap(), norm);
    let view = RowView::new(def, &bytes).unwrap();
    view.validate().unwrap();
    for (i, v) in norm.iter().enumerate() {
        assert_eq!(&view.value(i).unwrap(), v, "column {i}");
        assert_eq!(view.is_null(i).unwrap(), v.is_null());
    }
    bytes
}

#[test]
fn every_type_round_trips_with_boundaries() {
    let def = all_types();
    let max_str = "é€\u{10FFFF}x".to_string(); // 4 characters, 10 bytes
    let rows = [
        // All NULL but the key.
        vec![
            Value::Int8(0),
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
        ],
        // Minimums, empty strings.
        vec![
            Value::Int8(i64::MIN),
            Value::Bool(false),
            Value::Int4(i32::MIN),
            Value::Int8(i64::MIN),
            Value::Float8(f64::NEG_INFINITY),
            dec(-999_999_999_999_999_999, 4),
            Value::from(""),
            Value::from(""),
            Value::Bytes(vec![]),
            Value::Bytes(vec![]),
            Value::Timestamp(i64::MIN),
        ],
        // Maximums, maximal lengths.
        vec![
            Value::Int8(i64::MAX),
            Value::Bool(true),
            Value::Int4(i32::MAX),
            Value::Int8(i64::MAX),
            Value::Float8(f64::INFINITY),
            dec(999_999_999_999_999_999, 4),
            Value::from("€€€"),
            Value::from(max_str.as_str()),
            Value::Bytes(vec![0xFF; 5]),
            Value::Bytes(vec![0; 70_000]),
            Value::Timestamp(i64::MAX),
        ],
        // Floats whose bits matter; strings with spaces and NULs.
        vec![
            Value::Int8(-1),
            Value::Bool(true),
            Value::Int4(-1),
            Value::Int8(0),
            Value::Float8(-0.0),
            dec(1, 4),
            Value::from(" a"),
            Value::from("\0 \t "),
            Value::Bytes(vec![0]),
            Value::Null,
            Value::Timestamp(-1),
        ],
    ];
    for row in &rows {
        round_trip(&def, row);
    }
    for f in [
        f64::NAN,
        -f64::NAN,
        f64::from_bits(0x7FF0_0000_0000_0001),
        f64::MIN_POSITIVE,
    ] {
        let mut row = rows[0].clone();
        row[4] = Value::Float8(f);
        let bytes = round_trip(&def, &row);
        match decode_row(&def, &bytes).unwrap()[4] {
            Value::Float8(g) => assert_eq!(g.to_bits(), f.to_bits()),
            ref other => panic!("{other:?}"),
        }
    }
    // CHAR comes back padded, stored without its spaces.
    let mut row = rows[0].clone();
    row[6] = Value::from("a");
    let bytes = round_trip(&def, &row);
    assert_eq!(decode_row(&def, &bytes).unwrap()[6], Value::from("a  "));
    assert_eq!(
        RowView::new(&def, &bytes).unwrap().raw(6).unwrap(),
        Some(&b"a"[..])
    );
}

#[test]
fn layout_matches_format_md() {
    let def = TableDef::new(
        "t",
        vec![
            Column::new("id", ColumnType::Int4),
            Column::new("name", ColumnType::Varchar(10)),
            Column::new("ok", ColumnType::Bool),
            Column::new("note", ColumnType::Bytes(None)),
        ],
        &["id"],
    )
    .unwrap();
    let bytes = encode_row(
        &def,
        &[
            Value::Int4(258),
            Value::from("ab"),
            Value::Null,
            Value::Null,
        ],
    )
    .unwrap();
    assert_eq!(
        bytes,
        [
            1, // version
            4, 0,      // 4 columns
            0b1100, // columns 2 and 3 NULL
            2, 1, 0, 0, // id = 258, little-endian
            0, // ok: NULL, zero
            2, 0, 2, 0, // ends of name and note
            b'a', b'b',
        ]
    );
    let view = RowView::new(&def, &bytes).unwrap();
    assert_eq!(view.raw(1).unwrap(), Some(&b"ab"[..]));
    assert_eq!(view.raw(3).unwrap(), None);
    assert_eq!(view.stored_columns(), 4);
}

#[test]
fn offsets_widen_past_64_kib() {
    let def = TableDef::new(
        "t",
        vec![
            Column::new("id", ColumnType::Int4),
            Column::new("v", ColumnType::Bytes(None)),
        ],
        &["id"],
    )
    .unwrap();
    // Header 3 + bitmap 1 + INT4 4 + one 2-byte offset = 10 bytes before the data.
    let row = |n: usize| vec![Value::Int4(1), Value::Bytes(vec![7; n])];
    let small = round_trip(&def, &row(0xFFFF - 10));
    assert_eq!(small.len(), 0xFFFF);
    let large = round_trip(&def, &row(0xFFFF - 9));
    assert_eq!(large.len(), 0xFFFF + 1 + 2);
    assert_eq!(&large[8..12], &((0xFFFF - 9) as u32).to_le_bytes());
    // A row that fits with 2-byte offsets but is written with 4-byte ones is not canonical.
    let n = 0xFFFF - 11;
    let mut wide = round_trip(&def, &row(n));
    assert_eq!(wide.len(), 0xFFFF - 1);
    wide.splice(8..10, (n as u32).to_le_bytes());
    assert_eq!(wide.len(), 0xFFFF + 1);
    let e = decode_row(&def, &wide).unwrap_err();
    assert!(e.to_string().contains("4-byte offsets"), "{e}");
}

#[test]
fn older_rows_read_added_columns_as_null() {
    let v1 = TableDef::new(
        "t",
        vec![
            Column::new("id", ColumnType::Int4),
            Column::new("name", ColumnType::Varchar(5)),
        ],
        &["id"],
    )
    .unwrap();
    let old = encode_row(&v1, &[Value::Int4(1), Value::from("ann")]).unwrap();
    let v2 = v1
        .clone()
        .with_added_column(Column::new("age", ColumnType::Int4))
        .unwrap()
        .with_added_column(Column::new("bio", ColumnType::Varchar(9)))
        .unwrap();
    assert_eq!(
        decode_row(&v2, &old).unwrap(),
        [Value::Int4(1), Value::from("ann"), Value::Null, Value::Null]
    );
    let view = RowView::new(&v2, &old).unwrap();
    assert_eq!(view.stored_columns(), 2);
    assert!(view.is_null(3).unwrap());
    assert_eq!(view.raw(2).unwrap(), None);
    // A newer row is longer, and the old definition refuses it.
    let new = encode_row(
        &v2,
        &[Value::Int4(1), Value::from("ann"), 30.into(), "x".into()],
    )
    .unwrap();
    let e = decode_row(&v1, &new).unwrap_err();
    assert_eq!(
        e.to_string(),
        "row of table `t` is corrupt: 4 columns stored, the table has 2"
    );
}

#[test]
fn row_api() {
    let def = Arc::new(all_types());
    let built = Row::new()
        .with("v", "hey")
        .with("id", 3)
        .with("d", dec(15, 1))
        .with("v", "hi");
    assert_eq!(built.len(), 3);
    assert_eq!(built.get::<&str>("v").unwrap(), "hi");
    assert_eq!(built.to_string(), "(v: 'hi', id: 3, d: 1.5)");
    let values = def.check_row(&built).unwrap();
    assert_eq!(values[0], Value::Int8(3));
    assert_eq!(values[5], dec(15_000, 4));

    let bytes = encode_row(&def, &values).unwrap();
    let mut row = Row::decode(&def, &bytes).unwrap();
    assert_eq!(row.get::<i64>("id").unwrap(), 3);
    assert_eq!(row.get::<Option<bool>>("b").unwrap(), None);
    assert_eq!(row.get::<Decimal>("d").unwrap().to_string(), "1.5000");
    assert_eq!(row.get_at::<&str>(7).unwrap(), "hi");
    assert_eq!(row.get::<Option<Timestamp>>("t").unwrap(), None);
    assert!(Arc::ptr_eq(row.table().unwrap(), &def));
    assert_eq!(row.name_at(10), Some("t"));

    // Update of selected columns, on the row and through the definition.
    let changes = Row::new().with("b", true).with("i4", 5);
    row.update(&changes).unwrap();
    assert!(row.get::<bool>("b").unwrap());
    let (next, changed) = def.check_update(&values, &changes).unwrap();
    assert_eq!(changed, [1, 2]);
    assert_eq!(&next[..], row.values());
    let (_, unchanged) = def.check_update(&next, &changes).unwrap();
    assert!(unchanged.is_empty());
    assert!(row.update(&Row::new().with("nope", 1)).is_err());
    assert!(
        row.get::<bool>("b").unwrap(),
        "a failed update changes nothing"
    );
    row.set_at(2, Value::Null).unwrap();
    assert!(row.set_at(11, 1).is_err());

    // Projection keeps the order asked for.
    let p = row.project(&["t", "id"]).unwrap();
    assert_eq!(p.to_string(), "(t: NULL, id: 3)");
    assert_eq!(p, Row::new().with("t", Value::Null).with("id", 3i64));

    // Positional and named values mix: positions take the columns in order.
    let mixed = row![1, true].with("t", Timestamp(9));
    let values = def.check_row(&mixed).unwrap();
    assert_eq!(
        (&values[1], &values[10]),
        (&Value::Bool(true), &Value::Timestamp(9))
    );
    // A table's own row resolves positionally.
    assert_eq!(def.check_row(&row).unwrap(), row.values());
}

/// The error, with its message checked, or a panic.
fn err<T: std::fmt::Debug>(r: crate::Result<T>) -> Error {
    let e = r.unwrap_err();
    assert!(!e.is_retryable(), "{e}");
    e
}

#[test]
fn every_error_has_its_kind_and_message() {
    let def = TableDef::new(
        "accounts",
        vec![
            Column::new("id", ColumnType::Int8),
            Column::new("owner", ColumnType::Varchar(4)).not_null(),
            Column::new("balance", ColumnType::decimal(5, 2).unwrap()),
            Column::new("code", ColumnType::Char(2)),
            Column::new("blob", ColumnType::Bytes(Some(2))),
        ],
        &["id"],
    )
    .unwrap();
    let check = |row: Row| def.check_row(&row).map(|_| ());
    let base = || Row::new().with("id", 1).with("owner", "ann");

    let e = err(check(Row::new().with("id", 1)));
    assert!(matches!(e, Error::NotNull { .. }));
    assert_eq!(
        e.to_string(),
        "column `owner` of table `accounts` is NOT NULL but got NULL"
    );
    let e = err(check(base().with("id", Value::Null)));
    assert_eq!(
        e.to_string(),
        "column `id` of table `accounts` is NOT NULL but got NULL"
    );

    let e = err(check(base().with("balance", "12")));
    assert!(matches!(e, Error::TypeMismatch { .. }));
    assert_eq!(
        e.to_string(),
        "type mismatch for column `balance`: expected DECIMAL(5,2), got TEXT"
    );
    let e = err(check(base().with("id", 1.5)));
    assert_eq!(
        e.to_string(),
        "type mismatch for column `id`: expected INT8, got FLOAT8"
    );

    let cases: [(Row, &str); 5] = [
        (
            base().with("owner", "annie"),
            "value too long for column `owner`: 5 characters, at most 4",
        ),
        (
            base().with("code", "abc"),
            "value too long for column `code`: 3 characters, at most 2",
        ),
        (
            base().with("blob", vec![1u8, 2, 3]),
            "value too long for column `blob`: 3 bytes, at most 2",
        ),
        (
            base().with("balance", "1000".parse::<Decimal>().unwrap()),
            "value too long for column `balance`: 6 digits, at most 5",
        ),
        (
            base().with("balance", "0.125".parse::<Decimal>().unwrap()),
            "value too long for column `balance`: 3 fractional digits, at most 2",
        ),
    ];
    for (row, message) in cases {
        let e = err(check(row));
        assert!(matches!(e, Error::ValueTooLong { .. }), "{e:?}");
        assert_eq!(e.to_string(), message);
    }
    // Excess spaces are cut, not an error.
    assert!(check(base().with("owner", "ann      ").with("code", "ab  ")).is_ok());

    let e = err(check(base().with("nope", 1)));
    assert!(matches!(e, Error::NoSuchColumn { .. }));
    assert_eq!(e.to_string(), "no column `nope` in table `accounts`");
    let e = err(Row::new().get::<i64>("x"));
    assert_eq!(e.to_string(), "no column `x` in table `<row>`");

    let e = err(check(row![1, "a", Value::Null, "b", vec![1u8], 6]));
    assert!(matches!(e, Error::InvalidArgument { name: "row", .. }));
    assert_eq!(
        e.to_string(),
        "invalid argument `row`: more than 5 positional values for table `accounts`"
    );
    let e = err(check(row![1].with("id", 2)));
    assert_eq!(
        e.to_string(),
        "invalid argument `row`: column `id` is given twice"
    );

    // Typed getters.
    let row = Row::from_table(Arc::new(def.clone()), def.check_row(&base()).unwrap()).unwrap();
    let e = err(row.get::<i64>("owner"));
    assert!(matches!(e, Error::TypeMismatch { .. }));
    assert_eq!(
        e.to_string(),
        "type mismatch for column `owner`: expected i64, got TEXT"
    );
    let e = err(row.get::<Decimal>("balance"));
    assert_eq!(
        e.to_string(),
        "type mismatch for column `balance`: expected Decimal, got NULL"
    );
    let e = err(row.get_at::<bool>(9));
    assert_eq!(e.to_string(), "no column `#9` in table `accounts`");

    // The catalog's error, built here only to pin its message.
    let e = Error::NoSuchTable {
        name: "ghost".into(),
    };
    assert_eq!(e.to_string(), "no table named `ghost`");
    assert!(!e.is_retryable());

    // Keys refuse what rows refuse.
    let e = err(def.primary_key_of(&[
        Value::Null,
        "a".into(),
        Value::Null,
        Value::Null,
        Value::Null,
    ]));
    assert!(matches!(e, Error::NotNull { .. }));
    let e = err(encode_key_prefix(
        &def,
        def.primary_key(),
        &[Value::from("x")],
    ));
    assert!(matches!(e, Error::TypeMismatch { .. }));
    let e = err(encode_key(&def, &[0], &[Value::Int8(1)]));
    assert!(matches!(e, Error::InvalidArgument { name: "row", .. }));
}

#[test]
fn corrupt_rows_are_named() {
    let def = TableDef::new(
        "t",
        vec![
            Column::new("id", ColumnType::Int4),
            Column::new("ok", ColumnType::Bool),
            Column::new("s", ColumnType::Char(2)),
        ],
        &["id"],
    )
    .unwrap();
    let good = encode_row(&def, &[Value::Int4(1), Value::Bool(true), "a".into()]).unwrap();
    assert_eq!(good, [1, 3, 0, 0, 1, 0, 0, 0, 1, 1, 0, b'a']);
    let cases: [(Vec<u8>, &str); 9] = [
        (vec![1, 3], "2 bytes, shorter than the 3-byte header"),
        (vec![2, 3, 0], "format version 2, expected 1"),
        (
            vec![1, 3, 0, 0],
            "4 bytes, but 3 columns need 11 before the variable bytes",
        ),
        (patch(&good, 3, 1), "NOT NULL column `id` is marked NULL"),
        (
            patch(&good, 3, 0x80),
            "padding bits of the null bitmap are set",
        ),
        (
            patch(&good, 8, 2),
            "column `ok`: bool byte 0x02 is not 0 or 1",
        ),
        (
            patch(&good, 9, 2),
            "column `s` spans variable bytes [0, 2) of 1",
        ),
        (
            patch(&good, 11, b' '),
            "column `s`: a CHAR stored with trailing spaces",
        ),
        (patch(&good, 11, 0xC3), "column `s`: not UTF-8"),
    ];
    for (bytes, reason) in cases {
        let e = decode_row(&def, &bytes).unwrap_err();
        assert!(matches!(e, Error::CorruptRecord { .. }), "{e:?}");
        let message = e.to_string();
        assert!(
            message.starts_with("row of table `t` is corrupt: "),
            "{message}"
        );
        assert!(message.contains(reason), "{message} should say {reason}");
    }
    let mut long = good.clone();
    long.push(0);
    assert!(decode_row(&def, &long)
        .unwrap_err()
        .to_string()
        .contains("end at byte 1 of 2"));
    let null_ok = encode_row(&def, &[Value::Int4(1), Value::Null, Value::Null]).unwrap();
    let e = decode_row(&def, &patch(&null_ok, 8, 1)).unwrap_err();
    assert!(
        e.to_string()
            .contains("NULL column `ok` has a non-empty field"),
        "{e}"
    );
    let e = RowView::new(&def, &good).unwrap().value(3).unwrap_err();
    assert_eq!(e.to_string(), "no column `#3` in table `t`");
}

fn patch(bytes: &[u8], at: usize, b: u8) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out[at] = b;
    out
}

#[test]
fn keys_order_and_layout() {
    let def = TableDef::new(
        "t",
        vec![
            Column::new("f", ColumnType::Float8),
            Column::new("d", ColumnType::decimal(6, 3).unwrap()),
            Column::new("c", ColumnType::Char(2)),
            Column::new("u", ColumnType::Varchar(5)),
        ],
        &["f"],
    )
    .unwrap()
    .with_index(IndexDef::new("by_c", ["c"]))
    .unwrap()
    .with_index(IndexDef::new("by_u", ["u"]).unique())
    .unwrap();
    let key = |v: Value| encode_key_prefix(&def, &[0], &[v]).unwrap();
    // FLOAT8: -0.0 = +0.0; every NaN equal, above +inf.
    assert_eq!(key(Value::Float8(-0.0)), key(Value::Float8(0.0)));
    assert_eq!(key(Value::Float8(-f64::NAN)), key(Value::Float8(f64::NAN)));
    assert!(key(Value::Float8(f64::INFINITY)) < key(Value::Float8(-f64::NAN)));
    assert!(key(Value::Float8(f64::NEG_INFINITY)) < key(Value::Float8(-1e300)));
    // DECIMAL by value, whatever the scale given.
    let dk =
        |s: &str| encode_key_prefix(&def, &[1], &[Value::Decimal(s.parse().unwrap())]).unwrap();
    assert_eq!(dk("1.5"), dk("1.500"));
    assert!(dk("-2") < dk("-1.999") && dk("0.001") < dk("1"));
    // CHAR by padded value.
    let ck = |s: &str| encode_key_prefix(&def, &[2], &[Value::from(s)]).unwrap();
    assert_eq!(ck("a"), ck("a "));
    assert!(ck("a\t") < ck("a") && ck("a") < ck("a!"));

    // Index keys: non-unique always carry the primary key; unique only beside a NULL.
    let row = |c: Value, u: Value| vec![Value::Float8(2.0), Value::Null, c, u];
    let r = row("x".into(), "y".into());
    let (own, pk) = def
        .decode_index_key(0, &def.index_key_of(0, &r).unwrap())
        .unwrap();
    assert_eq!(
        (own, pk),
        (vec![Value::from("x ")], vec![Value::Float8(2.0)])
    );
    let k = def.index_key_of(1, &r).unwrap();
    assert_eq!(k, encode_key(&def, &[3], &r).unwrap());
    assert_eq!(
        def.decode_index_key(1, &k).unwrap(),
        (vec![Value::from("y")], vec![])
    );
    let n = row("x".into(), Value::Null);
    let k = def.index_key_of(1, &n).unwrap();
    assert_eq!(
        def.decode_index_key(1, &k).unwrap(),
        (vec![Value::Null], vec![Value::Float8(2.0)])
    );
    assert!(matches!(
        def.index_key_of(2, &r),
        Err(Error::InvalidArgument { name: "index", .. })
    ));

    // Decoding refuses keys that are not canonical for the column.
    let not_padded = crate::btree::key::KeyBuilder::new().str("a").finish();
    let e = decode_key(&def, &[2], &not_padded).unwrap_err();
    assert_eq!(
        e.to_string(),
        "key of table `t` is corrupt: column `c`: 'a' is not in its key form"
    );
    let neg_zero = crate::btree::key::KeyBuilder::new().f64(-0.0).finish();
    assert!(decode_key(&def, &[0], &neg_zero).is_err());
    let e = def.decode_index_key(1, &[1, b'y', 0, 0, 9]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("key of index `by_u` of table `t` is corrupt: key field 1"),
        "{e}"
    );
    let e = decode_key(
        &def,
        &[1],
        &crate::btree::key::KeyBuilder::new().i64(1_000_000).finish(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("7 digits, at most 6"), "{e}");
}

#[test]
fn table_definition_format() {
    let def = all_types()
        .with_index(IndexDef::new("by_v", ["v", "t"]).unique())
        .unwrap();
    let bytes = def.encode();
    assert_eq!(TableDef::decode(&bytes).unwrap(), def);
    assert_eq!(bytes[0], TABLE_DEF_FORMAT_VERSION);
    assert_eq!(&bytes[1..5], &[3, b'a', b'l', b'l']);
    let small = TableDef::new("t", vec![Column::new("a", ColumnType::Char(2))], &["a"]).unwrap();
    assert_eq!(
        small.encode(),
        [1, 1, b't', 1, 0, 1, b'a', 6, 2, 0, 0, 0, 0, 1, 0, 0, 0]
    );
    let e = TableDef::decode(&[9]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "table definition is corrupt: at byte 1: format version 9, expected 1"
    );
    let mut bad = small.encode();
    bad[7] = 42;
    assert!(TableDef::decode(&bad)
        .unwrap_err()
        .to_string()
        .contains("unknown type tag 42"));
    let mut nullable_key = small.encode();
    nullable_key[12] = 1;
    let e = TableDef::decode(&nullable_key).unwrap_err();
    assert!(
        e.to_string().contains("primary-key column `a` is nullable"),
        "{e}"
    );
    let mut extra = small.encode();
    extra.push(0);
    assert!(TableDef::decode(&extra)
        .unwrap_err()
        .to_string()
        .contains("1 bytes left over"));
}

/// The length checks skip the character walk for fields of at most `n` bytes; fields with
/// multibyte characters around the limit are still counted in characters.
#[test]
fn length_limits_count_characters_not_bytes() {
    let def = TableDef::new(
        "t",
        vec![
            Column::new("id", ColumnType::Int4),
            Column::new("v", ColumnType::Varchar(3)),
            Column::new("c", ColumnType::Char(3)),
        ],
        &["id"],
    )
    .unwrap();
    // Three two-byte characters: 6 bytes, 3 characters, fit both columns.
    let ok = [Value::Int4(1), Value::from("ééé"), Value::from("ééé")];
    let bytes = encode_row(&def, &ok).unwrap();
    assert_eq!(decode_row(&def, &bytes).unwrap(), ok.to_vec());
    let row = Row::decode(&Arc::new(def.clone()), &bytes).unwrap();
    assert_eq!(row.get_at::<&str>(1).unwrap(), "ééé");
    assert!(row.get_at::<i64>(1).is_err());
    // Four characters do not fit; short ASCII values fit and CHAR pads them.
    for v in ["éééé", "abcd"] {
        let bad = [Value::Int4(1), Value::from(v), Value::from("a")];
        assert!(
            matches!(encode_row(&def, &bad), Err(Error::ValueTooLong { .. })),
            "{v}"
        );
    }
    let short = [Value::Int4(1), Value::from("ab"), Value::from("a")];
    let values = decode_row(&def, &encode_row(&def, &short).unwrap()).unwrap();
    assert_eq!(values[2], Value::from("a  "));
}

/// `RowView::with_fixed` (the in-place update of `Table::update_with_view`) gives exactly
/// the bytes `encode_row` gives for the changed values: every fixed-width column of
/// `all_types` set to a value, to NULL and back, from rows with and without NULLs.
#[test]
fn patched_fixed_fields_equal_a_fresh_encoding() {
    let def = all_types();
    let full = vec![
        Value::Int8(1),
        Value::Bool(true),
        Value::Int4(-5),
        Value::Int8(i64::MAX),
        Value::Float8(2.5),
        dec(123_456, 4),
        Value::from("ab"),
        Value::from("wxyz"),
        Value::Bytes(vec![1, 2]),
        Value::Bytes(vec![9; 300]),
        Value::Timestamp(1_700_000_000_000_000),
    ];
    let mut sparse = vec![Value::Null; full.len()];
    sparse[0] = Value::Int8(2);
    let changes: [(usize, Value); 7] = [
        (1, Value::Bool(false)),
        (2, Value::Int4(i32::MIN)),
        (3, Value::Int8(-1)),
        (4, Value::Float8(-0.0)),
        (5, dec(-99, 2)),
        (10, Value::Timestamp(0)),
        (2, Value::Null),
    ];
    for start in [full, sparse] {
        let mut want = start.clone();
        let mut bytes = encode_row(&def, &start).unwrap();
        for (i, v) in &changes {
            let cell = check::check(def.name(), &def.columns()[*i], v).unwrap();
            bytes = RowView::new(&def, &bytes)
                .unwrap()
                .with_fixed(&[(*i, cell)])
                .expect("a fixed-width column");
            want[*i] = v.clone();
            let fresh = encode_row(&def, &want).unwrap();
            assert_eq!(bytes, fresh, "after setting column {i} to {v:?}");
            RowView::new(&def, &bytes).unwrap().validate().unwrap();
        }
    }
    // A variable-width column, or a row stored before a column was added, is not patched.
    let bytes = encode_row(&def, &round_trip_row(&def)).unwrap();
    let view = RowView::new(&def, &bytes).unwrap();
    let q = Value::from("q");
    let cell = check::check(def.name(), &def.columns()[7], &q).unwrap();
    assert!(view.with_fixed(&[(7, cell)]).is_none());
    let wider = def
        .clone()
        .with_added_column(Column::new("extra", ColumnType::Int4))
        .unwrap();
    let old_row = RowView::new(&wider, &bytes).unwrap();
    let cell = check::check(wider.name(), &wider.columns()[2], &Value::Int4(1)).unwrap();
    assert!(old_row.with_fixed(&[(2, cell)]).is_none());
}

/// A row of `def` with its key set and every other column NULL.
fn round_trip_row(def: &TableDef) -> Vec<Value> {
    let mut v = vec![Value::Null; def.columns().len()];
    v[0] = Value::Int8(3);
    v
}

/// `RowView::get` converts as `Row::get_at` does, and names the column on a mismatch.
#[test]
fn row_view_get_converts_and_names_mismatches() {
    let def = all_types();
    let mut values = round_trip_row(&def);
    values[2] = Value::Int4(-7);
    values[7] = Value::from("wx");
    let bytes = encode_row(&def, &values).unwrap();
    let view = RowView::new(&def, &bytes).unwrap();
    assert_eq!(view.get::<i64>(0).unwrap(), 3);
    assert_eq!(view.get::<i32>(2).unwrap(), -7);
    assert_eq!(
        view.get::<i64>(2).unwrap(),
        -7,
        "INT4 widens to i64 as in Row"
    );
    assert_eq!(view.get::<Option<i32>>(2).unwrap(), Some(-7));
    assert_eq!(view.get::<Option<i64>>(3).unwrap(), None, "a NULL");
    assert_eq!(view.get::<String>(7).unwrap(), "wx");
    match view.get::<i32>(7).unwrap_err() {
        Error::TypeMismatch {
            column,
            expected,
            got,
        } => {
            assert_eq!((column.as_str(), expected.as_str()), ("v", "i32"));
            assert!(!got.is_empty());
        }
        e => panic!("{e}"),
    }
    assert!(matches!(
        view.get::<i32>(99),
        Err(Error::NoSuchColumn { .. })
    ));
}
