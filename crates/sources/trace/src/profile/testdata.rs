//! A small hand-written 10046 trace for the profile's unit tests, with its figures worked out.
//!
//! One session. Statement `aaaaaaaaaaaa1` (depth 0) is parsed (e=20, c=10), then fetched
//! (e=500, c=100): inside the FETCH it runs the recursive `bbbbbbbbbbbb2` (EXEC e=150, c=30, with
//! a 100 µs single-block read inside) and waits 300 µs on a multi-block read itself. After the
//! FETCH the session waits 2,000 µs for the client, between calls.
//!
//! By hand: R = 20 + 500 (root calls) + 2,000 (between-call wait) = 2,520 µs. Own CPU: PARSE 10,
//! EXEC 30, FETCH 100 − 30 = 70. Unaccounted-for inside calls: PARSE 20 − 10 = 10, EXEC
//! 150 − 30 − 100 = 20, FETCH (500 − 150) − 70 − 300 = −20; 10 in all. The wall span runs from
//! the PARSE's start (tim 1,000,000,000) to the wait's end (1,000,002,600): 2,600 µs, 80 of them
//! in no call and no wait.

/// The trace (microsecond times: a 19c header).
pub(super) const TRACE: &str = "\
Oracle Database 19c Enterprise Edition Release 19.0.0.0.0 - Production
Version 19.21.0.0.0

=====================
PARSING IN CURSOR #1 len=15 dep=0 uid=100 oct=3 lid=100 tim=1000000000 hv=111 ad='a1' sqlid='aaaaaaaaaaaa1'
select * from t
END OF STMT
PARSE #1:c=10,e=20,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=1000000020
=====================
PARSING IN CURSOR #2 len=18 dep=1 uid=0 oct=3 lid=0 tim=1000000045 hv=222 ad='b2' sqlid='bbbbbbbbbbbb2'
select x from dual
END OF STMT
WAIT #2: nam='db file sequential read' ela= 100 file#=4 block#=10 blocks=1 obj#=77 tim=1000000180
EXEC #2:c=30,e=150,p=1,cr=1,cu=0,mis=0,r=1,dep=1,og=1,plh=0,tim=1000000200
WAIT #1: nam='db file scattered read' ela= 300 file#=4 block#=20 blocks=8 obj#=78 tim=1000000500
FETCH #1:c=100,e=500,p=5,cr=10,cu=0,mis=0,r=3,dep=0,og=1,plh=0,tim=1000000540
WAIT #1: nam='SQL*Net message from client' ela= 2000 driver id=1 #bytes=1 p3=0 obj#=-1 tim=1000002600
";

/// The name the trace is read under (warnings and `file:line` say it).
pub(super) const NAME: &str = "t.trc";
