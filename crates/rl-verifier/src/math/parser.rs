//! A recursive-descent parser from tokens to answer trees, bounded by the budget's depth.
//!
//! Grammar (lowest precedence first):
//! ```text
//! answer   := list
//! list     := item ((',' | ';' | "and" | "or") item)*
//! item     := relation ('\cup' relation)*
//! relation := sum (relop sum)*            relop: = < > ≤ ≥ ≠ \in
//! sum      := term (('+' | '-' | '\pm' | '\mp') term)*
//! term     := unary (('*' | '\cdot' | '\times' | '/' | '\div') unary | implicit-factor)*
//! unary    := ('-' | '+' | '\pm' | '\mp') unary | power
//! power    := postfix ('^' exponent)?     (right-associative; ^\circ is dropped)
//! postfix  := atom ('!' | '%' | '\%' | '°')*
//! atom     := number | variable | \pi | e | \infty | ( … ) | [ … ] | { … } | \{ … \}
//!           | |x| | \frac a b | \sqrt[n] a | \binom a b | function arg | matrix
//! ```
//! Words (units, fillers, `\text{ cm}`) next to values are dropped; an answer made only of words
//! is a text answer.

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Pow, Zero};

use super::lexer::{
    Func, PResult, ParseFail, RelOp, Tok, is_meaningful_word, lex, plain_int, syntax,
};
use crate::budget::Meter;

/// A scalar expression.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Expr {
    /// An exact literal; the flag marks decimal notation (an approximate value).
    Num(BigRational, bool),
    Pi,
    E,
    Inf,
    Var(String),
    /// Terms with a "negated" flag.
    Sum(Vec<(bool, Expr)>),
    /// Factors with a "divide" flag.
    Prod(Vec<(bool, Expr)>),
    Neg(Box<Expr>),
    Pow(Box<Expr>, Box<Expr>),
    Func(Func, Box<Expr>),
    /// (index, radicand)
    Root(Box<Expr>, Box<Expr>),
    /// (base, argument)
    LogBase(Box<Expr>, Box<Expr>),
    Fact(Box<Expr>),
    Binom(Box<Expr>, Box<Expr>),
    Percent(Box<Expr>),
    /// a ± b (`true`: a ∓ b).
    Pm(Box<Expr>, Box<Expr>, bool),
}

/// Delimiters of a tuple.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Delim {
    Paren,
    Bracket,
    Angle,
    Colon,
}

/// A parsed answer.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Node {
    E(Expr),
    Tuple(Vec<Node>, Delim),
    /// (lo, hi, lo closed, hi closed)
    Interval(Expr, Expr, bool, bool),
    Set(Vec<Node>),
    /// A bare comma-separated list.
    List(Vec<Node>),
    Union(Vec<Node>),
    Rel(Vec<Node>, Vec<RelOp>),
    Matrix(Vec<Vec<Expr>>),
    Text(String),
}

/// Parses one answer.
pub(crate) fn parse(src: &str, meter: &mut Meter) -> PResult<Node> {
    parse_with(src, meter, true)
}

/// Parses one answer; with `allow_plain_words = false`, text written as plain words (prose) is
/// rejected, so that a whole response is accepted only when it is a bare expression.
pub(crate) fn parse_with(src: &str, meter: &mut Meter, allow_plain_words: bool) -> PResult<Node> {
    let (toks, plain_words) = lex(src, meter)?;
    if !allow_plain_words && plain_words > 0 {
        return syntax("prose, not a bare expression");
    }
    // `a:b` (ratios, times) at the top level: an ordered tuple of its parts.
    if toks.contains(&Tok::Colon) {
        let mut parts = Vec::new();
        for part in toks.split(|t| *t == Tok::Colon) {
            parts.push(parse_tokens(part.to_vec(), meter)?);
        }
        return Ok(Node::Tuple(parts, Delim::Colon));
    }
    parse_tokens(toks, meter)
}

