//! The SmolLM2 job (`cargo run --example da3po_smollm2`) end to end at a tiny size: the model
//! from the fetch script's cache (`scripts/test.sh` fetches it), the prompt files, the settings
//! file with overrides, two DA3PO steps and the outputs a run leaves. Only the outputs' form is
//! checked, never the run's numbers.

use std::path::PathBuf;

use burn::backend::{Autodiff, Flex};
use rlvr::report::train_and_report;
use rlvr::smollm2::{SmolLm2Job, fetch_model};
use rlvr::trainer::tasks::ChatArithmetic;
use rlvr::trainer::{Run, TrainConfig, read_metrics};

const TINY: &str = r#"
steps = 2
[rollout]
group_size = 2
prompts_per_round = 2
max_new_tokens = 6
[batch]
groups_per_step = 2
[eval]
every = 2
k = 1
[checkpoint]
every = 2
keep = 1
"#;

#[test]
fn a_tiny_run_leaves_a_well_formed_run_folder() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let job = SmolLm2Job {
        model: fetch_model(&repo).unwrap(),
        out: dir.path().join("run"),
        algorithm: "da3po".into(),
        seed: 0,
        task: ChatArithmetic {
            train_per_tier: 4,
            eval_per_tier: 1,
            ..Default::default()
        },
        settings: rlvr::smollm2::SETTINGS,
        overrides: Some(TINY.into()),
    };
    let files = job.write_data().unwrap();
    let lines = |p: &PathBuf| std::fs::read_to_string(p).unwrap().lines().count();
    assert_eq!((lines(&files.train), lines(&files.eval)), (6 * 4, 6));

    let config = job.config(&files).unwrap();
    // the committed settings are what the job trains with, under the overrides
    assert_eq!(config.reward.verifier.name(), "last_number");
    assert_eq!((config.steps, config.rollout.group_size), (2, 2));
    assert!(config.data.chat_template);

    train_and_report::<Autodiff<Flex>>(Run::checkpoint(config).unwrap(), Default::default())
        .unwrap();

    let out = &job.out;
    let metrics = read_metrics(&out.join("metrics.jsonl")).unwrap();
    assert_eq!(
        metrics.iter().map(|m| m.step).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    for step in [0, 2] {
        let eval = metrics[step].eval.as_ref().expect("evaluated");
        assert_eq!(eval.tiers.len(), 6, "step {step}: one entry per tier");
        assert_eq!(eval.overall.prompts, 6);
        assert!((0.0..=1.0).contains(&eval.overall.avg_at_k));
    }
    assert!(metrics[1].responses_generated > 0);
    let png = std::fs::read(out.join("learning_curve.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let resolved = std::fs::read_to_string(out.join("config.toml")).unwrap();
    let again = TrainConfig::from_toml_str(&resolved, &TrainConfig::default()).unwrap();
    assert_eq!(again.steps, 2);
    assert!(
        std::fs::read_dir(out.join("checkpoints")).unwrap().count() > 0,
        "a checkpoint was written"
    );
}
