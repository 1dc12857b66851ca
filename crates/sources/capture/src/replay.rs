//! `dbscope replay CAP --target …`: a capture played back against a (changed) system, with its
//! timing and concurrency: one replay session per captured session, each connecting at its captured
//! offset and issuing each call at its captured start (scaled by `--speed`; think time kept), or
//! back to back with `--speed max`. With `--sync commit` a call also waits until every commit that
//! preceded it in the capture has happened in the replay (Oracle's replay does this with SCNs), so
//! concurrent sessions see the data in the order they saw it (see [`sync_bound`] for what
//! "preceded" means for reads and for writes).
//!
//! Every replayed call becomes an event named as in the capture (the statement's fingerprint), with
//! its scheduled start as the intended start, so `report` shows how far the replay fell behind and
//! `compare CAP REPLAY` compares statement by statement. Divergence — a call whose rows, command or
//! error differ from the capture — is counted by kind with examples (`counters.json`, section
//! `replay`) and every diverging call is listed in `replay-divergence.jsonl`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use dbscope_core::manifest::{Manifest, Outcome, RunnerInfo, TargetInfo, WorkloadInfo};
use dbscope_core::redact::redact;
use dbscope_core::{
    Column, Counter, CounterSection, CounterTable, CounterValue, Recorder, Recording, RunClock,
    RunDir, StopSignal,
};
use dbscope_pgwire::{connect_with, Answer, ReplayCall, WireConn, WireError};
use serde_json::json;

use crate::calls::{Call, Protocol};
use crate::fingerprint::class;
use crate::proxy::event_name;
use crate::{CaptureError, CALLS_FILE};

/// Every diverging call of a replay, one JSON object a line.
pub const DIVERGENCE_FILE: &str = "replay-divergence.jsonl";
/// How long a call waits for an earlier commit (`--sync commit`) before going ahead anyway, when
/// its session holds no transaction open.
const SYNC_TIMEOUT: Duration = Duration::from_millis(500);
/// The same when its session is inside a transaction: it may hold row locks the awaited commit's
/// session is blocked on (the replay took a lock in another order than the capture), a deadlock
/// only going ahead breaks; counted.
const SYNC_TIMEOUT_IN_TRANSACTION: Duration = Duration::from_millis(50);
/// Examples kept per kind of divergence.
const EXAMPLES: usize = 5;

/// How fast to replay.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Speed {
    /// The captured timing divided by this factor (1: as captured).
    Factor(f64),
    /// Every session's calls back to back, sessions all at once.
    Max,
}

/// What to replay, where.
pub struct ReplayConfig {
    /// The capture directory.
    pub capture: PathBuf,
    /// The target (libpq connection string): every replay session connects with it.
    pub target: String,
    /// The run directory to create.
    pub out: PathBuf,
    /// Timing.
    pub speed: Speed,
    /// Keep the captured commit order across sessions.
    pub sync_commit: bool,
    /// With `sync_commit`: how long after a write's captured end a commit may have been seen and
    /// still be waited for (see [`sync_bound`]; [`DEFAULT_SYNC_SLACK`] unless said).
    pub sync_slack: Duration,
    /// The restore point the target was reset to first (recorded in the manifest).
    pub restored_from: Option<String>,
    /// The command line (redacted in the manifest).
    pub command_line: Vec<String>,
}

/// What a replay did.
#[derive(Debug, Clone, Default)]
pub struct ReplaySummary {
    /// The run directory.
    pub dir: PathBuf,
    /// Calls replayed.
    pub replayed: u64,
    /// Calls not replayed (COPY, unknown statements, …).
    pub not_replayed: u64,
    /// Replayed calls that diverged.
    pub diverged: u64,
    /// Seconds the captured calls spanned, and the replay's.
    pub capture_s: f64,
    /// See `capture_s`.
    pub replay_s: f64,
}

/// A captured session with its calls.
struct SessionPlan {
    id: u32,
    connect_ns: u64,
    calls: Vec<Call>,
}

