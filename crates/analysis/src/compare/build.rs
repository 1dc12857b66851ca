//! [`compare`]: both runs read once, each event name in both compared, and the rest put together.
//!
//! The rest: the two sides, the counter sections, the open-loop latencies and the database side.

use dbscope_core::RunDir;

use dbscope_core::stats::{Durations, Sample};

use super::load::{compare_from_intended, load, Loaded, NameFacts};
use super::manifest::{manifest_diff, storage_moves};
use super::model::{
    CompareError, CompareOptions, Comparison, EventComparison, RunSide, SideBySide, SideFacts,
};
use super::stats::compare_event;
use crate::counters::compare_sections;
use crate::summary::SummaryUs;

/// Compares run B against run A.
///
/// Names in both runs with at least two successful events in each are tested; the others are
/// shown side by side ([`SideBySide`]).
///
/// Errors: a run that cannot be read; an incomplete run without `allow_incomplete`; no measured
/// event in either run (or `event` in neither); invalid options.
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
    // The two runs are independent: read them at the same time, each buffering up to a quarter
    // of the budget (8 bytes a duration; shared with the latencies from the intended start in
    // an open-loop run); the rest is for sorting and testing one name.
    let share = if open_loop { 2 } else { 1 };
    let max_buffered = (opts.memory_bytes / 4 / 8 / share).max(1024) as usize;
    let (la, lb) = std::thread::scope(|s| {
        let h = s.spawn(|| load(a, opts.include_warmup, open_loop, max_buffered));
        let lb = load(b, opts.include_warmup, open_loop, max_buffered);
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

    // Every name either run has, A's order first; each one is tested or shown side by side.
    let mut names: Vec<&String> = la.names.iter().collect();
    names.extend(lb.names.iter().filter(|n| !la.names.contains(n)));
    names.retain(|n| opts.event.as_ref().is_none_or(|e| e == *n));
    if names.is_empty() {
        let list = |l: &Loaded| {
            if l.names.is_empty() {
                "no measured events".to_string()
            } else {
                l.names
                    .iter()
                    .map(|n| format!("{n:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        let what = match &opts.event {
            Some(e) => format!("event {e:?} is in neither run"),
            None => "neither run has measured events".into(),
        };
        return Err(CompareError::Nothing(format!(
            "nothing to compare: {what} (A has {}; B has {})",
            list(&la),
            list(&lb)
        )));
    }
    let mut events = Vec::new();
    let mut untested = Vec::new();
    for name in names {
        let ia = la.names.iter().position(|n| n == name);
        let ib = lb.names.iter().position(|n| n == name);
        if let (Some(i), Some(j)) = (ia, ib) {
            if la.durations[i].len() >= 2 && lb.durations[j].len() >= 2 {
                let da = std::mem::take(&mut la.durations[i]);
                let db = std::mem::take(&mut lb.durations[j]);
                let mut e = compare_event(name.clone(), da, db, opts)?;
                e.errors = [la.facts[i].errors.clone(), lb.facts[j].errors.clone()];
                events.push(e);
                continue;
            }
        }
        let fa = ia
            .map(|i| side_facts(std::mem::take(&mut la.durations[i]), &la.facts[i]))
            .transpose()?;
        let fb = ib
            .map(|j| side_facts(std::mem::take(&mut lb.durations[j]), &lb.facts[j]))
            .transpose()?;
        untested.push(SideBySide {
            name: name.clone(),
            reason: no_test_reason(fa.as_ref(), fb.as_ref()),
            a: fa,
            b: fb,
        });
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
        moved: storage_moves(a, b),
        events,
        untested,
        counters,
        observe,
        from_intended,
        plans: crate::plans::compare(
            crate::plans::load(a).as_ref(),
            crate::plans::load(b).as_ref(),
        ),
    })
}

/// One run's facts of a name that is not tested (durations in ns).
fn side_facts(durations: Durations, f: &NameFacts) -> Result<SideFacts, CompareError> {
    let n = durations.len();
    let summary = match n {
        0 => None,
        1 => {
            // In memory, or (a run of many names) already written out on its own.
            let one = match durations.into_sorted_file().map_err(CompareError::spill)? {
                Err(values) => values[0],
                Ok(file) => {
                    let v = file.get(0);
                    file.check().map_err(CompareError::spill)?;
                    v
                }
            };
            Some(SummaryUs::from_six([one as f64 / 1000.0; 6]))
        }
        _ => Some(SummaryUs::from_six(
            Sample::from_durations(durations, 1000.0)?.summary().six(),
        )),
    };
    let elapsed_s = f.span_ns.map(|(first, last)| (last - first) as f64 / 1e9);
    Ok(SideFacts {
        n,
        errors: f.errors.clone(),
        summary,
        elapsed_s,
        rows: f.rows,
        rows_per_s: elapsed_s
            .filter(|t| *t > 0.0 && f.rows > 0)
            .map(|t| f.rows as f64 / t),
    })
}

/// Why a name is shown without a test: a side lacks it, has only failures, or too few events.
fn no_test_reason(a: Option<&SideFacts>, b: Option<&SideFacts>) -> String {
    let why = match (a, b) {
        (None, _) => "only in B".to_string(),
        (_, None) => "only in A".to_string(),
        (Some(a), Some(b)) if a.n == 0 || b.n == 0 => match (a.n, b.n) {
            (0, 0) => "only failures in A and B".to_string(),
            (0, _) => "only failures in A".to_string(),
            _ => "only failures in B".to_string(),
        },
        (Some(a), Some(b)) if a.n == 1 && b.n == 1 => "one sample".to_string(),
        (Some(a), Some(b)) => format!("{} in A and {} in B (a test needs two in each)", a.n, b.n),
    };
    format!("{why}: no test")
}
