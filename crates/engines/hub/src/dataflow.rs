//! `--plan FILE` (issue 32 part 5, seeds 000 and 001: "writing a Pig script is like writing a SQL
//! execution plan"): a dataflow written step by step, one step a line, each naming its input, run
//! in the order written — every step's result is computed (and timed) before the next step reads
//! it, so DataFusion's optimizer works inside a step but cannot move a filter across steps.
//!
//! ```text
//! # comments and blank lines are ignored
//! o = load orders
//! f = filter o by o_orderdate < DATE '1995-03-15'
//! l = load lineitem
//! j = join f by o_orderkey, l by l_orderkey          # keys: a column or (a, b)
//! p = project j l_shipmode, o_orderpriority, l_extendedprice * (1 - l_discount) AS revenue
//! g = group p by l_shipmode aggregate count(*) AS n, sum(revenue) AS revenue
//! s = order g by revenue desc, l_shipmode
//! t = limit s 10
//! ```
//!
//! Expressions are DataFusion SQL expressions; `AS name` names one. The last step is the result.

use std::collections::{HashMap, HashSet};

use datafusion::common::{DataFusionError, JoinType, Result as DfResult};
use datafusion::logical_expr::Expr;
use datafusion::prelude::{DataFrame, SessionContext};

use crate::source::check_name;
use crate::Error;

/// A dataflow file: its name (for errors) and its steps.
#[derive(Clone, Debug, PartialEq)]
pub struct Dataflow {
    /// The file as given.
    pub file: String,
    /// The steps in order; the last is the result.
    pub steps: Vec<Step>,
}

/// One step: its line in the file, its name, what it does.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// Line number (from 1).
    pub line: usize,
    /// The name later steps use.
    pub name: String,
    /// What it does.
    pub op: Op,
}

/// What a step does.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// A table of the sources.
    Load(String),
    /// Rows of `input` where `expr` holds.
    Filter { input: String, expr: String },
    /// These expressions of `input` (Pig's FOREACH … GENERATE).
    Project { input: String, exprs: Vec<String> },
    /// Inner join of `left` and `right` on equal keys.
    Join {
        left: String,
        left_keys: Vec<String>,
        right: String,
        right_keys: Vec<String>,
    },
    /// `input` grouped by `by`, with the aggregates.
    Group {
        input: String,
        by: Vec<String>,
        aggs: Vec<String>,
    },
    /// `input` ordered by the keys (expression, ascending).
    Order {
        input: String,
        keys: Vec<(String, bool)>,
    },
    /// The first `n` rows of `input`.
    Limit { input: String, n: usize },
}

impl Op {
    /// The steps it reads.
    pub fn inputs(&self) -> Vec<&str> {
        match self {
            Op::Load(_) => vec![],
            Op::Filter { input, .. }
            | Op::Project { input, .. }
            | Op::Group { input, .. }
            | Op::Order { input, .. }
            | Op::Limit { input, .. } => vec![input],
            Op::Join { left, right, .. } => vec![left, right],
        }
    }
}

