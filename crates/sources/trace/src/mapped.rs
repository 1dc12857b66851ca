//! A read-only memory map of a plain trace file (memmap2), so that the workers classify the page
//! cache in place instead of having the kernel copy every byte into a chunk buffer first. The
//! `unsafe` of this crate's file access, with its note (the other `unsafe` is `line`'s SSE2
//! byte compares); the same approach as `dbscope-tpch`'s `mapped` module.
#![allow(unsafe_code)]

use std::fs::File;

/// Maps all of `file`, which was `len` bytes long when it was looked at, read-only; or `None` when
/// it cannot be mapped (empty, a special file, a platform without mmap) or its length changed
/// since: the caller then reads it with `read()` as before.
pub(crate) fn map_whole(file: &File, len: u64) -> Option<memmap2::Mmap> {
    if len == 0 || usize::try_from(len).is_err() {
        return None;
    }
    // SAFETY: the map is read-only and private to this process, and we never write through it.
    // What memmap2 cannot rule out is another process truncating or rewriting the file while it
    // is read: a truncation makes reads past the new end fault (SIGBUS), a rewrite changes bytes
    // under the classifier. Both are the hazard ripgrep accepts for its mmap search and `dbscope
    // tpch` for its lineitem files; a trace being profiled is a finished file that nothing
    // rewrites, and the classifier validates every field it reads, so changed bytes give a
    // different answer or a warning, never UB in our code (all access is through bounds-checked
    // slices of the map). A file whose length differs from the one looked at is not mapped.
    let map = unsafe { memmap2::MmapOptions::new().map(file) }.ok()?;
    if map.len() as u64 != len {
        return None;
    }
    // Each worker reads its chunks from start to end: ask for read-ahead.
    let _ = map.advise(memmap2::Advice::Sequential);
    Some(map)
}

/// Lets the kernel drop this process's mappings of `range` of `map` once its bytes have been read,
/// so that the resident size stays that of the chunks in flight rather than growing to the whole
/// file (the page cache keeps the pages).
pub(crate) fn release(map: &memmap2::Mmap, range: std::ops::Range<usize>) {
    // SAFETY: MADV_DONTNEED on a read-only private file map that is never written (so it holds no
    // private copies of pages) only drops the page table entries: the next access to those bytes
    // faults them in again from the page cache, with the same contents. A worker may still read a
    // page at the range's edges (the neighbouring chunk's): it sees the same bytes. memmap2 checks
    // that the range is inside the map and aligns its start to a page.
    let _ = unsafe {
        map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, range.start, range.len())
    };
}
