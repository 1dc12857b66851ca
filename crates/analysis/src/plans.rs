//! The plans a run took with `run --explain` (`plans.json`): each shown compactly in `report`
//! (PostgreSQL: the node tree with actual rows, time and buffers; SQLite: the query plan's
//! lines), and compared by shape in `compare` (node types, operations, relations and indexes, in
//! tree order: timings, costs and row counts left out), both plans shown where the shape changed.

use serde::Serialize;
use serde_json::Value;

use dbscope_core::plans::{PlanEntry, RunPlans};
use dbscope_core::RunDir;

use crate::text::one_line;

/// A run's plans as `report` shows them.
#[derive(Clone, Debug, Serialize)]
pub struct PlansReport {
    /// What they were taken with.
    pub method: String,
    /// One per distinct statement, in the order taken.
    pub plans: Vec<PlanView>,
    /// What was not explained, or why the file could not be read.
    pub notes: Vec<String>,
}

/// One statement's plan, compact and whole.
#[derive(Clone, Debug, Serialize)]
pub struct PlanView {
    /// The event the statement's executions are recorded under.
    pub event: String,
    /// The statement's text.
    pub sql: String,
    /// The parameters it was explained with.
    pub params: Vec<String>,
    /// When it was taken, s on the run's clock.
    pub taken_s: f64,
    /// True when EXPLAIN ANALYZE executed it in a transaction that was rolled back.
    pub rolled_back: bool,
    /// PostgreSQL's planning and execution time, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planning_ms: Option<f64>,
    /// See `planning_ms`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_ms: Option<f64>,
    /// The plan, one line per node (two spaces per level), with actual figures where taken.
    pub tree: Vec<String>,
    /// The plan's shape: one line per node, without figures (what `compare` compares).
    pub shape: Vec<String>,
    /// Why there is no plan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// PostgreSQL's whole plan as EXPLAIN gave it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub json: Option<Value>,
}

/// Reads a run's plans; `None` when it was made without `--explain`. A damaged file gives an
/// empty report that says so.
pub fn load(run: &RunDir) -> Option<PlansReport> {
    match RunPlans::read(&run.path) {
        Ok(None) => None,
        Ok(Some(p)) => Some(PlansReport {
            method: p.method,
            plans: p.plans.iter().map(view).collect(),
            notes: p.notes,
        }),
        Err(e) => Some(PlansReport {
            method: String::new(),
            plans: Vec::new(),
            notes: vec![format!("the plans cannot be read: {e}")],
        }),
    }
}

fn view(e: &PlanEntry) -> PlanView {
    let ms = |k: &str| {
        e.json
            .as_ref()
            .and_then(|j| j.get(k))
            .and_then(Value::as_f64)
    };
    let (tree, shape) = match (&e.json, e.lines.is_empty()) {
        (Some(j), _) => {
            let (mut tree, mut shape) = (Vec::new(), Vec::new());
            if let Some(root) = j.get("Plan") {
                walk(root, 0, &mut tree, &mut shape);
            }
            (tree, shape)
        }
        (None, false) => (e.lines.clone(), e.lines.clone()),
        (None, true) => (Vec::new(), Vec::new()),
    };
    PlanView {
        event: e.event.clone(),
        sql: e.sql.clone(),
        params: e.params.clone(),
        taken_s: e.taken_ns as f64 / 1e9,
        rolled_back: e.rolled_back,
        planning_ms: ms("Planning Time"),
        execution_ms: ms("Execution Time"),
        tree,
        shape,
        error: e.error.clone(),
        json: e.json.clone(),
    }
}

/// One PostgreSQL plan node and its children: its line with figures, and its shape.
fn walk(node: &Value, depth: usize, tree: &mut Vec<String>, shape: &mut Vec<String>) {
    let s = |k: &str| node.get(k).and_then(Value::as_str);
    let n = |k: &str| node.get(k).and_then(Value::as_f64);
    let mut label = s("Node Type").unwrap_or("?").to_string();
    if let Some(op) = s("Operation") {
        label.push_str(&format!(" ({op})"));
    }
    if let Some(i) = s("Index Name") {
        label.push_str(&format!(" using {i}"));
    }
    if let Some(r) = s("Relation Name") {
        label.push_str(&format!(" on {r}"));
    }
    let indent = "  ".repeat(depth);
    shape.push(format!("{indent}{label}"));
    let mut figures = Vec::new();
    if let (Some(rows), Some(loops)) = (n("Actual Rows"), n("Actual Loops")) {
        figures.push(format!("actual rows={rows} loops={loops}"));
    }
    if let Some(t) = n("Actual Total Time") {
        figures.push(format!("{t:.3} ms"));
    }
    let blocks: Vec<String> = [
        ("Shared Hit Blocks", "hit"),
        ("Shared Read Blocks", "read"),
        ("Shared Dirtied Blocks", "dirtied"),
        ("Shared Written Blocks", "written"),
        ("Temp Read Blocks", "temp read"),
        ("Temp Written Blocks", "temp written"),
    ]
    .iter()
    .filter_map(|(k, short)| {
        let v = n(k)?;
        // hit and read always (the point of BUFFERS); the others when there are any.
        (v > 0.0 || *short == "hit" || *short == "read").then(|| format!("{short}={v}"))
    })
    .collect();
    if !blocks.is_empty() {
        figures.push(format!("buffers {}", blocks.join(" ")));
    }
    let figures = match figures.is_empty() {
        true => String::new(),
        false => format!("  ({})", figures.join(", ")),
    };
    tree.push(format!("{indent}{label}{figures}"));
    if let Some(Value::Array(children)) = node.get("Plans") {
        for c in children {
            walk(c, depth + 1, tree, shape);
        }
    }
}

