//! # rl-py — the `rlvr` Python package's extension module (`rlvr._rlvr`)
//!
//! Thin pyo3 bindings over two burn-free crates; no behaviour of its own beyond argument
//! checking, the thread pool of `verify_batch` and verl's `pause_tokens_index` window:
//!
//! * [`rl_verifier`]: `verify`, `verify_batch` (releases the GIL, scoped worker threads),
//!   `verify_code` (the `code` verifier's per-test report; GIL released, one cached sandbox per
//!   configuration) and `math_dapo_score` (verl's `math_dapo.compute_score` dict);
//! * [`rl_advantage`]: `group_advantages` over numpy arrays and `theory` (Theorem 3.1).
//!
//! Every failure on user input is a Python `TypeError` or `ValueError` with a message naming
//! the argument; nothing here panics on input. The pure-Python part of the package
//! (`python/rlvr`) adds named tuples, the TRL / verl / OpenRLHF adapters and the type stubs.
//! Tests are in Python (`crates/rl-py/tests`, run by `scripts/test-python.sh`).

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use rl_advantage::ESTIMATOR_NAMES;
use rl_verifier::dapo::{self, INVALID, SOLUTION_TAIL_CHARS, STRICT_BOX_TAIL_CHARS};
use rl_verifier::{
    AnswerSource, Budget, CodeConfig, CodeReward, CodeVerifier, Outcome as RsOutcome, RewardMap,
    VERIFIER_NAMES, Verification, Verifier, VerifierConfig,
};

/// Stack of each `verify_batch` worker. Recursion is bounded by `max_depth` (≤ 200), which
/// rl-verifier's tests run on 1–2 MiB stacks; 8 MiB leaves a wide margin.
const WORKER_STACK: usize = 8 << 20;
/// Pairs a worker takes at a time from the shared counter.
const CHUNK: usize = 8;

mod advantages;
mod args;
use advantages::{group_advantages, theory};
use args::{bool_arg, count_arg, string_arg, string_list, type_name, value_error};

/// The verifier named `verifier` with its options: budget fields for `dapo` and `math`,
/// `strict_box` and `gold_in_box` for `dapo`; none for `code` (`verify_code` takes its options).
fn verifier_config(
    verifier: &str,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<VerifierConfig> {
    let mut cfg = VerifierConfig::from_name(verifier).map_err(value_error)?;
    if let Some(options) = options {
        for (key, value) in options.iter() {
            let key: String = key.extract()?;
            if let VerifierConfig::Code(_) = cfg {
                return Err(PyTypeError::new_err(format!(
                    "unexpected keyword argument '{key}' for verifier 'code': it takes no \
                     options here; use rlvr.verify_code(response, tests, ...) for its limits \
                     and reward mode"
                )));
            }
            match (key.as_str(), &mut cfg) {
                ("strict_box", VerifierConfig::Dapo(c)) => {
                    c.strict_box = bool_arg(&value, "strict_box")?
                }
                ("gold_in_box", VerifierConfig::Dapo(c)) => {
                    c.gold_in_box = bool_arg(&value, "gold_in_box")?
                }
                (field, cfg) if Budget::FIELDS.contains(&field) => {
                    let n = count_arg(&value, field)?;
                    if let Some(budget) = cfg.budget_mut() {
                        budget.set(field, &n.to_string()).map_err(value_error)?;
                    }
                }
                (other, cfg) => {
                    let extra = match cfg {
                        VerifierConfig::Dapo(_) => ", strict_box, gold_in_box",
                        VerifierConfig::Math(_)
                        | VerifierConfig::Code(_)
                        | VerifierConfig::LastNumber(_)
                        | VerifierConfig::Gsm8k(_) => "",
                    };
                    return Err(PyTypeError::new_err(format!(
                        "unexpected keyword argument '{other}' for verifier '{}'; accepted: {}{extra}",
                        cfg.name(),
                        Budget::FIELDS.join(", ")
                    )));
                }
            }
        }
    }
    Ok(cfg)
}

fn source_name(source: AnswerSource) -> &'static str {
    match source {
        AnswerSource::Boxed => "boxed",
        AnswerSource::AnswerLine => "answer_line",
        AnswerSource::MathDelimiters => "math_delimiters",
        AnswerSource::WholeResponse => "whole_response",
        AnswerSource::FinalNumber => "final_number",
        AnswerSource::CodeBlock => "code_block",
    }
}

