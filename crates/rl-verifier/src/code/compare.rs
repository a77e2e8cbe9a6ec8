//! Comparing a program's standard output with the expected output.
//!
//! The rule (documented in docs/verifier.md, "code"):
//!
//! 1. **Lines.** Both texts are split into lines (`\n`, a `\r` before it dropped); each line is
//!    trimmed at both ends; blank lines at the start and at the end are dropped. Equal line
//!    lists → match. (LiveCodeBench's `grade_stdio` does the same: `strip()` of the whole output
//!    and of each line.)
//! 2. **Tokens.** Otherwise both texts are split on any whitespace, and the token lists must
//!    have the same length and match pairwise: equal strings, or equal numbers — two integers
//!    (`[+-]?[0-9]+`, any length) by exact value (`007` = `7`, `-0` = `0`), and otherwise two
//!    decimal numbers (`1.50`, `-2e3`, `.5`; never `inf`/`nan`) within
//!    `|a − b| ≤ tol · max(1, |b|)` (b expected; `tol` = `float_tolerance`, 1e-6 by default).
//!    This accepts a different line layout of the same tokens (`1 2 3` for `1\n2\n3`), as APPS's
//!    and TACO's evaluators do with their whitespace-split fallback, and floating-point answers
//!    printed with other digits, as their `np.allclose` and LiveCodeBench's `Decimal` fallbacks
//!    do — but, unlike APPS's last fallback, never the tokens in another order or as a set.
//!
//! Everything else is a wrong answer. Nothing here allocates more than the two token lists.

/// The lines of `text` as rule 1 compares them.
pub fn normalized_lines(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.split('\n').map(str::trim).collect();
    let start = lines.iter().position(|l| !l.is_empty());
    let end = lines.iter().rposition(|l| !l.is_empty());
    match (start, end) {
        (Some(s), Some(e)) => lines[s..=e].to_vec(),
        _ => Vec::new(),
    }
}

/// Does `actual` (the program's output) match `expected`? See the module documentation.
pub fn outputs_match(actual: &str, expected: &str, tol: f64) -> bool {
    if normalized_lines(actual) == normalized_lines(expected) {
        return true;
    }
    let mut a = actual.split_whitespace();
    let mut e = expected.split_whitespace();
    loop {
        match (a.next(), e.next()) {
            (None, None) => return true,
            (Some(x), Some(y)) if tokens_match(x, y, tol) => {}
            _ => return false,
        }
    }
}

/// Two tokens match: equal text, equal integers, or decimal numbers within the tolerance.
pub fn tokens_match(actual: &str, expected: &str, tol: f64) -> bool {
    if actual == expected {
        return true;
    }
    match (number(actual), number(expected)) {
        (Some(Number::Integer(a)), Some(Number::Integer(b))) => a == b,
        (Some(_), Some(_)) => match (actual.parse::<f64>(), expected.parse::<f64>()) {
            (Ok(a), Ok(b)) if a.is_finite() && b.is_finite() => {
                (a - b).abs() <= tol * b.abs().max(1.0)
            }
            _ => false,
        },
        _ => false,
    }
}

