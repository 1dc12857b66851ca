//! The accept loop and each client connection's setup: its startup message, the upstream
//! connected, then the session handed to a forwarding loop (`relay`).

use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use dbscope_core::{Recorder, Sessions, StopSignal};
use dbscope_pgwire::{connect_socket, RawSocket};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

use crate::wire::{startup_params, CANCEL_REQUEST, GSSENC_REQUEST, PROTOCOL_3, SSL_REQUEST};

use super::listen::{Listener, Reader, Writer};
use super::quiet::rejoin;
use super::relay::{Handoff, Relays};
use super::shared::*;

/// Accepts clients until `stopped` (the stop signal or the duration, seen by the recording
/// thread) or an accept error, then stops every session and waits for them to hand in what they
/// recorded.
pub(super) async fn serve_all(
    listener: Listener,
    base: Arc<Base>,
    sessions: Sessions,
    stop: Arc<StopSignal>,
    stopped: watch::Receiver<bool>,
    relays: Arc<Relays>,
) {
    let mut tasks = tokio::task::JoinSet::new();
    let mut next = 0u32;
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((r, mut w, peer)) if base.max_sessions
                    .is_some_and(|m| base.live.open.load(Ordering::Relaxed) >= m) =>
                {
                    // No descriptors for another client and its upstream (issue 27: the proxy
                    // ran out and exited, dropping every client): this one is refused as a
                    // server refuses one too many (53300), the others go on.
                    let session = next;
                    next += 1;
                    base.live.refused.fetch_add(1, Ordering::Relaxed);
                    let why = format!(
                        "sorry, too many clients already: the capture proxy's open-file limit \
                         ({}) allows {} sessions",
                        base.fd_limit.unwrap_or_default(),
                        base.max_sessions.unwrap_or_default()
                    );
                    base.calls.push_session(json!({"type": "session", "session": session,
                        "connect_ns": base.clock.now_ns(), "client": peer,
                        "refused_by": "proxy", "error": why}));
                    tasks.spawn(async move {
                        let _ = w.write_all(&error_response("53300", &why)).await;
                        let _ = w.shutdown().await;
                        drop(r);
                    });
                }
                Ok((r, w, peer)) => {
                    let session = next;
                    next += 1;
                    base.live.sessions.fetch_add(1, Ordering::Relaxed);
                    let rec = sessions.recorder(session);
                    tasks.spawn(serve(r, w, peer, session, Arc::clone(&base), rec,
                        stopped.clone(), Arc::clone(&relays)));
                }
                Err(e) if matches!(e.kind(), io::ErrorKind::Interrupted
                    | io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset) => {}
                // Out of descriptors all the same (another process's share of the system's,
                // or the blocking pool's): wait for one to be freed rather than end the capture.
                Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(e) => {
                    stop.fail(format!("accepting connections failed: {e}"));
                    break;
                }
            },
            _ = until_stopped(stopped.clone()) => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    drop(listener);
    // After an accept error too, the sessions end when the recording thread sees the (failed)
    // stop signal: each hands in what it recorded.
    while tasks.join_next().await.is_some() {}
    // The last recorder is gone with the sessions: the recording thread's pump ends.
    drop(sessions);
}

/// One client connection: its startup message, then the forwarding loop serves it.
#[allow(clippy::too_many_arguments)]
async fn serve(
    mut cr: Reader,
    mut cw: Writer,
    peer: String,
    session: u32,
    base: Arc<Base>,
    rec: Recorder,
    stopped: watch::Receiver<bool>,
    relays: Arc<Relays>,
) {
    base.live.open.fetch_add(1, Ordering::Relaxed);
    let connected = base.clock.now_ns();
    let mut line = json!({"type": "session", "session": session, "connect_ns": connected,
        "client": peer});
    let started = tokio::select! {
        s = startup(&mut cr, &mut cw, &base, &mut line) => s,
        _ = until_stopped(stopped.clone()) => Ok(None),
    };
    let why = match started {
        Ok(Some((ur, uw))) => match (rejoin(cr, cw), rejoin(ur, uw)) {
            // The forwarding loop serves it from here, and counts its end.
            (Ok(client), Ok(server)) => match relays.hand(Handoff {
                client,
                server,
                session,
                rec,
                line,
            }) {
                Ok(()) => return,
                Err(h) => {
                    line = h.line;
                    Some("the proxy's forwarding loop is gone (see the capture's error)".into())
                }
            },
            (Err(e), _) | (_, Err(e)) => Some(format!("cannot hand the session over: {e}")),
        },
        Ok(None) => None,
        Err(why) => Some(why),
    };
    if let Some(why) = why {
        line["error"] = json!(why);
        line["disconnect_ns"] = json!(base.clock.now_ns());
        base.calls.push_session(line);
    }
    base.live.open.fetch_sub(1, Ordering::Relaxed);
}

