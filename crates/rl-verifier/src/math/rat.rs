//! Exact rational arithmetic with a Euclidean gcd.
//!
//! `num-rational` normalises every result with `num-bigint`'s binary (Stein) gcd, whose cost is
//! about bits × limbs even when one operand is tiny (gcd(2004!, 1) walks all 19,000 bits). The
//! Euclidean algorithm reduces a big number modulo a small one in one linear pass, so the
//! operations here (Knuth's formulas, TAOCP 4.5.1) stay cheap on the huge numerators and
//! denominators that factorials and powers produce.

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Signed, ToPrimitive, Zero};

/// gcd(|a|, |b|) by Lehmer's algorithm (Knuth, TAOCP 4.5.2, Algorithm L): Euclid's steps are
/// simulated on the leading 62 bits and applied to the big numbers in batches, so a gcd of two
/// n-limb numbers costs O(n²) word operations instead of O(64·n²).
pub(crate) fn gcd(a: &BigInt, b: &BigInt) -> BigInt {
    let mut x = a.abs();
    let mut y = b.abs();
    if x < y {
        std::mem::swap(&mut x, &mut y);
    }
    while y.bits() > 64 {
        // 62-bit leading digits keep every quantity below 2^63 (Knuth's cofactor bounds).
        let shift = x.bits() - 62;
        let mut xh = (&x >> shift).to_i64().unwrap_or(0);
        let mut yh = (&y >> shift).to_i64().unwrap_or(0);
        let (mut ca, mut cb, mut cc, mut cd) = (1i64, 0i64, 0i64, 1i64);
        loop {
            if yh + cc == 0 || yh + cd == 0 {
                break;
            }
            let q = (xh + ca) / (yh + cc);
            if q != (xh + cb) / (yh + cd) {
                break;
            }
            (ca, cc) = (cc, ca - q * cc);
            (cb, cd) = (cd, cb - q * cd);
            (xh, yh) = (yh, xh - q * yh);
        }
        if cb == 0 {
            let r = &x % &y;
            x = y;
            y = r;
        } else {
            let nx = &x * BigInt::from(ca) + &y * BigInt::from(cb);
            let ny = &x * BigInt::from(cc) + &y * BigInt::from(cd);
            x = nx;
            y = ny;
        }
    }
    // Both fit in a word (or y is zero): finish with machine integers.
    while !y.is_zero() {
        let r = &x % &y;
        x = y;
        y = r;
        if let (Some(mut u), Some(mut v)) = (x.to_u64(), y.to_u64()) {
            while v != 0 {
                (u, v) = (v, u % v);
            }
            return BigInt::from(u);
        }
    }
    x
}

/// n/d in lowest terms with a positive denominator (d ≠ 0).
pub(crate) fn reduce(n: BigInt, d: BigInt) -> BigRational {
    let g = gcd(&n, &d);
    let (mut n, mut d) = if g.is_one() || g.is_zero() {
        (n, d)
    } else {
        (n / &g, d / &g)
    };
    if d.is_negative() {
        n = -n;
        d = -d;
    }
    BigRational::new_raw(n, d)
}

fn parts(q: &BigRational) -> (&BigInt, &BigInt) {
    (q.numer(), q.denom())
}

/// a/b · c/d with the cross gcds removed first.
pub(crate) fn mul(x: &BigRational, y: &BigRational) -> BigRational {
    let ((a, b), (c, d)) = (parts(x), parts(y));
    if a.is_zero() || c.is_zero() {
        return BigRational::zero();
    }
    let g1 = gcd(a, d);
    let g2 = gcd(c, b);
    let n = (a / &g1) * (c / &g2);
    let m = (b / &g2) * (d / &g1);
    BigRational::new_raw(n, m)
}

/// x / y (y ≠ 0).
pub(crate) fn div(x: &BigRational, y: &BigRational) -> BigRational {
    let (c, d) = parts(y);
    let inv = if c.is_negative() {
        BigRational::new_raw(-d.clone(), -c.clone())
    } else {
        BigRational::new_raw(d.clone(), c.clone())
    };
    mul(x, &inv)
}

