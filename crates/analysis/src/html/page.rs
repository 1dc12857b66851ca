//! The page around the content: the HTML document, its CSS, and standalone SVG documents.
//!
//! Also the [`HtmlOptions`] a page is made with and the rendered [`HtmlPage`].

use super::svg::escape;

/// Options of the HTML report.
#[derive(Clone, Debug)]
pub struct HtmlOptions {
    /// Include warm-up events in the distributions.
    pub include_warmup: bool,
    /// How many of the largest events the top-N plot shows.
    pub top_n: usize,
}

impl Default for HtmlOptions {
    fn default() -> Self {
        HtmlOptions {
            include_warmup: false,
            top_n: 10_000,
        }
    }
}

/// A rendered report: the page, and each plot as its own SVG document (for `--svg DIR`).
#[derive(Clone, Debug)]
pub struct HtmlPage {
    /// The whole HTML document.
    pub html: String,
    /// (file name, standalone SVG document) per plot.
    pub svgs: Vec<(String, String)>,
}

/// Wraps an inline SVG as a standalone document with its own style sheet.
pub(super) fn standalone_svg(svg: &str) -> String {
    let end = svg.find('>').map(|i| i + 1).unwrap_or(0);
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{}<style>{SVG_CSS}</style>{}\n",
        &svg[..end],
        &svg[end..]
    )
}

const SVG_CSS: &str = "svg{font-family:sans-serif;font-size:12px;background:#fff}.title{font-weight:600;font-size:14px}.grid{stroke:#ddd}.axis{stroke:#333}\
.tick,.axis-label,.legend text,.shade-label{fill:#333}.series{fill:none;stroke-width:1.6}\
.s0{stroke:#1f6fd1}.s1{stroke:#d1561f}.s2{stroke:#2a9d4b;stroke-dasharray:5 3}.s3{stroke:#777;stroke-dasharray:5 3}.shade{fill:#999;opacity:.15}.point{fill:#fff;stroke-width:2}";

/// The page: inline CSS only (light, dark, print); no scripts, no external resources.
pub fn page(title: &str, body: &str) -> String {
    format!(
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>{}</title>
<style>{PAGE_CSS}</style>
</head>
<body>
{body}
<footer>Made by dbscope {}. Plots are drawn from aggregated data: HDR histograms (3 significant digits), the largest events, and per-interval counts.</footer>
</body>
</html>
"#,
        escape(title),
        env!("CARGO_PKG_VERSION")
    )
}

const PAGE_CSS: &str = r#"
:root{--fg:#1b1f24;--muted:#5b6470;--bg:#fff;--grid:#e3e6ea;--axis:#3a4048;--a:#1f6fd1;--b:#d1561f;--c:#2a9d4b;--warn:#fff4d6;--warnb:#e0b000}
@media (prefers-color-scheme: dark){:root{--fg:#e6e9ed;--muted:#9aa4b0;--bg:#14171b;--grid:#2b3139;--axis:#c3c9d0;--a:#6aa8ff;--b:#ff9a5c;--c:#6fd38c;--warn:#3a3000;--warnb:#b08a00}}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg);max-width:1100px;margin:1.5rem auto;padding:0 1rem}
h1{font-size:1.5rem;margin:.2rem 0} h2{font-size:1.15rem;margin:1.4rem 0 .5rem} .sub{color:var(--muted);margin:0}
table{border-collapse:collapse;margin:.3rem 0;font-variant-numeric:tabular-nums} th,td{padding:.2rem .6rem;border-bottom:1px solid var(--grid);text-align:left;vertical-align:top}
table.num td:not(:first-child),table.num th:not(:first-child){text-align:right} table.kv th{color:var(--muted);font-weight:500;white-space:nowrap}
td{overflow-wrap:anywhere} table.num td:not(:first-child){white-space:nowrap;overflow-wrap:normal} table.num th{white-space:nowrap}
.banner{padding:.5rem .8rem;border-left:4px solid var(--warnb);background:var(--warn)}
figure{margin:.8rem 0} svg.plot{width:100%;height:auto;max-width:900px;font-size:12px}
svg .title{font-weight:600;font-size:14px;fill:var(--fg)} svg .grid{stroke:var(--grid)} svg .axis{stroke:var(--axis)}
svg .tick,svg .axis-label,svg .legend text,svg .shade-label{fill:var(--fg)} svg .shade{fill:var(--muted);opacity:.15}
svg .series{fill:none;stroke-width:1.6} svg .point{fill:var(--bg);stroke-width:2} svg .s0{stroke:var(--a)} svg .s1{stroke:var(--b)} svg .s2{stroke:var(--c)} svg .s3{stroke:var(--muted)} svg .s2,svg .s3{stroke-dasharray:5 3}
table.verdict td:nth-child(-n+2){white-space:nowrap} td.call.slower{color:var(--b);font-weight:600} td.call.faster{color:var(--c);font-weight:600}
footer{color:var(--muted);font-size:.85rem;margin-top:2rem}
@media print{body{max-width:none;margin:0;color:#000;background:#fff} section.event{break-inside:avoid} figure{break-inside:avoid}}
"#;
