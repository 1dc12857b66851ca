//! PostgreSQL's figures from a snapshot delta.
//!
//! Counters per second and per commit, the top statements of `pg_stat_statements`, and I/O by
//! file type.

use dbscope_core::observe::{Section, Snapshot};

use super::model::{push, ratio, sec, IoRow, ObserveReport, StatementRow, TableIoRow};

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

pub(super) fn pg_figures(r: &mut ObserveReport, d: &Snapshot, span: f64, client: Option<f64>) {
    r.top_statements = top_statements(d);
    let db = sec(d, "pg_stat_database");
    let wal = sec(d, "pg_stat_wal");
    let c = |s: Option<&Section>, k: &str| s.and_then(|s| s.counter(k));
    let xact = c(db, "xact_commit");
    let commits = client.or(xact);
    r.per_commit_basis = Some(match client {
        Some(n) => format!(
            "the client's {} commits (pg_stat_database's xact_commit also counts dbscope's own observer queries)",
            crate::text::format_num(n)
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
    push(f, "temp_bytes", "temp file bytes", c(db, "temp_bytes"), "B");
    // Temp tables are not in temp_bytes (temp files only); their peak size is what a temp load
    // put in them (issue 34 item 7). Left out when the run had none.
    let temp_tables = sec(d, "pg_temp_tables")
        .and_then(|s| s.gauges.get("peak_bytes").copied())
        .filter(|b| *b > 0.0);
    push(
        f,
        "temp_table_bytes",
        "temp table bytes (peak)",
        temp_tables,
        "B",
    );
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
        r.tables = t
            .rows
            .iter()
            .map(|(table, row)| {
                let v = |k: &str| row.get(k).copied();
                TableIoRow {
                    table: table.clone(),
                    heap_blks_read: v("heap_blks_read"),
                    heap_blks_hit: v("heap_blks_hit"),
                    idx_blks_read: v("idx_blks_read"),
                    idx_blks_hit: v("idx_blks_hit"),
                    toast_blks_read: v("toast_blks_read"),
                    toast_blks_hit: v("toast_blks_hit"),
                }
            })
            .collect();
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
            // temp_bytes counts temp *files* (sorts, hashes); a temp table writes relation files
            // through the backend's local buffers, which PostgreSQL counts only from 16
            // (pg_stat_io "temp relation"): the "temp tbl" row and the temp device's OS row
            // are what can be had of them before.
            source: "pg_stat_database temp_files, temp_bytes: temp files only (temp tables: the temp tbl row and the temp device in OS)".into(),
            ..IoRow::default()
        });
    }
    if let Some(b) = temp_tables {
        r.io_by_file_type.push(IoRow {
            file_type: "temp tbl".into(),
            write_bytes: Some(b),
            source: "the temp tables' peak size (pg_total_relation_size, polled ~4/s): what they held, in local buffers or on the temp device".into(),
            ..IoRow::default()
        });
    }
}
