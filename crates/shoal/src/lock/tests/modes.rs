//! Mode tables: every matrix entry against a table written out here, and the supremum's
//! algebra.

use super::super::mode::ModeTable;
use super::super::{mgl, tadom, LockMode, MGL, TADOM};

/// Checks `t`'s compatibility matrix against `rows` ("NAME + - ..." per requested mode, in
/// table order) entry by entry.
fn check_compat(t: &ModeTable, rows: &[&str]) {
    assert_eq!(rows.len(), t.len());
    for (r, line) in rows.iter().enumerate() {
        let mut parts = line.split_whitespace();
        let r = LockMode::from_index(r as u8);
        assert_eq!(parts.next(), Some(t.mode_name(r)));
        let entries: Vec<&str> = parts.collect();
        assert_eq!(entries.len(), t.len(), "row {}", t.mode_name(r));
        for (g, e) in entries.iter().enumerate() {
            let g = LockMode::from_index(g as u8);
            assert_eq!(
                t.compatible(r, g),
                *e == "+",
                "{}: requested {} vs granted {}",
                t.name(),
                t.mode_name(r),
                t.mode_name(g)
            );
        }
    }
}

/// Checks `t`'s supremum matrix against `rows` ("NAME sup sup ..." per mode).
fn check_sup(t: &ModeTable, rows: &[&str]) {
    assert_eq!(rows.len(), t.len());
    for (a, line) in rows.iter().enumerate() {
        let mut parts = line.split_whitespace();
        let a = LockMode::from_index(a as u8);
        assert_eq!(parts.next(), Some(t.mode_name(a)));
        let entries: Vec<&str> = parts.collect();
        assert_eq!(entries.len(), t.len());
        for (b, e) in entries.iter().enumerate() {
            let b = LockMode::from_index(b as u8);
            assert_eq!(
                t.mode_name(t.supremum(a, b)),
                *e,
                "{}: sup({}, {})",
                t.name(),
                t.mode_name(a),
                t.mode_name(b)
            );
        }
    }
}

#[test]
fn mgl_compatibility_entry_by_entry() {
    check_compat(
        &MGL,
        &[
            "IS  + + + + - -",
            "IX  + + - - - -",
            "S   + - + - - -",
            "SIX + - - - - -",
            "U   + - + - - -",
            "X   - - - - - -",
        ],
    );
    // The asymmetric update mode: U is granted beside S, S is not granted beside U.
    assert!(MGL.compatible(mgl::U, mgl::S));
    assert!(!MGL.compatible(mgl::S, mgl::U));
}

#[test]
fn mgl_supremum_entry_by_entry() {
    check_sup(
        &MGL,
        &[
            "IS  IS  IX  S   SIX U X",
            "IX  IX  IX  SIX SIX X X",
            "S   S   SIX S   SIX U X",
            "SIX SIX SIX SIX SIX X X",
            "U   U   X   U   X   U X",
            "X   X   X   X   X   X X",
        ],
    );
}

/// Seed 002 Table 2 plus Shoal's NU/NX rows and columns plus the AND-derived combined modes
/// (worked out by hand from the parts, see `tadom.rs`).
const TADOM_COMPAT: [&str; 14] = [
    "IR    + + + + + + - - + + + + + +",
    "NR    + + + + + + - - - - + + + +",
    "LR    + + + + + - - - - - + + - -",
    "SR    + + + + - - - - - - - - - -",
    "IX    + + + - + + - - + + + - + -",
    "CX    + + - - + + - - + + - - - -",
    "SU    + + + + - - - - - - - - - -",
    "SX    - - - - - - - - - - - - - -",
    "NU    + + + + + + - - - - + + + +",
    "NX    + - - - + + - - - - - - - -",
    "LRIX  + + + - + - - - - - + - - -",
    "SRIX  + + + - - - - - - - - - - -",
    "LRCX  + + - - + - - - - - - - - -",
    "SRCX  + + - - - - - - - - - - - -",
];

#[test]
fn tadom_compatibility_entry_by_entry() {
    check_compat(&TADOM, &TADOM_COMPAT);
}