/// a/b + c/d (Knuth: only gcds of denominators and of a small factor).
pub(crate) fn add(x: &BigRational, y: &BigRational) -> BigRational {
    let ((a, b), (c, d)) = (parts(x), parts(y));
    if a.is_zero() {
        return y.clone();
    }
    if c.is_zero() {
        return x.clone();
    }
    let g = gcd(b, d);
    if g.is_one() {
        return BigRational::new_raw(a * d + c * b, b * d);
    }
    let (bg, dg) = (b / &g, d / &g);
    let t = a * &dg + c * &bg;
    if t.is_zero() {
        return BigRational::zero();
    }
    let g2 = gcd(&t, &g);
    BigRational::new_raw(t / &g2, bg * (d / &g2))
}

/// x − y.
pub(crate) fn sub(x: &BigRational, y: &BigRational) -> BigRational {
    add(x, &-y.clone())
}

/// |x − y| ≤ 10^(−digits) · max(|x|, |y|), exactly.
pub(crate) fn close(x: &BigRational, y: &BigRational, digits: u32) -> bool {
    let diff = sub(x, y).abs();
    let scale = if x.abs() >= y.abs() { x.abs() } else { y.abs() };
    // diff.n / diff.d ≤ scale.n / (scale.d · 10^digits)
    let ten = BigInt::from(10u32).pow(digits);
    diff.numer() * scale.denom() * ten <= scale.numer() * diff.denom()
}

/// x^k for k ≥ 0 (powers of coprime numbers stay coprime: no gcd).
pub(crate) fn pow(x: &BigRational, k: u64) -> BigRational {
    let (a, b) = parts(x);
    let n = num_traits::Pow::pow(a, k);
    let d = num_traits::Pow::pow(b, k);
    BigRational::new_raw(n, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(n: i64, d: i64) -> BigRational {
        BigRational::new(n.into(), d.into())
    }

    #[test]
    fn agrees_with_num_rational() {
        let vals = [
            q(1, 2),
            q(-3, 4),
            q(5, 6),
            q(0, 1),
            q(7, 1),
            q(-10, 15),
            q(12, 18),
        ];
        for a in &vals {
            for b in &vals {
                assert_eq!(add(a, b), a + b, "{a} + {b}");
                assert_eq!(sub(a, b), a - b, "{a} - {b}");
                assert_eq!(mul(a, b), a * b, "{a} * {b}");
                if !b.is_zero() {
                    assert_eq!(div(a, b), a / b, "{a} / {b}");
                }
            }
        }
        assert_eq!(reduce(BigInt::from(6), BigInt::from(-4)), q(-3, 2));
        assert_eq!(pow(&q(-2, 3), 3), q(-8, 27));
        assert!(close(&q(1, 3), &q(333_333, 1_000_000), 6));
        assert!(!close(&q(1, 3), &q(33, 100), 6));
    }

    #[test]
    fn lehmer_gcd_matches_euclid() {
        use num_integer::Integer;
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let big = |rng: &mut rand_chacha::ChaCha8Rng, words: usize| {
            let mut n = BigInt::zero();
            for _ in 0..words {
                n = (n << 64) + BigInt::from(rng.random::<u64>());
            }
            n
        };
        for round in 0..300 {
            let common = big(&mut rng, 1 + round % 3);
            let a = big(&mut rng, 1 + round % 9) * &common;
            let b = big(&mut rng, 1 + (round / 3) % 7) * &common;
            assert_eq!(gcd(&a, &b), a.gcd(&b), "round {round}");
            assert_eq!(gcd(&-a.clone(), &b), a.gcd(&b));
        }
        // Consecutive Fibonacci numbers: the worst case for Euclid.
        let (mut f0, mut f1) = (BigInt::one(), BigInt::one());
        for _ in 0..3000 {
            (f0, f1) = (f1.clone(), f0 + f1);
        }
        assert!(gcd(&f0, &f1).is_one());
        assert_eq!(gcd(&BigInt::zero(), &f1), f1);
    }
}
