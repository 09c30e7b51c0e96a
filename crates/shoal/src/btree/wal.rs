//! The B-tree's log records and its resource manager (id [`RM_BTREE`]): how a change is
//! described, redone and undone (`docs/format.md`, "B-tree log records").
//!
//! ```text
//! redo payloads  [2][op][…]                       applied by NodeMut (node.rs)
//!   1 INSERT   [entry]                            insert at the key's position
//!   2 REPLACE  [entry]                            replace the entry with that key
//!   3 REMOVE   [key]                              remove the entry with that key
//!   4 TRUNCATE [keep u32][right u64][high fence]  left half of a split
//!   5 FORMAT   [node image]                       the whole node (root growth, CLRs)
//! undo payloads of user changes (logical, btree rule 6)  [2][op][root u64][…]
//!   0x81 UNDO_INSERT  [key]      0x82 UNDO_REMOVE [entry]    0x83 UNDO_REPLACE [old entry]
//! undo payloads of structure changes (page-oriented, system transactions)
//!   a redo payload (e.g. REMOVE of the separator a split inserted), or
//!   0x84 UNDO_SPLIT [right u64]: put the right half (still intact) back into the left page
//! ```

use super::node::{NodeImage, NodeMut};
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
const UNDO_INSERT: u8 = 0x81;
const UNDO_REMOVE: u8 = 0x82;
const UNDO_REPLACE: u8 = 0x83;
const UNDO_SPLIT: u8 = 0x84;

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

pub(crate) fn redo_insert(entry: &[u8]) -> Vec<u8> {
    payload(OP_INSERT, &[entry])
}
pub(crate) fn redo_replace(entry: &[u8]) -> Vec<u8> {
    payload(OP_REPLACE, &[entry])
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
pub(crate) fn undo_replace(root: PageId, old_entry: &[u8]) -> Vec<u8> {
    payload(UNDO_REPLACE, &[&root.0.to_le_bytes(), old_entry])
}
pub(crate) fn undo_split(right: PageId) -> Vec<u8> {
    payload(UNDO_SPLIT, &[&right.0.to_le_bytes()])
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
            OP_INSERT | OP_REPLACE | OP_REMOVE | OP_FORMAT | OP_TRUNCATE => {
                ctx.compensate(rec.page_id, rec.undo.clone())
            }
            UNDO_SPLIT => {
                let (right, _) = split_u64(lsn, body)?;
                let merged = unsplit(ctx, rec.page_id, PageId(right))?;
                ctx.compensate(rec.page_id, redo_format(&merged))
            }
            UNDO_INSERT | UNDO_REMOVE | UNDO_REPLACE => {
                let (root, rest) = split_u64(lsn, body)?;
                let tree = BTree::handle(ctx.pool().clone(), self.space.clone(), PageId(root));
                match op {
                    UNDO_INSERT => tree.undo_insert(ctx, rest),
                    UNDO_REMOVE => tree.undo_remove(ctx, rest),
                    _ => tree.undo_replace(ctx, rest),
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
