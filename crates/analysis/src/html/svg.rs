//! Hand-written SVG line plots with linear or log-10 axes, ticks, labels and legends: small output,
//! every string escaped, styled by the page's CSS so light, dark and print modes all work.

use std::fmt::Write;

use crate::text::truncate_middle;

/// Axis scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Linear.
    Linear,
    /// Base-10 logarithmic (values must be > 0; smaller ones are clamped to the axis minimum).
    Log10,
}

/// One axis: label, scale, range and tick labels.
#[derive(Clone, Debug)]
pub struct Axis {
    /// Label under (x) or beside (y) the axis, with its unit.
    pub label: String,
    /// Scale.
    pub scale: Scale,
    /// Smallest value shown.
    pub min: f64,
    /// Largest value shown.
    pub max: f64,
    /// Formats a tick value as its label.
    pub format: fn(f64) -> String,
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Straight segments between points.
    Line,
    /// Horizontal steps (histograms).
    Step,
    /// A marker at each point, unjoined (measurements against a fitted curve).
    Points,
}

/// One named series of (x, y) points.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend name.
    pub name: String,
    /// Points in data units.
    pub points: Vec<(f64, f64)>,
    /// Line or step.
    pub style: Style,
    /// Colour slot (0 = A, 1 = B, …).
    pub slot: usize,
}

/// A plot: title, axes, series, and shaded x ranges (e.g. warm-up).
#[derive(Clone, Debug)]
pub struct Plot {
    /// Title above the plot.
    pub title: String,
    /// Horizontal axis.
    pub x: Axis,
    /// Vertical axis.
    pub y: Axis,
    /// The data.
    pub series: Vec<Series>,
    /// Shaded x ranges with a label, e.g. `(0, 2, "warm-up")`.
    pub shaded: Vec<(f64, f64, String)>,
}

const W: f64 = 760.0;
const H: f64 = 340.0;
const LEFT: f64 = 78.0;
const RIGHT: f64 = 44.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 52.0;

/// Escapes text for HTML and SVG content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

impl Axis {
    fn norm(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => {
                let span = (self.max - self.min).max(f64::MIN_POSITIVE);
                (v - self.min) / span
            }
            Scale::Log10 => {
                let lo = self.min.max(f64::MIN_POSITIVE).log10();
                let hi = self.max.max(self.min * 10.0).log10();
                (v.max(self.min).log10() - lo) / (hi - lo).max(f64::MIN_POSITIVE)
            }
        }
    }

    /// Tick positions: powers of ten for log axes, 1-2-5 steps for linear ones.
    pub fn ticks(&self) -> Vec<f64> {
        match self.scale {
            Scale::Log10 => {
                let lo = self.min.max(f64::MIN_POSITIVE).log10().floor() as i32;
                let hi = self.max.max(self.min).log10().ceil() as i32;
                // Few decades: label 2× and 5× too, so the axis still reads.
                let steps: &[f64] = if hi - lo <= 2 {
                    &[1.0, 2.0, 5.0]
                } else {
                    &[1.0]
                };
                (lo..=hi)
                    .flat_map(|e| steps.iter().map(move |m| m * 10f64.powi(e)))
                    .filter(|v| *v >= self.min * 0.999 && *v <= self.max * 1.001)
                    .collect()
            }
            Scale::Linear => {
                let span = self.max - self.min;
                if span <= 0.0 || !span.is_finite() {
                    return vec![self.min];
                }
                let raw = span / 6.0;
                let mag = 10f64.powf(raw.log10().floor());
                let step = [1.0, 2.0, 5.0, 10.0]
                    .iter()
                    .map(|m| m * mag)
                    .find(|s| span / s <= 7.0)
                    .unwrap_or(10.0 * mag);
                let first = (self.min / step).ceil() * step;
                let mut v = Vec::new();
                let mut t = first;
                while t <= self.max + step * 1e-9 {
                    v.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
                    t += step;
                }
                v
            }
        }
    }
}

fn px(plot: &Plot, x: f64, y: f64) -> (f64, f64) {
    let w = W - LEFT - RIGHT;
    let h = H - TOP - BOTTOM;
    (
        LEFT + plot.x.norm(x).clamp(0.0, 1.0) * w,
        TOP + (1.0 - plot.y.norm(y).clamp(0.0, 1.0)) * h,
    )
}

