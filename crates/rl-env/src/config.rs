//! `[rollout.env]`: which environment episodes run in, and their bounds.

use serde::{Deserialize, Serialize};

use crate::tool_env::ToolEnvironment;
use crate::tools::ToolsConfig;
use crate::{EnvError, EnvironmentFactory, EpisodeLimits};

/// Names accepted for [`EnvConfig::name`].
pub const ENV_NAMES: [&str; 1] = ["tools"];

/// An environment by name, with its episode bounds:
///
/// ```toml
/// [rollout.env]
/// name = "tools"
/// max_turns = 3
/// max_tokens = 256
/// [rollout.env.tools]
/// enabled = ["calculator"]
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EnvConfig {
    /// The environment ([`ENV_NAMES`]).
    pub name: String,
    /// Assistant turns per episode, at most.
    pub max_turns: usize,
    /// Tokens after the prompt (sampled and observation) per episode, at most.
    pub max_tokens: usize,
    /// Environment steps (tool calls) run at once; 0 = the machine's available parallelism.
    pub parallelism: usize,
    /// Show the tools to the model: the prompt's system turn lists their definitions as Qwen3's
    /// chat template does for `tools=[...]` (chat-template prompts only).
    pub tools_in_prompt: bool,
    /// `tools`: the tools and their limits.
    pub tools: ToolsConfig,
}

impl Default for EnvConfig {
    fn default() -> Self {
        EnvConfig {
            name: "tools".into(),
            max_turns: 4,
            max_tokens: 1024,
            parallelism: 0,
            tools_in_prompt: true,
            tools: ToolsConfig::default(),
        }
    }
}

impl EnvConfig {
    /// Checks the fields (names and values in the error).
    pub fn validate(&self) -> Result<(), EnvError> {
        if !ENV_NAMES.contains(&self.name.as_str()) {
            return Err(EnvError::config(
                "env.name",
                format!("\"{}\"", self.name),
                format!("one of {}", ENV_NAMES.join(", ")),
            ));
        }
        if self.max_turns == 0 {
            return Err(EnvError::config("env.max_turns", 0, "at least 1"));
        }
        if self.max_tokens == 0 {
            return Err(EnvError::config("env.max_tokens", 0, "at least 1"));
        }
        Ok(())
    }

    /// The episode bounds.
    pub fn limits(&self) -> EpisodeLimits {
        EpisodeLimits {
            max_turns: self.max_turns,
            max_tokens: self.max_tokens,
        }
    }

    /// Environment steps at once (0 resolved to the available parallelism).
    pub fn parallelism(&self) -> usize {
        if self.parallelism == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            self.parallelism
        }
    }

    /// Builds the environment (for `tools`: its registry, starting the sandbox when `python`
    /// is enabled).
    pub fn build(&self) -> Result<ToolEnvironment, EnvError> {
        self.validate()?;
        ToolEnvironment::new(&self.tools)
    }

    /// [`EnvConfig::build`] as a trait object.
    pub fn build_factory(&self) -> Result<Box<dyn EnvironmentFactory>, EnvError> {
        Ok(Box::new(self.build()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_round_trips_and_names_bad_fields() {
        let c: EnvConfig =
            toml_like(r#"{"name": "tools", "max_turns": 3, "tools": {"enabled": ["calculator"]}}"#);
        assert_eq!(c.max_turns, 3);
        assert_eq!(c.max_tokens, 1024);
        c.validate().unwrap();
        let bad = EnvConfig {
            name: "web".into(),
            ..EnvConfig::default()
        };
        assert!(bad.validate().unwrap_err().to_string().contains("env.name"));
        let e = serde_json::from_str::<EnvConfig>(r#"{"max_turn": 3}"#).unwrap_err();
        assert!(e.to_string().contains("max_turn"));
    }

    fn toml_like(json: &str) -> EnvConfig {
        serde_json::from_str(json).unwrap()
    }
}
