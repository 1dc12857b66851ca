//! A plan's fields said as `dbscope run`'s flags: [`flag`] (`ops_per_session` → `--ops`) and
//! [`lab_error`]. A leaf of `run`: the plan builders use it, `plan` re-exports it.

/// The flag that sets a plan's field (`ops_per_session` → `--ops`).
pub fn flag(field: &'static str) -> String {
    match field {
        "ops_per_session" => "--ops".into(),
        "place" => "--tablespace-dir".into(),
        "settings" => "--set".into(),
        "mode" => "-M/--protocol".into(),
        "scripts" => "-f/-b".into(),
        f => format!("--{}", f.replace('_', "-")),
    }
}

/// `e` for the command line: a bad field said as its flag; other errors as they are.
pub fn lab_error(e: dbscope_lab::Error) -> anyhow::Error {
    match e {
        dbscope_lab::Error::Invalid { .. } | dbscope_lab::Error::Uneven { .. } => {
            anyhow::Error::msg(e.render(flag))
        }
        e => e.into(),
    }
}
