//! The comparison as text for a terminal ([`render_text`]) and as JSON ([`render_json`]).

use dbscope_core::stats::{format_r, zapsmall};

use std::collections::BTreeMap;

use super::model::{
    Comparison, EventComparison, FromIntendedComparison, SideBySide, SideFacts, SideSummary,
};
use super::verdict::{p_text, quantile_label, signed3};
use crate::counters::push_comparison_text;
use crate::text::{
    one_line, push_wrapped_words, sig3, span, thousands, thousands_f1, threshold_us,
    truncate_middle,
};

/// Pretty JSON of the comparison, with a trailing newline.
pub fn render_json(c: &Comparison) -> String {
    let mut s = serde_json::to_string_pretty(c).unwrap_or_else(|e| {
        serde_json::json!({ "error": format!("cannot encode the comparison: {e}") }).to_string()
    });
    s.push('\n');
    s
}

/// The comparison as text for a terminal.
pub fn render_text(c: &Comparison) -> String {
    let mut out = String::new();
    for (label, s) in [("A", &c.a), ("B", &c.b)] {
        out.push_str(&format!(
            "{label}  {}  ({}, {}, {} events read)\n",
            one_line(&s.path),
            one_line(&s.workload),
            s.outcome.as_str(),
            thousands(s.events_read)
        ));
        if let Some(why) = &s.incomplete {
            out.push_str(&format!("   INCOMPLETE: {}\n", one_line(why)));
        }
        if let Some(why) = &s.partial {
            out.push_str(&format!(
                "   WARNING: {label} is a partial replay: {}\n",
                one_line(why)
            ));
        }
    }
    if let Some(line) = elapsed_line(c) {
        out.push_str(&line);
        out.push('\n');
    }
    if c.manifest_diff.is_empty() {
        out.push_str("manifests: no differences (timestamps and command lines aside)\n");
    } else {
        out.push_str("manifests differ:\n");
        let w = crate::text::column_width(c.manifest_diff.iter().map(|d| d.field.as_str()), 0);
        for d in &c.manifest_diff {
            let v = |x: &Option<String>| {
                x.as_deref()
                    .map(one_line)
                    .unwrap_or_else(|| "(absent)".into())
            };
            out.push_str(&format!(
                "   {:<w$}  A: {}   B: {}\n",
                d.field,
                v(&d.a),
                v(&d.b)
            ));
        }
    }
    if !c.moved.is_empty() {
        out.push_str("files moved (manifests' storage: device per role):\n");
        for m in &c.moved {
            out.push_str(&format!(
                "   {}: {} → {}\n",
                m.role,
                one_line(&m.a),
                one_line(&m.b)
            ));
        }
    }
    for e in &c.events {
        out.push('\n');
        push_event(&mut out, e, c);
    }
    for s in &c.untested {
        out.push('\n');
        push_side_by_side(&mut out, s);
    }
    push_from_intended_text(&mut out, &c.from_intended);
    for s in &c.counters {
        push_comparison_text(&mut out, s);
    }
    if let Some(o) = &c.observe {
        crate::observe::push_compare_text(&mut out, o);
    }
    if let Some(p) = &c.plans {
        crate::plans::push_compare_text(&mut out, p);
    }
    out
}

/// `compare`'s lines for the CO-corrected latencies.
fn push_from_intended_text(out: &mut String, c: &[FromIntendedComparison]) {
    if c.is_empty() {
        return;
    }
    out.push_str(
        "
latency from the intended start (CO-corrected, open loop), µs
",
    );
    if c.iter()
        .any(|e| !e.a.percentiles_us.exact || !e.b.percentiles_us.exact)
    {
        out.push_str(
            "   (HDR histogram, 3 digits, where a side had more events than --memory holds exactly)\n",
        );
    }
    out.push_str(
        "   event                  median A    median B      p99 A      p99 B    p99.9 A    p99.9 B
",
    );
    for e in c {
        out.push_str(&format!(
            "   {:<20} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}\n",
            truncate_middle(&e.name, 20),
            sig3(e.a.summary_us.median),
            sig3(e.b.summary_us.median),
            sig3(e.a.percentiles_us.p99),
            sig3(e.b.percentiles_us.p99),
            sig3(e.a.percentiles_us.p99_9),
            sig3(e.b.percentiles_us.p99_9),
        ));
    }
}

