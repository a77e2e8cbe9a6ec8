//! The training configuration, algorithm presets and TOML overrides.
//!
//! A config names an `algorithm` preset (`grpo`, `dr_grpo`, `rloo`, `dapo`, `da3po`, `gspo`,
//! `cispo`, `reinforce_pp`, `reinforce_pp_baseline`, `ppo`; [`ALGORITHMS`]) which sets
//! the algorithm's paper defaults; every field can then be overridden in TOML, field by field.
//! Unknown keys anywhere are errors. The resolved config is printed at start and saved beside
//! checkpoints.

use std::path::{Path, PathBuf};

use rl_advantage::EstimatorConfig;
use rl_env::EnvConfig;
use rl_loss::{Aggregation, LossConfig, PolicyLoss};
use rl_models::{Checkpointing, ComputeDtype, LoraConfig, MemoryPlan};
use rl_rollout::{AnswerLine, RetryPolicy, SamplingParams};
use rl_sampler::{
    BatcherConfig, BudgetSchedule, DifficultyTracker, FilterConfig, OnExhausted, RolloutBudget,
    RoundSizing,
};
use rl_verifier::{OverlongPolicy, RewardMap, VerifierConfig};
use serde::{Deserialize, Serialize};

mod algorithm_presets;
mod critic;
mod distill;
mod load;
mod merge;
mod remote;
mod reward_model;
mod validate;

pub use critic::{CriticSection, KlInRewardSection};
pub use distill::{DISTILL_FORMS, DistillForm, DistillSection, TeacherServer};
pub use merge::merge_toml;
use remote::{default_concurrency, default_retries, default_timeout};
pub use reward_model::{RewardModelSection, ScoreNormalization};

/// Registered algorithm presets.
pub const ALGORITHMS: [&str; 10] = [
    "grpo",
    "dr_grpo",
    "rloo",
    "dapo",
    "da3po",
    "gspo",
    "cispo",
    "reinforce_pp",
    "reinforce_pp_baseline",
    "ppo",
];

/// Where the policy comes from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    /// A directory with an HF `config.json` + safetensors checkpoint.
    pub path: Option<PathBuf>,
    /// `tokenizer.json`; defaults to `<path>/tokenizer.json`.
    pub tokenizer: Option<PathBuf>,
    /// Ids the tokenizer does not define are masked from sampling (Qwen3: 151,669 of 151,936);
    /// defaults to the tokenizer's count.
    pub allowed_vocab_size: Option<usize>,
    /// Response positions whose full-vocabulary logits the update computes at once, its backward
    /// recomputing them chunk by chunk instead of keeping every position's (Liger's chunked
    /// loss); 0 (default): the plain head, whose graph keeps them all until the backward.
    #[serde(default)]
    pub logprob_chunk: usize,
    /// `"none"` (default) or `"layers"`: keep only each decoder layer's input for the update's
    /// backward and recompute the layer there (HF's gradient checkpointing).
    #[serde(default)]
    pub checkpointing: Checkpointing,
    /// `true`: a group's prompt is computed once, not once per response. The update computes
    /// each distinct prompt of a micro-batch once, its keys and values shared by the responses
    /// that follow it, and forms micro-batches of whole prompt groups
    /// (`rl_models::MemoryPlan::shared_prompts`): the same loss and gradients up to float
    /// summation order. The in-process engine prefills each distinct prompt of a batch once
    /// (`rl_models::GenerationConfig::share_prompts`): the same samples up to the rounding of
    /// batched kernels. Fewer FLOPs where groups share long prompts. Needs `checkpointing =
    /// "none"` unless `packing`. Default `false`.
    #[serde(default)]
    pub shared_prompts: bool,
    /// `true`: the update lays a micro-batch's sequences end to end in packed rows instead of
    /// padding each to the longest (`rl_models::MemoryPlan::packing`): each sequence attends
    /// only to itself (with `shared_prompts`, a group's prompt once, then each response after
    /// it), so the loss and gradients are the padded pass's up to float summation order, and
    /// `optim.micro_batch_tokens` counts the tokens computed. Fewer FLOPs where response lengths
    /// vary. Any `checkpointing`. Default `false`.
    #[serde(default)]
    pub packing: bool,
    /// `[model.lora]` (`r`, `alpha`, optional `target_modules` and `use_rslora`): train LoRA
    /// adapters in PEFT's format on the frozen model instead of every weight
    /// (`rl_models::LoraConfig`; adapters seeded by the run's `seed`). Unset: full fine-tuning.
    #[serde(default)]
    pub lora: Option<LoraConfig>,
    /// `"f32"` (default) or `"bf16"`: the dtype of the forward and backward passes. bf16 keeps
    /// f32 master weights, gradients and AdamW state, casting each weight where it is used, and
    /// f32 norm statistics, attention softmax and log-probs (`rl_models::ComputeDtype`). Refused
    /// with a config error where the backend cannot compute in bf16 (burn's wgpu); slower than
    /// f32 on the CPU backend, which computes every bf16 kernel in f32 (docs/models.md).
    #[serde(default)]
    pub dtype: ComputeDtype,
}

