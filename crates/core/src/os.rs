//! OS counters as snapshot sections: `/proc/diskstats` of the device holding a path (found
//! through its `st_dev` and `/sys/dev/block`), `/proc/stat` CPU, and process CPU from
//! `/proc/<pid>/stat`. Everything missing (not Linux, a file system without a block device)
//! becomes a missing section with the reason.

use std::collections::BTreeMap;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::observe::Section;

/// The `/proc/diskstats` fields kept, in their order after the device name (kernel
/// Documentation/admin-guide/iostats.rst); the 15th–17th (discards) are skipped.
const DISKSTATS: [(usize, &str); 13] = [
    (0, "reads"),
    (1, "reads_merged"),
    (2, "read_sectors"),
    (3, "read_ms"),
    (4, "writes"),
    (5, "writes_merged"),
    (6, "write_sectors"),
    (7, "write_ms"),
    (8, "in_flight"),
    (9, "io_ms"),
    (10, "weighted_ms"),
    (15, "flushes"),
    (16, "flush_ms"),
];

/// Clock ticks per second of `/proc` CPU times.
#[allow(unsafe_code)]
fn clk_tck() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// The block device holding `path`: its `/proc/diskstats` name and, for a partition, its disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    /// `major:minor`.
    pub id: String,
    /// The name in `/proc/diskstats` (e.g. `vda1`).
    pub name: String,
    /// The whole disk when `name` is a partition (e.g. `vda`).
    pub disk: Option<String>,
}

/// Why a figure of the machine or the database's files cannot be had here (a file system
/// without a block device, a remote server, a view that needs a privilege): said in the run
/// where the figure would be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unavailable(pub String);

impl From<String> for Unavailable {
    fn from(why: String) -> Self {
        Unavailable(why)
    }
}

/// Finds the block device of the file system holding `path`, or `path` itself when it is a
/// block device (a raw destination of `io redo`).
pub fn device_of(path: &Path) -> Result<Device, Unavailable> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let dev = if meta.file_type().is_block_device() {
        meta.rdev()
    } else {
        meta.dev()
    };
    // glibc's major()/minor() encoding.
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let id = format!("{major}:{minor}");
    if major == 0 {
        return Err(Unavailable(format!(
            "{} is on a file system without a block device (st_dev {id}: tmpfs, overlayfs, NFS, …)",
            path.display()
        )));
    }
    let sys = PathBuf::from(format!("/sys/dev/block/{id}"));
    let real = std::fs::canonicalize(&sys).map_err(|e| format!("{}: {e}", sys.display()))?;
    let name = file_name(&real)
        .ok_or_else(|| Unavailable(format!("{}: no device name", real.display())))?;
    let disk = real
        .join("partition")
        .exists()
        .then(|| real.parent().and_then(file_name))
        .flatten();
    Ok(Device { id, name, disk })
}

fn file_name(p: &Path) -> Option<String> {
    p.file_name().map(|n| n.to_string_lossy().into_owned())
}

/// The `/proc/diskstats` counters of one device, parsed from the file's text.
pub fn parse_diskstats(text: &str, device: &str) -> Option<BTreeMap<String, f64>> {
    text.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 14 || f[2] != device {
            return None;
        }
        let vals = &f[3..];
        Some(
            DISKSTATS
                .iter()
                .filter_map(|&(i, name)| Some((name.to_string(), vals.get(i)?.parse().ok()?)))
                .collect(),
        )
    })
}

/// The disk section for the device holding `path` (`in_flight` is a gauge, the rest counters).
pub fn disk_section(path: &Path) -> Section {
    match device_of(path) {
        Ok(dev) => device_section(&dev, path, read_diskstats().as_deref()),
        Err(why) => Section::missing(why.0),
    }
}

/// `/proc/diskstats`, read once per snapshot for every device; the error says why not.
pub fn read_diskstats() -> Result<String, String> {
    std::fs::read_to_string("/proc/diskstats").map_err(|e| format!("/proc/diskstats: {e}"))
}

