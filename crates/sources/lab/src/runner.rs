//! Sessions, pacing, warm-up, limits, progress, and graceful stop: drives a workload against a
//! target and records every operation into a run directory as it goes.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use dbscope_core::record::{session_seed, Pumped, Recorder, Recording, RunClock, StopSignal};
use dbscope_core::stats::LatencyHistogram;
use dbscope_core::{Event, Manifest, NameId, Outcome, RunnerInfo, TargetInfo, WorkloadInfo};

use crate::error::Error;
use crate::explain::Explainer;
use crate::observe::{self, ObserveConfig, Observer, SessionProbe, StepMarker};
use crate::pace::{Pacer, Pacing};
use crate::workload::{SessionWork, Workload};
use dbscope_db::{Session, Target, TargetError};

/// How long a session keeps trying to reconnect after losing its connection.
const RECONNECT_FOR: Duration = Duration::from_secs(30);
/// How often progress is reported.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// How to drive the sessions.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Number of sessions, each with its own connection.
    pub sessions: u32,
    /// Stop each session after this many operations (warm-up ones included).
    pub ops_per_session: Option<u64>,
    /// Stop after warm-up plus this long.
    pub duration: Option<Duration>,
    /// Events that start in this first period are flagged as warm-up.
    pub warmup: Duration,
    /// Seed of every random choice.
    pub seed: u64,
    /// Stop the run as failed after more errors than this.
    pub max_errors: u64,
    /// Client threads the sessions run on ([`dbscope_db::mux`]); `None`: one per CPU, at most one per
    /// session. Targets that cannot multiplex (SQLite, null) always get a thread per session.
    pub threads: Option<u32>,
    /// Snapshots and active-session sampling ([`crate::observe`]).
    pub observe: ObserveConfig,
    /// Open-loop pacing (`--rate`, `--arrival`); `None`: closed loop, as fast as it can.
    pub pacing: Option<Pacing>,
    /// `--explain`: each distinct statement's plan taken once after warm-up, into `plans.json`
    /// ([`crate::explain`]).
    pub explain: bool,
}

impl RunConfig {
    /// Checks the configuration; the message names the offending option.
    pub fn validate(&self) -> Result<(), Error> {
        if self.sessions == 0 {
            return Err(Error::invalid("sessions", "must be at least 1"));
        }
        if self.ops_per_session == Some(0) {
            return Err(Error::invalid("ops_per_session", "must be at least 1"));
        }
        if self.duration == Some(Duration::ZERO) {
            return Err(Error::invalid("duration", "must be longer than 0"));
        }
        if self.threads == Some(0) {
            return Err(Error::invalid("threads", "must be at least 1"));
        }
        if let Some(p) = &self.pacing {
            p.validate()?;
        }
        self.observe.validate()
    }
}

/// What the progress display shows, about four times a second.
#[derive(Clone, Debug)]
pub struct Progress {
    /// Time since the start (warm-up included).
    pub elapsed: Duration,
    /// True while in warm-up.
    pub warming_up: bool,
    /// Headline events recorded so far.
    pub ops: u64,
    /// Errors so far.
    pub errors: u64,
    /// Headline events per second over the last interval.
    pub ops_per_s: f64,
    /// p99 of the headline event over roughly the last second, in ns.
    pub p99_ns: Option<u64>,
    /// Fraction done (0–1), when the run has a known end.
    pub fraction: Option<f64>,
    /// Name of the headline event.
    pub headline: String,
}

/// Everything needed to make one run.
pub struct RunSpec<'a> {
    /// Where the run directory goes (must not exist, or be empty).
    pub out: PathBuf,
    /// Command line as typed, already redacted.
    pub command_line: Vec<String>,
    /// The database.
    pub target: &'a dyn Target,
    /// The workload.
    pub workload: &'a dyn Workload,
    /// Sessions and limits.
    pub config: RunConfig,
}

