//! Tokens of LaTeX / plain-text answers.

use crate::budget::{Exceeded, Meter};

/// A lexing or parsing failure.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ParseFail {
    /// The text is not an answer we understand.
    Syntax(String),
    /// The budget ran out.
    Budget(Exceeded),
}

impl From<Exceeded> for ParseFail {
    fn from(e: Exceeded) -> Self {
        ParseFail::Budget(e)
    }
}

pub(crate) type PResult<T> = Result<T, ParseFail>;

pub(crate) fn syntax<T>(msg: impl Into<String>) -> PResult<T> {
    Err(ParseFail::Syntax(msg.into()))
}

/// Elementary functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Func {
    Sin,
    Cos,
    Tan,
    Cot,
    Sec,
    Csc,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Ln,
    Log,
    Exp,
    Abs,
}

/// Relations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RelOp {
    Eq,
    Lt,
    Le,
    Gt,
    Ge,
    Ne,
    In,
}

/// A token.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    /// A number literal: integer digits (separators removed), fraction digits, decimal exponent.
    Num {
        int: String,
        frac: Option<String>,
        /// The repeating block of `0.1\overline{6}`.
        repeat: Option<String>,
        exp: i64,
        /// Written with a decimal point or in scientific notation.
        decimal: bool,
        /// A bare digit run (no separators, point or exponent): `\frac12` may split it.
        plain: bool,
    },
    /// A one-letter (or Greek, or subscripted later) variable.
    Ident(String),
    /// A word: units, fillers or text answers.
    Word(String),
    Pi,
    E,
    Inf,
    Plus,
    Minus,
    Times,
    Div,
    Caret,
    Underscore,
    Bang,
    Percent,
    Degree,
    Pm,
    Mp,
    LParen,
    RParen,
    LBrack,
    RBrack,
    LBrace,
    RBrace,
    LSet,
    RSet,
    LAngle,
    RAngle,
    Bar,
    Comma,
    Semicolon,
    /// `:` (ratios and times: `3:4`, `12:00`).
    Colon,
    Period,
    Rel(RelOp),
    Cup,
    Frac,
    Sqrt,
    Binom,
    Func(Func),
    Emptyset,
    BeginMatrix,
    EndMatrix,
    Amp,
    RowSep,
}

/// Words dropped as units or fillers after (or before) a value, and words that separate list
/// items. Runs of ≥ 4 letters are words anyway; these are the shorter ones (and common long
/// ones, for documentation).
const SHORT_WORDS: &[&str] = &[
    "cm", "mm", "km", "m", "kg", "g", "mg", "lb", "lbs", "oz", "ft", "in", "yd", "mi", "mph",
    "kmh", "hr", "hrs", "min", "sec", "s", "ms", "ml", "l", "cc", "sq", "deg", "rad", "am", "pm",
    "and", "or", "the", "is", "are", "of", "to", "per", "sqft", "cents", "usd", "th", "st", "nd",
    "rd", "yes", "no",
];

/// Words that change a value (`2 hundred`, `not 5`, `3 times 4`): next to a value they make the
/// answer unparseable instead of being dropped like units.
const MEANINGFUL_WORDS: &[&str] = &[
    "not",
    "no",
    "never",
    "except",
    "hundred",
    "hundreds",
    "thousand",
    "thousands",
    "million",
    "millions",
    "billion",
    "billions",
    "trillion",
    "dozen",
    "dozens",
    "half",
    "twice",
    "double",
    "triple",
    "times",
    "squared",
    "cubed",
    "over",
    "plus",
    "minus",
    "negative",
    "thirds",
    "quarter",
    "quarters",
    "tenths",
    "hundredths",
    "thousandths",
];

/// Whether a word changes the value it accompanies.
pub(crate) fn is_meaningful_word(w: &str) -> bool {
    let w = w
        .trim_matches(|c: char| !c.is_ascii_alphabetic())
        .to_ascii_lowercase();
    MEANINGFUL_WORDS.contains(&w.as_str())
}

