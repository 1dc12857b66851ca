//! The database's and the OS's side of a run: counter snapshots at the start, the end and every
//! `--snapshot-every` ([`snapshot`], [`os`]), and active-session sampling ([`ash`]), written to
//! the run directory as they are taken (`snapshots.jsonl`, `samples.jsonl`).
//!
//! A workload whose run has steps (bulkload: load, GROUP BY twice) marks each step's end through
//! a [`StepMarker`]: a snapshot labelled `step:<name>` is taken there, so the report can show
//! each step's counters.
//!
//! Nothing here can fail a run: a view that cannot be read, a device that cannot be found or a
//! sampler that cannot connect is written down as missing, with the reason.

pub mod ash;
pub use dbscope_core::os;
pub mod mysql;
mod probe;
pub mod snapshot;
mod storage;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use dbscope_core::observe::{JsonLines, Section, Snapshot, SAMPLES_FILE, SNAPSHOTS_FILE};
use dbscope_core::{RunClock, StorageInfo};

use crate::error::Error;
use dbscope_db::{Session, Target};

pub use ash::SamplerReport;
pub use os::Unavailable;
pub use probe::{SessionProbe, PUBLISH_EVERY_NS};
pub use snapshot::DbProbe;

/// What to observe besides the client's own timings.
#[derive(Clone, Debug)]
pub struct ObserveConfig {
    /// Active-session samples per second (PostgreSQL); 0 turns sampling off.
    pub sample_hz: f64,
    /// Take a snapshot this often besides the start and the end.
    pub snapshot_every: Option<Duration>,
    /// MariaDB/MySQL: record each wait of the run's threads from `events_waits_history_long`
    /// (`--waits history`).
    pub waits_history: bool,
}

impl Default for ObserveConfig {
    fn default() -> Self {
        ObserveConfig {
            sample_hz: 10.0,
            snapshot_every: None,
            waits_history: false,
        }
    }
}

impl ObserveConfig {
    /// Checks the options; the message names the offending one.
    pub fn validate(&self) -> Result<(), Error> {
        if !(0.0..=1000.0).contains(&self.sample_hz) || self.sample_hz.is_nan() {
            return Err(Error::invalid(
                "sample_hz",
                format!("{}: must be between 0 (off) and 1000", self.sample_hz),
            ));
        }
        if self
            .snapshot_every
            .is_some_and(|d| d < Duration::from_millis(100))
        {
            return Err(Error::invalid("snapshot_every", "must be at least 100ms"));
        }
        Ok(())
    }
}

/// A short id for one run, unique enough to tell concurrent runs' backends apart in
/// `application_name` (which PostgreSQL cuts at 63 bytes, so the run directory's name would not do).
pub fn run_id() -> String {
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mixed = dbscope_core::record::session_seed(ns, std::process::id());
    format!("{:08x}", mixed as u32)
}

/// How a step's snapshot label begins: `step:load`.
pub const STEP_PREFIX: &str = "step:";

/// What a workload with steps is handed to mark their ends: [`StepMarker::settle`] by each
/// session that took part, then [`StepMarker::boundary`] by the one that knows they all have.
#[derive(Clone)]
pub struct StepMarker {
    observer: Weak<Mutex<Observer>>,
    sessions: Arc<SessionProbe>,
    kind: &'static str,
}

impl StepMarker {
    /// A marker for the run `observer` watches.
    pub fn new(observer: &Arc<Mutex<Observer>>) -> StepMarker {
        let o = observer.lock().unwrap_or_else(PoisonError::into_inner);
        StepMarker {
            observer: Arc::downgrade(observer),
            sessions: o.sessions.clone(),
            kind: o.probe.kind(),
        }
    }

