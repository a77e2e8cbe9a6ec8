//! Landlock through its raw system calls (`landlock_create_ruleset`, `landlock_add_rule`; the
//! program's process calls `landlock_restrict_self` itself). Constants are the kernel's UAPI
//! (`include/uapi/linux/landlock.h`); the access rights handled are chosen by the ABI version
//! read once in `Sandbox::new`.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use crate::error::SandboxError;

// Filesystem access rights (ABI 1 unless noted).
const FS_EXECUTE: u64 = 1 << 0;
const FS_WRITE_FILE: u64 = 1 << 1;
const FS_READ_FILE: u64 = 1 << 2;
const FS_READ_DIR: u64 = 1 << 3;
const FS_REMOVE_DIR: u64 = 1 << 4;
const FS_REMOVE_FILE: u64 = 1 << 5;
const FS_MAKE_CHAR: u64 = 1 << 6;
const FS_MAKE_DIR: u64 = 1 << 7;
const FS_MAKE_REG: u64 = 1 << 8;
const FS_MAKE_SOCK: u64 = 1 << 9;
const FS_MAKE_FIFO: u64 = 1 << 10;
const FS_MAKE_BLOCK: u64 = 1 << 11;
const FS_MAKE_SYM: u64 = 1 << 12;
/// ABI 2.
const FS_REFER: u64 = 1 << 13;
/// ABI 3.
const FS_TRUNCATE: u64 = 1 << 14;
/// ABI 5.
const FS_IOCTL_DEV: u64 = 1 << 15;

/// Rights that apply to a file (a rule on a non-directory may only grant these).
const FS_FILE_RIGHTS: u64 = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV;

// Network access rights (ABI 4).
const NET_BIND_TCP: u64 = 1 << 0;
const NET_CONNECT_TCP: u64 = 1 << 1;

// Scopes (ABI 6).
const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
const SCOPE_SIGNAL: u64 = 1 << 1;

const CREATE_RULESET_VERSION: libc::c_uint = 1 << 0;
const RULE_PATH_BENEATH: libc::c_int = 1;

/// The newest ABI whose rights this file knows; a newer kernel is used as this one.
const KNOWN_ABI: u32 = 7;

/// `struct landlock_ruleset_attr`; only the first `size` bytes are passed (8 before ABI 4, 16
/// before ABI 6), so an older kernel never sees fields it does not know.
#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

/// `struct landlock_path_beneath_attr` (packed in the UAPI).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// What a rule grants beneath its path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Grant {
    /// Read files, list directories, execute.
    ReadExecute,
    /// Read files only.
    Read,
    /// Read, write and truncate (a device like `/dev/null`).
    ReadWrite,
    /// Every handled right (the working directory).
    Everything,
}

/// The rights handled by a ruleset at one ABI version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Handled {
    pub abi: u32,
    pub fs: u64,
    pub net: u64,
    pub scoped: u64,
}

impl Handled {
    /// The rights of ABI `abi` (a newer one is treated as [`KNOWN_ABI`]).
    pub(crate) fn for_abi(abi: u32) -> Handled {
        let used = abi.min(KNOWN_ABI);
        let mut fs = FS_EXECUTE
            | FS_WRITE_FILE
            | FS_READ_FILE
            | FS_READ_DIR
            | FS_REMOVE_DIR
            | FS_REMOVE_FILE
            | FS_MAKE_CHAR
            | FS_MAKE_DIR
            | FS_MAKE_REG
            | FS_MAKE_SOCK
            | FS_MAKE_FIFO
            | FS_MAKE_BLOCK
            | FS_MAKE_SYM;
        if used >= 2 {
            fs |= FS_REFER;
        }
        if used >= 3 {
            fs |= FS_TRUNCATE;
        }
        if used >= 5 {
            fs |= FS_IOCTL_DEV;
        }
        let net = if used >= 4 {
            NET_BIND_TCP | NET_CONNECT_TCP
        } else {
            0
        };
        let scoped = if used >= 6 {
            SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        } else {
            0
        };
        Handled {
            abi,
            fs,
            net,
            scoped,
        }
    }

    /// Bytes of [`RulesetAttr`] this ABI reads.
    fn attr_size(&self) -> usize {
        if self.abi >= 6 {
            24
        } else if self.abi >= 4 {
            16
        } else {
            8
        }
    }

    /// The rights `grant` gives on a directory (`dir`) or a file.
    fn rights(&self, grant: Grant, dir: bool) -> u64 {
        let wanted = match grant {
            Grant::ReadExecute => FS_EXECUTE | FS_READ_FILE | FS_READ_DIR,
            Grant::Read => FS_READ_FILE | FS_READ_DIR,
            Grant::ReadWrite => FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE,
            Grant::Everything => u64::MAX,
        };
        let applicable = if dir { u64::MAX } else { FS_FILE_RIGHTS };
        wanted & applicable & self.fs
    }
}

/// The Landlock ABI version of the running kernel, or why there is none.
pub(crate) fn abi() -> Result<u32, SandboxError> {
    // SAFETY: landlock_create_ruleset(NULL, 0, VERSION) only returns a number.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    if v >= 1 {
        return Ok(v as u32);
    }
    let err = io::Error::last_os_error();
    let why = match err.raw_os_error() {
        Some(libc::ENOSYS) => format!(
            "the kernel has no Landlock ({err}); Linux >= 5.13 built with \
             CONFIG_SECURITY_LANDLOCK is required"
        ),
        Some(libc::EOPNOTSUPP) => format!(
            "Landlock is built into the kernel but disabled ({err}); add `landlock` to the \
             kernel's `lsm=` boot parameter"
        ),
        _ => format!("landlock_create_ruleset(version) failed: {err}"),
    };
    Err(SandboxError::Unavailable {
        what: "Landlock filesystem isolation",
        why,
    })
}

