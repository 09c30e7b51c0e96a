//! Lock names: what a lock is on.
//!
//! Two hierarchies (DESIGN.md §3.7), each name knowing its parent for intention locking:
//!
//! ```text
//!   database(db) ─► table(db, t) ─► row(db, t, row id)  |  key(db, t, key bytes)
//!   database(db) ─► document(db, d) ─► node(db, d, node id bytes) ─► edge(node, kind)
//! ```
//!
//! A name is compact (72 bytes) and carries its 64-bit hash, computed once when it is made,
//! so the lock table and the per-transaction lock set never hash it again. Key and node
//! bytes up to [`INLINE_BYTES`] long are stored inline; longer ones on the heap (any length
//! works). Equality compares the full bytes, never only the hash.
//!
//! **Placement.** Besides its hash a name carries its *place*, which picks its lock-table
//! bucket ([`LockName::place`]): for a key or node, the hash of everything but the last
//! byte, plus that byte. Keys that differ only in their last byte — consecutive integers,
//! a TPC-C order's lines, the rows of a bulk insert — then lie in consecutive buckets, whose
//! cache lines the hardware prefetcher fetches ahead, instead of one cold line per lock
//! (insert benchmark: the bucket latch's miss was 6 % of the time). Other keys spread as
//! uniformly as the hash does. The hash itself still depends on every byte (the lock set's
//! map uses its high bits).

use std::fmt;
use std::hash::{Hash, Hasher};

/// Longest key or node id stored inside the name itself; longer ones are heap-allocated.
pub const INLINE_BYTES: usize = 24;

/// The level and kind of a lock name.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[repr(u8)]
pub enum NameKind {
    /// A whole database.
    Database = 0,
    /// A table of a database.
    Table = 1,
    /// A row of a table, named by a 64-bit row id.
    Row = 2,
    /// A row or index entry of a table, named by its key bytes (memcomparable encoding).
    Key = 3,
    /// An XML document of a database.
    Document = 4,
    /// A node of a document, named by its node id bytes (e.g. an encoded DeweyID).
    Node = 5,
    /// A navigation edge of a node (seed 002 §3.4.2).
    Edge = 6,
}

impl NameKind {
    /// Keys, nodes and edges carry bytes; the other kinds are fully named by their ids.
    #[inline]
    fn has_bytes(self) -> bool {
        matches!(self, NameKind::Key | NameKind::Node | NameKind::Edge)
    }
}

/// taDOM navigation edges (seed 002 §3.4.2, Figure 9).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[repr(u8)]
pub enum EdgeKind {
    /// Previous-sibling edge.
    PreviousSibling = 0,
    /// Next-sibling edge.
    NextSibling = 1,
    /// First-child edge.
    FirstChild = 2,
    /// Last-child edge.
    LastChild = 3,
}

impl EdgeKind {
    fn from_u8(v: u8) -> EdgeKind {
        match v {
            0 => EdgeKind::PreviousSibling,
            1 => EdgeKind::NextSibling,
            2 => EdgeKind::FirstChild,
            _ => EdgeKind::LastChild,
        }
    }
}

/// Inline key bytes, 8-byte aligned so that a name is copied with whole-word moves (an
/// odd layout made every copy of a freshly built name a store-forwarding stall).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(C, align(8))]
struct Inline([u8; INLINE_BYTES]);

/// A lock name (see the module doc). Cheap to compare: the stored hash first, then the
/// fields, then the bytes.
#[derive(Clone)]
pub struct LockName {
    hash: u64,
    /// Bucket placement (module doc, "Placement"); in what was padding.
    place: u32,
    /// Row id, or the edge kind for edges; 0 otherwise.
    id: u64,
    db: u32,
    /// Table or document id; 0 for databases.
    container: u32,
    kind: NameKind,
    /// Number of bytes in `inline` (0 when they are on the heap).
    len: u8,
    inline: Inline,
    /// Key or node bytes longer than [`INLINE_BYTES`].
    heap: Option<Box<[u8]>>,
}

// The place lives in what was padding: a name stays 72 bytes (on 64-bit targets).
const _: () = assert!(std::mem::size_of::<LockName>() <= 72);

