//! `dbscope report RUN` (text, JSON, HTML, SVG, top N) and `dbscope export RUN`.

pub mod args;

use std::io::Write;
use std::path::Path;

use dbscope_analysis::export::{export_run, ExportFormat};
use dbscope_analysis::report::{self, ReportOptions};
use dbscope_core::RunDir;

use crate::common::write_page;
use crate::exit::{Exit, EXIT_FAILED};
use crate::report::args::{ExportArgs, Format, ReportArgs};
use crate::trace;

pub fn cmd_report(a: ReportArgs) -> Result<u8, Exit> {
    // A trace file (not a run directory) is imported into a temporary run first.
    let trace_run = if trace::is_trace_file(&a.run) {
        Some(trace::temp_run_from_trace(&a.run)?)
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
    let text = with_top(
        text,
        &run,
        a.top,
        a.event.as_deref(),
        a.include_warmup,
        a.json,
    )?;
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

pub fn cmd_export(a: ExportArgs) -> Result<u8, Exit> {
    let run = RunDir::open(&a.run)?;
    let format = match a.format {
        Format::Csv => ExportFormat::Csv,
        Format::Parquet => ExportFormat::Parquet,
    };
    let out = a
        .out
        .unwrap_or_else(|| a.run.join(format!("events.{}", format.extension())));
    let summary = export_run(&run, format, &out)?;
    println!(
        "wrote {} rows to {}",
        dbscope_analysis::text::thousands(summary.rows as u64),
        summary.path.display()
    );
    match &summary.incomplete {
        None => Ok(0),
        Some(why) if a.allow_incomplete => {
            eprintln!("dbscope: warning: incomplete run: {why}");
            Ok(0)
        }
        Some(why) => {
            eprintln!(
                "dbscope: warning: incomplete run: {why}; the rows read were written, marked \
                 incomplete (pass --allow-incomplete to accept this run)"
            );
            Ok(EXIT_FAILED)
        }
    }
}

/// `dbscope report RUN --top N`: the report text followed by the N slowest events, or for `--json`
/// the report object with a `top` member added.
fn with_top(
    text: String,
    run: &RunDir,
    top: Option<usize>,
    event: Option<&str>,
    include_warmup: bool,
    json: bool,
) -> Result<String, Exit> {
    let Some(n) = top else {
        return Ok(text);
    };
    let t = dbscope_analysis::top::top_events(run, n, include_warmup, event)?;
    if json {
        let mut v: serde_json::Value = serde_json::from_str(&text)?;
        if let Some(obj) = v.as_object_mut() {
            obj.insert("top".into(), serde_json::to_value(&t)?);
        }
        let mut s = serde_json::to_string_pretty(&v)?;
        s.push('\n');
        Ok(s)
    } else {
        let mut s = text;
        if !s.ends_with('\n') {
            s.push('\n');
        }
        s.push('\n');
        s.push_str(&dbscope_analysis::top::render_text(&t));
        Ok(s)
    }
}
