//! The trajectory of an episode: one token sequence after the prompt, built only by appending.
//!
//! Sampled tokens are kept exactly as the engine returned them, with their log-probs;
//! observation tokens are appended after them with `sampled = false` and no log-prob. Nothing
//! already in the sequence is ever re-tokenised, so the ids a trainer scores are, token for
//! token, the ids the engine was given as context and the ids it sampled (the token-drift bug
//! of re-rendered conversations cannot happen here).

use rl_rollout::{Completion, FinishReason, WeightVersion, is_valid_logprob};
use serde::{Deserialize, Serialize};

/// One assistant turn's place in a [`Trajectory`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnRecord {
    /// Offset of its first sampled token in [`Trajectory::tokens`].
    pub start: usize,
    /// Sampled tokens of the turn.
    pub len: usize,
    /// Why the turn ended.
    pub finish: FinishReason,
    /// The weights that sampled it.
    pub version: WeightVersion,
}

/// Why an episode ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EpisodeEnd {
    /// The environment said done (a final answer).
    Done,
    /// `max_turns` assistant turns were taken and the last still asked for more.
    MaxTurns,
    /// The episode's token budget (`max_tokens` after the prompt) ran out.
    TokenBudget,
    /// A turn reached its `max_new_tokens` without a stop token.
    TurnLength,
    /// The engine aborted a turn (never trained on).
    Aborted,
}

impl EpisodeEnd {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            EpisodeEnd::Done => "done",
            EpisodeEnd::MaxTurns => "max_turns",
            EpisodeEnd::TokenBudget => "token_budget",
            EpisodeEnd::TurnLength => "turn_length",
            EpisodeEnd::Aborted => "aborted",
        }
    }
}

/// An episode's token sequence after the prompt, its masks and what happened in it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trajectory {
    /// Sampled and observation tokens, in order.
    pub tokens: Vec<u32>,
    /// The engine's log-prob of each sampled token; 0 at observation tokens (not a log-prob:
    /// read only where `sampled`).
    pub logprobs: Vec<f32>,
    /// True where the token was sampled (the loss mask); false on observation tokens.
    pub sampled: Vec<bool>,
    /// The assistant turns, in order.
    pub turns: Vec<TurnRecord>,
    /// Why the episode ended.
    pub end: EpisodeEnd,
    /// Sum of the environment's reward contributions.
    pub env_reward: f64,
    /// Tool calls made.
    pub tool_calls: usize,
    /// Tool calls that became error observations.
    pub tool_errors: usize,
}

impl Default for Trajectory {
    fn default() -> Self {
        Trajectory {
            tokens: Vec::new(),
            logprobs: Vec::new(),
            sampled: Vec::new(),
            turns: Vec::new(),
            end: EpisodeEnd::Done,
            env_reward: 0.0,
            tool_calls: 0,
            tool_errors: 0,
        }
    }
}

impl Trajectory {
    /// A one-turn episode: a single-turn completion (every token sampled).
    pub fn from_completion(c: Completion) -> Self {
        let mut t = Trajectory::default();
        t.push_turn(&c);
        t.end = match c.finish {
            FinishReason::Stop => EpisodeEnd::Done,
            FinishReason::Length => EpisodeEnd::TurnLength,
            FinishReason::Abort => EpisodeEnd::Aborted,
        };
        t
    }

    /// Appends a sampled turn: its tokens and log-probs as the engine returned them.
    pub fn push_turn(&mut self, c: &Completion) {
        self.turns.push(TurnRecord {
            start: self.tokens.len(),
            len: c.tokens.len(),
            finish: c.finish,
            version: c.version,
        });
        self.tokens.extend_from_slice(&c.tokens);
        self.logprobs.extend_from_slice(&c.logprobs);
        self.sampled
            .extend(std::iter::repeat_n(true, c.tokens.len()));
    }

    /// Appends observation tokens (not sampled, no log-prob).
    pub fn push_observation(&mut self, ids: &[u32]) {
        self.tokens.extend_from_slice(ids);
        self.logprobs.extend(std::iter::repeat_n(0.0, ids.len()));
        self.sampled.extend(std::iter::repeat_n(false, ids.len()));
    }

    /// Tokens after the prompt (sampled and observation).
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// No token at all.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Sampled tokens (the tokens a loss counts).
    pub fn sampled_len(&self) -> usize {
        self.turns.iter().map(|t| t.len).sum()
    }

