//! `dbscope sweep --sessions 1,2,4 -- run WORKLOAD …` (or `-- io redo …`): a run per concurrency,
//! and the USL fit.
//!
//! The workload at each concurrency, every point an ordinary run under the sweep directory, and
//! the Universal Scalability Law fitted to the throughputs (issue 15 part 4). The sweep directory
//! is itself a run: one `point` event per point run and counters section `usl`.
//!
//! `events` is swept over its connections (the database sessions its clients share; the clients,
//! and so the offered load, stay as given) and headlined by committed events/s and commit
//! latency; `io redo` over its committer threads (`--sessions`), headlined by the MB/s its writes
//! put on the log and their latency (issue 34 item 11).
//!
//! The words after `--` are parsed once into a run plan; `dbscope_lab::sweep` runs that plan at
//! each session count (this file says how to run and read one point); the points' figures, the
//! fit, `sweep.json` and the text are `dbscope_analysis::sweep`'s.

pub mod args;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};
use clap::Parser;
use dbscope_analysis::report::{self, ReportOptions};
use dbscope_analysis::sweep::{self as sweep_lib, Headline, Point, Rate, SweepResult};
use dbscope_core::{Manifest, Outcome, Recording, RunDir, WorkloadInfo};
use dbscope_io::redo::RedoConfig;
use dbscope_lab::plan::RunPlan;
use dbscope_lab::sweep::{self, point_dir, PointRunner, SweepEnd, SweepPlan, SweepStop};

use crate::args::{Cli, Command};
use crate::common::{default_run_dir, redacted_command_line, stop_signal};
use crate::exit::{Exit, EXIT_FAILED, EXIT_USAGE};
use crate::io::args::{IoArgs, IoCommand, RedoArgs};
use crate::run::args::{RunArgs, WorkloadName};
use crate::sweep::args::SweepArgs;

/// What a sweep runs at each point.
#[derive(Debug)]
enum Swept {
    /// `run WORKLOAD …`.
    Run(Box<RunArgs>),
    /// `io redo …`.
    Redo(Box<RedoArgs>),
}

/// The plan a sweep varies: a run's, or `io redo`'s configuration and run directory.
#[derive(Clone, Debug)]
enum PointPlan {
    Run(Box<RunPlan>),
    Redo(Box<RedoConfig>, PathBuf),
}

impl SweepPlan for PointPlan {
    fn at_point(&self, sessions: u32, out: PathBuf) -> PointPlan {
        match self {
            PointPlan::Run(p) => PointPlan::Run(Box::new(p.at_point(sessions, out))),
            PointPlan::Redo(cfg, _) => PointPlan::Redo(
                Box::new(RedoConfig {
                    sessions,
                    ..(**cfg).clone()
                }),
                out,
            ),
        }
    }
}

/// The words after `--` as run or io arguments; clap's own message when they do not parse.
fn parse_run(words: &[String]) -> Result<Swept, Exit> {
    let first = words.first().map(String::as_str);
    let io = first == Some("io");
    if first != Some("run") && !(io && words.get(1).map(String::as_str) == Some("redo")) {
        return Err(anyhow!(
            "sweep runs `run WORKLOAD [args…]` or `io redo [args…]` after --; got {:?}",
            words.join(" ")
        )
        .into());
    }
    let argv = std::iter::once("dbscope".to_string()).chain(words.iter().cloned());
    let cli = Cli::try_parse_from(argv).map_err(|e| {
        let text = e.to_string();
        let first = text.lines().next().unwrap_or_default();
        let first = first.strip_prefix("error: ").unwrap_or(first);
        let rest: Vec<&str> = text
            .lines()
            .skip(1)
            .filter(|l| l.trim_start().starts_with("[possible values") || l.contains("tip:"))
            .map(str::trim)
            .collect();
        anyhow!("after --: {first} {}", rest.join(" "))
    })?;
    match cli.command {
        Command::Run(a) => Ok(Swept::Run(a)),
        Command::Io(IoArgs {
            command: IoCommand::Redo(r),
        }) => {
            if r.sub.is_some() {
                return Err(anyhow!("sweep runs `io redo`, not `io redo verify`").into());
            }
            Ok(Swept::Redo(Box::new(r)))
        }
        _ => unreachable!("the first words are `run` or `io redo`"),
    }
}

/// The workload a sweep of `swept` runs (as its name), and its seed.
fn name_and_seed(swept: &Swept) -> (&'static str, u64) {
    match swept {
        Swept::Run(r) => (crate::run::plan::workload_name(r.workload), r.seed),
        Swept::Redo(r) => ("io-redo", r.seed),
    }
}

