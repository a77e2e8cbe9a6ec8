//! `rlvr.group_advantages` and `rlvr.theory`: rl-advantage's estimators and Theorem 3.1 on numpy
//! arrays.

use std::collections::HashMap;

use numpy::{PyArray1, PyReadonlyArray1, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use rl_advantage::{
    AdvantageError, EstimatorConfig, GroupId, LambdaRule, NegativeAdvantage, Sample, StdMode,
    compute_batch,
};

use crate::args::{count_arg, type_name, value_error};

/// A 1-D numpy array argument, or a TypeError / ValueError naming it.
pub(crate) fn array_1d<'a, 'py>(
    obj: &'a Bound<'py, PyAny>,
    what: &str,
) -> PyResult<&'a Bound<'py, PyUntypedArray>> {
    let arr = obj.cast::<PyUntypedArray>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what} must be a numpy array, got {} (use numpy.asarray)",
            type_name(obj)
        ))
    })?;
    if arr.ndim() != 1 {
        return Err(PyValueError::new_err(format!(
            "{what} must be 1-D, got shape {:?}",
            arr.shape()
        )));
    }
    Ok(arr)
}

/// The scores as f64, and whether they came as float32.
pub(crate) fn read_scores(obj: &Bound<'_, PyAny>) -> PyResult<(Vec<f64>, bool)> {
    let arr = array_1d(obj, "scores")?;
    let dtype = arr.dtype();
    if let Ok(a) = obj.extract::<PyReadonlyArray1<'_, f64>>() {
        return Ok((a.as_array().to_vec(), false));
    }
    if let Ok(a) = obj.extract::<PyReadonlyArray1<'_, f32>>() {
        return Ok((a.as_array().iter().map(|&x| f64::from(x)).collect(), true));
    }
    Err(PyTypeError::new_err(format!(
        "scores must be a float32 or float64 array, got dtype {dtype}"
    )))
}

pub(crate) fn read_group_ids(obj: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
    let arr = array_1d(obj, "group_ids")?;
    let dtype = arr.dtype();
    obj.extract::<PyReadonlyArray1<'_, i64>>()
        .map(|a| a.as_array().to_vec())
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "group_ids must be an int64 array, got dtype {dtype} (use .astype(numpy.int64); \
                 for string uids such as verl's use numpy.unique(uids, return_inverse=True)[1])"
            ))
        })
}

pub(crate) fn read_correct(obj: &Bound<'_, PyAny>) -> PyResult<Vec<bool>> {
    let arr = array_1d(obj, "correct")?;
    let dtype = arr.dtype();
    obj.extract::<PyReadonlyArray1<'_, bool>>()
        .map(|a| a.as_array().to_vec())
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "correct must be a bool array, got dtype {dtype} (the verifier's verdicts, e.g. \
                 numpy.array([o.correct for o in outcomes]))"
            ))
        })
}

/// DAA's `lam=`: a number (the paper's constant λ) or `"theory"` (λ = 1/γ(p̂, G)), with the
/// theory factor's optional bounds `lam_min=`/`lam_max=`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Lam {
    value: Option<f64>,
    theory: bool,
    min: Option<f64>,
    max: Option<f64>,
}

impl Lam {
    fn read(lam: Option<&Bound<'_, PyAny>>, min: Option<f64>, max: Option<f64>) -> PyResult<Self> {
        let mut out = Lam {
            min,
            max,
            ..Lam::default()
        };
        match lam.filter(|l| !l.is_none()) {
            None => {}
            Some(l) => {
                if let Ok(s) = l.extract::<String>() {
                    if s != "theory" {
                        return Err(PyValueError::new_err(format!(
                            "lam must be a number or 'theory', got '{s}'"
                        )));
                    }
                    out.theory = true;
                } else {
                    out.value =
                        Some(l.extract::<f64>().map_err(|_| {
                            PyTypeError::new_err("lam must be a number or 'theory'")
                        })?);
                }
            }
        }
        if !out.theory && (min.is_some() || max.is_some()) {
            return Err(PyValueError::new_err(
                "lam_min and lam_max bound the theory factor: pass lam='theory' with them",
            ));
        }
        Ok(out)
    }
}

