//! SQLite's figures from a snapshot delta: its page cache counters and file sizes.

use dbscope_core::observe::Snapshot;

use super::model::{push, ratio, sec, IoRow, ObserveReport};

pub(super) fn sqlite_figures(r: &mut ObserveReport, d: &Snapshot, client: Option<f64>) {
    let st = sec(d, "sqlite.db_status");
    let c = |k: &str| st.and_then(|s| s.counter(k));
    r.per_commit_basis =
        client.map(|n| format!("the client's {} commits", crate::text::format_num(n)));
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