impl ModelSection {
    /// How the update's forward and backward trade compute for memory.
    pub fn memory_plan(&self) -> MemoryPlan {
        MemoryPlan {
            logprob_chunk: self.logprob_chunk,
            checkpointing: self.checkpointing,
            shared_prompts: self.shared_prompts,
            packing: self.packing,
        }
    }
}

/// The prompt set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DataSection {
    /// Training prompts: `.jsonl`/`.json` (JSON lines) or `.parquet`.
    pub train: Option<PathBuf>,
    /// Held-out prompts for evaluation (same formats).
    pub eval: Option<PathBuf>,
    /// Column holding the problem: a string, or a list of chat messages (DAPO-Math-17K's `prompt`).
    pub prompt_key: String,
    /// Column holding the ground truth; dots descend into objects (`reward_model.ground_truth`).
    pub answer_key: String,
    /// How the ground truth is read from that column: `as_is`, `boxed` (the last `\boxed{…}`
    /// of a worked solution, as MATH's `solution`) or `after_hashes` (the text after the last
    /// `####`, commas removed, as GSM8K's `answer`).
    pub answer_format: AnswerFormat,
    /// Optional column naming a difficulty tier for per-tier metrics.
    pub tier_key: Option<String>,
    /// How a problem becomes the user message.
    pub template: PromptTemplate,
    /// Wrap the user message in the Qwen chat template.
    pub chat_template: bool,
    /// Append an empty `<think>\n\n</think>\n\n` block (Qwen3 non-thinking mode).
    pub disable_thinking: bool,
}

impl Default for DataSection {
    fn default() -> Self {
        Self {
            train: None,
            eval: None,
            prompt_key: "prompt".into(),
            answer_key: "reward_model.ground_truth".into(),
            answer_format: AnswerFormat::AsIs,
            tier_key: None,
            template: PromptTemplate::Dapo,
            chat_template: true,
            disable_thinking: false,
        }
    }
}

/// How a data file's ground-truth column holds the answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerFormat {
    /// The column is the answer.
    #[default]
    AsIs,
    /// The content of the column's last `\boxed{…}` (braces balanced as verl's
    /// `last_boxed_only_string` counts them): MATH / MATH-500 `solution`.
    Boxed,
    /// The text after the column's last `####`, trimmed, with `,` removed: GSM8K `answer`.
    AfterHashes,
}

impl AnswerFormat {
    /// The answer in `raw`, or `None` when the format does not apply.
    pub fn extract(self, raw: &str) -> Option<String> {
        match self {
            AnswerFormat::AsIs => Some(raw.to_string()),
            AnswerFormat::Boxed => {
                rl_verifier::dapo::last_boxed_content(raw).map(|s| s.trim().to_string())
            }
            AnswerFormat::AfterHashes => raw
                .rfind("####")
                .map(|i| raw[i + 4..].trim().replace(',', ""))
                .filter(|s| !s.is_empty()),
        }
    }
}

