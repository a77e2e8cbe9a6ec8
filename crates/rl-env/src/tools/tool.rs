//! The [`Tool`] trait and why a call produced no result.

use serde_json::{Map, Value, json};

/// Why a call produced no result.
#[derive(Debug)]
pub enum ToolError {
    /// The call failed for a reason the model caused or can see (bad arguments, a division by
    /// zero, code that crashed): the message becomes the observation.
    Failed(String),
    /// The tool's machinery failed (the sandbox could not start): the episode batch stops with
    /// [`crate::EnvError::Tool`] instead of training on a broken tool.
    Infrastructure(String),
}

/// A callable tool.
pub trait Tool: Send + Sync {
    /// The name calls use.
    fn name(&self) -> &str;

    /// One sentence for the tool list a model is shown.
    fn description(&self) -> &str;

    /// The JSON schema of the arguments object.
    fn parameters(&self) -> Value;

    /// Runs one call.
    fn call(&self, arguments: &Map<String, Value>) -> Result<String, ToolError>;

    /// The tool as an OpenAI/HF tool definition (what chat templates take as `tools`):
    /// `{"type": "function", "function": {"name", "description", "parameters"}}`.
    fn definition(&self) -> Value {
        json!({
            "function": {
                "description": self.description(),
                "name": self.name(),
                "parameters": self.parameters(),
            },
            "type": "function",
        })
    }
}
