use super::*;
use crate::decoder::ModelConfig;
use burn::backend::{Autodiff, Flex};

#[test]
fn lm_head_chunks_are_few_and_even() {
    // 256 rows of Qwen3's vocabulary fit the 128 Mi budget: one chunk (was 220 + 36 rows).
    assert_eq!(chunk_rows(256, 151_936, LOGPROB_CHUNK_ELEMS), 256);
    // 1000 rows need ceil(1000 * 151936 / 2^27) = 2 chunks of 500 rows, not 883 + 117.
    assert_eq!(chunk_rows(1000, 151_936, LOGPROB_CHUNK_ELEMS), 500);
    // 10 rows of 7 logits in budgets of 20: ceil(70 / 20) = 4 chunks of ceil(10 / 4) = 3 rows.
    assert_eq!(chunk_rows(10, 7, 20), 3);
    // a budget below one row still makes progress, one row at a time
    assert_eq!(chunk_rows(5, 100, 10), 1);
}

#[test]
fn chunked_log_probs_do_not_depend_on_the_chunking() {
    // Each row's log-softmax only reads its own logits, so any chunking gives the same
    // log-probs and entropies as one chunk (only the GEMM's row blocking differs).
    type AD = Autodiff<Flex>;
    let device = Default::default();
    let model = ModelConfig::tiny(32).init_seeded::<AD>(3, &device).unwrap();
    let ids: Vec<i64> = (0..3 * 9).map(|i| (i * 5 % 32) as i64).collect();
    let ids = Tensor::<AD, 2, Int>::from_data(TensorData::new(ids, [3, 9]), &device);
    let mask = AttentionMask::right_padded(&[9, 6, 8], 9).unwrap();
    let run = |budget| {
        let out = model
            .token_logprobs_chunked(ids.clone(), Some(&mask), EntropyMode::Detached, budget)
            .unwrap();
        let lp: Vec<f32> = out.logprobs.into_data().to_vec().unwrap();
        let ent: Vec<f32> = out.entropy.unwrap().into_data().to_vec().unwrap();
        (lp, ent)
    };
    let (lp1, ent1) = run(LOGPROB_CHUNK_ELEMS); // 24 rows x 32 logits: one chunk
    for budget in [32 * 5, 32 * 7 + 3, 1] {
        let (lp, ent) = run(budget); // 5, 4 (of 7, 7, 7, 3 rows) and 24 chunks
        for (a, b) in lp1.iter().zip(&lp).chain(ent1.iter().zip(&ent)) {
            assert!((a - b).abs() <= 1e-5, "budget {budget}: {a} vs {b}");
        }
    }
}

/// A tiny model with unit-scale logits (HF's 0.02 init gives near-uniform ones, where a
/// shifted position could still agree to a few decimals).
fn sharp_model<B: Backend>(vocab: usize, tied: bool, seed: u64) -> CausalLm<B> {
    let mut config = ModelConfig::tiny(vocab);
    config.initializer_range = 0.4;
    config.tie_word_embeddings = tied;
    config.init_seeded::<B>(seed, &Default::default()).unwrap()
}

fn make_ids<B: Backend>(b: usize, l: usize, vocab: usize) -> Tensor<B, 2, Int> {
    let v: Vec<i64> = (0..b * l).map(|i| ((i * 7 + 3) % vocab) as i64).collect();
    Tensor::from_data(TensorData::new(v, [b, l]), &Default::default())
}

fn host<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f32> {
    t.into_data().convert::<f32>().into_vec().unwrap()
}

/// Right-padded rows of unequal prompt and total lengths; `starts[b] = prompt_len[b] - 1`.
/// Row 1 (7 tokens: positions 1..=7) and row 2 (10 tokens: positions 3..=9) end inside their
/// windows: 2 + 1 columns predict a padding token or sit on one.
const LENGTHS: [usize; 3] = [12, 7, 10];
const STARTS: [usize; 3] = [4, 1, 3];
const WIDTH: usize = 7;
const SEQ: usize = 12;