/// The text around a problem.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptTemplate {
    /// The problem as is (also when the prompt column already holds rendered chat messages).
    Raw,
    /// DAPO's: "Solve the following math problem step by step. The last line of your response
    /// should be of the form Answer: $Answer (without quotes) where $Answer is the answer to the
    /// problem.\n\n{problem}\n\nRemember to put your answer on its own line after \"Answer:\"".
    Dapo,
    /// A custom template containing `{problem}`.
    Custom(String),
}

/// Rollout generation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RolloutSection {
    /// G: responses per prompt.
    pub group_size: usize,
    /// Prompts sampled per generation round (DAPO's gen_batch_size): every round with
    /// `batch.round_sizing = "fixed"`, the most a round may take with `"adaptive"`.
    pub prompts_per_round: usize,
    /// Maximum generated tokens (L_max).
    pub max_new_tokens: usize,
    /// Sampling temperature.
    pub temperature: f32,
    /// Nucleus sampling.
    pub top_p: f32,
    /// Top-k (0 = off).
    pub top_k: usize,
    /// More tokens that end a response, each one token of the vocabulary written as text (a
    /// base model's few-shot prompt: `["\n\n"]` ends the answer before the next question),
    /// beside the tokenizer's end tokens (`<|im_end|>`, `<|endoftext|>`, `<eos>`,
    /// `<end_of_turn>`, `</s>`).
    #[serde(default)]
    pub stop: Vec<String>,
    /// Texts that open a response's answer line (a few-shot frame's `####` of `#### 42`): the
    /// response ends with that line — after a token whose text holds one of them, the first token
    /// that holds a newline is its last. Each text must lie within one token. Empty = off.
    #[serde(default)]
    pub stop_after_line: Vec<String>,
    /// Sequences per generation call (memory bound), in the rollout and in the held-out
    /// evaluation (`generation_batch / eval.k` prompts a call); 0 = all of a round, and all
    /// held-out prompts, at once.
    #[serde(default)]
    pub generation_batch: usize,
    /// k: how many weight versions a rollout may lag behind the policy it trains. 0 =
    /// synchronous (generate, then train); k ≥ 1 generates the next step's first round while
    /// the current step trains (asynchronous rollouts), and drops rollouts more than k versions
    /// old.
    #[serde(default)]
    pub max_staleness: usize,
    /// Where rollouts are generated (`[rollout.engine]`, default `kind = "local"`).
    #[serde(default)]
    pub engine: EngineConfig,
    /// Difficulty-adaptive group sizes (`[rollout.budget]`): each round's prompts ×
    /// `group_size` responses are split across its prompts by their running pass rates
    /// (docs/algorithms/dars.md, knapsack.md). Absent: every prompt gets `group_size`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<AdaptiveBudget>,
    /// Multi-turn episodes (`[rollout.env]`, docs/agents.md): each rollout is an episode of
    /// assistant turns and environment observations (tool calls and their results) instead of
    /// one response. Absent: one assistant turn per rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<EnvConfig>,
}

