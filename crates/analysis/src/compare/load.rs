//! Reading a run for a comparison, in one pass over its event files.
//!
//! The successful measured durations per event name, its failures by class, its rows and span, the
//! latencies from the intended start when the runs were paced open-loop, and why the run may be
//! incomplete.

use std::collections::{BTreeMap, HashMap};

use dbscope_core::stats::spill::SpillArea;
use dbscope_core::stats::Durations;
use dbscope_core::{Error, Event, NameId, NameTable, Outcome, RunDir};

use super::model::FromIntendedComparison;
use crate::summary::{FromIntended, LatencyAcc, MemoryBudget};

/// Successful measured durations per event name of one run.
pub(super) struct Loaded {
    /// Every name with a measured event (successful or failed), in order of first appearance.
    pub(super) names: Vec<String>,
    /// Per name: the successful measured durations (ns), in memory or sorted on disk.
    pub(super) durations: Vec<Durations>,
    /// Per name: the other facts of its measured events.
    pub(super) facts: Vec<NameFacts>,
    pub(super) events_read: u64,
    pub(super) incomplete: Option<String>,
    /// First start and last end of the measured events (ns since the run's origin).
    pub(super) span_ns: Option<(u64, u64)>,
    /// Only when asked for (open-loop runs): per event name, in order of first appearance of any
    /// of its events (as `report` lists them), the latencies from the intended start of its
    /// successful measured events that carry one, and how many of those started late.
    pub(super) from_intended: Vec<IntendedAcc>,
}

/// What a run says about one event name besides its durations.
#[derive(Default)]
pub(super) struct NameFacts {
    /// Failed measured events by error class.
    pub(super) errors: BTreeMap<String, u64>,
    /// Rows of its successful measured events.
    pub(super) rows: u64,
    /// First start and last end of its successful measured events (ns since the run's origin).
    pub(super) span_ns: Option<(u64, u64)>,
}

/// One event name's latencies from the intended start, while a run is read: exact while the
/// run's share of the memory budget lasts, then an HDR histogram (as `report` does).
pub(super) struct IntendedAcc {
    name: String,
    latencies: LatencyAcc,
    late: u64,
}

/// Reads a run's event files once; with `open_loop`, also collects each name's latencies from
/// the intended start. At most `max_buffered` durations are held in memory across names: past
/// that, the name holding the most is sorted and written to a temporary file. The latencies
/// from the intended start are kept exact up to `max_buffered` values too, then summarised from
/// an HDR histogram.
pub(super) fn load(
    run: &RunDir,
    include_warmup: bool,
    open_loop: bool,
    max_buffered: usize,
) -> Result<Loaded, Error> {
    let mut intended_budget = MemoryBudget::new(max_buffered);
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
    let mut durations: Vec<Durations> = Vec::new();
    let mut buffered = 0usize;
    let mut spill_error: Option<std::io::Error> = None;
    let mut area: Option<SpillArea> = None;
    let mut facts: Vec<NameFacts> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut block_ids: HashMap<NameId, usize> = HashMap::new();
    let mut span_ns: Option<(u64, u64)> = None;
    let mut from_intended: Vec<IntendedAcc> = Vec::new();
    let mut intended_index: HashMap<String, usize> = HashMap::new();
    let mut intended_ids: HashMap<NameId, usize> = HashMap::new();
    // Which operations are late (their session busy at the intended start), as `report` says.
    let mut operations = crate::openloop::BacklogAcc::default();
    let (_, tail) = readable.for_each_block(|table: &NameTable, events: &[Event]| {
        block_ids.clear();
        intended_ids.clear();
        // The slot of the name the last event had: runs of one name skip the map.
        let mut last: Option<(NameId, usize)> = None;
        for e in events {
            if spill_error.is_some() {
                // Writing to disk failed (disk full): the comparison stops with that error once
                // the reader returns; hold nothing more meanwhile.
                break;
            }
            // Every event places its name in the open-loop order, as `report` lists names.
            let intended_slot = open_loop.then(|| {
                *intended_ids.entry(e.name).or_insert_with(|| {
                    let name = table.name(e.name);
                    *intended_index.entry(name.clone()).or_insert_with(|| {
                        from_intended.push(IntendedAcc {
                            name,
                            latencies: LatencyAcc::default(),
                            late: 0,
                        });
                        from_intended.len() - 1
                    })
                })
            });
            let late = open_loop && operations.add(e);
            if e.is_warmup() && !include_warmup {
                continue;
            }
            let slot = match last {
                Some((id, slot)) if id == e.name => slot,
                _ => {
                    let slot = *block_ids.entry(e.name).or_insert_with(|| {
                        let name = table.name(e.name);
                        *index.entry(name.clone()).or_insert_with(|| {
                            names.push(name);
                            durations.push(Durations::new());
                            facts.push(NameFacts::default());
                            names.len() - 1
                        })
                    });
                    last = Some((e.name, slot));
                    slot
                }
            };
            if e.is_error() {
                *facts[slot]
                    .errors
                    .entry(table.name(NameId::from(e.outcome)))
                    .or_default() += 1;
                continue;
            }
            if let (Some(slot), Some(_)) = (intended_slot, e.intended_start_ns) {
                let acc = &mut from_intended[slot];
                acc.latencies
                    .push(e.latency_from_intended_ns(), &mut intended_budget);
                acc.late += u64::from(late);
            }
            let end = e.start_ns.saturating_add(e.duration_ns);
            let widen = |span: Option<(u64, u64)>| {
                Some(match span {
                    Some((first, last)) => (first.min(e.start_ns), last.max(end)),
                    None => (e.start_ns, end),
                })
            };
            span_ns = widen(span_ns);
            let f = &mut facts[slot];
            f.span_ns = widen(f.span_ns);
            f.rows += u64::from(e.rows);
            durations[slot].push(e.duration_ns);
            buffered += 1;
            if buffered > max_buffered {
                match spill_largest(&mut durations, &mut area) {
                    Ok(freed) => buffered -= freed,
                    Err(e) => spill_error = Some(e),
                }
            }
        }
    })?;
    if let Some(e) = spill_error {
        return Err(Error::spill(e));
    }
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
        facts,
        events_read: tail.events,
        incomplete: (!why.is_empty()).then(|| why.join("; ")),
        span_ns,
        from_intended,
    })
}

/// Frees memory for the others when the run's share of the budget is spent: the name holding
/// the most durations is sorted into the run's one temporary file (made at the first spill).
/// Returns how many durations it freed.
fn spill_largest(
    durations: &mut [Durations],
    area: &mut Option<SpillArea>,
) -> std::io::Result<usize> {
    let Some(largest) = durations.iter_mut().max_by_key(|d| d.buffered()) else {
        return Ok(0);
    };
    let freed = largest.buffered();
    let area = match area {
        Some(a) => a,
        None => area.insert(SpillArea::new()?),
    };
    largest.spill_into(area)?;
    Ok(freed)
}

/// The CO-corrected latencies of the event names both runs have with intended starts, in A's
/// order; empty unless the runs were read with `open_loop`.
pub(super) fn compare_from_intended(
    a: &mut [IntendedAcc],
    b: &mut [IntendedAcc],
) -> Vec<FromIntendedComparison> {
    a.iter_mut()
        .filter_map(|ea| {
            let eb = b.iter_mut().find(|e| e.name == ea.name)?;
            Some(FromIntendedComparison {
                name: ea.name.clone(),
                a: FromIntended::of(std::mem::take(&mut ea.latencies), ea.late)?,
                b: FromIntended::of(std::mem::take(&mut eb.latencies), eb.late)?,
            })
        })
        .collect()
}
