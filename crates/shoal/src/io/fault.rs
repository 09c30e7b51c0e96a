//! Fault-injecting storage (in progress).
/// Fault-injecting in-memory storage (in progress).
#[derive(Debug)]
pub struct FaultStorage;
/// Fault schedule (in progress).
#[derive(Debug, Clone, Default)]
pub struct FaultConfig;
/// Kind of injected fault (in progress).
#[derive(Debug, Clone, Copy)]
pub enum FaultKind {}
