//! Buffer pool (in progress).