/// What heads a sweep of `swept`, and the plan of its first point (at `n` sessions, into
/// `dir`), or why that plan cannot be built.
fn plan_of(swept: Swept, n: u32, dir: PathBuf) -> (Headline, Result<PointPlan, Exit>) {
    match swept {
        Swept::Run(mut first) => {
            // The events plan refuses --sessions: its points set their connections instead
            // (`RunPlan::with_sessions`).
            if !matches!(first.workload, WorkloadName::Events) {
                first.sessions = n;
            }
            first.out = Some(dir.clone());
            let plan = crate::run::plan::build(&first).map(|p| {
                // The first point as every other: at its sessions (events: its connections).
                PointPlan::Run(Box::new(p.at_point(n, dir)))
            });
            let headline = match (&plan, first.workload) {
                (_, WorkloadName::Events) => Headline {
                    event: dbscope_lab::workload::events::EventsWorkload::HEADLINE.to_string(),
                    rate: Rate::Counter {
                        section: "archive".into(),
                        key: "achieved_per_s".into(),
                        unit: "ev/s".into(),
                    },
                },
                (Ok(PointPlan::Run(p)), _) => Headline::event(p.workload.headline_event()),
                _ => Headline::event(""),
            };
            (headline, plan)
        }
        Swept::Redo(r) => {
            let headline = Headline {
                event: dbscope_io::redo::EV_WRITE.to_string(),
                rate: Rate::TableMax {
                    section: dbscope_io::redo::SECTION_KEY.into(),
                    table: "destinations".into(),
                    column: "mb_per_s".into(),
                    unit: "MB/s".into(),
                },
            };
            let plan = crate::io::config(&r).and_then(|cfg| {
                cfg.validate().map_err(|e| Exit(EXIT_USAGE, e.into()))?;
                // Warnings first, so they are seen before a long sweep.
                let infos = dbscope_io::redo::check_destinations(&cfg)
                    .map_err(|e| Exit(EXIT_USAGE, e.into()))?;
                for w in infos.iter().flat_map(|i| &i.warnings) {
                    eprintln!("dbscope: warning: {w}");
                }
                Ok(PointPlan::Redo(
                    Box::new(RedoConfig { sessions: n, ..cfg }),
                    dir,
                ))
            });
            (headline, plan)
        }
    }
}

pub fn cmd_sweep(a: SweepArgs) -> Result<u8, Exit> {
    let swept = parse_run(&a.run)?;
    let given_out = match &swept {
        Swept::Run(r) => r.out.is_some(),
        Swept::Redo(r) => r.out.is_some(),
    };
    if given_out {
        return Err(anyhow!(
            "--out after --: the sweep places each point's run itself (use sweep --out)"
        )
        .into());
    }
    if a.run
        .iter()
        .any(|w| w == "--sessions" || w == "-s" || w.starts_with("--sessions="))
    {
        return Err(anyhow!(
            "--sessions after --: the sweep sets each point's sessions (sweep --sessions 1,2,4)"
        )
        .into());
    }
    if let Swept::Run(r) = &swept {
        if matches!(r.workload, WorkloadName::Events) {
            check_events(r, &a)?;
        }
    }
    let (workload, seed) = name_and_seed(&swept);
    let out = match &a.out {
        Some(p) => p.clone(),
        None => default_run_dir(&format!("sweep-{workload}"))?,
    };
    if out.join(dbscope_core::run::MANIFEST_FILE).exists() {
        return Err(anyhow!(
            "{} already holds a run; choose another --out",
            out.display()
        )
        .into());
    }

    let params = BTreeMap::from([
        ("workload".to_string(), workload.into()),
        ("sessions".to_string(), serde_json::json!(a.sessions)),
        ("repeat".to_string(), a.repeat.into()),
        (
            "run".to_string(),
            serde_json::json!(a
                .run
                .iter()
                .map(|w| dbscope_core::redact::redact(w))
                .collect::<Vec<_>>()),
        ),
    ]);
    let mut manifest = Manifest::new(
        "sweep",
        WorkloadInfo {
            name: "sweep".into(),
            params,
        },
        seed,
    );
    manifest.command_line = redacted_command_line();
    let mut rec = Recording::begin(&out, manifest)?;
    let clock = rec.start_clock()?;

    // The plan every point varies, as the first point runs it; when it cannot be built, the
    // first point fails with its error.
    let (headline, base) = plan_of(swept, a.sessions[0], point_dir(&out, a.sessions[0], 1));
    let base = base.map_err(|e| at_point(e, a.sessions[0], 1));
    let headline = &headline;
    let mut runner = Points {
        json: a.json,
        headline,
    };
    let end = sweep::run(
        base,
        &a.sessions,
        a.repeat,
        &out,
        &mut rec,
        &clock,
        &mut runner,
    );
    let SweepEnd {
        mut points,
        outcome,
        detail,
    } = match end {
        Ok(end) => end,
        Err(SweepStop::NothingRan(e)) => {
            // The very first point could not start: bad input, nothing measured.
            let _ = rec.finish(Outcome::Failed, Some(format!("{:#}", e.1)));
            return Err(e);
        }
        Err(SweepStop::Error(e)) => return Err(e),
    };

    let (fit, fit_error) = sweep_lib::fit(&mut points);
    let result = SweepResult {
        workload,
        sessions: &a.sessions,
        repeat: a.repeat,
        points: &points,
        fit: fit.as_ref(),
        fit_error: fit_error.clone(),
    };
    let json = serde_json::to_string_pretty(&result).context("sweep result as JSON")?;
    dbscope_core::atomic::write_atomic(&out.join("sweep.json"), format!("{json}\n").as_bytes())?;
    rec.write_counters(sweep_lib::section(
        &points,
        fit.as_ref(),
        fit_error.as_deref(),
        headline,
    ))?;
    rec.finish(outcome, detail.clone())?;

    let mut stdout = std::io::stdout().lock();
    if a.json {
        writeln!(stdout, "{json}")?;
    } else {
        write!(
            stdout,
            "{}",
            sweep_lib::render_text(
                &out,
                workload,
                headline,
                &points,
                fit.as_ref(),
                fit_error.as_deref()
            )
        )?;
    }
    if let Some(d) = detail {
        eprintln!(
            "dbscope: sweep {}: {d}; the sweep is kept in {}",
            outcome.as_str(),
            out.display()
        );
    }
    Ok(crate::common::outcome_code(outcome))
}

