//! Benchmark scores over verified samples: avg@k, the unbiased pass@k estimator, maj@k, each with
//! its standard error over prompts and a seeded bootstrap 95 % interval.
//!
//! For a prompt with n verified samples of which c are correct:
//!
//! * **avg@n** = c / n, the per-prompt accuracy (AIME's "avg@32").
//! * **pass@k** (k ≤ n) = 1 − C(n − c, k) / C(n, k): the probability that at least one of k
//!   samples drawn without replacement from the n is correct — the unbiased estimator of Chen et
//!   al. 2021 ("Evaluating Large Language Models Trained on Code", eq. 1), computed as their
//!   numerically stable product 1 − ∏_{i = n−c+1}^{n} (1 − k / i).
//! * **maj@k** (k ≤ n): 1 if the most frequent extracted answer among the first k samples is a
//!   correct one, else 0 (majority voting, as in Minerva and DeepSeekMath). Samples without an
//!   extracted answer do not vote; a tie goes to the answer whose first vote came first; a prompt
//!   where no sample has an answer scores 0. Answers are compared as strings, so pass the
//!   verifier's normalised prediction ([`crate::Verification`]'s extracted answer).
//!
//! A benchmark's score is the mean over prompts ([`Estimate::mean`]). Its uncertainty is over
//! prompts: the standard error s / √P (s the sample standard deviation of the P per-prompt
//! values) and a percentile bootstrap interval (prompts resampled with replacement,
//! `resamples` times, from a seeded ChaCha8 stream, so reruns give the same interval).
//!
//! How that uncertainty splits between prompts and samples is [`Noise`]: with prompt i's true
//! success rate p_i and its n samples Bernoulli(p_i), the per-prompt accuracy c_i / n has
//! variance Var(p) + E[p(1 − p)] / n across prompts. More samples per prompt shrink only the
//! second term; the first needs more prompts.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::ConfigError;

/// One prompt's verified samples, in sample order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PromptSamples {
    /// Whether each sample was verified correct.
    pub correct: Vec<bool>,
    /// Each sample's extracted (normalised) answer, `None` where none was found; empty when
    /// answers were not recorded (then maj@k cannot be computed).
    pub answers: Vec<Option<String>>,
}

/// pass@k of one prompt with `c` correct among `n` samples: 1 − C(n − c, k) / C(n, k).
///
/// Errors when `k` is 0, `k > n` or `c > n`.
pub fn pass_at_k(n: usize, c: usize, k: usize) -> Result<f64, ConfigError> {
    if k == 0 || k > n {
        return Err(ConfigError::InvalidValue(rl_core::InvalidValue {
            field: "k",
            value: format!("{k} with {n} samples"),
            expected: "1 <= k <= samples per prompt",
        }));
    }
    if c > n {
        return Err(ConfigError::InvalidValue(rl_core::InvalidValue {
            field: "correct",
            value: format!("{c} of {n} samples"),
            expected: "at most the number of samples",
        }));
    }
    if n - c < k {
        // Every k-subset holds a correct sample.
        return Ok(1.0);
    }
    let mut none_correct = 1.0f64;
    for i in (n - c + 1)..=n {
        none_correct *= 1.0 - k as f64 / i as f64;
    }
    Ok(1.0 - none_correct)
}

/// maj@k of one prompt: 1 if the majority answer among the first `k` samples is correct, else 0
/// (rules in the module documentation). Errors when `k` is 0, more than the samples, or the
/// answers were not recorded for every sample.
pub fn maj_at_k(samples: &PromptSamples, k: usize) -> Result<f64, ConfigError> {
    let n = samples.correct.len();
    if k == 0 || k > n {
        return Err(ConfigError::InvalidValue(rl_core::InvalidValue {
            field: "k",
            value: format!("{k} with {n} samples"),
            expected: "1 <= k <= samples per prompt",
        }));
    }
    if samples.answers.len() != n {
        return Err(ConfigError::InvalidValue(rl_core::InvalidValue {
            field: "answers",
            value: format!("{} answers for {n} samples", samples.answers.len()),
            expected: "one extracted answer (or none) per sample",
        }));
    }
    // answer → (votes, first sample index)
    let mut votes: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (i, a) in samples.answers[..k].iter().enumerate() {
        if let Some(a) = a {
            votes.entry(a.as_str()).or_insert((0, i)).0 += 1;
        }
    }
    let winner = votes
        .values()
        .max_by(|(va, ia), (vb, ib)| va.cmp(vb).then(ib.cmp(ia)));
    Ok(match winner {
        Some(&(_, first)) if samples.correct[first] => 1.0,
        _ => 0.0,
    })
}

