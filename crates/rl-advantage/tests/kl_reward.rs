//! The KL penalty in the reward against verl's own `apply_kl_penalty`.
//!
//! `tests/data/kl_reward_verl.json` was written by `tools/verl/gen_verl_fixtures.py`: verl 0.9.1's
//! `apply_kl_penalty` (ray_trainer.py) with `AdaptiveKLController` (β 0.05, target 0.1, horizon 10,
//! estimator `kl`; β 0.2, target 6, horizon 5, `low_var_kl`, so the error clips the other way) and
//! `FixedKLController` (`abs`, `mse`), each over two or three successive batches through one
//! controller, masks with observation holes in the second batch, float64. Compared: every reward,
//! the β each batch used, the batch KL and β after it. Tolerance 1e-9·max(1, |verl|).

use rl_advantage::kl_reward::{KlControl, KlInReward, KlPenalty, KlRewardInput};
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
struct Fixture {
    source: String,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    controller: Value,
    penalty: String,
    batches: Vec<Batch>,
}

#[derive(Deserialize)]
struct Batch {
    responses: Vec<Response>,
    beta_used: f64,
    kl: f64,
    beta_after: f64,
}

#[derive(Deserialize)]
struct Response {
    scores: Vec<f64>,
    logp: Vec<f64>,
    ref_logp: Vec<f64>,
    mask: Vec<bool>,
    rewards: Vec<f64>,
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn kl_in_reward_equals_verl() {
    let fixture: Fixture = serde_json::from_str(include_str!("data/kl_reward_verl.json")).unwrap();
    assert!(fixture.source.contains("apply_kl_penalty"));
    assert_eq!(fixture.cases.len(), 4);
    let mut moved = 0;
    for case in &fixture.cases {
        let penalty = match case.penalty.as_str() {
            "kl" => KlPenalty::Kl,
            "abs" => KlPenalty::Abs,
            "mse" => KlPenalty::Mse,
            "low_var_kl" => KlPenalty::LowVarKl,
            other => panic!("{other}"),
        };
        let c = &case.controller;
        let control = match c["kind"].as_str().unwrap() {
            "adaptive" => KlControl::Adaptive {
                target: c["target"].as_f64().unwrap(),
                horizon: c["horizon"].as_f64().unwrap(),
            },
            _ => KlControl::Fixed,
        };
        let mut k = KlInReward::new(c["beta"].as_f64().unwrap(), penalty, control).unwrap();
        for (b, batch) in case.batches.iter().enumerate() {
            let inputs: Vec<KlRewardInput<'_>> = batch
                .responses
                .iter()
                .map(|r| KlRewardInput {
                    scores: &r.scores,
                    logp: &r.logp,
                    ref_logp: &r.ref_logp,
                    mask: &r.mask,
                })
                .collect();
            let out = k.apply(&inputs).unwrap();
            let at = format!("{} batch {b}", case.name);
            assert!(
                close(out.beta, batch.beta_used),
                "{at}: beta {} vs {}",
                out.beta,
                batch.beta_used
            );
            assert!(
                close(out.kl, batch.kl),
                "{at}: kl {} vs {}",
                out.kl,
                batch.kl
            );
            assert!(
                close(k.beta, batch.beta_after),
                "{at}: beta after {} vs {}",
                k.beta,
                batch.beta_after
            );
            moved += usize::from(batch.beta_after != batch.beta_used);
            for (i, r) in batch.responses.iter().enumerate() {
                for (t, (&got, &want)) in out.rewards[i].iter().zip(&r.rewards).enumerate() {
                    assert!(
                        close(got, want),
                        "{at} response {i} token {t}: {got} vs verl {want}"
                    );
                }
            }
        }
    }
    // The adaptive cases moved β after each of their six batches.
    assert_eq!(moved, 6);
}
