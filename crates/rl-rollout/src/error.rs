use thiserror::Error;

/// Errors of a rollout engine. Every variant names the engine (`"local"`, or an engine and its
/// URL for remote ones).
#[derive(Debug, Error)]
pub enum EngineError {
    /// A request or a configuration field is out of range.
    #[error("{engine}: invalid `{field}` = {value}: expected {expected}")]
    InvalidRequest {
        /// Engine.
        engine: String,
        /// The field.
        field: &'static str,
        /// Its value.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// Generation failed.
    #[error("{engine}: generation failed: {message}")]
    Generation {
        /// Engine.
        engine: String,
        /// What happened.
        message: String,
    },
    /// The engine answered, but not with what was asked (wrong number of completions, a missing
    /// log-prob, a token outside the vocabulary).
    #[error("{engine}: malformed reply to request {request}: {message}")]
    Malformed {
        /// Engine.
        engine: String,
        /// Index of the request in the call.
        request: usize,
        /// What is wrong.
        message: String,
    },
    /// Loading weights failed.
    #[error("{engine}: weight update to version {version} failed: {message}")]
    Weights {
        /// Engine.
        engine: String,
        /// The version that was being loaded.
        version: u64,
        /// What happened.
        message: String,
    },
    /// After a weight update the engine does not serve the version it was given.
    #[error("{engine}: weight version not advanced: asked for {expected}, engine serves {got}")]
    VersionNotAdvanced {
        /// Engine.
        engine: String,
        /// Version sent.
        expected: u64,
        /// Version reported.
        got: u64,
    },
    /// The engine cannot take weights of this kind.
    #[error("{engine}: cannot load {kind} weights (it takes {accepts})")]
    UnsupportedWeights {
        /// Engine.
        engine: String,
        /// What was offered.
        kind: &'static str,
        /// What it takes.
        accepts: &'static str,
    },
    /// The HTTP connection failed (refused, reset, DNS) after every retry.
    #[error("{engine} {url}: {request}: connection failed after {attempts} attempts: {message}")]
    Connection {
        /// Engine.
        engine: String,
        /// Endpoint.
        url: String,
        /// What was asked (`POST /completion`, …).
        request: String,
        /// Attempts made.
        attempts: usize,
        /// The last error.
        message: String,
    },
    /// No answer within the timeout, after every retry.
    #[error("{engine} {url}: {request}: no answer within {timeout_s} s after {attempts} attempts")]
    Timeout {
        /// Engine.
        engine: String,
        /// Endpoint.
        url: String,
        /// What was asked.
        request: String,
        /// Seconds per attempt.
        timeout_s: f64,
        /// Attempts made.
        attempts: usize,
    },
    /// An HTTP error status (5xx after every retry; 4xx at once), with the body.
    #[error("{engine} {url}: {request}: HTTP {status}: {body}")]
    Status {
        /// Engine.
        engine: String,
        /// Endpoint.
        url: String,
        /// What was asked.
        request: String,
        /// HTTP status.
        status: u16,
        /// The response body (truncated to 500 bytes).
        body: String,
    },
    /// The engine (or the thread that drives it) is gone.
    #[error("{engine}: the engine stopped: {message}")]
    Stopped {
        /// Engine.
        engine: String,
        /// Why.
        message: String,
    },
}

/// `text` cut to at most `max` bytes at a character boundary, with `…` when cut: a server's
/// reply quoted in an error.
pub(crate) fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut cut = max;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &text[..cut])
}
