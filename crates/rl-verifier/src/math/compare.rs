//! Answer objects and their equivalence.

use std::collections::BTreeSet;

use num_rational::BigRational;
use num_traits::Zero;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::config::MathConfig;
use super::eval::{Env, EvalFail, Evaluator, Num, Val, free_vars, rat_limbs, to_approx};
use super::lexer::{PResult, RelOp, syntax};
use super::parser::{Delim, Expr, Node, into_expr};
use super::rat;
use crate::budget::{Exceeded, Meter};

/// Most `±` signs expanded in one expression (2^3 = 8 values).
const MAX_PM: usize = 3;

/// A parsed answer, normalised for comparison.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Obj {
    Scalar(Expr),
    Tuple(Vec<Obj>, Delim),
    /// (lo, hi, lo closed, hi closed)
    Interval(Expr, Expr, bool, bool),
    /// A finite set (from `\{…\}`, a bare list, `±`, or a union of finite sets).
    Set(Vec<Obj>),
    /// A union with at least one interval.
    Union(Vec<Obj>),
    /// `a = b (= c …)`.
    Eq(Vec<Expr>),
    /// Another relation chain.
    Rel(Vec<Expr>, Vec<RelOp>),
    Matrix(Vec<Vec<Expr>>),
    Text(String),
}

/// Number of `±` / `∓` in an expression.
fn pm_count(e: &Expr) -> usize {
    match e {
        Expr::Pm(a, b, _) => 1 + pm_count(a) + pm_count(b),
        Expr::Sum(ts) | Expr::Prod(ts) => ts.iter().map(|(_, t)| pm_count(t)).sum(),
        Expr::Neg(a) | Expr::Func(_, a) | Expr::Fact(a) | Expr::Percent(a) => pm_count(a),
        Expr::Pow(a, b) | Expr::Root(a, b) | Expr::LogBase(a, b) | Expr::Binom(a, b) => {
            pm_count(a) + pm_count(b)
        }
        _ => 0,
    }
}

fn has_pm(e: &Expr) -> bool {
    pm_count(e) > 0
}

/// Expands `a ± b` into its values.
fn expand_pm(e: &Expr, out: &mut Vec<Expr>) -> PResult<()> {
    // Replaces the first ± by + (sign = false) or − (sign = true); returns whether one was found.
    fn replace_first(e: &Expr, minus: bool, done: &mut bool) -> Expr {
        if *done {
            return e.clone();
        }
        match e {
            Expr::Pm(a, b, mp) => {
                let a2 = replace_first(a, minus, done);
                if *done {
                    return Expr::Pm(Box::new(a2), b.clone(), *mp);
                }
                *done = true;
                Expr::Sum(vec![(false, a2), (minus != *mp, (**b).clone())])
            }
            Expr::Sum(ts) => Expr::Sum(
                ts.iter()
                    .map(|(n, t)| (*n, replace_first(t, minus, done)))
                    .collect(),
            ),
            Expr::Prod(ts) => Expr::Prod(
                ts.iter()
                    .map(|(n, t)| (*n, replace_first(t, minus, done)))
                    .collect(),
            ),
            Expr::Neg(a) => Expr::Neg(Box::new(replace_first(a, minus, done))),
            Expr::Func(f, a) => Expr::Func(*f, Box::new(replace_first(a, minus, done))),
            Expr::Fact(a) => Expr::Fact(Box::new(replace_first(a, minus, done))),
            Expr::Percent(a) => Expr::Percent(Box::new(replace_first(a, minus, done))),
            Expr::Pow(a, b) => {
                let a = replace_first(a, minus, done);
                Expr::Pow(Box::new(a), Box::new(replace_first(b, minus, done)))
            }
            Expr::Root(a, b) => {
                let a = replace_first(a, minus, done);
                Expr::Root(Box::new(a), Box::new(replace_first(b, minus, done)))
            }
            Expr::LogBase(a, b) => {
                let a = replace_first(a, minus, done);
                Expr::LogBase(Box::new(a), Box::new(replace_first(b, minus, done)))
            }
            Expr::Binom(a, b) => {
                let a = replace_first(a, minus, done);
                Expr::Binom(Box::new(a), Box::new(replace_first(b, minus, done)))
            }
            other => other.clone(),
        }
    }
    let n = pm_count(e);
    if n == 0 {
        out.push(e.clone());
        return Ok(());
    }
    if n > MAX_PM {
        return syntax(format!("more than {MAX_PM} ± signs"));
    }
    for minus in [false, true] {
        let mut done = false;
        let next = replace_first(e, minus, &mut done);
        expand_pm(&next, out)?;
    }
    Ok(())
}

