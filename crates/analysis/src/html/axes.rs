//! What the plots share: axis ranges, the time axis, percentile labels, file names.
//!
//! Ranges round to decades or to round maxima; percentiles are labelled in nines; file names come
//! from event names.

use super::svg::{Axis, Scale};
use crate::text::format_num;

/// The x axis of the time-series plots.
pub(super) fn time_axis(t_max: f64) -> Axis {
    Axis {
        label: "time since start (s)".into(),
        scale: Scale::Linear,
        min: 0.0,
        max: t_max,
        format: format_num,
    }
}

pub(super) fn format_nines(n: f64) -> String {
    if n <= 0.0 {
        return "p0".into();
    }
    let q = 100.0 * (1.0 - 10f64.powf(-n));
    let s = format!("{q:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("p{s}")
}

pub(super) fn decade_floor(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 1.0;
    }
    10f64.powf(v.log10().floor())
}

pub(super) fn decade_ceil(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 10.0;
    }
    let c = 10f64.powf(v.log10().ceil());
    if c <= v {
        c * 10.0
    } else {
        c
    }
}

/// A round upper bound a little above `v` (1, 2, 2.5, 5 × 10^k).
pub(super) fn nice_max(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(v.log10().floor());
    [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|&m| m >= v * 1.05)
        .unwrap_or(10.0 * mag)
}

/// A file-name-safe version of an event name (`log file sync` → `log-file-sync`).
pub fn file_stem(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_matches('-').to_string();
    if s.is_empty() {
        "event".into()
    } else {
        s
    }
}
