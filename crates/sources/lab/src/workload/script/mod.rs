//! The `script` workload: the user's own transactions, in pgbench's script language
//! (`dbscope-pgscript`), with pgbench's built-in scripts and `-i` tables. Each script execution is
//! a transaction event named after its script (its `rows` is the number of tries: 1 without a
//! retry); each SQL command, `\sleep`, `\shell` and pipeline end is an event named after its script
//! and line (`tpcb-like:7 UPDATE pgbench_accounts …`). A transaction that fails with a
//! serialization failure or deadlock is retried from its start with the same random values, up to
//! `max_tries` tries (pgbench 15's `--max-tries`).

mod failure;
mod init;
mod session;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dbscope_db::{Target, TargetError, TargetResult};
use dbscope_pgscript::{parse::CommandKind, QueryMode, Script};

use super::work::{SessionWork, Workload};
use crate::error::Error;

pub use failure::{retryable, OnError};
pub use init::{init_tpcb, InitReport, PGBENCH_TABLES};

/// Parses `simple`, `extended`, `prepared` (pgbench's `-M`).
pub fn parse_mode(s: &str) -> Result<QueryMode, Error> {
    match s {
        "simple" => Ok(QueryMode::Simple),
        "extended" => Ok(QueryMode::Extended),
        "prepared" => Ok(QueryMode::Prepared),
        _ => Err(Error::invalid(
            "mode",
            format!("{s:?}: expected simple, extended or prepared"),
        )),
    }
}

/// The word of a query mode.
pub fn mode_name(m: QueryMode) -> &'static str {
    match m {
        QueryMode::Simple => "simple",
        QueryMode::Extended => "extended",
        QueryMode::Prepared => "prepared",
    }
}

/// Where a script came from, as the manifest records it.
#[derive(Clone, Debug)]
pub struct ScriptSource {
    /// `builtin` or the file's path as given.
    pub origin: String,
    /// The script's text.
    pub text: String,
}

/// The script workload's options.
#[derive(Clone, Debug)]
pub struct ScriptConfig {
    /// The scripts, parsed, with their weights.
    pub scripts: Vec<Script>,
    /// Where each script came from (same order).
    pub sources: Vec<ScriptSource>,
    /// How SQL is sent (`-M`).
    pub mode: QueryMode,
    /// `-D NAME=VALUE`.
    pub defines: Vec<(String, String)>,
    /// `:scale`; `None`: read from `pgbench_branches` when a built-in script runs (as pgbench
    /// does), else 1.
    pub scale: Option<i64>,
    /// Tries per transaction (1: no retry).
    pub max_tries: u32,
    /// pgbench's `--latency-limit`: no retry after it; with pacing, a transaction already this
    /// late when due is skipped.
    pub latency_limit: Option<Duration>,
    /// What a non-retryable failure does.
    pub on_error: OnError,
    /// Create and fill pgbench's tables first (`--init tpcb`), at this scale.
    pub init_scale: Option<u32>,
    /// The run's seed (`:random_seed`, and `:default_seed` derived from it).
    pub seed: u64,
}

/// The script workload.
pub struct ScriptWorkload {
    cfg: ScriptConfig,
    scripts: Arc<[Script]>,
    headline: String,
    /// `:scale` as set up ([`Workload::setup`] reads it from the tables when not given).
    scale: AtomicI64,
    /// What `--init` did, once setup ran.
    init: std::sync::Mutex<Option<InitReport>>,
}

impl ScriptWorkload {
    /// The name runs record.
    pub const NAME: &'static str = "script";

    /// Checks the configuration: at least one script, weights not all 0, `max_tries` ≥ 1,
    /// pipelines only in extended or prepared mode (as pgbench).
    pub fn new(cfg: ScriptConfig) -> Result<Self, Error> {
        if cfg.scripts.is_empty() {
            return Err(Error::invalid(
                "scripts",
                ": give a script (-f FILE) or a built-in (-b tpcb-like|simple-update|select-only)",
            ));
        }
        if cfg.scripts.iter().all(|s| s.weight == 0) {
            return Err(Error::invalid(
                "scripts",
                ": every script has weight 0; at least one must be chosen",
            ));
        }
        if cfg.max_tries == 0 {
            return Err(Error::invalid("max_tries", "must be at least 1"));
        }
        if cfg.mode == QueryMode::Simple {
            for s in &cfg.scripts {
                if let Some(c) = s
                    .commands
                    .iter()
                    .find(|c| matches!(c.kind, CommandKind::StartPipeline))
                {
                    return Err(Error::invalid(
                        "mode",
                        format!(
                            "simple: {}:{} starts a pipeline, which needs the extended protocol: \
                             use {{mode}} extended or prepared (as pgbench)",
                            s.name, c.line
                        ),
                    ));
                }
            }
        }
        let headline = Self::headline_of(&cfg.scripts).to_string();
        let scale = cfg.scale.or(cfg.init_scale.map(i64::from)).unwrap_or(0);
        Ok(ScriptWorkload {
            scripts: cfg.scripts.clone().into(),
            headline,
            scale: AtomicI64::new(scale),
            init: std::sync::Mutex::new(None),
            cfg,
        })
    }

