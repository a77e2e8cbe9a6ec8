//! Checkpoints: `out_dir/checkpoints/step-NNNNNN`, written atomically (a temporary sibling
//! folder renamed into place), with `latest` pointing at the newest. A checkpoint holds the HF
//! safetensors weights, the optimizer moments, PPO's critic and its moments (`critic/`), the [`TrainerState`] (RNG, data cursor, keep-rate
//! counts, group ids), the resolved config and, with asynchronous rollouts, the round generated
//! for the next step (`inflight.json`), so that a resumed run continues bit for bit.

use std::path::{Path, PathBuf};

use burn::tensor::backend::AutodiffBackend;

use super::critic::Critic;
use super::state::{RoundReply, SavedRound, Start, SubmittedRound, Trainer, TrainerState};
use crate::TrainerError;
use crate::atomic_dir::atomic_dir;
use crate::config::TrainConfig;
use crate::engine::Pending;
use crate::optim::{AdamWOptimizer, first_non_finite_param};
use crate::policy::Policy;

/// Reads checkpoint folder `ckpt` of a run configured as `config` (which may differ from the
/// saved config in `steps` only).
pub(super) fn load<B: AutodiffBackend, P: Policy<B>>(
    config: &TrainConfig,
    ckpt: &Path,
    device: &B::Device,
) -> Result<Start<B, P>, TrainerError> {
    let err = |message: String| TrainerError::Checkpoint {
        path: ckpt.display().to_string(),
        message,
    };
    let saved_text = std::fs::read_to_string(ckpt.join("config.toml"))
        .map_err(|e| TrainerError::io(&ckpt.join("config.toml"), e))?;
    let saved: TrainConfig =
        toml::from_str(&saved_text).map_err(|e| err(format!("config.toml: {e}")))?;
    let diffs = config_diff(&saved, config);
    if !diffs.is_empty() {
        return Err(err(format!(
            "the config differs from the checkpoint's in: {} (only `steps` may change on resume)",
            diffs.join(", ")
        )));
    }
    let policy = P::load(&ckpt.join("model"), device)?;
    let optim = AdamWOptimizer::new(&config.optim).load(&policy, ckpt, device)?;
    let critic = config
        .critic
        .as_ref()
        .map(|c| Critic::load(ckpt, c, &config.optim, device))
        .transpose()?;
    let state_path = ckpt.join("state.json");
    let state: TrainerState = serde_json::from_str(
        &std::fs::read_to_string(&state_path).map_err(|e| TrainerError::io(&state_path, e))?,
    )
    .map_err(|e| err(format!("state.json: {e}")))?;
    let reference_dir = config.out_dir.join("reference");
    let reference = if config.needs_reference() {
        Some(P::load(&reference_dir, device)?)
    } else {
        None
    };
    let inflight_path = ckpt.join("inflight.json");
    let inflight: Option<SavedRound> = if inflight_path.exists() {
        Some(
            serde_json::from_str(
                &std::fs::read_to_string(&inflight_path)
                    .map_err(|e| TrainerError::io(&inflight_path, e))?,
            )
            .map_err(|e| err(format!("inflight.json: {e}")))?,
        )
    } else {
        None
    };
    Ok(Start {
        policy,
        reference,
        optim,
        critic,
        state,
        inflight,
    })
}

