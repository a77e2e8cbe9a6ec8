//! A study as written in its TOML file ([`StudySpec`]: settings, budget, methods, ablation,
//! theorem probe), and what follows from it alone: the comparisons in the order they run
//! ([`plan`]) and each one's comparison spec ([`compare_spec`]).

use std::path::PathBuf;
use std::time::Instant;

use rl_trainer::config::ProbeSection;
use rl_trainer::tasks::demo::ArithmeticDemo;
use rl_trainer::{TrainConfig, TrainerError};
use serde::Deserialize;

use crate::compare::{CompareSpec, Variant, run_config};

pub(super) const BEGIN: &str = "<!-- rlvr study: begin -->";
pub(super) const END: &str = "<!-- rlvr study: end -->";

/// The study, as written in its TOML file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudySpec {
    /// Folder of the runs (one sub-folder per setting).
    pub out: PathBuf,
    /// Equal optimizer steps: every run makes this many updates. Exactly one of `steps` and
    /// `responses` is given.
    #[serde(default)]
    pub steps: Option<usize>,
    /// Equal generated responses: every run stops after the step in which its total of
    /// generated responses reaches this (the trainer's `rollout_budget`).
    #[serde(default)]
    pub responses: Option<usize>,
    /// Samples per held-out prompt (the k of avg@k); unset: the setting's demo's.
    #[serde(default)]
    pub eval_k: Option<usize>,
    /// The difference the study is powered to detect (avg@k of `tier`).
    pub delta: f64,
    /// The tier of the primary metric.
    pub tier: String,
    /// The setting of the primary comparison.
    pub primary: String,
    /// Name of the report section: its markers are `<!-- rlvr study NAME: begin -->` and
    /// `… end -->`. Unset: the DA3PO study's markers (`<!-- rlvr study: begin -->`).
    #[serde(default)]
    pub section: Option<String>,
    /// Heading of the report section (unset: "The pre-registered study: results").
    #[serde(default)]
    pub title: Option<String>,
    /// The run every method is paired with (unset: `dapo`, "DAPO").
    #[serde(default)]
    pub baseline: Option<Method>,
    /// The methods, each paired with the baseline by seed, in report order. Empty: the DA3PO
    /// study (`da3po` against `dapo`) in its own report layout.
    #[serde(default)]
    pub methods: Vec<Method>,
    /// The multiple-comparison correction over `methods`.
    #[serde(default)]
    pub correction: Correction,
    /// Task settings, in report order.
    pub settings: Vec<Setting>,
    /// The λ/τ ablation.
    pub ablation: Option<Ablation>,
    /// The theorem probe.
    pub theorem: Option<Theorem>,
}

/// One method of a study: a run name ([`crate::compare::Variant`]) and its label in the report.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Method {
    /// The run (`preset[:key=value]…`, also the run folder's name).
    pub run: String,
    /// Its name in the report.
    pub label: String,
}

/// How the decision intervals of several methods against one baseline are corrected.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Correction {
    /// Each method's decision uses the 95 % interval.
    #[default]
    None,
    /// Bonferroni: with m methods, each decision uses the 1 − 0.05/m interval, so the chance
    /// of any false verdict of difference over the family is at most 5 %.
    Bonferroni,
}

/// The family-wise level of every study.
pub const FAMILY_ALPHA: f64 = 0.05;

/// One task setting: demo overrides and the seeds of its DAPO/DA3PO pairs.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setting {
    /// Name (the run sub-folder).
    pub name: String,
    /// Overrides of the embedded run (TOML); none: the default demo.
    pub demo: Option<PathBuf>,
    /// Seeds of the DAPO/DA3PO pairs (each seed: one warm-start shared by its runs).
    pub seeds: Vec<u64>,
    /// One line for the report.
    pub description: String,
}

/// The λ × τ grid (λ = 1 is DAPO; λ = 2, τ = 0.5 is the primary DA3PO run).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ablation {
    /// Setting it runs in.
    pub setting: String,
    /// Seeds.
    pub seeds: Vec<u64>,
    /// DAA's λ values.
    pub lambdas: Vec<f64>,
    /// DAA's τ values.
    pub taus: Vec<f64>,
}