/// How a run ended.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// The run directory.
    pub dir: PathBuf,
    /// Complete, interrupted or failed.
    pub outcome: Outcome,
    /// Why, when not complete.
    pub detail: Option<String>,
    /// Events written.
    pub events: u64,
    /// Operations performed (all sessions).
    pub ops: u64,
    /// Errors recorded.
    pub errors: u64,
    /// Wall time from start to end.
    pub elapsed: Duration,
}

/// Adds what `target` knows of its tables now ([`Target::table_facts`]) to `info`, once a
/// workload or a load has made them; what cannot be read then leaves `info` as it was.
pub(crate) fn add_table_facts(info: &mut TargetInfo, target: &dyn Target) {
    if let Ok(facts) = target.table_facts() {
        info.settings_effective.extend(facts);
    }
}

/// Describes the target, sets up the workload, creates the run directory, runs the sessions while
/// writing events, and records how it ended. `stop` may be fired from another thread (Ctrl-C).
pub fn run(
    spec: RunSpec<'_>,
    stop: &StopSignal,
    progress: &mut dyn FnMut(&Progress),
) -> Result<RunResult, Error> {
    let cfg = &spec.config;
    cfg.validate()?;
    if cfg.observe.waits_history && spec.target.kind() != "mysql" {
        return Err(Error::invalid(
            "waits",
            format!(
                "history needs a MariaDB/MySQL target (performance_schema's \
                 events_waits_history_long); this target is {}",
                spec.target.kind()
            ),
        ));
    }
    let mut target_info = spec.target.describe()?;
    spec.workload.setup(spec.target, cfg.sessions, stop)?;
    // The tables setup made (a first run's, or `--fresh`'s) are listed with the others.
    add_table_facts(&mut target_info, spec.target);

    let mut manifest = Manifest::new(
        "workload",
        WorkloadInfo {
            name: spec.workload.name().to_string(),
            params: spec.workload.params(),
        },
        cfg.seed,
    );
    if let Some(p) = &cfg.pacing {
        crate::pace::record_params(p, cfg.sessions, &mut manifest.workload.params);
    }
    manifest.command_line = spec.command_line.clone();
    manifest.target = Some(target_info);
    manifest.runner = Some(RunnerInfo {
        sessions: cfg.sessions,
        ops_per_session: cfg.ops_per_session,
        duration_s: cfg.duration.map(|d| d.as_secs_f64()),
        warmup_s: cfg.warmup.as_secs_f64(),
        max_errors: Some(cfg.max_errors),
        // `events` paces its clients itself: its runs are open loop without `--rate` (issue 34).
        mode: if cfg.pacing.is_some() || spec.workload.paces_itself() {
            "open"
        } else {
            "closed"
        }
        .into(),
        threads: None,
        connect_s: None,
    });

    if stop.is_set() {
        // Stopped during setup (Ctrl-C while lookup's --restart-cmd ran): the run is kept, as
        // stopped, with what setup did in its parameters and no session started.
        let rec = Recording::begin(&spec.out, manifest)?;
        let (outcome, detail) = stop.outcome();
        let detail = detail.map(|d| format!("{d} during setup, before any session started"));
        let run = rec.finish(outcome, detail)?;
        return Ok(RunResult {
            dir: spec.out,
            outcome: run.manifest.outcome,
            detail: run.manifest.outcome_detail,
            events: 0,
            ops: 0,
            errors: 0,
            elapsed: Duration::ZERO,
        });
    }

    // Every session connects before the clock starts, so connection time is not measured: each
    // client thread opens its own sessions' connections, as pgbench's threads do (connections
    // opened by one thread and driven by another ran lookups 4-8 % slower here, docs/targets.md).
    // Each named `dbscope/<run id>/<session>`, so the observer finds the run's backends.
    let probe = Arc::new(SessionProbe::new(&observe::run_id(), cfg.sessions));
    let threads = client_threads(cfg, spec.target)?;
    let multiplexed = threads < cfg.sessions;
    let errors = AtomicU64::new(0);
    let ops = AtomicU64::new(0);
    let left_due = AtomicU64::new(0);
    let due_per_s = std::sync::Mutex::new(Vec::new());
    let explainer = cfg.explain.then(|| Explainer::new(spec.target));
    let warmup_ns = cfg.warmup.as_nanos() as u64;
    let deadline_ns = cfg.duration.map(|d| warmup_ns + d.as_nanos() as u64);
    let headline = spec.workload.headline_event();

    let (mut rec, clock, obs) = std::thread::scope(|scope| {
        let connecting = Instant::now();
        let (ready_tx, ready) = std::sync::mpsc::channel::<Result<(), (u32, Error)>>();
        let mut go = Vec::with_capacity(threads as usize);
        for t in 0..threads {
            // The thread's recorders once the clock has started; closed unsent when the run
            // cannot start (a session could not connect), and the thread then closes its own.
            let (go_tx, go_rx) = std::sync::mpsc::sync_channel::<Vec<Recorder>>(1);
            go.push(go_tx);
            let ready_tx = ready_tx.clone();
            let (probe, errors, ops) = (&probe, &errors, &ops);
            let (left_due, due_per_s, explainer) = (&left_due, &due_per_s, explainer.as_ref());
            let name = match multiplexed {
                true => format!("client-{t}"),
                false => format!("session-{t}"),
            };
            std::thread::Builder::new()
                .name(name)
                .spawn_scoped(scope, move || {
                    let ids: Vec<u32> = sessions_of_thread(t, threads, cfg.sessions).collect();
                    let mut conns = Vec::with_capacity(ids.len());
                    for &i in &ids {
                        match connect_session(spec.target, cfg, probe, i, multiplexed) {
                            Ok(s) => conns.push(s),
                            Err(e) => {
                                let _ = ready_tx.send(Err((i, e)));
                                return;
                            }
                        }
                    }
                    let _ = ready_tx.send(Ok(()));
                    drop(ready_tx);
                    let Ok(recorders) = go_rx.recv() else { return };
                    let group =
                        ids.into_iter()
                            .zip(conns)
                            .zip(recorders)
                            .map(|((i, sess), rec)| SessionCtx {
                                sess,
                                work: spec.workload.session(i, session_seed(cfg.seed, i)),
                                rec,
                                target: spec.target,
                                cfg,
                                deadline_ns,
                                stop,
                                errors,
                                ops,
                                probe,
                                left_due,
                                due_per_s,
                                multiplexed,
                                explainer,
                            });
                    if !multiplexed {
                        group.for_each(session_loop);
                        return;
                    }
                    let tasks: Vec<Box<dyn FnOnce() + '_>> = group
                        .map(|c| Box::new(move || session_loop(c)) as Box<dyn FnOnce() + '_>)
                        .collect();
                    if let Err(e) = dbscope_db::mux::run_group(tasks) {
                        stop.fail(format!("client thread {t}: waiting for the server: {e}"));
                    }
                })
                .expect("spawning a session thread");
        }
        drop(ready_tx);
        // The first session (by number) that could not connect says why; the others' threads
        // close what they opened when `go` is dropped.
        let mut refused: Option<(u32, Error)> = None;
        for r in ready.iter() {
            if let Err((i, e)) = r {
                if refused.as_ref().is_none_or(|(j, _)| i < *j) {
                    refused = Some((i, e));
                }
            }
        }
        if let Some((_, e)) = refused {
            return Err(e);
        }
        if let Some(r) = manifest.runner.as_mut() {
            r.threads = multiplexed.then_some(threads);
            r.connect_s = Some(connecting.elapsed().as_secs_f64());
        }

        let mut rec = Recording::begin(&spec.out, manifest)?;
        // Where the files are goes into the manifest before the clock starts (which writes it).
        let opened = Observer::open(
            spec.target,
            &spec.workload.tables(),
            &spec.workload.storage_dirs(),
            rec.dir(),
            &cfg.observe,
            probe.clone(),
        );
        rec.manifest_mut().storage = Some(opened.storage());
        rec.manifest_mut().headline_event = Some(headline.to_string());
        let clock = rec.start_clock()?;
        // Shared with the workload's step marker, which takes a snapshot from a session's thread.
        let obs = Arc::new(Mutex::new(opened.start(&clock)));
        let observer = || obs.lock().unwrap_or_else(PoisonError::into_inner);
        spec.workload.observe_steps(StepMarker::new(&obs));
        let headline_id = rec.names().intern(headline);
        let (recorders, batches) = rec.sessions(&clock, warmup_ns, 2 * cfg.sessions as usize + 8);
        let sampler = observer().start_sampler(scope, spec.target);
        for (t, go) in go.into_iter().enumerate() {
            let mine = sessions_of_thread(t as u32, threads, cfg.sessions);
            // A thread that is gone has panicked; the scope says so when it ends.
            let _ = go.send(mine.map(|i| recorders.recorder(i)).collect());
        }
        drop(recorders);

        // This thread writes blocks and reports progress until every session has finished.
        let mut live = LiveProgress::new(headline, headline_id, &clock, warmup_ns);
        rec.pump(batches, PROGRESS_EVERY, |p| match p {
            Pumped::Batch(batch) => live.add(batch),
            Pumped::WriteFailed(msg) => stop.fail(msg.to_string()),
            Pumped::Tick(_) => {
                observer().tick();
                let fraction = match (deadline_ns, cfg.ops_per_session) {
                    (Some(d), _) => Some((clock.now_ns() as f64 / d as f64).min(1.0)),
                    (None, Some(n)) => {
                        Some(ops.load(Ordering::Relaxed) as f64 / (n * cfg.sessions as u64) as f64)
                    }
                    _ => None,
                };
                progress(&live.tick(errors.load(Ordering::Relaxed), fraction));
            }
        });
        observer().stop_sampler(sampler);
        Ok((rec, clock, obs))
    })?;
    let observer = || obs.lock().unwrap_or_else(PoisonError::into_inner);
    observer().finish();
    observer().sessions().release();
    let waits_warning = observer().history_warning();

    let elapsed = Duration::from_nanos(clock.now_ns());
    spec.workload.after_sessions(spec.target, elapsed);
    let mut sections: Vec<_> = spec.workload.counters().into_iter().collect();
    if let Some(p) = &cfg.pacing {
        sections.push(crate::pace::section(
            p,
            cfg.sessions,
            ops.load(Ordering::Relaxed),
            left_due.load(Ordering::Relaxed),
            &due_per_s.lock().unwrap_or_else(PoisonError::into_inner),
        ));
    }
    for section in sections {
        if let Err(e) = rec.write_counters(section) {
            stop.fail(format!("cannot write the run-level counters: {e}"));
        }
    }
    if let Some(x) = explainer {
        if let Err(e) = x.finish().write(rec.dir()) {
            stop.fail(format!("cannot write the plans: {e}"));
        }
    }
    let (outcome, mut detail) = stop.outcome();
    // The ring lost waits: the run's events are whole, its waits.jsonl is not.
    if let Some(w) = waits_warning {
        detail = Some(match detail {
            Some(d) => format!("{d}; {w}"),
            None => w,
        });
    }
    let events = rec.events_written();
    let run = rec.finish(outcome, detail)?;
    Ok(RunResult {
        dir: spec.out,
        outcome: run.manifest.outcome,
        detail: run.manifest.outcome_detail,
        events,
        ops: ops.load(Ordering::Relaxed),
        errors: errors.load(Ordering::Relaxed),
        elapsed,
    })
}

/// The progress line's figures: the headline event's rate since the last tick and its p99 over
/// about the last second.
struct LiveProgress<'a> {
    headline: &'a str,
    headline_id: NameId,
    clock: &'a RunClock,
    warmup_ns: u64,
    window: LatencyHistogram,
    window_started: Instant,
    last_p99: Option<u64>,
    total: u64,
    last_tick: Instant,
    last_tick_total: u64,
}

