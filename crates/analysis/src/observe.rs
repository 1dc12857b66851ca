//! The AWR-like part of a report: top timed events from active-session samples (or an imported
//! Oracle trace's waits), counter deltas per second and per commit, I/O by file type, and an
//! `iostat -x` style OS table, from a run's `snapshots.jsonl` and `samples.jsonl`.

use std::collections::BTreeMap;
use std::fmt::Write;

use dbscope_core::observe::{
    read_lines, SampleLine, Section, Snapshot, SAMPLES_FILE, SNAPSHOTS_FILE,
};
use dbscope_core::RunDir;
use serde::Serialize;

use crate::summary::EventReport;
use crate::text::{format_num, push_prose, sig3};

/// The database's and the OS's side of one run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ObserveReport {
    /// `postgres`, `sqlite`, `null`, or `oracle-trace`.
    pub target: String,
    /// Seconds between the first and the last snapshot.
    pub span_s: Option<f64>,
    /// Snapshots read.
    pub snapshots: u64,
    /// Whether the database has a wait interface this report can sample.
    pub wait_interface: bool,
    /// Plain statements about what the report can and cannot show.
    pub notes: Vec<String>,
    /// Top timed events, most time first.
    pub top_events: Option<TopEvents>,
    /// What the per-commit figures divide by.
    pub per_commit_basis: Option<String>,
    /// Counter figures, in display order.
    pub counters: Vec<Figure>,
    /// The statements that took the most execution time over the run (`pg_stat_statements`,
    /// from the first to the last snapshot), most first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_statements: Vec<StatementRow>,
    /// I/O by file type.
    pub io_by_file_type: Vec<IoRow>,
    /// One row per device holding the database files or the run directory.
    pub disks: Vec<DiskRow>,
    /// CPU figures: the machine's (% of all CPUs), the client's and the server backends'.
    pub cpu: Vec<Figure>,
    /// Sections that could not be read, and why.
    pub missing: BTreeMap<String, String>,
}

/// Top timed events.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TopEvents {
    /// `pg_stat_activity samples` or `trace waits`.
    pub source: String,
    /// Samples per second (samples only).
    pub hz: Option<f64>,
    /// Samples taken (all states), or waits read.
    pub samples: u64,
    /// DB time: active samples (or the sum of wait time, in seconds, for a trace).
    pub db_time_samples: u64,
    /// DB time in seconds (active samples / Hz, or the waits' total).
    pub db_time_s: f64,
    /// Stretches the sampler lost, and their total length.
    pub gaps: u64,
    /// Total length of the gaps in seconds.
    pub gap_s: f64,
    /// The events.
    pub rows: Vec<TopRow>,
}

/// One wait event (or `CPU*`: active without a wait event).
#[derive(Clone, Debug, Default, Serialize)]
pub struct TopRow {
    /// Event name (`WALSync`, `db file sequential read`, `CPU*`).
    pub event: String,
    /// Its class (`IO`, `LWLock`, `Lock`, … ; `CPU` for CPU*).
    pub class: String,
    /// Samples (trace: waits).
    pub samples: u64,
    /// Estimated seconds: samples / Hz (trace: the waits' total time).
    pub est_s: f64,
    /// Share of DB time, in %.
    pub pct_db_time: f64,
    /// The statement most often seen with it.
    pub top_statement: Option<String>,
    /// The client events in flight when it was sampled (the events of the sample's session whose
    /// span contains the sample's time), most first; `(no client event)` for samples between
    /// them. Empty when the run's events were not read (`compare`) or for a trace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub during: Vec<During>,
}

/// A client event in flight during a share of a wait event's samples.
#[derive(Clone, Debug, Default, Serialize)]
pub struct During {
    /// The client event's name (`commit`, `update`, …).
    pub event: String,
    /// Samples of the wait event taken while it was in flight.
    pub samples: u64,
    /// Their share of the wait event's samples, in %. Nested client events can each claim the
    /// same sample, so the shares can add up to more than 100.
    pub pct: f64,
}

/// Label of the samples taken while the session had no client event in flight.
pub const NO_CLIENT_EVENT: &str = "(no client event)";

/// Joins a run's active-session samples to its client events while the events are read (one
/// pass, shared with the rest of the report): a sample is attributed to every event of its
/// session whose span contains the sample's time. Cost: one binary search per event in the
/// session's sorted sample times.
pub struct SampleJoin {
    lines: Vec<SampleLine>,
    /// Per session: (time, index into `lines`) of its active samples, by time.
    by_session: Vec<Vec<(u64, u32)>>,
    /// Per line: the indices (into `names`) of the client events in flight.
    during: Vec<Vec<u32>>,
    names: Vec<String>,
    index: std::collections::HashMap<String, u32>,
}

impl SampleJoin {
    /// Reads the run's samples; `None` when it has none or they cannot be read (the report
    /// notes the latter when it reads them again).
    pub fn load(run: &RunDir) -> Option<SampleJoin> {
        let lines: Vec<SampleLine> = read_lines(&run.path, SAMPLES_FILE).ok()??;
        Some(SampleJoin::from_lines(lines))
    }

