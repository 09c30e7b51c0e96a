//! [`NodeMut`]: write access to an X-latched node, the primitive changes that the B-tree's
//! redo operations are made of (insert, replace, patch, remove, truncate).
//!
//! Invariant: each change checks that it can be made before it changes anything
//! (transaction rule 2), so a failed change leaves the page as it was. Latching: the caller
//! holds the node's frame X-latched for the whole change.

use super::*;

/// Write access to an X-latched node: the primitive changes that the B-tree's redo
/// operations are made of. Each checks before it changes anything (transaction rule 2).
pub(crate) struct NodeMut<'a, W: PageWrite + ?Sized> {
    s: SlottedMut<'a, W>,
}

impl<'a, W: PageWrite + ?Sized> NodeMut<'a, W> {
    /// Opens a write view after the slotted header's checks ([`SlottedMut::open`]). The
    /// node's own checks ([`Node::open`]'s) are left to the change: every change method
    /// begins with [`NodeMut::view`], which makes them before anything is changed, so a
    /// page that is not a B-tree node is refused all the same, and a redo (which opens the
    /// node for one change) does not check it twice.
    ///
    /// # Errors
    /// As [`SlottedMut::open`].
    pub(crate) fn open(page: &'a mut W) -> Result<Self> {
        Ok(NodeMut {
            s: SlottedMut::open(page)?,
        })
    }

