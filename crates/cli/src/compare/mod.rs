//! `dbscope compare A B` and `dbscope import csv`: argument checks, then library calls.

pub mod args;

use std::io::Write;

use dbscope_analysis::compare::{self, CompareOptions};
use dbscope_core::stats::BootstrapOptions;
use dbscope_core::RunDir;
use dbscope_import::{import_csv, CsvImport, Unit};

use crate::common::{print_examples, redacted_command_line, write_page};
use crate::compare::args::{CompareArgs, ImportArgs, ImportCsvArgs, ImportSource, UnitArg};
use crate::exit::Exit;

/// Opens a run directory, or imports a 10046 trace file into a temporary run.
fn open(path: &std::path::Path) -> Result<(RunDir, Option<crate::trace::TempRun>), Exit> {
    if crate::trace::is_trace_file(path) {
        let t = crate::trace::temp_run_from_trace(path)?;
        Ok((t.run.clone(), Some(t)))
    } else {
        Ok((RunDir::open(path)?, None))
    }
}

/// Runs `dbscope compare`.
pub fn cmd_compare(a: CompareArgs) -> Result<u8, Exit> {
    let (ra, keep_a) = open(&a.a)?;
    let (rb, keep_b) = open(&a.b)?;
    let opts = CompareOptions {
        event: a.event.clone(),
        outlier_us: a.outlier.map(|d| d.as_secs_f64() * 1e6),
        noise: a.noise,
        include_warmup: a.include_warmup,
        allow_incomplete: a.allow_incomplete,
        bootstrap: BootstrapOptions {
            replicates: a.replicates,
            seed: a.seed,
            ..BootstrapOptions::default()
        },
        quantiles: a.quantiles.clone(),
    };
    let mut c = compare::compare(&ra, &rb, &opts)?;
    // A trace file was imported into a temporary run: name the file, not the temporary directory.
    if keep_a.is_some() {
        c.a.path = a.a.display().to_string();
    }
    if keep_b.is_some() {
        c.b.path = a.b.display().to_string();
    }
    if a.html.is_some() || a.svg.is_some() {
        let page = dbscope_analysis::html::render_compare(
            &ra,
            &rb,
            &c,
            &dbscope_analysis::html::HtmlOptions {
                include_warmup: a.include_warmup,
                ..Default::default()
            },
        )?;
        write_page(&page, a.html.as_deref(), a.svg.as_deref())?;
    }
    let text = if a.json {
        compare::render_json(&c)
    } else {
        compare::render_text(&c)
    };
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    Ok(0)
}

/// Runs `dbscope import …`.
pub fn cmd_import(a: ImportArgs) -> Result<u8, Exit> {
    match a.source {
        ImportSource::Csv(c) => cmd_import_csv(c),
    }
}

fn cmd_import_csv(a: ImportCsvArgs) -> Result<u8, Exit> {
    let unit = match a.unit {
        UnitArg::Ns => Unit::Ns,
        UnitArg::Us => Unit::Us,
        UnitArg::Ms => Unit::Ms,
        UnitArg::S => Unit::S,
    };
    let s = import_csv(&CsvImport {
        file: a.file.clone(),
        event: a.event.clone(),
        column: a.column.clone(),
        unit,
        session_column: a.session_column.clone(),
        start_column: a.start_column.clone(),
        lenient: a.lenient,
        delimiter: a.delimiter,
        out: a.out.clone(),
        command_line: redacted_command_line(),
    })?;
    print_examples("skipped", &s.skipped_examples, s.skipped, "bad rows");
    println!(
        "imported {} events ({:?}) from {} into {}{}",
        s.events,
        a.event,
        a.file.display(),
        s.dir.display(),
        if s.skipped > 0 {
            format!("; {} bad rows skipped", s.skipped)
        } else {
            String::new()
        }
    );
    Ok(0)
}

/// `dbscope report RUN --top N`: the report text followed by the N slowest events, or for `--json`
/// the report object with a `top` member added.
pub fn with_top(
    text: String,
    run: &RunDir,
    top: Option<usize>,
    include_warmup: bool,
    json: bool,
) -> Result<String, Exit> {
    let Some(n) = top else {
        return Ok(text);
    };
    let t = dbscope_analysis::top::top_events(run, n, include_warmup)?;
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
