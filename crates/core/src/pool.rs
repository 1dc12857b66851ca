//! Pooling several runs into one (for `compare --baseline NAME RUN…`): their events one run after
//! the other in a new run directory, so every statistic of `compare` applies unchanged to the pool.
//!
//! Each run's events keep their durations, outcomes, flags and sessions; their start times are
//! moved so that run *i+1* begins where run *i*'s last event ended (no gap, no overlap), which keeps
//! per-second throughput counts meaningful across the pool. Names and error classes are interned
//! afresh, since every run has its own name table.

use std::path::Path;

use crate::error::{Error, Result};
use crate::event::{Event, NameTable};
use crate::manifest::Outcome;
use crate::run::{EventWriter, RunDir};

/// Writes the events of `runs` (at least one) into a new run at `out`, whose manifest is the first
/// run's with `source` `pool`, the pooled runs listed in `workload.params.pooled_runs`, and the
/// events written counted. A pool is complete only when every run is.
pub fn pool_runs(runs: &[RunDir], out: &Path) -> Result<RunDir> {
    let Some(first) = runs.first() else {
        return Err(Error::Format {
            path: out.to_owned(),
            msg: "no run to pool".into(),
        });
    };
    let mut manifest = first.manifest.clone();
    manifest.source = "pool".into();
    manifest.outcome = Outcome::Running;
    manifest.event_files = vec![crate::files::EVENTS_FILE.to_string()];
    manifest.events_written = None;
    manifest.workload.params.insert(
        "pooled_runs".into(),
        serde_json::json!(runs
            .iter()
            .map(|r| r.path.display().to_string())
            .collect::<Vec<_>>()),
    );
    let mut pooled = RunDir::create(out, manifest)?;
    let names = NameTable::new();
    let mut w = EventWriter::create(&out.join(crate::files::EVENTS_FILE), names.clone())?;
    let mut offset: u64 = 0;
    let mut all_complete = true;
    let mut buf: Vec<Event> = Vec::new();
    let mut failure: Option<Error> = None;
    for run in runs {
        all_complete &= run.manifest.outcome == Outcome::Complete;
        let mut first_start = u64::MAX;
        run.for_each_block(|_, block| {
            for e in block {
                first_start = first_start.min(e.start_ns);
            }
        })?;
        if first_start == u64::MAX {
            continue; // no events
        }
        let mut last_end = offset;
        run.for_each_block(|table, block| {
            if failure.is_some() {
                return;
            }
            buf.clear();
            for e in block {
                let mut p = *e;
                p.name = names.intern(&table.name(e.name));
                if e.outcome != 0 {
                    p.outcome = names.intern_outcome(&table.name(e.outcome as u32));
                }
                p.start_ns = shifted(e.start_ns, first_start, offset);
                p.intended_start_ns = e.intended_start_ns.map(|t| shifted(t, first_start, offset));
                last_end = last_end.max(p.start_ns.saturating_add(p.duration_ns));
                buf.push(p);
            }
            if let Err(e) = w.write_block(&buf) {
                failure = Some(e);
            }
        })?;
        if let Some(e) = failure.take() {
            return Err(e);
        }
        offset = last_end;
    }
    pooled.manifest.events_written = Some(w.events_written());
    pooled.manifest.outcome = if all_complete {
        Outcome::Complete
    } else {
        Outcome::Failed
    };
    if !all_complete {
        pooled.manifest.outcome_detail = Some("a pooled run is not complete".into());
    }
    pooled.manifest.ended_utc = runs.last().and_then(|r| r.manifest.ended_utc);
    pooled.save_manifest()?;
    Ok(pooled)
}

/// `t` moved from a run starting at `first` to one starting at `offset`.
fn shifted(t: u64, first: u64, offset: u64) -> u64 {
    t.saturating_sub(first).saturating_add(offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::{Manifest, WorkloadInfo};

    fn run(dir: &Path, names: &[&str], starts: &[u64]) -> RunDir {
        let mut run =
            RunDir::create(dir, Manifest::new("workload", WorkloadInfo::default(), 1)).unwrap();
        let table = NameTable::new();
        // Intern in the given order so two runs give different ids to the same name.
        let ids: Vec<u32> = names.iter().map(|n| table.intern(n)).collect();
        let err = table.intern_outcome("pg:40P01");
        let mut w = EventWriter::create(&dir.join(crate::files::EVENTS_FILE), table).unwrap();
        let evs: Vec<Event> = starts
            .iter()
            .enumerate()
            .map(|(i, &s)| Event {
                name: ids[i % ids.len()],
                start_ns: s,
                duration_ns: 10,
                outcome: if i == 0 { err } else { 0 },
                ..Event::default()
            })
            .collect();
        w.write_block(&evs).unwrap();
        run.manifest.outcome = Outcome::Complete;
        run.manifest.events_written = Some(evs.len() as u64);
        run.save_manifest().unwrap();
        run
    }

    #[test]
    fn pooled_events_follow_each_other_with_names_and_classes_remapped() {
        let tmp = tempfile::tempdir().unwrap();
        let a = run(
            &tmp.path().join("a"),
            &["commit", "update"],
            &[100, 200, 300],
        );
        let b = run(
            &tmp.path().join("b"),
            &["update", "commit"],
            &[5_000, 5_050],
        );
        let p = pool_runs(&[a, b], &tmp.path().join("pool")).unwrap();
        assert_eq!(p.manifest.outcome, Outcome::Complete);
        assert_eq!(p.manifest.events_written, Some(5));
        let mut seen = Vec::new();
        let (names, _) = p
            .for_each_block(|t, block| {
                seen.extend(
                    block
                        .iter()
                        .map(|e| (t.name(e.name), e.start_ns, t.name(e.outcome as u32))),
                )
            })
            .unwrap();
        assert!(names.lookup("pg:40P01").is_some());
        let want = [
            ("commit", 0, "pg:40P01"),
            ("update", 100, ""),
            ("commit", 200, ""),
            // Run b starts where a's last event ended (200 + 10).
            ("update", 210, "pg:40P01"),
            ("commit", 260, ""),
        ];
        let got: Vec<(&str, u64, &str)> = seen
            .iter()
            .map(|(n, s, o)| (n.as_str(), *s, o.as_str()))
            .collect();
        assert_eq!(got, want);
        let reopened = RunDir::open(&tmp.path().join("pool")).unwrap();
        assert_eq!(reopened.manifest.source, "pool");
    }
}
