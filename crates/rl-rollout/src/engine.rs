//! The engine trait and weight references.

use std::any::Any;
use std::path::PathBuf;

use crate::{
    Completion, EngineError, FinishReason, GenerateRequest, WeightVersion, is_valid_logprob,
};

/// Where new weights are.
pub enum WeightsRef {
    /// A folder in the trainer's checkpoint layout: HF `config.json` + `model.safetensors`,
    /// on a file system the engine can read.
    Directory(PathBuf),
    /// An in-process object (for an engine in the trainer's process, which downcasts it to its
    /// own model type; e.g. a copy of the trained model without autodiff).
    InProcess(Box<dyn Any + Send>),
}

impl WeightsRef {
    /// The folder of a [`WeightsRef::Directory`]; for in-process weights the error of an
    /// engine named `engine` that only reads folders (`accepts` says what it reads).
    pub fn into_directory(
        self,
        engine: &str,
        accepts: &'static str,
    ) -> Result<PathBuf, EngineError> {
        match self {
            WeightsRef::Directory(d) => Ok(d),
            WeightsRef::InProcess(_) => Err(EngineError::UnsupportedWeights {
                engine: engine.to_string(),
                kind: "in-process",
                accepts,
            }),
        }
    }

    /// `"directory"` or `"in-process"`.
    pub fn kind(&self) -> &'static str {
        match self {
            WeightsRef::Directory(_) => "directory",
            WeightsRef::InProcess(_) => "in-process",
        }
    }
}

impl std::fmt::Debug for WeightsRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WeightsRef::Directory(p) => f.debug_tuple("Directory").field(p).finish(),
            WeightsRef::InProcess(_) => f.write_str("InProcess(..)"),
        }
    }
}

/// The kind of [`WeightsRef`] an engine prefers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightsKind {
    /// It shares the trainer's process and takes [`WeightsRef::InProcess`] (no copy to disk).
    InProcess,
    /// It reads [`WeightsRef::Directory`].
    Directory,
}

/// A generator of rollouts: token ids in, token ids out.
///
/// Implementations: the trainer's in-process generator (`rl_trainer::LocalEngine`) and the HTTP
/// clients of inference engines. `Send`, so that a trainer can drive it from a background
/// thread (asynchronous rollouts).
pub trait RolloutEngine: Send {
    /// A name for errors and logs (`"local"`, `"sglang http://…"`).
    fn name(&self) -> String;

    /// `requests[i].n` completions for each request, in request order. Every completion carries
    /// the weight version that produced it.
    fn generate(
        &mut self,
        requests: &[GenerateRequest],
    ) -> Result<Vec<Vec<Completion>>, EngineError>;

    /// Loads `weights` as version `version` and returns the version now served (which must be
    /// `version`; see [`EngineError::VersionNotAdvanced`]).
    fn update_weights(
        &mut self,
        weights: WeightsRef,
        version: WeightVersion,
    ) -> Result<WeightVersion, EngineError>;

    /// The version of the weights generating now.
    fn version(&self) -> WeightVersion;

    /// The kind of weights this engine takes.
    fn weights_kind(&self) -> WeightsKind;

    /// Stops generating (in-flight requests may end with [`FinishReason::Abort`]). Default: no-op.
    fn pause(&mut self) -> Result<(), EngineError> {
        Ok(())
    }

    /// Resumes after [`RolloutEngine::pause`]. Default: no-op.
    fn resume(&mut self) -> Result<(), EngineError> {
        Ok(())
    }
}

/// How many versions a rollout generated with `rollout` weights lags behind the `policy`
/// weights being trained (0 when it is current; never negative).
pub fn staleness(policy: WeightVersion, rollout: WeightVersion) -> u64 {
    policy.saturating_sub(rollout)
}

