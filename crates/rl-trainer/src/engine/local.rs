//! The in-process engine: [`LocalEngine`] samples from a model held by the trainer ([`LocalModel`]),
//! the default `[rollout.engine]`.

use std::collections::HashMap;
use std::path::Path;

use burn::tensor::backend::Backend;
use rl_models::{CausalLm, FinishReason as ModelFinish, Generation, GenerationConfig, RowSeed};
use rl_rollout::{
    Completion, EngineError, FinishReason, GenerateRequest, RolloutEngine, SamplingParams,
    WeightVersion, WeightsKind, WeightsRef, check_completions,
};

use crate::TrainerError;

/// What [`LocalEngine`] needs from a model to sample in process (for Qwen3, the trained model
/// without autodiff, [`crate::Policy::inference`]). The trainer itself never calls it: every
/// generation of the trainer (rollouts, evaluation, the probe) is a [`RolloutEngine`] request,
/// and this is the in-process engine's model-side interface.
pub trait LocalModel: Send + 'static {
    /// One continuation per prompt; prompt i draws from `streams[i]`.
    fn generate(
        &self,
        prompts: &[Vec<u32>],
        config: &GenerationConfig,
        streams: &[RowSeed],
    ) -> Result<Vec<Generation>, TrainerError>;

    /// Rows of the output distribution.
    fn vocab_size(&self) -> usize;

    /// The same architecture with the weights of a folder written by `Policy::save`, on this
    /// model's device.
    fn load_dir(&self, dir: &Path) -> Result<Self, TrainerError>
    where
        Self: Sized;
}

impl<B: Backend> LocalModel for CausalLm<B> {
    fn generate(
        &self,
        prompts: &[Vec<u32>],
        config: &GenerationConfig,
        streams: &[RowSeed],
    ) -> Result<Vec<Generation>, TrainerError> {
        Ok(rl_models::generate_seeded(self, prompts, config, streams)?)
    }

    fn vocab_size(&self) -> usize {
        self.config().vocab_size
    }

    fn load_dir(&self, dir: &Path) -> Result<Self, TrainerError> {
        Ok(CausalLm::load(dir, &self.device())?)
    }
}

/// The in-process engine: a copy of the policy's weights (without autodiff) and the model's own
/// KV-cache sampler.
///
/// A call's samples are generated in batches of at most `max_batch` sequences (0 = the whole
/// call), cut where the sampling parameters change. Sample k of a request with seed s draws
/// from `ChaCha8Rng::seed_from_u64(s)` on stream o + k, where o counts the samples of earlier
/// requests of the same call with the same seed: requests with distinct seeds are independent
/// streams, and a caller that gives all requests of a batch one seed gets the streams 0, 1, …
/// of that seed in order (the trainer's rounds, evaluation and probe do this). Log-probs are of softmax(logits / T) over the whole vocabulary.
pub struct LocalEngine<G: LocalModel> {
    model: G,
    version: WeightVersion,
    max_batch: usize,
    allowed_vocab: Option<usize>,
    share_prompts: bool,
}

impl<G: LocalModel> LocalEngine<G> {
    /// An engine serving `model` as `version`. `allowed_vocab`: only ids below it are sampled
    /// (the tokenizer's defined ids); `None` = all.
    pub fn new(
        model: G,
        version: WeightVersion,
        max_batch: usize,
        allowed_vocab: Option<usize>,
    ) -> Self {
        Self {
            model,
            version,
            max_batch,
            allowed_vocab,
            share_prompts: false,
        }
    }

    /// This engine prefilling each distinct prompt of a batch once
    /// ([`GenerationConfig::share_prompts`], `model.shared_prompts`).
    pub fn sharing_prompts(mut self, share: bool) -> Self {
        self.share_prompts = share;
        self
    }

    /// The weights it generates with.
    pub fn model(&self) -> &G {
        &self.model
    }

    /// The model's decoder settings for a request's sampling parameters: the one conversion
    /// from the engine vocabulary ([`SamplingParams`], shared by every engine) to the model's
    /// own ([`GenerationConfig`], rl-models' HF-style `generate` settings).
    fn generation_config(&self, p: &SamplingParams) -> GenerationConfig {
        GenerationConfig {
            max_new_tokens: p.max_new_tokens,
            temperature: p.temperature,
            top_p: p.top_p,
            top_k: p.top_k,
            seed: p.seed,
            eos_token_ids: p.stop_ids.clone(),
            stop_token_ids: Vec::new(),
            answer_line_ids: p
                .answer_line
                .iter()
                .flat_map(|l| l.markers.clone())
                .collect(),
            line_end_ids: p
                .answer_line
                .iter()
                .flat_map(|l| l.line_ends.clone())
                .collect(),
            allowed_vocab_size: self.allowed_vocab,
            share_prompts: self.share_prompts,
        }
    }
}

