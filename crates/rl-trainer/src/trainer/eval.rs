//! Held-out evaluation (avg@k, pass@k by tier: [`EvalReport`]) and the in-process generation it
//! shares with the theorem probe.

use burn::tensor::backend::AutodiffBackend;
use rl_models::{GenerationConfig, RowSeed};

use super::Trainer;
use crate::TrainerError;
use crate::engine::Generator;
use crate::eval::EvalReport;
use crate::policy::Policy;
use crate::rollout::strip_end_tokens;

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
        let gen_cfg = self.generation_config(e.temperature, e.top_p, 0);
        let inputs: Vec<Vec<u32>> = (0..n)
            .flat_map(|i| std::iter::repeat_n(self.prompts.eval_ids(i).as_ref().clone(), e.k))
            .collect();
        let seed = self.config.seed ^ 0xE7A1_0000_0000 ^ (tag << 20);
        let texts = self.generate_texts(&inputs, gen_cfg, seed)?;
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

    /// The in-process generation settings for evaluation and the probe: the rollout's length
    /// and end tokens with these sampling settings.
    pub(super) fn generation_config(
        &self,
        temperature: f32,
        top_p: f32,
        top_k: usize,
    ) -> GenerationConfig {
        GenerationConfig {
            max_new_tokens: self.config.rollout.max_new_tokens,
            temperature,
            top_p,
            top_k,
            seed: 0,
            eos_token_ids: self.prompts.end_ids.clone(),
            stop_token_ids: Vec::new(),
            allowed_vocab_size: Some(self.allowed_vocab),
        }
    }

    /// Decoded completions of `inputs` by the in-process policy (evaluation and the probe, which
    /// never go through the rollout engine), generated in chunks of `rollout.generation_batch`
    /// sequences (0: one chunk); chunk c is seeded with `seed ^ c`, its rows with their index.
    pub(super) fn generate_texts(
        &self,
        inputs: &[Vec<u32>],
        mut gen_cfg: GenerationConfig,
        seed: u64,
    ) -> Result<Vec<String>, TrainerError> {
        let chunk = match self.config.rollout.generation_batch {
            0 => inputs.len(),
            b => b,
        };
        let generator = self.policy().generator();
        let mut texts = Vec::with_capacity(inputs.len());
        for (c, part) in inputs.chunks(chunk.max(1)).enumerate() {
            gen_cfg.seed = seed ^ c as u64;
            let streams: Vec<RowSeed> = (0..part.len() as u64)
                .map(|stream| RowSeed {
                    seed: gen_cfg.seed,
                    stream,
                })
                .collect();
            for g in generator.generate(part, &gen_cfg, &streams)? {
                texts.push(
                    self.prompts
                        .tokenizer
                        .decode(strip_end_tokens(&g.tokens, &self.prompts.end_ids), false)?,
                );
            }
        }
        Ok(texts)
    }
}
