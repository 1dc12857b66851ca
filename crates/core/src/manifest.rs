//! `manifest.json`: what a run was (workload, target, settings, host), when, and how it ended.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The run format this build writes. Readers accept this major version and older ones (1.x: events
/// in 40-byte records only; 2.0 adds packed events blocks, which a 1.x reader would skip) and refuse
/// a newer major version.
pub const FORMAT_VERSION: &str = "2.0";

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Still running, or killed before it could record an end (the data written so far is kept).
    Running,
    /// Finished as asked (ops or duration reached).
    Complete,
    /// Stopped early by the user (Ctrl-C, SIGTERM); all data up to the stop is kept.
    Interrupted,
    /// Stopped by an error (e.g. `--max-errors` exceeded, the target went away for good).
    Failed,
}

impl Outcome {
    /// Lower-case name as written in the manifest.
    pub fn as_str(&self) -> &'static str {
        match self {
            Outcome::Running => "running",
            Outcome::Complete => "complete",
            Outcome::Interrupted => "interrupted",
            Outcome::Failed => "failed",
        }
    }
}

/// The workload that produced the events.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkloadInfo {
    /// Workload name, e.g. `commit`.
    pub name: String,
    /// Its parameters as given (after defaults were applied).
    pub params: BTreeMap<String, serde_json::Value>,
}

/// The database the workload ran against.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    /// `sqlite`, `postgres` or `null`.
    pub kind: String,
    /// Where, with any password removed (e.g. `postgres://bench@/bench?host=/tmp`).
    pub location: String,
    /// Server or library version as reported by the database.
    pub server_version: String,
    /// Settings the user asked for with `--set`, in the order given.
    pub settings_requested: Vec<(String, String)>,
    /// Effective values read back from the database after connecting.
    pub settings_effective: BTreeMap<String, String>,
}

/// How the runner drove the sessions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunnerInfo {
    /// Number of sessions (connections).
    pub sessions: u32,
    /// Operations per session, when the run was bounded by count.
    pub ops_per_session: Option<u64>,
    /// Duration limit in seconds, when the run was bounded by time.
    pub duration_s: Option<f64>,
    /// Warm-up period in seconds; events starting in it carry the warm-up flag.
    pub warmup_s: f64,
    /// Errors tolerated before the run is stopped as failed; absent where no such limit applies
    /// (a replay counts its errors as divergences; `io redo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_errors: Option<u64>,
    /// `closed` (as fast as possible) or `open` (target rate).
    pub mode: String,
    /// Client threads the sessions ran on, when fewer than the sessions (multiplexed, as
    /// pgbench's `-j`); absent when every session had a thread of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// Seconds it took to open every session's connection, before the clock started (pgbench's
    /// "initial connection time"); absent in runs that did not measure it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_s: Option<f64>,
}

