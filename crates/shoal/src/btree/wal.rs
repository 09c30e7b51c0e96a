//! The B-tree's log records and its resource manager (id [`RM_BTREE`]): how a change is
//! described, redone and undone (`docs/format.md`, "B-tree log records").
//!
//! ```text
//! redo payloads  [2][op][…]                       applied by NodeMut (node/edit.rs)
//!   1 INSERT   [entry]                            insert at the key's position
//!   2 REPLACE  [entry]                            replace the entry with that key
//!   3 REMOVE   [key]                              remove the entry with that key
//!   4 TRUNCATE [keep u32][right u64][high fence]  left half of a split
//!   5 FORMAT   [node image]                       the whole node (root growth, CLRs)
//!   6 PATCH    [key_len u16][key][at u16][bytes]  overwrite bytes [at, at + len) of the
//!                                                 entry with that key (same length)
//! undo payloads of user changes (logical, btree rule 6)  [2][op][root u64][…]
//!   0x81 UNDO_INSERT  [key]      0x82 UNDO_REMOVE [entry]    0x83 UNDO_REPLACE [old entry]
//!   0x85 UNDO_PATCH   [key_len u16][key][at u16][old bytes]
//!
//! An update whose new entry has the old one's length, both values inline, is logged as a
//! PATCH of the bytes between the first and the last that differ, when that is shorter than
//! a REPLACE ([`EntryChange`]): a TPC-C stock update changes 4 fixed-width fields of a
//! 300-byte row, and logs them in ~50 bytes of redo and undo instead of ~700. (InnoDB's
//! in-place update records, `MLOG_REC_UPDATE_IN_PLACE`, likewise carry only the changed
//! fields.)
//! undo payloads of structure changes (page-oriented, system transactions)
//!   a redo payload (e.g. REMOVE of the separator a split inserted), or
//!   0x84 UNDO_SPLIT [right u64]: put the right half (still intact) back into the left page
//! ```

use super::node::{NodeImage, NodeMut, KEY_LEN_BYTES, VALUE_INLINE};
use super::tree::BTree;
use crate::error::{Error, Result};
use crate::log::record::LogRecord;
use crate::page::{AtomicBytesMut, PageRead};
use crate::space::SpaceManager;
use crate::txn::{ResourceManager, UndoContext};
use crate::types::{Lsn, PageId};
use std::sync::Arc;

/// Resource manager id of the B-tree (first byte of its redo payloads; fixed forever).
pub const RM_BTREE: u8 = 2;

const OP_INSERT: u8 = 1;
const OP_REPLACE: u8 = 2;
const OP_REMOVE: u8 = 3;
const OP_TRUNCATE: u8 = 4;
const OP_FORMAT: u8 = 5;
const OP_PATCH: u8 = 6;
const UNDO_INSERT: u8 = 0x81;
const UNDO_REMOVE: u8 = 0x82;
const UNDO_REPLACE: u8 = 0x83;
const UNDO_SPLIT: u8 = 0x84;
const UNDO_PATCH: u8 = 0x85;

fn payload(op: u8, parts: &[&[u8]]) -> Vec<u8> {
    let len = 2 + parts.iter().map(|p| p.len()).sum::<usize>();
    let mut v = Vec::with_capacity(len);
    v.push(RM_BTREE);
    v.push(op);
    for p in parts {
        v.extend_from_slice(p);
    }
    v
}

/// A leaf entry `[key_len u16][key][tagged value]` built where its INSERT redo payload
/// will be, after the payload's two head bytes: an insert makes one buffer for the entry
/// and its redo record instead of three (tagged value, entry, payload), and copies the
/// value once instead of three times.
pub(crate) struct NewEntry(Vec<u8>);

/// Bytes of a redo payload before its entry (`[RM_BTREE][op]`).
const PAYLOAD_HEAD: usize = 2;

impl NewEntry {
    /// The entry of `key` whose tagged value is the concatenation of `tagged`.
    pub(crate) fn new(key: &[u8], tagged: &[&[u8]]) -> NewEntry {
        let len = PAYLOAD_HEAD
            + KEY_LEN_BYTES
            + key.len()
            + tagged.iter().map(|p| p.len()).sum::<usize>();
        let mut v = Vec::with_capacity(len);
        v.extend_from_slice(&[RM_BTREE, OP_INSERT]);
        v.extend_from_slice(&(key.len() as u16).to_le_bytes());
        v.extend_from_slice(key);
        for p in tagged {
            v.extend_from_slice(p);
        }
        NewEntry(v)
    }