fn is_short_word(w: &str) -> bool {
    SHORT_WORDS.contains(&w)
}

fn func_named(name: &str) -> Option<Func> {
    Some(match name {
        "sin" => Func::Sin,
        "cos" => Func::Cos,
        "tan" => Func::Tan,
        "cot" => Func::Cot,
        "sec" => Func::Sec,
        "csc" => Func::Csc,
        "arcsin" | "asin" => Func::Asin,
        "arccos" | "acos" => Func::Acos,
        "arctan" | "atan" => Func::Atan,
        "sinh" => Func::Sinh,
        "cosh" => Func::Cosh,
        "tanh" => Func::Tanh,
        "ln" => Func::Ln,
        "log" | "lg" => Func::Log,
        "exp" => Func::Exp,
        "abs" => Func::Abs,
        _ => return None,
    })
}

const GREEK: &[&str] = &[
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "varepsilon",
    "zeta",
    "eta",
    "theta",
    "vartheta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "rho",
    "sigma",
    "tau",
    "upsilon",
    "phi",
    "varphi",
    "chi",
    "psi",
    "omega",
    "Gamma",
    "Delta",
    "Theta",
    "Lambda",
    "Xi",
    "Sigma",
    "Upsilon",
    "Phi",
    "Psi",
    "Omega",
];

/// Commands that only change spacing, sizing or style: skipped.
const IGNORED: &[&str] = &[
    "left",
    "right",
    "big",
    "Big",
    "bigg",
    "Bigg",
    "bigl",
    "bigr",
    "Bigl",
    "Bigr",
    "biggl",
    "biggr",
    "Biggl",
    "Biggr",
    "displaystyle",
    "textstyle",
    "scriptstyle",
    "limits",
    "nolimits",
    "quad",
    "qquad",
    "enspace",
    "thinspace",
    "medspace",
    "thickspace",
    "negthinspace",
    "hfill",
    "boxed",
    "fbox",
    "mathord",
    "ensuremath",
    "phantom",
    "hspace",
];

/// Commands whose braced argument is text or a styled symbol.
const TEXTLIKE: &[&str] = &[
    "text",
    "textbf",
    "textit",
    "textrm",
    "textsf",
    "texttt",
    "textnormal",
    "mbox",
    "mathrm",
    "mathbf",
    "mathit",
    "mathsf",
    "mathtt",
    "mathnormal",
    "operatorname",
    "emph",
    "bm",
    "boldsymbol",
    "mathbb",
];

struct Lexer<'s, 'm> {
    src: &'s str,
    pos: usize,
    out: Vec<Tok>,
    meter: &'m mut Meter,
    depth: usize,
    /// Words written as plain letters (not inside `\text{}`).
    plain_words: usize,
}

/// Lexes an answer string; also returns how many words were written as plain letters.
pub(crate) fn lex(src: &str, meter: &mut Meter) -> PResult<(Vec<Tok>, usize)> {
    let mut lx = Lexer {
        src,
        pos: 0,
        out: Vec::new(),
        meter,
        depth: 0,
        plain_words: 0,
    };
    lx.run()?;
    Ok((lx.out, lx.plain_words))
}

impl Lexer<'_, '_> {
    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn peek_at(&self, off: usize) -> Option<char> {
        self.src[self.pos..].chars().nth(off)
    }

    fn push(&mut self, t: Tok) -> PResult<()> {
        self.meter.charge(1)?;
        self.out.push(t);
        Ok(())
    }

    fn run(&mut self) -> PResult<()> {
        while let Some(c) = self.peek() {
            self.meter.charge(1)?;
            match c {
                '0'..='9' => self.number()?,
                '.' if matches!(self.peek_at(1), Some('0'..='9')) => self.number()?,
                '\\' => self.command()?,
                'a'..='z' | 'A'..='Z' => self.letters()?,
                _ => {
                    self.pos += c.len_utf8();
                    self.symbol(c)?;
                }
            }
        }
        Ok(())
    }

