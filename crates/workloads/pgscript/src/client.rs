//! [`Client`]: one client's interpreter (pgbench's `CState`). It walks a script, evaluates the
//! meta-commands itself (`\set`, `\if`…, `\shell`, `\setshell`) and hands every SQL command,
//! sleep and pipeline boundary to the caller as a [`Step`]; the caller talks to the database,
//! times what it does, and gives `\gset`/`\aset` their rows back with [`Client::store`].

use std::sync::Arc;

use crate::error::EvalError;
use crate::parse::Script;

/// How SQL is sent (pgbench `-M`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum QueryMode {
    /// Simple query protocol, variables substituted into the text.
    #[default]
    Simple,
    /// Extended protocol, unnamed statement, variables as parameters.
    Extended,
    /// Extended protocol, each command prepared once per connection.
    Prepared,
}

/// What a client starts with.
#[derive(Clone, Debug, Default)]
pub struct ClientConfig {
    /// `:client_id` (0-based, as pgbench).
    pub client_id: u32,
    /// `:scale`.
    pub scale: i64,
    /// `:random_seed`: the run's seed.
    pub random_seed: u64,
    /// `:default_seed`: the default seed of `hash*` and `permute` (pgbench draws it from the
    /// run's seed; the same for every client).
    pub default_seed: i64,
    /// `-D NAME=VALUE`, set as text before the builtins.
    pub defines: Vec<(String, String)>,
    /// How SQL is sent: decides whether [`Step::Sql`] carries substituted text or parameters.
    pub mode: QueryMode,
    /// Seed of this client's generator (random functions and the choice of script).
    pub seed: u64,
}

/// The rows of one statement's result, columns as text (`None` for NULL), for `\gset`/`\aset`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResultSet {
    /// Column names.
    pub columns: Vec<String>,
    /// The rows.
    pub rows: Vec<Vec<Option<String>>>,
}

/// What the caller does next.
#[derive(Debug, PartialEq)]
pub enum Step<'a> {
    /// Send SQL command `cmd` (an index into the script's commands). In simple mode `sql` has
    /// the variables substituted and `params` is empty; in extended and prepared modes `sql` is
    /// [`crate::parse::Sql::parameterized`] and `params` the values of `$1`, `$2`…
    Sql {
        /// Index of the command.
        cmd: usize,
        /// The SQL to send.
        sql: &'a str,
        /// Parameter values.
        params: &'a [String],
    },
    /// Sleep this long (`\sleep`).
    Sleep {
        /// Index of the command.
        cmd: usize,
        /// Microseconds.
        us: u64,
    },
    /// `\shell` or `\setshell` ran (inside [`Client::next`]).
    Shell {
        /// Index of the command.
        cmd: usize,
    },
    /// `\startpipeline`
    StartPipeline {
        /// Index of the command.
        cmd: usize,
    },
    /// `\syncpipeline`
    SyncPipeline {
        /// Index of the command.
        cmd: usize,
    },
    /// `\endpipeline`
    EndPipeline {
        /// Index of the command.
        cmd: usize,
    },
    /// The script is done: the transaction ended.
    End,
}

/// One client's interpreter.
pub struct Client {
    scripts: Arc<[Script]>,
    cfg: ClientConfig,
}

impl Client {
    /// A client of `scripts` (weights inside), its variables set from `cfg`.
    pub fn new(scripts: Arc<[Script]>, cfg: ClientConfig) -> Client {
        let _ = (&scripts, &cfg);
        todo!("helper")
    }
    /// The scripts.
    pub fn scripts(&self) -> &Arc<[Script]> {
        &self.scripts
    }
    /// The configuration it was made with.
    pub fn config(&self) -> &ClientConfig {
        &self.cfg
    }
    /// Picks the next script by weight (pgbench's `chooseScript`), from this client's generator.
    pub fn choose(&mut self) -> usize {
        todo!("helper")
    }
    /// Starts script `script` at its first command and remembers the generator's state, so
    /// [`Client::retry`] replays the same random values.
    pub fn start(&mut self, script: usize) {
        let _ = script;
        todo!("helper")
    }
    /// Starts the current script again from its first command with the generator as it was at
    /// [`Client::start`] (pgbench's retry of a serialization failure or deadlock).
    pub fn retry(&mut self) {
        todo!("helper")
    }
    /// Runs meta-commands until the next thing for the caller to do.
    pub fn next(&mut self) -> Result<Step<'_>, EvalError> {
        todo!("helper")
    }
    /// Gives command `cmd`'s results (one per statement; a compound command has several) to its
    /// `\gset`/`\aset`; a command without either ignores them. `\gset` wants exactly one row.
    pub fn store(&mut self, cmd: usize, results: &[ResultSet]) -> Result<(), EvalError> {
        let _ = (cmd, results);
        todo!("helper")
    }
    /// The text value of variable `name` (tests, `debug`).
    pub fn var(&self, name: &str) -> Option<String> {
        let _ = name;
        todo!("helper")
    }
}
