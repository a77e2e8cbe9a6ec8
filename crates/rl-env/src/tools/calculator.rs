//! `calculator`: exact rational arithmetic on one expression, bounded like the verifiers (input
//! size, nesting depth, digits of every intermediate result, exponent size), so no expression a
//! model writes can take more than a bounded amount of work.
//!
//! Grammar (Python's precedence; `^` is a synonym of `**`, `×`/`÷` of `*`/`/`):
//! `sum := product (("+" | "-") product)*`, `product := unary (("*" | "/" | "//" | "%") unary)*`,
//! `unary := ("+" | "-") unary | power`, `power := atom (("**" | "^") unary)?`,
//! `atom := number | "(" sum ")"`, numbers `12`, `3.25`, `.5`. So `-2**2` = −4 and
//! `2**-1` = 1/2, as in Python. `//` and `%` are Python's floor division and modulo (on exact
//! rationals). The result is an integer (`20126`) or a reduced fraction (`7/3`).

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::tools::{Tool, ToolError};

/// The calculator's bounds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CalculatorConfig {
    /// Longest expression, in characters.
    pub max_chars: usize,
    /// Deepest nesting of parentheses and unary signs.
    pub max_depth: usize,
    /// Most decimal digits of the numerator or denominator of any intermediate result.
    pub max_digits: usize,
}

impl Default for CalculatorConfig {
    fn default() -> Self {
        CalculatorConfig {
            max_chars: 256,
            max_depth: 32,
            max_digits: 200,
        }
    }
}

/// The `calculator` tool.
#[derive(Clone, Debug, Default)]
pub struct Calculator {
    config: CalculatorConfig,
}

impl Calculator {
    /// A calculator with these bounds.
    pub fn new(config: CalculatorConfig) -> Self {
        Calculator { config }
    }

    /// Evaluates one expression: the exact value as text, or why not (in words for the model).
    pub fn evaluate(&self, expression: &str) -> Result<String, String> {
        if expression.chars().count() > self.config.max_chars {
            return Err(format!(
                "the expression is longer than {} characters",
                self.config.max_chars
            ));
        }
        let tokens = lex(expression)?;
        let mut p = Parser {
            tokens: &tokens,
            pos: 0,
            cfg: &self.config,
        };
        let v = p.sum(0)?;
        if p.pos != tokens.len() {
            return Err(format!(
                "unexpected {} after the expression",
                tokens[p.pos].describe()
            ));
        }
        Ok(format_value(&v))
    }
}

impl Tool for Calculator {
    fn name(&self) -> &str {
        "calculator"
    }

    fn description(&self) -> &str {
        "Evaluates an arithmetic expression exactly (+, -, *, /, //, %, ** and parentheses) and returns an integer or a reduced fraction."
    }

    fn parameters(&self) -> Value {
        json!({
            "properties": {
                "expression": {"description": "The expression, e.g. 347*58", "type": "string"}
            },
            "required": ["expression"],
            "type": "object"
        })
    }

    fn call(&self, arguments: &Map<String, Value>) -> Result<String, ToolError> {
        let expr = match arguments.get("expression") {
            Some(Value::String(s)) => s.as_str(),
            Some(Value::Number(n)) => return Ok(n.to_string()),
            Some(_) => return Err(ToolError::Failed("`expression` must be a string".into())),
            None => return Err(ToolError::Failed("missing argument `expression`".into())),
        };
        self.evaluate(expr).map_err(ToolError::Failed)
    }
}

fn format_value(v: &BigRational) -> String {
    if v.denom().is_one() {
        v.numer().to_string()
    } else {
        format!("{}/{}", v.numer(), v.denom())
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(BigRational),
    Plus,
    Minus,
    Star,
    Slash,
    FloorDiv,
    Percent,
    Pow,
    Open,
    Close,
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Num(v) => format!("number {}", format_value(v)),
            Tok::Plus => "`+`".into(),
            Tok::Minus => "`-`".into(),
            Tok::Star => "`*`".into(),
            Tok::Slash => "`/`".into(),
            Tok::FloorDiv => "`//`".into(),
            Tok::Percent => "`%`".into(),
            Tok::Pow => "`**`".into(),
            Tok::Open => "`(`".into(),
            Tok::Close => "`)`".into(),
        }
    }
}

