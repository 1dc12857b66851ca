//! Q1's input and its splits: the lineitem files given, cut into map tasks.
//!
//! Files and directories resolve into lineitem files (text or Parquet); text files split into byte
//! ranges, Parquet files into row groups.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::{InputError, Q1Error};

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
    /// Parquet (written by `tpch gen --format parquet`), opened once for every map task; `None`
    /// for `.tbl` text.
    pub parquet: Option<ParquetInput>,
}

/// A Parquet input: its reader (the footer read once, the file mapped) and the compressed size
/// of each row group.
#[derive(Clone)]
pub struct ParquetInput {
    /// The reader the map tasks share.
    pub reader: std::sync::Arc<crate::parquet_io::LineitemReader>,
    /// Compressed bytes of each row group (a map task's input, for progress).
    pub row_groups: Vec<u64>,
    /// Raised when a read of the file's memory map faulted (the file shrank under it): the
    /// decoded values are zeros, not the file (`None` when the file was read in, not mapped).
    pub faulted: Option<crate::parquet_io::FaultFlag>,
}

impl std::fmt::Debug for ParquetInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetInput")
            .field("row_groups", &self.row_groups)
            .finish_non_exhaustive()
    }
}

/// Expands files and directories into lineitem files: a directory contributes its files named
/// `lineitem*.tbl` (sorted). Errors on missing paths, an empty file, or a directory without any.
pub fn resolve_inputs(paths: &[PathBuf]) -> Result<Vec<Input>, Q1Error> {
    if paths.is_empty() {
        return Err(InputError::NoPaths.into());
    }
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| Q1Error::Io {
            path: p.clone(),
            source: e,
        })?;
        let files = if meta.is_dir() {
            lineitem_files_in(p)?
        } else {
            vec![p.clone()]
        };
        for f in files {
            out.push(input_of(f)?);
        }
    }
    Ok(out)
}

/// The `lineitem*.tbl` (or `lineitem*.parquet`) files of a directory, sorted; an error when there
/// are none, or both kinds.
fn lineitem_files_in(dir: &Path) -> Result<Vec<PathBuf>, Q1Error> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Q1Error::Io {
            path: dir.to_owned(),
            source: e,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|f| {
            f.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with("lineitem") && (n.ends_with(".tbl") || n.ends_with(".parquet"))
            })
        })
        .collect();
    v.sort();
    let parquet = v
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "parquet"))
        .count();
    if parquet > 0 && parquet < v.len() {
        return Err(InputError::MixedFormats {
            dir: dir.to_owned(),
        }
        .into());
    }
    if v.is_empty() {
        // CSV from `tpch gen --format csv` is a likely mistake: name it and the command to use.
        let csv = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|f| {
                f.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("lineitem") && n.ends_with(".csv"))
            })
            .min();
        return Err(InputError::NoLineitemFiles {
            dir: dir.to_owned(),
            csv,
        }
        .into());
    }
    Ok(v)
}

/// One lineitem file as an input: its size (an error when empty) and, when it starts with
/// Parquet's magic bytes, its row groups (an error when it is not lineitem as `tpch gen` writes it).
fn input_of(f: PathBuf) -> Result<Input, Q1Error> {
    let len = std::fs::metadata(&f)
        .map_err(|e| Q1Error::Io {
            path: f.clone(),
            source: e,
        })?
        .len();
    if len == 0 {
        return Err(InputError::EmptyFile { path: f }.into());
    }
    let mut head = [0u8; 16];
    let n = File::open(&f)
        .and_then(|h| h.read_at(&mut head, 0))
        .unwrap_or(0);
    let is_parquet = n >= 4 && &head[..4] == b"PAR1";
    if head[..n].starts_with(b"l_orderkey,") {
        return Err(InputError::Csv { path: f }.into());
    }
    let parquet = if is_parquet {
        let (reader, row_groups, faulted) =
            crate::parquet_io::open_lineitem_watched(&f).map_err(|source| Q1Error::Parquet {
                path: f.clone(),
                source,
            })?;
        Some(ParquetInput {
            reader: std::sync::Arc::new(reader),
            row_groups,
            faulted,
        })
    } else {
        None
    };
    Ok(Input {
        path: f,
        len,
        parquet,
    })
}

/// Splits every file into `n` byte ranges of (nearly) equal size. Ranges ignore line boundaries:
/// each map task skips the partial line it starts in and finishes the line that crosses its end.
pub fn plan_splits(inputs: &[Input], n: usize) -> Vec<Split> {
    let n = n.max(1) as u64;
    let mut out = Vec::new();
    for (i, f) in inputs.iter().enumerate() {
        if let Some(groups) = f.parquet.as_ref().map(|p| &p.row_groups) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn csv_data_names_the_command_that_makes_what_q1_reads() {
        let d = tempfile::tempdir().unwrap();
        let csv = d.path().join("lineitem.csv");
        std::fs::write(
            &csv,
            "l_orderkey,l_partkey,l_suppkey,l_linenumber,l_quantity\n1,1552,93,1,17\n",
        )
        .unwrap();
        // The directory: it names the CSV file it found and the command to run instead.
        let e = resolve_inputs(&[d.path().to_owned()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("lineitem.csv"), "{e}");
        assert!(e.contains("--format parquet"), "{e}");
        // The file itself: recognised as CSV before any line is parsed.
        let e = resolve_inputs(&[csv]).unwrap_err().to_string();
        assert!(e.contains("CSV with a header line"), "{e}");
        assert!(
            e.contains("tpch gen --table lineitem --format parquet"),
            "{e}"
        );
    }
}
