//! The response-time profile of one or more traces (Method R), as text and JSON.
//!
//! By event, by statement, the recursive call tree, a skew histogram per event and the slowest
//! waits.
//!
//! The rows of the event profile add up to R exactly: the CPU of db calls (their own, children
//! excluded, one row per call kind), every wait event (inside calls and between them), and the
//! unaccounted-for time inside calls. R itself is computed independently as
//! `Σ e(root calls) + Σ ela(between-call waits)` and both are reported.
//!
//! Everything is taken within each session's window, from its first `tim` on (from where the wait
//! began when that line is a WAIT): a call or wait that
//! began before it (the call that switched tracing on, a trace started mid-call) counts only from
//! there, and the profile says how much was clipped (as Method R does), so R fits the wall span.
//! The statement rows and the call tree show `e` as the trace wrote it.
//!
//! `report` holds the options and the profile's shape; `collect` is the [`Sink`](crate::sink::Sink)
//! that accumulates the reader's records; `finish` turns the accumulators into the profile; `text`
//! renders it.

mod collect;
mod finish;
mod report;
#[cfg(test)]
mod testdata;
mod text;

use std::path::Path;

use crate::error::TraceReadError;
use crate::reader::{Options, Reader};
use collect::Collector;

pub use report::{
    EventRow, Profile, ProfileOptions, StatementRow, TopWait, TreeNode, SKEW_BOUNDS_US,
};
pub use text::{clipped_line, format_wall, render_text, render_text_with};

/// Reads the files (in order; each file's sessions are separate) and builds their profile.
pub fn profile_files(paths: &[&Path], opts: &ProfileOptions) -> Result<Profile, TraceReadError> {
    profile_with(opts, |reader| {
        for p in paths {
            reader.read_path(p)?;
        }
        Ok(())
    })
}

/// Profiles one trace held in memory (`name` is used in warnings); for tests and fuzzing.
pub fn profile_bytes(
    name: &str,
    data: &[u8],
    opts: &ProfileOptions,
) -> Result<Profile, TraceReadError> {
    profile_with(opts, |reader| reader.read(name, data))
}

/// The one place a profile is built: a collector set up from `opts`, a reader over it that `read`
/// feeds, then the collector finished with the reader's tables and warnings.
fn profile_with(
    opts: &ProfileOptions,
    read: impl FnOnce(&mut Reader<'_, Collector>) -> Result<(), TraceReadError>,
) -> Result<Profile, TraceReadError> {
    let mut col = Collector {
        opts: opts.clone(),
        sqlid_match: opts.sqlid.clone(),
        ..Collector::default()
    };
    let (tables, warnings, warning_count) = {
        let mut reader = Reader::new(
            &mut col,
            Options {
                strict: opts.strict,
                keep_params: false,
                chunk_bytes: opts.chunk_bytes,
            },
        );
        read(&mut reader)?;
        (reader.tables, reader.warnings, reader.warning_count)
    };
    Ok(col.finish(&tables, warnings, warning_count))
}