/// The capture read back.
struct Plan {
    sessions: Vec<SessionPlan>,
    origin_ns: u64,
    span_ns: u64,
    /// Captured end times of the commit points, in order.
    commits: Vec<u64>,
    /// (session, seq) → index in `commits`.
    commit_index: HashMap<(u32, u64), usize>,
    bad_lines: u64,
}

/// A call that ends a transaction (or is one, in autocommit) and changed something.
fn is_commit_point(c: &Call) -> bool {
    c.txn == Some('I')
        && c.error.is_none()
        && !c.skipped
        && matches!(class(&c.sql), "write" | "transaction")
}

/// With `--sync commit`, a call waits for every commit that ended, in the capture, before this
/// instant. For a read, its start: PostgreSQL reads take their snapshot then and never wait for
/// row locks. For anything else, its end: a write that overlapped a commit in the capture may have
/// been waiting for that commit's locks, and issuing it before that commit happens in the replay
/// would take the lock first and deadlock the two sessions against the commit order (the write's
/// session waiting in the replay for the commit, the commit's session waiting for the lock). A
/// session that held a lock at that point in the capture held it in the replay too, so no commit
/// it waits for can need it.
///
/// The capture sees a commit when the proxy reads its command tag, a little after the server
/// released the commit's locks: a write that waited for those locks can have its own tag read
/// first. So a write also waits for commits that ended up to a slack after it
/// ([`ReplayConfig::sync_slack`]).
fn sync_bound(c: &Call, slack_ns: u64) -> u64 {
    match class(&c.sql) {
        "read" => c.start_ns,
        _ => c.end_ns + slack_ns,
    }
}

/// See [`sync_bound`].
pub const DEFAULT_SYNC_SLACK: Duration = Duration::from_millis(2);

/// Why a call is not replayed, if it is not.
fn not_replayed(c: &Call) -> Option<&'static str> {
    if c.copy.is_some() {
        Some("COPY (data not captured)")
    } else if c.unknown_statement {
        Some("statement prepared before the capture")
    } else if c.skipped {
        Some("not executed in the capture")
    } else if c.protocol == Protocol::Function {
        Some("fast-path function call")
    } else if c.cut {
        Some("text or values cut in the capture")
    } else {
        None
    }
}

