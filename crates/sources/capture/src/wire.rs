//! PostgreSQL protocol 3 framing for a proxy: the bytes of each direction are forwarded as they
//! come and fed here afterwards, which cuts them into messages and hands over the ones the
//! recorder reads. Message bodies that only carry data (`DataRow`, `CopyData`, row descriptions,
//! notices) are skipped without being buffered, so a large result costs no copy.

/// The first message a client sends has no type byte: a startup message, or a request for TLS,
/// GSS encryption or a cancel.
pub const SSL_REQUEST: u32 = 80_877_103;
/// GSSAPI encryption request code.
pub const GSSENC_REQUEST: u32 = 80_877_104;
/// Cancel request code.
pub const CANCEL_REQUEST: u32 = 80_877_102;
/// Protocol 3.0.
pub const PROTOCOL_3: u32 = 196_608;

/// Largest message body kept for reading (a Parse or Query with its SQL text, a Bind with its
/// values): longer ones are cut to this many bytes and flagged.
pub const MAX_KEPT: usize = 16 << 20;

/// One message as the recorder sees it.
#[derive(Debug, PartialEq, Eq)]
pub struct Msg<'a> {
    /// Type byte (`Q`, `P`, `C`, …).
    pub kind: u8,
    /// The body, when the kind is one whose body is kept (else empty).
    pub body: &'a [u8],
    /// The body's length on the wire.
    pub len: usize,
    /// The body was longer than [`MAX_KEPT`] and is cut.
    pub cut: bool,
}

/// Cuts one direction's bytes into typed messages.
#[derive(Debug)]
pub struct Framer {
    /// Which message kinds keep their bodies.
    keep: fn(u8) -> bool,
    header: [u8; 5],
    header_len: usize,
    body: Vec<u8>,
    /// Body bytes still to come for the current message.
    need: usize,
    /// Whether the current message's body is kept.
    keeping: bool,
    /// A length below 4 was seen: the stream is not protocol 3; nothing more is cut.
    broken: bool,
}

impl Framer {
    /// A framer keeping the bodies of the kinds for which `keep` is true.
    pub fn new(keep: fn(u8) -> bool) -> Self {
        Framer {
            keep,
            header: [0; 5],
            header_len: 0,
            body: Vec::new(),
            need: 0,
            keeping: false,
            broken: false,
        }
    }

    /// True once the bytes stopped looking like protocol 3 messages.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Feeds bytes; calls `each` for every message completed by them, in order.
    pub fn feed(&mut self, mut data: &[u8], mut each: impl FnMut(Msg<'_>)) {
        while !data.is_empty() && !self.broken {
            if self.header_len < 5 {
                let take = (5 - self.header_len).min(data.len());
                self.header[self.header_len..self.header_len + take].copy_from_slice(&data[..take]);
                self.header_len += take;
                data = &data[take..];
                if self.header_len < 5 {
                    return;
                }
                let len = u32::from_be_bytes([
                    self.header[1],
                    self.header[2],
                    self.header[3],
                    self.header[4],
                ]) as usize;
                if len < 4 {
                    self.broken = true;
                    return;
                }
                self.need = len - 4;
                self.keeping = (self.keep)(self.header[0]);
                self.body.clear();
            }
            let take = self.need.min(data.len());
            if self.keeping {
                let room = MAX_KEPT.saturating_sub(self.body.len());
                self.body.extend_from_slice(&data[..take.min(room)]);
            }
            self.need -= take;
            data = &data[take..];
            if self.need == 0 {
                let len = u32::from_be_bytes([
                    self.header[1],
                    self.header[2],
                    self.header[3],
                    self.header[4],
                ]) as usize
                    - 4;
                each(Msg {
                    kind: self.header[0],
                    body: &self.body,
                    len,
                    cut: self.keeping && len > self.body.len(),
                });
                self.header_len = 0;
            }
        }
    }
}

/// Reads a body's fields in order.
pub struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    /// Fields of `body`.
    pub fn new(body: &'a [u8]) -> Self {
        Fields { rest: body }
    }

    /// A NUL-terminated string, or, in a body cut at [`MAX_KEPT`], the rest of the body: the
    /// first bytes of a statement too long to keep (lossy UTF-8).
    pub fn cstr_or_cut(&mut self, cut: bool) -> Option<String> {
        match self.cstr() {
            None if cut => {
                let s = text(self.rest);
                self.rest = &[];
                Some(s)
            }
            s => s,
        }
    }

