//! The theorem probe (`probe` section) inside the generation rounds: on a probed step, extra
//! responses for each group's prompt estimate its pass rate, recorded beside the group's
//! verdicts, advantages and the filter's decision in `probe.jsonl` ([`ProbeRecord`]).

use burn::tensor::backend::AutodiffBackend;
use rl_sampler::RolloutGroup;

use super::Trainer;
use super::eval::Via;
use crate::TrainerError;
use crate::policy::Policy;
use crate::probe::ProbeRecord;
use crate::scoring::ScoredResponse;

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
        let r = &self.config.rollout;
        let params = self.sampling(r.temperature, r.top_p, r.top_k);
        let mut records = Vec::with_capacity(groups.len());
        for g in groups {
            let index = g.prompt as usize;
            let ids = self.prompts.ids(index)?;
            let inputs = vec![ids.as_ref().clone(); n];
            let seed = self.config.seed ^ 0x9B0B_E000_0000_0000 ^ (g.group.0 << 16);
            let texts = self.generate_texts(&inputs, &params, seed, Via::InProcess)?;
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
                correct: g.correct.clone(),
                advantages,
                kept: self.batcher.filter().keep(&g.rewards, &g.correct),
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
}