const SEED: u64 = 0x243f_6a88_85a3_08d3;
const MUL: u64 = 0x9e37_79b9_7f4a_7c15;

/// One multiply-fold mixing step: the 128-bit product of the state and the word, high half
/// xor low half.
#[inline]
fn mix(h: u64, v: u64) -> u64 {
    let p = ((h ^ v) as u128).wrapping_mul(MUL as u128 | 1);
    (p as u64) ^ ((p >> 64) as u64)
}

/// Final avalanche so that every output bit depends on every input bit (the low bits pick
/// the lock-table bucket, the high bits the local map's control bytes).
#[inline]
fn finish(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The hash of a name and its place (module doc): both start from the kind, ids and
/// length, then mix all bytes but the last; the place is that state finished plus the last
/// byte, the hash is the state with the last byte mixed in, finished.
fn hash_of(kind: NameKind, db: u32, container: u32, id: u64, bytes: &[u8]) -> (u64, u32) {
    let mut h = mix(SEED, ((kind as u64) << 32) | db as u64);
    h = mix(h, ((container as u64) << 32) | bytes.len() as u64);
    h = mix(h, id);
    let Some((&last, body)) = bytes.split_last() else {
        let f = finish(h);
        return (f, f as u32);
    };
    let mut chunks = body.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = mix(h, u64::from_le_bytes(w));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = mix(h, u64::from_le_bytes(w));
    }
    let place = (finish(h) as u32).wrapping_add(u32::from(last));
    (finish(mix(h, 0x100 | u64::from(last))), place)
}

impl LockName {
    #[inline]
    fn make(kind: NameKind, db: u32, container: u32, id: u64, bytes: &[u8]) -> LockName {
        let mut inline = Inline([0; INLINE_BYTES]);
        let (len, heap) = if bytes.len() <= INLINE_BYTES {
            inline.0[..bytes.len()].copy_from_slice(bytes);
            (bytes.len() as u8, None)
        } else {
            (0, Some(bytes.into()))
        };
        let (hash, place) = hash_of(kind, db, container, id, bytes);
        LockName {
            hash,
            place,
            id,
            db,
            container,
            kind,
            len,
            inline,
            heap,
        }
    }

    /// The whole database `db`.
    pub fn database(db: u32) -> LockName {
        Self::make(NameKind::Database, db, 0, 0, &[])
    }

    /// Table `table` of database `db`.
    pub fn table(db: u32, table: u32) -> LockName {
        Self::make(NameKind::Table, db, table, 0, &[])
    }

    /// The row with id `row` of a table.
    pub fn row(db: u32, table: u32, row: u64) -> LockName {
        Self::make(NameKind::Row, db, table, row, &[])
    }

    /// The row or index entry with key `key` (any length) of a table.
    pub fn key(db: u32, table: u32, key: &[u8]) -> LockName {
        Self::make(NameKind::Key, db, table, 0, key)
    }

    /// Document `doc` of database `db`.
    pub fn document(db: u32, doc: u32) -> LockName {
        Self::make(NameKind::Document, db, doc, 0, &[])
    }

    /// The node with id bytes `node` of a document.
    pub fn node(db: u32, doc: u32, node: &[u8]) -> LockName {
        Self::make(NameKind::Node, db, doc, 0, node)
    }

    /// Edge `edge` of a node.
    pub fn edge(db: u32, doc: u32, node: &[u8], edge: EdgeKind) -> LockName {
        Self::make(NameKind::Edge, db, doc, edge as u64, node)
    }

    /// The name's kind.
    pub fn kind(&self) -> NameKind {
        self.kind
    }

    /// The database id.
    pub fn db(&self) -> u32 {
        self.db
    }

    /// The table or document id (0 for a database).
    pub fn container(&self) -> u32 {
        self.container
    }

    /// The row id of a row name.
    pub fn row_id(&self) -> Option<u64> {
        (self.kind == NameKind::Row).then_some(self.id)
    }

