//! Statistics (in progress).
