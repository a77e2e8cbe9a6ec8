//! Approximate real numbers for values that are not rational (π, e, √2, sin 1, …): midpoint–
//! radius ("ball") arithmetic on an `f64` mantissa with an unbounded binary exponent.
//!
//! An [`Approx`] `{m, r, e}` stands for every real in `[(m − r)·2^e, (m + r)·2^e]`. Each
//! operation widens the radius by the propagated input radii plus a few units in the last place
//! for its own rounding (more for libm's transcendental functions), so two values whose balls are
//! disjoint are certainly different. The separate exponent means nothing overflows or underflows:
//! `π/2006!` and `π/2004!` stay distinguishable.

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{Signed, ToPrimitive, Zero};

/// 2^-52: one unit in the last place of a number in [1, 2).
const ULP: f64 = f64::EPSILON;
/// Largest exponent magnitude kept (far beyond anything the digit budget allows).
const MAX_EXP: i64 = 1 << 40;

/// Why an approximate operation could not give a usable value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ApproxError {
    /// Outside the function's domain for every point of the ball (e.g. √ of a negative).
    Domain(&'static str),
    /// The ball is too wide or too large to decide (e.g. it contains 0 and we divide by it).
    Undecidable(&'static str),
}

/// A ball `[(m − r)·2^e, (m + r)·2^e]` with `max(|m|, r)` in [1, 2), or exactly zero.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Approx {
    m: f64,
    r: f64,
    e: i64,
}

fn ldexp(x: f64, k: i64) -> f64 {
    if x == 0.0 || k == 0 {
        return x;
    }
    let mut x = x;
    let mut k = k.clamp(-2200, 2200);
    while k > 1000 {
        x *= 2f64.powi(1000);
        k -= 1000;
    }
    while k < -1000 {
        x *= 2f64.powi(-1000);
        k += 1000;
    }
    x * 2f64.powi(k as i32)
}

/// floor(log2 |x|) for a finite non-zero x.
fn ilog2(x: f64) -> i64 {
    let bits = x.abs().to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i64;
    if exp == 0 {
        // Subnormal: scale up first.
        ilog2(x * 2f64.powi(64)) - 64
    } else {
        exp - 1023
    }
}

impl Approx {
    pub(crate) const ZERO: Approx = Approx {
        m: 0.0,
        r: 0.0,
        e: 0,
    };

    fn new(m: f64, r: f64, e: i64) -> Result<Approx, ApproxError> {
        if !m.is_finite() || !r.is_finite() {
            return Err(ApproxError::Undecidable("a value too large to approximate"));
        }
        let r = r.abs();
        let s = m.abs().max(r);
        if s == 0.0 {
            return Ok(Approx::ZERO);
        }
        let k = ilog2(s);
        let e = e
            .checked_add(k)
            .filter(|e| e.abs() < MAX_EXP)
            .ok_or(ApproxError::Undecidable("a value too large or too small"))?;
        Ok(Approx {
            m: ldexp(m, -k),
            r: ldexp(r, -k),
            e,
        })
    }

    /// A double with an error of `ulps` units in its last place.
    pub(crate) fn from_f64(x: f64, ulps: f64) -> Result<Approx, ApproxError> {
        Approx::new(x, x.abs() * ulps * ULP, 0)
    }

    /// A double and an absolute radius.
    fn from_ball(x: f64, r: f64) -> Result<Approx, ApproxError> {
        Approx::new(x, r, 0)
    }

    /// The nearest ball to an exact rational (relative radius 2^-50).
    pub(crate) fn from_rational(q: &BigRational) -> Result<Approx, ApproxError> {
        if q.is_zero() {
            return Ok(Approx::ZERO);
        }
        let (mn, en) = top_bits(q.numer());
        let (md, ed) = top_bits(q.denom());
        let m = mn / md;
        Approx::new(m, m.abs() * 4.0 * ULP, en - ed)
    }

