//! Issue 13: dbscope reads PostgreSQL connection strings as libpq does. Every string of a table
//! goes to `psql` and to `dbscope run commit`; both must reach the same server, port, user and
//! database (and see the same `options`), or both must fail.

use std::path::Path;
use std::process::Command;

use crate::cli::*;
use crate::common::pg::PgCluster;

/// What a client reached: `current_user`, `current_database()`, the server's port and
/// `synchronous_commit` as the session sees it; or why it failed.
#[derive(Debug, PartialEq)]
enum Reached {
    Server {
        user: String,
        db: String,
        port: String,
        synchronous_commit: String,
    },
    Failed(String),
}

struct Case {
    /// The string given to psql (`-d`); dbscope gets it as is, or after `postgres:` when it is a
    /// key/value string.
    conn: String,
    /// Environment for both clients (everything else PG* is removed).
    env: Vec<(&'static str, String)>,
    /// For failures: text both clients' messages must contain.
    both_say: Option<&'static str>,
    /// Database to drop `dbscope_commit` from first, so finding it afterwards proves dbscope ran
    /// there (fresh databases have none).
    reset: Option<String>,
}

fn case(conn: String) -> Case {
    Case {
        conn,
        env: Vec::new(),
        both_say: None,
        reset: None,
    }
}

impl Case {
    fn env(mut self, k: &'static str, v: impl Into<String>) -> Case {
        self.env.push((k, v.into()));
        self
    }
    fn says(mut self, text: &'static str) -> Case {
        self.both_say = Some(text);
        self
    }
    fn dbscope_target(&self) -> String {
        if self.conn.starts_with("postgres://") || self.conn.starts_with("postgresql://") {
            self.conn.clone()
        } else {
            format!("postgres:{}", self.conn)
        }
    }
}

fn clean_env(c: &mut Command, case: &Case) {
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("PG") {
            c.env_remove(k);
        }
    }
    // No password file for either client: passwords come from the string or PGPASSWORD only.
    c.env("PGPASSFILE", "/nonexistent/dbscope-test-pgpass");
    for (k, v) in &case.env {
        c.env(k, v);
    }
}

const PROBE: &str = "SELECT current_user, current_database(), current_setting('port'), \
                     current_setting('synchronous_commit')";

