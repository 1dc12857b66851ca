//! `dbscope capture proxy|info` against the real test PostgreSQL, driven by real clients that no
//! one here wrote: `pgbench` and `psql`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

use crate::cli::{dbscope, fails, ok, run as run_dbscope, s, tempdir};
use crate::common::pg::PgCluster;

/// A running `dbscope capture proxy`.
pub(crate) struct Proxy {
    child: Child,
    pub(crate) port: u16,
    out: PathBuf,
    /// The line saying where clients connect.
    line: String,
}

/// The upstream of the test cluster: its socket, no user or password (the clients bring theirs).
fn upstream(pg: &PgCluster) -> String {
    format!(
        "postgres:host={} port={}",
        pg.socket_dir().display(),
        pg.port()
    )
}

pub(crate) fn start_proxy(dir: &Path, pg: &PgCluster) -> Proxy {
    spawn_proxy(dir, pg, "127.0.0.1:0", &[])
}

/// `dbscope capture proxy --listen LISTEN … EXTRA…`, once it says where clients connect.
pub(crate) fn spawn_proxy(dir: &Path, pg: &PgCluster, listen: &str, extra: &[&str]) -> Proxy {
    let out = dir.join("cap");
    let mut child = dbscope(dir)
        .args(["capture", "proxy", "--listen", listen])
        .args(["--upstream", &upstream(pg), "--out", s(&out)])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dbscope starts");
    // "dbscope: capturing: clients connect to 127.0.0.1:PORT (…" (or the socket's path)
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let at = line
        .split("clients connect to ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap_or_else(|| panic!("no listening line: {line:?}"));
    if !listen.contains('/') {
        assert!(at.starts_with("127.0.0.1:"), "{line}");
        // How psql reaches it.
        let port = at.strip_prefix("127.0.0.1:").unwrap();
        assert!(
            line.contains(&format!("(psql -h 127.0.0.1 -p {port}; ")),
            "{line}"
        );
    } else if Path::new(listen).is_dir() {
        // A directory: the socket is where libpq looks for it at port 6543.
        let sock = Path::new(listen).join(".s.PGSQL.6543");
        assert_eq!(at, s(&sock), "{line}");
        assert!(
            line.contains(&format!("(psql -h {listen} -p 6543; ")),
            "{line}"
        );
    } else {
        assert_eq!(at, listen, "{line}");
    }
    let port = at
        .strip_prefix("127.0.0.1:")
        .map_or(0, |p| p.parse().unwrap());
    Proxy {
        child,
        port,
        out,
        line,
    }
}

impl Proxy {
    /// Ctrl-C, as a user stops a capture: everything recorded is kept, exit 0.
    pub(crate) fn stop(mut self) -> (Output, PathBuf) {
        // SAFETY: kill(2) on our own child's pid.
        #[allow(unsafe_code)]
        let r = unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        assert_eq!(r, 0);
        let mut stdout = String::new();
        if let Some(mut o) = self.child.stdout.take() {
            use std::io::Read;
            o.read_to_string(&mut stdout).unwrap();
        }
        let status = self.child.wait().unwrap();
        let out = Output {
            status,
            stdout: stdout.into_bytes(),
            stderr: Vec::new(),
        };
        assert!(
            out.status.success(),
            "capture proxy ended with {:?}: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout)
        );
        (out, self.out.clone())
    }
}

/// A test that fails before stopping its proxy does not leave it running.
impl Drop for Proxy {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Every call of a capture, as JSON.
pub(crate) fn calls(cap: &Path) -> Vec<Value> {
    std::fs::read_to_string(cap.join("capture-calls.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "call")
        .collect()
}

/// `pgbench -i -s 1` on `db`, straight to the server.
pub(crate) fn pgbench_init(pg: &PgCluster, db: &str) {
    let sock = pg.socket_dir().display().to_string();
    let port = pg.port().to_string();
    pg.pgbench(&["-i", "-s", "1", "-q", "-h", &sock, "-p", &port, db]);
}

/// pgbench's TPC-B-like script through the proxy: `clients` clients (2 threads) for `secs`
/// seconds with protocol `mode`; pgbench's output.
pub(crate) fn pgbench_through(
    proxy: &Proxy,
    pg: &PgCluster,
    clients: u32,
    secs: u32,
    mode: &str,
    db: &str,
) -> String {
    let (port, c, t) = (
        proxy.port.to_string(),
        clients.to_string(),
        secs.to_string(),
    );
    pg.pgbench(&[
        "-h",
        "127.0.0.1",
        "-p",
        &port,
        "-c",
        &c,
        "-j",
        "2",
        "-T",
        &t,
        "-M",
        mode,
        db,
    ])
}

/// pgbench's own count of transactions.
pub(crate) fn transactions(out: &str) -> u64 {
    out.lines()
        .find_map(|l| l.strip_prefix("number of transactions actually processed: "))
        .and_then(|n| n.split('/').next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no transaction count in {out}"))
}

/// pgbench through the proxy, simple and extended protocol: every transaction is captured, with
/// the values it sent, exactly (the captured deltas add up to what the history table holds), and
/// the clients see nothing different (no failed transaction).
#[test]
fn pgbench_through_the_proxy_is_captured_whole() {
    let pg = PgCluster::shared();
    for mode in ["simple", "extended"] {
        let d = tempdir();
        let db = pg.create_db(&format!("cap_pgbench_{mode}"));
        pgbench_init(pg, &db);
        let proxy = start_proxy(d.path(), pg);
        let out = pgbench_through(&proxy, pg, 4, 2, mode, &db);
        let n = transactions(&out);
        assert!(n > 50, "{out}");
        assert!(out.contains("number of failed transactions: 0"), "{out}");
        let (stopped, cap) = proxy.stop();
        let calls = calls(&cap);
        // The closing line counts every call, in thousands as every other count is printed.
        let said = String::from_utf8_lossy(&stopped.stdout);
        let grouped = dbscope_analysis::text::thousands(calls.len() as u64);
        assert!(
            said.contains(&format!("captured {grouped} calls (0 errors)")),
            "{said}"
        );
        let by = |prefix: &str| -> Vec<&Value> {
            calls
                .iter()
                .filter(|c| c["sql"].as_str().unwrap().starts_with(prefix))
                .collect()
        };
        assert_eq!(by("END").len() as u64, n, "{mode}: one END per transaction");
        assert_eq!(by("UPDATE pgbench_accounts").len() as u64, n, "{mode}");
        let inserts = by("INSERT INTO pgbench_history");
        assert_eq!(inserts.len() as u64, n, "{mode}");
        assert!(
            calls.iter().all(|c| c["error"].is_null()),
            "{mode}: no errors"
        );
        // The deltas as captured: a literal in the text (simple) or the 4th bound value.
        let delta = |c: &Value| -> i64 {
            let v = match mode {
                "simple" => {
                    let sql = c["sql"].as_str().unwrap();
                    let values = sql.split("VALUES (").nth(1).unwrap();
                    values.split(',').nth(3).unwrap().trim().to_string()
                }
                _ => c["params"][3].as_str().unwrap().to_string(),
            };
            v.parse().unwrap_or_else(|_| panic!("delta {v:?} in {c}"))
        };
        let captured: i64 = inserts.iter().map(|c| delta(c)).sum();
        let stored: i64 = pg
            .query(&db, "SELECT coalesce(sum(delta), 0) FROM pgbench_history")
            .parse()
            .unwrap();
        assert_eq!(
            captured, stored,
            "{mode}: captured values are what was stored"
        );
        // Each session's calls are in order, and the capture reads as a run.
        let info: Value =
            serde_json::from_str(&ok(d.path(), &["capture", "info", s(&cap), "--json"])).unwrap();
        // The four clients and pgbench's own connection for its setup (vacuum, truncate).
        assert_eq!(info["sessions"], 5, "{info}");
        assert_eq!(info["errors"], 0);
        assert_eq!(info["unknown_statements"], 0);
        // Seven statements a transaction; pgbench's own setup queries go as simple queries.
        let counted = info["by_protocol"][mode].as_u64().unwrap();
        match mode {
            "extended" => assert_eq!(counted, 7 * n, "{info}"),
            _ => assert!(counted >= 7 * n, "{info}"),
        }
        let report = ok(d.path(), &["report", s(&cap)]);
        assert!(report.contains("UPDATE pgbench_accounts SET"), "{report}");
        let manifest = std::fs::read_to_string(cap.join("manifest.json")).unwrap();
        assert!(
            !manifest.contains(pg.password()),
            "no password in the capture"
        );
    }
}

/// psql through the proxy: a multi-statement string is one call with two tags, an error inside
/// a transaction leaves it failed (`E`) as the server said, and `\copy` is recorded as a COPY
/// whose data is not captured — and `capture info` says so.
#[test]
fn psql_through_the_proxy() {
    let pg = PgCluster::shared();
    let d = tempdir();
    let db = pg.create_db("cap_psql");
    pg.query(&db, "CREATE TABLE t (x int)");
    let proxy = start_proxy(d.path(), pg);
    let script = "SELECT 1 AS a\\; SELECT 2 AS b;\n\
                  BEGIN;\nINSERT INTO t VALUES (1);\nSELECT 1/0;\nCOMMIT;\n\
                  \\copy t from stdin\n7\n8\n\\.\n";
    let mut child = Command::new(pg.psql())
        .args([
            "-X",
            "-h",
            "127.0.0.1",
            "-p",
            &proxy.port.to_string(),
            "-U",
            pg.user(),
            "-d",
            &db,
        ])
        .env("PGPASSWORD", pg.password())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("division by zero"), "{stderr}");
    let (_, cap) = proxy.stop();
    assert_eq!(
        pg.query(&db, "SELECT string_agg(x::text, ',' ORDER BY x) FROM t"),
        "7,8"
    );
    let calls = calls(&cap);
    let find = |sql: &str| {
        calls
            .iter()
            .find(|c| c["sql"].as_str().unwrap().starts_with(sql))
            .unwrap_or_else(|| panic!("no call {sql:?} in {calls:?}"))
    };
    let multi = find("SELECT 1 AS a; SELECT 2 AS b");
    assert_eq!(multi["tags"], serde_json::json!(["SELECT 1", "SELECT 1"]));
    assert_eq!(multi["rows"], 2);
    let div = find("SELECT 1/0");
    assert_eq!(div["error"][0], "22012");
    assert_eq!(div["txn"], "E");
    assert_eq!(find("COMMIT")["tags"], serde_json::json!(["ROLLBACK"]));
    let copy = find("COPY  t FROM STDIN");
    assert_eq!(copy["copy"], "in");
    assert_eq!(copy["rows"], 2);
    let text = ok(d.path(), &["capture", "info", s(&cap)]);
    assert!(
        text.contains("1  COPY calls: their data is not captured"),
        "{text}"
    );
    assert!(text.contains("errors    1"), "{text}");
}

/// Issue 27 item 8: a capture holds SQL and values, so its directory is its owner's only (0700)
/// and its calls file 0600; a role's password and a dollar-quoted literal reach no file.
#[test]
fn issue_27_a_capture_is_private_and_keeps_no_password() {
    let pg = PgCluster::shared();
    let d = tempdir();
    let db = pg.create_db("cap_private");
    pg.query(&db, "DROP ROLE IF EXISTS dbscope_pw_victim");
    pg.query(&db, "CREATE ROLE dbscope_pw_victim");
    let proxy = start_proxy(d.path(), pg);
    let script = "ALTER USER dbscope_pw_victim PASSWORD 'NewSecretPw42';\n\
                  select $$OtherSecretPw43$$;\n";
    let out = Command::new(pg.psql())
        .args(["-X", "-h", "127.0.0.1", "-p", &proxy.port.to_string()])
        .args(["-U", pg.user(), "-d", &db, "-c", script])
        .env("PGPASSWORD", pg.password())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_, cap) = proxy.stop();
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&cap), 0o700);
    assert_eq!(mode(&cap.join("capture-calls.jsonl")), 0o600);
    // The role's password is in no file; a literal's text is kept in the (private) calls file
    // for replay, never in what is shown (statement names are fingerprints).
    let shown =
        ok(d.path(), &["capture", "info", s(&cap)]) + &ok(d.path(), &["report", s(&cap), "--json"]);
    let mut everything = shown.clone();
    for f in std::fs::read_dir(&cap).unwrap() {
        everything.push_str(&String::from_utf8_lossy(
            &std::fs::read(f.unwrap().path()).unwrap(),
        ));
    }
    assert!(
        !everything.contains("NewSecretPw42"),
        "a role's password was written down"
    );
    assert!(
        !shown.contains("OtherSecretPw43"),
        "a literal was shown: {shown}"
    );
    let calls = calls(&cap);
    assert!(
        calls.iter().any(|c| c["sql"]
            .as_str()
            .unwrap()
            .contains("PASSWORD 'dbscope:redacted'")),
        "{calls:?}"
    );
    // Replay cannot re-send a password it never kept: that call is skipped, by its reason.
    let run = d.path().join("replayed");
    let target = pg.uri(&db);
    ok(
        d.path(),
        &[
            "replay",
            s(&cap),
            "--target",
            &target,
            "--out",
            s(&run),
            "-q",
        ],
    );
    let r: Value = serde_json::from_str(&ok(d.path(), &["report", s(&run), "--json"])).unwrap();
    assert_eq!(r["replay"]["not_replayed"], 1, "{}", r["replay"]);
    let text = ok(d.path(), &["report", s(&run)]);
    assert!(text.contains("password redacted in the capture"), "{text}");
    // A replay's errors are divergences, not a limit that stops it: no "max errors" (it said
    // "max errors 0", which would mean the first error stops the run).
    let runner = text.lines().find(|l| l.starts_with("runner")).unwrap();
    assert!(
        runner.contains("open loop") && !runner.contains("max errors"),
        "{runner}"
    );
    pg.query(&db, "DROP ROLE dbscope_pw_victim");
}

/// The proxy on a Unix socket (what libpq reaches with host=DIR port=N), with big messages both
/// ways at once: a 4 MB COPY in and 4 MB results out, from two sessions, through the one event
/// loop. The data arrives whole, every call is recorded, the socket file is gone after the stop,
/// and a second proxy on a path that exists is refused with the reason.
/// Issue 34: the proxy's Unix socket is 0777 as PostgreSQL's is (the umask made it 0755: every
/// other local user was refused), or what `--socket-mode` says; the option is refused for TCP.
#[test]
fn issue_34_the_unix_socket_takes_postgres_permissions_or_socket_mode() {
    use std::os::unix::fs::PermissionsExt;
    let pg = PgCluster::shared();
    let d = tempdir();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let a = d.path().join(".s.PGSQL.6601");
    let proxy = spawn_proxy(d.path(), pg, s(&a), &[]);
    assert_eq!(mode(&a), 0o777, "default");
    proxy.stop();
    let b = d.path().join(".s.PGSQL.6602");
    let sub = d.path().join("b");
    std::fs::create_dir(&sub).unwrap();
    let proxy = spawn_proxy(&sub, pg, s(&b), &["--socket-mode", "0770"]);
    assert_eq!(mode(&b), 0o770, "--socket-mode 0770");
    proxy.stop();
    // A name libpq cannot reach is served, and the line says so and what it looks for.
    let odd = d.path().join("proxy.sock");
    let sub = d.path().join("c");
    std::fs::create_dir(&sub).unwrap();
    let proxy = spawn_proxy(&sub, pg, s(&odd), &[]);
    assert!(
        proxy.line.contains("libpq clients cannot reach this name")
            && proxy.line.contains("DIR/.s.PGSQL.PORT"),
        "{}",
        proxy.line
    );
    assert_eq!(mode(&odd), 0o777);
    proxy.stop();
    let up = upstream(pg);
    let out = s(&d.path().join("cap3")).to_string();
    fails(
        d.path(),
        &[
            "capture",
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            &up,
            "--out",
            &out,
            "--socket-mode",
            "0770",
        ],
        2,
        &["--socket-mode applies to a Unix socket only"],
    );
    let bad = run_dbscope(
        d.path(),
        &[
            "capture",
            "proxy",
            "--listen",
            s(&a),
            "--upstream",
            &up,
            "--out",
            &out,
            "--socket-mode",
            "999",
        ],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("in octal, 0 to 0777"));
}

#[test]
fn unix_socket_proxy_carries_big_messages_both_ways() {
    let pg = PgCluster::shared();
    let d = tempdir();
    let db = pg.create_db("cap_unix");
    pg.query(&db, "CREATE TABLE big (n int, pad text)");
    let sock_dir = d.path().join("sock");
    std::fs::create_dir(&sock_dir).unwrap();
    let sock = sock_dir.join(".s.PGSQL.6543");
    // The directory is given: the socket is made where libpq looks for it (spawn_proxy checks).
    let proxy = spawn_proxy(d.path(), pg, s(&sock_dir), &["--threads", "2"]);
    assert!(sock.exists());
    fails(
        d.path(),
        &[
            "capture",
            "proxy",
            "--listen",
            s(&sock_dir),
            "--upstream",
            &upstream(pg),
            "--out",
            s(&d.path().join("cap2")),
        ],
        2,
        &["already exists", "remove it if nothing listens"],
    );
    let copy_in: String = (0..40_000)
        .map(|i| format!("{i}\t{}\n", "y".repeat(100)))
        .collect();
    let psql = |stdin: String| {
        let mut c = Command::new(pg.psql())
            .args([
                "-X",
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                s(&sock_dir),
                "-p",
                "6543",
            ])
            .args(["-U", pg.user(), "-d", &db])
            .env("PGPASSWORD", pg.password())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = c.stdin.take().unwrap();
        std::thread::spawn(move || {
            use std::io::Write;
            input.write_all(stdin.as_bytes()).unwrap();
        });
        c
    };
    let loader = psql(format!("\\copy big from stdin\n{copy_in}\\.\n"));
    let reader =
        psql("SELECT length(repeat('x', 4000000)) AS a, repeat('z', 4000000) AS b;\n".into());
    let (loaded, read) = (
        loader.wait_with_output().unwrap(),
        reader.wait_with_output().unwrap(),
    );
    assert!(
        loaded.status.success(),
        "{}",
        String::from_utf8_lossy(&loaded.stderr)
    );
    assert!(
        read.status.success(),
        "{}",
        String::from_utf8_lossy(&read.stderr)
    );
    let text = String::from_utf8_lossy(&read.stdout);
    assert!(
        text.contains("4000000 | zzzz"),
        "{}",
        &text[..200.min(text.len())]
    );
    assert!(text.contains(&"z".repeat(4_000_000)));
    assert_eq!(
        pg.query(&db, "SELECT count(*) || ' ' || sum(length(pad)) FROM big"),
        "40000 4000000"
    );
    let (_, out) = proxy.stop();
    assert!(!sock.exists(), "the socket file is removed at the stop");
    let calls = calls(&out);
    let copy = calls
        .iter()
        .find(|c| c["copy"] == "in")
        .unwrap_or_else(|| panic!("no COPY call in {calls:?}"));
    assert_eq!(copy["rows"], 40_000);
    let select = calls
        .iter()
        .find(|c| {
            c["sql"]
                .as_str()
                .unwrap()
                .starts_with("SELECT length(repeat")
        })
        .unwrap_or_else(|| panic!("no SELECT call in {calls:?}"));
    assert_eq!(select["rows"], 1);
    assert!(select.get("error").is_none_or(|e| e.is_null()), "{select}");
}

/// A wrong password through the proxy: the client sees the server's own error, the capture keeps
/// the refused session. An unreachable upstream is refused before anything is recorded.
#[test]
fn refused_sessions_and_unreachable_upstreams() {
    let pg = PgCluster::shared();
    let d = tempdir();
    let proxy = start_proxy(d.path(), pg);
    let out = Command::new(pg.psql())
        .args([
            "-X",
            "-w",
            "-h",
            "127.0.0.1",
            "-p",
            &proxy.port.to_string(),
            "-U",
            pg.user(),
            "-d",
            "postgres",
            "-c",
            "select 1",
        ])
        .env("PGPASSWORD", "not-the-password")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("password authentication failed"),
        "{stderr}"
    );
    let (_, cap) = proxy.stop();
    let info: Value =
        serde_json::from_str(&ok(d.path(), &["capture", "info", s(&cap), "--json"])).unwrap();
    assert_eq!(info["sessions"], 1);
    assert!(
        info["refused"][0].as_str().unwrap().contains("28P01"),
        "{info}"
    );
    let text = std::fs::read_to_string(cap.join("capture-calls.jsonl")).unwrap();
    assert!(!text.contains("not-the-password"));

    let out = d.path().join("never");
    fails(
        d.path(),
        &[
            "capture",
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "postgres://u:pw@127.0.0.1:1/db",
            "--out",
            s(&out),
        ],
        4,
        &[
            "upstream postgres://u:***@127.0.0.1:1/db is not reachable",
            "port 1 failed",
        ],
    );
    assert!(!out.exists(), "nothing recorded");
    fails(d.path(), &["capture", "info", s(&out)], 3, &["never"]);
}

