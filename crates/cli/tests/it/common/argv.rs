//! `dbscope` argument lists built option by option, for the commands the tests run again and again.
//!
//! `Argv::run("events").target(&uri).clients(7).duration("1s").quiet()` is
//! `["run", "events", "--target", URI, "--clients", "7", "--duration", "1s", "-q"]`: the
//! arguments come in the order the methods are called, so a list reads as the command line it was.

use std::fmt::Display;

/// A `dbscope` argument list; [`Argv::args`] hands it to `cli::ok`, `cli::fails` and the like.
#[derive(Clone, Debug, Default)]
pub struct Argv(Vec<String>);

impl Argv {
    /// `run WORKLOAD`.
    pub fn run(workload: &str) -> Self {
        Argv(vec!["run".into(), workload.into()])
    }

    /// `NAME VALUE`: any option with a value.
    pub fn opt(mut self, name: &str, value: impl Display) -> Self {
        self.0.push(name.into());
        self.0.push(value.to_string());
        self
    }

    /// `NAME`: any option without a value.
    pub fn flag(mut self, name: &str) -> Self {
        self.0.push(name.into());
        self
    }

    /// `--target TARGET`.
    pub fn target(self, target: impl Display) -> Self {
        self.opt("--target", target)
    }

    /// `--out DIR`.
    pub fn out(self, dir: impl Display) -> Self {
        self.opt("--out", dir)
    }

    /// `--duration D`.
    pub fn duration(self, d: impl Display) -> Self {
        self.opt("--duration", d)
    }

    /// `--ops N`.
    pub fn ops(self, n: impl Display) -> Self {
        self.opt("--ops", n)
    }

    /// `--rows N`.
    pub fn rows(self, n: impl Display) -> Self {
        self.opt("--rows", n)
    }

    /// `--sessions N`.
    pub fn sessions(self, n: impl Display) -> Self {
        self.opt("--sessions", n)
    }

    /// `--clients N` (`events`).
    pub fn clients(self, n: impl Display) -> Self {
        self.opt("--clients", n)
    }

    /// `--rate R` (`events`: per client).
    pub fn rate(self, r: impl Display) -> Self {
        self.opt("--rate", r)
    }

    /// `--elements N` (`events`).
    pub fn elements(self, n: impl Display) -> Self {
        self.opt("--elements", n)
    }

    /// `--connections N` (`events`).
    pub fn connections(self, n: impl Display) -> Self {
        self.opt("--connections", n)
    }

    /// `--strategy S` (`events`).
    pub fn strategy(self, s: impl Display) -> Self {
        self.opt("--strategy", s)
    }

    /// `--set NAME=VALUE` (a server or pragma setting).
    pub fn set(self, setting: impl Display) -> Self {
        self.opt("--set", setting)
    }

    /// `--fresh`.
    pub fn fresh(self) -> Self {
        self.flag("--fresh")
    }

    /// `-q`.
    pub fn quiet(self) -> Self {
        self.flag("-q")
    }

    /// The arguments, as the `cli` helpers take them.
    pub fn args(&self) -> Vec<&str> {
        self.0.iter().map(String::as_str).collect()
    }
}

#[test]
fn arguments_come_in_the_order_given() {
    let uri = String::from("postgres://h/db");
    let a = Argv::run("events")
        .target(&uri)
        .clients(7)
        .opt("--sample-hz", 50)
        .fresh()
        .quiet();
    assert_eq!(
        a.args(),
        [
            "run",
            "events",
            "--target",
            "postgres://h/db",
            "--clients",
            "7",
            "--sample-hz",
            "50",
            "--fresh",
            "-q"
        ]
    );
}