/// Batch key: everything but the seed.
fn same_batch(a: &SamplingParams, b: &SamplingParams) -> bool {
    a.temperature == b.temperature
        && a.top_p == b.top_p
        && a.top_k == b.top_k
        && a.max_new_tokens == b.max_new_tokens
        && a.stop_ids == b.stop_ids
        && a.answer_line == b.answer_line
}

impl<G: LocalModel> RolloutEngine for LocalEngine<G> {
    fn name(&self) -> String {
        "local".into()
    }

    fn generate(
        &mut self,
        requests: &[GenerateRequest],
    ) -> Result<Vec<Vec<Completion>>, EngineError> {
        for (i, r) in requests.iter().enumerate() {
            r.validate("local", i)?;
        }
        // One row per sample: (request, stream).
        let mut next_stream: HashMap<u64, u64> = HashMap::new();
        let mut rows: Vec<(usize, RowSeed)> = Vec::new();
        for (i, r) in requests.iter().enumerate() {
            let o = next_stream.entry(r.params.seed).or_insert(0);
            for _ in 0..r.n {
                rows.push((
                    i,
                    RowSeed {
                        seed: r.params.seed,
                        stream: *o,
                    },
                ));
                *o += 1;
            }
        }
        let cap = if self.max_batch == 0 {
            rows.len().max(1)
        } else {
            self.max_batch
        };
        let mut out: Vec<Vec<Completion>> =
            requests.iter().map(|r| Vec::with_capacity(r.n)).collect();
        let mut lo = 0;
        while lo < rows.len() {
            let params = &requests[rows[lo].0].params;
            let mut hi = lo + 1;
            while hi < rows.len()
                && hi - lo < cap
                && same_batch(params, &requests[rows[hi].0].params)
            {
                hi += 1;
            }
            let prompts: Vec<Vec<u32>> = rows[lo..hi]
                .iter()
                .map(|&(i, _)| requests[i].prompt_ids.clone())
                .collect();
            let streams: Vec<RowSeed> = rows[lo..hi].iter().map(|&(_, s)| s).collect();
            let gens = self
                .model
                .generate(&prompts, &self.generation_config(params), &streams)
                .map_err(|e| EngineError::Generation {
                    engine: "local".into(),
                    message: e.to_string(),
                })?;
            if gens.len() != prompts.len() {
                return Err(EngineError::Generation {
                    engine: "local".into(),
                    message: format!("{} samples for {} prompts", gens.len(), prompts.len()),
                });
            }
            for (&(i, _), g) in rows[lo..hi].iter().zip(gens) {
                out[i].push(Completion {
                    tokens: g.tokens,
                    logprobs: g.logprobs,
                    finish: match g.finish_reason {
                        ModelFinish::Eos | ModelFinish::Stop => FinishReason::Stop,
                        ModelFinish::Length => FinishReason::Length,
                    },
                    version: self.version,
                });
            }
            lo = hi;
        }
        check_completions("local", requests, &out, self.model.vocab_size())?;
        Ok(out)
    }

    fn update_weights(
        &mut self,
        weights: WeightsRef,
        version: WeightVersion,
    ) -> Result<WeightVersion, EngineError> {
        let fail = |message: String| EngineError::Weights {
            engine: "local".into(),
            version,
            message,
        };
        self.model = match weights {
            WeightsRef::InProcess(any) => *any.downcast::<G>().map_err(|_| {
                fail(format!(
                    "the in-process weights are not a `{}`",
                    std::any::type_name::<G>()
                ))
            })?,
            WeightsRef::Directory(dir) => {
                self.model.load_dir(&dir).map_err(|e| fail(e.to_string()))?
            }
        };
        self.version = version;
        Ok(version)
    }

    fn version(&self) -> WeightVersion {
        self.version
    }

    fn weights_kind(&self) -> WeightsKind {
        WeightsKind::InProcess
    }
}
