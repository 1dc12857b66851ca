//! Builds a large 10046 trace of short lines for bench/trace-vs-wc: one session of a commit-heavy
//! application (an OLTP client that inserts or updates a row and commits, over and over), as 19c
//! writes it at level 8. Its two statements are parsed once; then every transaction is an EXEC, the
//! SQL*Net round trip, an XCTEND, the `log file sync` of the commit and the commit's round trip:
//!
//! ```text
//! EXEC #140234061834296:c=98,e=231,p=0,cr=1,cu=5,mis=0,r=1,dep=0,og=1,plh=0,tim=5793959273444
//! WAIT #140234061834296: nam='SQL*Net message to client' ela= 2 driver id=1413697536 #bytes=1 p3=0 obj#=-1 tim=5793959273481
//! WAIT #140234061834296: nam='SQL*Net message from client' ela= 212 driver id=1413697536 #bytes=1 p3=0 obj#=-1 tim=5793959273720
//! XCTEND rlbk=0, rd_only=0, tim=5793959273765
//! WAIT #0: nam='log file sync' ela= 1043 buffer#=101808 sync scn=1266588527 p3=0 obj#=-1 tim=5793959274831
//! WAIT #0: nam='SQL*Net message to client' ela= 1 driver id=1413697536 #bytes=1 p3=0 obj#=-1 tim=5793959274850
//! WAIT #0: nam='SQL*Net message from client' ela= 388 driver id=1413697536 #bytes=1 p3=0 obj#=-1 tim=5793959275262
//! ```
//!
//! Lines average about 90 bytes (the long-line trace of gen_bench_trace about 50 % more). Times
//! come from a fixed pseudo-random sequence: the same arguments always give the same file.
//!
//! With `sync` after SIZE_MB, the shape of seed 001's excerpt instead: after the header nothing
//! but the `log file sync` waits of one cursor, one line each (about 125 bytes), as a trace of a
//! session that commits in a PL/SQL loop shows them:
//!
//! ```text
//! WAIT #47124064145648: nam='log file sync' ela= 1043 buffer#=101808 sync scn=1266588527 p3=0 obj#=-1 tim=1347583167588250
//! ```
//!
//! Usage: cargo run --release -p dbscope-trace --example gen_commit_trace -- OUT SIZE_MB [sync]

use std::fmt::Write as _;
use std::io::{BufWriter, Write};

/// xorshift64*: deterministic, good enough for made-up durations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A duration of `base` µs or so, now and then ten or a hundred times longer (a skewed
    /// distribution, as waits have).
    fn dur(&mut self, base: u64) -> u64 {
        let r = self.next();
        let scale = match r % 100 {
            0 => 100,
            1..=5 => 10,
            _ => 1,
        };
        (base / 2 + (r >> 8) % base.max(1)) * scale
    }
}

const HEADER: &str = "Trace file /u01/app/oracle/diag/rdbms/prod/prod1/trace/prod1_ora_27190.trc
Oracle Database 19c Enterprise Edition Release 19.0.0.0.0 - Production
Version 19.21.0.0.0
Build label:    RDBMS_19.21.0.0.0DBRU_LINUX.X64_230923
ORACLE_HOME:    /u01/app/oracle/product/19.0.0/dbhome_1
System name:\tLinux
Node name:\tdbhost01
Release:\t5.4.17-2136.325.5.1.el8uek.x86_64
Machine:\tx86_64
Instance name: prod1
Redo thread mounted by this instance: 1
Oracle process number: 87
Unix process pid: 27190, NID: 4026531836, image: oracle@dbhost01


*** 2024-03-26T18:58:52.935374-07:00 (PDB1(3))
*** SESSION ID:(1234.56789) 2024-03-26T18:58:52.935423-07:00
*** CLIENT ID:() 2024-03-26T18:58:52.935430-07:00
*** SERVICE NAME:(oltp) 2024-03-26T18:58:52.935433-07:00
*** MODULE NAME:(JDBC Thin Client) 2024-03-26T18:58:52.935436-07:00
*** ACTION NAME:() 2024-03-26T18:58:52.935439-07:00
*** CLIENT DRIVER:(jdbcthin : 19.3.0.0.0) 2024-03-26T18:58:52.935442-07:00
*** CONTAINER ID:(3) 2024-03-26T18:58:52.935445-07:00

";

