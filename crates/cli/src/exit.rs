//! Exit codes and the error that carries one: what every command returns to `main`.
//!
//! | code | meaning |
//! |------|---------|
//! | 0    | complete |
//! | 1    | the run failed, or ended incomplete (a wrong answer, a failed check, a torn block) |
//! | 2    | bad usage: arguments, options, connection-string syntax |
//! | 3    | bad input: a file, trace, capture or run directory that cannot be read (or written) or is malformed |
//! | 4    | the database refused or was unreachable |
//! | 5    | a regression gate (`compare --fail-if`) failed: a condition held with 95% confidence |
//! | 6    | `ab` ended undecided after `--max-rounds` (without `--fail-if`) |
//! | 130  | interrupted (Ctrl-C, SIGTERM), as a shell reports SIGINT |
//!
//! An error's code is its kind's ([`Kind::of`]): the chain of causes is walked from the outermost
//! and the first library error whose kind is known decides. An error of no known kind (the
//! binary's own checks of its arguments) is bad usage.

use std::io;

use dbscope_db::TargetError;

/// Exit code when the run ended as failed (or incomplete).
pub const EXIT_FAILED: u8 = 1;
/// Exit code for bad usage (arguments, options, connection-string syntax); also what an error of
/// no known kind exits with.
pub const EXIT_USAGE: u8 = 2;
/// Exit code for bad input: a file, trace, capture or run directory that cannot be read (or
/// written) or is malformed.
pub const EXIT_INPUT: u8 = 3;
/// Exit code when the database refused or was unreachable.
pub const EXIT_DATABASE: u8 = 4;
/// Exit code when a `--fail-if` condition held (a regression gate failed).
pub const EXIT_GATE: u8 = 5;
/// Exit code when `ab` reached `--max-rounds` without a decision (and had no `--fail-if`).
pub const EXIT_UNDECIDED: u8 = 6;
/// Exit code when the run was interrupted (as a shell reports SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;

/// The exit codes, as the top-level `--help` ends.
pub const HELP: &str = "Exit codes:
  0    complete
  1    the run failed, or ended incomplete
  2    bad usage: arguments, options, connection-string syntax
  3    bad input: a file, trace, capture or run directory that cannot be read or is malformed
  4    the database refused or was unreachable
  5    a regression gate (compare/ab --fail-if) failed: a condition held with its confidence
  6    ab: undecided after --max-rounds (without --fail-if)
  130  interrupted (Ctrl-C or SIGTERM)";

/// An error that should exit with a given code.
#[derive(Debug)]
pub struct Exit(pub u8, pub anyhow::Error);

impl<E: Into<anyhow::Error>> From<E> for Exit {
    fn from(e: E) -> Self {
        let e = e.into();
        Exit(code_of(&e), e)
    }
}

impl Exit {
    /// The code to exit with. Commands written before errors had kinds give [`EXIT_USAGE`] for
    /// any library error (`Exit(EXIT_USAGE, e.into())`); for those the error's kind decides, so a
    /// refusing database exits 4 whichever command met it. Codes chosen otherwise (1, 130) stand.
    pub fn code(&self) -> u8 {
        if self.0 == EXIT_USAGE {
            code_of(&self.1)
        } else {
            self.0
        }
    }
}

/// The code of an error by its kind; [`EXIT_USAGE`] when no cause has a known kind.
pub fn code_of(e: &anyhow::Error) -> u8 {
    e.chain().find_map(Kind::of).map_or(EXIT_USAGE, Kind::code)
}

/// What went wrong, as far as the exit code is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The run failed: a wrong answer, a failed check, a job that failed.
    Failed,
    /// Bad usage: an argument, an option, a connection string's syntax.
    Usage,
    /// Bad input: a file or directory cannot be read (or written) or is malformed.
    Input,
    /// The database refused or was unreachable.
    Database,
}

