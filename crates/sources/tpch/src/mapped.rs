//! Read-only memory maps of input files (memmap2), so Q1's mappers parse the page cache in place
//! instead of copying every byte into a buffer first. The one `unsafe` of this crate, with its note.
#![allow(unsafe_code)]

use std::fs::File;

/// Maps `file` read-only from byte `offset` to its end, or `None` when it cannot be mapped (a pipe,
/// a special file, nothing left after `offset`, a platform without mmap): the caller then reads it
/// with `read()` instead. memmap2 aligns the offset to a page itself.
pub fn map_from(file: &File, offset: u64) -> Option<memmap2::Mmap> {
    // SAFETY: the map is read-only and private to this process, and we never write through it.
    // What memmap2 cannot rule out is another process truncating or rewriting the file while the
    // job runs: a truncation makes reads past the new end fault (SIGBUS), a rewrite changes bytes
    // under the parser. Both are the same hazard ripgrep accepts for its mmap search; the inputs
    // here are generated files that nothing else writes during a query, and the parser validates
    // every field it reads, so changed bytes give a parse error or a different answer, never UB in
    // our code (all access is through bounds-checked slices of the map).
    let map = unsafe { memmap2::MmapOptions::new().offset(offset).map(file) }.ok()?;
    // The range is read once from start to end: ask for read-ahead.
    let _ = map.advise(memmap2::Advice::Sequential);
    Some(map)
}
