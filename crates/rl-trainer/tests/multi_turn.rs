//! Multi-turn episodes in the trainer (docs/agents.md):
//! - tool prompts and observation ids against HF transformers' rendering of Qwen3's template;
//! - a hand-built two-turn trajectory: the trainer scores the exact concatenation of the
//!   sampled and observation ids (its π_old at every sampled token equals the engine's
//!   log-prob, which re-tokenising would break), and the loss, token counts and gradient equal
//!   a hand-written loss over the sampled tokens only;
//! - a short run with a scripted engine that calls the calculator: metrics and evaluation.

use std::path::PathBuf;
use std::sync::Arc;

use burn::optim::GradientsParams;
use burn::prelude::*;
use rl_env::{EpisodeEnd, Message, Trajectory, TurnCodec, render_tool_call};
use rl_loss::IsCorrection;
use rl_models::{CausalLm, ChatMessage, EntropyMode, MemoryPlan, Tokenizer};
use rl_rollout::{
    Completion, EngineError, FinishReason, GenerateRequest, RolloutEngine, SamplingParams,
    WeightVersion, WeightsKind, WeightsRef,
};
use rl_sampler::RolloutGroup;
use rl_trainer::data::{Dataset, PromptRenderer};
use rl_trainer::multi_turn::ChatCodec;
use rl_trainer::optim::{AdamWOptimizer, clip_grad_norm};
use rl_trainer::policy_update::{OldLogprobs, TrainSeq, UpdateSettings, counts, policy_update};
use rl_trainer::scoring::{RoundPrompt, Scorer};
use rl_trainer::tasks::ToolUseDemo;
use rl_trainer::tasks::tool_use::prompt;
use rl_trainer::{Policy, TrainConfig, Trainer};

mod common;
use common::B;

fn qwen3_tokenizer() -> Tokenizer {
    let path = std::env::var_os("RLVR_QWEN3_TOKENIZER")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../.cache/qwen3-tokenizer/tokenizer.json")
        });
    Tokenizer::from_file(&path).unwrap_or_else(|e| {
        panic!(
            "the real Qwen3 tokenizer is missing at {}: run scripts/fetch-qwen3-tokenizer.sh: {e}",
            path.display()
        )
    })
}

/// tests/data/qwen3_tool_chat.json, written by tools/agents/gen_tool_chat_fixture.py with HF
/// transformers 5.24 and Qwen3's own chat template.
fn fixture(case: &str) -> (String, Vec<u32>) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/qwen3_tool_chat.json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let c = &v["cases"][case];
    (
        c["text"].as_str().unwrap().to_string(),
        c["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as u32)
            .collect(),
    )
}

fn tool_json(names: &[&str]) -> Vec<String> {
    names
        .iter()
        .map(|n| {
            let def = match *n {
                "calculator" => rl_env::Tool::definition(&rl_env::tools::Calculator::default()),
                _ => rl_env::tools::python::definition(),
            };
            rl_env::pyjson::dumps_ordered(&def, &rl_env::pyjson::TOOL_KEY_ORDER)
        })
        .collect()
}

fn args(expr: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("expression".into(), expr.into());
    m
}

