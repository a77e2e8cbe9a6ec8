#![doc = include_str!("../README.md")]
//!
//! ## In detail
//!
//! Three small things, so that the leaf crates agree on them without depending on each other:
//! - [`GroupId`]: the explicit identity of a group of responses (re-exported by rl-advantage
//!   and rl-sampler as `GroupId`);
//! - one shape of configuration error: [`UnknownName`] (a name no registry holds) and
//!   [`InvalidValue`] (a field's value out of range), wrapped by each crate's error enum;
//! - [`registry!`]: a registry's list of names and its `from_name`, from one table of
//!   name → value.
//!
//! No tensor framework, no I/O.

#![deny(missing_docs)]

use std::fmt;

use serde::{Deserialize, Serialize};

/// Explicit identity of a group (all responses to one prompt in one generation round).
///
/// Groups are never inferred from the layout of a batch or from prompt text: two groups for the
/// same prompt text are still two groups. Trainers usually number prompts per round; a string
/// uid can be hashed into a `GroupId`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct GroupId(pub u64);

impl fmt::Display for GroupId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl From<u64> for GroupId {
    fn from(v: u64) -> Self {
        GroupId(v)
    }
}

/// A name that no registry entry has: what was asked for, of which kind, and every valid name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} `{name}`; valid names: {}", valid.join(", "))]
pub struct UnknownName {
    /// What kind of thing was named ("advantage estimator", "group filter", ...).
    pub kind: &'static str,
    /// The name asked for.
    pub name: String,
    /// The registered names, in registry order.
    pub valid: Vec<&'static str>,
}

impl UnknownName {
    /// `name` is not one of `valid`, the names of a registry of `kind`.
    pub fn new(kind: &'static str, name: &str, valid: &[&'static str]) -> Self {
        Self {
            kind,
            name: name.to_string(),
            valid: valid.to_vec(),
        }
    }
}

/// A configuration value out of its valid range: the field as written in configs, the value
/// and what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid value for `{field}`: {value} ({expected})")]
pub struct InvalidValue {
    /// The field name as written in configs.
    pub field: &'static str,
    /// The offending value.
    pub value: String,
    /// What is accepted.
    pub expected: &'static str,
}

/// A registry: the constant listing its names, and `from_name` on its type, from one table.
///
/// ```
/// #[derive(Debug, PartialEq)]
/// enum Shape {
///     Circle { r: f64 },
///     Square,
/// }
/// #[derive(Debug, PartialEq)]
/// enum MyError {
///     Unknown(rlvr_core::UnknownName),
/// }
/// impl From<rlvr_core::UnknownName> for MyError {
///     fn from(e: rlvr_core::UnknownName) -> Self {
///         MyError::Unknown(e)
///     }
/// }
/// rlvr_core::registry! {
///     /// Registered shape names.
///     pub const SHAPE_NAMES;
///     /// A shape by name, with its defaults.
///     fn Shape::from_name -> MyError, kind "shape" {
///         "circle" => Shape::Circle { r: 1.0 },
///         "square" => Shape::Square,
///     }
/// }
/// assert_eq!(SHAPE_NAMES, ["circle", "square"]);
/// assert_eq!(Shape::from_name("square"), Ok(Shape::Square));
/// let MyError::Unknown(e) = Shape::from_name("cube").unwrap_err();
/// assert_eq!(e.to_string(), "unknown shape `cube`; valid names: circle, square");
/// ```
#[macro_export]
macro_rules! registry {
    (
        $(#[$names_attr:meta])*
        $vis:vis const $NAMES:ident;
        $(#[$fn_attr:meta])*
        fn $T:ident::from_name -> $Err:ty, kind $kind:literal {
            $($name:literal => $value:expr),+ $(,)?
        }
    ) => {
        $(#[$names_attr])*
        $vis const $NAMES: [&str; [$($name),+].len()] = [$($name),+];

        impl $T {
            $(#[$fn_attr])*
            ///
            /// An unknown name is an error that lists the registered ones.
            pub fn from_name(name: &str) -> ::std::result::Result<Self, $Err> {
                match name {
                    $($name => Ok($value),)+
                    other => Err($crate::UnknownName::new($kind, other, &$NAMES).into()),
                }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_what_was_asked_and_what_is_valid() {
        let e = UnknownName::new("group filter", "dyn", &["dynamic_sampling", "none"]);
        assert_eq!(
            e.to_string(),
            "unknown group filter `dyn`; valid names: dynamic_sampling, none"
        );
        let e = InvalidValue {
            field: "lambda",
            value: "-1".into(),
            expected: "a finite number > 0",
        };
        assert_eq!(
            e.to_string(),
            "invalid value for `lambda`: -1 (a finite number > 0)"
        );
    }

    #[test]
    fn group_ids_serialize_as_their_number() {
        assert_eq!(serde_json::to_string(&GroupId(7)).unwrap(), "7");
        assert_eq!(GroupId::from(3).to_string(), "3");
    }
}
