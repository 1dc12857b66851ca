//! `dbscope ab --a 'ARGS…' --b 'ARGS…'`: two run plans alternated until the difference is decided.
//!
//! Each round runs A and B (ABBA order by default), each an ordinary `dbscope run` (this binary,
//! as a child process) into a directory beside the A/B run, so every round is in the runs
//! directory's catalogue; the round's figure is read from there. After each round from
//! `--min-rounds` on, `dbscope_core::stats::sequential` gives the interval of `ln(B/A)` at that
//! look's alpha-spending level, and the first decision stops the sequence. The A/B run itself is a
//! run directory (source `ab`, no events) with `ab.json` and counters section `ab` (the rounds and
//! the verdict) that `report` prints and `report --html` plots.

pub mod args;

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use anyhow::anyhow;
use clap::Parser;
use dbscope_core::catalog::{self, Entry};
use dbscope_core::redact::redact;
use dbscope_core::stats::sequential::{decide, Decision, Design};
use dbscope_core::{
    Column, Counter, CounterSection, CounterTable, CounterValue, EventWriter, Manifest, Outcome,
    RunCounters, RunDir, WorkloadInfo,
};
use serde::Serialize;

use crate::args::{Cli, Command};
use crate::compare::args::{Condition, Metric};
use crate::exit::{Exit, EXIT_FAILED, EXIT_GATE, EXIT_INTERRUPTED, EXIT_UNDECIDED, EXIT_USAGE};
use args::AbArgs;

/// Counters section key of an A/B run (the HTML report plots it).
pub const SECTION: &str = dbscope_analysis::html::AB_SECTION;

