//! Profiles trace files with the library alone and prints R and the time taken: a quick way to
//! measure the reader without building the CLI. Usage: [CHUNK=bytes] trace_profile FILE…
//! (`CHUNK` sets the chunk size; 0 reads plain files as a stream, as gzip files and pipes are.)

use std::path::Path;
use std::time::Instant;

use dbscope_trace::profile::{profile_files, ProfileOptions};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let paths: Vec<&Path> = args.iter().map(Path::new).collect();
    let t = Instant::now();
    let mut opts = ProfileOptions::default();
    if let Some(c) = std::env::var("CHUNK").ok().and_then(|c| c.parse().ok()) {
        opts.chunk_bytes = c;
    }
    match profile_files(&paths, &opts) {
        Ok(p) => {
            let s = t.elapsed().as_secs_f64();
            let bytes: u64 = p.files.iter().map(|f| f.bytes).sum();
            println!(
                "R = {} µs, {} lines, {:.2} s, {:.0} MB/s",
                p.r_us,
                p.files.iter().map(|f| f.lines).sum::<u64>(),
                s,
                bytes as f64 / 1e6 / s
            );
        }
        Err(e) => {
            eprintln!("trace_profile: {e}");
            std::process::exit(2);
        }
    }
}
