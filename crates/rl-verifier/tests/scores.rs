//! Benchmark scores: pass@k against hand-computed values and a brute-force enumeration of every
//! k-subset, maj@k against a hand-built vote table, the standard error against a hand
//! computation, the bootstrap interval's coverage by simulation at a known success rate, and the
//! prompt/sample split of the noise by hand and by simulation at known rates.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rl_verifier::{Bootstrap, Estimate, Noise, PromptSamples, Scores, maj_at_k, pass_at_k};

/// 1 − C(n−c, k)/C(n, k) by hand: n = 4, c = 1: k = 1 → 1/4; k = 2 → 1 − C(3,2)/C(4,2) = 1 − 3/6;
/// k = 4 → 1. n = 10, c = 3, k = 5 → 1 − C(7,5)/C(10,5) = 1 − 21/252. No correct sample → 0;
/// fewer wrong samples than k → 1.
#[test]
fn pass_at_k_matches_hand_computed_values() {
    let close = |a: f64, b: f64| assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    close(pass_at_k(4, 1, 1).unwrap(), 0.25);
    close(pass_at_k(4, 1, 2).unwrap(), 0.5);
    close(pass_at_k(4, 1, 4).unwrap(), 1.0);
    close(pass_at_k(10, 3, 5).unwrap(), 1.0 - 21.0 / 252.0);
    close(pass_at_k(8, 0, 3).unwrap(), 0.0);
    close(pass_at_k(8, 6, 3).unwrap(), 1.0);
}

/// For every n ≤ 8, c ≤ n, k ≤ n: the fraction of the C(n, k) subsets of k sample indices that
/// contain one of the c correct samples (indices 0..c), counted by enumerating bit masks.
#[test]
fn pass_at_k_equals_the_fraction_of_k_subsets_with_a_correct_sample() {
    for n in 1..=8usize {
        for c in 0..=n {
            for k in 1..=n {
                let (mut subsets, mut hit) = (0u32, 0u32);
                for mask in 0u32..(1 << n) {
                    if mask.count_ones() as usize != k {
                        continue;
                    }
                    subsets += 1;
                    if mask & ((1u32 << c) - 1) != 0 {
                        hit += 1;
                    }
                }
                let brute = hit as f64 / subsets as f64;
                let est = pass_at_k(n, c, k).unwrap();
                assert!(
                    (est - brute).abs() < 1e-12,
                    "n={n} c={c} k={k}: {est} vs {brute}"
                );
            }
        }
    }
}

fn samples(answers: &[Option<&str>], correct: &[bool]) -> PromptSamples {
    PromptSamples {
        correct: correct.to_vec(),
        answers: answers.iter().map(|a| a.map(String::from)).collect(),
    }
}

/// The vote table, by hand, for answers A B A – B B (– = none extracted), A correct:
///
/// | k | votes among the first k | winner | maj@k |
/// |---|---|---|---|
/// | 1 | A 1 | A | 1 |
/// | 2 | A 1, B 1 (tie; A voted first) | A | 1 |
/// | 3 | A 2, B 1 | A | 1 |
/// | 4 | A 2, B 1 (– does not vote) | A | 1 |
/// | 5 | A 2, B 2 (tie; A voted first) | A | 1 |
/// | 6 | A 2, B 3 | B | 0 |
///
/// and a prompt where no sample has an answer scores 0.
#[test]
fn maj_at_k_follows_the_vote_table() {
    let s = samples(
        &[Some("A"), Some("B"), Some("A"), None, Some("B"), Some("B")],
        &[true, false, true, false, false, false],
    );
    let got: Vec<f64> = (1..=6).map(|k| maj_at_k(&s, k).unwrap()).collect();
    assert_eq!(got, vec![1.0, 1.0, 1.0, 1.0, 1.0, 0.0]);
    // The same answers with B correct: the opposite verdicts.
    let b = samples(
        &[Some("A"), Some("B"), Some("A"), None, Some("B"), Some("B")],
        &[false, true, false, false, true, true],
    );
    let got: Vec<f64> = (1..=6).map(|k| maj_at_k(&b, k).unwrap()).collect();
    assert_eq!(got, vec![0.0, 0.0, 0.0, 0.0, 0.0, 1.0]);
    assert_eq!(
        maj_at_k(&samples(&[None, None], &[false, false]), 2).unwrap(),
        0.0
    );
}