/// Splits a plan's words as a shell would for simple cases: whitespace separates, '…' and "…"
/// quote, a backslash escapes the next character.
pub fn split_words(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') | (None, '\\') => match chars.next() {
                Some(n) => {
                    cur.push(n);
                    in_word = true;
                }
                None => return Err("a backslash at the end".into()),
            },
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if let Some(q) = quote {
        return Err(format!("an unclosed {q}"));
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

/// A plan's words, checked: they parse as `dbscope run …` and name no `--out`.
fn plan_words(side: &str, text: &str) -> Result<Vec<String>, Exit> {
    let usage = |m: String| Exit(EXIT_USAGE, anyhow!("--{side}: {m}"));
    let mut words = split_words(text).map_err(usage)?;
    if words.first().map(String::as_str) == Some("run") {
        words.remove(0);
    }
    if words.is_empty() {
        return Err(usage("no workload; e.g. --a 'commit --ops 2000'".into()));
    }
    if words
        .iter()
        .any(|w| w == "--out" || w == "-o" || w.starts_with("--out="))
    {
        return Err(usage(
            "remove --out: ab names each round's run directory (see --out of ab)".into(),
        ));
    }
    let argv = ["dbscope", "run"]
        .into_iter()
        .map(String::from)
        .chain(words.iter().cloned());
    match Cli::try_parse_from(argv) {
        Ok(Cli {
            command: Command::Run(_),
        }) => Ok(words),
        Ok(_) => Err(usage("not a run".into())),
        Err(e) => {
            let text = e.to_string();
            let first = text.lines().next().unwrap_or_default();
            Err(usage(format!(
                "{} (the words of a `dbscope run`)",
                first.strip_prefix("error: ").unwrap_or(first)
            )))
        }
    }
}

/// One run of one round.
#[derive(Clone, Debug, Serialize)]
pub struct RoundRun {
    /// The run directory (beside the A/B run).
    pub run: String,
    /// Its headline figures, as catalogued.
    pub p50_ms: Option<f64>,
    /// p99, ms.
    pub p99_ms: Option<f64>,
    /// Successful operations per second.
    pub throughput: Option<f64>,
}

impl RoundRun {
    fn figure(&self, name: &str) -> Option<f64> {
        match name {
            "p50" => self.p50_ms,
            "p99" => self.p99_ms,
            "throughput" => self.throughput,
            _ => None,
        }
        .filter(|v| v.is_finite() && *v > 0.0)
    }
}

/// One round: A's run and B's, their order, and the look after it.
#[derive(Clone, Debug, Serialize)]
pub struct Round {
    /// 1, 2, …
    pub round: usize,
    /// `AB` or `BA`.
    pub order: String,
    /// A's run.
    pub a: RoundRun,
    /// B's run.
    pub b: RoundRun,
    /// B/A − 1 of the figure in this round.
    pub change: f64,
    /// The interval of B/A − 1 at this look (none before --min-rounds).
    pub low: Option<f64>,
    /// Upper end.
    pub high: Option<f64>,
    /// The error level this look spent.
    pub level: f64,
}

/// A `--fail-if` condition judged on the rounds.
#[derive(Clone, Debug, Serialize)]
pub struct Gate {
    /// As written.
    pub condition: String,
    /// B/A − 1 (geometric mean over the rounds).
    pub change: Option<f64>,
    /// The interval at the last look.
    pub low: Option<f64>,
    /// Upper end.
    pub high: Option<f64>,
    /// True when the whole interval lies beyond the threshold.
    pub holds: bool,
    /// Why it could not be judged.
    pub note: Option<String>,
}

/// The A/B run's result (`ab.json`, `--json`).
#[derive(Clone, Debug, Serialize)]
pub struct AbResult {
    /// The A/B run directory.
    pub dir: String,
    /// Plan A's words (secrets redacted).
    pub a: String,
    /// Plan B's words.
    pub b: String,
    /// The figure compared.
    pub figure: String,
    /// `abba` or `abab`.
    pub order: String,
    /// The confidence of the whole sequence.
    pub confidence: f64,
    /// First and last look.
    pub min_rounds: usize,
    /// Last look.
    pub max_rounds: usize,
    /// The equivalence band (±), if given.
    pub equivalence: Option<f64>,
    /// The rounds run.
    pub rounds: Vec<Round>,
    /// `B slower`, `B faster`, `no difference larger than X%`, `undecided`, `failed`, `interrupted`.
    pub verdict: String,
    /// Machine form: `slower`, `faster`, `equivalent`, `undecided`, `failed`, `interrupted`.
    pub decision: String,
    /// B/A − 1 over the rounds (geometric mean), when two rounds were run.
    pub change: Option<f64>,
    /// The last look's interval.
    pub low: Option<f64>,
    /// Upper end.
    pub high: Option<f64>,
    /// Why the sequence ended early, when a round failed.
    pub failure: Option<String>,
    /// The `--fail-if` conditions judged.
    pub gate: Vec<Gate>,
    /// The exit code.
    pub exit_code: u8,
}

/// Runs one round's run as a child `dbscope run … --out DIR --quiet`; its code when it failed.
fn run_one(words: &[String], out: &Path) -> Result<(), (u8, String)> {
    let exe = std::env::current_exe().map_err(|e| (EXIT_FAILED, format!("dbscope itself: {e}")))?;
    let output = std::process::Command::new(exe)
        .arg("run")
        .args(words)
        .arg("--out")
        .arg(out)
        .arg("--quiet")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| (EXIT_FAILED, format!("cannot start dbscope run: {e}")))?;
    if output.status.success() {
        return Ok(());
    }
    let code = output
        .status
        .code()
        .map(|c| c.clamp(1, 255) as u8)
        .unwrap_or(EXIT_INTERRUPTED);
    let err = String::from_utf8_lossy(&output.stderr);
    let last = err
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("(no message)")
        .trim();
    let last = last.strip_prefix("dbscope: error: ").unwrap_or(last);
    Err((code, format!("{}: {}", out.display(), redact(last))))
}

/// A round run's figures: its catalogue entry, or computed from the run if the catalogue lacks it.
fn figures(runs: &Path, dir: &Path) -> anyhow::Result<RoundRun> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let e: Entry = match catalog::get(runs, &name).ok().flatten() {
        Some(e) if !e.is_incomplete() => e,
        _ => dbscope_core::run::catalog_entry(&RunDir::open(dir)?)?,
    };
    Ok(RoundRun {
        run: name,
        p50_ms: e.p50_ms,
        p99_ms: e.p99_ms,
        throughput: e.throughput,
    })
}

/// A share as a percentage without binary noise: 0.07 → `7`, 0.035 → `3.5`, 0.999 → `99.9`.
fn share(x: f64) -> String {
    format!("{}", (x * 100.0 * 1e6).round() / 1e6)
}

fn pct(x: f64) -> String {
    format!("{:+.2}%", x * 100.0)
}

/// The interval of B/A − 1 at look `d.len()`: (change, low, high).
fn look(design: &Design, d: &[f64]) -> Option<(f64, f64, f64)> {
    design
        .interval(d)
        .map(|(m, l, h)| (m.exp_m1(), l.exp_m1(), h.exp_m1()))
}

