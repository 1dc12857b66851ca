//! dbscope-io: storage I/O tests that need no database: `io redo`, a faithful model of a redo log writer
//! (group commit, 512/1024/4096-byte blocks, a two-destination race, the sector-size check) and
//! the verifier for the logs it writes.

pub mod block;
pub mod error;
pub mod inject;
pub mod redo;
pub mod sector;
mod sys;
pub mod verify;

pub use error::{Error, Result};
