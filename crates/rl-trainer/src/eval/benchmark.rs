//! Benchmark evaluation through any rollout engine (`rlvr eval`): k samples per prompt, each
//! verified, written as one JSON line per sample ([`SampleRecord`]), then scored with
//! [`rl_verifier::Scores`] (avg@n, unbiased pass@k, maj@k with standard errors and bootstrap
//! intervals), overall and by a grouping column.
//!
//! Prompt i's k samples are one engine request with seed [`prompt_seed`]`(seed, i)`, so a
//! prompt's samples depend on the seed, the weights and the prompt only: an interrupted run
//! resumes by skipping prompts whose k samples are already in the file, and gives the samples an
//! uninterrupted run would have given. The trainer's periodic evaluation is this same code with
//! the run's seed ([`crate::Trainer::eval_samples`]), so `rlvr eval` with the run's config on a
//! saved checkpoint gives the samples the trainer evaluated at that step.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Write};
use std::path::Path;

use rl_models::Tokenizer;
use rl_rollout::{Completion, FinishReason, GenerateRequest, SamplingParams};
use rl_verifier::{Bootstrap, PromptSamples, Scores, Verifier};
use serde::{Deserialize, Serialize};

use rl_env::{EpisodeStart, Task};

use crate::TrainerError;
use crate::data::{Prompt, PromptRenderer};
use crate::multi_turn::{ChatCodec, Episodes};
use crate::scoring::strip_end_tokens;

/// One verified sample (a line of the samples file).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SampleRecord {
    /// The prompt's id (its 0-based record index in the data file).
    pub prompt: u64,
    /// The sample's index among the prompt's k.
    pub sample: usize,
    /// The prompt's group (the tier column), if any.
    pub group: Option<String>,
    /// The decoded response, end tokens removed.
    pub text: String,
    /// The answer the verifier extracted, if any.
    pub answer: Option<String>,
    /// The verdict.
    pub correct: bool,
    /// Generated tokens (a final end token included).
    pub tokens: usize,
    /// `stop`, `length` or `abort`.
    pub finish: FinishReason,
    /// A multi-turn episode's assistant turns (absent for single-turn samples).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns: Option<usize>,
    /// A multi-turn episode's tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<usize>,
    /// A multi-turn episode's whole token sequence after the prompt, decoded with special
    /// tokens (turns, tool calls, tool results): `text` is its final turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
}

/// What one benchmark run samples.
#[derive(Clone, Debug)]
pub struct BenchmarkSettings {
    /// Samples per prompt.
    pub k: usize,
    /// Sampling (the seed is set per prompt).
    pub params: SamplingParams,
    /// The run's seed.
    pub seed: u64,
    /// Prompts per engine call.
    pub prompts_per_call: usize,
}

/// Evaluation's own seed streams, apart from the rollouts' (which are drawn from the run seed
/// too).
const EVAL_STREAMS: u64 = 0xE7A1 << 48;

/// The seed of prompt `id`'s request in a run seeded `seed`: `seed ^ 0xE7A1 << 48 ^ id << 20`.
pub fn prompt_seed(seed: u64, id: u64) -> u64 {
    seed ^ EVAL_STREAMS ^ (id << 20)
}

/// A call to a rollout engine: requests in, each request's completions out.
pub type Generate<'a> =
    dyn FnMut(Vec<GenerateRequest>) -> Result<Vec<Vec<Completion>>, TrainerError> + 'a;

/// How prompts become requests and completions become verdicts.
pub struct Scoring<'a> {
    /// Prompt rendering (template, chat template).
    pub renderer: &'a PromptRenderer,
    /// The tokenizer.
    pub tokenizer: &'a Tokenizer,
    /// Ids removed from the end of a response before decoding.
    pub end_ids: &'a [u32],
    /// The verifier.
    pub verifier: &'a dyn Verifier,
    /// Samples are multi-turn episodes in this environment (`[rollout.env]`); `None`: one
    /// completion each.
    pub episodes: Option<&'a Episodes>,
    /// Qwen3's `enable_thinking` for the observations of episodes.
    pub enable_thinking: bool,
}

/// The seed of sample `j` of prompt `id` when each sample is its own episode:
/// [`prompt_seed`] + `j` (distinct for j < 2^20).
pub fn sample_seed(seed: u64, id: u64, j: usize) -> u64 {
    prompt_seed(seed, id).wrapping_add(j as u64)
}

