//! Models that score instead of predicting the next token: a decoder of any family with a linear
//! `score` head on its final (normed) hidden states, as HF builds them.
//!
//! * **Reward models**: `*ForSequenceClassification` (`LlamaForSequenceClassification`,
//!   `Qwen2…`, `Qwen3…`, `Gemma3TextForSequenceClassification`): `score` is `[num_labels, H]`
//!   without a bias, and a sequence's score is the head's output at its last real token.
//! * **Value models**: `*ForTokenClassification` (verl's critic is
//!   `AutoModelForTokenClassification` with one label): a score at every position, `score` with a
//!   bias unless the config says `token_classification_bias = false`.
//!
//! The body is the decoder of [`CausalLm`], built without its LM head. Tests: equal to
//! transformers on tiny fixtures of each family (`tests/score_models.rs`, made by
//! `tools/gen_score_fixtures.py`).

use std::path::Path;

use burn::module::Module;
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};
use serde_json::Value;

use super::config::{invalid, line_of};
use super::layers::Linear;
use super::mask::AttentionMask;
use super::weights::{FileSource, check_body_and_heads, push_linear, write_hf_folder};
use super::{CausalLm, ModelConfig};
use crate::error::ModelError;
use crate::safetensors_io::{SaveDtype, WeightFiles};

/// What a score model's head reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScoreKind {
    /// `*ForSequenceClassification`: one score per sequence, at its last real token.
    Sequence,
    /// `*ForTokenClassification`: a score at every position.
    Token,
}

/// A decoder with a `score` head instead of an LM head (see the module documentation).
#[derive(Module, Debug)]
pub struct ScoreModel<B: Backend> {
    /// The decoder (HF `model.*`); its LM head is never used and is not loaded.
    pub body: CausalLm<B>,
    /// HF `score`: `[num_labels, H]`, with a `[num_labels]` bias for token classification
    /// unless the config turns it off.
    pub score: Linear<B>,
    #[module(skip)]
    kind: ScoreKind,
    /// HF `pad_token_id`, written back on save (transformers' sequence classifiers need it to
    /// pool a padded batch).
    #[module(skip)]
    pad_token_id: Option<u32>,
}

/// The head fields of a classification `config.json`.
struct HeadConfig {
    kind: ScoreKind,
    num_labels: usize,
    bias: bool,
    pad_token_id: Option<u32>,
}

impl HeadConfig {
    fn parse(map: &serde_json::Map<String, Value>) -> Result<Self, ModelError> {
        let arch = map.get("architectures");
        let name = arch
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = if name.ends_with("ForSequenceClassification") {
            ScoreKind::Sequence
        } else if name.ends_with("ForTokenClassification") {
            ScoreKind::Token
        } else {
            return Err(invalid(
                "architectures",
                arch.unwrap_or(&Value::Null),
                "a list starting with a *ForSequenceClassification (reward model) or \
                 *ForTokenClassification (value model) class of a supported family",
            ));
        };
        // transformers writes `id2label` (num_labels is derived from it); its default is 2.
        let num_labels = match (map.get("num_labels"), map.get("id2label")) {
            (Some(v), _) => v
                .as_u64()
                .filter(|&n| n >= 1)
                .ok_or_else(|| invalid("num_labels", v, "an integer >= 1"))?
                as usize,
            (None, Some(v)) => v
                .as_object()
                .map(|m| m.len())
                .filter(|&n| n >= 1)
                .ok_or_else(|| invalid("id2label", v, "an object with at least one label"))?,
            (None, None) => 2,
        };
        let bias = match map.get("token_classification_bias") {
            None => kind == ScoreKind::Token,
            Some(v) => {
                let b = v
                    .as_bool()
                    .ok_or_else(|| invalid("token_classification_bias", v, "true or false"))?;
                b && kind == ScoreKind::Token
            }
        };
        let pad_token_id = match map.get("pad_token_id") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .and_then(|p| u32::try_from(p).ok())
                    .ok_or_else(|| invalid("pad_token_id", v, "a token id or null"))?,
            ),
        };
        Ok(Self {
            kind,
            num_labels,
            bias,
            pad_token_id,
        })
    }
}