/// One `code` verifier per configuration, built once and shared by every thread: its sandbox
/// pools the runs (`sandbox.concurrency` at once).
static CODE_VERIFIERS: LazyLock<Mutex<HashMap<String, Arc<CodeVerifier>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The cached verifier of `cfg`, built (the sandbox checked and created) on first use.
fn code_verifier(cfg: &CodeConfig) -> Result<Arc<CodeVerifier>, String> {
    // Debug output names every field: equal configurations, equal keys.
    let key = format!("{cfg:?}");
    let mut cache = CODE_VERIFIERS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(v) = cache.get(&key) {
        return Ok(Arc::clone(v));
    }
    let v = Arc::new(cfg.build().map_err(|e| e.to_string())?);
    cache.insert(key, Arc::clone(&v));
    Ok(v)
}

/// The verifier of `cfg`: `code` from the cache, the others built (cheap).
fn build_verifier(py: Python<'_>, cfg: &VerifierConfig) -> PyResult<Arc<dyn Verifier>> {
    match cfg {
        VerifierConfig::Code(c) => {
            let v = py
                .detach(|| code_verifier(c))
                .map_err(PyValueError::new_err)?;
            Ok(v)
        }
        other => Ok(Arc::from(other.build().map_err(value_error)?)),
    }
}

const KIND_NAMES: [&str; 5] = [
    "correct",
    "incorrect",
    "unparseable_gold",
    "unparseable_response",
    "over_budget",
];

/// The result of one verification.
///
/// `kind` is one of `correct`, `incorrect`, `unparseable_gold`, `unparseable_response`,
/// `over_budget`; `reason` says why for the last three; `extracted` is the response's answer as
/// the verifier saw it (for `dapo`, verl's normalised `pred`); `source` is where it was found
/// (`boxed`, `answer_line`, `math_delimiters`, `whole_response`, `final_number`); `reward` is the
/// verifier's default reward (1/0 for `math`, +1/-1 for `dapo`).
#[pyclass(frozen, eq, module = "rlvr", name = "Outcome")]
#[derive(Clone, Debug, PartialEq)]
struct Outcome {
    #[pyo3(get)]
    correct: bool,
    #[pyo3(get)]
    kind: String,
    #[pyo3(get)]
    reward: f64,
    #[pyo3(get)]
    reason: Option<String>,
    #[pyo3(get)]
    extracted: Option<String>,
    #[pyo3(get)]
    source: Option<String>,
}

impl Outcome {
    fn from_verification(v: Verification, cfg: &VerifierConfig) -> Self {
        let reward = cfg.default_rewards().reward(&v.outcome);
        let reason = match &v.outcome {
            RsOutcome::Unparseable { reason, .. } => Some(reason.clone()),
            RsOutcome::OverBudget { what } => Some(what.clone()),
            RsOutcome::Correct | RsOutcome::Incorrect => None,
        };
        Outcome {
            correct: v.outcome.is_correct(),
            kind: v.outcome.kind().name().to_string(),
            reward,
            reason,
            extracted: v.extracted,
            source: v.source.map(|s| source_name(s).to_string()),
        }
    }
}

#[pymethods]
impl Outcome {
    #[new]
    #[pyo3(signature = (correct, kind, reward, reason=None, extracted=None, source=None))]
    fn new(
        correct: bool,
        kind: String,
        reward: f64,
        reason: Option<String>,
        extracted: Option<String>,
        source: Option<String>,
    ) -> PyResult<Self> {
        if !KIND_NAMES.contains(&kind.as_str()) {
            return Err(PyValueError::new_err(format!(
                "unknown outcome kind '{kind}'; valid kinds: {}",
                KIND_NAMES.join(", ")
            )));
        }
        if correct != (kind == "correct") {
            return Err(PyValueError::new_err(format!(
                "correct={correct} contradicts kind '{kind}'"
            )));
        }
        Ok(Outcome {
            correct,
            kind,
            reward,
            reason,
            extracted,
            source,
        })
    }