    pub(crate) fn is_zero(&self) -> bool {
        self.m == 0.0 && self.r == 0.0
    }

    /// The value as a double, when it fits (∞ or 0 otherwise).
    pub(crate) fn to_f64(self) -> f64 {
        ldexp(self.m, self.e)
    }

    fn radius_f64(self) -> f64 {
        ldexp(self.r, self.e)
    }

    /// True when every point of the ball is > 0.
    pub(crate) fn is_positive(&self) -> bool {
        self.m - self.r > 0.0
    }

    /// True when every point of the ball is < 0.
    pub(crate) fn is_negative(&self) -> bool {
        self.m + self.r < 0.0
    }

    pub(crate) fn neg(self) -> Approx {
        Approx { m: -self.m, ..self }
    }

    pub(crate) fn abs(self) -> Approx {
        Approx {
            m: self.m.abs(),
            ..self
        }
    }

    pub(crate) fn add(self, o: Approx) -> Result<Approx, ApproxError> {
        if self.is_zero() {
            return Ok(o);
        }
        if o.is_zero() {
            return Ok(self);
        }
        let e = self.e.max(o.e);
        let mut extra = 0.0;
        let mut scale = |x: Approx| {
            let d = x.e - e;
            if d < -1000 {
                // |x| ≤ 2^(d+1): negligible, but keep it inside the radius.
                extra += 2f64.powi(-999);
                (0.0, 0.0)
            } else {
                (ldexp(x.m, d), ldexp(x.r, d))
            }
        };
        let (am, ar) = scale(self);
        let (bm, br) = scale(o);
        let m = am + bm;
        Approx::new(m, ar + br + extra + m.abs() * ULP + 2f64.powi(-1070), e)
    }

    pub(crate) fn sub(self, o: Approx) -> Result<Approx, ApproxError> {
        self.add(o.neg())
    }

    pub(crate) fn mul(self, o: Approx) -> Result<Approx, ApproxError> {
        if self.is_zero() || o.is_zero() {
            return Ok(Approx::ZERO);
        }
        let m = self.m * o.m;
        let r = self.m.abs() * o.r + o.m.abs() * self.r + self.r * o.r + m.abs() * 2.0 * ULP;
        Approx::new(m, r, self.e + o.e)
    }

    pub(crate) fn recip(self) -> Result<Approx, ApproxError> {
        let am = self.m.abs();
        if am <= self.r {
            return Err(ApproxError::Undecidable(
                "division by a value that may be zero",
            ));
        }
        let m = 1.0 / self.m;
        let r = self.r / (am * (am - self.r)) + m.abs() * 2.0 * ULP;
        Approx::new(m, r, -self.e)
    }

    pub(crate) fn div(self, o: Approx) -> Result<Approx, ApproxError> {
        self.mul(o.recip()?)
    }

    pub(crate) fn sqrt(self) -> Result<Approx, ApproxError> {
        if self.is_zero() {
            return Ok(Approx::ZERO);
        }
        if self.is_negative() {
            return Err(ApproxError::Domain("square root of a negative number"));
        }
        if !self.is_positive() {
            return Err(ApproxError::Undecidable(
                "square root of a value that may be negative",
            ));
        }
        let (mut m, mut r, mut e) = (self.m, self.r, self.e);
        if e.rem_euclid(2) == 1 {
            m *= 2.0;
            r *= 2.0;
            e -= 1;
        }
        let s = m.sqrt();
        // |√x − √m| = |x − m| / (√x + √m) ≤ r / √m for x ≥ 0.
        Approx::new(s, r / s + s * 2.0 * ULP, e / 2)
    }

    /// Natural logarithm (the ball must be positive).
    pub(crate) fn ln(self) -> Result<Approx, ApproxError> {
        if self.is_negative() || (self.is_zero()) {
            return Err(ApproxError::Domain("logarithm of a non-positive number"));
        }
        if !self.is_positive() {
            return Err(ApproxError::Undecidable(
                "logarithm of a value that may be non-positive",
            ));
        }
        let v = self.m.ln() + self.e as f64 * std::f64::consts::LN_2;
        let r = self.r / (self.m - self.r) + v.abs() * 4.0 * ULP + 4.0 * ULP;
        Approx::from_ball(v, r)
    }

