//! A throwaway PostgreSQL cluster for integration tests.
//!
//! Tests talk to a REAL server. [`PgCluster::shared`] starts one cluster per
//! test binary on first use, from the system's `initdb`/`postgres` binaries:
//!
//! * everything lives in a fresh temp dir (`<tmp>/dbscope-pg-<pid>-<hex>/`):
//!   `data/` (the cluster), `sock/` (the Unix socket), `server.log`;
//! * the server listens only on the Unix socket (`listen_addresses=''`), on a
//!   free port number (which names the socket file `.s.PGSQL.<port>`);
//! * the superuser is `dbscope` with a random password and `scram-sha-256`
//!   authentication, so wrong-password tests are real;
//! * `fsync` and the rest of the server configuration keep their defaults, so
//!   commit latency is real;
//! * PostgreSQL refuses to run as root: when the test process is root, the
//!   server runs as the unprivileged `postgres` OS user (via `setpriv`, or
//!   `runuser` if `setpriv` is missing); otherwise as the current user.
//!
//! Cleanup: Rust tests have no teardown hook, so the server is started through
//! a small `sh` wrapper (in its own process group, so a terminal Ctrl-C does
//! not hit it directly) whose stdin is a pipe whose write end only this
//! process holds (close-on-exec, so no other child inherits it). When the test
//! binary exits -- normally, by panic, or even by SIGKILL -- the kernel closes
//! the pipe, the wrapper's `read` sees EOF, it sends SIGINT (fast shutdown) to
//! the postmaster, waits for it, and removes the whole temp dir. Shutdown
//! happens asynchronously, just after the test binary has exited.
//!
//! If the server binaries cannot be found, every test using the cluster fails
//! with a message saying how to install them; nothing is skipped silently.
//! `DBSCOPE_PG_BINDIR` overrides binary discovery.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::fs;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// Name of the cluster's superuser (created by `initdb -U`).
pub const SUPERUSER: &str = "dbscope";

/// How long to wait for the server to accept connections.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long `kill_backends` waits for each terminated backend to exit (ms).
const TERMINATE_WAIT_MS: i64 = 5_000;

const INSTALL_HINT: &str = "The dbscope integration tests need a real PostgreSQL server \
(the `initdb` and `postgres` binaries). Install it with:\n\
\n    apt-get install postgresql        # Debian/Ubuntu (as root)\n\
\nor set DBSCOPE_PG_BINDIR to the directory that contains `initdb` and `postgres`.";

/// Runs the postmaster in the background and waits for EOF on stdin (the
/// test process exiting), then shuts it down fast and removes the temp dir.
/// Invoked as `sh -c WRAPPER dbscope-pg-wrapper BASE_DIR POSTGRES ARGS...`.
const WRAPPER: &str = r#"
PATH=/usr/bin:/bin:$PATH
base=$1
shift
"$@" </dev/null >>"$base/server.log" 2>&1 &
pid=$!
echo "$pid" >"$base/server.pid"
while read -r _line; do :; done
kill -INT "$pid" 2>/dev/null
wait "$pid"
# A server restarted by `pg_ctl restart` is no child of ours: its pid heads postmaster.pid.
if [ -f "$base/data/postmaster.pid" ]; then
  p=$(head -n 1 "$base/data/postmaster.pid")
  kill -INT "$p" 2>/dev/null
  while kill -0 "$p" 2>/dev/null; do sleep 0.1; done
fi
rm -rf "$base"
"#;

/// A running throwaway PostgreSQL cluster; see the module docs.
pub struct PgCluster {
    base_dir: PathBuf,
    data_dir: PathBuf,
    socket_dir: PathBuf,
    log_file: PathBuf,
    bin_dir: PathBuf,
    port: u16,
    password: String,
    server_version_num: u32,
    server_version: String,
    /// Who runs the server's programs (`pg_ctl` for [`PgCluster::restart_fast`]).
    run_as: RunAs,
    /// Write end of the wrapper's stdin. Never written to: it is closed by the
    /// kernel when this process exits, which shuts the cluster down.
    _lifeline: ChildStdin,
}