    /// For samples already read.
    pub fn from_lines(lines: Vec<SampleLine>) -> SampleJoin {
        let mut by_session: Vec<Vec<(u64, u32)>> = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            if let SampleLine::Sample(s) = l {
                if s.state != "active" {
                    continue;
                }
                let k = s.session as usize;
                if k >= by_session.len() {
                    if k > 1_000_000 {
                        continue;
                    }
                    by_session.resize_with(k + 1, Vec::new);
                }
                by_session[k].push((s.t_ns, i as u32));
            }
        }
        for v in &mut by_session {
            v.sort_unstable();
        }
        SampleJoin {
            during: vec![Vec::new(); lines.len()],
            lines,
            by_session,
            names: Vec::new(),
            index: std::collections::HashMap::new(),
        }
    }

    /// Attributes the samples that fall inside `events`.
    pub fn add_block(&mut self, names: &dbscope_core::NameTable, events: &[dbscope_core::Event]) {
        for e in events {
            let Some(v) = self.by_session.get(e.session as usize) else {
                continue;
            };
            let end = e.start_ns.saturating_add(e.duration_ns);
            let lo = v.partition_point(|x| x.0 < e.start_ns);
            for &(t, line) in &v[lo..] {
                if t > end {
                    break;
                }
                let name = names.name(e.name);
                let id = match self.index.get(&name) {
                    Some(&id) => id,
                    None => {
                        let id = self.names.len() as u32;
                        self.names.push(name.clone());
                        self.index.insert(name, id);
                        id
                    }
                };
                let d = &mut self.during[line as usize];
                if !d.contains(&id) {
                    d.push(id);
                }
            }
        }
    }
}

/// One statement of `pg_stat_statements` over the run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StatementRow {
    /// The server's query id.
    pub query_id: String,
    /// The start of its normalised text (`UPDATE t SET v = v + $1 WHERE id = $2`).
    pub query: String,
    /// Executions over the run.
    pub calls: f64,
    /// Execution time over the run, in ms.
    pub total_exec_ms: f64,
    /// Mean execution time, in ms.
    pub mean_exec_ms: Option<f64>,
    /// Rows returned or affected.
    pub rows: f64,
    /// Shared blocks hit and read.
    pub shared_blks_hit: f64,
    /// Shared blocks read.
    pub shared_blks_read: f64,
    /// WAL bytes generated.
    pub wal_bytes: f64,
}

/// A named figure with its unit.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Figure {
    /// Key for machines (`wal_syncs_per_commit`).
    pub key: String,
    /// Label for people.
    pub label: String,
    /// Value.
    pub value: f64,
    /// Unit (`/s`, `B`, `%`, …).
    pub unit: String,
}

/// Reads and writes of one kind of file.
#[derive(Clone, Debug, Default, Serialize)]
pub struct IoRow {
    /// `WAL`, `data`, `temp`, `journal`.
    pub file_type: String,
    /// Read requests (or blocks, see `source`).
    pub reads: Option<f64>,
    /// Bytes read.
    pub read_bytes: Option<f64>,
    /// Write requests (or blocks).
    pub writes: Option<f64>,
    /// Bytes written.
    pub write_bytes: Option<f64>,
    /// Syncs.
    pub syncs: Option<f64>,
    /// Where the figures come from.
    pub source: String,
}

/// iostat -x figures of one device over the run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DiskRow {
    /// What it holds: `data`, `run`, or `data+run`.
    pub role: String,
    /// Device name in /proc/diskstats.
    pub device: String,
    /// Reads per second.
    pub r_per_s: f64,
    /// Writes per second.
    pub w_per_s: f64,
    /// kB read per second.
    pub rkb_per_s: f64,
    /// kB written per second.
    pub wkb_per_s: f64,
    /// Average request size in kB.
    pub areq_kb: Option<f64>,
    /// Average read wait in ms.
    pub r_await_ms: Option<f64>,
    /// Average write wait in ms.
    pub w_await_ms: Option<f64>,
    /// Flushes per second.
    pub f_per_s: f64,
    /// Share of the time the device was busy, in %.
    pub util_pct: f64,
}

/// Builds the section for a run; `None` when the run has neither snapshots nor samples and is
/// not an imported trace.
pub fn build(
    run: &RunDir,
    events: &[EventReport],
) -> Result<Option<ObserveReport>, dbscope_core::Error> {
    let client_commits = events
        .iter()
        .find(|e| e.name == "commit")
        .map(|e| (e.count + e.warmup_excluded) as f64);
    build_with(run, events, client_commits)
}

/// [`build`] with the client's commit count given (`compare` has it without event reports).
pub fn build_with(
    run: &RunDir,
    events: &[EventReport],
    client_commits: Option<f64>,
) -> Result<Option<ObserveReport>, dbscope_core::Error> {
    build_joined(run, events, client_commits, None)
}

