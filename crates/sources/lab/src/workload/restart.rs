//! A shell command that restarts the server (`lookup --restart-cmd`): waited for by its exit, not
//! by the end of its output, within a time limit and the run's stop signal.
//!
//! Why not `Command::output`: it waits until every process holding the command's stdout or stderr
//! has closed it, and a server started by the command (`pg_ctl restart -w` without `-l` logs to
//! pg_ctl's output) never does — the run hung with no limit and Ctrl-C had nothing to stop (issue
//! 34 item 13). Here the output goes to an unnamed temporary file (never a pipe: a server writing
//! to a pipe nobody reads would block), the command runs in a process group of its own, and at the
//! limit or when the run is stopped that group is ended: SIGTERM, then SIGKILL what is still there
//! a moment later. Its own group also keeps a server it started out of the terminal's Ctrl-C, which
//! is meant for dbscope.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use dbscope_core::StopSignal;

/// Bytes of the end of the command's output kept for messages.
const TAIL_BYTES: u64 = 16 * 1024;
/// How often the command is looked at.
const POLL: Duration = Duration::from_millis(20);
/// How long the process group has between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(2);

/// How a restart command ended.
#[derive(Debug)]
pub enum Ended {
    /// It exited by itself.
    Exited {
        /// Its exit status.
        status: ExitStatus,
        /// Processes it started still run in its process group (typically the server it started,
        /// holding its output open).
        left_running: bool,
    },
    /// It was still running at the limit: its process group was ended.
    TimedOut,
    /// The run was stopped (Ctrl-C, SIGTERM) while it ran: its process group was ended.
    Stopped,
}

/// What running a restart command gave: how it ended, after how long, and the last lines of its
/// output (stdout and stderr together).
#[derive(Debug)]
pub struct Restart {
    /// How it ended.
    pub ended: Ended,
    /// From its start to its end (or to its group being ended).
    pub elapsed: Duration,
    /// Up to 5 last non-empty lines of its output.
    pub tail: Vec<String>,
}

/// Runs `cmd` with `sh -c`, stdin empty, until it exits, `limit` has passed or `stop` is set.
pub fn run(cmd: &str, limit: Duration, stop: &StopSignal) -> std::io::Result<Restart> {
    let mut out = tempfile::tempfile()?;
    let started = Instant::now();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out.try_clone()?))
        .stderr(Stdio::from(out.try_clone()?))
        .process_group(0)
        .spawn()?;
    let ended = loop {
        if let Some(status) = child.try_wait()? {
            break Ended::Exited {
                status,
                left_running: group_alive(child.id()),
            };
        }
        if stop.is_set() {
            end_group(&mut child);
            break Ended::Stopped;
        }
        if started.elapsed() >= limit {
            end_group(&mut child);
            break Ended::TimedOut;
        }
        std::thread::sleep(POLL);
    };
    let elapsed = started.elapsed();
    Ok(Restart {
        ended,
        elapsed,
        tail: tail(&mut out),
    })
}

/// True while some process is in the process group led by `pid` (the command's shell, gone or
/// not).
fn group_alive(pid: u32) -> bool {
    signal(-(pid as i32), 0)
}

/// Sends `sig` to process `pid` (a group when negative; 0: only checks it exists); true when it
/// was sent.
#[allow(unsafe_code)]
fn signal(pid: i32, sig: i32) -> bool {
    // SAFETY: kill(2) takes plain integers and touches no memory of ours. Callers pass the group
    // this module created for the command (a process group's id is not given to a new process
    // while the group has members, reaped leader or not) or, in tests, their own child.
    unsafe { libc::kill(pid, sig) == 0 }
}