impl PgCluster {
    /// One cluster per test binary, started on first use and shared by all
    /// tests in it. Panics (with the same message in every test) if the
    /// cluster cannot be started.
    pub fn shared() -> &'static PgCluster {
        static SHARED: OnceLock<Result<PgCluster, String>> = OnceLock::new();
        match SHARED.get_or_init(PgCluster::start) {
            Ok(cluster) => cluster,
            Err(msg) => panic!("cannot start the test PostgreSQL cluster:\n{msg}"),
        }
    }

    /// A second cluster, for tests that read cluster-wide counters (pg_stat_wal,
    /// pg_stat_bgwriter) which the shared cluster's other tests would disturb. Tests using it
    /// should hold [`PgCluster::private_lock`] while they measure.
    pub fn private() -> &'static PgCluster {
        static PRIVATE: OnceLock<Result<PgCluster, String>> = OnceLock::new();
        match PRIVATE.get_or_init(PgCluster::start) {
            Ok(cluster) => cluster,
            Err(msg) => panic!("cannot start the private test PostgreSQL cluster:\n{msg}"),
        }
    }

    /// A cluster started with `shared_preload_libraries = 'pg_stat_statements'` (issue 14), for
    /// tests that need the extension present; each test creates it in its own database.
    pub fn with_statements() -> &'static PgCluster {
        static STATEMENTS: OnceLock<Result<PgCluster, String>> = OnceLock::new();
        match STATEMENTS
            .get_or_init(|| PgCluster::start_with(&["shared_preload_libraries=pg_stat_statements"]))
        {
            Ok(cluster) => cluster,
            Err(msg) => panic!("cannot start the pg_stat_statements test cluster:\n{msg}"),
        }
    }

    /// A cluster of the caller's own, with extra server settings (`max_connections=6`), for tests
    /// that restart the server or need settings the shared clusters cannot have. It shuts down
    /// when the test binary exits.
    pub fn throwaway(settings: &[&str]) -> PgCluster {
        PgCluster::start_with(settings)
            .unwrap_or_else(|msg| panic!("cannot start a throwaway PostgreSQL cluster:\n{msg}"))
    }

    /// A throwaway cluster whose WAL is in `waldir` (`initdb --waldir`: `pg_wal` becomes a
    /// symlink to it), for tests of where the files are (issue 34 item 7). `waldir` must not
    /// exist; it is created for the server's user.
    pub fn throwaway_with_waldir(waldir: &Path) -> PgCluster {
        PgCluster::start_opts(&[], Some(waldir))
            .unwrap_or_else(|msg| panic!("cannot start a throwaway PostgreSQL cluster:\n{msg}"))
    }

    /// Creates `dir` for the server's user (mode 0700): a tablespace or WAL directory.
    pub fn make_server_dir(dir: &Path) -> Result<(), String> {
        RunAs::detect()?.make_dir(dir)
    }

    /// `pg_ctl restart -m fast`: ends every connection (fast shutdown), then starts the server
    /// again with the same options and waits until it accepts connections. Only for a
    /// [`PgCluster::throwaway`] cluster: other tests share the others.
    pub fn restart_fast(&self) {
        let pg_ctl = self.bin_dir.join("pg_ctl");
        let mut cmd = self.run_as.command(&pg_ctl);
        cmd.args(["restart", "-m", "fast", "-w", "-t", "60", "-D"])
            .arg(&self.data_dir)
            .arg("-l")
            .arg(&self.log_file)
            .current_dir(&self.base_dir)
            .env("LC_ALL", "C")
            .stdin(Stdio::null());
        let out = cmd
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", pg_ctl.display()));
        assert!(
            out.status.success(),
            "{cmd:?} failed ({}):\n{}{}\n--- server log tail ---\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.log_tail(30)
        );
    }

    /// [`PgCluster::restart_fast`] as one shell command line (for a program that takes a restart
    /// command, as `run lookup --restart-cmd` does).
    pub fn restart_shell_command(&self) -> String {
        self.restart_shell_command_with(true)
    }

    /// [`PgCluster::restart_shell_command`]; without `log`, as the docs' own `pg_ctl restart -m
    /// fast -w` without `-l`: the restarted server writes its log to pg_ctl's output, which it
    /// keeps open after pg_ctl has exited.
    pub fn restart_shell_command_with(&self, log: bool) -> String {
        let pg_ctl = self.bin_dir.join("pg_ctl");
        let mut cmd = self.run_as.command(&pg_ctl);
        cmd.args(["restart", "-m", "fast", "-w", "-t", "60", "-D"])
            .arg(&self.data_dir);
        if log {
            cmd.arg("-l").arg(&self.log_file);
        }
        let quote =
            |s: &std::ffi::OsStr| format!("'{}'", s.to_string_lossy().replace('\'', "'\\''"));
        let mut line = format!(
            "cd {} && LC_ALL=C {}",
            quote(self.base_dir.as_os_str()),
            quote(cmd.get_program())
        );
        for a in cmd.get_args() {
            line.push(' ');
            line.push_str(&quote(a));
        }
        line + " </dev/null"
    }

    /// Serialises the tests that measure on [`PgCluster::private`].
    pub fn private_lock() -> std::sync::MutexGuard<'static, ()> {
        static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
        LOCK.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// libpq-style URI for database `db` with the right password, e.g.
    /// `postgres://dbscope:PW@/db?host=/tmp/x/sock&port=N`.
    pub fn uri(&self, db: &str) -> String {
        self.uri_with_password(db, &self.password)
    }

    /// Like [`uri`](Self::uri) but with the given password (for
    /// wrong-password tests).
    pub fn uri_with_password(&self, db: &str, password: &str) -> String {
        format!(
            "postgres://{SUPERUSER}:{}@/{}?host={}&port={}",
            pct_encode(password, false),
            pct_encode(db, false),
            pct_encode(&self.socket_dir.to_string_lossy(), true),
            self.port
        )
    }

    /// The superuser's password.
    pub fn password(&self) -> &str {
        &self.password
    }

    /// The superuser's name (`dbscope`).
    pub fn user(&self) -> &str {
        SUPERUSER
    }

    /// Directory holding the server's Unix socket (`.s.PGSQL.<port>`).
    pub fn socket_dir(&self) -> &Path {
        &self.socket_dir
    }

    /// Port number (names the socket file; there is no TCP listener).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The cluster's data directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Directory of the server binaries in use.
    pub fn bin_dir(&self) -> &Path {
        &self.bin_dir
    }

    /// Runs the `pgbench` beside the server binaries with `args` as the cluster's user and
    /// password; asserts it succeeds and returns its output.
    pub fn pgbench(&self, args: &[&str]) -> String {
        let out = Command::new(self.bin_dir.join("pgbench"))
            .args(args)
            .env("PGPASSWORD", self.password())
            .env("PGUSER", self.user())
            .output()
            .expect("pgbench runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "pgbench {args:?}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    }

    /// The `psql` beside the server binaries, else `psql` on PATH.
    pub fn psql(&self) -> PathBuf {
        let beside = self.bin_dir.join("psql");
        if beside.is_file() {
            beside
        } else {
            find_in_path("psql").unwrap_or_else(|| PathBuf::from("psql"))
        }
    }

    /// `server_version_num`, e.g. 150014.
    pub fn server_version_num(&self) -> u32 {
        self.server_version_num
    }

    /// The last `lines` lines of the server log (for diagnostics).
    pub fn log_tail(&self, lines: usize) -> String {
        tail(&self.log_file, lines)
    }

    /// The whole server log (what the server said since the cluster started).
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log_file).unwrap_or_default()
    }

    /// Opens a new connection to `db` as the superuser. Panics on failure.
    pub fn connect(&self, db: &str) -> postgres::Client {
        postgres::Client::connect(&self.uri(db), postgres::NoTls).unwrap_or_else(|e| {
            panic!(
                "cannot connect to database {db:?} of the test cluster: {}",
                describe(&e)
            )
        })
    }

    /// Creates a fresh database with a unique name starting with `prefix`
    /// (sanitised to `[a-z0-9_]`) and returns its name.
    pub fn create_db(&self, prefix: &str) -> String {
        static COUNTER: AtomicU32 = AtomicU32::new(1);
        let mut p: String = prefix
            .chars()
            .map(|c| {
                let c = c.to_ascii_lowercase();
                if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(40)
            .collect();
        if p.is_empty() || p.starts_with(|c: char| c.is_ascii_digit()) {
            p.insert_str(0, "db_");
        }
        let name = format!("{p}_{}", COUNTER.fetch_add(1, Ordering::Relaxed));
        let mut client = self.connect("postgres");
        client
            .batch_execute(&format!("CREATE DATABASE {}", quote_ident(&name)))
            .unwrap_or_else(|e| panic!("CREATE DATABASE {name:?} failed: {}", describe(&e)));
        name
    }

    /// Runs `sql` (simple query protocol; several statements allowed) on `db`
    /// and returns the result rows as text, psql `-At` style: columns joined
    /// by `|`, rows by `\n`, NULL as the empty string, the whole trimmed. So a
    /// single value comes back as just that value. Panics on error.
    pub fn query(&self, db: &str, sql: &str) -> String {
        let mut client = self.connect(db);
        let messages = client.simple_query(sql).unwrap_or_else(|e| {
            panic!(
                "query on database {db:?} failed: {}\n  sql: {sql}",
                describe(&e)
            )
        });
        let mut rows = Vec::new();
        for message in messages {
            if let postgres::SimpleQueryMessage::Row(row) = message {
                let cols: Vec<&str> = (0..row.len()).map(|i| row.get(i).unwrap_or("")).collect();
                rows.push(cols.join("|"));
            }
        }
        rows.join("\n").trim().to_string()
    }

    /// Terminates all client backends connected to `db` except the one used
    /// to do it (`pg_terminate_backend`), waiting up to 5 s for each to exit.
    /// Returns how many were terminated. For fault-injection tests.
    pub fn kill_backends(&self, db: &str) -> u32 {
        let terminate = if self.server_version_num >= 140_000 {
            format!("pg_terminate_backend(pid, {TERMINATE_WAIT_MS})")
        } else {
            "pg_terminate_backend(pid)".to_string()
        };
        let sql = format!(
            "SELECT count(*) FILTER (WHERE t)::int4 FROM (\
               SELECT {terminate} AS t FROM pg_stat_activity \
               WHERE datname = $1 AND pid <> pg_backend_pid() \
                 AND backend_type = 'client backend') s"
        );
        let mut client = self.connect("postgres");
        let row = client
            .query_one(sql.as_str(), &[&db])
            .unwrap_or_else(|e| panic!("kill_backends({db:?}) failed: {}", describe(&e)));
        let n: i32 = row.get(0);
        u32::try_from(n).unwrap_or(0)
    }

    /// A third cluster that logs every statement with its duration, and connections, in
    /// stderr (`log_line_prefix` `%m [%p] %q%u@%d `), csvlog and jsonlog files under
    /// [`PgCluster::log_dir`], as `dbscope capture log` reads them.
    pub fn logging() -> &'static PgCluster {
        static LOGGING: OnceLock<Result<PgCluster, String>> = OnceLock::new();
        let options = [
            "logging_collector=on",
            "log_destination=stderr,csvlog,jsonlog",
            "log_directory=log",
            "log_min_duration_statement=0",
            "log_connections=on",
            "log_disconnections=on",
            "log_line_prefix=%m [%p] %q%u@%d ",
        ];
        match LOGGING.get_or_init(|| PgCluster::start_with(&options)) {
            Ok(cluster) => cluster,
            Err(msg) => panic!("cannot start the logging test PostgreSQL cluster:\n{msg}"),
        }
    }

    /// Where a [`PgCluster::logging`] cluster writes its logs.
    pub fn log_dir(&self) -> PathBuf {
        self.data_dir.join("log")
    }

    fn start() -> Result<PgCluster, String> {
        Self::start_with(&[])
    }

    /// [`PgCluster::start`] with extra `-c NAME=VALUE` server settings.
    fn start_with(settings: &[&str]) -> Result<PgCluster, String> {
        Self::start_opts(settings, None)
    }

    /// [`PgCluster::start_with`], with the WAL in `waldir` when given.
    fn start_opts(settings: &[&str], waldir: Option<&Path>) -> Result<PgCluster, String> {
        let bin_dir = find_bin_dir()?;
        let run_as = RunAs::detect()?;
        let base_dir = make_base_dir(&run_as)?;
        if let Some(w) = waldir {
            run_as.make_dir(w)?;
        }
        let result = Self::start_in(bin_dir, run_as, base_dir.clone(), settings, waldir);
        if result.is_err() {
            // If the wrapper never started, nobody else removes the dir. If
            // it did, it removes the dir too once the (now dropped) lifeline
            // closes; removing it twice is harmless.
            let _ = fs::remove_dir_all(&base_dir);
        }
        result
    }

    fn start_in(
        bin_dir: PathBuf,
        run_as: RunAs,
        base_dir: PathBuf,
        settings: &[&str],
        waldir: Option<&Path>,
    ) -> Result<PgCluster, String> {
        let data_dir = base_dir.join("data");
        let socket_dir = base_dir.join("sock");
        let log_file = base_dir.join("server.log");
        let pw_file = base_dir.join("pwfile");
        let password = random_hex(16)?;

        run_as.make_dir(&socket_dir)?;
        fs::write(&pw_file, format!("{password}\n"))
            .map_err(|e| format!("cannot write {}: {e}", pw_file.display()))?;
        run_as.give(&pw_file, 0o600)?;

        // initdb
        let initdb = bin_dir.join("initdb");
        let mut cmd = run_as.command(&initdb);
        cmd.arg("-D")
            .arg(&data_dir)
            .args(["-U", SUPERUSER])
            .arg(format!("--pwfile={}", pw_file.display()))
            .args([
                "--auth-local=scram-sha-256",
                "--auth-host=scram-sha-256",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .args(waldir.map(|w| format!("--waldir={}", w.display())))
            .current_dir(&base_dir)
            .env("LC_ALL", "C")
            .stdin(Stdio::null());
        let out = cmd
            .output()
            .map_err(|e| format!("cannot run {}: {e}\n{INSTALL_HINT}", initdb.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{cmd:?} failed ({}):\n--- stdout ---\n{}\n--- stderr ---\n{}",
                out.status,
                String::from_utf8_lossy(&out.stdout).trim_end(),
                String::from_utf8_lossy(&out.stderr).trim_end()
            ));
        }
        let _ = fs::remove_file(&pw_file);

        // postgres, through the cleanup wrapper
        let port = pick_port()?;
        let mut cmd = run_as.command(Path::new("/bin/sh"));
        cmd.arg("-c")
            .arg(WRAPPER)
            .arg("dbscope-pg-wrapper")
            .arg(&base_dir)
            .arg(bin_dir.join("postgres"))
            .arg("-D")
            .arg(&data_dir)
            .arg("-p")
            .arg(port.to_string())
            .args(["-c", "listen_addresses="])
            .arg("-c")
            .arg(format!("unix_socket_directories={}", socket_dir.display()))
            .args(["-c", "fsync=on", "-c", "max_connections=100"])
            .args(settings.iter().flat_map(|kv| ["-c", kv]))
            .current_dir(&base_dir)
            .env("LC_ALL", "C")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start the server wrapper {cmd:?}: {e}"))?;
        let lifeline = child.stdin.take().expect("piped stdin");
        // `child` is dropped without waiting: the wrapper outlives us.

        let mut cluster = PgCluster {
            base_dir,
            data_dir,
            socket_dir,
            log_file,
            bin_dir,
            port,
            password,
            server_version_num: 0,
            server_version: String::new(),
            run_as,
            _lifeline: lifeline,
        };
        cluster.wait_ready()?;
        eprintln!(
            "pg harness: PostgreSQL {} ready on {}/.s.PGSQL.{} (data {})",
            cluster.server_version,
            cluster.socket_dir.display(),
            cluster.port,
            cluster.data_dir.display()
        );
        Ok(cluster)
    }

    /// Polls until the server accepts an authenticated connection.
    fn wait_ready(&mut self) -> Result<(), String> {
        let started = Instant::now();
        let pid_file = self.base_dir.join("server.pid");
        loop {
            let err = match postgres::Client::connect(&self.uri("postgres"), postgres::NoTls) {
                Ok(mut client) => {
                    let row = client
                        .query_one(
                            "SELECT current_setting('server_version_num')::int4, \
                             current_setting('server_version')",
                            &[],
                        )
                        .map_err(|e| format!("version query failed: {}", describe(&e)))?;
                    let num: i32 = row.get(0);
                    self.server_version_num = u32::try_from(num).unwrap_or(0);
                    self.server_version = row.get(1);
                    return Ok(());
                }
                Err(e) => e,
            };
            let why = describe(&err);
            let fatal = err
                .as_db_error()
                .is_some_and(|db| db.code().code().starts_with("28"));
            let died = fs::read_to_string(&pid_file)
                .ok()
                .and_then(|s| s.trim().parse::<u32>().ok())
                .is_some_and(|pid| !process_alive(pid));
            if fatal || died || started.elapsed() >= READY_TIMEOUT {
                let what = if fatal {
                    "authentication failed".to_string()
                } else if died {
                    "the server exited during startup".to_string()
                } else {
                    format!("not ready after {READY_TIMEOUT:?}")
                };
                return Err(format!(
                    "PostgreSQL ({}) on {}/.s.PGSQL.{}: {what}; last error: {why}\n\
                     --- server log tail ({}) ---\n{}",
                    self.bin_dir.display(),
                    self.socket_dir.display(),
                    self.port,
                    self.log_file.display(),
                    self.log_tail(40)
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// How to run server-side commands: PostgreSQL refuses to run as root.
enum RunAs {
    /// Not root: run as the current user.
    Current,
    /// Root: run as the `postgres` user through `setpriv` (execs in place).
    Setpriv { prog: PathBuf, uid: u32, gid: u32 },
    /// Root without `setpriv`: through `runuser -u postgres --`.
    Runuser { prog: PathBuf, uid: u32, gid: u32 },
}

impl RunAs {
    fn detect() -> Result<RunAs, String> {
        if effective_uid()? != 0 {
            return Ok(RunAs::Current);
        }
        let (uid, gid) = match (id_of("-u"), id_of("-g")) {
            (Some(uid), Some(gid)) => (uid, gid),
            _ => {
                return Err(format!(
                    "the tests run as root, but there is no `postgres` OS user to run the \
                     server as (PostgreSQL refuses to run as root). Installing the server \
                     package creates it.\n{INSTALL_HINT}"
                ))
            }
        };
        if let Some(prog) = find_in_path("setpriv") {
            Ok(RunAs::Setpriv { prog, uid, gid })
        } else if let Some(prog) = find_in_path("runuser") {
            Ok(RunAs::Runuser { prog, uid, gid })
        } else {
            Err(
                "the tests run as root and need `setpriv` or `runuser` (util-linux) \
                 to run PostgreSQL as the `postgres` user"
                    .to_string(),
            )
        }
    }

    fn command(&self, program: &Path) -> Command {
        match self {
            RunAs::Current => Command::new(program),
            RunAs::Setpriv { prog, .. } => {
                let mut c = Command::new(prog);
                c.args([
                    "--reuid=postgres",
                    "--regid=postgres",
                    "--init-groups",
                    "--",
                ])
                .arg(program);
                c
            }
            RunAs::Runuser { prog, .. } => {
                let mut c = Command::new(prog);
                c.args(["-u", "postgres", "--"]).arg(program);
                c
            }
        }
    }

    fn owner(&self) -> Option<(u32, u32)> {
        match self {
            RunAs::Current => None,
            RunAs::Setpriv { uid, gid, .. } | RunAs::Runuser { uid, gid, .. } => Some((*uid, *gid)),
        }
    }

    /// Sets `path`'s mode and, when running as root, hands it to `postgres`.
    fn give(&self, path: &Path, mode: u32) -> Result<(), String> {
        fs::set_permissions(path, fs::Permissions::from_mode(mode))
            .map_err(|e| format!("chmod {}: {e}", path.display()))?;
        if let Some((uid, gid)) = self.owner() {
            std::os::unix::fs::chown(path, Some(uid), Some(gid))
                .map_err(|e| format!("chown postgres {}: {e}", path.display()))?;
        }
        Ok(())
    }

    fn make_dir(&self, path: &Path) -> Result<(), String> {
        fs::create_dir(path).map_err(|e| format!("mkdir {}: {e}", path.display()))?;
        self.give(path, 0o700)
    }

    /// Whether the server user can reach `dir` (every ancestor searchable).
    fn can_traverse(&self, dir: &Path) -> bool {
        let Some((uid, gid)) = self.owner() else {
            return true;
        };
        dir.ancestors().all(|d| match fs::metadata(d) {
            Ok(m) => {
                let mode = m.mode();
                mode & 0o001 != 0
                    || (m.uid() == uid && mode & 0o100 != 0)
                    || (m.gid() == gid && mode & 0o010 != 0)
            }
            Err(_) => false,
        })
    }
}

/// Creates `<tmp>/dbscope-pg-<pid>-<hex>` owned by the server user, mode 0700.
fn make_base_dir(run_as: &RunAs) -> Result<PathBuf, String> {
    let tmp = std::env::temp_dir();
    // The socket path (`<base>/sock/.s.PGSQL.NNNNN`) must fit in sun_path
    // (108 bytes), and the server user must be able to reach the dir.
    let parent = if tmp.as_os_str().len() <= 60 && run_as.can_traverse(&tmp) {
        tmp
    } else {
        PathBuf::from("/tmp")
    };
    let base = parent.join(format!(
        "dbscope-pg-{}-{}",
        std::process::id(),
        random_hex(4)?
    ));
    run_as.make_dir(&base)?;
    Ok(base)
}

/// Finds the directory holding `initdb` and `postgres`: `$DBSCOPE_PG_BINDIR`,
/// `pg_config --bindir`, `PATH` (following symlinks), then the newest
/// `/usr/lib/postgresql/*/bin`.
fn find_bin_dir() -> Result<PathBuf, String> {
    let complete = |d: &Path| d.join("initdb").is_file() && d.join("postgres").is_file();
    let mut looked = Vec::new();

    if let Some(dir) = std::env::var_os("DBSCOPE_PG_BINDIR") {
        let dir = PathBuf::from(dir);
        if complete(&dir) {
            return Ok(dir);
        }
        return Err(format!(
            "DBSCOPE_PG_BINDIR={} does not contain both `initdb` and `postgres`.\n{INSTALL_HINT}",
            dir.display()
        ));
    }

    if let Ok(out) = Command::new("pg_config")
        .arg("--bindir")
        .stderr(Stdio::null())
        .output()
    {
        if out.status.success() {
            let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            if complete(&dir) {
                return Ok(dir);
            }
            looked.push(format!("{} (pg_config --bindir)", dir.display()));
        }
    }

    if let Some(initdb) = find_in_path("initdb") {
        let real = fs::canonicalize(&initdb).unwrap_or_else(|_| initdb.clone());
        for dir in [real.parent(), initdb.parent()].into_iter().flatten() {
            if complete(dir) {
                return Ok(dir.to_path_buf());
            }
        }
        looked.push(format!("{} (PATH)", initdb.display()));
    } else {
        looked.push("PATH".to_string());
    }

    let mut versions: Vec<(Vec<u32>, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let version: Option<Vec<u32>> = name.split('.').map(|p| p.parse().ok()).collect();
            Some((version?, entry.path().join("bin")))
        })
        .collect();
    versions.sort();
    if let Some((_, dir)) = versions.iter().rev().find(|(_, dir)| complete(dir)) {
        return Ok(dir.clone());
    }
    looked.push("/usr/lib/postgresql/*/bin".to_string());

    Err(format!(
        "PostgreSQL server binaries (initdb, postgres) not found; looked in: {}.\n{INSTALL_HINT}",
        looked.join(", ")
    ))
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

fn effective_uid() -> Result<u32, String> {
    // /proc/self is owned by the process's effective uid.
    if let Ok(meta) = fs::metadata("/proc/self") {
        return Ok(meta.uid());
    }
    let out = Command::new("id")
        .arg("-u")
        .output()
        .map_err(|e| format!("cannot determine the current uid (`id -u`): {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|e| format!("cannot parse `id -u` output: {e}"))
}

/// `id -u postgres` / `id -g postgres`.
fn id_of(flag: &str) -> Option<u32> {
    let out = Command::new("id")
        .args([flag, "postgres"])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// Whether `pid` exists and is not a zombie (Linux `/proc`).
fn process_alive(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        // Format: `pid (comm) S ...`; comm may contain spaces and parens.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| state != 'Z' && state != 'X'),
        Err(_) => !Path::new("/proc/self").exists(), // no /proc: assume alive
    }
}

/// A port number nobody is using on TCP localhost (the server itself only
/// uses it to name its socket file).
pub(crate) fn pick_port() -> Result<u16, String> {
    if let Ok(listener) = std::net::TcpListener::bind(("127.0.0.1", 0)) {
        if let Ok(addr) = listener.local_addr() {
            return Ok(addr.port());
        }
    }
    let r = random_hex(2)?;
    let n = u16::from_str_radix(&r, 16).map_err(|e| e.to_string())?;
    Ok(20_000 + n % 40_000)
}

pub(crate) fn random_hex(bytes: usize) -> Result<String, String> {
    let mut buf = vec![0u8; bytes];
    fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .map_err(|e| format!("cannot read /dev/urandom: {e}"))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

fn tail(path: &Path, lines: usize) -> String {
    match fs::read_to_string(path) {
        Ok(text) => {
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

/// Percent-encodes everything except unreserved characters (and `/` if
/// `keep_slash`).
fn pct_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || (keep_slash && b == b'/') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A readable one-line description of a `postgres` error, with the server's
/// SQLSTATE, message, detail and hint when there are any.
pub fn describe(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut s = format!("{} {}: {}", db.severity(), db.code().code(), db.message());
        if let Some(d) = db.detail() {
            let _ = write!(s, " (detail: {d})");
        }
        if let Some(h) = db.hint() {
            let _ = write!(s, " (hint: {h})");
        }
        return s;
    }
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let _ = write!(s, ": {cause}");
        source = cause.source();
    }
    s
}
