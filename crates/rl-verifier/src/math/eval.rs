//! Evaluation of scalar expressions: exact rationals while possible, balls otherwise.

use std::collections::BTreeMap;

use num_bigint::BigInt;
use num_integer::Integer;
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};

use super::approx::{Approx, ApproxError};
use super::lexer::Func;
use super::parser::Expr;
use super::rat;
use crate::budget::{Exceeded, Meter};

/// A real value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Num {
    Exact(BigRational),
    Approx(Approx),
    /// ±∞ (`true`: negative).
    Inf(bool),
}

/// A value and whether a decimal literal went into it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Val {
    pub(crate) num: Num,
    pub(crate) inexact: bool,
}

/// Why evaluation failed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum EvalFail {
    /// The expression has no value here (division by zero, √ of a negative, …).
    Undefined(String),
    /// The value could not be decided within the arithmetic used.
    Undecidable(String),
    /// The budget ran out.
    Budget(Exceeded),
}

impl From<Exceeded> for EvalFail {
    fn from(e: Exceeded) -> Self {
        EvalFail::Budget(e)
    }
}

impl From<ApproxError> for EvalFail {
    fn from(e: ApproxError) -> Self {
        match e {
            ApproxError::Domain(s) => EvalFail::Undefined(s.to_string()),
            ApproxError::Undecidable(s) => EvalFail::Undecidable(s.to_string()),
        }
    }
}

pub(crate) type EResult<T> = Result<T, EvalFail>;

fn undefined<T>(msg: &str) -> EResult<T> {
    Err(EvalFail::Undefined(msg.to_string()))
}

/// Values of free variables.
pub(crate) type Env = BTreeMap<String, BigRational>;

/// Collects the free variables of an expression.
pub(crate) fn free_vars(e: &Expr, out: &mut std::collections::BTreeSet<String>) {
    match e {
        Expr::Var(v) => {
            out.insert(v.clone());
        }
        Expr::Num(..) | Expr::Pi | Expr::E | Expr::Inf => {}
        Expr::Sum(ts) | Expr::Prod(ts) => ts.iter().for_each(|(_, t)| free_vars(t, out)),
        Expr::Neg(a) | Expr::Func(_, a) | Expr::Fact(a) | Expr::Percent(a) => free_vars(a, out),
        Expr::Pow(a, b)
        | Expr::Root(a, b)
        | Expr::LogBase(a, b)
        | Expr::Binom(a, b)
        | Expr::Pm(a, b, _) => {
            free_vars(a, out);
            free_vars(b, out);
        }
    }
}

fn limbs(x: &BigInt) -> u64 {
    x.bits() / 64 + 1
}

pub(crate) fn rat_limbs(q: &BigRational) -> u64 {
    limbs(q.numer()).max(limbs(q.denom()))
}

pub(crate) struct Evaluator<'m, 'e> {
    pub(crate) meter: &'m mut Meter,
    pub(crate) env: &'e Env,
}

impl Evaluator<'_, '_> {
    /// Charges an exact rational operation on operands of the given sizes (in 64-bit limbs) and
    /// checks the result size. Products and the Euclidean gcds are quadratic in the size, and
    /// so is the charge (calibrated so that 1,000,000 steps take tens of milliseconds at most;
    /// see docs/verifier.md).
    fn exact(&mut self, a: u64, b: u64, r: &BigRational) -> EResult<()> {
        self.meter.charge(1 + (a + b) * (a + b) / 2)?;
        self.meter.bits(
            r.numer().bits().max(r.denom().bits()),
            "an intermediate result",
        )?;
        Ok(())
    }

