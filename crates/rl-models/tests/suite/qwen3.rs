// Backend-generic part of `qwen3_hf.rs`, included once per backend by `backend_suite!`, which
// defines `AD` (an autodiff backend), `B` (its inner backend), `dev()`, `TOL` (absolute tolerance
// on logits / log-probs), `GRAD_TOL` (relative tolerance on gradients) and `exact()` (whether a
// sample generated alone equals the same sample generated in a batch, bit for bit: not on GPUs,
// nor on a CPU with AVX-512, whose GEMM kernel depends on the product's row count).

fn load(model: &str) -> CausalLm<B> {
    CausalLm::<B>::load(fixtures().join(model), &dev()).unwrap()
}

#[test]
fn logits_match_hf() {
    for model in MODELS {
        let m = load(model);
        let r = Reference::load(model);
        for i in 0..r.num_seqs() {
            let (_, ids) = r.i64(&format!("seq{i}.ids"));
            let (shape, want) = r.f32(&format!("seq{i}.logits"));
            let logits = m
                .forward(int_tensor(&ids, [1, ids.len()], &dev()), None, None)
                .unwrap();
            assert_eq!(logits.dims(), [1, shape[0], shape[1]]);
            let d = max_abs_diff(&to_vec(logits), &want);
            eprintln!("{model} seq{i}: max |Δlogit| = {d:.2e}");
            assert!(d <= TOL, "{model} seq{i}: max |Δlogit| = {d}");
        }
    }
}

#[test]
fn token_logprobs_and_entropy_match_hf() {
    for model in MODELS {
        let m = load(model);
        let r = Reference::load(model);
        for i in 0..r.num_seqs() {
            let (_, ids) = r.i64(&format!("seq{i}.ids"));
            check_token_logprobs(&m, &ids, &r, i, model, TOL);
        }
    }
}

/// `token_logprobs` of the unpadded sequence `ids` (the fixture's sequence `i`) against
/// `want`'s `seq{i}.logprobs` and `seq{i}.entropy`, each within `tol`; `label` names the model
/// (and dtype) in messages.
fn check_token_logprobs(
    m: &CausalLm<B>,
    ids: &[i64],
    want: &Reference,
    i: usize,
    label: &str,
    tol: f32,
) {
    let out = m
        .token_logprobs(
            int_tensor(ids, [1, ids.len()], &dev()),
            None,
            EntropyMode::Detached,
        )
        .unwrap();
    for (what, got) in [
        ("logprobs", out.logprobs),
        ("entropy", out.entropy.unwrap()),
    ] {
        let (_, w) = want.f32(&format!("seq{i}.{what}"));
        let d = max_abs_diff(&to_vec(got), &w);
        eprintln!("{label} seq{i}: max |Δ{what}| = {d:.3e}");
        assert!(d <= tol, "{label} seq{i}: max |Δ{what}| = {d}");
    }
}

