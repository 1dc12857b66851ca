//! `dbscope replay CAP --target …`: a capture played back against a (changed) system.
//!
//! With its timing and concurrency: one replay session per captured session, each connecting at its
//! captured offset and issuing each call at its captured start (scaled by `--speed`; think time
//! kept), or back to back with `--speed max`. With `--sync commit` a call also waits until every
//! commit that preceded it in the capture has happened in the replay (Oracle's replay does this
//! with SCNs), so concurrent sessions see the data in the order they saw it (see
//! [`plan::sync_bound`] for what "preceded" means for reads and for writes).
//!
//! Every replayed call becomes an event named as in the capture (the statement's fingerprint), with
//! its scheduled start as the intended start, so `report` shows how far the replay fell behind and
//! `compare CAP REPLAY` compares statement by statement. Divergence — a call whose rows, command or
//! error differ from the capture — is counted by kind with examples (`counters.json`, section
//! `replay`) and every diverging call is listed in `replay-divergence.jsonl`.
//!
//! `config` is what a replay is given and gives back; `plan` reads the capture back and decides
//! what is replayed and waited for; `order` is the commit order the sessions keep; `session`
//! replays one captured session; `tally` counts what the sessions saw and makes the counter
//! section; `check` looks at the target first; `run` does the whole replay as a run.

mod check;
mod config;
mod order;
mod plan;
mod run;
mod session;
mod tally;

// The wire client, imported once here for the submodules (`use super::…`).
use dbscope_pgwire::{connect_with, Answer, ReplayCall, WireConn, WireError};

pub use config::{ReplayConfig, ReplaySummary, Speed, DIVERGENCE_FILE};
pub use plan::DEFAULT_SYNC_SLACK;
pub use run::run;
