//! pgbench's built-in scripts (`-b tpcb-like|simple-update|select-only`), their text exactly as
//! pgbench 15–17 has it.

/// The built-in scripts' names.
pub const NAMES: [&str; 3] = ["tpcb-like", "simple-update", "select-only"];

/// pgbench's description of each built-in (`builtin_script[].desc`), in the order of [`NAMES`].
pub const DESCRIPTIONS: [&str; 3] = [
    "<builtin: TPC-B (sort of)>",
    "<builtin: simple update>",
    "<builtin: select only>",
];

// pgbench.c `builtin_script[]`, with CppAsString2(naccounts/nbranches/ntellers) expanded to
// 100000, 1 and 10 as the preprocessor does (checked against `pgbench --show-script`, see
// tests/data/builtin/).
const TEXTS: [&str; 3] = [
    "\\set aid random(1, 100000 * :scale)\n\
     \\set bid random(1, 1 * :scale)\n\
     \\set tid random(1, 10 * :scale)\n\
     \\set delta random(-5000, 5000)\n\
     BEGIN;\n\
     UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n\
     SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n\
     UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;\n\
     UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;\n\
     INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);\n\
     END;\n",
    "\\set aid random(1, 100000 * :scale)\n\
     \\set bid random(1, 1 * :scale)\n\
     \\set tid random(1, 10 * :scale)\n\
     \\set delta random(-5000, 5000)\n\
     BEGIN;\n\
     UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n\
     SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n\
     INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);\n\
     END;\n",
    "\\set aid random(1, 100000 * :scale)\n\
     SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n",
];

/// The text of built-in `name`; a unique prefix is accepted as pgbench accepts it (`-b tpcb`).
/// Returns the full name and the text, or a message listing the names.
pub fn find(name: &str) -> Result<(&'static str, &'static str), String> {
    // pgbench's findBuiltin: every built-in whose name starts with `name` matches.
    let matches: Vec<usize> = (0..NAMES.len())
        .filter(|&i| NAMES[i].starts_with(name))
        .collect();
    match matches.as_slice() {
        [i] => Ok((NAMES[*i], TEXTS[*i])),
        [] => Err(format!(
            "no builtin script found for name \"{name}\"\n{}",
            listing()
        )),
        many => Err(format!(
            "ambiguous builtin name: {} builtin scripts found for prefix \"{name}\"\n{}",
            many.len(),
            listing()
        )),
    }
}

/// pgbench's `-b list` output (`listAvailableScripts`): a heading and one line per built-in.
pub fn listing() -> String {
    let mut out = String::from("Available builtin scripts:\n");
    for (name, desc) in NAMES.iter().zip(DESCRIPTIONS) {
        out.push_str(&format!("  {name:>13}: {desc}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pgbench --show-script=NAME` of pgbench 15, saved by tests/data/builtin/make.sh: its
    /// first line is `-- NAME: DESC`, then the script, then an empty line.
    fn reference(name: &str) -> Option<String> {
        let path = format!(
            "{}/tests/data/builtin/{name}.txt",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(path).ok()
    }

    #[test]
    fn texts_are_pgbench_15s() {
        for (i, name) in NAMES.iter().enumerate() {
            let Some(reference) = reference(name) else {
                panic!("tests/data/builtin/{name}.txt is missing: run its make.sh");
            };
            let expected = format!("-- {name}: {}\n{}\n", DESCRIPTIONS[i], TEXTS[i]);
            assert_eq!(reference, expected, "{name}");
        }
    }

    #[test]
    fn prefixes_match_as_pgbench() {
        assert_eq!(find("tpcb").unwrap().0, "tpcb-like");
        assert_eq!(find("si").unwrap().0, "simple-update");
        assert_eq!(find("select-only").unwrap().0, "select-only");
        let err = find("s").unwrap_err();
        assert!(
            err.starts_with("ambiguous builtin name: 2 builtin scripts found for prefix \"s\""),
            "{err}"
        );
        assert!(
            err.contains("      tpcb-like: <builtin: TPC-B (sort of)>"),
            "{err}"
        );
        let err = find("nope").unwrap_err();
        assert!(
            err.starts_with("no builtin script found for name \"nope\""),
            "{err}"
        );
        assert!(find("").unwrap_err().contains("3 builtin scripts"));
    }
}
