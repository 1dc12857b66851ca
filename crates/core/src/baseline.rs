//! Named baselines of a runs directory: `<runs>/.dbscope-baselines.json`, the runs a later run is
//! compared against by name (`dbscope baseline set NAME RUN…`, `compare --baseline NAME RUN`).
//!
//! Unlike the catalogue, a baseline is a decision of the user's and cannot be derived from the
//! manifests, so this file is the record and the catalogue's `baselines` table only mirrors it
//! (`catalog::save_baselines` writes the file and the mirror; a rebuilt catalogue reads the file).
//! A leaf: reading and writing the file only. Writes are atomic.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The baselines file's name inside a runs directory.
pub const BASELINES_FILE: &str = ".dbscope-baselines.json";

/// One named baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// The run directories' names inside the runs directory, in the order given.
    pub runs: Vec<String>,
    /// When it was set (RFC 3339, UTC).
    pub set_utc: String,
    /// The workload of its runs (they all have the same).
    pub workload: String,
}

/// Every baseline of a runs directory, by name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Baselines {
    /// Format of this file.
    pub format_version: u32,
    /// The baselines.
    pub baselines: BTreeMap<String, Baseline>,
}

/// The baselines file of a runs directory.
pub fn path(runs: &Path) -> PathBuf {
    runs.join(BASELINES_FILE)
}

/// Reads the baselines of a runs directory (none when it has no baselines file).
pub fn read(runs: &Path) -> Result<Baselines> {
    let p = path(runs);
    let text = match std::fs::read_to_string(&p) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Baselines::default()),
        Err(e) => return Err(Error::io(&p, e)),
    };
    serde_json::from_str(&text).map_err(|e| Error::Format {
        path: p.clone(),
        msg: format!(
            "line {}: not a baselines file ({e}); expected {{\"format_version\": 1, \
             \"baselines\": {{NAME: {{\"runs\": [...], \"set_utc\": ..., \"workload\": ...}}}}}}",
            e.line()
        ),
    })
}

/// Writes the baselines file atomically (the catalogue's mirror is `catalog::save_baselines`'s).
pub fn write(runs: &Path, b: &Baselines) -> Result<()> {
    let mut b = b.clone();
    b.format_version = 1;
    let text = serde_json::to_string_pretty(&b).map_err(|e| Error::Format {
        path: path(runs),
        msg: e.to_string(),
    })?;
    crate::atomic::write_atomic(&path(runs), format!("{text}\n").as_bytes())
}

/// Checks a baseline name: letters, digits, `-`, `_`, `.`, `/`; not empty.
pub fn check_name(name: &str) -> std::result::Result<(), String> {
    if name.is_empty()
        || name.len() > 100
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
    {
        return Err(format!(
            "{name:?} is not a baseline name: use 1 to 100 letters, digits, '-', '_', '.' or '/'"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()).unwrap(), Baselines::default());
        let mut b = Baselines::default();
        b.baselines.insert(
            "main".into(),
            Baseline {
                runs: vec!["r1".into(), "r2".into()],
                set_utc: "2026-12-05T08:00:00+00:00".into(),
                workload: "commit".into(),
            },
        );
        write(dir.path(), &b).unwrap();
        let back = read(dir.path()).unwrap();
        assert_eq!(back.baselines, b.baselines);
        assert_eq!(back.format_version, 1);
    }

    #[test]
    fn malformed_file_names_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(path(dir.path()), "{\n\"baselines\": [1,\n").unwrap();
        let e = read(dir.path()).unwrap_err().to_string();
        assert!(e.contains(BASELINES_FILE), "{e}");
        assert!(e.contains("line "), "{e}");
    }

    #[test]
    fn names() {
        assert!(check_name("main").is_ok());
        assert!(check_name("release/1.2_rc-3").is_ok());
        assert!(check_name("").is_err());
        assert!(check_name("a b").is_err());
        assert!(check_name("x;drop").is_err());
    }
}
