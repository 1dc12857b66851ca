//! The profile as text, section by section.
//!
//! The summary, the event profile, statements (with plans), the call tree, the skew histograms,
//! the slowest waits, errors and warnings.

use std::fmt::{self, Write};

use super::{Profile, TreeNode};
use crate::model::Unit;

/// Unix µs as RFC 3339 UTC with microseconds.
pub fn format_wall(us: i64) -> Option<String> {
    chrono::DateTime::from_timestamp_micros(us)
        .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Micros, true))
}

fn secs(us: i64) -> String {
    format!("{:.6}", us as f64 / 1e6)
}

/// Renders the profile as text.
pub fn render_text(p: &Profile, statements_shown: usize) -> String {
    render_text_with(p, statements_shown, false)
}

/// [`render_text`], with each listed statement's plan (its STAT lines) under it when `plans`.
pub fn render_text_with(p: &Profile, statements_shown: usize, plans: bool) -> String {
    let mut o = String::new();
    // Writing to a String does not fail.
    let _ = text_sections(&mut o, p, statements_shown, plans);
    o
}

/// The sections of the text profile, one after the other.
fn text_sections(o: &mut String, p: &Profile, statements_shown: usize, plans: bool) -> fmt::Result {
    text_summary(o, p)?;
    text_events(o, p)?;
    text_statements(o, p, statements_shown, plans)?;
    text_call_tree(o, p)?;
    text_skew(o, p)?;
    text_slowest_waits(o, p)?;
    text_errors(o, p)?;
    text_warnings(o, p)
}

/// The files read, the filters, R and the wall span.
fn text_summary(o: &mut String, p: &Profile) -> fmt::Result {
    for f in &p.files {
        writeln!(
            o,
            "file {}: Oracle {}, times in {} ({}), {} lines, {} bytes, {} skipped, {} malformed",
            f.path,
            f.version.as_deref().unwrap_or("version unknown"),
            match f.unit {
                Unit::Microseconds => "microseconds",
                Unit::Centiseconds => "centiseconds, converted to µs",
            },
            if f.unit_source == "header" {
                "from the header"
            } else {
                "no release in the header: assumed"
            },
            f.lines,
            f.bytes,
            f.skipped_lines,
            f.malformed_lines
        )?;
    }
    if !p.filters.is_empty() {
        writeln!(o, "filters: {}", p.filters.join(", "))?;
    }
    writeln!(
        o,
        "sessions {}  R = {} s  (wall span {} s; unaccounted-for between calls {} s, within calls {} s)",
        p.sessions,
        secs(p.r_us),
        secs(p.wall_span_us),
        secs(p.unaccounted_between_calls_us),
        secs(p.unaccounted_in_calls_us)
    )?;
    if p.clipped_us != 0 {
        writeln!(o, "{}", clipped_line(p))?;
    }
    writeln!(o)?;
    Ok(())
}

/// The line that says how much of the calls and waits lay before the trace's window.
pub fn clipped_line(p: &Profile) -> String {
    let n = |k: u64, one: &str| format!("{k} {one}{}", if k == 1 { "" } else { "s" });
    format!(
        "clipped: {} s of calls and waits that began before the trace's first timestamp ({}, {}), \
         left out of R",
        secs(p.clipped_us),
        n(p.clipped_calls, "call"),
        n(p.clipped_waits, "wait")
    )
}

/// The event profile.
fn text_events(o: &mut String, p: &Profile) -> fmt::Result {
    writeln!(
        o,
        "{:<44} {:>9} {:>14} {:>7} {:>12} {:>10} {:>12}",
        "response time by event", "calls", "total s", "% R", "mean µs", "min µs", "max µs"
    )?;
    for e in &p.events {
        writeln!(
            o,
            "{:<44} {:>9} {:>14} {:>6.1}% {:>12.1} {:>10} {:>12}",
            truncate(&e.name, 44),
            e.calls,
            secs(e.total_us),
            e.pct_r,
            e.mean_us,
            e.min_us,
            e.max_us
        )?;
    }
    writeln!(
        o,
        "{:<44} {:>9} {:>14} {:>6.1}%",
        "total",
        "",
        secs(p.rows_total_us),
        if p.r_us != 0 {
            100.0 * p.rows_total_us as f64 / p.r_us as f64
        } else {
            0.0
        }
    )?;
    writeln!(o)?;
    Ok(())
}

