//! `compare --fail-if 'p99>+5%,throughput<-3%'`: a regression gate for CI.
//!
//! A condition holds only when the whole confidence interval of B's relative change against A
//! lies beyond its threshold: `>` when the interval's lower end is above it, `<` when the upper
//! end is below it. Quantiles use compare's bootstrap intervals, `mean` Welch's interval (over A's
//! mean); `throughput` Welch's interval of the successful operations counted in each full second
//! of each run (over A's mean per second). A run shorter than two full seconds gives no
//! throughput interval: the condition is reported as not judged and does not fail the gate.

use dbscope_analysis::compare::Comparison;
use dbscope_core::stats::{welch_t_test, Sample};
use dbscope_core::RunDir;
use serde::Serialize;

use crate::compare::args::{Condition, Metric};

/// One condition judged on one event name.
#[derive(Clone, Debug, Serialize)]
pub struct Judged {
    /// The condition as written.
    pub condition: String,
    /// The event name.
    pub event: String,
    /// B/A − 1 (point estimate).
    pub change: Option<f64>,
    /// The 95% interval of B/A − 1.
    pub low: Option<f64>,
    /// Upper end.
    pub high: Option<f64>,
    /// True when the whole interval lies beyond the threshold.
    pub holds: bool,
    /// Why it could not be judged, when it could not.
    pub note: Option<String>,
}

/// Successful measured events of `name` counted per full second from the first one's start.
fn per_second(run: &RunDir, name: &str, warmup: bool) -> anyhow::Result<Vec<f64>> {
    let mut ends = Vec::new();
    let mut first = u64::MAX;
    run.for_each_block(|names, block| {
        let Some(id) = names.lookup(name) else { return };
        for e in block
            .iter()
            .filter(|e| e.name == id && !e.is_error() && (warmup || !e.is_warmup()))
        {
            first = first.min(e.start_ns);
            ends.push(e.start_ns + e.duration_ns);
        }
    })?;
    let Some(&last) = ends.iter().max() else {
        return Ok(Vec::new());
    };
    let full = ((last - first) / 1_000_000_000) as usize;
    let mut counts = vec![0.0; full];
    for t in ends {
        let i = ((t - first) / 1_000_000_000) as usize;
        if i < full {
            counts[i] += 1.0;
        }
    }
    Ok(counts)
}

/// Judges every condition on every compared event name.
pub fn judge(
    c: &Comparison,
    ra: &RunDir,
    rb: &RunDir,
    conds: &[Condition],
    warmup: bool,
) -> anyhow::Result<Vec<Judged>> {
    let mut out = Vec::new();
    for ev in &c.events {
        for cond in conds {
            let mut j = Judged {
                condition: cond.text.clone(),
                event: ev.name.clone(),
                change: None,
                low: None,
                high: None,
                holds: false,
                note: None,
            };
            match cond.metric {
                Metric::Quantile(p) => {
                    match ev.quantiles.iter().find(|q| (q.p - p).abs() < 1e-12) {
                        Some(q) => (j.change, j.low, j.high) = (q.rel, q.rel_low, q.rel_high),
                        None => j.note = Some(format!("p{} is not among --quantiles", p * 100.0)),
                    }
                }
                Metric::Mean => match &ev.welch {
                    Some(w) if ev.a.summary.mean > 0.0 => {
                        let m = ev.a.summary.mean;
                        (j.change, j.low, j.high) =
                            (Some(w.diff / m), Some(w.ci_low / m), Some(w.ci_high / m));
                    }
                    _ => j.note = Some("no Welch interval (constant data)".into()),
                },
                Metric::Throughput => {
                    let (xa, xb) = (
                        per_second(ra, &ev.name, warmup)?,
                        per_second(rb, &ev.name, warmup)?,
                    );
                    let test = Sample::new(xb)
                        .and_then(|b| Ok((b, Sample::new(xa)?)))
                        .and_then(|(b, a)| welch_t_test(&b, &a));
                    match test {
                        Ok(w) if w.mean_y > 0.0 => {
                            let m = w.mean_y;
                            (j.change, j.low, j.high) =
                                (Some(w.diff / m), Some(w.ci_low / m), Some(w.ci_high / m));
                        }
                        _ => {
                            j.note = Some(
                                "no throughput interval: each run needs two full seconds of \
                                 varying per-second counts"
                                    .into(),
                            )
                        }
                    }
                }
            }
            j.holds = match (cond.above, j.low, j.high) {
                (true, Some(l), _) => l > cond.threshold,
                (false, _, Some(h)) => h < cond.threshold,
                _ => false,
            };
            out.push(j);
        }
    }
    Ok(out)
}

fn pct(v: Option<f64>) -> String {
    v.map(|x| format!("{:+.1}%", x * 100.0))
        .unwrap_or_else(|| "?".into())
}

/// One line per judged condition.
pub fn render_text(js: &[Judged]) -> String {
    let mut s = String::from("\ngate (--fail-if; a condition holds when its whole 95% interval is beyond the threshold)\n");
    for j in js {
        s.push_str(&format!(
            "  {:<22} {:<16} change {:>8}  CI {} … {}  {}\n",
            j.condition,
            j.event,
            pct(j.change),
            pct(j.low),
            pct(j.high),
            match (&j.note, j.holds) {
                (Some(n), _) => format!("not judged: {n}"),
                (None, true) => "HOLDS".into(),
                (None, false) => "does not hold".into(),
            }
        ));
    }
    let n = js.iter().filter(|j| j.holds).count();
    s.push_str(&if n > 0 {
        format!("gate FAILED: {n} condition(s) held (exit 5)\n")
    } else {
        "gate passed: no condition held\n".into()
    });
    s
}

/// A one-paragraph Markdown summary a CI job can post.
pub fn render_markdown(c: &Comparison, js: &[Judged]) -> String {
    let held: Vec<&Judged> = js.iter().filter(|j| j.holds).collect();
    let head = if held.is_empty() {
        "✅ **dbscope: no regression**".to_string()
    } else {
        "❌ **dbscope: regression**".to_string()
    };
    let item = |j: &Judged| {
        format!(
            "`{}` on `{}`: {} (95% CI {} … {}){}",
            j.condition,
            j.event,
            pct(j.change),
            pct(j.low),
            pct(j.high),
            j.note
                .as_ref()
                .map(|n| format!(" — not judged: {n}"))
                .unwrap_or_default()
        )
    };
    let list: Vec<String> = if held.is_empty() {
        js.iter().map(item).collect()
    } else {
        held.iter().map(|j| item(j)).collect()
    };
    format!(
        "{head} — `{}` (B) against `{}` (A). {}.\n",
        c.b.path,
        c.a.path,
        list.join("; ")
    )
}
