//! Fuzz target: any bytes through the path every input takes — cut into chunks, classified into
//! compact items, the 10046 state machine, the Method R accounting and the profile. The first byte
//! picks a chunk size, so that chunk borders fall anywhere: the profile (or the error) must be the
//! same as in one chunk, and its rows must add up to R.
#![no_main]

use dbscope_trace::profile::{profile_bytes, render_text, ProfileOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (chunk, data) = match data.split_first() {
        Some((&c, rest)) => (1 + c as usize, rest),
        None => (1, data),
    };
    for strict in [false, true] {
        let whole = ProfileOptions {
            strict,
            ..ProfileOptions::default()
        };
        let cut = ProfileOptions {
            chunk_bytes: chunk,
            ..whole.clone()
        };
        let shown = |opts: &ProfileOptions| match profile_bytes("fuzz.trc", data, opts) {
            Ok(p) => {
                assert_eq!(p.rows_total_us, p.r_us);
                let json = serde_json::to_string(&p).expect("a profile is JSON");
                format!("{}\n{json}", render_text(&p, usize::MAX))
            }
            Err(e) => format!("error: {e}"),
        };
        assert_eq!(shown(&whole), shown(&cut), "chunks of {chunk} bytes");
    }
});