/// The rollout engine (`[rollout.engine]`; docs/rollout.md).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum EngineConfig {
    /// The trainer's own model, in process.
    #[default]
    Local,
    /// A `llama-server` that the trainer starts on 127.0.0.1 and restarts on a re-exported GGUF
    /// file after every step (weights in `out_dir/engine/`).
    LlamaCpp {
        /// Path of the `llama-server` binary (`scripts/build-llama-server.sh` prints it).
        server: PathBuf,
        /// Extra server arguments, after the defaults `-c 4096 -np <concurrency> -ctk f32
        /// -ctv f32 -fa off` (f32 K/V cache and no flash attention keep its log-probs within
        /// 1e-3 of the trainer's).
        #[serde(default)]
        server_args: Vec<String>,
        /// Requests in flight (and server slots).
        #[serde(default = "default_concurrency")]
        concurrency: usize,
        /// Seconds per request.
        #[serde(default = "default_timeout")]
        timeout_s: f64,
        /// Retries of a failed request.
        #[serde(default = "default_retries")]
        max_retries: usize,
    },
    /// A vLLM server the trainer starts on 127.0.0.1 (`server serve FOLDER --host 127.0.0.1
    /// --port P --skip-tokenizer-init server_args…`, on the machine's GPUs) and restarts on the
    /// new weights after every step (`out_dir/weights`): generation through the OpenAI
    /// `/v1/completions` with token ids, one request per sample.
    Vllm {
        /// The `vllm` executable (e.g. `.venv/bin/vllm`).
        server: PathBuf,
        /// Extra arguments (e.g. `["--gpu-memory-utilization", "0.5"]`); at T != 1 include
        /// `--logprobs-mode processed_logprobs` and set `processed_logprobs = true`.
        #[serde(default)]
        server_args: Vec<String>,
        /// The server runs with `--logprobs-mode processed_logprobs` (log-probs after
        /// temperature), required for T != 1.
        #[serde(default)]
        processed_logprobs: bool,
        /// Requests in flight.
        #[serde(default = "default_concurrency")]
        concurrency: usize,
        /// Seconds per request.
        #[serde(default = "default_timeout")]
        timeout_s: f64,
        /// Retries of a failed request.
        #[serde(default = "default_retries")]
        max_retries: usize,
        /// Seconds a (re)start may take before `/health` answers.
        #[serde(default = "default_startup")]
        startup_timeout_s: f64,
    },
    /// An SGLang server someone else runs (on a GPU): generation through its native
    /// `/generate`, weights through `/update_weights_from_disk` from `weights_dir`.
    Sglang {
        /// The server's URL, e.g. `http://gpu-node:30000`.
        url: String,
        /// Where the trainer writes each version's HF safetensors: a folder the server can read
        /// at the same path (a shared file system). Default: `out_dir/weights`.
        #[serde(default)]
        weights_dir: Option<PathBuf>,
        /// Seconds per request (a whole batched `/generate`).
        #[serde(default = "default_timeout")]
        timeout_s: f64,
        /// Retries of a failed request.
        #[serde(default = "default_retries")]
        max_retries: usize,
    },
}

/// `[rollout.budget]`: how many responses each prompt of a round gets, from its running pass
/// rate (rl-sampler's [`RolloutBudget`] and [`DifficultyTracker`]):
///
/// ```toml
/// [rollout.budget]
/// min = 2
/// max = 32
/// decay = 0.5
/// schedule = { name = "dars_hw" }   # uniform, dars_et, dars_hw, knapsack
/// ```
///
/// The round's total stays prompts × `rollout.group_size` (so `min ≤ group_size ≤ max`); a
/// prompt not seen yet counts as p̂ = ½. Every response of every round updates its prompt's
/// estimate (an exponential moving average of the per-round pass rate), which checkpoints carry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdaptiveBudget {
    /// The schedule.
    pub schedule: BudgetSchedule,
    /// Smallest group (at least 2).
    #[serde(default = "default_min_group")]
    pub min: usize,
    /// Largest group.
    pub max: usize,
    /// Weight of the previous estimate in each prompt's moving average, in [0, 1).
    #[serde(default = "default_pass_rate_decay")]
    pub decay: f64,
}

fn default_min_group() -> usize {
    rl_sampler::DEFAULT_MIN_GROUP
}

fn default_pass_rate_decay() -> f64 {
    0.5
}

impl AdaptiveBudget {
    /// The allocation rule (validated).
    pub fn allocation(&self) -> Result<RolloutBudget, rl_sampler::SamplerError> {
        RolloutBudget::new(self.schedule, self.min, self.max)
    }

    /// A tracker with this section's decay.
    pub fn tracker(&self) -> Result<DifficultyTracker, rl_sampler::SamplerError> {
        DifficultyTracker::new(self.decay)
    }
}

impl RolloutSection {
    /// The sampling parameters of every rollout request, ending at `stop_ids` and at the end of
    /// `answer_line` (the seed is set per chunk of a round): the one sampling type from this
    /// section to every engine.
    pub fn sampling(&self, stop_ids: &[u32], answer_line: Option<&AnswerLine>) -> SamplingParams {
        SamplingParams {
            temperature: self.temperature,
            top_p: self.top_p,
            top_k: self.top_k,
            max_new_tokens: self.max_new_tokens,
            stop_ids: stop_ids.to_vec(),
            seed: 0,
            answer_line: answer_line.cloned(),
        }
    }
}