#[test]
fn padded_batches_equal_unpadded_runs() {
    for model in MODELS {
        let m = load(model);
        let r = Reference::load(model);
        for side in ["right", "left"] {
            let (shape, ids, mask) = mask_from(&r, side);
            let [b, t] = [shape[0], shape[1]];
            let logits = to_vec(
                m.forward(int_tensor(&ids, [b, t], &dev()), Some(&mask), None)
                    .unwrap(),
            );
            let (_, hf_padded) = r.f32(&format!("{side}.logits"));
            let lp = m
                .token_logprobs(
                    int_tensor(&ids, [b, t], &dev()),
                    Some(&mask),
                    EntropyMode::None,
                )
                .unwrap();
            let lp = to_vec(lp.logprobs);
            let vocab = m.config().vocab_size;
            for row in 0..b {
                let (_, alone) = r.f32(&format!("seq{row}.logits"));
                let (_, alone_lp) = r.f32(&format!("seq{row}.logprobs"));
                let len = alone.len() / vocab;
                let pad = t - len;
                let offset = if side == "left" { pad } else { 0 };
                for k in 0..len {
                    let p = offset + k;
                    let ours = &logits[(row * t + p) * vocab..(row * t + p + 1) * vocab];
                    let d = max_abs_diff(ours, &alone[k * vocab..(k + 1) * vocab]);
                    assert!(d <= TOL, "{model} {side} row {row} pos {k}: |Δ| = {d}");
                    let d = max_abs_diff(
                        ours,
                        &hf_padded[(row * t + p) * vocab..(row * t + p + 1) * vocab],
                    );
                    assert!(
                        d <= TOL,
                        "{model} {side} row {row} pos {k} vs HF padded: {d}"
                    );
                }
                for q in 0..t - 1 {
                    let got = lp[row * (t - 1) + q];
                    let real = mask.is_valid(row, q) && mask.is_valid(row, q + 1);
                    if real {
                        let want = alone_lp[q - offset];
                        assert!((got - want).abs() <= TOL, "{model} {side} lp {row},{q}");
                    } else {
                        assert_eq!(
                            got, 0.0,
                            "{model} {side}: padded position {row},{q} not zeroed"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn windowed_logprobs_match_hf() {
    // `token_logprobs_from` on HF's padded batches against HF's log-probs and entropies of each
    // sequence run alone: right padding with windows starting at different columns (1, 2, ..)
    // and as wide as the last start allows, left padding with the last `width` positions of
    // every row. Entries whose token or next token is padding are 0.
    for model in MODELS {
        let m = load(model);
        let r = Reference::load(model);
        for side in ["right", "left"] {
            let (shape, ids, mask) = mask_from(&r, side);
            let [b, t] = [shape[0], shape[1]];
            let lengths = mask.lengths();
            let (starts, width): (Vec<usize>, usize) = if side == "right" {
                ((1..=b).collect(), t - 1 - b)
            } else {
                let width = lengths.iter().min().unwrap() - 2;
                (vec![t - 1 - width; b], width)
            };
            let out = m
                .token_logprobs_from(
                    int_tensor(&ids, [b, t], &dev()),
                    Some(&mask),
                    &starts,
                    width,
                    EntropyMode::Detached,
                )
                .unwrap();
            assert_eq!(out.logprobs.dims(), [b, width]);
            let lp = to_vec(out.logprobs);
            let ent = to_vec(out.entropy.unwrap());
            let mut compared = 0;
            for row in 0..b {
                let (_, alone_lp) = r.f32(&format!("seq{row}.logprobs"));
                let (_, alone_ent) = r.f32(&format!("seq{row}.entropy"));
                let offset = if side == "left" { t - lengths[row] } else { 0 };
                for j in 0..width {
                    let q = starts[row] + j;
                    let (got, got_ent) = (lp[row * width + j], ent[row * width + j]);
                    if mask.is_valid(row, q) && mask.is_valid(row, q + 1) {
                        let (want, want_ent) = (alone_lp[q - offset], alone_ent[q - offset]);
                        assert!(
                            (got - want).abs() <= TOL && (got_ent - want_ent).abs() <= TOL,
                            "{model} {side} [{row}, {j}]: {got} vs {want}, H {got_ent} vs {want_ent}"
                        );
                        compared += 1;
                    } else {
                        assert_eq!((got, got_ent), (0.0, 0.0), "{model} {side} [{row}, {j}]");
                    }
                }
            }
            assert!(
                compared >= b * 3,
                "{model} {side}: only {compared} entries compared"
            );
        }
    }
}

#[test]
fn kv_cache_decoding_equals_full_forward() {
    for model in MODELS {
        let m = load(model);
        let r = Reference::load(model);
        let vocab = m.config().vocab_size;
        for i in 0..r.num_seqs() {
            let (_, ids) = r.i64(&format!("seq{i}.ids"));
            let (_, want) = r.f32(&format!("seq{i}.logits"));
            let n = ids.len();
            let mut cache = m.new_cache(1, n);
            // prompt of 3 tokens, then one chunk of 2, then one token at a time
            let mut pos = 0;
            let mut chunks = vec![3.min(n)];
            if n > 5 {
                chunks.push(2);
            }
            while chunks.iter().sum::<usize>() < n {
                chunks.push(1);
            }
            for c in chunks {
                let logits = m
                    .forward(
                        int_tensor(&ids[pos..pos + c], [1, c], &dev()),
                        None,
                        Some(&mut cache),
                    )
                    .unwrap();
                let got = to_vec(logits);
                let d = max_abs_diff(&got, &want[pos * vocab..(pos + c) * vocab]);
                assert!(
                    d <= TOL,
                    "{model} seq{i} positions {pos}..{}: |Δ| = {d}",
                    pos + c
                );
                pos += c;
            }
            assert_eq!(cache.len(), n);
            // one more token does not fit
            let err = m
                .forward(int_tensor(&[0], [1, 1], &dev()), None, Some(&mut cache))
                .unwrap_err();
            assert!(
                matches!(err, ModelError::CacheOverflow { capacity, needed } if capacity == n && needed == n + 1)
            );
        }
    }
}

#[test]
fn long_kv_cache_decoding_equals_full_forward() {
    // Past the cache's 64-position tail buffer (several flushes into the body), with a
    // left-padded batch: every decoding step against the full forward of the same tokens.
    let m = load("untied_f16_sharded");
    let vocab = m.config().vocab_size;
    let n = 150;
    let lengths = [n, n - 7];
    let ids: Vec<i64> = (0..2 * n).map(|i| ((i * 37 + 11) % vocab) as i64).collect();
    let mask = AttentionMask::left_padded(&lengths, n).unwrap();
    let full = to_vec(
        m.forward(int_tensor(&ids, [2, n], &dev()), Some(&mask), None)
            .unwrap(),
    );
    let mut cache = m.new_cache(2, n);
    let prompt = 10;
    let take = |from: usize, to: usize| -> Vec<i64> {
        (0..2)
            .flat_map(|r| ids[r * n + from..r * n + to].to_vec())
            .collect()
    };
    let head = AttentionMask::left_padded(&[prompt, prompt - 7], prompt).unwrap();
    let mut got = vec![Vec::new(); 2];
    let logits = to_vec(
        m.forward(
            int_tensor(&take(0, prompt), [2, prompt], &dev()),
            Some(&head),
            Some(&mut cache),
        )
        .unwrap(),
    );
    for r in 0..2 {
        got[r].extend_from_slice(&logits[r * prompt * vocab..(r + 1) * prompt * vocab]);
    }
    for p in prompt..n {
        let logits = to_vec(
            m.forward(
                int_tensor(&take(p, p + 1), [2, 1], &dev()),
                None,
                Some(&mut cache),
            )
            .unwrap(),
        );
        for r in 0..2 {
            got[r].extend_from_slice(&logits[r * vocab..(r + 1) * vocab]);
        }
    }
    for r in 0..2 {
        for p in (n - lengths[r])..n {
            let d = max_abs_diff(
                &got[r][p * vocab..(p + 1) * vocab],
                &full[(r * n + p) * vocab..(r * n + p + 1) * vocab],
            );
            assert!(d <= TOL, "row {r} position {p}: |Δ| = {d}");
        }
    }
}

#[test]
fn long_generation_logprobs_match_teacher_forcing() {
    // Generated log-probs are the model's own: equal to token_logprobs of prompt + generation,
    // across cache flushes and rows leaving the batch at different times.
    let m = load("tied_bf16");
    let prompts = vec![vec![5, 17, 33], vec![9, 2, 40, 41, 77, 3, 1], vec![100]];
    let cfg = GenerationConfig {
        max_new_tokens: 90,
        temperature: 1.0,
        seed: 7,
        stop_token_ids: vec![64],
        ..GenerationConfig::default()
    };
    let out = generate(&m, &prompts, &cfg).unwrap();
    for (p, g) in prompts.iter().zip(&out) {
        let full: Vec<i64> = p.iter().chain(&g.tokens).map(|&x| x as i64).collect();
        let lp = m
            .token_logprobs(
                int_tensor(&full, [1, full.len()], &dev()),
                None,
                EntropyMode::None,
            )
            .unwrap();
        let lp = to_vec(lp.logprobs);
        let d = max_abs_diff(&lp[p.len() - 1..], &g.logprobs);
        assert!(
            d <= TOL,
            "{p:?}: |Δlogprob| = {d} over {} tokens",
            g.tokens.len()
        );
        match g.finish_reason {
            FinishReason::Stop => assert_eq!(g.tokens.last(), Some(&64)),
            FinishReason::Length => assert_eq!(g.tokens.len(), 90),
            FinishReason::Eos => unreachable!("no eos configured"),
        }
    }
}

/// Our parameter gradients: from one backward's tape, or merged over the backward passes of a
/// memory plan (`WindowPass::backward`).
enum Grads {
    Tape(<AD as burn::tensor::backend::AutodiffBackend>::Gradients),
    Params(burn::optim::GradientsParams),
}

impl Grads {
    fn of<const D: usize>(&self, p: &burn::module::Param<Tensor<AD, D>>) -> Vec<f32> {
        match self {
            Grads::Tape(g) => to_vec(p.val().grad(g).expect("gradient")),
            Grads::Params(g) => to_vec(g.get::<B, D>(p.id).expect("gradient")),
        }
    }
}

/// `grad.<name>` of the fixture in HF layout, and ours.
fn hf_grad(m: &CausalLm<AD>, name: &str, grads: &Grads) -> Vec<f32> {
    let lin = |l: &rl_models::decoder::Linear<AD>| grads.of(&l.weight); // [out, in] as in HF
    let norm = |w: &rl_models::decoder::RmsNorm<AD>| grads.of(&w.weight);
    let bias = |l: &rl_models::decoder::Linear<AD>| grads.of(l.bias.as_ref().expect("bias"));
    if name == "model.embed_tokens.weight" {
        return grads.of(&m.embed_tokens.weight);
    }
    if name == "model.norm.weight" {
        return norm(&m.norm);
    }
    if name == "lm_head.weight" {
        return lin(m.lm_head.as_ref().expect("untied"));
    }
    let rest = name.strip_prefix("model.layers.").expect(name);
    let (n, field) = rest.split_once('.').unwrap();
    let layer = &m.layers[n.parse::<usize>().unwrap()];
    let a = &layer.self_attn;
    match field {
        "input_layernorm.weight" => norm(&layer.input_layernorm),
        "post_attention_layernorm.weight" => norm(&layer.post_attention_layernorm),
        "pre_feedforward_layernorm.weight" => {
            norm(layer.pre_feedforward_layernorm.as_ref().expect("sandwich"))
        }
        "post_feedforward_layernorm.weight" => {
            norm(layer.post_feedforward_layernorm.as_ref().expect("sandwich"))
        }
        "self_attn.q_proj.weight" => lin(&a.q_proj),
        "self_attn.k_proj.weight" => lin(&a.k_proj),
        "self_attn.v_proj.weight" => lin(&a.v_proj),
        "self_attn.o_proj.weight" => lin(&a.o_proj),
        "self_attn.q_proj.bias" => bias(&a.q_proj),
        "self_attn.k_proj.bias" => bias(&a.k_proj),
        "self_attn.v_proj.bias" => bias(&a.v_proj),
        "self_attn.o_proj.bias" => bias(&a.o_proj),
        "self_attn.q_norm.weight" => norm(a.q_norm.as_ref().expect("q_norm")),
        "self_attn.k_norm.weight" => norm(a.k_norm.as_ref().expect("k_norm")),
        "mlp.gate_proj.weight" => lin(&layer.mlp.gate_proj),
        "mlp.up_proj.weight" => lin(&layer.mlp.up_proj),
        "mlp.down_proj.weight" => lin(&layer.mlp.down_proj),
        other => panic!("unknown parameter {other}"),
    }
}

/// How `check_gradients` computes the log-probs.
#[derive(Clone, Copy, Debug)]
enum LogprobPath {
    /// `token_logprobs`: every position.
    Full,
    /// `token_logprobs_from` with every position in the window (the head's rows gathered from
    /// the hidden states, their gradients scattered back).
    Window,
    /// `window_pass` under a memory plan (every position in the window): the chunked head
    /// backward and, with `Checkpointing::Layers`, the per-layer recomputation.
    Plan(MemoryPlan),
}

/// Gradients of `Σ valid·log p + 0.1 Σ valid·H` on the right-padded batch repeated `tile` times
/// (so that batches of more than 256 rows, which take the other GEMM formulation, are covered).
/// `tile = 0` picks the smallest tiling with more than 256 rows per GEMM.
fn check_gradients(model: &str, tile: usize, path: LogprobPath) {
    check_gradients_in(model, tile, path, ComputeDtype::F32)
}

/// [`check_gradients`] computing in `dtype`: with bf16 against HF's bf16 reference
/// (tools/gen_bf16_fixture.py), with the tolerances of [`BF16_TOL`], and the gradients (of the
/// f32 master weights) checked to be f32.
fn check_gradients_in(model: &str, tile: usize, path: LogprobPath, dtype: ComputeDtype) {
    let dev = dev();
    let m = CausalLm::<AD>::load(fixtures().join(model), &dev)
        .unwrap()
        .with_compute_dtype(dtype)
        .unwrap();
    let r = Reference::load(model);
    let want_ref = match dtype {
        ComputeDtype::F32 => Reference::load(model),
        ComputeDtype::Bf16 => Reference::load_file(model, "bf16_reference.safetensors"),
    };
    let (loss_tol, grad_tol) = match dtype {
        ComputeDtype::F32 => (1e-4, GRAD_TOL),
        ComputeDtype::Bf16 => (BF16_TOL.loss, BF16_TOL.grad),
    };
    let (shape, ids, mask) = mask_from(&r, "right");
    let [b0, t] = [shape[0], shape[1]];
    let tile = if tile == 0 {
        256 / (b0 * (t - 1)) + 1
    } else {
        tile
    };
    let b = b0 * tile;
    let ids: Vec<i64> = (0..tile).flat_map(|_| ids.iter().copied()).collect();
    let mask = AttentionMask::new(
        b,
        t,
        (0..tile)
            .flat_map(|_| mask.as_slice().iter().copied())
            .collect(),
    )
    .unwrap();
    let ids = int_tensor::<AD>(&ids, [b, t], &dev);
    let starts = vec![0; b];
    let mode = EntropyMode::Differentiable;
    let (out, pass) = match path {
        LogprobPath::Full => (m.token_logprobs(ids, Some(&mask), mode).unwrap(), None),
        LogprobPath::Window => (
            m.token_logprobs_from(ids, Some(&mask), &starts, t - 1, mode)
                .unwrap(),
            None,
        ),
        LogprobPath::Plan(plan) => {
            let pass = m
                .window_pass(ids, Some(&mask), &starts, t - 1, mode, 1.0, plan)
                .unwrap();
            (pass.out.clone(), Some(pass))
        }
    };
    let valid: Vec<f32> = (0..b)
        .flat_map(|row| (0..t - 1).map(move |q| (row, q)))
        .map(|(row, q)| (mask.is_valid(row, q) && mask.is_valid(row, q + 1)) as u8 as f32)
        .collect();
    let valid = Tensor::<AD, 2>::from_data(TensorData::new(valid, [b, t - 1]), &dev);
    let loss = (out.logprobs * valid.clone()).sum() + (out.entropy.unwrap() * valid).sum() * 0.1;
    let (_, want_loss) = want_ref.f32("loss");
    let want_loss = want_loss[0] * tile as f32;
    let got_loss = to_vec(loss.clone())[0];
    eprintln!("{model} x{tile} {path:?} {dtype}: loss {got_loss} vs HF {want_loss}");
    assert!(
        (got_loss - want_loss).abs() <= loss_tol * want_loss.abs().max(1.0),
        "{model} x{tile} {path:?} {dtype}: loss {got_loss} vs HF {want_loss}"
    );
    let grads = match pass {
        Some(pass) => Grads::Params(pass.backward(loss, &m)),
        None => Grads::Tape(loss.backward()),
    };
    if let Grads::Tape(g) = &grads {
        let w = m.embed_tokens.weight.val();
        assert_eq!(
            w.dtype(),
            burn::tensor::DType::F32,
            "master weights stay f32"
        );
        assert_eq!(w.grad(g).unwrap().dtype(), burn::tensor::DType::F32);
    }
    let st = SafeTensors::deserialize(&want_ref.bytes).unwrap();
    let mut names: Vec<String> = st
        .names()
        .into_iter()
        .filter(|n| n.starts_with("grad."))
        .map(|n| n.to_string())
        .collect();
    names.sort();
    assert!(!names.is_empty());
    for name in names {
        let pname = name.strip_prefix("grad.").unwrap();
        let (_, want) = want_ref.f32(&name);
        let want: Vec<f32> = want.iter().map(|g| g * tile as f32).collect();
        let got = hf_grad(&m, pname, &grads);
        let scale = want.iter().fold(0.0f32, |a, &x| a.max(x.abs())).max(1.0);
        let d = max_abs_diff(&got, &want);
        eprintln!(
            "{model} x{tile} {path:?} {dtype} {pname}: max |Δgrad| = {d:.2e} (max |g| = {scale:.2e})"
        );
        assert!(
            d <= grad_tol * scale,
            "{model} x{tile} {path:?} {dtype} {pname}: max |Δgrad| = {d} (max |g| = {scale})"
        );
    }
}

#[test]
fn gradients_match_hf() {
    for model in MODELS {
        check_gradients(model, 1, LogprobPath::Full);
        check_gradients(model, 0, LogprobPath::Full);
        check_gradients(model, 1, LogprobPath::Window);
    }
}

/// The memory plans' backward (chunked head, per-layer recomputation) against HF's gradients,
/// with chunks of 3 positions (several chunks, the last one short) and of one position.
#[test]
fn memory_plan_gradients_match_hf() {
    for model in MODELS {
        for plan in [
            MemoryPlan {
                logprob_chunk: 3,
                checkpointing: Checkpointing::None,
                shared_prompts: false,
                packing: false,
            },
            MemoryPlan {
                logprob_chunk: 0,
                checkpointing: Checkpointing::Layers,
                shared_prompts: false,
                packing: false,
            },
            MemoryPlan {
                logprob_chunk: 1,
                checkpointing: Checkpointing::Layers,
                shared_prompts: false,
                packing: false,
            },
        ] {
            check_gradients(model, 1, LogprobPath::Plan(plan));
        }
    }
}

/// The shared-prompt pass (`MemoryPlan::shared_prompts`: each distinct prompt computed once,
/// its keys and values repeated for the rows that follow it) and the packed passes
/// (`MemoryPlan::packing`: sequences end to end in packed rows, each prompt once per group or
/// each sequence whole; per-layer recomputation too) against the padded pass, which the tests
/// above compare with HF: the same log-probs, entropies and parameter gradients of
/// `Σ w·log p + 0.1 Σ w·H` (w: fixed weights on the real entries), plain and with the chunked
/// head. The rows: three responses after a 6-token prompt, two after a 4-token one, one alone
/// after a 9-token one, two after a 1-token prompt (an empty shared prefix), responses of 1 to 7
/// tokens (so windows reach past some rows' ends, into padding). Packed rows reach 21 tokens,
/// past the Gemma 3 fixture's sliding window of 5, so the window counts positions within each
/// sequence.
#[test]
fn shared_prompts_and_packing_equal_the_padded_pass() {
    let prompts: [&[u32]; 4] = [&[5, 9, 2, 7, 7, 3], &[11, 4, 8, 1], &[3, 3, 6, 10, 2, 9, 12, 5, 1], &[8]];
    let rows: [(usize, &[u32]); 8] = [
        (0, &[4, 6, 1]),
        (1, &[2, 2, 9, 13, 5]),
        (0, &[12, 3, 3, 8, 1, 6, 2]),
        (2, &[7]),
        (3, &[9, 4]),
        (0, &[6]),
        (1, &[10, 1, 5]),
        (3, &[1, 14, 2, 2]),
    ];
    let seqs: Vec<Vec<u32>> = rows.iter().map(|&(p, r)| [prompts[p], r].concat()).collect();
    let starts: Vec<usize> = rows.iter().map(|&(p, _)| prompts[p].len() - 1).collect();
    let width = 7;
    let groups = rl_models::PromptGroups::of(&seqs, &starts);
    assert_eq!(groups.of_row, vec![0, 1, 0, 2, 3, 0, 1, 3]);
    let weights: Vec<f32> = rows
        .iter()
        .enumerate()
        .flat_map(|(i, &(_, r))| {
            (0..width).map(move |j| if j < r.len() { 1.0 + 0.25 * ((i + j) % 3) as f32 } else { 0.0 })
        })
        .collect();
    let dev = dev();
    for model in MODELS {
        let m = CausalLm::<AD>::load(fixtures().join(model), &dev).unwrap();
        let names: Vec<String> = {
            let r = Reference::load(model);
            let st = SafeTensors::deserialize(&r.bytes).unwrap();
            let mut n: Vec<String> = st
                .names()
                .into_iter()
                .filter_map(|n| n.strip_prefix("grad.").map(str::to_string))
                .collect();
            n.sort();
            n
        };
        for chunk in [0, 3] {
            let run = |shared_prompts: bool, packing: bool, checkpointing: Checkpointing| {
                let plan = MemoryPlan {
                    logprob_chunk: chunk,
                    shared_prompts,
                    packing,
                    checkpointing,
                };
                let pass = m
                    .train_window(&seqs, &starts, width, EntropyMode::Differentiable, 1.0, plan)
                    .unwrap();
                let w = Tensor::<AD, 2>::from_data(
                    TensorData::new(weights.clone(), [seqs.len(), width]),
                    &dev,
                );
                let out = pass.out.clone();
                let loss = (out.logprobs.clone() * w.clone()).sum()
                    + (out.entropy.clone().unwrap() * w).sum() * 0.1;
                let values = (to_vec(out.logprobs), to_vec(out.entropy.unwrap()));
                let grads = Grads::Params(pass.backward(loss, &m));
                let g: Vec<Vec<f32>> = names.iter().map(|n| hf_grad(&m, n, &grads)).collect();
                (values, g)
            };
            let ((lp_p, ent_p), g_p) = run(false, false, Checkpointing::None);
            // Packed rows always take the deferred head; its chunking is the chunked case's.
            let packed = [
                (true, true, Checkpointing::None),
                (false, true, Checkpointing::None),
                (true, true, Checkpointing::Layers),
            ];
            let cases = std::iter::once((true, false, Checkpointing::None))
                .chain(packed.into_iter().filter(|_| chunk > 0));
            for (shared, packing, ckpt) in cases {
                let case = format!("{model} chunk {chunk} shared {shared} packed {packing} {ckpt:?}");
                let ((lp_s, ent_s), g_s) = run(shared, packing, ckpt);
                let d_lp = max_abs_diff(&lp_s, &lp_p);
                let d_ent = max_abs_diff(&ent_s, &ent_p);
                eprintln!("{case}: max |Δlog p| = {d_lp:.2e}, max |ΔH| = {d_ent:.2e}");
                assert!(d_lp <= TOL / 10.0 && d_ent <= TOL / 10.0, "{case}: {d_lp} {d_ent}");
                for ((name, s), p) in names.iter().zip(&g_s).zip(&g_p) {
                    let scale = p.iter().fold(0.0f32, |a, &x| a.max(x.abs())).max(1e-3);
                    let d = max_abs_diff(s, p);
                    assert!(
                        d <= GRAD_TOL * scale,
                        "{case} {name}: max |Δgrad| = {d} (max |g| = {scale})"
                    );
                }
            }
        }
    }
}

#[test]
fn large_batches_match_hf() {
    // > 256 rows per GEMM: the `x W^T` formulation (small batches use `(W x^T)^T`)
    for model in MODELS {
        let m = load(model);
        let r = Reference::load(model);
        let (shape, ids, mask) = mask_from(&r, "left");
        let [b0, t] = [shape[0], shape[1]];
        let tile = 256 / (b0 * t) + 1;
        let b = b0 * tile;
        let ids: Vec<i64> = (0..tile).flat_map(|_| ids.iter().copied()).collect();
        let mask = AttentionMask::new(
            b,
            t,
            (0..tile)
                .flat_map(|_| mask.as_slice().iter().copied())
                .collect(),
        )
        .unwrap();
        let logits = to_vec(
            m.forward(int_tensor(&ids, [b, t], &dev()), Some(&mask), None)
                .unwrap(),
        );
        let (_, hf) = r.f32("left.logits");
        let vocab = m.config().vocab_size;
        for row in 0..b {
            for p in 0..t {
                if !mask.is_valid(row, p) {
                    continue;
                }
                let ours = &logits[(row * t + p) * vocab..(row * t + p + 1) * vocab];
                let r0 = row % b0;
                let d = max_abs_diff(ours, &hf[(r0 * t + p) * vocab..(r0 * t + p + 1) * vocab]);
                assert!(d <= TOL, "{model} row {row} pos {p}: |Δ| = {d}");
            }
        }
    }
}

#[test]
fn greedy_generation_matches_hf_token_for_token() {
    for model in MODELS {
        let m = load(model);
        let r = Reference::load(model);
        let prompts = r.ids_list("prompts");
        let single = r.ids_list("greedy_single");
        let batched = r.ids_list("greedy_batched");
        let n_new = r.json["greedy_new_tokens"].as_u64().unwrap() as usize;
        let cfg = GenerationConfig::greedy(n_new);
        for (p, want) in prompts.iter().zip(&single) {
            let out = generate(&m, std::slice::from_ref(p), &cfg).unwrap();
            assert_eq!(&out[0].tokens, want, "{model} prompt {p:?}");
            assert_eq!(out[0].finish_reason, FinishReason::Length);
            assert!(out[0].sampling_logprobs.iter().all(|&x| x == 0.0));
            // the reported log-probs are the model's own teacher-forced log-probs
            let full: Vec<i64> = p.iter().chain(want).map(|&x| x as i64).collect();
            let lp = m
                .token_logprobs(
                    int_tensor(&full, [1, full.len()], &dev()),
                    None,
                    EntropyMode::None,
                )
                .unwrap();
            let lp = to_vec(lp.logprobs);
            let d = max_abs_diff(&lp[p.len() - 1..], &out[0].logprobs);
            assert!(
                d <= TOL,
                "{model}: generation log-probs vs teacher forcing: {d}"
            );
        }
        let out = generate(&m, &prompts, &cfg).unwrap();
        let got: Vec<Vec<u32>> = out.iter().map(|g| g.tokens.clone()).collect();
        assert_eq!(got, batched, "{model} left-padded batch");
    }
}

/// Equal prompts prefilled once (`GenerationConfig::share_prompts`): each prompt three times,
/// interleaved, gives every row HF's greedy continuation of its prompt in the left-padded batch
/// of the distinct prompts (`greedy_batched`), and the log-probs of the batch without sharing.
#[test]
fn shared_prompt_prefill_generates_as_the_unshared_batch() {
    for model in MODELS {
        let m = load(model);
        let r = Reference::load(model);
        let prompts = r.ids_list("prompts");
        let batched = r.ids_list("greedy_batched");
        let n_new = r.json["greedy_new_tokens"].as_u64().unwrap() as usize;
        let order: Vec<usize> = (0..3).flat_map(|_| 0..prompts.len()).collect();
        let repeated: Vec<Vec<u32>> = order.iter().map(|&i| prompts[i].clone()).collect();
        let plain = GenerationConfig::greedy(n_new);
        let shared = GenerationConfig {
            share_prompts: true,
            ..plain.clone()
        };
        let got = generate(&m, &repeated, &shared).unwrap();
        let want = generate(&m, &repeated, &plain).unwrap();
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            if exact() {
                assert_eq!(g.tokens, batched[order[k]], "{model} row {k}");
                assert_eq!(g.tokens, w.tokens, "{model} row {k}");
            }
            // the first token comes from the shared prefill itself
            let d = (g.logprobs[0] - w.logprobs[0]).abs();
            assert!(d <= TOL, "{model} row {k}: first log-prob differs by {d}");
        }
    }
}

#[test]
fn generation_stops_on_eos_and_stop_ids_and_masks_undefined_ids() {
    let model = "tied_bf16";
    let m = load(model);
    let r = Reference::load(model);
    let prompts = r.ids_list("prompts");
    let single = r.ids_list("greedy_single");
    let want = &single[0];
    let stop_id = want[3];
    let first = want.iter().position(|&x| x == stop_id).unwrap();
    for (reason, cfg) in [
        (
            FinishReason::Stop,
            GenerationConfig {
                stop_token_ids: vec![stop_id],
                ..GenerationConfig::greedy(12)
            },
        ),
        (
            FinishReason::Eos,
            GenerationConfig {
                eos_token_ids: vec![stop_id],
                ..GenerationConfig::greedy(12)
            },
        ),
    ] {
        // batched with the other prompts: the finished row leaves the batch, the others go on
        let out = generate(&m, &prompts, &cfg).unwrap();
        assert_eq!(out[0].tokens, want[..=first].to_vec());
        assert_eq!(out[0].finish_reason, reason);
        for (g, w) in out.iter().zip(&single).skip(1) {
            let cut = w
                .iter()
                .position(|&x| x == stop_id)
                .map(|k| k + 1)
                .unwrap_or(w.len());
            assert_eq!(g.tokens, w[..cut].to_vec());
        }
    }
    // ids at or above allowed_vocab_size are never produced
    let allowed = *want.iter().max().unwrap() as usize;
    let cfg = GenerationConfig {
        allowed_vocab_size: Some(allowed),
        ..GenerationConfig::greedy(12)
    };
    let out = generate(&m, &prompts[..1], &cfg).unwrap();
    assert!(out[0].tokens.iter().all(|&t| (t as usize) < allowed));
    assert_ne!(&out[0].tokens, want);
    // bad input is an error, not a panic
    assert!(matches!(
        generate(&m, &[vec![]], &cfg),
        Err(ModelError::InvalidInput(_))
    ));
    assert!(matches!(
        generate(&m, &[vec![100_000]], &cfg),
        Err(ModelError::InvalidInput(_))
    ));
}

#[test]
fn sampling_is_seeded_and_independent_of_batch_composition() {
    let m = load("untied_f16_sharded");
    let r = Reference::load("untied_f16_sharded");
    let prompts = r.ids_list("prompts");
    let cfg = GenerationConfig {
        max_new_tokens: 10,
        temperature: 1.0,
        top_p: 0.9,
        top_k: 20,
        seed: 1234,
        ..GenerationConfig::default()
    };
    let a = generate(&m, &prompts, &cfg).unwrap();
    let b = generate(&m, &prompts, &cfg).unwrap();
    assert_eq!(a, b);
    let alone = generate(&m, &prompts[..1], &cfg).unwrap();
    if exact() {
        assert_eq!(alone[0], a[0]);
    } else if alone[0].tokens == a[0].tokens {
        // the same draws; the log-probs only as close as the backend's batch-size-dependent
        // kernels round them
        assert!(max_abs_diff(&alone[0].logprobs, &a[0].logprobs) <= TOL);
        assert!(max_abs_diff(&alone[0].sampling_logprobs, &a[0].sampling_logprobs) <= TOL);
    }
    let other = generate(
        &m,
        &prompts,
        &GenerationConfig {
            seed: 99,
            ..cfg.clone()
        },
    )
    .unwrap();
    assert_ne!(other, a);
    for g in &a {
        assert_eq!(g.tokens.len(), 10);
        assert!(
            g.logprobs
                .iter()
                .zip(&g.sampling_logprobs)
                .all(|(&raw, &s)| raw <= 0.0 && s <= 0.0 && raw.is_finite() && s.is_finite())
        );
    }
}

#[test]
fn random_init_is_seeded_and_trains_under_autodiff() {
    let cfg = ModelConfig::tiny(20);
    let dev = dev();
    let a = cfg.init_seeded::<B>(7, &dev).unwrap();
    let b = cfg.init_seeded::<B>(7, &dev).unwrap();
    let c = cfg.init_seeded::<B>(8, &dev).unwrap();
    assert_eq!(params_bits(&a), params_bits(&b));
    assert_ne!(params_bits(&a), params_bits(&c));
    assert_eq!(a.num_params(), cfg.num_parameters());
    // HF init statistics: linear weights ~ N(0, 0.02), norms 1
    let t = a.hf_tensors().unwrap();
    let (_, _, q) = t
        .iter()
        .find(|x| x.0 == "model.layers.0.self_attn.q_proj.weight")
        .unwrap();
    let std = (q.iter().map(|x| x * x).sum::<f32>() / q.len() as f32).sqrt();
    assert!((std - 0.02).abs() < 0.002, "std {std}");
    assert!(
        t.iter()
            .find(|x| x.0 == "model.norm.weight")
            .unwrap()
            .2
            .iter()
            .all(|&x| x == 1.0)
    );

    // one SGD step on the log-prob of a sequence raises it (autodiff + valid() round trip)
    let m = cfg.init_seeded::<AD>(7, &dev).unwrap();
    let ids: Vec<i64> = (0..12).map(|i| (i * 7 % 20) as i64).collect();
    let score = |m: &CausalLm<B>| {
        let lp = m
            .token_logprobs(int_tensor(&ids, [1, 12], &dev), None, EntropyMode::None)
            .unwrap();
        to_vec(lp.logprobs.sum())[0]
    };
    let before = score(&m.valid());
    let lp = m
        .token_logprobs(
            int_tensor::<AD>(&ids, [1, 12], &dev),
            None,
            EntropyMode::None,
        )
        .unwrap();
    let grads = lp.logprobs.sum().neg().backward();
    let g = burn::optim::GradientsParams::from_grads(grads, &m);
    use burn::optim::Optimizer;
    let mut opt = burn::optim::SgdConfig::new().init();
    let m = opt.step(1e-3, m, g);
    let after = score(&m.valid());
    assert!(
        after > before,
        "log-prob before {before}, after one step {after}"
    );
}

#[test]
fn model_modules_move_between_backends() {
    // autodiff -> inner keeps the weights (generation runs on model.valid())
    let m = CausalLm::<AD>::load(fixtures().join("tied_bf16"), &dev()).unwrap();
    let inner: CausalLm<B> = m.valid();
    assert_eq!(params_bits(&inner), params_bits(&load("tied_bf16")));
    assert_eq!(inner.config(), m.config());
}

/// Tolerances of bf16 compute against HF's bf16 run of the same weights
/// (tools/gen_bf16_fixture.py: transformers 5.24, torch 2.15, eager attention, CPU). Measured on
/// the CPU backend: three of the five fixture sequences give bit-identical logits; in the other
/// two one rounding flips somewhere (a different f32 summation order in a GEMM can move a bf16
/// result by one ulp), which moves logits by at most 0.10 (1.25 ulp of the largest logit, 12.1)
/// and log-probs by at most 0.039, against HF's own bf16 − f32 gap of 0.18–0.32 (rms 0.038–0.053).
/// So [`bf16_compute_matches_hf_bf16`] requires at most 2 ulp of the largest logit and an rms
/// below half HF's bf16 − f32 rms: a run in f32, or one that rounds differently in every layer,
/// fails it. The gradients: HF's are bf16 (its parameters are), ours are f32 (masters), so they
/// differ by the rounding of the gradient itself (2⁻⁸ relative) plus HF's bf16 accumulation;
/// measured at most 1.5 % of the largest entry.
struct Bf16Tol {
    logprob: f32,
    loss: f32,
    grad: f32,
}

const BF16_TOL: Bf16Tol = Bf16Tol {
    logprob: 0.06,
    loss: 2e-3,
    grad: 0.03,
};

/// The fixture model computing in bf16, or `None` after checking that this backend refuses bf16
/// with an error that says so (burn's wgpu: no bf16 in WGSL).
fn bf16_model(model: &str) -> Option<CausalLm<B>> {
    let supported = rl_models::decoder::backend_supports::<B>(ComputeDtype::Bf16, &dev());
    match load(model).with_compute_dtype(ComputeDtype::Bf16) {
        Ok(m) => {
            assert!(supported, "bf16 accepted where supports_dtype is false");
            Some(m)
        }
        Err(e) => {
            assert!(!supported, "bf16 refused where supports_dtype is true: {e}");
            assert!(e.to_string().contains("bf16"), "{e}");
            eprintln!("bf16 refused on this backend: {e}");
            None
        }
    }
}

/// The spacing of bf16 values at `x` (8 significant bits): 2^(⌊log2 |x|⌋ − 7).
fn bf16_ulp(x: f32) -> f32 {
    let e = x.abs().max(f32::MIN_POSITIVE).log2().floor();
    2f32.powf(e - 7.0)
}

/// Qwen3 tied and untied, Qwen2 (the Llama family with q/k/v biases) and Llama (untied, llama3
/// RoPE scaling); the Llama family's bf16 weights from tools/gen_llama_fixtures.py, every HF bf16
/// reference from tools/gen_bf16_fixture.py.
const BF16_MODELS: [&str; 4] = [
    "tied_bf16",
    "untied_f16_sharded",
    "qwen2_bias",
    "llama_untied_rope3",
];

#[test]
fn bf16_compute_matches_hf_bf16() {
    for model in BF16_MODELS {
        let Some(m) = bf16_model(model) else { return };
        let r = Reference::load(model);
        let r16 = Reference::load_file(model, "bf16_reference.safetensors");
        for i in 0..r.num_seqs() {
            let (_, ids) = r.i64(&format!("seq{i}.ids"));
            let (_, f32_logits) = r.f32(&format!("seq{i}.logits"));
            let (_, want) = r16.f32(&format!("seq{i}.logits"));
            let logits = m
                .forward(int_tensor(&ids, [1, ids.len()], &dev()), None, None)
                .unwrap();
            assert_eq!(logits.dtype(), burn::tensor::DType::F32, "logits are f32");
            let got = to_vec(logits);
            let d = max_abs_diff(&got, &want);
            let gap = max_abs_diff(&want, &f32_logits);
            let rms = |a: &[f32], b: &[f32]| {
                (a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f32>() / a.len() as f32)
                    .sqrt()
            };
            let (rms_d, rms_gap) = (rms(&got, &want), rms(&want, &f32_logits));
            let top = want.iter().fold(0.0f32, |a, &x| a.max(x.abs()));
            eprintln!(
                "{model} seq{i} bf16 (max |logit| {top:.1}): vs HF bf16 max {d:.3e} rms \
                 {rms_d:.3e}; HF bf16 vs f32 max {gap:.3e} rms {rms_gap:.3e}"
            );
            assert!(
                d <= 2.0 * bf16_ulp(top) && rms_d <= rms_gap / 2.0,
                "{model} seq{i}: max {d}, rms {rms_d} (HF's bf16 − f32 rms {rms_gap})"
            );
            let label = format!("{model} bf16");
            check_token_logprobs(&m, &ids, &r16, i, &label, BF16_TOL.logprob);
        }
    }
}

#[test]
fn bf16_gradients_reach_f32_masters_and_match_hf_bf16() {
    for model in BF16_MODELS {
        if bf16_model(model).is_none() {
            return;
        }
        check_gradients_in(model, 1, LogprobPath::Full, ComputeDtype::Bf16);
        let plan = MemoryPlan {
            logprob_chunk: 3,
            checkpointing: Checkpointing::Layers,
            shared_prompts: false,
            packing: false,
        };
        check_gradients_in(model, 1, LogprobPath::Plan(plan), ComputeDtype::Bf16);
    }
}

/// A forward-only copy with bf16 parameters (what generation uses) computes exactly what the
/// f32 masters cast at use compute, and generates through the KV cache (bf16 cache tensors).
#[test]
fn bf16_weight_copy_equals_cast_at_use_and_generates() {
    let Some(m) = bf16_model("tied_bf16") else {
        return;
    };
    let r = Reference::load("tied_bf16");
    let (_, ids) = r.i64("seq0.ids");
    let copy = m.clone().with_weights_in_compute_dtype();
    assert_eq!(
        copy.embed_tokens.weight.val().dtype(),
        burn::tensor::DType::BF16
    );
    let run = |m: &CausalLm<B>| {
        to_vec(
            m.forward(int_tensor(&ids, [1, ids.len()], &dev()), None, None)
                .unwrap(),
        )
    };
    assert_eq!(run(&m), run(&copy), "bit for bit");
    let prompts = vec![ids[..4].iter().map(|&x| x as u32).collect::<Vec<u32>>()];
    let cfg = GenerationConfig {
        max_new_tokens: 6,
        temperature: 0.0,
        ..GenerationConfig::default()
    };
    let a = generate(&m, &prompts, &cfg).unwrap();
    let b = generate(&copy, &prompts, &cfg).unwrap();
    assert_eq!(a[0].tokens, b[0].tokens);
    assert_eq!(a[0].tokens.len(), 6);
}

/// LoRA computed unmerged (`x Wᵀ + s · (x Aᵀ) Bᵀ`) equals the merged model (`W + s · B A`) on
/// this backend, for PEFT's fixture adapter (tests/fixtures/lora_peft, random non-zero A and B),
/// and both differ from the base: the check cannot pass with adapters that do nothing.
#[test]
fn lora_merged_equals_unmerged() {
    let dir = fixtures().join("lora_peft");
    let base = CausalLm::<B>::load(dir.join("base"), &dev()).unwrap();
    let lora = base.clone().load_adapter(dir.join("adapter")).unwrap();
    let merged = lora.merged();
    let vocab = base.config().vocab_size as i64;
    let ids: Vec<i64> = (0..14).map(|i| (i * 7 + 3) % vocab).collect();
    let run = |m: &CausalLm<B>| {
        to_vec(
            m.forward(int_tensor(&ids, [2, 7], &dev()), None, None)
                .unwrap(),
        )
    };
    let (unmerged, merged, base) = (run(&lora), run(&merged), run(&base));
    let d = max_abs_diff(&unmerged, &merged);
    let from_base = max_abs_diff(&unmerged, &base);
    eprintln!("LoRA unmerged vs merged: max |Δlogit| {d:.2e}; vs the base {from_base:.2e}");
    assert!(d <= TOL, "unmerged vs merged: {d}");
    assert!(
        from_base > 100.0 * TOL,
        "the adapters change nothing: {from_base}"
    );
}
