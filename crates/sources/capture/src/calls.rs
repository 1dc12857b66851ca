//! One session's calls, followed from the messages both sides send: what the client asked (a
//! simple `Query`, or `Parse`/`Bind`/`Execute` of the extended protocol, or a function call), when,
//! with which values, and what the server answered (command tags, rows, error, the transaction
//! state after it). The server answers in the order it was asked, so the tracker keeps a queue of
//! what each request still expects; after an error in the extended protocol the server skips
//! everything up to the next `Sync`, and so does the queue, recording the skipped executions as
//! such.

use std::collections::{HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use dbscope_pgwire::tag_rows;

use crate::wire::{error_fields, Fields, Msg};

/// How a call reached the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// A `Query` message (possibly several statements in one string).
    Simple,
    /// `Parse`/`Bind`/`Execute`.
    Extended,
    /// A `FunctionCall` message (fast-path).
    Function,
}

/// One call, as recorded in the capture.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Call {
    /// Session number (from 0, in connection order).
    pub session: u32,
    /// The call's number in its session (from 0).
    pub seq: u64,
    /// When the proxy received the call's first message (ns since the capture's origin).
    pub start_ns: u64,
    /// When the proxy received the server's last answer to it.
    pub end_ns: u64,
    /// How it was sent.
    pub protocol: Protocol,
    /// The statement text (for a function call, `function OID`).
    pub sql: String,
    /// The prepared statement's name, for the extended protocol with a named statement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statement: Option<String>,
    /// Bound parameter values as text (`None`: NULL); binary values as `\x` and hex digits.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub params: Vec<Option<String>>,
    /// Each parameter's format when any was sent in binary (0 text, 1 binary); empty when all
    /// were text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub formats: Vec<i16>,
    /// Command tags, in order (several for a multi-statement query string).
    #[serde(default)]
    pub tags: Vec<String>,
    /// Rows affected or returned (from the tags, else the data rows seen).
    pub rows: u64,
    /// SQLSTATE and message of the error the call ended with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<(String, String)>,
    /// Not executed: an earlier message of the same extended-protocol batch failed.
    #[serde(default, skip_serializing_if = "is_false")]
    pub skipped: bool,
    /// `in` or `out` for a `COPY … FROM STDIN` / `TO STDOUT`: its data is not captured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy: Option<String>,
    /// The transaction state the server reported after the call (`I` idle, `T` in a
    /// transaction, `E` in a failed transaction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txn: Option<char>,
    /// The session ended (or the capture stopped) before the server answered.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unfinished: bool,
    /// Bound to a statement prepared before the capture saw it (its text is unknown).
    #[serde(default, skip_serializing_if = "is_false")]
    pub unknown_statement: bool,
    /// The statement text or a value was longer than the proxy keeps and is cut.
    #[serde(default, skip_serializing_if = "is_false")]
    pub cut: bool,
    /// Read from a server log (`capture log`): rows and command tags are not known, the
    /// transaction state is inferred.
    #[serde(default, skip_serializing_if = "is_false")]
    pub from_log: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// What a request still expects from the server. (A call is kept unboxed: the queue holds a
/// few requests, and a box would cost the proxy an allocation per call.)
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
enum Expect {
    Parse,
    Bind,
    Describe,
    Close,
    Sync,
    /// An `Execute`, or a simple `Query` (which ends at `ReadyForQuery`), or a function call.
    Call(Call),
}

/// A portal bound by `Bind`.
#[derive(Debug, Clone)]
struct Portal {
    statement: String,
    params: Vec<Option<String>>,
    formats: Vec<i16>,
    cut: bool,
}

/// One session's call tracker.
#[derive(Debug)]
pub struct Tracker {
    session: u32,
    seq: u64,
    /// The startup (authentication) is over: the server said `ReadyForQuery` once.
    ready: bool,
    statements: HashMap<String, String>,
    portals: HashMap<String, Portal>,
    pending: VecDeque<Expect>,
    /// When the first message of the extended-protocol batch under way arrived.
    batch_start: Option<u64>,
    /// Finished calls waiting for the transaction state of the next `ReadyForQuery`.
    waiting_txn: Vec<Call>,
    /// Finished calls, for the caller to take.
    pub done: Vec<Call>,
    /// The error that ended the startup (authentication refused, no such database…).
    pub startup_error: Option<(String, String)>,
    /// Answers that matched no request (the tracker lost the thread; counted, not fatal).
    pub unmatched: u64,
    /// Data rows of the statement being answered.
    data_rows: u64,
}

