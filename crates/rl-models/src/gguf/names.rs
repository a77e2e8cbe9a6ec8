//! Tensor names: HF's (`model.layers.N.self_attn.q_proj.weight`) and llama.cpp's
//! (`blk.N.attn_q.weight`), both ways, per family: Gemma's four layer norms have names of their
//! own, and its `post_attention_layernorm` (after attention) is not Llama's (before the MLP,
//! llama.cpp's `ffn_norm`).

use crate::decoder::Family;

/// HF names of the parts of a decoder layer and their llama.cpp names (Llama, Qwen2, Qwen3).
const LAYER_PARTS: [(&str, &str); 11] = [
    ("input_layernorm", "attn_norm"),
    ("self_attn.q_proj", "attn_q"),
    ("self_attn.k_proj", "attn_k"),
    ("self_attn.v_proj", "attn_v"),
    ("self_attn.o_proj", "attn_output"),
    ("self_attn.q_norm", "attn_q_norm"),
    ("self_attn.k_norm", "attn_k_norm"),
    ("post_attention_layernorm", "ffn_norm"),
    ("mlp.gate_proj", "ffn_gate"),
    ("mlp.up_proj", "ffn_up"),
    ("mlp.down_proj", "ffn_down"),
];

/// Gemma 3's layer parts (llama.cpp's `LLM_ARCH_GEMMA3` tensors).
const GEMMA3_LAYER_PARTS: [(&str, &str); 13] = [
    ("input_layernorm", "attn_norm"),
    ("self_attn.q_proj", "attn_q"),
    ("self_attn.k_proj", "attn_k"),
    ("self_attn.v_proj", "attn_v"),
    ("self_attn.o_proj", "attn_output"),
    ("self_attn.q_norm", "attn_q_norm"),
    ("self_attn.k_norm", "attn_k_norm"),
    ("post_attention_layernorm", "post_attention_norm"),
    ("pre_feedforward_layernorm", "ffn_norm"),
    ("post_feedforward_layernorm", "post_ffw_norm"),
    ("mlp.gate_proj", "ffn_gate"),
    ("mlp.up_proj", "ffn_up"),
    ("mlp.down_proj", "ffn_down"),
];

/// HF names of the tensors outside the layers and their llama.cpp names.
const GLOBAL: [(&str, &str); 3] = [
    ("model.embed_tokens.weight", "token_embd.weight"),
    ("model.norm.weight", "output_norm.weight"),
    ("lm_head.weight", "output.weight"),
];

fn layer_parts(family: Family) -> &'static [(&'static str, &'static str)] {
    match family {
        Family::Gemma3 => &GEMMA3_LAYER_PARTS,
        _ => &LAYER_PARTS,
    }
}

/// llama.cpp's name of an HF tensor of `family` (`None` for a name outside its layout).
pub fn gguf_name(family: Family, hf: &str) -> Option<String> {
    if let Some((_, g)) = GLOBAL.iter().find(|(h, _)| *h == hf) {
        return Some(g.to_string());
    }
    let rest = hf.strip_prefix("model.layers.")?;
    let (n, part) = rest.split_once('.')?;
    n.parse::<usize>().ok()?;
    let (module, kind) = part.rsplit_once('.')?;
    if kind != "weight" && kind != "bias" {
        return None;
    }
    let (_, short) = layer_parts(family).iter().find(|(h, _)| *h == module)?;
    Some(format!("blk.{n}.{short}.{kind}"))
}

/// The HF name of a llama.cpp tensor of `family` (`None` for a name outside its layout, such as
/// `rope_freqs.weight`).
pub fn hf_name(family: Family, gguf: &str) -> Option<String> {
    if let Some((h, _)) = GLOBAL.iter().find(|(_, g)| *g == gguf) {
        return Some(h.to_string());
    }
    let rest = gguf.strip_prefix("blk.")?;
    let (n, part) = rest.split_once('.')?;
    n.parse::<usize>().ok()?;
    let (short, kind) = part.rsplit_once('.')?;
    if kind != "weight" && kind != "bias" {
        return None;
    }
    let (module, _) = layer_parts(family).iter().find(|(_, g)| *g == short)?;
    Some(format!("model.layers.{n}.{module}.{kind}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names llama.cpp's `gguf-py/gguf/tensor_mapping.py` lists for the Llama/Qwen
    /// architectures (MODEL_TENSOR.ATTN_Q → "blk.{bid}.attn_q", …).
    #[test]
    fn names_map_both_ways() {
        for (hf, gguf) in [
            ("model.embed_tokens.weight", "token_embd.weight"),
            ("model.norm.weight", "output_norm.weight"),
            ("lm_head.weight", "output.weight"),
            (
                "model.layers.3.self_attn.k_norm.weight",
                "blk.3.attn_k_norm.weight",
            ),
            (
                "model.layers.0.post_attention_layernorm.weight",
                "blk.0.ffn_norm.weight",
            ),
            (
                "model.layers.12.self_attn.q_proj.bias",
                "blk.12.attn_q.bias",
            ),
            (
                "model.layers.1.self_attn.o_proj.weight",
                "blk.1.attn_output.weight",
            ),
            (
                "model.layers.29.mlp.down_proj.weight",
                "blk.29.ffn_down.weight",
            ),
        ] {
            for family in [Family::Llama, Family::Qwen2, Family::Qwen3] {
                assert_eq!(gguf_name(family, hf).as_deref(), Some(gguf), "{hf}");
                assert_eq!(hf_name(family, gguf).as_deref(), Some(hf), "{gguf}");
            }
        }
        let llama = Family::Llama;
        assert!(gguf_name(llama, "model.layers.0.self_attn.rotary_emb.inv_freq").is_none());
        assert!(gguf_name(llama, "model.layers.x.mlp.up_proj.weight").is_none());
        assert!(hf_name(llama, "rope_freqs.weight").is_none());
        assert!(hf_name(llama, "blk.0.attn_q.scale").is_none());
        assert!(gguf_name(llama, "model.layers.0.pre_feedforward_layernorm.weight").is_none());
    }

    /// Gemma 3's norms as the real gemma-3-270m GGUF names them (read with the `gguf` package:
    /// `blk.0.attn_norm`, `post_attention_norm`, `ffn_norm`, `post_ffw_norm`, `attn_q_norm`).
    #[test]
    fn gemma3_norms_map_both_ways() {
        let g = Family::Gemma3;
        for (hf, gguf) in [
            (
                "model.layers.0.input_layernorm.weight",
                "blk.0.attn_norm.weight",
            ),
            (
                "model.layers.0.post_attention_layernorm.weight",
                "blk.0.post_attention_norm.weight",
            ),
            (
                "model.layers.0.pre_feedforward_layernorm.weight",
                "blk.0.ffn_norm.weight",
            ),
            (
                "model.layers.17.post_feedforward_layernorm.weight",
                "blk.17.post_ffw_norm.weight",
            ),
            (
                "model.layers.5.self_attn.q_norm.weight",
                "blk.5.attn_q_norm.weight",
            ),
            ("model.norm.weight", "output_norm.weight"),
        ] {
            assert_eq!(gguf_name(g, hf).as_deref(), Some(gguf), "{hf}");
            assert_eq!(hf_name(g, gguf).as_deref(), Some(hf), "{gguf}");
        }
    }
}