/// The prompt with tools, and after a turn the observation ids, are what transformers'
/// `apply_chat_template(..., tools=...)` gives for the whole conversation: the prompt ids, the
/// assistant's call as the template writes it (standing in for sampled ids) and our
/// observation ids concatenate to the template's ids, with and without thinking.
#[test]
fn tool_prompts_and_observations_match_transformers() {
    let tok = qwen3_tokenizer();
    let im_end = tok.special_id("<|im_end|>").unwrap();
    let user = [ChatMessage::user("What is 347*58?")];
    let end_ids = rl_trainer::end_token_ids(&tok);

    let (text, ids) = fixture("prompt_with_tools");
    let tools = tool_json(&["calculator", "python"]);
    assert_eq!(
        rl_models::render_chat_with_tools(&user, &tools, true, true).unwrap(),
        text
    );
    assert_eq!(
        tok.apply_chat_template_with_tools(&user, &tools, true, true)
            .unwrap(),
        ids
    );

    let (text, ids) = fixture("system_and_tools");
    let sys = [
        ChatMessage::system("You are a careful assistant."),
        ChatMessage::user("What is 347*58?"),
    ];
    let calc = tool_json(&["calculator"]);
    assert_eq!(
        rl_models::render_chat_with_tools(&sys, &calc, true, true).unwrap(),
        text
    );
    assert_eq!(
        tok.apply_chat_template_with_tools(&sys, &calc, true, true)
            .unwrap(),
        ids
    );

    for (case, calls, results, thinking) in [
        ("one_call", vec!["347*58"], vec!["20126"], true),
        (
            "two_calls",
            vec!["347*58", "python"],
            vec!["20126", "20126\n"],
            true,
        ),
        ("one_call_no_thinking", vec!["2*3"], vec!["6"], false),
    ] {
        let append_only = thinking;
        let (_, expected) = fixture(case);
        let names: Vec<&str> = if case == "two_calls" {
            vec!["calculator", "python"]
        } else {
            vec!["calculator"]
        };
        let prompt = tok
            .apply_chat_template_with_tools(&user, &tool_json(&names), true, thinking)
            .unwrap();
        let turn: Vec<String> = calls
            .iter()
            .map(|c| {
                if *c == "python" {
                    let mut m = serde_json::Map::new();
                    m.insert("code".into(), "print(347*58)".into());
                    render_tool_call("python", &m)
                } else {
                    render_tool_call("calculator", &args(c))
                }
            })
            .collect();
        let mut sampled = tok.encode(&turn.join("\n")).unwrap();
        sampled.push(im_end);
        let codec = ChatCodec {
            tokenizer: &tok,
            end_ids: &end_ids,
            enable_thinking: thinking,
        };
        let messages: Vec<Message> = results.iter().map(|r| Message::tool(*r)).collect();
        let obs = codec.observation_ids(&messages).unwrap();
        if append_only {
            assert_eq!([prompt, sampled, obs].concat(), expected, "{case}");
        } else {
            // With thinking off the template is not append-only: the model sampled its turn
            // after `<|im_start|>assistant\n<think>\n\n</think>\n\n` (the prompt, as the
            // template renders it for generation), but re-rendering the conversation drops
            // that empty think block from the finished turn. Re-tokenising would shift every
            // later position by its 4 tokens; the trajectory keeps what was sampled.
            let (_, prompt_expected) = fixture("prompt_no_thinking");
            assert_eq!(prompt, prompt_expected);
            let tail = [sampled.clone(), obs.clone()].concat();
            assert!(
                expected.ends_with(&tail),
                "{case}: the turn and observation"
            );
            let think = tok.encode("<think>\n\n</think>\n\n").unwrap();
            assert_eq!(think.len(), 4);
            assert!(prompt.ends_with(&think));
            let reconstructed = [
                &prompt[..prompt.len() - think.len()],
                sampled.as_slice(),
                obs.as_slice(),
            ]
            .concat();
            assert_eq!(
                reconstructed, expected,
                "{case}: all but the dropped think block"
            );
        }
    }
}

/// A tiny model over the tool-use tokenizer, and a trainer on two prompts with `[rollout.env]`
/// (calculator), π_old from each update's own forward, no importance correction; the trainer
/// writes into the returned temporary folder.
fn tool_trainer(out: &str, steps: usize) -> (Trainer<B, CausalLm<B>>, Tokenizer, common::TmpDir) {
    let demo = ToolUseDemo::default();
    let data = demo.data().unwrap();
    let model: CausalLm<B> = data.model.init_seeded(3, &Default::default()).unwrap();
    let mut c: TrainConfig = demo.train.clone();
    let dir = common::tmp("episodes", out);
    c.out_dir = dir.to_path_buf();
    c.steps = steps;
    c.rollout.group_size = 2;
    c.rollout.prompts_per_round = 2;
    c.rollout.max_new_tokens = 12;
    c.batch.groups_per_step = 2;
    c.batch.max_gen_rounds = 1;
    c.eval.every = 0;
    c.eval.k = 2;
    let train = Dataset {
        prompts: vec![
            prompt(0, "347*58", "20126", "product"),
            prompt(1, "12+30", "42", "sum"),
        ],
    };
    let eval = train.clone();
    let tok = data.tokenizer.clone();
    let t = Trainer::new(
        c,
        model,
        data.tokenizer,
        train,
        Some(eval),
        Default::default(),
    )
    .unwrap();
    (t, tok, dir)
}