    pub(crate) fn eval(&mut self, e: &Expr) -> EResult<Val> {
        self.meter.charge(1)?;
        match e {
            Expr::Num(q, decimal) => Ok(Val {
                num: Num::Exact(q.clone()),
                inexact: *decimal,
            }),
            Expr::Pi => approx(std::f64::consts::PI),
            Expr::E => approx(std::f64::consts::E),
            Expr::Inf => Ok(Val {
                num: Num::Inf(false),
                inexact: false,
            }),
            Expr::Var(v) => match self.env.get(v) {
                Some(q) => Ok(exact(q.clone())),
                None => Err(EvalFail::Undecidable(format!("free variable {v}"))),
            },
            Expr::Neg(a) => {
                let v = self.eval(a)?;
                Ok(Val {
                    num: neg(v.num),
                    inexact: v.inexact,
                })
            }
            Expr::Sum(ts) => {
                let mut acc = exact(BigRational::zero());
                for (negated, t) in ts {
                    let v = self.eval(t)?;
                    let v = if *negated {
                        Val {
                            num: neg(v.num),
                            inexact: v.inexact,
                        }
                    } else {
                        v
                    };
                    acc = self.add(acc, v)?;
                }
                Ok(acc)
            }
            Expr::Prod(fs) => {
                let mut acc = exact(BigRational::one());
                for (div, f) in fs {
                    let v = self.eval(f)?;
                    acc = if *div {
                        self.div(acc, v)?
                    } else {
                        self.mul(acc, v)?
                    };
                }
                Ok(acc)
            }
            Expr::Percent(a) => {
                let v = self.eval(a)?;
                self.div(v, exact(BigRational::from_integer(100.into())))
            }
            Expr::Pow(a, b) => {
                let base = self.eval(a)?;
                let exp = self.eval(b)?;
                self.pow(base, exp)
            }
            Expr::Root(n, x) => {
                let n = self.eval(n)?;
                let x = self.eval(x)?;
                let inexact = n.inexact || x.inexact;
                let Num::Exact(nq) = &n.num else {
                    return Err(EvalFail::Undecidable("a non-exact root index".into()));
                };
                if nq.is_zero() {
                    return undefined("a zeroth root");
                }
                let mut v = self.pow(x, exact(nq.recip()))?;
                v.inexact |= inexact;
                Ok(v)
            }
            Expr::Func(f, a) => {
                let v = self.eval(a)?;
                self.func(*f, v)
            }
            Expr::LogBase(b, x) => {
                let b = self.eval(b)?;
                let x = self.eval(x)?;
                if let Some(k) = self.exact_log(&b.num, &x.num)? {
                    return Ok(Val {
                        num: Num::Exact(BigRational::from_integer(k.into())),
                        inexact: b.inexact || x.inexact,
                    });
                }
                let lb = self.func(Func::Ln, b)?;
                let lx = self.func(Func::Ln, x)?;
                self.div(lx, lb)
            }
            Expr::Fact(a) => {
                let v = self.eval(a)?;
                self.factorial(v)
            }
            Expr::Binom(n, k) => {
                let n = self.eval(n)?;
                let k = self.eval(k)?;
                self.binom(n, k)
            }
            Expr::Pm(..) => Err(EvalFail::Undecidable("an unexpanded ±".into())),
        }
    }

    /// log_b x when it is an integer k (x = b^k exactly, |k| ≤ 4096).
    fn exact_log(&mut self, b: &Num, x: &Num) -> EResult<Option<i64>> {
        let (Num::Exact(bq), Num::Exact(xq)) = (b, x) else {
            return Ok(None);
        };
        if !bq.is_positive() || bq.is_one() || !xq.is_positive() {
            return Ok(None);
        }
        let k = (Approx::from_rational(xq)?.ln()?.to_f64()
            / Approx::from_rational(bq)?.ln()?.to_f64())
        .round();
        if !k.is_finite() || k.abs() > 4096.0 {
            return Ok(None);
        }
        let k = k as i64;
        let bits = bq.numer().bits().max(bq.denom().bits());
        if bits.saturating_mul(k.unsigned_abs()) > xq.numer().bits().max(xq.denom().bits()) + 64 {
            return Ok(None);
        }
        let p = self.pow_int_exact(bq, &BigInt::from(k))?;
        Ok((&p == xq).then_some(k))
    }

    fn add(&mut self, a: Val, b: Val) -> EResult<Val> {
        let inexact = a.inexact || b.inexact;
        let num = match (a.num, b.num) {
            (Num::Exact(x), Num::Exact(y)) => {
                let (lx, ly) = (rat_limbs(&x), rat_limbs(&y));
                let r = rat::add(&x, &y);
                self.exact(lx, ly, &r)?;
                Num::Exact(r)
            }
            (Num::Inf(s), Num::Inf(t)) if s == t => Num::Inf(s),
            (Num::Inf(_), Num::Inf(_)) => return undefined("∞ − ∞"),
            (Num::Inf(s), _) | (_, Num::Inf(s)) => Num::Inf(s),
            (x, y) => Num::Approx(to_approx(&x)?.add(to_approx(&y)?)?),
        };
        Ok(Val { num, inexact })
    }

