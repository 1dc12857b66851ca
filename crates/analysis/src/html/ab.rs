//! The A/B run's plot (issue 33): each round's figure of A and of B, and B/A − 1 with the interval
//! at each look, drawn from an A/B run's `ab` counters section (written by `dbscope ab`).

use dbscope_core::{CounterSection, CounterValue};

use super::axes::nice_max;
use super::svg::{self, Axis, Plot, Scale, Series, Style};
use crate::text::format_num;

/// Counters section key of an A/B run.
pub const SECTION: &str = "ab";

fn num(v: &CounterValue) -> Option<f64> {
    match v {
        CounterValue::Int(n) => Some(*n as f64),
        CounterValue::Float(f) if f.is_finite() => Some(*f),
        _ => None,
    }
}

/// The plots of an `ab` section as (file name, inline SVG): the figure per round for A and B,
/// and B's change with the interval at each look. Empty when the section holds no round.
pub(super) fn plots(sec: &CounterSection) -> Vec<(String, String)> {
    let Some(table) = sec.tables.iter().find(|t| t.key == "rounds") else {
        return Vec::new();
    };
    let col = |k: &str| table.columns.iter().position(|c| c.key == k);
    let (Some(ri), Some(ai), Some(bi), Some(ci), Some(li), Some(hi)) = (
        col("round"),
        col("a"),
        col("b"),
        col("change_pct"),
        col("low_pct"),
        col("high_pct"),
    ) else {
        return Vec::new();
    };
    let unit = table.columns[ai].unit.clone();
    let pts = |i: usize| -> Vec<(f64, f64)> {
        table
            .rows
            .iter()
            .filter_map(|r| Some((num(r.get(ri)?)?, num(r.get(i)?)?)))
            .collect()
    };
    let (a, b) = (pts(ai), pts(bi));
    if a.is_empty() && b.is_empty() {
        return Vec::new();
    }
    let rounds = a.iter().chain(&b).map(|p| p.0).fold(1.0, f64::max);
    let y_max = a.iter().chain(&b).map(|p| p.1).fold(0.0, f64::max);
    let x = Axis {
        label: "round".into(),
        scale: Scale::Linear,
        min: 0.0,
        max: rounds + 1.0,
        format: format_num,
    };
    let figures = Plot {
        title: "each round's figure: A and B".into(),
        x: x.clone(),
        y: Axis {
            label: format!("figure ({unit})"),
            scale: Scale::Linear,
            min: 0.0,
            max: nice_max(y_max),
            format: format_num,
        },
        series: vec![
            Series {
                name: "A".into(),
                points: a,
                style: Style::Points,
                slot: 0,
            },
            Series {
                name: "B".into(),
                points: b,
                style: Style::Points,
                slot: 1,
            },
        ],
        shaded: Vec::new(),
    };
    let (change, low, high) = (pts(ci), pts(li), pts(hi));
    let all = change.iter().chain(&low).chain(&high).map(|p| p.1);
    let (lo, hi_v) = all.fold((0.0f64, 0.0f64), |(l, h), v| (l.min(v), h.max(v)));
    let span = nice_max((hi_v.abs()).max(lo.abs()).max(1.0));
    let interval = Plot {
        title: "B/A − 1 per round, and the interval at each look".into(),
        x,
        y: Axis {
            label: "B/A − 1 (%)".into(),
            scale: Scale::Linear,
            min: -span,
            max: span,
            format: format_num,
        },
        series: vec![
            Series {
                name: "this round".into(),
                points: change,
                style: Style::Points,
                slot: 2,
            },
            Series {
                name: "interval high".into(),
                points: high,
                style: Style::Line,
                slot: 1,
            },
            Series {
                name: "interval low".into(),
                points: low,
                style: Style::Line,
                slot: 0,
            },
        ],
        shaded: Vec::new(),
    };
    vec![
        ("ab-rounds.svg".to_string(), svg::render(&figures)),
        ("ab-interval.svg".to_string(), svg::render(&interval)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbscope_core::{Column, CounterTable};

    #[test]
    fn rounds_and_interval_are_plotted() {
        let f = |v: f64| CounterValue::Float(v);
        let sec = CounterSection {
            key: SECTION.into(),
            title: "A/B".into(),
            final_counts: true,
            counters: Vec::new(),
            tables: vec![CounterTable {
                key: "rounds".into(),
                title: "rounds".into(),
                columns: [
                    "round",
                    "order",
                    "a",
                    "b",
                    "change_pct",
                    "low_pct",
                    "high_pct",
                ]
                .iter()
                .map(|k| Column::new(k, k, if *k == "a" { "ms" } else { "" }))
                .collect(),
                rows: (1..=4)
                    .map(|k| {
                        let look = |v: f64| if k >= 3 { f(v) } else { CounterValue::None };
                        vec![
                            CounterValue::Int(k),
                            CounterValue::Text("AB".into()),
                            f(1.0),
                            f(2.0),
                            f(100.0),
                            look(90.0),
                            look(110.0),
                        ]
                    })
                    .collect(),
            }],
            notes: Vec::new(),
        };
        let p = plots(&sec);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].0, "ab-rounds.svg");
        // Four rounds of A and of B, each with a legend marker.
        assert_eq!(
            p[0].1.matches(r#"<circle class="series point s0""#).count(),
            5
        );
        assert_eq!(
            p[0].1.matches(r#"<circle class="series point s1""#).count(),
            5
        );
        assert!(p[0].1.contains("figure (ms)"), "{}", p[0].1);
        // The interval exists from the third look: two-point lines.
        assert!(
            p[1].1.contains(r#"<path class="series s1" d="M"#),
            "{}",
            p[1].1
        );
        let empty = CounterSection {
            tables: Vec::new(),
            ..sec
        };
        assert!(plots(&empty).is_empty());
    }
}
