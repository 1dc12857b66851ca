//! `dbscope import csv FILE`: latencies measured elsewhere, read by dbscope-import into a run.

pub mod args;

use dbscope_import::{import_csv, CsvImport, Unit};

use crate::common::{print_examples, redacted_command_line};
use crate::exit::Exit;
use crate::import::args::{ImportArgs, ImportCsvArgs, ImportSource, UnitArg};

/// Runs `dbscope import …`.
pub fn cmd_import(a: ImportArgs) -> Result<u8, Exit> {
    match a.source {
        ImportSource::Csv(c) => cmd_import_csv(c),
    }
}

fn cmd_import_csv(a: ImportCsvArgs) -> Result<u8, Exit> {
    let unit = match a.unit {
        UnitArg::Ns => Unit::Ns,
        UnitArg::Us => Unit::Us,
        UnitArg::Ms => Unit::Ms,
        UnitArg::S => Unit::S,
    };
    let s = import_csv(&CsvImport {
        file: a.file.clone(),
        event: a.event.clone(),
        column: a.column.clone(),
        unit,
        session_column: a.session_column.clone(),
        start_column: a.start_column.clone(),
        lenient: a.lenient,
        delimiter: a.delimiter,
        out: a.out.clone(),
        command_line: redacted_command_line(),
    })?;
    print_examples("skipped", &s.skipped_examples, s.skipped, "bad rows");
    println!(
        "imported {} events ({:?}) from {} into {}{}",
        s.events,
        a.event,
        a.file.display(),
        s.dir.display(),
        if s.skipped > 0 {
            format!("; {} bad rows skipped", s.skipped)
        } else {
            String::new()
        }
    );
    Ok(0)
}
