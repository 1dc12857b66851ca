//! `dbscope compare A B`: is B faster than A, by how much, and how sure are we? Per event name in
//! both runs: R's `summary()` of each, Welch's t-test of the means, the Hodges–Lehmann shift with
//! the Wilcoxon rank-sum test, bootstrap intervals of quantile differences, counts over a threshold,
//! a verdict in plain words, and what differs between the two manifests.
//!
//! [`compare`] reads both runs once and reduces them to a [`Comparison`]; [`render_text`] and
//! [`render_json`] print it (the JSON is the serialization of [`Comparison`]). All latencies are in
//! microseconds; every difference is B − A. Run-level counter sections that both runs have are
//! compared side by side after the events (see [`crate::counters`]).
//!
//! The verdict calls a change only when a 95% interval lies wholly outside the noise band (±1% of
//! A's value by default): for the mean the Welch interval of the difference, for a quantile the
//! bootstrap interval of the relative change. Otherwise it says no difference was detected.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use dbscope_core::stats::{
    format_pvalue, format_r, hodges_lehmann, over_threshold, quantile_diff, welch_t_test,
    wilcoxon_rank_sum, zapsmall, BootstrapOptions, OverThreshold, QuantileDiff, RankSumTest,
    Sample, WelchTest,
};
use dbscope_core::{Error, Event, NameId, NameTable, Outcome, RunDir};

use crate::counters::{compare_sections, push_comparison_text, SectionComparison};
use crate::summary::{FromIntended, SummaryUs};
use crate::text::{
    one_line, push_wrapped_words, sig3, span, thousands, thousands_f1, threshold_us, trim_num,
    truncate_middle,
};

/// Quantiles compared by default.
pub const DEFAULT_QUANTILES: [f64; 4] = [0.5, 0.9, 0.99, 0.999];

/// What to compare and how.
#[derive(Clone, Debug, Serialize)]
pub struct CompareOptions {
    /// Compare only this event name.
    pub event: Option<String>,
    /// Count events longer than this many µs.
    pub outlier_us: Option<f64>,
    /// Half-width of the noise band as a fraction of A's value (0.01 is ±1%).
    pub noise: f64,
    /// Count warm-up events as measured events.
    pub include_warmup: bool,
    /// Compare runs with no recorded end or damaged event files instead of refusing them.
    pub allow_incomplete: bool,
    /// Bootstrap settings of the quantile intervals (seeded).
    pub bootstrap: BootstrapOptions,
    /// Quantiles to compare, each in [0, 1].
    pub quantiles: Vec<f64>,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            event: None,
            outlier_us: None,
            noise: 0.01,
            include_warmup: false,
            allow_incomplete: false,
            bootstrap: BootstrapOptions::default(),
            quantiles: DEFAULT_QUANTILES.to_vec(),
        }
    }
}

/// Why a comparison cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// A run could not be read.
    #[error(transparent)]
    Run(#[from] Error),
    /// A run has no recorded end or damaged data, and `allow_incomplete` was not set.
    #[error("{label} ({path}) is incomplete: {why}; pass --allow-incomplete to compare the events read so far")]
    Incomplete {
        /// `A` or `B`.
        label: &'static str,
        /// The run directory.
        path: String,
        /// What is missing.
        why: String,
    },
    /// Nothing to compare.
    #[error("{0}")]
    Nothing(String),
    /// Invalid options.
    #[error("{0}")]
    Options(String),
}

/// The comparison of run B against run A; serialized as is for `--json`.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// Run A (the baseline).
    pub a: RunSide,
    /// Run B (the candidate).
    pub b: RunSide,
    /// The options used (the noise band, the bootstrap seed, ...).
    pub options: CompareOptions,
    /// Manifest fields whose values differ between A and B (timestamps and command lines left out).
    pub manifest_diff: Vec<ManifestDiff>,
    /// One entry per event name in both runs with at least two successful events in each, in order
    /// of first appearance in A.
    pub events: Vec<EventComparison>,
    /// Event names left out, and why.
    pub skipped: Vec<Skipped>,
    /// Run-level counter sections both runs have (same key): their numeric counters side by side
    /// (left out of the JSON when there are none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub counters: Vec<SectionComparison>,
    /// The database's and the OS's side of both runs ([`crate::observe`]), when either has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observe: Option<crate::observe::ObserveComparison>,
    /// Latency from the intended start per event name, when a run was paced open-loop (left out
    /// of the JSON otherwise).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub from_intended: Vec<FromIntendedComparison>,
}

/// One of the two runs.
#[derive(Clone, Debug, Serialize)]
pub struct RunSide {
    /// The run directory.
    pub path: String,
    /// Workload name.
    pub workload: String,
    /// How the run ended.
    pub outcome: Outcome,
    /// Why its data may be incomplete (only with `allow_incomplete`).
    pub incomplete: Option<String>,
    /// Events read (all names, warm-up and errors included).
    pub events_read: u64,
    /// Elapsed time of the measured events, s: from the first one's start to the last one's end
    /// (what "elapsed time reduced by 70%" compares); `None` without measured events.
    pub elapsed_s: Option<f64>,
}

