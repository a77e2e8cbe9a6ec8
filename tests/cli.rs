//! The `rlvr` binary end to end: `theory`, `advantages` exit codes, and a training run killed
//! with SIGKILL and resumed, which must reproduce an uninterrupted run's metrics exactly.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn rlvr() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rlvr"));
    c.env("RLVR_QUIET", "1");
    c
}

/// A fresh temporary folder `rlvr-cli-<name>-<random>`, removed when dropped.
fn tmp(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("rlvr-cli-{name}-"))
        .tempdir()
        .unwrap()
}

/// α−(0.1, 8) = 1/(1 − 0.9^7) = 1/0.5217031 = 1.916799 (DA3PO Corollary 3.2: ≈ 1.92).
#[test]
fn theory_prints_the_closed_form() {
    let out = rlvr()
        .args(["theory", "--group-size", "8", "--p", "0.1"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!((v["alpha_minus"].as_f64().unwrap() - 1.9168).abs() < 1e-4);
    assert!((v["gamma"].as_f64().unwrap() - 0.5217).abs() < 1e-4);
    assert_eq!(v["group_size"], 8);
    let bad = rlvr()
        .args(["theory", "--group-size", "8", "--p", "1.5"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("`p`"));
}

#[test]
fn advantages_rejects_malformed_lines_with_exit_code_2() {
    let mut child = rlvr()
        .args(["advantages", "--estimator", "grpo", "--std", "population"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"group\": \"g1\", \"rewards\": [1, -1, -1, -1], \"correct\": [true, false, false, false]}\n{\"group\": \"g2\", \"rewards\": [1, 2]}\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1);
    // Population std, 1 of 4 correct: A+ = sqrt((1 − 1/4)/(1/4)) = sqrt(3) = 1.7321.
    let v: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert!((v["advantages"][0].as_f64().unwrap() - 3f64.sqrt()).abs() < 1e-5);
    assert!(String::from_utf8_lossy(&out.stderr).contains("line 2: field `correct`"));
}

const DEMO: &str = r#"
train_per_tier = 40
eval_per_tier = 6
hidden_size = 32
num_hidden_layers = 1
num_attention_heads = 2
intermediate_size = 64
[sft]
steps = 8
batch_size = 16
[sft.optim]
micro_batch = 16
"#;

fn train_config(out: &Path, steps: usize) -> String {
    format!(
        "algorithm = \"da3po\"\nsteps = {steps}\nout_dir = \"{}\"\n[rollout]\ngroup_size = 4\nprompts_per_round = 4\n\
         [batch]\ngroups_per_step = 2\nmax_gen_rounds = 2\non_exhausted = \"train_on_kept\"\n\
         [filter]\nname = \"none\"\n[optim]\nmicro_batch = 8\nmini_batches = 2\n[checkpoint]\nevery = 2\nkeep = 2\n\
         [eval]\nevery = 4\nk = 2\n",
        out.display()
    )
}

fn metric_lines(out: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            for f in rlvr::trainer::metrics::TIMING_FIELDS {
                v.as_object_mut().unwrap().remove(f);
            }
            v
        })
        .collect()
}

/// The `step` of every metrics line.
fn metric_steps(out: &Path) -> Vec<u64> {
    metric_lines(out)
        .iter()
        .map(|m| m["step"].as_u64().unwrap())
        .collect()
}

fn latest_step(out: &Path) -> Option<usize> {
    let name = std::fs::read_to_string(out.join("checkpoints/latest")).ok()?;
    name.trim().strip_prefix("step-")?.parse().ok()
}

/// `rlvr train` killed with SIGKILL right after its first checkpoint, then `--resume`d, writes
/// exactly the metrics (timing fields aside) of a run that was never interrupted.
#[test]
fn sigkill_then_resume_reproduces_the_uninterrupted_run() {
    let steps = 12;
    let tmpdir = tmp("kill");
    let dir = tmpdir.path();
    let demo = dir.join("demo.toml");
    std::fs::write(&demo, DEMO).unwrap();
    let (full, killed) = (dir.join("full"), dir.join("killed"));
    let (cfg_full, cfg_killed) = (dir.join("full.toml"), dir.join("killed.toml"));
    std::fs::write(&cfg_full, train_config(&full, steps)).unwrap();
    std::fs::write(&cfg_killed, train_config(&killed, steps)).unwrap();
    let args = |cfg: &Path| -> Vec<String> {
        vec![
            "train".into(),
            "--demo".into(),
            demo.display().to_string(),
            "--config".into(),
            cfg.display().to_string(),
        ]
    };

    let status = rlvr()
        .args(args(&cfg_full))
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());

    let mut child = rlvr()
        .args(args(&cfg_killed))
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    loop {
        if latest_step(&killed).is_some_and(|s| s >= 2) {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before its first checkpoint"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(600),
            "no checkpoint within 10 minutes"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL on Unix
    let _ = child.wait();
    let at_kill = latest_step(&killed).unwrap();
    assert!(
        at_kill < steps,
        "the run was already complete when killed (checkpoint {at_kill})"
    );

    let status = rlvr()
        .args(args(&cfg_killed))
        .arg("--resume")
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let (a, b) = (metric_lines(&full), metric_lines(&killed));
    assert_eq!(a.len(), steps + 1);
    assert_eq!(a, b, "resumed from step {at_kill}");
}

/// `rlvr train --workers 2`: two data-parallel workers (threads) train the embedded run; rank 0
/// alone writes the metrics (exactly one line per step, plus the step-0 evaluation) and the
/// checkpoints, and the run resumes from them with 2 workers, then with 1.
#[test]
fn two_local_workers_write_one_metrics_line_per_step_and_resume() {
    let tmpdir = tmp("workers");
    let dir = tmpdir.path();
    let demo = dir.join("demo.toml");
    std::fs::write(&demo, DEMO).unwrap();
    let out = dir.join("run");
    let cfg = dir.join("run.toml");
    std::fs::write(&cfg, train_config(&out, 4)).unwrap();
    let run = |steps_cfg: &Path, resume: bool| {
        let mut c = rlvr();
        c.args(["train", "--workers", "2", "--demo"])
            .arg(&demo)
            .arg("--config")
            .arg(steps_cfg);
        if resume {
            c.arg("--resume");
        }
        c.stdout(Stdio::null()).status().unwrap()
    };
    assert!(run(&cfg, false).success());
    assert_eq!(metric_steps(&out), vec![0, 1, 2, 3, 4]);
    assert_eq!(latest_step(&out), Some(4));
    // Every step trained on the whole batch (2 groups of 4): the workers' shares add up.
    for m in &metric_lines(&out)[1..] {
        assert_eq!(m["groups_kept"].as_u64(), Some(2), "{m}");
    }
    // Two more steps from the checkpoint, still one line per step.
    std::fs::write(&cfg, train_config(&out, 6)).unwrap();
    assert!(run(&cfg, true).success());
    assert_eq!(metric_steps(&out), vec![0, 1, 2, 3, 4, 5, 6]);
    // A different world size re-shards: the state in the checkpoint is the same on every worker
    // and the shards are drawn per round from (rank, N), so one worker continues the run.
    std::fs::write(&cfg, train_config(&out, 8)).unwrap();
    let mut c = rlvr();
    c.args(["train", "--resume", "--demo"])
        .arg(&demo)
        .arg("--config")
        .arg(&cfg);
    assert!(c.stdout(Stdio::null()).status().unwrap().success());
    assert_eq!(metric_steps(&out), vec![0, 1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(latest_step(&out), Some(8));
}

/// Asynchronous rollouts are not supported with data-parallel workers: a clear error naming the
/// field, exit code 2.
#[test]
fn workers_with_asynchronous_rollouts_are_refused() {
    let tmpdir = tmp("workers-async");
    let dir = tmpdir.path();
    let demo = dir.join("demo.toml");
    std::fs::write(&demo, DEMO).unwrap();
    let cfg = dir.join("run.toml");
    let text =
        train_config(&dir.join("run"), 2).replace("[rollout]\n", "[rollout]\nmax_staleness = 1\n");
    std::fs::write(&cfg, text).unwrap();
    let out = rlvr()
        .args(["train", "--workers", "2", "--demo"])
        .arg(&demo)
        .arg("--config")
        .arg(&cfg)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("rollout.max_staleness"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A config with prompt files but no model is an error naming `model.path` (exit code 2, before
/// anything trains), not the embedded run silently ignoring the files.
#[test]
fn prompt_files_without_a_model_are_refused() {
    let tmpdir = tmp("no-model");
    let dir = tmpdir.path();
    let cfg = dir.join("run.toml");
    let text = format!(
        "steps = 1\nout_dir = {:?}\n\n[data]\ntrain = \"prompts.jsonl\"\n",
        dir.join("run").display().to_string()
    );
    std::fs::write(&cfg, text).unwrap();
    let out = rlvr()
        .args(["train", "--config"])
        .arg(&cfg)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("model.path") && err.contains("data.train") && err.contains("prompts.jsonl"),
        "{err}"
    );
    assert!(!dir.join("run").exists(), "nothing was trained");
}

/// A config of the tiny run with one generation chunk per prompt (`rollout.generation_batch`
/// = G): each prompt's samples then depend only on its seed and the weights, so N workers
/// generate exactly the rollouts 1 worker generates.
fn chunked_config(dir: &Path, name: &str, steps: usize) -> (PathBuf, PathBuf) {
    let out = dir.join(name);
    let cfg = dir.join(format!("{name}.toml"));
    let text =
        train_config(&out, steps).replace("[rollout]\n", "[rollout]\ngeneration_batch = 4\n");
    std::fs::write(&cfg, text).unwrap();
    (out, cfg)
}

/// Every metric of two runs (timings aside): counts and flags exactly, floats within 1e-4
/// relative. Measured for the two-worker runs: every float equal to the single worker's on both
/// SIMD paths of an AVX-512 Xeon (2026-12-07, the largest gap printed), so the bound only has
/// to absorb summation-order differences that other CPUs or shapes may bring.
fn assert_same_metrics(one: &[serde_json::Value], two: &[serde_json::Value]) {
    assert_eq!(one.len(), two.len());
    let mut compared = 0;
    let mut largest = (0.0, String::new());
    for (a, b) in one.iter().zip(two) {
        for (k, va) in a.as_object().unwrap() {
            let vb = &b[k];
            match (va.as_f64(), vb.as_f64()) {
                (Some(x), Some(y)) if va.is_f64() || vb.is_f64() => {
                    let gap = (x - y).abs() / x.abs().max(1.0);
                    if gap > largest.0 {
                        largest = (gap, format!("{k} at step {}", a["step"]));
                    }
                    assert!(
                        (x - y).abs() <= 1e-4 * x.abs().max(1.0),
                        "step {}: {k} {x} (1 worker) vs {y} (2 workers)",
                        a["step"]
                    );
                    compared += 1;
                }
                _ => assert_eq!(va, vb, "step {}: {k}", a["step"]),
            }
        }
    }
    eprintln!(
        "{compared} numbers compared; the largest gap {:e} ({})",
        largest.0, largest.1
    );
    assert!(compared > 50, "only {compared} numbers compared");
    // The runs trained: the losses are not all zero.
    assert!(one.iter().any(|m| m["loss"].as_f64().unwrap().abs() > 1e-3));
}

/// The single-worker run of [`chunked_config`] (4 steps) in `dir/one`.
fn single_chunked_run(dir: &Path, demo: &Path) -> Vec<serde_json::Value> {
    let (out, cfg) = chunked_config(dir, "one", 4);
    let mut c = rlvr();
    c.args(["train", "--demo"])
        .arg(demo)
        .arg("--config")
        .arg(&cfg);
    assert!(c.stdout(Stdio::null()).status().unwrap().success());
    metric_lines(&out)
}

/// In a fresh folder `name`: the demo file, the single-worker run's metrics, and the run folder
/// and config of the same run for the workers to reproduce (`two`).
fn single_run_then_second_config(
    name: &str,
) -> (
    tempfile::TempDir,
    PathBuf,
    Vec<serde_json::Value>,
    PathBuf,
    PathBuf,
) {
    let tmpdir = tmp(name);
    let dir = tmpdir.path();
    let demo = dir.join("demo.toml");
    std::fs::write(&demo, DEMO).unwrap();
    let one = single_chunked_run(dir, &demo);
    let (out, cfg) = chunked_config(dir, "two", 4);
    (tmpdir, demo, one, out, cfg)
}

/// 2 workers generate exactly the rollouts 1 worker generates ([`chunked_config`]); dynamic
/// sampling, advantages and the mini-batch order are replicated; and the sharded update equals
/// the whole-batch one up to f32 summation order. So every metric of a 4-step run matches.
#[test]
fn two_local_workers_reproduce_the_single_worker_run() {
    let (_tmpdir, demo, one, out, cfg) = single_run_then_second_config("workers-equal");
    let mut c = rlvr();
    c.args(["train", "--workers", "2", "--demo"])
        .arg(&demo)
        .arg("--config")
        .arg(&cfg);
    assert!(c.stdout(Stdio::null()).status().unwrap().success());
    let two = metric_lines(&out);
    assert_eq!(one.len(), 5);
    assert_same_metrics(&one, &two);
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Kills the child when dropped (a failing test leaves no process behind).
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `rlvr orchestrator` on a free port (burn 0.21 binds it on all interfaces; the workers reach
/// it at 127.0.0.1).
fn orchestrator() -> (Reaped, u16) {
    let port = free_port();
    let child = rlvr()
        .args(["orchestrator", "--port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "orchestrator not up"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (Reaped(child), port)
}

/// `rlvr train` as worker `rank` of 2 processes.
fn worker_process(demo: &Path, cfg: &Path, rank: usize, orch: u16, timeout_s: u32) -> Reaped {
    Reaped(
        rlvr()
            .args(["train", "--demo"])
            .arg(demo)
            .arg("--config")
            .arg(cfg)
            .args(["--world-size", "2", "--rank", &rank.to_string()])
            .args(["--orchestrator", &format!("127.0.0.1:{orch}")])
            .args(["--node", &format!("127.0.0.1:{}", free_port())])
            .args(["--worker-timeout", &timeout_s.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

/// Waits for a child with a deadline; its exit status and standard error.
fn wait_for(child: &mut Reaped, limit: Duration) -> (std::process::ExitStatus, String) {
    let t0 = Instant::now();
    loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            let mut err = String::new();
            if let Some(mut e) = child.0.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            return (status, err);
        }
        assert!(
            t0.elapsed() < limit,
            "a worker process did not end within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The same equivalence across 2 processes joined by burn-collective's global orchestrator
/// (with the fixes of third_party/PATCHED.md).
#[test]
fn two_worker_processes_reproduce_the_single_worker_run() {
    let (_tmpdir, demo, one, out, cfg) = single_run_then_second_config("processes-equal");
    let (_orch, port) = orchestrator();
    let mut workers: Vec<Reaped> = (0..2)
        .map(|r| worker_process(&demo, &cfg, r, port, 60))
        .collect();
    for w in &mut workers {
        let (status, err) = wait_for(w, Duration::from_secs(300));
        assert!(status.success(), "{err}");
    }
    assert_same_metrics(&one, &metric_lines(&out));
}

/// A worker process killed with SIGKILL makes the other exit non-zero within its timeout, with
/// an error naming its rank.
#[test]
fn a_killed_worker_process_makes_the_other_exit_non_zero_within_the_timeout() {
    let tmpdir = tmp("processes-kill");
    let dir = tmpdir.path();
    let demo = dir.join("demo.toml");
    std::fs::write(&demo, DEMO).unwrap();
    let (out, cfg) = chunked_config(dir, "run", 100_000);
    let (_orch, port) = orchestrator();
    let timeout_s = 5;
    let mut rank0 = worker_process(&demo, &cfg, 0, port, timeout_s);
    let mut rank1 = worker_process(&demo, &cfg, 1, port, timeout_s);
    let t0 = Instant::now();
    while std::fs::read_to_string(out.join("metrics.jsonl"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
        < 3
    {
        assert!(t0.elapsed() < Duration::from_secs(300), "no training steps");
        assert!(rank0.0.try_wait().unwrap().is_none(), "rank 0 ended early");
        std::thread::sleep(Duration::from_millis(20));
    }
    rank1.0.kill().unwrap();
    let killed = Instant::now();
    let (status, err) = wait_for(&mut rank0, Duration::from_secs(120));
    let waited = killed.elapsed();
    eprintln!("rank 0 stopped {waited:?} after the kill: {}", err.trim());
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("worker 0"), "{err}");
    assert!(
        waited < Duration::from_secs(timeout_s as u64 + 30),
        "rank 0 took {waited:?} to stop"
    );
}

/// A study small enough for a test: one tier of one-digit sums (0..=3 + 0..=3, 16 problems, so
/// that a 150-update warm-start of a tiny model gets some right and dynamic sampling keeps
/// groups), 2 steps per run.
const STUDY_DEMO: &str = r#"
train_per_tier = 12
eval_per_tier = 4
hidden_size = 32
num_hidden_layers = 1
num_attention_heads = 2
intermediate_size = 64
[[task.tiers]]
name = "hard"
a = [0, 3]
b = [0, 3]
op = "+"
[sft]
steps = 150
batch_size = 16
[sft.optim]
micro_batch = 16
[train.rollout]
group_size = 4
max_new_tokens = 12
[train.batch]
groups_per_step = 2
[train.eval]
k = 2
"#;

fn study_toml(dir: &Path, seeds: &str) -> String {
    format!(
        "out = \"{}\"\nsteps = 2\ndelta = 0.02\ntier = \"hard\"\nprimary = \"hard\"\n\
         [[settings]]\nname = \"hard\"\ndemo = \"{}\"\nseeds = {seeds}\ndescription = \"test\"\n\
         [ablation]\nsetting = \"hard\"\nseeds = [0]\nlambdas = [1.0, 3.0]\ntaus = [0.5]\n\
         [theorem]\nsetting = \"hard\"\nalgorithm = \"dapo\"\nseeds = [0]\nsteps = [1]\nsamples = 8\n",
        dir.join("runs").display(),
        dir.join("demo.toml").display()
    )
}

/// `rlvr study` trains the planned runs and writes its report section: paired table, ablation,
/// theorem table with the probed-vs-unprobed check, and the list of runs. A second sitting
/// reuses every complete run, and with `--time-limit-min 0` starts none of the new seed's runs,
/// which the report then lists as missing.
#[test]
fn study_runs_resumes_and_reports_every_planned_run() {
    let tmpdir = tmp("study");
    let dir = tmpdir.path();
    std::fs::write(dir.join("demo.toml"), STUDY_DEMO).unwrap();
    let cfg = dir.join("study.toml");
    std::fs::write(&cfg, study_toml(dir, "[0, 1]")).unwrap();
    let report = dir.join("results.md");
    std::fs::write(&report, "# Results\n\nkept text\n").unwrap();
    let out = rlvr()
        .args(["study", "--config"])
        .arg(&cfg)
        .arg("--report")
        .arg(&report)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let md = std::fs::read_to_string(&report).unwrap();
    assert!(md.starts_with("# Results\n\nkept text\n"), "{md}");
    for needle in [
        "<!-- rlvr study: begin -->",
        "### hard setting (primary): test",
        "Paired DA3PO − DAPO over 2 complete pairs",
        "| 3 | 0.5 | `da3po:lambda=3:tau=0.5` | 1 |",
        "Probed vs unprobed `dapo` runs of the same seed, metrics without timing fields: identical for seeds [0].",
        "| hard | `dapo` | [0, 1] | [] |",
        "<!-- rlvr study: end -->",
    ] {
        assert!(md.contains(needle), "missing {needle:?} in\n{md}");
    }
    assert!(dir.join("img/study_ablation.png").exists());
    assert!(dir.join("img/study_theorem.png").exists());
    // Second sitting: one more seed, no time to start it.
    std::fs::write(&cfg, study_toml(dir, "[0, 1, 2]")).unwrap();
    let out = rlvr()
        .args(["study", "--time-limit-min", "0", "--config"])
        .arg(&cfg)
        .arg("--report")
        .arg(&report)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("seed 0: all runs already complete"), "{err}");
    assert!(
        err.contains("seed 2: not started, the time limit has passed (2 runs left)"),
        "{err}"
    );
    let md = std::fs::read_to_string(&report).unwrap();
    assert!(md.contains("| hard | `dapo` | [0, 1] | [2] |"), "{md}");
    assert!(
        md.contains("**Incomplete: 2 of 3 pre-registered pairs.**"),
        "{md}"
    );
    assert_eq!(md.matches("<!-- rlvr study: begin -->").count(), 1);
}