/// `elapsed  A 12.345 s   B 3.701 s   B/A 0.300 (−70.0%)`: the measured span of each run, the
/// seed's headline figure ("elapsed time reduced by 70%").
pub fn elapsed_line(c: &Comparison) -> Option<String> {
    let (a, b) = (c.a.elapsed_s?, c.b.elapsed_s?);
    Some(format!(
        "elapsed  A {}   B {}   B/A {:.3} ({})",
        span(a),
        span(b),
        b / a,
        signed_percent(b / a - 1.0)
    ))
}

/// `+12.3%` or `−70.0%` (a real minus sign, as the other changes print).
fn signed_percent(x: f64) -> String {
    let p = x * 100.0;
    if p < 0.0 {
        format!("\u{2212}{:.1}%", -p)
    } else {
        format!("+{p:.1}%")
    }
}

fn push_event(out: &mut String, e: &EventComparison, c: &Comparison) {
    out.push_str(&format!(
        "{}   n  A {}   B {}\n",
        one_line(&e.name),
        thousands(e.a.n),
        thousands(e.b.n)
    ));
    if let [Some(ta), Some(tb)] = e.throughput_per_s {
        out.push_str(&format!(
            "  throughput  A {}/s   B {}/s   ({})\n",
            thousands_f1(ta),
            thousands_f1(tb),
            if ta > 0.0 {
                signed_percent(tb / ta - 1.0)
            } else {
                "-".into()
            }
        ));
    }
    // Each side's six numbers exactly as R prints its summary() (zapsmall, 4 significant digits,
    // one number of decimals per side), in columns wide enough for both.
    const NAMES: [&str; 6] = ["Min.", "1st Qu.", "Median", "Mean", "3rd Qu.", "Max."];
    let side = |s: &SideSummary| format_r(&zapsmall(&s.summary.six()), 4);
    let (fa, fb) = (side(&e.a), side(&e.b));
    let w = fa
        .iter()
        .chain(&fb)
        .map(|s| s.trim().len())
        .chain(NAMES.iter().map(|n| n.len()))
        .max()
        .unwrap_or(0);
    let head: Vec<String> = NAMES.iter().map(|n| format!("{n:>w$}")).collect();
    out.push_str(&format!("     {}   (µs)\n", head.join(" ")));
    for (label, row, s) in [("A", &fa, &e.a), ("B", &fb, &e.b)] {
        let cells: Vec<String> = row.iter().map(|v| format!("{:>w$}", v.trim())).collect();
        let sd = format_r(&[s.sd], 4).join("");
        out.push_str(&format!(
            "  {label}  {}   sd {}\n",
            cells.join(" "),
            sd.trim()
        ));
    }
    match &e.welch {
        Some(wt) => {
            let [d, l, h] = signed3(&[wt.diff, wt.ci_low, wt.ci_high], 4);
            out.push_str(&format!(
                "  mean    B − A {d} µs (95% CI {l} … {h})   Welch t = {}, df = {}, p {}\n",
                format_r(&[wt.t], 7).join("").trim(),
                format_r(&[wt.df], 7).join("").trim(),
                p_text(wt.p_value)
            ));
        }
        None => out.push_str(&format!(
            "  mean    no t-test: {}\n",
            e.welch_note.as_deref().unwrap_or("not computed")
        )),
    }
    let [hl, _, _] = signed3(&[e.hl_shift_us, e.hl_shift_us, e.hl_shift_us], 4);
    out.push_str(&format!(
        "  shift   Hodges–Lehmann {hl} µs   Wilcoxon rank-sum W = {}, p {}\n",
        format_r(&[e.rank_test.w], 7).join("").trim(),
        p_text(e.rank_test.p_value)
    ));
    out.push_str(&format!(
        "  {:<8}{:>12} {:>12}   {:<32} change (95% CI, {} replicates, seed {})\n",
        "quantile",
        "A",
        "B",
        "B − A (95% CI)",
        c.options.bootstrap.replicates,
        c.options.bootstrap.seed
    ));
    for q in &e.quantiles {
        let ab = format_r(&zapsmall(&[q.a, q.b]), 4);
        let [d, l, h] = signed3(&[q.diff, q.diff_low, q.diff_high], 3);
        let rel = match (q.rel, q.rel_low, q.rel_high) {
            (Some(r), Some(lo), Some(hi)) => {
                let [r, lo, hi] = signed3(&[r * 100.0, lo * 100.0, hi * 100.0], 2);
                format!("{r}% ({lo} … {hi}%)")
            }
            _ => "- (A's quantile is not positive)".into(),
        };
        out.push_str(&format!(
            "  {:<8}{:>12} {:>12}   {:<32} {rel}\n",
            quantile_label(q.p),
            ab[0].trim(),
            ab[1].trim(),
            format!("{d} ({l} … {h})")
        ));
    }
    if let Some([oa, ob]) = &e.outliers {
        out.push_str(&format!(
            "  over {}   A {} ({}%)   B {} ({}%)\n",
            threshold_us(oa.threshold),
            thousands(oa.count),
            format_r(&[oa.rate * 100.0], 3).join("").trim(),
            thousands(ob.count),
            format_r(&[ob.rate * 100.0], 3).join("").trim()
        ));
    }
    if e.errors.iter().any(|m| !m.is_empty()) {
        out.push_str(&format!(
            "  errors   A {}   B {}\n",
            errors_text(&e.errors[0]),
            errors_text(&e.errors[1])
        ));
    }
    push_wrapped_words(out, "  verdict ", &e.verdict.text);
}

