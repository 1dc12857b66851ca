//! A read-only memory map of a plain trace file (memmap2), so that the workers classify the page
//! cache in place instead of having the kernel copy every byte into a chunk buffer first. The one
//! `unsafe` of this crate, with its note; the same approach as `dbscope-tpch`'s `mapped` module.
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