/// Appends `report`'s plans section.
pub fn push_report_text(out: &mut String, p: &PlansReport) {
    out.push_str(&format!(
        "\nplans ({}):\n",
        match p.method.is_empty() {
            true => "--explain",
            false => &p.method,
        }
    ));
    for v in &p.plans {
        push_plan(out, v, "  ");
    }
    if p.plans.is_empty() {
        out.push_str("  none taken\n");
    }
    for n in &p.notes {
        out.push_str(&format!("  note: {}\n", one_line(n)));
    }
}

fn push_plan(out: &mut String, v: &PlanView, indent: &str) {
    let params = match v.params.is_empty() {
        true => String::new(),
        false => format!("  [{}]", v.params.join(", ")),
    };
    out.push_str(&format!(
        "{indent}{}: {}{params}\n",
        one_line(&v.event),
        one_line(&v.sql)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    ));
    let mut when = format!("taken at {:.3} s", v.taken_s);
    if let (Some(p), Some(e)) = (v.planning_ms, v.execution_ms) {
        when.push_str(&format!("; planning {p:.3} ms, execution {e:.3} ms"));
    }
    if v.rolled_back {
        when.push_str("; executed in a transaction rolled back");
    }
    out.push_str(&format!("{indent}  {when}\n"));
    if let Some(e) = &v.error {
        out.push_str(&format!("{indent}  no plan: {}\n", one_line(e)));
    } else if v.tree.is_empty() {
        // SQLite plans an INSERT … VALUES without a step to show.
        out.push_str(&format!("{indent}    (a plan without steps)\n"));
    }
    for l in &v.tree {
        out.push_str(&format!("{indent}    {}\n", one_line(l)));
    }
}

