use super::{
    importance_of, micro_batch_plan, micro_batches, packed_micro_batch_plan,
    shared_micro_batch_plan,
};
use rl_loss::IsCorrection;

/// By hand: lengths 3, 5, 2, 8, 1 with a budget of 10 padded tokens. [3, 5] pads to 2 × 5 =
/// 10 (fits); adding 2 would make 3 × 5 = 15. [2, 8] would be 16, so 2 is alone; [8, 1] would
/// be 16, so 8 is alone, and 1 closes the list. Without a budget, 2 sequences at most:
/// [3, 5], [2, 8], [1]. A sequence longer than the budget is a micro-batch of its own.
#[test]
fn micro_batches_by_hand() {
    let l = [3, 5, 2, 8, 1];
    assert_eq!(micro_batches(&l, 10, 10), vec![0..2, 2..3, 3..4, 4..5]);
    assert_eq!(micro_batches(&l, 2, 0), vec![0..2, 2..4, 4..5]);
    assert_eq!(micro_batches(&l, 8, 0), vec![0..5]);
    assert_eq!(micro_batches(&[20, 1, 1], 8, 10), vec![0..1, 1..3]);
    assert!(micro_batches(&[], 4, 10).is_empty());
}

/// By hand: lengths 7, 2, 9, 2, 3 with 3 sequences at most and a budget of 9 padded tokens.
/// Shortest first (stable): indices 1, 3, 4, 0, 2 of lengths 2, 2, 3, 7, 9; [2, 2, 3] pads
/// to 3 × 3 = 9 (fits, and is 3 sequences); [7] alone, since [7, 9] would be 18; [9] alone.
/// Without a budget the order is kept: [7, 2, 9], [2, 3].
#[test]
fn micro_batch_plan_by_hand() {
    let l = [7, 2, 9, 2, 3];
    assert_eq!(
        micro_batch_plan(&l, 3, 9),
        vec![vec![1, 3, 4], vec![0], vec![2]]
    );
    assert_eq!(micro_batch_plan(&l, 3, 0), vec![vec![0, 1, 2], vec![3, 4]]);
    assert!(micro_batch_plan(&[], 3, 9).is_empty());
}

/// Every list of up to 6 lengths from {1, 2, 3, 5}, every cap and budget: the micro-batches,
/// read one after the other, list every sequence once: in order without a budget, shortest
/// first with one (ties in order: a stable sort, built here by counting); each holds at most
/// `max_seqs` sequences and at most `max_tokens` padded tokens unless it is a single
/// sequence; and each is maximal: adding the next micro-batch's first sequence would break
/// a limit.
#[test]
fn micro_batch_plans_list_every_sequence_once_shortest_first_within_limits() {
    every_small_case(|lengths, max_seqs, max_tokens| {
        let n = lengths.len();
        let plan = micro_batch_plan(lengths, max_seqs, max_tokens);
        let fits = |s: &[usize]| {
            let l: Vec<usize> = s.iter().map(|&i| lengths[i]).collect();
            fits_limits(&l, max_seqs, max_tokens)
        };
        // Shortest first, ties in order: for each length in increasing order, the indices
        // with that length.
        let want: Vec<usize> = if max_tokens == 0 {
            (0..n).collect()
        } else {
            (1..=5)
                .flat_map(|len| (0..n).filter(move |&i| lengths[i] == len))
                .collect()
        };
        assert_eq!(plan.concat(), want, "{lengths:?} → {plan:?}");
        for (k, part) in plan.iter().enumerate() {
            assert!(!part.is_empty() && fits(part), "{lengths:?} → {plan:?}");
            if let Some(next) = plan.get(k + 1) {
                let grown = [part.as_slice(), &next[..1]].concat();
                assert!(!fits(&grown), "{lengths:?} → {plan:?}");
            }
        }
    });
}