/// Splits at commas outside parentheses and quotes.
pub(crate) fn split_top(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut quote = false;
    let mut cur = String::new();
    for ch in s.chars() {
        match ch {
            '\'' => quote = !quote,
            '(' if !quote => depth += 1,
            ')' if !quote => depth -= 1,
            ',' if !quote && depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// Splits `s` at the first ` KEYWORD ` (any case) outside quotes and parentheses.
fn split_kw<'a>(s: &'a str, kw: &str) -> Option<(&'a str, &'a str)> {
    let lower = s.to_ascii_lowercase();
    let pat = format!(" {kw} ");
    let mut depth = 0i32;
    let mut quote = false;
    for (i, ch) in s.char_indices() {
        match ch {
            '\'' => quote = !quote,
            '(' if !quote => depth += 1,
            ')' if !quote => depth -= 1,
            ' ' if !quote && depth == 0 && lower[i..].starts_with(&pat) => {
                return Some((s[..i].trim(), s[i + pat.len()..].trim()));
            }
            _ => {}
        }
    }
    None
}

/// `a` or `(a, b)`.
fn keys(s: &str) -> Vec<String> {
    let s = s.trim();
    let inner = s
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or(s);
    split_top(inner)
}

/// Parses a dataflow; `file` names it in errors (with the line and what was expected).
pub fn parse_plan(text: &str, file: &str) -> Result<Vec<Step>, Error> {
    let mut steps = Vec::new();
    let mut names = HashSet::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        // A comment runs from a `#` outside quotes to the end of the line.
        let mut quote = false;
        let cut = raw
            .char_indices()
            .find(|&(_, c)| {
                if c == '\'' {
                    quote = !quote;
                }
                c == '#' && !quote
            })
            .map_or(raw.len(), |(i, _)| i);
        let body = raw[..cut].trim();
        if body.is_empty() {
            continue;
        }
        let bad = |why: &str| {
            Error::Usage(format!(
                "{file} line {line}: {why}; expected NAME = load TABLE | filter IN by EXPR | \
                 project IN EXPR, … | join A by KEYS, B by KEYS | group IN by KEYS aggregate AGG, … | \
                 order IN by EXPR [asc|desc], … | limit IN N"
            ))
        };
        let (name, rest) = body.split_once('=').ok_or_else(|| bad("no `NAME =`"))?;
        let name = name.trim().to_string();
        check_name(&name, "step name").map_err(|e| bad(&e.to_string()))?;
        let rest = rest.trim();
        let (verb, args) = rest.split_once(' ').unwrap_or((rest, ""));
        let args = args.trim();
        let need = |s: &str, what: &str| -> Result<String, Error> {
            if s.is_empty() {
                Err(bad(&format!("{verb} needs {what}")))
            } else {
                Ok(s.to_string())
            }
        };
        let op = match verb.to_ascii_lowercase().as_str() {
            "load" => Op::Load(need(args, "a table")?),
            "filter" => {
                let (input, expr) = split_kw(args, "by").ok_or_else(|| bad("filter needs `by`"))?;
                Op::Filter {
                    input: need(input, "an input")?,
                    expr: need(expr, "a condition")?,
                }
            }
            "project" => {
                let (input, exprs) = args
                    .split_once(' ')
                    .ok_or_else(|| bad("project needs expressions"))?;
                Op::Project {
                    input: input.to_string(),
                    exprs: split_top(exprs),
                }
            }
            "join" => {
                let sides = split_top(args);
                let [l, r] = &sides[..] else {
                    return Err(bad("join needs two inputs: A by KEYS, B by KEYS"));
                };
                let side = |s: &str| {
                    split_kw(s, "by")
                        .map(|(i, k)| (i.to_string(), keys(k)))
                        .ok_or_else(|| bad("each side of a join needs `by`"))
                };
                let (left, left_keys) = side(l)?;
                let (right, right_keys) = side(r)?;
                if left_keys.len() != right_keys.len() || left_keys.is_empty() {
                    return Err(bad("the two sides of a join need as many keys"));
                }
                Op::Join {
                    left,
                    left_keys,
                    right,
                    right_keys,
                }
            }
            "group" => {
                let (input, rest) = split_kw(args, "by").ok_or_else(|| bad("group needs `by`"))?;
                let (by, aggs) = split_kw(rest, "aggregate").unwrap_or((rest, ""));
                Op::Group {
                    input: need(input, "an input")?,
                    by: keys(by),
                    aggs: split_top(aggs),
                }
            }
            "order" => {
                let (input, rest) = split_kw(args, "by").ok_or_else(|| bad("order needs `by`"))?;
                let keys = split_top(rest)
                    .into_iter()
                    .map(|k| {
                        let lower = k.to_ascii_lowercase();
                        if let Some(e) = lower.strip_suffix(" desc") {
                            (k[..e.len()].trim().to_string(), false)
                        } else if let Some(e) = lower.strip_suffix(" asc") {
                            (k[..e.len()].trim().to_string(), true)
                        } else {
                            (k, true)
                        }
                    })
                    .collect();
                Op::Order {
                    input: need(input, "an input")?,
                    keys,
                }
            }
            "limit" => {
                let (input, n) = args
                    .split_once(' ')
                    .ok_or_else(|| bad("limit needs a count"))?;
                Op::Limit {
                    input: input.to_string(),
                    n: n.trim()
                        .parse()
                        .map_err(|_| bad(&format!("{n:?} is not a row count")))?,
                }
            }
            v => return Err(bad(&format!("unknown step {v:?}"))),
        };
        for i in op.inputs() {
            if !names.contains(i) {
                return Err(bad(&format!(
                    "step {name} reads {i}, which no step before it defines"
                )));
            }
        }
        if !names.insert(name.clone()) {
            return Err(bad(&format!("step {name} is defined twice")));
        }
        steps.push(Step { line, name, op });
    }
    if steps.is_empty() {
        return Err(Error::Usage(format!("{file}: no steps")));
    }
    Ok(steps)
}

/// An expression and its `AS name`, if any.
pub(crate) fn alias(e: &str) -> (&str, Option<&str>) {
    match split_kw(e, "as") {
        Some((x, a)) if !a.contains(' ') => (x, Some(a)),
        _ => (e, None),
    }
}

/// Builds one step's DataFrame from the steps before it (`dfs`, by name).
pub(crate) async fn build_step(
    ctx: &SessionContext,
    step: &Step,
    dfs: &HashMap<String, DataFrame>,
) -> DfResult<DataFrame> {
    let get = |n: &str| {
        dfs.get(n)
            .cloned()
            .ok_or_else(|| DataFusionError::Plan(format!("no step {n}")))
    };
    let expr = |df: &DataFrame, e: &str| -> DfResult<Expr> {
        let (x, a) = alias(e);
        let ex = df.parse_sql_expr(x)?;
        Ok(match a {
            Some(a) => ex.alias(a),
            None => ex,
        })
    };
    let exprs = |df: &DataFrame, es: &[String]| -> DfResult<Vec<Expr>> {
        es.iter().map(|e| expr(df, e)).collect()
    };
    match &step.op {
        Op::Load(t) => ctx.table(t.as_str()).await,
        Op::Filter { input, expr: e } => {
            let d = get(input)?;
            let ex = expr(&d, e)?;
            d.filter(ex)
        }
        Op::Project { input, exprs: es } => {
            let d = get(input)?;
            let ex = exprs(&d, es)?;
            d.select(ex)
        }
        Op::Join {
            left,
            left_keys,
            right,
            right_keys,
        } => {
            let l: Vec<&str> = left_keys.iter().map(String::as_str).collect();
            let r: Vec<&str> = right_keys.iter().map(String::as_str).collect();
            get(left)?.join(get(right)?, JoinType::Inner, &l, &r, None)
        }
        Op::Group { input, by, aggs } => {
            let d = get(input)?;
            let (g, a) = (exprs(&d, by)?, exprs(&d, aggs)?);
            d.aggregate(g, a)
        }
        Op::Order { input, keys } => {
            let d = get(input)?;
            let sort = keys
                .iter()
                .map(|(e, asc)| Ok(expr(&d, e)?.sort(*asc, !*asc)))
                .collect::<DfResult<Vec<_>>>()?;
            d.sort(sort)
        }
        Op::Limit { input, n } => get(input)?.limit(0, Some(*n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dataflow_parses_step_by_step_and_bad_lines_are_named() {
        let text = "o = load orders\n# c\nf = filter o by o_orderdate < DATE '1995-03-15' AND o_x = 'a, b'\n\
                    l = load lineitem\nj = join f by o_orderkey, l by (l_orderkey)\n\
                    g = group j by l_shipmode aggregate count(*) AS n, sum(l_tax * (1 - l_discount)) AS s\n\
                    s = order g by n desc, l_shipmode\nt = limit s 5\n";
        let steps = parse_plan(text, "p.dataflow").unwrap();
        assert_eq!(steps.len(), 7);
        assert_eq!(
            steps[1].op,
            Op::Filter {
                input: "o".into(),
                expr: "o_orderdate < DATE '1995-03-15' AND o_x = 'a, b'".into()
            }
        );
        assert_eq!(steps[3].line, 5);
        assert_eq!(
            steps[4].op,
            Op::Group {
                input: "j".into(),
                by: vec!["l_shipmode".into()],
                aggs: vec![
                    "count(*) AS n".into(),
                    "sum(l_tax * (1 - l_discount)) AS s".into()
                ]
            }
        );
        assert_eq!(
            steps[5].op,
            Op::Order {
                input: "g".into(),
                keys: vec![("n".into(), false), ("l_shipmode".into(), true)]
            }
        );
        assert_eq!(alias("count(*) AS n"), ("count(*)", Some("n")));
        for (bad, why) in [
            ("x = filter y by a > 1", "line 1: step x reads y"),
            ("a = load t\na = load u", "line 2: step a is defined twice"),
            (
                "a = load t\nb = join a by k",
                "line 2: join needs two inputs",
            ),
            (
                "a = load t\nb = limit a many",
                "line 2: \"many\" is not a row count",
            ),
            ("a = sort t", "line 1: unknown step \"sort\""),
        ] {
            let e = parse_plan(bad, "p").unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