impl<'a> LiveProgress<'a> {
    fn new(headline: &'a str, headline_id: NameId, clock: &'a RunClock, warmup_ns: u64) -> Self {
        LiveProgress {
            headline,
            headline_id,
            clock,
            warmup_ns,
            window: LatencyHistogram::new(),
            window_started: Instant::now(),
            last_p99: None,
            total: 0,
            last_tick: Instant::now(),
            last_tick_total: 0,
        }
    }

    /// Counts the headline events of a written batch.
    fn add(&mut self, batch: &[Event]) {
        for ev in batch
            .iter()
            .filter(|e| e.name == self.headline_id && !e.is_error())
        {
            self.total += 1;
            self.window.record(ev.duration_ns);
        }
    }

    /// The figures for one progress line.
    fn tick(&mut self, errors: u64, fraction: Option<f64>) -> Progress {
        let elapsed = Duration::from_nanos(self.clock.now_ns());
        let dt = self.last_tick.elapsed().as_secs_f64();
        let rate = (self.total - self.last_tick_total) as f64 / dt;
        self.last_tick = Instant::now();
        self.last_tick_total = self.total;
        if self.window_started.elapsed() >= Duration::from_secs(1) {
            self.last_p99 = (!self.window.is_empty()).then(|| self.window.percentile(99.0));
            self.window.clear();
            self.window_started = Instant::now();
        } else if self.last_p99.is_none() && !self.window.is_empty() {
            self.last_p99 = Some(self.window.percentile(99.0));
        }
        Progress {
            elapsed,
            warming_up: (elapsed.as_nanos() as u64) < self.warmup_ns,
            ops: self.total,
            errors,
            ops_per_s: rate,
            p99_ns: self.last_p99,
            fraction,
            headline: self.headline.to_string(),
        }
    }
}

