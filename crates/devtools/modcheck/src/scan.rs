//! One crate's module tree, read from its files.
//!
//! Per module: its child modules, the names its `use` items bind, its glob imports, the items it
//! defines, and every path it names; test-only items (`#[cfg(test)]`) are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

use crate::lex::{lex, Tok, Token};

/// A module path from the crate root (`[]` is the root, `["html", "svg"]` is `html::svg`).
pub type ModPath = Vec<String>;

/// A path as written, and where.
#[derive(Clone, Debug)]
pub struct Written {
    /// Its segments (`crate`, `super`, `self` included).
    pub segments: Vec<String>,
    /// The line it starts on.
    pub line: u32,
}

/// What one module holds.
#[derive(Debug, Default)]
pub struct Module {
    /// The file its items are in (an inline module's is its parent's).
    pub file: PathBuf,
    /// The file module it belongs to: itself, or for an inline `mod x { … }` the module of the
    /// file it is written in. Imports are edges between file modules.
    pub file_module: ModPath,
    /// Child modules, declared with `mod x;` or `mod x { … }`.
    pub children: BTreeSet<String>,
    /// Names bound by `use` items (`use a::b::{c, d as e}` binds `c` and `e`), as written.
    pub bindings: BTreeMap<String, Vec<String>>,
    /// Paths of glob imports (`use a::b::*`), as written.
    pub globs: Vec<Vec<String>>,
    /// Names of the items it defines (functions, types, traits, constants, statics, macros).
    pub defines: BTreeSet<String>,
    /// Every path it names: in `use` items, expressions and types.
    pub written: Vec<Written>,
}

/// Reads the module tree of the crate whose root file is `root`.
pub fn scan_crate(root: &Path) -> io::Result<BTreeMap<ModPath, Module>> {
    let mut modules = BTreeMap::new();
    let dir = root.parent().unwrap_or(Path::new(".")).to_path_buf();
    scan_file(root, &dir, Vec::new(), &mut modules)?;
    Ok(modules)
}

/// Scans the file of module `path`; `dir` is where its children's files are.
fn scan_file(
    file: &Path,
    dir: &Path,
    path: ModPath,
    modules: &mut BTreeMap<ModPath, Module>,
) -> io::Result<()> {
    let src = std::fs::read_to_string(file)?;
    let tokens = lex(&src);
    let mut files = Vec::new();
    let mut s = Scanner {
        t: &tokens,
        i: 0,
        file,
        file_module: &path,
        modules,
        files: &mut files,
    };
    s.module(path.clone(), tokens.len());
    for (child, inline_parent) in files {
        // `mod x;` in a.rs (or in a's inline `mod b { mod x; }`) is a/x.rs or a/x/mod.rs; in
        // lib.rs, main.rs and mod.rs the directory is the file's own.
        let mut d = dir.to_path_buf();
        for seg in &inline_parent {
            d.push(seg);
        }
        let name = child.last().cloned().unwrap_or_default();
        let candidates = [d.join(format!("{name}.rs")), d.join(&name).join("mod.rs")];
        let Some(found) = candidates.iter().find(|p| p.is_file()) else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "{}: `mod {name};`: neither {} nor {} exists",
                    file.display(),
                    candidates[0].display(),
                    candidates[1].display()
                ),
            ));
        };
        let child_dir = if found.ends_with("mod.rs") {
            found.parent().unwrap_or(&d).to_path_buf()
        } else {
            d.join(&name)
        };
        scan_file(found, &child_dir, child, modules)?;
    }
    Ok(())
}

struct Scanner<'a> {
    t: &'a [Token],
    i: usize,
    file: &'a Path,
    file_module: &'a ModPath,
    modules: &'a mut BTreeMap<ModPath, Module>,
    /// Out-of-line child modules found: (their path, the inline modules between the file's
    /// module and them).
    files: &'a mut Vec<(ModPath, Vec<String>)>,
}