/// Per-prompt values 1, 0, 0, 1: mean 1/2, sample variance (4 · 1/4)/3 = 1/3, standard error
/// √(1/3 / 4) = 0.288675…; without resamples the interval is the mean itself.
#[test]
fn standard_error_matches_the_hand_computation() {
    let e = Estimate::of(
        &[1.0, 0.0, 0.0, 1.0],
        Bootstrap {
            resamples: 0,
            seed: 0,
        },
    );
    assert_eq!((e.prompts, e.mean), (4, 0.5));
    assert!((e.std_error - (1.0f64 / 12.0).sqrt()).abs() < 1e-12);
    assert_eq!(e.ci95, (0.5, 0.5));
}

/// Coverage by simulation: 300 benchmarks of 100 prompts whose single sample is correct with
/// p = 0.3. The percentile bootstrap 95 % interval (400 resamples) should contain p in about
/// 95 % of them; with 300 benchmarks the observed rate has a standard deviation of
/// √(0.95 · 0.05 / 300) ≈ 0.013, so it must fall within [0.90, 0.99] (about 4 of them either
/// side; the percentile bootstrap at this size is known to cover slightly below nominal).
/// The same seed gives the same interval.
#[test]
fn bootstrap_interval_covers_a_known_rate() {
    let p = 0.3;
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let mut covered = 0;
    let runs = 300;
    for run in 0..runs {
        let values: Vec<f64> = (0..100)
            .map(|_| if rng.random::<f64>() < p { 1.0 } else { 0.0 })
            .collect();
        let b = Bootstrap {
            resamples: 400,
            seed: run,
        };
        let e = Estimate::of(&values, b);
        assert_eq!(e, Estimate::of(&values, b), "seeded");
        assert!(e.ci95.0 <= e.mean && e.mean <= e.ci95.1);
        if e.ci95.0 <= p && p <= e.ci95.1 {
            covered += 1;
        }
    }
    let rate = covered as f64 / runs as f64;
    assert!((0.90..=0.99).contains(&rate), "coverage {rate}");
}

/// Two prompts of 4 samples: 1 correct (answers A✓ B B –) and 4 correct (C✓ ×4).
/// avg@4 = (1/4 + 1)/2 = 0.625; pass@1 = (1/4 + 1)/2 = 0.625, pass@2 = (1/2 + 1)/2 = 0.75;
/// maj@4: B wins the first prompt (0), C the second (1) → 0.5.
#[test]
fn scores_of_a_benchmark() {
    let prompts = vec![
        samples(
            &[Some("A"), Some("B"), Some("B"), None],
            &[true, false, false, false],
        ),
        samples(&[Some("C"); 4], &[true; 4]),
    ];
    let s = Scores::of(&prompts, &[1, 2, 4], Bootstrap::default()).unwrap();
    assert_eq!(s.samples, 4);
    assert_eq!(s.avg.mean, 0.625);
    assert_eq!(s.pass_at[&1].mean, 0.625);
    assert_eq!(s.pass_at[&2].mean, 0.75);
    assert_eq!(s.pass_at[&4].mean, 1.0);
    assert_eq!(s.maj_at[&4].mean, 0.5);
    // Without recorded answers there is no maj@k, and pass@k is unchanged.
    let bare: Vec<PromptSamples> = prompts
        .iter()
        .map(|p| PromptSamples {
            correct: p.correct.clone(),
            answers: Vec::new(),
        })
        .collect();
    let s2 = Scores::of(&bare, &[1, 2, 4], Bootstrap::default()).unwrap();
    assert!(s2.maj_at.is_empty());
    assert_eq!(s2.pass_at, s.pass_at);
}

/// k = 0, k > n, c > n, prompts with different sample counts and no prompts are errors that
/// name the field.
#[test]
fn bad_arguments_are_errors() {
    assert!(pass_at_k(4, 1, 0).unwrap_err().to_string().contains("`k`"));
    assert!(pass_at_k(4, 1, 5).unwrap_err().to_string().contains("`k`"));
    assert!(
        pass_at_k(4, 5, 1)
            .unwrap_err()
            .to_string()
            .contains("`correct`")
    );
    let uneven = vec![
        samples(&[], &[true, false]),
        samples(&[], &[true, false, true]),
    ];
    let e = Scores::of(&uneven, &[1], Bootstrap::default()).unwrap_err();
    assert!(e.to_string().contains("prompt 1 has 3 samples"), "{e}");
    assert!(Scores::of(&[], &[1], Bootstrap::default()).is_err());
    assert!(maj_at_k(&samples(&[Some("A")], &[true, false]), 1).is_err());
}

