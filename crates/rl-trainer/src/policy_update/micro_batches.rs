//! Micro-batch planning: which sequences of a mini-batch are forwarded and back-propagated
//! together (by count and padded tokens, or by prompt group for the shared-prompt pass).

use std::ops::Range;

/// Micro-batches of sequences of `lengths` tokens (prompt + response), in order: at most
/// `max_seqs` sequences each and, when `max_tokens > 0`, at most `max_tokens` padded tokens
/// (rows × the micro-batch's longest sequence). A sequence longer than the budget is a
/// micro-batch of its own. This is verl's dynamic batch size (`use_dynamic_bsz`,
/// `ppo_max_token_len_per_gpu`) without reordering: the losses are sums of numerators over the
/// mini-batch's global counts, so any partition gives the same loss and gradients up to float
/// summation order, and memory follows tokens rather than sequence count.
pub fn micro_batches(lengths: &[usize], max_seqs: usize, max_tokens: usize) -> Vec<Range<usize>> {
    let max_seqs = max_seqs.max(1);
    let mut out = Vec::new();
    let (mut start, mut longest) = (0, 0);
    for (i, &len) in lengths.iter().enumerate() {
        let rows = i - start;
        let wider = longest.max(len);
        if rows > 0 && (rows == max_seqs || (max_tokens > 0 && (rows + 1) * wider > max_tokens)) {
            out.push(start..i);
            (start, longest) = (i, len);
        } else {
            longest = wider;
        }
    }
    if start < lengths.len() {
        out.push(start..lengths.len());
    }
    out
}

/// The micro-batches of a mini-batch as lists of sequence indices. Without a token budget
/// (`max_tokens = 0`): the [`micro_batches`] of the sequences in order. With one: the sequences
/// taken shortest first (a stable sort by length) and then partitioned greedily by
/// [`micro_batches`], so that each micro-batch holds similar lengths and pads little: with
/// responses of very different lengths, one micro-batch padded to the longest computes on many
/// padding tokens (verl's dynamic batch size also regroups sequences by length). The losses are
/// sums over the mini-batch's global counts, so any grouping gives the same loss and gradients
/// up to float summation order.
pub fn micro_batch_plan(lengths: &[usize], max_seqs: usize, max_tokens: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    if max_tokens > 0 {
        order.sort_by_key(|&i| lengths[i]);
    }
    let sorted: Vec<usize> = order.iter().map(|&i| lengths[i]).collect();
    micro_batches(&sorted, max_seqs, max_tokens)
        .into_iter()
        .map(|r| order[r].to_vec())
        .collect()
}

/// [`micro_batch_plan`] for the shared-prompt pass (`MemoryPlan::shared_prompts`): the
/// sequences taken prompt group by prompt group (equal prompt tokens, groups in order of first
/// appearance) and partitioned greedily, each micro-batch holding at most `max_seqs` sequences
/// and, when `max_tokens > 0`, at most `max_tokens` computed tokens: its distinct prompts once,
/// padded to the longest, plus every sequence's response (and its prompt's last token), padded
/// to the longest. A group is split only where it alone exceeds a limit. As for
/// [`micro_batch_plan`], any partition gives the same loss and gradients up to float summation
/// order.
pub fn shared_micro_batch_plan(
    prompts: &[&[u32]],
    response_lens: &[usize],
    max_seqs: usize,
    max_tokens: usize,
) -> Vec<Vec<usize>> {
    let max_seqs = max_seqs.max(1);
    let groups = prompt_groups(prompts);
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    // The current micro-batch's distinct prompts, longest prompt and longest suffix.
    let (mut distinct, mut prefix, mut suffix) = (0usize, 0usize, 0usize);
    for group in groups {
        let mut new_group = true;
        for i in group {
            let p = prompts[i].len().saturating_sub(1);
            let q = response_lens[i] + 1;
            let d = distinct + usize::from(new_group);
            let cost = d * prefix.max(p) + (current.len() + 1) * suffix.max(q);
            if !current.is_empty()
                && (current.len() == max_seqs || (max_tokens > 0 && cost > max_tokens))
            {
                out.push(std::mem::take(&mut current));
                (distinct, prefix, suffix) = (0, 0, 0);
                new_group = true;
            }
            distinct += usize::from(new_group);
            new_group = false;
            prefix = prefix.max(p);
            suffix = suffix.max(q);
            current.push(i);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The sequences of each distinct prompt, prompts in order of first appearance.
fn prompt_groups(prompts: &[&[u32]]) -> Vec<Vec<usize>> {
    let mut group_of = std::collections::HashMap::<&[u32], usize>::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (i, p) in prompts.iter().enumerate() {
        let next = groups.len();
        let g = *group_of.entry(p).or_insert(next);
        if g == groups.len() {
            groups.push(Vec::new());
        }
        groups[g].push(i);
    }
    groups
}

/// The micro-batches of the packed pass (`MemoryPlan::packing`): the sequences taken prompt group
/// by prompt group (as [`shared_micro_batch_plan`]) and partitioned greedily, each micro-batch
/// holding at most `max_seqs` sequences and, when `max_tokens > 0`, at most `max_tokens`
/// computed tokens: every sequence's response (and its prompt's last token), plus each distinct
/// prompt (the rest of it) once when `share_prompts`, once per sequence otherwise. Packed rows
/// hold no padding between sequences, so the tokens are what the micro-batch computes. A group
/// is split only where it alone exceeds a limit; any partition gives the same loss and
/// gradients up to float summation order.
pub fn packed_micro_batch_plan(
    prompts: &[&[u32]],
    response_lens: &[usize],
    share_prompts: bool,
    max_seqs: usize,
    max_tokens: usize,
) -> Vec<Vec<usize>> {
    let max_seqs = max_seqs.max(1);
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut tokens = 0usize;
    for group in prompt_groups(prompts) {
        let mut new_group = true;
        for i in group {
            let prompt = prompts[i].len().saturating_sub(1);
            let cost = response_lens[i]
                + 1
                + if share_prompts && !new_group {
                    0
                } else {
                    prompt
                };
            if !current.is_empty()
                && (current.len() == max_seqs || (max_tokens > 0 && tokens + cost > max_tokens))
            {
                out.push(std::mem::take(&mut current));
                tokens = 0;
                if share_prompts && !new_group {
                    // The group goes on in a new micro-batch, which computes its prompt again.
                    tokens += prompt;
                }
            }
            new_group = false;
            tokens += cost;
            current.push(i);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}