/// A numeric token: an integer (sign and digits without leading zeros) or a decimal.
#[derive(Debug, PartialEq, Eq)]
enum Number<'a> {
    /// (negative, digits without leading zeros; `""` for zero).
    Integer((bool, &'a str)),
    Decimal,
}

/// Parses `[+-]?digits` or `[+-]?(digits[.digits?] | .digits)([eE][+-]?digits)?`.
fn number(token: &str) -> Option<Number<'_>> {
    let (negative, body) = match token.as_bytes().first()? {
        b'-' => (true, &token[1..]),
        b'+' => (false, &token[1..]),
        _ => (false, token),
    };
    let bytes = body.as_bytes();
    let int_len = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    if int_len == bytes.len() {
        if int_len == 0 {
            return None;
        }
        let digits = body.trim_start_matches('0');
        return Some(Number::Integer((negative && !digits.is_empty(), digits)));
    }
    let mut i = int_len;
    let mut frac_len = 0;
    if bytes[i] == b'.' {
        i += 1;
        frac_len = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        i += frac_len;
    }
    if int_len + frac_len == 0 {
        return None;
    }
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        i += 1;
        if i < bytes.len() && (bytes[i] == b'+' || bytes[i] == b'-') {
            i += 1;
        }
        let exp_len = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        if exp_len == 0 {
            return None;
        }
        i += exp_len;
    }
    (i == bytes.len()).then_some(Number::Decimal)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOL: f64 = 1e-6;

    #[test]
    fn lines_ignore_surrounding_whitespace_and_blank_ends() {
        assert!(outputs_match("3\n", "3", TOL));
        assert!(outputs_match("3   \r\n\n\n", "3\n", TOL));
        assert!(outputs_match("\n\n  1 2\n3  \n", "1 2\n3", TOL));
        assert!(outputs_match("", "", TOL));
        assert!(outputs_match("\n \n", "", TOL));
        assert_eq!(normalized_lines("\n a \n\n b\t\n\n"), vec!["a", "", "b"]);
        assert!(!outputs_match("", "0", TOL));
        assert!(!outputs_match("3\n", "4\n", TOL));
        assert!(!outputs_match("Yes", "YES", TOL));
    }

    #[test]
    fn tokens_allow_another_layout_but_not_another_order() {
        assert!(outputs_match("1 2 3\n", "1\n2\n3\n", TOL));
        assert!(outputs_match("1  2\t3", "1 2 3", TOL));
        assert!(outputs_match("a\n\nb", "a\nb", TOL));
        assert!(!outputs_match("3 2 1", "1 2 3", TOL));
        assert!(!outputs_match("1 2", "1 2 3", TOL));
        assert!(!outputs_match("1 2 3 4", "1 2 3", TOL));
    }

    #[test]
    fn integers_compare_exactly_at_any_length() {
        assert!(tokens_match("007", "7", TOL));
        assert!(tokens_match("-0", "0", TOL));
        assert!(tokens_match("+5", "5", TOL));
        assert!(!tokens_match("-5", "5", TOL));
        // np.isclose would call these equal; they are different integers.
        assert!(!tokens_match("50000000000000000", "50000000000000001", TOL));
        let big = "9".repeat(400);
        assert!(tokens_match(&big, &big, TOL));
        assert!(!tokens_match(&format!("{big}8"), &format!("{big}9"), TOL));
    }

    #[test]
    fn decimals_within_the_tolerance() {
        assert!(tokens_match("0.3333333", "0.333333333", TOL));
        assert!(tokens_match("1", "1.0", TOL));
        assert!(tokens_match("1.0000005", "1", TOL));
        assert!(!tokens_match("1.00001", "1", TOL));
        assert!(tokens_match("1e3", "1000.0", TOL));
        assert!(tokens_match(".5", "0.50", TOL));
        assert!(tokens_match("-2.5E-1", "-0.25", TOL));
        // Relative for large values: 1e-6 of 1e9 is 1000.
        assert!(tokens_match("1000000000.5", "1000000000.0", TOL));
        assert!(!tokens_match("1000002000.0", "1000000000.0", TOL));
        // Exact with tolerance 0.
        assert!(!tokens_match("0.1000001", "0.1", 0.0));
        assert!(tokens_match("0.10", "0.1", 0.0));
    }

    #[test]
    fn not_numbers() {
        for t in [
            "inf", "nan", "NaN", "infinity", "1e", "e5", ".", "-", "+", "1.2.3", "0x10", "1_000",
            "١",
        ] {
            assert_eq!(number(t), None, "{t}");
        }
        assert!(!tokens_match("inf", "inf0", TOL));
        assert!(tokens_match("inf", "inf", TOL)); // equal text
        assert!(!tokens_match("nan", "1", TOL));
        assert_eq!(number("12"), Some(Number::Integer((false, "12"))));
        assert_eq!(number("-000"), Some(Number::Integer((false, ""))));
        assert_eq!(number("1."), Some(Number::Decimal));
        assert_eq!(number("1.e5"), Some(Number::Decimal));
    }
}