/// How many client threads run the sessions: `--threads`, else one per CPU, never more than the
/// sessions (a thread per session where the target prefers it without `--threads`: MariaDB). Fewer
/// threads than sessions needs sessions that multiplex (PostgreSQL, MariaDB on a Unix socket);
/// where the target's cannot, each session gets its own thread, and an explicit `--threads` is
/// refused. Decided before any session connects, so that each thread opens its own.
fn client_threads(cfg: &RunConfig, target: &dyn Target) -> Result<u32, Error> {
    if cfg.threads.is_none() && target.own_thread_by_default() {
        return Ok(cfg.sessions);
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let threads = cfg.threads.unwrap_or(cpus).clamp(1, cfg.sessions);
    if threads == cfg.sessions || target.sessions_may_share_threads() {
        return Ok(threads);
    }
    match cfg.threads {
        Some(t) => Err(threads_refused(t)),
        None => Ok(cfg.sessions),
    }
}

/// The sessions client thread `t` of `threads` runs: session i on thread i % threads (the
/// thread connects them, the main thread hands it their recorders in the same order).
fn sessions_of_thread(t: u32, threads: u32, sessions: u32) -> impl Iterator<Item = u32> {
    (t..sessions).step_by(threads as usize)
}

fn threads_refused(t: u32) -> Error {
    Error::invalid(
        "threads",
        format!(
            "{t}: this target runs every session in a thread of its own (only PostgreSQL \
             sessions, and MariaDB/MySQL ones on a Unix socket, can share threads); leave \
             {{threads}} out"
        ),
    )
}

/// Opens session `i`'s connection, from the client thread that will drive it: named for the
/// observer, registered with the probe, and switched to multiplexing when it shares the thread.
fn connect_session(
    target: &dyn Target,
    cfg: &RunConfig,
    probe: &SessionProbe,
    i: u32,
    multiplexed: bool,
) -> Result<Box<dyn Session>, Error> {
    let mut s = target.connect().map_err(|e| {
        // The server's connection limit (SQLSTATE 53300, "too many clients", "remaining
        // connection slots are reserved"; MariaDB/MySQL's 1040 max_connections and 1203
        // max_user_connections) gets the hint; other failures are said as they are.
        let limit = e.class.ends_with("53300")
            || e.message.contains("too many clients")
            || e.message.contains("connection slots")
            || matches!(e.mysql_code, Some(1040 | 1203));
        let hint = match limit {
            true => "; each session (events: each of --connections) needs a connection of its own: ask for fewer, or raise the server's limit (PostgreSQL's and MariaDB's max_connections, MariaDB's max_user_connections)",
            false => "",
        };
        // Still the database's refusal (its class and SQLSTATE kept), said with the session.
        Error::Target(TargetError {
            message: format!("connection {} of {}: {}{hint}", i + 1, cfg.sessions, e.message),
            ..e
        })
    })?;
    if !adopt(s.as_mut(), probe, i, multiplexed)? {
        // MariaDB/MySQL over TCP with an explicit --threads (without it they get a thread each).
        return Err(threads_refused(cfg.threads.unwrap_or(cfg.sessions)));
    }
    Ok(s)
}

/// Makes a new connection session `i`'s, at its first connection and at every reconnection:
/// named for the observer, registered with the probe, and switched to multiplexing when it
/// shares its thread. False when it cannot share one (MariaDB/MySQL over TCP).
fn adopt(
    s: &mut dyn Session,
    probe: &SessionProbe,
    i: u32,
    multiplexed: bool,
) -> Result<bool, TargetError> {
    s.set_label(&probe.label(i))?;
    probe.register(i, s);
    if multiplexed {
        s.multiplex()
    } else {
        Ok(true)
    }
}

struct SessionCtx<'a> {
    sess: Box<dyn Session>,
    work: Box<dyn SessionWork>,
    rec: Recorder,
    target: &'a dyn Target,
    cfg: &'a RunConfig,
    deadline_ns: Option<u64>,
    stop: &'a StopSignal,
    errors: &'a AtomicU64,
    ops: &'a AtomicU64,
    /// Names the session, shows its operation in flight to the sampler, sums SQLite's counters.
    probe: &'a SessionProbe,
    /// Operations due by the end (open loop) that no session started.
    left_due: &'a AtomicU64,
    /// Operations due per second of the run clock, all sessions (open loop).
    due_per_s: &'a std::sync::Mutex<Vec<u64>>,
    /// The session shares its thread: a new connection must be switched to multiplexing too.
    multiplexed: bool,
    /// `--explain`: takes the plans of the session's statements once, after warm-up.
    explainer: Option<&'a Explainer>,
}

