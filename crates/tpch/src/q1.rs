//! TPC-H Query 1 as a parallel map/combine/reduce job (seed 000's Hadoop job, by hand): byte-range
//! splits aligned to line starts, mappers that parse fields 5–11 straight from bytes, an optional
//! combiner (per-mapper sums and counts), a reducer that merges, divides and sorts. Decimals are
//! scaled integers, so the answer is exact.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::Mutex;
use std::time::Instant;

use chrono::NaiveDate;

use crate::decimal::{exact_avg_f64, format_scaled, parse_cents, round_scaled};
pub use crate::lineitem::RowValues;
use crate::lineitem::FIELD_NAMES;
use crate::simd::swar::{all_digits, ONES};
use crate::simd::{masks64, newlines32};

/// Q1's default DELTA (days before 1998-12-01), the value of the official answer set.
pub const DEFAULT_DELTA: u32 = 90;
/// Bytes a mapper reads at a time.
const CHUNK: usize = 4 << 20;
/// Rows per message when the combiner is off.
const ROWS_PER_MESSAGE: usize = 1024;
/// Messages the channel to the reducer holds before mappers wait (the bound of the shuffle).
pub const CHANNEL_CAPACITY: usize = 64;
/// Errors of the Q1 job: every message names the file (and, for bad data, the line and field).
#[derive(Debug, thiserror::Error)]
pub enum Q1Error {
    /// An I/O error on a file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A line that is not a lineitem row.
    #[error("{path}:{line}: field {field} ({name}): {msg}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Line number, from 1.
        line: u64,
        /// Field number, from 1 (as in the TPC-H specification's column order).
        field: usize,
        /// The field's name.
        name: &'static str,
        /// What was expected and what was found.
        msg: String,
    },
    /// The last line has no newline: the file was cut short.
    #[error("{path}:{line}: truncated last line (no newline at the end): the file is incomplete; regenerate it with `dbscope tpch gen`")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Line number, from 1.
        line: u64,
    },
    /// Unusable input (empty file, no lineitem files in a directory, bad option).
    #[error("{0}")]
    Input(String),
}

/// Exact Q1 aggregates of one group: sums and counts only, so partials combine in any order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Agg {
    /// Σ l_quantity, scale 2.
    pub sum_qty: i64,
    /// Σ l_extendedprice, scale 2.
    pub sum_base_price: i64,
    /// Σ l_extendedprice × (1 − l_discount), scale 4 (i128: overflows i64 near SF 10 000).
    pub sum_disc_price: i128,
    /// Σ l_extendedprice × (1 − l_discount) × (1 + l_tax), scale 6 (i128: i64 overflows near SF 160).
    pub sum_charge: i128,
    /// Σ l_discount, scale 2.
    pub sum_disc: i64,
    /// Rows.
    pub count: u64,
}

impl Agg {
    /// Adds one row.
    #[inline]
    pub fn add(&mut self, r: &RowValues) {
        // One row's products fit in i64 for any TPC-H price; 128-bit only for absurd inputs.
        let (disc_price, charge) = match r
            .price
            .checked_mul(100 - r.disc)
            .and_then(|dp| Some((dp, dp.checked_mul(100 + r.tax)?)))
        {
            Some((dp, ch)) => (dp as i128, ch as i128),
            None => {
                let dp = r.price as i128 * (100 - r.disc) as i128;
                (dp, dp * (100 + r.tax) as i128)
            }
        };
        self.sum_qty += r.qty;
        self.sum_base_price += r.price;
        self.sum_disc_price += disc_price;
        self.sum_charge += charge;
        self.sum_disc += r.disc;
        self.count += 1;
    }

    /// Adds another partial.
    pub fn merge(&mut self, o: &Agg) {
        self.sum_qty += o.sum_qty;
        self.sum_base_price += o.sum_base_price;
        self.sum_disc_price += o.sum_disc_price;
        self.sum_charge += o.sum_charge;
        self.sum_disc += o.sum_disc;
        self.count += o.count;
    }
}

/// Partial aggregates keyed by (l_returnflag, l_linestatus). Q1 has four groups and consecutive
/// rows fall in different groups at random, so a row finds its group through a small direct-mapped
/// index — one compare that almost always hits — rather than a search whose branches the CPU cannot
/// predict (that search cost more than the arithmetic).
#[derive(Clone, Debug)]
pub struct Groups {
    groups: Vec<((u8, u8), Agg)>,
    /// At `slot(key)`: a key (`flag << 8 | status`; `u32::MAX` when empty) and its index in `groups`.
    index: [(u32, u32); 64],
}

impl Default for Groups {
    fn default() -> Self {
        Groups {
            groups: Vec::new(),
            index: [(u32::MAX, 0); 64],
        }
    }
}

/// The index slot of a key: Q1's four keys (A|F, N|F, N|O, R|F) land in four different slots.
#[inline(always)]
fn slot(key: u32) -> usize {
    ((key >> 8) * 8 + (key & 0xff)) as usize & 63
}

impl Groups {
    /// Adds a row to its group.
    #[inline(always)]
    pub fn add(&mut self, r: &RowValues) {
        let key = (r.flag as u32) << 8 | r.status as u32;
        let (k, i) = self.index[slot(key)];
        if k == key {
            if let Some((_, a)) = self.groups.get_mut(i as usize) {
                a.add(r);
                return;
            }
        }
        self.add_new_key(key, r);
    }

    /// A key not in its slot: find (or create) its group, and make the slot point to it.
    #[cold]
    #[inline(never)]
    fn add_new_key(&mut self, key: u32, r: &RowValues) {
        let k = ((key >> 8) as u8, key as u8);
        let i = match self.groups.iter().position(|(g, _)| *g == k) {
            Some(i) => i,
            None => {
                self.groups.push((k, Agg::default()));
                self.groups.len() - 1
            }
        };
        self.index[slot(key)] = (key, i as u32);
        self.groups[i].1.add(r);
    }

    /// Merges another partial into this one.
    pub fn merge(&mut self, other: &Groups) {
        for (key, agg) in &other.groups {
            match self.groups.iter_mut().find(|(k, _)| k == key) {
                Some((_, a)) => a.merge(agg),
                None => self.groups.push((*key, *agg)),
            }
        }
    }

    /// The answer: groups sorted by (l_returnflag, l_linestatus).
    pub fn into_answer(mut self) -> Q1Answer {
        self.groups.sort_by_key(|(k, _)| *k);
        Q1Answer {
            rows: self
                .groups
                .into_iter()
                .map(|((flag, status), agg)| Q1Row {
                    returnflag: flag as char,
                    linestatus: status as char,
                    agg,
                })
                .collect(),
        }
    }
}

/// One row of the Q1 answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Q1Row {
    /// l_returnflag.
    pub returnflag: char,
    /// l_linestatus.
    pub linestatus: char,
    /// The exact sums and count.
    pub agg: Agg,
}

