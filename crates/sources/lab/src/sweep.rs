//! A sweep's driver: one run plan at each session count, `repeat` times each, every point an
//! ordinary run under the sweep's directory and one `point` event in the sweep's own recording
//! (issue 15 part 4). Running a point and reading its figures are the caller's
//! ([`PointRunner`]); the fit and the tables are `dbscope_analysis::sweep`'s.

use std::path::{Path, PathBuf};
use std::time::Instant;

use dbscope_core::record::{Recording, RunClock};
use dbscope_core::{Event, Outcome};

use crate::plan::RunPlan;

/// What a sweep varies: a plan that can be set to one point's sessions and run directory.
pub trait SweepPlan {
    /// The same plan at `sessions` sessions, writing to `out`.
    fn at_point(&self, sessions: u32, out: PathBuf) -> Self;
}

impl SweepPlan for RunPlan {
    fn at_point(&self, sessions: u32, out: PathBuf) -> RunPlan {
        self.with_sessions(sessions).with_out(out)
    }
}

/// What a sweep asks of its caller for each point.
pub trait PointRunner {
    /// The plan each point runs ([`RunPlan`] for `run`'s workloads; a front end may sweep
    /// another kind of run, such as `io redo`).
    type Plan: SweepPlan;
    /// A point's figures.
    type Point;
    /// Why a point could not run or be read; a recording error is one.
    type Error: From<dbscope_core::Error>;

    /// Called before a point runs in `dir`.
    fn starting(&mut self, _sessions: u32, _repeat: u32, _dir: &Path) {}
    /// Runs one point's plan; how the run ended.
    fn run(
        &mut self,
        plan: &Self::Plan,
        sessions: u32,
        repeat: u32,
    ) -> Result<Outcome, Self::Error>;
    /// The figures of a point that ran in `dir`, and its headline events (the `point` event's
    /// rows).
    fn measure(
        &mut self,
        dir: &Path,
        sessions: u32,
        repeat: u32,
    ) -> Result<(Self::Point, u64), Self::Error>;
    /// True once the sweep should stop after the current point (Ctrl-C).
    fn stopped(&self) -> bool;
    /// An error as a sweep's detail says it (with its causes).
    fn describe(e: &Self::Error) -> String;
}

/// How a sweep ended.
#[derive(Debug)]
pub struct SweepEnd<P> {
    /// The points that ran, in order.
    pub points: Vec<P>,
    /// Complete, interrupted (Ctrl-C, or a point interrupted) or failed (a point failed).
    pub outcome: Outcome,
    /// Why, when not complete.
    pub detail: Option<String>,
}

/// Why a sweep stopped without an end to record.
#[derive(Debug)]
pub enum SweepStop<E> {
    /// The first point could not start (bad input, nothing measured): the caller records the
    /// sweep as failed with this error.
    NothingRan(E),
    /// Anything else (a point could not be read, the sweep's recording failed).
    Error(E),
}

/// A point's run directory in the sweep's `out`.
pub fn point_dir(out: &Path, sessions: u32, repeat: u32) -> PathBuf {
    out.join("points").join(format!("s{sessions:04}-r{repeat}"))
}

/// Runs `base` at each of `sessions` (increasing), `repeat` times each, into
/// [`point_dir`]s of `out`, writing one `point` event per point into `rec` (timed by `clock`).
/// `base` is the plan as built; when it could not be, the first point fails with its error.
/// Stops at the first point that fails or is interrupted.
#[allow(clippy::too_many_arguments)]
pub fn run<R: PointRunner>(
    base: Result<R::Plan, R::Error>,
    sessions: &[u32],
    repeat: u32,
    out: &Path,
    rec: &mut Recording,
    clock: &RunClock,
    runner: &mut R,
) -> Result<SweepEnd<R::Point>, SweepStop<R::Error>> {
    let point_name = rec.names().intern("point");
    let (base, mut base_error) = match base {
        Ok(p) => (Some(p), None),
        Err(e) => (None, Some(e)),
    };
    let mut points = Vec::new();
    let mut outcome = (Outcome::Complete, None);
    'sweep: for &n in sessions {
        for k in 1..=repeat {
            let dir = point_dir(out, n, k);
            runner.starting(n, k, &dir);
            let t0 = clock.now_ns();
            let started = Instant::now();
            let ran = match &base {
                Some(p) => runner.run(&p.at_point(n, dir.clone()), n, k),
                None => Err(base_error
                    .take()
                    .expect("only the first point runs without a plan")),
            };
            let ended = match ran {
                Ok(o) => o,
                Err(e) => {
                    if points.is_empty() && !dir.join(dbscope_core::run::MANIFEST_FILE).exists() {
                        return Err(SweepStop::NothingRan(e));
                    }
                    outcome = (
                        Outcome::Failed,
                        Some(format!(
                            "point {n} session(s), repeat {k}: {}",
                            R::describe(&e)
                        )),
                    );
                    break 'sweep;
                }
            };
            let elapsed = started.elapsed().as_nanos() as u64;
            let (point, count) = runner.measure(&dir, n, k).map_err(SweepStop::Error)?;
            let ev = Event {
                session: n,
                name: point_name,
                start_ns: t0,
                duration_ns: elapsed.max(1),
                intended_start_ns: None,
                outcome: if completed(ended) {
                    0
                } else {
                    rec.names().intern_outcome("point-failed")
                },
                flags: 0,
                rows: count.min(u32::MAX as u64) as u32,
            };
            rec.write_block(&[ev])
                .map_err(|e| SweepStop::Error(e.into()))?;
            points.push(point);
            if ended == Outcome::Interrupted || runner.stopped() {
                outcome = (
                    Outcome::Interrupted,
                    Some(format!("interrupted at {n} session(s)")),
                );
                break 'sweep;
            }
            if !completed(ended) {
                outcome = (
                    Outcome::Failed,
                    Some(format!(
                        "the run at {n} session(s), repeat {k} did not complete: see {}",
                        dir.display()
                    )),
                );
                break 'sweep;
            }
        }
    }
    Ok(SweepEnd {
        points,
        outcome: outcome.0,
        detail: outcome.1,
    })
}