/// A statement's plan as its STAT lines gave it, indented by depth under the parent row source.
fn text_plan(o: &mut String, plan: &[crate::model::PlanLine]) -> fmt::Result {
    if plan.is_empty() {
        return writeln!(o, "    (no plan: the trace has no STAT lines for it)");
    }
    writeln!(
        o,
        "    {:>5} {:>10} {:>10}  row source",
        "id", "rows", "obj"
    )?;
    let depth_of = |id: u32| {
        let mut d = 0usize;
        let mut cur = id;
        // Parents come before children; a damaged plan cannot loop forever.
        while let Some(l) = plan.iter().find(|l| l.id == cur && l.pid != l.id) {
            if l.pid == 0 || d > plan.len() {
                break;
            }
            d += 1;
            cur = l.pid;
        }
        d
    };
    for l in plan {
        writeln!(
            o,
            "    {:>5} {:>10} {:>10}  {}{}",
            l.id,
            l.cnt,
            l.obj,
            "  ".repeat(depth_of(l.id)),
            l.op
        )?;
    }
    Ok(())
}

/// The statements, the first `shown` of them: time, rows, physical reads (`p`) and logical reads
/// (`cr + cu`), and with `plans` each one's plan under it.
fn text_statements(o: &mut String, p: &Profile, shown: usize, plans: bool) -> fmt::Result {
    writeln!(
        o,
        "{:<15} {:>3} {:>7} {:>12} {:>12} {:>12} {:>10} {:>10} {:>12}  text",
        "by statement", "dep", "calls", "e s", "c s", "waits s", "rows", "phys rd", "logical rd"
    )?;
    for s in p.statements.iter().take(shown) {
        let id = if !s.sqlid.is_empty() {
            s.sqlid.clone()
        } else {
            s.hv.map(|h| format!("hv {h}"))
                .unwrap_or_else(|| "-".into())
        };
        writeln!(
            o,
            "{:<15} {:>3} {:>7} {:>12} {:>12} {:>12} {:>10} {:>10} {:>12}  {}",
            id,
            s.dep,
            s.calls,
            secs(s.e_us as i64),
            secs(s.c_us as i64),
            secs(s.waits_us as i64),
            s.rows,
            s.p,
            s.lio,
            truncate(&s.text, 60)
        )?;
        if plans {
            text_plan(o, &s.plan)?;
        }
    }
    if p.statements.len() > shown {
        writeln!(
            o,
            "… {} more statements (--json lists all)",
            p.statements.len() - shown
        )?;
    }
    writeln!(o)?;
    Ok(())
}

/// The recursive call tree.
fn text_call_tree(o: &mut String, p: &Profile) -> fmt::Result {
    writeln!(o, "call tree (e s, calls):")?;
    fn walk(o: &mut String, n: &TreeNode, depth: usize) -> fmt::Result {
        writeln!(
            o,
            "{:indent$}{} s  {}×  {}",
            "",
            secs(n.e_us as i64),
            n.calls,
            truncate(&n.statement, 70),
            indent = 2 + depth * 2
        )?;
        for c in &n.children {
            walk(o, c, depth + 1)?;
        }
        Ok(())
    }
    for n in &p.tree {
        walk(o, n, 0)?;
    }
    writeln!(o)?;
    Ok(())
}

/// The skew histogram of each wait event.
fn text_skew(o: &mut String, p: &Profile) -> fmt::Result {
    let labels = [
        "<1µs", "1µs", "10µs", "100µs", "1ms", "10ms", "100ms", "1s", "10s", "100s", "≥1000s",
    ];
    writeln!(
        o,
        "skew (waits per duration bucket, from each bucket's lower bound):"
    )?;
    write!(o, "{:<36}", "event")?;
    for l in &labels {
        write!(o, " {l:>7}")?;
    }
    writeln!(o)?;
    for e in p.events.iter().filter(|e| e.kind == "wait") {
        write!(o, "{:<36}", truncate(&e.name, 36))?;
        for n in &e.skew_counts {
            write!(o, " {n:>7}")?;
        }
        writeln!(o)?;
    }
    Ok(())
}

/// The slowest waits.
fn text_slowest_waits(o: &mut String, p: &Profile) -> fmt::Result {
    if !p.top_waits.is_empty() {
        writeln!(o)?;
        writeln!(o, "slowest waits:")?;
        for w in &p.top_waits {
            writeln!(
                o,
                "{:>12} µs  {:<36} {}  {}{}",
                w.ela_us,
                truncate(&w.name, 36),
                w.at,
                w.sqlid,
                w.wall_end
                    .as_deref()
                    .map(|s| format!("  {s}"))
                    .unwrap_or_default()
            )?;
        }
    }
    Ok(())
}