/// The figure a `--fail-if` metric names, or why ab cannot judge it.
fn gate_figure(c: &Condition) -> Result<&'static str, String> {
    match c.metric {
        Metric::Quantile(p) if (p - 0.5).abs() < 1e-12 => Ok("p50"),
        Metric::Quantile(p) if (p - 0.99).abs() < 1e-12 => Ok("p99"),
        Metric::Throughput => Ok("throughput"),
        _ => Err(format!(
            "--fail-if {:?}: ab judges p50, p99 and throughput (the catalogued figures of each \
             round)",
            c.text
        )),
    }
}

pub fn cmd_ab(a: AbArgs) -> Result<u8, Exit> {
    let words_a = plan_words("a", &a.a)?;
    let words_b = plan_words("b", &a.b)?;
    let alpha = 1.0 - a.confidence;
    let design =
        Design::new(alpha, a.min_rounds, a.max_rounds).map_err(|e| Exit(EXIT_USAGE, anyhow!(e)))?;
    let conditions = a.fail_if.as_ref().map(|c| c.0.clone()).unwrap_or_default();
    for c in &conditions {
        gate_figure(c).map_err(|e| Exit(EXIT_USAGE, anyhow!(e)))?;
    }
    let out = match &a.out {
        Some(o) => o.clone(),
        None => crate::common::default_run_dir("ab")?,
    };
    let runs = catalog::runs_dir_of(&out);
    let base = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .ok_or_else(|| anyhow!("{}: not a directory name", out.display()))?;
    let (shown_a, shown_b) = (redact(&words_a.join(" ")), redact(&words_b.join(" ")));
    let mut params = std::collections::BTreeMap::new();
    params.insert("a".to_string(), serde_json::json!(shown_a));
    params.insert("b".to_string(), serde_json::json!(shown_b));
    params.insert("figure".to_string(), serde_json::json!(a.figure));
    params.insert("order".to_string(), serde_json::json!(a.order));
    params.insert("confidence".to_string(), serde_json::json!(a.confidence));
    params.insert("min_rounds".to_string(), serde_json::json!(a.min_rounds));
    params.insert("max_rounds".to_string(), serde_json::json!(a.max_rounds));
    params.insert("equivalence".to_string(), serde_json::json!(a.equivalence));
    let mut manifest = Manifest::new(
        "ab",
        WorkloadInfo {
            name: "ab".into(),
            params,
        },
        0,
    );
    manifest.command_line = crate::common::redacted_command_line();
    let mut run = RunDir::create(&out, manifest)?;
    // No events of its own: the rounds are runs of their own. An empty event file keeps every
    // reader of runs happy.
    EventWriter::create(
        &run.path.join(dbscope_core::files::EVENTS_FILE),
        Default::default(),
    )?;
    let stop = crate::common::stop_on_ctrl_c();

    let band = a
        .equivalence
        .map(|e| ((1.0 - e).ln().abs(), (1.0 + e).ln()));
    let mut stdout = std::io::stdout().lock();
    let text = !a.json && !a.markdown;
    if text {
        writeln!(
            stdout,
            "A/B {base}: {} of the headline event, {} order, {}% confidence over all looks \
             (rounds {}..{})\n  A: {shown_a}\n  B: {shown_b}",
            a.figure,
            a.order.to_uppercase(),
            share(a.confidence),
            a.min_rounds,
            a.max_rounds
        )?;
    }
    let mut rounds: Vec<Round> = Vec::new();
    let mut logs: Vec<f64> = Vec::new();
    let mut decision = Decision::Continue;
    let mut failure: Option<(u8, String)> = None;
    for k in 1..=a.max_rounds {
        let ab_first = a.order == "abab" || k % 2 == 1;
        let order = if ab_first { ["a", "b"] } else { ["b", "a"] };
        let mut got: [Option<RoundRun>; 2] = [None, None];
        for side in order {
            if stop.is_set() {
                failure = Some((EXIT_INTERRUPTED, "interrupted".into()));
                break;
            }
            let dir = runs.join(format!("{base}-{k:02}{side}"));
            let words = if side == "a" { &words_a } else { &words_b };
            if let Err(f) = run_one(words, &dir) {
                failure = Some(f);
                break;
            }
            match figures(&runs, &dir) {
                Ok(r) if r.figure(&a.figure).is_some() => {
                    got[usize::from(side == "b")] = Some(r);
                }
                Ok(_) => {
                    failure = Some((
                        EXIT_FAILED,
                        format!(
                            "{}: no {} figure (no successful measured operation?)",
                            dir.display(),
                            a.figure
                        ),
                    ));
                    break;
                }
                Err(e) => {
                    failure = Some((EXIT_FAILED, format!("{}: {e}", dir.display())));
                    break;
                }
            }
        }
        let (Some(ra), Some(rb)) = (got[0].take(), got[1].take()) else {
            break;
        };
        let (fa, fb) = (
            ra.figure(&a.figure).unwrap_or(f64::NAN),
            rb.figure(&a.figure).unwrap_or(f64::NAN),
        );
        logs.push((fb / fa).ln());
        let l = look(&design, &logs);
        let round = Round {
            round: k,
            order: if ab_first { "AB" } else { "BA" }.into(),
            a: ra,
            b: rb,
            change: fb / fa - 1.0,
            low: l.map(|x| x.1),
            high: l.map(|x| x.2),
            level: design.level(k),
        };
        if text {
            writeln!(
                stdout,
                "round {k:>2} {}  A {:>10}  B {:>10}  B/A {:>8}{}",
                round.order,
                format_figure(&a.figure, fa),
                format_figure(&a.figure, fb),
                pct(round.change),
                match l {
                    Some((c, lo, hi)) => format!(
                        "   so far {} [{}, {}] at level {:.4}",
                        pct(c),
                        pct(lo),
                        pct(hi),
                        round.level
                    ),
                    None => String::new(),
                }
            )?;
            stdout.flush()?;
        }
        rounds.push(round);
        if let Some((_, lo, hi)) = design.interval(&logs) {
            decision = decide(lo, hi, band);
            if decision != Decision::Continue {
                break;
            }
        }
    }

    let last = look(&design, &logs);
    let latency = a.figure != "throughput";
    let (decision_key, mut verdict) = match (&failure, decision) {
        (Some((c, _)), _) if *c == EXIT_INTERRUPTED => ("interrupted", "interrupted".to_string()),
        (Some(_), _) => ("failed", format!("failed in round {}", rounds.len() + 1)),
        (None, Decision::Higher) if latency => ("slower", "B slower".to_string()),
        (None, Decision::Higher) => ("faster", "B faster".to_string()),
        (None, Decision::Lower) if latency => ("faster", "B faster".to_string()),
        (None, Decision::Lower) => ("slower", "B slower".to_string()),
        (None, Decision::Equivalent) => {
            let mut v = format!(
                "no difference larger than {}%",
                share(a.equivalence.unwrap_or(0.0))
            );
            // The interval may also exclude 0: a real shift, smaller than the band.
            let within = match last {
                Some((_, lo, _)) if lo > 0.0 => Some(latency),
                Some((_, _, hi)) if hi < 0.0 => Some(!latency),
                _ => None,
            };
            if let Some(slower) = within {
                let which = if slower { "slower" } else { "faster" };
                v.push_str(&format!(" (B {which}, by less than that)"));
            }
            ("equivalent", v)
        }
        (None, Decision::Continue) => (
            "undecided",
            format!("undecided after {} rounds", rounds.len()),
        ),
    };
    if let Some((c, lo, hi)) = last {
        verdict.push_str(&format!(
            ": {} {} [{}, {}]",
            a.figure,
            pct(c),
            pct(lo),
            pct(hi)
        ));
    }

    // The gate: each condition's figure over the same rounds, at the last look's level.
    let gate: Vec<Gate> = conditions
        .iter()
        .map(|c| {
            let fig = gate_figure(c).unwrap_or("p50");
            let d: Vec<f64> = rounds
                .iter()
                .map(|r| match (r.a.figure(fig), r.b.figure(fig)) {
                    (Some(x), Some(y)) => (y / x).ln(),
                    _ => f64::NAN,
                })
                .collect();
            let mut g = Gate {
                condition: c.text.clone(),
                change: None,
                low: None,
                high: None,
                holds: false,
                note: None,
            };
            match look(&design, &d) {
                Some((m, lo, hi)) => {
                    (g.change, g.low, g.high) = (Some(m), Some(lo), Some(hi));
                    g.holds = if c.above {
                        lo > c.threshold
                    } else {
                        hi < c.threshold
                    };
                }
                None => {
                    g.note = Some(format!(
                        "not judged: {} rounds with a {fig} figure, the first look is at {}",
                        d.iter().filter(|x| x.is_finite()).count(),
                        a.min_rounds
                    ))
                }
            }
            g
        })
        .collect();
    let gate_failed = gate.iter().any(|g| g.holds);
    let exit_code = match &failure {
        Some((c, _)) => *c,
        None if !conditions.is_empty() && gate_failed => EXIT_GATE,
        None if !conditions.is_empty() => 0,
        None if decision == Decision::Continue => EXIT_UNDECIDED,
        None => 0,
    };
    let result = AbResult {
        dir: out.display().to_string(),
        a: shown_a,
        b: shown_b,
        figure: a.figure.clone(),
        order: a.order.clone(),
        confidence: a.confidence,
        min_rounds: a.min_rounds,
        max_rounds: a.max_rounds,
        equivalence: a.equivalence,
        rounds,
        verdict,
        decision: decision_key.into(),
        change: last.map(|x| x.0),
        low: last.map(|x| x.1),
        high: last.map(|x| x.2),
        failure: failure.as_ref().map(|f| f.1.clone()),
        gate,
        exit_code,
    };

    // The A/B run: ab.json, its counters section, and the final manifest.
    let json = serde_json::to_string_pretty(&result)?;
    dbscope_core::atomic::write_atomic(&out.join("ab.json"), format!("{json}\n").as_bytes())?;
    let mut counters = RunCounters::default();
    counters.put(section(&result));
    counters.write(&out)?;
    run.manifest.outcome = match decision_key {
        "interrupted" => Outcome::Interrupted,
        "failed" => Outcome::Failed,
        _ => Outcome::Complete,
    };
    run.manifest.outcome_detail = result.failure.clone();
    run.manifest.ended_utc = Some(chrono::Utc::now());
    run.manifest.events_written = Some(0);
    run.save_manifest()?;

    if a.json {
        writeln!(stdout, "{json}")?;
    } else if a.markdown {
        write!(stdout, "{}", render_markdown(&result))?;
    } else {
        writeln!(stdout, "{}", result.verdict)?;
        if let Some(f) = &result.failure {
            writeln!(stdout, "stopped: {f}")?;
        }
        for g in &result.gate {
            match (&g.note, g.change, g.low, g.high) {
                (None, Some(c), Some(lo), Some(hi)) => writeln!(
                    stdout,
                    "  {} {}: {} [{}, {}]",
                    if g.holds { "HELD" } else { "ok  " },
                    g.condition,
                    pct(c),
                    pct(lo),
                    pct(hi)
                )?,
                _ => writeln!(
                    stdout,
                    "  ok   {}: {}",
                    g.condition,
                    g.note.as_deref().unwrap_or("")
                )?,
            }
        }
        if !result.gate.is_empty() {
            writeln!(
                stdout,
                "gate {} (exit {})",
                if gate_failed { "FAILED" } else { "passed" },
                exit_code
            )?;
        }
        writeln!(
            stdout,
            "recorded in {}; see: dbscope report {} --html ab.html",
            out.display(),
            out.display()
        )?;
    }
    if let Some((code, msg)) = failure {
        if code != EXIT_INTERRUPTED {
            eprintln!("dbscope: error: A/B stopped: {msg}");
        }
    }
    Ok(exit_code)
}