/// The estimator configuration with the caller's overrides; settings that the estimator does
/// not have are errors, never silently ignored.
pub(crate) fn estimator_config(
    estimator: &str,
    std: Option<&str>,
    eps: Option<f64>,
    lam: Lam,
    tau: Option<f64>,
    negative_advantage: Option<&str>,
) -> PyResult<EstimatorConfig> {
    let mut cfg = EstimatorConfig::from_name(estimator).map_err(value_error)?;
    if let Some(s) = std {
        let mode = StdMode::from_name(s).map_err(value_error)?;
        cfg = cfg.with_std(mode).map_err(value_error)?;
    }
    if let Some(e) = eps {
        match &mut cfg {
            EstimatorConfig::Grpo { eps, .. }
            | EstimatorConfig::Dapo { eps, .. }
            | EstimatorConfig::Da3po { eps, .. } => *eps = e,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "eps is a setting of grpo, dapo and da3po only (estimator '{estimator}' \
                     does not divide by a std)"
                )));
            }
        }
    }
    if lam.value.is_some() || lam.theory || tau.is_some() {
        match cfg {
            EstimatorConfig::Da3po {
                lambda: l, tau: t, ..
            } => {
                cfg = cfg
                    .with_daa(lam.value.unwrap_or(l), tau.unwrap_or(t))
                    .map_err(value_error)?;
                if lam.theory {
                    cfg = cfg
                        .with_lambda_rule(LambdaRule::Theory, lam.min, lam.max)
                        .map_err(value_error)?;
                }
            }
            _ => {
                return Err(PyValueError::new_err(format!(
                    "lam and tau are settings of da3po only (estimator '{estimator}')"
                )));
            }
        }
    }
    if let Some(rule) = negative_advantage {
        let rule = NegativeAdvantage::from_name(rule).map_err(value_error)?;
        cfg = cfg.with_negative_advantage(rule).map_err(value_error)?;
    }
    Ok(cfg)
}

pub(crate) fn advantage_error(e: AdvantageError) -> PyErr {
    match e {
        // Group ids come from int64 arrays: show them as such.
        AdvantageError::GroupTooSmall { group, size } => PyValueError::new_err(format!(
            "group {} has {size} sample(s); group-relative advantages need at least 2",
            group.0 as i64
        )),
        other => value_error(other),
    }
}

/// Advantages (the scores' dtype), kept mask, amplified mask.
pub(crate) type AdvantageArrays<'py> = (
    Bound<'py, PyAny>,
    Bound<'py, PyArray1<bool>>,
    Bound<'py, PyArray1<bool>>,
);