/// Issue 27: with few file descriptors (`ulimit -n 64`, both limits) and 40 clients, the proxy
/// refuses the clients it has no descriptor for and keeps serving the others, and says so.
#[test]
fn issue_27_out_of_descriptors_the_proxy_refuses_new_clients_and_serves_the_rest() {
    let pg = PgCluster::shared();
    let d = tempdir();
    let out = d.path().join("cap");
    let mut child = Command::new("sh")
        .args(["-c", "ulimit -n 64 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_dbscope"))
        .args(["capture", "proxy", "--listen", "127.0.0.1:0"])
        .args(["--upstream", &upstream(pg), "--out", s(&out)])
        .current_dir(d.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let port: u16 = line
        .split("clients connect to 127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no listening line: {line:?}"));
    let proxy = Proxy {
        child,
        port,
        out,
        line,
    };
    let uri = format!(
        "postgres://{}:{}@127.0.0.1:{port}/postgres?connect_timeout=10",
        pg.user(),
        pg.password()
    );
    // A proxy that stopped answering would hang the clients: end it after two minutes, so the
    // test fails instead.
    let pid = proxy.child.id().to_string();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watchdog = {
        let done = std::sync::Arc::clone(&done);
        std::thread::spawn(move || {
            let start = std::time::Instant::now();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                if start.elapsed() > std::time::Duration::from_secs(120) {
                    let _ = Command::new("kill").args(["-9", &pid]).status();
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        })
    };
    let mut served = Vec::new();
    let mut refused = 0;
    for _ in 0..40 {
        match postgres::Client::connect(&uri, postgres::NoTls) {
            Ok(c) => served.push(c),
            Err(e) => {
                let why = e
                    .as_db_error()
                    .map(|d| (d.code().code(), d.message().to_string()));
                let (code, message) =
                    why.unwrap_or_else(|| panic!("not refused by the proxy: {e}"));
                assert_eq!(code, "53300", "{message}");
                assert!(message.contains("too many clients"), "{message}");
                refused += 1;
            }
        }
    }
    assert!(
        refused > 0,
        "64 descriptors cannot hold 40 clients and their upstreams"
    );
    assert!(served.len() >= 10, "{} served", served.len());
    // Those connected are served after the refusals.
    for c in &mut served {
        let v: i32 = c.query_one("select 41 + 1", &[]).unwrap().get(0);
        assert_eq!(v, 42);
    }
    drop(served);
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    watchdog.join().unwrap();
    let (_, cap) = proxy.stop();
    let info: Value =
        serde_json::from_str(&ok(d.path(), &["capture", "info", s(&cap), "--json"])).unwrap();
    assert_eq!(info["proxy_refused"], refused, "{info}");
    let text = ok(d.path(), &["capture", "info", s(&cap)]);
    assert!(
        text.contains(&format!("{refused} refused by the proxy")),
        "{text}"
    );
    let m = crate::cli::manifest(&cap);
    assert_eq!(m["outcome"], "complete", "{m}");
    assert_eq!(m["workload"]["params"]["fd_limit"], 64, "{m}");
}

/// Issue 27: an upstream that is the proxy's own listening address is refused at start.
#[test]
fn issue_27_an_upstream_equal_to_the_listen_address_is_refused() {
    let d = tempdir();
    let sock = d.path().join(".s.PGSQL.7777");
    fails(
        d.path(),
        &[
            "capture",
            "proxy",
            "--listen",
            s(&sock),
            "--upstream",
            &format!("postgres:host={} port=7777", s(d.path())),
            "--out",
            "cap",
        ],
        2,
        &["is the proxy's own --listen address"],
    );
    assert!(!d.path().join("cap").exists());
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    fails(
        d.path(),
        &[
            "capture",
            "proxy",
            "--listen",
            &format!("0.0.0.0:{port}"),
            "--upstream",
            &format!("postgres://u@localhost:{port}/db"),
            "--out",
            "cap",
        ],
        2,
        &["is the proxy's own --listen address"],
    );
}

/// The whole loop: a restore point, pgbench captured through the proxy, the database reset to
/// the restore point, the capture replayed with its timing (and at full speed): every call is
/// replayed, none diverges, and the tables end as the captured run left them (pgbench's balances
/// and history are determined by the sequence of updates, which the commit order keeps).
#[test]
fn capture_reset_replay_gives_the_same_database() {
    let pg = PgCluster::shared();
    let d = tempdir();
    let db = pg.create_db("cap_replay");
    pgbench_init(pg, &db);
    let target = pg.uri(&db);
    let rp = format!("before_{}", std::process::id());
    ok(
        d.path(),
        &["restore-point", "create", &rp, "--target", &target],
    );
    let listed = ok(d.path(), &["restore-point", "list", "--target", &target]);
    assert!(listed.contains(&rp) && listed.contains(&db), "{listed}");
    // The simple protocol first (replayed at its timing), then the extended one (at its timing
    // and at full speed).
    let proxy = start_proxy(d.path(), pg);
    let out = pgbench_through(&proxy, pg, 4, 2, "simple", &db);
    let simple_n = transactions(&out);
    let (_, simple_cap) = proxy.stop();
    std::fs::rename(&simple_cap, d.path().join("cap-simple")).unwrap();
    let simple_cap = d.path().join("cap-simple");
    let simple_state = pg.query(
        &db,
        "SELECT count(*) || ' ' || sum(delta) FROM pgbench_history",
    );
    ok(
        d.path(),
        &["restore-point", "reset", &rp, "--target", &target],
    );
    let run = d.path().join("replay-simple");
    ok(
        d.path(),
        &[
            "replay",
            s(&simple_cap),
            "--target",
            &target,
            "--restore",
            &rp,
            "--out",
            s(&run),
            "-q",
        ],
    );
    assert_eq!(
        pg.query(
            &db,
            "SELECT count(*) || ' ' || sum(delta) FROM pgbench_history"
        ),
        simple_state,
        "simple protocol: the replay leaves the captured history ({simple_n} transactions)"
    );
    let r: Value = serde_json::from_str(&ok(d.path(), &["report", s(&run), "--json"])).unwrap();
    assert_eq!(r["replay"]["diverged"], 0, "{}", r["replay"]);
    assert_eq!(r["replay"]["replayed"], calls(&simple_cap).len() as u64);
    ok(
        d.path(),
        &["restore-point", "reset", &rp, "--target", &target],
    );

    let proxy = start_proxy(d.path(), pg);
    let out = pgbench_through(&proxy, pg, 4, 2, "extended", &db);
    let n = transactions(&out);
    let (_, cap) = proxy.stop();
    let state = || {
        pg.query(
            &db,
            "SELECT (SELECT sum(abalance) FROM pgbench_accounts) || ' ' || \
             (SELECT sum(bbalance) FROM pgbench_branches) || ' ' || \
             (SELECT count(*) || ' ' || coalesce(sum(delta), 0) FROM pgbench_history)",
        )
    };
    let captured = state();
    let fields: Vec<&str> = captured.split(' ').collect();
    assert_eq!(
        fields[2],
        n.to_string(),
        "one history row per transaction: {captured}"
    );
    let calls = calls(&cap).len();
    // The second replay runs on a changed system (synchronous_commit off for its connections):
    // both replays record their target's settings, and `compare` says what changed.
    let changed = format!("{target}&options=-c%20synchronous_commit%3Doff");
    for (speed, name, to) in [("1", "replay1", &target), ("max", "replaymax", &changed)] {
        let run = d.path().join(name);
        ok(
            d.path(),
            &[
                "replay",
                s(&cap),
                "--target",
                to,
                "--restore",
                &rp,
                "--speed",
                speed,
                "--sync-slack",
                "3ms",
                "--out",
                s(&run),
                "-q",
            ],
        );
        assert_eq!(
            state(),
            captured,
            "speed {speed}: the replay leaves the captured state"
        );
        let r: Value = serde_json::from_str(&ok(d.path(), &["report", s(&run), "--json"])).unwrap();
        let replay = &r["replay"];
        assert_eq!(replay["replayed"], calls as u64, "{replay}");
        assert_eq!(replay["diverged"], 0, "{replay}");
        assert_eq!(replay["not_replayed"], 0, "{replay}");
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap())
                .unwrap();
        assert_eq!(manifest["workload"]["params"]["sync_slack_us"], 3000);
        if speed == "1" {
            // The lag of the calls the commit order did not hold is a part of all the lags.
            let (free, all) = (&replay["free_lag_max_us"], &replay["lag_max_us"]);
            assert!(free.as_f64().unwrap() <= all.as_f64().unwrap(), "{replay}");
            assert!(
                replay["sync_waits"].as_u64().unwrap() < calls as u64,
                "{replay}"
            );
        }
        // The replay and the capture compare statement by statement.
        let cmp = ok(d.path(), &["compare", s(&cap), s(&run)]);
        assert!(cmp.contains("UPDATE pgbench_accounts"), "{cmp}");
        let t = crate::cli::pg_target(&manifest);
        let sync = if speed == "1" { "on" } else { "off" };
        assert_eq!(t["settings_effective"]["synchronous_commit"], sync, "{t}");
    }
    let cmp = ok(
        d.path(),
        &[
            "compare",
            s(&d.path().join("replay1")),
            s(&d.path().join("replaymax")),
        ],
    );
    let line = cmp
        .lines()
        .find(|l| l.contains("settings_effective.synchronous_commit"))
        .unwrap_or_else(|| panic!("the changed setting is not shown:\n{cmp}"));
    assert!(line.contains("A: on") && line.contains("B: off"), "{line}");
    // A target without the captured tables is refused before anything runs, naming them.
    let empty = pg.create_db("cap_replay_empty");
    let out = d.path().join("never");
    fails(
        d.path(),
        &[
            "replay",
            s(&cap),
            "--target",
            &pg.uri(&empty),
            "--out",
            s(&out),
        ],
        2,
        &["lacks tables the capture uses", "pgbench_"],
    );
    assert!(!out.exists());
    fails(
        d.path(),
        &[
            "restore-point",
            "reset",
            "no_such_point",
            "--target",
            &target,
        ],
        2,
        &["no restore point \"no_such_point\""],
    );
    ok(
        d.path(),
        &["restore-point", "drop", &rp, "--target", &target],
    );
}

