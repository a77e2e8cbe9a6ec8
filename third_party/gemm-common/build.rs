// rlvr patch: this copy of gemm-common carries rlvr's patches (third_party/PATCHED.md). Dependents'
// build scripts read the marker as DEP_RLVR_PATCHED_GEMM_COMMON_PATCHES (`links` metadata), so that a
// build against the published crate can say so instead of differing silently.
fn main() {
    println!("cargo::metadata=patches=v4-by-rows");
}