/// [`build_with`], with the samples already read and joined to the client events.
pub fn build_joined(
    run: &RunDir,
    events: &[EventReport],
    client_commits: Option<f64>,
    join: Option<SampleJoin>,
) -> Result<Option<ObserveReport>, dbscope_core::Error> {
    let snaps: Option<Vec<Snapshot>> = read_lines(&run.path, SNAPSHOTS_FILE)?;
    let (samples, during) = match join {
        Some(j) => (Some(j.lines), Some((j.during, j.names))),
        None => (read_lines(&run.path, SAMPLES_FILE)?, None),
    };
    if run.manifest.source == "trace" {
        return Ok(Some(from_trace(events)));
    }
    let Some(snaps) = snaps.filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    let target = run
        .manifest
        .target
        .as_ref()
        .map_or("unknown".to_string(), |t| t.kind.clone());
    let mut r = ObserveReport {
        target: target.clone(),
        snapshots: snaps.len() as u64,
        wait_interface: target == "postgres",
        ..ObserveReport::default()
    };
    let first = &snaps[0];
    let last = &snaps[snaps.len() - 1];
    if last.label != "end" {
        r.notes.push(format!(
            "no end snapshot (the run did not finish): the figures run to the last snapshot ({})",
            last.label
        ));
    }
    if snaps.len() < 2 {
        r.notes
            .push("only one snapshot: no deltas can be made".into());
        return Ok(Some(r));
    }
    let d = last.delta(first);
    let span = d.span_ns.unwrap_or(0) as f64 / 1e9;
    r.span_s = Some(span);
    if span <= 0.0 {
        r.notes.push(
            "the first and the last snapshot were taken at the same instant: no rates".into(),
        );
        return Ok(Some(r));
    }
    for (name, s) in &last.sections {
        if let Some(why) = &s.missing {
            r.missing.insert(name.clone(), why.clone());
        }
    }
    // The client's commits span the whole run: they match the snapshots only when the last one
    // is the end snapshot.
    let client_commits = client_commits.filter(|&n| n > 0.0 && last.label == "end");
    match target.as_str() {
        "postgres" => pg_figures(&mut r, &d, span, client_commits),
        "sqlite" => {
            r.notes.push(
                "SQLite has no wait interface: there are no wait events to sample; its own counters \
                 (sqlite3_db_status) and the OS figures follow"
                    .into(),
            );
            sqlite_figures(&mut r, &d, client_commits);
        }
        _ => {}
    }
    if let Some(lines) = samples {
        r.top_events = Some(top_from_samples(&lines, None, during.as_ref()));
    } else if target == "postgres" {
        r.notes
            .push("no active-session samples (--sample-hz 0)".into());
    }
    os_figures(&mut r, &d, span, client_commits);
    Ok(Some(r))
}

/// [`build`], with a file that cannot be read turned into a note (the rest of the report stands).
pub fn build_or_note(run: &RunDir, events: &[EventReport]) -> Option<ObserveReport> {
    build_or_note_joined(run, events, None)
}

/// [`build_or_note`] with the samples joined to the client events ([`SampleJoin`]).
pub fn build_or_note_joined(
    run: &RunDir,
    events: &[EventReport],
    join: Option<SampleJoin>,
) -> Option<ObserveReport> {
    let client_commits = events
        .iter()
        .find(|e| e.name == "commit")
        .map(|e| (e.count + e.warmup_excluded) as f64);
    build_joined(run, events, client_commits, join).unwrap_or_else(|e| {
        Some(ObserveReport {
            notes: vec![format!("the snapshots or samples cannot be read: {e}")],
            ..ObserveReport::default()
        })
    })
}

fn sec<'a>(d: &'a Snapshot, name: &str) -> Option<&'a Section> {
    d.sections.get(name).filter(|s| s.missing.is_none())
}

