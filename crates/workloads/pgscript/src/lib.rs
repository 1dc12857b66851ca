//! pgbench's script language, as PostgreSQL 15–17's pgbench documents it: scripts of SQL commands
//! and meta-commands (`\set`, `\sleep`, `\gset`, `\aset`, `\if`…, `\setshell`, `\shell`,
//! `\startpipeline`…), the expression language with pgbench's operators and functions, its random
//! generators (pgbench's own PRNG, so distributions match), and a per-client interpreter that
//! walks a script and hands each SQL command to the caller, who talks to the database and times it.
//!
//! No database I/O here: `dbscope-lab`'s `script` workload drives a [`Client`].

pub mod builtin;
pub mod client;
pub mod error;
pub mod expr;
pub mod parse;
pub mod prng;
pub mod random;
pub mod value;

pub use client::{Client, ClientConfig, QueryMode, Step};
pub use error::{EvalError, ScriptError};
pub use parse::{Command, CommandKind, Script};
pub use prng::Prng;
pub use value::Value;