impl Scanner<'_> {
    fn ident(&self, k: usize) -> Option<&str> {
        match self.t.get(k).map(|t| &t.tok) {
            Some(Tok::Ident(s)) => Some(s),
            _ => None,
        }
    }

    fn punct(&self, k: usize, c: char) -> bool {
        matches!(self.t.get(k).map(|t| &t.tok), Some(Tok::Punct(p)) if *p == c)
    }

    fn sep(&self, k: usize) -> bool {
        matches!(self.t.get(k).map(|t| &t.tok), Some(Tok::PathSep))
    }

    fn line(&self, k: usize) -> u32 {
        self.t.get(k).or(self.t.last()).map_or(0, |t| t.line)
    }

    /// The index just past the group opened at `k` (`(`, `[` or `{`).
    fn close(&self, k: usize) -> usize {
        let mut depth = 0i32;
        let mut j = k;
        while j < self.t.len() {
            match &self.t[j].tok {
                Tok::Punct('(' | '[' | '{') => depth += 1,
                Tok::Punct(')' | ']' | '}') => {
                    depth -= 1;
                    if depth == 0 {
                        return j + 1;
                    }
                }
                _ => {}
            }
            j += 1;
        }
        self.t.len()
    }

    /// The index just past the item starting at `k`: its `;` or its first `{ … }` group, at the
    /// item's own nesting level.
    fn item_end(&self, k: usize) -> usize {
        let mut j = k;
        while j < self.t.len() {
            match &self.t[j].tok {
                Tok::Punct(';') => return j + 1,
                Tok::Punct('{') => return self.close(j),
                Tok::Punct('(' | '[') => j = self.close(j),
                Tok::Punct(')' | ']' | '}') => return j, // the enclosing group ends: no item
                _ => j += 1,
            }
        }
        j
    }

    /// Scans module `path`'s tokens from `self.i` up to `end`.
    fn module(&mut self, path: ModPath, end: usize) {
        let m = self.modules.entry(path.clone()).or_default();
        m.file = self.file.to_path_buf();
        m.file_module = self.file_module.clone();
        while self.i < end {
            let k = self.i;
            // Attributes: `#[…]` and `#![…]`; an item under `#[cfg(test)]` is left out.
            if self.punct(k, '#') {
                let open = if self.punct(k + 1, '!') { k + 2 } else { k + 1 };
                if self.punct(open, '[') {
                    let after = self.close(open);
                    let test_only = self.ident(open + 1) == Some("cfg")
                        && (open..after).any(|j| self.ident(j) == Some("test"))
                        && !(open..after).any(|j| self.ident(j) == Some("not"));
                    self.i = after;
                    if test_only && open == k + 1 {
                        // Further attributes of the same item, then the item itself.
                        while self.punct(self.i, '#') && self.punct(self.i + 1, '[') {
                            self.i = self.close(self.i + 1);
                        }
                        self.i = self.item_end(self.i);
                    }
                    continue;
                }
            }
            match self.ident(k) {
                Some("mod") if self.ident(k + 1).is_some() => {
                    let name = self.ident(k + 1).unwrap_or_default().to_string();
                    let mut child = path.clone();
                    child.push(name.clone());
                    self.modules
                        .entry(path.clone())
                        .or_default()
                        .children
                        .insert(name);
                    if self.punct(k + 2, '{') {
                        let close = self.close(k + 2);
                        self.i = k + 3;
                        self.module(child, close - 1);
                        self.i = close;
                    } else {
                        let inline = path[self.file_module.len()..].to_vec();
                        self.files.push((child, inline));
                        self.i = k + 2;
                    }
                    continue;
                }
                Some("use") => {
                    self.use_item(&path, k + 1);
                    continue;
                }
                Some(
                    "fn" | "struct" | "enum" | "union" | "trait" | "type" | "static" | "const",
                ) => {
                    if let Some(name) = self.ident(k + 1) {
                        if !matches!(name, "fn" | "mut" | "_") {
                            let name = name.to_string();
                            self.modules
                                .entry(path.clone())
                                .or_default()
                                .defines
                                .insert(name);
                        }
                    }
                }
                Some("macro_rules") if self.punct(k + 1, '!') => {
                    if let Some(name) = self.ident(k + 2) {
                        let name = name.to_string();
                        self.modules
                            .entry(path.clone())
                            .or_default()
                            .defines
                            .insert(name);
                    }
                }
                Some(first) if self.sep(k + 1) && (k == 0 || !self.sep(k - 1)) => {
                    // A path: `a::b::c` (the segments up to a group, a glob or generics).
                    let mut segments = vec![first.to_string()];
                    let mut j = k + 1;
                    while self.sep(j) {
                        match self.ident(j + 1) {
                            Some(s) => segments.push(s.to_string()),
                            None => break,
                        }
                        j += 2;
                    }
                    let line = self.line(k);
                    self.modules
                        .entry(path.clone())
                        .or_default()
                        .written
                        .push(Written { segments, line });
                    self.i = j;
                    continue;
                }
                _ => {}
            }
            self.i += 1;
        }
        self.i = end;
    }

    /// A `use` tree from `k` up to its `;`.
    fn use_item(&mut self, path: &ModPath, k: usize) {
        let line = self.line(k);
        let mut j = k;
        let mut uses = Vec::new();
        self.use_tree(&mut j, Vec::new(), &mut uses);
        // Up to the `;` (a tree we could not read is skipped to it).
        while j < self.t.len() && !self.punct(j, ';') {
            j += 1;
        }
        self.i = j + 1;
        let m = self.modules.entry(path.clone()).or_default();
        for u in uses {
            match u {
                Use::Name(name, segments) => {
                    if name != "_" {
                        m.bindings.insert(name, segments.clone());
                    }
                    m.written.push(Written { segments, line });
                }
                Use::Glob(segments) => {
                    m.globs.push(segments.clone());
                    m.written.push(Written { segments, line });
                }
            }
        }
    }

    fn use_tree(&self, j: &mut usize, prefix: Vec<String>, out: &mut Vec<Use>) {
        let mut segs = prefix;
        if self.sep(*j) {
            *j += 1; // a leading `::`: an external crate
            segs.push("::".into());
        }
        loop {
            if self.punct(*j, '*') {
                *j += 1;
                out.push(Use::Glob(segs));
                return;
            }
            if self.punct(*j, '{') {
                let close = self.close(*j);
                *j += 1;
                while *j < close - 1 {
                    self.use_tree(j, segs.clone(), out);
                    if self.punct(*j, ',') {
                        *j += 1;
                    } else if *j < close - 1 {
                        *j = close - 1; // something unreadable: stop at the group's end
                    }
                }
                *j = close;
                return;
            }
            let Some(seg) = self.ident(*j) else {
                return;
            };
            let seg = seg.to_string();
            *j += 1;
            if self.sep(*j) {
                segs.push(seg);
                *j += 1;
                continue;
            }
            // The last segment; `self` in a group names the group's module.
            let bound = if seg == "self" {
                segs.last().cloned().unwrap_or_default()
            } else {
                segs.push(seg.clone());
                seg
            };
            let name = if self.ident(*j) == Some("as") {
                *j += 2;
                self.ident(*j - 1).unwrap_or_default().to_string()
            } else {
                bound
            };
            out.push(Use::Name(name, segs));
            return;
        }
    }
}

enum Use {
    /// A bound name and the path it names.
    Name(String, Vec<String>),
    /// A glob import of a path.
    Glob(Vec<String>),
}
