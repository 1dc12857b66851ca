//! The calls file: sessions hand it finished calls, the recording thread writes them as JSON
//! lines every flush.

use std::io::{self, BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use serde_json::json;

use crate::calls::Call;
use crate::CaptureError;

/// One line of the calls file, waiting to be written. (Nearly every line is a call: boxing the
/// call to shrink the rare session line would cost an allocation per call.)
#[allow(clippy::large_enum_variant)]
enum Line {
    Call(Call),
    Session(serde_json::Value),
}

/// The calls file. Sessions hand it finished calls (a push under a lock, nothing else on the
/// forwarding path); [`CallsFile::flush`], called by the recording thread every [`FLUSH_EVERY`],
/// turns them into JSON and writes them.
pub(crate) struct CallsFile {
    pending: Mutex<Vec<Line>>,
    out: Mutex<BufWriter<std::fs::File>>,
    pub(super) error: Mutex<Option<String>>,
    path: PathBuf,
}

impl CallsFile {
    pub(super) fn create(path: &Path) -> Result<Self, CaptureError> {
        let f = crate::private::create_private(path).map_err(|e| CaptureError::io(path, e))?;
        Ok(CallsFile {
            pending: Mutex::new(Vec::new()),
            out: Mutex::new(BufWriter::with_capacity(1 << 16, f)),
            error: Mutex::new(None),
            path: path.to_path_buf(),
        })
    }

    pub(super) fn push_calls(&self, done: Vec<Call>) {
        if done.is_empty() {
            return;
        }
        let mut p = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        p.extend(done.into_iter().map(Line::Call));
    }

    pub(super) fn push_session(&self, line: serde_json::Value) {
        let mut p = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        p.push(Line::Session(line));
    }

    /// Writes what the sessions handed in so far and flushes; the first failure is kept.
    pub(super) fn flush(&self) {
        let lines =
            std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        let mut text = String::new();
        for l in lines {
            match l {
                Line::Call(c) => {
                    let mut v = serde_json::to_value(&c).unwrap_or_default();
                    v["type"] = json!("call");
                    text.push_str(&v.to_string());
                }
                Line::Session(v) => text.push_str(&v.to_string()),
            }
            text.push('\n');
            if text.len() >= 1 << 16 {
                if let Err(e) = out.write_all(text.as_bytes()) {
                    self.fail(e);
                }
                text.clear();
            }
        }
        if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            self.fail(e);
        }
    }

    fn fail(&self, e: io::Error) {
        let mut err = self.error.lock().unwrap_or_else(PoisonError::into_inner);
        err.get_or_insert_with(|| format!("{}: {e}", self.path.display()));
    }
}
