//! Real file-system storage (in progress).
/// Storage over a directory of the real file system (in progress).
#[derive(Debug)]
pub struct FileStorage;