    /// Arguments that rebuild this outcome (pickling, e.g. across worker processes).
    #[allow(clippy::type_complexity)]
    fn __getnewargs__(
        &self,
    ) -> (
        bool,
        String,
        f64,
        Option<String>,
        Option<String>,
        Option<String>,
    ) {
        (
            self.correct,
            self.kind.clone(),
            self.reward,
            self.reason.clone(),
            self.extracted.clone(),
            self.source.clone(),
        )
    }

    fn __bool__(&self) -> bool {
        self.correct
    }

    fn __repr__(&self) -> String {
        let opt = |o: &Option<String>| match o {
            Some(s) => format!("{s:?}"),
            None => "None".into(),
        };
        format!(
            "Outcome(correct={}, kind={:?}, reward={:?}, reason={}, extracted={}, source={})",
            if self.correct { "True" } else { "False" },
            self.kind,
            self.reward,
            opt(&self.reason),
            opt(&self.extracted),
            opt(&self.source)
        )
    }
}

/// verify(answer, response, verifier="math", **options) -> Outcome
///
/// Checks one model response against one gold answer (gold first). `options` are budget
/// fields (`max_input_bytes`, `max_depth`, `max_digits`, `max_steps`) and, for `dapo`,
/// `strict_box` / `gold_in_box`. Releases the GIL while verifying; never hangs (work is
/// bounded by the budget, no signals or timeouts).
#[pyfunction]
#[pyo3(signature = (answer, response, verifier="math", **options))]
fn verify(
    py: Python<'_>,
    answer: &Bound<'_, PyAny>,
    response: &Bound<'_, PyAny>,
    verifier: &str,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Outcome> {
    let answer = string_arg(answer, "answer")?;
    let response = string_arg(response, "response")?;
    let cfg = verifier_config(verifier, options)?;
    let checker = build_verifier(py, &cfg)?;
    let v = py.detach(|| checker.verify(&response, &answer));
    Ok(Outcome::from_verification(v, &cfg))
}

/// Verifies `answers[i]` against `responses[i]` for every i on `threads` scoped threads
/// (the calling thread when one is enough). A panic in a worker (a bug: verifiers do not
/// panic) comes back as an error message.
fn verify_parallel(
    checker: &dyn Verifier,
    answers: &[String],
    responses: &[String],
    threads: usize,
) -> Result<Vec<Verification>, String> {
    let n = answers.len();
    let threads = threads.min(n.div_ceil(CHUNK)).max(1);
    if threads == 1 {
        return Ok(answers
            .iter()
            .zip(responses)
            .map(|(a, r)| checker.verify(r, a))
            .collect());
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let start = next.fetch_add(CHUNK, Ordering::Relaxed);
            if start >= n {
                break done;
            }
            for i in start..(start + CHUNK).min(n) {
                done.push((i, checker.verify(&responses[i], &answers[i])));
            }
        }
    };
    let parts: Vec<Vec<(usize, Verification)>> = std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(threads);
        for _ in 0..threads {
            match std::thread::Builder::new()
                .name("rlvr-verify".into())
                .stack_size(WORKER_STACK)
                .spawn_scoped(scope, work)
            {
                Ok(h) => handles.push(h),
                // Out of threads: the ones already running (or the caller) do the work.
                Err(_) => break,
            }
        }
        let mut parts = Vec::with_capacity(handles.len() + 1);
        if handles.is_empty() {
            parts.push(work());
        }
        for h in handles {
            parts.push(
                h.join()
                    .map_err(|_| "internal error: a verifier worker panicked".to_string())?,
            );
        }
        Ok::<_, String>(parts)
    })?;
    let mut slots: Vec<Option<Verification>> = vec![None; n];
    for (i, v) in parts.into_iter().flatten() {
        slots[i] = Some(v);
    }
    slots
        .into_iter()
        .enumerate()
        .map(|(i, v)| v.ok_or_else(|| format!("internal error: pair {i} was not verified")))
        .collect()
}

