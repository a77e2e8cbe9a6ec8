//! The run's private working directory: created (0700) with `main.py` and the program's files,
//! owned by the run's outside uid, and removed afterwards whatever the program did to it
//! (`chmod 000`, deep nesting, symlinks out, FIFOs) without following links and without
//! recursion or long paths: the remover works on directory fds and moves deeper entries up.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::SandboxError;
use crate::program::Program;

/// Checks the names of `program.files`: relative, no `..`, not empty, not `main.py`.
pub(crate) fn check_names(program: &Program) -> Result<(), SandboxError> {
    const EXPECTED: &str = "a relative path without `..` or NUL bytes, naming a file other \
                            than `main.py`, each name once";
    let mut seen: Vec<Vec<&std::ffi::OsStr>> = Vec::new();
    for (name, _) in &program.files {
        let bad = || SandboxError::Config {
            field: "files",
            value: format!("{name:?}"),
            expected: EXPECTED,
        };
        let path = Path::new(name);
        if name.is_empty() || name.contains('\0') || path.is_absolute() {
            return Err(bad());
        }
        let mut parts = Vec::new();
        for c in path.components() {
            match c {
                Component::Normal(p) => parts.push(p),
                Component::CurDir => {}
                _ => return Err(bad()),
            }
        }
        if parts.is_empty() || parts == [std::ffi::OsStr::new("main.py")] || seen.contains(&parts) {
            return Err(bad());
        }
        seen.push(parts);
    }
    Ok(())
}

/// A working directory; removed on drop unless [`WorkDir::remove`] already did.
pub(crate) struct WorkDir {
    pub path: PathBuf,
    removed: bool,
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

impl WorkDir {
    /// `<root>/rlvr-sandbox-<pid>-<counter>-<nanos>` holding `main.py` and the program's files,
    /// all owned by `owner` (uid, gid) when given.
    pub(crate) fn create(
        root: &Path,
        program: &Program,
        owner: Option<(u32, u32)>,
    ) -> Result<WorkDir, SandboxError> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let name = format!(
            "rlvr-sandbox-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let path = root.join(name);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(|e| {
                crate::io_err(
                    format!("creating the working directory {}", path.display()),
                    e,
                )
            })?;
        let dir = WorkDir {
            path,
            removed: false,
        };
        let chown = |p: &Path| -> Result<(), SandboxError> {
            if let Some((uid, gid)) = owner {
                std::os::unix::fs::lchown(p, Some(uid), Some(gid))
                    .map_err(|e| crate::io_err(format!("chown {uid}:{gid} {}", p.display()), e))?;
            }
            Ok(())
        };
        // An explicit mode: the caller's umask must not matter.
        std::fs::set_permissions(&dir.path, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| crate::io_err(format!("chmod 0700 {}", dir.path.display()), e))?;
        chown(&dir.path)?;
        let files = std::iter::once(("main.py", program.source.as_bytes())).chain(
            program
                .files
                .iter()
                .map(|(n, b)| (n.as_str(), b.as_slice())),
        );
        for (name, bytes) in files {
            let target = dir.path.join(name);
            // Parent directories inside the working directory, created by us (never followed
            // links: nothing else has written here yet).
            let mut parent = dir.path.clone();
            let rel_parent = Path::new(name).parent().unwrap_or(Path::new(""));
            for c in rel_parent.components() {
                if let Component::Normal(p) = c {
                    parent.push(p);
                    if !parent.is_dir() {
                        std::fs::DirBuilder::new()
                            .mode(0o700)
                            .create(&parent)
                            .map_err(|e| {
                                crate::io_err(format!("creating {}", parent.display()), e)
                            })?;
                        chown(&parent)?;
                    }
                }
            }
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&target)
                .map_err(|e| crate::io_err(format!("creating {}", target.display()), e))?;
            std::io::Write::write_all(&mut f, bytes)
                .map_err(|e| crate::io_err(format!("writing {}", target.display()), e))?;
            chown(&target)?;
        }
        Ok(dir)
    }

    /// Removes the directory and everything in it.
    pub(crate) fn remove(&mut self) -> Result<(), SandboxError> {
        if self.removed {
            return Ok(());
        }
        remove_tree(&self.path).map_err(|e| {
            crate::io_err(
                format!("removing the working directory {}", self.path.display()),
                e,
            )
        })?;
        self.removed = true;
        Ok(())
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = self.remove();
    }
}

