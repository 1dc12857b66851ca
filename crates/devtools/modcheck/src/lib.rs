//! dbscope-modcheck: finds module cycles, a module importing one that imports it back.
//!
//! docs/architecture.md says that within each crate no module imports a module that imports it
//! back; `cargo test` runs this check over every crate under `crates/` (tests/workspace.rs) and
//! fails listing each cycle with the lines that make it.
//!
//! The rule, on a crate's module tree read from its files (no compiler, no dependencies):
//! - A *module* is a file module (`lib.rs`, `main.rs`, `a.rs`, `a/mod.rs`); an inline `mod x { … }`
//!   belongs to the file it is written in. Items under `#[cfg(test)]` (`mod tests`, test
//!   helpers) are left out: a test may use anything.
//! - Module A *imports* module B when a path in A (in a `use` or `pub use` item, an expression or
//!   a type) names an item of B: `crate::b::X`, `super::X`, `self::b::X`, `b::X` for a child
//!   `b`, or a name A bound with `use` to one of those.
//! - A path names the module its segments walk to: `crate::b::c::X` names `b::c` when `c` is a
//!   module, `b` when `c` is an item. A name a module only re-exports (`pub use self::c::X` in
//!   `b`, or a private `use` its children see through `super::`) is followed to the module that
//!   defines it, so a child reaching a sibling's item through its parent's façade imports the
//!   sibling, not the parent; a name from a glob import (`pub use c::*`) that the module does not
//!   define itself is followed to the glob's module.
//! - Declaring a child (`mod b;`) is not an import of it; a child's `use super::X` of an item
//!   its parent defines is an import of the parent. So a parent that calls into a child while
//!   the child uses the parent's own helpers is a cycle: put the helpers in a leaf module both
//!   import.
//! - Paths to other crates (`std::`, `dbscope_core::`, `::x`) and names nothing binds are not
//!   module imports.

mod lex;
mod scan;

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

use scan::{scan_crate, ModPath, Module};

/// One import: module `from` names module `to` at `file`:`line`, as `path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Import {
    /// The importing module (`crate` for the root, else `a::b`).
    pub from: String,
    /// The imported module.
    pub to: String,
    /// The file of the line that names it.
    pub file: PathBuf,
    /// The line.
    pub line: u32,
    /// The path as written (`crate::report::EventReport`).
    pub path: String,
}

fn name(p: &ModPath) -> String {
    if p.is_empty() {
        "crate".into()
    } else {
        p.join("::")
    }
}

/// A path as written in module `at`, from the crate root; `None` when it leaves the crate.
fn anchor(
    modules: &BTreeMap<ModPath, Module>,
    at: &ModPath,
    segs: &[String],
) -> Option<Vec<String>> {
    anchor_at(modules, at, segs, 0)
}

fn anchor_at(
    modules: &BTreeMap<ModPath, Module>,
    at: &ModPath,
    segs: &[String],
    depth: u32,
) -> Option<Vec<String>> {
    let first = segs.first()?;
    let mut base = at.clone();
    let rest = match first.as_str() {
        "crate" => {
            base.clear();
            &segs[1..]
        }
        "self" => &segs[1..],
        "super" => {
            let mut k = 0;
            while segs.get(k).map(String::as_str) == Some("super") {
                base.pop()?;
                k += 1;
            }
            &segs[k..]
        }
        _ => {
            let m = modules.get(at)?;
            if m.children.contains(first) {
                segs
            } else if let Some(bound) = m.bindings.get(first) {
                // A name bound by `use` (a module alias or an item): follow it, unless it
                // names itself (`use foo;`, `use foo::foo;` of an external crate).
                if depth > 16 || bound.first() == Some(first) {
                    return None;
                }
                let mut abs = anchor_at(modules, at, bound, depth + 1)?;
                abs.extend_from_slice(&segs[1..]);
                return Some(abs);
            } else {
                return None;
            }
        }
    };
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The module a path from the crate root names (following re-exports), `None` outside the
/// crate.
fn target(modules: &BTreeMap<ModPath, Module>, abs: &[String], depth: u32) -> Option<ModPath> {
    let mut cur: ModPath = Vec::new();
    for (i, seg) in abs.iter().enumerate() {
        let m = modules.get(&cur)?;
        if m.children.contains(seg) {
            cur.push(seg.clone());
            continue;
        }
        if depth > 16 || m.defines.contains(seg) {
            return Some(cur);
        }
        // A name the module imports: where it really is.
        if let Some(bound) = m.bindings.get(seg) {
            let mut next = anchor(modules, &cur, bound)?;
            next.extend_from_slice(&abs[i + 1..]);
            return target(modules, &next, depth + 1);
        }
        for g in &m.globs {
            if let Some(mut next) = anchor(modules, &cur, g) {
                next.extend_from_slice(&abs[i..]);
                if let Some(t) = target(modules, &next, depth + 1) {
                    return Some(t);
                }
            }
        }
        return Some(cur);
    }
    Some(cur)
}

/// Every import between two different modules of the crate whose root file is `root`.
pub fn imports(root: &Path) -> io::Result<Vec<Import>> {
    let modules = scan_crate(root)?;
    let mut out = Vec::new();
    for (path, m) in &modules {
        for w in &m.written {
            let Some(abs) = anchor(&modules, path, &w.segments) else {
                continue;
            };
            let Some(to) = target(&modules, &abs, 0) else {
                continue;
            };
            let to_file = modules
                .get(&to)
                .map_or(to.clone(), |t| t.file_module.clone());
            if to_file == m.file_module {
                continue;
            }
            out.push(Import {
                from: name(&m.file_module),
                to: name(&to_file),
                file: m.file.clone(),
                line: w.line,
                path: w.segments.join("::"),
            });
        }
    }
    Ok(out)
}

/// A group of modules that reach each other through imports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cycle {
    /// The modules of the group, sorted.
    pub modules: Vec<String>,
    /// The imports of one shortest cycle through the group's first module.
    pub imports: Vec<Import>,
}

