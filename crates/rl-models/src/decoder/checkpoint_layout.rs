//! The tensors a config's checkpoint holds: HF names and shapes, in checkpoint order.

use super::ModelConfig;

/// HF tensor names and shapes (`[out, in]` for linears) of a config, in checkpoint order: what
/// its family has (q/k norms in Qwen3, biases where the config has them).
///
/// The list grows with `num_hidden_layers`; callers with an untrusted config check it first
/// ([`ModelConfig::validate`] bounds it).
pub(crate) fn expected_tensors(config: &ModelConfig) -> Vec<(String, Vec<usize>)> {
    let h = config.hidden_size;
    let q = config.num_attention_heads * config.head_dim;
    let kv = config.num_key_value_heads * config.head_dim;
    let hd = config.head_dim;
    let i = config.intermediate_size;
    let mut out = vec![(
        "model.embed_tokens.weight".to_string(),
        vec![config.vocab_size, h],
    )];
    for n in 0..config.num_hidden_layers {
        let p = format!("model.layers.{n}");
        out.push((format!("{p}.input_layernorm.weight"), vec![h]));
        for (name, rows) in [("q", q), ("k", kv), ("v", kv)] {
            out.push((format!("{p}.self_attn.{name}_proj.weight"), vec![rows, h]));
            if config.qkv_bias {
                out.push((format!("{p}.self_attn.{name}_proj.bias"), vec![rows]));
            }
        }
        out.push((format!("{p}.self_attn.o_proj.weight"), vec![h, q]));
        if config.o_bias {
            out.push((format!("{p}.self_attn.o_proj.bias"), vec![h]));
        }
        if config.qk_norm() {
            out.push((format!("{p}.self_attn.q_norm.weight"), vec![hd]));
            out.push((format!("{p}.self_attn.k_norm.weight"), vec![hd]));
        }
        out.push((format!("{p}.post_attention_layernorm.weight"), vec![h]));
        if config.family.sandwich_norms() {
            out.push((format!("{p}.pre_feedforward_layernorm.weight"), vec![h]));
            out.push((format!("{p}.post_feedforward_layernorm.weight"), vec![h]));
        }
        out.extend([
            (format!("{p}.mlp.gate_proj.weight"), vec![i, h]),
            (format!("{p}.mlp.up_proj.weight"), vec![i, h]),
            (format!("{p}.mlp.down_proj.weight"), vec![h, i]),
        ]);
    }
    out.push(("model.norm.weight".to_string(), vec![h]));
    if !config.tie_word_embeddings {
        out.push(("lm_head.weight".to_string(), vec![config.vocab_size, h]));
    }
    out
}

/// Tensors per decoder layer in [`expected_tensors`].
pub(crate) fn tensors_per_layer(config: &ModelConfig) -> usize {
    9 + 2 * usize::from(config.family.sandwich_norms())
        + 3 * usize::from(config.qkv_bias)
        + usize::from(config.o_bias)
        + 2 * usize::from(config.qk_norm())
}