impl Tracker {
    /// A tracker for `session`.
    pub fn new(session: u32) -> Self {
        Tracker {
            session,
            seq: 0,
            ready: false,
            statements: HashMap::new(),
            portals: HashMap::new(),
            pending: VecDeque::new(),
            batch_start: None,
            waiting_txn: Vec::new(),
            done: Vec::new(),
            startup_error: None,
            unmatched: 0,
            data_rows: 0,
        }
    }

    /// True once the server accepted the session.
    pub fn is_ready(&self) -> bool {
        self.ready
    }

    fn call(&mut self, start_ns: u64, protocol: Protocol, sql: String) -> Call {
        // A role's password is never written down (issue 27 item 8).
        let sql = crate::private::redact_password(&sql).unwrap_or(sql);
        let seq = self.seq;
        self.seq += 1;
        Call {
            session: self.session,
            seq,
            start_ns,
            end_ns: start_ns,
            protocol,
            sql,
            statement: None,
            params: Vec::new(),
            formats: Vec::new(),
            tags: Vec::new(),
            rows: 0,
            error: None,
            skipped: false,
            copy: None,
            txn: None,
            unfinished: false,
            unknown_statement: false,
            cut: false,
            from_log: false,
        }
    }

    /// A message from the client, received at `t`. Not only after the startup: the proxy reads
    /// the server's `ReadyForQuery` after forwarding it, so the client's first query can reach
    /// the tracker before it (the client's messages before that are authentication, which no
    /// arm below takes).
    pub fn client(&mut self, m: &Msg<'_>, t: u64) {
        let mut f = Fields::new(m.body);
        match m.kind {
            b'Q' => {
                // A statement over MAX_KEPT keeps its first bytes (issue 27: it was listed as
                // "(empty query)", class other); the call says it was cut.
                let sql = f.cstr_or_cut(m.cut).unwrap_or_default();
                let mut c = self.call(t, Protocol::Simple, sql);
                c.cut = m.cut;
                self.pending.push_back(Expect::Call(c));
            }
            b'P' => {
                self.batch_start.get_or_insert(t);
                let name = f.cstr().unwrap_or_default();
                let sql = f.cstr_or_cut(m.cut).unwrap_or_default();
                self.statements.insert(name, sql);
                self.pending.push_back(Expect::Parse);
            }
            b'B' => {
                self.batch_start.get_or_insert(t);
                let portal = f.cstr().unwrap_or_default();
                let statement = f.cstr().unwrap_or_default();
                let (params, formats) = bind_values(&mut f);
                self.portals.insert(
                    portal,
                    Portal {
                        statement,
                        params,
                        formats,
                        cut: m.cut,
                    },
                );
                self.pending.push_back(Expect::Bind);
            }
            b'D' => {
                self.batch_start.get_or_insert(t);
                self.pending.push_back(Expect::Describe);
            }
            b'C' => {
                self.batch_start.get_or_insert(t);
                self.pending.push_back(Expect::Close);
            }
            b'E' => {
                let start = self.batch_start.take().unwrap_or(t);
                let portal = f.cstr().unwrap_or_default();
                let p = self.portals.get(&portal).cloned();
                let (sql, unknown) = match &p {
                    Some(p) => match self.statements.get(&p.statement) {
                        Some(sql) => (sql.clone(), false),
                        None => (String::new(), true),
                    },
                    None => (String::new(), true),
                };
                let mut c = self.call(start, Protocol::Extended, sql);
                c.unknown_statement = unknown;
                if let Some(p) = p {
                    c.statement = (!p.statement.is_empty()).then_some(p.statement);
                    c.params = p.params;
                    c.formats = p.formats;
                    c.cut = p.cut;
                }
                self.pending.push_back(Expect::Call(c));
            }
            b'S' => {
                self.batch_start = None;
                self.pending.push_back(Expect::Sync);
            }
            b'F' => {
                let oid = f.i32().unwrap_or(0);
                let c = self.call(t, Protocol::Function, format!("function {oid}"));
                self.pending.push_back(Expect::Call(c));
            }
            _ => {}
        }
    }

