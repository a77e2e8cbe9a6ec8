//! Inference servers the trainer starts and restarts itself, as rollout engines: llama.cpp's
//! `llama-server` on a GGUF export and `vllm serve` on HF safetensors, both on 127.0.0.1 at a
//! free port (rl-rollout's [`ManagedServer`]), plus a client for an SGLang server someone else
//! runs. [`build_engine`] turns `[rollout.engine]` into the engine the trainer drives.

use std::path::Path;
use std::time::Duration;

use burn::tensor::backend::AutodiffBackend;
use rl_models::{GgufDtype, Tokenizer};
use rl_rollout::{
    LLAMA_SERVER_LAUNCH, LlamaCppEngine, ManagedServer, RolloutEngine, SglangEngine, VLLM_LAUNCH,
    VllmEngine, VllmOptions,
};

use super::local::LocalEngine;
use crate::TrainerError;
use crate::atomic_dir::atomic_dir;
use crate::config::{EngineConfig, TrainConfig};
use crate::policy::Policy;

/// The engine of `config.rollout.engine` serving `policy`'s weights as `version`: the
/// in-process [`LocalEngine`], a llama-server on a GGUF export of the weights (in
/// `out_dir/engine/`, restarted on a new export at every weight sync), vLLM, or SGLang.
pub fn build_engine<B: AutodiffBackend, P: Policy<B>>(
    config: &TrainConfig,
    policy: &P,
    tokenizer: &Tokenizer,
    allowed_vocab: usize,
    version: u64,
) -> Result<Box<dyn RolloutEngine>, TrainerError> {
    match &config.rollout.engine {
        EngineConfig::Local => Ok(Box::new(
            LocalEngine::new(
                policy.inference(),
                version,
                config.rollout.generation_batch,
                Some(allowed_vocab),
            )
            .sharing_prompts(config.model.shared_prompts),
        )),
        EngineConfig::Sglang { url, .. } => {
            // A fresh server serves the base model, not necessarily this run's version:
            // version u64::MAX makes `with_engine`-style checks push the current weights first.
            let retry = config.rollout.engine.retry().unwrap_or_default();
            let engine = SglangEngine::new(url, retry, u64::MAX, policy.vocab_size())?;
            engine.health()?;
            Ok(Box::new(engine))
        }
        EngineConfig::Vllm {
            server,
            server_args,
            processed_logprobs,
            concurrency,
            startup_timeout_s,
            ..
        } => {
            let options = VllmOptions {
                model: None,
                concurrency: *concurrency,
                processed_logprobs: *processed_logprobs,
            };
            let startup = Duration::from_secs_f64(*startup_timeout_s);
            let launch = Launch {
                server,
                server_args,
                version,
            };
            build_vllm(config, policy, launch, options, startup)
        }
        EngineConfig::LlamaCpp {
            server,
            server_args,
            concurrency,
            ..
        } => {
            let launch = Launch {
                server,
                server_args,
                version,
            };
            build_llama_cpp(config, policy, tokenizer, launch, *concurrency)
        }
    }
}

/// What starting a managed server takes from its `[rollout.engine]` section.
struct Launch<'a> {
    /// The server executable.
    server: &'a Path,
    /// Extra arguments after the defaults.
    server_args: &'a [String],
    /// The weight version the server starts with.
    version: u64,
}

/// `llama-server` on 127.0.0.1 on a GGUF (f32) export of the policy's weights, restarted on a
/// new export at every weight sync.
fn build_llama_cpp<B: AutodiffBackend, P: Policy<B>>(
    config: &TrainConfig,
    policy: &P,
    tokenizer: &Tokenizer,
    launch: Launch<'_>,
    concurrency: usize,
) -> Result<Box<dyn RolloutEngine>, TrainerError> {
    let Launch {
        server,
        server_args,
        version,
    } = launch;
    let dir = config.out_dir.join("engine");
    let initial = dir.join("initial");
    std::fs::create_dir_all(&initial).map_err(|e| TrainerError::io(&initial, e))?;
    policy.save(&initial)?;
    tokenizer.save(initial.join("tokenizer.json"))?;
    let gguf = dir.join("model.gguf");
    rl_models::export_gguf(&initial, &gguf, GgufDtype::F32)?;
    let ctx = concurrency * (config.rollout.max_new_tokens + 2048);
    let mut args: Vec<String> = [
        "-c".to_string(),
        ctx.to_string(),
        "-np".into(),
        concurrency.to_string(),
        "-ctk".into(),
        "f32".into(),
        "-ctv".into(),
        "f32".into(),
        "-fa".into(),
        "off".into(),
    ]
    .into();
    args.extend(server_args.iter().cloned());
    let wait = Duration::from_secs(300);
    let mut srv = ManagedServer::start(
        server,
        LLAMA_SERVER_LAUNCH,
        &gguf,
        free_port()?,
        &args,
        &dir.join("server.log"),
        wait,
    )?;
    let url = srv.url();
    let tok = tokenizer.clone();
    let reload = Box::new(move |weights: &Path| -> Result<(), String> {
        tok.save(weights.join("tokenizer.json"))
            .map_err(|e| e.to_string())?;
        rl_models::export_gguf(weights, &gguf, GgufDtype::F32).map_err(|e| e.to_string())?;
        srv.restart(&gguf, wait).map_err(|e| e.to_string())
    });
    Ok(Box::new(LlamaCppEngine::new(
        &url,
        config.rollout.engine.retry().unwrap_or_default(),
        version,
        policy.vocab_size(),
        concurrency,
        Some(reload),
    )?))
}

/// `vllm serve` on 127.0.0.1 on the policy's weights as HF safetensors (`out_dir/weights`),
/// restarted on the new weights at every sync, with its capabilities probed before training.
fn build_vllm<B: AutodiffBackend, P: Policy<B>>(
    config: &TrainConfig,
    policy: &P,
    launch: Launch<'_>,
    options: VllmOptions,
    wait: Duration,
) -> Result<Box<dyn RolloutEngine>, TrainerError> {
    let Launch {
        server,
        server_args,
        version,
    } = launch;
    let weights = config.out_dir.join("weights");
    atomic_dir(&weights, |tmp| policy.save(tmp))?;
    let mut args: Vec<String> = vec!["--skip-tokenizer-init".into()];
    args.extend(server_args.iter().cloned());
    let log = config.out_dir.join("vllm.log");
    let mut srv = ManagedServer::start(
        server,
        VLLM_LAUNCH,
        &weights,
        free_port()?,
        &args,
        &log,
        wait,
    )?;
    let url = srv.url();
    let reload = Box::new(move |dir: &Path| -> Result<(), String> {
        srv.restart(dir, wait).map_err(|e| e.to_string())
    });
    let engine = VllmEngine::new(
        &url,
        config.rollout.engine.retry().unwrap_or_default(),
        version,
        policy.vocab_size(),
        options,
        Some(reload),
    )?;
    engine.probe(&[0])?;
    Ok(Box::new(engine))
}

/// A port on 127.0.0.1 that was free a moment ago, for a server this process starts.
fn free_port() -> Result<u16, TrainerError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| TrainerError::EngineLaunch {
            message: format!("no free port on 127.0.0.1 for the engine server: {e}"),
        })
}
