//! [`render_compare`]: the HTML report of a comparison of two runs.

use std::fmt::Write;

use dbscope_core::RunDir;

use super::page::{page, standalone_svg, HtmlOptions, HtmlPage};
use super::plots::{event_plots, Labelled};
use super::svg::escape;
use super::tables::counters_comparison;
use super::{data, observe, openloop};
use crate::compare::Comparison;
use crate::text::{format_num, round_sig3};

/// Builds the HTML report of a comparison of two runs: the verdicts first, then what differs between
/// the manifests, the summaries side by side, and every plot with A and B overlaid.
pub fn render_compare(
    a: &RunDir,
    b: &RunDir,
    cmp: &Comparison,
    opts: &HtmlOptions,
) -> dbscope_core::Result<HtmlPage> {
    let sa = data::collect(a, opts.include_warmup, opts.top_n)?;
    let sb = data::collect(b, opts.include_warmup, opts.top_n)?;
    let mut body = String::new();
    let elapsed = crate::compare::elapsed_line(cmp)
        .map(|l| format!("<br>{}", escape(&l)))
        .unwrap_or_default();
    let _ = write!(
        body,
        "<header><h1>dbscope compare</h1><p class=\"sub\">A = {}<br>B = {}{elapsed}</p></header>",
        escape(&cmp.a.path),
        escape(&cmp.b.path)
    );
    for (side, label) in [(&cmp.a, "A"), (&cmp.b, "B")] {
        if let Some(why) = &side.incomplete {
            let _ = write!(
                body,
                "<p class=\"banner warn\"><strong>{label} is incomplete:</strong> {}</p>",
                escape(why)
            );
        }
        if let Some(why) = &side.partial {
            let _ = write!(
                body,
                "<p class=\"banner warn\"><strong>{label} is a partial replay:</strong> {}</p>",
                escape(why)
            );
        }
    }
    body.push_str(
        "<section><h2>Verdict</h2><table class=\"verdict\"><thead><tr><th>event</th><th>call</th><th>in words</th></tr></thead><tbody>",
    );
    for e in &cmp.events {
        let _ = write!(
            body,
            "<tr><td>{}</td><td class=\"call {}\">{}</td><td>{}</td></tr>",
            escape(&e.name),
            escape(&e.verdict.call),
            escape(&e.verdict.call),
            escape(&e.verdict.text)
        );
    }
    for u in &cmp.untested {
        let n = |f: &Option<crate::compare::SideFacts>| {
            f.as_ref()
                .map_or("—".to_string(), |f| crate::text::thousands(f.n))
        };
        let _ = write!(
            body,
            "<tr><td>{}</td><td>no test</td><td>{} (n A {}, B {})</td></tr>",
            escape(&u.name),
            escape(&u.reason),
            n(&u.a),
            n(&u.b)
        );
    }
    body.push_str("</tbody></table></section>");
    if !cmp.manifest_diff.is_empty() {
        body.push_str(
            "<section><h2>What differs between the runs</h2><table><thead><tr><th>field</th><th>A</th><th>B</th></tr></thead><tbody>",
        );
        for d in &cmp.manifest_diff {
            let _ = write!(
                body,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&d.field),
                escape(d.a.as_deref().unwrap_or("—")),
                escape(d.b.as_deref().unwrap_or("—"))
            );
        }
        body.push_str("</tbody></table></section>");
    }
    body.push_str(
        "<section><h2>Summary (µs)</h2><table class=\"num\"><thead><tr><th>event</th><th>run</th><th>n</th>\
         <th>Min.</th><th>1st Qu.</th><th>Median</th><th>Mean</th><th>3rd Qu.</th><th>Max.</th><th>sd</th></tr></thead><tbody>",
    );
    for e in &cmp.events {
        for (label, sm) in [("A", &e.a), ("B", &e.b)] {
            let six = sm.summary.six();
            let _ = write!(
                body,
                "<tr><td>{}</td><td>{label}</td><td>{}</td>",
                escape(&e.name),
                format_num(sm.n as f64)
            );
            for v in dbscope_core::stats::format_r(&dbscope_core::stats::zapsmall(&six), 4) {
                let _ = write!(body, "<td>{}</td>", escape(v.trim()));
            }
            let _ = write!(body, "<td>{}</td></tr>", round_sig3(sm.sd));
        }
    }
    body.push_str("</tbody></table></section>");
    for section in &cmp.counters {
        body.push_str(&counters_comparison(section));
    }
    let (open_loop, open_loop_svgs) = openloop::compare_section(a, b, cmp)?;
    body.push_str(&open_loop);
    if let Some(o) = &cmp.observe {
        body.push_str(&observe::comparison(o));
    }
    let inputs = [
        Labelled {
            label: "A".into(),
            series: &sa,
        },
        Labelled {
            label: "B".into(),
            series: &sb,
        },
    ];
    let mut svgs: Vec<(String, String)> = open_loop_svgs
        .into_iter()
        .map(|(f, svg)| (f, standalone_svg(&svg)))
        .collect();
    for e in &cmp.events {
        let _ = write!(
            body,
            "<section class=\"event\"><h2>{}</h2>",
            escape(&e.name)
        );
        for (file, svg) in event_plots(&e.name, &inputs, opts.top_n) {
            let _ = write!(body, "<figure>{svg}</figure>");
            svgs.push((file, standalone_svg(&svg)));
        }
        body.push_str("</section>");
    }
    Ok(HtmlPage {
        html: page("dbscope compare", &body),
        svgs,
    })
}
