//! `rlvr advantages`: group advantages for JSON lines read on stdin.
//!
//! Input, one group per line: `{"group": "id", "rewards": [..], "correct": [..]}` (the group id
//! may be a string or an integer). Output, one line per accepted input line:
//! `{"group": "id", "advantages": [..], "kept": bool}` where `kept` is DAPO's dynamic-sampling
//! decision (0 < #correct < G). A bad line is reported on stderr with its line number and
//! field, nothing is written for it, the run continues, and the exit code is 2.

use rl_advantage::{AdvantageEstimator, EstimatorConfig, GroupId, NegativeAdvantage, StdMode};
use rl_sampler::{FilterConfig, GroupFilter};
use serde_json::{Value, json};

use super::{EXIT_BAD_INPUT, Io, LineError, json_lines};

/// Arguments of `rlvr advantages`.
#[derive(clap::Args, Debug)]
pub struct AdvantagesArgs {
    /// Estimator: grpo, dr_grpo, rloo, dapo, da3po, reinforce_plus_plus or
    /// reinforce_plus_plus_baseline.
    #[arg(long, default_value = "da3po")]
    pub estimator: String,
    /// DA3PO amplification factor lambda (da3po only; default 2).
    #[arg(long)]
    pub lambda: Option<f64>,
    /// DA3PO difficulty threshold tau (da3po only; default 0.5).
    #[arg(long)]
    pub tau: Option<f64>,
    /// DA3PO: what DAA does to a correct response whose advantage is negative (shaped rewards
    /// only): keep (default) or amplify (da3po only).
    #[arg(long)]
    pub negative_advantage: Option<String>,
    /// Std of the z-score: sample (Bessel, default) or population (grpo, dapo, da3po).
    #[arg(long)]
    pub std: Option<String>,
}

fn build(args: &AdvantagesArgs) -> Result<EstimatorConfig, rl_advantage::AdvantageError> {
    let mut cfg = EstimatorConfig::from_name(&args.estimator)?;
    if let Some(s) = &args.std {
        cfg = cfg.with_std(StdMode::from_name(s)?)?;
    }
    if args.lambda.is_some() || args.tau.is_some() {
        // The option not given keeps the estimator's value, or DAA's default for a layer.
        let d = cfg.daa_config().unwrap_or_default();
        let (l, t) = (d.lambda, d.tau);
        cfg = cfg.with_daa(args.lambda.unwrap_or(l), args.tau.unwrap_or(t))?;
    }
    if let Some(rule) = &args.negative_advantage {
        cfg = cfg.with_negative_advantage(NegativeAdvantage::from_name(rule)?)?;
    }
    // Validate λ, τ, ε now (group size 2 is the smallest legal one).
    cfg.build(2)?;
    Ok(cfg)
}

/// Runs `rlvr advantages`.
pub fn run(args: AdvantagesArgs, io: &mut Io<'_>) -> i32 {
    let cfg = match build(&args) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(io.stderr, "error: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let Ok(estimator) = cfg.build(2) else {
        return EXIT_BAD_INPUT;
    };
    let filter = FilterConfig::from_name("dynamic_sampling")
        .and_then(|f| f.build())
        .expect("the built-in filter configuration is valid");
    json_lines(io, |v| one_line(&v, &estimator, filter.as_ref()))
}

