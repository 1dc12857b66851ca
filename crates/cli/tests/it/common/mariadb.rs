//! A throwaway MariaDB server for integration tests, started as [`super::pg`] starts PostgreSQL:
//! `mariadb-install-db` into a fresh temp dir, then `mariadbd --no-defaults` on a Unix socket in
//! that dir (and 127.0.0.1 on a free port), as the `mysql` OS user when the tests run as root.
//! A user `dbscope` with a random password is created by `--init-file`, so password tests are
//! real. A `sh` wrapper whose stdin is a pipe only this process holds stops the server (SIGTERM)
//! and removes the dir when the test binary exits, however it exits. Start-up takes about 1 s.
#![allow(dead_code)]

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::pg::{pick_port, random_hex};

const WRAPPER: &str = r#"
base=$1
shift
"$@" </dev/null >>"$base/server.log" 2>&1 &
pid=$!
while read -r _line; do :; done
kill -TERM "$pid" 2>/dev/null
wait "$pid"
rm -rf "$base"
"#;

const INSTALL_HINT: &str = "the MariaDB tests need mariadb-install-db and mariadbd: \
apt-get install mariadb-server (scripts/test installs it)";

/// A running throwaway MariaDB server.
pub struct MariaDb {
    base_dir: PathBuf,
    socket: PathBuf,
    port: u16,
    password: String,
    /// `mariadbd`'s arguments, to start it again ([`MariaDb::restart`]).
    args: Vec<String>,
    /// One per wrapper started (the first, then one per restart): each stops its server and
    /// removes the dir when closed.
    _lifelines: Mutex<Vec<ChildStdin>>,
}