    /// Makes what session `session` did so far visible to the next snapshot: on PostgreSQL its
    /// backend hands its pending statistics to the server now (`pg_stat_force_next_flush()`,
    /// 15+; before 15 it waits out the 500 ms a backend keeps them and ends a transaction); on
    /// SQLite the session publishes its connection's counters. Errors are ignored: a step's
    /// figures are then late, not wrong.
    pub fn settle(&self, session: u32, sess: &mut dyn Session) {
        match self.kind {
            // The backend flushes when it goes idle after this statement, before it answers.
            "postgres"
                if sess
                    .query_rows("SELECT pg_stat_force_next_flush()", &[])
                    .is_err() =>
            {
                std::thread::sleep(Duration::from_millis(550));
                let _ = sess.query_rows("SELECT 1", &[]);
            }
            "sqlite" => self.sessions.publish(session, sess),
            _ => {}
        }
    }

    /// Takes the snapshot that ends step `name` (every session has settled).
    pub fn boundary(&self, name: &str) {
        if let Some(o) = self.observer.upgrade() {
            o.lock().unwrap_or_else(PoisonError::into_inner).step(name);
        }
    }
}

/// Takes a run's snapshots and runs its sampler.
pub struct Observer {
    config: ObserveConfig,
    probe: DbProbe,
    sessions: Arc<SessionProbe>,
    clock: RunClock,
    run_dir: PathBuf,
    out: Option<JsonLines>,
    files: Result<PathBuf, Unavailable>,
    /// Where the database's and the run's files are, with their devices.
    storage: Vec<storage::Watched>,
    /// PostgreSQL: the most the database's temp tables held at any tick, and the last reading.
    temp_tables: Option<TempTables>,
    /// Local PostgreSQL server: CPU seconds (user, system) of each backend of the run, as last read.
    backends: Option<BTreeMap<u32, (f64, f64)>>,
    last_periodic: Instant,
    stop_sampler: Arc<AtomicBool>,
    sampler: Option<SamplerReport>,
    /// What the report should say about the figures' scope (the `observe` section's `note`).
    note: Option<String>,
    /// What this process is, when it is not the workload's client (`os.client`'s `who`).
    client_who: Option<String>,
    /// `--waits history`: why the waits read fall short of the summary, when they do.
    history_warning: Option<String>,
}

/// The size of the database's temp tables, polled with the backends' CPU time.
#[derive(Default)]
struct TempTables {
    now: f64,
    peak: f64,
    error: Option<String>,
}

impl TempTables {
    fn section(&self) -> Section {
        if let Some(e) = &self.error {
            return Section::missing(format!("temp tables' size: {e}"));
        }
        let mut s = Section::default();
        s.gauges.insert("bytes".into(), self.now);
        s.gauges.insert("peak_bytes".into(), self.peak);
        s.text.insert(
            "source".into(),
            "pg_total_relation_size of this database's temp tables (every session's), polled about 4 times a second; the peak since the run started".into(),
        );
        s
    }
}

/// An observer whose connection is open and whose places are found, before the clock starts:
/// the runner records [`Opened::storage`] in the manifest, then [`Opened::start`]s it.
pub struct Opened {
    config: ObserveConfig,
    probe: DbProbe,
    sessions: Arc<SessionProbe>,
    run_dir: PathBuf,
    files: Result<PathBuf, Unavailable>,
    storage: Vec<storage::Watched>,
    client_who: Option<String>,
}

impl Opened {
    /// Where the database keeps its files and the run its own, with their block devices.
    pub fn storage(&self) -> StorageInfo {
        storage::info(&self.storage, self.probe.kind())
    }

    /// Takes the start snapshot. Call it after the sessions connected and the clock started.
    pub fn start(self, clock: &RunClock) -> Observer {
        let out = match JsonLines::create(&self.run_dir, SNAPSHOTS_FILE) {
            Ok(o) => Some(o),
            Err(e) => {
                eprintln!("dbscope: warning: no snapshots for this run: {e}");
                None
            }
        };
        let kind = self.probe.kind();
        let backends = (kind == "postgres" && self.files.is_ok()).then(BTreeMap::new);
        let mut obs = Observer {
            config: self.config,
            probe: self.probe,
            sessions: self.sessions,
            clock: clock.clone(),
            run_dir: self.run_dir,
            out,
            files: self.files,
            storage: self.storage,
            temp_tables: (kind == "postgres").then(TempTables::default),
            backends,
            last_periodic: Instant::now(),
            stop_sampler: Arc::new(AtomicBool::new(false)),
            sampler: None,
            note: None,
            client_who: self.client_who,
            history_warning: None,
        };
        obs.read_backends();
        if obs.config.waits_history {
            obs.probe.calibrate_history(clock);
        }
        obs.take("start");
        obs
    }
}