/// Column names of Q1's result, in order.
pub const COLUMNS: [&str; 10] = [
    "l_returnflag",
    "l_linestatus",
    "sum_qty",
    "sum_base_price",
    "sum_disc_price",
    "sum_charge",
    "avg_qty",
    "avg_price",
    "avg_disc",
    "count_order",
];

impl Q1Row {
    /// The ten columns at full precision: sums exact at their scale (2, 2, 4, 6 decimals), averages
    /// as the correctly rounded `f64` of the exact quotient (shortest representation).
    pub fn exact_fields(&self) -> [String; 10] {
        let a = &self.agg;
        [
            self.returnflag.to_string(),
            self.linestatus.to_string(),
            format_scaled(a.sum_qty as i128, 2),
            format_scaled(a.sum_base_price as i128, 2),
            format_scaled(a.sum_disc_price, 4),
            format_scaled(a.sum_charge, 6),
            exact_avg_f64(a.sum_qty as i128, 2, a.count).to_string(),
            exact_avg_f64(a.sum_base_price as i128, 2, a.count).to_string(),
            exact_avg_f64(a.sum_disc as i128, 2, a.count).to_string(),
            a.count.to_string(),
        ]
    }

    /// The eight numeric columns rounded half away from zero to hundredths (the official answer
    /// set's precision), then the count.
    pub fn rounded_cents(&self) -> [i128; 8] {
        let a = &self.agg;
        let avg = |sum: i128| crate::decimal::div_round(sum * 100, a.count.max(1) as i128 * 100);
        [
            a.sum_qty as i128,
            a.sum_base_price as i128,
            round_scaled(a.sum_disc_price, 4, 2),
            round_scaled(a.sum_charge, 6, 2),
            avg(a.sum_qty as i128),
            avg(a.sum_base_price as i128),
            avg(a.sum_disc as i128),
            a.count as i128,
        ]
    }
}

/// Q1's result.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Q1Answer {
    /// Rows sorted by (l_returnflag, l_linestatus).
    pub rows: Vec<Q1Row>,
}

impl Q1Answer {
    /// Pipe-delimited table (header line, then one line per group) at full precision.
    pub fn to_table(&self) -> String {
        let mut s = COLUMNS.join("|");
        s.push('\n');
        for r in &self.rows {
            s.push_str(&r.exact_fields().join("|"));
            s.push('\n');
        }
        s
    }

    /// Rows scanned into the groups (rows that passed the filter).
    pub fn rows_aggregated(&self) -> u64 {
        self.rows.iter().map(|r| r.agg.count).sum()
    }
}

/// `1998-12-01 - DELTA days` as a `YYYYMMDD` number, the form dates are compared in.
pub fn cutoff(delta_days: u32) -> u32 {
    let d = NaiveDate::from_ymd_opt(1998, 12, 1).expect("valid date")
        - chrono::Duration::days(delta_days as i64);
    d.format("%Y%m%d").to_string().parse().expect("digits only")
}

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

/// A byte range of one input file: the map task processes the lines that *start* in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    /// Index into the input files.
    pub file: usize,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

/// One input file and its size.
#[derive(Clone, Debug)]
pub struct Input {
    /// The file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub len: u64,
    /// Parquet (written by `tpch gen --format parquet`): the compressed size of each row group.
    /// `None` for `.tbl` text.
    pub parquet_row_groups: Option<Vec<u64>>,
}

/// Expands files and directories into lineitem files: a directory contributes its files named
/// `lineitem*.tbl` (sorted). Errors on missing paths, an empty file, or a directory without any.
pub fn resolve_inputs(paths: &[PathBuf]) -> Result<Vec<Input>, Q1Error> {
    if paths.is_empty() {
        return Err(Q1Error::Input(
            "no input: give lineitem.tbl files or directories made by `dbscope tpch gen`".into(),
        ));
    }
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| Q1Error::Io {
            path: p.clone(),
            source: e,
        })?;
        let files = if meta.is_dir() {
            let mut v: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| Q1Error::Io {
                    path: p.clone(),
                    source: e,
                })?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| {
                    f.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                        n.starts_with("lineitem")
                            && (n.ends_with(".tbl") || n.ends_with(".parquet"))
                    })
                })
                .collect();
            v.sort();
            let parquet = v
                .iter()
                .filter(|f| f.extension().is_some_and(|e| e == "parquet"))
                .count();
            if parquet > 0 && parquet < v.len() {
                return Err(Q1Error::Input(format!(
                    "{}: holds both lineitem .tbl and .parquet files; name the files to read",
                    p.display()
                )));
            }
            if v.is_empty() {
                return Err(Q1Error::Input(format!(
                    "{}: no lineitem*.tbl files in this directory (nor lineitem*.parquet); generate them with `dbscope tpch gen --out {}`",
                    p.display(),
                    p.display()
                )));
            }
            v
        } else {
            vec![p.clone()]
        };
        for f in files {
            let len = std::fs::metadata(&f)
                .map_err(|e| Q1Error::Io {
                    path: f.clone(),
                    source: e,
                })?
                .len();
            if len == 0 {
                return Err(Q1Error::Input(format!(
                    "{}: empty file: no lineitem rows",
                    f.display()
                )));
            }
            let mut magic = [0u8; 4];
            let is_parquet = File::open(&f)
                .and_then(|h| h.read_at(&mut magic, 0))
                .is_ok_and(|n| n == 4 && &magic == b"PAR1");
            let parquet_row_groups = if is_parquet {
                let (_, sizes) = crate::parquet_io::open_lineitem(&f)
                    .map_err(|m| Q1Error::Input(format!("{}: {m}", f.display())))?;
                Some(sizes)
            } else {
                None
            };
            out.push(Input {
                path: f,
                len,
                parquet_row_groups,
            });
        }
    }
    Ok(out)
}

