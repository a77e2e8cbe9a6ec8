//! On-policy distillation (`[distill]`, docs/algorithms/distill.md): the frozen teacher, its
//! log-probs of the student's responses, and the per-token advantages they give.
//!
//! - `sampled`: the behaviour phase adds the teacher's log-probs of every response token
//!   ([`crate::trainer::BehaviourLogprobs::teacher`]) beside π_old; [`Trainer::token_advantages`]
//!   turns them into A_t = w·Â + c·(log π_T − log π_old) ([`rl_advantage::distill::DistillSignal`]).
//! - `full`: the token advantages are w·Â, and the update adds c · GKD's generalized JSD over
//!   the vocabulary ([`crate::policy_update::policy_update_with_teacher`]).

use std::path::Path;

use burn::tensor::backend::AutodiffBackend;
use rl_advantage::distill::reverse_kl_sum;
use rl_models::Tokenizer;
use rl_rollout::{ScoreRequest, SglangEngine, TokenScorer, VllmEngine, VllmOptions};
use rl_sampler::RolloutGroup;

use super::{Behaviour, Trainer};
use crate::TrainerError;
use crate::config::{DistillForm, TeacherServer, TrainConfig};
use crate::policy::Policy;
use crate::scoring::ScoredResponse;

/// The per-token advantages of a batch with distillation, one vector per response in group
/// order (empty for another worker's responses), and the sampled-token reverse-KL estimate
/// summed over the trained tokens with its count (summed over workers; `sampled` form only).
#[derive(Clone, Debug, Default)]
pub struct TokenAdvantages {
    /// Per response, one advantage per response token.
    pub per_response: Vec<Vec<f32>>,
    /// Σ (log π_old − log π_T) over trained tokens, and their number.
    pub reverse_kl: Option<(f64, usize)>,
}

/// The teacher of `[distill]`: a frozen model in this process, or a server that scores the
/// student's tokens.
pub(crate) enum Teacher<P> {
    /// Loaded from `distill.teacher`; no parameter tracks a gradient.
    Model(P),
    /// `[distill.server]` (the `sampled` form only).
    Server(Box<dyn TokenScorer>),
}

impl<P> Teacher<P> {
    /// The in-process model (`None` for a server).
    pub(crate) fn model(&self) -> Option<&P> {
        match self {
            Teacher::Model(p) => Some(p),
            Teacher::Server(_) => None,
        }
    }
}

/// The teacher of `config.distill`: loaded from `distill.teacher` (HF folder or GGUF file),
/// frozen, computing in the policy's dtype and checked to share the policy's tokenizer; or a
/// client of `[distill.server]` (SGLang's `/health` and, without `model`, vLLM's `/v1/models`
/// are asked at once).
pub(super) fn load_teacher<B: AutodiffBackend, P: Policy<B>>(
    config: &TrainConfig,
    tokenizer: &Tokenizer,
    policy_vocab: usize,
    device: &B::Device,
) -> Result<Option<Teacher<P>>, TrainerError> {
    let Some(d) = &config.distill else {
        return Ok(None);
    };
    if let Some(server) = &d.server {
        return teacher_server(server, policy_vocab).map(|s| Some(Teacher::Server(s)));
    }
    let path = d.teacher.as_deref().ok_or_else(|| TrainerError::Config {
        field: "distill.teacher".into(),
        message: "missing (and no [distill.server])".into(),
    })?;
    let teacher = P::load(path, device)?
        .with_compute_dtype(config.model.dtype)?
        .no_grad();
    check_tokenizer(path, tokenizer, teacher.vocab_size(), policy_vocab)?;
    Ok(Some(Teacher::Model(teacher)))
}

/// A client of the teacher's server, scoring ids below `vocab`.
fn teacher_server(
    server: &TeacherServer,
    vocab: usize,
) -> Result<Box<dyn TokenScorer>, TrainerError> {
    Ok(match server {
        TeacherServer::Vllm {
            url,
            model,
            concurrency,
            ..
        } => {
            let options = VllmOptions {
                model: model.clone(),
                concurrency: *concurrency,
                processed_logprobs: false,
            };
            Box::new(VllmEngine::new(
                url,
                server.retry(),
                0,
                vocab,
                options,
                None,
            )?)
        }
        TeacherServer::Sglang { url, .. } => {
            let engine = SglangEngine::new(url, server.retry(), 0, vocab)?;
            engine.health()?;
            Box::new(engine)
        }
    })
}

/// A teacher must score the student's token ids: the same vocabulary size and, where the
/// teacher has a tokenizer (a GGUF file, or `tokenizer.json` in its folder), the same token at
/// every id of the policy's tokenizer. A folder without `tokenizer.json` (a checkpoint's
/// `model/`) is checked by vocabulary size only.
fn check_tokenizer(
    teacher: &Path,
    student: &Tokenizer,
    teacher_vocab: usize,
    policy_vocab: usize,
) -> Result<(), TrainerError> {
    let bad = |message: String| TrainerError::Config {
        field: "distill.teacher".into(),
        message: format!("{}: {message}", teacher.display()),
    };
    if teacher_vocab != policy_vocab {
        return Err(bad(format!(
            "the teacher's output has {teacher_vocab} rows, the policy's {policy_vocab}: \
             teacher and student must share a tokenizer"
        )));
    }
    if teacher.is_dir() && !teacher.join("tokenizer.json").is_file() {
        return Ok(());
    }
    let theirs = Tokenizer::for_model(teacher, None)?;
    let n = student.num_defined_ids();
    if theirs.num_defined_ids() != n {
        return Err(bad(format!(
            "its tokenizer defines {} ids, the policy's {n}: teacher and student must share a \
             tokenizer",
            theirs.num_defined_ids()
        )));
    }
    for id in 0..n as u32 {
        let (a, b) = (student.id_to_token(id), theirs.id_to_token(id));
        if a != b {
            return Err(bad(format!(
                "id {id} is {b:?} in the teacher's tokenizer but {a:?} in the policy's: teacher \
                 and student must share a tokenizer"
            )));
        }
    }
    Ok(())
}

