//! The generate → score → filter phases: generation rounds until dynamic sampling has a batch.
//!
//! A round is submitted to the engine ([`Trainer::submit_round`]: prompts sized by
//! [`rl_sampler::RoundSizing`], one seed per chunk of `rollout.generation_batch` sequences),
//! received ([`Trainer::receive_round`]: stale or aborted groups dropped), scored
//! ([`crate::scoring::Scorer`]), exchanged between data-parallel workers, numbered, and handed
//! to the batcher ([`Trainer::collect_batch`]). [`GenerationStats`] (in `step_stats.rs`) sums every response generated
//! in a step's rounds.

use burn::tensor::backend::AutodiffBackend;
use rand::RngCore;
use rl_advantage::GroupId;
use rl_env::{EpisodeStart, Task, Trajectory};
use rl_rollout::{FinishReason, staleness};
use rl_sampler::RolloutGroup;
use rl_verifier::OutcomeCounts;

use super::state::{RoundReply, SubmittedRound, Trainer};
use crate::TrainerError;
use crate::parallel::{DroppedGroups, RoundShare, own_requests};
use crate::policy::Policy;
use crate::scoring::{ScoredResponse, Scorer, group_completions, round_requests};
use crate::step_stats::GenerationStats;

/// A round's rollouts as received, without the groups that may not be trained on.
pub struct ReceivedRound {
    /// The kept prompts' positions in the round.
    pub positions: Vec<usize>,
    /// Their data-set indices.
    pub prompts: Vec<usize>,
    /// Their G rollouts each (a single-turn completion is a one-turn trajectory).
    pub completions: Vec<Vec<Trajectory>>,
    /// The groups dropped: staler than `rollout.max_staleness`, or aborted by the engine.
    pub dropped: DroppedGroups,
}

/// The batch dynamic sampling returned, and what the step's rounds generated.
pub struct CollectedBatch {
    /// The kept groups, numbered in round order.
    pub groups: Vec<RolloutGroup<ScoredResponse>>,
    /// Sums over every response the step generated.
    pub stats: GenerationStats,
}

impl<B: AutodiffBackend, P: Policy<B>> Trainer<B, P> {
    /// Generation phase, first half: samples the next round's prompts (as many as
    /// [`rl_sampler::RoundSizing`] says for the groups still needed), draws one seed per chunk of
    /// `rollout.generation_batch` sequences and hands this worker's requests to the engine.
    /// With `[rollout.env]` it draws one seed per episode and runs this worker's episodes to
    /// their end here, one engine call per turn ([`crate::multi_turn::Episodes::run`]).
    pub fn submit_round(&mut self) -> Result<SubmittedRound, TrainerError> {
        let r = &self.config.rollout;
        let needed = self
            .config
            .batch
            .groups_per_step
            .saturating_sub(self.batcher.pending());
        let count = self.config.batch.round_sizing.prompts(
            &self.state.keep_rate.with(&self.batcher.report()),
            needed,
            r.prompts_per_round,
        );
        let idx = self.sampler.next(count);
        let rendered = self.prompts.render(&idx)?;
        let prompts = self.prompts.round(&idx, rendered);
        let params = r.sampling(&self.prompts.end_ids, self.prompts.answer_line.as_ref());
        let owned = self.parallel.owned(idx.len());
        let sizes = group_sizes(
            r.group_size,
            r.budget.as_ref(),
            self.state.difficulty.as_ref(),
            &idx,
        )?;
        let reply = match self.episodes.clone() {
            None => {
                let rng = &mut self.state.rng;
                let mut seeds = || rng.next_u64();
                let requests =
                    round_requests(&prompts, &sizes, &params, r.generation_batch, &mut seeds);
                let requests = own_requests(requests, &owned, &sizes);
                RoundReply::Completions(self.engine.submit(requests)?)
            }
            Some(episodes) => {
                // One seed per episode, drawn for every prompt of the round (the same draws on
                // every worker); this worker runs its own prompts' episodes.
                let seeds: Vec<u64> = (0..sizes.iter().sum::<usize>())
                    .map(|_| self.state.rng.next_u64())
                    .collect();
                let first: Vec<usize> = sizes
                    .iter()
                    .scan(0, |acc, &n| {
                        let at = *acc;
                        *acc += n;
                        Some(at)
                    })
                    .collect();
                let mut starts = Vec::new();
                for &pos in &owned {
                    let p = &prompts[pos];
                    for j in 0..sizes[pos] {
                        starts.push(EpisodeStart {
                            prompt_ids: p.ids.clone(),
                            task: Task {
                                index: p.index,
                                answer: p.answer.to_string(),
                                metadata: serde_json::Value::Null,
                            },
                            seed: seeds[first[pos] + j],
                        });
                    }
                }
                let codec = self.prompts.codec();
                let engine = &mut self.engine;
                let trajectories = episodes.run(
                    &codec,
                    &params,
                    &mut |reqs| engine.submit(reqs)?.wait(),
                    &starts,
                )?;
                RoundReply::Episodes(trajectories)
            }
        };
        Ok(SubmittedRound {
            prompts: idx,
            owned,
            sizes,
            reply,
        })
    }