#[test]
fn windowed_log_probs_equal_the_slice_of_the_full_path() {
    // On the inner backend (what old log-probs run on), every entropy mode, one chunk and
    // small uneven chunks of the windowed head; right and left padding.
    let vocab = 40;
    let model = sharp_model::<Flex>(vocab, true, 5);
    let ids = make_ids::<Flex>(3, SEQ, vocab);
    let left_lengths = [12, 9, 10];
    let cases = [
        (
            AttentionMask::right_padded(&LENGTHS, SEQ).unwrap(),
            STARTS,
            3,
        ),
        // left padding (0, 3, 2 pad tokens): every window entry is real
        (
            AttentionMask::left_padded(&left_lengths, SEQ).unwrap(),
            [4, 4, 3],
            0,
        ),
    ];
    for (mask, starts, want_zeroed) in &cases {
        for mode in [
            EntropyMode::None,
            EntropyMode::Detached,
            EntropyMode::Differentiable,
        ] {
            let full = model.token_logprobs(ids.clone(), Some(mask), mode).unwrap();
            let full_lp = host(full.logprobs);
            let full_ent = full.entropy.map(host);
            assert_eq!(full_ent.is_some(), mode != EntropyMode::None);
            // The test can tell positions apart: shifting the window by one changes values.
            let shift = (0..3)
                .flat_map(|row| (0..WIDTH).map(move |j| (row, starts[row] + j)))
                .filter(|&(row, t)| t + 2 < SEQ && mask.is_valid(row, t + 2))
                .map(|(row, t)| {
                    let at = |t: usize| full_lp[row * (SEQ - 1) + t];
                    (at(t) - at(t + 1)).abs()
                })
                .fold(0.0f32, f32::max);
            assert!(shift > 0.1, "neighbouring log-probs too close: {shift}");
            for budget in [LOGPROB_CHUNK_ELEMS, vocab * 4 + 3, 1] {
                let out = model
                    .token_logprobs_from_chunked(
                        ids.clone(),
                        Some(mask),
                        starts,
                        WIDTH,
                        mode,
                        budget,
                        1.0,
                    )
                    .unwrap();
                assert_eq!(out.logprobs.dims(), [3, WIDTH]);
                let lp = host(out.logprobs);
                let ent = out.entropy.map(host);
                assert_eq!(ent.is_some(), mode != EntropyMode::None);
                let mut zeroed = 0;
                for (row, &s) in starts.iter().enumerate() {
                    for j in 0..WIDTH {
                        let (w, f) = (row * WIDTH + j, row * (SEQ - 1) + s + j);
                        let real = mask.is_valid(row, s + j) && mask.is_valid(row, s + j + 1);
                        if !real {
                            assert_eq!((lp[w], full_lp[f]), (0.0, 0.0), "{row},{j}");
                            zeroed += 1;
                        }
                        assert!(
                            (lp[w] - full_lp[f]).abs() <= 1e-5,
                            "{mode:?} budget {budget} [{row}, {j}]: {} vs {}",
                            lp[w],
                            full_lp[f]
                        );
                        if let (Some(e), Some(fe)) = (&ent, &full_ent) {
                            assert!(
                                (e[w] - fe[f]).abs() <= 1e-5,
                                "{mode:?} budget {budget} entropy [{row}, {j}]"
                            );
                        }
                    }
                }
                assert_eq!(zeroed, *want_zeroed);
            }
        }
    }
}

