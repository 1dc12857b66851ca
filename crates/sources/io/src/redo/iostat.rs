//! iostat for `io redo`: the `/proc/diskstats` counters of the devices holding the destinations,
//! snapshotted when the clock starts and when the run ends into `snapshots.jsonl`, so `report`
//! shows them in its "Database and OS" section as it does for a lab run's devices. The reading
//! code is the lab's ([`dbscope_core::os`]); a destination whose device cannot be known (tmpfs,
//! overlayfs, NFS) is a missing section with the reason, which the report prints.

use std::path::{Path, PathBuf};

use dbscope_core::observe::{JsonLines, Section, Snapshot, SNAPSHOTS_FILE};
use dbscope_core::os::{self, Device};

use super::config::Destination;

/// The role the report shows for a destination's device.
const ROLE: &str = "redo";

/// One destination: its section's name, its own name, and its path and device or why none.
type Place = (String, String, Result<(PathBuf, Device), String>);

/// The destinations' devices, and the snapshot file once the first snapshot is written.
pub(super) struct DestDisks {
    places: Vec<Place>,
    out: Option<JsonLines>,
    /// Why the snapshots could not be written, told once in the run's warnings.
    pub(super) failed: Option<String>,
}

impl DestDisks {
    /// Finds the device of every destination (they exist: they were opened and probed).
    pub(super) fn new(dests: &[Destination]) -> Self {
        let places = dests
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let dev = os::device_of(&d.path)
                    .map(|dev| (d.path.clone(), dev))
                    .map_err(|e| e.0);
                (format!("os.disk.redo.{i}"), d.name.clone(), dev)
            })
            .collect();
        DestDisks {
            places,
            out: None,
            failed: None,
        }
    }

    /// The `os.disk.redo.N` sections now: `/proc/diskstats` read once for every destination.
    fn sections(&self) -> Vec<(String, Section)> {
        let text = os::read_diskstats();
        self.places
            .iter()
            .map(|(section, name, dev)| {
                let mut sec = match dev {
                    Ok((path, dev)) => os::device_section(dev, path, text.as_deref()),
                    Err(why) => Section::missing(why.clone()),
                };
                if sec.missing.is_none() {
                    sec.text.insert("role".into(), ROLE.into());
                    sec.text.insert("name".into(), name.clone());
                }
                (section.clone(), sec)
            })
            .collect()
    }

    /// Appends a snapshot labelled `label` taken at `t_ns` on the run's clock. A snapshot that
    /// cannot be written does not stop the run: the reason is kept in [`DestDisks::failed`].
    pub(super) fn snapshot(&mut self, run_dir: &Path, label: &str, t_ns: u64) {
        if self.failed.is_some() {
            return;
        }
        let snap = Snapshot {
            label: label.into(),
            t_ns,
            span_ns: None,
            sections: self.sections().into_iter().collect(),
        };
        let out = match self.out.take() {
            Some(o) => Ok(o),
            None => JsonLines::create(run_dir, SNAPSHOTS_FILE).map_err(|e| e.to_string()),
        };
        match out.and_then(|mut o| {
            o.append(&[snap]).map_err(|e| e.to_string())?;
            Ok(o)
        }) {
            Ok(o) => self.out = Some(o),
            Err(e) => {
                self.failed = Some(format!(
                    "{}: the destinations' iostat could not be recorded: {e}",
                    run_dir.join(SNAPSHOTS_FILE).display()
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A destination on a file system without a block device is a missing section, with why.
    #[test]
    fn a_destination_without_a_device_is_missing_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let gone = Destination {
            name: "a".into(),
            path: dir.path().join("absent"),
        };
        let disks = DestDisks::new(&[gone]);
        let secs = disks.sections();
        assert_eq!(secs.len(), 1);
        assert_eq!(secs[0].0, "os.disk.redo.0");
        let why = secs[0].1.missing.as_deref().unwrap();
        assert!(why.contains("absent"), "{why}");
    }
}
