//! `tools`: the tool-calling environment. Each assistant turn's `<tool_call>` blocks are run
//! and answered with one `tool` message per call; a turn without a tool call is the final
//! answer and ends the episode (the trainer's verifier then scores it).

use std::sync::Arc;

use rl_rollout::FinishReason;

use crate::tool_call::{ParsedCall, parse_tool_calls};
use crate::tools::{ToolError, ToolRegistry, ToolsConfig, truncate_result};
use crate::{
    AssistantTurn, EnvError, Environment, EnvironmentFactory, Message, Observation, Step, Task,
};

/// Makes [`ToolEpisode`]s sharing one registry (and so one sandbox pool).
#[derive(Clone, Debug)]
pub struct ToolEnvironment {
    registry: Arc<ToolRegistry>,
    max_calls_per_turn: usize,
    max_result_chars: usize,
}

impl ToolEnvironment {
    /// The tools of `config` (see [`ToolRegistry::from_config`]).
    pub fn new(config: &ToolsConfig) -> Result<Self, EnvError> {
        if config.max_calls_per_turn == 0 {
            return Err(EnvError::config(
                "tools.max_calls_per_turn",
                0,
                "at least 1",
            ));
        }
        if config.max_result_chars == 0 {
            return Err(EnvError::config("tools.max_result_chars", 0, "at least 1"));
        }
        Ok(Self::with_registry(
            ToolRegistry::from_config(config)?,
            config.max_calls_per_turn,
            config.max_result_chars,
        ))
    }

    /// Any registry (custom tools).
    pub fn with_registry(
        registry: ToolRegistry,
        max_calls_per_turn: usize,
        max_result_chars: usize,
    ) -> Self {
        ToolEnvironment {
            registry: Arc::new(registry),
            max_calls_per_turn,
            max_result_chars,
        }
    }

    /// The tools.
    pub fn registry(&self) -> &ToolRegistry {
        &self.registry
    }
}

impl EnvironmentFactory for ToolEnvironment {
    fn name(&self) -> String {
        format!("tools [{}]", self.registry.names().join(", "))
    }

    fn create(&self, _task: &Task) -> Result<Box<dyn Environment>, EnvError> {
        Ok(Box::new(ToolEpisode { env: self.clone() }))
    }
}

/// One episode of [`ToolEnvironment`].
pub struct ToolEpisode {
    env: ToolEnvironment,
}

impl ToolEpisode {
    /// The observation for one parsed call, and whether it is an error.
    fn answer(&self, call: &ParsedCall) -> Result<(String, bool), EnvError> {
        let max = self.env.max_result_chars;
        Ok(match call {
            ParsedCall::Malformed { reason } => (format!("error: {reason}"), true),
            ParsedCall::Call(c) => match self.env.registry.get(&c.name) {
                None => (
                    format!(
                        "error: unknown tool \"{}\"; available: {}",
                        truncate_result(&c.name, 64),
                        self.env.registry.names().join(", ")
                    ),
                    true,
                ),
                Some(tool) => match tool.call(&c.arguments) {
                    Ok(out) => (truncate_result(&out, max), false),
                    Err(ToolError::Failed(m)) => {
                        (format!("error: {}", truncate_result(&m, max)), true)
                    }
                    Err(ToolError::Infrastructure(message)) => {
                        return Err(EnvError::Tool {
                            tool: c.name.clone(),
                            message,
                        });
                    }
                },
            },
        })
    }
}

impl Environment for ToolEpisode {
    fn step(&mut self, turn: &AssistantTurn<'_>) -> Result<Step, EnvError> {
        if turn.finish != FinishReason::Stop {
            return Ok(Step::done());
        }
        let calls = parse_tool_calls(turn.text);
        if calls.is_empty() {
            return Ok(Step::done());
        }
        let mut messages = Vec::with_capacity(calls.len());
        let mut errors = 0;
        for (i, call) in calls.iter().enumerate() {
            let (content, error) = if i >= self.env.max_calls_per_turn {
                (
                    format!(
                        "error: at most {} tool calls per turn; this one was not run",
                        self.env.max_calls_per_turn
                    ),
                    true,
                )
            } else {
                self.answer(call)?
            };
            errors += error as usize;
            messages.push(Message::tool(content));
        }
        Ok(Step {
            observation: Some(Observation::Messages(messages)),
            reward: 0.0,
            done: false,
            tool_calls: calls.len(),
            tool_errors: errors,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(text: &str) -> Step {
        let env = ToolEnvironment::new(&ToolsConfig::default()).unwrap();
        let mut ep = env.create(&Task::default()).unwrap();
        ep.step(&AssistantTurn {
            index: 0,
            tokens: &[],
            text,
            finish: FinishReason::Stop,
        })
        .unwrap()
    }

    fn contents(s: &Step) -> Vec<String> {
        match &s.observation {
            Some(Observation::Messages(m)) => m.iter().map(|m| m.content.clone()).collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn calls_are_answered_and_mistakes_are_observations() {
        let s = step(
            "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"347*58\"}}\n</tool_call>",
        );
        assert_eq!(contents(&s), vec!["20126"]);
        assert_eq!((s.done, s.tool_calls, s.tool_errors), (false, 1, 0));

        let s = step(
            "<tool_call>{\"name\": \"calc\", \"arguments\": {}}</tool_call><tool_call>oops</tool_call><tool_call>{\"name\": \"calculator\", \"arguments\": {\"expression\": \"1/0\"}}</tool_call>",
        );
        let c = contents(&s);
        assert!(
            c[0].starts_with("error: unknown tool \"calc\"; available: calculator"),
            "{c:?}"
        );
        assert!(
            c[1].starts_with("error: the call is not valid JSON"),
            "{c:?}"
        );
        assert_eq!(c[2], "error: division by zero");
        assert_eq!((s.tool_calls, s.tool_errors), (3, 3));

        let five = "<tool_call>{\"name\": \"calculator\", \"arguments\": {\"expression\": \"1\"}}</tool_call>".repeat(5);
        let c = contents(&step(&five));
        assert_eq!(c[..4], ["1", "1", "1", "1"]);
        assert!(c[4].contains("at most 4 tool calls"));
    }

    #[test]
    fn a_turn_without_a_call_is_the_final_answer() {
        let s = step("Answer: 42");
        assert!(s.done && s.observation.is_none());
    }
}
