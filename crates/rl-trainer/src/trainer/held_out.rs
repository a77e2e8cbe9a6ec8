//! Held-out evaluation (avg@k, pass@k by tier with standard errors: [`EvalReport`]): the
//! held-out prompts sampled through the run's rollout engine by [`crate::eval::benchmark::sample_benchmark`],
//! the code `rlvr eval` runs, with the run's seed.

use burn::tensor::backend::AutodiffBackend;

use super::state::Trainer;
use crate::TrainerError;
use crate::eval::EvalReport;
use crate::eval::benchmark::{self, BenchmarkSettings, SampleRecord, Scoring};
use crate::policy::Policy;

impl<B: AutodiffBackend, P: Policy<B>> Trainer<B, P> {
    /// avg@k / pass@k with standard errors on the held-out set ([`Trainer::eval_samples`]);
    /// `None` without a held-out set.
    pub fn evaluate(&mut self) -> Result<Option<EvalReport>, TrainerError> {
        match self.eval_samples()? {
            Some(records) => Ok(Some(EvalReport::from_samples(&records)?)),
            None => Ok(None),
        }
    }

    /// The held-out set's verified samples: `eval.k` per prompt for the first
    /// `eval.max_prompts` prompts (0: all), in calls of `rollout.generation_batch` sequences
    /// (0: one call), sampled through the run's rollout engine (a run
    /// against llama-server evaluates through llama-server; the engine holds the current
    /// weights after every step's sync) with prompt i's request seeded
    /// [`benchmark::prompt_seed`]`(seed, i)`. These are the samples `rlvr eval --config
    /// out_dir/config.toml` gives on a checkpoint of the same weights. Every evaluation of a run
    /// draws the same seeds (common random numbers), so two evaluations differ by the weights
    /// alone. `None` without a held-out set.
    pub fn eval_samples(&mut self) -> Result<Option<Vec<SampleRecord>>, TrainerError> {
        let Some(eval) = &self.prompts.eval else {
            return Ok(None);
        };
        let e = self.config.eval;
        let n = match e.max_prompts {
            0 => eval.len(),
            m => m.min(eval.len()),
        };
        let settings = BenchmarkSettings {
            k: e.k,
            params: self
                .config
                .eval_sampling(&self.prompts.end_ids, self.prompts.answer_line.as_ref()),
            seed: self.config.seed,
            // A call of `rollout.generation_batch` sequences, as in the rollout (the KV cache of a
            // call holds every sequence of it); each prompt's samples have their own seed, so
            // the calls' size changes no draw.
            prompts_per_call: match self.config.rollout.generation_batch {
                0 => n,
                g => (g / e.k.max(1)).max(1),
            },
        };
        let scoring = Scoring {
            renderer: self.prompts.renderer(),
            tokenizer: &self.prompts.tokenizer,
            end_ids: &self.prompts.end_ids,
            verifier: self.verifier.as_ref(),
            episodes: self.episodes.as_ref(),
            enable_thinking: self.prompts.renderer().enable_thinking(),
        };
        let engine = &mut self.engine;
        let mut records = Vec::with_capacity(n * e.k);
        benchmark::sample_benchmark(
            &mut |requests| Ok(engine.submit(requests)?.wait()?),
            &eval.prompts[..n],
            &scoring,
            &settings,
            &Default::default(),
            |batch, _| {
                records.extend_from_slice(batch);
                Ok(())
            },
        )?;
        Ok(Some(records))
    }

    /// [`Trainer::evaluate`] after `step` steps; the leader also writes the samples to
    /// `out_dir/eval/step-NNNNNN.jsonl` (the format of `rlvr eval`'s `samples.jsonl`).
    pub(super) fn evaluate_at(&mut self, step: usize) -> Result<Option<EvalReport>, TrainerError> {
        let Some(records) = self.eval_samples()? else {
            return Ok(None);
        };
        if self.parallel.is_leader() {
            let dir = self.config.out_dir.join("eval");
            std::fs::create_dir_all(&dir).map_err(|e| TrainerError::io(&dir, e))?;
            benchmark::write_samples(&dir.join(format!("step-{step:06}.jsonl")), &records)?;
        }
        Ok(Some(EvalReport::from_samples(&records)?))
    }
}