fn load(dir: &Path) -> Result<Plan, CaptureError> {
    let run = RunDir::open(dir)?;
    if run.manifest.source != "capture" {
        return Err(CaptureError::NotACapture {
            path: dir.to_path_buf(),
            why: format!(
                "a run of source `{}`, not a capture (make one with `dbscope capture proxy`)",
                run.manifest.source
            ),
        });
    }
    let path = dir.join(CALLS_FILE);
    let f = std::fs::File::open(&path).map_err(|e| CaptureError::io(&path, e))?;
    let mut connects: HashMap<u32, (u64, bool)> = HashMap::new();
    let mut calls: BTreeMap<u32, Vec<Call>> = BTreeMap::new();
    let mut bad_lines = 0;
    for line in BufReader::new(f).lines() {
        let line = line.map_err(|e| CaptureError::io(&path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
            bad_lines += 1;
            continue;
        };
        match v["type"].as_str() {
            Some("session") => {
                let id = v["session"].as_u64().unwrap_or(0) as u32;
                let at = v["connect_ns"].as_u64().unwrap_or(0);
                connects.insert(id, (at, v["ready"] == json!(true)));
            }
            Some("call") => match serde_json::from_value::<Call>(v) {
                Ok(c) => calls.entry(c.session).or_default().push(c),
                Err(_) => bad_lines += 1,
            },
            _ => bad_lines += 1,
        }
    }
    let mut sessions = Vec::new();
    for (id, mut cs) in calls {
        cs.sort_by_key(|c| c.seq);
        // A session whose line is missing (the capture was killed): connect at its first call.
        let (connect_ns, _) = connects
            .get(&id)
            .copied()
            .unwrap_or((cs.first().map_or(0, |c| c.start_ns), true));
        sessions.push(SessionPlan {
            id,
            connect_ns: connect_ns.min(cs.first().map_or(connect_ns, |c| c.start_ns)),
            calls: cs,
        });
    }
    let origin_ns = sessions.iter().map(|s| s.connect_ns).min().unwrap_or(0);
    let last = sessions
        .iter()
        .flat_map(|s| s.calls.iter().map(|c| c.end_ns))
        .max()
        .unwrap_or(origin_ns);
    let first = sessions
        .iter()
        .flat_map(|s| s.calls.iter().map(|c| c.start_ns))
        .min()
        .unwrap_or(origin_ns);
    let mut points: Vec<(u64, u32, u64)> = sessions
        .iter()
        .flat_map(|s| s.calls.iter())
        .filter(|c| is_commit_point(c))
        .map(|c| (c.end_ns, c.session, c.seq))
        .collect();
    points.sort_unstable();
    let commit_index = points
        .iter()
        .enumerate()
        .map(|(i, &(_, s, q))| ((s, q), i))
        .collect();
    Ok(Plan {
        origin_ns,
        span_ns: last.saturating_sub(first),
        commits: points.iter().map(|p| p.0).collect(),
        commit_index,
        sessions,
        bad_lines,
    })
}

/// The commit order of the capture, as it is reached in the replay.
struct CommitOrder {
    state: Mutex<(Vec<bool>, usize)>,
    cv: Condvar,
}

impl CommitOrder {
    fn new(n: usize) -> Self {
        CommitOrder {
            state: Mutex::new((vec![false; n], 0)),
            cv: Condvar::new(),
        }
    }

    /// Waits until the first `k` commits have happened; false on timeout (or stop).
    fn wait_for(&self, k: usize, stop: &StopSignal, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        while s.1 < k {
            let now = Instant::now();
            if now >= deadline || stop.is_set() {
                return false;
            }
            let wait = (deadline - now).min(Duration::from_millis(100));
            s = self
                .cv
                .wait_timeout(s, wait)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }

    fn mark(&self, i: usize) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(d) = s.0.get_mut(i) {
            *d = true;
        }
        while s.1 < s.0.len() && s.0[s.1] {
            s.1 += 1;
        }
        drop(s);
        self.cv.notify_all();
    }
}

/// What one session's replay counted.
#[derive(Default)]
struct Tally {
    replayed: u64,
    not_replayed: BTreeMap<&'static str, u64>,
    diverged: BTreeMap<&'static str, u64>,
    examples: BTreeMap<&'static str, Vec<serde_json::Value>>,
    divergences: Vec<serde_json::Value>,
    lags_ns: Vec<u64>,
    /// Lags of the calls the commit order did not hold back (the replayer's own precision).
    free_lags_ns: Vec<u64>,
    sync_waits: u64,
    sync_timeouts: u64,
    connect_errors: Vec<String>,
    lost_connections: u64,
}

impl Tally {
    fn merge(&mut self, o: Tally) {
        self.replayed += o.replayed;
        for (k, v) in o.not_replayed {
            *self.not_replayed.entry(k).or_default() += v;
        }
        for (k, v) in o.diverged {
            *self.diverged.entry(k).or_default() += v;
        }
        for (k, v) in o.examples {
            let e = self.examples.entry(k).or_default();
            e.extend(v);
            e.truncate(EXAMPLES);
        }
        self.divergences.extend(o.divergences);
        self.lags_ns.extend(o.lags_ns);
        self.free_lags_ns.extend(o.free_lags_ns);
        self.sync_waits += o.sync_waits;
        self.sync_timeouts += o.sync_timeouts;
        self.connect_errors.extend(o.connect_errors);
        self.lost_connections += o.lost_connections;
    }
}

/// How a replayed call differs from the captured one, if it does.
fn divergence(c: &Call, a: &Answer) -> Option<&'static str> {
    let verb = |t: &str| t.split(' ').next().unwrap_or("").to_string();
    match (&c.error, &a.error) {
        (None, Some(_)) => Some("error in the replay only"),
        (Some(_), None) => Some("error in the capture only"),
        (Some((x, _)), Some((y, _))) if x != y => Some("different error"),
        (Some(_), Some(_)) => None,
        // A log does not say what a statement answered.
        (None, None) if c.from_log => None,
        (None, None) => {
            let (cv, av): (Vec<String>, Vec<String>) = (
                c.tags.iter().map(|t| verb(t)).collect(),
                a.tags.iter().map(|t| verb(t)).collect(),
            );
            if cv != av {
                Some("different command tags")
            } else if c.rows != a.rows {
                Some("different row counts")
            } else {
                None
            }
        }
    }
}

