//! The check on made-up crates: it must find each kind of cycle, and nothing in trees without one.

use super::*;

/// A made-up crate from (path under `src/`, contents); returns its root file.
fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let p = dir.path().join("src").join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    std::fs::write(dir.path().join("Cargo.toml"), "[package]\n").unwrap();
    let root = dir.path().join("src/lib.rs");
    (dir, root)
}

fn cycle_names(files: &[(&str, &str)]) -> Vec<Vec<String>> {
    let (_d, root) = tree(files);
    cycles(&imports(&root).unwrap())
        .into_iter()
        .map(|c| {
            c.imports
                .into_iter()
                .map(|i| format!("{}->{}", i.from, i.to))
                .collect()
        })
        .collect()
}

#[test]
fn two_modules_that_import_each_other_are_a_cycle() {
    let c = cycle_names(&[
        ("lib.rs", "pub mod report;\npub mod observe;\n"),
        (
            "report.rs",
            "pub struct EventReport;\npub fn build() { crate::observe::join(); }\n",
        ),
        (
            "observe.rs",
            "use crate::report::EventReport;\npub fn join() {}\n",
        ),
    ]);
    assert_eq!(c, [["observe->report", "report->observe"]]);
}

#[test]
fn the_message_names_the_lines() {
    let (d, _root) = tree(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "// crate::b in a comment is nothing\nuse crate::b::B;\npub struct A;\n",
        ),
        (
            "b.rs",
            "pub struct B;\n\n\nfn f() -> super::a::A { todo!() }\n",
        ),
    ]);
    let found = check_package(d.path()).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].1.modules, ["a", "b"]);
    let msgs = [found[0].1.describe()];
    assert!(msgs[0].contains("module cycle a -> b -> a"), "{}", msgs[0]);
    assert!(msgs[0].contains("a.rs:2 `crate::b::B`"), "{}", msgs[0]);
    assert!(msgs[0].contains("b.rs:4 `super::a::A`"), "{}", msgs[0]);
}

#[test]
fn a_longer_cycle_through_relative_and_aliased_paths() {
    let c = cycle_names(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("a.rs", "use crate::b as bee;\nfn f() { bee::g(); }\n"),
        ("b.rs", "pub fn g() { super::c::h(); }\n"),
        ("c.rs", "pub fn h() { crate::a::f(); }\n"),
    ]);
    assert_eq!(c, [["a->b", "b->c", "c->a"]]);
}

#[test]
fn no_cycle_when_shared_pieces_sit_in_a_leaf() {
    let c = cycle_names(&[
        (
            "lib.rs",
            "pub mod report;\npub mod observe;\npub mod summary;\n",
        ),
        (
            "report.rs",
            "pub use crate::summary::EventReport;\npub fn build() { crate::observe::join(); }\n",
        ),
        (
            "observe.rs",
            "use crate::summary::EventReport;\npub fn join() {}\n",
        ),
        ("summary.rs", "pub struct EventReport;\n"),
    ]);
    assert!(c.is_empty(), "{c:?}");
}

#[test]
fn a_child_using_its_parents_own_item_is_a_cycle() {
    // html/mod.rs calls into its child, the child uses a helper the parent defines.
    let c = cycle_names(&[
        ("lib.rs", "pub mod html;\n"),
        (
            "html/mod.rs",
            "mod observe;\npub fn row() {}\npub fn page() { observe::section(); }\n",
        ),
        (
            "html/observe.rs",
            "use super::row;\npub fn section() { row(); }\n",
        ),
    ]);
    assert_eq!(c, [["html->html::observe", "html::observe->html"]]);
}

#[test]
fn declaring_a_child_or_reaching_a_sibling_through_a_facade_is_no_cycle() {
    // The façade re-exports its children; a child names a sibling's item through `super::`,
    // which is the sibling's, not the façade's.
    let c = cycle_names(&[
        ("lib.rs", "pub mod observe;\n"),
        (
            "observe/mod.rs",
            "mod model;\nmod text;\npub use model::Figure;\npub use self::text::push_text;\nuse text::*;\n",
        ),
        ("observe/model.rs", "pub struct Figure;\n"),
        ("observe/text.rs", "use super::Figure;\npub fn push_text(_: &Figure) {}\n"),
    ]);
    assert!(c.is_empty(), "{c:?}");
}

#[test]
fn glob_re_exports_are_followed_to_their_module() {
    let c = cycle_names(&[
        ("lib.rs", "mod a;\nmod b;\npub use a::*;\n"),
        ("a.rs", "pub struct A;\npub fn f() { crate::b::g(); }\n"),
        ("b.rs", "pub fn g() -> crate::A { crate::A }\n"),
    ]);
    assert_eq!(c, [["a->b", "b->a"]]);
}

#[test]
fn test_only_items_and_other_crates_do_not_count() {
    let c = cycle_names(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "use std::fmt::Write;\nuse serde::Serialize;\npub fn f() { crate::b::g(); }\n",
        ),
        (
            "b.rs",
            "pub fn g() {}\n#[cfg(test)]\nmod tests {\n    use crate::a::f;\n}\n\
             #[cfg(test)]\n#[allow(dead_code)]\nfn helper() { crate::a::f(); }\n\
             #[cfg(test)]\nmod more;\n",
        ),
    ]);
    assert!(c.is_empty(), "{c:?}");
}

#[test]
fn inline_modules_belong_to_their_file() {
    let c = cycle_names(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "pub mod inner {\n    pub fn f() { super::g(); crate::b::h(); }\n}\nfn g() {}\n",
        ),
        ("b.rs", "pub fn h() { crate::a::inner::f(); }\n"),
    ]);
    assert_eq!(c, [["a->b", "b->a"]]);
}

#[test]
fn nested_files_and_super_super() {
    let c = cycle_names(&[
        ("lib.rs", "mod block;\nmod redo;\n"),
        ("block.rs", "pub struct Record;\n"),
        ("redo/mod.rs", "mod config;\nmod shared;\nfn run() { shared::go(); }\n"),
        (
            "redo/config.rs",
            "use super::super::block::Record;\npub fn limit() -> u64 { super::shared::backlog() }\n",
        ),
        ("redo/shared.rs", "use super::config::limit;\npub fn backlog() -> u64 { 0 }\npub fn go() { limit(); }\n"),
    ]);
    assert_eq!(
        c,
        [["redo::config->redo::shared", "redo::shared->redo::config"]]
    );
}
