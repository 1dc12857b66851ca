//! The Q1 job: mapper threads, the bounded shuffle, the reducer; its configuration and timings.
//!
//! Mappers take splits in order, scan them and send either one partial aggregate (the combiner)
//! or batches of rows through a bounded channel to the reducer, which merges them; then the
//! answer is finished and sorted. Progress is shared through atomics.

use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use crate::error::Q1Error;
use crate::lineitem::RowValues;

use super::agg::{Groups, Q1Answer};
use super::parse::{cutoff, DateCut};
use super::scan::Sources;
use super::split::{plan_splits, resolve_inputs, Input, Split};

/// Q1's default DELTA (days before 1998-12-01), the value of the official answer set.
pub const DEFAULT_DELTA: u32 = 90;
/// Rows per message when the combiner is off.
pub(super) const ROWS_PER_MESSAGE: usize = 1024;
/// Messages the channel to the reducer holds before mappers wait (the bound of the shuffle).
pub const CHANNEL_CAPACITY: usize = 64;

/// How the job runs.
#[derive(Clone, Debug)]
pub struct Q1Config {
    /// Mapper threads.
    pub mappers: usize,
    /// Partial aggregation in the mappers (sums and counts); off sends every row to the reducer.
    pub combiner: bool,
    /// DELTA in days.
    pub delta_days: u32,
    /// Byte ranges per file per mapper (more splits balance better; 1 gives `mappers` splits).
    pub splits_per_mapper: usize,
    /// Parse text files in place through a memory map (default); off, or when a file cannot be
    /// mapped, mappers `read()` their range in chunks into a buffer.
    pub mmap: bool,
}

impl Default for Q1Config {
    fn default() -> Self {
        Q1Config {
            mappers: std::thread::available_parallelism().map_or(2, |n| n.get()),
            combiner: true,
            delta_days: DEFAULT_DELTA,
            splits_per_mapper: 1,
            mmap: true,
        }
    }
}

/// A phase's start and end, in ns from the job's start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    /// When the phase started.
    pub start: u64,
    /// When it ended.
    pub end: u64,
}

/// One map task's timing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MapTiming {
    /// The mapper thread that ran it, from 0.
    pub mapper: u32,
    /// Its split's index in the job's splits.
    pub split: usize,
    /// When it started, in ns from the job's start.
    pub start: u64,
    /// When it ended, in ns from the job's start.
    pub end: u64,
    /// Lines it read.
    pub lines: u64,
}

/// Per-phase timings of a job (ns from the job's start), for the run's events.
#[derive(Clone, Debug, Default)]
pub struct Q1Timings {
    /// One per map task, in split order.
    pub map: Vec<MapTiming>,
    /// Reduce: from the first message received to the last merged.
    pub reduce: Span,
    /// Final averages and sort.
    pub finish: Span,
    /// The whole job.
    pub total: u64,
}

/// What the job moved and what it cost, as Hadoop's job counters say it: records shipped from map
/// to reduce (the combiner's point) and the CPU time of its threads ("CPU time spent").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Q1Work {
    /// Records the mappers sent the reducer: partial groups with the combiner, rows without.
    pub shipped_records: u64,
    /// Messages through the shuffle channel carrying them.
    pub shipped_messages: u64,
    /// CPU time of the mapper threads, ns.
    pub map_cpu_ns: u64,
    /// CPU time of the reducer thread (reduce and finish), ns.
    pub reduce_cpu_ns: u64,
}

impl Q1Work {
    /// The job's cumulative CPU time, ns.
    pub fn cpu_ns(&self) -> u64 {
        self.map_cpu_ns + self.reduce_cpu_ns
    }
}

/// Result of a job: the answer plus counts and timings.
#[derive(Clone, Debug)]
pub struct Q1Output {
    /// The answer.
    pub answer: Q1Answer,
    /// Lines read.
    pub lines: u64,
    /// Bytes of input.
    pub bytes: u64,
    /// Map tasks.
    pub splits: usize,
    /// Timings.
    pub timings: Q1Timings,
    /// Records shipped and CPU time.
    pub work: Q1Work,
}

/// Live progress shared with a display: bytes mapped so far and partials reduced.
#[derive(Debug, Default)]
pub struct Q1Progress {
    /// Input bytes the mappers have consumed.
    pub bytes_mapped: AtomicU64,
    /// Total input bytes.
    pub bytes_total: AtomicU64,
    /// Map outputs (messages) the reducer has merged.
    pub merged: AtomicU64,
    /// Map tasks finished.
    pub splits_done: AtomicU64,
    /// Map tasks in total.
    pub splits_total: AtomicU64,
    /// Set when the job has finished.
    pub done: AtomicBool,
}