/// Decodes a captured parameter for sending: text as it is, a binary one from its `\x` hex.
fn param_bytes(v: &Option<String>, binary: bool) -> Option<Vec<u8>> {
    let v = v.as_ref()?;
    if !binary {
        return Some(v.as_bytes().to_vec());
    }
    let decoded = v.strip_prefix("\\x").and_then(|hex| {
        if hex.len() % 2 != 0 {
            return None;
        }
        hex.as_bytes()
            .chunks(2)
            .map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
            .collect::<Option<Vec<u8>>>()
    });
    // Not hex (a capture edited by hand): sent as it is; the server's answer will say.
    Some(decoded.unwrap_or_else(|| v.as_bytes().to_vec()))
}

/// What a session thread needs.
struct Ctx<'a> {
    cfg: &'a ReplayConfig,
    plan: &'a Plan,
    clock: RunClock,
    order: &'a CommitOrder,
    stop: &'a StopSignal,
    /// The replay's time 0 on the run clock.
    t0: u64,
}

impl Ctx<'_> {
    /// When the captured instant `at` falls in the replay (run clock ns), `None` at full speed.
    fn scheduled(&self, at: u64) -> Option<u64> {
        match self.cfg.speed {
            Speed::Max => None,
            Speed::Factor(f) => {
                Some(self.t0 + (at.saturating_sub(self.plan.origin_ns) as f64 / f) as u64)
            }
        }
    }

    /// Sleeps until run-clock time `t` (or the stop).
    fn sleep_until(&self, t: u64) {
        loop {
            let now = self.clock.now_ns();
            if now >= t || self.stop.is_set() {
                return;
            }
            std::thread::sleep(Duration::from_nanos((t - now).min(50_000_000)));
        }
    }
}

