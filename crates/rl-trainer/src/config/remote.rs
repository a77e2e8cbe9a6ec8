//! Defaults shared by the sections that talk to a server (`[rollout.engine]`,
//! `[distill.server]`): requests in flight, the request timeout and retries.

use rl_rollout::RetryPolicy;

pub(super) fn default_concurrency() -> usize {
    4
}
// The request timeout and retries default to rl-rollout's `RetryPolicy::default()`, the one
// place they are written.
pub(super) fn default_timeout() -> f64 {
    RetryPolicy::default().timeout_s
}
pub(super) fn default_retries() -> usize {
    RetryPolicy::default().max_retries
}
