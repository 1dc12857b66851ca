//! `dbscope tpch gen|q1|load`: turns the arguments into library calls (dbscope-tpch) and prints.

pub mod args;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use dbscope_db::open_target_keyed;
use dbscope_lab::workload::tpch::{load, load_run};
use dbscope_tpch::answer::{compare, official_q1_sf1, rounded, SF1_LINEITEM_ROWS};
use dbscope_tpch::gen::{self, GenConfig, GenFormat, GenProgress, TABLES};
use dbscope_tpch::q1::{self, Q1Config, Q1Progress, DEFAULT_DELTA};
use indicatif::ProgressBar;

use crate::common::{default_run_dir, progress_bar as bar, redacted_command_line, say_recorded};
use crate::exit::Exit;
use crate::tpch::args::{
    EngineArg, GenArgs, GenFormatArg, LoadArgs, Q1Args, TableChoice, TpchArgs, TpchCommand, WayArg,
};

/// Runs a `tpch` subcommand.
pub fn cmd_tpch(a: TpchArgs) -> Result<u8, Exit> {
    match a.command {
        TpchCommand::Gen(a) => cmd_gen(a),
        TpchCommand::Q1(a) => cmd_q1(a),
        TpchCommand::Load(a) => cmd_load(a),
    }
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// Runs `work` while a thread refreshes `bar` from `position` every 100 ms.
fn with_bar<T>(
    bar: Option<&ProgressBar>,
    position: impl Fn() -> (u64, u64) + Sync,
    work: impl FnOnce() -> T,
) -> T {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        if let Some(bar) = bar {
            s.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    let (pos, len) = position();
                    bar.set_length(len.max(pos).max(1));
                    bar.set_position(pos);
                    std::thread::sleep(Duration::from_millis(100));
                }
            });
        }
        let r = work();
        done.store(true, Ordering::Relaxed);
        r
    })
}

fn cmd_gen(a: GenArgs) -> Result<u8, Exit> {
    let tables: Vec<String> = match a.table {
        TableChoice::All => TABLES.iter().map(|t| t.to_string()).collect(),
        TableChoice::Lineitem => vec!["lineitem".into()],
        TableChoice::Orders => vec!["orders".into()],
        TableChoice::Customer => vec!["customer".into()],
        TableChoice::Part => vec!["part".into()],
        TableChoice::Partsupp => vec!["partsupp".into()],
        TableChoice::Supplier => vec!["supplier".into()],
        TableChoice::Nation => vec!["nation".into()],
        TableChoice::Region => vec!["region".into()],
    };
    let config = GenConfig {
        scale_factor: a.sf,
        tables,
        format: match a.format {
            GenFormatArg::Tbl => GenFormat::Tbl,
            GenFormatArg::Csv => GenFormat::Csv,
            GenFormatArg::Parquet => GenFormat::Parquet,
        },
        parts: a.parts,
        out: a.out.clone(),
        threads: a.threads.unwrap_or_else(cpus).max(1),
        row_group_rows: a.row_group_rows.max(1),
    };
    gen::validate(&config)?;
    let progress = GenProgress::default();
    let t0 = Instant::now();
    let bar = bar(
        a.quiet,
        1,
        "{spinner} {elapsed_precise} [{bar:30}] {human_pos}/{human_len} rows (≈)",
    );
    let files = with_bar(
        bar.as_ref(),
        || {
            (
                progress.rows.load(Ordering::Relaxed),
                progress.rows_expected.load(Ordering::Relaxed),
            )
        },
        || gen::generate(&config, &progress),
    );
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let files = files?;
    let secs = t0.elapsed().as_secs_f64();
    let mut out = std::io::stdout().lock();
    let mut total = 0u64;
    for f in &files {
        let bytes = std::fs::metadata(&f.path).map(|m| m.len()).unwrap_or(0);
        writeln!(
            out,
            "{}\t{} rows\t{} bytes",
            f.path.display(),
            f.rows,
            bytes
        )?;
        total += f.rows;
    }
    writeln!(
        out,
        "generated {total} rows in {} file(s) at SF {} in {secs:.2} s ({} threads)",
        files.len(),
        a.sf,
        config.threads
    )?;
    Ok(0)
}

