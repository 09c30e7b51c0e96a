//! Lock modes as data: a [`ModeTable`] holds a protocol's modes (small integers), its
//! compatibility matrix (row = requested, column = granted), its supremum (conversion)
//! matrix and the few extra facts the lock manager needs (weak modes for the fast path,
//! modes implied on children, the escalation modes).
//!
//! Tables are built at compile time by [`ModeTable::build`] from a [`Spec`]: the literal
//! part of the compatibility matrix is written out as text rows in the protocol's file (so
//! that it can be compared with its source by eye), combined modes are computed from their
//! parts by the AND rule, and the supremum is computed from the compatibility matrix (see
//! [`ModeTable::supremum`]). A malformed spec is a compile error (a `const` panic).

use std::fmt;

/// Most modes a protocol may have (compatibility rows are `u16` bit sets).
pub const MAX_MODES: usize = 16;

/// "No mode" in the lock table's byte-sized mode fields.
pub(crate) const NONE: u8 = u8::MAX;

/// A lock mode: an index into its protocol's [`ModeTable`] (`mgl::X`, `tadom::SR`, ...).
///
/// A mode means nothing without its table; the lock manager checks that a mode is in range
/// for its protocol and answers [`crate::Error::InvalidArgument`] otherwise.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct LockMode(pub(crate) u8);

impl LockMode {
    /// The mode with index `index` (`0..table.len()`).
    pub const fn from_index(index: u8) -> LockMode {
        LockMode(index)
    }

    /// The mode's index in its table.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// A combined mode defined as the conjunction of two modes of the table (seed 002 §3.4.1:
/// "their row and column entries in the compatibility matrix is simply determined by
/// applying the AND operator on the row/column of the original lock modes").
#[derive(Clone, Copy, Debug)]
pub struct Combined {
    /// Name of the combined mode (`"LRIX"`).
    pub name: &'static str,
    /// Name of the first part (`"LR"`).
    pub first: &'static str,
    /// Name of the second part (`"IX"`).
    pub second: &'static str,
}

/// What a protocol file writes down; [`ModeTable::build`] turns it into a table.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// Protocol name (`"MGL"`, `"taDOM"`).
    pub name: &'static str,
    /// Names of the literal modes, in matrix order.
    pub modes: &'static [&'static str],
    /// Compatibility rows of the literal modes, one string per requested mode: the mode's
    /// name, then one `+` (compatible) or `-` (conflict) per granted mode in `modes` order.
    /// Whitespace and `|` are ignored.
    pub matrix: &'static [&'static str],
    /// Number of leading modes whose square block of `matrix` is quoted from the source;
    /// the other literal entries are Shoal's derivation (documented in the protocol file).
    pub quoted: usize,
    /// Combined modes, appended after the literal ones.
    pub combined: &'static [Combined],
    /// Weak modes: mutually compatible modes that table-level names may take on the fast
    /// path (module doc, rule F1).
    pub weak: &'static [&'static str],
    /// `(parent, child)`: holding `parent` on a name implies holding `child` on each of its
    /// children (MGL: S on a table implies S on its rows).
    pub implies_child: &'static [(&'static str, &'static str)],
    /// Escalation modes `(read, write)`: the table mode taken for a transaction whose row
    /// locks are all covered by what `read` implies on children, and otherwise.
    pub escalation: (&'static str, &'static str),
}

