//! The HTML form of the report's *Database and OS* section (see [`crate::observe`]): top timed
//! events, counters, I/O by file type, the OS table, and what was not available.

use std::fmt::Write;

use super::svg::escape;
use super::tables::row;
use crate::observe::{ObserveComparison, ObserveReport};
use crate::text::format_num;

fn opt(v: Option<f64>) -> String {
    v.map_or("-".into(), format_num)
}

fn table(s: &mut String, head: &[&str], rows: Vec<Vec<String>>) {
    s.push_str("<table><thead><tr>");
    for h in head {
        let _ = write!(s, "<th>{}</th>", escape(h));
    }
    s.push_str("</tr></thead><tbody>");
    for r in rows {
        s.push_str("<tr>");
        for c in r {
            let _ = write!(s, "<td>{}</td>", escape(&c));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
}

/// One run's section.
pub fn section(o: &ObserveReport) -> String {
    let mut s = format!("<section><h2>Database and OS ({})</h2>", escape(&o.target));
    for n in &o.notes {
        let _ = write!(s, "<p>{}</p>", escape(n));
    }
    if let Some(t) = &o.top_events {
        let _ = write!(
            s,
            "<h3>Top timed events</h3><p>{}{}; DB time {} s{}</p>",
            escape(&t.source),
            t.hz.map(|h| format!(" at {} Hz", format_num(h)))
                .unwrap_or_default(),
            format_num(t.db_time_s),
            if t.gaps > 0 {
                format!(
                    "; {} sampler gaps, {} s without samples",
                    t.gaps,
                    format_num(t.gap_s)
                )
            } else {
                String::new()
            }
        );
        table(
            &mut s,
            &[
                "event",
                "class",
                "samples",
                "est. s",
                "% DB time",
                "statement",
                "during (client events)",
            ],
            t.rows
                .iter()
                .take(10)
                .map(|r| {
                    vec![
                        r.event.clone(),
                        r.class.clone(),
                        r.samples.to_string(),
                        format_num(r.est_s),
                        format!("{:.1}", r.pct_db_time),
                        r.top_statement.clone().unwrap_or_default(),
                        r.during
                            .iter()
                            .take(5)
                            .map(|d| format!("{} {:.0} %", d.event, d.pct))
                            .collect::<Vec<_>>()
                            .join(", "),
                    ]
                })
                .collect(),
        );
    }
    if !o.counters.is_empty() || !o.cpu.is_empty() {
        s.push_str("<h3>Counters</h3><table class=\"kv\">");
        if let Some(b) = &o.per_commit_basis {
            row(&mut s, "per commit", b);
        }
        for f in o.counters.iter().chain(&o.cpu) {
            row(
                &mut s,
                &f.label,
                &format!("{} {}", format_num(f.value), f.unit),
            );
        }
        s.push_str("</table>");
    }
    if !o.tables.is_empty() {
        s.push_str("<h3>Table I/O (pg_statio_user_tables)</h3>");
        table(
            &mut s,
            &[
                "table",
                "heap read",
                "heap hit",
                "index read",
                "index hit",
                "toast read",
                "toast hit",
            ],
            o.tables
                .iter()
                .map(|t| {
                    vec![
                        t.table.clone(),
                        opt(t.heap_blks_read),
                        opt(t.heap_blks_hit),
                        opt(t.idx_blks_read),
                        opt(t.idx_blks_hit),
                        opt(t.toast_blks_read),
                        opt(t.toast_blks_hit),
                    ]
                })
                .collect(),
        );
    }
    if !o.steps.is_empty() {
        s.push_str("<h3>Counters per step</h3>");
        if let Some(n) = &o.steps_note {
            let _ = write!(s, "<p>{}</p>", escape(n));
        }
        let secs = |st: &crate::observe::StepRow| format!("{:.3}", st.seconds);
        if o.target == "sqlite" {
            table(
                &mut s,
                &[
                    "step",
                    "s",
                    "cache hits",
                    "misses",
                    "pages written",
                    "spills",
                ],
                o.steps
                    .iter()
                    .map(|st| {
                        vec![
                            st.step.clone(),
                            secs(st),
                            opt(st.cache_hit),
                            opt(st.cache_miss),
                            opt(st.cache_write),
                            opt(st.cache_spill),
                        ]
                    })
                    .collect(),
            );
        } else {
            table(
                &mut s,
                &[
                    "step",
                    "s",
                    "blks read",
                    "blks hit",
                    "temp files",
                    "temp bytes",
                    "WAL bytes",
                    "temp dir at end",
                ],
                o.steps
                    .iter()
                    .map(|st| {
                        vec![
                            st.step.clone(),
                            secs(st),
                            opt(st.blks_read),
                            opt(st.blks_hit),
                            opt(st.temp_files),
                            opt(st.temp_bytes),
                            opt(st.wal_bytes),
                            opt(st.temp_dir_bytes),
                        ]
                    })
                    .collect(),
            );
        }
    }
    if !o.io_by_file_type.is_empty() {
        s.push_str("<h3>I/O by file type</h3>");
        table(
            &mut s,
            &[
                "file",
                "reads",
                "read bytes",
                "writes",
                "write bytes",
                "syncs",
                "source",
            ],
            o.io_by_file_type
                .iter()
                .map(|r| {
                    vec![
                        r.file_type.clone(),
                        opt(r.reads),
                        opt(r.read_bytes),
                        opt(r.writes),
                        opt(r.write_bytes),
                        opt(r.syncs),
                        r.source.clone(),
                    ]
                })
                .collect(),
        );
    }
    if !o.disks.is_empty() {
        s.push_str("<h3>OS (iostat -x)</h3>");
        table(
            &mut s,
            &[
                "role", "device", "r/s", "w/s", "rkB/s", "wkB/s", "areq-kB", "r_await", "w_await",
                "f/s", "%util",
            ],
            o.disks
                .iter()
                .map(|d| {
                    vec![
                        d.role.clone(),
                        d.device.clone(),
                        format_num(d.r_per_s),
                        format_num(d.w_per_s),
                        format_num(d.rkb_per_s),
                        format_num(d.wkb_per_s),
                        opt(d.areq_kb),
                        opt(d.r_await_ms),
                        opt(d.w_await_ms),
                        format_num(d.f_per_s),
                        format!("{:.1}", d.util_pct),
                    ]
                })
                .collect(),
        );
    }
    if !o.missing.is_empty() {
        s.push_str("<h3>Not available</h3><table class=\"kv\">");
        for (k, why) in &o.missing {
            row(&mut s, k, why);
        }
        s.push_str("</table>");
    }
    s.push_str("</section>");
    s
}

/// Both runs' figures side by side.
pub fn comparison(c: &ObserveComparison) -> String {
    let mut s = String::from("<section><h2>Database and OS, A → B</h2>");
    let top = |o: &ObserveReport| -> String {
        o.top_events.as_ref().map_or("-".into(), |t| {
            t.rows
                .iter()
                .take(3)
                .map(|r| format!("{}:{} {:.1}%", r.class, r.event, r.pct_db_time))
                .collect::<Vec<_>>()
                .join(", ")
        })
    };
    table(
        &mut s,
        &["", "top timed events (% of DB time)"],
        vec![vec!["A".into(), top(&c.a)], vec!["B".into(), top(&c.b)]],
    );
    table(
        &mut s,
        &["figure", "A", "B", "change"],
        c.figures
            .iter()
            .map(|f| {
                let (a, b) = (format_num(f.a), format_num(f.b));
                let change =
                    crate::text::change_text(&a, &b, f.change_pct, |p| format!("{p:+.1}%"));
                vec![
                    format!("{} {}", f.label, f.unit).trim_end().to_string(),
                    a,
                    b,
                    change,
                ]
            })
            .collect(),
    );
    s.push_str("</section>");
    s
}
