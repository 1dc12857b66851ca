//! `dbscope compare A B`: argument checks, then library calls.

pub mod args;

use std::io::Write;

use dbscope_analysis::compare::{self, CompareOptions};
use dbscope_core::stats::BootstrapOptions;
use dbscope_core::RunDir;

use crate::common::write_page;
use crate::compare::args::CompareArgs;
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