/// The db errors, by ORA- number.
fn text_errors(o: &mut String, p: &Profile) -> fmt::Result {
    if !p.errors.is_empty() {
        writeln!(o)?;
        for (k, n) in &p.errors {
            writeln!(o, "error {k}: {n}")?;
        }
    }
    Ok(())
}

/// The warnings.
fn text_warnings(o: &mut String, p: &Profile) -> fmt::Result {
    if p.warning_count > 0 {
        writeln!(o)?;
        writeln!(o, "{} warnings (malformed lines):", p.warning_count)?;
        for w in &p.warnings {
            writeln!(o, "  {w}")?;
        }
    }
    Ok(())
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::super::testdata::{NAME, TRACE};
    use super::super::{profile_bytes, ProfileOptions};
    use super::*;
    use crate::model::PlanLine;

    #[test]
    fn small_pieces_format_as_shown() {
        assert_eq!(secs(1_500_000), "1.500000");
        assert_eq!(secs(-250), "-0.000250");
        assert_eq!(truncate("abc", 3), "abc");
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("ééééé", 3), "éé…", "counted in characters");
        assert_eq!(
            format_wall(0).as_deref(),
            Some("1970-01-01T00:00:00.000000Z")
        );
        assert_eq!(
            format_wall(1_700_000_000_123_456).as_deref(),
            Some("2023-11-14T22:13:20.123456Z")
        );
        assert_eq!(format_wall(i64::MAX), None, "out of chrono's range");
    }

    #[test]
    fn the_clipped_line_counts_calls_and_waits_in_words() {
        let p = Profile {
            clipped_us: 1_500_000,
            clipped_calls: 1,
            clipped_waits: 2,
            ..Profile::default()
        };
        assert_eq!(
            clipped_line(&p),
            "clipped: 1.500000 s of calls and waits that began before the trace's first \
             timestamp (1 call, 2 waits), left out of R"
        );
    }

    #[test]
    fn a_plan_is_indented_by_depth_under_its_parent() {
        let line = |id, pid, op: &str| PlanLine {
            id,
            pid,
            pos: 1,
            cnt: u64::from(id) * 10,
            obj: 0,
            op: op.into(),
        };
        let plan = [
            line(1, 0, "SORT AGGREGATE"),
            line(2, 1, "HASH JOIN"),
            line(3, 2, "TABLE ACCESS FULL T"),
            line(4, 1, "INDEX RANGE SCAN I"),
        ];
        let mut o = String::new();
        text_plan(&mut o, &plan).unwrap();
        let ops: Vec<&str> = o.lines().skip(1).map(|l| &l[33..]).collect();
        assert_eq!(
            ops,
            [
                "SORT AGGREGATE",
                "  HASH JOIN",
                "    TABLE ACCESS FULL T",
                "  INDEX RANGE SCAN I"
            ]
        );
        let mut o = String::new();
        text_plan(&mut o, &[]).unwrap();
        assert_eq!(o, "    (no plan: the trace has no STAT lines for it)\n");
    }

    #[test]
    fn the_text_profile_shows_r_the_tree_and_the_slowest_waits() {
        let opts = ProfileOptions {
            top: 1,
            ..ProfileOptions::default()
        };
        let p = profile_bytes(NAME, TRACE.as_bytes(), &opts).unwrap();
        let text = render_text(&p, 1);
        for want in [
            "sessions 1  R = 0.002520 s  (wall span 0.002600 s; unaccounted-for between calls \
             0.000080 s, within calls 0.000010 s)\n",
            "\ncall tree (e s, calls):\n  0.000520 s  2×  aaaaaaaaaaaa1 select * from t\n    \
             0.000150 s  1×  bbbbbbbbbbbb2 select x from dual\n",
            "… 1 more statements (--json lists all)\n",
            "\nslowest waits:\n        2000 µs  SQL*Net message from client",
        ] {
            assert!(text.contains(want), "{want:?} not in:\n{text}");
        }
        assert!(!text.contains("clipped:"), "nothing was clipped");
        assert!(!text.contains("row source"), "plans only when asked");
        assert!(render_text_with(&p, 1, true).contains("(no plan: the trace has no STAT lines"));
    }
}