    /// The entry record.
    pub(crate) fn entry(&self) -> &[u8] {
        &self.0[PAYLOAD_HEAD..]
    }

    /// The INSERT redo payload of the entry (as [`redo_insert`] of [`NewEntry::entry`]).
    pub(crate) fn into_redo_insert(self) -> Vec<u8> {
        self.0
    }
}

pub(crate) fn redo_insert(entry: &[u8]) -> Vec<u8> {
    payload(OP_INSERT, &[entry])
}
pub(crate) fn redo_remove(key: &[u8]) -> Vec<u8> {
    payload(OP_REMOVE, &[key])
}
pub(crate) fn redo_truncate(keep: usize, right: PageId, high: &Option<Vec<u8>>) -> Vec<u8> {
    let mut fence = Vec::new();
    if let Some(h) = high {
        fence.push(1);
        fence.extend_from_slice(h);
    } else {
        fence.push(0);
    }
    payload(
        OP_TRUNCATE,
        &[&(keep as u32).to_le_bytes(), &right.0.to_le_bytes(), &fence],
    )
}
pub(crate) fn redo_format(image: &NodeImage) -> Vec<u8> {
    let mut v = vec![RM_BTREE, OP_FORMAT];
    image.encode_into(&mut v);
    v
}
pub(crate) fn undo_insert(root: PageId, key: &[u8]) -> Vec<u8> {
    payload(UNDO_INSERT, &[&root.0.to_le_bytes(), key])
}
pub(crate) fn undo_remove(root: PageId, entry: &[u8]) -> Vec<u8> {
    payload(UNDO_REMOVE, &[&root.0.to_le_bytes(), entry])
}
pub(crate) fn undo_split(right: PageId) -> Vec<u8> {
    payload(UNDO_SPLIT, &[&right.0.to_le_bytes()])
}

/// How a change of a leaf entry to another with the same key is logged: as a PATCH of the
/// differing bytes (module doc) or as a REPLACE of the whole entry. Built from the key and
/// the two tagged values, so a caller that holds the values (an update that read the old
/// one) builds neither entry: a REPLACE's payload is assembled from the parts.
pub(crate) struct EntryChange<'a> {
    key: &'a [u8],
    old: Tagged<'a>,
    new: Tagged<'a>,
    /// The bytes of the entry that differ (first to last), if logged as a PATCH.
    patch: Option<std::ops::Range<usize>>,
}

/// A leaf value as stored after its key: its tag byte and the bytes after it.
#[derive(Clone, Copy)]
pub(crate) struct Tagged<'a> {
    tag: u8,
    body: &'a [u8],
}

impl<'a> Tagged<'a> {
    /// An inline value (`[VALUE_INLINE][value]`).
    pub(crate) fn inline(value: &'a [u8]) -> Tagged<'a> {
        Tagged {
            tag: VALUE_INLINE,
            body: value,
        }
    }

    /// The tagged value of an entry `[key_len u16][key][tag][…]` whose key is `key_len`
    /// bytes long.
    ///
    /// # Panics
    /// If the entry is shorter than its key and tag (the callers built or checked it).
    fn of_entry(entry: &'a [u8], key_len: usize) -> Tagged<'a> {
        let tag = KEY_LEN_BYTES + key_len;
        Tagged {
            tag: entry[tag],
            body: &entry[tag + 1..],
        }
    }
}

impl<'a> EntryChange<'a> {
    /// The change of entry `old` to `new` (both `[key_len u16][key][tag][…]`, same key),
    /// as [`EntryChange::of`].
    ///
    /// # Panics
    /// If either entry is shorter than its key and tag: the caller builds `new` and checks
    /// an `old` read from a page first (a shorter one is corruption).
    pub(crate) fn new(old: &'a [u8], new: &'a [u8], key_len: usize) -> EntryChange<'a> {
        let key = &new[KEY_LEN_BYTES..KEY_LEN_BYTES + key_len];
        EntryChange::of(
            key,
            Tagged::of_entry(old, key_len),
            Tagged::of_entry(new, key_len),
        )
    }

    /// The change of `key`'s tagged value from `old` to `new`: a PATCH when both have one
    /// length, their value tags are the inline tag (an overflow reference changes through
    /// REPLACE, whose undo frees the newer chain), the differing bytes start at offsets a
    /// `u16` holds, and the PATCH is the shorter record. PATCH offsets count from the
    /// entry's first byte.
    pub(crate) fn of(key: &'a [u8], old: Tagged<'a>, new: Tagged<'a>) -> EntryChange<'a> {
        let body_at = KEY_LEN_BYTES + key.len() + 1;
        let mut patch = None;
        if old.body.len() == new.body.len() && old.tag == VALUE_INLINE && new.tag == VALUE_INLINE {
            let (o, n) = (old.body, new.body);
            let first = super::diff::common_prefix_len(o, n);
            let last = o.len() - super::diff::common_suffix_len(o, n);
            let (at, end) = (body_at + first, body_at + last.max(first));
            let patch_bytes = KEY_LEN_BYTES + key.len() + 2 + (end - at);
            if at <= u16::MAX as usize && patch_bytes < body_at + n.len() {
                patch = Some(at..end);
            }
        }
        EntryChange {
            key,
            old,
            new,
            patch,
        }
    }

    /// The bytes of `value`'s body that the patch range (entry offsets) covers.
    fn patched<'v>(&self, value: Tagged<'v>, r: &std::ops::Range<usize>) -> &'v [u8] {
        let body_at = KEY_LEN_BYTES + self.key.len() + 1;
        &value.body[r.start - body_at..r.end - body_at]
    }

