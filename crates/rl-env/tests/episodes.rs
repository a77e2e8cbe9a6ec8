//! The episode driver against a scripted engine: what the engine is asked (every turn's prompt
//! is the exact concatenation of the prompt, the sampled ids and the observation ids so far),
//! what the trajectory records (tokens, loss mask, log-probs), and every way an episode ends.

use std::sync::Arc;

use rl_env::{
    EnvError, EpisodeEnd, EpisodeLimits, EpisodeRunner, EpisodeStart, Message, Task,
    ToolEnvironment, ToolsConfig, TurnCodec, turn_seed,
};
use rl_rollout::{Completion, EngineError, FinishReason, GenerateRequest, SamplingParams};

/// Byte-level ids; id 0 is the end-of-turn token.
const END: u32 = 0;

fn ids(s: &str) -> Vec<u32> {
    s.bytes().map(u32::from).collect()
}

struct ByteCodec;

impl TurnCodec for ByteCodec {
    fn turn_text(&self, tokens: &[u32]) -> Result<String, EnvError> {
        Ok(tokens
            .iter()
            .filter(|&&t| t != END)
            .map(|&t| t as u8 as char)
            .collect())
    }

    fn observation_ids(&self, messages: &[Message]) -> Result<Vec<u32>, EnvError> {
        let mut out = ids("\n[tool]");
        for m in messages {
            out.extend(ids(&format!("<r>{}</r>", m.content)));
        }
        out.extend(ids("\n[assistant]"));
        Ok(out)
    }
}

/// Replies by turn: the number of `[assistant]` headers in the prompt is the turn index; a
/// script maps (episode marker = the prompt's first byte, turn) to a reply text and a finish.
struct Scripted {
    script: fn(u8, usize) -> (String, FinishReason),
    requests: Vec<GenerateRequest>,
}

impl Scripted {
    fn generate(
        &mut self,
        reqs: Vec<GenerateRequest>,
    ) -> Result<Vec<Vec<Completion>>, EngineError> {
        let out = reqs
            .iter()
            .map(|r| {
                let text: String = r.prompt_ids.iter().map(|&t| t as u8 as char).collect();
                let turn = text.matches("[assistant]").count();
                let (reply, finish) = (self.script)(r.prompt_ids[0] as u8, turn);
                let mut tokens = ids(&reply);
                if finish == FinishReason::Stop {
                    tokens.push(END);
                }
                tokens.truncate(r.params.max_new_tokens);
                let finish = if tokens.last() != Some(&END) && finish == FinishReason::Stop {
                    FinishReason::Length
                } else {
                    finish
                };
                vec![Completion {
                    logprobs: tokens.iter().map(|&t| -((t % 7) as f32) / 8.0).collect(),
                    tokens,
                    finish,
                    version: 4,
                }]
            })
            .collect();
        self.requests.extend(reqs);
        Ok(out)
    }
}

const CALL: &str =
    "<tool_call>{\"name\": \"calculator\", \"arguments\": {\"expression\": \"6*7\"}}</tool_call>";

fn run(
    script: fn(u8, usize) -> (String, FinishReason),
    prompts: &[&str],
    limits: EpisodeLimits,
    parallelism: usize,
) -> (Vec<rl_env::Trajectory>, Vec<GenerateRequest>) {
    let env = ToolEnvironment::new(&ToolsConfig::default()).unwrap();
    let runner = EpisodeRunner {
        factory: &env,
        codec: &ByteCodec,
        params: SamplingParams {
            max_new_tokens: 200,
            ..SamplingParams::default()
        },
        limits,
        parallelism,
    };
    let mut engine = Scripted {
        script,
        requests: Vec::new(),
    };
    let starts: Vec<EpisodeStart> = prompts
        .iter()
        .enumerate()
        .map(|(i, p)| EpisodeStart {
            prompt_ids: Arc::new(ids(p)),
            task: Task {
                index: i,
                ..Task::default()
            },
            seed: 100 + i as u64,
        })
        .collect();
    let t = runner.run(&mut |r| engine.generate(r), &starts).unwrap();
    (t, engine.requests)
}

const LIMITS: EpisodeLimits = EpisodeLimits {
    max_turns: 4,
    max_tokens: 1000,
};

/// Episode "A": a calculator call, then the answer. Episode "B": answers at once.
fn two_turns(marker: u8, turn: usize) -> (String, FinishReason) {
    match (marker, turn) {
        (b'A', 0) => (CALL.into(), FinishReason::Stop),
        (b'A', _) => ("Answer: 42".into(), FinishReason::Stop),
        _ => ("Answer: 5".into(), FinishReason::Stop),
    }
}

