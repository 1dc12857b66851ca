//! Shared helpers for dbscope integration tests.
//!
//! Each test binary that needs them declares `mod common;` and uses the
//! submodules it needs; unused helpers must not warn in the others.
#![allow(dead_code)]

pub mod argv;
pub mod loopfs;
pub mod mariadb;
pub mod pg;