    /// The redo payload: PATCH or REPLACE (`[key_len u16][key][tag][…]`, the new entry).
    pub(crate) fn redo(&self) -> Vec<u8> {
        match &self.patch {
            Some(r) => patch(OP_PATCH, None, self.key, r.start, self.patched(self.new, r)),
            None => payload(
                OP_REPLACE,
                &[
                    &(self.key.len() as u16).to_le_bytes(),
                    self.key,
                    &[self.new.tag],
                    self.new.body,
                ],
            ),
        }
    }

    /// The undo payload for the tree rooted at `root`: UNDO_PATCH or UNDO_REPLACE (with the
    /// old entry).
    pub(crate) fn undo(&self, root: PageId) -> Vec<u8> {
        match &self.patch {
            Some(r) => patch(
                UNDO_PATCH,
                Some(root),
                self.key,
                r.start,
                self.patched(self.old, r),
            ),
            None => payload(
                UNDO_REPLACE,
                &[
                    &root.0.to_le_bytes(),
                    &(self.key.len() as u16).to_le_bytes(),
                    self.key,
                    &[self.old.tag],
                    self.old.body,
                ],
            ),
        }
    }
}

/// A PATCH redo payload: overwrite bytes `[at, at + bytes.len())` of `key`'s entry.
pub(crate) fn redo_patch(key: &[u8], at: usize, bytes: &[u8]) -> Vec<u8> {
    patch(OP_PATCH, None, key, at, bytes)
}

/// `[2][op]([root u64])[key_len u16][key][at u16][bytes]`; `at` fits a `u16` (checked by
/// the callers: [`EntryChange::new`], and an undo's `at` was parsed from one).
fn patch(op: u8, root: Option<PageId>, key: &[u8], at: usize, bytes: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(2 + 8 + KEY_LEN_BYTES + key.len() + 2 + bytes.len());
    v.push(RM_BTREE);
    v.push(op);
    if let Some(root) = root {
        v.extend_from_slice(&root.0.to_le_bytes());
    }
    v.extend_from_slice(&(key.len() as u16).to_le_bytes());
    v.extend_from_slice(key);
    v.extend_from_slice(&(at as u16).to_le_bytes());
    v.extend_from_slice(bytes);
    v
}

