//! The statements of a user's script (`dbscope run script`): each statement's result with its
//! column names (for `\gset`), in the three ways pgbench sends SQL (`-M simple|extended|prepared`),
//! and pipelines (`\startpipeline` … `\endpipeline`): statements queued without waiting, their
//! results read at the end, in order.

use fallible_iterator::FallibleIterator;
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;

use crate::conn::WireConn;
use crate::error::{db_error, WireError};
use crate::tag::tag_rows;

/// One statement's result: the rows its command tag reports and, when asked for, its columns and
/// rows as text (`None` for NULL).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StmtResult {
    /// Rows affected or returned (the command tag's count; the rows received when it has none).
    pub affected: u64,
    /// Column names (kept rows only).
    pub columns: Vec<String>,
    /// The rows (kept rows only).
    pub rows: Vec<Vec<Option<String>>>,
}

/// What a pipeline gave back at its end: the results of the statements that ran, in order, and
/// the first failure (the statement's index among those queued, and the error). Statements of the
/// same sync segment after a failure were skipped by the server; they have no result.
#[derive(Debug, Default)]
pub struct PipelineResults {
    /// One entry per queued statement: `Some` when it ran to completion.
    pub results: Vec<Option<StmtResult>>,
    /// The first statement that failed, and why.
    pub failed: Option<(usize, WireError)>,
}

/// Collects one statement's result from its messages.
#[derive(Default)]
struct Collect {
    keep: bool,
    cur: StmtResult,
    data_rows: u64,
}

impl Collect {
    /// Takes a message; returns the finished result at CommandComplete or EmptyQueryResponse.
    fn take(&mut self, msg: Message) -> std::io::Result<Option<StmtResult>> {
        match msg {
            Message::RowDescription(body) if self.keep => {
                let mut fields = body.fields();
                while let Some(f) = fields.next()? {
                    self.cur.columns.push(f.name().to_string());
                }
            }
            Message::DataRow(row) => {
                self.data_rows += 1;
                if self.keep {
                    let buf = row.buffer();
                    let mut cols = Vec::new();
                    let mut ranges = row.ranges();
                    while let Some(r) = ranges.next()? {
                        cols.push(r.map(|r| String::from_utf8_lossy(&buf[r]).into_owned()));
                    }
                    self.cur.rows.push(cols);
                }
            }
            Message::CommandComplete(body) => {
                let mut done = std::mem::take(&mut self.cur);
                done.affected = tag_rows(body.tag()?).unwrap_or(self.data_rows);
                self.data_rows = 0;
                return Ok(Some(done));
            }
            Message::EmptyQueryResponse => {
                self.data_rows = 0;
                return Ok(Some(std::mem::take(&mut self.cur)));
            }
            _ => {}
        }
        Ok(None)
    }
}

impl WireConn {
    /// Runs `sql` with the simple-query protocol (`-M simple`; a compound command's statements
    /// each give a result); rows kept when `keep_rows`.
    pub fn script_simple(
        &mut self,
        sql: &str,
        keep_rows: bool,
    ) -> Result<Vec<StmtResult>, WireError> {
        frontend::query(sql, &mut self.wbuf)?;
        self.send()?;
        self.script_results(keep_rows)
    }

    /// Reads to ReadyForQuery: each statement's result, in order.
    fn script_results(&mut self, keep_rows: bool) -> Result<Vec<StmtResult>, WireError> {
        let mut c = Collect {
            keep: keep_rows,
            ..Collect::default()
        };
        let mut out = Vec::new();
        self.until_ready(|msg| {
            if let Some(r) = c.take(msg)? {
                out.push(r);
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Runs one statement: `stmt` is the name of a prepared statement (`-M prepared`), or `None`
    /// to parse `sql` as the unnamed statement first (`-M extended`). Parameters go as text of
    /// unspecified type, as pgbench sends them.
    pub fn script_extended(
        &mut self,
        stmt: Option<&str>,
        sql: &str,
        params: &[&str],
        keep_rows: bool,
    ) -> Result<StmtResult, WireError> {
        self.queue_extended(stmt, sql, params, keep_rows)?;
        frontend::sync(&mut self.wbuf);
        self.send()?;
        Ok(self.script_results(keep_rows)?.pop().unwrap_or_default())
    }

    /// Writes Parse (unnamed statements), Bind, Describe (when rows are kept) and Execute into the
    /// send buffer.
    fn queue_extended(
        &mut self,
        stmt: Option<&str>,
        sql: &str,
        params: &[&str],
        keep_rows: bool,
    ) -> Result<(), WireError> {
        let name = match stmt {
            Some(n) => n,
            None => {
                frontend::parse("", sql, std::iter::empty(), &mut self.wbuf)?;
                ""
            }
        };
        self.bind_text(name, params)?;
        if keep_rows {
            frontend::describe(b'P', "", &mut self.wbuf)?;
        }
        frontend::execute("", 0, &mut self.wbuf)?;
        Ok(())
    }

    /// Sends one statement of a pipeline without waiting for its result (`\startpipeline` …):
    /// the server runs it as it arrives; [`WireConn::pipeline_end`] reads the results.
    pub fn pipeline_queue(
        &mut self,
        stmt: Option<&str>,
        sql: &str,
        params: &[&str],
        keep_rows: bool,
    ) -> Result<(), WireError> {
        self.queue_extended(stmt, sql, params, keep_rows)?;
        self.send()
    }

    /// Ends a sync segment of a pipeline (`\syncpipeline`) without waiting.
    pub fn pipeline_sync(&mut self) -> Result<(), WireError> {
        frontend::sync(&mut self.wbuf);
        self.send()
    }

    /// Ends a pipeline (`\endpipeline`): sends the last Sync, then reads the results of the
    /// `segments` sync segments (statements queued in each, in order), `keep` saying per statement
    /// whether its rows are kept.
    pub fn pipeline_end(
        &mut self,
        segments: &[usize],
        keep: &[bool],
    ) -> Result<PipelineResults, WireError> {
        frontend::sync(&mut self.wbuf);
        self.send()?;
        let total: usize = segments.iter().sum();
        let mut out = PipelineResults {
            results: vec![None; total],
            failed: None,
        };
        let mut next = 0usize;
        for &n in segments {
            let end = next + n;
            let mut c = Collect::default();
            // Read to this segment's ReadyForQuery; an error skips the segment's remaining
            // statements (the server discards them until the Sync).
            loop {
                match self.recv()? {
                    Message::ReadyForQuery(_) => break,
                    Message::ErrorResponse(body) => {
                        let e = db_error(&body);
                        let ends = matches!(&e, WireError::Db { code, .. } if code.ends_session());
                        if out.failed.is_none() {
                            out.failed = Some((next.min(total.saturating_sub(1)), e));
                        }
                        if ends {
                            self.broken = true;
                            return Ok(out);
                        }
                        next = end;
                        c = Collect::default();
                    }
                    msg => {
                        if next < end {
                            c.keep = keep.get(next).copied().unwrap_or(false);
                            if let Some(r) = c.take(msg)? {
                                out.results[next] = Some(r);
                                next += 1;
                            }
                        }
                    }
                }
            }
            next = end;
        }
        Ok(out)
    }
}
