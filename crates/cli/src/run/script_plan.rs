//! `dbscope run script`'s options → the script workload's [`ScriptConfig`]: the scripts read and
//! parsed (a bad script is bad input, exit 3, said with file, line and column), the rest checked.

use std::time::Duration;

use anyhow::anyhow;
use dbscope_lab::workload::script::{ScriptConfig, ScriptSource};

use crate::exit::Exit;
use crate::run::flags::lab_error;

/// The `script` workload's options: the scripts read and parsed (a bad script is bad input,
/// said with file, line and column), the rest checked.
pub fn script(a: &crate::run::script_args::ScriptArgs) -> Result<ScriptConfig, Exit> {
    use dbscope_pgscript::parse::split_weight;
    use dbscope_pgscript::{builtin, Script};
    let usage = |m: String| Exit(crate::exit::EXIT_USAGE, anyhow!(m));
    let input = |m: String| Exit(crate::exit::EXIT_INPUT, anyhow!(m));
    let mut scripts = Vec::new();
    let mut sources = Vec::new();
    for b in &a.builtins {
        let (name, weight) = split_weight(b).map_err(|m| usage(format!("-b {b}: {m}")))?;
        let (full, text) = builtin::find(name).map_err(|m| usage(format!("-b {b}: {m}")))?;
        let s = Script::parse(&format!("builtin:{full}"), full, text, weight)
            .map_err(|e| input(e.to_string()))?;
        scripts.push(s);
        sources.push(ScriptSource {
            origin: "builtin".into(),
            text: text.to_string(),
        });
    }
    for f in &a.files {
        let (path, weight) = split_weight(f).map_err(|m| usage(format!("-f {f}: {m}")))?;
        let text = std::fs::read_to_string(path)
            .map_err(|e| input(format!("-f {path}: cannot read the script: {e}")))?;
        let s = Script::parse(path, path, &text, weight).map_err(|e| input(e.to_string()))?;
        scripts.push(s);
        sources.push(ScriptSource {
            origin: path.to_string(),
            text,
        });
    }
    if scripts.is_empty() {
        return Err(usage(
            "the script workload needs a script: -f FILE[@WEIGHT] (pgbench's script language) or \
             -b tpcb-like|simple-update|select-only"
                .into(),
        ));
    }
    // Two scripts of one name would share their events: keep each name once.
    let mut seen = std::collections::BTreeMap::<String, u32>::new();
    for s in &mut scripts {
        let n = seen.entry(s.name.clone()).or_insert(0);
        *n += 1;
        if *n > 1 {
            s.name = format!("{}#{}", s.name, n);
        }
    }
    let defines = a
        .defines
        .iter()
        .map(|d| match d.split_once('=') {
            Some((n, v)) if !n.is_empty() => Ok((n.to_string(), v.to_string())),
            _ => Err(usage(format!("-D {d:?}: expected NAME=VALUE"))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let latency_limit = match &a.latency_limit {
        None => None,
        Some(l) => Some(match l.parse::<f64>() {
            Ok(ms) if ms > 0.0 && ms.is_finite() => Duration::from_secs_f64(ms / 1e3),
            Ok(_) => return Err(usage(format!("--latency-limit {l}: must be more than 0"))),
            Err(_) => crate::parse::parse_duration(l).map_err(|e| {
                usage(format!(
                    "--latency-limit {l}: milliseconds or a duration (50ms): {e}"
                ))
            })?,
        }),
    };
    let init_scale = match a.init.as_deref() {
        None => None,
        Some("tpcb") | Some("tpcb-like") => Some(a.scale.unwrap_or(1)),
        Some(other) => {
            return Err(usage(format!(
                "--init {other}: the one initialisation is `tpcb` (pgbench's four tables)"
            )))
        }
    };
    if a.scale == Some(0) {
        return Err(usage("--scale must be at least 1".into()));
    }
    Ok(ScriptConfig {
        scripts,
        sources,
        mode: dbscope_lab::workload::script::parse_mode(a.protocol.as_deref().unwrap_or("simple"))
            .map_err(lab_error)?,
        defines,
        scale: a.scale.map(i64::from),
        max_tries: a.max_tries.unwrap_or(1),
        latency_limit,
        on_error: a
            .on_error
            .as_deref()
            .unwrap_or("continue")
            .parse()
            .map_err(lab_error)?,
        init_scale,
        seed: 0,
    })
}
