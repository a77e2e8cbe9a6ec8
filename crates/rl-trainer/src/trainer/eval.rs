//! Held-out evaluation (avg@k, pass@k by tier: [`EvalReport`]) and the in-process generation it
//! shares with the theorem probe.

use burn::tensor::backend::AutodiffBackend;
use rl_rollout::{GenerateRequest, RolloutEngine, SamplingParams};

use super::Trainer;
use crate::TrainerError;
use crate::eval::EvalReport;
use crate::policy::Policy;
use crate::scoring::strip_end_tokens;

impl<B: AutodiffBackend, P: Policy<B>> Trainer<B, P> {
    /// avg@k / pass@k on the held-out set with a seed derived from the run seed and `tag`.
    pub fn evaluate(&mut self, tag: u64) -> Result<Option<EvalReport>, TrainerError> {
        let Some(eval) = &self.prompts.eval else {
            return Ok(None);
        };
        let e = self.config.eval;
        let n = if e.max_prompts == 0 {
            eval.len()
        } else {
            e.max_prompts.min(eval.len())
        };
        let params = self.sampling(e.temperature, e.top_p, 0);
        let inputs: Vec<Vec<u32>> = (0..n)
            .flat_map(|i| std::iter::repeat_n(self.prompts.eval_ids(i).as_ref().clone(), e.k))
            .collect();
        let seed = self.config.seed ^ 0xE7A1_0000_0000 ^ (tag << 20);
        let texts = self.generate_texts(&inputs, &params, seed)?;
        let results: Vec<(Option<String>, Vec<bool>)> = (0..n)
            .map(|i| {
                let p = &eval.prompts[i];
                let r = (0..e.k)
                    .map(|j| {
                        self.verifier
                            .verify(&texts[i * e.k + j], &p.answer)
                            .outcome
                            .is_correct()
                    })
                    .collect();
                (p.tier.clone(), r)
            })
            .collect();
        Ok(Some(EvalReport::from_results(&results)))
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

    /// Decoded completions of `inputs` by the current policy through an in-process
    /// [`crate::LocalEngine`] (evaluation and the probe never go through the rollout engine, which may
    /// be a server a version behind), one sample each. Rows are generated in chunks of
    /// `rollout.generation_batch` sequences (0: one chunk); chunk c is seeded with `seed ^ c`,
    /// its rows are that seed's streams 0, 1, … in order.
    pub(super) fn generate_texts(
        &self,
        inputs: &[Vec<u32>],
        params: &SamplingParams,
        seed: u64,
    ) -> Result<Vec<String>, TrainerError> {
        let chunk = match self.config.rollout.generation_batch {
            0 => inputs.len(),
            b => b,
        }
        .max(1);
        let requests: Vec<GenerateRequest> = inputs
            .iter()
            .enumerate()
            .map(|(i, ids)| GenerateRequest {
                prompt_ids: ids.clone(),
                n: 1,
                params: SamplingParams {
                    seed: seed ^ (i / chunk) as u64,
                    ..params.clone()
                },
            })
            .collect();
        // The engine batches at most `generation_batch` rows and ignores the seed when it
        // batches, so its batches are the chunks.
        let completions = self.local_engine().generate(&requests)?;
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
