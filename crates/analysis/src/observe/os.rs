//! The OS figures from a snapshot delta: disks as `iostat -x` shows them, and CPU.
//!
//! CPU of the machine by mode, of the client and of the server backends.

use dbscope_core::observe::Snapshot;

use dbscope_core::observe::Section;
use dbscope_core::STORAGE_ROLES;

use super::model::{push, ratio, sec, DiskRow, ObserveReport};

/// One row per device of the `os.disk.*` sections, with the roles it plays joined by `+` in the
/// order data, WAL, tablespace, temp, run (`data+WAL+temp+run` when everything is on one disk).
/// Runs made before the roles were recorded have `os.disk.data` and `os.disk.run` only.
fn disk_groups(d: &Snapshot) -> Vec<(String, &Section)> {
    let mut groups: Vec<(Vec<&str>, &Section)> = Vec::new();
    for (name, s) in d.sections.iter().filter(|(n, _)| n.starts_with("os.disk.")) {
        if s.missing.is_some() {
            continue;
        }
        let role = match s.text.get("role") {
            Some(r) => r.as_str(),
            None => match &name["os.disk.".len()..] {
                "wal" => "WAL",
                other => other.split('.').next().unwrap_or(other),
            },
        };
        let device = s.text.get("device");
        match groups
            .iter_mut()
            .find(|(_, g)| g.text.get("device") == device)
        {
            Some((roles, _)) => roles.push(role),
            None => groups.push((vec![role], s)),
        }
    }
    let rank = |r: &str| {
        STORAGE_ROLES
            .iter()
            .position(|x| *x == r)
            .unwrap_or(usize::MAX)
    };
    let mut rows: Vec<(usize, String, &Section)> = groups
        .into_iter()
        .map(|(mut roles, s)| {
            roles.sort_by_key(|r| rank(r));
            roles.dedup();
            (rank(roles[0]), roles.join("+"), s)
        })
        .collect();
    rows.sort_by_key(|r| r.0);
    rows.into_iter().map(|(_, role, s)| (role, s)).collect()
}

pub(super) fn os_figures(r: &mut ObserveReport, d: &Snapshot, span: f64, client: Option<f64>) {
    for (role, s) in disk_groups(d) {
        let g = |k: &str| s.counter(k).unwrap_or(0.0);
        let ios = g("reads") + g("writes");
        r.disks.push(DiskRow {
            role,
            device: s.text.get("device").cloned().unwrap_or_default(),
            r_per_s: g("reads") / span,
            w_per_s: g("writes") / span,
            rkb_per_s: g("read_sectors") / 2.0 / span,
            wkb_per_s: g("write_sectors") / 2.0 / span,
            areq_kb: (ios > 0.0).then(|| (g("read_sectors") + g("write_sectors")) / 2.0 / ios),
            r_await_ms: (g("reads") > 0.0).then(|| g("read_ms") / g("reads")),
            w_await_ms: (g("writes") > 0.0).then(|| g("write_ms") / g("writes")),
            f_per_s: g("flushes") / span,
            util_pct: (g("io_ms") / (span * 1000.0) * 100.0).min(100.0),
        });
    }
    if let Some(cpu) = sec(d, "os.cpu") {
        let total: f64 = cpu.counters.values().sum();
        for (k, label) in [
            ("user_s", "machine CPU user"),
            ("nice_s", "machine CPU nice"),
            ("system_s", "machine CPU system"),
            ("iowait_s", "machine CPU iowait"),
            ("steal_s", "machine CPU steal"),
            ("idle_s", "machine CPU idle"),
        ] {
            push(
                &mut r.cpu,
                &format!("cpu_{k}"),
                label,
                ratio(cpu.counter(k).map(|v| 100.0 * v), Some(total)),
                "%",
            );
        }
    }
    for (name, who) in [("os.client", "client"), ("os.server", "server backends")] {
        if let Some(s) = sec(d, name) {
            let t = s.counter("user_s").unwrap_or(0.0) + s.counter("system_s").unwrap_or(0.0);
            // What the client process is when it is not a workload's (a capture's proxy).
            let label = s.text.get("who").map_or(who, String::as_str);
            push(
                &mut r.cpu,
                &format!("{}_cpu_s", who.split(' ').next().unwrap_or(who)),
                &format!("{label} CPU"),
                Some(t),
                "s",
            );
            push(
                &mut r.cpu,
                &format!("{}_cpu_us_per_commit", who.split(' ').next().unwrap_or(who)),
                &format!("{label} CPU per commit"),
                ratio(Some(t * 1e6), client),
                "µs",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(role: Option<&str>, device: &str) -> Section {
        let mut s = Section::default();
        s.text.insert("device".into(), device.into());
        if let Some(r) = role {
            s.text.insert("role".into(), r.into());
        }
        s
    }

    /// Issue 34 item 7: one row per device, its roles in the order data, WAL, tablespace, temp,
    /// run; runs made before the roles were recorded still read (`os.disk.data`, `os.disk.run`).
    #[test]
    fn issue_34_item_7_one_row_per_device_with_its_roles() {
        let mut d = Snapshot {
            label: "end".into(),
            t_ns: 0,
            span_ns: Some(1),
            sections: Default::default(),
        };
        for (name, role, dev) in [
            ("os.disk.run", Some("run"), "vda"),
            ("os.disk.temp.pg_default", Some("temp"), "vda"),
            ("os.disk.wal", Some("WAL"), "loop3"),
            ("os.disk.data", Some("data"), "vda"),
            ("os.disk.tablespace.ts1", Some("tablespace"), "loop4"),
        ] {
            d.sections.insert(name.into(), disk(role, dev));
        }
        d.sections
            .insert("os.disk.tablespace.gone".into(), Section::missing("why"));
        let rows: Vec<(String, String)> = disk_groups(&d)
            .into_iter()
            .map(|(r, s)| (r, s.text["device"].clone()))
            .collect();
        assert_eq!(
            rows,
            [
                ("data+temp+run".to_string(), "vda".to_string()),
                ("WAL".into(), "loop3".into()),
                ("tablespace".into(), "loop4".into()),
            ]
        );
        let mut old = d.clone();
        old.sections.clear();
        old.sections
            .insert("os.disk.data".into(), disk(None, "vda"));
        old.sections.insert("os.disk.run".into(), disk(None, "vda"));
        assert_eq!(disk_groups(&old)[0].0, "data+run");
    }
}