/// Every list of up to 6 lengths from {1, 2, 3, 5}, every cap and budget: the ranges tile
/// 0..n in order; each holds at most `max_seqs` sequences and at most `max_tokens` padded
/// tokens unless it is a single sequence; and each is maximal: adding the next sequence
/// would break a limit (the greedy partition, stated independently of the code).
#[test]
fn micro_batches_tile_respect_the_limits_and_are_maximal() {
    every_small_case(|lengths, max_seqs, max_tokens| {
        let n = lengths.len();
        let fits = |s: &[usize]| fits_limits(s, max_seqs, max_tokens);
        let mut next = 0;
        for range in &micro_batches(lengths, max_seqs, max_tokens) {
            assert_eq!(range.start, next, "{lengths:?}");
            assert!(!range.is_empty() && fits(&lengths[range.clone()]));
            if range.end < n {
                assert!(!fits(&lengths[range.start..range.end + 1]));
            }
            next = range.end;
        }
        assert_eq!(next, n);
    });
}

/// `f(lengths, max_seqs, max_tokens)` for every list of up to 6 lengths from {1, 2, 3, 5},
/// every cap in {1, 2, 3, 8} and every budget in {0, 4, 6, 10}.
fn every_small_case(mut f: impl FnMut(&[usize], usize, usize)) {
    let alphabet = [1usize, 2, 3, 5];
    for n in 0..=6usize {
        for code in 0..alphabet.len().pow(n as u32) {
            let lengths: Vec<usize> = (0..n)
                .map(|i| alphabet[(code / alphabet.len().pow(i as u32)) % alphabet.len()])
                .collect();
            for max_seqs in [1, 2, 3, 8] {
                for max_tokens in [0, 4, 6, 10] {
                    f(&lengths, max_seqs, max_tokens);
                }
            }
        }
    }
}

/// Whether sequences of lengths `l` may form one micro-batch: at most `max_seqs` of them
/// and, with a budget, at most `max_tokens` padded tokens (rows × the longest), unless
/// there is a single sequence.
fn fits_limits(l: &[usize], max_seqs: usize, max_tokens: usize) -> bool {
    let padded = l.len() * l.iter().copied().max().unwrap_or(0);
    l.len() <= max_seqs && (max_tokens == 0 || l.len() == 1 || padded <= max_tokens)
}

/// A token whose rollout log-prob the engine did not report (NaN) is left out of the correction.
/// By hand, token TIS with C = 2, log π_old = −1 everywhere, log π_rollout = −1.5, NaN, −0.5:
/// token 0 has ρ = e^0.5 = 1.6487 (under C), token 1 weight 1, token 2 ρ = e^−0.5 = 0.6065;
/// 2 tokens compared, Σ|Δ| = 0.5 + 0.5 = 1, max 0.5. With the third token an observation
/// (`sampled` false), only token 0 is compared.
#[test]
fn unreported_rollout_logprobs_get_weight_one_and_no_statistics() {
    let tis = IsCorrection::TokenTis { cap: 2.0 };
    let old = [-1.0f32; 3];
    let rollout = [-1.5f32, f32::NAN, -0.5];
    let w = importance_of(&tis, 0, &old, &rollout, None).unwrap();
    let want = [0.5f64.exp(), 1.0, (-0.5f64).exp()];
    for (got, want) in w.weights.iter().zip(want) {
        assert!((*got as f64 - want).abs() < 1e-6, "{got} vs {want}");
    }
    assert_eq!(w.keep, [true; 3]);
    assert_eq!(w.stats.tokens, 2);
    assert!((w.stats.abs_diff_sum - 1.0).abs() < 1e-6);
    assert!((w.stats.abs_diff_max - 0.5).abs() < 1e-6);
    let w = importance_of(&tis, 0, &old, &rollout, Some(&[true, true, false])).unwrap();
    assert_eq!(w.stats.tokens, 1);
    assert!((w.weights[0] as f64 - 0.5f64.exp()).abs() < 1e-6);
    assert_eq!(&w.weights[1..], [1.0, 1.0]);
}

