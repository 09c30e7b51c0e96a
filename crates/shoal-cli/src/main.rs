//! The `shoal` command (in progress).
fn main() {}