fn replay_session(s: &SessionPlan, ctx: &Ctx<'_>, mut rec: Recorder) -> Tally {
    let mut t = Tally::default();
    // Commit points of this session (call number, index), so a call never waits for one of its
    // own session's later commits, and all are released even when not reached.
    let own_commits: Vec<(u64, usize)> = s
        .calls
        .iter()
        .filter_map(|c| {
            ctx.plan
                .commit_index
                .get(&(c.session, c.seq))
                .map(|&i| (c.seq, i))
        })
        .collect();
    let mine: Vec<usize> = own_commits.iter().map(|&(_, i)| i).collect();
    if let Some(at) = ctx.scheduled(s.connect_ns) {
        ctx.sleep_until(at);
    }
    let app = format!("dbscope-replay/{}", s.id);
    let mut conn: Option<WireConn> = None;
    // The session's transaction state after its last call.
    let mut in_transaction = false;
    let mut prepared: HashSet<String> = HashSet::new();
    let connect = |t: &mut Tally| match connect_with(&ctx.cfg.target, &app, None) {
        Ok((c, _)) => Some(c),
        Err(why) => {
            t.connect_errors.push(format!("session {}: {}", s.id, why));
            None
        }
    };
    conn = conn.or_else(|| connect(&mut t));
    for c in &s.calls {
        if ctx.stop.is_set() {
            break;
        }
        let point = ctx.plan.commit_index.get(&(c.session, c.seq)).copied();
        if let Some(why) = not_replayed(c) {
            *t.not_replayed.entry(why).or_default() += 1;
            if let Some(i) = point {
                ctx.order.mark(i);
            }
            continue;
        }
        let scheduled = ctx.scheduled(c.start_ns);
        if let Some(at) = scheduled {
            ctx.sleep_until(at);
        }
        let mut held = false;
        if ctx.cfg.sync_commit {
            let slack_ns = u64::try_from(ctx.cfg.sync_slack.as_nanos()).unwrap_or(u64::MAX);
            // Never the session's own commit at or after this call (it cannot have happened).
            let own_next = ctx
                .plan
                .commit_index
                .get(&(c.session, c.seq))
                .copied()
                .or_else(|| {
                    own_commits
                        .iter()
                        .copied()
                        .find(|&(q, _)| q > c.seq)
                        .map(|(_, i)| i)
                })
                .unwrap_or(usize::MAX);
            let k = ctx
                .plan
                .commits
                .partition_point(|&end| end < sync_bound(c, slack_ns))
                .min(own_next);
            let reached = ctx.order.state.lock().map(|s| s.1).unwrap_or(k);
            if reached < k {
                held = true;
                t.sync_waits += 1;
                let limit = match in_transaction {
                    true => SYNC_TIMEOUT_IN_TRANSACTION,
                    false => SYNC_TIMEOUT,
                };
                if !ctx.order.wait_for(k, ctx.stop, limit) {
                    t.sync_timeouts += 1;
                }
            }
        }
        if conn.as_ref().is_none_or(WireConn::is_broken) {
            prepared.clear();
            conn = connect(&mut t);
        }
        let name = rec.name(&event_name(c));
        let Some(db) = conn.as_mut() else {
            *t.not_replayed.entry("no connection").or_default() += 1;
            if let Some(i) = point {
                ctx.order.mark(i);
            }
            continue;
        };
        let binary: Vec<bool> = (0..c.params.len())
            .map(|i| c.formats.get(i).copied().unwrap_or(0) == 1)
            .collect();
        let params: Vec<Option<Vec<u8>>> = c
            .params
            .iter()
            .zip(&binary)
            .map(|(v, &b)| param_bytes(v, b))
            .collect();
        let statement = c.statement.clone().unwrap_or_default();
        let call = match c.protocol {
            Protocol::Simple => ReplayCall::Simple(&c.sql),
            _ => ReplayCall::Extended {
                statement: &statement,
                parse: (statement.is_empty() || !prepared.contains(&statement))
                    .then_some(c.sql.as_str()),
                params: &params,
                formats: &c.formats,
            },
        };
        let start = rec.now();
        let answer = db.replay_call(&call);
        let end = rec.now();
        if let Some(at) = scheduled {
            t.lags_ns.push(start.saturating_sub(at));
            if !held {
                t.free_lags_ns.push(start.saturating_sub(at));
            }
        }
        t.replayed += 1;
        match answer {
            Ok(a) => {
                in_transaction = matches!(a.txn, Some('T' | 'E'));
                if !statement.is_empty() && a.error.is_none() {
                    prepared.insert(statement.clone());
                }
                match &a.error {
                    Some((code, _)) => {
                        let outcome = rec.outcome(&format!("pg:{code}"));
                        rec.push(name, start, end, scheduled, outcome, 0);
                    }
                    None => rec.push(name, start, end, scheduled, 0, a.rows),
                }
                if let Some(kind) = divergence(c, &a) {
                    *t.diverged.entry(kind).or_default() += 1;
                    let v = json!({"kind": kind, "session": c.session, "seq": c.seq,
                        "sql": c.sql, "captured": {"tags": c.tags, "rows": c.rows, "error": c.error},
                        "replayed": {"tags": a.tags, "rows": a.rows, "error": a.error}});
                    let ex = t.examples.entry(kind).or_default();
                    if ex.len() < EXAMPLES {
                        ex.push(v.clone());
                    }
                    t.divergences.push(v);
                }
            }
            Err(e) => {
                let class = match &e {
                    WireError::Db { code, .. } => format!("pg:{code}"),
                    _ => "connection".to_string(),
                };
                rec.error(name, start, end, &class);
                t.lost_connections += 1;
                *t.diverged.entry("connection lost").or_default() += 1;
            }
        }
        if let Some(i) = point {
            ctx.order.mark(i);
        }
    }
    for i in mine {
        ctx.order.mark(i);
    }
    rec.flush();
    t
}

