//! Throughput of the `code` verifier: responses per second for a typical 5-test stdin/stdout
//! problem (a correct solution, so every test runs: 1 syntax check + 5 tests = 6 sandboxed
//! Python processes per response) with 1, 2 and 4 sandbox runs in parallel (`sandbox.
//! concurrency`, and as many caller threads).
//!
//!     cargo run --release -p rl-verifier --example code_throughput [-- RESPONSES_PER_SETTING]
//!
//! Results are in docs/verifier.md ("code", throughput).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use rl_verifier::{CodeConfig, CodeVerdict};

const RESPONSE: &str = "I sort the numbers and print them.\n\n```python\nn = int(input())\n\
xs = sorted(map(int, input().split()))\nprint(*xs)\n```\n";

const TESTS: &str = r#"{"inputs": ["3\n3 1 2\n", "1\n5\n", "5\n5 4 3 2 1\n", "4\n-1 0 -1 7\n", "2\n10 9\n"],
 "outputs": ["1 2 3\n", "5\n", "1 2 3 4 5\n", "-1 -1 0 7\n", "9 10\n"]}"#;

fn main() {
    let per_setting: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(40);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("machine: {cpus} CPUs; {per_setting} responses per setting; 5 tests each");
    println!("| sandboxes in parallel | responses/s | sandboxed runs/s | ms per response (wall) |");
    println!("|---|---|---|---|");
    for k in [1usize, 2, 4] {
        let mut cfg = CodeConfig::default();
        cfg.sandbox.concurrency = k;
        let verifier = match cfg.build() {
            Ok(v) => Arc::new(v),
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        };
        // Warm-up (page cache, the interpreter's files).
        let warm = verifier.check(RESPONSE, TESTS).expect("valid tests");
        assert_eq!(warm.verdict, CodeVerdict::Passed, "{}", warm.detail);
        let next = Arc::new(AtomicUsize::new(0));
        let start = Instant::now();
        let handles: Vec<_> = (0..k)
            .map(|_| {
                let (verifier, next) = (Arc::clone(&verifier), Arc::clone(&next));
                std::thread::spawn(move || {
                    while next.fetch_add(1, Ordering::Relaxed) < per_setting {
                        let r = verifier.check(RESPONSE, TESTS).expect("valid tests");
                        assert_eq!(r.verdict, CodeVerdict::Passed, "{}", r.detail);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("worker");
        }
        let secs = start.elapsed().as_secs_f64();
        let rate = per_setting as f64 / secs;
        println!(
            "| {k} | {rate:.1} | {:.0} | {:.0} |",
            rate * 6.0,
            1000.0 * secs / per_setting as f64 * k as f64
        );
    }
}
