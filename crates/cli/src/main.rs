//! The `dbscope` binary: parses arguments and calls the library; nothing else.

mod args;
mod cmd_compare;
mod cmd_io;
mod cmd_tpch;
mod cmd_trace;
mod compare_args;
mod io_args;
mod tpch_args;
mod trace_args;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use dbscope_analysis::export::{export_run, ExportFormat};
use dbscope_analysis::report::{self, ReportOptions};
use dbscope_core::redact::redact;
use dbscope_core::StopSignal;
use dbscope_core::{Outcome, RunDir};
use dbscope_lab::db::open_target;
use dbscope_lab::runner::{self, Progress, RunConfig, RunSpec};
use dbscope_lab::workload::{CommitWorkload, Keys};
use indicatif::{ProgressBar, ProgressStyle};

use args::{Cli, Command, ExportArgs, Format, ReportArgs, RunArgs, WorkloadName};

/// Exit code for bad input (arguments, connection strings, unreadable runs).
const EXIT_USAGE: u8 = 2;
/// Exit code when the run ended as failed.
const EXIT_FAILED: u8 = 1;
/// Exit code when the run was interrupted (as a shell reports SIGINT).
const EXIT_INTERRUPTED: u8 = 130;

/// An error that should exit with a given code.
#[derive(Debug)]
struct Exit(u8, anyhow::Error);