/// A manifest field that differs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ManifestDiff {
    /// Dotted path, e.g. `target.settings_effective.synchronous`.
    pub field: String,
    /// A's value (`None`: absent in A).
    pub a: Option<String>,
    /// B's value (`None`: absent in B).
    pub b: Option<String>,
}

/// An event name left out of the comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Skipped {
    /// Event name.
    pub name: String,
    /// Why.
    pub reason: String,
}

/// R's `summary()` of one side, in µs, with n and sd (JSON: `n`, `min` … `max`, `sd` side by side).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SideSummary {
    /// Successful measured events.
    pub n: u64,
    /// Min., 1st Qu., Median, Mean, 3rd Qu., Max. (type-7 quantiles).
    #[serde(flatten)]
    pub summary: SummaryUs,
    /// Sample standard deviation.
    pub sd: f64,
}

/// The comparison of one event name.
#[derive(Clone, Debug, Serialize)]
pub struct EventComparison {
    /// Event name.
    pub name: String,
    /// A's summary (µs).
    pub a: SideSummary,
    /// B's summary (µs).
    pub b: SideSummary,
    /// Welch's t-test of B against A (difference B − A, µs); `None` when the data are constant.
    pub welch: Option<WelchTest>,
    /// Why there is no t-test, when there is none.
    pub welch_note: Option<String>,
    /// Wilcoxon rank-sum test of B against A (`W` is B's statistic).
    pub rank_test: RankSumTest,
    /// Hodges–Lehmann shift of B against A: the median of all B − A differences (µs).
    pub hl_shift_us: f64,
    /// Quantile differences with bootstrap intervals (µs and relative).
    pub quantiles: Vec<QuantileDiff>,
    /// Events over the outlier threshold in A and B, when `--outlier` was given.
    pub outliers: Option<[OverThreshold; 2]>,
    /// Successful measured events per second of each run's elapsed time, A and B.
    pub throughput_per_s: [Option<f64>; 2],
    /// The verdict.
    pub verdict: Verdict,
}

/// Which way a statistic moved, judged against the noise band.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// B is slower (larger latencies): the interval lies wholly above the band.
    Slower,
    /// B is faster: the interval lies wholly below the band.
    Faster,
    /// The interval overlaps the band: no difference detected.
    None,
}

/// The verdict for one event name.
#[derive(Clone, Debug, Serialize)]
pub struct Verdict {
    /// Overall: `slower`, `faster`, `mixed` (some statistics each way) or `none`.
    pub call: String,
    /// The mean's direction.
    pub mean: Direction,
    /// Each compared quantile's direction, in the order of [`EventComparison::quantiles`].
    pub quantiles: Vec<Direction>,
    /// The verdict in plain words.
    pub text: String,
}

/// Successful measured durations per event name of one run.
struct Loaded {
    names: Vec<String>,
    durations: Vec<Vec<u64>>,
    events_read: u64,
    incomplete: Option<String>,
    /// First start and last end of the measured events (ns since the run's origin).
    span_ns: Option<(u64, u64)>,
    /// Only when asked for (open-loop runs): per event name, in order of first appearance of any
    /// of its events (as `report` lists them), the latencies from the intended start of its
    /// successful measured events that carry one, and how many of those started late.
    from_intended: Vec<IntendedAcc>,
}

/// One event name's latencies from the intended start, while a run is read.
struct IntendedAcc {
    name: String,
    latencies: Vec<u64>,
    late: u64,
}

/// Reads a run's event files once; with `open_loop`, also collects each name's latencies from
/// the intended start.
fn load(run: &RunDir, include_warmup: bool, open_loop: bool) -> Result<Loaded, Error> {
    let mut readable = run.clone();
    let mut missing = Vec::new();
    readable.manifest.event_files.retain(|f| {
        let present = run.path.join(f).is_file();
        if !present {
            missing.push(f.clone());
        }
        present
    });
    let mut names: Vec<String> = Vec::new();
    let mut durations: Vec<Vec<u64>> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut block_ids: HashMap<NameId, usize> = HashMap::new();
    let mut span_ns: Option<(u64, u64)> = None;
    let mut from_intended: Vec<IntendedAcc> = Vec::new();
    let mut intended_index: HashMap<String, usize> = HashMap::new();
    let mut intended_ids: HashMap<NameId, usize> = HashMap::new();
    let (_, tail) = readable.for_each_block(|table: &NameTable, events: &[Event]| {
        block_ids.clear();
        intended_ids.clear();
        for e in events {
            // Every event places its name in the open-loop order, as `report` lists names.
            let intended_slot = open_loop.then(|| {
                *intended_ids.entry(e.name).or_insert_with(|| {
                    let name = table.name(e.name);
                    *intended_index.entry(name.clone()).or_insert_with(|| {
                        from_intended.push(IntendedAcc {
                            name,
                            latencies: Vec::new(),
                            late: 0,
                        });
                        from_intended.len() - 1
                    })
                })
            });
            if e.is_error() || (e.is_warmup() && !include_warmup) {
                continue;
            }
            if let (Some(slot), Some(intended)) = (intended_slot, e.intended_start_ns) {
                let acc = &mut from_intended[slot];
                acc.latencies.push(e.latency_from_intended_ns());
                acc.late += u64::from(e.start_ns > intended);
            }
            let end = e.start_ns.saturating_add(e.duration_ns);
            span_ns = Some(match span_ns {
                Some((first, last)) => (first.min(e.start_ns), last.max(end)),
                None => (e.start_ns, end),
            });
            let slot = *block_ids.entry(e.name).or_insert_with(|| {
                let name = table.name(e.name);
                *index.entry(name.clone()).or_insert_with(|| {
                    names.push(name);
                    durations.push(Vec::new());
                    names.len() - 1
                })
            });
            durations[slot].push(e.duration_ns);
        }
    })?;
    let mut why = Vec::new();
    if run.manifest.outcome == Outcome::Running {
        why.push("the run did not record an end (it is still being written, or was killed)".into());
    }
    if let Some(p) = &tail.problem {
        why.push(format!(
            "its event data is damaged or torn ({p}; {} bytes ignored after {} complete blocks)",
            tail.ignored_bytes, tail.blocks
        ));
    }
    if !missing.is_empty() {
        why.push(format!("event files missing: {}", missing.join(", ")));
    }
    if let Some(written) = run.manifest.events_written {
        if tail.events < written {
            why.push(format!(
                "the manifest records {written} events but only {} could be read",
                tail.events
            ));
        }
    }
    Ok(Loaded {
        names,
        durations,
        events_read: tail.events,
        incomplete: (!why.is_empty()).then(|| why.join("; ")),
        span_ns,
        from_intended,
    })
}

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

