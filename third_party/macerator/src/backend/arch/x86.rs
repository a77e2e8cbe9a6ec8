use crate::{backend::scalar::Fallback, x86, Simd};

use super::WithSimd;

#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
#[repr(u8)]
pub enum Arch {
    Scalar,
    V2,
    V3,
    #[cfg(avx512)]
    V4,
    #[cfg(fp16)]
    V4FP16,
}

/// rlvr patch (third_party/PATCHED.md): true when the environment variable `RLVR_NO_AVX512`
/// is `1` when first asked: [`Arch::new`] then never picks the AVX-512 levels, and every kernel
/// runs as on a CPU without AVX-512 (V3: AVX2 + FMA), so that both paths can be tested on one
/// AVX-512 machine. Read once per process.
#[cfg(feature = "std")]
fn avx512_refused() -> bool {
    use core::sync::atomic::{AtomicU8, Ordering};
    static REFUSED: AtomicU8 = AtomicU8::new(u8::MAX);
    match REFUSED.load(Ordering::Relaxed) {
        u8::MAX => {
            let refused = std::env::var_os("RLVR_NO_AVX512").is_some_and(|v| v == "1");
            REFUSED.store(refused as u8, Ordering::Relaxed);
            refused
        }
        v => v != 0,
    }
}

/// rlvr patch: without `std` there is no environment to read; the CPU decides.
#[cfg(not(feature = "std"))]
fn avx512_refused() -> bool {
    false
}

impl Arch {
    pub fn new() -> Self {
        // rlvr patch (third_party/PATCHED.md): the AVX-512 levels only when not refused.
        #[cfg(fp16)]
        if x86::V4FP16::is_available() && !avx512_refused() {
            return Self::V4FP16;
        }
        #[cfg(avx512)]
        if x86::V4::is_available() && !avx512_refused() {
            return Self::V4;
        }

        if x86::V3::is_available() {
            Self::V3
        } else if x86::V2::is_available() {
            Self::V2
        } else {
            Self::Scalar
        }
    }

    pub fn dispatch<Op: WithSimd>(self, op: Op) -> Op::Output {
        match self {
            Arch::Scalar => <Fallback as Simd>::vectorize(op),
            Arch::V2 => <x86::V2 as Simd>::vectorize(op),
            Arch::V3 => <x86::V3 as Simd>::vectorize(op),
            #[cfg(avx512)]
            Arch::V4 => <x86::V4 as Simd>::vectorize(op),
            #[cfg(fp16)]
            Arch::V4FP16 => <x86::V4FP16 as Simd>::vectorize(op),
        }
    }
}

impl Default for Arch {
    fn default() -> Self {
        Self::new()
    }
}