async fn until_stopped(mut stopped: watch::Receiver<bool>) {
    let _ = stopped.wait_for(|s| *s).await;
}

/// Reads the client's startup message (declining TLS and GSS encryption), connects to the
/// upstream and sends it there. `None` for a cancel request (forwarded, nothing to record).
async fn startup(
    cr: &mut Reader,
    cw: &mut Writer,
    base: &Base,
    line: &mut serde_json::Value,
) -> Result<Option<(Reader, Writer)>, String> {
    loop {
        let mut head = [0u8; 8];
        match tokio::time::timeout(STARTUP_TIMEOUT, cr.read_exact(&mut head)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(format!("no startup message from the client: {e}")),
            Err(_) => {
                return Err(format!(
                    "no startup message from the client in {} s",
                    STARTUP_TIMEOUT.as_secs()
                ))
            }
        }
        let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let code = u32::from_be_bytes([head[4], head[5], head[6], head[7]]);
        if !(8..=10_000).contains(&len) {
            return Err(format!("not a PostgreSQL startup message (length {len})"));
        }
        let mut rest = vec![0u8; len - 8];
        match tokio::time::timeout(STARTUP_TIMEOUT, cr.read_exact(&mut rest)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(format!("startup message cut short: {e}")),
            Err(_) => return Err("startup message cut short: timed out".to_string()),
        }
        let mut msg = head.to_vec();
        msg.extend_from_slice(&rest);
        match code {
            SSL_REQUEST | GSSENC_REQUEST => {
                cw.write_all(b"N")
                    .await
                    .map_err(|e| format!("client went away: {e}"))?;
            }
            CANCEL_REQUEST => {
                let (_, mut uw) = open_upstream(&base.upstream).await?;
                let _ = uw.write_all(&msg).await;
                let _ = uw.shutdown().await;
                return Ok(None);
            }
            PROTOCOL_3 => {
                for (k, v) in startup_params(&rest) {
                    if matches!(k.as_str(), "user" | "database" | "application_name") {
                        line[k] = json!(v);
                    }
                }
                let (ur, mut uw) = match open_upstream(&base.upstream).await {
                    Ok(up) => up,
                    Err(why) => {
                        let _ = cw
                            .write_all(&error_response(
                                "08006",
                                &format!(
                                "dbscope capture proxy: cannot reach the upstream server: {why}"
                            ),
                            ))
                            .await;
                        return Err(why);
                    }
                };
                uw.write_all(&msg)
                    .await
                    .map_err(|e| format!("upstream went away: {e}"))?;
                return Ok(Some((ur, uw)));
            }
            other => {
                let _ = cw
                    .write_all(&error_response(
                        "08006",
                        &format!(
                            "dbscope capture proxy: unsupported protocol {}.{}",
                            other >> 16,
                            other & 0xffff
                        ),
                    ))
                    .await;
                return Err(format!("unsupported protocol version code {other}"));
            }
        }
    }
}

/// Connects to the upstream (libpq's rules, on a blocking-pool thread: the event loop goes on).
async fn open_upstream(spec: &str) -> Result<(Reader, Writer), String> {
    let spec = spec.to_string();
    let raw = tokio::task::spawn_blocking(move || connect_socket(&spec))
        .await
        .map_err(|e| format!("connecting failed: {e}"))?
        .map_err(|e| e.to_string())?;
    let fd: std::os::fd::OwnedFd = match raw {
        RawSocket::Tcp(s) => {
            let _ = s.set_nodelay(true);
            s.set_nonblocking(true).map_err(|e| e.to_string())?;
            s.into()
        }
        RawSocket::Unix(s) => {
            s.set_nonblocking(true).map_err(|e| e.to_string())?;
            s.into()
        }
    };
    super::quiet::split(fd).map_err(|e| e.to_string())
}

/// A FATAL `ErrorResponse` (SQLSTATE 08006) with `message`.
fn error_response(code: &str, message: &str) -> Vec<u8> {
    let mut body = Vec::new();
    for (t, v) in [
        (b'S', "FATAL"),
        (b'V', "FATAL"),
        (b'C', code),
        (b'M', message),
    ] {
        body.push(t);
        body.extend_from_slice(v.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut m = vec![b'E'];
    m.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    m.extend_from_slice(&body);
    m
}