    fn mul(&mut self, a: Val, b: Val) -> EResult<Val> {
        let inexact = a.inexact || b.inexact;
        let num = match (a.num, b.num) {
            (Num::Exact(x), Num::Exact(y)) => {
                let (lx, ly) = (rat_limbs(&x), rat_limbs(&y));
                let r = rat::mul(&x, &y);
                self.exact(lx, ly, &r)?;
                Num::Exact(r)
            }
            (Num::Inf(s), Num::Inf(t)) => Num::Inf(s != t),
            (Num::Inf(s), other) | (other, Num::Inf(s)) => match sign(&other)? {
                0 => return undefined("0 · ∞"),
                k => Num::Inf(s != (k < 0)),
            },
            (x, y) => Num::Approx(to_approx(&x)?.mul(to_approx(&y)?)?),
        };
        Ok(Val { num, inexact })
    }

    fn div(&mut self, a: Val, b: Val) -> EResult<Val> {
        let inexact = a.inexact || b.inexact;
        let num = match (a.num, b.num) {
            (_, Num::Exact(y)) if y.is_zero() => return undefined("division by zero"),
            (Num::Exact(x), Num::Exact(y)) => {
                let (lx, ly) = (rat_limbs(&x), rat_limbs(&y));
                let r = rat::div(&x, &y);
                self.exact(lx, ly, &r)?;
                Num::Exact(r)
            }
            (Num::Inf(_), Num::Inf(_)) => return undefined("∞ / ∞"),
            (_, Num::Inf(_)) => Num::Exact(BigRational::zero()),
            (Num::Inf(s), other) => match sign(&other)? {
                0 => return undefined("∞ / 0"),
                k => Num::Inf(s != (k < 0)),
            },
            (x, y) => Num::Approx(to_approx(&x)?.div(to_approx(&y)?)?),
        };
        Ok(Val { num, inexact })
    }

    fn pow(&mut self, base: Val, exp: Val) -> EResult<Val> {
        let inexact = base.inexact || exp.inexact;
        let num = match (&base.num, &exp.num) {
            (Num::Inf(_), _) | (_, Num::Inf(_)) => return undefined("a power involving ∞"),
            (_, Num::Exact(q)) if q.is_integer() => {
                let n = q.to_integer();
                match &base.num {
                    Num::Exact(b) => Num::Exact(self.pow_int_exact(b, &n)?),
                    _ => {
                        let Some(k) = n.to_i64() else {
                            return Err(EvalFail::Undecidable("an enormous exponent".into()));
                        };
                        self.meter
                            .charge(1 + k.unsigned_abs().max(1).ilog2() as u64)?;
                        Num::Approx(to_approx(&base.num)?.powi(k)?)
                    }
                }
            }
            (Num::Exact(b), Num::Exact(q)) => self.pow_rational_exact(b, q)?,
            (b, x) => {
                let b = to_approx(b)?;
                let x = to_approx(x)?;
                if b.is_zero() {
                    if x.is_positive() {
                        Num::Exact(BigRational::zero())
                    } else {
                        return undefined("0 to a non-positive power");
                    }
                } else if b.is_negative() {
                    return undefined("a negative number to an irrational power");
                } else if matches!(&exp.num, Num::Exact(h) if *h == BigRational::new(1.into(), 2.into()))
                {
                    Num::Approx(b.sqrt()?)
                } else {
                    Num::Approx(b.powf(x)?)
                }
            }
        };
        Ok(Val { num, inexact })
    }

