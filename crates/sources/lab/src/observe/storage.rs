//! Where the database keeps its files and on which block devices: the data directory (MariaDB/MySQL:
//! `@@datadir`, redo log included unless moved), the WAL
//! (a `pg_wal` symlink followed), each tablespace the workload uses, the temp tablespace and the
//! run directory, found once when the observer starts, recorded in the manifest, and read from
//! `/proc/diskstats` in every snapshot as `os.disk.<role>` (issue 34 item 7).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dbscope_core::observe::Section;
use dbscope_core::{StorageInfo, StoragePlace};

use super::os::{self, Device};
use super::snapshot::DbProbe;

/// One place with its device as found, and the snapshot section that watches it.
#[derive(Clone, Debug)]
pub(super) struct Watched {
    /// The section's name: `os.disk.data`, `os.disk.wal`, `os.disk.tablespace.<name>`, …
    pub section: String,
    /// The place as the manifest records it.
    pub place: StoragePlace,
    /// The path and its device, or why the device cannot be known.
    pub device: Result<(PathBuf, Device), String>,
}

/// Finds every place of the run (see the module docs). `dirs` are the workload's own
/// directories with their role (`--tablespace-dir`: `tablespace`, or `temp` for a temp load).
pub(super) fn find(
    probe: &mut DbProbe,
    dirs: &[(String, PathBuf)],
    run_dir: &Path,
) -> Vec<Watched> {
    let mut raw: Vec<(String, Option<String>, PathBuf, Option<String>)> = Vec::new();
    match probe.kind() {
        "postgres" => {
            let local = probe.files_path();
            let data = probe.data_directory().map(Path::to_path_buf);
            let remote = local.as_ref().err().map(|why| why.to_string());
            if let Some(d) = &data {
                raw.push(("data".into(), None, d.clone(), remote.clone()));
                let wal = d.join("pg_wal");
                // initdb --waldir and a moved WAL leave pg_wal a symlink: its target is the place.
                let wal = match std::fs::read_link(&wal) {
                    Ok(t) if t.is_absolute() => t,
                    Ok(t) => d.join(t),
                    Err(_) => wal,
                };
                raw.push(("WAL".into(), None, wal, remote.clone()));
            } else if let Err(why) = &local {
                raw.push((
                    "data".into(),
                    None,
                    PathBuf::from("?"),
                    Some(why.to_string()),
                ));
            }
            for (role, name, path) in probe.pg_places(dirs, local.as_deref().ok()) {
                raw.push((role, name, path, remote.clone()));
            }
        }
        "mysql" => match probe.files_path() {
            Ok(d) => raw.push(("data".into(), None, d, None)),
            Err(why) => raw.push((
                "data".into(),
                None,
                probe
                    .data_directory()
                    .map_or_else(|| PathBuf::from("?"), Path::to_path_buf),
                Some(why.to_string()),
            )),
        },
        "sqlite" => {
            if let Ok(p) = probe.files_path() {
                raw.push(("data".into(), None, p, None));
            }
            for (role, dir) in dirs {
                raw.push((role.clone(), None, dir.clone(), None));
            }
        }
        _ => {}
    }
    let run_dir = std::fs::canonicalize(run_dir).unwrap_or_else(|_| run_dir.to_path_buf());
    raw.push(("run".into(), None, run_dir, None));

    let mut taken: BTreeMap<String, usize> = BTreeMap::new();
    raw.into_iter()
        .map(|(role, name, path, unknown)| {
            let device = match unknown {
                Some(why) => Err(why),
                None => os::device_of(&path)
                    .map(|d| (path.clone(), d))
                    .map_err(|e| e.0),
            };
            let mut section = match (role.as_str(), &name) {
                ("data", _) => "os.disk.data".to_string(),
                ("run", _) => "os.disk.run".to_string(),
                ("WAL", _) => "os.disk.wal".to_string(),
                (r, Some(n)) => format!("os.disk.{r}.{n}"),
                (r, None) => format!("os.disk.{r}"),
            };
            let n = taken.entry(section.clone()).or_insert(0);
            *n += 1;
            if *n > 1 {
                section = format!("{section}.{n}");
            }
            let place = StoragePlace {
                role,
                name,
                path: path.display().to_string(),
                device: device.as_ref().ok().map(|(_, d)| d.name.clone()),
                disk: device.as_ref().ok().and_then(|(_, d)| d.disk.clone()),
                dev: device.as_ref().ok().map(|(_, d)| d.id.clone()),
                unavailable: device.as_ref().err().cloned(),
            };
            Watched {
                section,
                place,
                device,
            }
        })
        .collect()
}

/// The manifest's record of the places; the note says when the server is not on this machine.
pub(super) fn info(watched: &[Watched], kind: &str) -> StorageInfo {
    let remote = kind == "postgres"
        && watched
            .iter()
            .any(|w| w.place.role == "data" && w.place.unavailable.is_some());
    StorageInfo {
        places: watched.iter().map(|w| w.place.clone()).collect(),
        note: remote.then(|| {
            let why = watched
                .iter()
                .find(|w| w.place.role == "data")
                .and_then(|w| w.place.unavailable.clone())
                .unwrap_or_default();
            format!("the devices of the server's files cannot be known from here: {why}")
        }),
    }
}

/// The `os.disk.*` sections of one snapshot: `/proc/diskstats` read once for every place.
pub(super) fn sections(watched: &[Watched]) -> Vec<(String, Section)> {
    let text = os::read_diskstats();
    watched
        .iter()
        .map(|w| {
            let mut sec = match &w.device {
                Ok((path, dev)) => os::device_section(dev, path, text.as_deref()),
                Err(why) => Section::missing(why.clone()),
            };
            if sec.missing.is_none() {
                sec.text.insert("role".into(), w.place.role.clone());
                if let Some(n) = &w.place.name {
                    sec.text.insert("name".into(), n.clone());
                }
            }
            (w.section.clone(), sec)
        })
        .collect()
}
