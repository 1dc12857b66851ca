//! The OS figures from a snapshot delta: disks as `iostat -x` shows them, and CPU.
//!
//! CPU of the machine by mode, of the client and of the server backends.

use dbscope_core::observe::Snapshot;

use super::model::{push, ratio, sec, DiskRow, ObserveReport};

pub(super) fn os_figures(r: &mut ObserveReport, d: &Snapshot, span: f64, client: Option<f64>) {
    let data = sec(d, "os.disk.data");
    let run = sec(d, "os.disk.run");
    let same = data
        .zip(run)
        .is_some_and(|(a, b)| a.text.get("device") == b.text.get("device"));
    let mut disks = Vec::new();
    if let Some(s) = data {
        disks.push((if same { "data+run" } else { "data" }, s));
    }
    if let (Some(s), false) = (run, same) {
        disks.push(("run", s));
    }
    for (role, s) in disks {
        let g = |k: &str| s.counter(k).unwrap_or(0.0);
        let ios = g("reads") + g("writes");
        r.disks.push(DiskRow {
            role: role.into(),
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
            push(
                &mut r.cpu,
                &format!("{}_cpu_s", who.split(' ').next().unwrap_or(who)),
                &format!("{who} CPU"),
                Some(t),
                "s",
            );
            push(
                &mut r.cpu,
                &format!("{}_cpu_us_per_commit", who.split(' ').next().unwrap_or(who)),
                &format!("{who} CPU per commit"),
                ratio(Some(t * 1e6), client),
                "µs",
            );
        }
    }
}
