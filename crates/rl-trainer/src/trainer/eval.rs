//! Held-out evaluation (avg@k, pass@k by tier: [`EvalReport`]) through the run's rollout engine,
//! and the generation it shares with the theorem probe (which samples in process).

use burn::tensor::backend::AutodiffBackend;
use rl_rollout::{GenerateRequest, RolloutEngine, SamplingParams};

use super::Trainer;
use crate::TrainerError;
use crate::eval::EvalReport;
use crate::policy::Policy;
use crate::scoring::strip_end_tokens;

impl<B: AutodiffBackend, P: Policy<B>> Trainer<B, P> {
    /// avg@k / pass@k on the held-out set with a seed derived from the run seed and `tag`,
    /// generated through the run's rollout engine ([`Trainer::eval_texts`]).
    pub fn evaluate(&mut self, tag: u64) -> Result<Option<EvalReport>, TrainerError> {
        let Some(texts) = self.eval_texts(tag)? else {
            return Ok(None);
        };
        let (eval, k) = (
            self.prompts.eval.as_ref().expect("eval_texts checked it"),
            self.config.eval.k,
        );
        let results: Vec<(Option<String>, Vec<bool>)> = texts
            .chunks(k)
            .zip(&eval.prompts)
            .map(|(samples, p)| {
                let r = samples
                    .iter()
                    .map(|t| self.verifier.verify(t, &p.answer).outcome.is_correct())
                    .collect();
                (p.tier.clone(), r)
            })
            .collect();
        Ok(Some(EvalReport::from_results(&results)))
    }

    /// The held-out completions [`Trainer::evaluate`] verifies: `eval.k` per prompt for the
    /// first `eval.max_prompts` prompts (0: all), in prompt order, decoded without end tokens;
    /// `None` without a held-out set.
    pub fn eval_texts(&mut self, tag: u64) -> Result<Option<Vec<String>>, TrainerError> {
        let Some(n) = self.prompts.eval.as_ref().map(|d| d.len()) else {
            return Ok(None);
        };
        let e = self.config.eval;
        let n = if e.max_prompts == 0 {
            n
        } else {
            e.max_prompts.min(n)
        };
        let params = self.sampling(e.temperature, e.top_p, 0);
        let inputs: Vec<Vec<u32>> = (0..n)
            .flat_map(|i| std::iter::repeat_n(self.prompts.eval_ids(i).as_ref().clone(), e.k))
            .collect();
        let seed = self.config.seed ^ 0xE7A1_0000_0000 ^ (tag << 20);
        Ok(Some(self.generate_texts(
            &inputs,
            &params,
            seed,
            Via::Engine,
        )?))
    }

    /// The sampling settings of evaluation and the probe: the rollout's length and end tokens
    /// with these sampling settings (the seed is set per chunk by [`Self::generate_texts`]).
    pub(super) fn sampling(&self, temperature: f32, top_p: f32, top_k: usize) -> SamplingParams {
        SamplingParams {
            temperature,
            top_p,
            top_k,
            ..self.config.rollout.sampling(&self.prompts.end_ids)
        }
    }

    /// Decoded completions of `inputs`, one sample each, by the current policy: through the
    /// run's rollout engine ([`Via::Engine`]: a run against llama-server evaluates through
    /// llama-server; the engine holds the current weights after every step's sync) or an
    /// in-process [`crate::LocalEngine`] ([`Via::InProcess`]). Rows are generated in chunks of
    /// `rollout.generation_batch` sequences (0: one chunk); chunk c is seeded with `seed ^ c`.
    /// Consecutive equal prompts of a chunk form one request of n samples, so that a server
    /// draws them as n samples of one seeded request (a request's samples are that seed's
    /// streams 0, 1, … in order on the local engine, as the rows were before).
    pub(super) fn generate_texts(
        &mut self,
        inputs: &[Vec<u32>],
        params: &SamplingParams,
        seed: u64,
        via: Via,
    ) -> Result<Vec<String>, TrainerError> {
        let chunk = match self.config.rollout.generation_batch {
            0 => inputs.len(),
            b => b,
        }
        .max(1);
        let mut requests: Vec<GenerateRequest> = Vec::new();
        for (i, ids) in inputs.iter().enumerate() {
            let seed = seed ^ (i / chunk) as u64;
            match requests.last_mut() {
                Some(r) if r.params.seed == seed && r.prompt_ids == *ids => r.n += 1,
                _ => requests.push(GenerateRequest {
                    prompt_ids: ids.clone(),
                    n: 1,
                    params: SamplingParams {
                        seed,
                        ..params.clone()
                    },
                }),
            }
        }
        // The local engine batches at most `generation_batch` rows and ignores the seed when
        // it batches, so its batches are the chunks.
        let completions = match via {
            Via::Engine => self.engine.submit(requests)?.wait()?,
            Via::InProcess => self.local_engine().generate(&requests)?,
        };
        completions
            .iter()
            .flatten()
            .map(|c| {
                Ok(self
                    .prompts
                    .tokenizer
                    .decode(strip_end_tokens(&c.tokens, &self.prompts.end_ids), false)?)
            })
            .collect()
    }
}

/// Where [`Trainer::generate_texts`] generates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Via {
    /// The run's rollout engine (evaluation).
    Engine,
    /// An in-process engine over the current weights (the probe, which runs inside a round
    /// and must not queue behind or perturb the engine's work).
    InProcess,
}