/// The rules of every run but the working directory, fixed in `Sandbox::new`.
#[derive(Clone, Debug)]
pub(crate) struct Rules {
    pub handled: Handled,
    pub paths: Vec<(PathBuf, Grant)>,
}

impl Rules {
    /// A ruleset with these rules plus `Everything` beneath `work_dir`. The fd is close-on-exec
    /// and at 3 or above.
    pub(crate) fn ruleset(&self, work_dir: &Path) -> Result<OwnedFd, SandboxError> {
        let attr = RulesetAttr {
            handled_access_fs: self.handled.fs,
            handled_access_net: self.handled.net,
            scoped: self.handled.scoped,
        };
        // SAFETY: attr outlives the call; the size passed is at most its size.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                &attr as *const RulesetAttr,
                self.handled.attr_size(),
                0 as libc::c_uint,
            )
        };
        if fd < 0 {
            return Err(SandboxError::Io {
                what: format!(
                    "creating a Landlock ruleset (ABI {}, fs {:#x}, net {:#x}, scoped {:#x})",
                    self.handled.abi, self.handled.fs, self.handled.net, self.handled.scoped
                ),
                source: io::Error::last_os_error(),
            });
        }
        // SAFETY: fd is a new descriptor this function owns.
        let ruleset = crate::fds::above_stdio(unsafe { OwnedFd::from_raw_fd(fd as i32) })
            .map_err(|e| crate::io_err("moving the Landlock ruleset above fd 2", e))?;
        for (path, grant) in &self.paths {
            self.add(&ruleset, path, *grant, false)?;
        }
        self.add(&ruleset, work_dir, Grant::Everything, true)?;
        Ok(ruleset)
    }

    /// Adds one path rule. A path that no longer exists is skipped unless `required`.
    fn add(
        &self,
        ruleset: &OwnedFd,
        path: &Path,
        grant: Grant,
        required: bool,
    ) -> Result<(), SandboxError> {
        let c = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| {
            crate::io_err(
                format!("Landlock rule for {}", path.display()),
                io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"),
            )
        })?;
        // SAFETY: c is a valid C string.
        let raw = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
        if raw < 0 {
            let err = io::Error::last_os_error();
            if !required && err.raw_os_error() == Some(libc::ENOENT) {
                return Ok(());
            }
            return Err(crate::io_err(
                format!("opening {} for a Landlock rule", path.display()),
                err,
            ));
        }
        // SAFETY: raw is a new descriptor.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: stat is plain data; fd is valid.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            return Err(crate::io_err(
                format!("fstat of {} for a Landlock rule", path.display()),
                io::Error::last_os_error(),
            ));
        }
        let dir = st.st_mode & libc::S_IFMT == libc::S_IFDIR;
        let attr = PathBeneathAttr {
            allowed_access: self.handled.rights(grant, dir),
            parent_fd: fd.as_raw_fd(),
        };
        // SAFETY: attr outlives the call; both fds are valid.
        let r = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                ruleset.as_raw_fd(),
                RULE_PATH_BENEATH,
                &attr as *const PathBeneathAttr,
                0 as libc::c_uint,
            )
        };
        if r != 0 {
            return Err(crate::io_err(
                format!(
                    "adding the Landlock rule for {} ({grant:?}, {})",
                    path.display(),
                    if dir { "directory" } else { "file" }
                ),
                io::Error::last_os_error(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handled_rights_grow_with_the_abi() {
        let v1 = Handled::for_abi(1);
        assert_eq!(v1.fs, (1 << 13) - 1);
        assert_eq!((v1.net, v1.scoped, v1.attr_size()), (0, 0, 8));
        assert_eq!(Handled::for_abi(3).fs, (1 << 15) - 1);
        let v4 = Handled::for_abi(4);
        assert_eq!((v4.net, v4.scoped, v4.attr_size()), (3, 0, 16));
        assert_eq!(Handled::for_abi(5).fs, (1 << 16) - 1);
        let v6 = Handled::for_abi(6);
        assert_eq!((v6.net, v6.scoped, v6.attr_size()), (3, 3, 24));
        // A future ABI handles what this crate knows, and says which ABI it runs on.
        let v9 = Handled::for_abi(9);
        assert_eq!((v9.abi, v9.fs, v9.net, v9.scoped), (9, v6.fs, 3, 3));
    }

    #[test]
    fn file_rules_grant_only_file_rights() {
        let h = Handled::for_abi(7);
        assert_eq!(
            h.rights(Grant::ReadExecute, false),
            FS_EXECUTE | FS_READ_FILE
        );
        assert_eq!(h.rights(Grant::Everything, false), FS_FILE_RIGHTS);
        assert_eq!(h.rights(Grant::Everything, true), h.fs);
        // Without TRUNCATE handled (ABI 2), a device rule does not name it.
        assert_eq!(
            Handled::for_abi(2).rights(Grant::ReadWrite, false),
            FS_READ_FILE | FS_WRITE_FILE
        );
    }

    #[test]
    fn the_kernel_here_has_landlock() {
        assert!(abi().unwrap() >= 1);
    }
}