/// One event name's latency from the intended start in two runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FromIntendedComparison {
    /// Event name.
    pub name: String,
    /// Run A's figures.
    pub a: FromIntended,
    /// Run B's figures.
    pub b: FromIntended,
}

/// The CO-corrected latencies of the event names both runs have with intended starts, in A's
/// order; empty unless the runs were read with `open_loop`.
fn compare_from_intended(
    a: &mut [IntendedAcc],
    b: &mut [IntendedAcc],
) -> Vec<FromIntendedComparison> {
    a.iter_mut()
        .filter_map(|ea| {
            let eb = b.iter_mut().find(|e| e.name == ea.name)?;
            Some(FromIntendedComparison {
                name: ea.name.clone(),
                a: FromIntended::of(&mut ea.latencies, ea.late)?,
                b: FromIntended::of(&mut eb.latencies, eb.late)?,
            })
        })
        .collect()
}

fn side_summary(s: &Sample) -> SideSummary {
    let m = s.summary();
    SideSummary {
        n: m.n,
        summary: SummaryUs::from_six(m.six(1.0)),
        sd: m.sd,
    }
}

fn compare_event(
    name: String,
    da: &[u64],
    db: &[u64],
    opts: &CompareOptions,
) -> Result<EventComparison, CompareError> {
    // Sorting dominates: do A and B at the same time.
    let (sa, sb) = std::thread::scope(|s| {
        let h = s.spawn(|| Sample::from_u64(da, 1000.0));
        let sb = Sample::from_u64(db, 1000.0);
        (h.join().expect("sorting does not panic"), sb)
    });
    let (sa, sb) = (sa?, sb?);
    let (welch, welch_note) = match welch_t_test(&sb, &sa) {
        Ok(w) => (Some(w), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let rank_test = wilcoxon_rank_sum(&sb, &sa);
    let hl_shift_us = hodges_lehmann(&sb, &sa)?;
    let quantiles = opts
        .quantiles
        .iter()
        .map(|&p| quantile_diff(&sa, &sb, p, &opts.bootstrap))
        .collect::<Result<Vec<_>, _>>()?;
    let outliers = opts.outlier_us.map(|t| {
        [
            over_threshold(sa.sorted().iter().copied(), t),
            over_threshold(sb.sorted().iter().copied(), t),
        ]
    });
    let verdict = verdict(&sa, welch.as_ref(), &quantiles, opts.noise);
    Ok(EventComparison {
        name,
        a: side_summary(&sa),
        b: side_summary(&sb),
        welch,
        welch_note,
        rank_test,
        hl_shift_us,
        quantiles,
        outliers,
        throughput_per_s: [None, None],
        verdict,
    })
}

/// Direction of an interval `[low, high]` of a relative change against the band `±noise`.
fn direction(low: f64, high: f64, noise: f64) -> Direction {
    if low > noise {
        Direction::Slower
    } else if high < -noise {
        Direction::Faster
    } else {
        Direction::None
    }
}

fn verdict(a: &Sample, welch: Option<&WelchTest>, q: &[QuantileDiff], noise: f64) -> Verdict {
    let band = format!("±{}%", trim_num(noise * 100.0));
    let mean_dir = match welch {
        Some(w) if a.mean() > 0.0 => direction(w.ci_low / a.mean(), w.ci_high / a.mean(), noise),
        _ => Direction::None,
    };
    let q_dirs: Vec<Direction> = q
        .iter()
        .map(|d| match (d.rel_low, d.rel_high) {
            (Some(l), Some(h)) => direction(l, h, noise),
            _ => Direction::None,
        })
        .collect();
    let dirs: Vec<Direction> = std::iter::once(mean_dir)
        .chain(q_dirs.iter().copied())
        .filter(|d| *d != Direction::None)
        .collect();
    let call = if dirs.is_empty() {
        "none"
    } else if dirs.iter().all(|d| *d == Direction::Slower) {
        "slower"
    } else if dirs.iter().all(|d| *d == Direction::Faster) {
        "faster"
    } else {
        "mixed"
    };
    let mut parts = Vec::new();
    if let (Some(w), true) = (welch, mean_dir != Direction::None) {
        let [d, l, h] = signed3(&[w.diff, w.ci_low, w.ci_high], 3);
        parts.push(format!(
            "{d} µs mean (95% CI {l} … {h}), p {}",
            p_text(w.p_value)
        ));
    }
    for (d, dir) in q.iter().zip(&q_dirs) {
        if *dir == Direction::None {
            continue;
        }
        if let (Some(r), Some(l), Some(h)) = (d.rel, d.rel_low, d.rel_high) {
            let [r, l, h] = signed3(&[r * 100.0, l * 100.0, h * 100.0], 2);
            let word = if call == "mixed" {
                if *dir == Direction::Slower {
                    " slower"
                } else {
                    " faster"
                }
            } else {
                ""
            };
            parts.push(format!(
                "{} {r}% (CI {l} … {h}%){word}",
                quantile_label(d.p)
            ));
        }
    }
    let text = match call {
        "none" => format!("no difference detected beyond {band}"),
        c => {
            let head = match c {
                "slower" => "B is slower",
                "faster" => "B is faster",
                _ => "B differs",
            };
            let mut t = format!("{head}: {}", parts.join("; "));
            if mean_dir == Direction::None {
                t.push_str(&format!("; the mean shows no difference beyond {band}"));
            }
            t
        }
    };
    Verdict {
        call: call.to_string(),
        mean: mean_dir,
        quantiles: q_dirs,
        text,
    }
}

/// `p < 2.2e-16` or `p = 0.0312`, as R prints it after "p-value".
fn p_text(p: f64) -> String {
    let f = format_pvalue(p);
    if f.starts_with('<') {
        f
    } else {
        format!("= {f}")
    }
}

/// `0.5` is `p50`, `0.999` is `p99.9`.
pub fn quantile_label(p: f64) -> String {
    format!("p{}", trim_num(p * 100.0))
}

/// Three numbers formatted together as R's `format(x, digits)` would (common decimals), each with
/// an explicit sign and no padding.
fn signed3(v: &[f64; 3], digits: usize) -> [String; 3] {
    let f = format_r(&zapsmall(v), digits);
    let mut out: [String; 3] = Default::default();
    for (i, s) in f.iter().enumerate() {
        let s = s.trim();
        out[i] = if s.starts_with('-') {
            s.replacen('-', "−", 1)
        } else {
            format!("+{s}")
        };
    }
    out
}

/// Manifest fields that differ between A and B.
pub fn manifest_diff(a: &RunDir, b: &RunDir) -> Vec<ManifestDiff> {
    let fa = flat_manifest(a);
    let fb = flat_manifest(b);
    let mut keys: Vec<&String> = fa.keys().chain(fb.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| fa.get(*k) != fb.get(*k))
        .map(|k| ManifestDiff {
            field: k.clone(),
            a: fa.get(k).cloned(),
            b: fb.get(k).cloned(),
        })
        .collect()
}

/// Fields that always differ between two runs and say nothing about the cause of a change.
const DIFF_IGNORED: [&str; 8] = [
    "started_utc",
    "ended_utc",
    "clock_origin_unix_ns",
    "events_written",
    "command_line",
    "event_files",
    "outcome_detail",
    "target.location",
];

fn flat_manifest(run: &RunDir) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(mut v) = serde_json::to_value(&run.manifest) else {
        return out;
    };
    // Requested settings are (name, value) pairs: key them by name.
    if let Some(t) = v.get_mut("target").and_then(|t| t.as_object_mut()) {
        if let Some(serde_json::Value::Array(pairs)) = t.remove("settings_requested") {
            let mut m = serde_json::Map::new();
            for p in pairs {
                if let (Some(k), Some(val)) = (p.get(0).and_then(|k| k.as_str()), p.get(1)) {
                    m.insert(k.to_string(), val.clone());
                }
            }
            t.insert("settings_requested".into(), serde_json::Value::Object(m));
        }
    }
    flatten("", &v, &mut out);
    out.retain(|k, _| {
        !DIFF_IGNORED
            .iter()
            .any(|i| k == i || k.starts_with(&format!("{i}.")))
    });
    out
}

fn flatten(prefix: &str, v: &serde_json::Value, out: &mut BTreeMap<String, String>) {
    let key = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                flatten(&key(k), v, out);
            }
        }
        serde_json::Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                flatten(&key(&i.to_string()), v, out);
            }
        }
        serde_json::Value::Null => {}
        serde_json::Value::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