impl Cycle {
    /// `module cycle a -> b -> a`, then one line per import: where it is and what it names.
    pub fn describe(&self) -> String {
        let mods: Vec<&str> = self
            .imports
            .iter()
            .map(|i| i.from.as_str())
            .chain(self.imports.first().map(|i| i.from.as_str()))
            .collect();
        let mut msg = format!("module cycle {}", mods.join(" -> "));
        if self.modules.len() > self.imports.len() {
            msg.push_str(&format!(
                " (all of {} reach each other)",
                self.modules.join(", ")
            ));
        }
        for i in &self.imports {
            msg.push_str(&format!(
                "\n    {} -> {}: {}:{} `{}`",
                i.from,
                i.to,
                i.file.display(),
                i.line,
                i.path
            ));
        }
        msg
    }
}

/// The cycles among `imports`: one per group of modules that reach each other.
pub fn cycles(imports: &[Import]) -> Vec<Cycle> {
    let mut graph: BTreeMap<&str, BTreeMap<&str, &Import>> = BTreeMap::new();
    for i in imports {
        graph
            .entry(i.from.as_str())
            .or_default()
            .entry(i.to.as_str())
            .or_insert(i);
    }
    let reach = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(n) = todo.pop() {
            for &next in graph
                .get(n.as_str())
                .map(|e| e.keys())
                .into_iter()
                .flatten()
            {
                if seen.insert(next.to_string()) {
                    todo.push(next.to_string());
                }
            }
        }
        seen
    };
    let mut done: BTreeSet<String> = BTreeSet::new();
    let mut out = Vec::new();
    for &start in graph.keys() {
        if done.contains(start) || !reach(start).contains(start) {
            continue;
        }
        // The group: every module that `start` reaches and that reaches `start`.
        let group: BTreeSet<String> = reach(start)
            .into_iter()
            .filter(|n| reach(n).contains(start))
            .collect();
        done.extend(group.iter().cloned());
        // A shortest way back to `start` (breadth first).
        let mut prev: BTreeMap<&str, &Import> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        'search: while let Some(n) = queue.pop_front() {
            for (&next, &imp) in graph.get(n).into_iter().flatten() {
                if !group.contains(next) || prev.contains_key(next) {
                    continue;
                }
                prev.insert(next, imp);
                if next == start {
                    break 'search;
                }
                queue.push_back(next);
            }
        }
        let mut cycle = Vec::new();
        let mut at = start;
        while let Some(imp) = prev.get(at) {
            cycle.push((*imp).clone());
            at = imp.from.as_str();
            if at == start {
                break;
            }
        }
        cycle.reverse();
        out.push(Cycle {
            modules: group.into_iter().collect(),
            imports: cycle,
        });
    }
    out
}

/// The crate roots of the package in `dir` at Cargo's default places: `src/lib.rs`,
/// `src/main.rs`, `src/bin/*`, `tests/*`, `examples/*`, `benches/*`.
pub fn crate_roots(dir: &Path) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = ["src/lib.rs", "src/main.rs"]
        .iter()
        .map(|r| dir.join(r))
        .filter(|p| p.is_file())
        .collect();
    for sub in ["src/bin", "tests", "examples", "benches"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        let mut found: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter_map(|p| {
                if p.extension().is_some_and(|e| e == "rs") && p.is_file() {
                    Some(p)
                } else {
                    Some(p.join("main.rs")).filter(|m| m.is_file())
                }
            })
            .collect();
        found.sort();
        roots.extend(found);
    }
    roots
}

/// The packages (directories with a `Cargo.toml` and a `src`) under `dir`, `target` directories
/// left out.
pub fn packages_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut subs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    subs.sort();
    if dir.join("Cargo.toml").is_file() && dir.join("src").is_dir() {
        out.push(dir.to_path_buf());
    }
    for sub in subs {
        let skip = sub
            .file_name()
            .is_some_and(|n| n == "target" || n.to_string_lossy().starts_with('.'));
        if sub.is_dir() && !skip {
            out.extend(packages_under(&sub));
        }
    }
    out
}

/// The cycles of every crate of the package in `dir`, with the root file of the crate of each.
pub fn check_package(dir: &Path) -> io::Result<Vec<(PathBuf, Cycle)>> {
    let mut out = Vec::new();
    for root in crate_roots(dir) {
        for cycle in cycles(&imports(&root)?) {
            out.push((root.clone(), cycle));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
