#![doc = include_str!("../README.md")]
//!
//! ## In detail
//!
//! The experiments behind docs/results.md, out of the product: algorithm comparisons on the
//! embedded arithmetic task ([`compare`], `rlvr compare`), pre-registered studies built on them
//! ([`study`], `rlvr study`), data-mixing experiments ([`mixing`], `rlvr mix`), their statistics
//! ([`stats`]) and figures ([`plot`]). The `rlvr` command line calls these functions; the
//! crates a trainer depends on never do.

pub mod compare;
pub mod mixing;
pub mod plot;
pub mod stats;
pub mod study;