impl Observer {
    /// Opens the observer's connection and finds where the database's files are: the data
    /// directory, the WAL, the tablespaces (the workload's own `dirs`, with their role, and
    /// those of its tables), the temp tablespace and the run directory.
    pub fn open(
        target: &dyn Target,
        tables: &[String],
        dirs: &[(String, PathBuf)],
        run_dir: &Path,
        config: &ObserveConfig,
        sessions: Arc<SessionProbe>,
    ) -> Opened {
        let mut probe = DbProbe::open(
            target,
            tables,
            &format!("dbscope-observe/{}", sessions.run_id()),
        );
        let files = probe.files_path();
        let storage = storage::find(&mut probe, dirs, run_dir);
        if config.waits_history {
            probe.enable_history(run_dir);
        }
        Opened {
            config: config.clone(),
            probe,
            sessions,
            run_dir: run_dir.to_owned(),
            files,
            storage,
            client_who: None,
        }
    }

    /// [`Observer::open`] without the workload's own directories, then [`Opened::start`].
    pub fn start(
        target: &dyn Target,
        tables: &[String],
        run_dir: &Path,
        clock: &RunClock,
        config: &ObserveConfig,
        sessions: Arc<SessionProbe>,
    ) -> Observer {
        Observer::open(target, tables, &[], run_dir, config, sessions).start(clock)
    }

    /// What the sessions share with the observer.
    pub fn sessions(&self) -> Arc<SessionProbe> {
        self.sessions.clone()
    }

