//! `run scan --matrix`: seed 000's table in one command. Clear text and encrypted × AES-NI on and
//! off × the three cache states, each cell a run of its own (`compare` takes any two), then the
//! table: the median scan time of each, and encrypted's ratio to clear text.
//!
//! Each cell runs this program again as a child (`run scan … --aes-ni on|off --cache …`), so a
//! cell is exactly the command a user would type, and `--aes-ni off` masks OpenSSL in its own
//! child as it always does.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, Context};

use crate::exit::{Exit, EXIT_FAILED, EXIT_INTERRUPTED};

/// The cells' order: cache states as rows; clear/encrypted × AES-NI on/off as columns.
const CACHES: [&str; 3] = ["cold", "os", "engine"];
const AES: [&str; 2] = ["on", "off"];

/// What the matrix needs from `run`'s arguments.
pub struct MatrixArgs {
    /// The encrypted target, `sqlcipher:PATH`.
    pub target: String,
    /// `--key-file`, passed on.
    pub key_file: Option<PathBuf>,
    /// `--rows`, `--row-bytes`, `--ops`, `--table`, `--seed`: passed on as given.
    pub pass_on: Vec<String>,
    /// Where the cells' runs go: `DIR/<clear|encrypted>-aesni-<on|off>-<cache>`.
    pub out: PathBuf,
}

/// The clear twin of `sqlcipher:DIR/NAME.EXT`: `sqlite:DIR/NAME-clear.EXT`.
fn clear_twin(target: &str) -> Result<String, Exit> {
    let path = target
        .strip_prefix("sqlcipher:")
        .ok_or_else(|| anyhow!("--matrix needs an encrypted target: --target sqlcipher:PATH"))?;
    let p = Path::new(path);
    let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("scan");
    let name = match p.extension().and_then(|s| s.to_str()) {
        Some(ext) => format!("{stem}-clear.{ext}"),
        None => format!("{stem}-clear"),
    };
    Ok(format!("sqlite:{}", p.with_file_name(name).display()))
}

/// Runs the twelve cells and prints the table; the exit code is the worst cell's.
pub fn run_matrix(m: &MatrixArgs) -> Result<u8, Exit> {
    let clear = clear_twin(&m.target)?;
    let exe = std::env::current_exe().context("--matrix: cannot find this program")?;
    std::fs::create_dir_all(&m.out)
        .with_context(|| format!("cannot create {}", m.out.display()))?;
    let mut worst = 0u8;
    let mut cells = Vec::new();
    // Ctrl-C is the running cell's to handle (it keeps what it recorded); the matrix then stops.
    let _ = ctrlc::set_handler(|| {});
    'cells: for cache in CACHES {
        for aes in AES {
            for (kind, target) in [("clear", &clear), ("encrypted", &m.target)] {
                let name = format!("{kind}-aesni-{aes}-{cache}");
                let dir = m.out.join(&name);
                let mut c = Command::new(&exe);
                c.args([
                    "run", "scan", "--target", target, "--cache", cache, "--aes-ni", aes,
                ])
                .args(&m.pass_on)
                .arg("--out")
                .arg(&dir)
                .arg("-q");
                if let (Some(k), "encrypted") = (&m.key_file, kind) {
                    c.arg("--key-file").arg(k);
                }
                eprintln!("dbscope: matrix: {name}");
                let status = c
                    .stdout(std::process::Stdio::null())
                    .status()
                    .with_context(|| format!("--matrix: cannot run cell {name}"))?;
                let code = status.code().map_or(EXIT_FAILED, |c| c.clamp(0, 255) as u8);
                worst = worst.max(code);
                cells.push((cache, aes, kind, dir, code));
                if code == EXIT_INTERRUPTED {
                    eprintln!("dbscope: matrix: interrupted; the cells not run are left out (-)");
                    break 'cells;
                }
            }
        }
    }
    let median_ms = |dir: &Path| -> Option<f64> {
        let out = Command::new(&exe)
            .arg("report")
            .arg(dir)
            .arg("--json")
            .output()
            .ok()?;
        let r: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        r["events"]
            .as_array()?
            .iter()
            .find(|e| e["name"] == "scan")?["summary_us"]["median"]
            .as_f64()
            .map(|us| us / 1e3)
    };
    let get = |cache: &str, aes: &str, kind: &str| {
        cells
            .iter()
            .find(|c| c.0 == cache && c.1 == aes && c.2 == kind)
            .and_then(|c| if c.4 == 0 { median_ms(&c.3) } else { None })
    };
    println!("{}", table(&get));
    println!(
        "runs in {} (each one `compare`s with any other)",
        m.out.display()
    );
    if worst != 0 {
        eprintln!("dbscope: matrix: a cell failed (exit {worst}): its figures are left out (-)");
    }
    Ok(worst)
}

/// The seed's table from a cell's median scan time (ms; `None`: failed).
fn table(get: &dyn Fn(&str, &str, &str) -> Option<f64>) -> String {
    let f = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
    let ratio = |e: Option<f64>, c: Option<f64>| match (e, c) {
        (Some(e), Some(c)) if c > 0.0 => format!("{:.2}x", e / c),
        _ => "-".into(),
    };
    let mut s = String::from(
        "median scan time (ms) per cache state; ratio = encrypted / clear text\n\
         cache    clear  encrypted  ratio   | AES-NI off: clear  encrypted  ratio\n",
    );
    for cache in CACHES {
        let (c_on, e_on) = (get(cache, "on", "clear"), get(cache, "on", "encrypted"));
        let (c_off, e_off) = (get(cache, "off", "clear"), get(cache, "off", "encrypted"));
        s.push_str(&format!(
            "{cache:<7} {:>7} {:>10} {:>6}   | {:>17} {:>10} {:>6}\n",
            f(c_on),
            f(e_on),
            ratio(e_on, c_on),
            f(c_off),
            f(e_off),
            ratio(e_off, c_off)
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clear_twin_sits_beside_the_encrypted_file() {
        assert_eq!(
            clear_twin("sqlcipher:/d/enc.db").unwrap(),
            "sqlite:/d/enc-clear.db"
        );
        assert_eq!(clear_twin("sqlcipher:x").unwrap(), "sqlite:x-clear");
        assert!(clear_twin("sqlite:x.db").is_err());
    }

    #[test]
    fn the_table_has_a_ratio_per_cell_and_dashes_for_failures() {
        let t = table(&|cache, aes, kind| match (cache, aes, kind) {
            ("os", "on", "clear") => Some(10.0),
            ("os", "on", "encrypted") => Some(25.0),
            (_, "off", _) => None,
            _ => Some(1.0),
        });
        let os = t.lines().find(|l| l.starts_with("os ")).unwrap();
        assert!(
            os.contains("10.00") && os.contains("25.00") && os.contains("2.50x"),
            "{os}"
        );
        let tail: Vec<&str> = os.split_whitespace().rev().take(3).collect();
        assert_eq!(tail, ["-", "-", "-"], "{os}");
    }
}
