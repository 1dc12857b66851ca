//! Fuzz target: the line classifier on any single line.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = dbscope_trace::line::classify(data);
});
