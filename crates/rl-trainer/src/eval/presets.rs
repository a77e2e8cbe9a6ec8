//! Benchmark presets of `rlvr eval`: the `[data]` columns and answer format of a benchmark's
//! usual layout ([`apply_benchmark_preset`]), and the default list of k for pass@k and maj@k
//! ([`default_ks`]).

use rl_advantage::UnknownName;

use crate::TrainerError;
use crate::config::{AnswerFormat, DataSection};

/// The benchmark presets, by name: `aime` (problem, answer), `math500` (problem, the boxed
/// answer of solution, tier = level), `gsm8k` (question, the answer after ####), `dapo17k`
/// (prompt, reward_model.ground_truth).
pub const BENCHMARK_PRESETS: [&str; 4] = ["aime", "math500", "gsm8k", "dapo17k"];

/// Sets `data`'s prompt and answer columns, answer format and tier column to those of the
/// benchmark `preset` (one of [`BENCHMARK_PRESETS`]).
pub fn apply_benchmark_preset(data: &mut DataSection, preset: &str) -> Result<(), TrainerError> {
    let (prompt, answer, format, tier) = match preset {
        "aime" => ("problem", "answer", AnswerFormat::AsIs, None),
        "math500" => ("problem", "solution", AnswerFormat::Boxed, Some("level")),
        "gsm8k" => ("question", "answer", AnswerFormat::AfterHashes, None),
        "dapo17k" => (
            "prompt",
            "reward_model.ground_truth",
            AnswerFormat::AsIs,
            None,
        ),
        other => {
            return Err(TrainerError::Config {
                field: "preset".into(),
                message: UnknownName::new("benchmark preset", other, &BENCHMARK_PRESETS)
                    .to_string(),
            });
        }
    };
    data.prompt_key = prompt.into();
    data.answer_key = answer.into();
    data.answer_format = format;
    data.tier_key = tier.map(String::from);
    Ok(())
}

/// 1, the powers of two below `k`, and `k`.
pub fn default_ks(k: usize) -> Vec<usize> {
    let mut ks: Vec<usize> = std::iter::successors(Some(1usize), |x| Some(x * 2))
        .take_while(|&x| x < k)
        .collect();
    ks.push(k);
    ks.dedup();
    ks
}

/// Whether pass@k and maj@k can be estimated for every k of `ks` from `k` samples per prompt:
/// k ≥ 1 and each of `ks` in 1..=k.
pub fn ks_fit(k: usize, ks: &[usize]) -> bool {
    k >= 1 && ks.iter().all(|&x| (1..=k).contains(&x))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TrainConfig;

    #[test]
    fn default_ks_are_powers_of_two_and_k() {
        assert_eq!(default_ks(1), vec![1]);
        assert_eq!(default_ks(8), vec![1, 2, 4, 8]);
        assert_eq!(default_ks(12), vec![1, 2, 4, 8, 12]);
    }

    #[test]
    fn presets_set_columns_and_unknown_names_list_the_valid_ones() {
        let mut data = TrainConfig::default().data;
        apply_benchmark_preset(&mut data, "math500").unwrap();
        assert_eq!(
            (data.answer_key.as_str(), data.answer_format),
            ("solution", AnswerFormat::Boxed)
        );
        assert_eq!(data.tier_key.as_deref(), Some("level"));
        let e = apply_benchmark_preset(&mut data, "mmlu")
            .unwrap_err()
            .to_string();
        assert!(e.contains("mmlu") && e.contains("gsm8k"), "{e}");
    }
}
