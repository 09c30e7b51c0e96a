//! Deadlock detection on the block path (module doc, rules D1–D4).
//!
//! A request that must wait searches the waits-for graph, breadth first, for a cycle back
//! to itself before it parks. Edges are read from the lock table one bucket at a time
//! (`LockTable::blockers`); each node is an owner *and the epoch of its wait*, so an edge
//! read earlier is still true later exactly when every epoch on the cycle is unchanged (D2).
//! Searches run one at a time under the detector's mutex, and the victim withdraws its
//! request before the mutex is released, so a cycle has exactly one victim (D3).

use super::mode::ModeTable;
use super::name::LockName;
use super::table::{LockTable, Wakeups};
use super::waits::Owners;
use crate::error::Error;
use crate::types::TxnId;
use parking_lot::Mutex;
use std::collections::HashSet;
use std::fmt::Write;

struct Node {
    owner: u32,
    epoch: u64,
    name: LockName,
    mode: u8,
    /// Index of the node whose wait this node blocks (`usize::MAX` for the root).
    parent: usize,
}

#[derive(Default)]
struct Scratch {
    nodes: Vec<Node>,
    seen: HashSet<u32>,
    edges: Vec<(u32, u64)>,
}

/// What the search found.
pub(crate) enum Verdict {
    /// No cycle through the requester: park.
    NoCycle,
    /// The request was granted while the search ran.
    Granted,
    /// The requester closed a cycle; its request has been withdrawn.
    Deadlock(Error),
}

/// The deadlock detector. One search at a time (D3).
#[derive(Default)]
pub(crate) struct Detector {
    scratch: Mutex<Scratch>,
}

/// Everything the search reads.
pub(crate) struct Graph<'a> {
    pub(crate) table: &'a LockTable,
    pub(crate) owners: &'a Owners,
    pub(crate) modes: &'static ModeTable,
}

impl Detector {
    /// Searches for a cycle through `owner`, which has just queued wait `epoch` for `mode`
    /// on `name`. If one exists (verified, D2), withdraws the request and returns the
    /// deadlock error naming the cycle.
    pub(crate) fn check(
        &self,
        g: &Graph<'_>,
        owner: u32,
        epoch: u64,
        name: &LockName,
        mode: u8,
        wake: &mut Wakeups,
    ) -> Verdict {
        let mut guard = self.scratch.lock();
        let s = &mut *guard;
        s.nodes.clear();
        s.seen.clear();
        s.nodes.push(Node {
            owner,
            epoch,
            name: name.clone(),
            mode,
            parent: usize::MAX,
        });
        s.seen.insert(owner);
        let mut k = 0;
        let mut closing = None;
        'search: while k < s.nodes.len() {
            s.edges.clear();
            let n = &s.nodes[k];
            if !g
                .table
                .blockers(g.owners, n.owner, n.epoch, &n.name, &mut s.edges)
            {
                if k == 0 {
                    // Our own wait ended (granted) before the search looked at it.
                    return if g.owners.is_granted(owner, epoch) {
                        Verdict::Granted
                    } else {
                        Verdict::NoCycle
                    };
                }
                k += 1;
                continue;
            }
            for i in 0..s.edges.len() {
                let (o, e) = s.edges[i];
                if o == owner {
                    if e == epoch {
                        closing = Some(k);
                        break 'search;
                    }
                    continue;
                }
                if !s.seen.insert(o) {
                    continue;
                }
                if let Some(info) = g.owners.info(o, e) {
                    if let Some(name) = info.name {
                        s.nodes.push(Node {
                            owner: o,
                            epoch: e,
                            name,
                            mode: info.mode,
                            parent: k,
                        });
                    }
                }
            }
            k += 1;
        }
        let Some(last) = closing else {
            return Verdict::NoCycle;
        };
        // The cycle: root → ... → last → root, in waits-for order.
        let mut path = Vec::new();
        let mut i = last;
        while i != usize::MAX {
            path.push(i);
            i = s.nodes[i].parent;
        }
        path.reverse();
        // D2: every wait on the cycle is still the one its edges were read for.
        if path
            .iter()
            .any(|&i| g.owners.waiting_epoch(s.nodes[i].owner) != Some(s.nodes[i].epoch))
        {
            return Verdict::NoCycle;
        }
        // D3: withdraw before letting the next search run.
        if g.table.cancel(g.owners, owner, name, epoch, wake) {
            return Verdict::Granted;
        }
        let cycle: Vec<TxnId> = path
            .iter()
            .map(|&i| g.owners.txn(s.nodes[i].owner))
            .collect();
        let mut detail = String::new();
        for (j, &i) in path.iter().enumerate() {
            let n = &s.nodes[i];
            let next = cycle[(j + 1) % cycle.len()];
            let _ = write!(
                detail,
                "{}{} waits for {} on {} (blocked by {})",
                if j == 0 { "" } else { "; " },
                cycle[j],
                g.modes.mode_name(super::mode::LockMode(n.mode)),
                n.name,
                next
            );
        }
        Verdict::Deadlock(Error::Deadlock {
            victim: g.owners.txn(owner),
            cycle,
            detail,
        })
    }
}
