//! Fuzz target: any bytes as a PostgreSQL server log — csvlog, jsonlog or stderr with a
//! `log_line_prefix`, the first byte picks which (bits 0–1), the prefix (bits 2–3) and whether
//! to keep one database's sessions only (bit 7) — through `capture log`, the
//! path every log takes: the records read, sorted, turned into sessions and calls, and the capture
//! written. It must give a capture or an error, never a panic; a capture it gives must read back
//! as complete, with as many calls as it said, and no more calls than records.
#![no_main]

use std::path::PathBuf;

use dbscope_capture::log::{capture_log, LogFormat, LogOptions, DEFAULT_PREFIX};
use libfuzzer_sys::fuzz_target;

/// Prefixes of stderr logs: PostgreSQL's default, the one the docs suggest, pgbadger's usual one,
/// and one with every escape.
const PREFIXES: [&str; 4] = [
    DEFAULT_PREFIX,
    "%m [%p] %q%u@%d ",
    "%t [%p]: [%l-1] user=%u,db=%d,app=%a,client=%h ",
    "%m %n [%p] %c %l %u@%d %a %h %r %q%% ",
];

fuzz_target!(|data: &[u8]| {
    let (pick, data) = match data.split_first() {
        Some((&c, rest)) => (c, rest),
        None => (0, data),
    };
    let (format, name) = match pick % 4 {
        0 => (Some(LogFormat::Csv), "pg.csv"),
        1 => (Some(LogFormat::Json), "pg.json"),
        2 => (Some(LogFormat::Stderr), "pg.log"),
        _ => (None, "postgresql.log"),
    };
    let opts = LogOptions {
        format,
        prefix: PREFIXES[(pick as usize / 4) % PREFIXES.len()].to_string(),
        database: (pick & 0x80 != 0).then(|| "app".to_string()),
    };
    let base = if std::path::Path::new("/dev/shm").is_dir() {
        tempfile::tempdir_in("/dev/shm")
    } else {
        tempfile::tempdir()
    }
    .expect("a temporary directory");
    let log: PathBuf = base.path().join(name);
    std::fs::write(&log, data).expect("the log is written");
    let out = base.path().join("cap");
    if let Ok(summary) = capture_log(&[log], &out, &opts, vec!["fuzz".into()]) {
        assert!(summary.calls <= summary.records, "{summary:?}");
        let run = dbscope_core::RunDir::open(&out).expect("the capture it wrote opens");
        assert_eq!(
            run.manifest.outcome,
            dbscope_core::manifest::Outcome::Complete,
            "{summary:?}"
        );
    }
});