#[test]
fn tadom_table_2_block_is_quoted_and_the_rest_derived() {
    // Seed 002 Table 2, exactly as printed (row = requested, column = granted).
    let table2 = [
        "IR + + + + + + - -",
        "NR + + + + + + - -",
        "LR + + + + + - - -",
        "SR + + + + - - - -",
        "IX + + + - + + - -",
        "CX + + - - + + - -",
        "SU + + + + - - - -",
        "SX - - - - - - - -",
    ];
    for (r, line) in table2.iter().enumerate() {
        for (g, e) in line.split_whitespace().skip(1).enumerate() {
            let (r, g) = (LockMode::from_index(r as u8), LockMode::from_index(g as u8));
            assert_eq!(TADOM.compatible(r, g), e == "+");
        }
    }
    for r in TADOM.modes() {
        for g in TADOM.modes() {
            let core = r.index() < 8 && g.index() < 8;
            let literal = r.index() < 10 && g.index() < 10;
            assert_eq!(TADOM.is_quoted(r, g), core);
            assert_eq!(TADOM.is_literal(r, g), literal);
        }
    }
}

#[test]
fn tadom_combined_modes_follow_the_and_rule() {
    let parts = [
        (tadom::LRIX, tadom::LR, tadom::IX),
        (tadom::SRIX, tadom::SR, tadom::IX),
        (tadom::LRCX, tadom::LR, tadom::CX),
        (tadom::SRCX, tadom::SR, tadom::CX),
    ];
    for (c, a, b) in parts {
        for x in TADOM.modes() {
            let row = TADOM.compatible(a, x) && TADOM.compatible(b, x);
            let col = TADOM.compatible(x, a) && TADOM.compatible(x, b);
            if x.index() < 10 {
                assert_eq!(
                    TADOM.compatible(c, x),
                    row,
                    "{} vs {}",
                    TADOM.mode_name(c),
                    TADOM.mode_name(x)
                );
                assert_eq!(TADOM.compatible(x, c), col);
            }
        }
        // The combination is the least mode covering both parts.
        assert_eq!(TADOM.supremum(a, b), c);
    }
}

#[test]
fn tadom_supremum_entry_by_entry() {
    check_sup(
        &TADOM,
        &[
            "IR    IR   NR   LR   SR   IX   CX   SU   SX   NU   NX   LRIX SRIX LRCX SRCX",
            "NR    NR   NR   LR   SR   LRIX LRCX SU   SX   NU   NX   LRIX SRIX LRCX SRCX",
            "LR    LR   LR   LR   SR   LRIX LRCX SU   SX   SU   SX   LRIX SRIX LRCX SRCX",
            "SR    SR   SR   SR   SR   SRIX SRCX SU   SX   SU   SX   SRIX SRIX SRCX SRCX",
            "IX    IX   LRIX LRIX SRIX IX   CX   SX   SX   NX   NX   LRIX SRIX LRCX SRCX",
            "CX    CX   LRCX LRCX SRCX CX   CX   SX   SX   NX   NX   LRCX SRCX LRCX SRCX",
            "SU    SU   SU   SU   SU   SX   SX   SU   SX   SU   SX   SX   SX   SX   SX",
            "SX    SX   SX   SX   SX   SX   SX   SX   SX   SX   SX   SX   SX   SX   SX",
            "NU    NU   NU   SU   SU   NX   NX   SU   SX   NU   NX   SX   SX   SX   SX",
            "NX    NX   NX   SX   SX   NX   NX   SX   SX   NX   NX   SX   SX   SX   SX",
            "LRIX  LRIX LRIX LRIX SRIX LRIX LRCX SX   SX   SX   SX   LRIX SRIX LRCX SRCX",
            "SRIX  SRIX SRIX SRIX SRIX SRIX SRCX SX   SX   SX   SX   SRIX SRIX SRCX SRCX",
            "LRCX  LRCX LRCX LRCX SRCX LRCX LRCX SX   SX   SX   SX   LRCX SRCX LRCX SRCX",
            "SRCX  SRCX SRCX SRCX SRCX SRCX SRCX SX   SX   SX   SX   SRCX SRCX SRCX SRCX",
        ],
    );
}