/// Facts about the machine the run was measured on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    /// Output of `uname -a`.
    pub uname: String,
    /// Host name.
    pub hostname: String,
    /// Logical CPUs available to the process.
    pub cpus: u32,
    /// Physical memory in bytes (MemTotal).
    pub memory_bytes: u64,
    /// CPU model (`model name` in /proc/cpuinfo); empty when not readable.
    #[serde(default)]
    pub cpu_model: String,
    /// CPU sockets (distinct `physical id`s); 0 when not readable.
    #[serde(default)]
    pub sockets: u32,
    /// NUMA nodes (/sys/devices/system/node/node*); 0 when not readable.
    #[serde(default)]
    pub numa_nodes: u32,
    /// Simultaneous multithreading active (/sys/devices/system/cpu/smt/active), when readable.
    #[serde(default)]
    pub smt: Option<bool>,
    /// cpufreq governor of cpu0 (`performance`, `powersave`…); empty when there is none (VMs).
    #[serde(default)]
    pub cpu_governor: String,
    /// Frequency boost (turbo) enabled, when readable (cpufreq `boost`, or intel_pstate `no_turbo`).
    #[serde(default)]
    pub cpu_boost: Option<bool>,
    /// Memory of each NUMA node in bytes, by node number (`MemTotal` of
    /// /sys/devices/system/node/node*/meminfo); empty when not readable.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub numa_memory_bytes: BTreeMap<u32, u64>,
    /// Transparent huge pages mode (the chosen one of
    /// /sys/kernel/mm/transparent_hugepage/enabled: `always`, `madvise`, `never`); empty when
    /// not readable.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub thp: String,
    /// Huge pages reserved (`HugePages_Total` of /proc/meminfo), when readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hugepages_total: Option<u64>,
    /// Of those, free (`HugePages_Free`), when readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hugepages_free: Option<u64>,
    /// Size of one huge page in bytes (`Hugepagesize`), when readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hugepage_bytes: Option<u64>,
    /// The CPU flags that change database and checksum speed ([`CPU_FLAGS`]) this CPU has, in
    /// that order (/proc/cpuinfo `flags`, or `Features` on arm64); empty when not readable.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_flags: Vec<String>,
    /// CPUs online on the machine (/sys/devices/system/cpu/online), when readable; `cpus` is
    /// what the process may use, fewer under `taskset` or a cgroup's CPU limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub online_cpus: Option<u32>,
    /// The CPUs dbscope's process, and so its client threads, may run on, as the kernel lists
    /// them (`Cpus_allowed_list` of /proc/self/status: `0-1`, `0`); empty when not readable. On
    /// a small machine the client's placement beside the server's processes moves throughput by
    /// tens of per cent (bench/lookup-vs-pgbench), so a run records it and `compare` shows it
    /// when A's and B's differ.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub client_cpus: String,
    /// The scheduler's autogroups (`kernel.sched_autogroup_enabled`), when readable: with them
    /// CPU time is shared between sessions first (a server started by a service manager or
    /// `pg_ctl` is one, the shell running dbscope another), then between their threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sched_autogroup: Option<bool>,
}

/// The number of CPUs in a kernel CPU list (`0-3,6,8-9`: 7); `None` when it is not one.
pub fn cpu_list_len(list: &str) -> Option<u32> {
    let list = list.trim();
    if list.is_empty() {
        return None;
    }
    let mut n = 0u32;
    for part in list.split(',') {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?),
            None => {
                let c = part.trim().parse::<u32>().ok()?;
                (c, c)
            }
        };
        if hi < lo {
            return None;
        }
        n = n.checked_add(hi - lo + 1)?;
    }
    Some(n)
}

/// `Cpus_allowed_list` of a /proc/PID/status text.
fn allowed_cpu_list(status: &str) -> Option<String> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
        .filter(|v| cpu_list_len(v).is_some())
}

/// The CPU flags recorded in [`HostInfo::cpu_flags`] when present: AES and carry-less multiply
/// (TLS, encryption at rest, CRC), SHA, CRC32, the vector extensions (checksums, hashing, column
/// scans), bit manipulation and popcount. x86 names first, then arm64's.
pub const CPU_FLAGS: [&str; 20] = [
    "aes",
    "vaes",
    "pclmulqdq",
    "vpclmulqdq",
    "sha_ni",
    "sse4_2",
    "popcnt",
    "bmi2",
    "avx",
    "avx2",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "pmull",
    "sha1",
    "sha2",
    "crc32",
    "asimd",
    "sve",
];

/// The flags of [`CPU_FLAGS`] the first `flags` (x86) or `Features` (arm64) line of
/// /proc/cpuinfo's text lists, in [`CPU_FLAGS`] order.
pub fn parse_cpu_flags(cpuinfo: &str) -> Vec<String> {
    let Some(line) = cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        matches!(k.trim(), "flags" | "Features").then_some(v)
    }) else {
        return Vec::new();
    };
    let have: std::collections::BTreeSet<&str> = line.split_whitespace().collect();
    CPU_FLAGS
        .iter()
        .filter(|f| have.contains(*f))
        .map(|f| f.to_string())
        .collect()
}

/// The value in kB of `key` (e.g. `MemTotal`, `Hugepagesize`) in a meminfo text, in bytes; for a
/// count (`HugePages_Total`, no unit) the count. Node meminfo lines (`Node 0 MemTotal: … kB`) are
/// read too.
pub fn meminfo_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        if k.split_whitespace().last() != Some(key) {
            return None;
        }
        let mut it = v.split_whitespace();
        let n: u64 = it.next()?.parse().ok()?;
        match it.next() {
            Some("kB") => n.checked_mul(1024),
            Some(_) => None,
            None => Some(n),
        }
    })
}