/// Samples (through `generate`) and verifies the `prompts` not in `done`, `prompts_per_call` at
/// a time, and hands each call's records (grouped by prompt, in sample order) and the prompts
/// sampled so far to `write` before the next call. Returns the number of prompts sampled.
pub fn sample_benchmark(
    generate: &mut Generate<'_>,
    prompts: &[Prompt],
    scoring: &Scoring<'_>,
    settings: &BenchmarkSettings,
    done: &BTreeSet<u64>,
    mut write: impl FnMut(&[SampleRecord], usize) -> Result<(), TrainerError>,
) -> Result<usize, TrainerError> {
    let Scoring {
        renderer,
        tokenizer,
        end_ids,
        verifier,
        episodes,
        enable_thinking,
    } = *scoring;
    let todo: Vec<_> = prompts.iter().filter(|p| !done.contains(&p.id)).collect();
    let mut sampled = 0;
    if let Some(episodes) = episodes {
        let codec = ChatCodec {
            tokenizer,
            end_ids,
            enable_thinking,
        };
        for chunk in todo.chunks(settings.prompts_per_call.max(1)) {
            let records = sample_episodes(generate, chunk, scoring, &codec, episodes, settings)?;
            sampled += chunk.len();
            write(&records, sampled)?;
        }
        return Ok(sampled);
    }
    for chunk in todo.chunks(settings.prompts_per_call.max(1)) {
        let requests = chunk
            .iter()
            .map(|p| {
                Ok(GenerateRequest {
                    prompt_ids: renderer.render(p, tokenizer)?,
                    n: settings.k,
                    params: SamplingParams {
                        seed: prompt_seed(settings.seed, p.id),
                        ..settings.params.clone()
                    },
                })
            })
            .collect::<Result<Vec<_>, TrainerError>>()?;
        let completions = generate(requests)?;
        let mut records = Vec::with_capacity(chunk.len() * settings.k);
        for (p, samples) in chunk.iter().zip(&completions) {
            for (j, c) in samples.iter().enumerate() {
                let text = tokenizer.decode(strip_end_tokens(&c.tokens, end_ids), false)?;
                let v = verifier.verify(&text, &p.answer);
                records.push(SampleRecord {
                    prompt: p.id,
                    sample: j,
                    group: p.tier.clone(),
                    text,
                    answer: v.extracted.clone(),
                    correct: v.outcome.is_correct(),
                    tokens: c.tokens.len(),
                    finish: c.finish,
                    turns: None,
                    tool_calls: None,
                    transcript: None,
                });
            }
        }
        sampled += chunk.len();
        write(&records, sampled)?;
    }
    Ok(sampled)
}

/// `settings.k` episodes of each prompt of `chunk`, sample j of prompt p seeded
/// [`sample_seed`]`(seed, p.id, j)`, verified on their final turn.
fn sample_episodes(
    generate: &mut Generate<'_>,
    chunk: &[&Prompt],
    scoring: &Scoring<'_>,
    codec: &ChatCodec<'_>,
    episodes: &Episodes,
    settings: &BenchmarkSettings,
) -> Result<Vec<SampleRecord>, TrainerError> {
    let mut starts = Vec::with_capacity(chunk.len() * settings.k);
    for p in chunk {
        let ids = std::sync::Arc::new(scoring.renderer.render(p, scoring.tokenizer)?);
        for j in 0..settings.k {
            starts.push(EpisodeStart {
                prompt_ids: ids.clone(),
                task: Task {
                    index: p.id as usize,
                    answer: p.answer.clone(),
                    metadata: serde_json::Value::Null,
                },
                seed: sample_seed(settings.seed, p.id, j),
            });
        }
    }
    // Engine errors pass through the trainer's error type and back.
    let mut failure: Option<TrainerError> = None;
    let trajectories = episodes.run(
        codec,
        &settings.params,
        &mut |reqs| {
            generate(reqs).map_err(|e| {
                let message = e.to_string();
                failure = Some(e);
                rl_rollout::EngineError::Generation {
                    engine: "evaluation".into(),
                    message,
                }
            })
        },
        &starts,
    );
    let trajectories = match (trajectories, failure) {
        (_, Some(e)) => return Err(e),
        (t, None) => t?,
    };
    let mut records = Vec::with_capacity(trajectories.len());
    for (i, t) in trajectories.into_iter().enumerate() {
        let p = chunk[i / settings.k];
        let text = scoring
            .tokenizer
            .decode(strip_end_tokens(t.last_turn(), scoring.end_ids), false)?;
        let v = scoring.verifier.verify(&text, &p.answer);
        records.push(SampleRecord {
            prompt: p.id,
            sample: i % settings.k,
            group: p.tier.clone(),
            text,
            answer: v.extracted.clone(),
            correct: v.outcome.is_correct(),
            tokens: t.sampled_len(),
            finish: t.finish(),
            turns: Some(t.turns.len()),
            tool_calls: Some(t.tool_calls),
            transcript: Some(scoring.tokenizer.decode(&t.tokens, false)?),
        });
    }
    Ok(records)
}