fn cmd_q1(a: Q1Args) -> Result<u8, Exit> {
    if a.engine != EngineArg::Local {
        return crate::cluster::q1_on_cluster(a);
    }
    if a.scheduler.is_some() || a.way != WayArg::Sql {
        return Err(anyhow::anyhow!("--scheduler and --way apply to --engine ballista").into());
    }
    // The Parquet reader panics on some corrupt files; dbscope_tpch turns those panics into errors,
    // so keep the default hook's message for every other panic only.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !dbscope_tpch::parquet_io::is_parquet_panic(info.location()) {
            default_hook(info);
        }
    }));
    let config = Q1Config {
        mappers: a.mappers.unwrap_or_else(cpus),
        combiner: !a.no_combiner,
        delta_days: a.delta,
        splits_per_mapper: 1,
        mmap: !a.no_mmap,
    };
    if config.mappers == 0 || config.mappers > 4096 {
        return Err(anyhow::anyhow!("--mappers must be between 1 and 4096").into());
    }
    let inputs = q1::resolve_inputs(&a.inputs)?;
    if a.explain {
        print!("{}", q1::explain(&inputs, &config));
        return Ok(0);
    }
    let show = !a.quiet && std::io::stderr().is_terminal();
    let started = chrono::Utc::now();
    let t0 = Instant::now();
    let splits = q1::plan_splits(&inputs, config.mappers);
    let mut jobs: Vec<(u64, q1::Q1Output)> = Vec::new();
    for rep in 0..a.repeat {
        let progress = Q1Progress::default();
        let done = AtomicBool::new(false);
        let at = t0.elapsed().as_nanos() as u64;
        let result = std::thread::scope(|s| {
            if show {
                s.spawn(|| {
                    // Hadoop-style lines, printed when the percentages change (at most twice a second).
                    let mut last = String::new();
                    while !done.load(Ordering::Relaxed) {
                        let line = progress.line();
                        if line != last {
                            eprintln!("{line}");
                            last = line;
                        }
                        std::thread::sleep(Duration::from_millis(500));
                    }
                });
            }
            let r = q1::run_splits(&inputs, &splits, &config, &progress);
            done.store(true, Ordering::Relaxed);
            r
        });
        let output = match result {
            Ok(o) => o,
            Err(e) => {
                // The job failed (issue 27: a file truncated while mapped died with SIGBUS and
                // no run): what finished before it is kept, the run says why it failed.
                if !a.no_record {
                    let dir = match &a.out {
                        Some(p) => p.clone(),
                        None => default_run_dir("tpch-q1")?,
                    };
                    let names: Vec<String> = inputs
                        .iter()
                        .map(|f| f.path.display().to_string())
                        .collect();
                    let why = format!("repetition {}: {e}", rep + 1);
                    if let Ok(run) = dbscope_tpch::record::record_q1_failed(
                        &dir,
                        redacted_command_line(),
                        &config,
                        &names,
                        &jobs,
                        started,
                        why,
                    ) {
                        eprintln!(
                            "dbscope: the failed run is recorded in {}",
                            run.path.display()
                        );
                    }
                }
                return Err(e.into());
            }
        };
        if show {
            eprintln!("{}", progress.line());
        }
        if let Some((_, first)) = jobs.first() {
            if first.answer != output.answer {
                return Err(Exit(
                    1,
                    anyhow::anyhow!(
                        "repetition {} gave a different answer from the first: {} versus {}",
                        rep + 1,
                        output.answer.to_table().replace('\n', "; "),
                        first.answer.to_table().replace('\n', "; ")
                    ),
                ));
            }
        }
        jobs.push((at, output));
    }
    let mut times: Vec<u64> = jobs.iter().map(|(_, o)| o.timings.total).collect();
    times.sort_unstable();
    let median_ns = times[times.len() / 2];
    let output = &jobs[0].1;
    let mut out = std::io::stdout().lock();
    out.write_all(output.answer.to_table().as_bytes())?;
    let secs = median_ns as f64 / 1e9;
    writeln!(
        out,
        "\n{} {} ({} rows aggregated), {} bytes in {secs:.3} s{}: {:.2} M rows/s, {:.0} MB/s; {} mapper(s), {} split(s), combiner {}",
        output.lines,
        // Parquet has rows, not lines (issue 13).
        match inputs.iter().filter(|i| i.parquet.is_some()).count() {
            0 => "lines",
            n if n == inputs.len() => "rows",
            _ => "lines and rows",
        },
        output.answer.rows_aggregated(),
        output.bytes,
        if jobs.len() > 1 {
            format!(" (median of {})", jobs.len())
        } else {
            String::new()
        },
        output.lines as f64 / secs / 1e6,
        output.bytes as f64 / secs / 1e6,
        config.mappers,
        output.splits,
        if config.combiner { "on" } else { "off" }
    )?;
    // Hadoop's counters the seed read: what the combiner saved the shuffle, and Cumulative CPU.
    let mut cpu: Vec<u64> = jobs.iter().map(|(_, o)| o.work.cpu_ns()).collect();
    cpu.sort_unstable();
    writeln!(
        out,
        "{} records shipped from map to reduce ({} rows passed the filter); cumulative CPU {:.3} s{}",
        dbscope_analysis::text::thousands(output.work.shipped_records),
        dbscope_analysis::text::thousands(output.answer.rows_aggregated()),
        cpu[cpu.len() / 2] as f64 / 1e9,
        if jobs.len() > 1 { " (median)" } else { "" },
    )?;
    let mut mismatch = None;
    if output.lines == SF1_LINEITEM_ROWS && config.delta_days == DEFAULT_DELTA {
        match compare(&rounded(&output.answer), &official_q1_sf1()) {
            Ok(()) => writeln!(
                out,
                "official TPC-H answer (SF 1, DELTA 90, answers/q1.out): match, 40 values to the digit"
            )?,
            Err(m) => mismatch = Some(m),
        }
    }
    if !a.no_record {
        let dir = match &a.out {
            Some(p) => p.clone(),
            None => default_run_dir("tpch-q1")?,
        };
        let command_line = redacted_command_line();
        let names: Vec<String> = inputs
            .iter()
            .map(|f| f.path.display().to_string())
            .collect();
        let run =
            dbscope_tpch::record::record_q1(&dir, command_line, &config, &names, &jobs, started)
                .with_context(|| format!("cannot record the run in {}", dir.display()))?;
        say_recorded(&mut out, &run.path)?;
    }
    if let Some(m) = mismatch {
        return Err(Exit(
            1,
            anyhow::anyhow!("the answer differs from the official TPC-H SF 1 answer: {m}"),
        ));
    }
    Ok(0)
}

