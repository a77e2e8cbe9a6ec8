//! Batched autoregressive generation with a KV cache, seeded sampling and per-token log-probs.

use std::collections::HashSet;

use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::decoder::{AttentionMask, CausalLm, PromptGroups};
use crate::error::ModelError;

/// Sampling settings of [`generate`].
///
/// Order of operations on the logits of each step, as in HF `generate`: ids at or above
/// `allowed_vocab_size` are removed, then temperature, then top-k, then top-p; a token is drawn
/// from the renormalised result. `temperature = 0` is greedy decoding (argmax over the allowed
/// ids, lowest id on ties, as `torch.argmax`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GenerationConfig {
    /// Most tokens generated per prompt (including a final eos/stop token).
    pub max_new_tokens: usize,
    /// Softmax temperature; 0 means greedy.
    pub temperature: f32,
    /// Nucleus sampling: keep the smallest set of most likely tokens whose probability reaches
    /// `top_p` (1 = off). Must be in (0, 1].
    pub top_p: f32,
    /// Keep only the `top_k` most likely tokens (0 = off).
    pub top_k: usize,
    /// Seed. Sample `i` of a call draws from `ChaCha8Rng::seed_from_u64(seed)` on stream `i`, so
    /// results do not depend on the order other samples finish in.
    pub seed: u64,
    /// Ids that end a sample with [`FinishReason::Eos`] (e.g. `<|im_end|>` = 151645).
    pub eos_token_ids: Vec<u32>,
    /// Ids that end a sample with [`FinishReason::Stop`].
    pub stop_token_ids: Vec<u32>,
    /// Ids that open an answer line (e.g. the `####` of a few-shot answer's `#### 42`): once one
    /// has been sampled, the first of [`GenerationConfig::line_end_ids`] ends the sample with
    /// [`FinishReason::Stop`] (included in the tokens). Empty = off.
    pub answer_line_ids: Vec<u32>,
    /// Ids that end a line (their text holds a newline); read only after an answer line opened.
    pub line_end_ids: Vec<u32>,
    /// Only ids below this are ever sampled (the tokenizer's
    /// [`crate::Tokenizer::num_defined_ids`]; Qwen3 defines 151,669 of its 151,936 rows).
    /// `None` = the whole vocabulary.
    pub allowed_vocab_size: Option<usize>,
    /// Equal prompts of a call are prefilled once, their KV-cache rows then repeated for each
    /// sample (a group of G samples of one prompt computes its prompt once, not G times). The
    /// same samples up to the float rounding of batched kernels, which may change with the
    /// prefill's row count. Default `false`.
    pub share_prompts: bool,
}

impl Default for GenerationConfig {
    fn default() -> Self {
        Self {
            max_new_tokens: 64,
            temperature: 1.0,
            top_p: 1.0,
            top_k: 0,
            seed: 0,
            eos_token_ids: Vec::new(),
            stop_token_ids: Vec::new(),
            answer_line_ids: Vec::new(),
            line_end_ids: Vec::new(),
            allowed_vocab_size: None,
            share_prompts: false,
        }
    }
}

impl GenerationConfig {
    /// Greedy decoding of at most `max_new_tokens` tokens.
    pub fn greedy(max_new_tokens: usize) -> Self {
        Self {
            max_new_tokens,
            temperature: 0.0,
            ..Self::default()
        }
    }

    /// Checks every field against a model with `vocab_size` rows.
    pub fn validate(&self, vocab_size: usize) -> Result<(), ModelError> {
        let bad = |field: &'static str, value: String, expected: &str| {
            Err(ModelError::InvalidGenerationConfig {
                field,
                value,
                expected: expected.to_string(),
            })
        };
        if !(self.temperature.is_finite() && self.temperature >= 0.0) {
            return bad(
                "temperature",
                self.temperature.to_string(),
                "a finite number >= 0 (0 = greedy)",
            );
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return bad("top_p", self.top_p.to_string(), "a number in (0, 1]");
        }
        if let Some(a) = self.allowed_vocab_size
            && (a == 0 || a > vocab_size)
        {
            return bad(
                "allowed_vocab_size",
                a.to_string(),
                &format!("between 1 and the model's vocab_size {vocab_size}"),
            );
        }
        for (field, ids) in [
            ("eos_token_ids", &self.eos_token_ids),
            ("stop_token_ids", &self.stop_token_ids),
            ("answer_line_ids", &self.answer_line_ids),
            ("line_end_ids", &self.line_end_ids),
        ] {
            if let Some(id) = ids.iter().find(|&&id| id as usize >= vocab_size) {
                return bad(
                    field,
                    id.to_string(),
                    &format!("ids below vocab_size {vocab_size}"),
                );
            }
        }
        Ok(())
    }
}