impl<E: Into<anyhow::Error>> From<E> for Exit {
    fn from(e: E) -> Self {
        Exit(EXIT_USAGE, e.into())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(a) => cmd_run(a),
        Command::Report(a) => cmd_report(a),
        Command::Export(a) => cmd_export(a),
        Command::Compare(a) => cmd_compare::cmd_compare(a),
        Command::Import(a) => cmd_compare::cmd_import(a),
        Command::Trace(a) => cmd_trace::cmd_trace(a),
        Command::Io(a) => cmd_io::cmd_io(a),
        Command::Tpch(a) => cmd_tpch::cmd_tpch(a),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(Exit(code, e)) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            let mut msg = format!("dbscope: error: {e}");
            for cause in e.chain().skip(1) {
                // Many errors already include their source's text (e.g. "path: No such file").
                let cause = cause.to_string();
                if !msg.contains(&cause) {
                    msg.push_str(&format!(": {cause}"));
                }
            }
            eprintln!("{}", redact(&msg));
            ExitCode::from(code)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn stop_signal() -> &'static Arc<StopSignal> {
    static STOP: OnceLock<Arc<StopSignal>> = OnceLock::new();
    STOP.get_or_init(|| Arc::new(StopSignal::new()))
}

fn cmd_run(a: RunArgs) -> Result<u8, Exit> {
    let out = match &a.out {
        Some(p) => p.clone(),
        None => default_run_dir(match a.workload {
            WorkloadName::Commit => "commit",
            WorkloadName::TpchQ1 => "tpch-q1",
        })?,
    };
    let created_out = !out.exists();
    let spec = match (&a.target, std::env::var("DATABASE_URL")) {
        (Some(t), _) => t.clone(),
        (None, Ok(url)) if !url.is_empty() => url,
        _ => format!("sqlite:{}", out.join("dbscope.sqlite").display()),
    };
    if spec.starts_with("sqlite:") && a.target.is_none() {
        std::fs::create_dir_all(&out)
            .with_context(|| format!("cannot create run directory {}", out.display()))?;
    }
    let result = run_with(&a, &spec, &out);
    if result.is_err() && created_out {
        // Nothing was recorded (the run never started): leave no empty run directory behind.
        if !out.join(dbscope_core::run::MANIFEST_FILE).exists() {
            let _ = std::fs::remove_dir_all(&out);
        }
    }
    result
}

fn run_with(a: &RunArgs, spec: &str, out: &Path) -> Result<u8, Exit> {
    let duration = match (a.ops, a.duration) {
        (None, None) => Some(Duration::from_secs(10)),
        (_, d) => d,
    };
    let config = RunConfig {
        sessions: a.sessions,
        ops_per_session: a.ops,
        duration,
        warmup: a.warmup,
        seed: a.seed,
        max_errors: a.max_errors,
    };
    config.validate()?;
    let target = open_target(spec, &a.settings)?;
    let keys: Keys = a.keys.parse().map_err(anyhow::Error::msg)?;
    let workload: Box<dyn dbscope_lab::workload::Workload> = match a.workload {
        WorkloadName::Commit => Box::new(
            CommitWorkload::new(&a.table, keys, a.fresh, target.dialect())
                .map_err(anyhow::Error::msg)?,
        ),
        WorkloadName::TpchQ1 => Box::new(dbscope_lab::workload::tpch::TpchQ1Workload::new(
            target.dialect(),
            dbscope_tpch::q1::DEFAULT_DELTA,
        )),
    };

    let stop = Arc::clone(stop_signal());
    let handler_stop = Arc::clone(&stop);
    let _ = ctrlc::set_handler(move || {
        if handler_stop.is_set() {
            // A second Ctrl-C: the user means it. Blocks already written stay readable.
            std::process::exit(EXIT_INTERRUPTED as i32);
        }
        handler_stop.interrupt();
    });

    let show_progress = !a.quiet && std::io::stderr().is_terminal();
    let bar = show_progress.then(|| {
        let bar = ProgressBar::new(1000);
        bar.set_style(
            ProgressStyle::with_template("{spinner} {elapsed_precise} [{bar:30}] {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar
    });
    let mut on_progress = |p: &Progress| {
        if let Some(bar) = &bar {
            if let Some(f) = p.fraction {
                bar.set_position((f * 1000.0) as u64);
            }
            let p99 = p
                .p99_ns
                .map(|ns| format_us(ns as f64 / 1000.0))
                .unwrap_or_else(|| "-".into());
            bar.set_message(format!(
                "{}{} {}  {:.0}/s  p99 {} µs  errors {}",
                if p.warming_up { "warm-up  " } else { "" },
                p.headline,
                p.ops,
                p.ops_per_s,
                p99,
                p.errors
            ));
        }
    };

    let command_line = redacted_command_line();
    let result = runner::run(
        RunSpec {
            out: out.to_path_buf(),
            command_line,
            target: target.as_ref(),
            workload: workload.as_ref(),
            config,
        },
        &stop,
        &mut on_progress,
    );
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    // Errors here happen before the first operation (target, setup, run directory): bad input.
    let result = result.map_err(|e: dbscope_lab::Error| Exit(EXIT_USAGE, e.into()))?;

    finish_run(
        &result.dir,
        result.outcome,
        result.detail.as_deref(),
        result.events,
        Some(result.errors),
        a.quiet,
    )
}

/// After a run: prints the run directory (quiet) or its report and a closing line, says why it
/// did not complete, and returns the exit code for its outcome.
pub(crate) fn finish_run(
    dir: &Path,
    outcome: Outcome,
    detail: Option<&str>,
    events: u64,
    errors: Option<u64>,
    quiet: bool,
) -> Result<u8, Exit> {
    let code = match outcome {
        Outcome::Complete | Outcome::Running => 0,
        Outcome::Interrupted => EXIT_INTERRUPTED,
        Outcome::Failed => EXIT_FAILED,
    };
    if quiet {
        println!("{}", dir.display());
    } else {
        let run = RunDir::open(dir)?;
        let text = report::render_text(&report::build(&run, &ReportOptions::default())?);
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{text}")?;
        let errors = errors
            .map(|e| format!(" ({} errors)", dbscope_analysis::text::thousands(e)))
            .unwrap_or_default();
        writeln!(
            stdout,
            "recorded {} events in {}{errors}; see: dbscope report {}",
            dbscope_analysis::text::thousands(events),
            dir.display(),
            dir.display()
        )?;
    }
    if let Some(detail) = detail {
        eprintln!(
            "dbscope: run {}: {}; the run is kept in {}",
            outcome.as_str(),
            redact(detail),
            dir.display()
        );
    }
    Ok(code)
}

/// The command line as typed, with every password removed: what runs record in their manifest.
pub(crate) fn redacted_command_line() -> Vec<String> {
    std::env::args().map(|s| redact(&s)).collect()
}

/// Prints the first few problems (`examples`) and, when there were more (`total`), how many more.
pub(crate) fn print_examples(prefix: &str, examples: &[String], total: u64, more: &str) {
    for m in examples {
        eprintln!("dbscope: {prefix}: {m}");
    }
    if total > examples.len() as u64 {
        eprintln!(
            "dbscope: {prefix}: {} more {more}",
            total - examples.len() as u64
        );
    }
}

fn format_us(us: f64) -> String {
    if us >= 100.0 {
        format!("{us:.0}")
    } else {
        format!("{us:.1}")
    }
}

/// `runs/<UTC timestamp>-<workload>`, made unique with a suffix if needed.
fn default_run_dir(workload: &str) -> anyhow::Result<PathBuf> {
    let stamp = chrono::Utc::now().format("%Y%m%d-%H%M%S");
    let base = PathBuf::from("runs");
    for i in 0..1000 {
        let name = if i == 0 {
            format!("{stamp}-{workload}")
        } else {
            format!("{stamp}-{workload}-{i}")
        };
        let p = base.join(name);
        if !p.exists() {
            return Ok(p);
        }
    }
    anyhow::bail!("cannot find a free run directory name under runs/; use --out")
}

fn cmd_report(a: ReportArgs) -> Result<u8, Exit> {
    // A trace file (not a run directory) is imported into a temporary run first.
    let trace_run = if cmd_trace::is_trace_file(&a.run) {
        Some(cmd_trace::temp_run_from_trace(&a.run)?)
    } else {
        None
    };
    let run = match &trace_run {
        Some(t) => t.run.clone(),
        None => RunDir::open(&a.run)?,
    };
    if a.html.is_some() || a.svg.is_some() {
        write_html_report(&run, a.include_warmup, a.html.as_deref(), a.svg.as_deref())?;
    }
    let r = report::build(
        &run,
        &ReportOptions {
            include_warmup: a.include_warmup,
        },
    )?;
    let text = if a.json {
        report::render_json(&r)
    } else {
        report::render_text(&r)
    };
    let text = cmd_compare::with_top(text, &run, a.top, a.include_warmup, a.json)?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    if !text.ends_with('\n') {
        stdout.write_all(b"\n")?;
    }
    Ok(0)
}

/// Writes the HTML report and/or the plots as SVG files; says where on stderr.
fn write_html_report(
    run: &RunDir,
    include_warmup: bool,
    html: Option<&Path>,
    svg_dir: Option<&Path>,
) -> Result<(), Exit> {
    let page = dbscope_analysis::html::render_run(
        run,
        &dbscope_analysis::html::HtmlOptions {
            include_warmup,
            ..Default::default()
        },
    )?;
    write_page(&page, html, svg_dir)
}

/// Writes a rendered HTML page and/or its plots as SVG files; says where on stderr.
pub(crate) fn write_page(
    page: &dbscope_analysis::html::HtmlPage,
    html: Option<&Path>,
    svg_dir: Option<&Path>,
) -> Result<(), Exit> {
    if let Some(path) = html {
        std::fs::write(path, &page.html)
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("dbscope: wrote {}", path.display());
    }
    if let Some(dir) = svg_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for (name, svg) in &page.svgs {
            let p = dir.join(name);
            std::fs::write(&p, svg).with_context(|| format!("cannot write {}", p.display()))?;
        }
        eprintln!(
            "dbscope: wrote {} plots to {}",
            page.svgs.len(),
            dir.display()
        );
    }
    Ok(())
}

fn cmd_export(a: ExportArgs) -> Result<u8, Exit> {
    let run = RunDir::open(&a.run)?;
    let format = match a.format {
        Format::Csv => ExportFormat::Csv,
        Format::Parquet => ExportFormat::Parquet,
    };
    let out = a
        .output
        .unwrap_or_else(|| a.run.join(format!("events.{}", format.extension())));
    let summary = export_run(&run, format, &out)?;
    if let Some(why) = &summary.incomplete {
        eprintln!("dbscope: warning: incomplete run: {why}");
    }
    println!("wrote {} rows to {}", summary.rows, summary.path.display());
    Ok(0)
}
