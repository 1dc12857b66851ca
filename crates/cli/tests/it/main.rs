//! Integration tests: run the real `dbscope` binary against real SQLite files and a real
//! PostgreSQL server (started by `common::pg`), and check what it records, reports and exports.

mod common;

mod ab;
mod bad_input;
mod baseline;
mod bulkload;
mod capture;
mod capture_observe;
mod cli;
#[cfg(feature = "cluster")]
mod cluster;
mod compare;
mod crash;
mod events;
mod explain;
mod harness;
mod history;
mod html;
#[cfg(feature = "hub")]
mod hub;
mod io_redo;
mod issue34;
mod libpq;
mod lookup;
mod mariadb;
mod observe;
mod pacing;
mod postgres;
mod script;
mod sqlite;
mod step_counters;
mod storage;
mod sweep;
mod tde;
mod tpcc;
mod tpch;
mod trace;
mod transfer;