impl Q1Progress {
    /// `map 45% reduce 0%`, as Hadoop prints it: map is input bytes consumed, reduce is map
    /// outputs merged by the reducer.
    pub fn line(&self) -> String {
        let pct = |a: &AtomicU64, b: &AtomicU64| {
            let b = b.load(Ordering::Relaxed);
            (a.load(Ordering::Relaxed).min(b) * 100)
                .checked_div(b)
                .unwrap_or(0)
        };
        format!(
            "map {}% reduce {}%",
            pct(&self.bytes_mapped, &self.bytes_total),
            pct(&self.splits_done, &self.splits_total)
        )
    }
}

/// What a map task sends the reducer.
enum Msg {
    /// The task's partial aggregate (combiner on).
    Partial(Box<Groups>),
    /// A batch of rows (combiner off).
    Rows(Vec<RowValues>),
    /// The task is finished (for the reduce progress).
    SplitDone,
}

/// Runs Q1 over files and directories: resolves them, splits each file into
/// `mappers × splits_per_mapper` byte ranges, and runs the job.
pub fn run(
    paths: &[PathBuf],
    config: &Q1Config,
    progress: &Q1Progress,
) -> Result<Q1Output, Q1Error> {
    let inputs = resolve_inputs(paths)?;
    let splits = plan_splits(
        &inputs,
        config.mappers.max(1) * config.splits_per_mapper.max(1),
    );
    run_splits(&inputs, &splits, config, progress)
}

/// Runs Q1 over `inputs` split into `splits`, with `config.mappers` threads taking splits in order.
pub fn run_splits(
    inputs: &[Input],
    splits: &[Split],
    config: &Q1Config,
    progress: &Q1Progress,
) -> Result<Q1Output, Q1Error> {
    let clock = Clock(Instant::now());
    let cut = cutoff(config.delta_days);
    let bytes: u64 = inputs.iter().map(|f| f.len).sum();
    progress.bytes_total.store(bytes, Ordering::Relaxed);
    progress
        .splits_total
        .store(splits.len() as u64, Ordering::Relaxed);
    let files = open_files(inputs)?;
    let cut = DateCut::new(cut);
    let shared = Shared::default();
    let (tx, rx) = sync_channel::<Msg>(CHANNEL_CAPACITY);
    let reducer_cpu = crate::cpu::thread_cpu_ns();
    let (groups, reduce) = std::thread::scope(|scope| {
        for m in 0..config.mappers.max(1) {
            let tx = tx.clone();
            let mapper = Mapper {
                id: m as u32,
                inputs,
                splits,
                files: &files,
                cut: &cut,
                config,
                progress,
                shared: &shared,
                clock: &clock,
            };
            scope.spawn(move || mapper.run(tx));
        }
        drop(tx);
        // The reducer: this thread.
        reduce(rx, progress, &clock)
    });
    if let Some((_, e)) = shared
        .first_error
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
    {
        return Err(e);
    }
    let finish_start = clock.ns();
    let answer = groups.into_answer();
    let finish_end = clock.ns();
    let reduce_cpu_ns = crate::cpu::thread_cpu_ns().saturating_sub(reducer_cpu);
    progress.done.store(true, Ordering::Relaxed);
    let mut map = shared
        .map_times
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    map.sort_by_key(|t| t.split);
    Ok(Q1Output {
        answer,
        lines: shared.total_lines.into_inner(),
        bytes,
        splits: splits.len(),
        timings: Q1Timings {
            map,
            reduce,
            finish: Span {
                start: finish_start,
                end: finish_end,
            },
            total: clock.ns(),
        },
        work: Q1Work {
            shipped_records: shared.shipped_records.into_inner(),
            shipped_messages: shared.shipped_messages.into_inner(),
            map_cpu_ns: shared.map_cpu_ns.into_inner(),
            reduce_cpu_ns,
        },
    })
}

/// The job's clock: ns since it started.
struct Clock(Instant);

impl Clock {
    /// Nanoseconds since the job started.
    fn ns(&self) -> u64 {
        self.0.elapsed().as_nanos() as u64
    }
}

/// Opens every input once; the map tasks read through these handles.
fn open_files(inputs: &[Input]) -> Result<Vec<File>, Q1Error> {
    inputs
        .iter()
        .map(|f| {
            File::open(&f.path).map_err(|e| Q1Error::Io {
                path: f.path.clone(),
                source: e,
            })
        })
        .collect()
}