    fn symbol(&mut self, c: char) -> PResult<()> {
        let t = match c {
            c if c.is_whitespace() => return Ok(()),
            '~' | '$' | '"' | '`' => return Ok(()),
            '+' => Tok::Plus,
            '-' | '−' | '–' => Tok::Minus,
            '*' | '×' | '·' | '⋅' | '∗' => Tok::Times,
            '/' | '÷' => Tok::Div,
            '^' => Tok::Caret,
            '_' => Tok::Underscore,
            '!' => {
                if self.peek() == Some('=') {
                    self.pos += 1;
                    Tok::Rel(RelOp::Ne)
                } else {
                    Tok::Bang
                }
            }
            '%' => Tok::Percent,
            '°' => Tok::Degree,
            '±' => Tok::Pm,
            '∓' => Tok::Mp,
            '(' => Tok::LParen,
            ')' => Tok::RParen,
            '[' => Tok::LBrack,
            ']' => Tok::RBrack,
            '{' => Tok::LBrace,
            '}' => Tok::RBrace,
            '⟨' => Tok::LAngle,
            '⟩' => Tok::RAngle,
            '|' => Tok::Bar,
            ',' => Tok::Comma,
            ';' => Tok::Semicolon,
            '.' => Tok::Period,
            '&' => Tok::Amp,
            '=' => Tok::Rel(RelOp::Eq),
            '≈' => Tok::Rel(RelOp::Eq),
            '<' => {
                if self.peek() == Some('=') {
                    self.pos += 1;
                    Tok::Rel(RelOp::Le)
                } else {
                    Tok::Rel(RelOp::Lt)
                }
            }
            '>' => {
                if self.peek() == Some('=') {
                    self.pos += 1;
                    Tok::Rel(RelOp::Ge)
                } else {
                    Tok::Rel(RelOp::Gt)
                }
            }
            '≤' | '⩽' => Tok::Rel(RelOp::Le),
            '≥' | '⩾' => Tok::Rel(RelOp::Ge),
            '≠' => Tok::Rel(RelOp::Ne),
            ':' => Tok::Colon,
            '∈' => Tok::Rel(RelOp::In),
            '∪' => Tok::Cup,
            '∅' => Tok::Emptyset,
            'π' => Tok::Pi,
            '∞' => Tok::Inf,
            '√' => Tok::Sqrt,
            '²' | '³' | '¹' => {
                self.push(Tok::Caret)?;
                let d = match c {
                    '²' => "2",
                    '³' => "3",
                    _ => "1",
                };
                return self.push(plain_int(d));
            }
            c if c.is_alphabetic() => Tok::Ident(c.to_string()),
            other => return syntax(format!("unexpected character {other:?}")),
        };
        self.push(t)
    }

