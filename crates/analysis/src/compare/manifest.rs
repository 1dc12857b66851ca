//! What differs between the two runs' manifests.
//!
//! Timestamps, command lines and other fields that always differ are left out.

use std::collections::BTreeMap;

use dbscope_core::RunDir;

use super::model::{ManifestDiff, StorageMove};

/// Manifest fields that differ between A and B.
pub fn manifest_diff(a: &RunDir, b: &RunDir) -> Vec<ManifestDiff> {
    let fa = flat_manifest(a);
    let fb = flat_manifest(b);
    let mut keys: Vec<&String> = fa.keys().chain(fb.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| fa.get(*k) != fb.get(*k))
        .map(|k| ManifestDiff {
            field: k.clone(),
            a: fa.get(k).cloned(),
            b: fb.get(k).cloned(),
        })
        .collect()
}

/// Fields that always differ between two runs and say nothing about the cause of a change.
const DIFF_IGNORED: [&str; 10] = [
    "started_utc",
    "ended_utc",
    "clock_origin_unix_ns",
    "events_written",
    "command_line",
    "event_files",
    "outcome_detail",
    "target.location",
    // Measured (how long the sessions took to connect), not set: it differs in every pair.
    "runner.connect_s",
    // Paths differ from run to run; what matters, the devices, is said by `storage_moves`.
    "storage",
];

/// The roles whose devices differ between A's and B's manifests ("WAL: vda → loop0"). Nothing
/// when either run did not record where its files were (runs made before issue 34 item 7).
pub fn storage_moves(a: &RunDir, b: &RunDir) -> Vec<StorageMove> {
    let (Some(sa), Some(sb)) = (&a.manifest.storage, &b.manifest.storage) else {
        return Vec::new();
    };
    let side = |s: &dbscope_core::StorageInfo, role: &str| {
        let d = s.devices(role);
        if d.is_empty() {
            "(none)".to_string()
        } else {
            d.join("+")
        }
    };
    dbscope_core::STORAGE_ROLES
        .iter()
        .filter_map(|role| {
            let (da, db) = (side(sa, role), side(sb, role));
            (da != db).then(|| StorageMove {
                role: role.to_string(),
                a: da,
                b: db,
            })
        })
        .collect()
}

fn flat_manifest(run: &RunDir) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(mut v) = serde_json::to_value(&run.manifest) else {
        return out;
    };
    // Requested settings are (name, value) pairs: key them by name.
    if let Some(t) = v.get_mut("target").and_then(|t| t.as_object_mut()) {
        if let Some(serde_json::Value::Array(pairs)) = t.remove("settings_requested") {
            let mut m = serde_json::Map::new();
            for p in pairs {
                if let (Some(k), Some(val)) = (p.get(0).and_then(|k| k.as_str()), p.get(1)) {
                    m.insert(k.to_string(), val.clone());
                }
            }
            t.insert("settings_requested".into(), serde_json::Value::Object(m));
        }
    }
    flatten("", &v, &mut out);
    out.retain(|k, _| {
        !DIFF_IGNORED
            .iter()
            .any(|i| k == i || k.starts_with(&format!("{i}.")))
    });
    out
}

fn flatten(prefix: &str, v: &serde_json::Value, out: &mut BTreeMap<String, String>) {
    let key = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                flatten(&key(k), v, out);
            }
        }
        serde_json::Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                flatten(&key(&i.to_string()), v, out);
            }
        }
        serde_json::Value::Null => {}
        serde_json::Value::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}