impl<B: AutodiffBackend, P: Policy<B>> Trainer<B, P> {
    /// Whether the behaviour phase computes the teacher's log-probs (the `sampled` form).
    pub(super) fn distills_sampled(&self) -> bool {
        self.teacher.is_some()
            && self
                .config
                .distill
                .as_ref()
                .is_some_and(|d| d.form == DistillForm::Sampled)
    }

    /// The teacher's log-probs of every response token of `items` (the `sampled` form; `None`
    /// otherwise): a model's in the behaviour phase's micro-batches and temperature, a
    /// server's at T = 1 (the only temperature validation lets through with a server).
    pub(super) fn teacher_logprobs(
        &self,
        items: &[&ScoredResponse],
    ) -> Result<Option<Vec<Vec<f32>>>, TrainerError> {
        if !self.distills_sampled() {
            return Ok(None);
        }
        match self.teacher.as_ref().expect("distills_sampled checks it") {
            Teacher::Model(teacher) => super::logprobs::response_logprobs(
                teacher,
                items,
                self.micro_batching(),
                self.logprob_temperature(),
            )
            .map(Some),
            Teacher::Server(server) => {
                let requests: Vec<ScoreRequest> = items
                    .iter()
                    .map(|r| ScoreRequest {
                        prompt_ids: r.prompt_ids.to_vec(),
                        response_ids: r.response.clone(),
                    })
                    .collect();
                Ok(Some(server.score(&requests)?))
            }
        }
    }

    /// Token-advantage phase: one advantage per response token where they differ along a
    /// response — the estimator's (REINFORCE++ with γ < 1,
    /// [`Trainer::estimator_token_advantages`]), or with `[distill]` (which validation keeps
    /// apart from γ < 1) the distillation signal from the responses' outcome advantages
    /// `advantages` (group order) and, for `sampled`, the behaviour phase's π_old and teacher
    /// log-probs; `None` otherwise (each token takes its response's advantage).
    pub fn token_advantages(
        &self,
        groups: &[RolloutGroup<ScoredResponse>],
        advantages: &[f64],
        behaviour: &Behaviour,
    ) -> Result<Option<TokenAdvantages>, TrainerError> {
        let Some(signal) = self.config.distill_signal()? else {
            return Ok(self
                .estimator_token_advantages(groups)?
                .map(|per_response| TokenAdvantages {
                    per_response,
                    reverse_kl: None,
                }));
        };
        let items: Vec<&ScoredResponse> = groups.iter().flat_map(|g| g.items.iter()).collect();
        let owned: Vec<bool> = groups
            .iter()
            .enumerate()
            .flat_map(|(gi, g)| std::iter::repeat_n(self.parallel.owns(gi), g.items.len()))
            .collect();
        if !self.distills_sampled() {
            let per_response = items
                .iter()
                .zip(advantages)
                .zip(&owned)
                .map(|((r, &a), &mine)| {
                    let value = (signal.reward_weight * a) as f32;
                    if mine {
                        vec![value; r.response.len()]
                    } else {
                        Vec::new()
                    }
                })
                .collect();
            return Ok(Some(TokenAdvantages {
                per_response,
                reverse_kl: None,
            }));
        }
        let (old, teacher) = (
            &behaviour.logprobs.old,
            behaviour
                .logprobs
                .teacher
                .as_ref()
                .ok_or_else(|| TrainerError::Batch {
                    sequence: 0,
                    message: "the behaviour phase computed no teacher log-probs".into(),
                })?,
        );
        let mut per_response = Vec::with_capacity(items.len());
        let (mut kl, mut tokens) = (0.0, 0);
        for (i, r) in items.iter().enumerate() {
            if !owned[i] {
                per_response.push(Vec::new());
                continue;
            }
            let adv = signal
                .token_advantages(advantages[i], &old[i], &teacher[i])
                .map_err(|e| TrainerError::Batch {
                    sequence: i,
                    message: format!("distillation: {e}"),
                })?;
            if r.train {
                let keep = |v: &[f32]| -> Vec<f32> {
                    v.iter()
                        .enumerate()
                        .filter(|(j, _)| {
                            r.sampled
                                .as_ref()
                                .is_none_or(|m| m.get(*j).copied().unwrap_or(false))
                        })
                        .map(|(_, x)| *x)
                        .collect()
                };
                let (s, n) = reverse_kl_sum(&keep(&old[i]), &keep(&teacher[i]));
                kl += s;
                tokens += n;
            }
            per_response.push(adv);
        }
        let sum = self
            .parallel
            .sum("summing the distillation reverse KL", &[kl, tokens as f64])?;
        Ok(Some(TokenAdvantages {
            per_response,
            reverse_kl: Some((sum[0], sum[1] as usize)),
        }))
    }
}
