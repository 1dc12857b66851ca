//! The tables of a page: banner, run, settings, event summary, and counter sections.
//!
//! Counter sections also side by side, for a comparison.

use std::fmt::Write;

use dbscope_core::CounterSection;

use super::svg::escape;
use crate::counters::{self, SectionComparison};
use crate::report::Report;
use crate::text::format_num;

pub(super) fn banner(rep: &Report) -> String {
    let mut s = String::new();
    if let Some(why) = &rep.incomplete {
        let _ = write!(
            s,
            "<p class=\"banner warn\"><strong>Incomplete:</strong> {}</p>",
            escape(why)
        );
    }
    let outcome = rep.run.outcome.as_str();
    if outcome == "interrupted" || outcome == "failed" {
        let _ = write!(
            s,
            "<p class=\"banner warn\"><strong>{}:</strong> {}</p>",
            escape(outcome),
            escape(rep.run.outcome_detail.as_deref().unwrap_or(""))
        );
    }
    s
}

pub(super) fn row(s: &mut String, k: &str, v: &str) {
    let _ = write!(s, "<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(v));
}

pub(super) fn run_table(rep: &Report) -> String {
    let r = &rep.run;
    let mut s = String::from("<section><h2>Run</h2><table class=\"kv\">");
    row(&mut s, "outcome", r.outcome.as_str());
    let params: Vec<String> = r.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    row(
        &mut s,
        "workload",
        &format!("{} {} (seed {})", r.workload, params.join(" "), r.seed),
    );
    if let Some(t) = &r.target {
        row(
            &mut s,
            "target",
            &format!("{} {} — {}", t.kind, t.location, t.server_version),
        );
    }
    if let Some(rn) = &r.runner {
        let limit = match (rn.ops_per_session, rn.duration_s) {
            (Some(o), _) => format!("{o} ops per session"),
            (None, Some(d)) => format!("{d} s"),
            _ => String::new(),
        };
        row(
            &mut s,
            "runner",
            &format!(
                "{}, {} loop, {limit}, warm-up {} s",
                crate::text::plural(rn.sessions as u64, "session"),
                rn.mode,
                rn.warmup_s
            ),
        );
    }
    row(
        &mut s,
        "started",
        &format!(
            "{} UTC{}",
            r.started_utc.format("%Y-%m-%d %H:%M:%S"),
            r.elapsed_s
                .map(|e| format!(" + {e:.2} s"))
                .unwrap_or_default()
        ),
    );
    row(
        &mut s,
        "host",
        &format!(
            "{} — {} cpus{}, {:.1} GiB{}",
            r.host.uname,
            r.host.machine_cpus(),
            match r.host.client_placement() {
                p if p.is_empty() => String::new(),
                p => format!(" ({p})"),
            },
            r.host.memory_bytes as f64 / (1u64 << 30) as f64,
            match r.host.cpu_summary() {
                c if c.is_empty() => String::new(),
                c => format!("; {c}"),
            }
        ),
    );
    let mut memory = r.host.memory_summary();
    if !r.host.cpu_flags.is_empty() {
        if !memory.is_empty() {
            memory.push_str("; ");
        }
        memory.push_str(&format!("CPU flags {}", r.host.cpu_flags.join(" ")));
    }
    if !memory.is_empty() {
        row(&mut s, "memory, CPU", &memory);
    }
    row(
        &mut s,
        "dbscope",
        &format!("{} (run format {})", r.dbscope_version, r.format_version),
    );
    row(&mut s, "command", &r.command_line.join(" "));
    s.push_str("</table></section>");
    s
}

pub(super) fn settings_table(rep: &Report) -> String {
    if rep.settings.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "<section><h2>Settings</h2><table><thead><tr><th>name</th><th>requested</th><th>effective</th></tr></thead><tbody>",
    );
    for st in &rep.settings {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&st.name),
            escape(st.requested.as_deref().unwrap_or("(default)")),
            escape(st.effective.as_deref().unwrap_or("—"))
        );
    }
    s.push_str("</tbody></table></section>");
    s
}

