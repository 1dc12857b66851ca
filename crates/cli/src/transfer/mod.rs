//! `dbscope transfer`: a PostgreSQL table to files or files to a table, recorded as a run.
//!
//! One connection per mapper (issue 15 part 3; the work is in `dbscope_transfer`).

pub mod args;

use std::path::PathBuf;

use anyhow::anyhow;
use dbscope_transfer::{
    is_table_uri, parse_table_uri, transfer_in, transfer_out, Compress, FileOptions, Format,
    LoadMode, TransferConfig,
};

use crate::common::{default_run_dir, finish_run, redacted_command_line};
use crate::exit::Exit;
use crate::transfer::args::{TransferArgs, TransferCompress, TransferFormat, TransferMode};

pub fn cmd_transfer(a: TransferArgs) -> Result<u8, Exit> {
    let (out, uri, dir) = match (is_table_uri(&a.from), is_table_uri(&a.to)) {
        (true, false) => (true, &a.from, &a.to),
        (false, true) => (false, &a.to, &a.from),
        (true, true) => {
            return Err(anyhow!("--from and --to are both tables: one must be a directory").into())
        }
        (false, false) => {
            return Err(
                anyhow!("neither --from nor --to is a table (postgres://…/DATABASE/TABLE, mysql://…/DATABASE/TABLE)").into(),
            )
        }
    };
    if a.key.is_some() && !out && a.mode != TransferMode::Upsert {
        return Err(anyhow!(
            "--key applies to a transfer out of a table, or into one with --mode upsert"
        )
        .into());
    }
    if a.mode != TransferMode::Empty && out {
        return Err(anyhow!("--mode applies to a transfer into a table").into());
    }
    if a.allow_incomplete && out {
        return Err(anyhow!("--allow-incomplete applies to a transfer into a table").into());
    }
    let run = match &a.run {
        Some(p) => p.clone(),
        None => default_run_dir("transfer")?,
    };
    let cfg = TransferConfig {
        table: parse_table_uri(uri)?,
        dir: PathBuf::from(dir),
        mappers: a.mappers,
        key: a.key.clone().filter(|_| out),
        file: FileOptions {
            format: match a.format {
                TransferFormat::Tbl => Format::Tbl,
                TransferFormat::Csv => Format::Csv,
                TransferFormat::Parquet => Format::Parquet,
            },
            delimiter: a.delimiter.map(char::from),
            header: a.header,
            null: a.null.clone(),
            compress: match a.compress {
                TransferCompress::None => Compress::None,
                TransferCompress::Gzip => Compress::Gzip,
                TransferCompress::Zstd => Compress::Zstd,
                TransferCompress::Snappy => Compress::Snappy,
            },
        },
        checksum: a.verify == "checksum",
        run,
        command_line: redacted_command_line(),
        allow_incomplete: a.allow_incomplete,
        repeat: a.repeat,
        mode: match a.mode {
            TransferMode::Empty => LoadMode::Empty,
            TransferMode::Append => LoadMode::Append,
            TransferMode::Upsert => LoadMode::Upsert(
                a.key
                    .iter()
                    .flat_map(|k| k.split(','))
                    .map(|k| k.trim().to_string())
                    .filter(|k| !k.is_empty())
                    .collect(),
            ),
        },
    };
    let r = if out {
        transfer_out(&cfg)?
    } else {
        transfer_in(&cfg)?
    };
    if !a.quiet {
        if let Some(split) = &r.split {
            eprintln!("dbscope: transfer: {split}");
        }
        eprintln!(
            "dbscope: transfer: {} rows, {:.1} MB in {:.3} s{} ({:.0} rows/s) with {} mapper(s)",
            r.rows,
            r.bytes as f64 / 1e6,
            r.seconds,
            if a.repeat > 1 {
                format!(" (mean of {} repetitions)", a.repeat)
            } else {
                String::new()
            },
            if r.seconds > 0.0 {
                r.rows as f64 / r.seconds
            } else {
                0.0
            },
            a.mappers
        );
        if let Some((ins, upd)) = r.inserted_updated {
            let loaders = match r.loaders {
                0 => String::new(),
                1 => " by 1 loader from a staging table".to_string(),
                n => format!(" by {n} loaders (one per partition)"),
            };
            eprintln!(
                "dbscope: transfer: --mode {}: {ins} rows inserted, {upd} updated{loaders}",
                cfg.mode.name()
            );
        }
    }
    finish_run(
        &r.run,
        r.outcome,
        r.detail.as_deref(),
        r.events,
        None,
        a.quiet,
    )
}
