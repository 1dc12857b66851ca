//! Read-only memory maps of input files (memmap2), so TPC-H Q1's mappers and `import csv` parse
//! the page cache in place instead of copying every byte into a buffer first, and the guard that
//! keeps a file shrinking under its map from killing the process. With `stats::ld`'s x87 sums, the
//! `unsafe` of this crate, each with its note.
//!
//! A file truncated by another process while it is mapped makes reads of the pages past its new
//! end fault (SIGBUS), which by default kills the process with no message (issue 27). Every map
//! made here is registered in a fixed table that a SIGBUS handler reads: a fault inside a
//! registered map is answered by mapping a page of zeros over the faulting page, and the map's
//! `faulted` flag is raised; the reader then sees zeros, and its caller, which checks the flag
//! (and the file's length) after the scan, reports the file as changed instead of an answer. A
//! fault anywhere else restores the handler that was there before and returns, so the access
//! faults again under it (Rust's stack-overflow report, or the default action) as if we had never
//! been there.
#![allow(unsafe_code)]

use std::cell::UnsafeCell;
use std::fs::File;
use std::mem::MaybeUninit;
use std::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// A read-only map of a file from some offset to its end, guarded against the file shrinking.
pub struct Mapped {
    map: memmap2::Mmap,
    slot: usize,
    faulted: Arc<AtomicBool>,
}

impl Mapped {
    /// True when a read of the map faulted (the file shrank under it) and read zeros instead.
    pub fn faulted(&self) -> bool {
        self.faulted.load(Ordering::Acquire)
    }

    /// The flag [`Mapped::faulted`] reads, for a caller that hands the map away (Parquet).
    pub fn fault_flag(&self) -> Arc<AtomicBool> {
        self.faulted.clone()
    }
}

impl std::ops::Deref for Mapped {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.map
    }
}

impl AsRef<[u8]> for Mapped {
    fn as_ref(&self) -> &[u8] {
        &self.map
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // Unregistered before the fields drop (and memmap2 unmaps): nothing reads the map any more.
        unregister(self.slot);
    }
}

/// Maps `file` read-only from byte `offset` to its end, or `None` when it cannot be mapped (a pipe,
/// a special file, nothing left after `offset`, a platform without mmap, no SIGBUS guard to be
/// had): the caller then reads it with `read()` instead. memmap2 aligns the offset to a page itself.
pub fn map_from(file: &File, offset: u64) -> Option<Mapped> {
    if !guard_installed() {
        return None;
    }
    // SAFETY: the map is read-only and private to this process, and we never write through it.
    // What memmap2 cannot rule out is another process truncating or rewriting the file while the
    // job runs. A truncation makes reads past the new end fault (SIGBUS): the map is registered
    // below before anything reads it, so the handler answers such a fault with zeros and raises
    // the map's flag, which the callers check (the answer is then refused). A rewrite changes
    // bytes under the parser, which validates every field it reads: a parse error or a different
    // answer (the length check catches most), never UB in our code (all access is through
    // bounds-checked slices of the map).
    let map = unsafe { memmap2::MmapOptions::new().offset(offset).map(file) }.ok()?;
    let faulted = Arc::new(AtomicBool::new(false));
    let slot = register(map.as_ptr() as usize, map.len(), Arc::as_ptr(&faulted))?;
    // The range is read once from start to end: ask for read-ahead.
    let _ = map.advise(memmap2::Advice::Sequential);
    Some(Mapped { map, slot, faulted })
}

/// Maps that can be guarded at once; a map beyond them is not made (the caller reads instead).
const SLOTS: usize = 256;
/// Slot states, in the low two bits of [`Slot::state`]; the bits above count changes, so that
/// the handler can tell a slot it read while it changed (a seqlock).
const FREE: usize = 0;
const BUSY: usize = 1;
const LIVE: usize = 2;

/// One registered map: its address range and its flag.
struct Slot {
    state: AtomicUsize,
    start: AtomicUsize,
    len: AtomicUsize,
    flag: AtomicPtr<AtomicBool>,
}

static TABLE: [Slot; SLOTS] = [const {
    Slot {
        state: AtomicUsize::new(FREE),
        start: AtomicUsize::new(0),
        len: AtomicUsize::new(0),
        flag: AtomicPtr::new(std::ptr::null_mut()),
    }
}; SLOTS];

/// Registers `[start, start + len)` with its flag (which must live until [`unregister`]).
fn register(start: usize, len: usize, flag: *const AtomicBool) -> Option<usize> {
    for (i, s) in TABLE.iter().enumerate() {
        let cur = s.state.load(Ordering::Relaxed);
        if cur & 3 != FREE {
            continue;
        }
        if s.state
            .compare_exchange(cur, cur + BUSY, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            continue;
        }
        s.start.store(start, Ordering::Relaxed);
        s.len.store(len, Ordering::Relaxed);
        s.flag.store(flag.cast_mut(), Ordering::Relaxed);
        // (gen, BUSY) → (gen + 1, LIVE): publishes the fields.
        s.state.store((cur & !3) + 4 + LIVE, Ordering::Release);
        return Some(i);
    }
    None
}