/// Splits every file into `n` byte ranges of (nearly) equal size. Ranges ignore line boundaries:
/// each map task skips the partial line it starts in and finishes the line that crosses its end.
pub fn plan_splits(inputs: &[Input], n: usize) -> Vec<Split> {
    let n = n.max(1) as u64;
    let mut out = Vec::new();
    for (i, f) in inputs.iter().enumerate() {
        if let Some(groups) = &f.parquet_row_groups {
            // Parquet splits at row groups: start..end are row-group numbers.
            for g in 0..groups.len() as u64 {
                out.push(Split {
                    file: i,
                    start: g,
                    end: g + 1,
                });
            }
            continue;
        }
        let k = n.min(f.len.max(1));
        for j in 0..k {
            out.push(Split {
                file: i,
                start: f.len * j / k,
                end: f.len * (j + 1) / k,
            });
        }
    }
    out
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

enum Msg {
    Partial(Box<Groups>),
    Rows(Vec<RowValues>),
    SplitDone,
}

/// Runs Q1 over `inputs` split into `splits`, with `config.mappers` threads taking splits in order.
pub fn run_splits(
    inputs: &[Input],
    splits: &[Split],
    config: &Q1Config,
    progress: &Q1Progress,
) -> Result<Q1Output, Q1Error> {
    let t0 = Instant::now();
    let ns = || t0.elapsed().as_nanos() as u64;
    let cut = cutoff(config.delta_days);
    let bytes: u64 = inputs.iter().map(|f| f.len).sum();
    progress.bytes_total.store(bytes, Ordering::Relaxed);
    progress
        .splits_total
        .store(splits.len() as u64, Ordering::Relaxed);
    let files: Vec<File> = inputs
        .iter()
        .map(|f| {
            File::open(&f.path).map_err(|e| Q1Error::Io {
                path: f.path.clone(),
                source: e,
            })
        })
        .collect::<Result<_, _>>()?;
    let cut = DateCut::new(cut);
    let next = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    let first_error: Mutex<Option<(usize, Q1Error)>> = Mutex::new(None);
    let map_times = Mutex::new(Vec::new());
    let total_lines = AtomicU64::new(0);
    let (tx, rx) = sync_channel::<Msg>(CHANNEL_CAPACITY);

    let (groups, reduce) = std::thread::scope(|scope| {
        for m in 0..config.mappers.max(1) {
            let tx = tx.clone();
            let (files, cut, next, failed, first_error, map_times, total_lines) = (
                &files,
                &cut,
                &next,
                &failed,
                &first_error,
                &map_times,
                &total_lines,
            );
            scope.spawn(move || loop {
                if failed.load(Ordering::Relaxed) {
                    return;
                }
                let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                let Some(split) = splits.get(i) else { return };
                let start = ns();
                let mut local = Groups::default();
                let mut batch: Vec<RowValues> = Vec::new();
                let combiner = config.combiner;
                let mut lost_reducer = false;
                let sources = Sources {
                    inputs,
                    files,
                    mmap: config.mmap,
                    cut,
                    progress,
                };
                // Two instances of the scan, so that the combiner's row → group step is inlined
                // into the parsing loop rather than called through a closure that can do both.
                let result = if combiner {
                    sources.scan(split, |row| local.add(&row))
                } else {
                    sources.scan(split, |row| {
                        batch.push(row);
                        if batch.len() == ROWS_PER_MESSAGE {
                            let full =
                                std::mem::replace(&mut batch, Vec::with_capacity(ROWS_PER_MESSAGE));
                            lost_reducer |= tx.send(Msg::Rows(full)).is_err();
                        }
                    })
                };
                match result {
                    Ok(lines) => {
                        total_lines.fetch_add(lines, Ordering::Relaxed);
                        let msg = if combiner {
                            Msg::Partial(Box::new(local))
                        } else {
                            Msg::Rows(batch)
                        };
                        lost_reducer |= tx.send(msg).is_err();
                        lost_reducer |= tx.send(Msg::SplitDone).is_err();
                        map_times.lock().expect("not poisoned").push(MapTiming {
                            mapper: m as u32,
                            split: i,
                            start,
                            end: ns(),
                            lines,
                        });
                        if lost_reducer {
                            return;
                        }
                    }
                    Err(e) => {
                        failed.store(true, Ordering::Relaxed);
                        let e = e.into_error(&inputs[split.file].path, &files[split.file]);
                        let mut slot = first_error.lock().expect("not poisoned");
                        // Report the earliest bad line in input order, whichever mapper saw it.
                        let earlier = match slot.as_ref() {
                            Some((j, _)) => i < *j,
                            None => true,
                        };
                        if earlier {
                            *slot = Some((i, e));
                        }
                        return;
                    }
                }
            });
        }
        drop(tx);
        // The reducer: this thread.
        let mut groups = Groups::default();
        let mut first = None;
        for msg in rx {
            first.get_or_insert_with(ns);
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
        let end = ns();
        (
            groups,
            Span {
                start: first.unwrap_or(end),
                end,
            },
        )
    });
    if let Some((_, e)) = first_error.into_inner().expect("not poisoned") {
        return Err(e);
    }
    let finish_start = ns();
    let answer = groups.into_answer();
    let finish_end = ns();
    progress.done.store(true, Ordering::Relaxed);
    let mut map = map_times.into_inner().expect("not poisoned");
    map.sort_by_key(|t| t.split);
    Ok(Q1Output {
        answer,
        lines: total_lines.into_inner(),
        bytes,
        splits: splits.len(),
        timings: Q1Timings {
            map,
            reduce,
            finish: Span {
                start: finish_start,
                end: finish_end,
            },
            total: ns(),
        },
    })
}

/// What a map task reads from: the inputs, their open files, how to read text, the cutoff, the
/// progress.
struct Sources<'a> {
    inputs: &'a [Input],
    files: &'a [File],
    mmap: bool,
    cut: &'a DateCut,
    progress: &'a Q1Progress,
}

impl Sources<'_> {
    /// Runs one map task over `split`: Parquet row group, mapped text or read() text.
    #[inline(always)]
    fn scan(&self, split: &Split, emit: impl FnMut(RowValues)) -> Result<u64, ScanError> {
        let input = &self.inputs[split.file];
        let bytes_mapped = &self.progress.bytes_mapped;
        match &input.parquet_row_groups {
            Some(sizes) => {
                // A reader per map task: readers cloned from one File share its offset.
                let rg = split.start as usize;
                let r = crate::parquet_io::open_lineitem(&input.path)
                    .and_then(|(reader, _)| {
                        crate::parquet_io::scan_row_group(&reader, rg, self.cut.ymd, emit)
                    })
                    .map_err(ScanError::Parquet);
                let size = sizes.get(rg).copied().unwrap_or(0);
                bytes_mapped.fetch_add(size, Ordering::Relaxed);
                r
            }
            None => {
                let file = &self.files[split.file];
                // Each task maps its own range (from the byte before it to the end of the file:
                // only the pages it touches cost anything), so the mappers also unmap in parallel
                // when they finish rather than the whole file at once at the end of the job.
                let base = split.start.saturating_sub(1);
                match self
                    .mmap
                    .then(|| crate::mapped::map_from(file, base))
                    .flatten()
                {
                    Some(data) => scan_mapped(
                        &data,
                        base,
                        split.start,
                        split.end,
                        self.cut,
                        bytes_mapped,
                        emit,
                    ),
                    None => scan_range(file, split.start, split.end, self.cut, bytes_mapped, emit),
                }
            }
        }
    }
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

/// A bad line found while scanning, located by byte offset (turned into a line number later).
#[derive(Debug)]
enum ScanError {
    Io(std::io::Error),
    Parse {
        offset: u64,
        field: usize,
        msg: String,
    },
    Truncated {
        offset: u64,
    },
    Parquet(String),
}

impl ScanError {
    fn into_error(self, path: &Path, file: &File) -> Q1Error {
        match self {
            ScanError::Io(e) => Q1Error::Io {
                path: path.to_owned(),
                source: e,
            },
            ScanError::Parse { offset, field, msg } => Q1Error::Parse {
                path: path.to_owned(),
                line: line_number(file, offset),
                field: field + 1,
                name: FIELD_NAMES.get(field).copied().unwrap_or("?"),
                msg,
            },
            ScanError::Truncated { offset } => Q1Error::Truncated {
                path: path.to_owned(),
                line: line_number(file, offset),
            },
            ScanError::Parquet(m) => Q1Error::Input(format!("{}: {m}", path.display())),
        }
    }
}

/// The 1-based number of the line that starts at `offset` (counts newlines before it; error path only).
fn line_number(file: &File, offset: u64) -> u64 {
    let mut buf = vec![0u8; 1 << 20];
    let mut pos = 0u64;
    let mut lines = 1u64;
    while pos < offset {
        let want = ((offset - pos) as usize).min(buf.len());
        match file.read_at(&mut buf[..want], pos) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                lines += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
                pos += n as u64;
            }
        }
    }
    lines
}

