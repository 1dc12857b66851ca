//! The report as text for a terminal ([`render_text`]) and as JSON ([`render_json`]).

use dbscope_core::stats::{format_r, r_summary_lines};
use dbscope_core::Outcome;

use super::model::{MeasuredReport, Report, SettingRow};
use crate::summary::{EventReport, SessionSpread};
use crate::text::{
    break_item, column_width, one_line, plural, push_prose, push_wrapped, push_wrapped_whole, span,
    thousands, thousands_f1, thousands_fixed, truncate_middle, MAX_LINE,
};

/// Width of the label column of the header lines (`run`, `workload`, ...).
const LABEL: usize = 10;

/// Pretty JSON of the report, with a trailing newline.
pub fn render_json(r: &Report) -> String {
    let mut s = serde_json::to_string_pretty(r).unwrap_or_else(|e| {
        serde_json::json!({ "error": format!("cannot encode the report: {e}") }).to_string()
    });
    s.push('\n');
    s
}

/// The report as text for a terminal (lines under 110 characters, apart from R's summary lines of
/// extreme values). Starts with an `INCOMPLETE:`, `INTERRUPTED:` or `FAILED:` line when one applies.
pub fn render_text(r: &Report) -> String {
    let mut out = String::new();
    let run = &r.run;

    if let Some(why) = &r.incomplete {
        push_prose(&mut out, &format!("INCOMPLETE: {why}"));
    }
    match run.outcome {
        Outcome::Interrupted => push_prose(
            &mut out,
            &format!(
                "INTERRUPTED: the run was stopped early{}; the events up to the stop are reported",
                detail_suffix(&run.outcome_detail)
            ),
        ),
        Outcome::Failed => push_prose(
            &mut out,
            &format!(
                "FAILED: the run stopped on an error{}; the events up to the failure are reported",
                detail_suffix(&run.outcome_detail)
            ),
        ),
        Outcome::Running | Outcome::Complete => {}
    }
    // A TPC-C run's figures first, as HammerDB and go-tpc print them.
    if let Some(t) = &r.tpcc {
        out.push_str(&t.render());
    }

    let outcome = match run.outcome {
        Outcome::Running => "(running: no end recorded)".to_string(),
        o => format!("({})", o.as_str()),
    };
    push_items(&mut out, "run", &[run.path.clone(), outcome]);

    let mut items = vec![one_line(&run.workload)];
    items.extend(
        run.params
            .iter()
            // A script run's scripts (their whole text) are in the manifest; pgbench's block
            // below names them.
            .filter(|(k, _)| !(r.pgbench.is_some() && k.as_str() == "scripts"))
            // A hub query's plan (DataFusion's, many lines) is in the manifest; `query --explain`
            // prints it.
            .filter(|(k, _)| !(run.source == "hub" && k.as_str() == "plan"))
            .map(|(k, v)| one_line(&format!("{k}={}", param_value(v)))),
    );
    items.push(format!("seed {}", run.seed));
    if run.source != "workload" {
        items.push(format!("source {}", one_line(&run.source)));
    }
    push_items(&mut out, "workload", &items);

    if let Some(t) = &run.target {
        let items: Vec<String> = [&t.kind, &t.location, &t.server_version]
            .into_iter()
            .filter(|s| !s.is_empty())
            .map(|s| one_line(s))
            .collect();
        push_items(&mut out, "target", &items);
    }
    if let Some(rn) = &run.runner {
        let mut items = vec![plural(rn.sessions as u64, "session")];
        items.push(match rn.mode.as_str() {
            "closed" | "open" => format!("{} loop", rn.mode),
            m => format!("mode {}", one_line(m)),
        });
        if let Some(t) = rn.threads {
            items.push(format!("on {t} client threads"));
        }
        if let Some(ops) = rn.ops_per_session {
            items.push(format!("{} ops/session", thousands(ops)));
        }
        if let Some(d) = rn.duration_s {
            items.push(format!("duration {d} s"));
        }
        items.push(format!("warm-up {} s", rn.warmup_s));
        if let Some(n) = rn.max_errors {
            items.push(format!("max errors {}", thousands(n)));
        }
        push_items(&mut out, "runner", &items);
    }

    let mut items = vec![format!(
        "{} UTC",
        run.started_utc.format("%Y-%m-%d %H:%M:%S")
    )];
    match (run.elapsed_s, run.ended_utc) {
        (Some(e), Some(end)) => {
            items.push(format!("+ {e:.2} s"));
            items.push(format!("(ended {} UTC)", end.format("%Y-%m-%d %H:%M:%S")));
        }
        _ => items.push("(no end recorded)".into()),
    }
    push_items(&mut out, "period", &items);

    let h = &run.host;
    let mut items = Vec::new();
    if !h.uname.is_empty() {
        items.push(one_line(&h.uname));
    }
    match h.machine_cpus() {
        0 => {}
        n => items.push(format!("{n} cpus")),
    }
    let placement = h.client_placement();
    if !placement.is_empty() {
        items.push(placement);
    }
    if h.memory_bytes > 0 {
        items.push(format!(
            "{:.1} GiB memory",
            h.memory_bytes as f64 / (1u64 << 30) as f64
        ));
    }
    let cpu = h.cpu_summary();
    if !cpu.is_empty() {
        items.push(cpu);
    }
    let memory = h.memory_summary();
    if !memory.is_empty() {
        items.push(memory);
    }
    if !h.cpu_flags.is_empty() {
        items.push(format!("CPU flags {}", h.cpu_flags.join(" ")));
    }
    if !items.is_empty() {
        push_items(&mut out, "host", &items);
    }
    push_items(
        &mut out,
        "dbscope",
        &[format!(
            "{} (run format {})",
            one_line(&run.dbscope_version),
            one_line(&run.format_version)
        )],
    );
    push_settings(&mut out, &r.settings);
    if run.source == "import" && !run.params.contains_key("start_column") {
        push_imported(&mut out, r);
    } else {
        push_measured(&mut out, &r.measured);
    }
    if let Some(p) = &r.pgbench {
        out.push('\n');
        out.push_str(&p.render());
    }

    if r.events.is_empty() {
        out.push_str("\nno events recorded\n");
    }
    for e in &r.events {
        out.push('\n');
        push_event(&mut out, e);
    }
    if let Some(b) = &r.open_loop {
        crate::openloop::push_backlog_text(&mut out, b);
    }
    for section in &r.counters {
        // The open-loop table above already has the pacing's operations due per second: the
        // section prints its totals only (issue 34: the table was printed twice).
        if section.key == "answer" {
            continue; // After everything else, as psql prints it (below).
        }
        if section.key == "pacing" && r.open_loop.is_some() {
            let mut s = section.clone();
            s.tables.retain(|t| t.key != "per_second");
            crate::counters::push_text(&mut out, &s);
            continue;
        }
        crate::counters::push_text(&mut out, section);
    }
    if let Some(o) = &r.observe {
        crate::observe::push_text(&mut out, o);
    }
    if let Some(p) = &r.plans {
        crate::plans::push_report_text(&mut out, p);
    }
    // A query's answer (tpch-q1) last, its rows as psql prints them (issue 34).
    for section in r.counters.iter().filter(|s| s.key == "answer") {
        out.push('\n');
        out.push_str(&one_line(&section.title));
        out.push('\n');
        for t in &section.tables {
            push_psql_table(&mut out, t);
        }
    }
    out
}