/// One engine call, one sample: `prompt` continued with `seed`.
fn sample(engine: &mut dyn RolloutEngine, prompt: Vec<u32>, seed: u64, stop: &[u32]) -> Completion {
    let mut out = engine
        .generate(&[GenerateRequest {
            prompt_ids: prompt,
            n: 1,
            params: SamplingParams {
                max_new_tokens: 12,
                stop_ids: stop.to_vec(),
                seed,
                ..SamplingParams::default()
            },
        }])
        .unwrap();
    out.remove(0).remove(0)
}

/// Two turns sampled by the in-process engine around a hand-rendered calculator observation;
/// returns the prompt and the trajectory.
fn hand_built_episode(
    t: &Trainer<B, CausalLm<B>>,
    tok: &Tokenizer,
    problem: &str,
    seed: u64,
) -> (Vec<u32>, Trajectory) {
    let renderer = PromptRenderer::new(&t.config().data);
    let prompt_ids = renderer.render(&prompt(0, problem, "0", "x"), tok).unwrap();
    let end_ids = rl_trainer::end_token_ids(tok);
    let codec = ChatCodec {
        tokenizer: tok,
        end_ids: &end_ids,
        enable_thinking: true,
    };
    let mut engine = t.local_engine();
    let mut traj = Trajectory::default();
    let c1 = sample(&mut engine, prompt_ids.clone(), seed, &end_ids);
    traj.push_turn(&c1);
    let obs = codec.observation_ids(&[Message::tool("20126")]).unwrap();
    traj.push_observation(&obs);
    let c2 = sample(
        &mut engine,
        [prompt_ids.clone(), traj.tokens.clone()].concat(),
        seed + 1,
        &end_ids,
    );
    traj.push_turn(&c2);
    traj.end = EpisodeEnd::Done;
    traj.check().unwrap();
    // By construction: the trajectory is the two samples around the observation, verbatim.
    assert_eq!(
        traj.tokens,
        [c1.tokens.clone(), obs.clone(), c2.tokens.clone()].concat()
    );
    assert_eq!(traj.sampled_len(), c1.tokens.len() + c2.tokens.len());
    (prompt_ids, traj)
}

