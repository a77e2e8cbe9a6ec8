//! Engine servers this process starts and stops itself (on 127.0.0.1), and the health wait
//! shared by the HTTP engines.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::http::{HttpClient, RetryPolicy};
use crate::{EngineError, WeightVersion, WeightsRef};

/// Loads a weights folder (HF safetensors) into an engine that cannot take them while it
/// runs, e.g. by converting them and restarting a [`ManagedServer`] on the result.
pub type Reload = Box<dyn FnMut(&Path) -> Result<(), String> + Send>;

/// A weight update of `engine` through its reload hook: `weights` must be a directory; no hook
/// (`missing` says why) or a failing hook is [`EngineError::Weights`] for `version`.
pub(crate) fn reload_directory(
    engine: &str,
    reload: Option<&mut Reload>,
    missing: &str,
    weights: WeightsRef,
    version: WeightVersion,
) -> Result<(), EngineError> {
    let fail = |message: String| EngineError::Weights {
        engine: engine.to_string(),
        version,
        message,
    };
    let dir = weights.into_directory(engine, "a directory of HF safetensors")?;
    let reload = reload.ok_or_else(|| fail(format!("no reload hook: {missing}")))?;
    reload(&dir).map_err(fail)
}

/// `GET /health` until it answers 200 or `wait` passes (5 s per probe, no retries inside).
pub(crate) fn wait_healthy(client: &HttpClient, wait: Duration) -> Result<(), EngineError> {
    let start = Instant::now();
    let probe = HttpClient::new(
        client.engine(),
        client.base(),
        RetryPolicy {
            timeout_s: 5.0,
            max_retries: 0,
            backoff_s: 0.0,
        },
    )?;
    loop {
        match probe.get("/health") {
            Ok(_) => return Ok(()),
            Err(e) if start.elapsed() >= wait => return Err(e),
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

/// An engine server process this program started on 127.0.0.1 (`llama-server`, `vllm serve`),
/// stopped on drop: `program LAUNCH… MODEL --host 127.0.0.1 --port PORT ARGS…`, restarted on a
/// new model for weight updates that the server cannot take while running.
pub struct ManagedServer {
    binary: PathBuf,
    launch: Vec<String>,
    port: u16,
    args: Vec<String>,
    child: Option<Child>,
    log: PathBuf,
}

impl ManagedServer {
    /// Starts `binary launch… model --host 127.0.0.1 --port port args…` and waits (up to `wait`)
    /// for `GET /health` to answer 200; the server's output goes to `log`.
    pub fn start(
        binary: &Path,
        launch: &[&str],
        model: &Path,
        port: u16,
        args: &[String],
        log: &Path,
        wait: Duration,
    ) -> Result<Self, EngineError> {
        let mut s = Self {
            binary: binary.to_path_buf(),
            launch: launch.iter().map(|s| s.to_string()).collect(),
            port,
            args: args.to_vec(),
            child: None,
            log: log.to_path_buf(),
        };
        s.restart(model, wait)?;
        Ok(s)
    }

    /// The server's URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Stops the server and starts it again on `model`.
    pub fn restart(&mut self, model: &Path, wait: Duration) -> Result<(), EngineError> {
        self.stop();
        let engine = format!("{} {}", self.binary.display(), self.url());
        let log = std::fs::File::create(&self.log).map_err(|e| EngineError::Stopped {
            engine: engine.clone(),
            message: format!("{}: {e}", self.log.display()),
        })?;
        let err_log = log.try_clone().map_err(|e| EngineError::Stopped {
            engine: engine.clone(),
            message: e.to_string(),
        })?;
        let child = Command::new(&self.binary)
            .args(&self.launch)
            .arg(model)
            .args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err_log)
            .spawn()
            .map_err(|e| EngineError::Stopped {
                engine: engine.clone(),
                message: format!("cannot start {}: {e}", self.binary.display()),
            })?;
        self.child = Some(child);
        let client = HttpClient::new(&engine, &self.url(), RetryPolicy::default())?;
        if let Err(e) = wait_healthy(&client, wait) {
            let tail = std::fs::read_to_string(&self.log).unwrap_or_default();
            let tail: String = tail.lines().rev().take(5).collect::<Vec<_>>().join(" | ");
            self.stop();
            return Err(EngineError::Stopped {
                engine,
                message: format!("not healthy within {:?}: {e}; log: {tail}", wait),
            });
        }
        Ok(())
    }

    /// Kills the server (SIGKILL) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// The process id, while running.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }
}

impl Drop for ManagedServer {
    fn drop(&mut self) {
        self.stop();
    }
}
