//! [`render_run`]: the HTML report of one run.

use std::fmt::Write;

use dbscope_core::RunDir;

use super::page::{page, standalone_svg, HtmlOptions, HtmlPage};
use super::plots::{event_plots, Labelled};
use super::svg::escape;
use super::tables::{banner, counters_section, run_table, settings_table, summary_table};
use super::{ab, data, observe, openloop, usl};
use crate::report::{self, ReportOptions};

/// Builds the HTML report of one run.
pub fn render_run(run: &RunDir, opts: &HtmlOptions) -> dbscope_core::Result<HtmlPage> {
    let rep = report::build(
        run,
        &ReportOptions {
            include_warmup: opts.include_warmup,
        },
    )?;
    let series = data::collect(run, opts.include_warmup, opts.top_n)?;
    let mut body = String::new();
    let mut svgs = Vec::new();
    let _ = write!(
        body,
        "<header><h1>dbscope report</h1><p class=\"sub\">{}</p></header>",
        escape(&rep.run.path)
    );
    body.push_str(&banner(&rep));
    body.push_str(&run_table(&rep));
    body.push_str(&settings_table(&rep));
    body.push_str(&summary_table(&rep));
    let (open_loop, open_loop_svgs) = openloop::run_section(&rep);
    body.push_str(&open_loop);
    svgs.extend(open_loop_svgs);
    for section in &rep.counters {
        body.push_str(&counters_section(section));
        if section.key == ab::SECTION {
            for (file, svg) in ab::plots(section) {
                let _ = write!(body, "<figure>{svg}</figure>");
                svgs.push((file, svg));
            }
        }
        if section.key == usl::SECTION {
            if let Some((file, svg)) = usl::plot(section) {
                let _ = write!(body, "<figure>{svg}</figure>");
                svgs.push((file, svg));
            }
        }
    }
    if let Some(o) = &rep.observe {
        body.push_str(&observe::section(o));
    }
    let label = run
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| rep.run.path.clone());
    let inputs = [Labelled {
        label,
        series: &series,
    }];
    for ev in &series.events {
        let _ = write!(
            body,
            "<section class=\"event\"><h2>{}</h2>",
            escape(&ev.name)
        );
        for (file, svg) in event_plots(&ev.name, &inputs, opts.top_n) {
            let _ = write!(body, "<figure>{svg}</figure>");
            svgs.push((file, svg));
        }
        body.push_str("</section>");
    }
    if series.events.is_empty() {
        body.push_str("<p class=\"empty\">No events recorded.</p>");
    }
    Ok(HtmlPage {
        html: page(&format!("dbscope report — {}", rep.run.path), &body),
        svgs: svgs
            .into_iter()
            .map(|(f, s)| (f, standalone_svg(&s)))
            .collect(),
    })
}