/// A table as psql's aligned format prints it: headings centred, numbers right-aligned, text
/// left-aligned, columns separated by ` | `, a `-+-` rule under the headings, and `(N rows)`.
fn push_psql_table(out: &mut String, t: &dbscope_core::CounterTable) {
    use dbscope_core::CounterValue;
    let cells: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| {
            (0..t.columns.len())
                .map(|i| match r.get(i) {
                    Some(CounterValue::None) | None => String::new(),
                    Some(v) => crate::counters::value_text(v, None),
                })
                .collect()
        })
        .collect();
    let number = |s: &str| !s.is_empty() && s.parse::<f64>().is_ok();
    let right: Vec<bool> = (0..t.columns.len())
        .map(|i| cells.iter().all(|r| r[i].is_empty() || number(&r[i])))
        .collect();
    let widths: Vec<usize> = t
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            column_width(
                cells
                    .iter()
                    .map(|r| r[i].as_str())
                    .chain([c.label.as_str()]),
                0,
            )
        })
        .collect();
    let head: Vec<String> = t
        .columns
        .iter()
        .zip(&widths)
        .map(|(c, &w)| {
            let n = c.label.chars().count();
            let left = (w - n) / 2;
            format!(
                "{}{}{}",
                " ".repeat(left),
                c.label,
                " ".repeat(w - n - left)
            )
        })
        .collect();
    out.push_str(format!(" {}", head.join(" | ")).trim_end());
    out.push('\n');
    let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w + 2)).collect();
    out.push_str(&rule.join("+"));
    out.push('\n');
    for r in &cells {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .zip(&right)
            .map(|((c, &w), &right)| match right {
                true => format!("{c:>w$}"),
                false => format!("{c:<w$}"),
            })
            .collect();
        out.push_str(format!(" {}", line.join(" | ")).trim_end());
        out.push('\n');
    }
    let n = cells.len();
    out.push_str(&format!("({n} row{})\n", if n == 1 { "" } else { "s" }));
}