/// A parsed line: its row (`None` when the filter drops it) and a length in bytes.
type Parsed = (Option<RowValues>, usize);

/// The line at the start of `text`: `Ok(Some((row, length with its newline)))`, the row `None` when
/// the filter drops it; `Ok(None)` when `text` holds no newline (read more, or the file was cut
/// short); `Err((field index, message))` for a bad line.
#[inline(always)]
fn next_line(text: &[u8], cut: &DateCut) -> Result<Option<Parsed>, (usize, String)> {
    // Hot path: parse the first 11 fields in place, then look for the end of the line only from
    // there (the rest of the line is never parsed).
    if let Some((row, p)) = parse_line_fast(text, cut) {
        return Ok(find_newline(&text[p..]).map(|nl| (row, p + nl + 1)));
    }
    let Some(nl) = memchr::memchr(b'\n', text) else {
        return Ok(None);
    };
    // Something unusual: the careful parser says exactly what is wrong (or accepts it).
    parse_line(&text[..nl], cut.ymd).map(|row| Some((row, nl + 1)))
}

/// Bytes between two updates of the progress counter (one atomic add per ~4 MiB, not per line).
const PROGRESS_STEP: usize = 4 << 20;

/// Scans the lines that start in `[start, end)` of a file, in place in `data`, the file mapped
/// from offset `base` (≤ `start`) to its end; calls `emit` for each row with
/// `l_shipdate <= cutoff`. Returns the number of lines read.
fn scan_mapped(
    data: &[u8],
    base: u64,
    start: u64,
    end: u64,
    cut: &DateCut,
    bytes_mapped: &AtomicU64,
    mut emit: impl FnMut(RowValues),
) -> Result<u64, ScanError> {
    let start = (start - base) as usize;
    let end = ((end - base) as usize).min(data.len());
    let mut pos = start;
    // The line that starts exactly at `start` is ours only if the byte before ends a line.
    if start > 0 && data[start - 1] != b'\n' {
        pos = match memchr::memchr(b'\n', &data[start..]) {
            Some(nl) => start + nl + 1,
            None => data.len(),
        };
    }
    let mut lines = 0u64;
    let mut accounted = start;
    while pos < end {
        match next_line(&data[pos..], cut) {
            Ok(Some((row, n))) => {
                lines += 1;
                if let Some(row) = row {
                    emit(row);
                }
                pos += n;
            }
            // No newline before the end of the file: the last line was cut short.
            Ok(None) => {
                return Err(ScanError::Truncated {
                    offset: base + pos as u64,
                })
            }
            Err((field, msg)) => {
                return Err(ScanError::Parse {
                    offset: base + pos as u64,
                    field,
                    msg,
                })
            }
        }
        if pos - accounted >= PROGRESS_STEP {
            let upto = pos.min(end);
            bytes_mapped.fetch_add((upto - accounted) as u64, Ordering::Relaxed);
            accounted = upto;
        }
    }
    bytes_mapped.fetch_add(end.saturating_sub(accounted) as u64, Ordering::Relaxed);
    Ok(lines)
}

/// Scans the lines that start in `[start, end)` of `file` with `read()` into a buffer (for files
/// that cannot be mapped, and `--no-mmap`); calls `emit` for each row with `l_shipdate <= cutoff`.
/// Returns the number of lines read.
fn scan_range(
    file: &File,
    start: u64,
    end: u64,
    cut: &DateCut,
    bytes_mapped: &AtomicU64,
    mut emit: impl FnMut(RowValues),
) -> Result<u64, ScanError> {
    let mut buf: Vec<u8> = vec![0; CHUNK];
    let mut pos = start;
    if start > 0 {
        // The line that starts exactly at `start` is ours only if the byte before ends a line.
        let mut probe = start - 1;
        loop {
            let n = file.read_at(&mut buf, probe).map_err(ScanError::Io)?;
            if n == 0 {
                bytes_mapped.fetch_add(end - start, Ordering::Relaxed);
                return Ok(0);
            }
            if let Some(i) = memchr::memchr(b'\n', &buf[..n]) {
                pos = probe + i as u64 + 1;
                break;
            }
            probe += n as u64;
        }
    }
    let mut lines = 0u64;
    // buf[..filled] holds file bytes from `base`.
    let mut base = pos;
    let mut filled = 0usize;
    let mut eof = false;
    let mut accounted = start;
    loop {
        if base >= end && filled == 0 {
            break;
        }
        if !eof {
            if filled == buf.len() {
                buf.resize(buf.len() * 2, 0);
            }
            let n = file
                .read_at(&mut buf[filled..], base + filled as u64)
                .map_err(ScanError::Io)?;
            if n == 0 {
                eof = true;
            }
            filled += n;
        }
        let mut i = 0usize;
        while i < filled {
            let line_start = base + i as u64;
            if line_start >= end {
                break;
            }
            match next_line(&buf[i..filled], cut) {
                Ok(Some((row, n))) => {
                    lines += 1;
                    if let Some(row) = row {
                        emit(row);
                    }
                    i += n;
                }
                // The line goes on past the buffer: read more.
                Ok(None) => break,
                Err((field, msg)) => {
                    return Err(ScanError::Parse {
                        offset: line_start,
                        field,
                        msg,
                    })
                }
            }
        }
        let consumed = (base + i as u64).min(end);
        if consumed > accounted {
            bytes_mapped.fetch_add(consumed - accounted, Ordering::Relaxed);
            accounted = consumed;
        }
        if base + i as u64 >= end {
            break;
        }
        if eof && i >= filled {
            break;
        }
        if eof {
            // Bytes left with no newline and no more file: the last line was cut short.
            return Err(ScanError::Truncated {
                offset: base + i as u64,
            });
        }
        buf.copy_within(i..filled, 0);
        filled -= i;
        base += i as u64;
    }
    bytes_mapped.fetch_add(end.saturating_sub(accounted), Ordering::Relaxed);
    Ok(lines)
}