    /// Generation phase, second half: waits for a submitted round and returns G completions per
    /// prompt of this worker's share, without the groups that may not be trained on — those
    /// with a completion more than `rollout.max_staleness` versions behind the policy of this
    /// step, or aborted by the engine — which it counts.
    pub fn receive_round(&self, round: SubmittedRound) -> Result<ReceivedRound, TrainerError> {
        let replies: Vec<Vec<Trajectory>> = match round.reply {
            RoundReply::Completions(pending) => pending
                .wait()?
                .into_iter()
                .map(|r| r.into_iter().map(Trajectory::from_completion).collect())
                .collect(),
            RoundReply::Episodes(t) => vec![t],
        };
        let owned_sizes: Vec<usize> = round.owned.iter().map(|&p| round.sizes[p]).collect();
        let groups = group_completions(replies, &owned_sizes)?;
        let policy_version = self.state.step as u64;
        let k = self.config.rollout.max_staleness as u64;
        let mut out = ReceivedRound {
            positions: Vec::with_capacity(groups.len()),
            prompts: Vec::with_capacity(groups.len()),
            completions: Vec::with_capacity(groups.len()),
            dropped: DroppedGroups::default(),
        };
        for (pos, g) in round.owned.into_iter().zip(groups) {
            let stale = g.iter().any(|c| staleness(policy_version, c.version()) > k);
            let aborted = g.iter().any(|c| c.finish() == FinishReason::Abort);
            if stale || aborted {
                out.dropped.add(DroppedGroups {
                    groups: 1,
                    responses: g.len(),
                });
            } else {
                out.positions.push(pos);
                out.prompts.push(round.prompts[pos]);
                out.completions.push(g);
            }
        }
        Ok(out)
    }

    /// Scoring phase of a received round: decoded, verified, shaped responses grouped by prompt,
    /// with their positions in the round and the verifier's outcome counts.
    fn score_round(&mut self, received: ReceivedRound) -> Result<RoundShare, TrainerError> {
        let rendered = self.prompts.render(&received.prompts)?;
        let prompts = self.prompts.round(&received.prompts, rendered);
        let scorer = Scorer {
            verifier: self.verifier.as_ref(),
            rewards: self.config.reward_map(),
            overlong: self.config.reward.overlong,
            tokenizer: &self.prompts.tokenizer,
            end_ids: &self.prompts.end_ids,
            multi_turn: self.episodes.is_some(),
            parallelism: self.config.scoring_parallelism(),
        };
        let mut outcomes = OutcomeCounts::default();
        let groups = scorer.score_round(&prompts, received.completions, &mut outcomes)?;
        Ok(RoundShare {
            groups: received.positions.into_iter().zip(groups).collect(),
            outcomes,
            dropped: received.dropped,
        })
    }

