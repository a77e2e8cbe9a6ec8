//! A data-parallel worker that stops taking part makes the others fail within the timeout with
//! a typed error, instead of hanging. (Its own test binary: the stalled collective call it
//! leaves behind must not share a process with other collective tests.)

use std::time::{Duration, Instant};

use burn::backend::Flex;
use rl_trainer::TrainerError;
use rl_trainer::distributed::{Worker, WorkerConfig};

#[test]
fn a_worker_that_stops_makes_the_other_fail_within_the_timeout() {
    let timeout_s = 2.0;
    let (tx, rx) = std::sync::mpsc::channel();
    for rank in 0..2 {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let cfg = WorkerConfig {
                timeout_s,
                ..WorkerConfig::local(2, rank)
            };
            let worker = Worker::<Flex>::join(cfg, &Default::default()).unwrap();
            // Both take part in one reduction...
            let first = worker.sum("first sum", &[rank as f64 + 1.0]).unwrap();
            // ...then worker 1 is gone, and worker 0 asks for a second.
            let second = (rank == 0).then(|| {
                let t0 = Instant::now();
                (worker.sum("second sum", &[1.0]), t0.elapsed())
            });
            // A timed-out worker refuses further collective calls.
            let after = (rank == 0).then(|| worker.sum("third sum", &[1.0]));
            tx.send((rank, first, second, after)).unwrap();
        });
    }
    let mut got = Vec::new();
    for _ in 0..2 {
        got.push(
            rx.recv_timeout(Duration::from_secs(60))
                .expect("a worker hung"),
        );
    }
    got.sort_by_key(|g| g.0);
    // 1 + 2 summed over both workers, on both.
    assert_eq!(got[0].1, vec![3.0]);
    assert_eq!(got[1].1, vec![3.0]);
    let (second, waited) = got[0].2.take().unwrap();
    match second {
        Err(TrainerError::Distributed { rank: 0, message }) => {
            assert!(
                message.contains("second sum") && message.contains("timeout_s"),
                "{message}"
            );
        }
        other => panic!("worker 0 should time out, got {other:?}"),
    }
    assert!(
        waited >= Duration::from_secs_f64(timeout_s) && waited < Duration::from_secs(30),
        "worker 0 gave up after {waited:?} (timeout {timeout_s} s)"
    );
    match got[0].3.take().unwrap() {
        Err(TrainerError::Distributed { rank: 0, message }) => {
            assert!(
                message.contains("earlier collective call timed out"),
                "{message}"
            );
        }
        other => panic!("a timed-out worker must refuse further calls, got {other:?}"),
    }
}