    /// Starts the sampler thread in `scope` (PostgreSQL, `sample_hz` > 0).
    pub fn start_sampler<'scope, 'env>(
        &self,
        scope: &'scope Scope<'scope, 'env>,
        target: &'env dyn Target,
    ) -> Option<ScopedJoinHandle<'scope, SamplerReport>> {
        let (spec, out) = self.sampler_parts()?;
        std::thread::Builder::new()
            .name("sampler".into())
            .spawn_scoped(scope, move || ash::run(target, spec, out))
            .ok()
    }

    /// What the sampler thread needs, when it is to run (PostgreSQL, `sample_hz` > 0).
    fn sampler_parts(&self) -> Option<(ash::SamplerSpec, JsonLines)> {
        if self.probe.kind() != "postgres" || self.config.sample_hz <= 0.0 {
            return None;
        }
        let out = match JsonLines::create(&self.run_dir, SAMPLES_FILE) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("dbscope: warning: no samples for this run: {e}");
                return None;
            }
        };
        let spec = ash::SamplerSpec {
            hz: self.config.sample_hz,
            label: format!("dbscope-sampler/{}", self.sessions.run_id()),
            version_num: self.probe.version_num(),
            clock: self.clock.clone(),
            sessions: self.sessions.clone(),
            stop: self.stop_sampler.clone(),
        };
        Some((spec, out))
    }

    /// Stops the sampler (the sessions are done) and keeps its report for the end snapshot.
    pub fn stop_sampler(&mut self, handle: Option<ScopedJoinHandle<'_, SamplerReport>>) {
        self.stop_sampler.store(true, Ordering::Relaxed);
        if let Some(h) = handle {
            self.sampler = Some(h.join().unwrap_or_else(|_| SamplerReport {
                error: Some("the sampler thread panicked".into()),
                ..SamplerReport::default()
            }));
        }
    }

    /// Called about four times a second while the run goes: reads the backends' CPU time and
    /// takes a periodic snapshot when one is due.
    pub fn tick(&mut self) {
        self.read_backends();
        self.probe
            .read_waits(&self.sessions.connections(), &self.clock);
        self.read_temp_tables();
        if let Some(every) = self.config.snapshot_every {
            if self.last_periodic.elapsed() >= every {
                self.last_periodic = Instant::now();
                self.take("periodic");
            }
        }
    }

    /// Takes a step's snapshot (`step:<name>`), when every session has finished the step and
    /// settled its statistics ([`StepMarker`]).
    pub fn step(&mut self, name: &str) -> Snapshot {
        self.read_backends();
        self.take(&format!("{STEP_PREFIX}{name}"))
    }

    /// Takes the end snapshot, after the run's backends have gone (they hand their last
    /// statistics to the server as they exit).
    pub fn finish(&mut self) {
        self.read_backends();
        if self.probe.kind() == "postgres" {
            let until = Instant::now() + Duration::from_secs(2);
            while !self.probe.backend_pids(&self.sessions, true).is_empty()
                && Instant::now() < until
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if self.config.waits_history {
            self.probe.calibrate_history(&self.clock);
            self.probe
                .read_waits(&self.sessions.connections(), &self.clock);
            if let Some(w) = self.probe.end_history() {
                eprintln!("dbscope: warning: --waits history: {w}");
                self.history_warning = Some(format!("--waits history: {w}"));
            }
        }
        self.take("end");
    }

    /// `--waits history`: the warning when the ring lost waits (after [`Observer::finish`]), for
    /// the run's outcome.
    pub fn history_warning(&self) -> Option<String> {
        self.history_warning.clone()
    }

    /// Temp tables go with their session: their size is polled while the run goes and the
    /// largest kept (a temp load is gone by the end snapshot).
    fn read_temp_tables(&mut self) {
        let Some(t) = self.temp_tables.as_mut() else {
            return;
        };
        match self.probe.temp_table_bytes() {
            Some(Ok(b)) => {
                t.now = b;
                t.peak = t.peak.max(b);
                t.error = None;
            }
            Some(Err(e)) => t.error = Some(e),
            None => t.error = Some("the observer has no connection".into()),
        }
    }

    fn read_backends(&mut self) {
        let Some(known) = self.backends.as_mut() else {
            return;
        };
        for pid in self.probe.backend_pids(&self.sessions, false) {
            if !os::is_postgres(pid) {
                continue;
            }
            if let Some(t) = os::pid_cpu(&pid.to_string()) {
                known.insert(pid, t);
            }
        }
    }

    /// Takes one snapshot of every section and appends it to `snapshots.jsonl`.
    pub fn take(&mut self, label: &str) -> Snapshot {
        self.probe
            .read_waits(&self.sessions.connections(), &self.clock);
        let mut sections = self.probe.snapshot();
        if self.probe.kind() == "sqlite" {
            sections.insert(
                "sqlite.db_status".into(),
                Section {
                    counters: self.sessions.totals(),
                    text: BTreeMap::from([(
                        "scope".into(),
                        "summed over the run's sessions, from each session's first operation; each session publishes its own about every 100 ms".into(),
                    )]),
                    ..Section::default()
                },
            );
        }
        sections.extend(storage::sections(&self.storage));
        self.read_temp_tables();
        if let Some(t) = &self.temp_tables {
            sections.insert("pg_temp_tables".into(), t.section());
        }
        sections.insert("os.cpu".into(), os::cpu_section());
        sections.insert(
            "os.client".into(),
            match os::pid_cpu("self") {
                Some((u, s)) => {
                    let mut sec = os::cpu_times(u, s);
                    if let Some(w) = &self.client_who {
                        sec.text.insert("who".into(), w.clone());
                    }
                    sec
                }
                None => Section::missing("/proc/self/stat is not readable"),
            },
        );
        sections.insert(
            "os.server".into(),
            match (&self.backends, &self.files) {
                (Some(b), _) => {
                    let mut s =
                        os::cpu_times(b.values().map(|t| t.0).sum(), b.values().map(|t| t.1).sum());
                    s.gauges.insert("backends".into(), b.len() as f64);
                    s
                }
                (None, Err(why)) if self.probe.kind() == "postgres" => {
                    Section::missing(format!("the server's processes are not visible: {why}"))
                }
                (None, _) if self.probe.kind() == "mysql" => match self.probe.server_pid() {
                    Ok(pid) => match os::pid_cpu(&pid.to_string()) {
                        Some((u, s)) => {
                            let mut sec = os::cpu_times(u, s);
                            sec.text.insert(
                                "scope".into(),
                                format!(
                                    "the whole server process (pid {pid}, every thread: the                                      run's and the server's own)"
                                ),
                            );
                            sec
                        }
                        None => Section::missing(format!(
                            "/proc/{pid}/stat of the server (pid from @@pid_file) is not readable"
                        )),
                    },
                    Err(why) => {
                        Section::missing(format!("the server's process is not visible: {why}"))
                    }
                },
                (None, _) => Section::missing("no server process (an embedded or null target)"),
            },
        );
        let mut me = Section::default();
        me.text
            .insert("run_id".into(), self.sessions.run_id().to_string());
        if let Some(n) = &self.note {
            me.text.insert("note".into(), n.clone());
        }
        if self.probe.kind() == "postgres" {
            me.gauges.insert("sample_hz".into(), self.config.sample_hz);
        }
        if let Some(r) = &self.sampler {
            me.counters.insert("sample_ticks".into(), r.ticks as f64);
            me.counters.insert("samples".into(), r.samples as f64);
            me.counters.insert("sample_gaps".into(), r.gaps as f64);
            me.counters.insert("sample_gap_s".into(), r.gap_s);
            me.counters.insert("samples_denied".into(), r.denied as f64);
            if let Some(e) = &r.error {
                me.text.insert("sampler_error".into(), e.clone());
                sections.insert(
                    "pg_stat_activity".into(),
                    Section::missing(format!("no wait-event samples: {e}")),
                );
            } else if r.denied > 0 {
                let role = r.role.as_deref().unwrap_or("?");
                sections.insert(
                    "pg_stat_activity".into(),
                    Section::missing(format!(
                        "the observer's role {role} may not see the sessions' activity ({} of \
                         its readings showed <insufficient privilege>, and those waits are not \
                         sampled): grant it pg_monitor (or pg_read_all_stats), or observe as a \
                         role that has it",
                        r.denied
                    )),
                );
            }
        }
        sections.insert("observe".into(), me);
        let snap = Snapshot {
            label: label.into(),
            t_ns: self.clock.now_ns(),
            span_ns: None,
            sections,
        };
        if let Some(out) = self.out.as_mut() {
            if let Err(e) = out.append(std::slice::from_ref(&snap)) {
                eprintln!("dbscope: warning: writing snapshots: {e}");
                self.out = None;
            }
        }
        snap
    }
}