    /// Generation rounds — generate, score, filter — until the batcher returns a batch. The
    /// first round may have been submitted by [`Trainer::prefetch`] during the previous step.
    pub fn collect_batch(&mut self) -> Result<CollectedBatch, TrainerError> {
        let mut stats = GenerationStats::default();
        loop {
            let round = match self.prefetched.take() {
                Some(r) => r,
                None => self.submit_round()?,
            };
            let received = self.receive_round(round)?;
            let share = self.score_round(received)?;
            let round = self.parallel.exchange_round(share)?;
            // Group ids in round order (with workers: the same on every worker).
            let mut groups: Vec<RolloutGroup<ScoredResponse>> =
                round.groups.into_iter().map(|(_, g)| g).collect();
            for g in &mut groups {
                g.group = GroupId(self.state.next_group);
                self.state.next_group += 1;
            }
            if let Some(parts) = self.add_model_rewards(&mut groups)? {
                stats.reward_parts.add(&parts);
            }
            if let Some(t) = &mut self.state.difficulty {
                for g in &groups {
                    t.observe(g.prompt, g.correct_count(), g.items.len());
                }
            }
            self.probe_round(&groups)?;
            stats.dropped.add(round.dropped);
            stats.outcomes.merge(&round.outcomes);
            stats.observe_round(&groups);
            if let Some(batch) = self.batcher.push_round(groups)? {
                self.state.keep_rate.observe(&batch.report);
                stats.report = batch.report;
                return Ok(CollectedBatch {
                    groups: batch.groups,
                    stats,
                });
            }
        }
    }

    /// With `rollout.max_staleness` ≥ 1: submits the next step's first round now, so that the
    /// engine generates it (with the weights of this step's rollouts) while this step trains.
    pub fn prefetch(&mut self) -> Result<(), TrainerError> {
        if self.config.rollout.max_staleness > 0 && self.prefetched.is_none() {
            self.prefetched = Some(self.submit_round()?);
        }
        Ok(())
    }
}

/// Each prompt's group size: `group_size` for all, or with `[rollout.budget]` the allocation of
/// `prompts × group_size` responses by the prompts' running pass rates.
fn group_sizes(
    group_size: usize,
    budget: Option<&crate::config::AdaptiveBudget>,
    difficulty: Option<&rl_sampler::DifficultyTracker>,
    prompts: &[usize],
) -> Result<Vec<usize>, TrainerError> {
    match (budget, difficulty) {
        (Some(b), Some(t)) => {
            let ids: Vec<u64> = prompts.iter().map(|&i| i as u64).collect();
            Ok(b.allocation()?
                .allocate_tracked(prompts.len() * group_size, t, &ids)?)
        }
        _ => Ok(vec![group_size; prompts.len()]),
    }
}

#[cfg(test)]
mod tests {
    use rl_sampler::{BudgetSchedule, DifficultyTracker};

    use super::group_sizes;
    use crate::config::AdaptiveBudget;

    /// Prompt 0 answered 0 of 4, prompt 1 4 of 4, prompt 2 2 of 4, prompt 3 never seen (½):
    /// 4 prompts × G = 4 = 16 responses, split by rl-sampler's allocation of exactly these
    /// estimates; hardness-weighted (more for harder prompts, none below the solved one's), so the
    /// unsolved prompt gets the most. Without a budget every prompt gets G.
    #[test]
    fn group_sizes_follow_the_tracker() {
        let mut t = DifficultyTracker::new(0.5).unwrap();
        t.observe(0, 0, 4);
        t.observe(1, 4, 4);
        t.observe(2, 2, 4);
        let b = AdaptiveBudget {
            schedule: BudgetSchedule::DarsHw {
                std: false,
                base: None,
            },
            min: 2,
            max: 8,
            decay: 0.5,
        };
        let sizes = group_sizes(4, Some(&b), Some(&t), &[0, 1, 2, 3]).unwrap();
        let direct = b
            .allocation()
            .unwrap()
            .allocate(16, &[Some(0.0), Some(1.0), Some(0.5), None])
            .unwrap();
        assert_eq!(sizes, direct);
        assert_eq!(sizes.iter().sum::<usize>(), 16);
        assert!(
            sizes[0] > sizes[1] && sizes[0] >= sizes[2] && sizes[2] >= sizes[1],
            "{sizes:?}"
        );
        assert_eq!(
            group_sizes(4, None, None, &[0, 1, 2]).unwrap(),
            vec![4, 4, 4]
        );
    }
}
