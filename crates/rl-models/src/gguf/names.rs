//! Tensor names: HF's (`model.layers.N.self_attn.q_proj.weight`) and llama.cpp's
//! (`blk.N.attn_q.weight`), both ways.

/// HF names of the parts of a decoder layer and their llama.cpp names.
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

/// HF names of the tensors outside the layers and their llama.cpp names.
const GLOBAL: [(&str, &str); 3] = [
    ("model.embed_tokens.weight", "token_embd.weight"),
    ("model.norm.weight", "output_norm.weight"),
    ("lm_head.weight", "output.weight"),
];

/// llama.cpp's name of an HF tensor (`None` for a name outside the decoder's layout).
pub fn gguf_name(hf: &str) -> Option<String> {
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
    let (_, short) = LAYER_PARTS.iter().find(|(h, _)| *h == module)?;
    Some(format!("blk.{n}.{short}.{kind}"))
}

/// The HF name of a llama.cpp tensor (`None` for a name outside the decoder's layout, such as
/// `rope_freqs.weight`).
pub fn hf_name(gguf: &str) -> Option<String> {
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
    let (module, _) = LAYER_PARTS.iter().find(|(_, g)| *g == short)?;
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
            assert_eq!(gguf_name(hf).as_deref(), Some(gguf), "{hf}");
            assert_eq!(hf_name(gguf).as_deref(), Some(hf), "{gguf}");
        }
        assert!(gguf_name("model.layers.0.self_attn.rotary_emb.inv_freq").is_none());
        assert!(gguf_name("model.layers.x.mlp.up_proj.weight").is_none());
        assert!(hf_name("rope_freqs.weight").is_none());
        assert!(hf_name("blk.0.attn_q.scale").is_none());
    }
}