/// Checks an engine's reply against its requests: one list per request, `n` completions each,
/// one log-prob per token, finite log-probs ≤ 0 (a small rounding margin allowed), at least
/// one token unless the sample was aborted, and every id below `vocab_size`. Engines call it
/// on what they return, so that a trainer never sees a half-filled batch.
pub fn check_completions(
    engine: &str,
    requests: &[GenerateRequest],
    replies: &[Vec<Completion>],
    vocab_size: usize,
) -> Result<(), EngineError> {
    let bad = |request: usize, message: String| {
        Err(EngineError::Malformed {
            engine: engine.to_string(),
            request,
            message,
        })
    };
    if replies.len() != requests.len() {
        return bad(
            replies.len().min(requests.len()),
            format!("{} replies for {} requests", replies.len(), requests.len()),
        );
    }
    for (i, (req, rep)) in requests.iter().zip(replies).enumerate() {
        if rep.len() != req.n {
            return bad(i, format!("{} completions for n = {}", rep.len(), req.n));
        }
        for (k, c) in rep.iter().enumerate() {
            if c.logprobs.len() != c.tokens.len() {
                return bad(
                    i,
                    format!(
                        "completion {k}: {} log-probs for {} tokens",
                        c.logprobs.len(),
                        c.tokens.len()
                    ),
                );
            }
            if c.tokens.is_empty() && c.finish != FinishReason::Abort {
                return bad(i, format!("completion {k}: no tokens"));
            }
            if c.tokens.len() > req.params.max_new_tokens {
                return bad(
                    i,
                    format!(
                        "completion {k}: {} tokens for max_new_tokens = {}",
                        c.tokens.len(),
                        req.params.max_new_tokens
                    ),
                );
            }
            if let Some(t) = c.tokens.iter().find(|&&t| t as usize >= vocab_size) {
                return bad(
                    i,
                    format!("completion {k}: token id {t} outside the vocabulary of {vocab_size}"),
                );
            }
            if let Some(lp) = c.logprobs.iter().find(|&&x| !is_valid_logprob(x)) {
                return bad(
                    i,
                    format!("completion {k}: log-prob {lp} is not a finite value <= 0"),
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SamplingParams;

    fn req(n: usize) -> GenerateRequest {
        GenerateRequest {
            prompt_ids: vec![1, 2],
            n,
            params: SamplingParams {
                max_new_tokens: 3,
                ..SamplingParams::default()
            },
        }
    }

    fn comp(tokens: Vec<u32>, logprobs: Vec<f32>) -> Completion {
        Completion {
            tokens,
            logprobs,
            finish: FinishReason::Length,
            version: 0,
        }
    }

    #[test]
    fn replies_are_checked_against_requests() {
        let reqs = [req(1), req(2)];
        let good = vec![
            vec![comp(vec![5], vec![-0.1])],
            vec![comp(vec![5, 6], vec![-0.1, -2.0]), comp(vec![7], vec![0.0])],
        ];
        check_completions("t", &reqs, &good, 10).unwrap();
        let msg = |r: Vec<Vec<Completion>>| {
            check_completions("t", &reqs, &r, 10)
                .unwrap_err()
                .to_string()
        };
        assert!(msg(good[..1].to_vec()).contains("1 replies for 2 requests"));
        let mut short = good.clone();
        short[1].pop();
        assert!(msg(short).contains("request 1: 1 completions for n = 2"));
        let mut lp = good.clone();
        lp[0][0].logprobs.clear();
        assert!(msg(lp).contains("0 log-probs for 1 tokens"));
        let mut oov = good.clone();
        oov[1][1].tokens[0] = 10;
        assert!(msg(oov).contains("token id 10 outside the vocabulary of 10"));
        let mut pos = good.clone();
        pos[1][0].logprobs[1] = 0.5;
        assert!(msg(pos).contains("log-prob 0.5"));
        let mut inf = good.clone();
        inf[1][0].logprobs[0] = f32::NEG_INFINITY;
        assert!(msg(inf).contains("-inf"));
        // NaN is a log-prob the engine did not report (Completion::logprobs): accepted.
        let mut unreported = good.clone();
        unreported[1][0].logprobs[0] = f32::NAN;
        check_completions("t", &reqs, &unreported, 10).unwrap();
        let mut long = good.clone();
        long[0][0] = comp(vec![1, 2, 3, 4], vec![-1.0; 4]);
        assert!(msg(long).contains("4 tokens for max_new_tokens = 3"));
        let mut empty = good;
        empty[0][0] = comp(vec![], vec![]);
        assert!(msg(empty).contains("no tokens"));
    }

    #[test]
    fn bad_requests_name_the_field() {
        let mut r = req(0);
        assert!(
            r.validate("e", 3)
                .unwrap_err()
                .to_string()
                .contains("`n` = 0 (request 3)")
        );
        r.n = 1;
        r.params.top_p = 0.0;
        assert!(
            r.validate("e", 0)
                .unwrap_err()
                .to_string()
                .contains("`top_p`")
        );
        r.params.top_p = 1.0;
        r.params.temperature = -1.0;
        assert!(
            r.validate("e", 0)
                .unwrap_err()
                .to_string()
                .contains("`temperature`")
        );
        r.params.temperature = 0.0;
        assert_eq!(r.params.logprob_temperature(), 1.0);
        r.prompt_ids.clear();
        assert!(
            r.validate("e", 0)
                .unwrap_err()
                .to_string()
                .contains("prompt_ids")
        );
    }

    #[test]
    fn staleness_counts_versions_behind() {
        assert_eq!(staleness(5, 3), 2);
        assert_eq!(staleness(5, 5), 0);
        assert_eq!(staleness(3, 5), 0);
    }
}