/// The observer of sessions dbscope does not open itself — the clients of a capture proxy, the
/// connections of a replay — whose backends it is told by pid ([`BackendLog`]). It owns its
/// target and its sampler thread, so a source with its own loop drives it:
/// [`Attached::open`] before the clock starts (the manifest records [`Attached::storage`]),
/// [`Attached::start`] once it has, [`Attached::tick`] about four times a second,
/// [`Attached::finish`] when the sessions have ended.
pub struct Attached {
    target: Arc<dyn Target>,
    log: BackendLog,
    opened: Option<Opened>,
    observer: Option<Observer>,
    sampler: Option<std::thread::JoinHandle<SamplerReport>>,
    client_who: Option<String>,
}

/// Where a source tells the observer of its sessions' backends (cheap to clone, safe to call
/// from any thread).
#[derive(Clone)]
pub struct BackendLog {
    sessions: Arc<SessionProbe>,
    databases: Arc<Mutex<BTreeMap<String, u32>>>,
}

impl BackendLog {
    /// Session `session` is connected to backend `pid`, in `database` (as its startup asked).
    pub fn connected(&self, session: u32, pid: u32, database: Option<&str>) {
        self.sessions.add_backend(session, pid);
        if let Some(d) = database {
            *self
                .databases
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(d.to_string())
                .or_default() += 1;
        }
    }

