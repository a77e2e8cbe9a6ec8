//! File descriptors of the caller's side: close-on-exec pipes (so that no other process the
//! caller's threads start inherits them across `execve`), kept above the standard streams (so
//! that the program's `dup2` onto 0, 1, 2 never overwrites one of them).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `fd` itself when it is 3 or above, else a close-on-exec duplicate at 3 or above.
pub(crate) fn above_stdio(fd: OwnedFd) -> io::Result<OwnedFd> {
    if fd.as_raw_fd() > 2 {
        return Ok(fd);
    }
    // SAFETY: fd is valid; F_DUPFD_CLOEXEC returns a new descriptor or -1.
    let new = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: new is a descriptor this function owns.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// A close-on-exec pipe (read end, write end), both at 3 or above.
pub(crate) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds has room for two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both are new descriptors owned here.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((above_stdio(r)?, above_stdio(w)?))
}

/// Sets O_NONBLOCK on `fd` (the caller's ends only: the program's ends stay blocking).
pub(crate) fn set_nonblocking(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: fd is valid.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    if flags < 0
        || unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0
    {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
