//! The workspace's crates have no module cycles: the test fails listing every cycle it finds.
//!
//! The rule is in src/lib.rs of this crate. There is no list of allowed cycles: the ones present
//! when the check came (issue 26) are broken, and a new one is broken where it appears, by moving
//! what both sides use into a leaf module that both import.

use std::path::Path;

#[test]
fn no_module_of_any_crate_imports_a_module_that_imports_it_back() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../..")
        .canonicalize()
        .unwrap();
    let packages = dbscope_modcheck::packages_under(&root.join("crates"));
    // core, analysis, cli, the five sources, the cluster engine and this one, at least.
    assert!(packages.len() >= 10, "packages found: {packages:?}");
    let mut problems = Vec::new();
    for p in &packages {
        for (crate_root, cycle) in dbscope_modcheck::check_package(p).unwrap() {
            let crate_root = crate_root.strip_prefix(&root).unwrap_or(&crate_root);
            problems.push(format!(
                "{}: {}",
                crate_root.display(),
                cycle
                    .describe()
                    .replace(&format!("{}/", root.display()), "")
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "module cycles (docs/architecture.md; the rule: crates/devtools/modcheck/src/lib.rs):\n{}",
        problems.join("\n")
    );
}