fn lex(s: &str) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let (tok, width) = match c {
            c if c.is_whitespace() => {
                i += 1;
                continue;
            }
            '+' => (Tok::Plus, 1),
            '-' | '−' => (Tok::Minus, 1),
            '*' if next == Some('*') => (Tok::Pow, 2),
            '*' | '×' => (Tok::Star, 1),
            '/' if next == Some('/') => (Tok::FloorDiv, 2),
            '/' | '÷' => (Tok::Slash, 1),
            '%' => (Tok::Percent, 1),
            '^' => (Tok::Pow, 1),
            '(' => (Tok::Open, 1),
            ')' => (Tok::Close, 1),
            c if c.is_ascii_digit() || c == '.' => {
                let start = i;
                let mut j = i;
                while j < chars.len() && chars[j].is_ascii_digit() {
                    j += 1;
                }
                let int: String = chars[start..j].iter().collect();
                let mut frac = String::new();
                if j < chars.len() && chars[j] == '.' {
                    j += 1;
                    while j < chars.len() && chars[j].is_ascii_digit() {
                        frac.push(chars[j]);
                        j += 1;
                    }
                }
                if int.is_empty() && frac.is_empty() {
                    return Err("a lone `.` is not a number".into());
                }
                let digits = format!("{int}{frac}");
                let numer: BigInt = digits.parse().map_err(|_| format!("bad number {digits}"))?;
                let denom = BigInt::from(10u32).pow(frac.len() as u32);
                out.push(Tok::Num(BigRational::new(numer, denom)));
                i = j;
                continue;
            }
            other => return Err(format!("unexpected character {other:?}")),
        };
        out.push(tok);
        i += width;
    }
    if out.is_empty() {
        return Err("the expression is empty".into());
    }
    Ok(out)
}