/// Pretty JSON of the comparison, with a trailing newline.
pub fn render_json(c: &Comparison) -> String {
    let mut s = serde_json::to_string_pretty(c).unwrap_or_else(|e| {
        serde_json::json!({ "error": format!("cannot encode the comparison: {e}") }).to_string()
    });
    s.push('\n');
    s
}

/// The comparison as text for a terminal.
pub fn render_text(c: &Comparison) -> String {
    let mut out = String::new();
    for (label, s) in [("A", &c.a), ("B", &c.b)] {
        out.push_str(&format!(
            "{label}  {}  ({}, {}, {} events read)\n",
            one_line(&s.path),
            one_line(&s.workload),
            s.outcome.as_str(),
            thousands(s.events_read)
        ));
        if let Some(why) = &s.incomplete {
            out.push_str(&format!("   INCOMPLETE: {}\n", one_line(why)));
        }
    }
    if let Some(line) = elapsed_line(c) {
        out.push_str(&line);
        out.push('\n');
    }
    if c.manifest_diff.is_empty() {
        out.push_str("manifests: no differences (timestamps and command lines aside)\n");
    } else {
        out.push_str("manifests differ:\n");
        let w = c
            .manifest_diff
            .iter()
            .map(|d| d.field.chars().count())
            .max()
            .unwrap_or(0);
        for d in &c.manifest_diff {
            let v = |x: &Option<String>| {
                x.as_deref()
                    .map(one_line)
                    .unwrap_or_else(|| "(absent)".into())
            };
            out.push_str(&format!(
                "   {:<w$}  A: {}   B: {}\n",
                d.field,
                v(&d.a),
                v(&d.b)
            ));
        }
    }
    for e in &c.events {
        out.push('\n');
        push_event(&mut out, e, c);
    }
    for s in &c.skipped {
        out.push_str(&format!("\n{}: skipped: {}\n", one_line(&s.name), s.reason));
    }
    push_from_intended_text(&mut out, &c.from_intended);
    for s in &c.counters {
        push_comparison_text(&mut out, s);
    }
    if let Some(o) = &c.observe {
        crate::observe::push_compare_text(&mut out, o);
    }
    out
}

