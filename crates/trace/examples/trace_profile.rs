//! Profiles trace files with the library alone and prints R and the time taken: a quick way to
//! measure the reader without building the CLI. Usage: trace_profile FILE…

use std::path::Path;
use std::time::Instant;

use dbscope_trace::profile::{profile_files, ProfileOptions};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let paths: Vec<&Path> = args.iter().map(Path::new).collect();
    let t = Instant::now();
    match profile_files(&paths, &ProfileOptions::default()) {
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