#[test]
fn a_two_turn_episode_trains_on_exactly_its_sampled_tokens() {
    let (t, tok, _dir) = tool_trainer("hand", 1);
    let (prompt_ids, ep1) = hand_built_episode(&t, &tok, "347*58", 11);
    let (_, ep2) = hand_built_episode(&t, &tok, "347*58", 29);
    let end_ids = rl_trainer::end_token_ids(&tok);
    let verifier = t.config().build_verifier().unwrap();
    let scorer = Scorer {
        verifier: verifier.as_ref(),
        rewards: t.config().reward_map(),
        overlong: t.config().reward.overlong,
        tokenizer: &tok,
        end_ids: &end_ids,
        multi_turn: true,
        parallelism: 1,
    };
    let round = RoundPrompt {
        index: 0,
        ids: Arc::new(prompt_ids.clone()),
        answer: "20126",
        tier: None,
    };
    let mut outcomes = Default::default();
    let r1 = scorer.score(&round, ep1.clone(), &mut outcomes).unwrap();
    let r2 = scorer.score(&round, ep2.clone(), &mut outcomes).unwrap();
    // The scored response is the trajectory, and its mask the sampled positions.
    assert_eq!(r1.response, ep1.tokens);
    assert_eq!(r1.sampled.as_deref(), Some(ep1.sampled.as_slice()));
    assert_eq!(r1.episode.as_ref().unwrap().turns, 2);
    assert_eq!(r1.sampled_len(), ep1.sampled_len());

    // π_old over prompt + trajectory at every sampled token = the engine's log-prob of it,
    // sampled from prompt + everything before it: the trainer's sequence is the engine's.
    let group = RolloutGroup {
        group: rl_advantage::GroupId(0),
        prompt: 0,
        items: vec![r1.clone(), r2.clone()],
    };
    let behaviour = t.behaviour_two_pass(std::slice::from_ref(&group)).unwrap();
    for (ep, old) in [
        (&ep1, &behaviour.logprobs.old[0]),
        (&ep2, &behaviour.logprobs.old[1]),
    ] {
        assert_eq!(old.len(), ep.len());
        for j in (0..ep.len()).filter(|&j| ep.sampled[j]) {
            assert!(
                (old[j] - ep.logprobs[j]).abs() < 1e-4,
                "token {j}: trainer {} engine {}",
                old[j],
                ep.logprobs[j]
            );
        }
    }

    // One update, π_old from its own forward (ratio 1), token-mean: by hand the loss is
    // −(A₁·n₁ + A₂·n₂)/(n₁ + n₂) over the sampled counts n, and its gradient is that of
    // −Σᵢ Aᵢ Σ_{t sampled} log π(t) / (n₁ + n₂).
    let (a1, a2) = (1.0f32, -0.5f32);
    let (n1, n2) = (ep1.sampled_len(), ep2.sampled_len());
    fn seq<'a>(
        prompt: &'a [u32],
        r: &'a rl_trainer::scoring::ScoredResponse,
        a: f32,
    ) -> TrainSeq<'a> {
        TrainSeq {
            prompt,
            response: &r.response,
            old_logp: &[],
            rollout_logp: &r.rollout_logp,
            ref_logp: None,
            advantage: a,
            token_advantages: None,
            train: true,
            is_weights: None,
            keep: None,
            sampled: r.sampled.as_deref(),
        }
    }
    let seqs = [seq(&prompt_ids, &r1, a1), seq(&prompt_ids, &r2, a2)];
    assert_eq!(counts(&seqs).tokens, n1 + n2);
    let mut cfg = t.config().clone();
    cfg.optim.grad_clip = 0.0;
    let policy = t.policy().clone();
    let mut optim = AdamWOptimizer::<B, CausalLm<B>>::new(&cfg.optim);
    let out = policy_update(
        policy.clone(),
        &mut optim,
        UpdateSettings {
            lr: 1e-4,
            loss: &cfg.loss,
            micro_batch: 8,
            micro_batch_tokens: 0,
            memory: MemoryPlan::default(),
            temperature: 1.0,
            old: OldLogprobs::ThisForward(IsCorrection::None),
        },
        &seqs,
        &Default::default(),
    )
    .unwrap();
    let hand = -(a1 as f64 * n1 as f64 + a2 as f64 * n2 as f64) / (n1 + n2) as f64;
    assert!(
        (out.metrics.loss - hand).abs() < 1e-6,
        "{} vs {hand}",
        out.metrics.loss
    );
    assert_eq!(out.metrics.tokens, n1 + n2);

    let reference_norm = |mask_observations: bool| {
        let ids: Vec<Vec<u32>> = [&ep1, &ep2]
            .iter()
            .map(|e| [prompt_ids.clone(), e.tokens.clone()].concat())
            .collect();
        let width = ep1.len().max(ep2.len());
        let starts = vec![prompt_ids.len() - 1; 2];
        let lp = policy
            .logprobs(&ids, &starts, width, EntropyMode::None, 1.0)
            .unwrap()
            .logprobs;
        let mut w = vec![0f32; 2 * width];
        for (i, (e, a)) in [(&ep1, a1), (&ep2, a2)].into_iter().enumerate() {
            for j in 0..e.len() {
                if e.sampled[j] || !mask_observations {
                    w[i * width + j] = -a / (n1 + n2) as f32;
                }
            }
        }
        let w = Tensor::<B, 2>::from_data(TensorData::new(w, [2, width]), &Default::default());
        let loss = (lp * w).sum();
        let mut grads = GradientsParams::from_grads(loss.backward(), &policy);
        clip_grad_norm(&policy, &mut grads, 0.0)
    };
    let masked = reference_norm(true);
    assert!(
        (out.grad_norm - masked).abs() <= 1e-4 * masked.max(1.0),
        "update {} vs hand-written {masked}",
        out.grad_norm
    );
    // The observation tokens matter: training on them would give another gradient.
    assert!((reference_norm(false) - masked).abs() > 1e-3 * masked);
}

