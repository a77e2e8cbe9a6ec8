//! Whether burn-collective and burn-communication are rlvr's patched copies (third_party/PATCHED.md):
//! each copy declares a `links` key whose metadata reaches this script as `DEP_<LINKS>_PATCHES`;
//! the published crates have none. Without both, cross-process workers are refused
//! (`distributed::WorkerConfig::validate`): the published crates' global all-reduce stalls.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rustc-check-cfg=cfg(rlvr_patched_collective)");
    let vars = [
        "DEP_RLVR_PATCHED_BURN_COLLECTIVE_PATCHES",
        "DEP_RLVR_PATCHED_BURN_COMMUNICATION_PATCHES",
    ];
    for var in vars {
        println!("cargo::rerun-if-env-changed={var}");
    }
    if vars.iter().all(|v| std::env::var_os(v).is_some()) {
        println!("cargo::rustc-cfg=rlvr_patched_collective");
    }
}
