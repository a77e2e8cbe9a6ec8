//! The data-mixing experiments shipped in crates/rl-lab/configs/ parse as `rlvr mix` reads them.

use rl_datamix::experiment::ExperimentConfig;

#[test]
fn shipped_configs_parse() {
    for (name, text) in [
        (
            "mix_synthetic.toml",
            include_str!("../configs/mix_synthetic.toml"),
        ),
        (
            "mix_sensitivity.toml",
            include_str!("../configs/mix_sensitivity.toml"),
        ),
    ] {
        let c = ExperimentConfig::from_toml(text, name).unwrap();
        assert_eq!((c.steps, c.seeds.len()), (1000, 3), "{name}");
    }
}