/// `compare`'s lines for the CO-corrected latencies.
fn push_from_intended_text(out: &mut String, c: &[FromIntendedComparison]) {
    if c.is_empty() {
        return;
    }
    out.push_str(
        "
latency from the intended start (CO-corrected, open loop), µs
",
    );
    out.push_str(
        "   event                  median A    median B      p99 A      p99 B    p99.9 A    p99.9 B
",
    );
    for e in c {
        out.push_str(&format!(
            "   {:<20} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}\n",
            truncate_middle(&e.name, 20),
            sig3(e.a.summary_us.median),
            sig3(e.b.summary_us.median),
            sig3(e.a.percentiles_us.p99),
            sig3(e.b.percentiles_us.p99),
            sig3(e.a.percentiles_us.p99_9),
            sig3(e.b.percentiles_us.p99_9),
        ));
    }
}

/// `elapsed  A 12.345 s   B 3.701 s   B/A 0.300 (−70.0%)`: the measured span of each run, the
/// seed's headline figure ("elapsed time reduced by 70%").
pub fn elapsed_line(c: &Comparison) -> Option<String> {
    let (a, b) = (c.a.elapsed_s?, c.b.elapsed_s?);
    Some(format!(
        "elapsed  A {}   B {}   B/A {:.3} ({})",
        span(a),
        span(b),
        b / a,
        signed_percent(b / a - 1.0)
    ))
}

/// `+12.3%` or `−70.0%` (a real minus sign, as the other changes print).
fn signed_percent(x: f64) -> String {
    let p = x * 100.0;
    if p < 0.0 {
        format!("\u{2212}{:.1}%", -p)
    } else {
        format!("+{p:.1}%")
    }
}

