//! Space manager (in progress).
