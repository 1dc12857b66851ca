//! dbscope-core: timed events, the run directory format, and the statistics every report needs.
//!
//! Everything dbscope measures becomes a *run*: a `manifest.json` plus append-only event files made of
//! checksummed blocks. This crate knows that format and nothing about databases, so trace readers,
//! workloads, importers and reports all meet here.

pub mod atomic;
pub mod baseline;
pub mod catalog;
mod columns;
pub mod counters;
pub mod error;
pub mod event;
pub mod fake;
pub mod files;
pub mod manifest;
pub mod mapped;
pub mod observe;
pub mod os;
pub mod plans;
pub mod pool;
pub mod record;
pub mod redact;
pub mod run;
pub mod stats;

pub use counters::{Column, Counter, CounterSection, CounterTable, CounterValue, RunCounters};
pub use error::{Error, Result};
pub use event::{Event, EventParams, NameId, NameTable, EVENT_WARMUP};
pub use manifest::{
    HostInfo, Manifest, Outcome, RunnerInfo, StorageInfo, StoragePlace, TargetInfo, WorkloadInfo,
    FORMAT_VERSION, STORAGE_ROLES,
};
pub use record::{CounterSnapshots, Pumped, Recorder, Recording, RunClock, Sessions, StopSignal};
pub use run::{EventReader, EventWriter, RunDir, TailState};
