//! Two runs' sections side by side, with the change of each figure both have, for `compare`.

use std::fmt::Write;

use dbscope_core::RunDir;
use serde::Serialize;

use super::build::build_with;
use super::model::{Figure, ObserveReport};
use crate::text::{change_text, column_width, format_figure};

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
                .map(|r| {
                    // MySQL's event names hold their class (`wait/io/table/…` of `io/table`).
                    if r.event.contains(&format!("{}/", r.class)) {
                        format!("{} {:.1}%", r.event, r.pct_db_time)
                    } else {
                        format!("{}:{} {:.1}%", r.class, r.event, r.pct_db_time)
                    }
                })
                .collect()
        })
    };
    let (ta, tb) = (top(&c.a), top(&c.b));
    if !ta.is_empty() || !tb.is_empty() {
        let _ = writeln!(out, "Top timed events (% of DB time)");
        let w = column_width(ta.iter().map(String::as_str), 40);
        let _ = writeln!(out, "  {:<w$}   B", "A");
        for i in 0..ta.len().max(tb.len()) {
            let _ = writeln!(
                out,
                "  {:<w$}   {}",
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
        let w = column_width(c.figures.iter().map(|f| f.label.as_str()), 40);
        let _ = writeln!(
            out,
            "  {:<w$} {:>14} {:>14} {:>9}",
            "figure", "A", "B", "change"
        );
        for f in &c.figures {
            let (a, b) = (format_figure(f.a), format_figure(f.b));
            let change = change_text(&a, &b, f.change_pct, |p| format!("{p:+.1}%"));
            let _ = writeln!(
                out,
                "  {:<w$} {:>14} {:>14} {:>9}  {}",
                f.label, a, b, change, f.unit
            );
        }
    }
}
