//! `rl_models::threads::join_compute_pool` (its own test binary: it builds the process's global
//! rayon pool once).

use burn::backend::Flex;
use burn::tensor::{Tensor, TensorData};

#[test]
fn the_calling_thread_becomes_worker_zero_and_operations_still_compute() {
    assert_eq!(rayon::current_thread_index(), None, "not a worker before");
    assert!(
        rl_models::threads::join_compute_pool(),
        "builds the global pool"
    );
    assert_eq!(rayon::current_thread_index(), Some(0), "worker 0 after");
    let expected = std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    assert_eq!(
        rayon::current_num_threads(),
        expected,
        "rayon's default size (RAYON_NUM_THREADS, else one per core), this thread counted"
    );
    assert!(
        !rl_models::threads::join_compute_pool(),
        "only once per process"
    );

    // A parallel loop and a large element-wise tensor op (split across the pool) compute every
    // element: sum of 0..n and (2i + 1) for 300 K elements.
    use rayon::prelude::*;
    let n = 300_000u64;
    assert_eq!((0..n).into_par_iter().sum::<u64>(), n * (n - 1) / 2);
    let v: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let t = Tensor::<Flex, 1>::from_data(TensorData::new(v, [n as usize]), &Default::default());
    let got: Vec<f32> = (t * 2.0 + 1.0).into_data().to_vec().unwrap();
    assert!(
        got.iter()
            .enumerate()
            .all(|(i, &g)| g == 2.0 * i as f32 + 1.0)
    );

    // another thread's operations are handed to the pool and still compute
    let other = std::thread::spawn(|| {
        assert_eq!(rayon::current_thread_index(), None);
        (0..1000u64).into_par_iter().map(|i| i * i).sum::<u64>()
    });
    assert_eq!(
        other.join().unwrap(),
        (0..1000u64).map(|i| i * i).sum::<u64>()
    );
}