/// Ends the command's process group (SIGTERM, then SIGKILL after [`GRACE`]) and reaps its shell.
fn end_group(child: &mut Child) {
    let pgid = -(child.id() as i32);
    signal(pgid, libc::SIGTERM);
    let deadline = Instant::now() + GRACE;
    while Instant::now() < deadline {
        // The shell is reaped first: a zombie still counts as a member of its group. Once it is,
        // its id stays reserved while the group has members, so it still names the group.
        let _ = child.try_wait();
        if !group_alive(child.id()) {
            return;
        }
        std::thread::sleep(POLL);
    }
    signal(pgid, libc::SIGKILL);
    let _ = child.wait();
}

/// The last lines of the output file.
fn tail(f: &mut File) -> Vec<String> {
    let len = f.seek(SeekFrom::End(0)).unwrap_or(0);
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(len.saturating_sub(TAIL_BYTES)))
        .is_ok()
    {
        let _ = f.take(TAIL_BYTES).read_to_end(&mut buf);
    }
    let text = String::from_utf8_lossy(&buf);
    let lines: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    lines[lines.len().saturating_sub(5)..].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alive(pid: i32) -> bool {
        signal(pid, 0)
    }

    fn read_pid(path: &std::path::Path) -> i32 {
        for _ in 0..100 {
            if let Some(p) = std::fs::read_to_string(path)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                return p;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("no pid in {}", path.display());
    }

    /// Issue 34 item 13: a command that leaves a process holding its output open is done when it
    /// exits; what it left is said, and left running.
    #[test]
    fn a_command_that_leaves_its_output_open_is_done_when_it_exits() {
        let d = tempfile::tempdir().unwrap();
        let pid_file = d.path().join("pid");
        let cmd = format!(
            "sleep 300 & echo $! > '{}'; echo restarted",
            pid_file.display()
        );
        let r = run(&cmd, Duration::from_secs(30), &StopSignal::new()).unwrap();
        let bg = read_pid(&pid_file);
        assert!(
            r.elapsed < Duration::from_secs(10),
            "waited {:?}",
            r.elapsed
        );
        match r.ended {
            Ended::Exited {
                status,
                left_running,
            } => assert!(status.success() && left_running, "{:?}", r.ended),
            e => panic!("{e:?}"),
        }
        assert_eq!(r.tail, ["restarted"]);
        assert!(alive(bg), "what the command started is left running");
        signal(bg, libc::SIGKILL);
    }

    /// Issue 34 item 13: at the limit, the command's whole process group is ended, quickly.
    #[test]
    fn a_command_that_never_exits_is_ended_at_the_limit() {
        let d = tempfile::tempdir().unwrap();
        let pid_file = d.path().join("pid");
        let cmd = format!(
            "echo starting >&2; sleep 300 & echo $! > '{}'; wait",
            pid_file.display()
        );
        let r = run(&cmd, Duration::from_millis(500), &StopSignal::new()).unwrap();
        let bg = read_pid(&pid_file);
        assert!(matches!(r.ended, Ended::TimedOut), "{:?}", r.ended);
        assert!(
            r.elapsed < Duration::from_secs(3),
            "ended after {:?}",
            r.elapsed
        );
        assert_eq!(r.tail, ["starting"]);
        for _ in 0..100 {
            if !alive(bg) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!alive(bg), "the group's background sleep was ended");
    }

    /// A stopped run ends the command at once; a command that exits on its own says how.
    #[test]
    fn a_stop_ends_the_command_and_an_exit_status_is_kept() {
        let stop = StopSignal::new();
        stop.interrupt();
        let r = run("sleep 300", Duration::from_secs(60), &stop).unwrap();
        assert!(matches!(r.ended, Ended::Stopped), "{:?}", r.ended);
        assert!(r.elapsed < Duration::from_secs(3), "{:?}", r.elapsed);
        let r = run(
            "echo no such service >&2; exit 3",
            Duration::from_secs(60),
            &StopSignal::new(),
        )
        .unwrap();
        match r.ended {
            Ended::Exited {
                status,
                left_running,
            } => assert_eq!((status.code(), left_running), (Some(3), false)),
            e => panic!("{e:?}"),
        }
        assert_eq!(r.tail, ["no such service"]);
    }
}