fn scalar_or_set(e: Expr) -> PResult<Obj> {
    let mut v = Vec::new();
    expand_pm(&e, &mut v)?;
    Ok(if v.len() == 1 {
        Obj::Scalar(v.pop().expect("one"))
    } else {
        Obj::Set(v.into_iter().map(Obj::Scalar).collect())
    })
}

fn flatten_set(items: Vec<Obj>) -> Vec<Obj> {
    let mut out = Vec::with_capacity(items.len());
    for it in items {
        match it {
            Obj::Set(inner) => out.extend(inner),
            other => out.push(other),
        }
    }
    out
}

fn is_var(e: &Expr) -> Option<&str> {
    match e {
        Expr::Var(v) => Some(v),
        _ => None,
    }
}

fn constant(e: &Expr) -> bool {
    let mut s = BTreeSet::new();
    free_vars(e, &mut s);
    s.is_empty()
}

/// Turns a one-variable inequality chain into an interval.
fn inequality_interval(parts: &[Expr], ops: &[RelOp]) -> Option<Obj> {
    let lower = |op: RelOp| matches!(op, RelOp::Lt | RelOp::Le);
    let greater = |op: RelOp| matches!(op, RelOp::Gt | RelOp::Ge);
    let closed = |op: RelOp| matches!(op, RelOp::Le | RelOp::Ge);
    let inf = Expr::Inf;
    let neg_inf = Expr::Neg(Box::new(Expr::Inf));
    match (parts, ops) {
        ([a, b], [op]) if is_var(a).is_some() && constant(b) => {
            if lower(*op) {
                Some(Obj::Interval(neg_inf, b.clone(), false, closed(*op)))
            } else if greater(*op) {
                Some(Obj::Interval(b.clone(), inf, closed(*op), false))
            } else {
                None
            }
        }
        ([a, b], [op]) if constant(a) && is_var(b).is_some() => {
            if lower(*op) {
                Some(Obj::Interval(a.clone(), inf, closed(*op), false))
            } else if greater(*op) {
                Some(Obj::Interval(neg_inf, a.clone(), false, closed(*op)))
            } else {
                None
            }
        }
        ([a, x, b], [o1, o2]) if constant(a) && is_var(x).is_some() && constant(b) => {
            if lower(*o1) && lower(*o2) {
                Some(Obj::Interval(
                    a.clone(),
                    b.clone(),
                    closed(*o1),
                    closed(*o2),
                ))
            } else if greater(*o1) && greater(*o2) {
                Some(Obj::Interval(
                    b.clone(),
                    a.clone(),
                    closed(*o2),
                    closed(*o1),
                ))
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Lowers a parse tree to an answer object.
pub(crate) fn lower(node: Node) -> PResult<Obj> {
    Ok(match node {
        Node::E(e) => scalar_or_set(e)?,
        Node::Tuple(items, d) => Obj::Tuple(
            items.into_iter().map(lower).collect::<PResult<Vec<_>>>()?,
            d,
        ),
        Node::Interval(lo, hi, a, b) => {
            if has_pm(&lo) || has_pm(&hi) {
                return syntax("± inside an interval");
            }
            Obj::Interval(lo, hi, a, b)
        }
        Node::Set(items) | Node::List(items) => Obj::Set(flatten_set(
            items.into_iter().map(lower).collect::<PResult<Vec<_>>>()?,
        )),
        Node::Union(parts) => {
            let mut flat = Vec::new();
            for p in parts {
                match lower(p)? {
                    Obj::Union(inner) => flat.extend(inner),
                    other => flat.push(other),
                }
            }
            if flat.iter().all(|p| matches!(p, Obj::Set(_))) {
                Obj::Set(flatten_set(flat))
            } else {
                Obj::Union(flat)
            }
        }
        Node::Rel(parts, ops) => {
            if ops.len() == 1 && ops[0] == RelOp::In {
                let mut it = parts.into_iter();
                let _lhs = it.next();
                return lower(it.next().expect("two parts"));
            }
            let parts: Vec<Expr> = parts.into_iter().map(into_expr).collect::<PResult<_>>()?;
            if ops.iter().all(|o| *o == RelOp::Eq) {
                let (last, init) = parts.split_last().expect("≥ 2 parts");
                if init.iter().any(has_pm) {
                    return syntax("± on the left of `=`");
                }
                let mut values = Vec::new();
                expand_pm(last, &mut values)?;
                let eqs: Vec<Obj> = values
                    .into_iter()
                    .map(|v| {
                        let mut p = init.to_vec();
                        p.push(v);
                        Obj::Eq(p)
                    })
                    .collect();
                if eqs.len() == 1 {
                    eqs.into_iter().next().expect("one")
                } else {
                    Obj::Set(eqs)
                }
            } else if let Some(iv) = inequality_interval(&parts, &ops) {
                iv
            } else {
                Obj::Rel(parts, ops)
            }
        }
        Node::Matrix(rows) => Obj::Matrix(rows),
        Node::Text(t) => Obj::Text(t),
    })
}

/// Why a comparison stopped without a verdict.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Stop {
    Budget(Exceeded),
    /// The gold answer has no value.
    Gold(String),
}

impl From<Exceeded> for Stop {
    fn from(e: Exceeded) -> Self {
        Stop::Budget(e)
    }
}

type CResult = Result<bool, Stop>;

pub(crate) struct Comparer<'m, 'c> {
    pub(crate) meter: &'m mut Meter,
    pub(crate) cfg: &'c MathConfig,
}

impl Comparer<'_, '_> {
    pub(crate) fn eq(&mut self, g: &Obj, p: &Obj) -> CResult {
        self.meter.charge(1)?;
        use Obj::*;
        match (g, p) {
            (Eq(gs), Eq(ps)) => self.eq_equations(gs, ps),
            (Eq(gs), other) => {
                // Gold `x = 5` against a prediction `5`.
                if gs.len() >= 2 && is_var(&gs[0]).is_some() {
                    let last = Scalar(gs.last().expect("parts").clone());
                    self.eq(&last, other)
                } else {
                    Ok(false)
                }
            }
            (other, Eq(ps)) => {
                // A prediction `x = 5` or a constant chain `2 + 3 = 5` ending in the gold value.
                let first_var = is_var(&ps[0]).is_some();
                if first_var || ps.iter().all(constant) {
                    let last = Scalar(ps.last().expect("parts").clone());
                    self.eq(other, &last)
                } else {
                    Ok(false)
                }
            }
            (Set(a), Set(b)) => self.eq_sets(a, b),
            (Set(a), other) if a.len() == 1 => self.eq(&a[0], other),
            (other, Set(b)) if b.len() == 1 => self.eq(other, &b[0]),
            (Tuple(a, da), Tuple(b, db)) => {
                if a.len() != b.len() || (*da == Delim::Colon) != (*db == Delim::Colon) {
                    return Ok(false);
                }
                for (x, y) in a.iter().zip(b) {
                    if !self.eq(x, y)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            (Interval(a, b, c, d), Interval(x, y, z, w)) => {
                if c != z || d != w {
                    return Ok(false);
                }
                Ok(self.eq_scalar(a, x)? && self.eq_scalar(b, y)?)
            }
            // `(a, b)` is also the open interval (a, b).
            (Tuple(t, Delim::Paren), Interval(x, y, false, false))
            | (Interval(x, y, false, false), Tuple(t, Delim::Paren))
                if t.len() == 2 =>
            {
                match (&t[0], &t[1]) {
                    (Scalar(a), Scalar(b)) => Ok(self.eq_scalar(a, x)? && self.eq_scalar(b, y)?),
                    _ => Ok(false),
                }
            }
            (Union(a), Union(b)) => self.eq_sets(a, b),
            // `x < 1 or x > 2` (a list of intervals) is the union of its parts.
            (Union(a), Set(b)) | (Set(b), Union(a)) if a.len() > 1 && b.len() > 1 => {
                self.eq_sets(a, b)
            }
            (Union(a), other) | (other, Union(a)) if a.len() == 1 => self.eq(&a[0], other),
            (Scalar(a), Scalar(b)) => self.eq_top_scalar(a, b),
            (Matrix(a), Matrix(b)) => {
                if a.len() != b.len() || a[0].len() != b[0].len() {
                    return Ok(false);
                }
                for (ra, rb) in a.iter().zip(b) {
                    for (x, y) in ra.iter().zip(rb) {
                        if !self.eq_scalar(x, y)? {
                            return Ok(false);
                        }
                    }
                }
                Ok(true)
            }
            // A column or row vector against a tuple.
            (Matrix(m), Tuple(t, _)) | (Tuple(t, _), Matrix(m))
                if (m.len() == 1 || m[0].len() == 1) && m.len() * m[0].len() == t.len() =>
            {
                let flat: Vec<&Expr> = m.iter().flatten().collect();
                for (x, y) in flat.into_iter().zip(t) {
                    let Scalar(y) = y else { return Ok(false) };
                    if !self.eq_scalar(x, y)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            (Rel(a, oa), Rel(b, ob)) => {
                if oa != ob || a.len() != b.len() {
                    return Ok(false);
                }
                for (x, y) in a.iter().zip(b) {
                    if !self.eq_scalar(x, y)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            (Text(a), Text(b)) => Ok(text_key(a) == text_key(b)),
            (Text(a), Scalar(Expr::Var(v))) | (Scalar(Expr::Var(v)), Text(a)) => {
                Ok(text_key(a) == text_key(v))
            }
            _ => Ok(false),
        }
    }

    /// Order-insensitive equality of finite collections: every element of each side equals
    /// some element of the other.
    fn eq_sets(&mut self, a: &[Obj], b: &[Obj]) -> CResult {
        self.meter.charge((a.len() * b.len()) as u64)?;
        for x in a {
            let mut found = false;
            for y in b {
                if self.eq(x, y)? {
                    found = true;
                    break;
                }
            }
            if !found {
                return Ok(false);
            }
        }
        for y in b {
            let mut found = false;
            for x in a {
                if self.eq(x, y)? {
                    found = true;
                    break;
                }
            }
            if !found {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn eq_equations(&mut self, g: &[Expr], p: &[Expr]) -> CResult {
        let g_assign = is_var(&g[0]);
        let p_assign = is_var(&p[0]);
        let g_last = g.last().expect("parts");
        let p_last = p.last().expect("parts");
        let lhs_rhs_vars = |e: &[Expr]| {
            let mut s = BTreeSet::new();
            e.iter().for_each(|x| free_vars(x, &mut s));
            s
        };
        // `x = 5` vs `x = 5`, or `y = 2x + 1` vs `y = 1 + 2x`: compare the values.
        if let (Some(a), Some(b)) = (g_assign, p_assign)
            && (a == b || (constant(g_last) && constant(p_last)))
        {
            return self.eq_scalar(g_last, p_last);
        }
        if g.len() == 2 && p.len() == 2 {
            let vars = lhs_rhs_vars(g);
            if !vars.is_empty() {
                // Equations: the same solution set when lhs − rhs are proportional.
                let dg = Expr::Sum(vec![(false, g[0].clone()), (true, g[1].clone())]);
                let dp = Expr::Sum(vec![(false, p[0].clone()), (true, p[1].clone())]);
                return self.proportional(&dg, &dp);
            }
        }
        self.eq_scalar(g_last, p_last)
    }

    /// Top-level scalars: percent leniency (`10\%` matches 10 and 0.1).
    fn eq_top_scalar(&mut self, g: &Expr, p: &Expr) -> CResult {
        if self.cfg.percent_lenient {
            match (g, p) {
                (Expr::Percent(a), q) if !matches!(q, Expr::Percent(_)) => {
                    return Ok(self.eq_scalar(g, p)? || self.eq_scalar(a, q)?);
                }
                (q, Expr::Percent(b)) if !matches!(q, Expr::Percent(_)) => {
                    return Ok(self.eq_scalar(g, p)? || self.eq_scalar(q, b)?);
                }
                _ => {}
            }
        }
        self.eq_scalar(g, p)
    }

    fn points(&self, vars: &BTreeSet<String>, n: usize) -> Vec<Env> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.cfg.seed);
        (0..n)
            .map(|_| {
                vars.iter()
                    .map(|v| {
                        let num: i64 = rng.random_range(1..=199);
                        let den: i64 = rng.random_range(2..=61);
                        let neg = rng.random_bool(0.5);
                        let q = BigRational::new(num.into(), den.into());
                        (v.clone(), if neg { -q } else { q })
                    })
                    .collect()
            })
            .collect()
    }

    fn eval(&mut self, e: &Expr, env: &Env) -> Result<Val, EvalFail> {
        Evaluator {
            meter: self.meter,
            env,
        }
        .eval(e)
    }

    pub(crate) fn eq_scalar(&mut self, g: &Expr, p: &Expr) -> CResult {
        let mut vars = BTreeSet::new();
        free_vars(g, &mut vars);
        free_vars(p, &mut vars);
        if vars.is_empty() {
            let env = Env::new();
            let gv = match self.eval(g, &env) {
                Ok(v) => v,
                Err(EvalFail::Budget(b)) => return Err(Stop::Budget(b)),
                Err(EvalFail::Undefined(m)) => return Err(Stop::Gold(m)),
                Err(EvalFail::Undecidable(m)) => return Err(Stop::Gold(m)),
            };
            let pv = match self.eval(p, &env) {
                Ok(v) => v,
                Err(EvalFail::Budget(b)) => return Err(Stop::Budget(b)),
                Err(_) => return Ok(false),
            };
            return self.eq_val(&gv, &pv);
        }
        let want = self.cfg.eval_points;
        let points = self.points(&vars, want * 4);
        let mut ok = 0usize;
        let mut gold_defined = false;
        for env in &points {
            let gv = match self.eval(g, env) {
                Ok(v) => v,
                Err(EvalFail::Budget(b)) => return Err(Stop::Budget(b)),
                Err(_) => continue,
            };
            gold_defined = true;
            let pv = match self.eval(p, env) {
                Ok(v) => v,
                Err(EvalFail::Budget(b)) => return Err(Stop::Budget(b)),
                Err(_) => continue,
            };
            if !self.eq_val(&gv, &pv)? {
                return Ok(false);
            }
            ok += 1;
            if ok >= want {
                return Ok(true);
            }
        }
        if !gold_defined {
            return Err(Stop::Gold(
                "the gold expression has no value at any sample point".into(),
            ));
        }
        Ok(ok * 2 >= want && ok > 0)
    }

    /// dg and dp vanish together: dp = c·dg for a constant c ≠ 0 at every sample point.
    fn proportional(&mut self, dg: &Expr, dp: &Expr) -> CResult {
        let mut vars = BTreeSet::new();
        free_vars(dg, &mut vars);
        free_vars(dp, &mut vars);
        let want = self.cfg.eval_points.max(vars.len() + 2);
        let points = self.points(&vars, want * 4);
        let mut ratio: Option<Val> = None;
        let mut ok = 0;
        for env in &points {
            let (gv, pv) = match (self.eval(dg, env), self.eval(dp, env)) {
                (Err(EvalFail::Budget(b)), _) | (_, Err(EvalFail::Budget(b))) => {
                    return Err(Stop::Budget(b));
                }
                (Ok(g), Ok(p)) => (g, p),
                _ => continue,
            };
            let g_zero = is_zero(&gv)?;
            let p_zero = is_zero(&pv)?;
            if g_zero || p_zero {
                if g_zero != p_zero {
                    return Ok(false);
                }
                ok += 1;
                continue;
            }
            let r = match (&pv.num, &gv.num) {
                (Num::Exact(a), Num::Exact(b)) => Val {
                    num: Num::Exact(a / b),
                    inexact: pv.inexact || gv.inexact,
                },
                (a, b) => match (to_approx(a), to_approx(b)) {
                    (Ok(a), Ok(b)) => match a.div(b) {
                        Ok(q) => Val {
                            num: Num::Approx(q),
                            inexact: pv.inexact || gv.inexact,
                        },
                        Err(_) => continue,
                    },
                    _ => continue,
                },
            };
            self.meter.charge(4)?;
            match &ratio {
                None => ratio = Some(r),
                Some(c) => {
                    if !self.eq_val(c, &r)? {
                        return Ok(false);
                    }
                }
            }
            ok += 1;
            if ok >= want {
                break;
            }
        }
        Ok(ok * 2 >= want && ok > 0)
    }

    fn eq_val(&mut self, g: &Val, p: &Val) -> CResult {
        self.meter.charge(2)?;
        let inexact = g.inexact || p.inexact;
        match (&g.num, &p.num) {
            (Num::Inf(a), Num::Inf(b)) => Ok(a == b),
            (Num::Inf(_), _) | (_, Num::Inf(_)) => Ok(false),
            (Num::Exact(a), Num::Exact(b)) => {
                let size = rat_limbs(a) + rat_limbs(b);
                self.meter.charge(2 * size * size)?;
                if !inexact {
                    // Both are in lowest terms.
                    return Ok(a.numer() == b.numer() && a.denom() == b.denom());
                }
                // |a − b| ≤ 10^-d · max(|a|, |b|), exactly.
                Ok(rat::close(a, b, self.cfg.decimal_digits))
            }
            (a, b) => {
                let tol = if inexact {
                    10f64.powi(-(self.cfg.decimal_digits as i32))
                } else {
                    self.cfg.rel_tol
                };
                match (to_approx(a), to_approx(b)) {
                    (Ok(x), Ok(y)) => Ok(x.approx_eq(y, tol).unwrap_or(false)),
                    _ => Ok(false),
                }
            }
        }
    }
}

fn is_zero(v: &Val) -> Result<bool, Stop> {
    Ok(match &v.num {
        Num::Exact(q) => q.is_zero(),
        Num::Approx(a) => a
            .approx_eq(super::approx::Approx::ZERO, 0.0)
            .unwrap_or(false),
        Num::Inf(_) => false,
    })
}

/// Lower-case letters and digits only: how text answers are compared.
pub(crate) fn text_key(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}
