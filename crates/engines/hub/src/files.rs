//! File sources: Parquet, CSV (a header line) and TPC-H `.tbl` files or directories (one
//! directory, one table), read by DataFusion's own listing tables; and `run:DIR`, a run's events
//! exported to a temporary Parquet file with the export's columns (`dbscope export`).

use std::path::Path;

use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::prelude::{CsvReadOptions, ParquetReadOptions, SessionContext};

use crate::Error;

/// The file kinds the hub reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileKind {
    Parquet,
    Csv,
    Tbl,
}

impl FileKind {
    fn ext(self) -> &'static str {
        match self {
            FileKind::Parquet => ".parquet",
            FileKind::Csv => ".csv",
            FileKind::Tbl => ".tbl",
        }
    }
}

fn kind_of(name: &str) -> Option<FileKind> {
    [FileKind::Parquet, FileKind::Csv, FileKind::Tbl]
        .into_iter()
        .find(|k| name.ends_with(k.ext()))
}

/// A file's kind by its extension, a directory's by the files in it (all of one kind).
pub(crate) fn detect(path: &Path) -> Result<FileKind, Error> {
    let shown = path.display();
    let meta =
        std::fs::metadata(path).map_err(|e| Error::Input(format!("{shown}: cannot read: {e}")))?;
    let expected =
        "expected a .parquet, .csv (with a header line) or TPC-H .tbl file, or a directory of them";
    if meta.is_file() {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        return kind_of(&name).ok_or_else(|| Error::Input(format!("{shown}: {expected}")));
    }
    let mut kinds = std::collections::BTreeSet::new();
    let entries = std::fs::read_dir(path)
        .map_err(|e| Error::Input(format!("{shown}: cannot read the directory: {e}")))?;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with('.') {
            continue;
        }
        if let Some(k) = kind_of(&name) {
            kinds.insert(k.ext());
        }
    }
    match kinds.len() {
        0 => Err(Error::Input(format!(
            "{shown}: holds no data file; {expected}"
        ))),
        1 => kind_of(kinds.first().copied().unwrap_or_default())
            .ok_or_else(|| Error::Input(format!("{shown}: {expected}"))),
        _ => Err(Error::Input(format!(
            "{shown}: holds files of several kinds ({}); a directory is one table of one kind",
            kinds.into_iter().collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// The TPC-H table a `.tbl` path holds, by its name (`lineitem.tbl`, `lineitem.3.tbl`, a directory
/// `lineitem/`), with its columns from the schema `tpch load` creates.
fn tpch_table(path: &Path) -> Result<(&'static str, Schema), Error> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let stem_of = |n: &str| n.split('.').next().unwrap_or_default().to_string();
    let mut stem = stem_of(&name);
    if path.is_dir() {
        // A directory named after its table, or holding the parts of one table (`tpch gen`'s
        // `nation.tbl`, `lineitem.1.tbl`, …).
        let stems: std::collections::BTreeSet<String> = std::fs::read_dir(path)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().to_string())
                    .filter(|n| n.ends_with(".tbl") && !n.starts_with('.'))
                    .map(|n| stem_of(&n))
                    .collect()
            })
            .unwrap_or_default();
        let known = |t: &str| {
            dbscope_lab::workload::tpch::load::SCHEMA
                .iter()
                .any(|(k, _)| *k == t)
        };
        if !known(&stem) && stems.len() == 1 {
            stem = stems.into_iter().next().unwrap_or_default();
        }
    }
    let stem = stem.as_str();
    let Some((table, cols)) = dbscope_lab::workload::tpch::load::SCHEMA
        .iter()
        .find(|(t, _)| *t == stem)
    else {
        return Err(Error::Input(format!(
            "{}: a .tbl file is read with its TPC-H table's columns, and {stem:?} is not a TPC-H table \
             (lineitem, orders, customer, part, partsupp, supplier, nation, region); name it TABLE.tbl, \
             TABLE.N.tbl or put it in a directory named TABLE",
            path.display()
        )));
    };
    let fields = cols
        .iter()
        .map(|(c, t)| {
            let dt = match *t {
                "BIGINT" => DataType::Int64,
                "INTEGER" => DataType::Int32,
                "DATE" => DataType::Date32,
                t if t.starts_with("DECIMAL(15,2)") => DataType::Decimal128(15, 2),
                _ => DataType::Utf8,
            };
            Field::new(*c, dt, false)
        })
        .collect::<Vec<_>>();
    Ok((table, Schema::new(fields)))
}

/// Registers a file or directory as table `name`.
pub(crate) async fn register(
    ctx: &SessionContext,
    name: &str,
    path: &str,
) -> Result<FileKind, Error> {
    let p = Path::new(path);
    let kind = detect(p)?;
    let err = |e: datafusion::error::DataFusionError| Error::Input(format!("{path}: {e}"));
    match kind {
        FileKind::Parquet => ctx
            .register_parquet(name, path, ParquetReadOptions::default())
            .await
            .map_err(err)?,
        FileKind::Csv => ctx
            .register_csv(name, path, CsvReadOptions::new().has_header(true))
            .await
            .map_err(err)?,
        FileKind::Tbl => {
            let (_, schema) = tpch_table(p)?;
            // dbgen ends every line with `|`: one more, empty, field.
            let mut fields: Vec<Field> =
                schema.fields().iter().map(|f| f.as_ref().clone()).collect();
            fields.push(Field::new("__end", DataType::Utf8, true));
            let raw = Schema::new(fields);
            let hidden = format!("__tbl_{name}");
            ctx.register_csv(
                hidden.as_str(),
                path,
                CsvReadOptions::new()
                    .has_header(false)
                    .delimiter(b'|')
                    .file_extension(".tbl")
                    .schema(&raw),
            )
            .await
            .map_err(err)?;
            let cols: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            let view = ctx
                .table(hidden.as_str())
                .await
                .and_then(|df| df.select_columns(&cols))
                .map_err(err)?
                .into_view();
            ctx.register_table(name, view).map_err(err)?;
        }
    }
    Ok(kind)
}

/// Registers run `dir`'s events as table `name`: exported to Parquet in `tmp` first (the export's
/// columns and types, warm-up events included and flagged); returns that file.
pub(crate) async fn register_run(
    ctx: &SessionContext,
    name: &str,
    dir: &str,
    tmp: &Path,
) -> Result<std::path::PathBuf, Error> {
    let run = dbscope_core::RunDir::open(Path::new(dir))
        .map_err(|e| Error::Input(format!("run:{dir}: {e}")))?;
    let out = tmp.join(format!("{name}.parquet"));
    dbscope_analysis::export::export_run(
        &run,
        dbscope_analysis::export::ExportFormat::Parquet,
        &out,
    )
    .map_err(|e| Error::Input(format!("run:{dir}: {e}")))?;
    let path = out.to_string_lossy().to_string();
    ctx.register_parquet(name, &path, ParquetReadOptions::default())
        .await
        .map_err(|e| Error::Input(format!("run:{dir}: {e}")))?;
    Ok(out)
}
