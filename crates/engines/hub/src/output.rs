//! `--out FILE.parquet|.csv`: the result written under a temporary name beside FILE, synced and
//! renamed only when the query completed; a failed query leaves nothing at FILE.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use datafusion::arrow::csv::Writer as CsvWriter;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::parquet::arrow::ArrowWriter;

use crate::Error;

enum Sink {
    Parquet(ArrowWriter<BufWriter<File>>),
    Csv(CsvWriter<BufWriter<File>>),
}

/// An output being written.
pub(crate) struct Out {
    path: PathBuf,
    tmp: PathBuf,
    sink: Option<Sink>,
}

/// Checks `--out`'s extension before anything runs.
pub(crate) fn check(path: &Path) -> Result<(), Error> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("parquet" | "csv") => Ok(()),
        _ => Err(Error::Usage(format!(
            "--out {}: expected a .parquet or .csv file",
            path.display()
        ))),
    }
}

impl Out {
    pub(crate) fn create(path: &Path, schema: &SchemaRef) -> Result<Out, Error> {
        check(path)?;
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let tmp = path.with_file_name(format!(".{name}.partial"));
        let io = |e: std::io::Error| Error::Input(format!("{}: cannot write: {e}", tmp.display()));
        let f = BufWriter::with_capacity(1 << 20, File::create(&tmp).map_err(io)?);
        let sink = if path.extension().is_some_and(|e| e == "csv") {
            Sink::Csv(CsvWriter::new(f))
        } else {
            Sink::Parquet(ArrowWriter::try_new(f, schema.clone(), None).map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                Error::Input(format!("{}: {e}", tmp.display()))
            })?)
        };
        Ok(Out {
            path: path.to_path_buf(),
            tmp,
            sink: Some(sink),
        })
    }

    pub(crate) fn write(&mut self, b: &RecordBatch) -> Result<(), String> {
        let r = match self.sink.as_mut() {
            Some(Sink::Parquet(w)) => w.write(b).map_err(|e| e.to_string()),
            Some(Sink::Csv(w)) => w.write(b).map_err(|e| e.to_string()),
            None => Ok(()),
        };
        r.map_err(|e| format!("{}: {e}", self.tmp.display()))
    }

    /// Ends the file and renames it to its name (the partial file removed if that fails).
    pub(crate) fn commit(mut self) -> Result<PathBuf, String> {
        let tmp = self.tmp.clone();
        let err = |e: String| format!("{}: {e}", tmp.display());
        let sink = self.sink.take();
        let done = (|| {
            let f = match sink {
                Some(Sink::Parquet(w)) => w.into_inner().map_err(|e| err(e.to_string()))?,
                Some(Sink::Csv(w)) => w.into_inner(),
                None => return Err(err("already closed".into())),
            };
            let f = f.into_inner().map_err(|e| err(e.error().to_string()))?;
            f.sync_all().map_err(|e| err(e.to_string()))?;
            std::fs::rename(&self.tmp, &self.path)
                .map_err(|e| format!("{}: {e}", self.path.display()))
        })();
        if done.is_err() {
            let _ = std::fs::remove_file(&self.tmp);
        }
        done.map(|_| self.path.clone())
    }
}

impl Drop for Out {
    /// Not committed: the partial file goes.
    fn drop(&mut self) {
        if self.sink.is_some() {
            self.sink = None;
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}