/// The chosen mode of a sysfs choice file (`always [madvise] never` → `madvise`).
pub fn sysfs_choice(text: &str) -> Option<String> {
    let open = text.find('[')?;
    let close = text[open..].find(']')? + open;
    Some(text[open + 1..close].to_string()).filter(|s| !s.is_empty())
}

/// The CPU model and the number of sockets from the text of /proc/cpuinfo.
pub fn parse_cpuinfo(text: &str) -> (String, u32) {
    let mut model = String::new();
    let mut sockets = std::collections::BTreeSet::new();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let (key, value) = (key.trim(), value.trim());
        match key {
            // x86 says `model name`; arm64 kernels say nothing or `Model`/`Hardware`.
            "model name" | "Model" | "Hardware" if model.is_empty() => model = value.to_string(),
            "physical id" => {
                sockets.insert(value.to_string());
            }
            _ => {}
        }
    }
    (model, sockets.len() as u32)
}

/// `uname -a` as coreutils prints it on Linux, from /proc/sys/kernel (kernel name, host name,
/// release, version, machine, then the operating system), rather than a `uname` process (and a
/// search of PATH) for every command. Where a file is missing (a kernel before
/// /proc/sys/kernel/arch), the command itself.
fn uname_a() -> String {
    let read = |f: &str| {
        std::fs::read_to_string(format!("/proc/sys/kernel/{f}"))
            .ok()
            .map(|s| s.trim().to_string())
    };
    let parts: Option<Vec<String>> = ["ostype", "hostname", "osrelease", "version", "arch"]
        .iter()
        .map(|f| read(f))
        .collect();
    if let Some(p) = parts {
        if p[0] == "Linux" {
            return format!("{} GNU/Linux", p.join(" "));
        }
    }
    std::process::Command::new("uname")
        .arg("-a")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

impl HostInfo {
    /// Reads the facts of this machine; a fact that cannot be read is left empty, never an error.
    pub fn detect() -> Self {
        let uname = uname_a();
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(0);
        let memory_bytes = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                m.lines()
                    .find(|l| l.starts_with("MemTotal:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|kb| kb.parse::<u64>().ok())
            })
            .map(|kb| kb * 1024)
            .unwrap_or(0);
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .ok()
        };
        let flag = |p: &str| read(p).and_then(|v| v.parse::<u8>().ok()).map(|v| v != 0);
        let (cpu_model, sockets) = std::fs::read_to_string("/proc/cpuinfo")
            .map(|t| parse_cpuinfo(&t))
            .unwrap_or_default();
        let nodes: Vec<u32> = std::fs::read_dir("/sys/devices/system/node")
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter_map(|e| {
                        let n = e.file_name();
                        let n = n.to_string_lossy();
                        n.strip_prefix("node")
                            .filter(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
                            .and_then(|k| k.parse().ok())
                    })
                    .collect()
            })
            .unwrap_or_default();
        let numa_nodes = nodes.len() as u32;
        let numa_memory_bytes = nodes
            .iter()
            .filter_map(|&n| {
                let t =
                    std::fs::read_to_string(format!("/sys/devices/system/node/node{n}/meminfo"));
                Some((n, meminfo_value(&t.ok()?, "MemTotal")?))
            })
            .collect();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let cpu_flags = std::fs::read_to_string("/proc/cpuinfo")
            .map(|t| parse_cpu_flags(&t))
            .unwrap_or_default();
        let cpu_boost = flag("/sys/devices/system/cpu/cpufreq/boost")
            .or_else(|| flag("/sys/devices/system/cpu/intel_pstate/no_turbo").map(|no| !no));
        HostInfo {
            uname,
            hostname,
            cpus,
            memory_bytes,
            cpu_model,
            sockets,
            numa_nodes,
            smt: flag("/sys/devices/system/cpu/smt/active"),
            cpu_governor: read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
                .unwrap_or_default(),
            cpu_boost,
            numa_memory_bytes,
            thp: read("/sys/kernel/mm/transparent_hugepage/enabled")
                .and_then(|t| sysfs_choice(&t))
                .unwrap_or_default(),
            hugepages_total: meminfo_value(&meminfo, "HugePages_Total"),
            hugepages_free: meminfo_value(&meminfo, "HugePages_Free"),
            hugepage_bytes: meminfo_value(&meminfo, "Hugepagesize"),
            cpu_flags,
            online_cpus: read("/sys/devices/system/cpu/online").and_then(|l| cpu_list_len(&l)),
            client_cpus: read("/proc/self/status")
                .and_then(|t| allowed_cpu_list(&t))
                .unwrap_or_default(),
            sched_autogroup: flag("/proc/sys/kernel/sched_autogroup_enabled"),
        }
    }

    /// The machine's CPUs: those online, else (an older run, or /sys not readable) those the
    /// process could use.
    pub fn machine_cpus(&self) -> u32 {
        self.online_cpus.unwrap_or(self.cpus)
    }

    /// Where the client ran when it was held to some of the machine's CPUs: `client on CPU 0 of
    /// 2`, `client on CPUs 0-3 of 8`; empty when it could use them all or either is unknown.
    pub fn client_placement(&self) -> String {
        let (Some(online), Some(n)) = (self.online_cpus, cpu_list_len(&self.client_cpus)) else {
            return String::new();
        };
        if n >= online {
            return String::new();
        }
        let cpus = if n == 1 { "CPU" } else { "CPUs" };
        format!("client on {cpus} {} of {online}", self.client_cpus)
    }

    /// The memory facts in a few words: `NUMA memory node0 23.5 GiB, huge pages 0 of 2 MiB
    /// (0 free), THP madvise`; what could not be read is left out.
    pub fn memory_summary(&self) -> String {
        let gib = |b: u64| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64);
        let mut parts = Vec::new();
        if !self.numa_memory_bytes.is_empty() {
            let nodes: Vec<String> = self
                .numa_memory_bytes
                .iter()
                .map(|(n, b)| format!("node{n} {}", gib(*b)))
                .collect();
            parts.push(format!("NUMA memory {}", nodes.join(" ")));
        }
        if let Some(t) = self.hugepages_total {
            let size = self
                .hugepage_bytes
                .map(|b| format!(" of {} KiB", b / 1024))
                .unwrap_or_default();
            let free = self
                .hugepages_free
                .map(|f| format!(" ({f} free)"))
                .unwrap_or_default();
            parts.push(format!("huge pages {t}{size}{free}"));
        }
        if !self.thp.is_empty() {
            parts.push(format!("THP {}", self.thp));
        }
        parts.join(", ")
    }

    /// The CPU facts in a few words: `AMD EPYC, 1 socket, 1 NUMA node, SMT off, governor
    /// performance, boost on`; what could not be read is left out.
    pub fn cpu_summary(&self) -> String {
        let mut parts = Vec::new();
        if !self.cpu_model.is_empty() {
            parts.push(self.cpu_model.clone());
        }
        let plural = |n: u32, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        if self.sockets > 0 {
            parts.push(plural(self.sockets, "socket"));
        }
        if self.numa_nodes > 0 {
            parts.push(plural(self.numa_nodes, "NUMA node"));
        }
        if let Some(smt) = self.smt {
            parts.push(format!("SMT {}", if smt { "on" } else { "off" }));
        }
        if !self.cpu_governor.is_empty() {
            parts.push(format!("governor {}", self.cpu_governor));
        }
        if let Some(b) = self.cpu_boost {
            parts.push(format!("boost {}", if b { "on" } else { "off" }));
        }
        parts.join(", ")
    }
}

