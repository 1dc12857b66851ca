//! The sweep's throughput-vs-sessions plot (issue 34 item 11): the measured points, the fitted
//! Universal Scalability Law curve and its peak, drawn from a sweep run's `usl` counters section.

use dbscope_core::{CounterSection, CounterValue};

use super::axes::nice_max;
use super::svg::{self, Axis, Plot, Scale, Series, Style};
use crate::text::format_num;

/// Counters section key of a sweep's fit (`crate::sweep::section`).
pub(super) const SECTION: &str = "usl";

/// Points of the fitted curve.
const CURVE_POINTS: usize = 120;

fn num(v: &CounterValue) -> Option<f64> {
    match v {
        CounterValue::Int(n) => Some(*n as f64),
        CounterValue::Float(f) if f.is_finite() => Some(*f),
        _ => None,
    }
}

/// The plot of a sweep's `usl` section as (file name, inline SVG); `None` when the section
/// holds no measured point.
pub(super) fn plot(sec: &CounterSection) -> Option<(String, String)> {
    let table = sec.tables.iter().find(|t| t.key == "points")?;
    let col = |k: &str| table.columns.iter().position(|c| c.key == k);
    let (ci, mi) = (col("sessions")?, col("measured_per_s")?);
    // An event's own rate is kept as `/s` in the section (as `report` prints it).
    let unit = match table.columns[mi].unit.as_str() {
        "" | "/s" => "per second".to_string(),
        u => u.to_string(),
    };
    let measured: Vec<(f64, f64)> = table
        .rows
        .iter()
        .filter_map(|r| Some((num(r.get(ci)?)?, num(r.get(mi)?)?)))
        .collect();
    if measured.is_empty() {
        return None;
    }
    let counter = |k: &str| {
        sec.counters
            .iter()
            .find(|c| c.key == k)
            .and_then(|c| num(&c.value))
    };
    let n_max = measured.iter().map(|p| p.0).fold(1.0, f64::max);
    let mut x_max = n_max;
    let mut y_max = measured.iter().map(|p| p.1).fold(0.0, f64::max);
    let mut series = vec![Series {
        name: "measured".into(),
        points: measured,
        style: Style::Points,
        slot: 0,
    }];
    if let (Some(l), Some(s), Some(k)) = (counter("lambda"), counter("sigma"), counter("kappa")) {
        // The peak is shown when it falls near the measured range (within twice its top).
        let peak = counter("peak_n")
            .zip(counter("peak_per_s"))
            .filter(|(n, x)| *n >= 1.0 && *n <= 2.0 * n_max && x.is_finite());
        if let Some((n, x)) = peak {
            x_max = x_max.max(n);
            y_max = y_max.max(x);
        }
        let curve: Vec<(f64, f64)> = (0..=CURVE_POINTS)
            .map(|i| {
                let n = 1.0 + (x_max - 1.0) * i as f64 / CURVE_POINTS as f64;
                (n, l * n / (1.0 + s * (n - 1.0) + k * n * (n - 1.0)))
            })
            .collect();
        y_max = curve.iter().map(|p| p.1).fold(y_max, f64::max);
        series.push(Series {
            name: format!("USL fit: λ = {} σ = {:.4} κ = {:.6}", format_num(l), s, k),
            points: curve,
            style: Style::Line,
            slot: 1,
        });
        if let Some((n, x)) = peak {
            series.push(Series {
                name: format!("peak {} {unit} at N = {:.1}", format_num(x), n),
                points: vec![(n, x)],
                style: Style::Points,
                slot: 2,
            });
        }
    }
    let plot = Plot {
        title: "throughput vs sessions: measured and USL fit".into(),
        x: Axis {
            label: "sessions (N)".into(),
            scale: Scale::Linear,
            min: 0.0,
            max: nice_max(x_max),
            format: format_num,
        },
        y: Axis {
            label: format!("throughput ({unit})"),
            scale: Scale::Linear,
            min: 0.0,
            max: nice_max(y_max),
            format: format_num,
        },
        series,
        shaded: Vec::new(),
    };
    Some(("sweep-usl.svg".to_string(), svg::render(&plot)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::{fit, section, Headline, Point};

    fn point(sessions: u32, x: f64) -> Point {
        Point {
            sessions,
            repeat: 1,
            run: format!("s/points/s{sessions:04}-r1"),
            event: "commit".into(),
            count: 10,
            errors: 0,
            throughput_per_s: Some(x),
            unit: "commit/s".into(),
            median_us: None,
            p90_us: None,
            p99_us: None,
            fitted_per_s: None,
        }
    }

    #[test]
    fn points_curve_and_peak() {
        let mut points: Vec<Point> = [(1, 1000.0), (2, 1800.0), (4, 2600.0), (8, 2500.0)]
            .into_iter()
            .map(|(n, x)| point(n, x))
            .collect();
        let (f, _) = fit(&mut points);
        let f = f.expect("a fit");
        let sec = section(&points, Some(&f), None, &Headline::event("commit"));
        let (file, svg) = plot(&sec).expect("a plot");
        assert_eq!(file, "sweep-usl.svg");
        // Four measured markers (and one in the legend), the fitted path, the peak's marker.
        assert_eq!(svg.matches(r#"<circle class="series point s0""#).count(), 5);
        assert!(svg.contains(r#"<path class="series s1" d="M"#), "{svg}");
        assert!(svg.contains(r#"<circle class="series point s2""#), "{svg}");
        assert!(
            svg.contains("peak ") && svg.contains("USL fit: λ = "),
            "{svg}"
        );
        // The curve is the fit: its value at N = 1 is λ, drawn where λ is.
        let one = f.predict(1.0);
        assert!((one - f.lambda).abs() < 1e-9);
    }

    #[test]
    fn without_a_fit_only_the_points() {
        let mut points = vec![point(2, 1000.0)];
        let (f, e) = fit(&mut points);
        assert!(f.is_none());
        let sec = section(&points, None, e.as_deref(), &Headline::event("commit"));
        let (_, svg) = plot(&sec).expect("a plot");
        assert!(
            svg.contains("point s0") && !svg.contains("series s1"),
            "{svg}"
        );
    }
}