#[test]
fn the_trajectory_is_the_concatenation_of_sampled_and_observation_ids() {
    let (t, reqs) = run(two_turns, &["A: 6*7?", "B: 2+3?"], LIMITS, 1);
    // By hand: turn 0 asks both prompts; turn 1 asks only A, with the prompt, the sampled call
    // (its ids and the end token, as sampled) and the observation rendered once.
    let call = [ids(CALL), vec![END]].concat();
    let obs = ids("\n[tool]<r>42</r>\n[assistant]");
    let answer = [ids("Answer: 42"), vec![END]].concat();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[0].prompt_ids, ids("A: 6*7?"));
    assert_eq!(reqs[1].prompt_ids, ids("B: 2+3?"));
    assert_eq!(
        reqs[2].prompt_ids,
        [ids("A: 6*7?"), call.clone(), obs.clone()].concat()
    );
    assert_eq!(reqs[0].params.seed, 100);
    assert_eq!(reqs[2].params.seed, turn_seed(100, 1));
    assert_ne!(turn_seed(100, 1), 100);

    let a = &t[0];
    assert_eq!(
        a.tokens,
        [call.clone(), obs.clone(), answer.clone()].concat()
    );
    let mask: Vec<bool> = [
        vec![true; call.len()],
        vec![false; obs.len()],
        vec![true; answer.len()],
    ]
    .concat();
    assert_eq!(a.sampled, mask);
    // Log-probs: the engine's at sampled ids, 0 at observation ids.
    for (j, (&tok, &lp)) in a.tokens.iter().zip(&a.logprobs).enumerate() {
        let expected = if mask[j] {
            -((tok % 7) as f32) / 8.0
        } else {
            0.0
        };
        assert_eq!(lp, expected, "token {j}");
    }
    assert_eq!(a.sampled_len(), call.len() + answer.len());
    assert_eq!(a.last_turn(), answer.as_slice());
    assert_eq!(
        (a.end, a.tool_calls, a.tool_errors),
        (EpisodeEnd::Done, 1, 0)
    );
    assert_eq!(a.finish(), FinishReason::Stop);
    a.check().unwrap();

    let b = &t[1];
    assert_eq!(b.tokens, [ids("Answer: 5"), vec![END]].concat());
    assert!(b.all_sampled() && b.turns.len() == 1 && b.end == EpisodeEnd::Done);
}

#[test]
fn parallel_environment_steps_give_the_same_trajectories() {
    let prompts = ["A1", "B1", "A2", "A3", "B2"];
    let (serial, _) = run(two_turns, &prompts, LIMITS, 1);
    let (parallel, _) = run(two_turns, &prompts, LIMITS, 3);
    assert_eq!(serial, parallel);
}

#[test]
fn limits_end_episodes() {
    // Always calling the tool: stops after max_turns turns, the last observation not appended.
    fn forever(_: u8, _: usize) -> (String, FinishReason) {
        (CALL.into(), FinishReason::Stop)
    }
    let (t, reqs) = run(
        forever,
        &["A"],
        EpisodeLimits {
            max_turns: 3,
            max_tokens: 10_000,
        },
        1,
    );
    assert_eq!(reqs.len(), 3);
    assert_eq!(t[0].end, EpisodeEnd::MaxTurns);
    assert_eq!(t[0].finish(), FinishReason::Length);
    assert_eq!(t[0].turns.len(), 3);
    assert_eq!(t[0].tool_calls, 3);
    assert!(
        *t[0].sampled.last().unwrap(),
        "ends with a sampled token, not an observation"
    );

    // Token budget: the second turn gets only the room left, then the episode is cut.
    let call_len = CALL.len() + 1;
    let obs_len = ids("\n[tool]<r>42</r>\n[assistant]").len();
    let budget = call_len + obs_len + 5;
    let (t, reqs) = run(
        two_turns,
        &["A"],
        EpisodeLimits {
            max_turns: 4,
            max_tokens: budget,
        },
        1,
    );
    assert_eq!(reqs[1].params.max_new_tokens, 5);
    assert_eq!(t[0].end, EpisodeEnd::TurnLength);
    assert_eq!(t[0].len(), budget);
    // An observation that leaves no room for a sampled token ends the episode unappended.
    let (t, _) = run(
        two_turns,
        &["A"],
        EpisodeLimits {
            max_turns: 4,
            max_tokens: call_len + obs_len,
        },
        1,
    );
    assert_eq!(t[0].end, EpisodeEnd::TokenBudget);
    assert_eq!(t[0].len(), call_len);

    // A turn cut by max_new_tokens, and an aborted turn.
    fn long(_: u8, _: usize) -> (String, FinishReason) {
        ("x".repeat(300), FinishReason::Stop)
    }
    let (t, _) = run(long, &["A"], LIMITS, 1);
    assert_eq!((t[0].end, t[0].len()), (EpisodeEnd::TurnLength, 200));
    fn abort(_: u8, _: usize) -> (String, FinishReason) {
        ("x".into(), FinishReason::Abort)
    }
    let (t, _) = run(abort, &["A"], LIMITS, 1);
    assert_eq!(t[0].finish(), FinishReason::Abort);
}

#[test]
fn model_mistakes_are_observations_not_errors() {
    fn mistakes(_: u8, turn: usize) -> (String, FinishReason) {
        match turn {
            0 => (
                "<tool_call>{\"name\": \"nope\"}</tool_call>".into(),
                FinishReason::Stop,
            ),
            1 => ("<tool_call>not json</tool_call>".into(), FinishReason::Stop),
            _ => ("Answer: ?".into(), FinishReason::Stop),
        }
    }
    let (t, reqs) = run(mistakes, &["A"], LIMITS, 1);
    assert_eq!(
        (t[0].end, t[0].tool_calls, t[0].tool_errors),
        (EpisodeEnd::Done, 2, 2)
    );
    let seen: String = reqs[2]
        .prompt_ids
        .iter()
        .map(|&t| t as u8 as char)
        .collect();
    assert!(
        seen.contains("<r>error: unknown tool \"nope\"; available: calculator</r>"),
        "{seen}"
    );
    assert!(
        seen.contains("<r>error: the call is not valid JSON"),
        "{seen}"
    );
}