/// `c` covers `a` by the definition, checked from the compatibility matrix alone.
fn covers_by_matrix(t: &ModeTable, c: LockMode, a: LockMode) -> bool {
    t.modes().all(|x| {
        (!t.compatible(c, x) || t.compatible(a, x)) && (!t.compatible(x, c) || t.compatible(x, a))
    })
}

#[test]
fn supremum_is_commutative_idempotent_and_an_upper_bound() {
    for t in [&MGL, &TADOM] {
        for a in t.modes() {
            assert_eq!(t.supremum(a, a), a, "{} idempotent", t.name());
            for b in t.modes() {
                let s = t.supremum(a, b);
                assert_eq!(s, t.supremum(b, a), "{} commutative", t.name());
                assert!(covers_by_matrix(t, s, a) && covers_by_matrix(t, s, b));
                assert!(t.covers(s, a) && t.covers(s, b));
            }
        }
    }
}

#[test]
fn supremum_is_least_except_the_four_documented_tadom_pairs() {
    for t in [&MGL, &TADOM] {
        let mut no_least = Vec::new();
        for a in t.modes() {
            for b in t.modes() {
                let s = t.supremum(a, b);
                let least = t
                    .modes()
                    .filter(|&c| covers_by_matrix(t, c, a) && covers_by_matrix(t, c, b))
                    .all(|c| covers_by_matrix(t, c, s));
                if !least {
                    no_least.push(format!("{}+{}", t.mode_name(a), t.mode_name(b)));
                }
            }
        }
        let expected: Vec<String> = if t.name() == "MGL" {
            vec![]
        } else {
            ["NR+IX", "NR+CX", "IX+NR", "CX+NR"]
                .iter()
                .map(|s| s.to_string())
                .collect()
        };
        assert_eq!(no_least, expected, "{}", t.name());
    }
}

#[test]
fn no_two_modes_are_equivalent() {
    for t in [&MGL, &TADOM] {
        for a in t.modes() {
            for b in t.modes() {
                if a != b {
                    assert!(
                        !(t.covers(a, b) && t.covers(b, a)),
                        "{} {:?} {:?}",
                        t.name(),
                        a,
                        b
                    );
                }
            }
        }
    }
}

#[test]
fn weak_modes_are_pairwise_compatible_and_strong_ones_conflict_with_one() {
    for t in [&MGL, &TADOM] {
        let weak: Vec<LockMode> = t.modes().filter(|&m| t.is_weak(m)).collect();
        for &a in &weak {
            for &b in &weak {
                assert!(t.compatible(a, b) && t.compatible(b, a));
            }
            assert!(!t.is_strong(a));
        }
    }
    let strong: Vec<&str> = MGL
        .modes()
        .filter(|&m| MGL.is_strong(m))
        .map(|m| MGL.mode_name(m))
        .collect();
    assert_eq!(strong, ["S", "SIX", "U", "X"]);
    let weak: Vec<&str> = MGL
        .modes()
        .filter(|&m| MGL.is_weak(m))
        .map(|m| MGL.mode_name(m))
        .collect();
    assert_eq!(weak, ["IS", "IX"]);
}

#[test]
fn names_children_and_escalation_modes() {
    assert_eq!(MGL.by_name("SIX"), Some(mgl::SIX));
    assert_eq!(MGL.by_name("NX"), None);
    assert_eq!(TADOM.mode_name(tadom::SRCX), "SRCX");
    assert_eq!(MGL.mode_name(LockMode::from_index(99)), "?");
    assert!(!MGL.compatible(LockMode::from_index(99), mgl::IS));
    assert_eq!(MGL.child_mode(mgl::SIX), Some(mgl::S));
    assert_eq!(MGL.child_mode(mgl::IX), None);
    assert_eq!(TADOM.child_mode(tadom::LR), Some(tadom::NR));
    assert_eq!(MGL.escalation_modes(), (mgl::S, mgl::X));
    assert_eq!(TADOM.escalation_modes(), (tadom::SR, tadom::SX));
}