/// The records of a samples file, keeping only prompts with all `k` samples (a run interrupted
/// mid-call leaves none partial, but a file cut short may); a line that is not a record is an
/// error naming the file and line.
pub fn read_samples(path: &Path, k: usize) -> Result<Vec<SampleRecord>, TrainerError> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(TrainerError::io(path, e)),
    };
    let mut by_prompt: BTreeMap<u64, Vec<SampleRecord>> = BTreeMap::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| TrainerError::io(path, e))?;
        if line.trim().is_empty() {
            continue;
        }
        let r: SampleRecord = serde_json::from_str(&line).map_err(|e| TrainerError::Data {
            path: path.display().to_string(),
            record: i + 1,
            message: format!("not a sample record: {e}"),
        })?;
        by_prompt.entry(r.prompt).or_default().push(r);
    }
    Ok(by_prompt
        .into_values()
        .filter(|rs| rs.len() == k)
        .flatten()
        .collect())
}

/// Appends `records` as JSON lines to `out` (the file `path`, named in errors) and flushes it.
pub fn append_samples(
    out: &mut impl Write,
    path: &Path,
    records: &[SampleRecord],
) -> Result<(), TrainerError> {
    for r in records {
        let line = serde_json::to_string(r).map_err(|e| TrainerError::io(path, e.into()))?;
        writeln!(out, "{line}").map_err(|e| TrainerError::io(path, e))?;
    }
    out.flush().map_err(|e| TrainerError::io(path, e))
}

/// Writes `records` as JSON lines to `path` (replacing it), atomically.
pub fn write_samples(path: &Path, records: &[SampleRecord]) -> Result<(), TrainerError> {
    let tmp = path.with_extension("jsonl.tmp");
    let mut f = std::fs::File::create(&tmp).map_err(|e| TrainerError::io(&tmp, e))?;
    append_samples(&mut f, &tmp, records)?;
    f.sync_all().map_err(|e| TrainerError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| TrainerError::io(path, e))
}

/// A benchmark's scores, overall and by group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkSummary {
    /// Every prompt.
    pub overall: Scores,
    /// Prompts by their group column (prompts without one are only in `overall`).
    pub groups: BTreeMap<String, Scores>,
    /// Data records skipped as unreadable, each named by file and record number.
    #[serde(default)]
    pub skipped_records: Vec<String>,
}

/// Scores `records` (k per prompt) for every k of `ks` (each at most k).
pub fn summarize(
    records: &[SampleRecord],
    ks: &[usize],
    bootstrap: Bootstrap,
) -> Result<BenchmarkSummary, TrainerError> {
    let mut prompts: BTreeMap<u64, (Option<String>, PromptSamples)> = BTreeMap::new();
    for r in records {
        let e = prompts
            .entry(r.prompt)
            .or_insert_with(|| (r.group.clone(), PromptSamples::default()));
        e.1.correct.push(r.correct);
        e.1.answers.push(r.answer.clone());
    }
    let score = |ps: Vec<PromptSamples>| {
        Scores::of(&ps, ks, bootstrap).map_err(|e| TrainerError::Config {
            field: "k".into(),
            message: e.to_string(),
        })
    };
    let mut groups: BTreeMap<String, Vec<PromptSamples>> = BTreeMap::new();
    for (g, s) in prompts.values() {
        if let Some(g) = g {
            groups.entry(g.clone()).or_default().push(s.clone());
        }
    }
    Ok(BenchmarkSummary {
        overall: score(prompts.into_values().map(|(_, s)| s).collect())?,
        groups: groups
            .into_iter()
            .map(|(g, ps)| Ok((g, score(ps)?)))
            .collect::<Result<_, TrainerError>>()?,
        skipped_records: Vec::new(),
    })
}

/// The summary as a markdown table: one row per group and overall, columns avg@n, pass@k and
/// maj@k for each k, each as mean ± standard error.
pub fn markdown_table(summary: &BenchmarkSummary, ks: &[usize]) -> String {
    let mut head = vec![
        "set".to_string(),
        "prompts".into(),
        format!("avg@{}", summary.overall.samples),
    ];
    for k in ks {
        head.push(format!("pass@{k}"));
    }
    let with_maj = !summary.overall.maj_at.is_empty();
    if with_maj {
        for k in ks {
            head.push(format!("maj@{k}"));
        }
    }
    let mut out = format!("| {} |\n|{}\n", head.join(" | "), "---|".repeat(head.len()));
    let cell = |e: &rl_verifier::Estimate| format!("{:.3} ± {:.3}", e.mean, e.std_error);
    let rows = summary
        .groups
        .iter()
        .map(|(g, s)| (g.as_str(), s))
        .chain(std::iter::once(("overall", &summary.overall)));
    for (name, s) in rows {
        let mut row = vec![name.to_string(), s.avg.prompts.to_string(), cell(&s.avg)];
        for k in ks {
            row.push(s.pass_at.get(k).map(cell).unwrap_or_default());
        }
        if with_maj {
            for k in ks {
                row.push(s.maj_at.get(k).map(cell).unwrap_or_default());
            }
        }
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}