    /// e^x.
    pub(crate) fn exp(self) -> Result<Approx, ApproxError> {
        if self.is_zero() {
            return Approx::from_f64(1.0, 0.0);
        }
        if self.e > 62 {
            return Err(ApproxError::Undecidable("exponent too large"));
        }
        let x = self.to_f64();
        let xr = self.radius_f64();
        let y = x * std::f64::consts::LOG2_E;
        let k = y.floor();
        let f = y - k;
        let m = f.exp2();
        let rel = (xr.exp_m1()) + (y.abs() + 1.0) * 4.0 * ULP;
        if !rel.is_finite() {
            return Err(ApproxError::Undecidable("exponent too uncertain"));
        }
        Approx::new(m, m * rel, k as i64)
    }

    /// x^y for x > 0 and any real y, as e^(y·ln x).
    pub(crate) fn powf(self, y: Approx) -> Result<Approx, ApproxError> {
        self.ln()?.mul(y)?.exp()
    }

    /// x^n for an integer n (any sign of x).
    pub(crate) fn powi(self, n: i64) -> Result<Approx, ApproxError> {
        let mut result = Approx::from_f64(1.0, 0.0)?;
        let mut base = self;
        let mut k = n.unsigned_abs();
        while k > 0 {
            if k & 1 == 1 {
                result = result.mul(base)?;
            }
            k >>= 1;
            if k > 0 {
                base = base.mul(base)?;
            }
        }
        if n < 0 { result.recip() } else { Ok(result) }
    }

    /// A function of a double with Lipschitz bound `lip` on the ball: `f(x) ± (lip·r + 4 ulp)`.
    fn lipschitz(self, f: impl Fn(f64) -> f64, lip: f64) -> Result<Approx, ApproxError> {
        if self.e > 50 {
            return Err(ApproxError::Undecidable(
                "argument of a periodic function too large",
            ));
        }
        let x = self.to_f64();
        let v = f(x);
        Approx::from_ball(v, lip * self.radius_f64() + v.abs() * 4.0 * ULP + 1e-300)
    }

    pub(crate) fn sin(self) -> Result<Approx, ApproxError> {
        if self.e < -1000 {
            return Ok(self); // sin x = x (1 + O(x²)).
        }
        self.lipschitz(f64::sin, 1.0)
    }

    pub(crate) fn cos(self) -> Result<Approx, ApproxError> {
        if self.e < -1000 {
            return Approx::from_f64(1.0, 1.0);
        }
        self.lipschitz(f64::cos, 1.0)
    }

    pub(crate) fn atan(self) -> Result<Approx, ApproxError> {
        if self.e < -1000 {
            return Ok(self);
        }
        if self.e > 1000 {
            let half_pi = Approx::from_f64(std::f64::consts::FRAC_PI_2, 1.0)?;
            return Ok(if self.m > 0.0 { half_pi } else { half_pi.neg() });
        }
        self.lipschitz(f64::atan, 1.0)
    }

    /// arcsin on [−1, 1] (the ball must stay inside).
    pub(crate) fn asin(self) -> Result<Approx, ApproxError> {
        let x = self.to_f64();
        let r = self.radius_f64();
        if x.abs() - r > 1.0 {
            return Err(ApproxError::Domain("arcsin/arccos outside [-1, 1]"));
        }
        let hi = x.abs() + r;
        if hi >= 1.0 {
            return Err(ApproxError::Undecidable("arcsin/arccos near ±1"));
        }
        self.lipschitz(f64::asin, 1.0 / (1.0 - hi * hi).sqrt())
    }