/// One paragraph for a CI job to post: the verdict, its interval, the gate.
fn render_markdown(r: &AbResult) -> String {
    let held: Vec<&Gate> = r.gate.iter().filter(|g| g.holds).collect();
    let head = match (r.gate.is_empty(), held.is_empty(), r.decision.as_str()) {
        (_, _, "failed" | "interrupted") => "⚠️ **dbscope ab: no verdict**",
        (false, false, _) => "❌ **dbscope ab: regression**",
        (false, true, _) => "✅ **dbscope ab: no regression**",
        (true, _, "undecided") => "❔ **dbscope ab: undecided**",
        (true, _, _) => "**dbscope ab**",
    };
    let gate: Vec<String> = r
        .gate
        .iter()
        .map(|g| match (g.change, g.low, g.high) {
            (Some(c), Some(lo), Some(hi)) => format!(
                "`{}`: {} ({} … {}){}",
                g.condition,
                pct(c),
                pct(lo),
                pct(hi),
                if g.holds { " held" } else { "" }
            ),
            _ => format!("`{}`: {}", g.condition, g.note.as_deref().unwrap_or("")),
        })
        .collect();
    format!(
        "{head} — {} over {} rounds ({}, {}% confidence over all looks), B `{}` against A `{}`.{}\n",
        r.verdict,
        r.rounds.len(),
        r.order.to_uppercase(),
        share(r.confidence),
        r.b,
        r.a,
        if gate.is_empty() {
            String::new()
        } else {
            format!(" {}.", gate.join("; "))
        }
    )
}

