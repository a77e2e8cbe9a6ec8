//! Verifications per second on the labelled `math` corpus (crates/rl-verifier/tests/data/
//! math_corpus.jsonl: (gold, response) pairs in real answer formats) for both verifiers, and the
//! time of single adversarial verifications that the default budget must cut short.
//!
//! `cargo bench --bench verifier`. Each corpus iteration verifies every pair once, gold parsing
//! included: the work `tools/verifier/time_math_verify.py` times for math-verify (`parse(gold)`,
//! `parse(response)`, `verify`), so the two throughputs compare directly (docs/verifier.md).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rl_verifier::VerifierConfig;

fn corpus() -> Vec<(String, String)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/crates/rl-verifier/tests/data/math_corpus.jsonl"
    );
    std::fs::read_to_string(path)
        .expect("math corpus")
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("corpus line");
            (
                v["response"].as_str().expect("response").to_string(),
                v["gold"].as_str().expect("gold").to_string(),
            )
        })
        .collect()
}

/// Inputs that hit the budget (or come close): (name, response, gold).
fn adversarial() -> Vec<(&'static str, String, String)> {
    let boxed = |s: String| format!("\\boxed{{{s}}}");
    let join = |f: &dyn Fn(usize) -> String, n: std::ops::Range<usize>, sep: &str| {
        n.map(f).collect::<Vec<_>>().join(sep)
    };
    vec![
        (
            "harmonic_sum_3000",
            boxed(join(&|k| format!("\\frac{{1}}{{{k}}}"), 2..3000, "+")),
            "7".into(),
        ),
        (
            "sum_x_pow_k_3000",
            boxed(join(&|k| format!("x^{{{k}}}"), 2..3000, "+")),
            "7".into(),
        ),
        (
            "binomial_sum",
            boxed(join(
                &|k| format!("\\binom{{{}}}{{1000}}", 3000 + k),
                0..50,
                "+",
            )),
            "7".into(),
        ),
        (
            "factorial_fractions",
            boxed(join(
                &|k| format!("\\frac{{1}}{{{}!}}", 2000 + k),
                0..40,
                "+",
            )),
            "7".into(),
        ),
        (
            "nested_braces_10000",
            boxed(format!("{}1{}", "{".repeat(10_000), "}".repeat(10_000))),
            "1".into(),
        ),
        (
            "literal_10e100000",
            boxed(format!("1{}", "0".repeat(100_000))),
            "7".into(),
        ),
        ("power_10e100000", boxed("10^{100000}".into()), "7".into()),
        (
            "response_1mb",
            "We check each case in turn. ".repeat(1_000_000 / 28) + "\\boxed{42}",
            "42".into(),
        ),
    ]
}

fn bench(c: &mut Criterion) {
    let pairs = corpus();
    let mut group = c.benchmark_group("verify_math_corpus");
    group.throughput(Throughput::Elements(pairs.len() as u64));
    for name in ["math", "dapo"] {
        let verifier = VerifierConfig::from_name(name).unwrap().build().unwrap();
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut correct = 0usize;
                for (response, gold) in std::hint::black_box(&pairs) {
                    correct += usize::from(verifier.verify(response, gold).is_correct());
                }
                correct
            })
        });
    }
    group.finish();

    let math = VerifierConfig::from_name("math").unwrap().build().unwrap();
    let mut group = c.benchmark_group("verify_adversarial_math");
    group.sample_size(10);
    for (name, response, gold) in adversarial() {
        group.bench_function(name, |b| {
            b.iter(|| math.verify(std::hint::black_box(&response), &gold))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