/// Two prompts with 1 and 3 correct of 4. within = mean of c(n−c)/(n(n−1)) = (3/12 + 3/12)/2
/// = 0.25; the accuracies 0.25 and 0.75 have sample variance 0.125, so between = 0.125 − 0.25/4
/// = 0.0625. The standard error at P = 2, k = 4 is √((0.0625 + 0.0625)/2) = 0.25, which is the
/// standard error of the accuracies themselves (√(0.125/2)). For ±0.2 over 2 prompts:
/// k ≥ 0.25 / (2·0.04 − 0.0625) = 14.29 → 15 (k = 14 gives 0.2004, k = 15 gives 0.1990); ±0.17
/// is below what the prompts' spread allows (2·0.0289 < 0.0625).
#[test]
fn noise_split_matches_the_hand_computation() {
    let n = Noise::of(&[1, 3], 4).unwrap();
    assert!((n.within - 0.25).abs() < 1e-12 && (n.between - 0.0625).abs() < 1e-12);
    assert!((n.std_error(2, 4) - 0.25).abs() < 1e-12);
    let acc = Estimate::of(
        &[0.25, 0.75],
        Bootstrap {
            resamples: 0,
            seed: 0,
        },
    );
    assert!((acc.std_error - n.std_error(2, 4)).abs() < 1e-12);
    assert_eq!(n.samples_for(0.2, 2), Some(15));
    assert!(n.std_error(2, 14) > 0.2 && n.std_error(2, 15) <= 0.2);
    assert_eq!(n.samples_for(0.17, 2), None);
    assert_eq!(Noise::of(&[1], 4), None);
    assert_eq!(Noise::of(&[1, 0], 1), None);
    // Scores carries the split of its prompts.
    let prompts: Vec<PromptSamples> = [1, 3]
        .iter()
        .map(|&c| PromptSamples {
            correct: (0..4).map(|j| j < c).collect(),
            answers: Vec::new(),
        })
        .collect();
    let s = Scores::of(&prompts, &[1], Bootstrap::default()).unwrap();
    assert_eq!(s.noise, Some(n));
}

/// Prompts whose success rate is 0.1 or 0.5 with equal chance: Var(p) = 0.04 and E[p(1 − p)] =
/// (0.09 + 0.25)/2 = 0.17. From 5000 prompts × 8 samples both are recovered within 0.006
/// (standard errors ≈ 0.0012 and 0.002). Then 300 benchmarks of 100 prompts × 4 samples: the
/// spread of their avg@4 matches √((0.04 + 0.17/4)/100) = 0.0287 within 12 % (the spread of a
/// standard deviation from 300 draws is about 4 %).
#[test]
fn noise_split_recovers_known_variances_by_simulation() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut benchmark = |prompts: usize, n: usize| -> Vec<usize> {
        (0..prompts)
            .map(|_| {
                let p = if rng.random::<bool>() { 0.1 } else { 0.5 };
                (0..n).filter(|_| rng.random::<f64>() < p).count()
            })
            .collect()
    };
    let big = Noise::of(&benchmark(5000, 8), 8).unwrap();
    assert!((big.between - 0.04).abs() < 0.006, "{big:?}");
    assert!((big.within - 0.17).abs() < 0.006, "{big:?}");
    let means: Vec<f64> = (0..300)
        .map(|_| benchmark(100, 4).iter().sum::<usize>() as f64 / 400.0)
        .collect();
    let m = means.iter().sum::<f64>() / 300.0;
    let sd = (means.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 299.0).sqrt();
    let truth = Noise {
        prompts: 0,
        samples: 0,
        within: 0.17,
        between: 0.04,
    }
    .std_error(100, 4);
    assert!((truth - 0.0287).abs() < 1e-4);
    assert!((sd / truth - 1.0).abs() < 0.12, "sd {sd} vs {truth}");
}