fn format_figure(figure: &str, v: f64) -> String {
    if figure == "throughput" {
        format!("{v:.1}/s")
    } else {
        format!("{v:.3}ms")
    }
}

/// Counters section `ab`: the verdict and the rounds, for `report` (and its HTML plot).
fn section(r: &AbResult) -> CounterSection {
    let unit = if r.figure == "throughput" { "/s" } else { "ms" };
    let value = |rr: &RoundRun| CounterValue::float(rr.figure(&r.figure));
    let rows = r
        .rounds
        .iter()
        .map(|x| {
            vec![
                CounterValue::count(x.round as u64),
                CounterValue::Text(x.order.clone()),
                value(&x.a),
                value(&x.b),
                CounterValue::float(Some(x.change * 100.0)),
                CounterValue::float(x.low.map(|v| v * 100.0)),
                CounterValue::float(x.high.map(|v| v * 100.0)),
                CounterValue::Text(x.a.run.clone()),
                CounterValue::Text(x.b.run.clone()),
            ]
        })
        .collect();
    let mut notes = vec![format!("A: {}", r.a), format!("B: {}", r.b)];
    if let Some(f) = &r.failure {
        notes.push(format!("stopped: {f}"));
    }
    CounterSection {
        key: SECTION.into(),
        title: format!(
            "A/B: {} of the headline event, {} order — {}",
            r.figure,
            r.order.to_uppercase(),
            r.verdict
        ),
        final_counts: true,
        counters: vec![
            Counter::new(
                "rounds",
                "rounds",
                CounterValue::count(r.rounds.len() as u64),
                "",
            ),
            Counter::new(
                "change_pct",
                "B/A − 1",
                CounterValue::float(r.change.map(|v| v * 100.0)),
                "%",
            )
            .decimals(2),
            Counter::new(
                "low_pct",
                "interval low",
                CounterValue::float(r.low.map(|v| v * 100.0)),
                "%",
            )
            .decimals(2),
            Counter::new(
                "high_pct",
                "interval high",
                CounterValue::float(r.high.map(|v| v * 100.0)),
                "%",
            )
            .decimals(2),
            Counter::new(
                "confidence_pct",
                "confidence (all looks)",
                CounterValue::float(Some(r.confidence * 100.0)),
                "%",
            )
            .decimals(1),
            Counter::new(
                "decision",
                "decision",
                CounterValue::Text(r.decision.clone()),
                "",
            ),
        ],
        tables: vec![CounterTable {
            key: "rounds".into(),
            title: "rounds".into(),
            columns: vec![
                Column::new("round", "round", ""),
                Column::new("order", "order", ""),
                Column::new("a", "A", unit).decimals(3),
                Column::new("b", "B", unit).decimals(3),
                Column::new("change_pct", "B/A − 1", "%").decimals(2),
                Column::new("low_pct", "look low", "%").decimals(2),
                Column::new("high_pct", "look high", "%").decimals(2),
                Column::new("a_run", "A run", ""),
                Column::new("b_run", "B run", ""),
            ],
            rows,
        }],
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_print_without_binary_noise() {
        assert_eq!(share(0.07), "7");
        assert_eq!(share(0.035), "3.5");
        assert_eq!(share(0.999), "99.9");
        assert_eq!(share(0.1), "10");
    }

    #[test]
    fn words_split_like_a_shell() {
        assert_eq!(
            split_words(r#"commit --set 'a=b c' --x "d\"e" f\ g"#).unwrap(),
            ["commit", "--set", "a=b c", "--x", "d\"e", "f g"]
        );
        assert_eq!(split_words("  ").unwrap(), Vec::<String>::new());
        assert_eq!(split_words("''").unwrap(), [""]);
        assert!(split_words("'open").is_err());
        assert!(split_words("x\\").is_err());
    }

    #[test]
    fn plans_are_checked_as_runs() {
        assert_eq!(
            plan_words("a", "run commit --ops 5").unwrap(),
            ["commit", "--ops", "5"]
        );
        let e = plan_words("a", "commit --out x").unwrap_err();
        assert!(e.1.to_string().contains("remove --out"), "{}", e.1);
        let e = plan_words("b", "nosuch").unwrap_err();
        assert_eq!(e.0, EXIT_USAGE);
        assert!(e.1.to_string().starts_with("--b: "), "{}", e.1);
        assert!(plan_words("a", "").is_err());
    }
}