/// A sweep of `events` (`r`, its run arguments): the sweep sets the connections, which never
/// outnumber the clients; one strategy per point.
fn check_events(r: &RunArgs, a: &SweepArgs) -> Result<(), Exit> {
    if r.events.connections.is_some() {
        return Err(anyhow!(
            "--connections after --: the sweep sets each point's connections (sweep --sessions 1,2,4)"
        )
        .into());
    }
    if r.events.iterations {
        return Err(anyhow!(
            "--iterations after --: each point of a sweep runs one strategy; give --strategy NAME"
        )
        .into());
    }
    let top = a.sessions.last().copied().unwrap_or(1);
    let clients = r.events.clients.unwrap_or(150);
    if top > clients {
        return Err(anyhow!(
            "sweep --sessions {top}: an events point's sessions are its connections, which serve \
             whole clients; give at least --clients {top} after --"
        )
        .into());
    }
    Ok(())
}

/// `dbscope sweep`'s side of each point: says which runs, runs it silently, reads its headline
/// figures.
struct Points<'a> {
    json: bool,
    headline: &'a Headline,
}

impl PointRunner for Points<'_> {
    type Plan = PointPlan;
    type Point = Point;
    type Error = Exit;

    fn starting(&mut self, n: u32, k: u32, dir: &Path) {
        if !self.json {
            eprintln!(
                "dbscope: sweep: {n} session(s), repeat {k}: {}",
                dir.display()
            );
        }
    }

    fn run(&mut self, plan: &PointPlan, n: u32, k: u32) -> Result<Outcome, Exit> {
        match plan {
            PointPlan::Run(p) => crate::run::run_point(p),
            PointPlan::Redo(cfg, out) => crate::io::run_redo_point(cfg, out),
        }
        .map_err(|e| at_point(e, n, k))
    }

    fn measure(&mut self, dir: &Path, n: u32, k: u32) -> Result<(Point, u64), Exit> {
        let point = read_point(dir, n, k, self.headline)?;
        let count = point.count;
        Ok((point, count))
    }

    fn stopped(&self) -> bool {
        stop_signal().is_set()
    }

    fn describe(e: &Exit) -> String {
        format!("{:#}", e.1)
    }
}

/// `e` as the error of the point at `n` sessions, repeat `k`.
fn at_point(Exit(code, e): Exit, n: u32, k: u32) -> Exit {
    Exit(
        code,
        e.context(format!("sweep point {n} session(s), repeat {k}")),
    )
}

/// The headline figures of one point run.
fn read_point(dir: &Path, sessions: u32, repeat: u32, headline: &Headline) -> Result<Point, Exit> {
    let run = RunDir::open(dir).map_err(|e| Exit(EXIT_USAGE, e.into()))?;
    let r =
        report::build(&run, &ReportOptions::default()).map_err(|e| Exit(EXIT_FAILED, e.into()))?;
    Ok(sweep_lib::point(
        &r,
        sessions,
        repeat,
        dir.display().to_string(),
        headline,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_run_needs_run_and_a_known_workload() {
        let w = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let e = parse_run(&w("commit --duration 1s"))
            .unwrap_err()
            .1
            .to_string();
        assert!(e.contains("`run WORKLOAD"), "{e}");
        let e = parse_run(&w("run nosuch")).unwrap_err().1.to_string();
        assert!(
            e.contains("after --") && e.contains("nosuch") && e.contains("commit"),
            "{e}"
        );
        match parse_run(&w("run commit --duration 1s --seed 7")) {
            Ok(Swept::Run(a)) => assert_eq!(a.seed, 7),
            _ => panic!("a run"),
        }
        match parse_run(&w("io redo --dest /tmp/x --seed 5")) {
            Ok(Swept::Redo(r)) => assert_eq!(r.seed, 5),
            _ => panic!("io redo"),
        }
        let e = parse_run(&w("io redo verify /tmp/x"))
            .unwrap_err()
            .1
            .to_string();
        assert!(e.contains("not `io redo verify`"), "{e}");
    }
}