/// `pg:40001 3, connection 1`, or `none`.
fn errors_text(m: &BTreeMap<String, u64>) -> String {
    if m.is_empty() {
        return "none".into();
    }
    m.iter()
        .map(|(class, n)| format!("{} {}", one_line(class), thousands(*n)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A name without a test, side by side: n, elapsed, median, rows and errors of each run, `—`
/// where a run lacks the name.
fn push_side_by_side(out: &mut String, s: &SideBySide) {
    const LACKS: &str = "—";
    let (a, b) = (s.a.as_ref(), s.b.as_ref());
    let n = |f: Option<&SideFacts>| f.map_or(LACKS.into(), |f| thousands(f.n));
    out.push_str(&format!(
        "{}   n  A {}   B {}   {}\n",
        one_line(&s.name),
        n(a),
        n(b),
        s.reason
    ));
    // One figure of each side and, when both have it, B/A.
    let line = |out: &mut String,
                label: &str,
                get: &dyn Fn(&SideFacts) -> Option<f64>,
                fmt: &dyn Fn(f64) -> String| {
        let (va, vb) = (a.and_then(get), b.and_then(get));
        if va.is_none() && vb.is_none() {
            return;
        }
        let show = |v: Option<f64>| v.map_or(LACKS.into(), fmt);
        let ratio = match (va, vb) {
            (Some(x), Some(y)) if x > 0.0 => {
                format!("   B/A {:.3} ({})", y / x, signed_percent(y / x - 1.0))
            }
            _ => String::new(),
        };
        out.push_str(&format!(
            "  {label:<9}A {}   B {}{ratio}\n",
            show(va),
            show(vb)
        ));
    };
    line(out, "elapsed", &|f| f.elapsed_s, &span);
    if [a, b].iter().flatten().any(|f| f.n > 1) {
        line(out, "median", &|f| f.summary.map(|m| m.median), &|us| {
            format!("{} µs", sig3(us))
        });
    }
    if [a, b].iter().flatten().any(|f| f.rows > 0) {
        line(out, "rows", &|f| (f.n > 0).then_some(f.rows as f64), &|r| {
            thousands(r as u64)
        });
        line(out, "rows/s", &|f| f.rows_per_s, &thousands_f1);
    }
    if [a, b].iter().flatten().any(|f| !f.errors.is_empty()) {
        let e = |f: Option<&SideFacts>| f.map_or(LACKS.into(), |f| errors_text(&f.errors));
        out.push_str(&format!("  errors   A {}   B {}\n", e(a), e(b)));
    }
}