/// The manifest of a run: everything needed to know what was measured, apart from the events.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Run format version, `major.minor`.
    pub format_version: String,
    /// Version of the dbscope that wrote the run.
    pub dbscope_version: String,
    /// Command line, with secrets redacted.
    pub command_line: Vec<String>,
    /// What produced the events: `workload`, `trace` or `import`.
    pub source: String,
    /// The workload and its parameters.
    pub workload: WorkloadInfo,
    /// Seed of every random choice the workload made.
    pub seed: u64,
    /// The database.
    pub target: Option<TargetInfo>,
    /// How sessions were driven.
    pub runner: Option<RunnerInfo>,
    /// The machine.
    pub host: HostInfo,
    /// Wall-clock start (UTC).
    pub started_utc: DateTime<Utc>,
    /// Wall-clock end (UTC); absent while running or when the run was killed.
    pub ended_utc: Option<DateTime<Utc>>,
    /// Unix time in ns of event offset 0; `start_ns` of an event plus this is its UTC timestamp.
    pub clock_origin_unix_ns: i64,
    /// How the run ended.
    pub outcome: Outcome,
    /// Why it ended that way, when not complete.
    pub outcome_detail: Option<String>,
    /// Event files, relative to the run directory.
    pub event_files: Vec<String>,
    /// Events written, when the run ended cleanly.
    pub events_written: Option<u64>,
    /// Where the database keeps its files and the block device of each (issue 34 item 7);
    /// absent in runs made before it was recorded and in runs without a database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<StorageInfo>,
    /// The event the source calls its headline (`commit`, `lookup`, `q1`, …): what `history`
    /// shows; absent where the source names none (then the most frequent event is shown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headline_event: Option<String>,
}