    /// Equality within the balls' radii plus a relative tolerance.
    pub(crate) fn approx_eq(self, o: Approx, rel_tol: f64) -> Result<bool, ApproxError> {
        let d = self.sub(o)?;
        if d.m.abs() <= d.r {
            return Ok(true);
        }
        // Compare (|d.m| − d.r)·2^d.e with rel_tol·max(|a|, |b|).
        let big = if self.e >= o.e { self } else { o };
        let small = if self.e >= o.e { o } else { self };
        let mag = big.m.abs().max(ldexp(small.m.abs(), small.e - big.e));
        let lhs = d.m.abs() - d.r;
        let rhs = rel_tol * mag;
        if rhs == 0.0 {
            return Ok(false);
        }
        // lhs·2^(d.e − big.e) ≤ rhs, with lhs and rhs in normal ranges.
        Ok(ldexp(lhs, d.e - big.e) <= rhs)
    }
}

/// The leading ≤ 53 bits of |n| as a double, and the binary exponent to apply.
fn top_bits(n: &BigInt) -> (f64, i64) {
    let bits = n.bits() as i64;
    let shift = (bits - 53).max(0);
    let top = (n.abs() >> shift as usize).to_f64().unwrap_or(f64::MAX);
    let top = if n.is_negative() { -top } else { top };
    (top, shift)
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_bigint::BigInt;

    fn a(x: f64) -> Approx {
        Approx::from_f64(x, 1.0).unwrap()
    }

    #[test]
    fn identities_hold_within_radius() {
        // √8 = 2√2 (both irrational; the balls must overlap).
        let s8 = a(8.0).sqrt().unwrap();
        let s2 = a(2.0).sqrt().unwrap().mul(a(2.0)).unwrap();
        assert!(s8.approx_eq(s2, 0.0).unwrap());
        // 1 − 1/e ≠ 1 + 1/e.
        let e_inv = a(1.0).exp().unwrap().recip().unwrap();
        let one = a(1.0);
        assert!(
            !one.sub(e_inv)
                .unwrap()
                .approx_eq(one.add(e_inv).unwrap(), 1e-12)
                .unwrap()
        );
        // sin π contains 0.
        let pi = Approx::from_f64(std::f64::consts::PI, 1.0).unwrap();
        assert!(pi.sin().unwrap().approx_eq(Approx::ZERO, 0.0).unwrap());
    }

    #[test]
    fn no_underflow_for_huge_denominators() {
        // 2^-5000 · π vs 2^-4999 · π: far below f64's range, still different by a factor 2.
        let tiny = |k: u32| {
            let q = BigRational::new(BigInt::from(1), BigInt::from(2).pow(k));
            Approx::from_rational(&q).unwrap()
        };
        let pi = Approx::from_f64(std::f64::consts::PI, 1.0).unwrap();
        let x = tiny(5000).mul(pi).unwrap();
        let y = tiny(4999).mul(pi).unwrap();
        assert!(!x.approx_eq(y, 1e-12).unwrap());
        assert!(x.approx_eq(x, 0.0).unwrap());
        assert!(x.is_positive());
    }

    #[test]
    fn exp_ln_roundtrip_and_powers() {
        let x = a(3.5);
        assert!(x.ln().unwrap().exp().unwrap().approx_eq(x, 0.0).unwrap());
        // 2^0.5 · 2^0.5 = 2.
        let h = a(2.0).powf(a(0.5)).unwrap();
        assert!(h.mul(h).unwrap().approx_eq(a(2.0), 0.0).unwrap());
        // 1.5^-3 = 8/27.
        let p = a(1.5).powi(-3).unwrap();
        assert!(p.approx_eq(a(8.0 / 27.0), 0.0).unwrap());
        assert!(matches!(a(-1.0).sqrt(), Err(ApproxError::Domain(_))));
        assert!(matches!(
            Approx::ZERO.recip(),
            Err(ApproxError::Undecidable(_))
        ));
    }
}
