//! [`NodeImage`]: an owned description of a whole node — what a split, a merge or root
//! growth builds, and what the `FORMAT` log operation carries — and its encoding onto a
//! formatted page.
//!
//! Invariant: an image that does not fit its page is `Corruption` and leaves the page
//! unchanged, never half written (transaction rule 2). Latching: the caller holds the
//! target frame X-latched.

use super::*;

/// An owned description of a whole node: what a split or merge builds and what the
/// `FORMAT` log operation carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NodeImage {
    pub(crate) level: u16,
    pub(crate) right: PageId,
    pub(crate) child0: PageId,
    pub(crate) tree: PageId,
    pub(crate) low: Option<Vec<u8>>,
    pub(crate) high: Option<Vec<u8>>,
    /// Entry records in key order.
    pub(crate) entries: Vec<Vec<u8>>,
}

impl NodeImage {
    /// An empty leaf covering every key: a new tree's root.
    pub(crate) fn empty_root(tree: PageId) -> NodeImage {
        NodeImage {
            level: 0,
            right: PageId::INVALID,
            child0: PageId::INVALID,
            tree,
            low: None,
            high: None,
            entries: Vec::new(),
        }
    }

    /// Formats `page` (page id `pid`) as this node. The node is built in plain memory and
    /// copied into `page` with one write, whole words on a frame: built in the frame, each
    /// record and slot was a write of its own, partial words read, merged and stored
    /// (11 % more instructions for a split's new leaf of 150 entries, callgrind).
    ///
    /// # Errors
    /// [`Error::Corruption`] naming `pid` if the node does not fit the page (a log record
    /// that describes an impossible node); `page` is then unchanged.
    pub(crate) fn write_to<W: PageWrite + ?Sized>(&self, page: &mut W, pid: PageId) -> Result<()> {
        let mut staged = vec![0u8; page.page_len()];
        self.format(staged.as_mut_slice(), pid)?;
        page.write_from(0, &staged);
        Ok(())
    }

    /// [`NodeImage::write_to`] without the staging.
    fn format<W: PageWrite + ?Sized>(&self, page: &mut W, pid: PageId) -> Result<()> {
        if self.level > MAX_LEVEL {
            return Err(Error::corruption(pid, format!("node level {}", self.level)));
        }
        let mut s = slotted::init_hinted(page, pid, page_type(self.level), SPECIAL_BYTES);
        let mut sp = [0u8; SPECIAL_BYTES];
        sp[SP_LEVEL..SP_LEVEL + 2].copy_from_slice(&self.level.to_le_bytes());
        sp[SP_FLAGS..SP_FLAGS + 2].copy_from_slice(&0u16.to_le_bytes());
        let prefix_len = common_prefix(&self.low, &self.high);
        let (len, head) = prefix_fields(self.low.as_deref().unwrap_or(&[]), prefix_len);
        let shared = match self.entries.as_slice() {
            [first, .., last] => Some(common_prefix_len(
                entry_key(pid, first)?,
                entry_key(pid, last)?,
            )),
            _ => None,
        };
        let hint_offset = hint_offset_for(prefix_len, shared);
        sp[SP_PREFIX_LEN..SP_PREFIX_LEN + 2].copy_from_slice(&len);
        sp[SP_HINT_OFFSET..SP_HINT_OFFSET + 2].copy_from_slice(&(hint_offset as u16).to_le_bytes());
        sp[SP_PREFIX_HEAD..SP_PREFIX_HEAD + PREFIX_HEAD_BYTES].copy_from_slice(&head);
        sp[SP_RIGHT..SP_RIGHT + 8].copy_from_slice(&self.right.0.to_le_bytes());
        sp[SP_CHILD0..SP_CHILD0 + 8].copy_from_slice(&self.child0.0.to_le_bytes());
        sp[SP_TREE..SP_TREE + 8].copy_from_slice(&self.tree.0.to_le_bytes());
        s.write_special(0, &sp)?;
        let fences = [fence_record(&self.low), fence_record(&self.high)];
        let hints = self
            .entries
            .iter()
            .map(|e| Ok(hint_of(entry_key(pid, e)?, hint_offset)))
            .collect::<Result<Vec<u32>>>()?;
        let records = fences.iter().map(|f| (f.as_slice(), 0)).chain(
            self.entries
                .iter()
                .map(Vec::as_slice)
                .zip(hints.iter().copied()),
        );
        s.extend_hinted(records)?
            .map_err(|no| Error::corruption(pid, format!("B-tree node image: {no}")))
    }

    /// Bytes the node takes in a page (records and slots).
    pub(crate) fn used_bytes(&self) -> usize {
        let fences = fence_record(&self.low).len() + fence_record(&self.high).len();
        let entries: usize = self.entries.iter().map(Vec::len).sum();
        fences + entries + NODE_SLOT_SIZE * (FIRST_ENTRY + self.entries.len())
    }

    /// Appends the encoding `[level u16][right u64][child0 u64][tree u64][low fence rec len
    /// u16][rec][high …][count u32]([len u16][entry])*`.
    pub(crate) fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.level.to_le_bytes());
        for p in [self.right, self.child0, self.tree] {
            out.extend_from_slice(&p.0.to_le_bytes());
        }
        for f in [&self.low, &self.high] {
            let r = fence_record(f);
            out.extend_from_slice(&(r.len() as u16).to_le_bytes());
            out.extend_from_slice(&r);
        }
        out.extend_from_slice(&(self.entries.len() as u32).to_le_bytes());
        for e in &self.entries {
            out.extend_from_slice(&(e.len() as u16).to_le_bytes());
            out.extend_from_slice(e);
        }
    }

    /// Decodes [`NodeImage::encode_into`]'s bytes; `pid` names errors.
    ///
    /// # Errors
    /// [`Error::Corruption`] for truncated or inconsistent bytes.
    pub(crate) fn decode(pid: PageId, mut b: &[u8]) -> Result<NodeImage> {
        let bad = || Error::corruption(pid, "bad B-tree node image in a log record");
        let mut take = |n: usize| -> Result<&[u8]> {
            if b.len() < n {
                return Err(bad());
            }
            let (h, t) = b.split_at(n);
            b = t;
            Ok(h)
        };
        let level = u16::from_le_bytes(take(2)?.try_into().expect("2"));
        let mut ids = [PageId::INVALID; 3];
        for id in &mut ids {
            *id = PageId(u64::from_le_bytes(take(8)?.try_into().expect("8")));
        }
        let mut fences = [None, None];
        for f in &mut fences {
            let n = u16::from_le_bytes(take(2)?.try_into().expect("2")) as usize;
            *f = parse_fence(pid, take(n)?)?;
        }
        let count = u32::from_le_bytes(take(4)?.try_into().expect("4")) as usize;
        let mut entries = Vec::with_capacity(count.min(4096));
        for _ in 0..count {
            let n = u16::from_le_bytes(take(2)?.try_into().expect("2")) as usize;
            let e = take(n)?;
            entry_key(pid, e)?;
            entries.push(e.to_vec());
        }
        if !b.is_empty() {
            return Err(bad());
        }
        let [high, low] = [fences[1].take(), fences[0].take()];
        Ok(NodeImage {
            level,
            right: ids[0],
            child0: ids[1],
            tree: ids[2],
            low,
            high,
            entries,
        })
    }
}