impl EngineConfig {
    /// The request timeout and retries of a server engine (`None` for the local engine).
    pub fn retry(&self) -> Option<RetryPolicy> {
        let (timeout_s, max_retries) = match self {
            EngineConfig::Local => return None,
            EngineConfig::LlamaCpp {
                timeout_s,
                max_retries,
                ..
            }
            | EngineConfig::Vllm {
                timeout_s,
                max_retries,
                ..
            }
            | EngineConfig::Sglang {
                timeout_s,
                max_retries,
                ..
            } => (*timeout_s, *max_retries),
        };
        // The backoff is rl-rollout's default (0.5 s, doubling).
        Some(RetryPolicy {
            timeout_s,
            max_retries,
            ..RetryPolicy::default()
        })
    }

    /// The folder the trainer writes weights to for a remote engine, if the engine names one.
    pub fn weights_dir(&self) -> Option<&Path> {
        match self {
            EngineConfig::Sglang { weights_dir, .. } => weights_dir.as_deref(),
            _ => None,
        }
    }
}

fn default_startup() -> f64 {
    900.0
}

/// Dynamic batching (`[batch]`): rl-sampler's batcher settings, used as is.
pub type BatchSection = BatcherConfig;

/// Verification and reward shaping.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RewardSection {
    /// The verifier.
    pub verifier: VerifierConfig,
    /// Outcome → reward (defaults to the verifier's reference mapping).
    pub rewards: Option<RewardMap>,
    /// Overlong handling.
    #[serde(default)]
    pub overlong: OverlongPolicy,
    /// The verifier's reward's weight in the total when a reward model adds its score.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub verifier_weight: f64,
    /// A reward model's score added to the reward (off unless present).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<RewardModelSection>,
    /// An LLM judge's reward (in [0, 1]) added to the reward (off unless present): any
    /// OpenAI-compatible chat server ([`rl_rollout::JudgeConfig`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<rl_rollout::JudgeConfig>,
    /// The judge's reward's weight in the total.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub judge_weight: f64,
}

fn one() -> f64 {
    1.0
}

fn is_one(x: &f64) -> bool {
    *x == 1.0
}

/// Optimisation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptimSection {
    /// Peak learning rate (constant after warm-up).
    pub lr: f64,
    /// Linear warm-up steps (rollout steps).
    pub warmup_steps: usize,
    /// AdamW decoupled weight decay.
    pub weight_decay: f64,
    /// Global gradient-norm clip (0 = off), as torch's clip_grad_norm_.
    pub grad_clip: f64,
    /// AdamW β1.
    pub beta1: f64,
    /// AdamW β2.
    pub beta2: f64,
    /// AdamW ε.
    pub eps: f64,
    /// μ: passes over each rollout batch.
    pub epochs: usize,
    /// Optimizer steps per pass (the batch is split into this many mini-batches of whole groups).
    pub mini_batches: usize,
    /// Sequences per forward/backward (gradient accumulation inside a mini-batch), at most.
    pub micro_batch: usize,
    /// Padded tokens per forward/backward (rows × the longest prompt + response), at most: a
    /// token budget beside `micro_batch`, so that micro-batches of long responses hold fewer
    /// sequences (verl's `use_dynamic_bsz`); with it the sequences are grouped by length
    /// (shortest first), so that micro-batches pad little. 0: off (cut in order). Same loss and
    /// gradients up to float summation order, other memory and speed.
    #[serde(default)]
    pub micro_batch_tokens: usize,
    /// An update whose loss or gradient norm is not finite is skipped (weights and moments
    /// untouched); this many skips in a row stop training with a `Diverged` error (1 = stop at
    /// the first).
    #[serde(default = "default_max_consecutive_skips")]
    pub max_consecutive_skips: usize,
}

