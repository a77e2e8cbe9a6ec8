//! Python argument checks shared by the module's functions: each names the argument in its
//! TypeError / ValueError.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyString};

pub(crate) fn value_error(e: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(e.to_string())
}

pub(crate) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// A `str` argument, or a `TypeError` naming it.
pub(crate) fn string_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    match obj.cast::<PyString>() {
        Ok(s) => Ok(s.to_str()?.to_owned()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{what} must be str, got {}",
            type_name(obj)
        ))),
    }
}

/// A sequence of `str` (list, tuple, …, but not a single `str`).
pub(crate) fn string_list(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<String>> {
    if obj.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be a sequence of str, not a single str"
        )));
    }
    let iter = obj.try_iter().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what} must be a sequence of str, got {}",
            type_name(obj)
        ))
    })?;
    let mut out = Vec::new();
    for (i, item) in iter.enumerate() {
        out.push(string_arg(&item?, &format!("{what}[{i}]"))?);
    }
    Ok(out)
}

/// A non-negative Python `int` (not `bool`).
pub(crate) fn count_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<u64> {
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be int, got {}",
            type_name(obj)
        )));
    }
    obj.extract::<u64>().map_err(|_| {
        PyValueError::new_err(format!("{what} must be a non-negative integer, got {obj}"))
    })
}

pub(crate) fn bool_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<bool> {
    match obj.cast::<PyBool>() {
        Ok(b) => Ok(b.is_true()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{what} must be bool, got {}",
            type_name(obj)
        ))),
    }
}