/// A point's run that ended as it should (`Running`: a run whose end was not recorded, counted as
/// the runner's exit status counts it).
fn completed(o: Outcome) -> bool {
    matches!(o, Outcome::Complete | Outcome::Running)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::ObserveConfig;
    use crate::plan::{TargetPlan, WorkloadPlan};
    use crate::runner::RunConfig;
    use dbscope_core::{Manifest, WorkloadInfo};

    /// The fake's error.
    #[derive(Debug)]
    struct Bad(String);

    impl From<dbscope_core::Error> for Bad {
        fn from(e: dbscope_core::Error) -> Bad {
            Bad(e.to_string())
        }
    }

    /// Runs nothing: records which plans it was given and ends each point as told.
    struct Fake {
        ends: Vec<Outcome>,
        ran: Vec<(u32, PathBuf)>,
    }

    impl PointRunner for Fake {
        type Plan = RunPlan;
        type Point = u32;
        type Error = Bad;
        fn run(&mut self, plan: &RunPlan, n: u32, _k: u32) -> Result<Outcome, Self::Error> {
            assert_eq!(plan.config.sessions, n);
            self.ran.push((n, plan.out.clone()));
            Ok(self.ends.remove(0))
        }
        fn measure(&mut self, _: &Path, n: u32, _: u32) -> Result<(u32, u64), Self::Error> {
            Ok((n, 10 * n as u64))
        }
        fn stopped(&self) -> bool {
            false
        }
        fn describe(e: &Self::Error) -> String {
            e.0.clone()
        }
    }

    fn plan() -> RunPlan {
        RunPlan {
            workload: WorkloadPlan::TpchQ1 { delta: 90 },
            target: TargetPlan {
                spec: Some("null".into()),
                fallback: None,
                settings: Vec::new(),
                key_file: None,
            },
            config: RunConfig {
                sessions: 1,
                ops_per_session: Some(1),
                duration: None,
                warmup: std::time::Duration::ZERO,
                seed: 1,
                max_errors: 0,
                threads: None,
                observe: ObserveConfig::default(),
                pacing: None,
                explain: false,
            },
            out: PathBuf::from("unused"),
        }
    }

    fn recording(dir: &Path) -> (Recording, RunClock) {
        let info = WorkloadInfo {
            name: "sweep".into(),
            params: Default::default(),
        };
        let mut rec = Recording::begin(dir, Manifest::new("sweep", info, 1)).unwrap();
        let clock = rec.start_clock().unwrap();
        (rec, clock)
    }

    #[test]
    fn each_point_is_the_plan_at_its_sessions_until_one_fails() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("sweep");
        let (mut rec, clock) = recording(&out);
        let mut fake = Fake {
            ends: vec![
                Outcome::Complete,
                Outcome::Complete,
                Outcome::Failed,
                Outcome::Complete,
            ],
            ran: Vec::new(),
        };
        let end = run(Ok(plan()), &[1, 2, 4], 2, &out, &mut rec, &clock, &mut fake).unwrap();
        assert_eq!(end.points, vec![1, 1, 2]);
        assert_eq!(end.outcome, Outcome::Failed);
        assert!(end.detail.unwrap().contains("at 2 session(s), repeat 1"));
        assert_eq!(fake.ran[2], (2, point_dir(&out, 2, 1)));
        assert!(point_dir(&out, 2, 1).ends_with("points/s0002-r1"));
        rec.finish(end.outcome, None).unwrap();
    }

    #[test]
    fn a_plan_that_could_not_be_built_fails_the_first_point() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("sweep");
        let (mut rec, clock) = recording(&out);
        let mut fake = Fake {
            ends: Vec::new(),
            ran: Vec::new(),
        };
        let bad = Err(Bad("no plan".into()));
        match run(bad, &[1, 2], 1, &out, &mut rec, &clock, &mut fake) {
            Err(SweepStop::NothingRan(e)) => assert_eq!(e.0, "no plan"),
            e => panic!("{e:?}"),
        }
        assert!(fake.ran.is_empty());
    }
}