/// Every parameter's gradient, by HF name.
fn all_grads(
    m: &CausalLm<Autodiff<Flex>>,
    grads: &<Autodiff<Flex> as burn::tensor::backend::AutodiffBackend>::Gradients,
) -> Vec<(String, Vec<f32>)> {
    let g2 = |t: Tensor<Autodiff<Flex>, 2>| host(t.grad(grads).expect("gradient"));
    let g1 = |t: Tensor<Autodiff<Flex>, 1>| host(t.grad(grads).expect("gradient"));
    let mut out = vec![("embed".to_string(), g2(m.embed_tokens.weight.val()))];
    for (n, layer) in m.layers.iter().enumerate() {
        let a = &layer.self_attn;
        for (name, w) in [
            ("q", &a.q_proj),
            ("k", &a.k_proj),
            ("v", &a.v_proj),
            ("o", &a.o_proj),
            ("gate", &layer.mlp.gate_proj),
            ("up", &layer.mlp.up_proj),
            ("down", &layer.mlp.down_proj),
        ] {
            out.push((format!("{n}.{name}"), g2(w.weight.val())));
        }
        for (name, w) in [
            ("input_norm", Some(&layer.input_layernorm)),
            ("post_norm", Some(&layer.post_attention_layernorm)),
            ("q_norm", a.q_norm.as_ref()),
            ("k_norm", a.k_norm.as_ref()),
        ] {
            if let Some(w) = w {
                out.push((format!("{n}.{name}"), g1(w.weight.val())));
            }
        }
    }
    out.push(("norm".to_string(), g1(m.norm.weight.val())));
    if let Some(head) = &m.lm_head {
        out.push(("lm_head".to_string(), g2(head.weight.val())));
    }
    out
}

#[test]
fn windowed_gradients_equal_the_sliced_full_loss() {
    // loss = Σ c[b, j] (log p + 0.1 H) over the real window entries, with distinct weights
    // c so that a permuted or shifted window changes the gradient; the full path's loss puts
    // the same weights at columns s_b + j of its [b, seq − 1] output.
    type AD = Autodiff<Flex>;
    let device = Default::default();
    let vocab = 40;
    for tied in [true, false] {
        let model = sharp_model::<AD>(vocab, tied, 9);
        let ids = make_ids::<AD>(3, SEQ, vocab);
        let mask = AttentionMask::right_padded(&LENGTHS, SEQ).unwrap();
        let weight = |row: usize, j: usize| {
            let t = STARTS[row] + j;
            let real = mask.is_valid(row, t) && mask.is_valid(row, t + 1);
            if real {
                1.0 + (row * WIDTH + j) as f32 / 10.0
            } else {
                0.0
            }
        };
        let mut c_full = vec![0.0f32; 3 * (SEQ - 1)];
        let mut c_win = vec![0.0f32; 3 * WIDTH];
        for row in 0..3 {
            for j in 0..WIDTH {
                c_full[row * (SEQ - 1) + STARTS[row] + j] = weight(row, j);
                c_win[row * WIDTH + j] = weight(row, j);
            }
        }
        let loss = |out: TokenLogProbs<AD>, c: Vec<f32>, shape: [usize; 2]| {
            let c = Tensor::<AD, 2>::from_data(TensorData::new(c, shape), &device);
            (out.logprobs * c.clone()).sum() + (out.entropy.unwrap() * c).sum() * 0.1
        };
        let full = model
            .token_logprobs(ids.clone(), Some(&mask), EntropyMode::Differentiable)
            .unwrap();
        let full_loss = loss(full, c_full, [3, SEQ - 1]);
        let want = all_grads(&model, &full_loss.clone().backward());
        let want_loss = host(full_loss)[0];
        for budget in [LOGPROB_CHUNK_ELEMS, vocab * 4] {
            let out = model
                .token_logprobs_from_chunked(
                    ids.clone(),
                    Some(&mask),
                    &STARTS,
                    WIDTH,
                    EntropyMode::Differentiable,
                    budget,
                    1.0,
                )
                .unwrap();
            let win_loss = loss(out, c_win.clone(), [3, WIDTH]);
            let got = all_grads(&model, &win_loss.clone().backward());
            let got_loss = host(win_loss)[0];
            assert!((got_loss - want_loss).abs() <= 1e-5 * want_loss.abs().max(1.0));
            assert_eq!(got.len(), want.len());
            for ((name, g), (_, w)) in got.iter().zip(&want) {
                let scale = w.iter().fold(0.0f32, |a, &x| a.max(x.abs()));
                assert!(scale > 0.0, "{name}: zero gradient");
                let d = g
                    .iter()
                    .zip(w)
                    .fold(0.0f32, |a, (x, y)| a.max((x - y).abs()));
                assert!(
                    d <= 1e-5 * scale,
                    "tied {tied}, budget {budget}, {name}: max |Δ| = {d} (max |g| = {scale})"
                );
            }
        }
    }
}