fn cstr(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Opens directory `name` in `parent` without following a link, and makes it 0700 (a non-root
/// caller needs rwx to list and empty a directory the program locked).
fn open_dir(parent: libc::c_int, name: &CStr) -> io::Result<OwnedFd> {
    let open = || {
        // SAFETY: name is a valid C string; parent is a directory fd or AT_FDCWD.
        check(unsafe {
            libc::openat(
                parent,
                name.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        })
    };
    let fd = match open() {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::EACCES) => {
            // Not a link (that would be ELOOP): a directory without read permission.
            // SAFETY: as above.
            unsafe { libc::fchmodat(parent, name.as_ptr(), 0o700, 0) };
            open()?
        }
        Err(e) => return Err(e),
    };
    // SAFETY: a new descriptor; fchmod on it is best effort.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    unsafe { libc::fchmod(fd.as_raw_fd(), 0o700) };
    Ok(fd)
}

/// The entries of directory `dir` (without `.` and `..`): name and whether it is a directory.
fn entries(dir: &OwnedFd) -> io::Result<Vec<(CString, bool)>> {
    // SAFETY: dup of a valid fd; fdopendir takes ownership of the duplicate.
    let dup = check(unsafe { libc::fcntl(dir.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) })?;
    let stream = unsafe { libc::fdopendir(dup) };
    if stream.is_null() {
        let e = io::Error::last_os_error();
        unsafe { libc::close(dup) };
        return Err(e);
    }
    // SAFETY: rewind to the start: the fd may have been read before.
    unsafe { libc::rewinddir(stream) };
    let mut out = Vec::new();
    loop {
        // SAFETY: stream is a valid DIR*.
        let ent = unsafe { libc::readdir(stream) };
        if ent.is_null() {
            break;
        }
        // SAFETY: d_name is NUL-terminated.
        let name = unsafe { CStr::from_ptr((*ent).d_name.as_ptr()) };
        let bytes = name.to_bytes();
        if bytes == b"." || bytes == b".." {
            continue;
        }
        let is_dir = match unsafe { (*ent).d_type } {
            libc::DT_DIR => true,
            libc::DT_UNKNOWN => {
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                let r = unsafe {
                    libc::fstatat(
                        dir.as_raw_fd(),
                        name.as_ptr(),
                        &mut st,
                        libc::AT_SYMLINK_NOFOLLOW,
                    )
                };
                r == 0 && st.st_mode & libc::S_IFMT == libc::S_IFDIR
            }
            _ => false,
        };
        out.push((name.to_owned(), is_dir));
    }
    // SAFETY: closes dup as well.
    unsafe { libc::closedir(stream) };
    Ok(out)
}

/// Removes `path` and everything beneath it. Each round empties the top directory: files go,
/// empty directories go, and the entries of a non-empty directory are renamed into the top
/// directory (one level up) before it goes, so depth never needs a stack or a long path.
pub(crate) fn remove_tree(path: &Path) -> io::Result<()> {
    let c = cstr(path)?;
    let top = match open_dir(libc::AT_FDCWD, &c) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(()),
        Err(e) => return Err(e),
    };
    let mut moved: u64 = 0;
    loop {
        let list = entries(&top)?;
        if list.is_empty() {
            break;
        }
        for (name, is_dir) in list {
            if !is_dir {
                check(unsafe { libc::unlinkat(top.as_raw_fd(), name.as_ptr(), 0) })?;
                continue;
            }
            let sub = open_dir(top.as_raw_fd(), &name)?;
            for (inner, inner_is_dir) in entries(&sub)? {
                if inner_is_dir {
                    // Moving a directory rewrites its `..`: it needs write permission. (Only
                    // for a directory: chmod follows links, and the program is dead, so the
                    // entry cannot have become one.)
                    // SAFETY: valid fd and C string.
                    unsafe { libc::fchmodat(sub.as_raw_fd(), inner.as_ptr(), 0o700, 0) };
                }
                loop {
                    moved += 1;
                    let fresh = CString::new(format!(".rlvr-rm-{moved}"))
                        .map_err(|_| io::Error::other("NUL in a generated name"))?;
                    // SAFETY: valid fds and C strings.
                    let r = unsafe {
                        libc::syscall(
                            libc::SYS_renameat2,
                            sub.as_raw_fd(),
                            inner.as_ptr(),
                            top.as_raw_fd(),
                            fresh.as_ptr(),
                            libc::RENAME_NOREPLACE,
                        )
                    };
                    if r == 0 {
                        break;
                    }
                    let e = io::Error::last_os_error();
                    if e.raw_os_error() != Some(libc::EEXIST) {
                        return Err(e);
                    }
                }
            }
            drop(sub);
            check(unsafe { libc::unlinkat(top.as_raw_fd(), name.as_ptr(), libc::AT_REMOVEDIR) })?;
        }
    }
    drop(top);
    check(unsafe { libc::rmdir(c.as_ptr()) })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(files: &[&str]) -> Program {
        Program {
            files: files
                .iter()
                .map(|n| (n.to_string(), b"x".to_vec()))
                .collect(),
            ..Program::default()
        }
    }

    #[test]
    fn file_names_must_stay_inside_the_working_directory() {
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "main.py",
            "./main.py",
            ".",
            "a\0b",
        ] {
            let e = check_names(&program(&[bad])).unwrap_err();
            assert!(
                matches!(e, SandboxError::Config { field: "files", .. }),
                "{bad:?}: {e}"
            );
        }
        assert!(check_names(&program(&["a.txt", "a.txt"])).is_err());
        check_names(&program(&["data.txt", "pkg/mod.py", "./x/y/z.bin"])).unwrap();
    }

    #[test]
    fn deep_locked_trees_with_links_are_removed_without_following_links() {
        let root = std::env::temp_dir();
        let outside = root.join(format!("rlvr-sandbox-rm-outside-{}", std::process::id()));
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("keep"), b"keep").unwrap();
        let mut dir = WorkDir::create(&root, &program(&["a/b/c.txt"]), None).unwrap();
        assert_eq!(std::fs::read(dir.path.join("a/b/c.txt")).unwrap(), b"x");
        // 300 levels, deeper than one path could name with long names.
        let mut p = dir.path.clone();
        let long = "d".repeat(200);
        let mut fd = open_dir(libc::AT_FDCWD, &cstr(&p).unwrap()).unwrap();
        for _ in 0..300 {
            let name = CString::new(long.clone()).unwrap();
            unsafe { libc::mkdirat(fd.as_raw_fd(), name.as_ptr(), 0o700) };
            fd = open_dir(fd.as_raw_fd(), &name).unwrap();
        }
        let f = CString::new("f").unwrap();
        let ffd = unsafe {
            libc::openat(
                fd.as_raw_fd(),
                f.as_ptr(),
                libc::O_CREAT | libc::O_WRONLY,
                0o600,
            )
        };
        assert!(ffd >= 0);
        unsafe { libc::close(ffd) };
        p.push("link");
        std::os::unix::fs::symlink(&outside, &p).unwrap();
        std::fs::set_permissions(dir.path.join("a"), std::fs::Permissions::from_mode(0o000))
            .unwrap();
        dir.remove().unwrap();
        assert!(!dir.path.exists());
        assert_eq!(std::fs::read(outside.join("keep")).unwrap(), b"keep");
        std::fs::remove_dir_all(&outside).unwrap();
    }
}