    fn pow_int_exact(&mut self, b: &BigRational, n: &BigInt) -> EResult<BigRational> {
        if b.is_zero() {
            return if n.is_negative() {
                undefined("0 to a negative power")
            } else if n.is_zero() {
                Ok(BigRational::one())
            } else {
                Ok(BigRational::zero())
            };
        }
        if b.abs().is_one() {
            let odd = n.is_odd();
            return Ok(if b.is_negative() && odd {
                -BigRational::one()
            } else {
                BigRational::one()
            });
        }
        // Size of the result before computing it: bits(b) · |n|.
        let bits = b.numer().bits().max(b.denom().bits());
        let nabs = n.abs();
        let result_bits = nabs
            .to_u64()
            .and_then(|k| k.checked_mul(bits.saturating_sub(1).max(1)));
        let Some(result_bits) = result_bits else {
            return Err(EvalFail::Budget(Exceeded(format!(
                "a power with more than max_digits = {} digits",
                self.meter.budget.max_digits
            ))));
        };
        self.meter.bits(result_bits, "a power")?;
        let k = nabs.to_u64().expect("checked above");
        let limbs_out = result_bits / 64 + 1;
        self.meter.charge(1 + limbs_out * limbs_out)?;
        let r = rat::pow(b, k);
        let r = if n.is_negative() { r.recip() } else { r };
        self.exact(1, 1, &r)?;
        Ok(r)
    }

    /// b^(p/q) with q > 1: exact when b's numerator and denominator are perfect q-th powers.
    fn pow_rational_exact(&mut self, b: &BigRational, e: &BigRational) -> EResult<Num> {
        let p = e.numer().clone();
        let q = e.denom().clone();
        if b.is_zero() {
            return if e.is_positive() {
                Ok(Num::Exact(BigRational::zero()))
            } else {
                undefined("0 to a non-positive power")
            };
        }
        let q_small = q.to_u32().filter(|&q| q <= 64);
        let negative = b.is_negative();
        if negative && q.is_even() {
            return undefined("an even root of a negative number");
        }
        if let Some(qs) = q_small {
            let a = b.abs();
            self.meter
                .charge(1 + 2 * rat_limbs(&a) * rat_limbs(&a) * qs as u64)?;
            let rn = a.numer().nth_root(qs);
            let rd = a.denom().nth_root(qs);
            if num_traits::Pow::pow(&rn, qs) == *a.numer()
                && num_traits::Pow::pow(&rd, qs) == *a.denom()
            {
                let root = BigRational::new(rn, rd);
                let root = if negative { -root } else { root };
                return Ok(Num::Exact(self.pow_int_exact(&root, &p)?));
            }
        }
        // Real power through logarithms; an odd root of a negative base keeps the sign of p.
        let a = Approx::from_rational(&b.abs())?;
        let v = if q == BigInt::from(2) {
            match p.to_i64() {
                Some(k) => a.sqrt()?.powi(k)?,
                None => return Err(EvalFail::Undecidable("an enormous exponent".into())),
            }
        } else {
            a.powf(Approx::from_rational(e)?)?
        };
        Ok(Num::Approx(if negative && p.is_odd() {
            v.neg()
        } else {
            v
        }))
    }

    fn func(&mut self, f: Func, v: Val) -> EResult<Val> {
        let inexact = v.inexact;
        self.meter.charge(4)?;
        if let Num::Exact(q) = &v.num {
            // Exact special values.
            let zero = q.is_zero();
            let one = q.is_one();
            let exact_result = match f {
                Func::Sin | Func::Tan | Func::Asin | Func::Atan | Func::Sinh | Func::Tanh
                    if zero =>
                {
                    Some(BigRational::zero())
                }
                Func::Cos | Func::Cosh | Func::Exp | Func::Sec if zero => Some(BigRational::one()),
                Func::Ln | Func::Log if one => Some(BigRational::zero()),
                Func::Abs => Some(q.abs()),
                _ => None,
            };
            if let Some(r) = exact_result {
                return Ok(Val {
                    num: Num::Exact(r),
                    inexact,
                });
            }
        }
        if let Num::Inf(neg) = v.num {
            return match f {
                Func::Abs => Ok(Val {
                    num: Num::Inf(false),
                    inexact,
                }),
                Func::Atan => {
                    let h = Approx::from_f64(std::f64::consts::FRAC_PI_2, 1.0)?;
                    Ok(Val {
                        num: Num::Approx(if neg { h.neg() } else { h }),
                        inexact,
                    })
                }
                _ => undefined("a function of ∞"),
            };
        }
        let x = to_approx(&v.num)?;
        let r = match f {
            Func::Sin => x.sin()?,
            Func::Cos => x.cos()?,
            Func::Tan => x.sin()?.div(x.cos()?)?,
            Func::Cot => x.cos()?.div(x.sin()?)?,
            Func::Sec => x.cos()?.recip()?,
            Func::Csc => x.sin()?.recip()?,
            Func::Asin => x.asin()?,
            Func::Acos => Approx::from_f64(std::f64::consts::FRAC_PI_2, 1.0)?.sub(x.asin()?)?,
            Func::Atan => x.atan()?,
            Func::Sinh | Func::Cosh | Func::Tanh => {
                let a = x.exp()?;
                let b = x.neg().exp()?;
                let s = a.sub(b)?;
                let c = a.add(b)?;
                let two = Approx::from_f64(2.0, 0.0)?;
                match f {
                    Func::Sinh => s.div(two)?,
                    Func::Cosh => c.div(two)?,
                    _ => s.div(c)?,
                }
            }
            Func::Ln => x.ln()?,
            // `\log` without a base is the natural logarithm, as in SymPy and math-verify.
            Func::Log => x.ln()?,
            Func::Exp => x.exp()?,
            Func::Abs => x.abs(),
        };
        Ok(Val {
            num: Num::Approx(r),
            inexact,
        })
    }