    /// True when every token was sampled (a single-turn episode).
    pub fn all_sampled(&self) -> bool {
        self.sampled.iter().all(|&s| s)
    }

    /// The last assistant turn's tokens (what a verifier of the final answer reads).
    pub fn last_turn(&self) -> &[u32] {
        self.turns
            .last()
            .map(|t| &self.tokens[t.start..t.start + t.len])
            .unwrap_or(&[])
    }

    /// How the episode finished, in the single-turn vocabulary the trainer's shaping and
    /// filters use: `Abort` if a turn was aborted; `Length` when limits cut it (a turn's
    /// `max_new_tokens`, the token budget, or `max_turns`); `Stop` when the environment ended
    /// it.
    pub fn finish(&self) -> FinishReason {
        match self.end {
            EpisodeEnd::Aborted => FinishReason::Abort,
            EpisodeEnd::Done => FinishReason::Stop,
            EpisodeEnd::MaxTurns | EpisodeEnd::TokenBudget | EpisodeEnd::TurnLength => {
                FinishReason::Length
            }
        }
    }

    /// The oldest weight version that sampled a turn (staleness is that of the oldest part).
    pub fn version(&self) -> WeightVersion {
        self.turns.iter().map(|t| t.version).min().unwrap_or(0)
    }

    /// Checks the invariants: equal lengths, turns tiling exactly the sampled positions in
    /// order, finite log-probs ≤ 0 at sampled tokens. A trainer calls it on trajectories from
    /// outside (a custom environment driver) before training on them.
    pub fn check(&self) -> Result<(), String> {
        let n = self.tokens.len();
        if self.logprobs.len() != n || self.sampled.len() != n {
            return Err(format!(
                "{n} tokens, {} log-probs, {} mask entries",
                self.logprobs.len(),
                self.sampled.len()
            ));
        }
        let mut covered = vec![false; n];
        let mut last_end = 0;
        for (i, t) in self.turns.iter().enumerate() {
            if t.start < last_end || t.start + t.len > n {
                return Err(format!(
                    "turn {i} ({}..{}) out of order",
                    t.start,
                    t.start + t.len
                ));
            }
            for c in &mut covered[t.start..t.start + t.len] {
                *c = true;
            }
            last_end = t.start + t.len;
        }
        if let Some(j) = (0..n).find(|&j| covered[j] != self.sampled[j]) {
            return Err(format!(
                "token {j}: sampled = {} but {} a turn",
                self.sampled[j],
                if covered[j] { "inside" } else { "outside" }
            ));
        }
        if let Some(j) = (0..n).find(|&j| self.sampled[j] && !is_valid_logprob(self.logprobs[j])) {
            return Err(format!(
                "token {j}: log-prob {} is not finite and <= 0",
                self.logprobs[j]
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comp(tokens: &[u32], finish: FinishReason, version: u64) -> Completion {
        Completion {
            tokens: tokens.to_vec(),
            logprobs: tokens.iter().map(|&t| -(t as f32) / 10.0).collect(),
            finish,
            version,
        }
    }

    #[test]
    fn appending_keeps_sampled_tokens_and_masks_observations() {
        let mut t = Trajectory::default();
        t.push_turn(&comp(&[5, 6, 7], FinishReason::Stop, 3));
        t.push_observation(&[1, 2]);
        t.push_turn(&comp(&[8, 9], FinishReason::Stop, 2));
        assert_eq!(t.tokens, vec![5, 6, 7, 1, 2, 8, 9]);
        assert_eq!(t.sampled, vec![true, true, true, false, false, true, true]);
        assert_eq!(t.logprobs, vec![-0.5, -0.6, -0.7, 0.0, 0.0, -0.8, -0.9]);
        assert_eq!(t.sampled_len(), 5);
        assert_eq!(t.last_turn(), &[8, 9]);
        assert_eq!(t.version(), 2);
        assert!(!t.all_sampled());
        t.check().unwrap();
        let mut bad = t.clone();
        bad.sampled[3] = true;
        assert!(bad.check().unwrap_err().contains("token 3"));
        let mut bad = t;
        bad.logprobs.pop();
        assert!(bad.check().is_err());
    }

    #[test]
    fn a_completion_is_a_one_turn_episode() {
        let t = Trajectory::from_completion(comp(&[4, 4], FinishReason::Length, 1));
        assert_eq!(t.end, EpisodeEnd::TurnLength);
        assert_eq!(t.finish(), FinishReason::Length);
        assert!(t.all_sampled());
        t.check().unwrap();
    }
}