fn default_max_consecutive_skips() -> usize {
    3
}

/// Checkpointing.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointSection {
    /// Save every this many steps (0 = only at the end).
    pub every: usize,
    /// Checkpoints kept on disk.
    pub keep: usize,
}

/// Evaluation on the held-out set.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalSection {
    /// Evaluate every this many steps (0 = only before and after training).
    pub every: usize,
    /// Samples per prompt (avg@k, pass@k).
    pub k: usize,
    /// Sampling temperature.
    pub temperature: f32,
    /// Nucleus sampling.
    pub top_p: f32,
    /// At most this many held-out prompts (0 = all).
    pub max_prompts: usize,
}

/// The theorem probe (docs/theory.md, "Inside training"): at the listed steps, each training
/// prompt of every generation round gets `samples` extra responses from the current policy with
/// the rollout's sampling settings, and `probe.jsonl` records its estimated pass rate next to
/// what dynamic sampling did with its group. The extra samples use their own seeds, so the
/// training run is the same with and without the probe.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeSection {
    /// Steps (1-based) whose generation rounds are probed; empty: off.
    pub steps: Vec<usize>,
    /// Extra responses per prompt.
    pub samples: usize,
}

impl Default for ProbeSection {
    fn default() -> Self {
        Self {
            steps: Vec::new(),
            samples: 64,
        }
    }
}

impl ProbeSection {
    /// No step is probed.
    pub fn is_off(&self) -> bool {
        self.steps.is_empty()
    }
}

/// Everything a training run needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrainConfig {
    /// The preset the algorithm sections started from.
    pub algorithm: String,
    /// Master seed (prompt order, sampling).
    pub seed: u64,
    /// Training (rollout) steps.
    pub steps: usize,
    /// Stop once this many responses have been generated in total (0 = no budget; `steps`
    /// still caps the run), so that algorithms that re-sample (dynamic sampling) can be compared
    /// at equal generation cost.
    #[serde(default)]
    pub rollout_budget: usize,
    /// Run folder: metrics.jsonl, config.toml, checkpoints/.
    pub out_dir: PathBuf,
    /// The policy.
    #[serde(default)]
    pub model: ModelSection,
    /// The prompts.
    #[serde(default)]
    pub data: DataSection,
    /// Generation.
    pub rollout: RolloutSection,
    /// Dynamic batching.
    pub batch: BatchSection,
    /// Group filter.
    pub filter: FilterConfig,
    /// Advantage estimator.
    pub advantage: EstimatorConfig,
    /// Policy loss, aggregation, KL, entropy.
    pub loss: LossConfig,
    /// Verification and shaping.
    pub reward: RewardSection,
    /// Optimisation.
    pub optim: OptimSection,
    /// Checkpoints.
    pub checkpoint: CheckpointSection,
    /// Evaluation.
    pub eval: EvalSection,
    /// The theorem probe (off unless `probe.steps` is set).
    #[serde(default, skip_serializing_if = "ProbeSection::is_off")]
    pub probe: ProbeSection,
    /// On-policy distillation from a teacher (off unless present).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distill: Option<DistillSection>,
    /// PPO's value model and GAE (`algorithm = "ppo"`; absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critic: Option<CriticSection>,
}

