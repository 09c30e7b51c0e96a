//! Synchronisation primitives (in progress).