/// `kill -9` of the proxy while five pgbench sessions run through it: `capture info` says the
/// capture was killed and is incomplete, counts the five sessions from their calls (none wrote its
/// session line, which is written when a session ends) beside pgbench's setup session (ended,
/// with its line), and does not call it captured whole.
#[test]
fn capture_info_on_a_killed_proxy_says_killed_and_counts_every_session() {
    let pg = PgCluster::shared();
    let d = tempdir();
    let db = pg.create_db("cap_killed");
    pgbench_init(pg, &db);
    let mut proxy = start_proxy(d.path(), pg);
    let bench = Command::new(pg.bin_dir().join("pgbench"))
        .args(["-h", "127.0.0.1", "-p", &proxy.port.to_string()])
        .args(["-c", "5", "-j", "1", "-T", "20", "-M", "extended", &db])
        .env("PGPASSWORD", pg.password())
        .env("PGUSER", pg.user())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Calls written (every 200 ms) by all five sessions, then SIGKILL.
    let cap = proxy.out.clone();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(cap.join("capture-calls.jsonl")).unwrap_or_default();
        if (0..6).all(|i| text.contains(&format!("\"session\":{i},"))) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not all sessions captured"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    proxy.child.kill().unwrap();
    proxy.child.wait().unwrap();
    let mut bench = bench;
    let _ = bench.wait();
    let info: Value =
        serde_json::from_str(&ok(d.path(), &["capture", "info", s(&cap), "--json"])).unwrap();
    assert_eq!(info["outcome"], "running", "{info}");
    assert_eq!(info["killed"], true, "{info}");
    assert_eq!(info["sessions"], 6, "{info}");
    assert_eq!(info["sessions_without_end"], 5, "{info}");
    let text = ok(d.path(), &["capture", "info", s(&cap)]);
    assert!(text.contains("(killed: incomplete)"), "{text}");
    assert!(
        text.contains("sessions  6 (5 with no end recorded)"),
        "{text}"
    );
    assert!(text.contains("the proxy was killed"), "{text}");
    assert!(!text.contains("every call was captured whole"), "{text}");
}