impl MariaDb {
    /// One server per test binary, started on first use.
    pub fn shared() -> &'static MariaDb {
        static SHARED: OnceLock<Result<MariaDb, String>> = OnceLock::new();
        match SHARED.get_or_init(MariaDb::start) {
            Ok(s) => s,
            Err(msg) => panic!("cannot start the test MariaDB server:\n{msg}"),
        }
    }

    /// A server of the caller's own (for tests that read the server's global counters or set
    /// global variables, which the shared server's parallel tests would disturb); stopped and
    /// removed when dropped.
    pub fn private() -> MariaDb {
        MariaDb::start().unwrap_or_else(|msg| panic!("cannot start a MariaDB server:\n{msg}"))
    }

    /// Restarts the server as an operator would: SIGTERM (a clean shutdown: clients get
    /// "server shutdown in progress" or lose their connection), wait for the process to end,
    /// start `mariadbd` again on the same data dir and socket, wait until it accepts
    /// connections. A new wrapper holds the new process, so it is stopped like the first.
    pub fn restart(&self) {
        let pid_file = self.root_query("SELECT @@pid_file");
        let pid = fs::read_to_string(pid_file.trim()).expect("pid file");
        let pid = pid.trim().to_string();
        let st = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(st.success(), "kill -TERM {pid}");
        let until = Instant::now() + Duration::from_secs(60);
        // Its parent (the first wrapper) reaps it only when the test binary exits: a zombie
        // has stopped.
        let running = || {
            fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| s.rsplit_once(") ").map(|(_, r)| !r.starts_with('Z')))
                .unwrap_or(false)
        };
        while running() {
            assert!(
                Instant::now() < until,
                "mariadbd {pid} did not stop in 60 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let lifeline = spawn_wrapper(&self.base_dir, &self.args).expect("start mariadbd again");
        self._lifelines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(lifeline);
        self.wait_ready()
            .expect("mariadbd accepts connections again");
    }

    /// Polls `SELECT 1` as `dbscope` until it answers (30 s at most).
    fn wait_ready(&self) -> Result<(), String> {
        let started = Instant::now();
        loop {
            let ok = Command::new("mariadb")
                .arg("--no-defaults")
                .arg(format!("--socket={}", self.socket.display()))
                .args(["-u", "dbscope", "-e", "SELECT 1"])
                .env("MYSQL_PWD", &self.password)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                eprintln!(
                    "mariadb harness: ready on {} in {:.1} s",
                    self.socket.display(),
                    started.elapsed().as_secs_f64()
                );
                return Ok(());
            }
            if started.elapsed() > Duration::from_secs(30) {
                let log = fs::read_to_string(self.base_dir.join("server.log")).unwrap_or_default();
                return Err(format!(
                    "mariadbd did not accept connections in 30 s:\n{log}"
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Runs `sql` as the server's root (over the socket, as the OS user root may).
    pub fn root_query(&self, sql: &str) -> String {
        let out = Command::new("mariadb")
            .arg("--no-defaults")
            .arg(format!("--socket={}", self.socket.display()))
            .args(["-u", "root", "-N", "-B", "-e", sql])
            .output()
            .expect("run mariadb");
        assert!(
            out.status.success(),
            "mariadb -u root -e {sql:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// `mysql://dbscope:PW@/db?socket=…`.
    pub fn uri(&self, db: &str) -> String {
        format!(
            "mysql://dbscope:{}@/{db}?socket={}",
            self.password,
            self.socket.display()
        )
    }
    pub fn password(&self) -> &str {
        &self.password
    }
    pub fn socket(&self) -> &Path {
        &self.socket
    }
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Runs `sql` with the `mariadb` client; returns its tab-separated output without headers.
    pub fn query(&self, db: &str, sql: &str) -> String {
        let out = Command::new("mariadb")
            .arg("--no-defaults")
            .arg(format!("--socket={}", self.socket.display()))
            .args(["-u", "dbscope", "-N", "-B", "-e", sql, db])
            .env("MYSQL_PWD", &self.password)
            .output()
            .expect("run mariadb");
        assert!(
            out.status.success(),
            "mariadb -e {sql:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A fresh database `prefix_N`.
    pub fn create_db(&self, prefix: &str) -> String {
        static N: AtomicU32 = AtomicU32::new(0);
        let db = format!("{prefix}_{}", N.fetch_add(1, Ordering::Relaxed));
        self.query("mysql", &format!("CREATE DATABASE {db}"));
        db
    }

    fn start() -> Result<MariaDb, String> {
        let root = fs::metadata("/proc/self")
            .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
            .unwrap_or(false);
        let base_dir = PathBuf::from("/tmp").join(format!(
            "dbscope-my-{}-{}",
            std::process::id(),
            random_hex(4)?
        ));
        fs::create_dir(&base_dir).map_err(|e| format!("{}: {e}", base_dir.display()))?;
        // A tmpdir of its own: a server starting removes the `#sql*` temp files in its tmpdir,
        // which broke another server's mariadb-install-db running at the same time in /tmp.
        let tmp = base_dir.join("tmp");
        fs::create_dir(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
        let user_args: Vec<String> = if root {
            let st = Command::new("chown")
                .args(["-R", "mysql:"])
                .arg(&base_dir)
                .status()
                .map_err(|e| e.to_string())?;
            if !st.success() {
                return Err(format!(
                    "chown mysql: {} failed; {INSTALL_HINT}",
                    base_dir.display()
                ));
            }
            vec!["--user=mysql".into()]
        } else {
            Vec::new()
        };
        let data = base_dir.join("data");
        let out = Command::new("mariadb-install-db")
            .arg("--no-defaults")
            .args(&user_args)
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .args(["--skip-test-db", "--auth-root-authentication-method=socket"])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run mariadb-install-db: {e}\n{INSTALL_HINT}"))?;
        if !out.status.success() {
            return Err(format!(
                "mariadb-install-db failed: {}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let password = random_hex(12)?;
        let init = base_dir.join("init.sql");
        fs::write(
            &init,
            format!(
                "CREATE USER IF NOT EXISTS 'dbscope'@'localhost' IDENTIFIED BY '{password}';\n\
                 GRANT ALL ON *.* TO 'dbscope'@'localhost' WITH GRANT OPTION;\n\
                 CREATE USER IF NOT EXISTS 'dbscope'@'127.0.0.1' IDENTIFIED BY '{password}';\n\
                 GRANT ALL ON *.* TO 'dbscope'@'127.0.0.1' WITH GRANT OPTION;\n"
            ),
        )
        .map_err(|e| e.to_string())?;
        let socket = base_dir.join("sock");
        let port = pick_port()?;
        let args: Vec<String> = ["--no-defaults".to_string()]
            .into_iter()
            .chain(user_args.iter().cloned())
            .chain([
                format!("--datadir={}", data.display()),
                format!("--tmpdir={}", tmp.display()),
                format!("--socket={}", socket.display()),
                format!("--port={port}"),
                "--bind-address=127.0.0.1".into(),
                format!("--init-file={}", init.display()),
                format!("--log-error={}", base_dir.join("server.log").display()),
                "--innodb-buffer-pool-size=64M".into(),
                "--performance-schema=ON".into(),
            ])
            .collect();
        let lifeline = spawn_wrapper(&base_dir, &args)?;
        let server = MariaDb {
            base_dir,
            socket,
            port,
            password,
            args,
            _lifelines: Mutex::new(vec![lifeline]),
        };
        server.wait_ready()?;
        Ok(server)
    }
}

/// Starts `mariadbd ARGS` under the wrapper (stopped, and `base` removed, when the returned
/// pipe closes).
fn spawn_wrapper(base: &Path, args: &[String]) -> Result<ChildStdin, String> {
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(WRAPPER)
        .arg("dbscope-mariadb-wrapper")
        .arg(base)
        .arg("mariadbd")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start mariadbd: {e}\n{INSTALL_HINT}"))?;
    Ok(child.stdin.take().expect("piped stdin"))
}
