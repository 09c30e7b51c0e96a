//! taDOM node locks (seed 002, Hiller 2014, §3.4.1; Haustein and Härder's taDOM2/taDOM3
//! family): IR, NR, LR, SR, IX, CX, SU, SX, NU, NX and the combined LRIX, SRIX, LRCX, SRCX.
//!
//! Where each compatibility entry comes from (row = requested, column = granted):
//!
//! 1. **Quoted** — the 8×8 block of IR, NR, LR, SR, IX, CX, SU, SX is seed 002's Table 2
//!    ("Compatibility matrix of taDOM's core modes") verbatim; it is the top-left block of
//!    the matrix below. SU is asymmetric as in the seed (SU is granted beside held readers,
//!    new readers wait for SU).
//! 2. **Derived by Shoal (NU, NX rows and columns)** — the seed names NU and NX (taDOM3)
//!    but gives no entries for them, only their scope: "just like the NR mode", i.e. the
//!    context node alone, not its children or subtree. Shoal derives: NX (node exclusive)
//!    conflicts, both ways, with every mode that reads or writes the context node itself
//!    (NR, LR, SR, SU, SX, NU, NX) and is compatible with the modes that concern only
//!    descendants (IR, IX, CX). NU (node update) is to NR what SU is to SR: an NU request is
//!    granted beside held NR, LR, SR (and IR, IX, CX); NR, LR, SR requests wait while NU is
//!    held (asymmetric, as SU); NU conflicts with SU, SX, NU, NX both ways; IR, IX and CX
//!    requests are granted beside NU (they do not read the node).
//! 3. **Derived by the AND rule (combined modes)** — every entry in a row or column of LRIX,
//!    SRIX, LRCX or SRCX is computed (`mode.rs`, `conjunction`) as the conjunction of the
//!    entries of its two parts, as seed 002 §3.4.1 defines the combined modes. None is
//!    written out.
//!
//! The supremum (conversion) matrix is computed, not written (`mode.rs`). With these 14
//! modes it is a lattice join for every pair but four: `NR` with `IX` and `NR` with `CX`
//! (either order) have no least upper bound — NX and LRIX (resp. LRCX) both cover them and
//! neither covers the other. taDOM3+ adds NRIX and NRCX for exactly these pairs; Shoal does
//! not ship them (not asked for), and the tie rule picks LRIX and LRCX, the upper bounds
//! compatible with more modes. The lock manager never relies on a least upper bound.
//!
//! Weak modes (fast path on document names): IR and IX. Children implied: SR, SU, SX imply
//! themselves on every child; LR, LRIX, LRCX imply NR on children; SRIX, SRCX imply SR.
//! Escalation modes: SR and SX.

use super::mode::{Combined, LockMode, ModeTable, Spec};

/// Intention read: some descendant is read.
pub const IR: LockMode = LockMode(0);
/// Node read: the context node itself is read.
pub const NR: LockMode = LockMode(1);
/// Level read: the context node and its children are read.
pub const LR: LockMode = LockMode(2);
/// Subtree read.
pub const SR: LockMode = LockMode(3);
/// Intention exclusive: some deeper descendant is changed.
pub const IX: LockMode = LockMode(4);
/// Child exclusive: a child of the context node is changed.
pub const CX: LockMode = LockMode(5);
/// Subtree update: read the subtree, may convert to SX; new readers wait.
pub const SU: LockMode = LockMode(6);
/// Subtree exclusive.
pub const SX: LockMode = LockMode(7);
/// Node update (taDOM3): read the node, may convert to NX; new node readers wait.
pub const NU: LockMode = LockMode(8);
/// Node exclusive (taDOM3): change the context node only.
pub const NX: LockMode = LockMode(9);
/// LR and IX (combined, AND rule).
pub const LRIX: LockMode = LockMode(10);
/// SR and IX (combined, AND rule).
pub const SRIX: LockMode = LockMode(11);
/// LR and CX (combined, AND rule).
pub const LRCX: LockMode = LockMode(12);
/// SR and CX (combined, AND rule).
pub const SRCX: LockMode = LockMode(13);

/// The taDOM spec. Left of `|`: seed 002 Table 2 (rows IR..SX quoted); NU and NX rows and
/// the columns right of `|` are Shoal's derivation (module doc, item 2).
pub const SPEC: Spec = Spec {
    name: "taDOM",
    modes: &["IR", "NR", "LR", "SR", "IX", "CX", "SU", "SX", "NU", "NX"],
    matrix: &[
        //   IR NR LR SR IX CX SU SX | NU NX
        "IR  +  +  +  +  +  +  -  -  | +  +",
        "NR  +  +  +  +  +  +  -  -  | -  -",
        "LR  +  +  +  +  +  -  -  -  | -  -",
        "SR  +  +  +  +  -  -  -  -  | -  -",
        "IX  +  +  +  -  +  +  -  -  | +  +",
        "CX  +  +  -  -  +  +  -  -  | +  +",
        "SU  +  +  +  +  -  -  -  -  | -  -",
        "SX  -  -  -  -  -  -  -  -  | -  -",
        "NU  +  +  +  +  +  +  -  -  | -  -",
        "NX  +  -  -  -  +  +  -  -  | -  -",
    ],
    quoted: 8,
    combined: &[
        Combined {
            name: "LRIX",
            first: "LR",
            second: "IX",
        },
        Combined {
            name: "SRIX",
            first: "SR",
            second: "IX",
        },
        Combined {
            name: "LRCX",
            first: "LR",
            second: "CX",
        },
        Combined {
            name: "SRCX",
            first: "SR",
            second: "CX",
        },
    ],
    weak: &["IR", "IX"],
    implies_child: &[
        ("SR", "SR"),
        ("SU", "SU"),
        ("SX", "SX"),
        ("LR", "NR"),
        ("LRIX", "NR"),
        ("LRCX", "NR"),
        ("SRIX", "SR"),
        ("SRCX", "SR"),
    ],
    escalation: ("SR", "SX"),
};

/// The taDOM mode table.
pub static TADOM: ModeTable = ModeTable::build(&SPEC);
