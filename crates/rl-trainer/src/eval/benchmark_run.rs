//! A model evaluated on a benchmark file, as `rlvr eval` runs it: [`BenchmarkRun`] (what to
//! evaluate) → [`BenchmarkRun::prepare`] (tokenizer and prompts read, the k checked; no backend
//! yet) → [`PreparedBenchmark::run`] (k samples per prompt through the configured engine, each
//! verified and appended to `OUT/samples.jsonl`; the summary written to `OUT/summary.json` and
//! returned). Re-running with the same `out` skips the prompts whose samples are all in the file
//! and gives what an uninterrupted run would have given. Progress goes to the caller as
//! [`BenchmarkEvent`]s; the library prints nothing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use burn::tensor::backend::AutodiffBackend;
use rl_models::{CausalLm, Tokenizer};
use rl_verifier::Bootstrap;

use super::benchmark::{
    BenchmarkSettings, BenchmarkSummary, Scoring, append_samples, read_samples, sample_benchmark,
    summarize, write_samples,
};
use super::presets::ks_fit;
use crate::data::{Dataset, PromptRenderer};
use crate::multi_turn::Episodes;
use crate::trainer::{answer_line, stop_ids};
use crate::{Policy, TrainConfig, TrainerError, build_engine};

/// What to evaluate and how.
#[derive(Clone, Debug)]
pub struct BenchmarkRun {
    /// `[data]` (columns, template, chat template), `reward.verifier`, `[rollout.engine]`,
    /// `rollout.max_new_tokens`, and `[eval]`'s temperature, top-p and `max_prompts` (0: all).
    pub config: TrainConfig,
    /// An HF folder (config.json + safetensors) or a GGUF file.
    pub model: PathBuf,
    /// `tokenizer.json` (None: the GGUF's vocabulary or the folder's `tokenizer.json`).
    pub tokenizer: Option<PathBuf>,
    /// Prompts: JSON lines or Parquet.
    pub data: PathBuf,
    /// Output folder (`samples.jsonl`, `summary.json`; a managed engine's weights in `engine/`).
    pub out: PathBuf,
    /// Samples per prompt.
    pub k: usize,
    /// pass@k and maj@k for these k, each in 1..=k.
    pub ks: Vec<usize>,
    /// Prompt i's request is seeded from `seed` and i.
    pub seed: u64,
    /// Prompts per engine call (each call's samples are written before the next).
    pub prompts_per_call: usize,
    /// Bootstrap resamples of the prompts for the 95 % intervals.
    pub bootstrap: usize,
}

/// Progress of a [`PreparedBenchmark::run`].
#[derive(Clone, Copy, Debug)]
pub enum BenchmarkEvent<'a> {
    /// Sampling starts: `prompts` in all, `done` of them already in `samples`.
    Start {
        /// Prompts evaluated (after `max_prompts`).
        prompts: usize,
        /// Prompts whose samples the file already holds.
        done: usize,
        /// Samples per prompt.
        k: usize,
        /// The engine's name.
        engine: &'a str,
        /// The run's seed.
        seed: u64,
        /// The samples file.
        samples: &'a Path,
    },
    /// After an engine call: prompts sampled by this run so far, of `todo`.
    Sampled {
        /// Prompts sampled so far by this run.
        prompts: usize,
        /// Prompts this run samples.
        todo: usize,
        /// Seconds since sampling started.
        seconds: f64,
    },
}

/// A [`BenchmarkRun`] with its tokenizer and prompts read.
pub struct PreparedBenchmark {
    run: BenchmarkRun,
    tokenizer: Tokenizer,
    data: Dataset,
    /// The data records skipped as unreadable, each naming its line.
    pub skipped: Vec<String>,
}

impl BenchmarkRun {
    /// Checks the k, reads the tokenizer and the prompts (unreadable records are skipped and
    /// listed in [`PreparedBenchmark::skipped`]) and keeps the first `eval.max_prompts`.
    pub fn prepare(self) -> Result<PreparedBenchmark, TrainerError> {
        let (k, ks) = (self.k, &self.ks);
        if !ks_fit(k, ks) {
            return Err(TrainerError::Config {
                field: "ks".into(),
                message: format!("{ks:?} with k = {k} (each must be in 1..={k}, and k >= 1)"),
            });
        }
        let tokenizer = Tokenizer::for_model(&self.model, self.tokenizer.as_deref())?;
        let (mut data, skipped) =
            Dataset::load_skipping_bad_records(&self.data, &self.config.data)?;
        if self.config.eval.max_prompts > 0 {
            data.prompts.truncate(self.config.eval.max_prompts);
        }
        Ok(PreparedBenchmark {
            skipped: skipped.iter().map(|e| e.to_string()).collect(),
            run: self,
            tokenizer,
            data,
        })
    }
}

