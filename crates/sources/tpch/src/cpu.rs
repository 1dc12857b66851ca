//! CPU time of the calling thread, for the Q1 job's cumulative CPU (Hadoop's "CPU time spent").
//! std has no thread CPU clock; `clock_gettime(CLOCK_THREAD_CPUTIME_ID)` is the precise one (ns,
//! scheduler accounting), where `/proc/self/stat` counts 10 ms ticks — too coarse for jobs that
//! take a tenth of a second.
#![allow(unsafe_code)]

/// CPU time (user + system) the calling thread has used, in ns; 0 if the clock cannot be read.
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into `ts`, a valid and exclusively borrowed local.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if r != 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_busy_thread_uses_cpu_and_the_clock_never_goes_back() {
        let a = super::thread_cpu_ns();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        let b = super::thread_cpu_ns();
        assert!(b > a, "{a} {b} {x}");
    }
}
