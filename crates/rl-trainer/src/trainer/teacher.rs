//! The distillation teacher of `[distill]`: a frozen model loaded in this process and checked
//! to share the policy's tokenizer, or a client of a server that scores given tokens. The
//! phase that uses it is `token_advantages.rs`.

use std::path::Path;

use burn::tensor::backend::AutodiffBackend;
use rl_models::Tokenizer;
use rl_rollout::{SglangEngine, TokenScorer, VllmEngine, VllmOptions};

use crate::TrainerError;
use crate::config::{TeacherServer, TrainConfig};
use crate::policy::Policy;

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