/// The Q1 cutoff date in the two forms the parsers compare against.
#[derive(Clone, Copy, Debug)]
pub struct DateCut {
    /// `YYYYMMDD`, for the careful parser.
    pub ymd: u32,
    /// `YYYY-MM-DD` as (big-endian first 8 bytes, big-endian last 2): for well-formed dates the
    /// byte order is the date order, so the hot path compares two integers and converts nothing.
    key: (u64, u16),
}

impl DateCut {
    /// From `YYYYMMDD` (as [`cutoff`] returns it).
    pub fn new(ymd: u32) -> DateCut {
        let s = format!("{:04}-{:02}-{:02}", ymd / 10000, ymd / 100 % 100, ymd % 100);
        let b = s.as_bytes();
        let key = (
            u64::from_be_bytes(b[..8].try_into().expect("8 bytes")),
            u16::from_be_bytes([b[8], b[9]]),
        );
        DateCut { ymd, key }
    }
}

/// The eight bytes at `t[p..]`, first byte lowest.
#[inline(always)]
fn word_at(t: &[u8], p: usize) -> Option<u64> {
    Some(u64::from_le_bytes(t.get(p..p + 8)?.try_into().ok()?))
}

/// The decimal `t[s..s + len]` in hundredths. The forms dbgen writes — `ddd` and `ddd.dd` with at
/// most 8 integer digits — take one 8-byte load and no loop; anything else goes to
/// [`parse_cents`], so the grammar (and the answer) is exactly the careful parser's.
#[inline(always)]
fn field_cents(t: &[u8], s: usize, len: usize) -> Option<i64> {
    let f = t.get(s..s + len)?;
    // l_discount and l_tax are always "0.dd": four bytes, no word needed.
    if let [a, b'.', b, c] = *f {
        if a.is_ascii_digit() && b.is_ascii_digit() && c.is_ascii_digit() {
            return Some((a - b'0') as i64 * 100 + (b - b'0') as i64 * 10 + (c - b'0') as i64);
        }
    }
    // l_quantity is "d" or "dd" (1–50): two bytes, the first replaced by '0' when absent.
    if let 1..=2 = len {
        let hi = if len == 2 { f[0] } else { b'0' };
        let lo = f[len - 1];
        if hi.is_ascii_digit() && lo.is_ascii_digit() {
            return Some((hi - b'0') as i64 * 1000 + (lo - b'0') as i64 * 100);
        }
    }
    let frac = len >= 4 && f[len - 3] == b'.';
    let int_len = if frac { len - 3 } else { len };
    if (1..=8).contains(&int_len) && s + int_len >= 8 {
        // The 8 bytes that end with the integer part; the bytes before it are set to '0'.
        let w = word_at(t, s + int_len - 8)?;
        let keep = u64::MAX << (8 * (8 - int_len));
        let w = (w & keep) | ((ONES * b'0' as u64) & !keep);
        let (a, b) = if frac {
            (f[len - 2], f[len - 1])
        } else {
            (b'0', b'0')
        };
        if all_digits(w) && a.is_ascii_digit() && b.is_ascii_digit() {
            // Eight digits, most significant in the lowest byte, to their value in three steps.
            let mut v = w - ONES * b'0' as u64;
            v = (v * 10).wrapping_add(v >> 8) & 0x00ff_00ff_00ff_00ff;
            v = (v * 100).wrapping_add(v >> 16) & 0x0000_ffff_0000_ffff;
            v = (v * 10000).wrapping_add(v >> 32) & 0xffff_ffff;
            return Some(v as i64 * 100 + (a - b'0') as i64 * 10 + (b - b'0') as i64);
        }
    }
    parse_cents(f)
}

/// `YYYY-MM-DD` (month 01–12, day 01–31, as [`parse_date`] accepts) → its comparison key.
#[inline(always)]
fn date_key(d: &[u8; 10]) -> Option<(u64, u16)> {
    let w = u64::from_le_bytes(d[..8].try_into().expect("8 bytes"));
    // The two '-' (bytes 4 and 7) turned into '0' so that one test checks all eight bytes.
    let dash = (b'-' ^ b'0') as u64;
    let digits = w ^ (dash << 32 | dash << 56);
    let (mm, dd) = (
        u16::from_be_bytes([d[5], d[6]]),
        u16::from_be_bytes([d[8], d[9]]),
    );
    let ok = d[4] == b'-'
        && d[7] == b'-'
        && all_digits(digits)
        && d[8].is_ascii_digit()
        && d[9].is_ascii_digit()
        // With digits checked, byte pairs compare as numbers: "01" ≤ MM ≤ "12", "01" ≤ DD ≤ "31".
        && (0x3031..=0x3132).contains(&mm)
        && (0x3031..=0x3331).contains(&dd);
    ok.then(|| (u64::from_be_bytes(w.to_le_bytes()), dd))
}

/// The hot path: parses and filters a well-formed line in one pass over its first 11 fields,
/// reading from the start of `text` and never taking a byte past a newline as part of the line.
/// Returns the row (or `None` when the filter drops it) and the offset just after the l_shipdate
/// field. `None` when anything is unusual (or fewer than 64 bytes are left in `text`);
/// [`parse_line`] then produces the result or the precise error.
#[inline(always)]
fn parse_line_fast(text: &[u8], cut: &DateCut) -> Option<Parsed> {
    // Fields 1–8 fit in the first 64 bytes (55 at most up to SF 1000): find their '|' at once.
    let (bars, nls) = masks64(text.get(..64)?.try_into().ok()?);
    let mut b = bars;
    // Drop the first three '|' (fields 1–3 are not needed), then the 4th…8th end fields 4…8.
    b &= b.wrapping_sub(1);
    b &= b.wrapping_sub(1);
    b &= b.wrapping_sub(1);
    let e0 = b.trailing_zeros() as usize;
    b &= b.wrapping_sub(1);
    let e1 = b.trailing_zeros() as usize;
    b &= b.wrapping_sub(1);
    let e2 = b.trailing_zeros() as usize;
    b &= b.wrapping_sub(1);
    let e3 = b.trailing_zeros() as usize;
    b &= b.wrapping_sub(1);
    // Eight '|' and no newline before the last of them (else the careful parser decides).
    if b == 0 || nls & ((b & b.wrapping_neg()) - 1) != 0 {
        return None;
    }
    let e4 = b.trailing_zeros() as usize;
    let qty = field_cents(text, e0 + 1, e1 - e0 - 1)?;
    let price = field_cents(text, e1 + 1, e2 - e1 - 1)?;
    let disc = field_cents(text, e2 + 1, e3 - e2 - 1)?;
    let tax = field_cents(text, e3 + 1, e4 - e3 - 1)?;
    // Fields 9–11 have fixed widths: "F|S|YYYY-MM-DD|".
    let q = e4 + 1;
    let rest: &[u8; 15] = text.get(q..q + 15)?.try_into().ok()?;
    let (flag, status) = (rest[0], rest[2]);
    if rest[1] != b'|'
        || rest[3] != b'|'
        || rest[14] != b'|'
        || matches!(flag, b'|' | b'\n')
        || matches!(status, b'|' | b'\n')
    {
        return None;
    }
    let date = date_key(rest[4..14].try_into().expect("10 bytes"))?;
    let row = (date <= cut.key).then_some(RowValues {
        flag,
        status,
        qty,
        price,
        disc,
        tax,
    });
    Some((row, q + 15))
}