    /// Digits with optional thousands separators, fraction and exponent.
    fn number(&mut self) -> PResult<()> {
        let bytes = self.src.as_bytes();
        let digits_at = |p: usize| {
            let mut q = p;
            while q < bytes.len() && bytes[q].is_ascii_digit() {
                q += 1;
            }
            q
        };
        let start = self.pos;
        let mut p = digits_at(start);
        let mut int = self.src[start..p].to_string();
        let mut separated = false;
        if int.len() <= 3 && !int.is_empty() {
            // Thousands separators: `,` `{,}` `\,` `,\!` each followed by exactly 3 digits.
            loop {
                let rest = &self.src[p..];
                let sep = [",\\!", "{,}", "\\,", ","]
                    .iter()
                    .find(|s| rest.starts_with(**s))
                    .map(|s| s.len());
                let Some(sl) = sep else { break };
                let q = digits_at(p + sl);
                if q - (p + sl) == 3 {
                    int.push_str(&self.src[p + sl..q]);
                    p = q;
                    separated = true;
                } else {
                    break;
                }
            }
        }
        let mut frac = None;
        if bytes.get(p) == Some(&b'.') && bytes.get(p + 1).is_some_and(|b| b.is_ascii_digit()) {
            let q = digits_at(p + 1);
            frac = Some(self.src[p + 1..q].to_string());
            p = q;
        }
        // A repeating decimal: `0.\overline{3}`, `0.1\overline{6}`.
        let mut repeat = None;
        let over = if frac.is_some() {
            "\\overline{"
        } else {
            ".\\overline{"
        };
        if self.src[p..].starts_with(over) {
            let a = p + over.len();
            let b = digits_at(a);
            if b > a && bytes.get(b) == Some(&b'}') {
                repeat = Some(self.src[a..b].to_string());
                frac.get_or_insert_with(String::new);
                p = b + 1;
            }
        }
        let mut exp = 0i64;
        let mut sci = false;
        if repeat.is_none() && matches!(bytes.get(p), Some(b'e' | b'E')) {
            let mut q = p + 1;
            if matches!(bytes.get(q), Some(b'+' | b'-')) {
                q += 1;
            }
            let r = digits_at(q);
            // `2e` is 2·e and `2ex` is 2·e·x: only digits make an exponent.
            if r > q && !bytes.get(r).is_some_and(|b| b.is_ascii_alphabetic()) {
                let text = &self.src[p + 1..r];
                exp = text.parse::<i64>().unwrap_or(if text.starts_with('-') {
                    i64::MIN / 4
                } else {
                    i64::MAX / 4
                });
                sci = true;
                p = r;
            }
        }
        let total = int.len()
            + frac.as_ref().map_or(0, |f| f.len())
            + repeat.as_ref().map_or(0, |r| 2 * r.len());
        let max = self.meter.budget.max_digits;
        if total > max || exp.unsigned_abs() > max as u64 {
            return Err(ParseFail::Budget(Exceeded(format!(
                "a number literal with more than max_digits = {max} digits"
            ))));
        }
        self.meter.charge(total as u64 / 8)?;
        if int.is_empty() {
            int.push('0');
        }
        self.pos = p;
        // A repeating decimal is an exact rational, not an approximation.
        let decimal = (frac.is_some() && repeat.is_none()) || sci;
        let plain = frac.is_none() && !sci && !separated;
        self.push(Tok::Num {
            int,
            frac,
            repeat,
            exp,
            decimal,
            plain,
        })
    }

    fn letters(&mut self) -> PResult<()> {
        let bytes = self.src.as_bytes();
        let start = self.pos;
        let mut p = start;
        while p < bytes.len() && bytes[p].is_ascii_alphabetic() {
            p += 1;
        }
        self.pos = p;
        let w = &self.src[start..p];
        self.word_or_symbols(w)
    }

    /// A run of letters: a function, a constant, a word, or a product of one-letter variables.
    fn word_or_symbols(&mut self, w: &str) -> PResult<()> {
        if let Some(f) = func_named(w) {
            return self.push(Tok::Func(f));
        }
        match w {
            "pi" => return self.push(Tok::Pi),
            "sqrt" => return self.push(Tok::Sqrt),
            "inf" | "infty" | "infinity" => return self.push(Tok::Inf),
            "e" => return self.push(Tok::E),
            _ => {}
        }
        if w.len() == 1 {
            return self.push(Tok::Ident(w.to_string()));
        }
        let lower = w.to_ascii_lowercase();
        if lower == "percent" {
            return self.push(Tok::Percent);
        }
        if w.len() >= 4 || is_short_word(&lower) {
            self.plain_words += 1;
            return self.push(Tok::Word(w.to_string()));
        }
        for ch in w.chars() {
            let t = if ch == 'e' {
                Tok::E
            } else {
                Tok::Ident(ch.to_string())
            };
            self.push(t)?;
        }
        Ok(())
    }

    /// The content of a `{…}` group starting at `self.pos` (which must be `{`), braces balanced,
    /// escaped braces skipped.
    fn braced_raw(&mut self) -> PResult<&str> {
        let bytes = self.src.as_bytes();
        if bytes.get(self.pos) != Some(&b'{') {
            return syntax("expected `{`");
        }
        let start = self.pos + 1;
        let mut depth = 0usize;
        let mut i = self.pos;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => {
                    i += 2;
                    continue;
                }
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        self.pos = i + 1;
                        return Ok(&self.src[start..i]);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        syntax("unbalanced `{`")
    }