#[test]
fn host_windows_equal_each_sequence_scored_alone() {
    // Ragged sequences (one with a long prompt and a short response, one with no response
    // token at all), each compared with the full path over the sequence alone, unpadded.
    let vocab = 40;
    let model = sharp_model::<Flex>(vocab, false, 11);
    let seqs: Vec<Vec<u32>> = [(12, 9), (7, 2), (10, 4), (3, 3)]
        .iter()
        .enumerate()
        .map(|(i, &(len, _))| {
            (0..len)
                .map(|t| ((t * 5 + i * 11 + 1) % vocab) as u32)
                .collect()
        })
        .collect();
    let starts = [8, 1, 3, 2]; // prompt lengths 9, 2, 4, 3
    let got = model.token_logprobs_from_host(&seqs, &starts).unwrap();
    assert_eq!(
        got.iter().map(Vec::len).collect::<Vec<_>>(),
        vec![3, 5, 6, 0]
    );
    for (i, seq) in seqs.iter().enumerate() {
        let t = Tensor::<Flex, 2, Int>::from_data(
            TensorData::new(seq.iter().map(|&x| i64::from(x)).collect(), [1, seq.len()]),
            &Default::default(),
        );
        let alone = host(
            model
                .token_logprobs(t, None, EntropyMode::None)
                .unwrap()
                .logprobs,
        );
        for (j, g) in got[i].iter().enumerate() {
            let want = alone[starts[i] + j];
            assert!((g - want).abs() <= 1e-5, "seq {i} token {j}: {g} vs {want}");
        }
    }
    // nothing to score: no model run
    assert_eq!(
        model.token_logprobs_from_host(&seqs[3..], &[2]).unwrap(),
        vec![Vec::<f32>::new()]
    );
}

#[test]
fn bad_windows_are_typed_errors() {
    let vocab = 40;
    let model = sharp_model::<Flex>(vocab, true, 1);
    let ids = make_ids::<Flex>(3, SEQ, vocab);
    let mask = AttentionMask::right_padded(&LENGTHS, SEQ).unwrap();
    let run = |mask: Option<&AttentionMask>, starts: &[usize], width: usize| {
        model.token_logprobs_from(ids.clone(), mask, starts, width, EntropyMode::None)
    };
    let invalid =
        |r: Result<TokenLogProbs<Flex>, ModelError>| matches!(r, Err(ModelError::InvalidInput(_)));
    assert!(invalid(run(Some(&mask), &[0, 0], 3))); // one start missing
    assert!(invalid(run(Some(&mask), &STARTS, 0))); // empty window
    assert!(invalid(run(Some(&mask), &[4, 5, 3], WIDTH))); // 5 + 7 > 11
    assert!(invalid(run(None, &[0, 0, usize::MAX], 1))); // no overflow
    assert!(invalid(run(None, &[0, 0, 0], SEQ))); // wider than the predicting positions
    let other = AttentionMask::right_padded(&[3, 3], SEQ).unwrap();
    assert!(invalid(run(Some(&other), &[0, 0, 0], 2))); // mask of another batch
    // the largest window that fits: every predicting position
    assert_eq!(
        run(None, &[0, 0, 0], SEQ - 1).unwrap().logprobs.dims(),
        [3, SEQ - 1]
    );
    let seqs = vec![vec![1u32, 2, 3], vec![4, 5]];
    let host_invalid =
        |r: Result<Vec<Vec<f32>>, ModelError>| matches!(r, Err(ModelError::InvalidInput(_)));
    assert!(host_invalid(model.token_logprobs_from_host(&seqs, &[0])));
    assert!(host_invalid(model.token_logprobs_from_host(&seqs, &[0, 2]))); // start = len
    assert!(host_invalid(
        model.token_logprobs_from_host(&[vec![]], &[0])
    ));
    assert!(host_invalid(
        model.token_logprobs_from_host(&[vec![1, 40]], &[0]) // id = vocab
    ));
    assert_eq!(
        model.token_logprobs_from_host(&[], &[]).unwrap(),
        Vec::<Vec<f32>>::new()
    );
}