/// Why a sample ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// It produced one of [`GenerationConfig::eos_token_ids`] (included in the tokens).
    Eos,
    /// It produced one of [`GenerationConfig::stop_token_ids`] (included in the tokens).
    Stop,
    /// It reached [`GenerationConfig::max_new_tokens`].
    Length,
}

/// One generated continuation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Generation {
    /// The new tokens (the prompt is not repeated); a final eos/stop token is included.
    pub tokens: Vec<u32>,
    /// Model log-prob of each token under the tempered distribution `log_softmax(logits / T)`
    /// over the whole vocabulary (no masking, no truncation; T = 1 for greedy decoding), i.e. what
    /// [`crate::CausalLm::token_logprobs_from_tempered`] computes for the same sequence at the same
    /// T, up to float rounding: the rollout log-prob π_rollout of an RL trainer.
    pub logprobs: Vec<f32>,
    /// Log-prob of each token under the distribution actually sampled from (allowed ids,
    /// temperature, top-k, top-p, renormalised); 0 for greedy decoding.
    pub sampling_logprobs: Vec<f32>,
    /// Why it ended.
    pub finish_reason: FinishReason,
}

/// One drawn token.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Sampled {
    pub token: u32,
    pub logprob: f32,
    pub sampling_logprob: f32,
}

