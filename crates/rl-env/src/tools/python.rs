//! `python`: runs model-written Python in the sandbox (`rl-sandbox`) and returns what it
//! printed. The code never runs anywhere else.

use rl_sandbox::{Program, Sandbox, SandboxConfig, Status};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::EnvError;
use crate::tools::{Tool, ToolError};

/// The `python` tool's sandbox.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PythonToolConfig {
    /// The sandbox (limits of each call, concurrent calls, interpreter).
    pub sandbox: SandboxConfig,
}

impl Default for PythonToolConfig {
    fn default() -> Self {
        let mut sandbox = SandboxConfig::default();
        sandbox.limits.wall_time = std::time::Duration::from_secs(5);
        sandbox.limits.cpu_time = std::time::Duration::from_secs(3);
        sandbox.limits.memory_bytes = 512 << 20;
        sandbox.limits.output_bytes = 64 << 10;
        PythonToolConfig { sandbox }
    }
}

const DESCRIPTION: &str =
    "Runs a Python 3 program in a sandbox without network access and returns what it printed.";

fn parameters() -> Value {
    json!({
        "properties": {
            "code": {"description": "The program; print the values you need.", "type": "string"}
        },
        "required": ["code"],
        "type": "object"
    })
}

/// The `python` tool's definition (as [`Tool::definition`] gives it) without starting a
/// sandbox: for prompts rendered where the tool does not run.
pub fn definition() -> Value {
    json!({
        "function": {"description": DESCRIPTION, "name": "python", "parameters": parameters()},
        "type": "function",
    })
}

/// The `python` tool.
pub struct PythonTool {
    sandbox: Sandbox,
}

impl PythonTool {
    /// Starts the sandbox (which checks that it can give its guarantees on this machine).
    pub fn new(config: PythonToolConfig) -> Result<Self, EnvError> {
        let sandbox = Sandbox::new(config.sandbox).map_err(|e| EnvError::Tool {
            tool: "python".into(),
            message: e.to_string(),
        })?;
        Ok(PythonTool { sandbox })
    }
}

/// What the model sees of a run: its output, and for a failure the status and the end of
/// stderr (a traceback's last lines say what went wrong).
fn describe(run: &rl_sandbox::Run, limits: &rl_sandbox::Limits) -> Result<String, ToolError> {
    let stdout = run.stdout_text();
    let tail = |s: String| {
        let lines: Vec<&str> = s.trim_end().lines().collect();
        lines[lines.len().saturating_sub(5)..].join("\n")
    };
    let failure = match run.status {
        Status::Exited { code: 0 } => return Ok(stdout),
        Status::Exited { code } => format!("exit code {code}\n{}", tail(run.stderr_text())),
        Status::Signaled { signal } => format!("killed by signal {signal}"),
        Status::TimedOut => format!("timed out after {:.1} s", limits.wall_time.as_secs_f64()),
        Status::CpuLimit => format!(
            "CPU time limit of {:.0} s reached",
            limits.cpu_time.as_secs_f64()
        ),
        Status::OutputLimit => format!("more than {} bytes of output", limits.output_bytes),
    };
    Err(ToolError::Failed(if stdout.is_empty() {
        failure
    } else {
        format!("{failure}\nstdout:\n{stdout}")
    }))
}

impl Tool for PythonTool {
    fn name(&self) -> &str {
        "python"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        parameters()
    }

    fn call(&self, arguments: &Map<String, Value>) -> Result<String, ToolError> {
        let code = match arguments.get("code") {
            Some(Value::String(s)) => s.clone(),
            Some(_) => return Err(ToolError::Failed("`code` must be a string".into())),
            None => return Err(ToolError::Failed("missing argument `code`".into())),
        };
        let program = Program {
            source: code,
            ..Program::default()
        };
        let run = self
            .sandbox
            .run_python(&program)
            .map_err(|e| ToolError::Infrastructure(e.to_string()))?;
        describe(&run, &self.sandbox.config().limits)
    }
}
