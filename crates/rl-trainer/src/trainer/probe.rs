//! The theorem probe (`probe` section) inside the generation rounds: on a probed step, extra
//! responses for each group's prompt estimate its pass rate, recorded beside the group's
//! verdicts, advantages and the filter's decision in `probe.jsonl` ([`ProbeRecord`]).

use burn::tensor::backend::AutodiffBackend;
use rl_rollout::{GenerateRequest, RolloutEngine, SamplingParams};
use rl_sampler::RolloutGroup;

use super::state::Trainer;
use crate::TrainerError;
use crate::policy::Policy;
use crate::probe_records::ProbeRecord;
use crate::scoring::{ScoredResponse, strip_end_tokens};

impl<B: AutodiffBackend, P: Policy<B>> Trainer<B, P> {
    /// On a probed step, draws `probe.samples` extra responses for each group's prompt with the
    /// rollout's sampling settings and the current policy, and records the estimated pass rate
    /// beside the group's verdicts, advantages and the filter's decision. Its seeds come from
    /// the group ids, not from the trainer's RNG, so a probed run trains exactly as an unprobed
    /// one.
    pub(super) fn probe_round(
        &mut self,
        groups: &[RolloutGroup<ScoredResponse>],
    ) -> Result<(), TrainerError> {
        let step = self.state.step + 1;
        if self.writers.probe.is_none() || !self.config.probe.steps.contains(&step) {
            return Ok(());
        }
        let n = self.config.probe.samples;
        let params = self
            .config
            .rollout
            .sampling(&self.prompts.end_ids, self.prompts.answer_line.as_ref());
        let mut records = Vec::with_capacity(groups.len());
        for g in groups {
            let index = g.prompt as usize;
            let ids = self.prompts.ids(index)?;
            let inputs = vec![ids.as_ref().clone(); n];
            let seed = self.config.seed ^ 0x9B0B_E000_0000_0000 ^ (g.group.0 << 16);
            let texts = self.probe_texts(&inputs, &params, seed)?;
            let answer = &self.prompts.train.prompts[index].answer;
            let probe_correct = texts
                .iter()
                .filter(|text| self.verifier.verify(text, answer).outcome.is_correct())
                .count();
            let advantages = self.advantages(std::slice::from_ref(g))?.advantages;
            records.push(ProbeRecord {
                step,
                prompt: g.prompt,
                tier: self.prompts.train.prompts[index].tier.clone(),
                correct: g.verdicts(),
                advantages,
                kept: self.batcher.filter().keep(&g.rewards(), &g.verdicts()),
                probe_samples: n,
                probe_correct,
            });
        }
        if let Some(w) = &mut self.writers.probe {
            for rec in &records {
                w.write_record(rec)?;
            }
        }
        Ok(())
    }

    /// Decoded completions of `inputs`, one sample each, by the current policy in an in-process
    /// [`crate::LocalEngine`] (the probe runs inside a round and must not queue behind or
    /// perturb the run's engine). Rows are generated in chunks of
    /// `rollout.generation_batch` sequences (0: one chunk); chunk c is seeded with `seed ^ c`,
    /// and consecutive equal prompts of a chunk form one request of n samples (that seed's
    /// streams 0, 1, … in order).
    fn probe_texts(
        &mut self,
        inputs: &[Vec<u32>],
        params: &SamplingParams,
        seed: u64,
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
