//! The integrity checker (STYLE.md practice 8): walks the whole tree and reports every
//! broken invariant it finds rather than stopping at the first.

use super::node::{self, entry_key, Node, NodeImage, VALUE_INLINE};
use super::overflow;
use super::tree::BTree;
use crate::error::{Error, Result};
use crate::types::PageId;
use std::collections::BTreeSet;

/// What [`BTree::verify`] found: the tree's shape and every problem.
#[derive(Clone, Debug, PartialEq)]
pub struct VerifyReport {
    /// The root page (names the tree).
    pub root: PageId,
    /// Number of levels (1 for a tree that is one leaf).
    pub height: u16,
    /// Pages per level, index 0 = leaves.
    pub pages_by_level: Vec<u64>,
    /// Keys in the leaves.
    pub keys: u64,
    /// Values stored in overflow chains (their pages are in `pages`).
    pub overflow_values: u64,
    /// Average fill per level, index 0 = leaves: bytes of fences, entries and slots over the
    /// bytes a node can use (0.0–1.0).
    pub fill_by_level: Vec<f64>,
    /// Every page of the tree (for a database-wide check that no allocated page is
    /// unreachable).
    pub pages: BTreeSet<PageId>,
    /// Each broken invariant, naming its page; empty for a sound tree.
    pub problems: Vec<String>,
}

impl VerifyReport {
    /// True if no problem was found.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }

    /// Average fill of the leaves (0.0–1.0).
    pub fn leaf_fill(&self) -> f64 {
        self.fill_by_level.first().copied().unwrap_or(0.0)
    }
}

struct Walk<'t> {
    tree: &'t BTree,
    report: VerifyReport,
    used_by_level: Vec<u64>,
    /// Per level, the (page, right sibling) of each node in key order.
    chains: Vec<Vec<(PageId, PageId)>>,
}

impl BTree {
    /// Checks every invariant of the tree (btree rule 9): each page is a node of this tree,
    /// allocated, reached once; levels decrease by one toward the leaves, which are all at
    /// level 0; each node's fences are exactly the range its parent gives it; keys are
    /// strictly increasing and inside the fences; inner entries name valid children; each
    /// level's right-sibling links chain its nodes in key order and end in
    /// [`PageId::INVALID`]; leaf values have a known tag. Every page is read through the
    /// buffer pool, which verifies the checksum of each page it reads from the disk, so a
    /// tree verified just after opening has had every checksum checked. Reports fill per
    /// level. Meant for a quiescent tree: concurrent changes may show as problems.
    ///
    /// # Errors
    /// I/O and buffer-pool errors that stop the walk. A page that fails its checksum or does
    /// not parse is a problem in the report, not an error.
    pub fn verify(&self) -> Result<VerifyReport> {
        let mut w = Walk {
            tree: self,
            report: VerifyReport {
                root: self.root,
                height: 0,
                pages_by_level: Vec::new(),
                keys: 0,
                overflow_values: 0,
                fill_by_level: Vec::new(),
                pages: BTreeSet::new(),
                problems: Vec::new(),
            },
            used_by_level: Vec::new(),
            chains: Vec::new(),
        };
        w.visit(self.root, None, None, None)?;
        w.finish();
        Ok(w.report)
    }
}

