// rlvr patch: this copy of burn-collective carries rlvr's patches (third_party/PATCHED.md). Dependents'
// build scripts read the marker as DEP_RLVR_PATCHED_BURN_COLLECTIVE_PATCHES (`links` metadata), so that a
// build against the published crate can say so instead of differing silently.
fn main() {
    println!("cargo::metadata=patches=sync-barrier");
}
