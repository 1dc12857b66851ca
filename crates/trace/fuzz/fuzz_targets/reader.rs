//! Fuzz target: any bytes through the line reader, the 10046 state machine, the Method R accounting and
//! the profile; the rows must still add up to R.
#![no_main]

use dbscope_trace::profile::{profile_bytes, ProfileOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let opts = ProfileOptions::default();
    if let Ok(p) = profile_bytes("fuzz.trc", data, &opts) {
        assert_eq!(p.rows_total_us, p.r_us);
    }
    let strict = ProfileOptions {
        strict: true,
        ..ProfileOptions::default()
    };
    let _ = profile_bytes("fuzz.trc", data, &strict);
});
