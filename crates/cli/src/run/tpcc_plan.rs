//! `dbscope run tpcc`'s options → the tpcc workload's [`TpccConfig`], checked before anything
//! connects: `--warehouses` at least 1, `--mix` five percentages adding up to 100.

use anyhow::anyhow;
use dbscope_lab::workload::tpcc::TpccConfig;

use crate::exit::Exit;
use crate::run::args::RunArgs;

/// The tpcc workload's options.
pub fn tpcc(a: &RunArgs) -> Result<TpccConfig, Exit> {
    let t = &a.tpcc;
    let warehouses = dbscope_tpcc::warehouses(t.warehouses.unwrap_or(1)).map_err(|e| anyhow!(e))?;
    let mix = match &t.mix {
        Some(m) => m.parse().map_err(|e: dbscope_tpcc::Error| anyhow!(e))?,
        None => dbscope_tpcc::Mix::default(),
    };
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let build_sessions = match t.build_sessions {
        Some(0) => return Err(anyhow!("--build-sessions must be at least 1").into()),
        Some(n) => n,
        None => cpus,
    };
    if t.server_side && t.per_statement {
        return Err(anyhow!(
            "--per-statement times each client-side statement; with --server-side a transaction \
             is one call (drop one of them)"
        )
        .into());
    }
    let max_tries = a.script.max_tries.unwrap_or(1);
    if max_tries == 0 {
        return Err(anyhow!("--max-tries must be at least 1").into());
    }
    Ok(TpccConfig {
        warehouses,
        build_sessions,
        mix,
        max_tries,
        fresh: a.fresh,
        seed: a.seed,
        build_run: None,
        check: !t.no_check,
        all_warehouses: t.all_warehouses,
        server_side: t.server_side,
        per_statement: t.per_statement,
        keying_thinking: t.keying_thinking,
        // As the runner reads it: 10 s when neither --ops nor --duration is given.
        duration: match (a.ops, a.duration) {
            (None, None) => Some(std::time::Duration::from_secs(10)),
            (_, d) => d,
        },
    })
}