    fn skip_spaces(&mut self) {
        while let Some(c) = self.peek() {
            if c.is_whitespace() {
                self.pos += c.len_utf8();
            } else {
                break;
            }
        }
    }

    /// Re-lexes `inner` (the content of a `\text{}`-like group) in place.
    fn sublex(&mut self, inner: &str) -> PResult<()> {
        self.depth += 1;
        self.meter.depth(self.depth)?;
        // Lex the inner string with the same output and meter.
        let inner_owned = inner.to_string();
        let mut sub = Lexer {
            src: &inner_owned,
            pos: 0,
            out: std::mem::take(&mut self.out),
            meter: self.meter,
            depth: self.depth,
            plain_words: 0,
        };
        let r = sub.run();
        self.out = std::mem::take(&mut sub.out);
        self.depth -= 1;
        r
    }

    fn textlike(&mut self, name: &str) -> PResult<()> {
        self.skip_spaces();
        if self.peek() != Some('{') {
            // `\mathrm e`: a single following character.
            return Ok(());
        }
        let inner = self.braced_raw()?.to_string();
        let trimmed = inner.trim();
        if trimmed.is_empty() {
            return Ok(());
        }
        if name == "operatorname"
            && let Some(f) = func_named(trimmed)
        {
            return self.push(Tok::Func(f));
        }
        // Math inside text (`\text{13}`, `\text{(A)}`, `\mathrm{e}`): lex it. Text with a
        // run of two or more letters is a word (a unit, a filler or a text answer).
        let has_word = trimmed
            .as_bytes()
            .windows(2)
            .any(|w| w[0].is_ascii_alphabetic() && w[1].is_ascii_alphabetic());
        if has_word {
            for word in trimmed.split_whitespace() {
                if word.eq_ignore_ascii_case("percent") || word == "\\%" || word == "%" {
                    self.push(Tok::Percent)?;
                } else {
                    self.push(Tok::Word(word.to_string()))?;
                }
            }
            Ok(())
        } else {
            self.sublex(trimmed)
        }
    }

