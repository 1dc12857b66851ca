//! libpq's connection strings — `postgresql://` URIs and `key=value` strings — parsed and resolved
//! by libpq's rules (PostgreSQL 15 docs, "Connection Strings"; `conninfo_uri_parse_options`,
//! `conninfo_parse` and `connectOptions2` in fe-connect.c): query parameters override the URI's
//! authority, host and port lists pair up as libpq pairs them, and missing values come from the
//! `PG*` environment variables, then the OS user and the default socket directory.
//!
//! Differences from libpq, each refused with a clear error rather than silently ignored: no TLS
//! (`sslmode=require`/`verify-*`), no GSSAPI encryption, no service or password files, only
//! `target_session_attrs=any`, only UTF-8; a port outside 1–65535 refuses the whole string (libpq
//! skips that host). Without `connect_timeout` dbscope waits 10 s per address, not forever.
//!
//! Modules: `parse` (a string into its parameters), `resolve` (parameters into endpoints, user,
//! database and timeouts, with libpq's defaults), `error`.

mod error;
mod parse;
mod resolve;

pub use error::ConnInfoError;
pub use parse::{parse, Params, DEFAULT_PORT};
pub use resolve::*;

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;

    fn defaults_with<'a>(env: &'a dyn Fn(&str) -> Option<String>) -> Defaults<'a> {
        Defaults {
            env,
            os_user: Some("osuser".into()),
            socket_dir: PathBuf::from("/var/run/postgresql"),
            application_name: "dbscope",
        }
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn ok(s: &str) -> ConnInfo {
        resolve(s, &defaults_with(&no_env)).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    fn fail(s: &str) -> String {
        match resolve(s, &defaults_with(&no_env)) {
            Ok(c) => panic!("{s:?} should be refused, resolved to {c:?}"),
            Err(e) => e.0,
        }
    }

    /// Each string and the URI of every endpoint it resolves to (user, hosts, ports, database),
    /// as libpq 15 resolves it with no PG* variables set, OS user `osuser` and default socket
    /// directory /var/run/postgresql.
    #[test]
    fn issue_13_strings_resolve_as_libpq_resolves_them() {
        let cases: &[(&str, &str)] = &[
            // The issue: query parameters override the authority.
            (
                "postgres://postgres@localhost/postgres?host=/tmp/sock&port=55439",
                "postgres://postgres@/postgres?host=/tmp/sock&port=55439",
            ),
            (
                "postgresql://u:pw@h:1/d?host=h2&port=2&user=v&dbname=e",
                "postgres://v@h2:2/e",
            ),
            (
                "postgres://",
                "postgres://osuser@/osuser?host=/var/run/postgresql&port=5432",
            ),
            (
                "postgres:///db",
                "postgres://osuser@/db?host=/var/run/postgresql&port=5432",
            ),
            ("postgres://h", "postgres://osuser@h:5432/osuser"),
            ("postgres://h:5433/", "postgres://osuser@h:5433/osuser"),
            ("postgres://u@h/db", "postgres://u@h:5432/db"),
            (
                "postgres://%2Ftmp%2Fs:6000/db",
                "postgres://osuser@/db?host=/tmp/s&port=6000",
            ),
            (
                "postgres://%2ftmp/db",
                "postgres://osuser@/db?host=/tmp&port=5432",
            ),
            (
                "postgres://[::1]:6000/db",
                "postgres://osuser@[::1]:6000/db",
            ),
            (
                "postgres://[fe80::1%25eth0]/db",
                "postgres://osuser@[fe80::1%25eth0]:5432/db",
            ),
            ("postgres://u%40x@h/d%20b", "postgres://u%40x@h:5432/d%20b"),
            // Host lists: one port for all, or one per host; an empty entry is the default.
            (
                "postgres://h1,h2/db",
                "postgres://osuser@h1:5432,h2:5432/db",
            ),
            ("postgres://h1:1,h2:2/db", "postgres://osuser@h1:1,h2:2/db"),
            ("postgres://h1:1,h2/db", "postgres://osuser@h1:1,h2:5432/db"),
            (
                "postgres:///db?host=h1,/tmp&port=7",
                "postgres://osuser@h1:7,%2Ftmp:7/db",
            ),
            (
                "postgres://,h2/db",
                "postgres://osuser@%2Fvar%2Frun%2Fpostgresql:5432,h2:5432/db",
            ),
            (
                "postgres://[::1],h2:9/db",
                "postgres://osuser@[::1]:5432,h2:9/db",
            ),
            (
                "postgres://x/db?hostaddr=127.0.0.1&port=6",
                "postgres://osuser@x:6/db?hostaddr=127.0.0.1",
            ),
            (
                "postgres:///db?hostaddr=::1",
                "postgres://osuser@[::1]:5432/db",
            ),
            // Keyword/value strings.
            (
                "",
                "postgres://osuser@/osuser?host=/var/run/postgresql&port=5432",
            ),
            (
                "host=/tmp port=1 dbname=d user=u",
                "postgres://u@/d?host=/tmp&port=1",
            ),
            ("  host = h   port=\t2 ", "postgres://osuser@h:2/osuser"),
            (
                "host='/tmp/a b' dbname='it\\'s'",
                "postgres://osuser@/it%27s?host=/tmp/a%20b&port=5432",
            ),
            (
                "dbname=a\\ b user=''",
                "postgres://osuser@/a%20b?host=/var/run/postgresql&port=5432",
            ),
            ("host=h1,h2 port=1,2", "postgres://osuser@h1:1,h2:2/osuser"),
            (
                "port=' 7 '",
                "postgres://osuser@/osuser?host=/var/run/postgresql&port=7",
            ),
            ("host=h port=3 host=g", "postgres://osuser@g:3/osuser"),
            ("host=@abs", "postgres://osuser@%40abs:5432/osuser"),
        ];
        for (s, want) in cases {
            assert_eq!(ok(s).location(None), *want, "{s:?}");
        }
    }

    #[test]
    fn passwords_and_other_parameters() {
        let c = ok(
            "postgres://u:p%40ss:w@h/db?connect_timeout=1&application_name=x&options=-c%20a%3Db",
        );
        assert_eq!(c.password.as_deref(), Some("p@ss:w"));
        assert_eq!(
            c.connect_timeout,
            ConnectTimeout::Limit(Duration::from_secs(2))
        );
        assert_eq!(c.application_name, "x");
        assert_eq!(c.options.as_deref(), Some("-c a=b"));
        assert!(!format!("{c:?}").contains("p@ss"));
        // The look-ahead for '@' stops only at '/': '?' belongs to the password.
        assert_eq!(ok("postgres://u:a?b@h/db").password.as_deref(), Some("a?b"));
        let c = ok("postgres://u:pw@h/db?password=other");
        assert_eq!(c.password.as_deref(), Some("other"));
        assert_eq!(ok("password='a b\\'c'").password.as_deref(), Some("a b'c"));
        assert_eq!(ok("postgres://u:@h").password, None);
        assert_eq!(
            ok("connect_timeout=0").connect_timeout,
            ConnectTimeout::Forever
        );
        assert_eq!(
            ok("connect_timeout=-3").connect_timeout,
            ConnectTimeout::Forever
        );
        assert_eq!(
            ok("connect_timeout=30").connect_timeout,
            ConnectTimeout::Limit(Duration::from_secs(30))
        );
        assert_eq!(ok("").connect_timeout, ConnectTimeout::Default);
        assert_eq!(ok("").application_name, "dbscope");
        assert_eq!(ok("fallback_application_name=f").application_name, "f");
        assert_eq!(
            ok("application_name=a fallback_application_name=f").application_name,
            "a"
        );
        for mode in ["disable", "allow", "prefer"] {
            ok(&format!("sslmode={mode}"));
        }
        ok("postgres://h?sslmode=disable&gssencmode=disable&target_session_attrs=any&client_encoding=UTF8");
        ok("requiressl=0");
        // libpq ignores sslmode and gssencmode on Unix sockets.
        ok("host=/tmp,@abs sslmode=verify-full gssencmode=require");
        ok("postgres:///db?ssl=true");
    }

    #[test]
    fn environment_fills_what_the_string_leaves_out() {
        let env = |k: &str| -> Option<String> {
            match k {
                "PGHOST" => Some("envhost".into()),
                "PGPORT" => Some("6543".into()),
                "PGUSER" => Some("envuser".into()),
                "PGPASSWORD" => Some("envpw".into()),
                "PGDATABASE" => Some("envdb".into()),
                "PGAPPNAME" => Some("envapp".into()),
                "PGCONNECT_TIMEOUT" => Some("5".into()),
                "PGOPTIONS" => Some("-c x=y".into()),
                _ => None,
            }
        };
        let d = defaults_with(&env);
        let c = resolve("postgres://", &d).unwrap();
        assert_eq!(c.location(None), "postgres://envuser@envhost:6543/envdb");
        assert_eq!(c.password.as_deref(), Some("envpw"));
        assert_eq!(c.application_name, "envapp");
        assert_eq!(
            c.connect_timeout,
            ConnectTimeout::Limit(Duration::from_secs(5))
        );
        assert_eq!(c.options.as_deref(), Some("-c x=y"));
        // The string wins over the environment; an empty URI dbname leaves PGDATABASE in force.
        let c = resolve("postgres://u:pw@h:1/?host=/s&port=2", &d).unwrap();
        assert_eq!(c.location(None), "postgres://u@/envdb?host=/s&port=2");
        assert_eq!(c.password.as_deref(), Some("pw"));
        // Empty variables count as not set for host, port, user and database.
        let empty = |k: &str| {
            k.starts_with("PG")
                .then(String::new)
                .filter(|_| ["PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "PGDATABASE"].contains(&k))
        };
        let c = resolve("connect_timeout=3", &defaults_with(&empty)).unwrap();
        assert_eq!(
            c.location(None),
            "postgres://osuser@/osuser?host=/var/run/postgresql&port=5432"
        );
        assert_eq!(c.password, None);
        let ssl = |k: &str| (k == "PGSSLMODE").then(|| "verify-full".to_string());
        assert!(resolve("host=h", &defaults_with(&ssl))
            .unwrap_err()
            .0
            .contains("does not support TLS"));
        assert!(
            resolve("", &defaults_with(&ssl)).is_ok(),
            "a socket ignores sslmode"
        );
        let service = |k: &str| (k == "PGSERVICE").then(|| "prod".to_string());
        assert!(resolve("", &defaults_with(&service))
            .unwrap_err()
            .0
            .contains("PGSERVICE=prod"));
    }

    /// libpq's own messages where libpq refuses the string; dbscope's where it cannot do what
    /// libpq would.
    #[test]
    fn refusals_name_the_problem() {
        let cases: &[(&str, &str)] = &[
            (
                "postgres://h/db?foo=bar",
                "invalid URI query parameter: \"foo\"",
            ),
            (
                "postgres://h/db?host",
                "missing key/value separator \"=\" in URI query parameter",
            ),
            (
                "postgres://h/db?a=b=c",
                "extra key/value separator \"=\" in URI query parameter: \"a\"",
            ),
            (
                "postgres://h/db?host=x&&port=1",
                "missing key/value separator",
            ),
            (
                "postgres://[::1/db",
                "end of string reached when looking for matching \"]\"",
            ),
            ("postgres://[]/db", "IPv6 host address may not be empty"),
            (
                "postgres://[::1]x/db",
                "unexpected character \"x\" at position 6 in URI",
            ),
            (
                "postgres://h/d%zz",
                "invalid percent-encoded token in the database name: \"d%zz\"",
            ),
            ("postgres://h/d%00", "forbidden value %00"),
            (
                "postgres://h:abc/db",
                "invalid integer value \"abc\" for connection option \"port\"",
            ),
            ("postgres://h:70000/db", "invalid port number: \"70000\""),
            ("postgres://h:0/db", "invalid port number: \"0\""),
            (
                "postgres://h1,h2/db?port=1,2,3",
                "could not match 3 port numbers to 2 hosts",
            ),
            (
                "host=a,b hostaddr=127.0.0.1",
                "could not match 2 host names to 1 hostaddr values",
            ),
            (
                "hostaddr=localhost",
                "could not parse network address \"localhost\"",
            ),
            ("foo=bar", "invalid connection option \"foo\""),
            (
                "host",
                "missing \"=\" after \"host\" in connection info string",
            ),
            ("host=x port", "missing \"=\" after \"port\""),
            (
                "password='abc",
                "unterminated quoted string in connection info string",
            ),
            (
                "connect_timeout=1s",
                "invalid integer value \"1s\" for connection option \"connect_timeout\"",
            ),
            (
                "connect_timeout=",
                "invalid integer value \"\" for connection option \"connect_timeout\"",
            ),
            (
                "host=h sslmode=require",
                "sslmode=require: dbscope's PostgreSQL client does not support TLS",
            ),
            ("postgres://h?sslmode=verify-full", "does not support TLS"),
            ("postgres://h?ssl=true", "sslmode=require"),
            ("host=/tmp,h requiressl=1", "sslmode=require"),
            (
                "hostaddr=127.0.0.1 host=/tmp sslmode=verify-ca",
                "sslmode=verify-ca",
            ),
            ("sslmode=bogus", "invalid sslmode value: \"bogus\""),
            ("host=h gssencmode=require", "does not support GSSAPI"),
            (
                "target_session_attrs=read-write",
                "supports only target_session_attrs=any",
            ),
            (
                "target_session_attrs=x",
                "invalid target_session_attrs value: \"x\"",
            ),
            ("client_encoding=LATIN1", "talks UTF8 only"),
            (
                "postgres://h?sslcert=/x",
                "connection parameter \"sslcert\" is not supported",
            ),
            (
                "service=prod",
                "connection parameter \"service\" is not supported",
            ),
        ];
        for (s, want) in cases {
            let e = fail(s);
            assert!(e.contains(want), "{s:?}: got {e:?}, want {want:?}");
        }
    }

    #[test]
    fn refusals_never_show_the_password() {
        for s in [
            "postgres://u:s3cr%zzet@h/db",
            "postgres://u:s3cr%00et@h/db",
            "postgres://u@h/db?password=s3cr%zzet",
            "postgres://u:s3cret@[::1/db",
            "postgres://u:s3cret@[::1]x/db",
            "postgres://u@[::1/db?password=s3cret",
        ] {
            let e = fail(s);
            assert!(!e.contains("s3cr"), "{s:?}: {e}");
        }
    }

    #[test]
    fn hostaddr_pairs_with_host_names() {
        let c = ok("host=a,b hostaddr=127.0.0.1,::1 port=1,2");
        assert_eq!(
            c.endpoints,
            vec![
                Endpoint {
                    host: Host::Addr {
                        ip: "127.0.0.1".parse().unwrap(),
                        name: Some("a".into())
                    },
                    port: 1
                },
                Endpoint {
                    host: Host::Addr {
                        ip: "::1".parse().unwrap(),
                        name: Some("b".into())
                    },
                    port: 2
                },
            ]
        );
        assert_eq!(
            c.location(None),
            "postgres://osuser@a:1,b:2/osuser?hostaddr=127.0.0.1,::1"
        );
        assert_eq!(
            c.location(Some(1)),
            "postgres://osuser@b:2/osuser?hostaddr=::1"
        );
        assert_eq!(c.endpoints[1].address(), "[::1]:2");
        // An empty hostaddr entry falls back to that slot's host.
        let c = ok("host=a,/tmp hostaddr=127.0.0.1,");
        assert_eq!(c.endpoints[1].host, Host::Socket(PathBuf::from("/tmp")));
    }

    /// Every location is itself a string that resolves back to the same endpoints.
    #[test]
    fn locations_read_back_as_themselves() {
        for s in [
            "postgres://u%40x@h1:1,%2Ftmp%2Fa%20b:2,[::1]:3/d%2Fb",
            "host='/tmp/a&b?c' port=4 user=u dbname='x y'",
            "host=a,b hostaddr=127.0.0.1,::1 port=1,2",
            "host=@abs",
        ] {
            let c = ok(s);
            let again = ok(&c.location(None));
            assert_eq!(again.endpoints, c.endpoints, "{s:?}");
            assert_eq!(
                (again.user, again.dbname),
                (c.user.clone(), c.dbname.clone()),
                "{s:?}"
            );
            for i in 0..c.endpoints.len() {
                assert_eq!(
                    ok(&c.location(Some(i))).endpoints,
                    vec![c.endpoints[i].clone()]
                );
            }
        }
    }
}