impl<B: Backend> ScoreModel<B> {
    /// Loads an HF checkpoint folder (`config.json` + `model.safetensors` or an index with
    /// shards) of a `*ForSequenceClassification` or `*ForTokenClassification` model. Every tensor
    /// is checked by name, shape and dtype as for [`CausalLm::load`]; a bad head field names the
    /// file, the line and the valid values.
    pub fn load(path: impl AsRef<Path>, device: &B::Device) -> Result<Self, ModelError> {
        let path = path.as_ref();
        if !path.is_dir() {
            return Err(ModelError::InvalidInput(format!(
                "{}: a score model is read from an HF checkpoint folder (config.json and \
                 safetensors files)",
                path.display()
            )));
        }
        let config_path = path.join("config.json");
        let (text, value) = crate::json_file::read(&config_path)?;
        let in_file = |e: ModelError| e.in_file(&config_path, |f| line_of(&text, f));
        let map = value
            .as_object()
            .ok_or_else(|| in_file(invalid("(root)", &value, "a JSON object")))?;
        let head = HeadConfig::parse(map).map_err(in_file)?;
        let config = ModelConfig::from_json_value(&value).map_err(in_file)?;
        let h = config.hidden_size;
        let mut required = vec![("score.weight".to_string(), vec![head.num_labels, h])];
        if head.bias {
            required.push(("score.bias".to_string(), vec![head.num_labels]));
        }
        let files = WeightFiles::open(path)?;
        check_body_and_heads(&config, &config_path, &files, &required, &[])?;
        // The body without an LM head: built as a tied model, whose head is the embedding and
        // is never computed here.
        let mut body_config = config.clone();
        body_config.tie_word_embeddings = true;
        let mut body = CausalLm::build(body_config, &mut FileSource(&files), device)?;
        body.config.tie_word_embeddings = config.tie_word_embeddings;
        let weight = files.read_f32("score.weight")?;
        let bias = if head.bias {
            Some(files.read_f32("score.bias")?)
        } else {
            None
        };
        Ok(Self {
            body,
            score: Linear::from_values(weight, [head.num_labels, h], bias, device),
            kind: head.kind,
            pad_token_id: head.pad_token_id,
        })
    }

    /// A score model on `lm`'s decoder (its LM head dropped) with a new head of `num_labels`
    /// outputs drawn as transformers initialises one: weights normal(0, `initializer_range`),
    /// seeded (ChaCha8), and a zero bias for a token classifier. How verl starts a critic from
    /// the policy and TRL a reward model from a causal LM.
    pub fn from_causal_lm(
        lm: CausalLm<B>,
        kind: ScoreKind,
        num_labels: usize,
        pad_token_id: Option<u32>,
        seed: u64,
    ) -> Result<Self, ModelError> {
        if num_labels == 0 {
            return Err(ModelError::InvalidInput(
                "a score head needs at least one label".to_string(),
            ));
        }
        let mut body = lm.merged();
        body.lm_head = None;
        let h = body.config.hidden_size;
        let std = body.config.initializer_range;
        let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(seed);
        let mut weight = vec![0.0f32; num_labels * h];
        super::weights::fill_normals(&mut rng, std, &mut weight);
        let bias = (kind == ScoreKind::Token).then(|| vec![0.0f32; num_labels]);
        let device = body.device();
        Ok(Self {
            body,
            score: Linear::from_values(weight, [num_labels, h], bias, &device),
            kind,
            pad_token_id,
        })
    }