/// The two statements: cursor, sqlid, hv, text.
const STATEMENTS: [(u64, &str, u64, &str); 2] = [
    (
        140234061834296,
        "8m2v1qj9bqz3s",
        3316436088,
        "INSERT INTO ORDER_EVENTS (ORDER_ID, EVENT_TYPE, CREATED_AT, PAYLOAD) VALUES (:1 , :2 , :3 , :4 )",
    ),
    (
        140234061790512,
        "4x7kd0mgpx1ab",
        2709171073,
        "UPDATE ORDERS SET STATUS = :1 , UPDATED_AT = :2 WHERE ORDER_ID = :3",
    ),
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sync = match args.get(3).map(String::as_str) {
        None => false,
        Some("sync") => true,
        Some(other) => {
            eprintln!("gen_commit_trace: unknown shape {other:?} (only `sync`)");
            std::process::exit(2);
        }
    };
    if !(3..=4).contains(&args.len()) {
        eprintln!("usage: gen_commit_trace OUT SIZE_MB [sync]");
        std::process::exit(2);
    }
    let target = args[2].parse::<u64>().expect("SIZE_MB is a number") << 20;
    let mut out = BufWriter::with_capacity(
        1 << 20,
        std::fs::File::create(&args[1]).expect("create OUT"),
    );
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut tim: u64 = 5_793_959_272_875;
    let mut scn: u64 = 1_266_588_527;
    let mut buf = String::from(HEADER);
    if sync {
        let mut tim: u64 = 1_347_583_167_588_250;
        let mut lines = 0u64;
        let mut written = 0u64;
        while written < target {
            let ela = rng.dur(900);
            tim += ela + rng.dur(300);
            scn += 1 + rng.next() % 60;
            let _ = writeln!(
                buf,
                "WAIT #47124064145648: nam='log file sync' ela= {ela} buffer#={} sync scn={scn} p3=0 obj#=-1 tim={tim}",
                100_000 + rng.next() % 40_000
            );
            lines += 1;
            spill(&mut out, &mut buf, &mut written, false);
        }
        spill(&mut out, &mut buf, &mut written, true);
        eprintln!(
            "wrote {written} bytes, {lines} waits, {:.0} bytes a line",
            written as f64 / lines as f64
        );
        return;
    }
    for (cursor, sqlid, hv, text) in STATEMENTS {
        tim += rng.dur(300);
        let parse_e = rng.dur(400);
        tim += parse_e;
        let _ = write!(
            buf,
            "=====================\n\
             PARSING IN CURSOR #{cursor} len={} dep=0 uid=112 oct={} lid=112 tim={} hv={hv} ad='7f3a9c2d8' sqlid='{sqlid}'\n\
             {text}\n\
             END OF STMT\n\
             PARSE #{cursor}:c={parse_e},e={parse_e},p=0,cr=0,cu=0,mis=1,r=0,dep=0,og=1,plh=0,tim={tim}\n",
            text.len(),
            if text.starts_with("INSERT") { 2 } else { 6 },
            tim - parse_e,
        );
    }
    let mut written = 0u64;
    let mut lines = 0u64;
    let mut txns = 0u64;
    while written < target {
        // One transaction: the insert commits on success (autocommit: its EXEC ends the
        // transaction, one round trip), the update (every fifth) commits on its own (two round
        // trips). Waits after the XCTEND are on cursor #0.
        let autocommit = txns % 5 != 4;
        let (cursor, ..) = STATEMENTS[!autocommit as usize];
        let e = rng.dur(240);
        let c = e * 2 / 5;
        tim += e;
        let (cr, cu) = (1 + rng.next() % 3, 3 + rng.next() % 6);
        let _ = writeln!(
            buf,
            "EXEC #{cursor}:c={c},e={e},p=0,cr={cr},cu={cu},mis=0,r=1,dep=0,og=1,plh=0,tim={tim}"
        );
        let trips: &[(u64, bool)] = if autocommit {
            &[(0, true)]
        } else {
            &[(cursor, false), (0, true)]
        };
        for &(cur, commit) in trips {
            if commit {
                tim += rng.dur(40);
                let _ = writeln!(buf, "XCTEND rlbk=0, rd_only=0, tim={tim}");
                let ela = rng.dur(900);
                tim += ela;
                scn += 1 + rng.next() % 40;
                let _ = writeln!(
                    buf,
                    "WAIT #{cur}: nam='log file sync' ela= {ela} buffer#={} sync scn={scn} p3=0 obj#=-1 tim={tim}",
                    rng.next() % 200_000
                );
                lines += 2;
            }
            let to = rng.dur(2);
            tim += to + 10;
            let _ = writeln!(
                buf,
                "WAIT #{cur}: nam='SQL*Net message to client' ela= {to} driver id=1413697536 #bytes=1 p3=0 obj#=-1 tim={tim}"
            );
            let from = rng.dur(300);
            tim += from;
            let _ = writeln!(
                buf,
                "WAIT #{cur}: nam='SQL*Net message from client' ela= {from} driver id=1413697536 #bytes=1 p3=0 obj#=-1 tim={tim}"
            );
            lines += 2;
        }
        lines += 1;
        txns += 1;
        spill(&mut out, &mut buf, &mut written, false);
    }
    spill(&mut out, &mut buf, &mut written, true);
    eprintln!(
        "wrote {written} bytes, {txns} transactions, {:.0} bytes a line",
        written as f64 / lines as f64
    );
}

/// Writes `buf` out once it holds 1 MiB (or at the `end`, then flushes), counting the bytes.
fn spill(out: &mut impl Write, buf: &mut String, written: &mut u64, end: bool) {
    if end || buf.len() >= 1 << 20 {
        out.write_all(buf.as_bytes()).expect("write");
        *written += buf.len() as u64;
        buf.clear();
    }
    if end {
        out.flush().expect("flush");
    }
}