fn psql(pg: &PgCluster, case: &Case) -> Reached {
    let mut c = Command::new(pg.psql());
    c.args([
        "-X", "-w", "-A", "-t", "-F", "|", "-c", PROBE, "-d", &case.conn,
    ]);
    clean_env(&mut c, case);
    let out = c.output().expect("psql runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let fields: Vec<&str> = stdout.trim().split('|').collect();
    match (out.status.success(), &fields[..]) {
        (true, [user, db, port, sc]) => Reached::Server {
            user: user.to_string(),
            db: db.to_string(),
            port: port.to_string(),
            synchronous_commit: sc.to_string(),
        },
        _ => Reached::Failed(String::from_utf8_lossy(&out.stderr).trim().to_string()),
    }
}

/// Runs one commit with `--target`; on success reads where the manifest says it connected and
/// what the server reported, and checks on the server that the table is where it says.
fn dbscope_reached(pg: &PgCluster, case: &Case, dir: &Path) -> Reached {
    let run_dir = join(dir, "run");
    let target = case.dbscope_target();
    let mut c = dbscope(dir);
    clean_env(&mut c, case);
    let out = c
        .args(["run", "commit", "--ops", "1", "--sessions", "1", "--out"])
        .arg(&run_dir)
        .args(["--target", &target])
        .output()
        .expect("dbscope runs");
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    assert!(!stderr.contains(pg.password()), "password shown: {stderr}");
    if !out.status.success() {
        // 4: the server refused or could not be reached; 2: the string itself was refused.
        let code = if stderr.contains("cannot connect to PostgreSQL") {
            4
        } else {
            2
        };
        assert_eq!(out.status.code(), Some(code), "{target}: {stderr}");
        return Reached::Failed(stderr);
    }
    let text = std::fs::read_to_string(run_dir.join("manifest.json")).unwrap();
    assert!(
        !text.contains(pg.password()),
        "password in the manifest: {text}"
    );
    let m = manifest(&run_dir);
    let t = &m["target"];
    let location = t["location"].as_str().unwrap().to_string();
    // `postgres://USER@/DB?host=SOCKDIR&port=PORT`: the test server has only a Unix socket.
    let (user, rest) = location
        .strip_prefix("postgres://")
        .and_then(|l| l.split_once("@/"))
        .unwrap_or_else(|| panic!("{target}: unexpected location {location}"));
    let (db, rest) = rest.split_once("?host=").unwrap();
    let (sock, port) = rest.split_once("&port=").unwrap();
    assert_eq!(
        sock,
        pg.socket_dir().to_str().unwrap(),
        "{target}: {location}"
    );
    let owner = pg.query(
        db,
        "SELECT tableowner FROM pg_tables WHERE tablename = 'dbscope_commit'",
    );
    assert_eq!(owner, user, "{target}: dbscope_commit in {db} belongs to");
    Reached::Server {
        user: user.to_string(),
        db: db.to_string(),
        port: port.to_string(),
        synchronous_commit: t["settings_effective"]["synchronous_commit"]
            .as_str()
            .unwrap()
            .to_string(),
    }
}

/// One line of the table in docs/targets.md: the string with the test's values replaced by names.
fn describe(r: &Reached, generic: &dyn Fn(&str) -> String) -> String {
    match r {
        Reached::Server {
            user,
            db,
            synchronous_commit,
            ..
        } => {
            let db = if db == "postgres" { "postgres" } else { "DB" };
            let extra = if synchronous_commit == "off" {
                ", synchronous_commit off"
            } else {
                ""
            };
            format!("connects: {user}@{db}, socket SOCKDIR, port PORT{extra}")
        }
        Reached::Failed(m) => {
            let line = m.lines().next().unwrap_or("");
            let line = line
                .trim_start_matches("psql: error: ")
                .trim_start_matches("dbscope: ")
                .trim_start_matches("error: ");
            format!("fails: {}", generic(line))
        }
    }
}

#[test]
fn issue_13_connection_strings_reach_what_psql_reaches() {
    let pg = PgCluster::shared();
    let sock = pg.socket_dir().to_str().unwrap().to_string();
    let enc_sock = sock.replace('/', "%2F");
    let port = pg.port().to_string();
    let pw = pg.password().to_string();
    let u = pg.user();
    let dbs: Vec<String> = (0..17).map(|_| pg.create_db("libpq")).collect();
    let mut d = dbs.iter();
    let mut db = || d.next().unwrap().clone();
    let mut cases = vec![
        // The issue's exact shape: the query parameters override `localhost` (and port 5432).
        Case {
            reset: Some("postgres".into()),
            ..case(format!(
                "postgres://{u}@localhost/postgres?host={sock}&port={port}"
            ))
        }
        .env("PGPASSWORD", &pw),
        case(format!("postgres://{u}:{pw}@/{}?host={sock}&port={port}", db())),
        case(format!("postgresql://{u}:{pw}@{enc_sock}:{port}/{}", db())),
        case(format!(
            "postgres://nobody:wrong@localhost:1/nodb?host={sock}&port={port}&user={u}&password={pw}&dbname={}",
            db()
        )),
        case(format!(
            "host={sock} port={port} user={u} password={pw} dbname={}",
            db()
        )),
        case(format!(
            "host = '{sock}' port= {port} dbname='{}' user={u} password='{pw}' options='-c synchronous_commit=off'",
            db()
        )),
        case(format!(
            "postgres://{u}:{pw}@/{}?host={sock}&port={port}&options=-c%20synchronous_commit%3Doff",
            db()
        )),
        // Host lists: the first host that accepts a connection is used.
        case(format!(
            "postgres://{u}:{pw}@/{}?host=/nonexistent-dbscope-dir,{sock}&port={port}",
            db()
        )),
        case(format!(
            "postgres://{u}:{pw}@%2Fnonexistent-dbscope-dir:{port},{enc_sock}:{port}/{}",
            db()
        )),
        case(format!(
            "postgres://{u}:{pw}@/{}?host={sock},{sock}&port=1,{port}",
            db()
        )),
        case(format!(
            "postgres://{u}:{pw}@/{}?host={sock},{sock}&port=1,2,{port}",
            db()
        ))
        .says("could not match 3 port numbers to 2 hosts"),
        // The environment fills in what the string leaves out, and loses to what it says.
        case("postgres://".into())
            .env("PGHOST", &sock)
            .env("PGPORT", &port)
            .env("PGUSER", u)
            .env("PGPASSWORD", &pw)
            .env("PGDATABASE", db()),
        case(format!("postgres:///{}?port={port}", db()))
            .env("PGHOST", &sock)
            .env("PGPORT", "1")
            .env("PGUSER", u)
            .env("PGPASSWORD", &pw),
        case(format!("host={sock} port={port} user={u} dbname={}", db()))
            .env("PGPASSWORD", &pw)
            .env("PGOPTIONS", "-c synchronous_commit=off"),
        case(format!(
            "postgres://{u}:{pw}@/{}?host={sock}&port={port}&sslmode=disable",
            db()
        )),
        case(format!(
            "postgres://{u}:{pw}@/{}?host={sock}&port={port}&sslmode=prefer",
            db()
        )),
        // Failures both clients share.
        case(format!("postgres://{u}:{pw}@?host={sock}&port={port}"))
            .says("database \"dbscope\" does not exist"),
        case(format!("postgres://{u}:{pw}@/x?host={sock}&port={port}&foo=bar"))
            .says("invalid URI query parameter: \"foo\""),
        case(format!("postgres://{u}:{pw}@/x?host={sock}&port=abc"))
            .says("invalid integer value \"abc\" for connection option \"port\""),
        case(format!("postgres://{u}:wrong@/postgres?host={sock}&port={port}"))
            .says("password authentication failed for user \"dbscope\""),
        case(format!("host='{sock} port={port}"))
            .says("unterminated quoted string in connection info string"),
        case(format!("host={sock} bogus=1")).says("invalid connection option \"bogus\""),
        // TLS: libpq ignores sslmode on a Unix socket; over TCP dbscope refuses it.
        case(format!(
            "postgres://{u}:{pw}@/{}?host={sock}&port={port}&sslmode=require",
            db()
        )),
        case(format!(
            "postgres://{u}:{pw}@/{}?host={sock}&port={port}&ssl=true",
            db()
        )),
        case(format!("postgres://{u}:{pw}@127.0.0.1:1/x?sslmode=require")),
        case(format!("postgres://{u}:{pw}@127.0.0.1:1/x")),
        case(format!("host={sock} hostaddr=127.0.0.1 port={port} user={u}")),
    ];
    assert_eq!(d.next(), None, "every fresh database is used once");

    let generic = |s: &str| -> String {
        let mut s = s.replace(&enc_sock, "%2FSOCKDIR").replace(&sock, "SOCKDIR");
        s = s.replace(&pw, "PW");
        // Longest first: libpq_1 is a prefix of libpq_10.
        let mut names: Vec<&String> = dbs.iter().collect();
        names.sort_by_key(|n| std::cmp::Reverse(n.len()));
        for name in names {
            s = s.replace(name.as_str(), "DB");
        }
        s.replace(&format!(":{port}"), ":PORT")
            .replace(&format!("={port}"), "=PORT")
            .replace(&format!(",{port}"), ",PORT")
            .replace(&format!("= {port}"), "= PORT")
            .replace(&format!(".{port}"), ".PORT")
            .replace(&format!("\"{port}\""), "\"PORT\"")
    };
    let mut table = vec![
        "| string (and environment) | psql 15 | dbscope |".to_string(),
        "|---|---|---|".to_string(),
    ];
    let mut problems = Vec::new();
    for c in cases.iter_mut() {
        if let Some(db) = &c.reset {
            pg.query(db, "DROP TABLE IF EXISTS dbscope_commit");
        }
        let dir = tempdir();
        let by_psql = psql(pg, c);
        let by_dbscope = dbscope_reached(pg, c, dir.path());
        let env: Vec<String> = c
            .env
            .iter()
            .map(|(k, v)| match v == &port {
                true => format!("{k}=PORT"),
                false => format!("{k}={}", generic(v)),
            })
            .collect();
        let shown = if env.is_empty() {
            format!("`{}`", generic(&c.conn))
        } else {
            format!("`{}` with {}", generic(&c.conn), env.join(" "))
        };
        table.push(format!(
            "| {} | {} | {} |",
            shown.replace('|', "\\|"),
            describe(&by_psql, &generic),
            describe(&by_dbscope, &generic)
        ));
        let agree = match (&by_psql, &by_dbscope) {
            (Reached::Server { .. }, Reached::Server { .. }) => by_psql == by_dbscope,
            (Reached::Failed(p), Reached::Failed(d)) => c
                .both_say
                .is_none_or(|text| p.contains(text) && d.contains(text)),
            _ => false,
        };
        if !agree {
            problems.push(format!(
                "{}\n  psql:    {by_psql:?}\n  dbscope: {by_dbscope:?}",
                c.dbscope_target()
            ));
        }
    }
    eprintln!("{}", table.join("\n"));
    assert!(
        problems.is_empty(),
        "dbscope and psql disagree on {} of {} strings:\n{}",
        problems.len(),
        cases.len(),
        problems.join("\n")
    );
}