/// An engine for the trainer tests: each sample's text is `reply(context, k)` — the decoded
/// request prompt and the sample's index in its request — followed by `<|im_end|>`, with
/// log-prob −0.5 per token.
struct Scripted {
    tok: Tokenizer,
    version: WeightVersion,
    reply: fn(&str, usize) -> String,
}

impl RolloutEngine for Scripted {
    fn name(&self) -> String {
        "scripted".into()
    }

    fn generate(
        &mut self,
        requests: &[GenerateRequest],
    ) -> Result<Vec<Vec<Completion>>, EngineError> {
        let im_end = self.tok.special_id("<|im_end|>").unwrap();
        Ok(requests
            .iter()
            .map(|r| {
                let seen = self.tok.decode(&r.prompt_ids, false).unwrap();
                (0..r.n)
                    .map(|k| {
                        let mut tokens = self.tok.encode(&(self.reply)(&seen, k)).unwrap();
                        tokens.push(im_end);
                        Completion {
                            logprobs: vec![-0.5; tokens.len()],
                            tokens,
                            finish: FinishReason::Stop,
                            version: self.version,
                        }
                    })
                    .collect()
            })
            .collect())
    }

    fn update_weights(
        &mut self,
        _weights: WeightsRef,
        version: WeightVersion,
    ) -> Result<WeightVersion, EngineError> {
        self.version = version;
        Ok(version)
    }

    fn version(&self) -> WeightVersion {
        self.version
    }

    fn weights_kind(&self) -> WeightsKind {
        WeightsKind::InProcess
    }
}

/// The first turn of every episode calls the calculator on the user's problem; a later turn
/// answers with the result it was shown.
fn tool_caller(seen: &str, _k: usize) -> String {
    let problem = seen
        .split("<|im_start|>user\n")
        .nth(1)
        .and_then(|s| s.split("<|im_end|>").next())
        .unwrap_or_default();
    match seen.rsplit("<tool_response>\n").next() {
        Some(rest) if seen.contains("<tool_response>") => {
            format!("Answer: {}", rest.split('\n').next().unwrap_or_default())
        }
        _ => render_tool_call("calculator", &args(problem)),
    }
}

/// Python: the first sample of every request a correct `a + b` reader, the others a program
/// that prints the product (wrong unless a + b = a·b).
fn code_writer(_seen: &str, k: usize) -> String {
    let op = if k == 0 { "+" } else { "*" };
    format!("```python\na, b = map(int, input().split())\nprint(a {op} b)\n```")
}

