//! Whether the CPU backend's crates are rlvr's patched copies (third_party/PATCHED.md): each copy
//! declares a `links` key whose metadata reaches this script as `DEP_<LINKS>_PATCHES`; the
//! published crates have none. `rl_models::patches` reports the result.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    for (var, cfg) in [
        (
            "DEP_RLVR_PATCHED_BURN_FLEX_PATCHES",
            "rlvr_patched_burn_flex",
        ),
        (
            "DEP_RLVR_PATCHED_GEMM_COMMON_PATCHES",
            "rlvr_patched_gemm_common",
        ),
        (
            "DEP_RLVR_PATCHED_MACERATOR_PATCHES",
            "rlvr_patched_macerator",
        ),
    ] {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        println!("cargo::rerun-if-env-changed={var}");
        if std::env::var_os(var).is_some() {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}