fn detail_suffix(detail: &Option<String>) -> String {
    match detail {
        Some(d) if !d.trim().is_empty() => format!(" ({})", one_line(d.trim())),
        _ => String::new(),
    }
}

fn push_settings(out: &mut String, rows: &[SettingRow]) {
    if rows.is_empty() {
        push_items(out, "settings", &["(none recorded)".to_string()]);
        return;
    }
    let cells: Vec<[String; 3]> =
        std::iter::once(["name", "requested", "effective"].map(String::from))
            .chain(rows.iter().map(|r| {
                [
                    truncate_middle(&one_line(&r.name), 30),
                    one_line(r.requested.as_deref().unwrap_or("(default)")),
                    one_line(r.effective.as_deref().unwrap_or("-")),
                ]
            }))
            .collect();
    let w0 = column_width(cells.iter().map(|c| c[0].as_str()), 0);
    // Values are wrapped at their words in their column, never shortened (issue 34: `dbscope:
    // retry ev…SQLite's back-off)`); the requested column is at most 28 wide.
    let w1 = column_width(cells.iter().map(|c| c[1].as_str()), 0).min(28);
    let room = MAX_LINE.saturating_sub(LABEL + w0 + 2 + w1 + 2).max(20);
    for (i, [name, req, eff]) in cells.iter().enumerate() {
        let req = wrap_words(req, w1);
        let eff = wrap_words(eff, room);
        for k in 0..req.len().max(eff.len()) {
            let label = if i == 0 && k == 0 { "settings" } else { "" };
            let name = if k == 0 { name.as_str() } else { "" };
            let r = req.get(k).map_or("", String::as_str);
            let e = eff.get(k).map_or("", String::as_str);
            let line = format!("{label:<LABEL$}{name:<w0$}  {r:<w1$}  {e}");
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
}

/// `text` in lines of at most `width` characters, broken between words; a word longer than a
/// line is broken at `width` ([`break_item`]).
fn wrap_words(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        for piece in break_item(word, width) {
            let n = line.chars().count();
            if n > 0 && n + 1 + piece.chars().count() > width {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(&piece);
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

fn push_measured(out: &mut String, m: &MeasuredReport) {
    let mut items = vec![format!(
        "{} ok + {}",
        thousands(m.events),
        plural(m.errors, "error")
    )];
    match m.span_s {
        Some(s) => items.push(format!("in {} (first start to last end)", span(s))),
        None => items.push("(no measured events)".into()),
    }
    if m.include_warmup {
        items.push("warm-up events included".into());
    } else if m.warmup_excluded > 0 {
        items.push(format!(
            "{} left out",
            plural(m.warmup_excluded, "warm-up event")
        ));
    }
    push_items(out, "measured", &items);
}

/// The sessions line of an event, and a plain warning when a session was starved.
fn push_sessions(out: &mut String, sp: &SessionSpread) {
    out.push_str(&format!(
        "   sessions {}: per session min {}  median {}  max {}  fairness (Jain) {:.2}\n",
        sp.per_session.len(),
        thousands(sp.min),
        median_text(sp.median),
        thousands(sp.max),
        sp.fairness
    ));
    if let Some(note) = &sp.note {
        crate::text::push_wrapped_words(out, "   ", note);
    }
    if !sp.starved.is_empty() {
        let who: Vec<String> = sp
            .starved
            .iter()
            .map(|s| format!("session {s} ({})", thousands(sp.per_session[s])))
            .collect();
        out.push_str(&format!(
            "   WARNING: starved: {}: fewer than a tenth of the mean session's events\n",
            who.join(", ")
        ));
    }
}

/// What an import without start times did, in place of the measured span: its rows, the
/// file's bytes and the time the import took; no rate (the file has latencies, not times).
fn push_imported(out: &mut String, r: &Report) {
    let p = &r.run.params;
    let int = |k: &str| p.get(k).and_then(|v| v.as_u64());
    let mut items = vec![plural(int("rows").unwrap_or(r.measured.events), "row")];
    if let Some(n) = int("skipped_rows").filter(|&n| n > 0) {
        items.push(format!("{} skipped", plural(n, "bad row")));
    }
    let file = p.get("file").map(param_value).unwrap_or_default();
    match int("bytes") {
        Some(b) => items.push(format!("from {} of {}", plural(b, "byte"), one_line(&file))),
        None => items.push(format!("from {}", one_line(&file))),
    }
    if let Some(e) = r.run.elapsed_s {
        items.push(format!("in {}", span(e)));
    }
    items.push("(latencies without start times: no throughput)".into());
    push_items(out, "imported", &items);
}

/// A median of counts: whole, or halfway between two (type 7 of an even number of sessions), with
/// thousands separators like the min and max beside it.
fn median_text(m: f64) -> String {
    if m.fract() == 0.0 {
        thousands_fixed(m, 0)
    } else {
        thousands_fixed(m, 1)
    }
}

fn push_event(out: &mut String, e: &EventReport) {
    // A long name (a captured statement) gets a line of its own.
    let name = if e.name.is_empty() {
        "(no name)".to_string()
    } else if e.name.chars().count() > 60 {
        format!("{}\n ", truncate_middle(&one_line(&e.name), 200))
    } else {
        one_line(&e.name)
    };
    let rate = match e.throughput_per_s {
        Some(t) => format!("   {} /s", thousands_f1(t)),
        None => String::new(),
    };
    out.push_str(&format!(
        "{name}   n = {}   errors {}{rate}\n",
        thousands(e.count),
        thousands(e.errors)
    ));
    match (&e.summary_us, &e.percentiles_us) {
        (Some(s), Some(p)) => {
            let (head, values) = r_summary_lines(s.six());
            out.push_str(&format!("{head}   (µs)\n{values}\n"));
            let mut items = Vec::new();
            if let Some(sd) = e.sd_us {
                let sd = format_r(&[sd], 4).into_iter().next().unwrap_or_default();
                items.push(format!("sd {}", sd.trim()));
            }
            for (label, v) in ["p90", "p99", "p99.9", "p99.99"].iter().zip(p.texts()) {
                items.push(format!("{label} {v}"));
            }
            out.push_str(&format!(
                "   {}   (µs; {})\n",
                items.join("   "),
                p.method()
            ));
            if !p.exact {
                out.push_str(&format!(
                    "   note: more events than report sorts in memory ({} over all names): quartiles \
                     and mean from the HDR histogram too\n",
                    thousands(crate::summary::EXACT_BUDGET_VALUES as u64)
                ));
            }
            if let Some(f) = &e.from_intended {
                crate::openloop::push_event_text(out, f);
            }
        }
        _ => out.push_str("   no successful events: no latency summary\n"),
    }
    if let Some(sp) = &e.sessions {
        push_sessions(out, sp);
    }
    if e.errors > 0 {
        let mut classes: Vec<(&String, &u64)> = e.error_classes.iter().collect();
        classes.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
        let classes: Vec<String> = classes
            .into_iter()
            .map(|(c, n)| format!("{} {}", truncate_middle(&one_line(c), 60), thousands(*n)))
            .collect();
        push_wrapped(out, "   errors: ", &classes, ", ");
    }
    if e.warmup_excluded > 0 {
        out.push_str(&format!(
            "   warm-up: {} left out\n",
            plural(e.warmup_excluded, "event")
        ));
    }
}

/// A header line: the label in its column, then the items separated by two spaces, wrapped under
/// the items' column when they do not fit.
fn push_items(out: &mut String, label: &str, items: &[String]) {
    // Never shortened: a long parameter (io redo's destinations and their sector sizes) is
    // wrapped over lines (issue 34).
    push_wrapped_whole(out, &format!("{label:<LABEL$}"), items, "  ");
}

/// A workload parameter as the user would type it: strings without quotes.
fn param_value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