/// Renders the plot as an `<svg>` element (no XML prolog), 760×340 user units, scalable.
pub fn render(plot: &Plot) -> String {
    let mut s = String::with_capacity(4096);
    let _ = write!(
        s,
        r#"<svg class="plot" viewBox="0 0 {W} {H}" role="img" aria-label="{}" xmlns="http://www.w3.org/2000/svg">"#,
        escape(&plot.title)
    );
    let _ = write!(
        s,
        r#"<text class="title" x="{LEFT}" y="18">{}</text>"#,
        escape(&truncate_middle(&plot.title, 80))
    );
    let (x0, y0) = (LEFT, H - BOTTOM);
    let (x1, y1) = (W - RIGHT, TOP);
    for (a, b, label) in &plot.shaded {
        let (pa, _) = px(plot, *a, plot.y.min);
        let (pb, _) = px(plot, *b, plot.y.min);
        let _ = write!(
            s,
            r#"<rect class="shade" x="{pa:.1}" y="{y1}" width="{:.1}" height="{:.1}"><title>{}</title></rect><text class="shade-label" x="{:.1}" y="{:.1}">{}</text>"#,
            (pb - pa).max(0.0),
            y0 - y1,
            escape(label),
            pa + 4.0,
            y1 + 12.0,
            escape(label)
        );
    }
    // Grid and ticks.
    for t in plot.x.ticks() {
        let (x, _) = px(plot, t, plot.y.min);
        let _ = write!(
            s,
            r#"<line class="grid" x1="{x:.1}" y1="{y1}" x2="{x:.1}" y2="{y0}"/><text class="tick" x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            y0 + 16.0,
            escape(&(plot.x.format)(t))
        );
    }
    for t in plot.y.ticks() {
        let (_, y) = px(plot, plot.x.min, t);
        let _ = write!(
            s,
            r#"<line class="grid" x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            x0 - 6.0,
            y + 4.0,
            escape(&(plot.y.format)(t))
        );
    }
    let _ = write!(
        s,
        r#"<line class="axis" x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}"/><line class="axis" x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}"/>"#
    );
    let _ = write!(
        s,
        r#"<text class="axis-label" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        (x0 + x1) / 2.0,
        H - 10.0,
        escape(&plot.x.label)
    );
    let _ = write!(
        s,
        r#"<text class="axis-label" transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        (y0 + y1) / 2.0,
        escape(&plot.y.label)
    );
    // Series.
    for series in &plot.series {
        if series.points.is_empty() {
            continue;
        }
        if series.style == Style::Points {
            for &(x, y) in &series.points {
                let (cx, cy) = px(plot, x, y);
                let _ = write!(
                    s,
                    r#"<circle class="series point s{}" cx="{cx:.1}" cy="{cy:.1}" r="4"><title>{}</title></circle>"#,
                    series.slot,
                    escape(&series.name)
                );
            }
            continue;
        }
        let mut d = String::with_capacity(series.points.len() * 16);
        let mut prev: Option<(f64, f64)> = None;
        for &(x, y) in &series.points {
            let (px_, py_) = px(plot, x, y);
            match (prev, series.style) {
                (None, _) => {
                    let _ = write!(d, "M{px_:.1} {py_:.1}");
                }
                (Some(_), Style::Line) => {
                    let _ = write!(d, "L{px_:.1} {py_:.1}");
                }
                (Some((_, pyp)), Style::Step) => {
                    let _ = write!(d, "L{px_:.1} {pyp:.1}L{px_:.1} {py_:.1}");
                }
                (Some(_), Style::Points) => unreachable!("drawn as markers above"),
            }
            prev = Some((px_, py_));
        }
        let _ = write!(
            s,
            r#"<path class="series s{}" d="{d}"><title>{}</title></path>"#,
            series.slot,
            escape(&series.name)
        );
    }
    // Legend: its own row between the title and the plot area, right-aligned.
    let mut lx = x1 - 8.0;
    for series in plot.series.iter().rev() {
        let name = truncate_middle(&series.name, 60);
        let label = escape(&name);
        let width = 26.0 + 6.6 * name.chars().count() as f64;
        lx -= width;
        if series.style == Style::Points {
            let _ = write!(
                s,
                r#"<g class="legend"><circle class="series point s{}" cx="{:.1}" cy="{:.1}" r="4"/><text x="{:.1}" y="{:.1}">{label}</text></g>"#,
                series.slot,
                lx + 9.0,
                y1 - 14.0,
                lx + 22.0,
                y1 - 10.0
            );
            continue;
        }
        let _ = write!(
            s,
            r#"<g class="legend"><line class="series s{}" x1="{lx:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}"/><text x="{:.1}" y="{:.1}">{label}</text></g>"#,
            series.slot,
            y1 - 14.0,
            lx + 18.0,
            y1 - 14.0,
            lx + 22.0,
            y1 - 10.0
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::{format_num, format_us};

    fn plot() -> Plot {
        Plot {
            title: "latency <b>".into(),
            x: Axis {
                label: "latency (µs)".into(),
                scale: Scale::Log10,
                min: 1.0,
                max: 1e4,
                format: format_us,
            },
            y: Axis {
                label: "events".into(),
                scale: Scale::Linear,
                min: 0.0,
                max: 100.0,
                format: format_num,
            },
            series: vec![Series {
                name: "A \"run\"".into(),
                points: vec![(1.0, 0.0), (10.0, 50.0), (100.0, 100.0)],
                style: Style::Step,
                slot: 0,
            }],
            shaded: vec![(1.0, 2.0, "warm-up".into())],
        }
    }

    #[test]
    fn renders_axes_ticks_and_escaped_text() {
        let svg = render(&plot());
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(svg.contains("latency &lt;b&gt;"));
        assert!(svg.contains("A &quot;run&quot;"));
        for label in ["1 µs", "10 µs", "100 µs", "1 ms", "10 ms"] {
            assert!(
                svg.contains(&format!(">{label}</text>")),
                "{label} tick in {svg}"
            );
        }
        assert!(svg.contains(r#"<path class="series s0" d="M"#));
        assert!(svg.contains("warm-up"));
    }

    #[test]
    fn ticks_and_formats() {
        let p = plot();
        assert_eq!(p.x.ticks(), vec![1.0, 10.0, 100.0, 1000.0, 10000.0]);
        assert_eq!(p.y.ticks(), vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(
            escape("<script>alert(1)</script>"),
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        );
    }
}