fn one_line(
    v: &Value,
    estimator: &dyn AdvantageEstimator,
    filter: &dyn GroupFilter,
) -> Result<Value, LineError> {
    let obj = v
        .as_object()
        .ok_or_else(|| LineError::field("<line>", "expected a JSON object"))?;
    let group = match obj.get("group") {
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => Value::Number(n.clone()),
        Some(_) => return Err(LineError::field("group", "expected a string or an integer")),
        None => return Err(LineError::field("group", "missing")),
    };
    let rewards: Vec<f64> = match obj.get("rewards") {
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(i, x)| {
                x.as_f64()
                    .ok_or_else(|| LineError::field(format!("rewards[{i}]"), "expected a number"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(LineError::field("rewards", "expected an array of numbers")),
        None => return Err(LineError::field("rewards", "missing")),
    };
    let correct: Vec<bool> = match obj.get("correct") {
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(i, x)| {
                x.as_bool().ok_or_else(|| {
                    LineError::field(format!("correct[{i}]"), "expected true or false")
                })
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(LineError::field("correct", "expected an array of booleans")),
        None => return Err(LineError::field("correct", "missing")),
    };
    if let Some(extra) = obj
        .keys()
        .find(|k| !["group", "rewards", "correct"].contains(&k.as_str()))
    {
        return Err(LineError::field(
            extra.clone(),
            "unknown field (expected group, rewards, correct)",
        ));
    }
    if correct.len() != rewards.len() {
        return Err(LineError::field(
            "correct",
            format!("{} flags for {} rewards", correct.len(), rewards.len()),
        ));
    }
    if rewards.len() < 2 {
        return Err(LineError::field(
            "rewards",
            "a group needs at least 2 responses",
        ));
    }
    let mut adv = vec![0.0; rewards.len()];
    estimator
        .group_advantages(GroupId(0), &rewards, &correct, &mut adv)
        .map_err(|e| LineError::field("rewards", e.to_string()))?;
    Ok(json!({
        "group": group,
        "advantages": adv,
        "kept": filter.keep(&rewards, &correct),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::EXIT_OK;

    fn run_str(args: AdvantagesArgs, input: &str) -> (i32, String, String) {
        crate::cli::run_captured(input, |io| run(args, io))
    }

    fn args(est: &str) -> AdvantagesArgs {
        AdvantagesArgs {
            estimator: est.into(),
            lambda: None,
            tau: None,
            std: None,
            negative_advantage: None,
        }
    }

    /// 1/0 rewards, G = 8: response 0 is correct (reward 1), response 1 is correct but fully
    /// length-penalised (reward 0), six are wrong (reward 0). p̂ = 2/8 < 0.5. Mean 1/8; deviations
    /// 7/8 and −1/8; Σ dev² = 49/64 + 7·1/64 = 7/8; sample std = √((7/8)/7) = √(1/8) = 0.3535534,
    /// plus ε = 1e-6: 0.3535544. Â_0 = 0.875/0.3535544 = 2.474867 → λ·Â_0 = 4.949733;
    /// Â_1 = −0.125/0.3535544 = −0.353552, kept by default and doubled to −0.707105 with
    /// `--negative-advantage amplify`.
    #[test]
    fn negative_advantage_of_a_correct_response_is_kept_unless_asked() {
        let input = r#"{"group": "q5", "rewards": [1,0,0,0,0,0,0,0], "correct": [true,true,false,false,false,false,false,false]}
"#;
        for (rule, expect_1) in [
            (None, -0.353552),
            (Some("keep"), -0.353552),
            (Some("amplify"), -0.707105),
        ] {
            let mut a = args("da3po");
            a.negative_advantage = rule.map(String::from);
            let (code, out, err) = run_str(a, input);
            assert_eq!(code, EXIT_OK, "{err}");
            let v: Value = serde_json::from_str(out.trim()).unwrap();
            let adv = &v["advantages"];
            assert!(
                (adv[0].as_f64().unwrap() - 4.949733).abs() < 1e-5,
                "{rule:?}: {adv}"
            );
            assert!(
                (adv[1].as_f64().unwrap() - expect_1).abs() < 1e-5,
                "{rule:?}: {adv}"
            );
            assert!(
                (adv[7].as_f64().unwrap() + 0.353552).abs() < 1e-5,
                "{rule:?}: {adv}"
            );
        }
    }

    /// DA3PO on G = 8 with 1 correct (p̂ = 1/8 < 0.5): the sample-std A+ 2.4749 is doubled to
    /// 4.9497 (algorithms.md §10.1); the all-correct group is not kept and is all zeros.
    #[test]
    fn writes_one_line_per_group() {
        let input = r#"{"group": "a", "rewards": [1,-1,-1,-1,-1,-1,-1,-1], "correct": [true,false,false,false,false,false,false,false]}
{"group": 7, "rewards": [1,1], "correct": [true,true]}
"#;
        let (code, out, err) = run_str(args("da3po"), input);
        assert_eq!(code, EXIT_OK, "{err}");
        let lines: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["group"], "a");
        assert!((lines[0]["advantages"][0].as_f64().unwrap() - 4.9497).abs() < 1e-4);
        assert_eq!(lines[0]["kept"], true);
        assert_eq!(lines[1]["group"], 7);
        assert_eq!(lines[1]["kept"], false);
        assert_eq!(lines[1]["advantages"], json!([0.0, 0.0]));
    }

    #[test]
    fn bad_lines_are_named_and_skipped() {
        let input = "{\"group\": \"ok\", \"rewards\": [1, 0], \"correct\": [true, false]}\n\
                     not json\n\
                     {\"group\": \"g\", \"rewards\": [1, \"x\"], \"correct\": [true, false]}\n\
                     {\"group\": \"g\", \"rewards\": [1, 0], \"correct\": [true]}\n\
                     {\"group\": \"g\", \"rewards\": [1, NaN], \"correct\": [true, false]}\n\
                     {\"rewards\": [1, 0], \"correct\": [true, false]}\n\
                     {\"group\": \"g\", \"rewards\": [1], \"correct\": [true]}\n\
                     {\"group\": \"last\", \"rewards\": [0, 1], \"correct\": [false, true]}\n";
        let (code, out, err) = run_str(args("grpo"), input);
        assert_eq!(code, EXIT_BAD_INPUT);
        assert_eq!(
            out.lines().count(),
            2,
            "only the good lines are written: {out}"
        );
        assert!(err.contains("line 2: invalid JSON"), "{err}");
        assert!(err.contains("line 3: field `rewards[1]`"), "{err}");
        assert!(err.contains("line 4: field `correct`"), "{err}");
        assert!(
            err.contains("line 5: invalid JSON"),
            "NaN is not JSON: {err}"
        );
        assert!(err.contains("line 6: field `group`: missing"), "{err}");
        assert!(err.contains("line 7: field `rewards`"), "{err}");
    }

    #[test]
    fn bad_arguments_name_the_option() {
        let (code, _, err) = run_str(args("ppo"), "");
        assert_eq!(code, EXIT_BAD_INPUT);
        assert!(
            err.contains(
                "valid names: grpo, dr_grpo, rloo, dapo, da3po, reinforce_plus_plus, \
                 reinforce_plus_plus_baseline"
            ),
            "{err}"
        );
        let mut a = args("grpo");
        a.lambda = Some(3.0);
        let (code, _, err) = run_str(a, "");
        assert_eq!(code, EXIT_BAD_INPUT);
        assert!(err.contains("lambda"), "{err}");
        let mut a = args("da3po");
        a.tau = Some(0.0);
        let (_, _, err) = run_str(a, "");
        assert!(err.contains("`tau`"), "{err}");
        // A DAA layer takes one option alone; the other keeps DAA's default (τ = 0.5).
        let mut a = args("reinforce_plus_plus");
        a.lambda = Some(3.0);
        let cfg = build(&a).unwrap();
        let d = cfg.daa_config().unwrap();
        assert_eq!(cfg.name(), "reinforce_plus_plus");
        assert_eq!((d.lambda, d.tau), (3.0, 0.5));
        let mut a = args("da3po");
        a.negative_advantage = Some("yes".into());
        let (code, _, err) = run_str(a, "");
        assert_eq!(code, EXIT_BAD_INPUT);
        assert!(
            err.contains("`negative_advantage`") && err.contains("keep, amplify"),
            "{err}"
        );
        let mut a = args("dapo");
        a.negative_advantage = Some("amplify".into());
        let (code, _, err) = run_str(a, "");
        assert_eq!(code, EXIT_BAD_INPUT);
        assert!(err.contains("a DAA setting"), "{err}");
    }
}
