//! Builds a large 10046 trace for bench/trace-vs-wc by concatenating trace files again and again, each
//! copy with its cursor numbers and `tim=` values shifted so that copies do not collide.
//!
//! Usage: cargo run --release -p dbscope-trace --example gen_bench_trace -- OUT SIZE_MB FILE…

use std::io::{BufWriter, Write};

fn shift(line: &str, cursor_add: u64, tim_add: u64, out: &mut String) {
    // Rewrites `#<digits>` (cursor numbers, but not `#bytes`/`obj#`) and `tim=<digits>`.
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let (prefix_len, add) = if b[i] == b'#' && b.get(i + 1).is_some_and(|c| c.is_ascii_digit())
        {
            (1, cursor_add)
        } else if b[i..].starts_with(b"tim=") {
            (4, tim_add)
        } else {
            (0, 0)
        };
        if prefix_len == 0 {
            let ch = line[i..].chars().next().expect("in range");
            out.push(ch);
            i += ch.len_utf8();
            continue;
        }
        out.push_str(&line[i..i + prefix_len]);
        i += prefix_len;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        match line[start..i].parse::<u64>() {
            Ok(v) if v != 0 => out.push_str(&(v + add).to_string()),
            _ => out.push_str(&line[start..i]),
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: gen_bench_trace OUT SIZE_MB FILE…");
        std::process::exit(2);
    }
    let target = args[2].parse::<u64>().expect("SIZE_MB is a number") << 20;
    let inputs: Vec<String> = args[3..]
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{p}: {e}")))
        .collect();
    let mut out = BufWriter::with_capacity(
        1 << 20,
        std::fs::File::create(&args[1]).expect("create OUT"),
    );
    let mut written = 0u64;
    let mut copy = 0u64;
    let mut buf = String::new();
    while written < target {
        for text in &inputs {
            for line in text.lines() {
                buf.clear();
                shift(line, copy * 7919, copy * 10_000_000, &mut buf);
                buf.push('\n');
                out.write_all(buf.as_bytes()).expect("write");
                written += buf.len() as u64;
            }
        }
        copy += 1;
    }
    out.flush().expect("flush");
    eprintln!(
        "wrote {written} bytes ({copy} copies of {} files)",
        inputs.len()
    );
}