impl Walk<'_> {
    fn problem(&mut self, page: PageId, what: impl std::fmt::Display) {
        self.report.problems.push(format!("page {page}: {what}"));
    }

    fn visit(
        &mut self,
        pid: PageId,
        level: Option<u16>,
        low: Option<Vec<u8>>,
        high: Option<Vec<u8>>,
    ) -> Result<()> {
        if !self.report.pages.insert(pid) {
            self.problem(pid, "reached twice");
            return Ok(());
        }
        match self.tree.space.is_allocated(pid) {
            Ok(true) => {}
            Ok(false) => self.problem(pid, "in the tree but not allocated"),
            Err(e) => self.problem(pid, format!("allocation state unknown: {e}")),
        }
        let img = match self.read(pid) {
            Ok((img, search_keys)) => {
                if let Some(why) = search_keys {
                    self.problem(pid, format!("search keys: {why}"));
                }
                img
            }
            Err(e @ (Error::Corruption { .. } | Error::PageNotAllocated { .. })) => {
                self.problem(pid, e);
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        let lvl = img.level;
        if img.tree != self.tree.root {
            self.problem(pid, format!("belongs to tree {}", img.tree));
        }
        if let Some(l) = level.filter(|&l| l != lvl) {
            self.problem(pid, format!("at level {lvl}, expected {l}"));
        }
        if img.low != low || img.high != high {
            self.problem(pid, "fences differ from the range its parent gives it");
        }
        self.check_entries(pid, &img, &low, &high);
        let at = usize::from(lvl);
        if self.chains.len() <= at {
            self.chains.resize(at + 1, Vec::new());
            self.used_by_level.resize(at + 1, 0);
        }
        self.chains[at].push((pid, img.right));
        self.used_by_level[at] += img.used_bytes() as u64;
        if lvl == 0 {
            self.report.keys += img.entries.len() as u64;
            if img.child0.is_valid() {
                self.problem(pid, "leaf with a leftmost child");
            }
            for (i, e) in img.entries.iter().enumerate() {
                self.check_overflow(pid, i, e)?;
            }
            return Ok(());
        }
        // Children in order with their ranges.
        let mut ranges = Vec::with_capacity(img.entries.len() + 1);
        let mut prev_low = low.clone();
        let mut child = img.child0;
        for e in &img.entries {
            let key = entry_key(pid, e)?.to_vec();
            ranges.push((child, prev_low.clone(), Some(key.clone())));
            let c = &e[node::KEY_LEN_BYTES + key.len()..];
            child = match <[u8; 8]>::try_from(c) {
                Ok(b) => PageId(u64::from_le_bytes(b)),
                Err(_) => {
                    self.problem(pid, "inner entry without an 8-byte child");
                    return Ok(());
                }
            };
            prev_low = Some(key);
        }
        ranges.push((child, prev_low, high));
        for (c, lo, hi) in ranges {
            if !c.is_valid() || c.0 == 0 || c == self.tree.root {
                self.problem(pid, format!("child {c}"));
                continue;
            }
            self.visit(c, Some(lvl - 1), lo, hi)?;
        }
        Ok(())
    }

    /// Walks the overflow chain of leaf entry `i` of `pid`, if its value has one.
    fn check_overflow(&mut self, pid: PageId, i: usize, entry: &[u8]) -> Result<()> {
        let chain = match overflow::entry_ref(pid, entry) {
            Ok(Some(r)) => r,
            Ok(None) => return Ok(()),
            Err(e) => {
                self.problem(pid, format!("entry {i}: {e}"));
                return Ok(());
            }
        };
        let pages = match self.tree.overflow_pages(&chain) {
            Ok(p) => p,
            Err(e @ (Error::Corruption { .. } | Error::PageNotAllocated { .. })) => {
                self.problem(pid, format!("entry {i}'s overflow chain: {e}"));
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        for p in pages {
            if !self.report.pages.insert(p) {
                self.problem(p, "overflow page reached twice");
            }
            if !self.tree.space.is_allocated(p).unwrap_or(false) {
                self.problem(p, "overflow page not allocated");
            }
        }
        self.report.overflow_values += 1;
        Ok(())
    }

    /// The node's image and the first problem of its search keys (prefix and hints).
    fn read(&self, pid: PageId) -> Result<(NodeImage, Option<String>)> {
        let g = self.tree.pool.fix_shared(pid)?;
        let n = Node::open(g.bytes())?;
        Ok((n.image()?, n.check_search_keys()?))
    }

    fn check_entries(
        &mut self,
        pid: PageId,
        img: &NodeImage,
        low: &Option<Vec<u8>>,
        high: &Option<Vec<u8>>,
    ) {
        let max_key = self.tree.max_key_bytes();
        let mut prev: Option<&[u8]> = None;
        for (i, e) in img.entries.iter().enumerate() {
            let key = match entry_key(pid, e) {
                Ok(k) => k,
                Err(err) => {
                    self.problem(pid, format!("entry {i}: {err}"));
                    continue;
                }
            };
            if prev.is_some_and(|p| p >= key) {
                self.problem(pid, format!("entry {i} is not above its predecessor"));
            }
            let in_low = low.as_deref().map_or(true, |l| l <= key);
            let in_high = high.as_deref().map_or(true, |h| key < h);
            if !in_low || !in_high {
                self.problem(pid, format!("entry {i} lies outside the node's fences"));
            }
            if key.len() > max_key {
                self.problem(pid, format!("entry {i} has a key over the limit"));
            }
            let rest = &e[node::KEY_LEN_BYTES + key.len()..];
            if img.level == 0
                && rest.first() != Some(&VALUE_INLINE)
                && rest.first() != Some(&overflow::VALUE_OVERFLOW)
            {
                self.problem(pid, format!("entry {i} has an unknown value tag"));
            }
            prev = Some(key);
        }
    }

    fn finish(&mut self) {
        let usable = node::usable_bytes(self.tree.pool.page_size()) as f64;
        for (lvl, chain) in std::mem::take(&mut self.chains).into_iter().enumerate() {
            for pair in chain.windows(2) {
                if pair[0].1 != pair[1].0 {
                    self.problem(
                        pair[0].0,
                        format!(
                            "right sibling {} but the next node is {}",
                            pair[0].1, pair[1].0
                        ),
                    );
                }
            }
            if let Some(&(last, right)) = chain.last() {
                if right.is_valid() {
                    self.problem(last, format!("last node of level {lvl} links to {right}"));
                }
            }
            let pages = chain.len() as u64;
            self.report.pages_by_level.push(pages);
            let used = self.used_by_level[lvl] as f64;
            self.report.fill_by_level.push(if pages == 0 {
                0.0
            } else {
                used / (pages as f64 * usable)
            });
        }
        self.report.height = self.report.pages_by_level.len() as u16;
    }
}