fn parse_tokens(toks: Vec<Tok>, meter: &mut Meter) -> PResult<Node> {
    let is_word = |t: &Tok| matches!(t, Tok::Word(_));
    let only_words = toks
        .iter()
        .all(|t| is_word(t) || matches!(t, Tok::Period | Tok::Comma | Tok::Semicolon));
    if toks.iter().any(is_word) && only_words {
        let words: Vec<&str> = toks
            .iter()
            .filter_map(|t| match t {
                Tok::Word(w) => Some(w.as_str()),
                _ => None,
            })
            .collect();
        return Ok(Node::Text(words.join(" ")));
    }
    if let Some(Tok::Word(w)) = toks
        .iter()
        .find(|t| matches!(t, Tok::Word(w) if is_meaningful_word(w)))
    {
        return syntax(format!(
            "the word `{w}` changes the value; not an answer we can read"
        ));
    }
    let mut p = Parser {
        toks,
        pos: 0,
        depth: 0,
        meter,
        abs: 0,
    };
    p.skip_words();
    if p.at_end() {
        return syntax("empty answer");
    }
    let items = p.list()?;
    while p.eat(&Tok::Period) {}
    p.skip_words();
    if let Some(t) = p.peek() {
        return syntax(format!("unexpected {} after the answer", describe(t)));
    }
    Ok(if items.len() == 1 {
        items.into_iter().next().expect("one item")
    } else {
        Node::List(items)
    })
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Num { int, .. } => format!("number {int}"),
        Tok::Ident(s) => format!("`{s}`"),
        Tok::Word(w) => format!("word `{w}`"),
        other => format!("{other:?}"),
    }
}

/// The exact value of a number token: int.frac(repeat…) × 10^exp.
fn number_value(int: &str, frac: Option<&str>, repeat: Option<&str>, exp: i64) -> BigRational {
    let mut digits = String::with_capacity(int.len() + frac.map_or(0, str::len));
    digits.push_str(int);
    let scale = frac.map_or(0, |f| {
        digits.push_str(f);
        f.len() as i64
    });
    let n: BigInt = digits.parse().unwrap_or_else(|_| BigInt::zero());
    let ten = BigInt::from(10u32);
    if let Some(r) = repeat {
        // x = (N + R/(10^r − 1)) / 10^f = (N·(10^r − 1) + R) / (10^f·(10^r − 1)).
        let nines = num_traits::Pow::pow(&ten, r.len() as u64) - BigInt::one();
        let rep: BigInt = r.parse().unwrap_or_else(|_| BigInt::zero());
        let num = n * &nines + rep;
        let den = num_traits::Pow::pow(&ten, scale as u64) * nines;
        return super::rat::reduce(num, den);
    }
    let e = exp - scale;
    if e >= 0 {
        BigRational::from_integer(n * ten.pow(e as u64))
    } else {
        super::rat::reduce(n, ten.pow(e.unsigned_abs()))
    }
}

struct Parser<'m> {
    toks: Vec<Tok>,
    pos: usize,
    depth: usize,
    meter: &'m mut Meter,
    /// Open `|…|` groups (a `|` then closes instead of opening).
    abs: usize,
}

