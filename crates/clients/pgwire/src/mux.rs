//! Sessions multiplexed over fewer client threads, as pgbench's `-j` does: each session runs its
//! ordinary blocking code on a coroutine stack of its own, and where it would block on its socket
//! it gives the thread to another session instead; the thread sleeps in `poll(2)` only when every
//! session it runs is waiting for the server, and yields its CPU first ([`yield_before_sleep`]).
//!
//! Why: a commit-heavy workload on a small machine is bound by context switches. With one thread
//! per session every response wakes its own thread; a thread that runs several sessions often
//! finds a second response already there when it wakes for the first. Timing stays what a client
//! sees: a session reads the clock when it gets the thread back, as any multiplexing client does
//! (pgbench included), after at most the few microseconds another session's step takes.
//!
//! Only connections whose target can switch them to non-blocking mode take part
//! (`dbscope_db::Session::multiplex`); elsewhere [`wait_fd`] blocks in `poll(2)` as before.
//!
//! With `conninfo` (the OS user name), the one module of this crate with `unsafe`: `poll(2)`,
//! `sched_yield(2)`, and coroutines that borrow the runner's scoped data (each one is finished or
//! unwound before [`run_group`] returns).
#![allow(unsafe_code)]

use std::cell::Cell;
use std::io;
use std::os::fd::RawFd;
use std::time::Instant;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};

/// Stack of each session's coroutine: the session loop, the wire client and the recorder need
/// far less; pages are only touched as used.
const STACK_BYTES: usize = 1 << 20;

/// What a suspended session waits for: `fd` to become ready for `events` (`POLLIN`/`POLLOUT`),
/// or, with `fd` -1 (which `poll(2)` skips), the clock to pass `until` (open-loop pacing).
#[derive(Clone, Copy, Debug)]
struct Wait {
    fd: RawFd,
    events: i16,
    until: Option<Instant>,
}

type SessionYielder = Yielder<(), Wait>;

thread_local! {
    /// The yielder of the coroutine running on this thread now; null outside [`run_group`].
    static CURRENT: Cell<*const SessionYielder> = const { Cell::new(std::ptr::null()) };
}

/// Waits until `fd` is ready for `events` (`libc::POLLIN` or `libc::POLLOUT`): inside
/// [`run_group`], by suspending this session so that the thread runs the others; elsewhere, by
/// blocking in `poll(2)`.
pub fn wait_fd(fd: RawFd, events: i16) -> io::Result<()> {
    let y = CURRENT.with(Cell::get);
    if y.is_null() {
        return poll_one(fd, events);
    }
    // SAFETY: `CURRENT` is set by the coroutine body in `run_group` to its own yielder, which
    // lives as long as that coroutine runs, and the coroutine running now is the one calling.
    unsafe {
        (*y).suspend(Wait {
            fd,
            events,
            until: None,
        })
    };
    // Other sessions ran meanwhile and set their own yielder: this one is running again.
    CURRENT.with(|c| c.set(y));
    Ok(())
}

/// [`wait_fd`] for a client that has its own way of waiting alone (a timeout, say): inside
/// [`run_group`] it suspends this session until `fd` is ready and returns `Some`; on a thread of
/// its own it returns `None` at once and the caller waits as it always does.
pub fn wait_fd_if_shared(fd: RawFd, events: i16) -> Option<io::Result<()>> {
    if CURRENT.with(Cell::get).is_null() {
        return None;
    }
    Some(wait_fd(fd, events))
}

/// Waits until `until` (open-loop pacing: the next operation's intended start): inside
/// [`run_group`], by suspending this session so that the thread runs the others meanwhile;
/// elsewhere, by sleeping the thread.
pub fn sleep_until(until: Instant) {
    let y = CURRENT.with(Cell::get);
    if y.is_null() {
        let now = Instant::now();
        if until > now {
            std::thread::sleep(until - now);
        }
        return;
    }
    // SAFETY: as in `wait_fd`.
    unsafe {
        (*y).suspend(Wait {
            fd: -1,
            events: 0,
            until: Some(until),
        })
    };
    CURRENT.with(|c| c.set(y));
}