impl Default for TrainConfig {
    /// DA3PO with DAPO's recipe scaled to a small run (G = 16, 32 groups per step).
    fn default() -> Self {
        let mut c = TrainConfig {
            algorithm: String::new(),
            seed: 0,
            steps: 100,
            rollout_budget: 0,
            out_dir: PathBuf::from("runs/rlvr"),
            model: ModelSection::default(),
            data: DataSection::default(),
            rollout: RolloutSection {
                group_size: 16,
                prompts_per_round: 64,
                max_new_tokens: 1024,
                temperature: 1.0,
                top_p: 1.0,
                top_k: 0,
                stop: Vec::new(),
                stop_after_line: Vec::new(),
                generation_batch: 0,
                max_staleness: 0,
                engine: EngineConfig::Local,
                budget: None,
                env: None,
            },
            batch: BatchSection {
                groups_per_step: 32,
                max_gen_rounds: 10,
                on_exhausted: OnExhausted::Error,
                round_sizing: RoundSizing::Adaptive,
            },
            filter: FilterConfig::None,
            advantage: EstimatorConfig::from_name("grpo").expect("registered"),
            loss: LossConfig {
                policy: PolicyLoss::from_name("ppo").expect("registered"),
                aggregation: Aggregation::TokenMean,
                kl: None,
                entropy_coef: 0.0,
                is_correction: Default::default(),
            },
            reward: RewardSection {
                verifier: VerifierConfig::from_name("dapo").expect("registered"),
                rewards: None,
                overlong: OverlongPolicy::Off,
                verifier_weight: 1.0,
                model: None,
                judge: None,
                judge_weight: 1.0,
            },
            optim: OptimSection {
                lr: 1e-6,
                warmup_steps: 10,
                weight_decay: 0.1,
                grad_clip: 1.0,
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
                epochs: 1,
                mini_batches: 1,
                micro_batch: 8,
                micro_batch_tokens: 0,
                max_consecutive_skips: default_max_consecutive_skips(),
            },
            checkpoint: CheckpointSection { every: 50, keep: 2 },
            eval: EvalSection {
                every: 0,
                k: 8,
                temperature: 1.0,
                top_p: 0.7,
                max_prompts: 0,
            },
            probe: ProbeSection::default(),
            distill: None,
            critic: None,
        };
        c.apply_preset("da3po").expect("registered preset");
        c
    }
}

impl TrainConfig {
    /// The sampling parameters of evaluation (the trainer's and `rlvr eval`'s): the rollout's
    /// length and end tokens with `[eval]`'s temperature and top-p, no top-k (the seed is set
    /// per prompt).
    pub fn eval_sampling(
        &self,
        stop_ids: &[u32],
        answer_line: Option<&AnswerLine>,
    ) -> SamplingParams {
        SamplingParams {
            temperature: self.eval.temperature,
            top_p: self.eval.top_p,
            top_k: 0,
            ..self.rollout.sampling(stop_ids, answer_line)
        }
    }

    /// The resolved config as TOML (printed at start, saved beside checkpoints).
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).unwrap_or_else(|e| format!("# unserialisable config: {e}\n"))
    }

    /// Whether the run needs the frozen reference policy: a KL loss with β > 0, or a KL penalty
    /// in the critic's rewards.
    pub fn needs_reference(&self) -> bool {
        self.loss.kl.is_some_and(|k| k.coef > 0.0)
            || self
                .critic
                .as_ref()
                .is_some_and(|c| c.kl_in_reward.is_some())
    }

    /// The reward mapping in use.
    pub fn reward_map(&self) -> RewardMap {
        self.reward
            .rewards
            .unwrap_or_else(|| self.reward.verifier.default_rewards())
    }
}

#[cfg(test)]
mod tests {
    use super::AnswerFormat;

    /// MATH's solutions end in `\boxed{…}` (nested braces kept whole); GSM8K's answers end in
    /// `#### 1,234`; a column without the marker has no answer in that format.
    #[test]
    fn answer_formats_read_math_and_gsm8k_ground_truths() {
        let math = r"So $x = \frac{1}{2}$, and the sum is $\boxed{\frac{1}{2}+\sqrt{3}}$.";
        assert_eq!(
            AnswerFormat::Boxed.extract(math).as_deref(),
            Some(r"\frac{1}{2}+\sqrt{3}")
        );
        let gsm = "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n#### 1,072";
        assert_eq!(
            AnswerFormat::AfterHashes.extract(gsm).as_deref(),
            Some("1072")
        );
        assert_eq!(AnswerFormat::AsIs.extract("72").as_deref(), Some("72"));
        assert_eq!(AnswerFormat::Boxed.extract("no box here"), None);
        assert_eq!(AnswerFormat::AfterHashes.extract("no hashes"), None);
        assert_eq!(AnswerFormat::AfterHashes.extract("####  "), None);
    }
}