/// How the bootstrap interval is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bootstrap {
    /// Resamples of the prompts (0: no interval).
    pub resamples: usize,
    /// Seed of the resampling stream.
    pub seed: u64,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Self {
            resamples: 1000,
            seed: 0,
        }
    }
}

/// A benchmark score: the mean over prompts with its uncertainty.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// Prompts.
    pub prompts: usize,
    /// Mean of the per-prompt values.
    pub mean: f64,
    /// Standard error of the mean over prompts, s / √P (0 for fewer than 2 prompts).
    pub std_error: f64,
    /// Percentile bootstrap 95 % interval (2.5th and 97.5th percentiles of the resampled
    /// means; both equal to the mean without resamples).
    pub ci95: (f64, f64),
}

impl Estimate {
    /// The estimate of per-prompt values `values`.
    pub fn of(values: &[f64], bootstrap: Bootstrap) -> Self {
        let p = values.len();
        if p == 0 {
            return Self::default();
        }
        let mean = values.iter().sum::<f64>() / p as f64;
        let std_error = if p < 2 {
            0.0
        } else {
            let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (p - 1) as f64;
            (var / p as f64).sqrt()
        };
        let ci95 = if bootstrap.resamples == 0 {
            (mean, mean)
        } else {
            let mut rng = ChaCha8Rng::seed_from_u64(bootstrap.seed);
            let mut means: Vec<f64> = (0..bootstrap.resamples)
                .map(|_| (0..p).map(|_| values[rng.random_range(0..p)]).sum::<f64>() / p as f64)
                .collect();
            means.sort_by(f64::total_cmp);
            (percentile(&means, 0.025), percentile(&means, 0.975))
        };
        Self {
            prompts: p,
            mean,
            std_error,
            ci95,
        }
    }
}

/// The q-quantile of sorted values, linearly interpolated between order statistics (numpy's
/// default "linear" method).
fn percentile(sorted: &[f64], q: f64) -> f64 {
    let h = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// The scores of a set of prompts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Scores {
    /// Samples per prompt (every prompt has the same number).
    pub samples: usize,
    /// avg@n: the mean per-prompt accuracy.
    pub avg: Estimate,
    /// pass@k for each requested k.
    pub pass_at: BTreeMap<usize, Estimate>,
    /// maj@k for each requested k (empty when answers were not recorded).
    pub maj_at: BTreeMap<usize, Estimate>,
    /// avg@n's variance split between prompts and samples (`None` below 2 prompts or 2
    /// samples per prompt).
    #[serde(default)]
    pub noise: Option<Noise>,
}

/// avg@n's variance split into the spread of the prompts' success rates and the sampling noise
/// of each prompt's n samples (a one-way random-effects model of Bernoulli samples).
///
/// Derivation: given p_i, c_i ~ Binomial(n, p_i), so E(c(n − c)) = n·E(c) − E(c²) =
/// n²p − (np(1 − p) + n²p²) = n(n − 1)·p(1 − p); hence `within`, the mean over prompts of
/// c(n − c) / (n(n − 1)), is unbiased for E[p(1 − p)]. Var(c/n) = Var(p) + E[p(1 − p)] / n, so
/// `between` is the sample variance of c/n less `within / n` (0 when sampling noise explains
/// all of it). With P prompts of k samples, avg@k's standard error is then
/// √((between + within / k) / P) ([`Noise::std_error`]); at the measured P and n this is
/// exactly [`Estimate::std_error`] of avg@n unless `between` was clamped at 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    /// Prompts measured.
    pub prompts: usize,
    /// Samples per prompt measured.
    pub samples: usize,
    /// E[p(1 − p)]: the variance of one sample's verdict within a prompt.
    pub within: f64,
    /// Var(p): the variance of the success rate across prompts.
    pub between: f64,
}

