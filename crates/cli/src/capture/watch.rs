//! The lab's observer watching the server of a capture or a replay (issue 34 item 10): the
//! capture crate's [`Watch`] and [`Backends`] over `dbscope_lab::observe::Attached`.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::anyhow;
use dbscope_capture::watch::{Backends, OpenWatch, Watch};
use dbscope_core::{RunClock, StorageInfo};
use dbscope_lab::observe::{Attached, BackendLog, ObserveConfig};

use crate::capture::args::ObserveArgs;
use crate::exit::{Exit, EXIT_USAGE};

/// The observer as the capture and the replay see it.
struct Observed(Attached);

struct Log(BackendLog);

impl Watch for Observed {
    fn storage(&self) -> Option<StorageInfo> {
        self.0.storage()
    }
    fn backends(&self) -> Arc<dyn Backends> {
        Arc::new(Log(self.0.backends()))
    }
    fn start(&mut self, clock: &RunClock) {
        self.0.start(clock);
    }
    fn tick(&mut self) {
        self.0.tick();
    }
    fn finish(&mut self) {
        self.0.finish();
    }
}

impl Backends for Log {
    fn connected(&self, session: u32, pid: u32, database: Option<&str>) {
        self.0.connected(session, pid, database);
    }
    fn ended(&self, pid: u32) {
        self.0.ended(pid);
    }
}

/// A libpq connection string as a `--target`: the proxy and the replay take libpq's strings, URI
/// or key=value (bare or after `postgres:`), and a target is named by its scheme.
fn postgres_spec(uri: &str) -> String {
    let uri = uri.trim();
    if uri.starts_with("postgres:") || uri.starts_with("postgresql://") {
        uri.to_string()
    } else {
        format!("postgres:{uri}")
    }
}

/// The server version and settings of the PostgreSQL server at `uri` (a libpq connection
/// string), as a workload run records its target's; `None` when they cannot be read (the
/// capture's or replay's own connections then say why).
pub fn describe_postgres(uri: &str) -> Option<dbscope_core::TargetInfo> {
    dbscope_db::open_target(&postgres_spec(uri), &[])
        .and_then(|t| t.describe())
        .ok()
}

/// The watcher of a capture (`server` = its --upstream) or a replay (its --target), unless
/// `--no-observe`. A connection string that cannot be parsed is refused here (bad usage); one
/// the observer cannot connect with only leaves the section's figures missing, with the reason.
/// `client`: what this process is to the sessions when it is not their client (the proxy).
pub fn open_watch(
    a: &ObserveArgs,
    server: &str,
    client: Option<&'static str>,
) -> Result<Option<OpenWatch>, Exit> {
    if a.no_observe {
        return Ok(None);
    }
    let config = ObserveConfig {
        sample_hz: a.sample_hz,
        snapshot_every: a.snapshot_every,
        waits_history: false,
    };
    config
        .validate()
        .map_err(|e| Exit(EXIT_USAGE, anyhow!("{e}")))?;
    let spec = postgres_spec(a.observe.as_deref().unwrap_or(server));
    // Parsed now, so a malformed string is said before anything runs (opening a PostgreSQL
    // target only parses it: the observer connects when the run's directory exists).
    let target = dbscope_db::open_target(&spec, &[]).map_err(|e| {
        Exit(
            EXIT_USAGE,
            anyhow!(
                "--observe {}: {}",
                dbscope_core::redact::redact(a.observe.as_deref().unwrap_or(server)),
                e.message
            ),
        )
    })?;
    let target = Mutex::new(Some(target));
    let open: OpenWatch = Arc::new(move |dir: &Path| -> Option<Box<dyn Watch>> {
        let target = target
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()?;
        let mut observer = Attached::open(target, dir, &config);
        if let Some(who) = client {
            observer.client_is(who);
        }
        Some(Box::new(Observed(observer)))
    });
    Ok(Some(open))
}