fn push(r: &mut Vec<Figure>, key: &str, label: &str, value: Option<f64>, unit: &str) {
    if let Some(v) = value.filter(|v| v.is_finite()) {
        r.push(Figure {
            key: key.into(),
            label: label.into(),
            value: v,
            unit: unit.into(),
        });
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

fn top_statements(d: &Snapshot) -> Vec<StatementRow> {
    let Some(st) = sec(d, "pg_stat_statements").filter(|s| s.missing.is_none()) else {
        return Vec::new();
    };
    let mut rows: Vec<StatementRow> = st
        .rows
        .iter()
        .map(|(id, row)| {
            let v = |k: &str| row.get(k).copied().unwrap_or(0.0);
            StatementRow {
                query_id: id.clone(),
                query: st.text.get(id).cloned().unwrap_or_default(),
                calls: v("calls"),
                total_exec_ms: v("total_exec_time"),
                mean_exec_ms: ratio(Some(v("total_exec_time")), Some(v("calls"))),
                rows: v("rows"),
                shared_blks_hit: v("shared_blks_hit"),
                shared_blks_read: v("shared_blks_read"),
                wal_bytes: v("wal_bytes"),
            }
        })
        .filter(|r| r.calls > 0.0)
        .collect();
    rows.sort_by(|a, b| b.total_exec_ms.total_cmp(&a.total_exec_ms));
    rows
}

fn pg_figures(r: &mut ObserveReport, d: &Snapshot, span: f64, client: Option<f64>) {
    r.top_statements = top_statements(d);
    let db = sec(d, "pg_stat_database");
    let wal = sec(d, "pg_stat_wal");
    let c = |s: Option<&Section>, k: &str| s.and_then(|s| s.counter(k));
    let xact = c(db, "xact_commit");
    let commits = client.or(xact);
    r.per_commit_basis = Some(match client {
        Some(n) => format!(
            "the client's {} commits (pg_stat_database's xact_commit also counts dbscope's own observer queries)",
            n
        ),
        None => "pg_stat_database xact_commit".into(),
    });
    let f = &mut r.counters;
    push(
        f,
        "commits_per_s",
        "commits/s",
        commits.map(|n| n / span),
        "/s",
    );
    push(
        f,
        "xact_commit_per_s",
        "server transactions/s (xact_commit)",
        xact.map(|n| n / span),
        "/s",
    );
    push(f, "rollbacks", "rollbacks", c(db, "xact_rollback"), "");
    push(
        f,
        "wal_bytes_per_commit",
        "WAL bytes per commit",
        ratio(c(wal, "wal_bytes"), commits),
        "B",
    );
    push(
        f,
        "wal_records_per_commit",
        "WAL records per commit",
        ratio(c(wal, "wal_records"), commits),
        "",
    );
    push(
        f,
        "wal_writes_per_commit",
        "WAL writes per commit",
        ratio(c(wal, "wal_write"), commits),
        "",
    );
    push(
        f,
        "wal_syncs_per_commit",
        "WAL syncs per commit",
        ratio(c(wal, "wal_sync"), commits),
        "",
    );
    push(f, "wal_fpi", "WAL full-page images", c(wal, "wal_fpi"), "");
    push(
        f,
        "wal_buffers_full",
        "WAL buffers full",
        c(wal, "wal_buffers_full"),
        "",
    );
    push(
        f,
        "wal_sync_ms_per_sync",
        "WAL sync time per sync",
        ratio(c(wal, "wal_sync_time"), c(wal, "wal_sync")),
        "ms",
    );
    let (hit, read) = (c(db, "blks_hit"), c(db, "blks_read"));
    push(
        f,
        "buffer_hit_pct",
        "buffer hit ratio",
        ratio(hit.map(|h| 100.0 * h), hit.zip(read).map(|(h, r)| h + r)),
        "%",
    );
    push(
        f,
        "blks_read_per_s",
        "blocks read/s",
        read.map(|n| n / span),
        "/s",
    );
    push(f, "temp_bytes", "temp bytes", c(db, "temp_bytes"), "B");
    push(f, "deadlocks", "deadlocks", c(db, "deadlocks"), "");
    let cp = sec(d, "pg_stat_checkpointer");
    push(
        f,
        "checkpoints",
        "checkpoints",
        c(cp, "num_timed")
            .zip(c(cp, "num_requested"))
            .map(|(a, b)| a + b),
        "",
    );
    push(
        f,
        "checkpoint_buffers",
        "buffers written by checkpoints",
        c(cp, "buffers_written"),
        "",
    );
    if let Some(t) = sec(d, "pg_statio_user_tables") {
        for (table, row) in &t.rows {
            let hit = row.get("heap_blks_hit").copied();
            let read = row.get("heap_blks_read").copied();
            push(
                f,
                &format!("heap_hit_pct.{table}"),
                &format!("{table}: heap hit ratio"),
                ratio(hit.map(|h| 100.0 * h), hit.zip(read).map(|(h, r)| h + r)),
                "%",
            );
        }
    }
    // I/O by file type: pg_stat_io where the server has it, else the per-view counters.
    let bgw = sec(d, "pg_stat_bgwriter");
    r.io_by_file_type.push(IoRow {
        file_type: "WAL".into(),
        writes: c(wal, "wal_write"),
        write_bytes: c(wal, "wal_bytes"),
        syncs: c(wal, "wal_sync"),
        source: "pg_stat_wal (bytes: WAL generated)".into(),
        ..IoRow::default()
    });
    if let Some(io) = sec(d, "pg_stat_io") {
        for (ty, object) in [("data", "relation"), ("temp", "temp relation")] {
            let mut row = IoRow {
                file_type: ty.into(),
                source: "pg_stat_io".into(),
                ..IoRow::default()
            };
            let (mut rd, mut rb, mut wr, mut wb, mut fs) = (0.0, 0.0, 0.0, 0.0, 0.0);
            for (k, v) in io
                .rows
                .iter()
                .filter(|(k, _)| k.split('/').nth(1) == Some(object))
            {
                let _ = k;
                let b = v.get("op_bytes").copied().unwrap_or(8192.0);
                let g = |n: &str| v.get(n).copied().unwrap_or(0.0);
                rd += g("reads");
                rb += g("reads") * b;
                wr += g("writes") + g("extends");
                wb += (g("writes") + g("extends")) * b;
                fs += g("fsyncs");
            }
            (
                row.reads,
                row.read_bytes,
                row.writes,
                row.write_bytes,
                row.syncs,
            ) = (Some(rd), Some(rb), Some(wr), Some(wb), Some(fs));
            r.io_by_file_type.push(row);
        }
    } else {
        let written = [
            c(cp, "buffers_written"),
            c(bgw, "buffers_clean"),
            c(bgw, "buffers_backend"),
        ]
        .into_iter()
        .flatten()
        .reduce(|a, b| a + b);
        r.io_by_file_type.push(IoRow {
            file_type: "data".into(),
            reads: read,
            read_bytes: read.map(|n| n * 8192.0),
            writes: written,
            write_bytes: written.map(|n| n * 8192.0),
            syncs: c(bgw, "buffers_backend_fsync"),
            source: "pg_stat_database blks_read; checkpointer + bgwriter + backend buffers (8 KiB blocks)"
                .into(),
        });
        r.io_by_file_type.push(IoRow {
            file_type: "temp".into(),
            writes: c(db, "temp_files"),
            write_bytes: c(db, "temp_bytes"),
            source: "pg_stat_database temp_files, temp_bytes".into(),
            ..IoRow::default()
        });
    }
}

fn sqlite_figures(r: &mut ObserveReport, d: &Snapshot, client: Option<f64>) {
    let st = sec(d, "sqlite.db_status");
    let c = |k: &str| st.and_then(|s| s.counter(k));
    r.per_commit_basis = client.map(|n| format!("the client's {n} commits"));
    let f = &mut r.counters;
    let (hit, miss) = (c("cache_hit"), c("cache_miss"));
    push(f, "cache_hit", "page cache hits", hit, "");
    push(f, "cache_miss", "page cache misses", miss, "");
    push(
        f,
        "cache_hit_pct",
        "page cache hit ratio",
        ratio(hit.map(|h| 100.0 * h), hit.zip(miss).map(|(h, m)| h + m)),
        "%",
    );
    push(f, "cache_write", "pages written", c("cache_write"), "");
    push(
        f,
        "pages_written_per_commit",
        "pages written per commit",
        ratio(c("cache_write"), client),
        "",
    );
    push(f, "cache_spill", "cache spills", c("cache_spill"), "");
    if let Some(files) = sec(d, "sqlite.files") {
        for (k, label) in [
            ("db_bytes", "database file at the end"),
            ("wal_bytes", "-wal file at the end"),
            ("journal_bytes", "-journal file at the end"),
        ] {
            push(f, k, label, files.gauges.get(k).copied(), "B");
        }
    }
    r.io_by_file_type.push(IoRow {
        file_type: "data".into(),
        reads: miss,
        writes: c("cache_write"),
        source: "sqlite3_db_status cache misses and writes (pages)".into(),
        ..IoRow::default()
    });
}

fn os_figures(r: &mut ObserveReport, d: &Snapshot, span: f64, client: Option<f64>) {
    let data = sec(d, "os.disk.data");
    let run = sec(d, "os.disk.run");
    let same = data
        .zip(run)
        .is_some_and(|(a, b)| a.text.get("device") == b.text.get("device"));
    let mut disks = Vec::new();
    if let Some(s) = data {
        disks.push((if same { "data+run" } else { "data" }, s));
    }
    if let (Some(s), false) = (run, same) {
        disks.push(("run", s));
    }
    for (role, s) in disks {
        let g = |k: &str| s.counter(k).unwrap_or(0.0);
        let ios = g("reads") + g("writes");
        r.disks.push(DiskRow {
            role: role.into(),
            device: s.text.get("device").cloned().unwrap_or_default(),
            r_per_s: g("reads") / span,
            w_per_s: g("writes") / span,
            rkb_per_s: g("read_sectors") / 2.0 / span,
            wkb_per_s: g("write_sectors") / 2.0 / span,
            areq_kb: (ios > 0.0).then(|| (g("read_sectors") + g("write_sectors")) / 2.0 / ios),
            r_await_ms: (g("reads") > 0.0).then(|| g("read_ms") / g("reads")),
            w_await_ms: (g("writes") > 0.0).then(|| g("write_ms") / g("writes")),
            f_per_s: g("flushes") / span,
            util_pct: (g("io_ms") / (span * 1000.0) * 100.0).min(100.0),
        });
    }
    if let Some(cpu) = sec(d, "os.cpu") {
        let total: f64 = cpu.counters.values().sum();
        for (k, label) in [
            ("user_s", "machine CPU user"),
            ("nice_s", "machine CPU nice"),
            ("system_s", "machine CPU system"),
            ("iowait_s", "machine CPU iowait"),
            ("steal_s", "machine CPU steal"),
            ("idle_s", "machine CPU idle"),
        ] {
            push(
                &mut r.cpu,
                &format!("cpu_{k}"),
                label,
                ratio(cpu.counter(k).map(|v| 100.0 * v), Some(total)),
                "%",
            );
        }
    }
    for (name, who) in [("os.client", "client"), ("os.server", "server backends")] {
        if let Some(s) = sec(d, name) {
            let t = s.counter("user_s").unwrap_or(0.0) + s.counter("system_s").unwrap_or(0.0);
            push(
                &mut r.cpu,
                &format!("{}_cpu_s", who.split(' ').next().unwrap_or(who)),
                &format!("{who} CPU"),
                Some(t),
                "s",
            );
            push(
                &mut r.cpu,
                &format!("{}_cpu_us_per_commit", who.split(' ').next().unwrap_or(who)),
                &format!("{who} CPU per commit"),
                ratio(Some(t * 1e6), client),
                "µs",
            );
        }
    }
}

/// The top wait event of a run (or of the part of it between `window_ns.0` and `window_ns.1`,
/// run-clock ns, both included): the (wait event, class) with the most active samples, `CPU*`
/// for active samples without a wait event. `None` when the run has no samples (not
/// PostgreSQL, `--sample-hz 0`) or none active in the window. Reads `samples.jsonl` only.
pub fn top_wait_event(
    run: &RunDir,
    window_ns: Option<(u64, u64)>,
) -> Result<Option<TopRow>, dbscope_core::Error> {
    let Some(lines) = read_lines::<SampleLine>(&run.path, SAMPLES_FILE)? else {
        return Ok(None);
    };
    Ok(top_from_samples(&lines, window_ns, None)
        .rows
        .into_iter()
        .next())
}

type Joined = (Vec<Vec<u32>>, Vec<String>);

fn top_from_samples(
    lines: &[SampleLine],
    window_ns: Option<(u64, u64)>,
    during: Option<&Joined>,
) -> TopEvents {
    let mut t = TopEvents {
        source: "pg_stat_activity samples".into(),
        ..TopEvents::default()
    };
    let inside = |ns: u64| window_ns.is_none_or(|(a, b)| a <= ns && ns <= b);
    #[derive(Default)]
    struct Acc {
        n: u64,
        queries: BTreeMap<String, u64>,
        during: BTreeMap<u32, u64>,
        outside: u64,
    }
    let mut by: BTreeMap<(String, String), Acc> = BTreeMap::new();
    for (i, l) in lines.iter().enumerate() {
        match l {
            SampleLine::Header { hz, .. } => t.hz = Some(*hz),
            SampleLine::Gap(g) => {
                if inside(g.from_ns) || inside(g.to_ns) {
                    t.gaps += 1;
                    t.gap_s += g.to_ns.saturating_sub(g.from_ns) as f64 / 1e9;
                }
            }
            SampleLine::Tick { .. } => {}
            SampleLine::Sample(s) => {
                if !inside(s.t_ns) {
                    continue;
                }
                t.samples += 1;
                if s.state != "active" {
                    continue;
                }
                t.db_time_samples += 1;
                let key = match (&s.wait_class, &s.wait_event) {
                    (Some(c), Some(e)) => (e.clone(), c.clone()),
                    _ => ("CPU*".to_string(), "CPU".to_string()),
                };
                let e = by.entry(key).or_default();
                e.n += 1;
                if let Some(q) = &s.query {
                    *e.queries.entry(q.clone()).or_default() += 1;
                }
                if let Some((d, _)) = during {
                    let names = d.get(i).map_or(&[][..], |v| v.as_slice());
                    if names.is_empty() {
                        e.outside += 1;
                    }
                    for &n in names {
                        *e.during.entry(n).or_default() += 1;
                    }
                }
            }
        }
    }
    let hz = t.hz.unwrap_or(1.0);
    t.db_time_s = t.db_time_samples as f64 / hz;
    let active = t.db_time_samples.max(1) as f64;
    t.rows = by
        .into_iter()
        .map(|((event, class), a)| {
            let mut shares: Vec<During> = a
                .during
                .into_iter()
                .map(|(id, k)| {
                    (
                        during.map_or(String::new(), |d| d.1[id as usize].clone()),
                        k,
                    )
                })
                .chain((a.outside > 0).then(|| (NO_CLIENT_EVENT.to_string(), a.outside)))
                .map(|(event, k)| During {
                    event,
                    samples: k,
                    pct: 100.0 * k as f64 / a.n.max(1) as f64,
                })
                .collect();
            shares.sort_by(|x, y| y.samples.cmp(&x.samples).then(x.event.cmp(&y.event)));
            TopRow {
                event,
                class,
                samples: a.n,
                est_s: a.n as f64 / hz,
                pct_db_time: 100.0 * a.n as f64 / active,
                top_statement: a
                    .queries
                    .into_iter()
                    .max_by_key(|(_, c)| *c)
                    .map(|(q, _)| q),
                during: shares,
            }
        })
        .collect();
    t.rows
        .sort_by(|a, b| b.samples.cmp(&a.samples).then(a.event.cmp(&b.event)));
    t
}

/// Oracle 10046 database calls (their time includes their waits); every other event is a wait.
const ORACLE_CALLS: [&str; 8] = [
    "PARSE",
    "EXEC",
    "FETCH",
    "CLOSE",
    "UNMAP",
    "SORT UNMAP",
    "LOBREAD",
    "LOBWRITE",
];

fn from_trace(events: &[EventReport]) -> ObserveReport {
    let mut t = TopEvents {
        source: "trace waits (time = sum of the waits' ela)".into(),
        ..TopEvents::default()
    };
    let mut rows: Vec<TopRow> = events
        .iter()
        .filter(|e| !ORACLE_CALLS.iter().any(|c| e.name.eq_ignore_ascii_case(c)))
        .filter_map(|e| {
            let mean = e.summary_us.as_ref()?.mean;
            Some(TopRow {
                event: e.name.clone(),
                class: "Oracle wait".into(),
                samples: e.count,
                est_s: mean * e.count as f64 / 1e6,
                ..TopRow::default()
            })
        })
        .collect();
    t.samples = rows.iter().map(|r| r.samples).sum();
    t.db_time_s = rows.iter().map(|r| r.est_s).sum();
    for r in &mut rows {
        r.pct_db_time = if t.db_time_s > 0.0 {
            100.0 * r.est_s / t.db_time_s
        } else {
            0.0
        };
    }
    rows.sort_by(|a, b| b.est_s.total_cmp(&a.est_s));
    t.rows = rows;
    ObserveReport {
        target: "oracle-trace".into(),
        wait_interface: true,
        notes: vec!["the wait profile of the imported trace: % of the total wait time (CPU is in the database calls, not shown here)".into()],
        top_events: Some(t),
        ..ObserveReport::default()
    }
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or("-".into(), format_num)
}

/// Appends the section to a text report.
pub fn push_text(out: &mut String, r: &ObserveReport) {
    out.push('\n');
    let _ = writeln!(
        out,
        "Database and OS ({}{})",
        r.target,
        r.span_s
            .map(|s| format!(
                ", {} snapshots, {} s from the first to the last",
                r.snapshots,
                format_num(s)
            ))
            .unwrap_or_default()
    );
    for n in &r.notes {
        push_prose(out, n);
    }
    if let Some(t) = &r.top_events {
        let _ = match t.hz {
            Some(h) => writeln!(
                out,
                "Top timed events ({} at {} Hz; DB time {} s = {} active samples)",
                t.source,
                format_num(h),
                format_num(t.db_time_s),
                t.db_time_samples
            ),
            None => writeln!(
                out,
                "Top timed events ({}; {} waits, {} s in all)",
                t.source,
                t.samples,
                sig3(t.db_time_s)
            ),
        };
        if t.gaps > 0 {
            let _ = writeln!(
                out,
                "  sampler gaps: {} ({} s without samples: its connection was lost)",
                t.gaps,
                format_num(t.gap_s)
            );
        }
        let _ = writeln!(
            out,
            "  {:<28} {:<12} {:>8} {:>9} {:>10}  statement",
            "event", "class", "samples", "est. s", "% DB time"
        );
        for row in t.rows.iter().take(10) {
            let _ = writeln!(
                out,
                "  {:<28} {:<12} {:>8} {:>9} {:>9.1}%  {}",
                row.event,
                row.class,
                row.samples,
                sig3(row.est_s),
                row.pct_db_time,
                row.top_statement.as_deref().unwrap_or("")
            );
            if !row.during.is_empty() {
                let shares: Vec<String> = row
                    .during
                    .iter()
                    .take(5)
                    .map(|d| format!("{} {:.0} %", d.event, d.pct))
                    .collect();
                let _ = writeln!(out, "      during: {}", shares.join(", "));
            }
        }
    }
    if !r.counters.is_empty() {
        let _ = writeln!(out, "Counters (deltas over the run)");
        if let Some(b) = &r.per_commit_basis {
            push_prose(out, &format!("  per commit: {b}"));
        }
        for f in &r.counters {
            let _ = writeln!(
                out,
                "  {:<40} {:>14} {}",
                f.label,
                format_num(f.value),
                f.unit
            );
        }
    }
    if !r.io_by_file_type.is_empty() {
        let _ = writeln!(out, "I/O by file type");
        let _ = writeln!(
            out,
            "  {:<8} {:>10} {:>14} {:>10} {:>14} {:>8}  source",
            "file", "reads", "read bytes", "writes", "write bytes", "syncs"
        );
        for io in &r.io_by_file_type {
            let _ = writeln!(
                out,
                "  {:<8} {:>10} {:>14} {:>10} {:>14} {:>8}  {}",
                io.file_type,
                fmt_opt(io.reads),
                fmt_opt(io.read_bytes),
                fmt_opt(io.writes),
                fmt_opt(io.write_bytes),
                fmt_opt(io.syncs),
                io.source
            );
        }
    }
    if !r.disks.is_empty() || !r.cpu.is_empty() {
        let _ = writeln!(
            out,
            "OS (/proc/diskstats as iostat -x; /proc/stat; /proc/<pid>/stat)"
        );
        if !r.disks.is_empty() {
            let _ = writeln!(
                out,
                "  {:<9} {:<8} {:>8} {:>8} {:>9} {:>9} {:>8} {:>8} {:>8} {:>7} {:>6}",
                "role",
                "device",
                "r/s",
                "w/s",
                "rkB/s",
                "wkB/s",
                "areq-kB",
                "r_await",
                "w_await",
                "f/s",
                "%util"
            );
            for d in &r.disks {
                let _ = writeln!(
                    out,
                    "  {:<9} {:<8} {:>8} {:>8} {:>9} {:>9} {:>8} {:>8} {:>8} {:>7} {:>6.1}",
                    d.role,
                    d.device,
                    format_num(d.r_per_s),
                    format_num(d.w_per_s),
                    format_num(d.rkb_per_s),
                    format_num(d.wkb_per_s),
                    fmt_opt(d.areq_kb),
                    fmt_opt(d.r_await_ms),
                    fmt_opt(d.w_await_ms),
                    format_num(d.f_per_s),
                    d.util_pct
                );
            }
        }
        for f in &r.cpu {
            let _ = writeln!(
                out,
                "  {:<40} {:>14} {}",
                f.label,
                format_num(f.value),
                f.unit
            );
        }
    }
    if !r.top_statements.is_empty() {
        let _ = writeln!(
            out,
            "Top statements (pg_stat_statements, by execution time)"
        );
        let _ = writeln!(
            out,
            "  {:>10} {:>12} {:>10} {:>12}  statement",
            "calls", "total ms", "mean ms", "WAL bytes"
        );
        for st in r.top_statements.iter().take(10) {
            let _ = writeln!(
                out,
                "  {:>10} {:>12} {:>10} {:>12}  {}",
                format_num(st.calls),
                sig3(st.total_exec_ms),
                fmt_opt(st.mean_exec_ms),
                format_num(st.wal_bytes),
                st.query
            );
        }
    }
    if !r.missing.is_empty() {
        let _ = writeln!(out, "Not available");
        for (name, why) in &r.missing {
            push_prose(out, &format!("  {name}: {why}"));
        }
    }
}

/// The same sections for two runs side by side, with the change.
#[derive(Clone, Debug, Serialize)]
pub struct ObserveComparison {
    /// Run A's section.
    pub a: ObserveReport,
    /// Run B's section.
    pub b: ObserveReport,
    /// Figures both runs have: A, B and the change in %.
    pub figures: Vec<FigureChange>,
}

/// One figure in both runs.
#[derive(Clone, Debug, Serialize)]
pub struct FigureChange {
    /// Key.
    pub key: String,
    /// Label.
    pub label: String,
    /// Unit.
    pub unit: String,
    /// A's value.
    pub a: f64,
    /// B's value.
    pub b: f64,
    /// (B − A) / A in %, when A is not 0.
    pub change_pct: Option<f64>,
}

/// Compares two runs' sections, when either run has them (`commits_*`: each run's client
/// commits, for the per-commit figures).
pub fn compare_runs(
    a: &RunDir,
    b: &RunDir,
    commits_a: Option<f64>,
    commits_b: Option<f64>,
) -> Option<ObserveComparison> {
    let side = |r: &RunDir, n| {
        build_with(r, &[], n).unwrap_or_else(|e| {
            Some(ObserveReport {
                notes: vec![format!("the snapshots or samples cannot be read: {e}")],
                ..ObserveReport::default()
            })
        })
    };
    let (ra, rb) = (side(a, commits_a), side(b, commits_b));
    if ra.is_none() && rb.is_none() {
        return None;
    }
    Some(compare(ra.unwrap_or_default(), rb.unwrap_or_default()))
}

/// Compares two runs' sections.
pub fn compare(a: ObserveReport, b: ObserveReport) -> ObserveComparison {
    let all = |r: &ObserveReport| -> Vec<Figure> {
        let mut v = r.counters.clone();
        v.extend(r.cpu.iter().cloned());
        for d in &r.disks {
            for (k, val) in [
                ("r_per_s", d.r_per_s),
                ("w_per_s", d.w_per_s),
                ("wkb_per_s", d.wkb_per_s),
                ("util_pct", d.util_pct),
            ] {
                v.push(Figure {
                    key: format!("{}.{k}", d.role),
                    label: format!("{} {} {k}", d.role, d.device),
                    value: val,
                    unit: String::new(),
                });
            }
        }
        v
    };
    let bf = all(&b);
    let figures = all(&a)
        .into_iter()
        .filter_map(|fa| {
            let fb = bf.iter().find(|f| f.key == fa.key)?;
            Some(FigureChange {
                key: fa.key.clone(),
                label: fa.label.clone(),
                unit: fa.unit.clone(),
                a: fa.value,
                b: fb.value,
                change_pct: (fa.value != 0.0).then(|| 100.0 * (fb.value - fa.value) / fa.value),
            })
        })
        .collect();
    ObserveComparison { a, b, figures }
}

/// Appends the comparison to a text compare.
pub fn push_compare_text(out: &mut String, c: &ObserveComparison) {
    out.push('\n');
    let _ = writeln!(out, "Database and OS, A → B");
    let top = |r: &ObserveReport| -> Vec<String> {
        r.top_events.as_ref().map_or_else(Vec::new, |t| {
            t.rows
                .iter()
                .take(5)
                .map(|r| format!("{}:{} {:.1}%", r.class, r.event, r.pct_db_time))
                .collect()
        })
    };
    let (ta, tb) = (top(&c.a), top(&c.b));
    if !ta.is_empty() || !tb.is_empty() {
        let _ = writeln!(out, "Top timed events (% of DB time)");
        for i in 0..ta.len().max(tb.len()) {
            let _ = writeln!(
                out,
                "  {:<40} {}",
                ta.get(i).map_or("", |s| s.as_str()),
                tb.get(i).map_or("", |s| s.as_str())
            );
        }
    }
    for (name, r) in [("A", &c.a), ("B", &c.b)] {
        if !r.wait_interface {
            let _ = writeln!(out, "  {name}: {} has no wait interface", r.target);
        }
    }
    if !c.figures.is_empty() {
        let _ = writeln!(
            out,
            "  {:<40} {:>14} {:>14} {:>9}",
            "figure", "A", "B", "change"
        );
        for f in &c.figures {
            let _ = writeln!(
                out,
                "  {:<40} {:>14} {:>14} {:>9}  {}",
                f.label,
                format_num(f.a),
                format_num(f.b),
                f.change_pct.map_or("-".into(), |p| format!("{p:+.1}%")),
                f.unit
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbscope_core::observe::Sample;
    use dbscope_core::{Event, NameTable};

    fn sample(t_ns: u64, session: u32, event: Option<&str>) -> SampleLine {
        SampleLine::Sample(Sample {
            t_ns,
            session,
            state: "active".into(),
            wait_class: event.map(|_| "IO".into()),
            wait_event: event.map(Into::into),
            query_id: None,
            query: None,
            op: None,
        })
    }

    #[test]
    fn samples_are_attributed_to_the_events_of_their_session_in_flight() {
        let names = NameTable::new();
        let (update, commit) = (names.intern("update"), names.intern("commit"));
        let ev = |name, session, start_ns, duration_ns| Event {
            session,
            name,
            start_ns,
            duration_ns,
            ..Event::default()
        };
        let mut j = SampleJoin::from_lines(vec![
            sample(150, 0, Some("WALSync")),
            sample(160, 1, Some("WALSync")),
            sample(250, 0, Some("WALSync")),
            sample(500, 0, Some("WALSync")),
            sample(120, 0, None),
        ]);
        // Session 0: update 100..200, commit 200..300; session 1: commit 100..200.
        j.add_block(
            &names,
            &[
                ev(update, 0, 100, 100),
                ev(commit, 0, 200, 100),
                ev(commit, 1, 100, 100),
            ],
        );
        let t = top_from_samples(&j.lines, None, Some(&(j.during, j.names)));
        let wal = &t.rows[0];
        assert_eq!((wal.event.as_str(), wal.samples), ("WALSync", 4));
        let shares: Vec<(&str, u64)> = wal
            .during
            .iter()
            .map(|d| (d.event.as_str(), d.samples))
            .collect();
        assert_eq!(
            shares,
            [("commit", 2), (NO_CLIENT_EVENT, 1), ("update", 1)],
            "{wal:?}"
        );
        assert_eq!(wal.during[0].pct, 50.0);
        let cpu = &t.rows[1];
        assert_eq!(cpu.event, "CPU*");
        assert_eq!(cpu.during[0].event, "update");
    }

    #[test]
    fn the_top_wait_event_of_a_window_counts_only_its_samples() {
        let lines = vec![
            sample(100, 0, Some("WALSync")),
            sample(200, 0, Some("WALSync")),
            sample(300, 0, Some("transactionid")),
            sample(400, 0, Some("transactionid")),
            sample(500, 0, Some("transactionid")),
        ];
        let all = top_from_samples(&lines, None, None);
        assert_eq!(all.rows[0].event, "transactionid");
        let early = top_from_samples(&lines, Some((0, 250)), None);
        assert_eq!(early.rows[0].event, "WALSync");
        assert_eq!(early.db_time_samples, 2);
        assert!(early.rows[0].during.is_empty());
        assert!(top_from_samples(&lines, Some((600, 700)), None)
            .rows
            .is_empty());
    }
}