/// A protocol's modes, compatibility and supremum matrices. See the module doc.
pub struct ModeTable {
    name: &'static str,
    len: u8,
    names: [&'static str; MAX_MODES],
    /// Bit `g` of `compat[r]`: requesting `r` is compatible with `g` granted to another.
    compat: [u16; MAX_MODES],
    /// Bit `g` of `quoted[r]`: entry `(r, g)` is quoted from the source table.
    quoted: [u16; MAX_MODES],
    /// Bit `g` of `literal[r]`: entry `(r, g)` is written out in the spec (quoted or not).
    literal: [u16; MAX_MODES],
    sup: [[u8; MAX_MODES]; MAX_MODES],
    weak: u16,
    child: [u8; MAX_MODES],
    escalation: (u8, u8),
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn is_space(c: u8) -> bool {
    c == b' ' || c == b'\t' || c == b'|'
}

/// Returns `compat` with mode `m`'s row and column set to the conjunction of modes `a` and
/// `b` (modes below `m`; they may be earlier combined modes).
const fn conjunction(
    mut compat: [u16; MAX_MODES],
    m: usize,
    a: usize,
    b: usize,
) -> [u16; MAX_MODES] {
    // Row: m requested is compatible with g granted iff both parts are.
    compat[m] = compat[a] & compat[b];
    // Column: r requested is compatible with m granted iff it is with both parts.
    let mut r = 0;
    while r < m {
        let both = (compat[r] >> a) & (compat[r] >> b) & 1;
        compat[r] |= both << m;
        r += 1;
    }
    let with_itself = (compat[m] >> a) & (compat[m] >> b) & 1;
    compat[m] |= with_itself << m;
    compat
}

impl ModeTable {
    /// Builds a table from a spec at compile time. Panics (a compile error when used in a
    /// `static`) if the spec is malformed: too many modes, a row of the wrong length or for
    /// the wrong mode, an unknown name.
    pub const fn build(spec: &Spec) -> ModeTable {
        let n_lit = spec.modes.len();
        let n = n_lit + spec.combined.len();
        assert!(n <= MAX_MODES, "too many modes");
        assert!(
            spec.matrix.len() == n_lit,
            "one matrix row per literal mode"
        );
        assert!(spec.quoted <= n_lit);
        let mut names = [""; MAX_MODES];
        let mut i = 0;
        while i < n_lit {
            names[i] = spec.modes[i];
            i += 1;
        }
        while i < n {
            names[i] = spec.combined[i - n_lit].name;
            i += 1;
        }
        let mut t = ModeTable {
            name: spec.name,
            len: n as u8,
            names,
            compat: [0; MAX_MODES],
            quoted: [0; MAX_MODES],
            literal: [0; MAX_MODES],
            sup: [[NONE; MAX_MODES]; MAX_MODES],
            weak: 0,
            child: [NONE; MAX_MODES],
            escalation: (NONE, NONE),
        };
        // Literal rows.
        let mut r = 0;
        while r < n_lit {
            let row = spec.matrix[r].as_bytes();
            let mut p = 0;
            while p < row.len() && is_space(row[p]) {
                p += 1;
            }
            let start = p;
            while p < row.len() && !is_space(row[p]) {
                p += 1;
            }
            let name = spec.modes[r].as_bytes();
            assert!(p - start == name.len(), "matrix row is for another mode");
            let mut k = 0;
            while k < name.len() {
                assert!(row[start + k] == name[k], "matrix row is for another mode");
                k += 1;
            }
            let mut g = 0;
            while p < row.len() {
                let c = row[p];
                p += 1;
                if is_space(c) {
                    continue;
                }
                assert!(c == b'+' || c == b'-', "matrix entries are + or -");
                assert!(g < n_lit, "matrix row too long");
                if c == b'+' {
                    t.compat[r] |= 1 << g;
                }
                t.literal[r] |= 1 << g;
                if r < spec.quoted && g < spec.quoted {
                    t.quoted[r] |= 1 << g;
                }
                g += 1;
            }
            assert!(g == n_lit, "matrix row too short");
            r += 1;
        }
        // Combined modes: the AND rule on rows and columns.
        let mut c = 0;
        while c < spec.combined.len() {
            let a = t.index_of(spec.combined[c].first);
            let b = t.index_of(spec.combined[c].second);
            assert!(
                a < n_lit && b < n_lit,
                "combined modes combine literal modes"
            );
            t.compat = conjunction(t.compat, n_lit + c, a, b);
            c += 1;
        }
        // Supremum from the covering order.
        let mut a = 0;
        while a < n {
            let mut b = 0;
            while b < n {
                t.sup[a][b] = t.compute_sup(a, b);
                b += 1;
            }
            a += 1;
        }
        let mut w = 0;
        while w < spec.weak.len() {
            t.weak |= 1 << t.index_of(spec.weak[w]);
            w += 1;
        }
        let mut k = 0;
        while k < spec.implies_child.len() {
            let (p, ch) = spec.implies_child[k];
            t.child[t.index_of(p)] = t.index_of(ch) as u8;
            k += 1;
        }
        t.escalation = (
            t.index_of(spec.escalation.0) as u8,
            t.index_of(spec.escalation.1) as u8,
        );
        t
    }

    const fn index_of(&self, name: &str) -> usize {
        let mut i = 0;
        while i < self.len as usize {
            if str_eq(self.names[i], name) {
                return i;
            }
            i += 1;
        }
        panic!("unknown mode name in spec");
    }

    const fn col(&self, g: usize) -> u16 {
        let mut bits = 0u16;
        let mut r = 0;
        while r < self.len as usize {
            bits |= ((self.compat[r] >> g) & 1) << r;
            r += 1;
        }
        bits
    }

    /// `held` covers `req`: everything `req` conflicts with, as requester or as granted
    /// mode, `held` conflicts with too.
    const fn covers_idx(&self, held: usize, req: usize) -> bool {
        let row = self.compat[held] & !self.compat[req] == 0;
        let col = self.col(held) & !self.col(req) == 0;
        row && col
    }

    const fn compute_sup(&self, a: usize, b: usize) -> u8 {
        let n = self.len as usize;
        // The least upper bound if there is one.
        let mut c = 0;
        while c < n {
            if self.covers_idx(c, a) && self.covers_idx(c, b) {
                let mut least = true;
                let mut d = 0;
                while d < n {
                    if self.covers_idx(d, a) && self.covers_idx(d, b) && !self.covers_idx(d, c) {
                        least = false;
                    }
                    d += 1;
                }
                if least {
                    return c as u8;
                }
            }
            c += 1;
        }
        // Otherwise the upper bound compatible with the most (requested, granted) pairs;
        // ties go to the later mode. Symmetric in a and b, so still commutative.
        let mut best = NONE;
        let mut best_score = 0;
        let mut c = 0;
        while c < n {
            if self.covers_idx(c, a) && self.covers_idx(c, b) {
                let score = self.compat[c].count_ones() + self.col(c).count_ones();
                if best == NONE || score >= best_score {
                    best = c as u8;
                    best_score = score;
                }
            }
            c += 1;
        }
        assert!(
            best != NONE,
            "no upper bound: the table needs a mode conflicting with all"
        );
        best
    }

    /// The protocol's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Number of modes.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Always false: a table has at least one mode.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// All modes, in index order.
    pub fn modes(&self) -> impl Iterator<Item = LockMode> {
        (0..self.len).map(LockMode)
    }

    /// True if `mode` belongs to this table.
    #[inline]
    pub fn contains(&self, mode: LockMode) -> bool {
        mode.0 < self.len
    }

    /// The mode's name (`"SIX"`), or `"?"` for a mode outside the table.
    pub fn mode_name(&self, mode: LockMode) -> &'static str {
        if self.contains(mode) {
            self.names[mode.index()]
        } else {
            "?"
        }
    }

    /// The mode called `name`, if any.
    pub fn by_name(&self, name: &str) -> Option<LockMode> {
        self.modes().find(|m| self.names[m.index()] == name)
    }

    /// True if a transaction may be granted `requested` while another holds `granted`
    /// (row = requested, column = granted). False for modes outside the table.
    #[inline]
    pub fn compatible(&self, requested: LockMode, granted: LockMode) -> bool {
        self.contains(requested)
            && self.contains(granted)
            && self.compat[requested.index()] & (1 << granted.0) != 0
    }

    /// Both directions compatible (used between queued requests: a newcomer must neither
    /// delay a waiter ahead of it nor jump ahead of one it would have waited for).
    #[inline]
    pub(crate) fn compatible_both(&self, a: u8, b: u8) -> bool {
        (self.compat[a as usize] >> b) & (self.compat[b as usize] >> a) & 1 != 0
    }

    /// Unchecked fast form of [`ModeTable::compatible`] on raw indexes (both in range).
    #[inline]
    pub(crate) fn compat_raw(&self, requested: u8, granted: u8) -> bool {
        (self.compat[requested as usize] >> granted) & 1 != 0
    }

    /// The supremum (conversion result) of `a` and `b`: the mode a transaction holds after
    /// holding `a` and asking for `b`.
    ///
    /// It is computed, never written down: the least mode (in the covering order of
    /// [`ModeTable::covers`]) that covers both. Where no least one exists (taDOM's NR with IX
    /// or CX: see `tadom.rs`) it is the covering mode compatible with the most
    /// (requested, granted) pairs. Commutative, idempotent, and an upper bound of both.
    /// Modes outside the table give the last mode of the table.
    #[inline]
    pub fn supremum(&self, a: LockMode, b: LockMode) -> LockMode {
        if self.contains(a) && self.contains(b) {
            LockMode(self.sup[a.index()][b.index()])
        } else {
            LockMode(self.len - 1)
        }
    }

    #[inline]
    pub(crate) fn sup_raw(&self, a: u8, b: u8) -> u8 {
        self.sup[a as usize][b as usize]
    }

    /// True if holding `held` gives at least the protection of holding `requested`: `held`
    /// conflicts with every mode `requested` conflicts with, both as a requested and as a
    /// granted mode. A request covered by a held mode needs no new lock.
    #[inline]
    pub fn covers(&self, held: LockMode, requested: LockMode) -> bool {
        self.contains(held)
            && self.contains(requested)
            && self.sup[held.index()][requested.index()] == held.0
    }

    /// True if `mode` is weak: mutually compatible with the other weak modes and eligible
    /// for the fast path on table-level names.
    #[inline]
    pub fn is_weak(&self, mode: LockMode) -> bool {
        self.contains(mode) && self.weak & (1 << mode.0) != 0
    }

    /// True if `mode` conflicts (in either direction) with some weak mode: taking it on a
    /// table-level name first moves every fast-path lock on that name into the lock table.
    pub fn is_strong(&self, mode: LockMode) -> bool {
        self.contains(mode) && self.is_strong_raw(mode.0)
    }

    pub(crate) fn is_strong_raw(&self, m: u8) -> bool {
        (0..self.len).any(|w| self.weak & (1 << w) != 0 && !self.compatible_both(m, w))
    }

    /// The mode that holding `mode` on a name implies on each of its children, if any.
    pub fn child_mode(&self, mode: LockMode) -> Option<LockMode> {
        match self.child.get(mode.index()) {
            Some(&c) if c != NONE && self.contains(mode) => Some(LockMode(c)),
            _ => None,
        }
    }

    /// Escalation modes `(read, write)` for a parent name (MGL: S and X).
    pub fn escalation_modes(&self) -> (LockMode, LockMode) {
        (LockMode(self.escalation.0), LockMode(self.escalation.1))
    }

    /// True if the compatibility entry `(requested, granted)` is quoted from the protocol's
    /// source table; false if Shoal derived it (see the protocol's file for how).
    pub fn is_quoted(&self, requested: LockMode, granted: LockMode) -> bool {
        self.contains(requested)
            && self.contains(granted)
            && self.quoted[requested.index()] & (1 << granted.0) != 0
    }

    /// True if the compatibility entry `(requested, granted)` is written out in the
    /// protocol's spec (quoted or Shoal's own); false if computed by the AND rule.
    pub fn is_literal(&self, requested: LockMode, granted: LockMode) -> bool {
        self.contains(requested)
            && self.contains(granted)
            && self.literal[requested.index()] & (1 << granted.0) != 0
    }
}

impl fmt::Debug for ModeTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} (row = requested, column = granted)", self.name)?;
        for r in self.modes() {
            write!(f, "{:<5}", self.mode_name(r))?;
            for g in self.modes() {
                f.write_str(if self.compatible(r, g) { " +" } else { " -" })?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}