/// Two training steps where every episode calls the calculator, then answers with its result:
/// two turns each, every answer correct, the observations masked out of the trained tokens,
/// and the evaluation (through the same engine and environment) reports the tool-call rate.
#[test]
fn a_run_with_tool_calls_reports_turns_and_tool_use() {
    let (t, tok, _dir) = tool_trainer("run", 2);
    // Every answer is right: without a filter the uniform groups are trained on (advantage 0).
    let mut cfg = t.config().clone();
    cfg.filter = rl_sampler::FilterConfig::None;
    let demo = ToolUseDemo::default();
    let data = demo.data().unwrap();
    let t = Trainer::<B, CausalLm<B>>::new(
        cfg,
        data.model.init_seeded(3, &Default::default()).unwrap(),
        tok.clone(),
        Dataset {
            prompts: vec![
                prompt(0, "347*58", "20126", "product"),
                prompt(1, "12+30", "42", "sum"),
            ],
        },
        Some(Dataset {
            prompts: vec![prompt(0, "347*58", "20126", "product")],
        }),
        Default::default(),
    )
    .unwrap();
    let mut t = t
        .with_engine(Box::new(Scripted {
            tok: tok.clone(),
            version: 0,
            reply: tool_caller,
        }))
        .unwrap();
    let m = t.step().unwrap();
    let e = m.episodes.as_ref().expect("episode metrics");
    assert_eq!(e.turns_mean, 2.0);
    assert_eq!(e.tool_call_rate, 1.0);
    assert_eq!(e.tool_error_rate, 0.0);
    assert_eq!(e.ends.get("done"), Some(&4));
    assert_eq!(m.acc, 1.0);
    let report = t.evaluate().unwrap().unwrap();
    assert_eq!(report.tool_call_rate, Some(1.0));
    assert_eq!(report.overall.avg_at_k, 1.0);
    let samples = t.eval_samples().unwrap().unwrap();
    assert!(
        samples[0]
            .transcript
            .as_ref()
            .unwrap()
            .contains("<tool_response>\n20126\n</tool_response>")
    );
    assert_eq!(samples[0].text, "Answer: 20126");
    assert_eq!(samples[0].turns, Some(2));
}

