//! The calculator against an independent evaluator: random integer expressions built together
//! with their value in i128 arithmetic (floor division and modulo written from their Python
//! definitions, q = floor(a / b), r = a − b·q), so the expected value never comes from the
//! calculator's own parser or rationals.

use proptest::prelude::*;
use rl_env::tools::Calculator;

/// Python's floor division: truncate, then step down when the signs differ and there is a
/// remainder.
fn floor_div(a: i128, b: i128) -> i128 {
    let q = a / b;
    if a % b != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

fn expr() -> impl Strategy<Value = (String, i128)> {
    let leaf = (-50i128..50).prop_map(|v| {
        if v < 0 {
            (format!("({v})"), v)
        } else {
            (v.to_string(), v)
        }
    });
    leaf.prop_recursive(4, 24, 2, |inner| {
        (inner.clone(), 0..5u8, inner).prop_filter_map(
            "division by zero",
            |((a, x), op, (b, y))| {
                Some(match op {
                    0 => (format!("({a} + {b})"), x + y),
                    1 => (format!("({a} - {b})"), x - y),
                    2 => (format!("({a} * {b})"), x * y),
                    3 if y != 0 => (format!("({a} // {b})"), floor_div(x, y)),
                    4 if y != 0 => (format!("({a} % {b})"), x - y * floor_div(x, y)),
                    _ => return None,
                })
            },
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn integer_expressions_match_i128((text, value) in expr()) {
        prop_assert_eq!(Calculator::default().evaluate(&text), Ok(value.to_string()), "{}", text);
    }
}