fn is_separator(t: &Tok) -> bool {
    match t {
        Tok::Comma | Tok::Semicolon => true,
        Tok::Word(w) => {
            let w = w.to_ascii_lowercase();
            w == "and" || w == "or"
        }
        _ => false,
    }
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn at_end(&self) -> bool {
        self.pos >= self.toks.len()
    }

    fn bump(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn eat(&mut self, t: &Tok) -> bool {
        if self.peek() == Some(t) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, t: &Tok, what: &str) -> PResult<()> {
        if self.eat(t) {
            Ok(())
        } else {
            match self.peek() {
                Some(x) => syntax(format!("expected {what}, found {}", describe(x))),
                None => syntax(format!("expected {what}, found the end")),
            }
        }
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        self.meter.charge(1)?;
        self.meter.depth(self.depth).map_err(ParseFail::Budget)
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Skips unit / filler words (not list separators), with a unit exponent (`cm^2`).
    fn skip_words(&mut self) {
        while let Some(Tok::Word(_)) = self.peek() {
            if is_separator(self.peek().expect("peeked")) {
                return;
            }
            self.pos += 1;
            if self.peek() == Some(&Tok::Caret)
                && let Some(Tok::Num { .. }) = self.toks.get(self.pos + 1)
            {
                self.pos += 2;
            }
        }
    }

    fn at_closer(&self) -> bool {
        matches!(
            self.peek(),
            None | Some(
                Tok::RParen
                    | Tok::RBrack
                    | Tok::RBrace
                    | Tok::RSet
                    | Tok::RAngle
                    | Tok::Amp
                    | Tok::RowSep
                    | Tok::EndMatrix
                    | Tok::Period
            )
        ) || (self.abs > 0 && self.peek() == Some(&Tok::Bar))
    }

    fn list(&mut self) -> PResult<Vec<Node>> {
        let mut items = vec![self.item()?];
        while self.peek().is_some_and(is_separator) {
            self.pos += 1;
            self.skip_words();
            if self.at_closer() {
                break;
            }
            items.push(self.item()?);
        }
        Ok(items)
    }

    fn item(&mut self) -> PResult<Node> {
        let first = self.relation()?;
        if self.peek() != Some(&Tok::Cup) {
            return Ok(first);
        }
        let mut parts = vec![first];
        while self.eat(&Tok::Cup) {
            parts.push(self.relation()?);
        }
        Ok(Node::Union(parts))
    }

    fn relation(&mut self) -> PResult<Node> {
        let first = self.sum()?;
        let mut parts = vec![first];
        let mut ops = Vec::new();
        while let Some(Tok::Rel(op)) = self.peek() {
            let op = *op;
            self.pos += 1;
            ops.push(op);
            parts.push(if op == RelOp::In {
                self.item()?
            } else {
                self.sum()?
            });
        }
        Ok(if ops.is_empty() {
            parts.pop().expect("one part")
        } else {
            Node::Rel(parts, ops)
        })
    }

    fn sum(&mut self) -> PResult<Node> {
        let first = self.term()?;
        if !matches!(
            self.peek(),
            Some(Tok::Plus | Tok::Minus | Tok::Pm | Tok::Mp)
        ) {
            return Ok(first);
        }
        let mut terms: Vec<(bool, Expr)> = vec![(false, into_expr(first)?)];
        // Each ± nests the sum inside a new node: it counts against the depth.
        let mut nested = 0;
        let result = (|| {
            while let Some(Tok::Plus | Tok::Minus | Tok::Pm | Tok::Mp) = self.peek() {
                let op = self.bump().expect("peeked");
                self.skip_words();
                let t = into_expr(self.term()?)?;
                match op {
                    Tok::Plus => terms.push((false, t)),
                    Tok::Minus => terms.push((true, t)),
                    _ => {
                        nested += 1;
                        self.enter()?;
                        let acc = flat_sum(std::mem::take(&mut terms));
                        terms.push((false, Expr::Pm(Box::new(acc), Box::new(t), op == Tok::Mp)));
                    }
                }
            }
            Ok(())
        })();
        for _ in 0..nested {
            self.leave();
        }
        result.map(|()| Node::E(flat_sum(terms)))
    }

    fn starts_implicit_factor(&self) -> bool {
        let prev_is_num = self.pos > 0 && matches!(self.toks[self.pos - 1], Tok::Num { .. });
        match self.peek() {
            Some(Tok::Num { .. }) => !prev_is_num,
            Some(
                Tok::Ident(_)
                | Tok::Pi
                | Tok::E
                | Tok::LParen
                | Tok::LBrace
                | Tok::Frac
                | Tok::Sqrt
                | Tok::Binom
                | Tok::Func(_),
            ) => true,
            Some(Tok::Bar) => self.abs == 0,
            _ => false,
        }
    }

    fn term(&mut self) -> PResult<Node> {
        let first = self.unary()?;
        let mut factors: Vec<(bool, Expr)> = Vec::new();
        let mut first = Some(first);
        loop {
            self.skip_words();
            while self.eat(&Tok::Degree) {}
            let div = match self.peek() {
                Some(Tok::Times) => false,
                Some(Tok::Div) => true,
                _ if self.starts_implicit_factor() => {
                    let after_integer = matches!(
                        self.pos.checked_sub(1).and_then(|i| self.toks.get(i)),
                        Some(Tok::Num { decimal: false, .. })
                    );
                    let is_frac = self.peek() == Some(&Tok::Frac);
                    if let Some(f) = first.take() {
                        factors.push((false, into_expr(f)?));
                    }
                    let f = into_expr(self.power()?)?;
                    // `2\frac{1}{4}` is the mixed number 2¼ (as read, and as math-verify reads it).
                    if after_integer
                        && is_frac
                        && factors.len() == 1
                        && let Some(m) = mixed_number(&factors[0].1, &f)
                    {
                        factors[0].1 = m;
                        continue;
                    }
                    factors.push((false, f));
                    continue;
                }
                _ => break,
            };
            self.pos += 1;
            if let Some(f) = first.take() {
                factors.push((false, into_expr(f)?));
            }
            let f = into_expr(self.unary()?)?;
            factors.push((div, f));
        }
        match first {
            Some(node) => Ok(node),
            None => Ok(Node::E(Expr::Prod(factors))),
        }
    }

    fn unary(&mut self) -> PResult<Node> {
        match self.peek() {
            Some(Tok::Minus) => {
                self.pos += 1;
                self.enter()?;
                let x = into_expr(self.unary()?)?;
                self.leave();
                Ok(Node::E(Expr::Neg(Box::new(x))))
            }
            Some(Tok::Plus) => {
                self.pos += 1;
                self.enter()?;
                let x = self.unary();
                self.leave();
                x
            }
            Some(Tok::Pm | Tok::Mp) => {
                let mp = self.bump() == Some(Tok::Mp);
                self.enter()?;
                let x = into_expr(self.unary()?)?;
                self.leave();
                let zero = Expr::Num(BigRational::zero(), false);
                Ok(Node::E(Expr::Pm(Box::new(zero), Box::new(x), mp)))
            }
            _ => self.power(),
        }
    }

    fn power(&mut self) -> PResult<Node> {
        let base = self.postfix()?;
        if self.peek() != Some(&Tok::Caret) {
            return Ok(base);
        }
        // `^\circ` and `^{\circ}` are degree marks.
        if self.toks.get(self.pos + 1) == Some(&Tok::Degree) {
            self.pos += 2;
            return Ok(base);
        }
        if self.toks.get(self.pos + 1) == Some(&Tok::LBrace)
            && self.toks.get(self.pos + 2) == Some(&Tok::Degree)
            && self.toks.get(self.pos + 3) == Some(&Tok::RBrace)
        {
            self.pos += 4;
            return Ok(base);
        }
        self.pos += 1;
        let base = into_expr(base)?;
        let exp = self.exponent()?;
        let mut node = Expr::Pow(Box::new(base), Box::new(exp));
        // `x^2!` or `x^{2}\%`: postfix operators after a power apply to the power. Each one
        // nests the tree, so each counts against the depth.
        let mut wrapped = 0;
        loop {
            match self.peek() {
                Some(Tok::Bang) => node = Expr::Fact(Box::new(node)),
                Some(Tok::Percent) => node = Expr::Percent(Box::new(node)),
                _ => break,
            }
            self.pos += 1;
            wrapped += 1;
            self.enter()?;
        }
        for _ in 0..wrapped {
            self.leave();
        }
        Ok(Node::E(node))
    }

    fn exponent(&mut self) -> PResult<Expr> {
        self.enter()?;
        let e = match self.peek() {
            Some(Tok::LBrace) => into_expr(self.atom()?)?,
            Some(Tok::Minus) => {
                self.pos += 1;
                Expr::Neg(Box::new(self.exponent()?))
            }
            Some(Tok::Plus) => {
                self.pos += 1;
                self.exponent()?
            }
            _ => into_expr(self.postfix()?)?,
        };
        let e = if self.eat(&Tok::Caret) {
            Expr::Pow(Box::new(e), Box::new(self.exponent()?))
        } else {
            e
        };
        self.leave();
        Ok(e)
    }

    fn postfix(&mut self) -> PResult<Node> {
        let mut node = self.atom()?;
        let mut wrapped = 0;
        loop {
            match self.peek() {
                Some(Tok::Bang) => {
                    self.pos += 1;
                    node = Node::E(Expr::Fact(Box::new(into_expr(node)?)));
                }
                Some(Tok::Percent) => {
                    self.pos += 1;
                    node = Node::E(Expr::Percent(Box::new(into_expr(node)?)));
                }
                Some(Tok::Degree) => {
                    self.pos += 1;
                    continue;
                }
                _ => break,
            }
            wrapped += 1;
            self.enter()?;
        }
        for _ in 0..wrapped {
            self.leave();
        }
        Ok(node)
    }

    fn subscript_name(&mut self, base: String) -> PResult<String> {
        if !self.eat(&Tok::Underscore) {
            return Ok(base);
        }
        let mut name = base;
        name.push('_');
        match self.bump() {
            Some(Tok::Num { int, .. }) => name.push_str(&int),
            Some(Tok::Ident(s)) => name.push_str(&s),
            Some(Tok::LBrace) => {
                let mut depth = 1usize;
                while let Some(t) = self.bump() {
                    match t {
                        Tok::LBrace => depth += 1,
                        Tok::RBrace => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    name.push_str(&token_text(&t));
                }
                if depth != 0 {
                    return syntax("unbalanced subscript");
                }
            }
            _ => return syntax("bad subscript"),
        }
        Ok(name)
    }

    fn atom(&mut self) -> PResult<Node> {
        self.skip_words();
        let Some(t) = self.bump() else {
            return syntax("expected a value, found the end");
        };
        match t {
            Tok::Num {
                int,
                frac,
                repeat,
                exp,
                decimal,
                ..
            } => {
                let v = number_value(&int, frac.as_deref(), repeat.as_deref(), exp);
                self.meter
                    .bits(v.numer().bits().max(v.denom().bits()), "a number literal")?;
                Ok(Node::E(Expr::Num(v, decimal)))
            }
            Tok::Ident(name) => {
                let name = self.subscript_name(name)?;
                Ok(Node::E(Expr::Var(name)))
            }
            Tok::Pi => Ok(Node::E(Expr::Pi)),
            Tok::E => Ok(Node::E(Expr::E)),
            Tok::Inf => Ok(Node::E(Expr::Inf)),
            Tok::LParen | Tok::LBrack => self.delimited(t),
            Tok::LBrace => {
                self.enter()?;
                let items = self.list()?;
                self.expect(&Tok::RBrace, "`}`")?;
                self.leave();
                Ok(single_or_list(items))
            }
            Tok::LSet => {
                self.enter()?;
                let items = if self.peek() == Some(&Tok::RSet) {
                    Vec::new()
                } else {
                    self.list()?
                };
                self.expect(&Tok::RSet, "`\\}`")?;
                self.leave();
                Ok(Node::Set(items))
            }
            Tok::LAngle => {
                self.enter()?;
                let items = self.list()?;
                self.expect(&Tok::RAngle, "`\\rangle`")?;
                self.leave();
                Ok(Node::Tuple(items, Delim::Angle))
            }
            Tok::Bar => {
                self.enter()?;
                self.abs += 1;
                let x = into_expr(self.sum()?);
                self.abs -= 1;
                let x = x?;
                self.expect(&Tok::Bar, "a closing `|`")?;
                self.leave();
                Ok(Node::E(Expr::Func(Func::Abs, Box::new(x))))
            }
            Tok::Frac => {
                self.enter()?;
                let a = self.arg()?;
                let b = self.arg()?;
                self.leave();
                Ok(Node::E(Expr::Prod(vec![(false, a), (true, b)])))
            }
            Tok::Binom => {
                self.enter()?;
                let a = self.arg()?;
                let b = self.arg()?;
                self.leave();
                Ok(Node::E(Expr::Binom(Box::new(a), Box::new(b))))
            }
            Tok::Sqrt => {
                self.enter()?;
                let index = if self.eat(&Tok::LBrack) {
                    let i = into_expr(self.sum()?)?;
                    self.expect(&Tok::RBrack, "`]` after the root index")?;
                    i
                } else {
                    Expr::Num(BigRational::from_integer(2.into()), false)
                };
                let x = self.arg()?;
                self.leave();
                Ok(Node::E(Expr::Root(Box::new(index), Box::new(x))))
            }
            Tok::Func(f) => {
                self.enter()?;
                let r = self.function(f);
                self.leave();
                r
            }
            Tok::Emptyset => Ok(Node::Set(Vec::new())),
            Tok::BeginMatrix => {
                self.enter()?;
                let m = self.matrix();
                self.leave();
                m
            }
            other => syntax(format!("unexpected {}", describe(&other))),
        }
    }

    fn function(&mut self, f: Func) -> PResult<Node> {
        let mut power = None;
        let mut base = None;
        for _ in 0..2 {
            if self.eat(&Tok::Caret) {
                power = Some(self.exponent()?);
            } else if f == Func::Log && self.eat(&Tok::Underscore) {
                base = Some(self.arg()?);
            }
        }
        let x = match self.peek() {
            Some(Tok::LParen) => {
                let t = self.bump().expect("peeked");
                into_expr(self.delimited(t)?)?
            }
            _ => into_expr(self.power()?)?,
        };
        let inverse = matches!(&power, Some(Expr::Neg(b)) if matches!(&**b, Expr::Num(n, false) if n.is_one()));
        let f = if inverse {
            match f {
                Func::Sin => Func::Asin,
                Func::Cos => Func::Acos,
                Func::Tan => Func::Atan,
                other => other,
            }
        } else {
            f
        };
        let applied = match base {
            Some(b) => Expr::LogBase(Box::new(b), Box::new(x)),
            None => Expr::Func(f, Box::new(x)),
        };
        Ok(Node::E(match power {
            Some(p) if !inverse => Expr::Pow(Box::new(applied), Box::new(p)),
            _ => applied,
        }))
    }

    /// A command argument: a `{…}` group, a single digit of a digit run (`\frac12`), a symbol,
    /// a parenthesised group (`\sqrt(2)`, not valid LaTeX but common) or a command.
    fn arg(&mut self) -> PResult<Expr> {
        match self.peek().cloned() {
            Some(Tok::Num {
                int, plain: true, ..
            }) if int.len() > 1 => {
                let (first, rest) = int.split_at(1);
                self.toks[self.pos] = plain_int(rest);
                Ok(Expr::Num(
                    BigRational::from_integer(first.parse::<BigInt>().unwrap_or_default()),
                    false,
                ))
            }
            Some(
                Tok::LBrace
                | Tok::Num { .. }
                | Tok::Ident(_)
                | Tok::Pi
                | Tok::E
                | Tok::LParen
                | Tok::Frac
                | Tok::Sqrt
                | Tok::Binom
                | Tok::Func(_)
                | Tok::Inf,
            ) => into_expr(self.atom()?),
            Some(Tok::Minus) => {
                self.pos += 1;
                self.enter()?;
                let x = self.arg()?;
                self.leave();
                Ok(Expr::Neg(Box::new(x)))
            }
            Some(t) => syntax(format!("expected an argument, found {}", describe(&t))),
            None => syntax("expected an argument, found the end"),
        }
    }

    fn delimited(&mut self, open: Tok) -> PResult<Node> {
        self.enter()?;
        let items = self.list()?;
        let close = match self.bump() {
            Some(c @ (Tok::RParen | Tok::RBrack)) => c,
            Some(other) => {
                return syntax(format!("expected `)` or `]`, found {}", describe(&other)));
            }
            None => return syntax("unclosed bracket"),
        };
        self.leave();
        let matched = (open == Tok::LParen) == (close == Tok::RParen);
        let delim = if open == Tok::LParen {
            Delim::Paren
        } else {
            Delim::Bracket
        };
        match items.len() {
            1 if matched => Ok(items.into_iter().next().expect("one item")),
            2 => {
                let mut it = items.into_iter();
                let (a, b) = (it.next().expect("two"), it.next().expect("two"));
                match (open == Tok::LParen, close == Tok::RParen) {
                    (true, true) => Ok(Node::Tuple(vec![a, b], Delim::Paren)),
                    (lo_open, hi_open) => match (a, b) {
                        (Node::E(lo), Node::E(hi)) => {
                            Ok(Node::Interval(lo, hi, !lo_open, !hi_open))
                        }
                        (a, b) if matched => Ok(Node::Tuple(vec![a, b], delim)),
                        _ => syntax("interval endpoints must be numbers"),
                    },
                }
            }
            _ if matched => Ok(Node::Tuple(items, delim)),
            _ => syntax("mismatched brackets"),
        }
    }

    fn matrix(&mut self) -> PResult<Node> {
        let mut rows: Vec<Vec<Expr>> = Vec::new();
        let mut row: Vec<Expr> = Vec::new();
        loop {
            if self.eat(&Tok::EndMatrix) {
                if !row.is_empty() {
                    rows.push(std::mem::take(&mut row));
                }
                break;
            }
            row.push(into_expr(self.sum()?)?);
            match self.bump() {
                Some(Tok::Amp) => {}
                Some(Tok::RowSep) => rows.push(std::mem::take(&mut row)),
                Some(Tok::EndMatrix) => {
                    rows.push(std::mem::take(&mut row));
                    break;
                }
                _ => return syntax("bad matrix"),
            }
        }
        let width = rows.first().map_or(0, Vec::len);
        if width == 0 || rows.iter().any(|r| r.len() != width) {
            return syntax("ragged or empty matrix");
        }
        Ok(Node::Matrix(rows))
    }
}

/// `n` (or `−n`) followed by a proper fraction of integer literals `a/b`: n + a/b (or −(n + a/b)).
fn mixed_number(whole: &Expr, frac: &Expr) -> Option<Expr> {
    let Expr::Prod(parts) = frac else { return None };
    let [(false, Expr::Num(a, false)), (true, Expr::Num(b, false))] = parts.as_slice() else {
        return None;
    };
    if !a.is_integer() || !b.is_integer() || *a <= BigRational::zero() || a >= b {
        return None;
    }
    let value = |n: &BigRational| {
        (n.is_integer() && *n >= BigRational::zero())
            .then(|| Expr::Num(n + super::rat::div(a, b), false))
    };
    match whole {
        Expr::Num(n, false) => value(n),
        Expr::Neg(inner) => match &**inner {
            Expr::Num(n, false) => value(n).map(|v| Expr::Neg(Box::new(v))),
            _ => None,
        },
        _ => None,
    }
}

fn single_or_list(items: Vec<Node>) -> Node {
    if items.len() == 1 {
        items.into_iter().next().expect("one item")
    } else {
        Node::List(items)
    }
}

fn flat_sum(terms: Vec<(bool, Expr)>) -> Expr {
    if terms.len() == 1 && !terms[0].0 {
        terms.into_iter().next().expect("one term").1
    } else {
        Expr::Sum(terms)
    }
}

/// A node used as a scalar.
pub(crate) fn into_expr(n: Node) -> PResult<Expr> {
    match n {
        Node::E(e) => Ok(e),
        Node::Tuple(..) => syntax("a tuple cannot be used in arithmetic"),
        Node::Interval(..) => syntax("an interval cannot be used in arithmetic"),
        Node::Set(..) => syntax("a set cannot be used in arithmetic"),
        Node::List(..) => syntax("a list cannot be used in arithmetic"),
        Node::Union(..) => syntax("a union cannot be used in arithmetic"),
        Node::Rel(..) => syntax("a relation cannot be used in arithmetic"),
        Node::Matrix(..) => syntax("matrix arithmetic is not supported"),
        Node::Text(..) => syntax("text cannot be used in arithmetic"),
    }
}

fn token_text(t: &Tok) -> String {
    match t {
        Tok::Num { int, frac, .. } => match frac {
            Some(f) => format!("{int}.{f}"),
            None => int.clone(),
        },
        Tok::Ident(s) | Tok::Word(s) => s.clone(),
        Tok::Plus => "+".into(),
        Tok::Minus => "-".into(),
        Tok::Comma => ",".into(),
        Tok::Pi => "pi".into(),
        Tok::E => "e".into(),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Budget;

    fn p(s: &str) -> Node {
        parse(s, &mut Meter::new(Budget::default())).unwrap_or_else(|e| panic!("{s}: {e:?}"))
    }

    fn num(n: i64) -> Expr {
        Expr::Num(BigRational::from_integer(n.into()), false)
    }

    #[test]
    fn fractions() {
        let half = Node::E(Expr::Prod(vec![(false, num(1)), (true, num(2))]));
        assert_eq!(p("\\frac12"), half);
        assert_eq!(p("\\dfrac{1}{2}"), half);
        assert_eq!(p("\\frac1{2}"), half);
    }

    #[test]
    fn mixed_numbers() {
        let q = |n: i64, d: i64| Expr::Num(BigRational::new(n.into(), d.into()), false);
        assert_eq!(
            p("2\\frac{1}{4}"),
            Node::E(Expr::Prod(vec![(false, q(9, 4))]))
        );
        assert_eq!(
            p("-2\\frac14"),
            Node::E(Expr::Prod(vec![(false, Expr::Neg(Box::new(q(9, 4))))]))
        );
        // Not mixed numbers: an improper fraction, a symbol, an explicit product.
        assert!(matches!(p("2\\frac{5}{4}"), Node::E(Expr::Prod(v)) if v.len() == 2));
        assert!(matches!(p("2\\frac{x}{4}"), Node::E(Expr::Prod(v)) if v.len() == 2));
        assert!(matches!(p("2\\cdot\\frac{1}{4}"), Node::E(Expr::Prod(v)) if v.len() == 2));
    }

    #[test]
    fn repeating_decimals() {
        // 0.(3) = 3/9 = 1/3; 0.1(6) = (16 − 1)/90 = 1/6; 1.(142857) = 1 + 1/7 = 8/7.
        let q = |n: i64, d: i64| Node::E(Expr::Num(BigRational::new(n.into(), d.into()), false));
        assert_eq!(p("0.\\overline{3}"), q(1, 3));
        assert_eq!(p("0.1\\overline{6}"), q(1, 6));
        assert_eq!(p("1.\\overline{142857}"), q(8, 7));
    }

    #[test]
    fn structures() {
        assert!(matches!(p("(1,2)"), Node::Tuple(_, Delim::Paren)));
        assert!(matches!(p("[1,2)"), Node::Interval(_, _, true, false)));
        assert!(matches!(p("\\{1,2\\}"), Node::Set(v) if v.len() == 2));
        assert!(matches!(p("1, 2, 3"), Node::List(v) if v.len() == 3));
        assert!(matches!(p("x = 5"), Node::Rel(_, ops) if ops == vec![RelOp::Eq]));
        assert!(matches!(p("(-\\infty, 1) \\cup (2, \\infty)"), Node::Union(v) if v.len() == 2));
        assert!(matches!(p("\\text{Monday}"), Node::Text(t) if t == "Monday"));
        assert!(matches!(
            p("\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}"),
            Node::Matrix(r) if r.len() == 2
        ));
    }

    #[test]
    fn units_and_degrees_dropped() {
        assert_eq!(p("10 \\text{ cm}^2"), Node::E(num(10)));
        assert_eq!(p("12^\\circ"), Node::E(num(12)));
        assert_eq!(p("12^{\\circ}"), Node::E(num(12)));
        assert_eq!(p("5 apples."), Node::E(num(5)));
        assert!(matches!(p("50 percent"), Node::E(Expr::Percent(_))));
        for s in ["12 \\text{ hundred}", "\\text{not } 5", "3 times 4"] {
            assert!(parse(s, &mut Meter::new(Budget::default())).is_err(), "{s}");
        }
        assert_eq!(p("\\text{no}"), Node::Text("no".into()));
    }

    #[test]
    fn depth_is_bounded() {
        let deep = format!("{}1{}", "(".repeat(5000), ")".repeat(5000));
        let r = parse(&deep, &mut Meter::new(Budget::default()));
        assert!(matches!(r, Err(ParseFail::Budget(_))), "{r:?}");
        assert!(parse("(((1)))", &mut Meter::new(Budget::default())).is_ok());
    }
}