    /// Backend `pid`'s connection was closed.
    pub fn ended(&self, pid: u32) {
        self.sessions.end_backend(pid);
    }
}

impl Attached {
    /// Opens the observer's connection to `target` (the server the sessions use) and finds where
    /// its files are. Never fails: what cannot be read is written down as missing.
    pub fn open(target: Box<dyn Target>, run_dir: &Path, config: &ObserveConfig) -> Attached {
        let target: Arc<dyn Target> = Arc::from(target);
        let sessions = Arc::new(SessionProbe::by_backend_pid(&run_id()));
        let mut opened = Observer::open(&*target, &[], &[], run_dir, config, sessions.clone());
        // The sessions' tables are not known beforehand: every user table's I/O is read.
        opened.probe.read_all_tables();
        Attached {
            target,
            log: BackendLog {
                sessions,
                databases: Arc::default(),
            },
            opened: Some(opened),
            observer: None,
            sampler: None,
            client_who: None,
        }
    }

    /// Where the database keeps its files and the run its own (for the manifest, before
    /// [`Attached::start`]).
    pub fn storage(&self) -> Option<StorageInfo> {
        self.opened.as_ref().map(Opened::storage)
    }

    /// What this process is to the sessions, when it is not their client: `os.client`'s CPU
    /// is reported as that (`capture proxy`). Call before [`Attached::start`].
    pub fn client_is(&mut self, who: &str) {
        self.client_who = Some(who.to_string());
    }

    /// Where the source tells the observer of its sessions' backends.
    pub fn backends(&self) -> BackendLog {
        self.log.clone()
    }

    /// Takes the start snapshot and starts the sampler.
    pub fn start(&mut self, clock: &RunClock) {
        let Some(mut opened) = self.opened.take() else {
            return;
        };
        opened.client_who = self.client_who.take();
        let obs = opened.start(clock);
        if let Some((spec, out)) = obs.sampler_parts() {
            let target = self.target.clone();
            self.sampler = std::thread::Builder::new()
                .name("sampler".into())
                .spawn(move || ash::run(&*target, spec, out))
                .ok();
        }
        self.observer = Some(obs);
    }

    /// Reads the backends' CPU time and takes a periodic snapshot when one is due.
    pub fn tick(&mut self) {
        if let Some(o) = self.observer.as_mut() {
            o.tick();
        }
    }

    /// Stops the sampler and takes the end snapshot (after the sessions' backends have gone).
    /// The figures are the observed database's: when the sessions used others, the report says so.
    pub fn finish(&mut self) {
        let Some(o) = self.observer.as_mut() else {
            return;
        };
        o.stop_sampler.store(true, Ordering::Relaxed);
        if let Some(h) = self.sampler.take() {
            o.sampler = Some(h.join().unwrap_or_else(|_| SamplerReport {
                error: Some("the sampler thread panicked".into()),
                ..SamplerReport::default()
            }));
        }
        let databases = self
            .log
            .databases
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(observed) = o.probe.database() {
            let others: Vec<String> = databases
                .iter()
                .filter(|(d, _)| d.as_str() != observed)
                .map(|(d, n)| format!("{d} ({n} session{})", if *n == 1 { "" } else { "s" }))
                .collect();
            if !others.is_empty() {
                o.note = Some(format!(
                    "the database counters (pg_stat_database, pg_stat_statements) are database \
                     {observed}'s, the observer's; sessions also used {}: observe that database \
                     to count theirs (its name in the observer's connection string)",
                    others.join(", ")
                ));
            }
        }
        o.finish();
        self.observer = None;
    }
}

/// A source that failed before [`Attached::finish`] leaves no sampler running behind it.
impl Drop for Attached {
    fn drop(&mut self) {
        if let Some(o) = &self.observer {
            o.stop_sampler.store(true, Ordering::Relaxed);
        }
    }
}