/// Makes this thread's timed sleeps (here and in `std::thread::sleep`) end when asked, once per
/// thread: the kernel's default timer slack lets a sleep run up to 50 µs long, so that timers
/// can be merged. A paced operation then started 75–80 µs after its intended start on an idle
/// machine (MariaDB, 2 sessions at 500 commits/s: p10 74.5, median 79.3 µs), which the latency
/// from the intended start counted as the database's. With a slack of 1 ns what is left is the
/// wake-up itself.
pub fn precise_sleeps() {
    thread_local! {
        static DONE: Cell<bool> = const { Cell::new(false) };
    }
    DONE.with(|d| {
        if !d.get() {
            d.set(true);
            // SAFETY: PR_SET_TIMERSLACK takes the slack in ns and changes this thread's timers
            // only; a failure leaves the default slack.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
        }
    });
}

/// Gives this thread's CPU to whatever else is ready to run on it, before the thread sleeps
/// waiting for its server.
///
/// Why: on the server's own machine the request just sent woke the server process, often on this
/// CPU. pgbench, whose client then runs on, is usually preempted by it there and finds the answer
/// waiting when it reads (0.025 `ppoll` per `pgbench -S` transaction); dbscope's client mostly
/// was not, and slept instead (0.12 per lookup), its answer then waking it from the other CPU.
/// Yielding first lets the server run here at once. Measured 2026-12-07 (bench/lookup-vs-pgbench
/// set-up, 4 sessions on 2 client threads, alternated rounds of 5 s, with pgbench -S in each):
/// lookups/s 1.066× the same build without the yield (median of 12 rounds' ratios, 9 above 1);
/// a yield after every send instead, 1.19× (12 of 12) but 0.94× this one. `run commit` 1.03×,
/// the tpcb-like script 1.06× (4 rounds each). Where nothing else is ready (a remote server) it
/// is one system call per sleep, a fraction of a µs against the round trip.
fn yield_before_sleep() {
    // SAFETY: no arguments; it cannot fail on Linux.
    unsafe { libc::sched_yield() };
}