fn session_loop(mut c: SessionCtx<'_>) {
    let id = c.rec.session();
    if let Err(e) = c.work.prepare(c.sess.as_mut(), &c.rec) {
        c.stop
            .fail(format!("session {id}: cannot prepare the workload: {e}"));
        return;
    }
    let limit = c.cfg.ops_per_session.unwrap_or(u64::MAX);
    c.probe.session_start(id, c.sess.as_mut());
    let mut publish_at = c.rec.now() + observe::PUBLISH_EVERY_NS;
    let mut done = 0u64;
    let mut pacer = c.cfg.pacing.map(|p| {
        let n = c.cfg.sessions;
        // Sessions start spread over the first gap, not all at once.
        Pacer::new(
            p.session_rate(n),
            p.arrival,
            session_seed(c.cfg.seed ^ 0x7061_6365, id),
            c.rec.now(),
            id as f64 / n as f64,
        )
    });
    let first_pacer = pacer.clone();
    let warmup_ns = c.cfg.warmup.as_nanos() as u64;
    // Plans are taken between two operations, after the first one that ends past warm-up.
    let mut to_explain = c.explainer;
    while done < limit && !c.stop.is_set() && !c.work.finished() {
        if let Some(d) = c.deadline_ns {
            if c.rec.last_ns() >= d {
                break;
            }
        }
        match pacer.as_mut() {
            Some(p) => {
                let intended = p.next_start();
                if c.deadline_ns.is_some_and(|d| intended >= d) {
                    break;
                }
                crate::pace::wait_until(&c.rec, intended);
                c.rec.begin_paced_op(intended);
            }
            None => c.rec.begin_op(),
        }
        c.probe.begin_op(id, done + 1);
        let result = c.work.step(c.sess.as_mut(), &mut c.rec);
        done += 1;
        if let Some(why) = c.work.abort_reason() {
            c.stop.fail(format!("session {id}: {why}"));
            break;
        }
        if c.rec.last_ns() >= publish_at {
            publish_at = c.rec.last_ns() + observe::PUBLISH_EVERY_NS;
            c.probe.publish(id, c.sess.as_mut());
        }
        if done & 63 == 0 {
            c.ops.fetch_add(64, Ordering::Relaxed);
        }
        if result.is_ok() && c.rec.last_ns() >= warmup_ns {
            // A step may have run no statement yet (an `events` session waiting for its clients'
            // events): the session explains once it names some.
            let stmts = match to_explain {
                Some(_) => c.work.statements(),
                None => Vec::new(),
            };
            if let Some(x) = to_explain.filter(|_| !stmts.is_empty()) {
                to_explain = None;
                let took = x.explain(c.sess.as_mut(), id, c.rec.now(), stmts);
                // The schedule waits for the explaining, so no event's latency includes it.
                if let Some(p) = pacer.as_mut() {
                    p.shift(took.as_nanos() as u64);
                }
            }
        }
        let Err(e) = result else { continue };
        let n = c.errors.fetch_add(1, Ordering::Relaxed) + 1;
        if n > c.cfg.max_errors {
            c.stop.fail(format!(
                "more than --max-errors {} errors; the last: session {id}: {} ({})",
                c.cfg.max_errors, e.message, e.class
            ));
            break;
        }
        if !e.connection_lost {
            let _ = c.sess.rollback();
            continue;
        }
        match reconnect(&mut c) {
            Ok(()) => {}
            Err(why) => {
                c.stop.fail(format!(
                    "session {id} lost its connection ({}) and could not reconnect: {why}",
                    e.message
                ));
                break;
            }
        }
    }
    c.ops.fetch_add(done & 63, Ordering::Relaxed);
    // A session that ended within warm-up (few --ops) still names its statements, explained now
    // that nothing of it is timed any more.
    if let Some(x) = to_explain.filter(|_| done > 0 && !c.stop.is_set()) {
        x.explain(c.sess.as_mut(), id, c.rec.now(), c.work.statements());
    }
    c.probe.publish(id, c.sess.as_mut());
    if let Some(p) = &pacer {
        let end = c.deadline_ns.map_or(c.rec.now(), |d| d.min(c.rec.now()));
        c.left_due.fetch_add(p.due(end), Ordering::Relaxed);
        if let Some(first) = &first_pacer {
            crate::pace::add_due(c.due_per_s, &first.due_per_second(end));
        }
    }
    c.rec.flush();
    // MariaDB/MySQL forget a thread's waits when its connection closes: kept until the end
    // snapshot.
    c.probe.park(c.sess);
}

/// Reconnects with growing pauses for up to [`RECONNECT_FOR`], unless the run is stopping.
fn reconnect(c: &mut SessionCtx<'_>) -> Result<(), String> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(10);
    loop {
        let attempt = c.target.connect().and_then(|mut s| {
            adopt(s.as_mut(), c.probe, c.rec.session(), c.multiplexed)?;
            c.work.prepare(s.as_mut(), &c.rec).map(|()| s)
        });
        match attempt {
            Ok(s) => {
                c.probe
                    .connection_replaced(c.rec.session(), c.sess.as_mut());
                c.sess = s;
                return Ok(());
            }
            Err(e) if start.elapsed() >= RECONNECT_FOR => return Err(e.message),
            Err(_) if c.stop.is_set() => return Err("the run was stopping".into()),
            Err(_) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_secs(1));
            }
        }
    }
}