    fn factorial(&mut self, v: Val) -> EResult<Val> {
        let Num::Exact(q) = &v.num else {
            return undefined("factorial of a non-integer");
        };
        if !q.is_integer() || q.is_negative() {
            return undefined("factorial of a non-integer or negative number");
        }
        let Some(n) = q.to_integer().to_u64() else {
            return Err(EvalFail::Budget(Exceeded("an enormous factorial".into())));
        };
        // Digits of n! from Stirling's series (2006! has 5,761 digits).
        let digits = log10_factorial(n);
        if digits > self.meter.budget.max_digits as f64 {
            return Err(EvalFail::Budget(Exceeded(format!(
                "{n}! has about {digits:.0} digits, more than max_digits = {}",
                self.meter.budget.max_digits
            ))));
        }
        let mut acc = BigInt::one();
        for k in 2..=n {
            self.meter.charge(1 + limbs(&acc) / 8)?;
            acc *= k;
        }
        Ok(Val {
            num: Num::Exact(BigRational::from_integer(acc)),
            inexact: v.inexact,
        })
    }

    /// C(n, k) = n(n−1)…(n−k+1)/k! for an integer k ≥ 0 and any rational n (0 for k < 0, and
    /// for k > n when n is a non-negative integer).
    fn binom(&mut self, n: Val, k: Val) -> EResult<Val> {
        let inexact = n.inexact || k.inexact;
        let (Num::Exact(nq), Num::Exact(kq)) = (&n.num, &k.num) else {
            return undefined("a binomial coefficient of non-exact values");
        };
        if !kq.is_integer() {
            return undefined("a binomial coefficient with a non-integer k");
        }
        let kk = kq.to_integer();
        let zero = Val {
            num: Num::Exact(BigRational::zero()),
            inexact,
        };
        if kk.is_negative() {
            return Ok(zero);
        }
        if nq.is_integer() && !nq.is_negative() && kk > nq.to_integer() {
            return Ok(zero);
        }
        let Some(mut k) = kk.to_u64() else {
            return Err(EvalFail::Budget(Exceeded("an enormous binomial".into())));
        };
        if nq.is_integer() && !nq.is_negative() {
            // C(n, k) = C(n, n − k): use the shorter product.
            k = k.min((nq.to_integer() - &kk).to_u64().unwrap_or(k));
        }
        if nq.is_integer() {
            // Integer n: acc·(n − i)/(i + 1) is an integer at every step (no gcd needed).
            let n = nq.to_integer();
            let mut acc = BigInt::one();
            for i in 0..k {
                self.meter.charge(2 + limbs(&acc) / 4)?;
                acc = acc * (&n - BigInt::from(i)) / BigInt::from(i + 1);
                self.meter.bits(acc.bits(), "a binomial coefficient")?;
            }
            return Ok(Val {
                num: Num::Exact(BigRational::from_integer(acc)),
                inexact,
            });
        }
        let mut acc = BigRational::one();
        for i in 0..k {
            let num = nq - BigRational::from_integer(BigInt::from(i));
            let den = BigRational::from_integer(BigInt::from(i + 1));
            let l = rat_limbs(&acc);
            acc = rat::div(&rat::mul(&acc, &num), &den);
            self.exact(l, 1, &acc)?;
        }
        Ok(Val {
            num: Num::Exact(acc),
            inexact,
        })
    }
}

