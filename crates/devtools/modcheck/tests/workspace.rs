//! The workspace's crates have no module cycles, apart from the known ones listed here.
//!
//! The rule is in src/lib.rs of this crate; the known cycles stay listed until their crates'
//! owners break them.

use std::path::Path;

/// Cycles that existed when the check came (issue 26), by crate root and the modules that reach
/// each other. Each is a crate root or `mod.rs` that re-exports or calls its children while they
/// use items it defines itself (`super::Dialect`, `super::format_r`, `crate::spec_body`): moving
/// those items to a leaf module breaks it. The test fails on a cycle not listed here, and on an
/// entry whose cycle is gone (delete it then).
const KNOWN: &[(&str, &[&str])] = &[
    (
        "crates/sources/capture/src/lib.rs",
        &[
            "replay",
            "replay::check",
            "replay::run",
            "replay::session",
            "replay::tally",
        ],
    ),
];

#[test]
fn no_module_of_any_crate_imports_a_module_that_imports_it_back() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../..")
        .canonicalize()
        .unwrap();
    let packages = dbscope_modcheck::packages_under(&root.join("crates"));
    // core, analysis, cli, the five sources, the cluster engine and this one, at least.
    assert!(packages.len() >= 10, "packages found: {packages:?}");
    let mut seen = vec![false; KNOWN.len()];
    let mut problems = Vec::new();
    for p in &packages {
        for (crate_root, cycle) in dbscope_modcheck::check_package(p).unwrap() {
            let crate_root = crate_root.strip_prefix(&root).unwrap_or(&crate_root);
            let known = KNOWN.iter().position(|(r, mods)| {
                Path::new(r) == crate_root && cycle.modules.iter().eq(mods.iter())
            });
            match known {
                Some(k) => seen[k] = true,
                None => problems.push(format!(
                    "{}: {}",
                    crate_root.display(),
                    cycle
                        .describe()
                        .replace(&format!("{}/", root.display()), "")
                )),
            }
        }
    }
    for (k, (r, mods)) in KNOWN.iter().enumerate() {
        if !seen[k] {
            problems.push(format!(
                "{r}: the known cycle of {} is gone: delete its entry in KNOWN",
                mods.join(", ")
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "module cycles (docs/architecture.md; the rule: crates/devtools/modcheck/src/lib.rs):\n{}",
        problems.join("\n")
    );
}