/// verify_batch(answers, responses, verifier="math", threads=None, **options) -> list[Outcome]
///
/// `verify` over pairs, in parallel on `threads` worker threads (default: the number of CPUs)
/// with the GIL released. Results are in input order and identical to a serial run.
#[pyfunction]
#[pyo3(signature = (answers, responses, verifier="math", threads=None, **options))]
fn verify_batch(
    py: Python<'_>,
    answers: &Bound<'_, PyAny>,
    responses: &Bound<'_, PyAny>,
    verifier: &str,
    threads: Option<&Bound<'_, PyAny>>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<Outcome>> {
    let answers = string_list(answers, "answers")?;
    let responses = string_list(responses, "responses")?;
    if answers.len() != responses.len() {
        return Err(PyValueError::new_err(format!(
            "answers and responses differ in length: {} answers, {} responses",
            answers.len(),
            responses.len()
        )));
    }
    let threads = match threads {
        None => std::thread::available_parallelism().map_or(1, NonZeroUsize::get),
        Some(t) if t.is_none() => std::thread::available_parallelism().map_or(1, NonZeroUsize::get),
        Some(t) => match count_arg(t, "threads")? {
            0 => return Err(PyValueError::new_err("threads must be >= 1, got 0")),
            n => usize::try_from(n).unwrap_or(usize::MAX),
        },
    };
    let cfg = verifier_config(verifier, options)?;
    let checker = build_verifier(py, &cfg)?;
    let results = py
        .detach(|| verify_parallel(checker.as_ref(), &answers, &responses, threads))
        .map_err(PyRuntimeError::new_err)?;
    Ok(results
        .into_iter()
        .map(|v| Outcome::from_verification(v, &cfg))
        .collect())
}

/// `verify_code`'s verdicts: the `code` verifier's, plus `bad_tests` for unusable test cases.
const CODE_VERDICTS: [&str; 10] = [
    "passed",
    "wrong_answer",
    "runtime_error",
    "timeout",
    "memory",
    "syntax_error",
    "no_code",
    "too_large",
    "sandbox_error",
    "bad_tests",
];

/// The result of `verify_code`.
///
/// `verdict` is one of `CODE_VERDICTS`; `kind` the outcome kind as in `Outcome`; `passed` and
/// `total` count tests (all-or-nothing: the tests before the first failure pass); `tests` holds
/// each run test's verdict in order; `reward` is 1 when every test passed, passed/total with
/// `reward="fraction"`, else 0; `score` is passed/total with `reward="fraction"`; `detail` says
/// why the verdict is not `passed`; `code` is the code block that was checked.
#[pyclass(frozen, eq, module = "rlvr", name = "CodeResult")]
#[derive(Clone, Debug, PartialEq)]
struct CodeResult {
    #[pyo3(get)]
    verdict: String,
    #[pyo3(get)]
    kind: String,
    #[pyo3(get)]
    correct: bool,
    #[pyo3(get)]
    passed: usize,
    #[pyo3(get)]
    total: usize,
    #[pyo3(get)]
    reward: f64,
    #[pyo3(get)]
    score: Option<f64>,
    #[pyo3(get)]
    tests: Vec<String>,
    #[pyo3(get)]
    detail: String,
    #[pyo3(get)]
    code: Option<String>,
}

#[pymethods]
impl CodeResult {
    fn __bool__(&self) -> bool {
        self.correct
    }

    fn __repr__(&self) -> String {
        format!(
            "CodeResult(verdict={:?}, passed={}, total={}, reward={:?}, tests={:?}, detail={:?})",
            self.verdict, self.passed, self.total, self.reward, self.tests, self.detail
        )
    }
}

/// Seconds as a `Duration`, or a ValueError naming the argument.
fn seconds_arg(value: f64, what: &str) -> PyResult<Duration> {
    if value.is_finite() && value > 0.0 {
        Duration::try_from_secs_f64(value).map_err(value_error)
    } else {
        Err(PyValueError::new_err(format!(
            "{what} must be a positive number of seconds, got {value}"
        )))
    }
}