fn push_event(out: &mut String, e: &EventComparison, c: &Comparison) {
    out.push_str(&format!(
        "{}   n  A {}   B {}\n",
        one_line(&e.name),
        thousands(e.a.n),
        thousands(e.b.n)
    ));
    if let [Some(ta), Some(tb)] = e.throughput_per_s {
        out.push_str(&format!(
            "  throughput  A {}/s   B {}/s   ({})\n",
            thousands_f1(ta),
            thousands_f1(tb),
            if ta > 0.0 {
                signed_percent(tb / ta - 1.0)
            } else {
                "-".into()
            }
        ));
    }
    // Both summaries formatted together, as R would print rbind(summary(a), summary(b)).
    const NAMES: [&str; 6] = ["Min.", "1st Qu.", "Median", "Mean", "3rd Qu.", "Max."];
    let six = |s: &SideSummary| s.summary.six();
    let all: Vec<f64> = six(&e.a).into_iter().chain(six(&e.b)).collect();
    let f = format_r(&zapsmall(&all), 4);
    let w = f
        .iter()
        .map(|s| s.len())
        .chain(NAMES.iter().map(|n| n.len()))
        .max()
        .unwrap_or(0);
    let head: Vec<String> = NAMES.iter().map(|n| format!("{n:>w$}")).collect();
    out.push_str(&format!("     {}   (µs)\n", head.join(" ")));
    for (label, row, s) in [("A", &f[..6], &e.a), ("B", &f[6..], &e.b)] {
        let cells: Vec<String> = row.iter().map(|v| format!("{v:>w$}")).collect();
        let sd = format_r(&[s.sd], 4).join("");
        out.push_str(&format!(
            "  {label}  {}   sd {}\n",
            cells.join(" "),
            sd.trim()
        ));
    }
    match &e.welch {
        Some(wt) => {
            let [d, l, h] = signed3(&[wt.diff, wt.ci_low, wt.ci_high], 4);
            out.push_str(&format!(
                "  mean    B − A {d} µs (95% CI {l} … {h})   Welch t = {}, df = {}, p {}\n",
                format_r(&[wt.t], 7).join("").trim(),
                format_r(&[wt.df], 7).join("").trim(),
                p_text(wt.p_value)
            ));
        }
        None => out.push_str(&format!(
            "  mean    no t-test: {}\n",
            e.welch_note.as_deref().unwrap_or("not computed")
        )),
    }
    let [hl, _, _] = signed3(&[e.hl_shift_us, e.hl_shift_us, e.hl_shift_us], 4);
    out.push_str(&format!(
        "  shift   Hodges–Lehmann {hl} µs   Wilcoxon rank-sum W = {}, p {}\n",
        format_r(&[e.rank_test.w], 7).join("").trim(),
        p_text(e.rank_test.p_value)
    ));
    out.push_str(&format!(
        "  {:<8}{:>12} {:>12}   {:<32} change (95% CI, {} replicates, seed {})\n",
        "quantile",
        "A",
        "B",
        "B − A (95% CI)",
        c.options.bootstrap.replicates,
        c.options.bootstrap.seed
    ));
    for q in &e.quantiles {
        let ab = format_r(&zapsmall(&[q.a, q.b]), 4);
        let [d, l, h] = signed3(&[q.diff, q.diff_low, q.diff_high], 3);
        let rel = match (q.rel, q.rel_low, q.rel_high) {
            (Some(r), Some(lo), Some(hi)) => {
                let [r, lo, hi] = signed3(&[r * 100.0, lo * 100.0, hi * 100.0], 2);
                format!("{r}% ({lo} … {hi}%)")
            }
            _ => "- (A's quantile is not positive)".into(),
        };
        out.push_str(&format!(
            "  {:<8}{:>12} {:>12}   {:<32} {rel}\n",
            quantile_label(q.p),
            ab[0].trim(),
            ab[1].trim(),
            format!("{d} ({l} … {h})")
        ));
    }
    if let Some([oa, ob]) = &e.outliers {
        out.push_str(&format!(
            "  over {}   A {} ({}%)   B {} ({}%)\n",
            threshold_us(oa.threshold),
            thousands(oa.count),
            format_r(&[oa.rate * 100.0], 3).join("").trim(),
            thousands(ob.count),
            format_r(&[ob.rate * 100.0], 3).join("").trim()
        ));
    }
    push_wrapped_words(out, "  verdict ", &e.verdict.text);
}

#[cfg(test)]
mod tests {
    use super::*;
    use dbscope_core::fake::FakeRun;
    use dbscope_core::manifest::{TargetInfo, WorkloadInfo};
    use dbscope_core::Manifest;
    use std::path::Path;

    fn write_run(dir: &Path, sync: &str, events: &[(&str, u64)]) -> RunDir {
        fake_run(dir, sync, events).finish()
    }

    /// A run of `events` (name, duration) one µs apart, its target asked for `synchronous=sync`.
    fn fake_run(dir: &Path, sync: &str, events: &[(&str, u64)]) -> FakeRun {
        let mut m = Manifest::new("workload", WorkloadInfo::default(), 1);
        m.target = Some(TargetInfo {
            kind: "sqlite".into(),
            settings_requested: vec![("synchronous".into(), sync.into())],
            ..TargetInfo::default()
        });
        m.outcome = Outcome::Complete;
        m.events_written = Some(events.len() as u64);
        let mut f = FakeRun::with_manifest(dir, m);
        let evs: Vec<Event> = events
            .iter()
            .enumerate()
            .map(|(i, (n, d))| FakeRun::event(f.name(n), 0, i as u64 * 1000, *d))
            .collect();
        f.block(&evs);
        f
    }

    fn lat(n: usize, base: u64, spread: u64) -> Vec<u64> {
        (0..n as u64).map(|i| base + (i * 7919) % spread).collect()
    }

    #[test]
    fn clear_slowdown_is_called_with_its_cause() {
        let dir = tempfile::tempdir().unwrap();
        let a: Vec<(&str, u64)> = lat(3000, 100_000, 20_000)
            .into_iter()
            .map(|d| ("commit", d))
            .collect();
        let b: Vec<(&str, u64)> = lat(3000, 130_000, 20_000)
            .into_iter()
            .map(|d| ("commit", d))
            .collect();
        let ra = write_run(&dir.path().join("a"), "normal", &a);
        let rb = write_run(&dir.path().join("b"), "full", &b);
        let c = compare(&ra, &rb, &CompareOptions::default()).unwrap();
        let e = &c.events[0];
        assert_eq!(e.verdict.call, "slower");
        assert!(
            e.verdict.text.starts_with("B is slower: +30.0 µs mean"),
            "{}",
            e.verdict.text
        );
        assert!((e.hl_shift_us - 30.0).abs() < 1e-9);
        assert_eq!(
            c.manifest_diff,
            vec![ManifestDiff {
                field: "target.settings_requested.synchronous".into(),
                a: Some("normal".into()),
                b: Some("full".into()),
            }]
        );
        let text = render_text(&c);
        assert!(
            text.contains("target.settings_requested.synchronous  A: normal   B: full"),
            "{text}"
        );
        assert!(text.contains("p < 2.2e-16"), "{text}");
        let json: serde_json::Value = serde_json::from_str(&render_json(&c)).unwrap();
        assert_eq!(json["events"][0]["verdict"]["call"], "slower");
    }