/// The offset of the first newline in `text`, which starts just after l_shipdate. In lineitem
/// that newline is 42–92 bytes on (commit and receipt dates, 4–17 + 3–7 + 10–43 bytes of
/// instructions, mode and comment): one mask of bytes 32–95 finds it, after a check that bytes
/// 0–31 hold none. Both branches go the same way on every real line, so no misprediction; memchr
/// for anything longer.
#[inline(always)]
fn find_newline(text: &[u8]) -> Option<usize> {
    let Some(c) = text.get(..96) else {
        return memchr::memchr(b'\n', text);
    };
    let early = newlines32(c[..32].try_into().expect("32 bytes"));
    if early != 0 {
        return Some(early.trailing_zeros() as usize);
    }
    let (_, nls) = masks64(c[32..96].try_into().expect("64 bytes"));
    if nls != 0 {
        return Some(32 + nls.trailing_zeros() as usize);
    }
    memchr::memchr(b'\n', &text[96..]).map(|i| i + 96)
}

/// Parses one lineitem line (no newline) and applies Q1's filter. `Err((field index, message))`.
#[inline]
pub fn parse_line(line: &[u8], cutoff: u32) -> Result<Option<RowValues>, (usize, String)> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut p = 0usize;
    let mut field = |idx: usize| -> Result<&[u8], (usize, String)> {
        // Fields are short (1–15 bytes): a byte loop beats a memchr call per field.
        match line[p..].iter().position(|&b| b == b'|') {
            Some(j) => {
                let f = &line[p..p + j];
                p += j + 1;
                Ok(f)
            }
            None => Err((
                idx,
                format!(
                    "missing: the line has {} '|'-separated fields, lineitem has 16",
                    memchr::memchr_iter(b'|', line).count()
                        + usize::from(!line.is_empty() && !line.ends_with(b"|"))
                ),
            )),
        }
    };
    for i in 0..4 {
        field(i)?;
    }
    let qty = field(4)?;
    let price = field(5)?;
    let disc = field(6)?;
    let tax = field(7)?;
    let flag = field(8)?;
    let status = field(9)?;
    let ship = field(10)?;
    let date = parse_date(ship).ok_or_else(|| {
        (
            10,
            format!(
                "expected a date YYYY-MM-DD, found {:?}",
                String::from_utf8_lossy(ship)
            ),
        )
    })?;
    let num = |idx: usize, f: &[u8]| {
        parse_cents(f).ok_or_else(|| {
            (
                idx,
                format!(
                    "expected a decimal with at most 2 fractional digits, found {:?}",
                    String::from_utf8_lossy(f)
                ),
            )
        })
    };
    let (qty, price, disc, tax) = (num(4, qty)?, num(5, price)?, num(6, disc)?, num(7, tax)?);
    let one = |idx: usize, f: &[u8]| match f {
        [b] if *b != b'|' => Ok(*b),
        _ => Err((
            idx,
            format!(
                "expected one character, found {:?}",
                String::from_utf8_lossy(f)
            ),
        )),
    };
    let (flag, status) = (one(8, flag)?, one(9, status)?);
    if date > cutoff {
        return Ok(None);
    }
    Ok(Some(RowValues {
        flag,
        status,
        qty,
        price,
        disc,
        tax,
    }))
}

/// `YYYY-MM-DD` → `YYYYMMDD` (month 1–12, day 1–31).
#[inline(always)]
fn parse_date(f: &[u8]) -> Option<u32> {
    let f: &[u8; 10] = f.try_into().ok()?;
    if f[4] != b'-' || f[7] != b'-' {
        return None;
    }
    let d = [f[0], f[1], f[2], f[3], f[5], f[6], f[8], f[9]].map(|b| b.wrapping_sub(b'0'));
    if d.iter().fold(0u8, |m, &x| m.max(x)) > 9 {
        return None;
    }
    let v = d.iter().fold(0u32, |v, &x| v * 10 + x as u32);
    let (m, day) = ((v / 100) % 100, v % 100);
    ((1..=12).contains(&m) && (1..=31).contains(&day)).then_some(v)
}