    /// A message from the server, received at `t`.
    pub fn server(&mut self, m: &Msg<'_>, t: u64) {
        if !self.ready {
            match m.kind {
                b'Z' => self.ready = true,
                b'E' => self.startup_error = Some(error_fields(m.body)),
                _ => {}
            }
            return;
        }
        match m.kind {
            b'C' | b'I' | b's' => {
                let tag = Fields::new(m.body).cstr().unwrap_or_default();
                match self.pending.front_mut() {
                    Some(Expect::Call(c)) => {
                        c.rows += tag_rows(&tag).unwrap_or(self.data_rows);
                        self.data_rows = 0;
                        c.tags.push(tag);
                        c.end_ns = t;
                        if c.protocol == Protocol::Extended {
                            self.finish_front();
                        }
                    }
                    _ => self.unmatched += 1,
                }
            }
            b'D' => self.data_rows += 1,
            b'G' | b'H' | b'W' => {
                if let Some(Expect::Call(c)) = self.pending.front_mut() {
                    c.copy = Some(if m.kind == b'G' { "in" } else { "out" }.to_string());
                }
            }
            b'E' => {
                self.data_rows = 0;
                let err = error_fields(m.body);
                match self.pending.front_mut() {
                    Some(Expect::Call(c)) if c.protocol != Protocol::Extended => {
                        c.error = Some(err);
                        c.end_ns = t;
                    }
                    Some(front) => {
                        if let Expect::Call(c) = front {
                            c.error = Some(err.clone());
                            c.end_ns = t;
                            self.finish_front();
                        } else {
                            self.pending.pop_front();
                        }
                        // The server skips the rest of the batch, up to its Sync.
                        while let Some(e) = self.pending.front() {
                            if matches!(e, Expect::Sync) {
                                break;
                            }
                            if let Some(Expect::Call(mut c)) = self.pending.pop_front() {
                                c.skipped = true;
                                c.error = Some(err.clone());
                                c.end_ns = t;
                                self.waiting_txn.push(c);
                            }
                        }
                    }
                    // An error outside any request (the server is shutting down): the session
                    // ends; what is pending stays unfinished.
                    None => self.startup_error = Some(err),
                }
            }
            b'V' => {
                if let Some(Expect::Call(c)) = self.pending.front_mut() {
                    c.end_ns = t;
                }
            }
            b'1' => self.expect(|e| matches!(e, Expect::Parse)),
            b'2' => self.expect(|e| matches!(e, Expect::Bind)),
            b'3' => self.expect(|e| matches!(e, Expect::Close)),
            b'T' | b'n' => {
                if matches!(self.pending.front(), Some(Expect::Describe)) {
                    self.pending.pop_front();
                }
            }
            b'Z' => {
                let state = m.body.first().map(|&b| b as char);
                match self.pending.pop_front() {
                    Some(Expect::Call(mut c)) => {
                        if c.tags.is_empty() && c.error.is_none() {
                            c.end_ns = t;
                        } else {
                            c.end_ns = c.end_ns.max(t);
                        }
                        self.waiting_txn.push(c);
                    }
                    Some(Expect::Sync) => {}
                    Some(other) => {
                        self.unmatched += 1;
                        self.pending.push_front(other);
                    }
                    None => self.unmatched += 1,
                }
                for mut c in self.waiting_txn.drain(..) {
                    c.txn = state;
                    self.done.push(c);
                }
            }
            _ => {}
        }
    }

    /// Pops the front request when `is` matches it; else counts an unmatched answer.
    fn expect(&mut self, is: impl Fn(&Expect) -> bool) {
        match self.pending.front() {
            Some(e) if is(e) => {
                self.pending.pop_front();
            }
            _ => self.unmatched += 1,
        }
    }

    /// The front request is a finished extended-protocol call: on to the transaction wait.
    fn finish_front(&mut self) {
        if let Some(Expect::Call(c)) = self.pending.pop_front() {
            self.waiting_txn.push(c);
        }
    }