/// An upper estimate of log10(n!) (Stirling with the 1/(12n) term, rounded up).
fn log10_factorial(n: u64) -> f64 {
    if n < 2 {
        return 1.0;
    }
    let x = n as f64;
    let ln = x * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI * x).ln() + 1.0 / (12.0 * x);
    ln / std::f64::consts::LN_10 + 1.0
}

fn approx(x: f64) -> EResult<Val> {
    Ok(Val {
        num: Num::Approx(Approx::from_f64(x, 1.0)?),
        inexact: false,
    })
}

fn exact(q: BigRational) -> Val {
    Val {
        num: Num::Exact(q),
        inexact: false,
    }
}

fn neg(n: Num) -> Num {
    match n {
        Num::Exact(q) => Num::Exact(-q),
        Num::Approx(a) => Num::Approx(a.neg()),
        Num::Inf(s) => Num::Inf(!s),
    }
}

/// −1, 0 or 1; undecidable when an approximate value's ball contains 0.
fn sign(n: &Num) -> EResult<i32> {
    Ok(match n {
        Num::Exact(q) => {
            if q.is_zero() {
                0
            } else if q.is_negative() {
                -1
            } else {
                1
            }
        }
        Num::Approx(a) => {
            if a.is_zero() {
                0
            } else if a.is_positive() {
                1
            } else if a.is_negative() {
                -1
            } else {
                return Err(EvalFail::Undecidable("the sign of a value near 0".into()));
            }
        }
        Num::Inf(neg) => {
            if *neg {
                -1
            } else {
                1
            }
        }
    })
}

pub(crate) fn to_approx(n: &Num) -> EResult<Approx> {
    match n {
        Num::Exact(q) => Ok(Approx::from_rational(q)?),
        Num::Approx(a) => Ok(*a),
        Num::Inf(_) => undefined("arithmetic with ∞"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Budget;
    use crate::math::parser::{Node, parse};

    fn ev(s: &str) -> EResult<Val> {
        let mut meter = Meter::new(Budget::default());
        let Node::E(e) = parse(s, &mut meter).unwrap() else {
            panic!("not a scalar: {s}")
        };
        let env = Env::new();
        Evaluator {
            meter: &mut meter,
            env: &env,
        }
        .eval(&e)
    }

    fn q(n: i64, d: i64) -> Num {
        Num::Exact(BigRational::new(n.into(), d.into()))
    }

    #[test]
    fn exact_values() {
        assert_eq!(ev("\\frac{1}{2} + \\frac13").unwrap().num, q(5, 6));
        assert_eq!(ev("\\sqrt{\\frac{4}{9}}").unwrap().num, q(2, 3));
        assert_eq!(ev("\\sqrt[3]{-8}").unwrap().num, q(-2, 1));
        assert_eq!(ev("8^{2/3}").unwrap().num, q(4, 1));
        assert_eq!(ev("2^{-3}").unwrap().num, q(1, 8));
        assert_eq!(ev("5!").unwrap().num, q(120, 1));
        assert_eq!(ev("\\binom{10}{3}").unwrap().num, q(120, 1));
        assert_eq!(ev("25\\%").unwrap().num, q(1, 4));
        assert_eq!(ev("\\log_{10} 1000").unwrap().num, q(3, 1));
        assert_eq!(ev("\\log_2 \\frac{1}{8}").unwrap().num, q(-3, 1));
        assert!(ev("0.5").unwrap().inexact);
    }

    #[test]
    fn failures() {
        assert!(matches!(ev("1/0"), Err(EvalFail::Undefined(_))));
        assert!(matches!(ev("\\sqrt{-4}"), Err(EvalFail::Undefined(_))));
        assert!(matches!(ev("10^{100000}"), Err(EvalFail::Budget(_))));
        assert!(matches!(ev("100000!"), Err(EvalFail::Budget(_))));
        // 2006! has 5,761 digits: within the default 10,000.
        assert!(ev("2006!").is_ok());
    }
}