/// The theorem probe runs.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Theorem {
    /// Setting it runs in.
    pub setting: String,
    /// Algorithm preset of the probed runs (DAPO: dynamic sampling without DAA).
    pub algorithm: String,
    /// Seeds.
    pub seeds: Vec<u64>,
    /// Probed steps (1-based).
    pub steps: Vec<usize>,
    /// Extra samples per prompt.
    pub samples: usize,
}

impl StudySpec {
    /// Parses and checks a study file: the primary, ablation and theorem settings must exist.
    pub fn from_toml_str(text: &str) -> Result<Self, TrainerError> {
        let spec: Self = toml::from_str(text).map_err(|e| TrainerError::Config {
            field: "<study toml>".into(),
            message: e.to_string(),
        })?;
        let bad = |field: &str, message: String| TrainerError::Config {
            field: field.into(),
            message,
        };
        let known: Vec<&str> = spec.settings.iter().map(|s| s.name.as_str()).collect();
        let mut named = vec![("primary", spec.primary.as_str())];
        if let Some(a) = &spec.ablation {
            named.push(("ablation.setting", a.setting.as_str()));
        }
        if let Some(t) = &spec.theorem {
            named.push(("theorem.setting", t.setting.as_str()));
        }
        for (field, name) in named {
            if !known.contains(&name) {
                return Err(TrainerError::Config {
                    field: field.into(),
                    message: format!("unknown setting `{name}`; valid: {}", known.join(", ")),
                });
            }
        }
        match (spec.steps, spec.responses) {
            (Some(0), _) => return Err(bad("steps", "0 (must be >= 1)".into())),
            (_, Some(0)) => return Err(bad("responses", "0 (must be >= 1)".into())),
            (Some(_), None) | (None, Some(_)) => {}
            _ => {
                return Err(bad(
                    "steps",
                    "give exactly one budget: `steps` (equal optimizer steps) or `responses` \
                     (equal generated responses)"
                        .into(),
                ));
            }
        }
        if spec.eval_k == Some(0) {
            return Err(bad("eval_k", "0 (must be >= 1)".into()));
        }
        if let Some(name) = &spec.section
            && (name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        {
            return Err(bad(
                "section",
                format!("`{name}`: letters, digits, _ and - only (it goes into the markers)"),
            ));
        }
        let mut runs = vec![spec.baseline().run];
        for m in &spec.methods {
            if runs.contains(&m.run) {
                return Err(bad(
                    "methods",
                    format!("`{}` is listed twice (or is the baseline)", m.run),
                ));
            }
            runs.push(m.run.clone());
        }
        for r in &runs {
            Variant::parse(r)?;
        }
        if spec.methods.is_empty() && spec.correction != Correction::None {
            return Err(bad(
                "correction",
                "a correction needs `methods` (the DA3PO study has one comparison)".into(),
            ));
        }
        Ok(spec)
    }

    pub(super) fn setting(&self, name: &str) -> &Setting {
        self.settings
            .iter()
            .find(|s| s.name == name)
            .unwrap_or(&self.settings[0])
    }

    /// The baseline (`dapo` unless the file names another).
    pub fn baseline(&self) -> Method {
        self.baseline.clone().unwrap_or_else(|| Method {
            run: "dapo".into(),
            label: "DAPO".into(),
        })
    }

    /// The runs of every seed of a setting: the baseline first, then the methods (the DA3PO
    /// study: `dapo`, `da3po`).
    pub fn arms(&self) -> Vec<String> {
        if self.methods.is_empty() {
            return vec![self.baseline().run, "da3po".to_string()];
        }
        std::iter::once(self.baseline().run)
            .chain(self.methods.iter().map(|m| m.run.clone()))
            .collect()
    }

    /// The two-sided level of each method's decision interval: 0.05, or 0.05/m with Bonferroni
    /// over m methods.
    pub fn decision_alpha(&self) -> f64 {
        match self.correction {
            Correction::None => FAMILY_ALPHA,
            Correction::Bonferroni => FAMILY_ALPHA / self.methods.len().max(1) as f64,
        }
    }

    /// The budget of every run, in words.
    pub fn budget_words(&self) -> String {
        match (self.steps, self.responses) {
            (Some(s), _) => format!("{s} optimizer steps per run"),
            (None, Some(r)) => format!("{r} generated responses per run"),
            (None, None) => "no budget".into(),
        }
    }

    /// A setting's demo, with the study's `eval_k`.
    pub fn demo(&self, setting: &Setting) -> Result<ArithmeticDemo, TrainerError> {
        let mut demo = setting_demo(setting)?;
        if let Some(k) = self.eval_k {
            demo.train.eval.k = k;
        }
        Ok(demo)
    }

    /// Builds every planned run's configuration (first seed of each comparison), so that a run
    /// name the trainer cannot run is an error before anything trains, not a run that stays
    /// "missing".
    pub fn check(&self) -> Result<(), TrainerError> {
        for (setting, algos, seeds) in plan(self) {
            let demo = self.demo(self.setting(&setting))?;
            let cs = compare_spec(self, &setting, algos.clone(), seeds.clone(), None);
            for a in &algos {
                run_config(&cs, &demo, a, seeds.first().copied().unwrap_or(0))?;
            }
        }
        Ok(())
    }

    /// The resolved configuration of one run of the study (its folder is the config's
    /// `out_dir`; a finished run holds the config's TOML in `COMPLETE` there).
    pub fn resolve(
        &self,
        setting: &str,
        run: &str,
        seed: u64,
    ) -> Result<TrainConfig, TrainerError> {
        let demo = self.demo(self.setting(setting))?;
        let cs = compare_spec(self, setting, vec![run.to_string()], vec![seed], None);
        run_config(&cs, &demo, run, seed)
    }

    pub(super) fn markers(&self) -> (String, String) {
        match &self.section {
            None => (BEGIN.to_string(), END.to_string()),
            Some(n) => (
                format!("<!-- rlvr study {n}: begin -->"),
                format!("<!-- rlvr study {n}: end -->"),
            ),
        }
    }
}

/// The demo of a setting (default, or the default with its TOML overrides).
pub fn setting_demo(setting: &Setting) -> Result<ArithmeticDemo, TrainerError> {
    ArithmeticDemo::load(setting.demo.as_deref())
}

/// The run name of λ, τ in the ablation: DAPO for λ = 1, the primary DA3PO run for the paper's
/// defaults, else a `da3po:lambda=…:tau=…` variant.
pub fn ablation_algorithm(lambda: f64, tau: f64) -> String {
    if lambda == 1.0 {
        "dapo".into()
    } else if lambda == 2.0 && tau == 0.5 {
        "da3po".into()
    } else {
        format!("da3po:lambda={lambda}:tau={tau}")
    }
}

/// The comparisons of the study, in the order they are run: (setting, algorithms, seeds).
pub(super) fn plan(spec: &StudySpec) -> Vec<(String, Vec<String>, Vec<u64>)> {
    let mut out = Vec::new();
    if let Some(t) = &spec.theorem {
        out.push((
            t.setting.clone(),
            vec![format!("{}:probe", t.algorithm)],
            t.seeds.clone(),
        ));
    }
    let primary = spec.setting(&spec.primary);
    out.push((primary.name.clone(), spec.arms(), primary.seeds.clone()));
    for s in spec.settings.iter().filter(|s| s.name != spec.primary) {
        out.push((s.name.clone(), spec.arms(), s.seeds.clone()));
    }
    if let Some(a) = &spec.ablation {
        let mut algos: Vec<String> = Vec::new();
        for &l in &a.lambdas {
            for &t in &a.taus {
                let name = ablation_algorithm(l, t);
                if !algos.contains(&name) {
                    algos.push(name);
                }
            }
        }
        out.push((a.setting.clone(), algos, a.seeds.clone()));
    }
    out
}

/// The comparison spec of one setting: the study's budget (equal steps or equal generated
/// responses), no intermediate evaluation (held-out avg@k before and after training).
pub(super) fn compare_spec(
    spec: &StudySpec,
    setting: &str,
    algorithms: Vec<String>,
    seeds: Vec<u64>,
    deadline: Option<Instant>,
) -> CompareSpec {
    let probe = spec
        .theorem
        .as_ref()
        .map(|t| ProbeSection {
            steps: t.steps.clone(),
            samples: t.samples,
        })
        .unwrap_or_default();
    CompareSpec {
        algorithms,
        seeds,
        rollout_budget: spec.responses,
        budget_steps: spec.steps.unwrap_or(0),
        eval_every: 0,
        target: 1.0,
        out: spec.out.join(setting),
        steps: spec.steps,
        probe,
        deadline,
    }
}
