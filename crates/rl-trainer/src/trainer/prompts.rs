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
        let end_ids = end_token_ids(&tokenizer);
        if end_ids.is_empty() {
            return Err(TrainerError::Config {
                field: "model.tokenizer".into(),
                message: "the tokenizer has neither <|im_end|> nor <|endoftext|>; responses could never end".into(),
            });
        }
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

/// Token ids that end a response: `<|im_end|>` and `<|endoftext|>` where the tokenizer has them.
pub fn end_token_ids(tokenizer: &Tokenizer) -> Vec<u32> {
    ["<|im_end|>", "<|endoftext|>"]
        .iter()
        .filter_map(|t| tokenizer.token_to_id(t))
        .collect()
}
