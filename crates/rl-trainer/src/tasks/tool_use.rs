//! The embedded tool-use run (`cargo run --example tool_use`, docs/agents.md): arithmetic a
//! tiny model cannot do reliably in its head — four-digit sums and three-digit × two-digit
//! products — but can with the `calculator` tool, in Qwen3's chat and tool-call format.
//!
//! An episode with the tool is two assistant turns:
//!
//! ```text
//! <|im_start|>user\n347*58<|im_end|>\n<|im_start|>assistant\n            prompt
//! <tool_call>\n{"name": "calculator", "arguments": {"expression": "347*58"}}\n</tool_call><|im_end|>
//! \n<|im_start|>user\n<tool_response>\n20126\n</tool_response><|im_end|>\n<|im_start|>assistant\n   observation
//! Answer: 20126<|im_end|>
//! ```
//!
//! and without it one turn, `Answer: <n><|im_end|>`. The warm-start shows both on the training
//! prompts — the tool on a fraction `tool_demo_rate` of them, a direct (correct) answer on the
//! rest — so the model starts out calling the tool on some prompts and guessing on the others.
//! RL (DA3PO, outcome reward of the final answer) then has a reason to call the tool more.

use std::path::PathBuf;

use burn::tensor::backend::AutodiffBackend;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rl_env::{EnvConfig, Message, TurnCodec, render_tool_call};
use rl_models::{CausalLm, ModelConfig, Tokenizer};
use serde::{Deserialize, Serialize};

use super::arithmetic::{ArithmeticTask, Tier};
use super::embedded::{load_demo, tiny_qwen3, with_toml_overrides};
use crate::config::{OptimSection, PromptTemplate};
use crate::data::{Dataset, Prompt, PromptRenderer, PromptText};
use crate::multi_turn::ChatCodec;
use crate::{SftConfig, SftExample, TrainConfig, TrainerError};

/// Added tokens of the tool-use tokenizer: Qwen3's turn and end tokens and its tool-call and
/// tool-response tags (single tokens in Qwen3's vocabulary as well).
pub const TOOL_SPECIAL_TOKENS: [&str; 7] = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
];

/// Everything that defines the embedded tool-use run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolUseDemo {
    /// The task's tiers.
    pub task: ArithmeticTask,
    /// Training prompts per tier.
    pub train_per_tier: usize,
    /// Held-out prompts per tier.
    pub eval_per_tier: usize,
    /// Seed of the train/held-out split.
    pub data_seed: u64,
    /// Fraction of warm-start demonstrations that call the calculator (the rest answer
    /// directly).
    pub tool_demo_rate: f64,
    /// Model width.
    pub hidden_size: usize,
    /// Decoder layers.
    pub num_hidden_layers: usize,
    /// Query heads (key/value heads are half of them).
    pub num_attention_heads: usize,
    /// SwiGLU width.
    pub intermediate_size: usize,
    /// The supervised warm-start.
    pub sft: SftConfig,
    /// The RL run (`[rollout.env]` set; its `algorithm` preset applied).
    pub train: TrainConfig,
}

impl Default for ToolUseDemo {
    fn default() -> Self {
        let mut train = TrainConfig {
            steps: 20,
            out_dir: PathBuf::from("runs/tool_use"),
            ..TrainConfig::default()
        };
        train.data.template = PromptTemplate::Raw;
        train.data.chat_template = true;
        train.rollout.group_size = 8;
        train.rollout.prompts_per_round = 16;
        train.rollout.max_new_tokens = 96;
        train.rollout.temperature = 1.0;
        train.rollout.env = Some(EnvConfig {
            max_turns: 3,
            max_tokens: 256,
            // The tiny model learns the call format from the warm-start; the tool list (a few
            // hundred characters here) would multiply the prompt length.
            tools_in_prompt: false,
            ..EnvConfig::default()
        });
        train.batch.groups_per_step = 8;
        train.batch.max_gen_rounds = 4;
        train.batch.on_exhausted = rl_sampler::OnExhausted::TrainOnKept;
        train.optim.lr = 1e-4;
        train.optim.warmup_steps = 3;
        train.optim.weight_decay = 0.0;
        train.optim.grad_clip = 1.0;
        train.optim.mini_batches = 1;
        train.optim.micro_batch = 64;
        train.checkpoint.every = 0;
        train.eval.every = 5;
        train.eval.k = 4;
        train.eval.temperature = 1.0;
        train.apply_preset("da3po").expect("registered preset");
        Self {
            task: ArithmeticTask {
                tiers: vec![
                    Tier::new("sum", (1000, 9999), (1000, 9999), '+'),
                    Tier::new("product", (100, 999), (10, 99), '*'),
                ],
            },
            train_per_tier: 900,
            eval_per_tier: 50,
            data_seed: 2026,
            tool_demo_rate: 0.5,
            hidden_size: 256,
            num_hidden_layers: 2,
            num_attention_heads: 8,
            intermediate_size: 512,
            sft: SftConfig {
                steps: 200,
                batch_size: 64,
                seed: 0,
                // Direct answers (~45 tokens) and tool episodes (~160) in separate
                // micro-batches: a third of the padded tokens of one 64-row batch.
                optim: OptimSection {
                    micro_batch_tokens: 4096,
                    ..SftConfig::default_optim()
                },
                sort_by_length: true,
            },
            train,
        }
    }
}

/// Data, tokenizer and model config of the tool-use run.
pub struct ToolUseData {
    /// Character-level over printable ASCII and newline, plus [`TOOL_SPECIAL_TOKENS`].
    pub tokenizer: Tokenizer,
    /// Training prompts (the RL pool and the warm-start's prompts).
    pub train: Dataset,
    /// Held-out prompts.
    pub eval: Dataset,
    /// The tiny Qwen3 config.
    pub model: ModelConfig,
}

