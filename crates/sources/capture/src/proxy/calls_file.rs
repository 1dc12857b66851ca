//! The calls file: sessions hand it finished calls, the recording thread writes them as JSON
//! lines every flush.

use std::io::{self, BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use crate::calls::Call;
use crate::CaptureError;

/// The calls file. Sessions hand it finished calls, serialized at once into the lines waiting to
/// be written (under a lock: nothing else on the forwarding path); [`CallsFile::flush`], called by
/// the recording thread every [`FLUSH_EVERY`], writes them.
///
/// Serializing on the session's thread rather than the recording thread's: a call's strings are
/// then freed by the thread that allocated them. Freed on the recording thread they went to its
/// own cache, so every allocation of the forwarding thread took the allocator's slow path, and
/// the frees its lock: about 0.2 µs of user time per call under `pgbench -S` (docs/capture.md).
///
/// [`FLUSH_EVERY`]: super::shared::FLUSH_EVERY
pub(crate) struct CallsFile {
    pending: Mutex<Vec<u8>>,
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

    /// Takes the finished calls out of `done` (which keeps its room for the next ones).
    pub(super) fn push_calls(&self, done: &mut Vec<Call>) {
        if done.is_empty() {
            return;
        }
        {
            let mut p = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            for c in done.iter() {
                call_line(c, &mut p);
                p.push(b'\n');
            }
        }
        done.clear();
    }

    pub(super) fn push_session(&self, line: serde_json::Value) {
        let mut p = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = serde_json::to_writer(&mut *p, &line);
        p.push(b'\n');
    }

    /// Writes what the sessions handed in so far and flushes; the first failure is kept.
    pub(super) fn flush(&self) {
        // The sessions' next lines go into a buffer of the same size: no regrowing it from
        // nothing after every flush.
        let text = {
            let mut p = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            let room = p.capacity();
            std::mem::replace(&mut *p, Vec::with_capacity(room))
        };
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = out.write_all(&text).and_then(|()| out.flush()) {
            self.fail(e);
        }
    }

    fn fail(&self, e: io::Error) {
        let mut err = self.error.lock().unwrap_or_else(PoisonError::into_inner);
        err.get_or_insert_with(|| format!("{}: {e}", self.path.display()));
    }
}

/// Appends `c` as a JSON object with `"type":"call"` first, serialized straight from the struct
/// into `text` (building a `serde_json::Value` first cost a map and a string per field of every
/// call: most of the recording thread's time under `pgbench -S`; a string per call, then copied,
/// cost an allocation more).
fn call_line(c: &Call, text: &mut Vec<u8>) {
    text.extend_from_slice(b"{\"type\":\"call\"");
    let body = text.len();
    if serde_json::to_writer(&mut *text, c).is_err() {
        text.truncate(body);
        text.push(b'}');
        return;
    }
    // The struct always has fields, so its object is `{` then `"session":…`: that `{` becomes
    // the comma after the type.
    text[body] = b',';
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_line_is_the_call_with_its_type() {
        let c: Call = serde_json::from_value(serde_json::json!({
            "session": 3, "seq": 7, "start_ns": 10, "end_ns": 25, "protocol": "simple",
            "sql": "SELECT \"x\" FROM t WHERE a = 'é'", "params": ["1", null],
            "tags": ["SELECT 1"], "rows": 1, "txn": "I"
        }))
        .unwrap();
        let mut text = Vec::new();
        call_line(&c, &mut text);
        let text = String::from_utf8(text).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let mut want = serde_json::to_value(&c).unwrap();
        want["type"] = serde_json::json!("call");
        assert_eq!(v, want);
        assert!(
            text.starts_with("{\"type\":\"call\",\"session\":3,"),
            "{text}"
        );
        let back: Call = serde_json::from_value(v).unwrap();
        assert_eq!(back, c);
    }
}