    /// The headline event: the most weighted script's transaction (the first of equals).
    pub fn headline_of(scripts: &[Script]) -> &str {
        scripts
            .iter()
            .rev()
            .max_by_key(|s| s.weight)
            .map_or("", |s| s.name.as_str())
    }

    fn uses_builtin(&self) -> bool {
        self.cfg.sources.iter().any(|s| s.origin == "builtin")
    }
}

impl Workload for ScriptWorkload {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn params(&self) -> BTreeMap<String, serde_json::Value> {
        let scripts: Vec<serde_json::Value> = self
            .scripts
            .iter()
            .zip(&self.cfg.sources)
            .map(|(s, src)| {
                serde_json::json!({
                    "name": s.name,
                    "weight": s.weight,
                    "origin": src.origin,
                    "text": src.text,
                })
            })
            .collect();
        let mut p = BTreeMap::from([
            ("scripts".to_string(), scripts.into()),
            ("mode".to_string(), mode_name(self.cfg.mode).into()),
            ("max_tries".to_string(), self.cfg.max_tries.into()),
            ("on_error".to_string(), self.cfg.on_error.as_str().into()),
            (
                "scale".to_string(),
                self.scale.load(Ordering::Relaxed).max(1).into(),
            ),
            (
                "defines".to_string(),
                serde_json::Value::Object(
                    self.cfg
                        .defines
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone().into()))
                        .collect(),
                ),
            ),
        ]);
        if let Some(l) = self.cfg.latency_limit {
            p.insert("latency_limit_ms".into(), (l.as_secs_f64() * 1e3).into());
        }
        if let Some(r) = self.init.lock().ok().and_then(|g| g.clone()) {
            p.insert(
                "init".into(),
                serde_json::json!({
                    "scale": r.scale,
                    "accounts": r.accounts,
                    "seconds": r.elapsed.as_secs_f64(),
                    "method": r.method,
                }),
            );
        }
        p
    }

    fn headline_event(&self) -> &str {
        &self.headline
    }

    fn tables(&self) -> Vec<String> {
        if self.uses_builtin() || self.cfg.init_scale.is_some() {
            PGBENCH_TABLES.iter().map(|t| t.to_string()).collect()
        } else {
            Vec::new()
        }
    }

    fn setup(
        &self,
        target: &dyn Target,
        _sessions: u32,
        _stop: &dbscope_core::StopSignal,
    ) -> TargetResult<()> {
        if let Some(scale) = self.cfg.init_scale {
            let report = init_tpcb(target, scale)?;
            if let Ok(mut g) = self.init.lock() {
                *g = Some(report);
            }
        }
        if self.cfg.scale.is_none() && self.cfg.init_scale.is_none() && self.uses_builtin() {
            // pgbench reads the scale of its tables when a built-in script runs.
            let mut s = target.connect()?;
            let n = s
                .query_i64("SELECT count(*) FROM pgbench_branches")
                .map_err(|e| TargetError {
                    message: format!(
                        "the built-in scripts need pgbench's tables: {} (create them with --init tpcb --scale N)",
                        e.message
                    ),
                    ..e
                })?;
            let n = n.first().copied().unwrap_or(0);
            if n == 0 {
                return Err(TargetError::config(
                    "pgbench_branches is empty: create pgbench's tables with --init tpcb --scale N",
                ));
            }
            self.scale.store(n, Ordering::Relaxed);
        }
        Ok(())
    }

    fn session(&self, session: u32, seed: u64) -> Box<dyn SessionWork> {
        let scale = self.scale.load(Ordering::Relaxed).max(1);
        Box::new(session::ScriptSession::new(
            self.scripts.clone(),
            dbscope_pgscript::ClientConfig {
                client_id: session,
                scale,
                random_seed: self.cfg.seed,
                // Drawn from the run's seed, the same for every client (pgbench's default_seed).
                default_seed: dbscope_core::record::session_seed(self.cfg.seed, u32::MAX) as i64,
                defines: self.cfg.defines.clone(),
                mode: self.cfg.mode,
                seed,
            },
            session::Limits {
                max_tries: self.cfg.max_tries,
                latency_limit_ns: self.cfg.latency_limit.map(|d| d.as_nanos() as u64),
                on_error: self.cfg.on_error,
            },
        ))
    }
}