    /// A read view of the current state (the slotted header is the one this view keeps up
    /// to date, so only the node's own fields are read again).
    pub(crate) fn view(&self) -> Result<Node<'_, W>> {
        Node::on(self.s.view())
    }

    fn page_id(&self) -> PageId {
        self.s.view().page_id()
    }

    /// Inserts entry record `rec` at its key's position (looked for first at `near`,
    /// [`Node::search_near`]).
    ///
    /// # Errors
    /// [`Error::Corruption`] if the key is present or the entry does not fit (a redo that
    /// does not match its page), or the page is corrupt.
    pub(crate) fn insert(&mut self, rec: &[u8], near: Option<usize>) -> Result<()> {
        let pid = self.page_id();
        let key = entry_key(pid, rec)?;
        let view = self.view()?;
        let pos = match view.search_near(key, near)? {
            Ok(_) => return Err(Error::corruption(pid, "insert of a key already present")),
            Err(p) => p,
        };
        // Invariant H. A key between the first and the last entry shares their common
        // prefix, so the hint offset stands; a new first or last entry may change it. For a
        // new end entry the common prefix with the far end is min(c, that of the two ends),
        // c being its common prefix with its neighbour (the old end entry, just compared by
        // the search, so in cache); and the two ends share at least the old offset's bytes
        // (invariant H). So c at or past the old offset keeps it, and a shorter c is the
        // common prefix with the far end.
        let (count, prefix_len, old) = (view.entry_count(), view.prefix_len(), view.hint_offset());
        let neighbour = match pos {
            0 => Some(0),
            p if p == count => count.checked_sub(1),
            _ => None,
        };
        let offset = match (count, neighbour) {
            (0, _) => hint_offset_for(prefix_len, None),
            (_, None) => old,
            // One entry: both ends, and no old offset to go by (it was chosen without one).
            (1, Some(e)) => hint_offset_for(prefix_len, Some(view.common_with(e, key)?)),
            (_, Some(e)) => match view.common_with(e, key)? {
                c if c >= old => old,
                c => hint_offset_for(prefix_len, Some(c)),
            },
        };
        self.s
            .insert_hinted(FIRST_ENTRY + pos, rec, hint_of(key, offset))?
            .map_err(|no| Error::corruption(pid, format!("B-tree insert: {no}")))?;
        if offset != old {
            self.rehint(offset)?;
        }
        Ok(())
    }

    /// Replaces the entry with `rec`'s key (looked for first at `near`) by `rec`.
    ///
    /// # Errors
    /// [`Error::Corruption`] if the key is absent or the entry does not fit.
    pub(crate) fn replace(&mut self, rec: &[u8], near: Option<usize>) -> Result<()> {
        let pid = self.page_id();
        let key = entry_key(pid, rec)?;
        let pos = self.find(key, near)?;
        self.s
            .update(FIRST_ENTRY + pos, rec)?
            .map_err(|no| Error::corruption(pid, format!("B-tree update: {no}")))
    }

    /// Overwrites bytes `[at, at + bytes.len())` of the entry with `key` (looked for first
    /// at `near`) with `bytes`: a change of its value that keeps the entry's length. The
    /// key and its length stay, so the entry's order and hint do too.
    ///
    /// # Errors
    /// [`Error::Corruption`] if the node is not a leaf, the key is absent, its value is not
    /// inline, or the range does not lie inside the value.
    pub(crate) fn patch(
        &mut self,
        key: &[u8],
        at: usize,
        bytes: &[u8],
        near: Option<usize>,
    ) -> Result<()> {
        let pos = self.find(key, near)?;
        let view = self.view()?;
        if !view.is_leaf()
            || at <= KEY_LEN_BYTES + key.len()
            || view.value_tag(pos)? != VALUE_INLINE
        {
            return Err(Error::corruption(
                self.page_id(),
                format!("B-tree patch at byte {at} of an entry: not inside an inline leaf value"),
            ));
        }
        self.s.patch(FIRST_ENTRY + pos, at, bytes)
    }

    /// Removes the entry with `key` (looked for first at `near`).
    ///
    /// # Errors
    /// [`Error::Corruption`] if the key is absent.
    pub(crate) fn remove(&mut self, key: &[u8], near: Option<usize>) -> Result<()> {
        let pos = self.find(key, near)?;
        self.s.delete(FIRST_ENTRY + pos)
    }

    fn find(&self, key: &[u8], near: Option<usize>) -> Result<usize> {
        self.view()?
            .search_near(key, near)?
            .map_err(|_| Error::corruption(self.page_id(), "change of a key that is absent"))
    }

    /// Keeps the first `keep` entries, then sets the high fence and the right sibling: the
    /// left half of a split.
    ///
    /// # Errors
    /// [`Error::Corruption`] if `keep` exceeds the entries or the fence does not fit.
    pub(crate) fn truncate(
        &mut self,
        keep: usize,
        high: &Option<Vec<u8>>,
        right: PageId,
    ) -> Result<()> {
        let pid = self.page_id();
        let n = self.view()?.entry_count();
        let new_high = fence_record(high);
        let room = self.s.view().free_space_total() + self.s.view().record_len(1)?;
        // The new high fence must fit once the entries are gone (checked before anything is
        // written). Their bytes are counted only where the room without them is short: a
        // split's fence is usually no longer than the one it replaces.
        let fits = || -> Result<bool> {
            if room >= new_high.len() {
                return Ok(true);
            }
            let freed = (keep..n)
                .map(|i| self.s.view().record_len(FIRST_ENTRY + i))
                .sum::<Result<usize>>()?;
            Ok(room + freed + NODE_SLOT_SIZE * (n - keep) >= new_high.len())
        };
        if keep > n || !fits()? {
            return Err(Error::corruption(pid, format!("truncate to {keep} of {n}")));
        }
        self.s.truncate(FIRST_ENTRY + keep)?;
        self.s
            .update(1, &new_high)?
            .map_err(|no| Error::corruption(pid, format!("high fence: {no}")))?;
        self.s.write_special(SP_RIGHT, &right.0.to_le_bytes())?;
        self.refresh_prefix()
    }

    /// Recomputes the prefix from the fences and the hint offset from the entries, and, if
    /// either changed, every entry's hint.
    fn refresh_prefix(&mut self) -> Result<()> {
        let (low, high, old_prefix, old_offset, shared) = {
            let v = self.view()?;
            let n = v.entry_count();
            let shared = match n {
                0 | 1 => None,
                _ => Some(v.common_with(n - 1, &v.key(0)?)?),
            };
            (
                v.low_fence()?,
                v.high_fence()?,
                v.prefix_len(),
                v.hint_offset(),
                shared,
            )
        };
        let prefix_len = common_prefix(&low, &high);
        // The entries kept have a new last one: the hint offset is chosen again — unless
        // the old one lies further and is still valid (not inside the new prefix, and every
        // kept entry shares the bytes up to it): the bytes between are common to all, so
        // its hints tell entries apart as well, and none needs rewriting. (A split of a
        // sequentially loaded leaf keeps every entry and only gains a prefix.)
        // (`hint_offset_for` never returns less than the prefix, so an old offset past it is
        // past the new prefix too.)
        let mut offset = hint_offset_for(prefix_len, shared);
        if offset < old_offset && shared.is_some_and(|s| s >= old_offset) {
            offset = old_offset;
        }
        if prefix_len != old_prefix {
            let (len, head) = prefix_fields(low.as_deref().unwrap_or(&[]), prefix_len);
            self.s.write_special(SP_PREFIX_LEN, &len)?;
            self.s.write_special(SP_PREFIX_HEAD, &head)?;
        }
        // No view is opened until the offset is written too (`Node::open` checks it is not
        // inside the prefix). Hints depend on the offset alone: a new prefix with the old
        // offset (a split of a leaf on a tree's right edge, whose prefix was empty) keeps
        // them.
        if offset == old_offset {
            return Ok(());
        }
        self.rehint(offset)
    }

    /// Sets the hint offset to `offset` and recomputes every entry's hint from it.
    fn rehint(&mut self, offset: usize) -> Result<()> {
        self.s
            .write_special(SP_HINT_OFFSET, &(offset as u16).to_le_bytes())?;
        // Read in place (no copy of each key), then written: a split's left half rehints
        // every entry it keeps.
        let hints = {
            let v = self.view()?;
            (0..v.entry_count())
                .map(|i| v.hint_at(i, offset))
                .collect::<Result<Vec<u32>>>()?
        };
        for (i, hint) in hints.into_iter().enumerate() {
            self.s.set_hint(FIRST_ENTRY + i, hint)?;
        }
        Ok(())
    }
}
