//! Running a batch of episodes through any rollout engine, one assistant turn at a time.
//!
//! Each turn sends one request per unfinished episode, all in one engine call: its prompt ids
//! are the episode's prompt followed by every token of its trajectory so far, exactly as
//! recorded (sampled ids as the engine returned them, observation ids as the codec rendered
//! them once). Environments then answer the turns (in parallel threads, since tools such as the
//! sandboxed `python` take time), and their observations are appended. An episode ends when its
//! environment says done, a turn hits `max_new_tokens`, `max_turns` turns were taken, the token
//! budget runs out, or the engine aborts a turn.

use std::sync::Arc;

use rl_rollout::{Completion, EngineError, FinishReason, GenerateRequest, SamplingParams};
use serde::{Deserialize, Serialize};

use crate::{
    AssistantTurn, EnvError, Environment, EnvironmentFactory, EpisodeEnd, Observation, Step, Task,
    Trajectory, TurnCodec,
};

/// Bounds of every episode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpisodeLimits {
    /// Assistant turns, at most.
    pub max_turns: usize,
    /// Tokens after the prompt (sampled and observation), at most: the sequence a trainer
    /// scores is never longer than prompt + `max_tokens`.
    pub max_tokens: usize,
}

/// One episode to run.
#[derive(Clone, Debug)]
pub struct EpisodeStart {
    /// The rendered prompt.
    pub prompt_ids: Arc<Vec<u32>>,
    /// What the environment starts from.
    pub task: Task,
    /// The episode's seed: turn 0 samples with it, turn t > 0 with [`turn_seed`]`(seed, t)`.
    pub seed: u64,
}