impl Noise {
    /// The split of `correct[i]` of `n` samples each; `None` below 2 prompts or 2 samples.
    pub fn of(correct: &[usize], n: usize) -> Option<Self> {
        let p = correct.len();
        if p < 2 || n < 2 {
            return None;
        }
        let (nf, pf) = (n as f64, p as f64);
        let within = correct
            .iter()
            .map(|&c| (c as f64) * (nf - c as f64) / (nf * (nf - 1.0)))
            .sum::<f64>()
            / pf;
        let acc: Vec<f64> = correct.iter().map(|&c| c as f64 / nf).collect();
        let mean = acc.iter().sum::<f64>() / pf;
        let var = acc.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / (pf - 1.0);
        Some(Self {
            prompts: p,
            samples: n,
            within,
            between: (var - within / nf).max(0.0),
        })
    }

    /// The standard error of avg@k over `prompts` prompts with `k` samples each.
    pub fn std_error(&self, prompts: usize, k: usize) -> f64 {
        ((self.between + self.within / k.max(1) as f64) / prompts.max(1) as f64).sqrt()
    }

    /// The fewest samples per prompt for which avg@k over `prompts` prompts has a standard
    /// error of at most `target`: ⌈within / (P·target² − between)⌉; `None` when the spread of
    /// the prompts alone exceeds the target (then only more prompts help).
    pub fn samples_for(&self, target: f64, prompts: usize) -> Option<usize> {
        let room = prompts as f64 * target * target - self.between;
        if room <= 0.0 {
            return None;
        }
        Some(((self.within / room).ceil() as usize).max(1))
    }
}

impl Scores {
    /// avg@n, pass@k and (when every prompt recorded its answers) maj@k for each k of `ks`.
    /// Errors: no prompts, prompts with different sample counts, a k outside 1..=n.
    pub fn of(
        prompts: &[PromptSamples],
        ks: &[usize],
        bootstrap: Bootstrap,
    ) -> Result<Self, ConfigError> {
        let Some(first) = prompts.first() else {
            return Err(ConfigError::InvalidValue(rl_core::InvalidValue {
                field: "prompts",
                value: "none".into(),
                expected: "at least one prompt",
            }));
        };
        let n = first.correct.len();
        if let Some((i, p)) = prompts
            .iter()
            .enumerate()
            .find(|(_, p)| p.correct.len() != n)
        {
            return Err(ConfigError::InvalidValue(rl_core::InvalidValue {
                field: "samples",
                value: format!(
                    "prompt {i} has {} samples, prompt 0 has {n}",
                    p.correct.len()
                ),
                expected: "the same number of samples for every prompt",
            }));
        }
        let correct: Vec<usize> = prompts
            .iter()
            .map(|p| p.correct.iter().filter(|&&c| c).count())
            .collect();
        let avg: Vec<f64> = correct
            .iter()
            .map(|&c| if n == 0 { 0.0 } else { c as f64 / n as f64 })
            .collect();
        let mut pass_at = BTreeMap::new();
        let mut maj_at = BTreeMap::new();
        let with_answers = prompts.iter().all(|p| p.answers.len() == n);
        for &k in ks {
            let pass = correct
                .iter()
                .map(|&c| pass_at_k(n, c, k))
                .collect::<Result<Vec<f64>, _>>()?;
            pass_at.insert(k, Estimate::of(&pass, bootstrap));
            if with_answers {
                let maj = prompts
                    .iter()
                    .map(|p| maj_at_k(p, k))
                    .collect::<Result<Vec<f64>, _>>()?;
                maj_at.insert(k, Estimate::of(&maj, bootstrap));
            }
        }
        Ok(Self {
            samples: n,
            avg: Estimate::of(&avg, bootstrap),
            pass_at,
            maj_at,
            noise: Noise::of(&correct, n),
        })
    }
}
