//! [`compare`]: both runs read once, each event name in both compared, and the rest put together.
//!
//! The rest: the two sides, the counter sections, the open-loop latencies and the database side.

use dbscope_core::RunDir;

use super::load::{compare_from_intended, load, Loaded};
use super::manifest::manifest_diff;
use super::model::{CompareError, CompareOptions, Comparison, EventComparison, RunSide, Skipped};
use super::stats::compare_event;
use crate::counters::compare_sections;

/// Compares run B against run A.
///
/// Errors: a run that cannot be read; an incomplete run without `allow_incomplete`; no event name
/// in both runs (or `event` missing from one); no event name with at least two successful events
/// in each run; invalid options.
pub fn compare(a: &RunDir, b: &RunDir, opts: &CompareOptions) -> Result<Comparison, CompareError> {
    if !(opts.noise.is_finite() && (0.0..1.0).contains(&opts.noise)) {
        return Err(CompareError::Options(format!(
            "noise band {} is not between 0% and 100%",
            opts.noise
        )));
    }
    if let Some(t) = opts.outlier_us {
        if !(t.is_finite() && t >= 0.0) {
            return Err(CompareError::Options(format!(
                "outlier threshold {t} µs is not a duration"
            )));
        }
    }
    if !(10..=1_000_000).contains(&opts.bootstrap.replicates) {
        return Err(CompareError::Options(format!(
            "{} bootstrap replicates: use 10 to 1,000,000 (default 2000)",
            opts.bootstrap.replicates
        )));
    }
    if let Some(p) = opts.quantiles.iter().find(|p| !(0.0..=1.0).contains(*p)) {
        return Err(CompareError::Options(format!(
            "quantile {p} is not in [0, 1]"
        )));
    }
    // The latencies from the intended start are compared when either run was paced open-loop.
    let open_loop = [a, b]
        .iter()
        .any(|r| r.manifest.runner.as_ref().is_some_and(|x| x.mode == "open"));
    // The two runs are independent: read them at the same time.
    let (la, lb) = std::thread::scope(|s| {
        let h = s.spawn(|| load(a, opts.include_warmup, open_loop));
        let lb = load(b, opts.include_warmup, open_loop);
        (h.join().expect("reading a run does not panic"), lb)
    });
    let (mut la, mut lb) = (la?, lb?);
    for (label, run, l) in [("A", a, &la), ("B", b, &lb)] {
        if let (Some(why), false) = (&l.incomplete, opts.allow_incomplete) {
            return Err(CompareError::Incomplete {
                label,
                path: run.path.display().to_string(),
                why: why.clone(),
            });
        }
    }

    let list = |l: &Loaded| {
        if l.names.is_empty() {
            "no successful events".to_string()
        } else {
            l.names
                .iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    let mut pairs: Vec<(String, &Vec<u64>, &Vec<u64>)> = Vec::new();
    for (i, name) in la.names.iter().enumerate() {
        if opts.event.as_ref().is_some_and(|e| e != name) {
            continue;
        }
        if let Some(j) = lb.names.iter().position(|n| n == name) {
            pairs.push((name.clone(), &la.durations[i], &lb.durations[j]));
        }
    }
    if pairs.is_empty() {
        let msg = match &opts.event {
            Some(e) => format!(
                "event {e:?} is not in both runs with successful events (A has {}; B has {})",
                list(&la),
                list(&lb)
            ),
            None => format!(
                "the runs have no event name in common (A has {}; B has {})",
                list(&la),
                list(&lb)
            ),
        };
        return Err(CompareError::Nothing(msg));
    }

    let mut events = Vec::new();
    let mut skipped = Vec::new();
    for (name, da, db) in pairs {
        if da.len() < 2 || db.len() < 2 {
            skipped.push(Skipped {
                reason: format!(
                    "A has {} and B has {} successful events; at least 2 in each are needed",
                    da.len(),
                    db.len()
                ),
                name,
            });
            continue;
        }
        events.push(compare_event(name, da, db, opts)?);
    }
    if events.is_empty() {
        let why: Vec<String> = skipped
            .iter()
            .map(|s| format!("{:?}: {}", s.name, s.reason))
            .collect();
        return Err(CompareError::Nothing(format!(
            "nothing to compare: {}",
            why.join("; ")
        )));
    }
    let side = |run: &RunDir, l: &Loaded| RunSide {
        path: run.path.display().to_string(),
        workload: run.manifest.workload.name.clone(),
        outcome: run.manifest.outcome,
        incomplete: l.incomplete.clone(),
        partial: run
            .manifest
            .workload
            .params
            .get("partial")
            .map(|p| p.as_str().map_or_else(|| p.to_string(), str::to_string)),
        events_read: l.events_read,
        elapsed_s: l
            .span_ns
            .filter(|(first, last)| last > first)
            .map(|(first, last)| (last - first) as f64 / 1e9),
    };
    let counters = compare_sections(&a.counters()?.sections, &b.counters()?.sections);
    let from_intended = compare_from_intended(&mut la.from_intended, &mut lb.from_intended);
    let (side_a, side_b) = (side(a, &la), side(b, &lb));
    for e in &mut events {
        let rate = |n: u64, s: &RunSide| s.elapsed_s.map(|t| n as f64 / t);
        e.throughput_per_s = [rate(e.a.n, &side_a), rate(e.b.n, &side_b)];
    }
    let commits = |pick: fn(&EventComparison) -> u64| {
        events
            .iter()
            .find(|e| e.name == "commit")
            .map(|e| pick(e) as f64)
    };
    let observe = crate::observe::compare_runs(a, b, commits(|e| e.a.n), commits(|e| e.b.n));
    Ok(Comparison {
        a: side_a,
        b: side_b,
        options: opts.clone(),
        manifest_diff: manifest_diff(a, b),
        events,
        skipped,
        counters,
        observe,
        from_intended,
    })
}
