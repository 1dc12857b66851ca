//! The HTML form of the open-loop figures (see [`crate::openloop`]): latency from the intended start
//! (coordinated-omission corrected) beside the service time, and the backlog over time.

use std::fmt::Write;

use dbscope_core::RunDir;

use super::axes::{nice_max, time_axis};
use super::svg::{self, escape, Axis, Plot, Scale, Series, Style};
use crate::compare::Comparison;
use crate::openloop::Backlog;
use crate::report::Report;
use crate::text::{format_num, round_sig3, sig3};

/// (section HTML, plots as (file name, inline SVG)).
pub type Section = (String, Vec<(String, String)>);

/// One run's open-loop section; empty when its operations carry no intended starts.
pub fn run_section(rep: &Report) -> Section {
    let mut s = String::new();
    let mut svgs = Vec::new();
    let with: Vec<_> = rep
        .events
        .iter()
        .filter_map(|e| e.from_intended.as_ref().map(|f| (e, f)))
        .collect();
    if with.is_empty() && rep.open_loop.is_none() {
        return (s, svgs);
    }
    s.push_str("<section><h2>Open loop</h2>");
    if !with.is_empty() {
        s.push_str(
            "<h3>Latency from the intended start (CO-corrected) beside service time (µs)</h3>\
             <table class=\"num\"><thead><tr><th>event</th><th>n</th><th>late</th>\
             <th>service median</th><th>CO-corrected median</th><th>service p99</th>\
             <th>CO-corrected p99</th><th>service p99.9</th><th>CO-corrected p99.9</th>\
             <th>service max</th><th>CO-corrected max</th></tr></thead><tbody>",
        );
        for (e, f) in with {
            let svc = |v: Option<f64>| v.map_or("—".to_string(), round_sig3);
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td><td>{}</td>",
                escape(&e.name),
                format_num(f.count as f64),
                format_num(f.late as f64)
            );
            for (service, co) in [
                (e.summary_us.as_ref().map(|x| x.median), f.summary_us.median),
                (
                    e.percentiles_us.as_ref().map(|p| p.p99),
                    f.percentiles_us.p99,
                ),
                (
                    e.percentiles_us.as_ref().map(|p| p.p99_9),
                    f.percentiles_us.p99_9,
                ),
                (e.summary_us.as_ref().map(|x| x.max), f.summary_us.max),
            ] {
                let _ = write!(s, "<td>{}</td><td>{}</td>", svc(service), round_sig3(co));
            }
            s.push_str("</tr>");
        }
        s.push_str("</tbody></table>");
    }
    if let Some(b) = &rep.open_loop {
        push_backlog_line(&mut s, None, b);
        let svg = backlog_plot(&[("", b, 0)], true);
        let _ = write!(s, "<figure>{svg}</figure>");
        svgs.push(("open-loop-backlog.svg".to_string(), svg));
        push_backlog_table(&mut s, b);
    }
    s.push_str("</section>");
    (s, svgs)
}

/// The comparison's open-loop section: both runs' CO-corrected latencies beside their service
/// medians, and both backlogs over time; empty when neither run was paced.
pub fn compare_section(a: &RunDir, b: &RunDir, cmp: &Comparison) -> dbscope_core::Result<Section> {
    let mut s = String::new();
    let mut svgs = Vec::new();
    let open = |r: &RunDir| r.manifest.runner.as_ref().is_some_and(|x| x.mode == "open");
    if !open(a) && !open(b) {
        return Ok((s, svgs));
    }
    s.push_str("<section><h2>Open loop</h2>");
    if !cmp.from_intended.is_empty() {
        s.push_str(
            "<h3>Latency from the intended start (CO-corrected) beside service time (µs)</h3>\
             <table class=\"num\"><thead><tr><th>event</th><th>run</th><th>n</th><th>late</th>\
             <th>service median</th><th>CO-corrected median</th><th>CO-corrected p99</th>\
             <th>CO-corrected p99.9</th><th>CO-corrected max</th></tr></thead><tbody>",
        );
        for c in &cmp.from_intended {
            let ev = cmp.events.iter().find(|e| e.name == c.name);
            for (label, f, service) in [
                ("A", &c.a, ev.map(|e| e.a.summary.median)),
                ("B", &c.b, ev.map(|e| e.b.summary.median)),
            ] {
                let _ = write!(
                    s,
                    "<tr><td>{}</td><td>{label}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                     <td>{}</td><td>{}</td><td>{}</td></tr>",
                    escape(&c.name),
                    format_num(f.count as f64),
                    format_num(f.late as f64),
                    service.map_or("—".to_string(), round_sig3),
                    round_sig3(f.summary_us.median),
                    round_sig3(f.percentiles_us.p99),
                    round_sig3(f.percentiles_us.p99_9),
                    round_sig3(f.summary_us.max),
                );
            }
        }
        s.push_str("</tbody></table>");
    }
    let ba = crate::openloop::backlog_of(a)?;
    let bb = crate::openloop::backlog_of(b)?;
    let mut lines = Vec::new();
    for (label, slot, bl) in [("A", 0, &ba), ("B", 1, &bb)] {
        match bl {
            Some(bl) => {
                push_backlog_line(&mut s, Some(label), bl);
                lines.push((label, bl, slot));
            }
            None => {
                let _ = write!(s, "<p>{label}: closed loop (no intended starts).</p>");
            }
        }
    }
    if !lines.is_empty() {
        let svg = backlog_plot(&lines, false);
        let _ = write!(s, "<figure>{svg}</figure>");
        svgs.push(("open-loop-backlog.svg".to_string(), svg));
    }
    s.push_str("</section>");
    Ok((s, svgs))
}