impl<B: AutodiffBackend, P: Policy<B>> Trainer<B, P> {
    /// Writes `out_dir/checkpoints/step-NNNNNN` atomically and points `latest` at it.
    pub fn save_checkpoint(&mut self) -> Result<PathBuf, TrainerError> {
        let root = self.config.out_dir.join("checkpoints");
        std::fs::create_dir_all(&root).map_err(|e| TrainerError::io(&root, e))?;
        self.state.sampler = self.sampler.state();
        let name = format!("step-{:06}", self.state.step);
        let dir = root.join(&name);
        let err = |message: String| TrainerError::Checkpoint {
            path: dir.display().to_string(),
            message,
        };
        if let Some(param) = first_non_finite_param::<B, P>(self.policy()) {
            return Err(err(format!(
                "refusing to save weights with a NaN or infinity in `{param}`"
            )));
        }
        let state = serde_json::to_string_pretty(&self.state).map_err(|e| err(e.to_string()))?;
        let config = self.config.to_toml();
        // A round generating for the next step is waited for and saved, so that a resumed run
        // trains on the same rollouts (they were generated with the previous weights).
        let inflight = match self.prefetched.take() {
            Some(round) => {
                let RoundReply::Completions(pending) = round.reply else {
                    // Config validation keeps multi-turn runs synchronous: no round is ever
                    // prefetched for them.
                    return Err(err(
                        "a prefetched multi-turn round cannot be saved (rollout.max_staleness \
                         must be 0 with [rollout.env])"
                            .into(),
                    ));
                };
                let completions = pending.wait()?;
                let saved = SavedRound {
                    prompts: round.prompts.clone(),
                    completions: completions.clone(),
                    sizes: round.sizes.clone(),
                };
                self.prefetched = Some(SubmittedRound {
                    prompts: round.prompts,
                    owned: round.owned,
                    sizes: round.sizes,
                    reply: RoundReply::Completions(Pending::Ready(Ok(completions))),
                });
                Some(serde_json::to_string(&saved).map_err(|e| err(e.to_string()))?)
            }
            None => None,
        };
        let policy = self.policy();
        atomic_dir(&dir, |tmp| {
            policy.save_checkpoint(&tmp.join("model"))?;
            self.optim.save(policy, tmp)?;
            if let Some(critic) = &self.critic {
                critic.save(tmp)?;
            }
            write_file(&tmp.join("state.json"), state.as_bytes())?;
            if let Some(r) = &inflight {
                write_file(&tmp.join("inflight.json"), r.as_bytes())?;
            }
            write_file(&tmp.join("config.toml"), config.as_bytes())
        })?;
        let latest = root.join("latest");
        let tmp = root.join("latest.tmp");
        write_file(&tmp, name.as_bytes())?;
        std::fs::rename(&tmp, &latest).map_err(|e| TrainerError::io(&latest, e))?;
        prune(&root, self.config.checkpoint.keep.max(1))?;
        Ok(dir)
    }
}

/// Keeps the newest `keep` checkpoints of `root`.
fn prune(root: &Path, keep: usize) -> Result<(), TrainerError> {
    let mut all: Vec<PathBuf> = std::fs::read_dir(root)
        .map_err(|e| TrainerError::io(root, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("step-") && !n.contains(".tmp"))
        })
        .collect();
    all.sort();
    if all.len() > keep {
        for old in &all[..all.len() - keep] {
            std::fs::remove_dir_all(old).map_err(|e| TrainerError::io(old, e))?;
        }
    }
    Ok(())
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), TrainerError> {
    std::fs::write(path, bytes).map_err(|e| TrainerError::io(path, e))
}

/// The checkpoint `out_dir/checkpoints/latest` points at, if any.
pub fn latest_checkpoint(out_dir: &Path) -> Option<PathBuf> {
    let root = out_dir.join("checkpoints");
    let name = std::fs::read_to_string(root.join("latest")).ok()?;
    let dir = root.join(name.trim());
    dir.join("state.json").exists().then_some(dir)
}

/// Dotted paths at which two configs differ, ignoring `steps`.
pub fn config_diff(a: &TrainConfig, b: &TrainConfig) -> Vec<String> {
    fn walk(prefix: &str, a: &toml::Value, b: &toml::Value, out: &mut Vec<String>) {
        match (a, b) {
            (toml::Value::Table(x), toml::Value::Table(y)) => {
                let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
                keys.sort();
                keys.dedup();
                for k in keys {
                    let p = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    match (x.get(k), y.get(k)) {
                        (Some(va), Some(vb)) => walk(&p, va, vb, out),
                        _ => out.push(p),
                    }
                }
            }
            _ if a != b => out.push(prefix.to_string()),
            _ => {}
        }
    }
    let (Ok(va), Ok(vb)) = (toml::Value::try_from(a), toml::Value::try_from(b)) else {
        return vec!["<unserialisable>".into()];
    };
    let mut out = Vec::new();
    walk("", &va, &vb, &mut out);
    out.retain(|p| p != "steps");
    out
}
