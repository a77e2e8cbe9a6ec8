//! The run's prompts: the training and held-out sets, rendered through the chat template once
//! and cached as token ids, and the end tokens that finish a response.

use std::sync::Arc;

use rl_models::Tokenizer;
use rl_rollout::AnswerLine;

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
    /// The answer line that ends a response, if `rollout.stop_after_line` asks for one.
    pub(crate) answer_line: Option<AnswerLine>,
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
        let answer_line = answer_line(config, &tokenizer)?;
        Ok(Self {
            rendered: vec![None; train.len()],
            tokenizer,
            train,
            eval,
            end_ids,
            answer_line,
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

/// The answer line that ends a response under `config` (`rollout.stop_after_line`): markers are
/// the ids whose text holds one of its strings, line ends the ids whose text holds a newline.
/// `None` when the list is empty; an error naming the field when no id holds a string.
pub fn answer_line(
    config: &TrainConfig,
    tokenizer: &Tokenizer,
) -> Result<Option<AnswerLine>, TrainerError> {
    let opens = &config.rollout.stop_after_line;
    if opens.is_empty() {
        return Ok(None);
    }
    if let Some(s) = opens.iter().find(|s| s.is_empty() || s.contains('\n')) {
        return Err(TrainerError::Config {
            field: "rollout.stop_after_line".into(),
            message: format!("{s:?}: each entry is the non-empty text that opens a line"),
        });
    }
    let mut line = AnswerLine::default();
    let mut found = vec![false; opens.len()];
    for id in 0..tokenizer.num_defined_ids() as u32 {
        let text = tokenizer.decode(&[id], false)?;
        let mut marker = false;
        for (f, s) in found.iter_mut().zip(opens) {
            if text.contains(s.as_str()) {
                *f = true;
                marker = true;
            }
        }
        if marker {
            line.markers.push(id);
        }
        if text.contains('\n') {
            line.line_ends.push(id);
        }
    }
    if let Some((s, _)) = opens.iter().zip(&found).find(|(_, f)| !**f) {
        return Err(TrainerError::Config {
            field: "rollout.stop_after_line".into(),
            message: format!(
                "no token of the vocabulary holds {s:?} (it must lie within one token)"
            ),
        });
    }
    if line.line_ends.is_empty() {
        return Err(TrainerError::Config {
            field: "rollout.stop_after_line".into(),
            message: "no token of the vocabulary holds a newline, so no line could end".into(),
        });
    }
    Ok(Some(line))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(stop_after_line: &[&str]) -> TrainConfig {
        let mut c = TrainConfig::default();
        c.rollout.stop_after_line = stop_after_line.iter().map(|s| s.to_string()).collect();
        c
    }

    #[test]
    fn the_answer_line_comes_from_the_tokens_texts() {
        // Ids in order of first appearance: a 0, # 1, 2 2, \n 3, then the specials.
        let tok = Tokenizer::char_level("a#2\n", &["##", "#\n"]).unwrap();
        let (hash2, hash_nl) = (
            tok.token_to_id("##").unwrap(),
            tok.token_to_id("#\n").unwrap(),
        );
        assert_eq!(answer_line(&config(&[]), &tok).unwrap(), None);
        let line = answer_line(&config(&["##"]), &tok).unwrap().unwrap();
        assert_eq!(line.markers, vec![hash2]);
        assert_eq!(line.line_ends, vec![3, hash_nl]);
        let line = answer_line(&config(&["#"]), &tok).unwrap().unwrap();
        assert_eq!(line.markers, vec![1, hash2, hash_nl]);
        for bad in [&["###"][..], &[""], &["#\n"], &["##", "b"]] {
            match answer_line(&config(bad), &tok) {
                Err(TrainerError::Config { field, .. }) => {
                    assert_eq!(field, "rollout.stop_after_line", "{bad:?}")
                }
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }
}