/// The seed of turn `turn` of an episode seeded `seed` (turn 0: the seed itself; later turns:
/// SplitMix64 of the seed mixed with the turn), so that every turn is an independent,
/// reproducible stream whatever the batching.
pub fn turn_seed(seed: u64, turn: usize) -> u64 {
    if turn == 0 {
        return seed;
    }
    let mut z = seed ^ (turn as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A generation call: requests in, `n` completions per request out (a
/// [`rl_rollout::RolloutEngine::generate`], or a trainer's engine handle).
pub type Generate<'a> =
    dyn FnMut(Vec<GenerateRequest>) -> Result<Vec<Vec<Completion>>, EngineError> + 'a;

/// Runs batches of episodes.
pub struct EpisodeRunner<'a> {
    /// Makes each episode's environment.
    pub factory: &'a dyn EnvironmentFactory,
    /// Decodes turns and renders observations.
    pub codec: &'a dyn TurnCodec,
    /// Sampling of every turn (`max_new_tokens` per turn; the seed is the episode's).
    pub params: SamplingParams,
    /// Bounds of every episode.
    pub limits: EpisodeLimits,
    /// Environment steps run at once (threads); 1 = in order on the caller's thread.
    pub parallelism: usize,
}

struct Live {
    env: Option<Box<dyn Environment>>,
    traj: Trajectory,
    done: bool,
}

/// A finished turn waiting for its environment's answer.
struct TurnJob {
    episode: usize,
    env: Box<dyn Environment>,
    tokens: Vec<u32>,
    text: String,
}

/// The answer, with the environment to put back.
struct Answered {
    episode: usize,
    env: Box<dyn Environment>,
    step: Step,
}

impl EpisodeRunner<'_> {
    /// Runs `episodes` to their end and returns their trajectories, in order. Engine, codec,
    /// tool-machinery and environment-contract failures are errors; everything the model does
    /// is in the trajectories.
    pub fn run(
        &self,
        generate: &mut Generate<'_>,
        episodes: &[EpisodeStart],
    ) -> Result<Vec<Trajectory>, EnvError> {
        if self.limits.max_turns == 0 {
            return Err(EnvError::config("env.max_turns", 0, "at least 1"));
        }
        if self.limits.max_tokens == 0 {
            return Err(EnvError::config("env.max_tokens", 0, "at least 1"));
        }
        let mut live = episodes
            .iter()
            .map(|e| {
                Ok(Live {
                    env: Some(self.factory.create(&e.task)?),
                    traj: Trajectory::default(),
                    done: false,
                })
            })
            .collect::<Result<Vec<_>, EnvError>>()?;
        for turn in 0..self.limits.max_turns {
            let active: Vec<usize> = (0..live.len()).filter(|&i| !live[i].done).collect();
            if active.is_empty() {
                break;
            }
            let requests = active
                .iter()
                .map(|&i| {
                    let room = self.limits.max_tokens - live[i].traj.len();
                    GenerateRequest {
                        prompt_ids: [episodes[i].prompt_ids.as_slice(), &live[i].traj.tokens]
                            .concat(),
                        n: 1,
                        params: SamplingParams {
                            max_new_tokens: self.params.max_new_tokens.min(room),
                            seed: turn_seed(episodes[i].seed, turn),
                            ..self.params.clone()
                        },
                    }
                })
                .collect();
            let replies = generate(requests)?;
            if replies.len() != active.len() || replies.iter().any(|r| r.len() != 1) {
                return Err(EnvError::Engine(EngineError::Malformed {
                    engine: "episodes".into(),
                    request: 0,
                    message: format!(
                        "{} replies for {} one-sample requests",
                        replies.len(),
                        active.len()
                    ),
                }));
            }
            // Append every sampled turn; the ones that can go on get an environment step.
            let mut jobs = Vec::new();
            for (&i, mut reply) in active.iter().zip(replies) {
                let Some(c) = reply.pop() else { continue };
                let ep = &mut live[i];
                ep.traj.push_turn(&c);
                match c.finish {
                    FinishReason::Abort => finish(ep, EpisodeEnd::Aborted),
                    FinishReason::Length => finish(ep, EpisodeEnd::TurnLength),
                    FinishReason::Stop => {
                        let text = self.codec.turn_text(&c.tokens)?;
                        if let Some(env) = ep.env.take() {
                            jobs.push(TurnJob {
                                episode: i,
                                env,
                                tokens: c.tokens,
                                text,
                            });
                        }
                    }
                }
            }
            for Answered { episode, env, step } in self.step_all(turn, jobs)? {
                let ep = &mut live[episode];
                ep.env = Some(env);
                ep.traj.env_reward += step.reward;
                ep.traj.tool_calls += step.tool_calls;
                ep.traj.tool_errors += step.tool_errors;
                match (step.done, step.observation) {
                    (true, None) => finish(ep, EpisodeEnd::Done),
                    (false, Some(obs)) => {
                        if turn + 1 == self.limits.max_turns {
                            finish(ep, EpisodeEnd::MaxTurns);
                            continue;
                        }
                        let ids = match obs {
                            Observation::Messages(m) => self.codec.observation_ids(&m)?,
                            Observation::Tokens(t) => t,
                        };
                        // Room for the observation and at least one sampled token.
                        if ep.traj.len() + ids.len() >= self.limits.max_tokens {
                            finish(ep, EpisodeEnd::TokenBudget);
                        } else {
                            ep.traj.push_observation(&ids);
                        }
                    }
                    (done, obs) => {
                        return Err(EnvError::Contract {
                            env: self.factory.name(),
                            message: format!(
                                "step answered done = {done} with {} observation",
                                if obs.is_some() { "an" } else { "no" }
                            ),
                        });
                    }
                }
            }
        }
        Ok(live
            .into_iter()
            .map(|ep| {
                let mut t = ep.traj;
                if !ep.done {
                    t.end = EpisodeEnd::MaxTurns;
                }
                t
            })
            .collect())
    }

    /// Environment steps of one turn, `parallelism` at a time; results in job order.
    fn step_all(&self, turn: usize, jobs: Vec<TurnJob>) -> Result<Vec<Answered>, EnvError> {
        let one = |job: TurnJob| -> Result<Answered, EnvError> {
            let TurnJob {
                episode,
                mut env,
                tokens,
                text,
            } = job;
            let step = env.step(&AssistantTurn {
                index: turn,
                tokens: &tokens,
                text: &text,
                finish: FinishReason::Stop,
            })?;
            Ok(Answered { episode, env, step })
        };
        let threads = self.parallelism.max(1).min(jobs.len().max(1));
        if threads == 1 {
            return jobs.into_iter().map(one).collect();
        }
        let per = jobs.len().div_ceil(threads);
        let mut chunks: Vec<Vec<TurnJob>> = Vec::new();
        let mut it = jobs.into_iter().peekable();
        while it.peek().is_some() {
            chunks.push(it.by_ref().take(per).collect());
        }
        let results: Vec<Result<Vec<Answered>, EnvError>> = std::thread::scope(|s| {
            let handles: Vec<_> = chunks
                .into_iter()
                .map(|chunk| s.spawn(move || chunk.into_iter().map(one).collect()))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(EnvError::Contract {
                            env: self.factory.name(),
                            message: "an environment step panicked".into(),
                        })
                    })
                })
                .collect()
        });
        let mut out = Vec::new();
        for r in results {
            out.extend(r?);
        }
        Ok(out)
    }
}

fn finish(ep: &mut Live, end: EpisodeEnd) {
    ep.traj.end = end;
    ep.done = true;
}