/// A PATCH body `[key_len u16][key][at u16][bytes]` as (key, at, bytes).
pub(crate) fn parse_patch(lsn: Lsn, body: &[u8]) -> Result<(&[u8], usize, &[u8])> {
    let bad = || Error::log_corruption(lsn, "bad B-tree patch payload");
    let n = body
        .get(..KEY_LEN_BYTES)
        .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
        .ok_or_else(bad)?;
    let key = body.get(KEY_LEN_BYTES..KEY_LEN_BYTES + n).ok_or_else(bad)?;
    let rest = &body[KEY_LEN_BYTES + n..];
    let at = rest
        .get(..2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
        .ok_or_else(bad)?;
    Ok((key, at, &rest[2..]))
}

fn split_u64(lsn: Lsn, b: &[u8]) -> Result<(u64, &[u8])> {
    if b.len() < 8 {
        return Err(Error::log_corruption(lsn, "B-tree payload too short"));
    }
    let (h, t) = b.split_at(8);
    Ok((u64::from_le_bytes(h.try_into().expect("8 bytes")), t))
}

/// The B-tree's resource manager. It holds the database's space manager, which a logical
/// undo needs when putting a key back requires a split.
pub struct BTreeRm {
    space: Arc<SpaceManager>,
}

impl BTreeRm {
    /// The resource manager of the B-trees of the database whose space manager is `space`.
    pub fn new(space: Arc<SpaceManager>) -> BTreeRm {
        BTreeRm { space }
    }
}

impl ResourceManager for BTreeRm {
    fn id(&self) -> u8 {
        RM_BTREE
    }

    fn name(&self) -> &'static str {
        "btree"
    }

    fn redo(
        &self,
        lsn: Lsn,
        page_id: PageId,
        payload: &[u8],
        page: &mut AtomicBytesMut<'_>,
    ) -> Result<()> {
        self.redo_near(lsn, page_id, payload, page, None)
    }

    /// Inserts, replacements and removals start at entry `near` (checked with one or two key
    /// comparisons, `Node::search_near`) instead of searching the leaf again.
    fn redo_near(
        &self,
        lsn: Lsn,
        page_id: PageId,
        payload: &[u8],
        page: &mut AtomicBytesMut<'_>,
        near: Option<usize>,
    ) -> Result<()> {
        let (&op, body) = payload
            .get(1..)
            .and_then(|b| b.split_first())
            .ok_or_else(|| Error::log_corruption(lsn, "empty B-tree payload"))?;
        match op {
            OP_FORMAT => {
                let image = NodeImage::decode(page_id, body)?;
                // Check before change: the image must fit a page of this size.
                if image.used_bytes() > super::node::usable_bytes(page.page_len()) {
                    return Err(Error::log_corruption(lsn, "B-tree node image too large"));
                }
                image.write_to(page, page_id)
            }
            OP_INSERT => NodeMut::open(page)?.insert(body, near),
            OP_REPLACE => NodeMut::open(page)?.replace(body, near),
            OP_REMOVE => NodeMut::open(page)?.remove(body, near),
            OP_PATCH => {
                let (key, at, bytes) = parse_patch(lsn, body)?;
                NodeMut::open(page)?.patch(key, at, bytes, near)
            }
            OP_TRUNCATE => {
                let bad = || Error::log_corruption(lsn, "bad B-tree truncate payload");
                if body.len() < 13 {
                    return Err(bad());
                }
                let keep = u32::from_le_bytes(body[0..4].try_into().expect("4")) as usize;
                let right = PageId(u64::from_le_bytes(body[4..12].try_into().expect("8")));
                let high = match (body[12], &body[13..]) {
                    (0, []) => None,
                    (1, k) => Some(k.to_vec()),
                    _ => return Err(bad()),
                };
                NodeMut::open(page)?.truncate(keep, &high, right)
            }
            _ => Err(Error::log_corruption(
                lsn,
                format!("unknown B-tree operation {op}"),
            )),
        }
    }

    fn undo(&self, ctx: &mut UndoContext<'_>, rec: &LogRecord) -> Result<()> {
        let lsn = ctx.record_lsn();
        let (&op, body) = rec
            .undo
            .get(1..)
            .and_then(|b| b.split_first())
            .ok_or_else(|| Error::log_corruption(lsn, "empty B-tree undo payload"))?;
        match op {
            OP_INSERT | OP_REPLACE | OP_REMOVE | OP_FORMAT | OP_TRUNCATE | OP_PATCH => {
                ctx.compensate(rec.page_id, rec.undo.clone())
            }
            UNDO_SPLIT => {
                let (right, _) = split_u64(lsn, body)?;
                let merged = unsplit(ctx, rec.page_id, PageId(right))?;
                ctx.compensate(rec.page_id, redo_format(&merged))
            }
            UNDO_INSERT | UNDO_REMOVE | UNDO_REPLACE | UNDO_PATCH => {
                let (root, rest) = split_u64(lsn, body)?;
                let tree = BTree::handle(ctx.pool().clone(), self.space.clone(), PageId(root));
                match op {
                    UNDO_INSERT => tree.undo_insert(ctx, rest),
                    UNDO_REMOVE => tree.undo_remove(ctx, rest),
                    UNDO_REPLACE => tree.undo_replace(ctx, rest),
                    _ => {
                        let (key, at, old) = parse_patch(lsn, rest)?;
                        tree.undo_patch(ctx, key, at, old)
                    }
                }
            }
            _ => Err(Error::log_corruption(
                lsn,
                format!("unknown B-tree undo operation {op}"),
            )),
        }
    }
}

