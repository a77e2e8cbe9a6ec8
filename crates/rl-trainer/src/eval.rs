//! avg@k and pass@k on held-out prompts, overall and by difficulty tier.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Accuracy of one set of prompts with k samples each.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TierEval {
    /// Prompts evaluated.
    pub prompts: usize,
    /// Samples per prompt.
    pub k: usize,
    /// avg@k: mean over prompts of the fraction of the k samples that are correct.
    pub avg_at_k: f64,
    /// pass@k: fraction of prompts with at least one correct sample among k.
    pub pass_at_k: f64,
}

/// An evaluation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EvalReport {
    /// All prompts.
    pub overall: TierEval,
    /// Per tier (prompts without a tier are only in `overall`).
    pub tiers: BTreeMap<String, TierEval>,
}

impl EvalReport {
    /// Builds the report from, per prompt, its tier and the correctness of its k samples.
    pub fn from_results(results: &[(Option<String>, Vec<bool>)]) -> Self {
        fn summarize<'a>(rows: impl Iterator<Item = &'a Vec<bool>>) -> TierEval {
            let mut t = TierEval::default();
            let (mut avg, mut pass) = (0.0, 0.0);
            for r in rows {
                t.prompts += 1;
                t.k = r.len();
                if !r.is_empty() {
                    avg += r.iter().filter(|&&c| c).count() as f64 / r.len() as f64;
                }
                if r.iter().any(|&c| c) {
                    pass += 1.0;
                }
            }
            if t.prompts > 0 {
                t.avg_at_k = avg / t.prompts as f64;
                t.pass_at_k = pass / t.prompts as f64;
            }
            t
        }
        let mut tiers = BTreeMap::new();
        let mut names: Vec<&String> = results.iter().filter_map(|(t, _)| t.as_ref()).collect();
        names.sort();
        names.dedup();
        for name in names {
            tiers.insert(
                name.clone(),
                summarize(
                    results
                        .iter()
                        .filter(|(t, _)| t.as_ref() == Some(name))
                        .map(|(_, r)| r),
                ),
            );
        }
        EvalReport {
            overall: summarize(results.iter().map(|(_, r)| r)),
            tiers,
        }
    }

    /// One line for the terminal.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "avg@{k} {:.3} pass@{k} {:.3}",
            self.overall.avg_at_k,
            self.overall.pass_at_k,
            k = self.overall.k
        );
        for (name, t) in &self.tiers {
            s.push_str(&format!(" | {name} {:.3}/{:.3}", t.avg_at_k, t.pass_at_k));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two "hard" prompts with k = 4: [1 of 4] and [0 of 4] → avg@4 = (0.25 + 0)/2 = 0.125,
    /// pass@4 = 1/2; one "easy" prompt with 4 of 4 → 1 and 1; overall avg = (0.25+0+1)/3.
    #[test]
    fn avg_and_pass_at_k() {
        let r = vec![
            (Some("hard".to_string()), vec![true, false, false, false]),
            (Some("hard".to_string()), vec![false; 4]),
            (Some("easy".to_string()), vec![true; 4]),
        ];
        let e = EvalReport::from_results(&r);
        assert_eq!(e.tiers["hard"].avg_at_k, 0.125);
        assert_eq!(e.tiers["hard"].pass_at_k, 0.5);
        assert_eq!(e.tiers["easy"].pass_at_k, 1.0);
        assert!((e.overall.avg_at_k - 1.25 / 3.0).abs() < 1e-12);
        assert!((e.overall.pass_at_k - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(e.overall.k, 4);
    }
}