/// What the mappers share: the next split to take, whether one failed (and its error), the map
/// tasks' timings and the lines read.
#[derive(Default)]
struct Shared {
    next: AtomicU64,
    failed: AtomicBool,
    /// The failed split's index and its error: the earliest in input order.
    first_error: Mutex<Option<(usize, Q1Error)>>,
    map_times: Mutex<Vec<MapTiming>>,
    total_lines: AtomicU64,
    shipped_records: AtomicU64,
    shipped_messages: AtomicU64,
    map_cpu_ns: AtomicU64,
}

/// One mapper thread and what it reads from.
struct Mapper<'a> {
    id: u32,
    inputs: &'a [Input],
    splits: &'a [Split],
    files: &'a [File],
    cut: &'a DateCut,
    config: &'a Q1Config,
    progress: &'a Q1Progress,
    shared: &'a Shared,
    clock: &'a Clock,
}

impl Mapper<'_> {
    /// Takes splits in order until none is left, a map task fails, or the reducer is gone; adds
    /// the thread's CPU time to the job's.
    fn run(&self, tx: SyncSender<Msg>) {
        let cpu = crate::cpu::thread_cpu_ns();
        self.take_splits(tx);
        let used = crate::cpu::thread_cpu_ns().saturating_sub(cpu);
        self.shared.map_cpu_ns.fetch_add(used, Ordering::Relaxed);
    }

    fn take_splits(&self, tx: SyncSender<Msg>) {
        loop {
            if self.shared.failed.load(Ordering::Relaxed) {
                return;
            }
            let i = self.shared.next.fetch_add(1, Ordering::Relaxed) as usize;
            let Some(split) = self.splits.get(i) else {
                return;
            };
            if !self.map_task(i, split, &tx) {
                return;
            }
        }
    }

    /// Runs map task `i` over `split` and sends its output; false when the mapper should stop (the
    /// task failed, or the reducer is gone).
    fn map_task(&self, i: usize, split: &Split, tx: &SyncSender<Msg>) -> bool {
        let start = self.clock.ns();
        let mut local = Groups::default();
        let mut batch: Vec<RowValues> = Vec::new();
        let combiner = self.config.combiner;
        let mut lost_reducer = false;
        let sources = Sources {
            inputs: self.inputs,
            files: self.files,
            mmap: self.config.mmap,
            cut: self.cut,
            bytes_mapped: &self.progress.bytes_mapped,
        };
        // Two instances of the scan, so that the combiner's row → group step is inlined into the
        // parsing loop rather than called through a closure that can do both.
        let result = if combiner {
            sources.scan(split, |row| local.add(&row))
        } else {
            sources.scan(split, |row| {
                batch.push(row);
                if batch.len() == ROWS_PER_MESSAGE {
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(ROWS_PER_MESSAGE));
                    self.shipped(full.len());
                    lost_reducer |= tx.send(Msg::Rows(full)).is_err();
                }
            })
        };
        match result {
            Ok(lines) => {
                self.shared.total_lines.fetch_add(lines, Ordering::Relaxed);
                let msg = if combiner {
                    self.shipped(local.len());
                    Msg::Partial(Box::new(local))
                } else {
                    self.shipped(batch.len());
                    Msg::Rows(batch)
                };
                lost_reducer |= tx.send(msg).is_err();
                lost_reducer |= tx.send(Msg::SplitDone).is_err();
                self.shared
                    .map_times
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(MapTiming {
                        mapper: self.id,
                        split: i,
                        start,
                        end: self.clock.ns(),
                        lines,
                    });
                !lost_reducer
            }
            Err(e) => {
                self.shared.failed.store(true, Ordering::Relaxed);
                let e = e.into_error(&self.inputs[split.file].path, &self.files[split.file]);
                self.keep_earliest_error(i, e);
                false
            }
        }
    }

    /// Counts one message of `records` records sent to the reducer.
    fn shipped(&self, records: usize) {
        let s = self.shared;
        s.shipped_records
            .fetch_add(records as u64, Ordering::Relaxed);
        s.shipped_messages.fetch_add(1, Ordering::Relaxed);
    }

    /// Keeps the error of split `i` if it is the earliest bad line in input order so far, whichever
    /// mapper saw it.
    fn keep_earliest_error(&self, i: usize, e: Q1Error) {
        let mut slot = self
            .shared
            .first_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let earlier = match slot.as_ref() {
            Some((j, _)) => i < *j,
            None => true,
        };
        if earlier {
            *slot = Some((i, e));
        }
    }
}