    /// A NUL-terminated string (lossy UTF-8); `None` when the body ends first.
    pub fn cstr(&mut self) -> Option<String> {
        let end = self.rest.iter().position(|&b| b == 0)?;
        let s = text(&self.rest[..end]);
        self.rest = &self.rest[end + 1..];
        Some(s)
    }

    /// A big-endian i16.
    pub fn i16(&mut self) -> Option<i16> {
        let b = self.bytes(2)?;
        Some(i16::from_be_bytes([b[0], b[1]]))
    }

    /// A big-endian i32.
    pub fn i32(&mut self) -> Option<i32> {
        let b = self.bytes(4)?;
        Some(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// One byte.
    pub fn u8(&mut self) -> Option<u8> {
        Some(self.bytes(1)?[0])
    }

    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.rest.len() < n {
            return None;
        }
        let (b, rest) = self.rest.split_at(n);
        self.rest = rest;
        Some(b)
    }
}

/// The fields of an `ErrorResponse` (or notice) the recorder keeps: SQLSTATE and message.
pub fn error_fields(body: &[u8]) -> (String, String) {
    let (mut code, mut message) = (String::new(), String::new());
    let mut f = Fields::new(body);
    while let Some(t) = f.u8() {
        if t == 0 {
            break;
        }
        let Some(v) = f.cstr() else { break };
        match t {
            b'C' => code = v,
            b'M' => message = v,
            _ => {}
        }
    }
    (code, message)
}

/// The parameters of a startup message body (after the protocol number): name/value pairs.
pub fn startup_params(body: &[u8]) -> Vec<(String, String)> {
    let mut f = Fields::new(body);
    let mut out = Vec::new();
    while let Some(k) = f.cstr() {
        if k.is_empty() {
            break;
        }
        let Some(v) = f.cstr() else { break };
        out.push((k, v));
    }
    out
}

/// `b` as text, invalid UTF-8 replaced (`from_utf8` first: the usual valid text is checked
/// faster than `from_utf8_lossy` walks it).
fn text(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) => s.to_owned(),
        Err(_) => String::from_utf8_lossy(b).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    /// However the bytes are split between reads, the same messages come out; skipped bodies are
    /// empty but their lengths are right.
    #[test]
    fn any_split_gives_the_same_messages() {
        let mut stream = Vec::new();
        stream.extend(msg(b'Q', b"select 1\0"));
        stream.extend(msg(b'D', &[7u8; 300]));
        stream.extend(msg(b'C', b"SELECT 1\0"));
        stream.extend(msg(b'Z', b"I"));
        let keep = |k: u8| k != b'D';
        let whole = {
            let mut f = Framer::new(keep);
            let mut got = Vec::new();
            f.feed(&stream, |m| got.push((m.kind, m.body.to_vec(), m.len)));
            got
        };
        assert_eq!(whole.len(), 4);
        assert_eq!(whole[1], (b'D', vec![], 300));
        assert_eq!(whole[2], (b'C', b"SELECT 1\0".to_vec(), 9));
        for step in [1, 2, 3, 5, 7, 64] {
            let mut f = Framer::new(keep);
            let mut got = Vec::new();
            for piece in stream.chunks(step) {
                f.feed(piece, |m| got.push((m.kind, m.body.to_vec(), m.len)));
            }
            assert_eq!(got, whole, "pieces of {step}");
        }
    }

    #[test]
    fn a_length_below_four_stops_the_cutting() {
        let mut f = Framer::new(|_| true);
        let mut n = 0;
        f.feed(&[b'Q', 0, 0, 0, 2, b'x'], |_| n += 1);
        assert!(f.is_broken());
        assert_eq!(n, 0);
    }

    #[test]
    fn errors_and_startup_parameters() {
        // (The command tags' row counts are tested with `dbscope_pgwire::tag_rows`.)
        let body = b"SERROR\0VERROR\0C23505\0Mduplicate key\0\0";
        assert_eq!(
            error_fields(body),
            ("23505".to_string(), "duplicate key".to_string())
        );
        assert_eq!(
            startup_params(b"user\0bob\0database\0db\0\0"),
            vec![
                ("user".to_string(), "bob".to_string()),
                ("database".to_string(), "db".to_string())
            ]
        );
    }
}