fn unregister(i: usize) {
    let s = &TABLE[i];
    let cur = s.state.load(Ordering::Relaxed);
    s.state.store((cur & !3) + 4 + FREE, Ordering::Release);
}

/// The disposition of SIGBUS before ours, restored for faults that are not in a registered map.
struct OldAction(UnsafeCell<MaybeUninit<libc::sigaction>>);
// SAFETY: written once, by `sigaction` while installing the handler (inside the `OnceLock`
// initialiser, before the handler can run), and only read after that.
unsafe impl Sync for OldAction {}
static OLD: OldAction = OldAction(UnsafeCell::new(MaybeUninit::uninit()));
static PAGE: AtomicUsize = AtomicUsize::new(0);

/// Installs the SIGBUS handler once; false when that failed (then nothing is mapped).
fn guard_installed() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if page <= 0 || (page as usize).count_ones() != 1 {
            return false;
        }
        PAGE.store(page as usize, Ordering::Relaxed);
        // SAFETY: `act` is zeroed (a valid empty `sigaction`) and then filled in; `sigemptyset`
        // gets a pointer to its live mask. `sigaction` writes the old disposition into `OLD`,
        // which nothing reads before this call returns (the handler cannot run before it is
        // installed, and it is installed by this very call).
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_sigbus as *const () as usize;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(libc::SIGBUS, &act, (*OLD.0.get()).as_mut_ptr()) == 0
        }
    })
}

/// The SIGBUS handler: async-signal-safe (atomics and the `mmap` and `sigaction` system calls only;
/// no allocation, no locks).
extern "C" fn on_sigbus(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler; for SIGBUS `si_addr` is
    // the faulting address.
    let addr = unsafe { (*info).si_addr() } as usize;
    for s in TABLE.iter() {
        let before = s.state.load(Ordering::Acquire);
        if before & 3 != LIVE {
            continue;
        }
        let (start, len) = (
            s.start.load(Ordering::Relaxed),
            s.len.load(Ordering::Relaxed),
        );
        let flag = s.flag.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        if s.state.load(Ordering::Relaxed) != before || addr < start || addr - start >= len {
            continue;
        }
        let page = PAGE.load(Ordering::Relaxed);
        let base = addr & !(page - 1);
        // SAFETY: `base` is the start of a page of a live read-only map of ours (the faulting
        // thread is reading it, so it is not unmapped under us); MAP_FIXED replaces that one page
        // with zeros, private and read-only like the map, and munmap of the map later removes it
        // with the rest. The flag outlives the registration (see `Mapped`).
        let p = unsafe {
            libc::mmap(
                base as *mut libc::c_void,
                page,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if p != libc::MAP_FAILED {
            // SAFETY: see above: the flag lives while the map is registered.
            unsafe { (*flag).store(true, Ordering::Release) };
            return;
        }
        break;
    }
    // Not a map of ours (or no page to put there): the old disposition, and the access faults
    // again under it.
    // SAFETY: `OLD` was filled by the `sigaction` call that installed this handler.
    unsafe { libc::sigaction(libc::SIGBUS, (*OLD.0.get()).as_ptr(), std::ptr::null_mut()) };
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    /// Issue 27 item 5: a file truncated while mapped reads zeros past its new end and says so,
    /// instead of killing the process with SIGBUS.
    #[test]
    fn a_file_truncated_under_its_map_faults_into_zeros_not_sigbus() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("big.tbl");
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(&vec![b'x'; 1 << 20]).unwrap();
        drop(f);
        let file = std::fs::File::open(&path).unwrap();
        let map = super::map_from(&file, 4096).expect("a file maps");
        assert_eq!(map.len(), (1 << 20) - 4096);
        assert_eq!(map[0], b'x');
        assert!(!map.faulted());
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(100_000)
            .unwrap();
        // Inside the new length: the file's bytes; past it: zeros, and the flag.
        assert_eq!(map[100_000 - 4096 - 1], b'x');
        assert!(!map.faulted());
        let sum: u64 = map.iter().map(|&b| b as u64).sum();
        assert!(sum < (1u64 << 20) * b'x' as u64);
        assert!(map.faulted(), "the fault is reported");
        // Another map of the same file is guarded on its own.
        let again = super::map_from(&file, 0).expect("maps");
        assert!(!again.faulted());
        assert_eq!(again.len(), 100_000);
    }
}