    /// The session ended at `t`: calls still waiting are kept as unfinished.
    pub fn end(&mut self, t: u64) {
        for c in self.waiting_txn.drain(..) {
            self.done.push(c);
        }
        for e in self.pending.drain(..) {
            if let Expect::Call(mut c) = e {
                c.unfinished = true;
                c.end_ns = t;
                self.done.push(c);
            }
        }
    }
}

/// The parameter values of a `Bind` body after the portal and statement names, and each one's
/// format when any is binary.
fn bind_values(f: &mut Fields<'_>) -> (Vec<Option<String>>, Vec<i16>) {
    let nformats = f.i16().unwrap_or(0).max(0) as usize;
    let mut formats = Vec::with_capacity(nformats);
    for _ in 0..nformats {
        formats.push(f.i16().unwrap_or(0));
    }
    let n = f.i16().unwrap_or(0).max(0) as usize;
    let mut values = Vec::with_capacity(n);
    // Each value's format, kept only when some value is binary (nothing is allocated otherwise).
    let binary = formats.contains(&1);
    let mut each = Vec::with_capacity(if binary { n } else { 0 });
    for i in 0..n {
        let format = match formats.len() {
            0 => 0,
            1 => formats[0],
            _ => formats.get(i).copied().unwrap_or(0),
        };
        if binary {
            each.push(format);
        }
        let Some(len) = f.i32() else { break };
        if len < 0 {
            values.push(None);
            continue;
        }
        let Some(v) = f.bytes(len as usize) else {
            break;
        };
        if format == 1 {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            let mut s = String::with_capacity(2 + 2 * v.len());
            s.push_str("\\x");
            for &b in v {
                s.push(char::from(HEX[usize::from(b >> 4)]));
                s.push(char::from(HEX[usize::from(b & 15)]));
            }
            values.push(Some(s));
        } else {
            values.push(Some(String::from_utf8_lossy(v).into_owned()));
        }
    }
    if !each.contains(&1) {
        // Formats were sent, but no value used a binary one.
        each.clear();
    }
    (values, each)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Bind's values: text as text, binary as `\x` and hex, NULL as None; formats kept only
    /// when a value used a binary one.
    #[test]
    fn bind_values_as_text_and_hex() {
        let body = |formats: &[i16], values: &[Option<&[u8]>]| {
            let mut b = Vec::new();
            b.extend_from_slice(&(formats.len() as i16).to_be_bytes());
            for f in formats {
                b.extend_from_slice(&f.to_be_bytes());
            }
            b.extend_from_slice(&(values.len() as i16).to_be_bytes());
            for v in values {
                match v {
                    Some(v) => {
                        b.extend_from_slice(&(v.len() as i32).to_be_bytes());
                        b.extend_from_slice(v);
                    }
                    None => b.extend_from_slice(&(-1i32).to_be_bytes()),
                }
            }
            b
        };
        let b = body(
            &[0, 1, 0],
            &[Some(b"42"), Some(&[0x00, 0xab, 0x7f, 0xff]), None],
        );
        let (values, formats) = bind_values(&mut Fields::new(&b));
        assert_eq!(
            values,
            vec![
                Some("42".to_string()),
                Some("\\x00ab7fff".to_string()),
                None
            ]
        );
        assert_eq!(formats, vec![0, 1, 0]);
        // One format for all values, binary.
        let b = body(&[1], &[Some(&[1, 2]), Some(&[])]);
        let (values, formats) = bind_values(&mut Fields::new(&b));
        assert_eq!(values, vec![Some("\\x0102".into()), Some("\\x".into())]);
        assert_eq!(formats, vec![1, 1]);
        // A binary format that no value uses, and none at all: no formats kept.
        let b = body(&[0, 1], &[Some(b"7")]);
        assert_eq!(
            bind_values(&mut Fields::new(&b)),
            (vec![Some("7".into())], vec![])
        );
        let b = body(&[], &[Some(b"x"), None]);
        assert_eq!(
            bind_values(&mut Fields::new(&b)),
            (vec![Some("x".into()), None], vec![])
        );
    }

    fn m(kind: u8, body: &[u8]) -> (u8, Vec<u8>) {
        (kind, body.to_vec())
    }

    fn feed(t: &mut Tracker, client: bool, msgs: &[(u8, Vec<u8>)], at: u64) {
        for (kind, body) in msgs {
            let msg = Msg {
                kind: *kind,
                body,
                len: body.len(),
                cut: false,
            };
            if client {
                t.client(&msg, at);
            } else {
                t.server(&msg, at);
            }
        }
    }

    fn ready() -> Tracker {
        let mut t = Tracker::new(3);
        feed(&mut t, false, &[m(b'R', &[0, 0, 0, 0]), m(b'Z', b"I")], 1);
        assert!(t.is_ready());
        t
    }

    fn bind(portal: &str, stmt: &str, values: &[Option<&str>]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(portal.as_bytes());
        b.push(0);
        b.extend_from_slice(stmt.as_bytes());
        b.push(0);
        b.extend_from_slice(&0i16.to_be_bytes());
        b.extend_from_slice(&(values.len() as i16).to_be_bytes());
        for v in values {
            match v {
                None => b.extend_from_slice(&(-1i32).to_be_bytes()),
                Some(v) => {
                    b.extend_from_slice(&(v.len() as i32).to_be_bytes());
                    b.extend_from_slice(v.as_bytes());
                }
            }
        }
        b.extend_from_slice(&0i16.to_be_bytes());
        b
    }

    #[test]
    fn a_simple_query_with_two_statements() {
        let mut t = ready();
        feed(&mut t, true, &[m(b'Q', b"BEGIN; UPDATE t SET x = 1\0")], 10);
        feed(
            &mut t,
            false,
            &[m(b'C', b"BEGIN\0"), m(b'C', b"UPDATE 3\0"), m(b'Z', b"T")],
            25,
        );
        assert_eq!(t.done.len(), 1);
        let c = &t.done[0];
        assert_eq!((c.session, c.seq, c.start_ns, c.end_ns), (3, 0, 10, 25));
        assert_eq!(c.tags, ["BEGIN", "UPDATE 3"]);
        assert_eq!(
            (c.rows, c.txn, c.protocol),
            (3, Some('T'), Protocol::Simple)
        );
    }

    /// Issue 27: a statement longer than the proxy keeps (16 MiB) keeps its first bytes, so its
    /// fingerprint and class are right, and the call says it was cut.
    #[test]
    fn issue_27_a_statement_over_16_mib_keeps_its_first_bytes() {
        use crate::wire::MAX_KEPT;
        let sql = format!("SELECT '{}'", "é".repeat(MAX_KEPT));
        let mut wire = vec![b'Q'];
        wire.extend_from_slice(&((sql.len() + 5) as u32).to_be_bytes());
        wire.extend_from_slice(sql.as_bytes());
        wire.push(0);
        let mut t = ready();
        let mut framer = crate::wire::Framer::new(|_| true);
        framer.feed(&wire, |msg| t.client(&msg, 10));
        feed(&mut t, false, &[m(b'C', b"SELECT 1\0"), m(b'Z', b"I")], 20);
        let c = &t.done[0];
        assert!(c.cut);
        assert!(c.sql.starts_with("SELECT 'éé"), "{}", &c.sql[..20]);
        assert!(c.sql.len() <= MAX_KEPT + 3, "{}", c.sql.len());
        assert_eq!(crate::fingerprint::class(&c.sql), "read");
        assert_eq!(crate::fingerprint::fingerprint(&c.sql), "SELECT ?");
    }

    /// pgbench -M extended: Parse/Bind/Describe/Execute/Sync per statement, unnamed.
    #[test]
    fn extended_calls_with_values() {
        let mut t = ready();
        feed(
            &mut t,
            true,
            &[
                m(b'P', b"\0UPDATE a SET b = b + $1 WHERE aid = $2\0\0\0"),
                m(b'B', &bind("", "", &[Some("-17"), Some("4711")])),
                m(b'D', b"P\0"),
                m(b'E', b"\0\0\0\0\0"),
                m(b'S', b""),
            ],
            100,
        );
        feed(
            &mut t,
            false,
            &[
                m(b'1', b""),
                m(b'2', b""),
                m(b'n', b""),
                m(b'C', b"UPDATE 1\0"),
            ],
            140,
        );
        assert!(
            t.done.is_empty(),
            "the transaction state comes with ReadyForQuery"
        );
        feed(&mut t, false, &[m(b'Z', b"T")], 150);
        let c = &t.done[0];
        assert_eq!(c.sql, "UPDATE a SET b = b + $1 WHERE aid = $2");
        assert_eq!(
            c.params,
            [Some("-17".to_string()), Some("4711".to_string())]
        );
        assert_eq!(
            (c.start_ns, c.end_ns, c.rows, c.txn),
            (100, 140, 1, Some('T'))
        );
        assert_eq!(c.statement, None);
    }

    /// A failed Bind: the server skips the Execute up to the Sync; the Execute is recorded as
    /// skipped with the error; a named statement prepared before the capture is flagged.
    #[test]
    fn errors_skip_the_rest_of_the_batch() {
        let mut t = ready();
        feed(
            &mut t,
            true,
            &[
                m(b'B', &bind("", "s1", &[None])),
                m(b'E', b"\0\0\0\0\0"),
                m(b'S', b""),
                m(b'Q', b"SELECT 1\0"),
            ],
            5,
        );
        feed(
            &mut t,
            false,
            &[
                m(
                    b'E',
                    b"SERROR\0C26000\0Mprepared statement \"s1\" does not exist\0\0",
                ),
                m(b'Z', b"I"),
                m(b'T', b""),
                m(b'D', b""),
                m(b'C', b"SELECT 1\0"),
                m(b'Z', b"I"),
            ],
            9,
        );
        assert_eq!(t.done.len(), 2);
        let (a, b) = (&t.done[0], &t.done[1]);
        assert!(a.skipped && a.unknown_statement);
        assert_eq!(a.error.as_ref().unwrap().0, "26000");
        assert_eq!(a.statement.as_deref(), Some("s1"));
        assert_eq!(a.params, [None]);
        assert_eq!(
            (b.sql.as_str(), b.rows, b.error.is_none()),
            ("SELECT 1", 1, true)
        );
        assert_eq!(t.unmatched, 0);
    }

    #[test]
    fn an_error_in_a_simple_query_and_an_unfinished_call() {
        let mut t = ready();
        feed(&mut t, true, &[m(b'Q', b"SELECT 1/0\0")], 5);
        feed(
            &mut t,
            false,
            &[
                m(b'E', b"SERROR\0C22012\0Mdivision by zero\0\0"),
                m(b'Z', b"E"),
            ],
            7,
        );
        feed(&mut t, true, &[m(b'Q', b"SELECT pg_sleep(100)\0")], 8);
        t.end(20);
        assert_eq!(t.done.len(), 2);
        assert_eq!(t.done[0].error.as_ref().unwrap().0, "22012");
        assert_eq!(t.done[0].txn, Some('E'));
        assert!(t.done[1].unfinished);
        assert_eq!(t.done[1].end_ns, 20);
    }

    /// The client's first query can be read before the server's first ReadyForQuery (the proxy
    /// forwards that before reading it): it is still the first call.
    #[test]
    fn a_query_read_before_the_startup_ends() {
        let mut t = Tracker::new(0);
        feed(&mut t, true, &[m(b'p', b"SCRAM...")], 1);
        feed(&mut t, true, &[m(b'Q', b"SELECT 1\0")], 5);
        feed(&mut t, false, &[m(b'R', &[0, 0, 0, 0]), m(b'Z', b"I")], 4);
        feed(&mut t, false, &[m(b'C', b"SELECT 1\0"), m(b'Z', b"I")], 9);
        feed(&mut t, true, &[m(b'Q', b"SELECT 2\0")], 10);
        feed(&mut t, false, &[m(b'C', b"SELECT 1\0"), m(b'Z', b"I")], 12);
        assert_eq!(t.done.len(), 2);
        assert_eq!(
            (t.done[0].sql.as_str(), t.done[0].start_ns, t.done[0].end_ns),
            ("SELECT 1", 5, 9)
        );
        assert_eq!(t.done[1].sql, "SELECT 2");
        assert_eq!(t.unmatched, 0);
    }

    #[test]
    fn a_refused_startup() {
        let mut t = Tracker::new(0);
        feed(
            &mut t,
            false,
            &[m(
                b'E',
                b"SFATAL\0C28P01\0Mpassword authentication failed\0\0",
            )],
            1,
        );
        assert!(!t.is_ready());
        assert_eq!(t.startup_error.as_ref().unwrap().0, "28P01");
    }
}
