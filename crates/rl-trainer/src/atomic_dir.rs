//! Writing a folder so that a crash never leaves it half-written.

use std::path::Path;

use crate::TrainerError;

/// Fills a temporary sibling folder with `fill`, then renames it to `dir` (replacing an old
/// one), so that a crash never leaves a half-written `dir`.
pub(crate) fn atomic_dir(
    dir: &Path,
    fill: impl FnOnce(&Path) -> Result<(), TrainerError>,
) -> Result<(), TrainerError> {
    let tmp = dir.with_extension(format!("tmp{}", std::process::id()));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| TrainerError::io(&tmp, e))?;
    }
    std::fs::create_dir_all(&tmp).map_err(|e| TrainerError::io(&tmp, e))?;
    fill(&tmp)?;
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| TrainerError::io(dir, e))?;
    }
    std::fs::rename(&tmp, dir).map_err(|e| TrainerError::io(dir, e))
}