/// The dataflow plan, Pig-style: what each phase does.
pub fn explain(inputs: &[Input], config: &Q1Config) -> String {
    let cut = cutoff(config.delta_days);
    let splits = plan_splits(
        inputs,
        config.mappers.max(1) * config.splits_per_mapper.max(1),
    );
    let bytes: u64 = inputs.iter().map(|f| f.len).sum();
    let date = format!("{}-{:02}-{:02}", cut / 10000, cut / 100 % 100, cut % 100);
    let mut s = String::new();
    s.push_str(&format!(
        "TPC-H Q1 as map/combine/reduce (DELTA = {} days)\n",
        config.delta_days
    ));
    s.push_str(&format!(
        "  input     {} file(s), {} bytes → {} split(s): byte ranges aligned to line starts\n",
        inputs.len(),
        bytes,
        splits.len()
    ));
    let how = if config.mmap {
        "each split in place through a memory map".to_string()
    } else {
        format!("read each split in {} MiB chunks", CHUNK >> 20)
    };
    s.push_str(&format!(
        "  map ×{}    scan      {how}; lines that start in the range\n",
        config.mappers.max(1),
    ));
    s.push_str("            parse     fields 5–11 from bytes (l_quantity … l_shipdate), decimals as hundredths\n");
    s.push_str(&format!(
        "            filter    l_shipdate <= date '1998-12-01' - interval '{}' day  (= {date})\n",
        config.delta_days
    ));
    s.push_str("            project   l_returnflag, l_linestatus, qty, price, disc, price×(1−disc), price×(1−disc)×(1+tax)\n");
    if config.combiner {
        s.push_str("            combine   partial aggregate by (l_returnflag, l_linestatus): SUMs and COUNT only (i128)\n");
        s.push_str(&format!(
            "  shuffle   one partial per split → reducer (bounded channel, {CHANNEL_CAPACITY} messages)\n"
        ));
    } else {
        s.push_str(
            "            combine   off (--no-combiner): every row's values go to the reducer\n",
        );
        s.push_str(&format!(
            "  shuffle   rows in batches of {ROWS_PER_MESSAGE} → reducer (bounded channel, {CHANNEL_CAPACITY} messages)\n"
        ));
    }
    s.push_str("  reduce ×1 merge     partials by (l_returnflag, l_linestatus)\n");
    s.push_str(
        "            finalize  avg_qty, avg_price, avg_disc = SUM / COUNT (exact quotient)\n",
    );
    s.push_str("  sort      by l_returnflag, l_linestatus\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINES: &str = "\
1|155190|7706|1|17|21168.23|0.04|0.02|N|O|1996-03-13|1996-02-12|1996-03-22|DELIVER IN PERSON|TRUCK|egular courts above the|
1|67310|7311|2|36|45983.16|0.09|0.06|N|O|1996-04-12|1996-02-28|1996-04-20|TAKE BACK RETURN|MAIL|ly final dependencies: slyly bold |
3|4297|1798|1|45|54058.05|0.06|0.00|R|F|1994-02-02|1994-01-04|1994-02-23|NONE|AIR|ongside of the furiously brave acco|
3|19036|6540|2|49|46796.47|0.10|0.00|R|F|1998-11-09|1993-12-20|1993-11-24|TAKE BACK RETURN|RAIL| unusual accounts. eve|
";

    #[test]
    fn huge_values_take_the_128_bit_path() {
        let r = RowValues {
            flag: b'A',
            status: b'F',
            qty: 100,
            price: 900_000_000_000_000_000,
            disc: 4,
            tax: 8,
        };
        let mut a = Agg::default();
        a.add(&r);
        assert_eq!(a.sum_disc_price, 900_000_000_000_000_000i128 * 96);
        assert_eq!(a.sum_charge, 900_000_000_000_000_000i128 * 96 * 108);
    }

    #[test]
    fn groups_with_colliding_index_slots_stay_exact() {
        // 60 keys in a 64-slot direct-mapped index: many share a slot and evict each other.
        let mut g = Groups::default();
        let mut want: std::collections::BTreeMap<(u8, u8), Agg> = Default::default();
        for i in 0..20_000u64 {
            let r = RowValues {
                flag: b"ANRXYZabcdefghijklmn"[(i * 7 % 20) as usize],
                status: b"FO\xff"[(i * 13 % 3) as usize],
                qty: (i % 50) as i64 * 100,
                price: (i * 7919 % 100_000) as i64,
                disc: (i % 11) as i64,
                tax: (i % 9) as i64,
            };
            g.add(&r);
            want.entry((r.flag, r.status)).or_default().add(&r);
        }
        let got: Vec<((u8, u8), Agg)> = g
            .into_answer()
            .rows
            .iter()
            .map(|r| ((r.returnflag as u8, r.linestatus as u8), r.agg))
            .collect();
        assert_eq!(got, want.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn cutoff_dates() {
        assert_eq!(cutoff(90), 19980902);
        assert_eq!(cutoff(112), 19980811);
        assert_eq!(cutoff(0), 19981201);
    }

    #[test]
    fn parses_and_filters() {
        let cut = cutoff(90);
        let mut lines = LINES.lines();
        let r = parse_line(lines.next().unwrap().as_bytes(), cut)
            .unwrap()
            .unwrap();
        assert_eq!(
            r,
            RowValues {
                flag: b'N',
                status: b'O',
                qty: 1700,
                price: 2116823,
                disc: 4,
                tax: 2
            }
        );
        let last = LINES.lines().nth(3).unwrap();
        assert_eq!(parse_line(last.as_bytes(), cut).unwrap(), None);
    }

    #[test]
    fn fast_and_careful_parsers_agree() {
        let cut = cutoff(90);
        let base = LINES.lines().next().unwrap();
        let mut cases: Vec<String> = LINES.lines().map(String::from).collect();
        for (from, to) in [
            ("|17|", "|17.5|"),
            ("|17|", "|-17|"),
            ("|17|", "|17.|"),
            ("|17|", "||"),
            ("21168.23", "21168.2"),
            ("21168.23", "21168.234"),
            ("0.04", ".04"),
            ("|N|O|", "|NN|O|"),
            ("|N|O|", "||O|"),
            ("1996-03-13", "1996-13-13"),
            ("1996-03-13", "1996-03-1"),
            ("1996-03-13", "1996-03-133"),
        ] {
            cases.push(base.replacen(from, to, 1));
        }
        cases.push(base[..40].to_string());
        // Never reads past a newline into the next line.
        let after_ship = base.match_indices('|').nth(10).unwrap().0 + 1;
        for cut_at in [10, 30, 45, 52, after_ship - 1, after_ship, 70] {
            let text = format!("{}\n{base}", &base[..cut_at]);
            match parse_line_fast(text.as_bytes(), &DateCut::new(cut)) {
                None => assert!(cut_at < after_ship, "{text}"),
                Some((_, p)) => assert_eq!(p, after_ship, "{text}"),
            }
        }
        cases.push(String::new());
        for c in &cases {
            let careful = parse_line(c.as_bytes(), cut);
            match parse_line_fast(c.as_bytes(), &DateCut::new(cut)) {
                Some((fast, _)) => assert_eq!(Ok(fast), careful, "{c}"),
                None => assert!(careful.is_err(), "fast path refused a good line: {c}"),
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// The one-load decimal parser takes exactly the careful parser's grammar and values, for
        /// fields of any length and any mix of digits, '.', '-' and other bytes.
        #[test]
        fn swar_decimals_agree_with_parse_cents(
            field in proptest::collection::vec(
                proptest::sample::select(b"0123456789..-x |".to_vec()), 0..12),
            lead in proptest::collection::vec(proptest::sample::select(b"0123456789|-.\n".to_vec()), 8),
        ) {
            // The field sits after 8 bytes of other text, as fields 5-8 always do.
            let mut t = lead.clone();
            t.extend_from_slice(&field);
            t.extend_from_slice(b"|rest of the line|\n");
            proptest::prop_assert_eq!(field_cents(&t, 8, field.len()), parse_cents(&field));
        }

        /// The packed date test accepts exactly what `parse_date` accepts, and orders dates as
        /// `YYYYMMDD` numbers do.
        #[test]
        fn date_keys_agree_with_parse_date(
            d in proptest::collection::vec(proptest::sample::select(b"0123456789-/x".to_vec()), 10),
            y in 1900u32..2100, m in 0u32..14, day in 0u32..33,
        ) {
            let d: [u8; 10] = d.try_into().unwrap();
            proptest::prop_assert_eq!(date_key(&d).is_some(), parse_date(&d).is_some());
            let s = format!("{y:04}-{m:02}-{day:02}");
            let d: [u8; 10] = s.as_bytes().try_into().unwrap();
            if let (Some(k), Some(v)) = (date_key(&d), parse_date(&d)) {
                for cut in [19980902, 19981201, v, v - 1, v + 1, 19000101, 20991231] {
                    proptest::prop_assert_eq!(k <= DateCut::new(cut).key, v <= cut, "{} vs {}", s, cut);
                }
            } else {
                proptest::prop_assert!(date_key(&d).is_none() && parse_date(&d).is_none());
            }
        }
    }

    #[test]
    fn swar_decimals_edge_cases() {
        for f in [
            "1",
            "17",
            "50",
            "0.04",
            "0.10",
            "21168.23",
            "104949.50",
            "99999999.99",
            "12345678",
            "123456789",
            "123456789.12",
            "00000000.01",
            "007",
            "17.5",
            "17.",
            ".04",
            "-17",
            "-0.04",
            "1a",
            "1.a4",
            "1.4a",
            "",
            "1234567890123456",
            "12345678901234567",
        ] {
            let mut t = b"1|2|3|4|".to_vec();
            t.extend_from_slice(f.as_bytes());
            t.extend_from_slice(b"|x|\n");
            assert_eq!(
                field_cents(&t, 8, f.len()),
                parse_cents(f.as_bytes()),
                "{f}"
            );
        }
        assert_eq!(field_cents(b"1|2|3|4|104949.50|", 8, 9), Some(10494950));
    }

    #[test]
    fn bad_fields_are_named() {
        let cut = cutoff(90);
        let bad_date = "1|2|3|4|17|21168.23|0.04|0.02|N|O|1996-13-13|x|";
        assert_eq!(parse_line(bad_date.as_bytes(), cut).unwrap_err().0, 10);
        let bad_num = "1|2|3|4|17|21x68.23|0.04|0.02|N|O|1996-03-13|x|";
        let e = parse_line(bad_num.as_bytes(), cut).unwrap_err();
        assert_eq!(e.0, 5);
        assert!(e.1.contains("21x68.23"), "{}", e.1);
        let short = "1|2|3|4|17|";
        assert_eq!(parse_line(short.as_bytes(), cut).unwrap_err().0, 5);
        assert_eq!(parse_line(b"", cut).unwrap_err().0, 0);
        let flag = "1|2|3|4|17|21168.23|0.04|0.02|NN|O|1996-03-13|x|";
        assert_eq!(parse_line(flag.as_bytes(), cut).unwrap_err().0, 8);
    }

    #[test]
    fn aggregates_are_exact() {
        let cut = cutoff(90);
        let mut g = Groups::default();
        for l in LINES.lines() {
            if let Some(r) = parse_line(l.as_bytes(), cut).unwrap() {
                g.add(&r);
            }
        }
        let a = g.into_answer();
        assert_eq!(a.rows.len(), 2);
        assert_eq!((a.rows[0].returnflag, a.rows[0].linestatus), ('N', 'O'));
        let f = a.rows[0].exact_fields();
        assert_eq!(f[2], "53.00");
        assert_eq!(f[3], "67151.39");
        // 21168.23*0.96 + 45983.16*0.91 = 20321.5008 + 41844.6756
        assert_eq!(f[4], "62166.1764");
        // 20321.5008*1.02 + 41844.6756*1.06 = 20727.930816 + 44355.356136
        assert_eq!(f[5], "65083.286952");
        assert_eq!(f[9], "2");
        assert_eq!(a.rows[1].exact_fields()[9], "1");
    }

    /// A file of `n` varied lineitem lines (all four groups, some filtered out).
    fn sample_file(n: usize) -> (tempfile::TempDir, Vec<Input>) {
        let d = tempfile::tempdir().unwrap();
        let mut text = String::new();
        let flags = [("A", "F"), ("N", "F"), ("N", "O"), ("R", "F")];
        for i in 0..n {
            let (f, st) = flags[i * 7 % 4];
            let comment = "x".repeat(i * 13 % 40);
            text.push_str(&format!(
                "{}|{}|{}|{}|{}|{}.{:02}|0.{:02}|0.{:02}|{f}|{st}|1998-{:02}-{:02}|1996-02-12|1996-03-22|NONE|AIR|{comment}|\n",
                i / 4 + 1,
                i * 31 % 200_000,
                i % 10_000,
                i % 7 + 1,
                i % 50 + 1,
                900 + i * 37 % 100_000,
                i % 100,
                i % 11,
                i % 9,
                i % 12 + 1,
                i % 28 + 1,
            ));
        }
        let path = d.path().join("lineitem.tbl");
        std::fs::write(&path, &text).unwrap();
        let len = text.len() as u64;
        (
            d,
            vec![Input {
                path,
                len,
                parquet_row_groups: None,
            }],
        )
    }

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
    fn empty_file_and_empty_directory_are_errors() {
        let d = tempfile::tempdir().unwrap();
        let empty = d.path().join("lineitem.tbl");
        std::fs::write(&empty, "").unwrap();
        let e = resolve_inputs(&[empty]).unwrap_err().to_string();
        assert!(e.contains("empty file"), "{e}");
        let sub = d.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("orders.tbl"), "1|\n").unwrap();
        let e = resolve_inputs(&[sub]).unwrap_err().to_string();
        assert!(e.contains("no lineitem*.tbl files"), "{e}");
        let e = resolve_inputs(&[d.path().join("missing.tbl")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing.tbl"), "{e}");
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

    #[test]
    fn explain_shows_every_phase() {
        let (_d, inputs) = sample_file(10);
        let plan = explain(&inputs, &Q1Config::default());
        for phase in [
            "scan",
            "parse",
            "filter",
            "project",
            "combine",
            "shuffle",
            "merge",
            "sort",
            "1998-09-02",
        ] {
            assert!(plan.contains(phase), "{phase} in {plan}");
        }
    }

    /// Parquet as `tpch gen` writes it reads back as the rows the text parser finds in the same data.
    #[test]
    fn round_trip_through_parquet() {
        use crate::parquet_io::{open_lineitem, scan_row_group, write_lineitem};
        use tpchgen::generators::LineItemGenerator;
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("lineitem.parquet");
        let rows = write_lineitem(&path, 0.001, 1, 1, 1000, &AtomicU64::new(0)).unwrap();
        let (reader, sizes) = open_lineitem(&path).unwrap();
        assert_eq!(sizes.len() as u64, rows.div_ceil(1000));
        let mut got = Vec::new();
        let mut read = 0;
        for rg in 0..sizes.len() {
            read += scan_row_group(&reader, rg, 19981201, |r| got.push(r)).unwrap();
        }
        assert_eq!(read, rows);
        // The same rows as the text format, parsed by the text mapper.
        let mut want = Vec::new();
        for l in LineItemGenerator::new(0.001, 1, 1).iter() {
            let line = l.to_string();
            if let Some(r) = crate::q1::parse_line(line.as_bytes(), 19981201).unwrap() {
                want.push(r);
            }
        }
        assert_eq!(got, want);
        let other = d.path().join("other.parquet");
        std::fs::write(&other, b"PAR1 not really").unwrap();
        match open_lineitem(&other) {
            Err(e) => assert!(e.contains("not a Parquet file"), "{e}"),
            Ok(_) => panic!("a non-Parquet file was accepted"),
        }
    }
}
