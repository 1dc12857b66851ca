//! The section as text, for `report`.

use std::fmt::Write;

use super::model::{Figure, ObserveReport, TableIoRow};
use crate::text::{column_width, format_figure, format_num, push_prose, sig3};

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or("-".into(), format_num)
}

/// Where each place is and on which device (the manifest's `storage`), under the iostat table.
fn push_places(out: &mut String, st: &dbscope_core::StorageInfo) {
    let _ = writeln!(out, "  files (role, device, path):");
    for p in &st.places {
        let role = match &p.name {
            Some(n) => format!("{} {n}", p.role),
            None => p.role.clone(),
        };
        let dev = match (&p.device, &p.disk) {
            (Some(d), Some(disk)) => format!("{d} (disk {disk})"),
            (Some(d), None) => d.clone(),
            (None, _) => "?".into(),
        };
        let _ = writeln!(out, "    {role:<24} {dev:<10} {}", p.path);
        if let Some(why) = &p.unavailable {
            push_prose(out, &format!("      device unknown: {why}"));
        }
    }
    if let Some(n) = &st.note {
        push_prose(out, &format!("    {n}"));
    }
}

/// Tables listed at most; the rest are in `--json`.
const TABLES_SHOWN: usize = 20;

fn push_tables(out: &mut String, r: &ObserveReport) {
    if r.tables.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "Table I/O (pg_statio_user_tables, blocks over the run; index: all of the table's)"
    );
    let _ = writeln!(
        out,
        "  {:<24} {:>12} {:>12} {:>12} {:>12} {:>11} {:>11}",
        "table", "heap read", "heap hit", "index read", "index hit", "toast read", "toast hit"
    );
    // The busiest first, so a partitioned table's active partitions lead.
    let mut rows: Vec<_> = r.tables.iter().collect();
    let busy = |t: &TableIoRow| {
        [
            t.heap_blks_read,
            t.heap_blks_hit,
            t.idx_blks_read,
            t.idx_blks_hit,
        ]
        .iter()
        .flatten()
        .sum::<f64>()
    };
    rows.sort_by(|a, b| busy(b).total_cmp(&busy(a)).then(a.table.cmp(&b.table)));
    for t in rows.iter().take(TABLES_SHOWN) {
        let _ = writeln!(
            out,
            "  {:<24} {:>12} {:>12} {:>12} {:>12} {:>11} {:>11}",
            t.table,
            fmt_opt(t.heap_blks_read),
            fmt_opt(t.heap_blks_hit),
            fmt_opt(t.idx_blks_read),
            fmt_opt(t.idx_blks_hit),
            fmt_opt(t.toast_blks_read),
            fmt_opt(t.toast_blks_hit)
        );
    }
    if rows.len() > TABLES_SHOWN {
        let _ = writeln!(
            out,
            "  ({} more tables in --json)",
            rows.len() - TABLES_SHOWN
        );
    }
}

fn push_steps(out: &mut String, r: &ObserveReport) {
    if r.steps.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "Counters per step (a snapshot at each step's end; deltas from the step before)"
    );
    if let Some(n) = &r.steps_note {
        push_prose(out, &format!("  {n}"));
    }
    if r.target == "sqlite" {
        let _ = writeln!(
            out,
            "  {:<24} {:>8} {:>12} {:>12} {:>12} {:>8}",
            "step", "s", "cache hits", "misses", "pages written", "spills"
        );
        for st in &r.steps {
            let _ = writeln!(
                out,
                "  {:<24} {:>8} {:>12} {:>12} {:>12} {:>8}",
                st.step,
                format!("{:.3}", st.seconds),
                fmt_opt(st.cache_hit),
                fmt_opt(st.cache_miss),
                fmt_opt(st.cache_write),
                fmt_opt(st.cache_spill)
            );
        }
        return;
    }
    let _ = writeln!(
        out,
        "  {:<24} {:>8} {:>11} {:>11} {:>10} {:>12} {:>12} {:>14}",
        "step",
        "s",
        "blks read",
        "blks hit",
        "temp files",
        "temp bytes",
        "WAL bytes",
        "temp dir at end"
    );
    for st in &r.steps {
        let _ = writeln!(
            out,
            "  {:<24} {:>8} {:>11} {:>11} {:>10} {:>12} {:>12} {:>14}",
            st.step,
            format!("{:.3}", st.seconds),
            fmt_opt(st.blks_read),
            fmt_opt(st.blks_hit),
            fmt_opt(st.temp_files),
            fmt_opt(st.temp_bytes),
            fmt_opt(st.wal_bytes),
            fmt_opt(st.temp_dir_bytes)
        );
    }
}

/// The label column of a list of figures: its longest label, at least 40.
fn label_width(figures: &[Figure]) -> usize {
    column_width(figures.iter().map(|f| f.label.as_str()), 40)
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
                format_num(t.db_time_samples as f64)
            ),
            None => writeln!(
                out,
                "Top timed events ({}; {} waits, {} s in all)",
                t.source,
                format_num(t.samples as f64),
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
        let shown = || t.rows.iter().take(10);
        let ew = column_width(shown().map(|r| r.event.as_str()), 28);
        let cw = column_width(shown().map(|r| r.class.as_str()), 12);
        let _ = writeln!(
            out,
            "  {:<ew$} {:<cw$} {:>8} {:>9} {:>10}  statement",
            "event", "class", "samples", "est. s", "% DB time"
        );
        for row in shown() {
            let _ = writeln!(
                out,
                "  {:<ew$} {:<cw$} {:>8} {:>9} {:>9.1}%  {}",
                row.event,
                row.class,
                format_num(row.samples as f64),
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
        let w = label_width(&r.counters);
        for f in &r.counters {
            let _ = writeln!(
                out,
                "  {:<w$} {:>14} {}",
                f.label,
                format_figure(f.value),
                f.unit
            );
        }
    }
    push_tables(out, r);
    push_steps(out, r);
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
            // Roles joined by `+` (data+WAL+temp+run) and loop/nvme names can be long.
            let rw = column_width(r.disks.iter().map(|d| d.role.as_str()), 9);
            let dw = column_width(r.disks.iter().map(|d| d.device.as_str()), 8);
            let _ = writeln!(
                out,
                "  {:<rw$} {:<dw$} {:>8} {:>8} {:>9} {:>9} {:>8} {:>8} {:>8} {:>7} {:>6}",
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
                    "  {:<rw$} {:<dw$} {:>8} {:>8} {:>9} {:>9} {:>8} {:>8} {:>8} {:>7} {:>6.1}",
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
        if let Some(st) = &r.storage {
            push_places(out, st);
        }
        let w = label_width(&r.cpu);
        for f in &r.cpu {
            let _ = writeln!(
                out,
                "  {:<w$} {:>14} {}",
                f.label,
                format_figure(f.value),
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
