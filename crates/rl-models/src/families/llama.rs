//! Llama (`LlamaForCausalLM`, HF `modeling_llama.py`; Llama 2 and 3, SmolLM, TinyLlama …): the
//! shared decoder without q/k norms, with optional `llama3` RoPE scaling and optional biases on
//! all four attention projections (`attention_bias`).
//!
//! `config.json` defaults are those of transformers' `LlamaConfig`:
//!
//! | field | when absent |
//! |---|---|
//! | `head_dim` | `hidden_size / num_attention_heads` |
//! | `num_key_value_heads` | `num_attention_heads` (also when `null`) |
//! | `rope_theta` | 10000 |
//! | `rms_norm_eps` | 1e-6 |
//! | `max_position_embeddings` | 2048 |
//! | `tie_word_embeddings` | false |
//! | `attention_bias` | false |
//! | `bos_token_id`, `eos_token_id` | 1, 2 (`null` means none) |
//!
//! `vocab_size`, `hidden_size`, `intermediate_size`, `num_hidden_layers` and
//! `num_attention_heads` are required. RoPE scaling of type `llama3` is computed (without
//! `original_max_position_embeddings`, it takes `max_position_embeddings`, as HF does)
//! ([`crate::decoder::RopeScaling`]); any other type is refused by name, as are `mlp_bias: true`,
//! `hidden_act` other than `silu`, attention dropout and sliding windows. `pretraining_tp` only
//! splits HF's matrix products into slices (the same function up to float summation order) and
//! is ignored.

use serde_json::{Map, Value, json};

use super::common::check_common;
use crate::decoder::config::Fields;
use crate::decoder::{Family, ModelConfig};
use crate::error::ModelError;

pub(crate) fn parse_hf(f: &Fields) -> Result<ModelConfig, ModelError> {
    check_common(f)?;
    f.only(
        "mlp_bias",
        &json!(false),
        "false (MLP biases are not implemented)",
    )?;
    let hidden_size = f.required("hidden_size")?;
    let num_attention_heads = f.required("num_attention_heads")?;
    let attention_bias = f.bool_or("attention_bias", false)?;
    let max_position_embeddings = f.positive_or("max_position_embeddings", 2048)?;
    let (rope_theta, rope_scaling) = f.rope(10_000.0, true, max_position_embeddings)?;
    Ok(ModelConfig {
        family: Family::Llama,
        vocab_size: f.required("vocab_size")?,
        hidden_size,
        intermediate_size: f.required("intermediate_size")?,
        num_hidden_layers: f.required("num_hidden_layers")?,
        num_attention_heads,
        num_key_value_heads: f.kv_heads(num_attention_heads, num_attention_heads)?,
        head_dim: f.positive_or("head_dim", hidden_size / num_attention_heads)?,
        max_position_embeddings,
        rms_norm_eps: f.number_or("rms_norm_eps", 1e-6)?,
        rope_theta,
        rope_scaling,
        qkv_bias: attention_bias,
        o_bias: attention_bias,
        tie_word_embeddings: f.bool_or("tie_word_embeddings", false)?,
        bos_token_id: f.bos_or(Some(1))?,
        eos_token_id: f.eos_or(Some(2))?,
        torch_dtype: f.dtype()?,
        initializer_range: f.number_or("initializer_range", 0.02)?,
        sliding_window: None,
        query_pre_attn_scalar: None,
    })
}

pub(crate) fn extend_hf(c: &ModelConfig, map: &mut Map<String, Value>) {
    map.insert("attention_bias".into(), json!(c.qkv_bias));
    map.insert("mlp_bias".into(), json!(false));
    map.insert("pretraining_tp".into(), json!(1));
}

/// llama.cpp's row order of the q and k projections (weights `[heads·hd, cols]`, or biases with
/// `cols = 1`) from HF's: its converter (`convert_hf_to_gguf.py`, `LlamaModel.permute`) views the
/// rows of each head as `(2, hd/2)` and swaps the two axes, so HF row `h·hd + s·hd/2 + j` (the
/// rotate-half layout) becomes row `h·hd + 2j + s` (interleaved pairs). `heads` is the number
/// of query heads for q and of key/value heads for k. Qwen2 and Qwen3 files are not permuted.
pub(crate) fn rows_to_gguf(values: &[f32], heads: usize, cols: usize) -> Vec<f32> {
    permute_rows(values, heads, cols, |hd, s, j| (s * hd / 2 + j, 2 * j + s))
}

/// HF's row order of llama.cpp's permuted q and k rows (the inverse of [`rows_to_gguf`]).
pub(crate) fn rows_from_gguf(values: &[f32], heads: usize, cols: usize) -> Vec<f32> {
    permute_rows(values, heads, cols, |hd, s, j| (2 * j + s, s * hd / 2 + j))
}

/// Copies row `h·hd + from` to row `h·hd + to` for `(from, to) = map(hd, s, j)` over
/// `s < 2`, `j < hd/2` in every head. The caller guarantees `values.len() = heads·hd·cols`
/// with `hd` even (the model config's invariants); a mismatch returns the rows unchanged.
fn permute_rows(
    values: &[f32],
    heads: usize,
    cols: usize,
    map: impl Fn(usize, usize, usize) -> (usize, usize),
) -> Vec<f32> {
    let rows = values.len() / cols.max(1);
    if heads == 0 || cols == 0 || !rows.is_multiple_of(heads) || !(rows / heads).is_multiple_of(2) {
        return values.to_vec();
    }
    let hd = rows / heads;
    let mut out = vec![0.0f32; values.len()];
    for h in 0..heads {
        for s in 0..2 {
            for j in 0..hd / 2 {
                let (from, to) = map(hd, s, j);
                let src = (h * hd + from) * cols;
                let dst = (h * hd + to) * cols;
                out[dst..dst + cols].copy_from_slice(&values[src..src + cols]);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The permutation written out for 2 heads of hd = 4 (rows r0..r7, one column): llama.cpp's
    /// reshape (2, 2, 2) → swap axes 1, 2 turns head rows [a0 a1 b0 b1] (halves a, b) into
    /// [a0 b0 a1 b1].
    #[test]
    fn llama_rows_are_interleaved_and_back() {
        let hf: Vec<f32> = (0..8).map(|x| x as f32).collect();
        let gguf = rows_to_gguf(&hf, 2, 1);
        assert_eq!(gguf, vec![0.0, 2.0, 1.0, 3.0, 4.0, 6.0, 5.0, 7.0]);
        assert_eq!(rows_from_gguf(&gguf, 2, 1), hf);
        // whole rows move: 3 columns
        let hf3: Vec<f32> = (0..24).map(|x| x as f32).collect();
        let back = rows_from_gguf(&rows_to_gguf(&hf3, 2, 3), 2, 3);
        assert_eq!(back, hf3);
        assert_eq!(&rows_to_gguf(&hf3, 2, 3)[3..6], &[6.0, 7.0, 8.0]);
    }
}