/// Blocks until `fd` is ready for `events` (after [`yield_before_sleep`]).
fn poll_one(fd: RawFd, events: i16) -> io::Result<()> {
    let mut p = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    yield_before_sleep();
    loop {
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut p, 1, -1) } >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Runs every task to completion on this thread, each on a coroutine of its own, switching
/// whenever one waits in [`wait_fd`]. A task's panic comes out of this call.
pub fn run_group<'a>(tasks: Vec<Box<dyn FnOnce() + 'a>>) -> io::Result<()> {
    let mut coros = Vec::with_capacity(tasks.len());
    for task in tasks {
        let stack = DefaultStack::new(STACK_BYTES)?;
        let body = move |y: &SessionYielder, ()| {
            CURRENT.with(|c| c.set(y as *const SessionYielder));
            task();
            CURRENT.with(|c| c.set(std::ptr::null()));
        };
        // SAFETY: the closure may borrow data of lifetime 'a; every coroutine is run to its end or
        // dropped (unwinding its stack) before this function returns, so within 'a.
        coros.push(Some(unsafe {
            Coroutine::with_stack_unchecked(stack, body)
        }));
    }
    let mut waits: Vec<Option<Wait>> = vec![None; coros.len()];
    let resume = |coros: &mut Vec<Option<Coroutine<(), Wait, (), DefaultStack>>>,
                  waits: &mut Vec<Option<Wait>>,
                  i: usize| {
        let Some(co) = coros[i].as_mut() else { return };
        match co.resume(()) {
            CoroutineResult::Yield(w) => waits[i] = Some(w),
            CoroutineResult::Return(()) => {
                coros[i] = None;
                waits[i] = None;
            }
        }
        CURRENT.with(|c| c.set(std::ptr::null()));
    };
    for i in 0..coros.len() {
        resume(&mut coros, &mut waits, i);
    }
    let mut fds: Vec<libc::pollfd> = Vec::with_capacity(coros.len());
    let mut who: Vec<usize> = Vec::with_capacity(coros.len());
    loop {
        fds.clear();
        who.clear();
        let mut earliest: Option<Instant> = None;
        for (i, w) in waits.iter().enumerate() {
            if let Some(w) = w {
                fds.push(libc::pollfd {
                    fd: w.fd,
                    events: w.events,
                    revents: 0,
                });
                who.push(i);
                if let Some(u) = w.until {
                    earliest = Some(earliest.map_or(u, |e| e.min(u)));
                }
            }
        }
        if fds.is_empty() {
            return Ok(());
        }
        // Sleepers bound the wait (ppoll: a timeout in ns, where poll's is in ms).
        let timeout = earliest.map(|u| {
            let left = u.saturating_duration_since(Instant::now());
            libc::timespec {
                tv_sec: left.as_secs() as libc::time_t,
                tv_nsec: left.subsec_nanos() as libc::c_long,
            }
        });
        let tp = timeout
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // Every session waits: the thread would sleep.
        yield_before_sleep();
        // SAFETY: `fds` holds `fds.len()` valid pollfds; `tp` is null or points at `timeout`.
        let n = unsafe {
            libc::ppoll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                tp,
                std::ptr::null(),
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        let now = earliest.map(|_| Instant::now());
        for (k, p) in fds.iter().enumerate() {
            let due = match (waits[who[k]].and_then(|w| w.until), now) {
                (Some(u), Some(now)) => u <= now,
                _ => false,
            };
            // Errors and hang-ups wake the session too: its next read or write reports them.
            if p.revents != 0 || due {
                let i = who[k];
                waits[i] = None;
                resume(&mut coros, &mut waits, i);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    /// Reads exactly `buf.len()` bytes from a non-blocking socket, waiting in `wait_fd`.
    fn read_exact(s: &mut UnixStream, buf: &mut [u8]) {
        let mut got = 0;
        while got < buf.len() {
            match s.read(&mut buf[got..]) {
                Ok(0) => panic!("closed"),
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    wait_fd(s.as_raw_fd(), libc::POLLIN).unwrap()
                }
                Err(e) => panic!("{e}"),
            }
        }
    }

    #[test]
    fn sessions_on_one_thread_interleave_where_they_wait() {
        // Two "sessions", each waiting for its peer's reply; the peers answer in the opposite
        // order to the one the sessions started in, so a thread that blocked on the first
        // session's socket would never see the second one's reply.
        let (mut a, mut peer_a) = UnixStream::pair().unwrap();
        let (mut b, mut peer_b) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        b.set_nonblocking(true).unwrap();
        let order = std::sync::Mutex::new(Vec::new());
        let server = std::thread::spawn(move || {
            let mut buf = [0u8; 1];
            peer_b.read_exact(&mut buf).unwrap();
            peer_a.read_exact(&mut buf).unwrap();
            peer_b.write_all(b"B").unwrap();
            // A answers only after B's session has replied again.
            peer_b.read_exact(&mut buf).unwrap();
            peer_a.write_all(b"A").unwrap();
        });
        let tasks: Vec<Box<dyn FnOnce() + '_>> = vec![
            Box::new(|| {
                a.write_all(b"a").unwrap();
                let mut r = [0u8; 1];
                read_exact(&mut a, &mut r);
                order.lock().unwrap().push(r[0]);
            }),
            Box::new(|| {
                b.write_all(b"b").unwrap();
                let mut r = [0u8; 1];
                read_exact(&mut b, &mut r);
                order.lock().unwrap().push(r[0]);
                b.write_all(b"!").unwrap();
            }),
        ];
        run_group(tasks).unwrap();
        server.join().unwrap();
        assert_eq!(*order.lock().unwrap(), b"BA");
    }

    #[test]
    fn outside_a_group_wait_fd_blocks_until_ready() {
        let (mut a, mut peer) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            peer.write_all(b"x").unwrap();
        });
        let mut r = [0u8; 1];
        read_exact(&mut a, &mut r);
        assert_eq!(&r, b"x");
        t.join().unwrap();
    }

    #[test]
    fn a_pacing_wait_gives_the_thread_to_the_other_sessions() {
        // Session 1 sleeps until its next intended start; session 2 must run meanwhile, so its
        // mark comes first although it was started second.
        let order = std::sync::Mutex::new(Vec::new());
        let start = std::time::Instant::now();
        let tasks: Vec<Box<dyn FnOnce() + '_>> = vec![
            Box::new(|| {
                sleep_until(start + std::time::Duration::from_millis(30));
                order.lock().unwrap().push(1);
            }),
            Box::new(|| order.lock().unwrap().push(2)),
        ];
        run_group(tasks).unwrap();
        assert_eq!(*order.lock().unwrap(), vec![2, 1]);
        assert!(start.elapsed() >= std::time::Duration::from_millis(30));
    }

    #[test]
    fn a_panicking_session_comes_out_of_run_group() {
        let r = std::panic::catch_unwind(|| {
            let tasks: Vec<Box<dyn FnOnce()>> = vec![Box::new(|| panic!("boom"))];
            let _ = run_group(tasks);
        });
        assert!(r.is_err());
    }
}