/// `psql -f` of `script` through a capture proxy (each statement a call): the capture.
fn capture_script(dir: &Path, pg: &PgCluster, db: &str, script: &str) -> PathBuf {
    let proxy = start_proxy(dir, pg);
    let file = dir.join("script.sql");
    std::fs::write(&file, script).unwrap();
    let out = Command::new(pg.psql())
        .args(["-X", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1"])
        .args(["-p", &proxy.port.to_string(), "-U", pg.user(), "-d", db])
        .args(["-f", s(&file)])
        .env("PGPASSWORD", pg.password())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    proxy.stop().1
}

/// Issue 34: replay's existence check prepares only what `PREPARE` takes, so a captured
/// TRUNCATE leaves no syntax error in the server log; the run records its mode; the divergence
/// examples of the report are valid JSON however long the captured error was.
#[test]
fn issue_34_replay_of_a_truncate_logs_no_error_and_its_examples_stay_json() {
    let pg = PgCluster::shared();
    let d = tempdir();
    let db = pg.create_db("cap_trunc34");
    pg.query(
        &db,
        "CREATE TABLE trunc34_hist (x int); CREATE TABLE trunc34_key (id int PRIMARY KEY)",
    );
    let script = "INSERT INTO trunc34_hist VALUES (1);
TRUNCATE trunc34_hist;
                  INSERT INTO trunc34_key VALUES (1);
SELECT count(*) FROM trunc34_hist;
";
    let cap = capture_script(d.path(), pg, &db, script);
    assert_eq!(calls(&cap).len(), 4);
    // The key is left in place: the replayed INSERT fails with a long duplicate-key message,
    // a divergence whose example is longer than a report's cell.
    let run = d.path().join("replay");
    let out = run_dbscope(
        d.path(),
        &[
            "replay",
            s(&cap),
            "--target",
            &pg.uri(&db),
            "--out",
            s(&run),
            "-q",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code().is_some_and(|c| c <= 1), "{stderr}");
    let log = pg.log_text();
    assert!(
        !log.contains("dbscope_replay_check AS TRUNCATE trunc34_hist"),
        "the server logged the existence check of the TRUNCATE:\n{}",
        pg.log_tail(40)
    );
    assert_eq!(pg.query(&db, "SELECT count(*) FROM trunc34_hist"), "0");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["runner"]["mode"], "open", "{manifest}");
    let text = ok(d.path(), &["report", s(&run)]);
    assert!(text.contains("open loop"), "{text}");
    let examples: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("divergence examples"))
        .skip(2)
        .take_while(|l| l.starts_with("   ") && !l.trim().is_empty())
        .collect();
    assert!(!examples.is_empty(), "{text}");
    let mut cells = 0;
    for line in &examples {
        for cell in line.split("   ").map(str::trim) {
            if cell.starts_with('{') {
                cells += 1;
                let v: Result<Value, _> = serde_json::from_str(cell);
                assert!(
                    v.is_ok(),
                    "a divergence example cut mid-JSON: {cell}\n{text}"
                );
            }
        }
    }
    assert!(cells >= 2, "{text}");
    assert!(text.contains("23505"), "{text}");
}

/// The issue's own fault: PostgreSQL restarted (`pg_ctl restart -m fast`, a cluster of this
/// test's own) while a replay session is inside a transaction. The rest of the transaction is not
/// replayed (the server never says "there is no transaction in progress"), the session's next
/// transaction runs after the restart, and the replay ends failed as partial.
#[test]
fn a_server_restart_inside_a_transaction_makes_a_partial_replay() {
    let pg = PgCluster::throwaway(&[]);
    let d = tempdir();
    let db = pg.create_db("cap_restart");
    pg.query(
        &db,
        "CREATE TABLE t (id int PRIMARY KEY, n int); INSERT INTO t VALUES (1, 0), (2, 0); \
         CREATE TABLE later (x int)",
    );
    // Think time after the transaction (psql's own sleep): the server is back by then.
    let script = "SELECT 1;\nBEGIN;\nUPDATE t SET n = n + 1 WHERE id = 1;\nSELECT pg_sleep(1.5);\n\
                  UPDATE t SET n = n + 1 WHERE id = 2;\nCOMMIT;\n\\! sleep 4\n\
                  INSERT INTO later VALUES (1);\nSELECT 2;\n";
    let cap = capture_script(d.path(), &pg, &db, script);
    pg.query(&db, "UPDATE t SET n = 0; DELETE FROM later");
    let run = d.path().join("replay");
    let child = dbscope(d.path())
        .args([
            "replay",
            s(&cap),
            "--target",
            &pg.uri(&db),
            "--out",
            s(&run),
            "-q",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let sleeping = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = '{db}' \
         AND application_name LIKE 'dbscope-replay/%' AND query LIKE 'SELECT pg_sleep%' \
         AND state = 'active'"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while pg.query("postgres", &sleeping) != "1" {
        assert!(
            std::time::Instant::now() < deadline,
            "the replay never reached the sleep"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    pg.restart_fast();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a partial replay fails: {stderr}"
    );
    assert!(
        stderr.contains("partial replay: 2 calls not replayed (connection lost inside its transaction: 2); connections lost: 1"),
        "{stderr}"
    );
    assert_eq!(
        pg.query(
            &db,
            "SELECT string_agg(id || '=' || n, ' ' ORDER BY id) FROM t"
        ),
        "1=0 2=0"
    );
    assert_eq!(pg.query(&db, "SELECT count(*) FROM later"), "1");
    let log = pg.log_tail(200);
    assert!(
        !log.contains("there is no transaction in progress"),
        "{log}"
    );
}

/// A replay session whose connection is lost inside a transaction (its backend terminated, as a
/// server restart does) skips to that transaction's end: the rest of it is not replayed (counted
/// by reason, each call listed in the divergence file), never run in autocommit after a
/// reconnect; the next transaction runs on a new connection. The replay says it is partial, in
/// its outcome and exit code, and `compare` warns about it.
#[test]
fn a_connection_lost_inside_a_transaction_makes_a_partial_replay() {
    let pg = PgCluster::shared();
    let d = tempdir();
    let db = pg.create_db("cap_lost");
    pg.query(
        &db,
        "CREATE TABLE t (id int PRIMARY KEY, n int); INSERT INTO t VALUES (1, 0), (2, 0); \
         CREATE TABLE later (x int)",
    );
    let script = "SELECT 1;\nSELECT 2;\nSELECT 3;\nBEGIN;\nUPDATE t SET n = n + 1 WHERE id = 1;\n\
                  SELECT pg_sleep(1.5);\nUPDATE t SET n = n + 1 WHERE id = 2;\nCOMMIT;\n\
                  INSERT INTO later VALUES (1);\nSELECT 4;\n";
    let cap = capture_script(d.path(), pg, &db, script);
    assert_eq!(calls(&cap).len(), 10);
    pg.query(&db, "UPDATE t SET n = 0; DELETE FROM later");

    let run = d.path().join("replay");
    let child = dbscope(d.path())
        .args([
            "replay",
            s(&cap),
            "--target",
            &pg.uri(&db),
            "--out",
            s(&run),
            "-q",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The replay session inside its transaction, in the pg_sleep: its connection goes.
    let kill = format!(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '{db}' \
         AND application_name LIKE 'dbscope-replay/%' AND query LIKE 'SELECT pg_sleep%' \
         AND state = 'active'"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while pg.query("postgres", &kill) != "1" {
        assert!(
            std::time::Instant::now() < deadline,
            "the replay never reached the sleep"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a partial replay fails: {stderr}"
    );
    assert!(
        stderr.contains(
            "run failed: partial replay: 2 calls not replayed (connection lost inside its \
             transaction: 2); connections lost: 1"
        ),
        "{stderr}"
    );
    // Neither the rest of the transaction in autocommit nor its first update (rolled back by
    // the lost connection); the next statement ran.
    assert_eq!(
        pg.query(
            &db,
            "SELECT string_agg(id || '=' || n, ' ' ORDER BY id) FROM t"
        ),
        "1=0 2=0"
    );
    assert_eq!(pg.query(&db, "SELECT count(*) FROM later"), "1");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["outcome"], "failed", "{manifest}");
    assert!(
        manifest["workload"]["params"]["partial"].is_string(),
        "{manifest}"
    );
    let r: Value = serde_json::from_str(&ok(d.path(), &["report", s(&run), "--json"])).unwrap();
    assert_eq!(r["replay"]["replayed"], 8, "{}", r["replay"]);
    assert_eq!(r["replay"]["not_replayed"], 2, "{}", r["replay"]);
    assert_eq!(r["replay"]["lost_connections"], 1, "{}", r["replay"]);
    // Every diverging call is listed, the ones not replayed with their reason.
    let listed: Vec<Value> = std::fs::read_to_string(run.join("replay-divergence.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<String> = listed
        .iter()
        .map(|v| format!("{} {} {}", v["seq"], v["kind"], v["reason"]))
        .collect();
    assert_eq!(
        kinds,
        [
            "5 \"connection lost\" null",
            "6 \"not replayed\" \"connection lost inside its transaction\"",
            "7 \"not replayed\" \"connection lost inside its transaction\"",
        ],
        "{listed:?}"
    );
    let cmp = ok(d.path(), &["compare", s(&cap), s(&run)]);
    assert!(
        cmp.contains("WARNING: B is a partial replay: 2 calls not replayed"),
        "{cmp}"
    );
}

/// The statements of a capture: fingerprint → calls, and the errors.
fn statements(dir: &Path, cap: &Path) -> (std::collections::BTreeMap<String, u64>, u64, u64) {
    let info: Value =
        serde_json::from_str(&ok(dir, &["capture", "info", s(cap), "--json"])).unwrap();
    let by = info["statements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["statement"].as_str().unwrap().to_string(),
                s["calls"].as_u64().unwrap(),
            )
        })
        .collect();
    (
        by,
        info["errors"].as_u64().unwrap(),
        info["sessions"].as_u64().unwrap(),
    )
}

/// The same run, captured through the proxy and read back from the server's csvlog, jsonlog and
/// stderr logs, gives the same sessions, statements (with pgbench's values) and errors; and the
/// log capture replays to the same database.
#[test]
fn log_capture_matches_the_proxy_capture() {
    let pg = PgCluster::logging();
    let d = tempdir();
    let db = pg.create_db("cap_log");
    pgbench_init(pg, &db);
    let target = pg.uri(&db);
    let rp = format!("logs_{}", std::process::id());
    ok(
        d.path(),
        &["restore-point", "create", &rp, "--target", &target],
    );
    // Only what follows goes to new log files (their names carry the second they were opened).
    let before: Vec<PathBuf> = std::fs::read_dir(pg.log_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    pg.query("postgres", "SELECT pg_rotate_logfile()");
    let proxy = start_proxy(d.path(), pg);
    let pport = proxy.port.to_string();
    pgbench_through(&proxy, pg, 2, 1, "extended", &db);
    let out = Command::new(pg.psql())
        .args([
            "-X",
            "-h",
            "127.0.0.1",
            "-p",
            &pport,
            "-U",
            pg.user(),
            "-d",
            &db,
            "-c",
            "SELECT 1/0",
        ])
        .env("PGPASSWORD", pg.password())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("division by zero"));
    let (_, cap) = proxy.stop();
    // The server writes its logs asynchronously (read again until complete), and no query on the
    // database until they are read: it would be logged too.
    let logs = |ext: &str| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(pg.log_dir())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| !before.contains(p) && p.extension().is_some_and(|x| x == ext))
            .map(|p| p.display().to_string())
            .collect();
        v.sort();
        v
    };
    let proxy_statements = statements(d.path(), &cap);
    assert_eq!(proxy_statements.1, 1, "the division by zero");
    let mut sums = Vec::new();
    for ext in ["csv", "json", "log"] {
        let files = logs(ext);
        assert!(
            !files.is_empty(),
            "no new .{ext} log in {}",
            pg.log_dir().display()
        );
        let out = d.path().join(format!("from-{ext}"));
        let mut args = vec!["capture", "log"];
        args.extend(files.iter().map(String::as_str));
        args.extend(["--database", db.as_str(), "--out", s(&out)]);
        if ext == "log" {
            args.extend(["--prefix", "%m [%p] %q%u@%d "]);
        }
        ok(d.path(), &args);
        let mut got = statements(d.path(), &out);
        for _ in 0..50 {
            if got == proxy_statements {
                break;
            }
            // The log may not be complete yet: read it again.
            std::thread::sleep(std::time::Duration::from_millis(100));
            std::fs::remove_dir_all(&out).unwrap();
            ok(d.path(), &args);
            got = statements(d.path(), &out);
        }
        assert_eq!(
            got, proxy_statements,
            "{ext}: the log gives what the proxy saw"
        );
        // pgbench's values are in the log's parameters: the history deltas add up.
        let calls = calls(&out);
        let captured: i64 = calls
            .iter()
            .filter(|c| {
                c["sql"]
                    .as_str()
                    .unwrap()
                    .starts_with("INSERT INTO pgbench_history")
            })
            .map(|c| c["params"][3].as_str().unwrap().parse::<i64>().unwrap())
            .sum();
        sums.push((ext, captured));
    }
    let state = "SELECT sum(abalance) || ' ' || (SELECT count(*) FROM pgbench_history) FROM pgbench_accounts";
    let after_run = pg.query(&db, state);
    let stored: i64 = pg
        .query(&db, "SELECT coalesce(sum(delta), 0) FROM pgbench_history")
        .parse()
        .unwrap();
    for (ext, captured) in sums {
        assert_eq!(captured, stored, "{ext}: pgbench's values are in the log");
    }
    let run = d.path().join("replay-from-csv");
    ok(
        d.path(),
        &[
            "replay",
            s(&d.path().join("from-csv")),
            "--target",
            &target,
            "--restore",
            &rp,
            "--out",
            s(&run),
            "-q",
        ],
    );
    let replayed = pg.query(&db, state);
    assert_eq!(
        replayed, after_run,
        "the log capture replays to the same database"
    );
    let r: Value = serde_json::from_str(&ok(d.path(), &["report", s(&run), "--json"])).unwrap();
    assert_eq!(r["replay"]["diverged"], 0, "{}", r["replay"]);
    ok(
        d.path(),
        &["restore-point", "drop", &rp, "--target", &target],
    );
    fails(
        d.path(),
        &[
            "capture",
            "log",
            s(&cap.join("manifest.json")),
            "--out",
            s(&d.path().join("x")),
        ],
        2,
        &[
            "no statement durations found",
            "log_min_duration_statement = 0",
        ],
    );
}