    /// The key bytes of a key name, or the node id bytes of a node or edge name; empty for
    /// the other kinds.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        match &self.heap {
            Some(b) => b,
            None => &self.inline.0[..self.len as usize],
        }
    }

    /// The edge kind of an edge name.
    pub fn edge_kind(&self) -> Option<EdgeKind> {
        (self.kind == NameKind::Edge).then(|| EdgeKind::from_u8(self.id as u8))
    }

    /// The 64-bit hash computed when the name was made.
    #[inline]
    pub fn hash64(&self) -> u64 {
        self.hash
    }

    /// Where the name goes in the lock table: its bucket is `place & (buckets - 1)`. Names
    /// that differ only in their last byte have consecutive places (module doc,
    /// "Placement"); equal names have equal places.
    #[inline]
    pub fn place(&self) -> u32 {
        self.place
    }

    /// The name one level up (where an intention lock goes), or `None` for a database.
    /// Row and key → table → database; edge → node → document → database.
    pub fn parent(&self) -> Option<LockName> {
        match self.kind {
            NameKind::Database => None,
            NameKind::Table | NameKind::Document => Some(LockName::database(self.db)),
            NameKind::Row | NameKind::Key => Some(LockName::table(self.db, self.container)),
            NameKind::Node => Some(LockName::document(self.db, self.container)),
            NameKind::Edge => Some(LockName::node(self.db, self.container, self.bytes())),
        }
    }

    /// True for the names a transaction's row locks count against for escalation: rows
    /// and keys (their parent is a table).
    pub fn is_row_level(&self) -> bool {
        matches!(self.kind, NameKind::Row | NameKind::Key)
    }

    /// True for names that may be locked on the fast path (weak modes only): databases,
    /// tables and documents — the names every transaction takes intention locks on.
    pub fn is_fast_path_eligible(&self) -> bool {
        matches!(
            self.kind,
            NameKind::Database | NameKind::Table | NameKind::Document
        )
    }

    /// The compact form of a fast-path-eligible name.
    pub(crate) fn fast_key(&self) -> FastKey {
        FastKey {
            kind: self.kind as u8,
            db: self.db,
            container: self.container,
        }
    }
}

/// A fast-path-eligible name in 12 bytes (kind, database, container), as kept in owners'
/// fast-path slots.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct FastKey {
    pub(crate) kind: u8,
    pub(crate) db: u32,
    pub(crate) container: u32,
}

impl PartialEq for LockName {
    #[inline]
    fn eq(&self, o: &LockName) -> bool {
        self.hash == o.hash
            && self.id == o.id
            && self.db == o.db
            && self.container == o.container
            && self.kind == o.kind
            && (!self.kind.has_bytes() || self.bytes() == o.bytes())
    }
}

impl Eq for LockName {}

impl Hash for LockName {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// A hasher for maps keyed by [`LockName`]: it passes the name's stored hash through.
#[derive(Default, Clone, Copy)]
pub(crate) struct NameHasher(u64);

impl Hasher for NameHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        // Not used by LockName; a fallback so that other keys still hash.
        for &b in bytes {
            self.0 = mix(self.0, b as u64);
        }
    }

    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

fn write_bytes(f: &mut fmt::Formatter<'_>, b: &[u8]) -> fmt::Result {
    const SHOWN: usize = 16;
    for x in b.iter().take(SHOWN) {
        write!(f, "{x:02x}")?;
    }
    if b.len() > SHOWN {
        write!(f, "..({} bytes)", b.len())?;
    }
    Ok(())
}

impl fmt::Display for LockName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let db = self.db;
        let c = self.container;
        match self.kind {
            NameKind::Database => write!(f, "db{db}"),
            NameKind::Table => write!(f, "db{db}.table{c}"),
            NameKind::Row => write!(f, "db{db}.table{c}.row{}", self.id),
            NameKind::Key => {
                write!(f, "db{db}.table{c}.key[")?;
                write_bytes(f, self.bytes())?;
                f.write_str("]")
            }
            NameKind::Document => write!(f, "db{db}.doc{c}"),
            NameKind::Node | NameKind::Edge => {
                write!(f, "db{db}.doc{c}.node[")?;
                write_bytes(f, self.bytes())?;
                f.write_str("]")?;
                if let Some(e) = self.edge_kind() {
                    write!(f, ".{e:?}")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Debug for LockName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
