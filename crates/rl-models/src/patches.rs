//! Whether this build's CPU backend carries rlvr's patches.
//!
//! The workspace replaces three crates under burn's CPU backend with patched copies
//! (`[patch.crates-io]`, third_party/PATCHED.md in the repository). A patch section does not
//! travel with a published crate: a project that depends on `rl-models` from crates.io builds
//! against the published crates unless it adds the section itself. Everything still computes
//! the same functions (the patched `exp` within 1 ulp of the published one); what differs is
//! speed, and one switch for tests. docs/crates-io.md has the measurements and the section to
//! add. The build script reads each copy's `links` marker; [`cpu_backend`] reports it, and
//! `rl-trainer` writes [`missing_note`] at the start of a CPU run that lacks any.

/// One crate of the CPU backend that rlvr patches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Patch {
    /// The crate and version the patch applies to.
    pub krate: &'static str,
    /// Whether this build uses rlvr's patched copy.
    pub applied: bool,
    /// What the patched copy gives over the published crate.
    pub gives: &'static str,
    /// Whether the patch changes the speed of a run (macerator's only adds a switch for tests).
    pub speed: bool,
}

/// The three patched crates under the CPU backend, and whether this build has each.
pub fn cpu_backend() -> [Patch; 3] {
    [
        Patch {
            krate: "burn-flex 0.21.0",
            applied: cfg!(rlvr_patched_burn_flex),
            gives: "fewer copies and memory walks, element-wise work on every core, a \
                    vectorised exp",
            speed: true,
        },
        Patch {
            krate: "gemm-common 0.19.0",
            applied: cfg!(rlvr_patched_gemm_common),
            gives: "AVX-512 GEMM kernels only for products of 16 rows or more, the AVX2 ones \
                    (faster there) for thinner products such as decoding a few sequences",
            speed: true,
        },
        Patch {
            krate: "macerator 0.3.4",
            applied: cfg!(rlvr_patched_macerator),
            gives: "RLVR_NO_AVX512=1, which runs the AVX2 kernels on an AVX-512 CPU (tests only)",
            speed: false,
        },
    ]
}

/// One line for a run's log when this build lacks a patch that changes speed (burn-flex or
/// gemm-common), naming them and where to read more; `None` when it has both.
pub fn missing_note() -> Option<String> {
    let missing: Vec<&str> = cpu_backend()
        .iter()
        .filter(|p| p.speed && !p.applied)
        .map(|p| p.krate)
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "CPU backend: {} as published, without rlvr's patches (the workspace's \
             [patch.crates-io] section does not travel with a dependency): same results, \
             slower; docs/crates-io.md in the rlvr repository has the measured difference and \
             the section to add",
            missing.join(" and ")
        )
    })
}

#[cfg(test)]
mod tests {
    /// This workspace builds with its patch section, so every copy's marker must arrive; a
    /// marker that stopped reaching the build script (a renamed `links` key, a dropped build
    /// script) would make a patched build report itself as unpatched.
    #[test]
    fn the_workspace_build_has_every_patch() {
        for p in super::cpu_backend() {
            assert!(
                p.applied,
                "{} is not rlvr's patched copy in this build",
                p.krate
            );
        }
        assert_eq!(super::missing_note(), None);
    }
}