/// Draws the next token from one row of logits; `None` when a logit is not finite.
pub(crate) fn sample_row(
    logits: &[f32],
    cfg: &GenerationConfig,
    allowed: usize,
    rng: &mut ChaCha8Rng,
) -> Option<Sampled> {
    if logits.iter().any(|x| !x.is_finite()) || allowed == 0 || allowed > logits.len() {
        return None;
    }
    // The log-prob reported for the drawn token: of softmax(logits / T) over the full vocabulary
    // (T = 1 for greedy decoding). Its normaliser is computed only where it is read: at T = 1 the
    // raw log-softmax (f32 exponentials, f64 sum); at another T the tempered one (f64), which the
    // draw over the whole vocabulary below already has as `cmax + ln(total)` — the same
    // maximum, exponentials and summation order, so the same value — and which no other path
    // computes twice.
    let max32 = logits.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    let max = max32 as f64;
    let t = cfg.temperature as f64;
    let tempered = cfg.temperature != 0.0 && cfg.temperature != 1.0;
    let tempered_lse = || {
        let m = max / t;
        m + logits
            .iter()
            .map(|&x| (x as f64 / t - m).exp())
            .sum::<f64>()
            .ln()
    };
    let raw_lse = || {
        max + logits
            .iter()
            .map(|&x| (x - max32).exp() as f64)
            .sum::<f64>()
            .ln()
    };
    // `lse`: the normaliser when the caller has it already.
    let reported = |id: usize, lse: Option<f64>| {
        if tempered {
            (logits[id] as f64 / t - lse.unwrap_or_else(tempered_lse)) as f32
        } else {
            (logits[id] as f64 - lse.unwrap_or_else(raw_lse)) as f32
        }
    };

    let allowed_logits = &logits[..allowed];
    if cfg.temperature == 0.0 {
        let mut best = 0;
        for (i, &x) in allowed_logits.iter().enumerate() {
            if x > allowed_logits[best] {
                best = i;
            }
        }
        return Some(Sampled {
            token: best as u32,
            logprob: reported(best, None),
            sampling_logprob: 0.0,
        });
    }
    if (cfg.top_k == 0 || cfg.top_k >= allowed) && cfg.top_p >= 1.0 {
        // Every allowed id is a candidate, in id order: the general path below without its
        // candidate list (the same weights, sums and draw, so the same token).
        let cmax = allowed_logits
            .iter()
            .fold(f64::NEG_INFINITY, |a, &x| a.max(x as f64 / t));
        let weights: Vec<f64> = allowed_logits
            .iter()
            .map(|&x| (x as f64 / t - cmax).exp())
            .collect();
        let total: f64 = weights.iter().sum();
        let u = rng.random::<f64>() * total;
        let mut acc = 0.0;
        let mut chosen = allowed - 1;
        for (k, w) in weights.iter().enumerate() {
            acc += w;
            if u < acc {
                chosen = k;
                break;
            }
        }
        let whole = (allowed == logits.len() && tempered).then(|| cmax + total.ln());
        return Some(Sampled {
            token: chosen as u32,
            logprob: reported(chosen, whole),
            sampling_logprob: (weights[chosen] / total).ln() as f32,
        });
    }
    let mut cand: Vec<(u32, f64)> = allowed_logits
        .iter()
        .enumerate()
        .map(|(i, &x)| (i as u32, x as f64 / t))
        .collect();
    // Descending score, lower id first on ties: a total order, so results are deterministic.
    let desc = |a: &(u32, f64), b: &(u32, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if cfg.top_k > 0 && cfg.top_k < cand.len() {
        cand.select_nth_unstable_by(cfg.top_k - 1, desc);
        cand.truncate(cfg.top_k);
    }
    let cmax = cand.iter().fold(f64::NEG_INFINITY, |a, &(_, s)| a.max(s));
    let mut weights: Vec<f64> = cand.iter().map(|&(_, s)| (s - cmax).exp()).collect();
    let mut total: f64 = weights.iter().sum();
    if cfg.top_p < 1.0 {
        let mut order: Vec<usize> = (0..cand.len()).collect();
        order.sort_unstable_by(|&i, &j| desc(&cand[i], &cand[j]));
        let target = cfg.top_p as f64 * total;
        let mut acc = 0.0;
        let mut keep = 0;
        for &i in &order {
            acc += weights[i];
            keep += 1;
            if acc >= target {
                break;
            }
        }
        let kept: Vec<usize> = order[..keep].to_vec();
        cand = kept.iter().map(|&i| cand[i]).collect();
        weights = kept.iter().map(|&i| weights[i]).collect();
        total = weights.iter().sum();
    }
    let u = rng.random::<f64>() * total;
    let mut acc = 0.0;
    let mut chosen = cand.len() - 1;
    for (k, w) in weights.iter().enumerate() {
        acc += w;
        if u < acc {
            chosen = k;
            break;
        }
    }
    let token = cand[chosen].0;
    Some(Sampled {
        token,
        logprob: reported(token as usize, None),
        sampling_logprob: (weights[chosen] / total).ln() as f32,
    })
}

/// Generates a continuation of every prompt, batched.
///
/// Prompts are left-padded into one batch; the prompt pass fills a KV cache allocated for
/// `longest prompt + max_new_tokens - 1` positions, then each step feeds only the newest token of
/// every unfinished sample (cost linear in the number of generated tokens; finished samples are
/// dropped from the batch and the cache). Position ids count real tokens only, so a padded prompt
/// behaves as it would alone. With [`GenerationConfig::share_prompts`], equal prompts are
/// prefilled once. Use a model without autodiff (`model.valid()`).
pub fn generate<B: Backend>(
    model: &CausalLm<B>,
    prompts: &[Vec<u32>],
    cfg: &GenerationConfig,
) -> Result<Vec<Generation>, ModelError> {
    let streams: Vec<RowSeed> = (0..prompts.len())
        .map(|i| RowSeed {
            seed: cfg.seed,
            stream: i as u64,
        })
        .collect();
    generate_seeded(model, prompts, cfg, &streams)
}

/// The random stream a sample draws from: `ChaCha8Rng::seed_from_u64(seed)` on stream `stream`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowSeed {
    /// Seed.
    pub seed: u64,
    /// Stream of that seed.
    pub stream: u64,
}