/// Shared-prompt micro-batches: whole prompt groups in order of first appearance, split where
/// a limit is reached. Rows 0..6 have prompts A, B, A, C, B, A (A = 3 tokens, B = 2, C = 4) and
/// responses of 2, 3, 1, 4, 2, 2 tokens, so a row computes prompt − 1 = 2, 1, 2, 3, 1, 2 prefix
/// tokens (once per group) and response + 1 = 3, 4, 2, 5, 3, 3 suffix tokens. With a budget of
/// 14 computed tokens: A's three rows cost 1 · 2 + 3 · 3 = 11; adding B's first row would cost
/// 2 · 2 + 4 · 4 = 20 > 14, so B starts a micro-batch (1 · 1 + 2 · 4 = 9 for both rows); C
/// would make it 2 · 3 + 3 · 5 = 21, so C is alone.
#[test]
fn shared_prompt_micro_batches_keep_groups_together() {
    let (a, b, c): (&[u32], &[u32], &[u32]) = (&[1, 2, 3], &[4, 5], &[6, 7, 8, 9]);
    let prompts = [a, b, a, c, b, a];
    let responses = [2, 3, 1, 4, 2, 2];
    assert_eq!(
        shared_micro_batch_plan(&prompts, &responses, 64, 14),
        vec![vec![0, 2, 5], vec![1, 4], vec![3]]
    );
    // By count only: 4 rows, then the rest.
    assert_eq!(
        shared_micro_batch_plan(&prompts, &responses, 4, 0),
        vec![vec![0, 2, 5, 1], vec![4, 3]]
    );
    // A budget below one group's cost splits the group.
    assert_eq!(
        shared_micro_batch_plan(&prompts, &responses, 64, 8),
        vec![vec![0, 2], vec![5], vec![1], vec![4], vec![3]]
    );
}

/// Packed micro-batches on the rows of the test above (prompts A, B, A, C, B, A: 2, 1, 2, 3, 1, 2
/// prefix tokens; suffixes of 3, 4, 2, 5, 3, 3 tokens), taken group by group: 0, 2, 5 | 1, 4 | 3.
/// Shared, a budget of 13 tokens: A's rows cost 2 + 3 + 2 + 3 = 10; B's first row (1 + 4) would
/// make 15, so B starts a micro-batch (1 + 4 + 3 = 8), and C (3 + 5) would make 16, so C is
/// alone. Unshared, every row pays its prefix (A's rows 5, 4, 5; B's 5, 4; C's 8): 0, 2 (9; 5
/// more would make 14), then 5, 1 (10; 4 more would make 14), then 4, 3 (12). A budget of 6
/// splits every group, and a micro-batch that goes on with a group computes its prompt again
/// (A: 5; 2 + 2 = 4, 3 more would make 7; 2 + 3 = 5).
#[test]
fn packed_micro_batches_count_computed_tokens() {
    let (a, b, c): (&[u32], &[u32], &[u32]) = (&[1, 2, 3], &[4, 5], &[6, 7, 8, 9]);
    let prompts = [a, b, a, c, b, a];
    let responses = [2, 3, 1, 4, 2, 2];
    assert_eq!(
        packed_micro_batch_plan(&prompts, &responses, true, 64, 13),
        vec![vec![0, 2, 5], vec![1, 4], vec![3]]
    );
    assert_eq!(
        packed_micro_batch_plan(&prompts, &responses, false, 64, 13),
        vec![vec![0, 2], vec![5, 1], vec![4, 3]]
    );
    assert_eq!(
        packed_micro_batch_plan(&prompts, &responses, true, 64, 6),
        vec![vec![0], vec![2], vec![5], vec![1], vec![4], vec![3]]
    );
    assert_eq!(
        packed_micro_batch_plan(&prompts, &responses, true, 4, 0),
        vec![vec![0, 2, 5, 1], vec![4, 3]]
    );
}