fn push_backlog_line(s: &mut String, label: Option<&str>, b: &Backlog) {
    let started: u64 = b.started_per_s.iter().sum();
    let _ = write!(
        s,
        "<p>{}{} operations started; backlog (due, not started) max {}, at the end {}.</p>",
        label.map(|l| format!("{l}: ")).unwrap_or_default(),
        format_num(started as f64),
        format_num(b.max as f64),
        format_num(b.at_end as f64)
    );
    if b.operations > 0 {
        let _ = write!(
            s,
            "<p>On time {} of {} (the session idle at the intended start; the others started \
             late, behind an earlier operation of their session).",
            format_num(b.on_time as f64),
            format_num(b.operations as f64)
        );
        if let Some(l) = &b.start_lag_us {
            let _ = write!(
                s,
                " On-time operations started after their intended start by: median {} µs, p99 \
                 {} µs, max {} µs (the client's wake-up, part of every latency from the intended \
                 start).",
                sig3(l.median),
                sig3(l.p99),
                sig3(l.max)
            );
        }
        s.push_str("</p>");
    }
}

/// The per-second series as a table (the first 60 seconds, as the text report).
fn push_backlog_table(s: &mut String, b: &Backlog) {
    s.push_str(
        "<table class=\"num\"><thead><tr><th>second</th><th>due</th><th>started</th>\
         <th>backlog</th></tr></thead><tbody>",
    );
    let shown = b.backlog.len().min(60);
    for i in 0..shown {
        let _ = write!(
            s,
            "<tr><td>{i}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            format_num(b.due_per_s[i] as f64),
            format_num(b.started_per_s[i] as f64),
            format_num(b.backlog[i] as f64)
        );
    }
    s.push_str("</tbody></table>");
    if b.backlog.len() > shown {
        let _ = write!(
            s,
            "<p>… {} more seconds (report --json has them all)</p>",
            b.backlog.len() - shown
        );
    }
}

/// The backlog at the end of each second, one line per run; with `rates`, the first run's
/// operations due and started per second as steps beside it.
fn backlog_plot(runs: &[(&str, &Backlog, usize)], rates: bool) -> String {
    let mut series = Vec::new();
    let mut y_max: f64 = 1.0;
    let mut t_max: f64 = 1.0;
    for &(label, b, slot) in runs {
        if rates {
            for (name, v, slot) in [("due", &b.due_per_s, 2), ("started", &b.started_per_s, 0)] {
                let mut pts: Vec<(f64, f64)> = v
                    .iter()
                    .enumerate()
                    .map(|(i, &n)| (i as f64, n as f64))
                    .collect();
                if let Some(&(x, y)) = pts.last() {
                    pts.push((x + 1.0, y));
                }
                y_max = y_max.max(v.iter().copied().max().unwrap_or(0) as f64);
                series.push(Series {
                    name: format!("{name} per s"),
                    points: pts,
                    style: Style::Step,
                    slot,
                });
            }
        }
        let pts: Vec<(f64, f64)> = b
            .backlog
            .iter()
            .enumerate()
            .map(|(i, &n)| ((i + 1) as f64, n as f64))
            .collect();
        t_max = t_max.max(b.backlog.len() as f64);
        y_max = y_max.max(b.max as f64);
        series.push(Series {
            name: if rates {
                "backlog".to_string()
            } else {
                format!("{label} backlog")
            },
            points: pts,
            style: Style::Line,
            slot: if rates { 1 } else { slot },
        });
        if rates {
            break;
        }
    }
    let plot = Plot {
        title: "open loop: backlog at the end of each second (due, not started)".into(),
        x: time_axis(t_max),
        y: Axis {
            label: "operations".into(),
            scale: Scale::Linear,
            min: 0.0,
            max: nice_max(y_max),
            format: format_num,
        },
        series,
        shaded: Vec::new(),
    };
    svg::render(&plot)
}
