//! The target checked before a replay starts: every table the capture's statements use is there.

use std::collections::HashSet;

use dbscope_core::redact::redact;

use super::config::ReplayConfig;
use super::plan::{not_replayed, Plan};
use super::{connect_with, ReplayCall};
use crate::fingerprint::preparable;
use crate::CaptureError;

/// Fails before starting when the target lacks tables the capture's statements use: every
/// distinct statement `PREPARE` can take is prepared (which checks the names without running
/// anything) and the missing relations are named. Other statements (`TRUNCATE`, `COPY`…) are
/// not checked: `PREPARE` of them is a syntax error the server would log once per replay.
pub(super) fn check_target(cfg: &ReplayConfig, plan: &Plan) -> Result<(), CaptureError> {
    let (mut conn, _) = connect_with(&cfg.target, "dbscope-replay/check", None).map_err(|why| {
        CaptureError::Connect {
            message: format!("cannot connect to {}: {why}", redact(&cfg.target)),
            source: why,
        }
    })?;
    let mut seen = HashSet::new();
    let mut missing = Vec::new();
    for c in plan.sessions.iter().flat_map(|s| s.calls.iter()) {
        if not_replayed(c).is_some()
            || !preparable(&c.sql)
            || !seen.insert(c.sql.as_str())
            || seen.len() > 2000
        {
            continue;
        }
        // One statement only: a multi-statement string cannot be prepared.
        let body = c.sql.trim().trim_end_matches(';');
        if body.contains(';') {
            continue;
        }
        let answer = conn.replay_call(&ReplayCall::Simple(&format!(
            "PREPARE dbscope_replay_check AS {body}"
        )));
        match answer {
            Ok(a) => match a.error {
                Some((code, message)) if code == "42P01" => {
                    if !missing.contains(&message) {
                        missing.push(message);
                    }
                }
                Some(_) => {}
                None => {
                    let _ =
                        conn.replay_call(&ReplayCall::Simple("DEALLOCATE dbscope_replay_check"));
                }
            },
            Err(e) => {
                return Err(CaptureError::Database {
                    message: format!("checking the target failed: {e}"),
                    source: e,
                })
            }
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(CaptureError::Config(format!(
            "the target {} lacks tables the capture uses: {} (reset it to a restore point taken \
             before the capture: --restore NAME)",
            redact(&cfg.target),
            missing.join("; ")
        )))
    }
}