/// The test cases: a `str` of JSON, or a dict / list serialised with Python's `json.dumps`
/// (which keeps big integers exact).
fn tests_arg(py: Python<'_>, tests: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(s) = tests.cast::<PyString>() {
        return Ok(s.to_str()?.to_owned());
    }
    if tests.is_instance_of::<PyDict>() || tests.is_instance_of::<pyo3::types::PyList>() {
        let dumps = py.import("json")?.getattr("dumps")?;
        return dumps
            .call1((tests,))?
            .extract::<String>()
            .map_err(|_| PyTypeError::new_err("tests could not be serialised to JSON"));
    }
    Err(PyTypeError::new_err(format!(
        "tests must be str (JSON), dict or list, got {}",
        type_name(tests)
    )))
}

/// verify_code(response, tests, *, reward="all_or_nothing", wall_time=None, cpu_time=None,
/// memory_mb=None, max_tests=None, concurrency=None, float_tolerance=None) -> CodeResult
///
/// Runs the response's final Python code block against the test cases in the sandbox. See
/// `rlvr.verify_code` (python/rlvr/__init__.py) for the documentation.
#[pyfunction]
#[pyo3(signature = (response, tests, *, reward="all_or_nothing", wall_time=None, cpu_time=None,
                    memory_mb=None, max_tests=None, concurrency=None, float_tolerance=None))]
#[allow(clippy::too_many_arguments)]
fn verify_code(
    py: Python<'_>,
    response: &Bound<'_, PyAny>,
    tests: &Bound<'_, PyAny>,
    reward: &str,
    wall_time: Option<f64>,
    cpu_time: Option<f64>,
    memory_mb: Option<&Bound<'_, PyAny>>,
    max_tests: Option<&Bound<'_, PyAny>>,
    concurrency: Option<&Bound<'_, PyAny>>,
    float_tolerance: Option<f64>,
) -> PyResult<CodeResult> {
    let response = string_arg(response, "response")?;
    let gold = tests_arg(py, tests)?;
    let mut cfg = CodeConfig {
        reward: CodeReward::from_name(reward).map_err(value_error)?,
        ..CodeConfig::default()
    };
    if let Some(t) = wall_time {
        cfg.sandbox.limits.wall_time = seconds_arg(t, "wall_time")?;
    }
    if let Some(t) = cpu_time {
        cfg.sandbox.limits.cpu_time = seconds_arg(t, "cpu_time")?;
    }
    if let Some(m) = memory_mb.filter(|m| !m.is_none()) {
        let mb = count_arg(m, "memory_mb")?;
        if mb == 0 {
            return Err(PyValueError::new_err("memory_mb must be >= 1, got 0"));
        }
        cfg.sandbox.limits.memory_bytes = mb.saturating_mul(1 << 20);
    }
    if let Some(n) = max_tests.filter(|n| !n.is_none()) {
        cfg.max_tests = usize::try_from(count_arg(n, "max_tests")?).unwrap_or(usize::MAX);
    }
    if let Some(n) = concurrency.filter(|n| !n.is_none()) {
        cfg.sandbox.concurrency =
            usize::try_from(count_arg(n, "concurrency")?).unwrap_or(usize::MAX);
    }
    if let Some(t) = float_tolerance {
        cfg.float_tolerance = t;
    }
    cfg.validate().map_err(value_error)?;
    let verifier = py
        .detach(|| code_verifier(&cfg))
        .map_err(PyValueError::new_err)?;
    let checked = py.detach(|| verifier.check(&response, &gold));
    let rewards = RewardMap::binary();
    Ok(match checked {
        Ok(report) => {
            let v = report.verification(cfg.reward);
            CodeResult {
                verdict: report.verdict.name().to_string(),
                kind: v.outcome.kind().name().to_string(),
                correct: v.is_correct(),
                passed: report.passed,
                total: report.total,
                reward: rewards.reward_for(&v),
                score: v.score,
                tests: report
                    .tests
                    .iter()
                    .map(|t| t.verdict.name().to_string())
                    .collect(),
                detail: report.detail,
                code: report.code,
            }
        }
        Err(bad) => CodeResult {
            verdict: "bad_tests".into(),
            kind: "unparseable_gold".into(),
            correct: false,
            passed: 0,
            total: 0,
            reward: 0.0,
            score: None,
            tests: Vec::new(),
            detail: bad.reason,
            code: None,
        },
    })
}

