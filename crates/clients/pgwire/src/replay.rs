//! Calls replayed as an application sent them (`dbscope replay`): simple queries or Parse/Bind/
//! Execute with the captured values, and what the server answered.

use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;
use postgres_protocol::IsNull;

use crate::conn::WireConn;
use crate::error::{db_error, WireError};
use crate::tag::tag_rows;

/// One call to replay (see [`WireConn::replay_call`]).
pub enum ReplayCall<'a> {
    /// A `Query` message: the text as sent (several statements allowed).
    Simple(&'a str),
    /// `Parse` (when `parse` holds the text: the first use of a named statement, or every use of
    /// the unnamed one), `Bind` with the values as given, `Execute`, `Sync`.
    Extended {
        /// The prepared statement's name (empty: unnamed).
        statement: &'a str,
        /// The text to parse first, if any.
        parse: Option<&'a str>,
        /// Values (`None`: NULL), as the bytes to send.
        params: &'a [Option<Vec<u8>>],
        /// Each value's format (0 text, 1 binary); empty: all text.
        formats: &'a [i16],
    },
}

/// What the server answered to a replayed call.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Command tags in order.
    pub tags: Vec<String>,
    /// Rows affected or returned (from the tags, else the data rows).
    pub rows: u64,
    /// The first error: SQLSTATE and message.
    pub error: Option<(String, String)>,
    /// Transaction state after the call (`I`, `T`, `E`).
    pub txn: Option<char>,
}

impl WireConn {
    /// Sends one call as an application sent it (see [`ReplayCall`]) and reads the answer up to
    /// `ReadyForQuery`: command tags, rows, the error and the transaction state. A server error
    /// is part of the answer, not an `Err` (the connection stays usable); `Err` is a broken
    /// connection (or one the server is ending, class 57P). A `COPY … FROM STDIN` whose data is not
    /// there is refused with CopyFail.
    pub fn replay_call(&mut self, call: &ReplayCall<'_>) -> Result<Answer, WireError> {
        match call {
            ReplayCall::Simple(sql) => frontend::query(sql, &mut self.wbuf)?,
            ReplayCall::Extended {
                statement,
                parse,
                params,
                formats,
            } => {
                if let Some(sql) = parse {
                    frontend::parse(statement, sql, std::iter::empty(), &mut self.wbuf)?;
                }
                let formats: Vec<i16> = match formats.is_empty() {
                    true => vec![0],
                    false => formats.to_vec(),
                };
                frontend::bind(
                    "",
                    statement,
                    formats,
                    params.iter(),
                    |p, buf| match p {
                        Some(v) => {
                            buf.extend_from_slice(v);
                            Ok(IsNull::No)
                        }
                        None => Ok(IsNull::Yes),
                    },
                    std::iter::once(0i16),
                    &mut self.wbuf,
                )
                .map_err(|e| match e {
                    frontend::BindError::Conversion(e) => {
                        WireError::Protocol(format!("cannot encode a parameter: {e}"))
                    }
                    frontend::BindError::Serialization(e) => WireError::Io(e),
                })?;
                frontend::execute("", 0, &mut self.wbuf)?;
                frontend::sync(&mut self.wbuf);
            }
        }
        self.send()?;
        let mut a = Answer::default();
        let mut data_rows = 0u64;
        loop {
            match self.recv()? {
                Message::ReadyForQuery(body) => {
                    a.txn = Some(body.status() as char);
                    return Ok(a);
                }
                Message::CommandComplete(body) => {
                    let tag = body.tag().map_err(WireError::Io)?.to_string();
                    a.rows += tag_rows(&tag).unwrap_or(data_rows);
                    data_rows = 0;
                    a.tags.push(tag);
                }
                Message::EmptyQueryResponse => a.tags.push(String::new()),
                Message::DataRow(_) => data_rows += 1,
                Message::ErrorResponse(body) => {
                    if let e @ WireError::Db { .. } = db_error(&body) {
                        if let WireError::Db { code, message, .. } = &e {
                            if !code.ends_session() {
                                a.error.get_or_insert((code.to_string(), message.clone()));
                            }
                        }
                        if e.sqlstate().is_some_and(|c| c.ends_session()) {
                            self.broken = true;
                            return Err(e);
                        }
                    }
                    data_rows = 0;
                }
                Message::CopyInResponse(_) => {
                    frontend::copy_fail(
                        "dbscope replay: the COPY data was not captured",
                        &mut self.wbuf,
                    )?;
                    self.send()?;
                }
                _ => {}
            }
        }
    }
}