    /// Saves `config.json` + `model.safetensors` (f32) in HF layout: the family's
    /// `*ForSequenceClassification` or `*ForTokenClassification`, which transformers'
    /// `AutoModelFor{Sequence,Token}Classification` loads to the same scores.
    pub fn save(&self, dir: impl AsRef<Path>) -> Result<(), ModelError> {
        let mut json = self.body.hf_config(SaveDtype::F32);
        let labels = self.num_labels();
        let class = match self.kind {
            ScoreKind::Sequence => "ForSequenceClassification",
            ScoreKind::Token => "ForTokenClassification",
        };
        if let Some(map) = json.as_object_mut() {
            let prefix = self.body.config.family.classifier_prefix();
            map.insert(
                "architectures".into(),
                serde_json::json!([format!("{prefix}{class}")]),
            );
            let id2label: serde_json::Map<String, Value> = (0..labels)
                .map(|i| (i.to_string(), Value::from(format!("LABEL_{i}"))))
                .collect();
            let label2id: serde_json::Map<String, Value> = (0..labels)
                .map(|i| (format!("LABEL_{i}"), Value::from(i)))
                .collect();
            map.insert("id2label".into(), Value::Object(id2label));
            map.insert("label2id".into(), Value::Object(label2id));
            map.insert(
                "pad_token_id".into(),
                self.pad_token_id.map_or(Value::Null, Value::from),
            );
            if self.kind == ScoreKind::Token {
                map.insert(
                    "token_classification_bias".into(),
                    Value::Bool(self.score.bias.is_some()),
                );
            }
        }
        let mut tensors = self.body.hf_tensors()?;
        push_linear(&mut tensors, "score", &self.score)?;
        write_hf_folder(dir.as_ref(), &json, tensors, SaveDtype::F32, None)
    }

    /// Whether the head scores sequences (reward model) or tokens (value model).
    pub fn kind(&self) -> ScoreKind {
        self.kind
    }

    /// The number of scores per position (HF `num_labels`).
    pub fn num_labels(&self) -> usize {
        self.score.weight.val().dims()[0]
    }

    /// The head's output at every position, `[batch, seq, num_labels]`, in f32. `mask` marks the
    /// real tokens as in [`CausalLm::forward`]; padded positions hold values no caller should
    /// read.
    pub fn token_scores(
        &self,
        input_ids: Tensor<B, 2, Int>,
        mask: Option<&AttentionMask>,
    ) -> Result<Tensor<B, 3>, ModelError> {
        let [b, l] = input_ids.dims();
        let h = self.body.hidden_states(input_ids, mask, None)?;
        let hidden = self.body.config.hidden_size;
        let normed = self.body.norm.forward(h.reshape([b * l, hidden]));
        let scores = self
            .score
            .forward(normed)
            .cast(burn::tensor::FloatDType::F32);
        Ok(scores.reshape([b, l, self.num_labels()]))
    }

    /// One score vector per sequence, `[batch, num_labels]`: the head's output at the last real
    /// token of each right-padded row (`lengths[i]` real tokens, each ≥ 1), which is HF's
    /// pooling when no real token equals the pad id.
    pub fn sequence_scores(
        &self,
        input_ids: Tensor<B, 2, Int>,
        lengths: &[usize],
    ) -> Result<Tensor<B, 2>, ModelError> {
        let [b, l] = input_ids.dims();
        if lengths.len() != b {
            return Err(ModelError::InvalidInput(format!(
                "{} lengths for {b} rows",
                lengths.len()
            )));
        }
        if let Some(row) = lengths.iter().position(|&n| n == 0) {
            return Err(ModelError::InvalidInput(format!(
                "row {row} has no token to score"
            )));
        }
        let mask = AttentionMask::right_padded(lengths, l)?;
        let scores = self.token_scores(input_ids, Some(&mask))?;
        let labels = self.num_labels();
        let last: Vec<i64> = lengths
            .iter()
            .enumerate()
            .map(|(row, &n)| (row * l + n - 1) as i64)
            .collect();
        let device = scores.device();
        let index = Tensor::<B, 1, Int>::from_data(TensorData::new(last, [b]), &device);
        Ok(scores.reshape([b * l, labels]).select(0, index))
    }
}