pub(super) fn summary_table(rep: &Report) -> String {
    let mut s = String::from(
        "<section><h2>Summary (µs)</h2><table class=\"num\"><thead><tr><th>event</th><th>n</th><th>errors</th><th>per s</th>\
         <th>Min.</th><th>1st Qu.</th><th>Median</th><th>Mean</th><th>3rd Qu.</th><th>Max.</th>\
         <th>p90</th><th>p99</th><th>p99.9</th><th>p99.99</th></tr></thead><tbody>",
    );
    for e in &rep.events {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            escape(&e.name),
            format_num(e.count as f64),
            format_num(e.errors as f64),
            e.throughput_per_s
                .map(|t| format!("{t:.1}"))
                .unwrap_or_else(|| "—".into())
        );
        match (&e.summary_us, &e.percentiles_us) {
            (Some(sm), Some(p)) => {
                let six = sm.six();
                let formatted =
                    dbscope_core::stats::format_r(&dbscope_core::stats::zapsmall(&six), 4);
                for v in formatted {
                    let _ = write!(s, "<td>{}</td>", escape(v.trim()));
                }
                for v in p.texts() {
                    let _ = write!(s, "<td>{}</td>", escape(&v));
                }
            }
            _ => s.push_str("<td colspan=\"10\">no successful events</td>"),
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
    // A starved session is said plainly (issue 13: SQLite's busy handler can leave a session with
    // one operation while another does thousands).
    for e in &rep.events {
        let Some(sp) = e.sessions.as_ref().filter(|sp| !sp.starved.is_empty()) else {
            continue;
        };
        let who: Vec<String> = sp
            .starved
            .iter()
            .map(|x| format!("session {x} ({})", format_num(sp.per_session[x] as f64)))
            .collect();
        let _ = write!(
            s,
            "<p class=\"banner warn\"><strong>{}: starved sessions:</strong> {} did fewer than a \
             tenth of the mean session's events ({} sessions, per session min {}, max {}, fairness \
             (Jain) {:.2}).</p>",
            escape(&e.name),
            escape(&who.join(", ")),
            sp.per_session.len(),
            format_num(sp.min as f64),
            format_num(sp.max as f64),
            sp.fairness
        );
    }
    s.push_str("</section>");
    s
}

/// A run-level counter section: its counters as a two-column table, each of its tables, its notes.
pub(super) fn counters_section(sec: &CounterSection) -> String {
    let title = if sec.title.is_empty() {
        &sec.key
    } else {
        &sec.title
    };
    let mut s = format!("<section><h2>{}</h2>", escape(title));
    if !sec.counters.is_empty() {
        s.push_str("<table class=\"kv\">");
        for c in &sec.counters {
            row(
                &mut s,
                &counters::heading(&c.label, &c.unit),
                &counters::value_text(&c.value, c.decimals),
            );
        }
        s.push_str("</table>");
    }
    for t in &sec.tables {
        if !t.title.is_empty() {
            let _ = write!(s, "<h3>{}</h3>", escape(&t.title));
        }
        s.push_str("<table class=\"num\"><thead><tr>");
        for c in &t.columns {
            let _ = write!(
                s,
                "<th>{}</th>",
                escape(&counters::heading(&c.label, &c.unit))
            );
        }
        s.push_str("</tr></thead><tbody>");
        for r in &t.rows {
            s.push_str("<tr>");
            for (i, c) in t.columns.iter().enumerate() {
                let v = r.get(i).cloned().unwrap_or_default();
                let _ = write!(
                    s,
                    "<td>{}</td>",
                    escape(&counters::value_text(&v, c.decimals))
                );
            }
            s.push_str("</tr>");
        }
        s.push_str("</tbody></table>");
    }
    for n in &sec.notes {
        let _ = write!(s, "<p>{}</p>", escape(n));
    }
    if !sec.final_counts {
        let _ = write!(s, "<p>{}.</p>", escape(counters::SNAPSHOT_NOTE));
    }
    s.push_str("</section>");
    s
}

/// A counter section both compared runs have: A, B, B − A and the change per numeric counter.
pub(super) fn counters_comparison(c: &SectionComparison) -> String {
    let mut s = format!(
        "<section><h2>{}: B against A</h2><table class=\"num\"><thead><tr><th>counter</th><th>A</th>\
         <th>B</th><th>B − A</th><th>change</th></tr></thead><tbody>",
        escape(&c.title)
    );
    for k in &c.counters {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&counters::heading(&k.label, &k.unit)),
            escape(&counters::value_text(&k.a, k.decimals)),
            escape(&counters::value_text(&k.b, k.decimals)),
            escape(&counters::signed_text(&k.diff, k.decimals)),
            escape(&k.change_text())
        );
    }
    s.push_str("</tbody></table>");
    if let Some(b) = &c.title_b {
        let _ = write!(s, "<p>B: {}</p>", escape(b));
    }
    for t in &c.tables {
        let _ = write!(
            s,
            "<h3>{}</h3><table class=\"num\"><thead><tr><th></th><th>A</th><th>B</th>\
             <th>B − A</th><th>change</th></tr></thead><tbody>",
            escape(&t.title)
        );
        for k in &t.cells {
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&counters::heading(&k.label, &k.unit)),
                escape(&counters::value_text(&k.a, k.decimals)),
                escape(&counters::value_text(&k.b, k.decimals)),
                escape(&counters::signed_text(&k.diff, k.decimals)),
                escape(&k.change_text())
            );
        }
        s.push_str("</tbody></table>");
    }
    for (side, fin) in ["A", "B"].iter().zip(c.final_counts) {
        if !fin {
            let _ = write!(s, "<p>{side}: {}.</p>", escape(counters::SNAPSHOT_NOTE));
        }
    }
    s.push_str("</section>");
    s
}
