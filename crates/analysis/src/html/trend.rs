//! The HTML trend of one catalogued figure over time (`dbscope history --trend FIG --html FILE`,
//! issue 33 part 1): the figure of each run in start order, and the runs as a table.

use std::fmt::Write;

use super::axes::nice_max;
use super::page::{page, standalone_svg, HtmlPage};
use super::svg::{self, escape, Axis, Plot, Scale, Series, Style};
use crate::text::format_num;

/// One run's point: when it started, its directory, the figure.
#[derive(Clone, Debug)]
pub struct TrendPoint {
    /// Start time (RFC 3339, UTC).
    pub started_utc: String,
    /// The run directory's name.
    pub run: String,
    /// The figure.
    pub value: f64,
}

/// The page: the figure (`label`, with its unit) against the run's position in time, then the
/// table of runs.
pub fn render_trend(label: &str, points: &[TrendPoint]) -> HtmlPage {
    let xy: Vec<(f64, f64)> = points
        .iter()
        .enumerate()
        .map(|(i, p)| ((i + 1) as f64, p.value))
        .collect();
    let y_max = xy.iter().map(|p| p.1).fold(0.0, f64::max);
    let plot = Plot {
        title: format!("{label} over {} runs", points.len()),
        x: Axis {
            label: "run, in start order".into(),
            scale: Scale::Linear,
            min: 0.0,
            max: (points.len() + 1) as f64,
            format: format_num,
        },
        y: Axis {
            label: label.to_string(),
            scale: Scale::Linear,
            min: 0.0,
            max: nice_max(y_max),
            format: format_num,
        },
        series: vec![
            Series {
                name: label.to_string(),
                points: xy.clone(),
                style: Style::Line,
                slot: 0,
            },
            Series {
                name: "runs".into(),
                points: xy,
                style: Style::Points,
                slot: 0,
            },
        ],
        shaded: Vec::new(),
    };
    let svg = svg::render(&plot);
    let mut body = String::new();
    let _ = write!(
        body,
        "<header><h1>dbscope history</h1><p class=\"sub\">{} over time</p></header><figure>{svg}</figure>",
        escape(label)
    );
    body.push_str("<table class=\"num\"><tr><th>#</th><th>started (UTC)</th><th>run</th>");
    let _ = write!(body, "<th>{}</th></tr>", escape(label));
    for (i, p) in points.iter().enumerate() {
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            i + 1,
            escape(p.started_utc.get(..19).unwrap_or(&p.started_utc)),
            escape(&p.run),
            format_num(p.value)
        );
    }
    body.push_str("</table>");
    HtmlPage {
        html: page(&format!("dbscope history: {label}"), &body),
        svgs: vec![("history-trend.svg".into(), standalone_svg(&svg))],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_run_is_a_point_and_a_row_escaped() {
        let points: Vec<TrendPoint> = [1.5, 2.0, 0.5]
            .iter()
            .enumerate()
            .map(|(i, &v)| TrendPoint {
                started_utc: format!("2026-12-0{}T10:00:00+00:00", i + 1),
                run: format!("r{i}<x>"),
                value: v,
            })
            .collect();
        let p = render_trend("p99 (ms)", &points);
        // Three markers and one in the legend.
        assert_eq!(
            p.html.matches(r#"<circle class="series point s0""#).count(),
            4
        );
        assert!(p.html.contains("r1&lt;x&gt;") && !p.html.contains("r1<x>"));
        assert!(p.html.contains("2026-12-03 10:00:00") || p.html.contains("2026-12-03T10:00:00"));
        assert_eq!(p.svgs.len(), 1);
    }
}
