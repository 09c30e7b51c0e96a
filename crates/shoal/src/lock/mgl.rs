//! Multiple-granularity locking (MGL): IS, IX, S, SIX, U, X.
//!
//! IS, IX, S, SIX and X and their compatibility are those of Gray, Lorie, Putzolu and
//! Traiger, "Granularity of Locks and Degrees of Consistency in a Shared Data Base" (1976).
//! U (update) is added with the **asymmetric** convention of Korth, "Locking Primitives in
//! a Database System" (JACM 30(1), 1983) and Gray and Reuter, *Transaction Processing*
//! (1993): a U request is granted while others hold S or IS, but S and IS requests wait
//! while another holds U, so that the U holder's later conversion to X is not starved by a
//! stream of new readers. It is the convention seed 002's Table 2 uses for SU (rows IR, NR,
//! LR, SR against column SU are `-`, row SU against those columns is `+`). With this
//! convention U conflicts with IX, SIX, U and X in both directions.
//!
//! Every entry of the matrix below is written out (none is derived); the supremum is
//! computed (`mode.rs`). Two of its entries differ from tables that use a symmetric U:
//! `sup(IX, U) = X` and `sup(SIX, U) = X`, because no other mode both blocks new IS
//! requests (as U does) and blocks S (as IX and SIX do).
//!
//! Weak modes (fast path, module doc rule F1): IS and IX. Strong: S, SIX, U, X. Holding S,
//! SIX or U on a table implies S, S or U on its rows, X implies X; escalation takes S or X.

use super::mode::{LockMode, ModeTable, Spec};

/// Intention shared: the holder reads (S-locks) some rows below.
pub const IS: LockMode = LockMode(0);
/// Intention exclusive: the holder changes (X-locks) some rows below.
pub const IX: LockMode = LockMode(1);
/// Shared: reads the whole name (and everything below it).
pub const S: LockMode = LockMode(2);
/// Shared with intention exclusive: S on the whole name plus X on some rows below.
pub const SIX: LockMode = LockMode(3);
/// Update: reads, and may convert to X; new readers wait (asymmetric, see module doc).
pub const U: LockMode = LockMode(4);
/// Exclusive: reads and changes the whole name.
pub const X: LockMode = LockMode(5);

/// The MGL spec: row = requested, column = granted.
pub const SPEC: Spec = Spec {
    name: "MGL",
    modes: &["IS", "IX", "S", "SIX", "U", "X"],
    matrix: &[
        //     IS IX S SIX U X
        "IS    +  +  +  +  -  -",
        "IX    +  +  -  -  -  -",
        "S     +  -  +  -  -  -",
        "SIX   +  -  -  -  -  -",
        "U     +  -  +  -  -  -",
        "X     -  -  -  -  -  -",
    ],
    quoted: 6,
    combined: &[],
    weak: &["IS", "IX"],
    implies_child: &[("S", "S"), ("SIX", "S"), ("U", "U"), ("X", "X")],
    escalation: ("S", "X"),
};

/// The MGL mode table.
pub static MGL: ModeTable = ModeTable::build(&SPEC);