/// The reducer: merges every map output into the groups until all mappers are done. Returns the
/// groups and the reduce phase's span (from the first message received to the last merged).
fn reduce(rx: Receiver<Msg>, progress: &Q1Progress, clock: &Clock) -> (Groups, Span) {
    let mut groups = Groups::default();
    let mut first = None;
    for msg in rx {
        first.get_or_insert_with(|| clock.ns());
        match msg {
            Msg::Partial(g) => groups.merge(&g),
            Msg::Rows(rows) => {
                for r in &rows {
                    groups.add(r);
                }
            }
            Msg::SplitDone => {
                progress.splits_done.fetch_add(1, Ordering::Relaxed);
            }
        }
        progress.merged.fetch_add(1, Ordering::Relaxed);
    }
    let end = clock.ns();
    (
        groups,
        Span {
            start: first.unwrap_or(end),
            end,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::q1::testdata::sample_file;

    fn answer_of(
        inputs: &[Input],
        splits: &[Split],
        mappers: usize,
        combiner: bool,
        mmap: bool,
    ) -> Q1Output {
        let config = Q1Config {
            mappers,
            combiner,
            delta_days: DEFAULT_DELTA,
            splits_per_mapper: 1,
            mmap,
        };
        run_splits(inputs, splits, &config, &Q1Progress::default()).unwrap()
    }

    /// Issue 27 item 5: a file cut between planning and reading (at a line border, so every line
    /// left is whole) is refused naming the file, mapped or read, Parquet too — never the answer
    /// of the lines that are left.
    #[test]
    fn a_file_that_shrank_since_the_job_was_planned_is_refused() {
        for mmap in [true, false] {
            let (_d, inputs) = sample_file(5000);
            let text = std::fs::read(&inputs[0].path).unwrap();
            let cut = text[..text.len() / 2]
                .iter()
                .rposition(|&b| b == b'\n')
                .unwrap()
                + 1;
            let splits = plan_splits(&inputs, 2);
            std::fs::OpenOptions::new()
                .write(true)
                .open(&inputs[0].path)
                .unwrap()
                .set_len(cut as u64)
                .unwrap();
            let config = Q1Config {
                mappers: 2,
                combiner: true,
                delta_days: DEFAULT_DELTA,
                splits_per_mapper: 1,
                mmap,
            };
            let e = run_splits(&inputs, &splits, &config, &Q1Progress::default())
                .map(|o| o.lines)
                .expect_err("a shrunk file gives no answer");
            let msg = e.to_string();
            assert!(matches!(e, Q1Error::Changed { .. }), "mmap {mmap}: {msg}");
            assert!(
                msg.contains("lineitem.tbl: the file changed while it was read"),
                "{msg}"
            );
            assert!(msg.contains(&format!("now {cut}")), "{msg}");
        }
    }

    #[test]
    fn a_parquet_file_truncated_under_its_map_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("lineitem.parquet");
        crate::parquet_io::write_lineitem(&path, 0.01, 1, 1, 1000, &AtomicU64::new(0)).unwrap();
        let inputs = resolve_inputs(std::slice::from_ref(&path)).unwrap();
        assert!(
            inputs[0].parquet.as_ref().unwrap().faulted.is_some(),
            "mapped"
        );
        let splits = plan_splits(&inputs, 2);
        let len = inputs[0].len;
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(len / 3)
            .unwrap();
        let config = Q1Config {
            mappers: 2,
            combiner: true,
            delta_days: DEFAULT_DELTA,
            splits_per_mapper: 1,
            mmap: true,
        };
        let e = run_splits(&inputs, &splits, &config, &Q1Progress::default())
            .map(|o| o.lines)
            .expect_err("a truncated Parquet file gives no answer");
        assert!(matches!(e, Q1Error::Changed { .. }), "{e}");
    }

    #[test]
    fn combiner_and_mappers_do_not_change_the_answer() {
        let (_d, inputs) = sample_file(5000);
        let one = answer_of(&inputs, &plan_splits(&inputs, 1), 1, true, false);
        assert_eq!(one.lines, 5000);
        assert_eq!(one.answer.rows.len(), 4);
        assert!(one.answer.rows_aggregated() < 5000, "the filter drops rows");
        for mmap in [true, false] {
            for (n, combiner) in [
                (1, true),
                (2, true),
                (7, true),
                (1, false),
                (2, false),
                (7, false),
            ] {
                let other = answer_of(&inputs, &plan_splits(&inputs, n), n, combiner, mmap);
                assert_eq!(
                    other.answer, one.answer,
                    "{n} mappers, combiner {combiner}, mmap {mmap}"
                );
                assert_eq!(other.lines, 5000);
                assert_eq!(other.timings.map.len(), n);
            }
        }
    }

    /// Issue 34 item 5: the combiner's effect in records shipped, and the job's CPU time. With the
    /// combiner each map task ships its partial groups (at most the 4 of the sample); without it,
    /// every row that passed the filter, in messages of ROWS_PER_MESSAGE rows and a last one.
    #[test]
    fn records_shipped_and_cpu_time_show_the_combiner() {
        let (_d, inputs) = sample_file(5000);
        for mappers in [1, 3] {
            let splits = plan_splits(&inputs, mappers);
            let on = answer_of(&inputs, &splits, mappers, true, false);
            let rows = on.answer.rows_aggregated();
            assert!(on.work.shipped_records >= on.answer.rows.len() as u64);
            assert!(
                on.work.shipped_records <= 4 * splits.len() as u64,
                "{:?}",
                on.work
            );
            assert_eq!(on.work.shipped_messages, splits.len() as u64);
            let off = answer_of(&inputs, &splits, mappers, false, false);
            assert_eq!(
                off.work.shipped_records, rows,
                "every aggregated row shipped"
            );
            assert!(off.work.shipped_messages >= splits.len() as u64);
            assert!(
                off.work.shipped_messages
                    <= splits.len() as u64 + rows.div_ceil(ROWS_PER_MESSAGE as u64)
            );
            for w in [on.work, off.work] {
                assert!(w.map_cpu_ns > 0 && w.reduce_cpu_ns > 0, "{w:?}");
                assert_eq!(w.cpu_ns(), w.map_cpu_ns + w.reduce_cpu_ns);
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Any split of the input into byte ranges gives the same answer.
        #[test]
        fn any_byte_ranges_give_the_same_answer(
            cuts in proptest::collection::vec(0u64..40_000, 0..12),
            mappers in 1usize..4,
            combiner: bool,
            mmap: bool,
        ) {
            let (_d, inputs) = sample_file(300);
            let len = inputs[0].len;
            let mut points: Vec<u64> = cuts.into_iter().map(|c| c % (len + 1)).collect();
            points.push(0);
            points.push(len);
            points.sort_unstable();
            points.dedup();
            let splits: Vec<Split> = points
                .windows(2)
                .map(|w| Split { file: 0, start: w[0], end: w[1] })
                .collect();
            let whole = answer_of(&inputs, &plan_splits(&inputs, 1), 1, true, false);
            let split = answer_of(&inputs, &splits, mappers, combiner, mmap);
            proptest::prop_assert_eq!(split.lines, 300);
            proptest::prop_assert_eq!(&split.answer, &whole.answer);
        }
    }

    #[test]
    fn truncated_last_line_is_an_error_with_its_line_number() {
        let (d, inputs) = sample_file(100);
        let mut text = std::fs::read(&inputs[0].path).unwrap();
        text.truncate(text.len() - 10);
        let path = d.path().join("cut.tbl");
        std::fs::write(&path, &text).unwrap();
        for (n, mmap) in [(1, true), (3, true), (1, false), (3, false)] {
            let config = Q1Config {
                mappers: n,
                mmap,
                ..Q1Config::default()
            };
            let err =
                run(std::slice::from_ref(&path), &config, &Q1Progress::default()).unwrap_err();
            let msg = err.to_string();
            assert!(msg.contains("cut.tbl:100: truncated last line"), "{msg}");
        }
    }

    #[test]
    fn malformed_field_reports_file_line_and_field() {
        let (d, inputs) = sample_file(50);
        let text = std::fs::read_to_string(&inputs[0].path).unwrap();
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        lines[36] = lines[36].replacen("1998-", "1998/", 1);
        let path = d.path().join("bad.tbl");
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        for mmap in [true, false] {
            let config = Q1Config {
                mappers: 4,
                mmap,
                ..Q1Config::default()
            };
            let msg = run(std::slice::from_ref(&path), &config, &Q1Progress::default())
                .unwrap_err()
                .to_string();
            assert!(
                msg.contains(
                    "bad.tbl:37: field 11 (l_shipdate): expected a date YYYY-MM-DD, found \"1998/"
                ),
                "{msg}"
            );
        }
    }

    #[test]
    fn progress_reaches_one_hundred_percent() {
        let (_d, inputs) = sample_file(1000);
        let p = Q1Progress::default();
        let config = Q1Config {
            mappers: 3,
            ..Q1Config::default()
        };
        run_splits(&inputs, &plan_splits(&inputs, 5), &config, &p).unwrap();
        assert_eq!(p.line(), "map 100% reduce 100%");
    }
}