/// Runs the replay. `progress` is called about every second with (calls replayed so far is not
/// known here; elapsed seconds).
pub fn run(
    cfg: &ReplayConfig,
    stop: &Arc<StopSignal>,
    mut progress: impl FnMut(Duration),
) -> Result<ReplaySummary, CaptureError> {
    let plan = load(&cfg.capture)?;
    if plan.sessions.is_empty() {
        return Err(CaptureError::Config(format!(
            "{}: the capture holds no calls",
            cfg.capture.display()
        )));
    }
    check_target(cfg, &plan)?;
    let mut params = BTreeMap::new();
    params.insert(
        "capture".to_string(),
        json!(cfg.capture.display().to_string()),
    );
    params.insert(
        "speed".to_string(),
        match cfg.speed {
            Speed::Max => json!("max"),
            Speed::Factor(f) => json!(f),
        },
    );
    params.insert(
        "sync".to_string(),
        json!(if cfg.sync_commit { "commit" } else { "none" }),
    );
    if cfg.sync_commit {
        params.insert(
            "sync_slack_us".to_string(),
            json!(cfg.sync_slack.as_micros() as u64),
        );
    }
    if let Some(rp) = &cfg.restored_from {
        params.insert("restore_point".to_string(), json!(rp));
    }
    let mut manifest = Manifest::new(
        "replay",
        WorkloadInfo {
            name: "pg-replay".into(),
            params,
        },
        0,
    );
    manifest.command_line = cfg.command_line.clone();
    manifest.target = Some(TargetInfo {
        kind: "postgres".into(),
        location: redact(&cfg.target),
        ..TargetInfo::default()
    });
    manifest.runner = Some(RunnerInfo {
        sessions: plan.sessions.len() as u32,
        ..RunnerInfo::default()
    });
    let mut rec = Recording::begin(&cfg.out, manifest)?;
    let clock = rec.start_clock()?;
    let (sessions, batches) = rec.sessions(&clock, 0, 256);
    let order = CommitOrder::new(plan.commits.len());
    let ctx = Ctx {
        cfg,
        plan: &plan,
        t0: clock.now_ns() + 20_000_000,
        clock: clock.clone(),
        order: &order,
        stop,
    };
    let started = Instant::now();
    let mut tally = Tally::default();
    let write_error = std::thread::scope(|scope| {
        let handles: Vec<_> = plan
            .sessions
            .iter()
            .map(|s| {
                let rec = sessions.recorder(s.id);
                let ctx = &ctx;
                scope.spawn(move || replay_session(s, ctx, rec))
            })
            .collect();
        drop(sessions);
        let mut last = Instant::now();
        let err = rec.pump(batches, Duration::from_millis(200), |_| {
            if last.elapsed() >= Duration::from_secs(1) {
                progress(started.elapsed());
                last = Instant::now();
            }
        });
        for h in handles {
            match h.join() {
                Ok(t) => tally.merge(t),
                Err(_) => stop.fail("a replay session failed (a bug)".into()),
            }
        }
        err
    });
    let replay_ns = clock.now_ns().saturating_sub(ctx.t0);
    let path = cfg.out.join(DIVERGENCE_FILE);
    let mut text = String::new();
    for d in &tally.divergences {
        text.push_str(&d.to_string());
        text.push('\n');
    }
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| CaptureError::io(&path, e))?;
    let summary = ReplaySummary {
        dir: cfg.out.clone(),
        replayed: tally.replayed,
        not_replayed: tally.not_replayed.values().sum(),
        diverged: tally.diverged.values().sum(),
        capture_s: plan.span_ns as f64 / 1e9,
        replay_s: replay_ns as f64 / 1e9,
    };
    rec.write_counters(section(&tally, &plan, &summary, cfg))?;
    let (outcome, detail) = match (write_error, stop.outcome()) {
        (Some(why), _) => (Outcome::Failed, Some(why)),
        (None, o) => o,
    };
    let outcome = match (outcome, tally.connect_errors.first()) {
        (Outcome::Complete, Some(_)) if tally.replayed == 0 => Outcome::Failed,
        (o, _) => o,
    };
    let detail =
        detail.or_else(|| (outcome == Outcome::Failed).then(|| tally.connect_errors.join("; ")));
    rec.finish(outcome, detail.clone())?;
    if outcome == Outcome::Failed {
        return Err(CaptureError::Failed {
            dir: cfg.out.clone(),
            why: detail.unwrap_or_default(),
        });
    }
    Ok(summary)
}

