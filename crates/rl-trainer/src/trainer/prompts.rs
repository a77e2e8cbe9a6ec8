//! The run's prompts: the training and held-out sets, rendered through the chat template once
//! and cached as token ids, and the end tokens that finish a response.

use std::sync::Arc;

use rl_models::Tokenizer;

use crate::TrainerError;
use crate::config::TrainConfig;
use crate::data::{Dataset, PromptRenderer};
use crate::multi_turn::ChatCodec;
use crate::scoring::RoundPrompt;

/// The training and held-out prompts with their rendered ids.
pub(crate) struct Prompts {
    /// The tokenizer that renders prompts and decodes responses.
    pub(crate) tokenizer: Tokenizer,
    /// Training prompts.
    pub(crate) train: Dataset,
    /// Held-out prompts.
    pub(crate) eval: Option<Dataset>,
    /// Ids that end a response ([`end_token_ids`]).
    pub(crate) end_ids: Vec<u32>,
    renderer: PromptRenderer,
    /// Training prompts rendered so far (on first use).
    rendered: Vec<Option<Arc<Vec<u32>>>>,
}

impl Prompts {
    /// Checks that the held-out set renders and that the tokenizer has an end token.
    pub(crate) fn new(
        config: &TrainConfig,
        tokenizer: Tokenizer,
        train: Dataset,
        eval: Option<Dataset>,
        tools: Vec<String>,
    ) -> Result<Self, TrainerError> {
        let renderer = PromptRenderer::new(&config.data).with_tools(tools);
        for p in eval.iter().flat_map(|d| &d.prompts) {
            renderer.render(p, &tokenizer)?;
        }
        let end_ids = stop_ids(config, &tokenizer)?;
        Ok(Self {
            rendered: vec![None; train.len()],
            tokenizer,
            train,
            eval,
            end_ids,
            renderer,
        })
    }

    /// The rendered ids of training prompt `index` (rendered on first use).
    pub(crate) fn ids(&mut self, index: usize) -> Result<Arc<Vec<u32>>, TrainerError> {
        if let Some(ids) = &self.rendered[index] {
            return Ok(ids.clone());
        }
        let ids = Arc::new(
            self.renderer
                .render(&self.train.prompts[index], &self.tokenizer)?,
        );
        self.rendered[index] = Some(ids.clone());
        Ok(ids)
    }

    /// How prompts are rendered (template, chat template).
    pub(crate) fn renderer(&self) -> &PromptRenderer {
        &self.renderer
    }

    /// Decodes turns and renders observations of multi-turn episodes with this tokenizer and
    /// the chat template's settings.
    pub(crate) fn codec(&self) -> ChatCodec<'_> {
        ChatCodec {
            tokenizer: &self.tokenizer,
            end_ids: &self.end_ids,
            enable_thinking: self.renderer.enable_thinking(),
        }
    }

    /// Renders the training prompts `idx` (so that [`Prompts::round`] can borrow them).
    pub(crate) fn render(&mut self, idx: &[usize]) -> Result<Vec<Arc<Vec<u32>>>, TrainerError> {
        idx.iter().map(|&i| self.ids(i)).collect()
    }

    /// The prompts of a round from their data-set indices and rendered ids.
    pub(crate) fn round<'a>(
        &'a self,
        idx: &[usize],
        rendered: Vec<Arc<Vec<u32>>>,
    ) -> Vec<RoundPrompt<'a>> {
        idx.iter()
            .zip(rendered)
            .map(|(&i, ids)| RoundPrompt {
                index: i,
                ids,
                answer: &self.train.prompts[i].answer,
                tier: self.train.prompts[i].tier.clone(),
            })
            .collect()
    }
}

/// Token ids that end a response: `<|im_end|>` and `<|endoftext|>` (Qwen, SmolLM2), `<eos>`
/// and `<end_of_turn>` (Gemma), `</s>` (Llama 2, Mistral), where the tokenizer has them.
pub fn end_token_ids(tokenizer: &Tokenizer) -> Vec<u32> {
    [
        "<|im_end|>",
        "<|endoftext|>",
        "<eos>",
        "<end_of_turn>",
        "</s>",
    ]
    .iter()
    .filter_map(|t| tokenizer.token_to_id(t))
    .collect()
}

/// The ids that end a response under `config`: [`end_token_ids`] and each `rollout.stop` token.
/// Errors name `rollout.stop` for a stop string that is not one token of the vocabulary, and
/// `model.tokenizer` when nothing could end a response.
pub fn stop_ids(config: &TrainConfig, tokenizer: &Tokenizer) -> Result<Vec<u32>, TrainerError> {
    let mut ids = end_token_ids(tokenizer);
    for s in &config.rollout.stop {
        let id = tokenizer
            .token_to_id(s)
            .ok_or_else(|| TrainerError::Config {
                field: "rollout.stop".into(),
                message: format!(
                    "{s:?} is not one token of the vocabulary (each stop is a single token, \
                     written as the tokenizer spells it)"
                ),
            })?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    if ids.is_empty() {
        return Err(TrainerError::Config {
            field: "model.tokenizer".into(),
            message: "the tokenizer has none of <|im_end|>, <|endoftext|>, <eos>, <end_of_turn>, \
                      </s> and rollout.stop is empty; responses could never end"
                .into(),
        });
    }
    Ok(ids)
}