/// The plans of two runs, statement by statement.
#[derive(Clone, Debug, Serialize)]
pub struct PlansComparison {
    /// One per statement (event, and place among its plans) either run explained, A's order
    /// first.
    pub plans: Vec<PlanChange>,
    /// Why there is nothing to pair (one run was made without `--explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One statement's plans in A and B.
#[derive(Clone, Debug, Serialize)]
pub struct PlanChange {
    /// The event.
    pub event: String,
    /// The statement's text (A's, when both have it).
    pub sql: String,
    /// True when both runs have a plan and their shapes differ.
    pub changed: bool,
    /// A's plan, when A explained the statement.
    pub a: Option<PlanView>,
    /// B's plan, when B explained it.
    pub b: Option<PlanView>,
}

/// Pairs the plans of A and B by event (and place among the event's plans); `None` when neither
/// run has plans.
pub fn compare(a: Option<&PlansReport>, b: Option<&PlansReport>) -> Option<PlansComparison> {
    let note = match (a, b) {
        (None, None) => return None,
        (Some(_), None) => Some("only A was run with --explain: B has no plans".to_string()),
        (None, Some(_)) => Some("only B was run with --explain: A has no plans".to_string()),
        (Some(_), Some(_)) => None,
    };
    let empty = Vec::new();
    let (pa, pb) = (
        a.map_or(&empty, |p| &p.plans),
        b.map_or(&empty, |p| &p.plans),
    );
    // A statement is its event and its place among the event's plans, as the run took them
    // (the text may inline values that differ between runs).
    let (ka, kb) = (keys(pa), keys(pb));
    let find = |keys: &[(String, usize)], k: &(String, usize)| keys.iter().position(|x| x == k);
    let mut plans: Vec<PlanChange> = pa
        .iter()
        .zip(&ka)
        .map(|(x, k)| {
            let y = find(&kb, k).map(|j| &pb[j]);
            PlanChange {
                event: x.event.clone(),
                sql: x.sql.clone(),
                changed: y
                    .is_some_and(|y| x.error.is_none() && y.error.is_none() && x.shape != y.shape),
                a: Some(x.clone()),
                b: y.cloned(),
            }
        })
        .collect();
    plans.extend(
        pb.iter()
            .zip(&kb)
            .filter(|(_, k)| find(&ka, k).is_none())
            .map(|(y, _)| PlanChange {
                event: y.event.clone(),
                sql: y.sql.clone(),
                changed: false,
                a: None,
                b: Some(y.clone()),
            }),
    );
    Some(PlansComparison { plans, note })
}

/// Each plan's event and place among that event's plans.
fn keys(plans: &[PlanView]) -> Vec<(String, usize)> {
    let mut seen: std::collections::HashMap<&str, usize> = Default::default();
    plans
        .iter()
        .map(|p| {
            let n = seen.entry(&p.event).or_default();
            *n += 1;
            (p.event.clone(), *n - 1)
        })
        .collect()
}

/// Appends `compare`'s plans section: a line per statement, both plans where the shape changed.
pub fn push_compare_text(out: &mut String, c: &PlansComparison) {
    out.push_str("\nplans:\n");
    if let Some(n) = &c.note {
        out.push_str(&format!("  {n}\n"));
    }
    for p in &c.plans {
        let head = format!(
            "{}: {}",
            one_line(&p.event),
            one_line(&p.sql)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        );
        let verdict = match (&p.a, &p.b) {
            (Some(_), None) => "only in A",
            (None, Some(_)) => "only in B",
            _ if p.changed => "PLAN CHANGED",
            (Some(a), Some(b)) if a.error.is_some() || b.error.is_some() => {
                "not compared (a side has no plan)"
            }
            _ => "same plan",
        };
        out.push_str(&format!("  {verdict}: {head}\n"));
        if p.changed {
            for (label, v) in [("A", &p.a), ("B", &p.b)] {
                if let Some(v) = v {
                    out.push_str(&format!("    {label}:\n"));
                    for l in &v.tree {
                        out.push_str(&format!("      {}\n", one_line(l)));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pg(node_type: &str, index: Option<&str>, rows: u64, ms: f64) -> PlanEntry {
        let mut node = serde_json::json!({
            "Node Type": node_type, "Relation Name": "t", "Alias": "t",
            "Actual Rows": rows, "Actual Loops": 1, "Actual Total Time": ms,
            "Total Cost": 8.3, "Shared Hit Blocks": 3, "Shared Read Blocks": 1,
        });
        if let Some(i) = index {
            node["Index Name"] = i.into();
        }
        PlanEntry {
            event: "lookup".into(),
            sql: "SELECT pad FROM t WHERE id = $1".into(),
            params: vec!["7".into()],
            rolled_back: true,
            json: Some(serde_json::json!({
                "Plan": node, "Planning Time": 0.1, "Execution Time": ms,
            })),
            ..PlanEntry::default()
        }
    }

    fn report(e: PlanEntry) -> PlansReport {
        PlansReport {
            method: "EXPLAIN".into(),
            plans: vec![view(&e)],
            notes: vec![],
        }
    }

    #[test]
    fn a_pg_plan_shows_its_nodes_with_figures_and_compares_by_shape() {
        let idx = report(pg("Index Scan", Some("t_pkey"), 1, 0.02));
        let v = &idx.plans[0];
        assert_eq!(v.shape, ["Index Scan using t_pkey on t"]);
        assert_eq!(
            v.tree,
            ["Index Scan using t_pkey on t  (actual rows=1 loops=1, 0.020 ms, buffers hit=3 read=1)"]
        );
        let mut text = String::new();
        push_report_text(&mut text, &idx);
        assert!(
            text.contains("lookup: SELECT pad FROM t WHERE id = $1  [7]"),
            "{text}"
        );
        assert!(
            text.contains("executed in a transaction rolled back"),
            "{text}"
        );

        // Other timings and row counts: the same plan.
        let slower = report(pg("Index Scan", Some("t_pkey"), 1, 9.5));
        let c = compare(Some(&idx), Some(&slower)).unwrap();
        assert!(!c.plans[0].changed);
        let seq = report(pg("Seq Scan", None, 1, 3.0));
        let c = compare(Some(&idx), Some(&seq)).unwrap();
        assert!(c.plans[0].changed);
        let mut text = String::new();
        push_compare_text(&mut text, &c);
        assert!(text.contains("PLAN CHANGED: lookup:"), "{text}");
        assert!(
            text.contains("A:\n      Index Scan using t_pkey on t"),
            "{text}"
        );
        assert!(text.contains("B:\n      Seq Scan on t"), "{text}");
        // A text that inlines other values is the same statement: paired, same plan.
        let mut other = pg("Index Scan", Some("t_pkey"), 1, 0.02);
        other.sql = "SELECT pad FROM t WHERE id = 8".into();
        let c = compare(Some(&idx), Some(&report(other))).unwrap();
        assert_eq!(c.plans.len(), 1);
        assert!(c.plans[0].b.is_some() && !c.plans[0].changed);
        let c = compare(Some(&idx), None).unwrap();
        assert!(c.note.unwrap().contains("only A"));
        assert!(compare(None, None).is_none());
    }
}