/// Fails before starting when the target lacks tables the capture's statements use: every
/// distinct statement is prepared (`PREPARE`, which checks the names without running anything)
/// and the missing relations are named.
fn check_target(cfg: &ReplayConfig, plan: &Plan) -> Result<(), CaptureError> {
    let (mut conn, _) = connect_with(&cfg.target, "dbscope-replay/check", None).map_err(|why| {
        CaptureError::Connect {
            message: format!("cannot connect to {}: {why}", redact(&cfg.target)),
            source: why,
        }
    })?;
    let mut seen = HashSet::new();
    let mut missing = Vec::new();
    for c in plan.sessions.iter().flat_map(|s| s.calls.iter()) {
        if not_replayed(c).is_some()
            || !matches!(class(&c.sql), "read" | "write")
            || !seen.insert(c.sql.as_str())
            || seen.len() > 2000
        {
            continue;
        }
        // One statement only: a multi-statement string cannot be prepared.
        let body = c.sql.trim().trim_end_matches(';');
        if body.contains(';') {
            continue;
        }
        let answer = conn.replay_call(&ReplayCall::Simple(&format!(
            "PREPARE dbscope_replay_check AS {body}"
        )));
        match answer {
            Ok(a) => match a.error {
                Some((code, message)) if code == "42P01" => {
                    if !missing.contains(&message) {
                        missing.push(message);
                    }
                }
                Some(_) => {}
                None => {
                    let _ =
                        conn.replay_call(&ReplayCall::Simple("DEALLOCATE dbscope_replay_check"));
                }
            },
            Err(e) => {
                return Err(CaptureError::Database {
                    message: format!("checking the target failed: {e}"),
                    source: e,
                })
            }
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(CaptureError::Config(format!(
            "the target {} lacks tables the capture uses: {} (reset it to a restore point taken \
             before the capture: --restore NAME)",
            redact(&cfg.target),
            missing.join("; ")
        )))
    }
}

fn quantile(sorted: &[u64], q: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    Some(sorted[i.min(sorted.len() - 1)])
}

fn section(t: &Tally, plan: &Plan, s: &ReplaySummary, cfg: &ReplayConfig) -> CounterSection {
    let int = |v: u64| CounterValue::Int(v as i64);
    let mut counters = vec![
        Counter::new("replayed", "calls replayed", int(s.replayed), ""),
        Counter::new(
            "not_replayed",
            "calls not replayed",
            int(s.not_replayed),
            "",
        ),
        Counter::new(
            "diverged",
            "replayed calls that diverged",
            int(s.diverged),
            "",
        ),
        Counter::new(
            "capture_s",
            "capture duration (first call to last)",
            CounterValue::Float(s.capture_s),
            "s",
        )
        .decimals(3),
        Counter::new(
            "replay_s",
            "replay duration",
            CounterValue::Float(s.replay_s),
            "s",
        )
        .decimals(3),
    ];
    if s.capture_s > 0.0 {
        counters.push(
            Counter::new(
                "replay_over_capture",
                "replay / capture duration",
                CounterValue::Float(s.replay_s / s.capture_s),
                "",
            )
            .decimals(3),
        );
    }
    let mut lags = t.lags_ns.clone();
    lags.sort_unstable();
    for (key, label, q) in [
        ("lag_p50_us", "start lag behind schedule p50", 0.5),
        ("lag_p99_us", "start lag behind schedule p99", 0.99),
        ("lag_max_us", "start lag behind schedule max", 1.0),
    ] {
        if let Some(v) = quantile(&lags, q) {
            counters.push(
                Counter::new(key, label, CounterValue::Float(v as f64 / 1e3), "µs").decimals(0),
            );
        }
    }
    if cfg.sync_commit {
        let mut free = t.free_lags_ns.clone();
        free.sort_unstable();
        for (key, label, q) in [
            (
                "free_lag_p50_us",
                "  of calls not held by the commit order p50",
                0.5,
            ),
            (
                "free_lag_p99_us",
                "  of calls not held by the commit order p99",
                0.99,
            ),
            (
                "free_lag_max_us",
                "  of calls not held by the commit order max",
                1.0,
            ),
        ] {
            if let Some(v) = quantile(&free, q) {
                counters.push(
                    Counter::new(key, label, CounterValue::Float(v as f64 / 1e3), "µs").decimals(0),
                );
            }
        }
        counters.push(Counter::new(
            "sync_waits",
            "calls that waited for an earlier commit",
            int(t.sync_waits),
            "",
        ));
        counters.push(Counter::new(
            "sync_timeouts",
            "of which went ahead (500 ms; 50 ms inside a transaction)",
            int(t.sync_timeouts),
            "",
        ));
    }
    if plan.bad_lines > 0 {
        counters.push(Counter::new(
            "capture_bad_lines",
            "unreadable lines in the capture",
            int(plan.bad_lines),
            "",
        ));
    }
    let mut tables = Vec::new();
    let reasons: Vec<Vec<CounterValue>> = t
        .not_replayed
        .iter()
        .map(|(k, v)| vec![CounterValue::Text(k.to_string()), int(*v)])
        .chain(
            t.diverged
                .iter()
                .map(|(k, v)| vec![CounterValue::Text(format!("diverged: {k}")), int(*v)]),
        )
        .collect();
    if !reasons.is_empty() {
        tables.push(CounterTable {
            key: "by_kind".into(),
            title: "calls not replayed, and divergence by kind".into(),
            columns: vec![
                Column::new("kind", "kind", ""),
                Column::new("calls", "calls", ""),
            ],
            rows: reasons,
        });
    }
    let examples: Vec<Vec<CounterValue>> = t
        .examples
        .values()
        .flat_map(|v| v.iter())
        .map(|e| {
            vec![
                CounterValue::Text(e["kind"].as_str().unwrap_or("").to_string()),
                int(e["session"].as_u64().unwrap_or(0)),
                int(e["seq"].as_u64().unwrap_or(0)),
                CounterValue::Text(crate::fingerprint::fingerprint(
                    e["sql"].as_str().unwrap_or(""),
                )),
                CounterValue::Text(e["captured"].to_string()),
                CounterValue::Text(e["replayed"].to_string()),
            ]
        })
        .collect();
    if !examples.is_empty() {
        tables.push(CounterTable {
            key: "examples".into(),
            title: format!(
                "divergence examples (up to {EXAMPLES} of each kind; all in {DIVERGENCE_FILE})"
            ),
            columns: vec![
                Column::new("kind", "kind", ""),
                Column::new("session", "session", ""),
                Column::new("seq", "call", ""),
                Column::new("statement", "statement", ""),
                Column::new("captured", "captured", ""),
                Column::new("replayed", "replayed", ""),
            ],
            rows: examples,
        });
    }
    let mut notes = t.connect_errors.clone();
    notes.truncate(5);
    CounterSection {
        key: "replay".into(),
        title: "Replay".into(),
        final_counts: true,
        counters,
        tables,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_parameters_decode_from_hex() {
        assert_eq!(
            param_bytes(&Some("\\x00ff10".into()), true),
            Some(vec![0, 255, 16])
        );
        assert_eq!(
            param_bytes(&Some("\\x0".into()), true),
            Some(b"\\x0".to_vec())
        );
        assert_eq!(
            param_bytes(&Some("abc".into()), false),
            Some(b"abc".to_vec())
        );
        assert_eq!(param_bytes(&None, false), None);
    }

    #[test]
    fn commit_order_releases_in_sequence() {
        let o = CommitOrder::new(3);
        let stop = StopSignal::new();
        o.mark(1);
        assert_eq!(o.state.lock().unwrap().1, 0, "commit 0 has not happened");
        o.mark(0);
        let wait = Duration::from_millis(10);
        assert!(o.wait_for(2, &stop, wait));
        assert!(!o.wait_for(3, &stop, wait), "commit 2 has not happened");
        o.mark(2);
        assert!(o.wait_for(3, &stop, wait));
        stop.interrupt();
        let o = CommitOrder::new(1);
        assert!(
            !o.wait_for(1, &stop, SYNC_TIMEOUT),
            "a stopped replay does not wait"
        );
    }
}
