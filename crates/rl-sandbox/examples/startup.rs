//! Start-up cost of the sandbox: N runs of `pass`, sequentially and from two threads with
//! concurrency 2, against plain `python3 -B -s -c pass` without a sandbox.
//!
//! ```text
//! cargo run --release -p rl-sandbox --example startup -- [N] [--work-root DIR] [--resident-gib G]
//! ```
//!
//! `--resident-gib G` first allocates and touches G GiB in this process, to show what `fork`
//! of a large caller (a trainer) adds.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use rl_sandbox::{Program, Sandbox, SandboxConfig};

fn stats(mut ms: Vec<f64>) -> (f64, f64) {
    ms.sort_by(|a, b| a.total_cmp(b));
    let mean = ms.iter().sum::<f64>() / ms.len() as f64;
    let median = ms[ms.len() / 2];
    (mean, median)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let mut n = 50usize;
    let mut work_root: Option<PathBuf> = None;
    let mut resident_gib = 0usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--work-root" => work_root = args.next().map(PathBuf::from),
            "--resident-gib" => {
                resident_gib = args.next().and_then(|v| v.parse().ok()).unwrap_or(0)
            }
            v => n = v.parse().expect("N, --work-root DIR or --resident-gib G"),
        }
    }
    let ballast: Vec<u8> = if resident_gib > 0 {
        let mut v = vec![0u8; resident_gib << 30];
        for i in (0..v.len()).step_by(4096) {
            v[i] = 1;
        }
        v
    } else {
        Vec::new()
    };

    let t = Instant::now();
    let sandbox = Sandbox::new(SandboxConfig {
        concurrency: 2,
        work_root: work_root.clone(),
        ..SandboxConfig::default()
    })
    .expect("sandbox");
    let new_ms = ms(t.elapsed());
    let g = sandbox.guarantees();
    println!(
        "Sandbox::new: {new_ms:.1} ms (Landlock ABI {}, python {} {}, work_root {}, caller \
         resident {} GiB)",
        g.landlock_abi,
        g.python.display(),
        g.python_version,
        g.work_root.display(),
        ballast.len() >> 30
    );
    let program = Program {
        source: "pass\n".into(),
        ..Program::default()
    };

    // Warm-up.
    for _ in 0..3 {
        assert!(sandbox.run_python(&program).unwrap().status.success());
    }

    let mut seq = Vec::with_capacity(n);
    let mut walls = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let r = sandbox.run_python(&program).unwrap();
        seq.push(ms(t.elapsed()));
        walls.push(ms(r.wall));
        assert!(r.status.success(), "{r:?}");
    }
    let (mean, median) = stats(seq);
    let (wmean, wmedian) = stats(walls);
    println!(
        "sandboxed, sequential:    mean {mean:.1} ms, median {median:.1} ms per run \
         (Run::wall, fork to reaped: mean {wmean:.1}, median {wmedian:.1})"
    );

    let t = Instant::now();
    let per_thread: Vec<Vec<f64>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    (0..n / 2)
                        .map(|_| {
                            let t = Instant::now();
                            let r = sandbox.run_python(&program).unwrap();
                            assert!(r.status.success());
                            ms(t.elapsed())
                        })
                        .collect()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let total = t.elapsed();
    let runs: Vec<f64> = per_thread.into_iter().flatten().collect();
    let count = runs.len();
    let (mean, median) = stats(runs);
    println!(
        "sandboxed, 2 threads:     mean {mean:.1} ms, median {median:.1} ms per run; {count} runs \
         in {:.0} ms = {:.1} runs/s",
        ms(total),
        count as f64 / total.as_secs_f64()
    );

    let mut plain = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let s = Command::new(&g.python)
            .args(["-B", "-s", "-c", "pass"])
            .status()
            .unwrap();
        assert!(s.success());
        plain.push(ms(t.elapsed()));
    }
    let (mean, median) = stats(plain);
    println!("plain python3 -c pass:    mean {mean:.1} ms, median {median:.1} ms per run");
    drop(ballast);
}