struct Parser<'a> {
    tokens: &'a [Tok],
    pos: usize,
    cfg: &'a CalculatorConfig,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos)
    }

    fn deeper(&self, depth: usize) -> Result<usize, String> {
        if depth >= self.cfg.max_depth {
            Err(format!("nested deeper than {} levels", self.cfg.max_depth))
        } else {
            Ok(depth + 1)
        }
    }

    fn check(&self, v: BigRational) -> Result<BigRational, String> {
        let digits = |x: &BigInt| x.abs().to_string().len();
        if digits(v.numer()) > self.cfg.max_digits || digits(v.denom()) > self.cfg.max_digits {
            return Err(format!(
                "an intermediate result has more than {} digits",
                self.cfg.max_digits
            ));
        }
        Ok(v)
    }

    fn sum(&mut self, depth: usize) -> Result<BigRational, String> {
        let mut v = self.product(depth)?;
        while let Some(op @ (Tok::Plus | Tok::Minus)) = self.peek().cloned() {
            self.pos += 1;
            let r = self.product(depth)?;
            v = self.check(if op == Tok::Plus { v + r } else { v - r })?;
        }
        Ok(v)
    }

    fn product(&mut self, depth: usize) -> Result<BigRational, String> {
        let mut v = self.unary(depth)?;
        while let Some(op @ (Tok::Star | Tok::Slash | Tok::FloorDiv | Tok::Percent)) =
            self.peek().cloned()
        {
            self.pos += 1;
            let r = self.unary(depth)?;
            if op != Tok::Star && r.is_zero() {
                return Err("division by zero".into());
            }
            v = self.check(match op {
                Tok::Star => v * r,
                Tok::Slash => v / r,
                Tok::FloorDiv => BigRational::from_integer((v / r).floor().to_integer()),
                _ => {
                    let q = (v.clone() / r.clone()).floor();
                    v - r * q
                }
            })?;
        }
        Ok(v)
    }

    fn unary(&mut self, depth: usize) -> Result<BigRational, String> {
        match self.peek() {
            Some(Tok::Minus) => {
                self.pos += 1;
                let d = self.deeper(depth)?;
                Ok(-self.unary(d)?)
            }
            Some(Tok::Plus) => {
                self.pos += 1;
                let d = self.deeper(depth)?;
                self.unary(d)
            }
            _ => self.power(depth),
        }
    }

    fn power(&mut self, depth: usize) -> Result<BigRational, String> {
        let base = self.atom(depth)?;
        if self.peek() != Some(&Tok::Pow) {
            return Ok(base);
        }
        self.pos += 1;
        let d = self.deeper(depth)?;
        let exp = self.unary(d)?;
        if !exp.denom().is_one() {
            return Err("only integer exponents are exact".into());
        }
        let e = exp
            .numer()
            .to_i64()
            .filter(|e| e.unsigned_abs() <= 10_000)
            .ok_or("the exponent is too large")?;
        if base.is_zero() && e < 0 {
            return Err("division by zero".into());
        }
        // Digits of the result ≈ |e| × digits of the base: refuse before computing.
        let digits = |x: &BigInt| x.abs().to_string().len() as u64;
        let size = digits(base.numer())
            .max(digits(base.denom()))
            .saturating_sub(1);
        if size.saturating_mul(e.unsigned_abs()) > self.cfg.max_digits as u64 {
            return Err(format!(
                "the result would have more than {} digits",
                self.cfg.max_digits
            ));
        }
        let mut r = BigRational::one();
        let b = if e < 0 { base.recip() } else { base };
        for _ in 0..e.unsigned_abs() {
            r = self.check(r * &b)?;
        }
        Ok(r)
    }

    fn atom(&mut self, depth: usize) -> Result<BigRational, String> {
        match self.peek().cloned() {
            Some(Tok::Num(v)) => {
                self.pos += 1;
                self.check(v)
            }
            Some(Tok::Open) => {
                self.pos += 1;
                let d = self.deeper(depth)?;
                let v = self.sum(d)?;
                if self.peek() != Some(&Tok::Close) {
                    return Err("a `(` is not closed".into());
                }
                self.pos += 1;
                Ok(v)
            }
            Some(t) => Err(format!("expected a number or `(`, found {}", t.describe())),
            None => Err("the expression ends too early".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(s: &str) -> Result<String, String> {
        Calculator::default().evaluate(s)
    }

    /// Values by hand: 347·58 = 347·50 + 347·8 = 17350 + 2776 = 20126; 7/3 stays a fraction;
    /// 1.5·4 = 6; Python: -2**2 = -4, 2**-2 = 1/4, 7//2 = 3, -7//2 = -4, -7 % 3 = 2,
    /// 7.5 % 2 = 1.5 = 3/2; (1+2)*3 = 9; 2^10 = 1024.
    #[test]
    fn values_by_hand() {
        for (e, v) in [
            ("347*58", "20126"),
            ("7/3", "7/3"),
            ("1.5*4", "6"),
            ("-2**2", "-4"),
            ("2**-2", "1/4"),
            ("7//2", "3"),
            ("-7//2", "-4"),
            ("-7 % 3", "2"),
            ("7.5 % 2", "3/2"),
            ("(1+2)*3", "9"),
            ("2^10", "1024"),
            (" 12 + 30 + 7 ", "49"),
            ("3 × 4 ÷ 6", "2"),
            (".5+.25", "3/4"),
        ] {
            assert_eq!(eval(e).as_deref(), Ok(v), "{e}");
        }
    }

    #[test]
    fn bad_expressions_say_why() {
        let err = |s: &str| eval(s).unwrap_err();
        assert!(err("1/0").contains("division by zero"));
        assert!(err("5 % 0").contains("division by zero"));
        assert!(err("0**-1").contains("division by zero"));
        assert!(err("").contains("empty"));
        assert!(err("2+").contains("ends too early"));
        assert!(err("(2+3").contains("not closed"));
        assert!(err("2 3").contains("after the expression"));
        assert!(err("import os").contains("unexpected character"));
        assert!(err("2**0.5").contains("integer exponents"));
        assert!(err("10**1000").contains("digits"));
        assert!(err("9**99999999999").contains("too large"));
        assert!(err(&"(".repeat(100)).contains("nested"));
        assert!(err(&"1".repeat(300)).contains("longer than"));
        // Repeated squaring cannot sneak past the digit bound.
        assert!(err("((((((((2**10)**10)**10)**10)**10)**10)**10)**10)").contains("digits"));
    }

    #[test]
    fn tool_arguments() {
        let c = Calculator::default();
        let args = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(c.call(&args(json!({"expression": "2*3"}))).unwrap(), "6");
        assert!(
            matches!(c.call(&args(json!({}))), Err(ToolError::Failed(m)) if m.contains("missing"))
        );
        assert!(matches!(
            c.call(&args(json!({"expression": [1]}))),
            Err(ToolError::Failed(_))
        ));
    }
}