/// Multi-turn settings that cannot work are config errors naming the field.
#[test]
fn multi_turn_config_errors_name_the_field() {
    let demo = ToolUseDemo::default();
    let mut c = demo.train.clone();
    c.data.chat_template = false;
    assert!(
        c.validate()
            .unwrap_err()
            .to_string()
            .contains("data.chat_template")
    );
    let mut c = demo.train.clone();
    c.rollout.max_staleness = 1;
    assert!(
        c.validate()
            .unwrap_err()
            .to_string()
            .contains("rollout.max_staleness")
    );
    let mut c = demo.train.clone();
    c.rollout.env.as_mut().unwrap().tools.enabled = vec!["web".into()];
    let e = Trainer::<B, CausalLm<B>>::new(
        c,
        demo.data()
            .unwrap()
            .model
            .init_seeded(0, &Default::default())
            .unwrap(),
        ToolUseDemo::tokenizer().unwrap(),
        Dataset {
            prompts: vec![prompt(0, "1+1", "2", "sum")],
        },
        None,
        Default::default(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains("tools.enabled") && e.contains("calculator, python"),
        "{e}"
    );
}

/// Verifying a round on several threads gives the same groups, rewards and outcome counts as in
/// order.
#[test]
fn scoring_on_threads_equals_scoring_in_order() {
    let tok = ToolUseDemo::tokenizer().unwrap();
    let end_ids = rl_trainer::end_token_ids(&tok);
    let im_end = tok.special_id("<|im_end|>").unwrap();
    let config = ToolUseDemo::default().train;
    let verifier = config.build_verifier().unwrap();
    let answers = ["3", "14", "25"];
    let prompts: Vec<RoundPrompt<'_>> = answers
        .iter()
        .enumerate()
        .map(|(i, a)| RoundPrompt {
            index: i,
            ids: Arc::new(vec![1, 2]),
            answer: a,
            tier: None,
        })
        .collect();
    let round = || -> Vec<Vec<Trajectory>> {
        (0..3)
            .map(|i| {
                (0..4)
                    .map(|j| {
                        let mut tokens =
                            tok.encode(&format!("Answer: {}", 10 * i + j + 2)).unwrap();
                        tokens.push(im_end);
                        Trajectory::from_completion(Completion {
                            logprobs: vec![-0.1; tokens.len()],
                            tokens,
                            finish: FinishReason::Stop,
                            version: 0,
                        })
                    })
                    .collect()
            })
            .collect()
    };
    let score = |parallelism: usize| {
        let scorer = Scorer {
            verifier: verifier.as_ref(),
            rewards: config.reward_map(),
            overlong: config.reward.overlong,
            tokenizer: &tok,
            end_ids: &end_ids,
            multi_turn: false,
            parallelism,
        };
        let mut outcomes = rl_verifier::OutcomeCounts::default();
        let groups = scorer
            .score_round(&prompts, round(), &mut outcomes)
            .unwrap();
        (groups, outcomes)
    };
    let (serial, serial_counts) = score(1);
    // By hand: prompt 0 (answer 3) gets 2, 3, 4, 5; prompt 1 (14) gets 12, 13, 14, 15;
    // prompt 2 (25) gets 22..25: one right answer per prompt, the second, third and fourth.
    assert_eq!(serial_counts.correct, 3);
    let correct: Vec<Vec<bool>> = serial.iter().map(|g| g.verdicts()).collect();
    assert_eq!(
        correct,
        vec![
            vec![false, true, false, false],
            vec![false, false, true, false],
            vec![false, false, false, true]
        ]
    );
    assert_eq!(serial_counts.total(), 12);
    for threads in [2, 3, 5] {
        let (groups, counts) = score(threads);
        assert_eq!(counts, serial_counts);
        assert_eq!(groups.len(), serial.len());
        for (a, b) in groups.iter().zip(&serial) {
            assert_eq!(a.items, b.items);
            assert_eq!(a.rewards(), b.rewards());
        }
    }
}

/// `reward.verifier = { name = "code" }` with test cases from the data's answer column (JSON):
/// each prompt's first sample passes its stdin/stdout tests, the other three print a product
/// and fail (by hand: 2+3 → 5 vs 6, 4+4 → 8 vs 16), so accuracy is 1/4 and every group is mixed;
/// the responses are verified on the sandbox's two slots at once.
#[test]
fn the_code_verifier_scores_rollouts_in_the_trainer() {
    let demo = ToolUseDemo::default();
    let data = demo.data().unwrap();
    let tok = data.tokenizer.clone();
    let mut c: TrainConfig = TrainConfig::default();
    c.apply_preset("dapo").unwrap();
    let dir = common::tmp("episodes", "code");
    c.out_dir = dir.to_path_buf();
    c.steps = 1;
    c.data.template = rl_trainer::config::PromptTemplate::Raw;
    c.data.chat_template = true;
    c.rollout.group_size = 4;
    c.rollout.prompts_per_round = 2;
    c.rollout.max_new_tokens = 96;
    c.batch.groups_per_step = 2;
    c.batch.max_gen_rounds = 1;
    c.optim.mini_batches = 1;
    c.checkpoint.every = 0;
    c.eval.every = 0;
    c.reward.verifier = serde_json::from_str(r#"{"name": "code"}"#).unwrap();
    c.reward.rewards = None;
    assert_eq!(c.scoring_parallelism(), 2);
    let tests = |a: i64, b: i64| {
        serde_json::json!({"inputs": [format!("{a} {b}\n")], "outputs": [format!("{}\n", a + b)]})
            .to_string()
    };
    let train = Dataset {
        prompts: vec![
            prompt(0, "Read a and b; print a+b.", &tests(2, 3), "code"),
            prompt(1, "Read a and b; print a+b.", &tests(4, 4), "code"),
        ],
    };
    let mut t = Trainer::<B, CausalLm<B>>::new(
        c,
        data.model.init_seeded(1, &Default::default()).unwrap(),
        tok.clone(),
        train,
        None,
        Default::default(),
    )
    .unwrap()
    .with_engine(Box::new(Scripted {
        tok,
        version: 0,
        reply: code_writer,
    }))
    .unwrap();
    let m = t.step().unwrap();
    assert_eq!(m.responses_generated, 8);
    assert_eq!(m.acc, 0.25);
    assert_eq!(m.outcomes.get("correct"), Some(&2));
    assert_eq!(m.outcomes.get("incorrect"), Some(&6));
    assert_eq!(m.groups_kept, 2);
    assert!(m.loss.is_finite());
}