/// How `tpch load` loads into a database of this dialect (the words its closing line uses).
fn load_method(dialect: dbscope_db::Dialect) -> &'static str {
    match dialect {
        dbscope_db::Dialect::Postgres => "COPY … FROM STDIN",
        dbscope_db::Dialect::Mysql => "LOAD DATA LOCAL INFILE",
        _ => "prepared multi-row INSERTs",
    }
}

fn cmd_load(a: LoadArgs) -> Result<u8, Exit> {
    if a.commit_every == 0 {
        return Err(anyhow::anyhow!("--commit-every must be at least 1").into());
    }
    let files = load::find_files(&a.dir)?;
    let target = open_target_keyed(&a.target, &a.settings, a.key_file.as_deref())?;
    let expected: u64 = files
        .iter()
        .map(|f| {
            std::fs::metadata(&f.path)
                .map(|m| m.len() / 120)
                .unwrap_or(0)
        })
        .sum();
    let progress = AtomicU64::new(0);
    let bar = bar(
        a.quiet,
        expected,
        "{spinner} {elapsed_precise} [{bar:30}] {human_pos} rows loaded",
    );
    let run = match &a.run {
        Some(p) => p.clone(),
        None => default_run_dir("tpch-load")?,
    };
    let cfg = load_run::LoadRunConfig {
        fresh: a.fresh,
        commit_every: a.commit_every,
        parallel: cpus(),
        run: &run,
        command_line: redacted_command_line(),
        dir: &a.dir,
    };
    let recorded = with_bar(
        bar.as_ref(),
        || (progress.load(Ordering::Relaxed), expected),
        || load_run::load_recorded(target.as_ref(), &files, &cfg, &progress),
    );
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let recorded = recorded?;
    let summary = match recorded.result {
        Ok(s) => s,
        Err(e) => {
            return Err(RecordedFailure {
                run: recorded.run,
                source: e,
            }
            .into())
        }
    };
    let mut out = std::io::stdout().lock();
    let mut total = 0;
    for (t, rows) in &summary.tables {
        writeln!(out, "{t}\t{rows} rows")?;
        total += rows;
    }
    let secs = summary.elapsed.as_secs_f64();
    writeln!(
        out,
        "loaded {total} rows into {} in {secs:.2} s ({:.0} rows/s): {}, {} session(s) in parallel",
        target.kind(),
        total as f64 / secs.max(1e-9),
        load_method(target.dialect()),
        summary.sessions
    )?;
    writeln!(
        out,
        "recorded {} events in {}; see: dbscope report {}",
        recorded.events,
        recorded.run.display(),
        recorded.run.display()
    )?;
    // The map/combine/reduce answer of the loaded lineitem files, for `dbscope run tpch-q1`.
    let lineitem: Vec<PathBuf> = files
        .iter()
        .filter(|f| f.table == "lineitem")
        .map(|f| f.path.clone())
        .collect();
    if !lineitem.is_empty() {
        let mut deltas = if a.deltas.is_empty() {
            vec![DEFAULT_DELTA]
        } else {
            a.deltas.clone()
        };
        deltas.sort_unstable();
        deltas.dedup();
        let mut answers = Vec::with_capacity(deltas.len());
        for &delta_days in &deltas {
            let config = Q1Config {
                mappers: cpus(),
                delta_days,
                ..Q1Config::default()
            };
            answers.push((
                delta_days,
                q1::run(&lineitem, &config, &Q1Progress::default())?.answer,
            ));
        }
        load::store_reference(target.as_ref(), &answers)?;
        let list: Vec<String> = deltas.iter().map(u32::to_string).collect();
        writeln!(
            out,
            "stored the map/combine/reduce Q1 answer (DELTA {}) in {}; check with: dbscope run tpch-q1 --target …{}",
            list.join(", "),
            load::REFERENCE_TABLE,
            match deltas.as_slice() {
                [d] if *d == DEFAULT_DELTA => String::new(),
                [d, ..] => format!(" --delta {d}"),
                [] => String::new(),
            }
        )?;
    }
    Ok(0)
}

/// A load that failed and was recorded as failed: the load's error stays in the chain, so the exit
/// code follows its kind (a refusing database exits 4).
#[derive(Debug)]
struct RecordedFailure {
    run: PathBuf,
    source: load::LoadError,
}

impl std::fmt::Display for RecordedFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (the load is recorded as failed in {})",
            self.source,
            self.run.display()
        )
    }
}

impl std::error::Error for RecordedFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}
