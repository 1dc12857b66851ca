//! What several commands share: stop signal, progress bar, run directory, closing lines.
//!
//! The stop signal and its Ctrl-C handler, the progress bar, the default run directory, the
//! redacted command line, the closing lines of a run, and writing an HTML page.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use anyhow::Context;
use dbscope_analysis::report::{self, ReportOptions};
use dbscope_core::redact::redact;
use dbscope_core::{Outcome, RunDir, StopSignal};
use indicatif::{ProgressBar, ProgressStyle};

use crate::exit::{Exit, EXIT_FAILED, EXIT_INTERRUPTED};

/// The run's stop signal, shared with the Ctrl-C handler.
pub fn stop_signal() -> &'static Arc<StopSignal> {
    static STOP: OnceLock<Arc<StopSignal>> = OnceLock::new();
    STOP.get_or_init(|| Arc::new(StopSignal::new()))
}

/// The stop signal, with Ctrl-C (and SIGTERM) wired to it: the first stops the run gracefully and
/// keeps everything; a second exits at once (blocks already written stay readable).
pub fn stop_on_ctrl_c() -> Arc<StopSignal> {
    let stop = Arc::clone(stop_signal());
    let handler_stop = Arc::clone(&stop);
    let _ = ctrlc::set_handler(move || {
        if handler_stop.is_set() {
            std::process::exit(EXIT_INTERRUPTED as i32);
        }
        handler_stop.interrupt();
    });
    stop
}

/// A progress bar on stderr of `len` steps with `template`, when stderr is a terminal and the user
/// did not ask for quiet; `None` otherwise.
pub fn progress_bar(quiet: bool, len: u64, template: &str) -> Option<ProgressBar> {
    (!quiet && std::io::stderr().is_terminal()).then(|| {
        let bar = ProgressBar::new(len.max(1));
        bar.set_style(
            ProgressStyle::with_template(template)
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar
    })
}

/// The bar of a run (`run`, `io redo`): elapsed time, the fraction done in thousandths, a message.
pub fn run_progress_bar(quiet: bool) -> Option<ProgressBar> {
    progress_bar(quiet, 1000, "{spinner} {elapsed_precise} [{bar:30}] {msg}")
}

/// Shows a run's progress on its bar (when there is one): fraction done, warm-up, `label` (the
/// headline event) with its count and rate, live p99, errors.
pub fn show_run_progress(
    bar: &Option<ProgressBar>,
    p: &dbscope_lab::runner::Progress,
    label: &str,
) {
    let Some(bar) = bar else { return };
    if let Some(f) = p.fraction {
        bar.set_position((f * 1000.0) as u64);
    }
    let p99 = p
        .p99_ns
        .map(|ns| progress_us(ns as f64 / 1000.0))
        .unwrap_or_else(|| "-".into());
    bar.set_message(format!(
        "{}{} {}  {:.0}/s  p99 {} µs  errors {}",
        if p.warming_up { "warm-up  " } else { "" },
        label,
        p.ops,
        p.ops_per_s,
        p99,
        p.errors
    ));
}

/// After a run: prints the run directory (quiet) or its report and a closing line, says why it
/// did not complete, and returns the exit code for its outcome.
pub fn finish_run(
    dir: &Path,
    outcome: Outcome,
    detail: Option<&str>,
    events: u64,
    errors: Option<u64>,
    quiet: bool,
) -> Result<u8, Exit> {
    let code = outcome_code(outcome);
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

/// The exit code of a run that ended with `outcome`.
pub fn outcome_code(outcome: Outcome) -> u8 {
    match outcome {
        Outcome::Complete | Outcome::Running => 0,
        Outcome::Interrupted => EXIT_INTERRUPTED,
        Outcome::Failed => EXIT_FAILED,
    }
}

/// The command line as typed, with every password removed: what runs record in their manifest.
pub fn redacted_command_line() -> Vec<String> {
    std::env::args().map(|s| redact(&s)).collect()
}

/// Prints the first few problems (`examples`) and, when there were more (`total`), how many more.
pub fn print_examples(prefix: &str, examples: &[String], total: u64, more: &str) {
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

/// A latency in µs for the progress line, without its unit: whole µs from 100 µs up, else one
/// decimal. (`dbscope_analysis::text::format_us`, the plots' ticks, picks a unit as well.)
fn progress_us(us: f64) -> String {
    if us >= 100.0 {
        format!("{us:.0}")
    } else {
        format!("{us:.1}")
    }
}

/// The closing line of a command that recorded one job's run: where, and how to read it.
pub fn say_recorded(out: &mut impl Write, run: &Path) -> std::io::Result<()> {
    writeln!(
        out,
        "recorded in {}; see: dbscope report {}",
        run.display(),
        run.display()
    )
}

/// `runs/<UTC timestamp>-<workload>`, made unique with a suffix if needed.
pub fn default_run_dir(workload: &str) -> anyhow::Result<PathBuf> {
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

/// Writes a rendered HTML page and/or its plots as SVG files; says where on stderr.
pub fn write_page(
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