/// Python's `s[k:]` on characters (Unicode scalar values), negative `k` counting from the end.
fn py_slice_from(s: &str, k: i64) -> &str {
    let n = s.chars().count() as i64;
    let start = if k < 0 { (k + n).max(0) } else { k.min(n) };
    match s.char_indices().nth(start as usize) {
        Some((i, _)) => &s[i..],
        None => "",
    }
}

/// math_dapo_score(solution_str, ground_truth, strict_box_verify=False, pause_tokens_index=None)
///
/// verl's `math_dapo.compute_score`: `{"score": 1.0 or -1.0, "acc": bool, "pred": str}`.
#[pyfunction]
#[pyo3(signature = (solution_str, ground_truth, strict_box_verify=false, pause_tokens_index=None))]
fn math_dapo_score<'py>(
    py: Python<'py>,
    solution_str: &Bound<'py, PyAny>,
    ground_truth: &Bound<'py, PyAny>,
    strict_box_verify: bool,
    pause_tokens_index: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let solution = string_arg(solution_str, "solution_str")?;
    let gold = string_arg(ground_truth, "ground_truth")?;
    let strict = strict_box_verify;
    let pause: Option<Vec<i64>> = match pause_tokens_index {
        Some(p) if !p.is_none() => Some(p.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "pause_tokens_index must be a list of 4 ints, got {}",
                type_name(p)
            ))
        })?),
        _ => None,
    };
    let (score, acc, pred) = match pause {
        // verl: with pause tokens, strict-box mode looks at solution[-300:][idx[-1] - 100:].
        Some(idx) if strict => {
            if idx.len() != 4 {
                return Err(PyValueError::new_err(format!(
                    "pause_tokens_index must have 4 entries (verl asserts it), got {}",
                    idx.len()
                )));
            }
            let tail = dapo::last_chars(&solution, SOLUTION_TAIL_CHARS);
            let window = py_slice_from(tail, idx[3].saturating_sub(STRICT_BOX_TAIL_CHARS as i64));
            let pred = dapo::last_boxed_content(window).unwrap_or(INVALID);
            let acc = pred == gold;
            (if acc { 1.0 } else { -1.0 }, acc, pred.to_string())
        }
        // verl ignores pause_tokens_index in the default (Minerva) mode.
        _ => dapo::compute_score(&solution, &gold, strict),
    };
    let out = PyDict::new(py);
    out.set_item("score", score)?;
    out.set_item("acc", acc)?;
    out.set_item("pred", pred)?;
    Ok(out)
}

/// normalize_final_answer(answer) -> str: verl's `math_dapo.normalize_final_answer`.
#[pyfunction]
fn normalize_final_answer(answer: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(dapo::normalize_final_answer(&string_arg(answer, "answer")?))
}

#[pymodule]
fn _rlvr(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("VERIFIERS", VERIFIER_NAMES.to_vec())?;
    m.add("ESTIMATORS", ESTIMATOR_NAMES.to_vec())?;
    m.add("OUTCOME_KINDS", KIND_NAMES.to_vec())?;
    m.add("CODE_VERDICTS", CODE_VERDICTS.to_vec())?;
    m.add_class::<Outcome>()?;
    m.add_class::<CodeResult>()?;
    m.add_function(wrap_pyfunction!(verify, m)?)?;
    m.add_function(wrap_pyfunction!(verify_code, m)?)?;
    m.add_function(wrap_pyfunction!(verify_batch, m)?)?;
    m.add_function(wrap_pyfunction!(math_dapo_score, m)?)?;
    m.add_function(wrap_pyfunction!(normalize_final_answer, m)?)?;
    m.add_function(wrap_pyfunction!(group_advantages, m)?)?;
    m.add_function(wrap_pyfunction!(theory, m)?)?;
    Ok(())
}
