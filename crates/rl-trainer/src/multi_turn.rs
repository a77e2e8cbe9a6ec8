//! Multi-turn episodes on the trainer's side (`[rollout.env]`, docs/agents.md): the chat codec
//! that decodes turns and renders observations through Qwen3's chat template, and
//! [`Episodes`], the environment and bounds that training rounds and held-out evaluation run
//! episodes with (`rl-env`'s [`EpisodeRunner`]).

use std::sync::Arc;

use rl_env::{
    EnvConfig, EnvError, EnvironmentFactory, EpisodeLimits, EpisodeRunner, EpisodeStart, Message,
    Trajectory, TurnCodec,
};
use rl_models::{ChatMessage, Tokenizer, render_chat};
use rl_rollout::{Completion, GenerateRequest, SamplingParams};

use crate::TrainerError;
use crate::scoring::strip_end_tokens;

/// Decodes sampled turns and renders observations with a tokenizer and Qwen3's chat template.
///
/// An observation after an assistant turn that ended with `<|im_end|>` is the rest of what the
/// template writes from there: `"\n"` (the template ends every turn with `<|im_end|>\n`), the
/// observation's turns (`tool` messages as one user turn of `<tool_response>` blocks), and the
/// next `<|im_start|>assistant\n` header (plus the empty think block when thinking is off).
/// Only that text is tokenised; special tokens split it from what came before, so the ids are
/// those the template would give for the whole conversation at this point.
pub struct ChatCodec<'a> {
    /// The tokenizer.
    pub tokenizer: &'a Tokenizer,
    /// Ids stripped from the end of a turn before decoding it.
    pub end_ids: &'a [u32],
    /// Qwen3's `enable_thinking` (the generation prompt without an empty think block).
    pub enable_thinking: bool,
}

impl TurnCodec for ChatCodec<'_> {
    fn turn_text(&self, tokens: &[u32]) -> Result<String, EnvError> {
        self.tokenizer
            .decode(strip_end_tokens(tokens, self.end_ids), false)
            .map_err(|e| EnvError::Codec(e.to_string()))
    }

    fn observation_ids(&self, messages: &[Message]) -> Result<Vec<u32>, EnvError> {
        let chat: Vec<ChatMessage> = messages
            .iter()
            .map(|m| ChatMessage::new(m.role.clone(), m.content.clone()))
            .collect();
        let text = render_chat(&chat, true, self.enable_thinking)
            .map_err(|e| EnvError::Codec(e.to_string()))?;
        let text = format!("\n{text}");
        match self.tokenizer.encode(&text) {
            Ok(ids) => Ok(ids),
            // A tokenizer without byte fallback (the embedded character-level ones) cannot
            // encode every character a tool result may hold: the observation is the text with
            // non-ASCII characters as `?` rather than a failed run.
            Err(first) => {
                let ascii: String = text
                    .chars()
                    .map(|c| if c.is_ascii() { c } else { '?' })
                    .collect();
                self.tokenizer
                    .encode(&ascii)
                    .map_err(|_| EnvError::Codec(first.to_string()))
            }
        }
    }
}

/// The environment episodes run in, and their bounds (from `[rollout.env]`).
#[derive(Clone)]
pub struct Episodes {
    /// Makes each episode's environment.
    pub factory: Arc<dyn EnvironmentFactory>,
    /// Bounds of every episode.
    pub limits: EpisodeLimits,
    /// Environment steps at once.
    pub parallelism: usize,
    /// The tools' definitions as the chat template's `tojson` writes them, for the prompt's
    /// system turn (empty: none shown).
    pub tools_in_prompt: Vec<String>,
}

impl std::fmt::Debug for Episodes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Episodes")
            .field("env", &self.factory.name())
            .field("limits", &self.limits)
            .finish()
    }
}

impl Episodes {
    /// The environment `config` names (for `tools`: its registry; `python` starts its sandbox).
    pub fn from_config(config: &EnvConfig) -> Result<Self, TrainerError> {
        let env = config.build()?;
        let tools_in_prompt = if config.tools_in_prompt {
            env.registry().definitions_json()
        } else {
            Vec::new()
        };
        Ok(Episodes {
            factory: Arc::new(env),
            limits: config.limits(),
            parallelism: config.parallelism(),
            tools_in_prompt,
        })
    }

    /// The environment of `config.rollout.env` (`None` without the section).
    pub fn of(config: &crate::TrainConfig) -> Result<Option<Self>, TrainerError> {
        config
            .rollout
            .env
            .as_ref()
            .map(Self::from_config)
            .transpose()
    }

    /// The tool definitions prompts show (none without episodes or with `tools_in_prompt`
    /// off).
    pub fn prompt_tools(episodes: Option<&Self>) -> Vec<String> {
        episodes
            .map(|e| e.tools_in_prompt.clone())
            .unwrap_or_default()
    }

    /// A custom environment with `config`'s bounds (its `tools` settings are not used; no tool
    /// list is shown in prompts).
    pub fn custom(factory: Arc<dyn EnvironmentFactory>, config: &EnvConfig) -> Self {
        Episodes {
            factory,
            limits: config.limits(),
            parallelism: config.parallelism(),
            tools_in_prompt: Vec::new(),
        }
    }

    /// Runs `starts` to their end through `generate` with turns sampled as `params` (the
    /// per-turn `max_new_tokens`; seeds are the episodes').
    pub fn run(
        &self,
        codec: &ChatCodec<'_>,
        params: &SamplingParams,
        generate: &mut dyn FnMut(
            Vec<GenerateRequest>,
        ) -> Result<Vec<Vec<Completion>>, rl_rollout::EngineError>,
        starts: &[EpisodeStart],
    ) -> Result<Vec<Trajectory>, TrainerError> {
        let runner = EpisodeRunner {
            factory: self.factory.as_ref(),
            codec,
            params: params.clone(),
            limits: self.limits,
            parallelism: self.parallelism,
        };
        Ok(runner.run(generate, starts)?)
    }
}