/// Where the database keeps its files: its data directory, the WAL, each tablespace the
/// workload uses, the temp tablespace, and the run directory, each with its block device.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StorageInfo {
    /// One entry per place, in the order data, WAL, tablespaces, temp, run.
    pub places: Vec<StoragePlace>,
    /// Why some devices cannot be known (a server on another machine), when so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The roles a place can have, in the order reports list them.
pub const STORAGE_ROLES: [&str; 5] = ["data", "WAL", "tablespace", "temp", "run"];

/// One place the database or the run keeps files, and its block device.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StoragePlace {
    /// `data`, `WAL`, `tablespace`, `temp` or `run` ([`STORAGE_ROLES`]).
    pub role: String,
    /// The tablespace's name (tablespace and temp places of PostgreSQL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The directory or file (a `pg_wal` symlink followed).
    pub path: String,
    /// The block device's name in `/proc/diskstats` (e.g. `vda1`, `loop0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// The whole disk when `device` is a partition (e.g. `vda`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<String>,
    /// The device's `major:minor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dev: Option<String>,
    /// Why the device cannot be known, when it cannot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
}

impl StorageInfo {
    /// The devices of the places of one role, sorted and without repeats (`?` for a place whose
    /// device is not known); empty when the run has no place of that role.
    pub fn devices(&self, role: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .places
            .iter()
            .filter(|p| p.role == role)
            .map(|p| p.device.clone().unwrap_or_else(|| "?".into()))
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

impl Manifest {
    /// A manifest for a run starting now.
    pub fn new(source: &str, workload: WorkloadInfo, seed: u64) -> Self {
        let now = Utc::now();
        Manifest {
            format_version: FORMAT_VERSION.to_string(),
            dbscope_version: env!("CARGO_PKG_VERSION").to_string(),
            command_line: Vec::new(),
            source: source.to_string(),
            workload,
            seed,
            target: None,
            runner: None,
            host: HostInfo::detect(),
            started_utc: now,
            ended_utc: None,
            clock_origin_unix_ns: now.timestamp_nanos_opt().unwrap_or(0),
            outcome: Outcome::Running,
            outcome_detail: None,
            event_files: vec![crate::files::EVENTS_FILE.to_string()],
            events_written: None,
            storage: None,
            headline_event: None,
        }
    }

    /// Reads and checks a manifest file: valid JSON of this shape, a format version this build reads.
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::Format {
            path: path.to_owned(),
            msg: format!("line {}: not valid JSON: {e}", e.line()),
        })?;
        let version = value
            .get("format_version")
            .and_then(|v| v.as_str())
            .ok_or_else(|| Error::Format {
                path: path.to_owned(),
                msg: "no format_version string; is this a dbscope manifest?".into(),
            })?;
        check_version(path, version)?;
        serde_json::from_value(value).map_err(|e| Error::Format {
            path: path.to_owned(),
            msg: format!("unexpected manifest content: {e}"),
        })
    }

    /// Writes the manifest atomically (temporary file, then rename), so a crash never leaves half a file.
    pub fn write(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(|e| Error::Format {
            path: path.to_owned(),
            msg: format!("cannot encode manifest: {e}"),
        })?;
        crate::atomic::write_atomic(path, (text + "\n").as_bytes())
    }
}