    #[test]
    fn issue_13_elapsed_time_reduced_by_70_percent() {
        // Seed 001's headline: the same 1,000 commits, back to back, 10 ms each on A and 3 ms on B.
        let dir = tempfile::tempdir().unwrap();
        let run = |name: &str, ms: u64| {
            let mut f = FakeRun::new(&dir.path().join(name));
            let c = f.name("commit");
            let evs: Vec<Event> = (0..1000u64)
                .map(|i| FakeRun::event(c, 0, i * ms * 1_000_000, ms * 1_000_000))
                .collect();
            f.block(&evs);
            f.finish()
        };
        let (a, b) = (run("a", 10), run("b", 3));
        let c = compare(&a, &b, &CompareOptions::default()).unwrap();
        assert_eq!(c.a.elapsed_s, Some(10.0));
        assert_eq!(c.b.elapsed_s, Some(3.0));
        assert_eq!(
            c.events[0].throughput_per_s,
            [Some(100.0), Some(1000.0 / 3.0)]
        );
        let text = render_text(&c);
        assert!(
            text.contains("elapsed  A 10.000 s   B 3.000 s   B/A 0.300 (\u{2212}70.0%)"),
            "{text}"
        );
        assert!(
            text.contains("throughput  A 100.0/s   B 333.3/s   (+233.3%)"),
            "{text}"
        );
        let json: serde_json::Value = serde_json::from_str(&render_json(&c)).unwrap();
        assert_eq!(json["b"]["elapsed_s"], 3.0);
        let page =
            crate::html::render_compare(&a, &b, &c, &crate::html::HtmlOptions::default()).unwrap();
        assert!(
            page.html.contains("B/A 0.300"),
            "the HTML header says it too"
        );
    }

    #[test]
    fn text_layout_is_exact() {
        // R 4.2.2: x <- c(10, 12, 11, 13, 12); y <- c(14, 15, 13, 16, 15) (µs);
        // issue 13: elapsed = first start to last end (A 0 … 4 + 12 µs, B 0 … 4 + 15 µs) and
        // throughput = n / elapsed (5 / 16 µs, 5 / 19 µs);
        // t.test(y, x): t = 4.1603, df = 8, p-value = 0.003164, CI 1.337117 4.662883;
        // wilcox.test(y, x, exact = FALSE): W = 24.5, p-value = 0.01533; sd(x) = 1.140175.
        let dir = tempfile::tempdir().unwrap();
        let us =
            |v: &[u64]| -> Vec<(&str, u64)> { v.iter().map(|&x| ("commit", x * 1000)).collect() };
        let ra = write_run(&dir.path().join("a"), "normal", &us(&[10, 12, 11, 13, 12]));
        let rb = write_run(&dir.path().join("b"), "normal", &us(&[14, 15, 13, 16, 15]));
        let o = CompareOptions {
            outlier_us: Some(14.5),
            ..CompareOptions::default()
        };
        let mut c = compare(&ra, &rb, &o).unwrap();
        c.a.path = "runs/a".into();
        c.b.path = "runs/b".into();
        let want = "\
A  runs/a  (, complete, 5 events read)
B  runs/b  (, complete, 5 events read)
elapsed  A 16.000 µs   B 19.000 µs   B/A 1.188 (+18.8%)
manifests: no differences (timestamps and command lines aside)

commit   n  A 5   B 5
  throughput  A 312,500.0/s   B 263,157.9/s   (−15.8%)
        Min. 1st Qu.  Median    Mean 3rd Qu.    Max.   (µs)
  A     10.0    11.0    12.0    11.6    12.0    13.0   sd 1.14
  B     13.0    14.0    15.0    14.6    15.0    16.0   sd 1.14
  mean    B − A +3.000 µs (95% CI +1.337 … +4.663)   Welch t = 4.160251, df = 8, p = 0.003164
  shift   Hodges–Lehmann +3 µs   Wilcoxon rank-sum W = 24.5, p = 0.01533
  quantile           A            B   B − A (95% CI)                   change (95% CI, 2000 replicates, seed 1)
";
        let text = render_text(&c);
        assert!(text.starts_with(want), "{text}");
        assert!(
            text.contains("  over 14.5 µs   A 0 (0%)   B 3 (60%)\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "  verdict B is slower: +3.00 µs mean (95% CI +1.34 … +4.66), p = 0.003164"
            ),
            "{text}"
        );
    }

