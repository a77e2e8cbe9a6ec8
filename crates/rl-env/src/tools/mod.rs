//! Tools a model can call, and the registry that finds them by name.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::EnvError;

pub mod calculator;
pub mod python;
mod tool;

pub use calculator::{Calculator, CalculatorConfig};
pub use python::{PythonTool, PythonToolConfig};
pub use tool::{Tool, ToolError};

/// Names of the built-in tools, in registry order.
pub const TOOL_NAMES: [&str; 2] = ["calculator", "python"];

/// The built-in tools' settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsConfig {
    /// The tools an episode may call, by name (`calculator`, `python`).
    pub enabled: Vec<String>,
    /// Calls answered per assistant turn; further calls get an error observation.
    pub max_calls_per_turn: usize,
    /// Characters of a result the model sees; longer results are cut with a note.
    pub max_result_chars: usize,
    /// `calculator` bounds.
    pub calculator: CalculatorConfig,
    /// `python`: the sandbox and its limits.
    pub python: PythonToolConfig,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        ToolsConfig {
            enabled: vec!["calculator".into()],
            max_calls_per_turn: 4,
            max_result_chars: 2000,
            calculator: CalculatorConfig::default(),
            python: PythonToolConfig::default(),
        }
    }
}

/// Tools by name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The built-in tools named in `config.enabled` (an unknown or repeated name is an error
    /// listing [`TOOL_NAMES`]; `python` starts its sandbox here, so a machine that cannot run
    /// it fails now, not in the middle of a run).
    pub fn from_config(config: &ToolsConfig) -> Result<Self, EnvError> {
        let mut r = ToolRegistry::new();
        for name in &config.enabled {
            let tool: Arc<dyn Tool> = match name.as_str() {
                "calculator" => Arc::new(Calculator::new(config.calculator.clone())),
                "python" => Arc::new(PythonTool::new(config.python.clone())?),
                other => {
                    return Err(EnvError::config(
                        "tools.enabled",
                        format!("\"{other}\""),
                        format!("tool names among {}", TOOL_NAMES.join(", ")),
                    ));
                }
            };
            if r.tools.contains_key(name) {
                return Err(EnvError::config(
                    "tools.enabled",
                    format!("\"{name}\" twice"),
                    "each tool once",
                ));
            }
            r.register(tool);
        }
        Ok(r)
    }

    /// Adds (or replaces) a tool under its name.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.name().to_string(), tool);
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// The registered names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.tools.keys().map(String::as_str).collect()
    }

    /// No tool registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Every tool's definition, in name order (what a chat template's `tools` list takes).
    pub fn definitions(&self) -> Vec<Value> {
        self.tools.values().map(|t| t.definition()).collect()
    }

    /// Every definition as JSON text the way a chat template's `tojson` writes it, keys in the
    /// usual order ([`crate::pyjson::TOOL_KEY_ORDER`]): the lines of Qwen3's `<tools>` block.
    pub fn definitions_json(&self) -> Vec<String> {
        self.definitions()
            .iter()
            .map(|d| crate::pyjson::dumps_ordered(d, &crate::pyjson::TOOL_KEY_ORDER))
            .collect()
    }
}

/// `text` cut to at most `max` characters, with a note of how much was cut.
pub fn truncate_result(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}\n[... {} more characters cut]", n - max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_from_config() {
        let r = ToolRegistry::from_config(&ToolsConfig::default()).unwrap();
        assert_eq!(r.names(), vec!["calculator"]);
        let bad = ToolsConfig {
            enabled: vec!["calc".into()],
            ..ToolsConfig::default()
        };
        let e = ToolRegistry::from_config(&bad).unwrap_err().to_string();
        assert!(
            e.contains("tools.enabled") && e.contains("calculator, python"),
            "{e}"
        );
        let twice = ToolsConfig {
            enabled: vec!["calculator".into(), "calculator".into()],
            ..ToolsConfig::default()
        };
        assert!(
            ToolRegistry::from_config(&twice)
                .unwrap_err()
                .to_string()
                .contains("twice")
        );
    }

    #[test]
    fn definitions_are_openai_style() {
        let d = Calculator::default().definition();
        assert_eq!(d["type"], "function");
        assert_eq!(d["function"]["name"], "calculator");
        assert_eq!(d["function"]["parameters"]["required"][0], "expression");
    }

    #[test]
    fn long_results_are_cut_with_a_note() {
        assert_eq!(truncate_result("abc", 3), "abc");
        assert_eq!(
            truncate_result("abcdef", 2),
            "ab\n[... 4 more characters cut]"
        );
    }
}