/// [`generate`] with each prompt's random stream given explicitly (`cfg.seed` is not used):
/// prompt i draws from `streams[i]`, so a sample's tokens do not depend on which other samples
/// share its batch (up to the float rounding of batched kernels).
pub fn generate_seeded<B: Backend>(
    model: &CausalLm<B>,
    prompts: &[Vec<u32>],
    cfg: &GenerationConfig,
    streams: &[RowSeed],
) -> Result<Vec<Generation>, ModelError> {
    if streams.len() != prompts.len() {
        return Err(ModelError::InvalidInput(format!(
            "{} random streams for {} prompts",
            streams.len(),
            prompts.len()
        )));
    }
    let vocab = model.config().vocab_size;
    cfg.validate(vocab)?;
    for (i, p) in prompts.iter().enumerate() {
        if p.is_empty() {
            return Err(ModelError::InvalidInput(format!("prompt {i} is empty")));
        }
        model
            .check_ids(p)
            .map_err(|e| ModelError::InvalidInput(format!("prompt {i}: {e}")))?;
    }
    let mut results: Vec<Generation> = prompts
        .iter()
        .map(|_| Generation {
            tokens: Vec::new(),
            logprobs: Vec::new(),
            sampling_logprobs: Vec::new(),
            finish_reason: FinishReason::Length,
        })
        .collect();
    if prompts.is_empty() || cfg.max_new_tokens == 0 {
        return Ok(results);
    }
    let allowed = cfg.allowed_vocab_size.unwrap_or(vocab);
    let eos: HashSet<u32> = cfg.eos_token_ids.iter().copied().collect();
    let stop: HashSet<u32> = cfg.stop_token_ids.iter().copied().collect();
    let answer_line: HashSet<u32> = cfg.answer_line_ids.iter().copied().collect();
    let line_end: HashSet<u32> = cfg.line_end_ids.iter().copied().collect();

    let b = prompts.len();
    let p_len = prompts.iter().map(Vec::len).max().unwrap_or(0);
    let device = model.device();
    let lengths: Vec<usize> = prompts.iter().map(Vec::len).collect();
    // The prompts the prefill computes: each distinct one once when sharing.
    let groups = cfg
        .share_prompts
        .then(|| PromptGroups::of(prompts, &lengths))
        .filter(PromptGroups::shares);
    let prefill = groups.as_ref().map_or(prompts, |g| g.prefixes.as_slice());
    let rows = prefill.len();
    let mut ids = Vec::with_capacity(rows * p_len);
    for p in prefill {
        ids.extend(std::iter::repeat_n(0i64, p_len - p.len()));
        ids.extend(p.iter().map(|&t| t as i64));
    }
    let prefill_lengths: Vec<usize> = prefill.iter().map(Vec::len).collect();
    let mask = AttentionMask::left_padded(&prefill_lengths, p_len)?;
    let mut cache = model.new_cache(rows, p_len + cfg.max_new_tokens - 1);
    let input = Tensor::<B, 2, Int>::from_data(TensorData::new(ids, [rows, p_len]), &device);
    let mut logits = model.last_logits(input, Some(&mask), Some(&mut cache))?;
    if let Some(g) = &groups {
        cache.retain_rows(&g.of_row)?;
        let index: Vec<i64> = g.of_row.iter().map(|&r| r as i64).collect();
        logits = logits.select(0, Tensor::from_data(TensorData::new(index, [b]), &device));
    }

    let mut rngs: Vec<ChaCha8Rng> = streams
        .iter()
        .map(|s| {
            let mut r = ChaCha8Rng::seed_from_u64(s.seed);
            r.set_stream(s.stream);
            r
        })
        .collect();
    let mut active: Vec<usize> = (0..b).collect();
    // Rows whose answer line has opened (see `GenerationConfig::answer_line_ids`).
    let mut line_open = vec![false; b];
    for step in 0..cfg.max_new_tokens {
        let data: Vec<f32> = logits
            .into_data()
            .convert::<f32>()
            .into_vec::<f32>()
            .map_err(|e| ModelError::Data(format!("{e:?}")))?;
        let mut keep = Vec::with_capacity(active.len());
        let mut next = Vec::with_capacity(active.len());
        // The rows' draws in parallel (each row has its own generator, so the draws are those
        // of a sequential loop): `active` is ascending, so the generators of the active rows,
        // taken in row order, line up with `k`.
        let mut is_active = vec![false; b];
        for &row in &active {
            is_active[row] = true;
        }
        let mut row_rngs: Vec<&mut ChaCha8Rng> = rngs
            .iter_mut()
            .enumerate()
            .filter(|(row, _)| is_active[*row])
            .map(|(_, r)| r)
            .collect();
        let sampled: Vec<Option<Sampled>> = row_rngs
            .par_iter_mut()
            .enumerate()
            .map(|(k, rng)| sample_row(&data[k * vocab..(k + 1) * vocab], cfg, allowed, rng))
            .collect();
        for (k, (&row, s)) in active.iter().zip(sampled).enumerate() {
            let s = s.ok_or(ModelError::NonFiniteLogits { row, step })?;
            let g = &mut results[row];
            g.tokens.push(s.token);
            g.logprobs.push(s.logprob);
            g.sampling_logprobs.push(s.sampling_logprob);
            if eos.contains(&s.token) {
                g.finish_reason = FinishReason::Eos;
            } else if stop.contains(&s.token) || (line_open[row] && line_end.contains(&s.token)) {
                g.finish_reason = FinishReason::Stop;
            } else if g.tokens.len() < cfg.max_new_tokens {
                line_open[row] |= answer_line.contains(&s.token);
                keep.push(k);
                next.push(s.token as i64);
            }
        }
        if keep.is_empty() {
            break;
        }
        if keep.len() < active.len() {
            cache.retain_rows(&keep)?;
            active = keep.iter().map(|&k| active[k]).collect();
        }
        let input =
            Tensor::<B, 2, Int>::from_data(TensorData::new(next, [active.len(), 1]), &device);
        logits = model.last_logits(input, None, Some(&mut cache))?;
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng() -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(7)
    }

    #[test]
    fn greedy_takes_first_max_among_allowed_ids() {
        let cfg = GenerationConfig::greedy(1);
        let logits = [0.0, 3.0, 3.0, 9.0];
        let s = sample_row(&logits, &cfg, 3, &mut rng()).unwrap();
        assert_eq!(s.token, 1);
        assert_eq!(s.sampling_logprob, 0.0);
        // raw log-prob is over the full vocabulary, including the masked id 3
        let lse = (1.0f64 + 2.0 * 3f64.exp() + 9f64.exp()).ln();
        assert!((s.logprob as f64 - (3.0 - lse)).abs() < 1e-6);
    }

    #[test]
    fn reported_logprob_is_of_the_tempered_full_distribution() {
        // T = 0.5, top-k 1 over the 2 allowed ids of 3: the drawn token is id 1 (logit 3), and
        // its reported log-prob is log softmax(logits / T)[1] over all 3 ids (the masked id 2
        // included, top-k ignored): 3/0.5 - ln(e^(1/0.5) + e^(3/0.5) + e^(5/0.5)).
        let cfg = GenerationConfig {
            temperature: 0.5,
            top_k: 1,
            ..GenerationConfig::default()
        };
        let s = sample_row(&[1.0, 3.0, 5.0], &cfg, 2, &mut rng()).unwrap();
        assert_eq!(s.token, 1);
        let lse = (2f64.exp() + 6f64.exp() + 10f64.exp()).ln();
        assert!(
            (s.logprob as f64 - (6.0 - lse)).abs() < 1e-6,
            "{}",
            s.logprob
        );
    }

    /// The draw over the whole vocabulary at T = 0.5, which reports its log-prob from the sum it
    /// drew with: whichever id of [1, 3, 5] a seed draws, log-prob z − ln(e² + e⁶ + e¹⁰) with
    /// z = logit / T, and (every id allowed, nothing cut) the sampled distribution is the same.
    #[test]
    fn the_whole_vocabulary_draw_reports_the_tempered_log_prob() {
        let cfg = GenerationConfig {
            temperature: 0.5,
            ..GenerationConfig::default()
        };
        let lse = (2f64.exp() + 6f64.exp() + 10f64.exp()).ln();
        for seed in 0..20 {
            let s = sample_row(
                &[1.0, 3.0, 5.0],
                &cfg,
                3,
                &mut ChaCha8Rng::seed_from_u64(seed),
            )
            .unwrap();
            let z = [2.0, 6.0, 10.0][s.token as usize];
            assert!((s.logprob as f64 - (z - lse)).abs() < 1e-6, "{s:?}");
            assert!(
                (s.sampling_logprob as f64 - (z - lse)).abs() < 1e-6,
                "{s:?}"
            );
        }
    }

    #[test]
    fn non_finite_logits_are_rejected() {
        let cfg = GenerationConfig::default();
        assert!(sample_row(&[0.0, f32::NAN], &cfg, 2, &mut rng()).is_none());
    }

    #[test]
    fn top_k_one_is_greedy_and_top_p_keeps_nucleus() {
        let logits = [1.0, 4.0, 2.0, 0.5];
        let cfg = GenerationConfig {
            top_k: 1,
            ..GenerationConfig::default()
        };
        for seed in 0..20 {
            let s = sample_row(&logits, &cfg, 4, &mut ChaCha8Rng::seed_from_u64(seed)).unwrap();
            assert_eq!(s.token, 1);
            assert_eq!(s.sampling_logprob, 0.0);
        }
        // p = softmax(logits) ~ (0.041, 0.823, 0.111, 0.025): p(1) < 0.9 <= p(1) + p(2), so the
        // nucleus is {1, 2}.
        let cfg = GenerationConfig {
            top_p: 0.9,
            ..GenerationConfig::default()
        };
        let mut seen = HashSet::new();
        for seed in 0..200 {
            let s = sample_row(&logits, &cfg, 4, &mut ChaCha8Rng::seed_from_u64(seed)).unwrap();
            seen.insert(s.token);
            let z = 4f64.exp() + 2f64.exp();
            let expect = if s.token == 1 {
                4f64.exp() / z
            } else {
                2f64.exp() / z
            };
            assert!((s.sampling_logprob as f64 - expect.ln()).abs() < 1e-6);
        }
        assert_eq!(seen, HashSet::from([1, 2]));
    }

    #[test]
    fn sampling_frequencies_follow_the_tempered_distribution() {
        // chi-square-free check: with 20k draws each empirical frequency is within 0.02 of
        // softmax(logits / T) (std of a frequency <= 0.0036).
        let logits = [0.0f32, 1.0, 2.0];
        let cfg = GenerationConfig {
            temperature: 2.0,
            ..GenerationConfig::default()
        };
        let mut r = rng();
        let mut counts = [0usize; 3];
        let n = 20_000;
        for _ in 0..n {
            counts[sample_row(&logits, &cfg, 3, &mut r).unwrap().token as usize] += 1;
        }
        let w: Vec<f64> = logits.iter().map(|&x| (x as f64 / 2.0).exp()).collect();
        let z: f64 = w.iter().sum();
        for i in 0..3 {
            assert!(
                (counts[i] as f64 / n as f64 - w[i] / z).abs() < 0.02,
                "{counts:?}"
            );
        }
    }

    #[test]
    fn config_validation_names_the_field() {
        let cfg = GenerationConfig {
            top_p: 0.0,
            ..GenerationConfig::default()
        };
        match cfg.validate(10) {
            Err(ModelError::InvalidGenerationConfig { field, .. }) => assert_eq!(field, "top_p"),
            other => panic!("{other:?}"),
        }
        let cfg = GenerationConfig {
            allowed_vocab_size: Some(11),
            ..GenerationConfig::default()
        };
        assert!(matches!(
            cfg.validate(10),
            Err(ModelError::InvalidGenerationConfig {
                field: "allowed_vocab_size",
                ..
            })
        ));
        let cfg = GenerationConfig {
            temperature: -1.0,
            ..GenerationConfig::default()
        };
        assert!(matches!(
            cfg.validate(10),
            Err(ModelError::InvalidGenerationConfig {
                field: "temperature",
                ..
            })
        ));
    }

    #[test]
    fn finish_reason_serialises_snake_case() {
        assert_eq!(
            serde_json::to_string(&FinishReason::Length).unwrap(),
            "\"length\""
        );
        assert_eq!(
            serde_json::to_string(&FinishReason::Eos).unwrap(),
            "\"eos\""
        );
    }
}