    fn command(&mut self) -> PResult<()> {
        // self.peek() == '\\'
        self.pos += 1;
        let Some(c) = self.peek() else {
            return syntax("a lone backslash");
        };
        if !c.is_ascii_alphabetic() {
            self.pos += c.len_utf8();
            let t = match c {
                ',' | ';' | ':' | '!' | ' ' | '>' | '$' | '#' | '\n' | '\t' | '/' => {
                    return Ok(());
                }
                '%' => Tok::Percent,
                '{' => Tok::LSet,
                '}' => Tok::RSet,
                '|' => Tok::Bar,
                '\\' => Tok::RowSep,
                '(' | ')' | '[' | ']' => return Ok(()), // math delimiters inside an answer
                '&' => return Ok(()),
                other => return syntax(format!("unsupported command \\{other}")),
            };
            return self.push(t);
        }
        let bytes = self.src.as_bytes();
        let start = self.pos;
        let mut p = start;
        while p < bytes.len() && bytes[p].is_ascii_alphabetic() {
            p += 1;
        }
        self.pos = p;
        let name = &self.src[start..p];
        if IGNORED.contains(&name) {
            if name == "hspace" || name == "phantom" {
                self.skip_spaces();
                if self.peek() == Some('{') {
                    self.braced_raw()?;
                }
            }
            // `\left.` / `\right.` are invisible delimiters.
            if (name == "left" || name == "right") && self.peek() == Some('.') {
                self.pos += 1;
            }
            return Ok(());
        }
        if TEXTLIKE.contains(&name) {
            return self.textlike(name);
        }
        if let Some(f) = func_named(name) {
            return self.push(Tok::Func(f));
        }
        if GREEK.contains(&name) {
            return self.push(Tok::Ident(name.to_string()));
        }
        let t = match name {
            "frac" | "dfrac" | "tfrac" | "cfrac" => Tok::Frac,
            "sqrt" => Tok::Sqrt,
            "binom" | "dbinom" | "tbinom" => Tok::Binom,
            "pi" => Tok::Pi,
            "infty" | "infin" => Tok::Inf,
            "cdot" | "times" | "ast" => Tok::Times,
            "div" => Tok::Div,
            "pm" => Tok::Pm,
            "mp" => Tok::Mp,
            "lbrace" => Tok::LSet,
            "rbrace" => Tok::RSet,
            "langle" => Tok::LAngle,
            "rangle" => Tok::RAngle,
            "lvert" | "rvert" | "vert" | "mid" => Tok::Bar,
            "circ" | "degree" => Tok::Degree,
            "le" | "leq" | "leqslant" => Tok::Rel(RelOp::Le),
            "ge" | "geq" | "geqslant" => Tok::Rel(RelOp::Ge),
            "lt" => Tok::Rel(RelOp::Lt),
            "gt" => Tok::Rel(RelOp::Gt),
            "ne" | "neq" => Tok::Rel(RelOp::Ne),
            "approx" | "equiv" | "coloneqq" => Tok::Rel(RelOp::Eq),
            "in" => Tok::Rel(RelOp::In),
            "cup" => Tok::Cup,
            "emptyset" | "varnothing" | "empty" => Tok::Emptyset,
            "land" | "wedge" => Tok::Comma,
            "lor" | "vee" => Tok::Comma,
            "begin" | "end" => {
                self.skip_spaces();
                let env = self.braced_raw()?.trim().to_string();
                match env.as_str() {
                    "pmatrix" | "bmatrix" | "matrix" | "Bmatrix" | "smallmatrix" => {
                        if name == "begin" {
                            Tok::BeginMatrix
                        } else {
                            Tok::EndMatrix
                        }
                    }
                    other => return syntax(format!("unsupported environment {other}")),
                }
            }
            other => return syntax(format!("unsupported command \\{other}")),
        };
        self.push(t)
    }
}

/// A plain integer token.
pub(crate) fn plain_int(digits: &str) -> Tok {
    Tok::Num {
        int: digits.to_string(),
        frac: None,
        repeat: None,
        exp: 0,
        decimal: false,
        plain: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Budget;

    fn toks(s: &str) -> Vec<Tok> {
        lex(s, &mut Meter::new(Budget::default())).unwrap().0
    }

    #[test]
    fn numbers() {
        assert_eq!(toks("1,000"), vec![plain_sep("1000")]);
        assert_eq!(toks("10{,}000"), vec![plain_sep("10000")]);
        assert_eq!(toks("1\\,234\\,567"), vec![plain_sep("1234567")]);
        assert_eq!(toks("1,2").len(), 3);
        assert!(matches!(
            &toks("1.5e-3")[0],
            Tok::Num {
                exp: -3,
                decimal: true,
                ..
            }
        ));
        assert_eq!(toks("2e"), vec![plain_int("2"), Tok::E]);
    }

    fn plain_sep(d: &str) -> Tok {
        Tok::Num {
            int: d.into(),
            frac: None,
            repeat: None,
            exp: 0,
            decimal: false,
            plain: false,
        }
    }

    #[test]
    fn words_and_text() {
        assert_eq!(
            toks("10\\text{ cm}"),
            vec![plain_int("10"), Tok::Word("cm".into())]
        );
        assert_eq!(toks("\\text{13}"), vec![plain_int("13")]);
        assert_eq!(
            toks("xy"),
            vec![Tok::Ident("x".into()), Tok::Ident("y".into())]
        );
        assert_eq!(toks("apples"), vec![Tok::Word("apples".into())]);
    }

    #[test]
    fn huge_literal_is_over_budget() {
        let big = format!("1{}", "0".repeat(20_000));
        let r = lex(&big, &mut Meter::new(Budget::default()));
        assert!(matches!(r, Err(ParseFail::Budget(_))));
    }
}