    #[test]
    fn same_run_is_no_difference() {
        let dir = tempfile::tempdir().unwrap();
        let a: Vec<(&str, u64)> = lat(500, 1_000, 900).into_iter().map(|d| ("q", d)).collect();
        let ra = write_run(&dir.path().join("a"), "normal", &a);
        let c = compare(&ra, &ra, &CompareOptions::default()).unwrap();
        assert_eq!(c.events[0].verdict.call, "none");
        assert_eq!(
            c.events[0].verdict.text,
            "no difference detected beyond ±1%"
        );
        assert!(c.manifest_diff.is_empty());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

        /// compare(A, A) never reports a difference, whatever the data and the bootstrap seed.
        #[test]
        fn compare_a_with_itself_never_calls_a_change(
            d in proptest::collection::vec(1u64..50_000_000, 2..400),
            seed in proptest::prelude::any::<u64>(),
            noise in 0.0f64..0.05,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let evs: Vec<(&str, u64)> = d.iter().map(|&v| ("e", v)).collect();
            let ra = write_run(&dir.path().join("a"), "x", &evs);
            let mut o = CompareOptions { noise, ..CompareOptions::default() };
            o.bootstrap.seed = seed;
            o.bootstrap.replicates = 300;
            let c = compare(&ra, &ra, &o).unwrap();
            proptest::prop_assert_eq!(&c.events[0].verdict.call, "none");
            proptest::prop_assert!(c.events[0].verdict.text.starts_with("no difference detected"));
        }
    }

    #[test]
    fn tail_only_change_is_seen() {
        // Same bulk, but B's slowest 2% are ten times slower: the mean interval may overlap the
        // band, the p99 interval does not.
        let dir = tempfile::tempdir().unwrap();
        let base = lat(20_000, 1_000_000, 100_000);
        let mut tail = base.clone();
        tail.sort_unstable();
        let n = tail.len();
        for v in &mut tail[n - n / 50..] {
            *v *= 10;
        }
        let a: Vec<(&str, u64)> = base.into_iter().map(|d| ("io", d)).collect();
        let b: Vec<(&str, u64)> = tail.into_iter().map(|d| ("io", d)).collect();
        let ra = write_run(&dir.path().join("a"), "x", &a);
        let rb = write_run(&dir.path().join("b"), "x", &b);
        let c = compare(&ra, &rb, &CompareOptions::default()).unwrap();
        let v = &c.events[0].verdict;
        assert_eq!(v.quantiles[0], Direction::None, "p50 unchanged: {}", v.text);
        assert_eq!(v.quantiles[2], Direction::Slower, "{}", v.text);
        assert!(v.text.contains("p99 +"), "{}", v.text);
    }

    #[test]
    fn bad_input_says_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let ra = write_run(&dir.path().join("a"), "x", &[("commit", 5), ("commit", 6)]);
        let rb = write_run(&dir.path().join("b"), "x", &[("wait", 5), ("wait", 6)]);
        let e = compare(&ra, &rb, &CompareOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no event name in common (A has \"commit\"; B has \"wait\")"),
            "{e}"
        );
        let rc = write_run(&dir.path().join("c"), "x", &[("commit", 5)]);
        let e = compare(&ra, &rc, &CompareOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("A has 2 and B has 1 successful events; at least 2"),
            "{e}"
        );
        let mut running = rc.clone();
        running.manifest.outcome = Outcome::Running;
        let e = compare(&ra, &running, &CompareOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("B (") && e.contains("did not record an end"),
            "{e}"
        );
    }

    #[test]
    fn counter_sections_in_both_runs_are_compared() {
        let dir = tempfile::tempdir().unwrap();
        let evs: Vec<(&str, u64)> = lat(50, 1_000, 900).into_iter().map(|d| ("q", d)).collect();
        let ra = write_run(&dir.path().join("a"), "x", &evs);
        let rb = write_run(&dir.path().join("b"), "x", &evs);
        let c = compare(&ra, &rb, &CompareOptions::default()).unwrap();
        assert!(c.counters.is_empty());
        let json: serde_json::Value = serde_json::from_str(&render_json(&c)).unwrap();
        assert!(json.get("counters").is_none(), "no sections, no member");
        let s = crate::counters::tests::section;
        let mut fa = fake_run(&dir.path().join("ca"), "x", &evs);
        fa.counters(s(1200, 3.0, true));
        let mut fb = fake_run(&dir.path().join("cb"), "x", &evs);
        fb.counters(s(1500, 4.5, true));
        let (ra, rb) = (fa.finish(), fb.finish());
        let c = compare(&ra, &rb, &CompareOptions::default()).unwrap();
        assert_eq!(c.counters.len(), 1);
        let text = render_text(&c);
        assert!(
            text.ends_with("   commits per write      3.00      4.50   +1.50   +50.0%\n   rate (MB/s)         1,234.5   1,234.5    +0.0    +0.0%\n"),
            "{text}"
        );
        assert!(
            text.contains("\n\nredo log writer   B against A\n"),
            "{text}"
        );
        let json: serde_json::Value = serde_json::from_str(&render_json(&c)).unwrap();
        assert_eq!(json["counters"][0]["key"], "redo");
        assert_eq!(json["counters"][0]["counters"][0]["diff"], 300);
        assert_eq!(json["counters"][0]["counters"][1]["pct"], 50.0);
        std::fs::write(rb.path.join("counters.json"), "[").unwrap();
        let e = compare(&ra, &rb, &CompareOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("not valid counters"), "{e}");
    }
}