fn check_version(path: &Path, version: &str) -> Result<()> {
    let major = |v: &str| v.split('.').next().and_then(|m| m.parse::<u64>().ok());
    let supported = major(FORMAT_VERSION).expect("valid constant");
    match major(version) {
        Some(m) if m <= supported => Ok(()),
        Some(_) => Err(Error::NewerFormat {
            path: path.to_owned(),
            found: version.to_string(),
            supported: FORMAT_VERSION.to_string(),
        }),
        None => Err(Error::Format {
            path: path.to_owned(),
            msg: format!("format_version {version:?} is not of the form MAJOR.MINOR"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host line read from /proc is what `uname -a` prints on this machine.
    #[test]
    fn uname_a_from_proc_equals_the_command() {
        let Ok(o) = std::process::Command::new("uname").arg("-a").output() else {
            eprintln!("no uname command here: nothing to compare with");
            return;
        };
        assert_eq!(uname_a(), String::from_utf8_lossy(&o.stdout).trim());
    }

    #[test]
    fn issue_13_cpu_facts_from_cpuinfo() {
        let two_sockets =
            "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz\n\
                           physical id\t: 0\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) CPU \
                           E5-2680 v4 @ 2.40GHz\nphysical id\t: 1\n";
        assert_eq!(
            parse_cpuinfo(two_sockets),
            ("Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz".to_string(), 2)
        );
        assert_eq!(
            parse_cpuinfo("processor : 0\nBogoMIPS : 50\n"),
            (String::new(), 0)
        );
        let h = HostInfo {
            cpu_model: "AMD EPYC".into(),
            sockets: 1,
            numa_nodes: 2,
            smt: Some(false),
            cpu_boost: Some(true),
            ..HostInfo::default()
        };
        assert_eq!(
            h.cpu_summary(),
            "AMD EPYC, 1 socket, 2 NUMA nodes, SMT off, boost on"
        );
        // Manifests written before these fields existed still read.
        let old: HostInfo =
            serde_json::from_str(r#"{"uname":"u","hostname":"h","cpus":2,"memory_bytes":1}"#)
                .unwrap();
        assert_eq!(old.cpu_model, "");
        assert_eq!(old.smt, None);
        // And this machine's are read without failing.
        let here = HostInfo::detect();
        assert!(here.cpus > 0);
    }

    #[test]
    fn the_clients_cpus_and_the_machines() {
        assert_eq!(cpu_list_len("0-1"), Some(2));
        assert_eq!(cpu_list_len("0"), Some(1));
        assert_eq!(cpu_list_len("0-3,6,8-9\n"), Some(7));
        for bad in ["", "a", "3-1", "0-", ",", "0,,1", "-1"] {
            assert_eq!(cpu_list_len(bad), None, "{bad:?}");
        }
        let status = "Name:\tdbscope\nCpus_allowed:\t1\nCpus_allowed_list:\t0\nMems_allowed:\t1\n";
        assert_eq!(allowed_cpu_list(status).as_deref(), Some("0"));
        assert_eq!(allowed_cpu_list("Name:\tx\n"), None);
        let h = |online, client: &str| HostInfo {
            online_cpus: online,
            client_cpus: client.into(),
            ..HostInfo::default()
        };
        assert_eq!(h(Some(2), "0").client_placement(), "client on CPU 0 of 2");
        assert_eq!(
            h(Some(8), "0-3").client_placement(),
            "client on CPUs 0-3 of 8"
        );
        assert_eq!(h(Some(2), "0-1").client_placement(), "");
        assert_eq!(h(None, "0").client_placement(), "");
        assert_eq!(h(Some(2), "").client_placement(), "");
        // This process: its list is read and no longer than the machine's.
        let here = HostInfo::detect();
        let n = cpu_list_len(&here.client_cpus).expect("Cpus_allowed_list is read on Linux");
        assert!(n >= 1 && n <= here.online_cpus.unwrap(), "{here:?}");
    }

    #[test]
    fn issue_34_memory_huge_pages_thp_and_cpu_flags() {
        let cpuinfo = "processor\t: 0\nflags\t\t: fpu sse4_2 avx2 aes pclmulqdq sha_ni \
                       avx512f xsave\n\nprocessor\t: 1\nflags\t\t: fpu\n";
        assert_eq!(
            parse_cpu_flags(cpuinfo),
            ["aes", "pclmulqdq", "sha_ni", "sse4_2", "avx2", "avx512f"]
        );
        assert_eq!(
            parse_cpu_flags("Features\t: fp asimd aes pmull sha1 sha2 crc32\n"),
            ["aes", "pmull", "sha1", "sha2", "crc32", "asimd"]
        );
        assert!(parse_cpu_flags("processor : 0\n").is_empty());
        let meminfo = "MemTotal:       24683792 kB\nHugePages_Total:      16\n\
                       HugePages_Free:        4\nHugepagesize:       2048 kB\n";
        assert_eq!(meminfo_value(meminfo, "MemTotal"), Some(24683792 * 1024));
        assert_eq!(meminfo_value(meminfo, "HugePages_Total"), Some(16));
        assert_eq!(meminfo_value(meminfo, "Hugepagesize"), Some(2 << 20));
        assert_eq!(meminfo_value(meminfo, "HugePages_Rsvd"), None);
        assert_eq!(
            meminfo_value("Node 1 MemTotal:       1024 kB\n", "MemTotal"),
            Some(1 << 20)
        );
        assert_eq!(meminfo_value("MemTotal: lots kB\n", "MemTotal"), None);
        assert_eq!(
            sysfs_choice("always [madvise] never\n").as_deref(),
            Some("madvise")
        );
        assert_eq!(sysfs_choice("always madvise never"), None);
        assert_eq!(sysfs_choice("[]"), None);
        let h = HostInfo {
            numa_memory_bytes: BTreeMap::from([(0, 3 << 30), (1, 1 << 30)]),
            thp: "never".into(),
            hugepages_total: Some(16),
            hugepages_free: Some(4),
            hugepage_bytes: Some(2 << 20),
            ..HostInfo::default()
        };
        assert_eq!(
            h.memory_summary(),
            "NUMA memory node0 3.0 GiB node1 1.0 GiB, huge pages 16 of 2048 KiB (4 free), THP never"
        );
        assert_eq!(HostInfo::default().memory_summary(), "");
    }

    #[test]
    fn round_trip_and_version_checks() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("manifest.json");
        let mut m = Manifest::new("workload", WorkloadInfo::default(), 42);
        m.outcome = Outcome::Complete;
        m.write(&p).unwrap();
        assert_eq!(Manifest::read(&p).unwrap(), m);

        // A 1.0 run (written before event parameters existed) still reads.
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains(&format!("\"{FORMAT_VERSION}\"")));
        std::fs::write(&p, text.replace(FORMAT_VERSION, "1.0")).unwrap();
        assert_eq!(Manifest::read(&p).unwrap().format_version, "1.0");

        let text = text.replace(&format!("\"{FORMAT_VERSION}\""), "\"3.0\"");
        std::fs::write(&p, text).unwrap();
        let err = Manifest::read(&p).unwrap_err().to_string();
        assert!(err.contains("newer than this dbscope reads"), "{err}");

        std::fs::write(&p, "{\n  \"format_version\": 1,\n").unwrap();
        let err = Manifest::read(&p).unwrap_err().to_string();
        assert!(err.contains("not valid JSON"), "{err}");
    }

    /// Issue 27's standing property for the manifest (one record, written atomically): cut at every
    /// offset, or zeroed, it is an error naming the file — never a manifest with defaults — and
    /// a run directory holding it does not open.
    #[test]
    fn a_cut_or_zeroed_manifest_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = Manifest::new("workload", WorkloadInfo::default(), 42);
        m.outcome = Outcome::Complete;
        m.outcome_detail = Some("all done".into());
        let run = crate::RunDir::create(dir.path(), m.clone()).unwrap();
        let p = dir.path().join(crate::files::MANIFEST_FILE);
        run.save_manifest().unwrap();
        let bytes = std::fs::read(&p).unwrap();
        let zeros = vec![0u8; bytes.len()];
        let cuts = (0..bytes.len()).map(|cut| &bytes[..cut]);
        for data in cuts.chain([&zeros[..]]) {
            std::fs::write(&p, data).unwrap();
            let whole = bytes[data.len()..].iter().all(u8::is_ascii_whitespace) && data != zeros;
            match Manifest::read(&p) {
                Ok(back) => assert!(
                    whole && back == m,
                    "cut at {}: read as {back:?}",
                    data.len()
                ),
                Err(e) => {
                    let e = e.to_string();
                    assert!(!whole, "cut at {}: {e}", data.len());
                    assert!(e.contains(&p.display().to_string()), "{e}");
                    let opened = crate::RunDir::open(dir.path()).map(|_| ()).unwrap_err();
                    assert!(
                        opened.to_string().contains(&p.display().to_string()),
                        "{opened}"
                    );
                }
            }
        }
    }
}