impl PreparedBenchmark {
    /// The k of pass@k and maj@k.
    pub fn ks(&self) -> &[usize] {
        &self.run.ks
    }

    /// Loads the model on `device`, starts the configured engine, samples and verifies the
    /// prompts the samples file does not hold yet, and summarises every prompt's samples (the
    /// file's prompts beyond `max_prompts` stay in it but are not scored).
    pub fn run<B: AutodiffBackend>(
        self,
        device: &B::Device,
        on_event: &mut dyn FnMut(BenchmarkEvent<'_>),
    ) -> Result<BenchmarkSummary, TrainerError> {
        let PreparedBenchmark {
            run,
            tokenizer,
            data,
            skipped,
        } = self;
        let BenchmarkRun {
            mut config,
            model,
            out,
            k,
            ks,
            seed,
            prompts_per_call,
            bootstrap,
            ..
        } = run;
        std::fs::create_dir_all(&out).map_err(|e| TrainerError::io(&out, e))?;
        // A managed engine writes its weights under out_dir.
        config.out_dir = out.join("engine");
        let policy = <CausalLm<B> as Policy<B>>::load(&model, device)?;
        let allowed = tokenizer.num_defined_ids().min(policy.vocab_size());
        let mut engine = build_engine(&config, &policy, &tokenizer, allowed, 0)?;
        let verifier = config.build_verifier()?;
        let end_ids = stop_ids(&config, &tokenizer)?;
        let answer_line = answer_line(&config, &tokenizer)?;
        let samples_path = out.join("samples.jsonl");
        let mut records = read_samples(&samples_path, k)?;
        // Keep only whole prompts (a file cut short mid-prompt loses that prompt's partial lines).
        write_samples(&samples_path, &records)?;
        let done: BTreeSet<u64> = records.iter().map(|r| r.prompt).collect();
        let settings = BenchmarkSettings {
            k,
            params: config.eval_sampling(&end_ids, answer_line.as_ref()),
            seed,
            prompts_per_call,
        };
        let todo = data
            .prompts
            .iter()
            .filter(|p| !done.contains(&p.id))
            .count();
        on_event(BenchmarkEvent::Start {
            prompts: data.len(),
            done: data.len() - todo,
            k,
            engine: &engine.name(),
            seed,
            samples: &samples_path,
        });
        let t0 = Instant::now();
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&samples_path)
            .map_err(|e| TrainerError::io(&samples_path, e))?;
        let episodes = Episodes::of(&config)?;
        let renderer =
            PromptRenderer::new(&config.data).with_tools(Episodes::prompt_tools(episodes.as_ref()));
        let scoring = Scoring {
            renderer: &renderer,
            tokenizer: &tokenizer,
            end_ids: &end_ids,
            verifier: verifier.as_ref(),
            episodes: episodes.as_ref(),
            enable_thinking: renderer.enable_thinking(),
        };
        sample_benchmark(
            &mut |requests| Ok(engine.generate(&requests)?),
            &data.prompts,
            &scoring,
            &settings,
            &done,
            |batch, sampled| {
                append_samples(&mut file, &samples_path, batch)?;
                records.extend_from_slice(batch);
                on_event(BenchmarkEvent::Sampled {
                    prompts: sampled,
                    todo,
                    seconds: t0.elapsed().as_secs_f64(),
                });
                Ok(())
            },
        )?;
        let ids: BTreeSet<u64> = data.prompts.iter().map(|p| p.id).collect();
        records.retain(|r| ids.contains(&r.prompt));
        let mut summary = summarize(
            &records,
            &ks,
            Bootstrap {
                resamples: bootstrap,
                seed,
            },
        )?;
        summary.skipped_records = skipped;
        let summary_path = out.join("summary.json");
        let json = serde_json::to_string_pretty(&summary)
            .map_err(|e| TrainerError::io(&summary_path, e.into()))?;
        std::fs::write(&summary_path, json).map_err(|e| TrainerError::io(&summary_path, e))?;
        Ok(summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every k of pass@k must be in 1..=k, checked before any file is read.
    #[test]
    fn pass_at_k_beyond_k_is_a_config_error() {
        for (k, ks) in [(2, vec![3]), (4, vec![0, 2]), (0, vec![])] {
            let run = BenchmarkRun {
                config: TrainConfig::default(),
                model: PathBuf::from("no-model"),
                tokenizer: None,
                data: PathBuf::from("no-data.jsonl"),
                out: PathBuf::from("no-out"),
                k,
                ks,
                seed: 0,
                prompts_per_call: 1,
                bootstrap: 0,
            };
            match run.prepare() {
                Err(TrainerError::Config { field, .. }) => assert_eq!(field, "ks"),
                Err(e) => panic!("k = {k}: {e}"),
                Ok(_) => panic!("k = {k}: accepted"),
            }
        }
    }
}
