//! GAE against verl's own function.
//!
//! `tests/data/gae_verl.json` was written by `tools/verl/gen_verl_fixtures.py`, which calls verl
//! 0.9.1's `compute_gae_advantage_return` in float64 on 7 batches: uneven lengths (1 to 15 valid
//! tokens), outcome scores on the last valid token, a per-token KL penalty in the reward
//! (`kl_in_reward`), masks with observation holes, γ ∈ {1, 0.99, 0.95, 0.9, 0.7},
//! λ ∈ {1, 0.95, 0.9, 0.5, 0}, and random critic values on the padding columns after each
//! response (which a correct GAE never reads). Each response is stored up to its last valid token.
//!
//! Compared: the whitened advantage of every masked-in token and the return of every token.
//! Tolerance: |rlvr − verl| ≤ 1e-9·max(1, |verl|) (both float64; the fixture keeps 15
//! significant digits and the whitening sums run in another order).

use rl_advantage::gae::{Gae, TokenTrajectory};
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    source: String,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    gamma: f64,
    lam: f64,
    responses: Vec<Response>,
}

#[derive(Deserialize)]
struct Response {
    rewards: Vec<f64>,
    values: Vec<f64>,
    mask: Vec<bool>,
    advantages: Vec<Option<f64>>,
    returns: Vec<f64>,
}

/// The case's responses as GAE's inputs.
fn inputs(case: &Case) -> Vec<TokenTrajectory<'_>> {
    case.responses
        .iter()
        .map(|r| TokenTrajectory {
            rewards: &r.rewards,
            values: &r.values,
            mask: &r.mask,
        })
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn gae_equals_verl() {
    let text = include_str!("data/gae_verl.json");
    let fixture: Fixture = serde_json::from_str(text).unwrap();
    assert!(fixture.source.contains("compute_gae_advantage_return"));
    assert_eq!(fixture.cases.len(), 7);
    let mut tokens = 0;
    for case in &fixture.cases {
        let gae = Gae::new(case.gamma, case.lam).unwrap();
        let out = gae.batch(&inputs(case)).unwrap();
        for (i, r) in case.responses.iter().enumerate() {
            for (t, want) in r.advantages.iter().enumerate() {
                let got = out.advantages[i][t];
                match want {
                    Some(w) => {
                        tokens += 1;
                        assert!(
                            close(got, *w),
                            "{} response {i} token {t}: {got} vs verl {w}",
                            case.name
                        );
                    }
                    None => assert_eq!(got, 0.0, "{}: masked-out token {t}", case.name),
                }
            }
            for (t, (&got, &want)) in out.returns[i].iter().zip(&r.returns).enumerate() {
                assert!(
                    close(got, want),
                    "{} response {i} token {t}: return {got} vs verl {want}",
                    case.name
                );
            }
        }
    }
    // The masked-in tokens of the fixture (its non-null advantages).
    assert_eq!(tokens, 187);
}

/// Control: the fixture can tell GAE settings apart (λ = 1 instead of the case's λ moves the
/// advantages of the γ, λ < 1 case beyond the tolerance).
#[test]
fn another_lambda_does_not_match() {
    let fixture: Fixture = serde_json::from_str(include_str!("data/gae_verl.json")).unwrap();
    let case = fixture
        .cases
        .iter()
        .find(|c| c.name == "gamma_lam_below_one")
        .unwrap();
    let out = Gae::new(case.gamma, 1.0)
        .unwrap()
        .batch(&inputs(case))
        .unwrap();
    let worst = case
        .responses
        .iter()
        .enumerate()
        .flat_map(|(i, r)| {
            r.advantages
                .iter()
                .enumerate()
                .filter_map(move |(t, w)| w.map(|w| (i, t, w)))
        })
        .map(|(i, t, w)| (out.advantages[i][t] - w).abs())
        .fold(0.0, f64::max);
    assert!(worst > 1e-3, "{worst}");
}