/// The left page of an interrupted split with its right half put back: the left page's
/// entries followed by the right page's, the right page's high fence and sibling. The right
/// page is intact because the split's system transaction held it latched until the crash
/// (transaction rule 8). For an inner node the separator comes back as the entry of the
/// right page's leftmost child.
fn unsplit(ctx: &UndoContext<'_>, left: PageId, right: PageId) -> Result<NodeImage> {
    let pool = ctx.pool();
    let r = {
        let g = pool.fix_shared(right)?;
        super::node::Node::open(g.bytes())?.image()?
    };
    let g = pool.fix_shared(left)?;
    let mut l = super::node::Node::open(g.bytes())?.image()?;
    if l.level != r.level || r.low.is_none() {
        return Err(Error::corruption(
            left,
            format!("undo of a split: page {right} is not its right half"),
        ));
    }
    if l.level > 0 {
        let sep = r.low.clone().expect("checked");
        l.entries.push(super::node::inner_entry(&sep, r.child0));
    }
    l.entries.extend(r.entries);
    l.high = r.high;
    l.right = r.right;
    Ok(l)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::btree::node::inline_leaf_entry;

    #[test]
    fn an_entry_change_is_a_patch_only_where_that_is_shorter_and_safe() {
        let key = b"key-0001";
        let old_v: Vec<u8> = (0..100u8).collect();
        let entry = |v: &[u8]| inline_leaf_entry(key, v);
        let change = |new_v: &[u8]| {
            let (o, n) = (entry(&old_v), entry(new_v));
            let c = EntryChange::new(&o, &n, key.len());
            (c.patch.clone(), c.redo(), c.undo(PageId(9)))
        };
        // Bytes 10 and 12 differ: one PATCH of bytes 10..=12 of the value.
        let mut v = old_v.clone();
        v[10] = 0xff;
        v[12] = 0xfe;
        let (p, redo, undo) = change(&v);
        let at = KEY_LEN_BYTES + key.len() + 1 + 10;
        assert_eq!(p, Some(at..at + 3));
        assert_eq!(redo[1], OP_PATCH);
        assert_eq!(
            parse_patch(Lsn(1), &redo[2..]).unwrap(),
            (&key[..], at, &v[10..13])
        );
        assert_eq!(undo[1], UNDO_PATCH);
        assert_eq!(&undo[2..10], &9u64.to_le_bytes());
        let (k, a, old) = parse_patch(Lsn(1), &undo[10..]).unwrap();
        assert_eq!((k, a, old), (&key[..], at, &old_v[10..13]));
        // No change: an empty patch.
        assert_eq!(change(&old_v).0.map(|r| r.len()), Some(0));
        // Every byte changed, or a length change: REPLACE.
        let all: Vec<u8> = old_v.iter().map(|b| !b).collect();
        let (p, redo, undo) = change(&all);
        assert_eq!((p, redo[1], undo[1]), (None, OP_REPLACE, UNDO_REPLACE));
        // A REPLACE assembled from its parts carries the whole new and old entries.
        assert_eq!(&redo[2..], &entry(&all)[..]);
        assert_eq!(&undo[2..10], &9u64.to_le_bytes());
        assert_eq!(&undo[10..], &entry(&old_v)[..]);
        // Built from the two values, a change logs what it logs built from the two entries.
        for new_v in [v.clone(), all.clone(), old_v[..99].to_vec()] {
            let (o, n) = (entry(&old_v), entry(&new_v));
            let of_entries = EntryChange::new(&o, &n, key.len());
            let of_values = EntryChange::of(key, Tagged::inline(&old_v), Tagged::inline(&new_v));
            assert_eq!(of_values.patch, of_entries.patch);
            assert_eq!(of_values.redo(), of_entries.redo());
            assert_eq!(of_values.undo(PageId(9)), of_entries.undo(PageId(9)));
        }
        assert_eq!(change(&old_v[..99]).0, None);
        // An overflow reference's tag: REPLACE (its undo frees the newer chain).
        let mut tagged = entry(&old_v);
        tagged[KEY_LEN_BYTES + key.len()] = 1;
        let o = entry(&old_v);
        assert!(EntryChange::new(&o, &tagged, key.len()).patch.is_none());
        assert!(EntryChange::new(&tagged, &o, key.len()).patch.is_none());
        // Two overflow references of one length differing in a byte: REPLACE too.
        let mut tagged2 = tagged.clone();
        tagged2[30] ^= 1;
        assert!(EntryChange::new(&tagged, &tagged2, key.len())
            .patch
            .is_none());
    }

    #[test]
    fn a_bad_patch_payload_is_log_corruption() {
        for body in [&[][..], &[5, 0, 1, 2], &[1, 0, 7], &[1, 0, 7, 3]] {
            assert!(matches!(
                parse_patch(Lsn(3), body),
                Err(Error::LogCorruption { .. })
            ));
        }
    }
}