/// Printable ASCII and newline: every character a tool result, an error observation or a JSON
/// call can contain.
pub fn tool_alphabet() -> String {
    let mut s: String = (0x20u8..=0x7e).map(char::from).collect();
    s.push('\n');
    s
}

impl ToolUseDemo {
    /// The default with the keys of a TOML document on top (any field, e.g.
    /// `tool_demo_rate = 0.5` or `[train.rollout.env] max_turns = 4`); unknown keys are errors.
    pub fn from_toml_str(text: &str) -> Result<Self, TrainerError> {
        let demo: Self = with_toml_overrides(Self::default(), text)?;
        demo.train.validate()?;
        if !(0.0..=1.0).contains(&demo.tool_demo_rate) {
            return Err(TrainerError::Config {
                field: "tool_demo_rate".into(),
                message: format!("{} (a fraction in [0, 1])", demo.tool_demo_rate),
            });
        }
        Ok(demo)
    }

    /// The default, or with `path` the default with that TOML file's overrides.
    pub fn load(path: Option<&std::path::Path>) -> Result<Self, TrainerError> {
        load_demo(path, Self::from_toml_str)
    }

    /// The tool-use tokenizer ([`tool_alphabet`] and [`TOOL_SPECIAL_TOKENS`]).
    pub fn tokenizer() -> Result<Tokenizer, TrainerError> {
        Ok(Tokenizer::char_level(
            &tool_alphabet(),
            &TOOL_SPECIAL_TOKENS,
        )?)
    }

    /// Builds the tokenizer, the split and the model config.
    pub fn data(&self) -> Result<ToolUseData, TrainerError> {
        let tokenizer = Self::tokenizer()?;
        let (train, eval) =
            self.task
                .split(self.data_seed, self.train_per_tier, self.eval_per_tier)?;
        let model = tiny_qwen3(
            &tokenizer,
            self.hidden_size,
            self.num_hidden_layers,
            self.num_attention_heads,
            self.intermediate_size,
        );
        Ok(ToolUseData {
            tokenizer,
            train,
            eval,
            model,
        })
    }

    /// The warm-start's examples: for each training prompt, with probability `tool_demo_rate`
    /// (seeded) the two-turn tool episode — the call, the calculator's observation (loss-masked,
    /// rendered by the same codec as in RL) and `Answer: <n>` — else the direct `Answer: <n>`.
    pub fn demonstrations(
        &self,
        data: &ToolUseData,
        seed: u64,
    ) -> Result<Vec<SftExample>, TrainerError> {
        let renderer = PromptRenderer::new(&self.train.data);
        let end_ids = crate::end_token_ids(&data.tokenizer);
        let im_end = data.tokenizer.special_id("<|im_end|>")?;
        let codec = ChatCodec {
            tokenizer: &data.tokenizer,
            end_ids: &end_ids,
            enable_thinking: renderer.enable_thinking(),
        };
        let calculator = rl_env::tools::Calculator::default();
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (0x7001_u64 << 32));
        let mut out = Vec::with_capacity(data.train.len());
        for p in &data.train.prompts {
            let prompt = renderer.render(p, &data.tokenizer)?;
            let answer = data.tokenizer.encode(&format!("Answer: {}", p.answer))?;
            let PromptText::Text(problem) = &p.text else {
                return Err(TrainerError::Config {
                    field: "task".into(),
                    message: "tool demonstrations need plain-text problems".into(),
                });
            };
            if rng.random::<f64>() < self.tool_demo_rate {
                let mut args = serde_json::Map::new();
                args.insert("expression".into(), problem.clone().into());
                let result = calculator
                    .evaluate(problem)
                    .map_err(|m| TrainerError::Config {
                        field: "task".into(),
                        message: format!("the calculator cannot evaluate `{problem}`: {m}"),
                    })?;
                let mut call = data
                    .tokenizer
                    .encode(&render_tool_call("calculator", &args))?;
                call.push(im_end);
                let obs = codec.observation_ids(&[Message::tool(result)])?;
                let mut final_turn = answer;
                final_turn.push(im_end);
                let mask = [
                    vec![true; call.len()],
                    vec![false; obs.len()],
                    vec![true; final_turn.len()],
                ]
                .concat();
                out.push(SftExample {
                    prompt,
                    response: [call, obs, final_turn].concat(),
                    loss_mask: Some(mask),
                });
            } else {
                let mut response = answer;
                response.push(im_end);
                out.push(SftExample {
                    prompt,
                    response,
                    loss_mask: None,
                });
            }
        }
        Ok(out)
    }

    /// A seeded random model, warm-started on [`ToolUseDemo::demonstrations`].
    pub fn warm_start<B: AutodiffBackend>(
        &self,
        data: &ToolUseData,
        seed: u64,
        device: &B::Device,
        on_step: impl FnMut(usize, f64),
    ) -> Result<CausalLm<B>, TrainerError> {
        let model: CausalLm<B> = data.model.init_seeded(seed, device)?;
        let examples = self.demonstrations(data, seed)?;
        let sft = SftConfig { seed, ..self.sft };
        crate::supervised_warm_start(model, &examples, &sft, device, on_step)
    }
}

/// A prompt of the task (for tests and examples): `problem` with its answer.
pub fn prompt(id: u64, problem: &str, answer: &str, tier: &str) -> Prompt {
    Prompt {
        id,
        text: PromptText::Text(problem.into()),
        answer: answer.into(),
        tier: Some(tier.into()),
    }
}