impl Kind {
    /// The exit code.
    pub fn code(self) -> u8 {
        match self {
            Kind::Failed => EXIT_FAILED,
            Kind::Usage => EXIT_USAGE,
            Kind::Input => EXIT_INPUT,
            Kind::Database => EXIT_DATABASE,
        }
    }

    /// The kind of one error of the chain, if it is a library error (or an I/O error); `None`
    /// for a message of no known kind (the next cause may have one).
    pub fn of(e: &(dyn std::error::Error + 'static)) -> Option<Kind> {
        macro_rules! by {
            ($t:ty, $f:expr) => {
                if let Some(e) = e.downcast_ref::<$t>() {
                    return Some(($f)(e));
                }
            };
        }
        by!(dbscope_lab::Error, lab);
        by!(dbscope_lab::workload::tpch::load::LoadError, tpch_load);
        by!(dbscope_transfer::Error, transfer);
        by!(dbscope_import::ImportError, import);
        by!(dbscope_io::Error, redo);
        by!(dbscope_capture::CaptureError, capture);
        by!(dbscope_trace::import::ImportError, trace_import);
        by!(dbscope_trace::error::TraceReadError, trace_read);
        by!(dbscope_tpch::error::Q1Error, |_: &_| Kind::Input);
        by!(dbscope_tpch::error::InputError, q1_input);
        by!(dbscope_tpch::error::LineitemParquetError, |_: &_| {
            Kind::Input
        });
        by!(dbscope_tpch::error::GenError, gen);
        by!(dbscope_tpch::error::GenConfigError, |_: &_| Kind::Usage);
        by!(dbscope_tpch::error::AnswerError, |_: &_| Kind::Input);
        by!(dbscope_tpch::error::Mismatch, |_: &_| Kind::Failed);
        by!(dbscope_analysis::compare::CompareError, compare);
        by!(dbscope_analysis::export::ExportError, export);
        by!(dbscope_analysis::usl::UslError, |_: &_| Kind::Input);
        by!(dbscope_core::Error, core);
        by!(TargetError, target);
        by!(dbscope_pgwire::ConnectError, connect);
        by!(dbscope_pgwire::WireError, |_: &_| Kind::Database);
        by!(dbscope_pgwire::conninfo::ConnInfoError, |_: &_| Kind::Usage);
        #[cfg(feature = "cluster")]
        by!(dbscope_cluster::ClusterError, cluster);
        #[cfg(feature = "hub")]
        by!(dbscope_hub::Error, hub);
        by!(io::Error, |_: &_| Kind::Input);
        None
    }
}

fn core(e: &dbscope_core::Error) -> Kind {
    use dbscope_core::Error as E;
    match e {
        E::Io { .. }
        | E::NotARun(_)
        | E::Format { .. }
        | E::NewerFormat { .. }
        | E::Spill { .. } => Kind::Input,
        // `--out` names a run; the statistics' input is reached through options (quantiles,
        // replicates, confidence levels).
        E::RunExists(_) | E::InvalidInput(_) => Kind::Usage,
    }
}

fn target(e: &TargetError) -> Kind {
    if e.is_config() {
        Kind::Usage
    } else if e.is_database() {
        Kind::Database
    } else {
        // A workload's own check of the answers (`check:…`, `tpch:mismatch`).
        Kind::Failed
    }
}

fn connect(e: &dbscope_pgwire::ConnectError) -> Kind {
    match e {
        dbscope_pgwire::ConnectError::BadString(_) => Kind::Usage,
        _ => Kind::Database,
    }
}

fn lab(e: &dbscope_lab::Error) -> Kind {
    match e {
        dbscope_lab::Error::Target(t) => target(t),
        dbscope_lab::Error::Core(c) => core(c),
        dbscope_lab::Error::Config(_)
        | dbscope_lab::Error::Invalid { .. }
        | dbscope_lab::Error::Uneven { .. } => Kind::Usage,
    }
}

fn tpch_load(e: &dbscope_lab::workload::tpch::load::LoadError) -> Kind {
    use dbscope_lab::workload::tpch::load::LoadError as E;
    match e {
        E::Target(t) => target(t),
        E::Io { .. } | E::Parse { .. } | E::NoTables { .. } => Kind::Input,
        // The null target; a table that exists (the message says to add --fresh).
        E::NullTarget | E::CreateTable { .. } => Kind::Usage,
        E::ValueTooLarge { .. } => Kind::Failed,
    }
}

fn transfer(e: &dbscope_transfer::Error) -> Kind {
    use dbscope_transfer::Error as E;
    match e {
        E::Config(_) | E::Table(_) => Kind::Usage,
        E::Input(_) | E::Io(_) => Kind::Input,
        E::Connect { source, .. } => connect(source),
        E::Database { .. } | E::Server(_) => Kind::Database,
        E::Core(c) => core(c),
    }
}

fn import(e: &dbscope_import::ImportError) -> Kind {
    match e {
        dbscope_import::ImportError::Run(c) => core(c),
        dbscope_import::ImportError::Input(_) => Kind::Input,
    }
}

fn redo(e: &dbscope_io::Error) -> Kind {
    match e {
        dbscope_io::Error::Config(_) => Kind::Usage,
        dbscope_io::Error::NotALog { .. } | dbscope_io::Error::Io { .. } => Kind::Input,
        dbscope_io::Error::Run(c) => core(c),
    }
}

fn capture(e: &dbscope_capture::CaptureError) -> Kind {
    use dbscope_capture::CaptureError as E;
    match e {
        E::Config(_) => Kind::Usage,
        E::Connect { source, .. } => connect(source),
        E::Database { .. } => Kind::Database,
        E::Io { .. } | E::NotACapture { .. } => Kind::Input,
        E::Run(c) => core(c),
        E::Failed { .. } => Kind::Failed,
    }
}

fn trace_read(e: &dbscope_trace::error::TraceReadError) -> Kind {
    use dbscope_trace::error::TraceReadError as E;
    match e {
        E::Io { .. } | E::Strict(_) => Kind::Input,
        E::Internal { .. } => Kind::Failed,
    }
}

fn trace_import(e: &dbscope_trace::import::ImportError) -> Kind {
    use dbscope_trace::import::ImportError as E;
    match e {
        E::Read(r) => trace_read(r),
        E::Run(c) => core(c),
        E::Io { .. } => Kind::Input,
    }
}

fn q1_input(e: &dbscope_tpch::error::InputError) -> Kind {
    match e {
        dbscope_tpch::error::InputError::NoPaths => Kind::Usage,
        _ => Kind::Input,
    }
}

fn gen(e: &dbscope_tpch::error::GenError) -> Kind {
    match e {
        dbscope_tpch::error::GenError::Config(_) => Kind::Usage,
        _ => Kind::Input,
    }
}

fn compare(e: &dbscope_analysis::compare::CompareError) -> Kind {
    use dbscope_analysis::compare::CompareError as E;
    match e {
        E::Run(c) => core(c),
        E::Incomplete { .. } => Kind::Input,
        E::Nothing(_) | E::Options(_) => Kind::Usage,
    }
}

fn export(e: &dbscope_analysis::export::ExportError) -> Kind {
    use dbscope_analysis::export::ExportError as E;
    match e {
        E::Run(c) => core(c),
        E::Output { .. } => Kind::Usage,
        _ => Kind::Input,
    }
}

#[cfg(feature = "cluster")]
fn cluster(e: &dbscope_cluster::ClusterError) -> Kind {
    use dbscope_cluster::ClusterError as E;
    match e {
        E::Address { .. } | E::Bind { .. } => Kind::Usage,
        E::Unreachable { .. } => Kind::Database,
        E::WorkDir { .. } | E::Input(_) => Kind::Input,
        E::Node { .. } | E::Plan(_) | E::Job { .. } | E::Shape(_) | E::Runtime(_) => Kind::Failed,
    }
}

#[cfg(feature = "hub")]
fn hub(e: &dbscope_hub::Error) -> Kind {
    use dbscope_hub::Error as E;
    match e {
        E::Usage(_) => Kind::Usage,
        E::Input(_) => Kind::Input,
        E::Source(_) => Kind::Database,
        E::Core(e) => core(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;
    use std::path::PathBuf;

    fn code(e: impl Into<anyhow::Error>) -> u8 {
        Exit::from(e).code()
    }

    #[test]
    fn codes_by_kind() {
        assert_eq!(
            code(anyhow::anyhow!("--ops must be at least 1")),
            EXIT_USAGE
        );
        assert_eq!(
            code(dbscope_core::Error::NotARun(PathBuf::from("x"))),
            EXIT_INPUT
        );
        assert_eq!(code(TargetError::config("bad URI")), EXIT_USAGE);
        let refused = TargetError {
            class: "pg:28P01".into(),
            sqlstate: dbscope_db::SqlState::parse("28P01"),
            mysql_code: None,
            message: "password authentication failed".into(),
            connection_lost: true,
        };
        assert_eq!(code(refused.clone()), EXIT_DATABASE);
        assert_eq!(code(dbscope_lab::Error::Target(refused)), EXIT_DATABASE);
        let check = TargetError {
            class: "check:groupby".into(),
            sqlstate: None,
            mysql_code: None,
            message: "wrong result".into(),
            connection_lost: false,
        };
        assert_eq!(code(check), EXIT_FAILED);
        assert_eq!(
            code(io::Error::from(io::ErrorKind::NotFound)),
            EXIT_INPUT,
            "a file that cannot be read"
        );
    }

    #[test]
    fn a_connection_is_bad_usage_or_the_database_by_why_it_failed() {
        use dbscope_pgwire::conninfo::ConnInfoError;
        use dbscope_pgwire::ConnectError;
        let transfer = |source| dbscope_transfer::Error::Connect {
            message: "cannot connect to postgres://h/db".into(),
            source,
        };
        let bad = ConnectError::BadString(ConnInfoError("invalid port".into()));
        assert_eq!(code(transfer(bad)), EXIT_USAGE);
        let away = ConnectError::Unreachable(vec!["h:5432: Connection refused".into()]);
        assert_eq!(code(transfer(away)), EXIT_DATABASE);
        let capture = dbscope_capture::CaptureError::Connect {
            message: "upstream postgres://h/db is not reachable".into(),
            source: ConnectError::Unreachable(vec![]),
        };
        assert_eq!(code(capture), EXIT_DATABASE);
        let table = dbscope_transfer::Error::Table("t has no primary key to split by".into());
        assert_eq!(code(table), EXIT_USAGE);
    }

    #[test]
    fn the_outermost_kind_decides_through_context() {
        let e = Err::<(), _>(dbscope_core::Error::NotARun(PathBuf::from("x")))
            .context("sweep point 1 session(s), repeat 1")
            .unwrap_err();
        assert_eq!(code(e), EXIT_INPUT);
    }

    #[test]
    fn an_explicit_code_stands_and_usage_is_refined() {
        let e = anyhow::Error::from(dbscope_core::Error::NotARun(PathBuf::from("x")));
        assert_eq!(Exit(EXIT_FAILED, e).code(), EXIT_FAILED);
        let e = anyhow::Error::from(dbscope_core::Error::NotARun(PathBuf::from("x")));
        assert_eq!(Exit(EXIT_USAGE, e).code(), EXIT_INPUT);
        assert_eq!(
            Exit(EXIT_USAGE, anyhow::anyhow!("bad flag")).code(),
            EXIT_USAGE
        );
    }
}