/// group_advantages(scores, group_ids=None, group_size=None, estimator="grpo", correct=None,
/// lam=None, tau=None, std=None, eps=None, nan="raise", negative_advantage=None, lam_min=None,
/// lam_max=None)
/// -> (advantages, kept, amplified)
///
/// See `rlvr.group_advantages` (python/rlvr/__init__.py) for the documentation.
#[pyfunction]
#[pyo3(signature = (scores, group_ids=None, group_size=None, estimator="grpo", correct=None,
                    lam=None, tau=None, std=None, eps=None, nan="raise",
                    negative_advantage=None, lam_min=None, lam_max=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn group_advantages<'py>(
    py: Python<'py>,
    scores: &Bound<'py, PyAny>,
    group_ids: Option<&Bound<'py, PyAny>>,
    group_size: Option<&Bound<'py, PyAny>>,
    estimator: &str,
    correct: Option<&Bound<'py, PyAny>>,
    lam: Option<&Bound<'py, PyAny>>,
    tau: Option<f64>,
    std: Option<&str>,
    eps: Option<f64>,
    nan: &str,
    negative_advantage: Option<&str>,
    lam_min: Option<f64>,
    lam_max: Option<f64>,
) -> PyResult<AdvantageArrays<'py>> {
    let lam = Lam::read(lam, lam_min, lam_max)?;
    let cfg = estimator_config(estimator, std, eps, lam, tau, negative_advantage)?;
    let zero_nan = match nan {
        "raise" => false,
        "zero" => true,
        other => {
            return Err(PyValueError::new_err(format!(
                "nan must be 'raise' or 'zero', got '{other}'"
            )));
        }
    };
    let (mut values, was_f32) = read_scores(scores)?;
    let n = values.len();
    let group_ids = group_ids.filter(|g| !g.is_none());
    let group_size = group_size.filter(|g| !g.is_none());
    let ids: Vec<i64> = match (group_ids, group_size) {
        (Some(g), None) => {
            let ids = read_group_ids(g)?;
            if ids.len() != n {
                return Err(PyValueError::new_err(format!(
                    "group_ids has {} entries but scores has {n}",
                    ids.len()
                )));
            }
            ids
        }
        (None, Some(g)) => {
            let g = count_arg(g, "group_size")?;
            if g < 2 {
                return Err(PyValueError::new_err(format!(
                    "group_size must be >= 2 (a group needs a baseline), got {g}"
                )));
            }
            let g = usize::try_from(g).unwrap_or(usize::MAX);
            if n % g != 0 {
                return Err(PyValueError::new_err(format!(
                    "{n} scores do not split into groups of {g} (contiguous groups); pass \
                     group_ids for another layout"
                )));
            }
            (0..n).map(|i| (i / g) as i64).collect()
        }
        (Some(_), Some(_)) => {
            return Err(PyValueError::new_err(
                "pass group_ids or group_size, not both",
            ));
        }
        (None, None) => {
            return Err(PyValueError::new_err(
                "pass group_ids (int64 array, any layout) or group_size (contiguous groups)",
            ));
        }
    };
    let flags: Vec<bool> = match correct.filter(|c| !c.is_none()) {
        Some(c) => {
            let flags = read_correct(c)?;
            if flags.len() != n {
                return Err(PyValueError::new_err(format!(
                    "correct has {} entries but scores has {n}",
                    flags.len()
                )));
            }
            flags
        }
        None if matches!(cfg, EstimatorConfig::Da3po { .. }) => {
            return Err(PyValueError::new_err(
                "da3po needs correct= (a bool array of the verifier's verdicts): correctness is \
                 never inferred from the possibly shaped scores",
            ));
        }
        None => vec![false; n],
    };
    for (i, v) in values.iter_mut().enumerate() {
        if v.is_nan() && zero_nan {
            *v = 0.0;
        } else if !v.is_finite() {
            let hint = if v.is_nan() {
                "; pass nan='zero' to score it 0 as TRL does with a None reward"
            } else {
                ""
            };
            return Err(PyValueError::new_err(format!(
                "scores[{i}] is {v} (group {}){hint}",
                ids[i]
            )));
        }
    }
    // build() only checks that the configured size is >= 2; compute_batch checks each group.
    let est = cfg.build(2).map_err(value_error)?;
    let samples: Vec<Sample> = values
        .iter()
        .zip(&ids)
        .zip(&flags)
        .map(|((&r, &g), &c)| Sample::new(GroupId(g as u64), r, c))
        .collect();
    let out = py
        .detach(|| compute_batch(&est, &samples, None))
        .map_err(advantage_error)?;
    let mut signal: HashMap<i64, bool> = HashMap::new();
    for (&g, &a) in ids.iter().zip(&out.advantages) {
        *signal.entry(g).or_insert(false) |= a != 0.0;
    }
    let kept: Vec<bool> = ids.iter().map(|g| signal[g]).collect();
    let advantages = if was_f32 {
        let v: Vec<f32> = out.advantages.iter().map(|&a| a as f32).collect();
        PyArray1::from_vec(py, v).into_any()
    } else {
        PyArray1::from_vec(py, out.advantages).into_any()
    };
    Ok((
        advantages,
        PyArray1::from_vec(py, kept),
        PyArray1::from_vec(py, out.amplified),
    ))
}

/// theory(group_size, p) -> (alpha_plus, alpha_minus, gamma): DA3PO Theorem 3.1.
#[pyfunction]
pub(crate) fn theory(group_size: &Bound<'_, PyAny>, p: f64) -> PyResult<(f64, f64, f64)> {
    let g = count_arg(group_size, "group_size")?;
    let g = usize::try_from(g).unwrap_or(usize::MAX);
    let a = rl_advantage::theory::amplification(p, g).map_err(value_error)?;
    Ok((a.alpha_plus, a.alpha_minus, a.gamma))
}