/// The disk section of device `dev` (which holds `path`) from `/proc/diskstats`' text.
pub fn device_section(dev: &Device, path: &Path, diskstats: Result<&str, &String>) -> Section {
    let text = match diskstats {
        Ok(t) => t,
        Err(e) => return Section::missing(e.clone()),
    };
    let Some(mut counters) = parse_diskstats(text, &dev.name) else {
        return Section::missing(format!("device {} is not in /proc/diskstats", dev.name));
    };
    let mut sec = Section::default();
    if let Some(v) = counters.remove("in_flight") {
        sec.gauges.insert("in_flight".into(), v);
    }
    sec.counters = counters;
    sec.text.insert("device".into(), dev.name.clone());
    sec.text.insert("dev".into(), dev.id.clone());
    if let Some(d) = &dev.disk {
        sec.text.insert("disk".into(), d.clone());
    }
    sec.text.insert("path".into(), path.display().to_string());
    sec
}

/// The machine's CPU time by mode, in seconds, from the `cpu` line of `/proc/stat`.
pub fn parse_proc_stat(text: &str) -> Option<BTreeMap<String, f64>> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let tck = clk_tck();
    let names = [
        "user_s",
        "nice_s",
        "system_s",
        "idle_s",
        "iowait_s",
        "irq_s",
        "softirq_s",
        "steal_s",
    ];
    Some(
        line.split_whitespace()
            .skip(1)
            .zip(names)
            .filter_map(|(v, n)| Some((n.to_string(), v.parse::<f64>().ok()? / tck)))
            .collect(),
    )
}

/// The CPU section: `/proc/stat` times and the number of CPUs.
pub fn cpu_section() -> Section {
    match std::fs::read_to_string("/proc/stat")
        .map_err(|e| e.to_string())
        .and_then(|t| parse_proc_stat(&t).ok_or_else(|| "no cpu line".into()))
    {
        Ok(counters) => {
            let mut sec = Section {
                counters,
                ..Section::default()
            };
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            sec.gauges.insert("cpus".into(), cpus as f64);
            sec
        }
        Err(e) => Section::missing(format!("/proc/stat: {e}")),
    }
}

/// User and system CPU seconds of a process from its `/proc/<pid>/stat` text (fields 14 and
/// 15, counted after the parenthesised command name, which may hold spaces).
pub fn parse_pid_stat(text: &str) -> Option<(f64, f64)> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): utime is field 14 → index 11.
    let tck = clk_tck();
    Some((
        f.get(11)?.parse::<f64>().ok()? / tck,
        f.get(12)?.parse::<f64>().ok()? / tck,
    ))
}

/// CPU seconds of a process, `None` when it is gone or not visible.
pub fn pid_cpu(pid: &str) -> Option<(f64, f64)> {
    parse_pid_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// True when `pid` is a PostgreSQL process on this machine.
pub fn is_postgres(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .is_ok_and(|c| c.starts_with("postgres") || c.starts_with("postmaster"))
}

/// A section of process CPU seconds.
pub fn cpu_times(user: f64, system: f64) -> Section {
    Section {
        counters: BTreeMap::from([("user_s".into(), user), ("system_s".into(), system)]),
        ..Section::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diskstats_line_is_read_by_name() {
        let text = "   7       0 loop0 396 0 495616 1286 6234 0 203936 3529 0 3956 7546 0 0 0 0 6148 2730\n \
                    254       0 vda 3260599 83942 129134522 9809322 13230912 550109 525141008 3415299 2 1201404 13712541 877990 242 352275664 143342 5875537 344576\n";
        let d = parse_diskstats(text, "vda").unwrap();
        assert_eq!(d["reads"], 3260599.0);
        assert_eq!(d["write_sectors"], 525141008.0);
        assert_eq!(d["in_flight"], 2.0);
        assert_eq!(d["io_ms"], 1201404.0);
        assert_eq!(d["flushes"], 5875537.0);
        assert!(parse_diskstats(text, "vdb").is_none());
    }

    #[test]
    fn pid_stat_survives_spaces_in_the_name() {
        let t = "1234 (postgres: bench x) S 1 2 3 4 5 6 7 8 9 10 250 75 0 0 20 0 1 0";
        let (u, s) = parse_pid_stat(t).unwrap();
        assert_eq!(u, 250.0 / clk_tck());
        assert_eq!(s, 75.0 / clk_tck());
    }

    #[test]
    fn this_process_and_this_machine_are_visible() {
        assert!(pid_cpu("self").is_some());
        let c = cpu_section();
        assert!(c.missing.is_none(), "{c:?}");
        assert!(c.counters["idle_s"] > 0.0);
    }

    #[test]
    fn a_file_system_without_a_device_is_explained() {
        // /proc has st_dev major 0 everywhere.
        let e = device_of(Path::new("/proc/self")).unwrap_err();
        assert!(e.0.contains("without a block device"), "{e}");
    }
}
