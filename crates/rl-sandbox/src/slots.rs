//! Concurrency slots: a counting semaphore of `concurrency` slots, each with the outside user id
//! its runs use. As root, every slot owns a uid of its own from a high range, claimed with an
//! `flock`ed file so that no other sandbox (another `Sandbox`, test binary or trainer on the
//! machine) uses it at the same time; otherwise every slot uses the caller's own uid.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use crate::error::SandboxError;

/// First outside uid (and gid) of the slots of a root caller.
pub(crate) const UID_BASE: u32 = 2_000_000_000;
/// How many uids above [`UID_BASE`] may be claimed.
pub(crate) const UID_RANGE: u32 = 1_000_000;

/// One slot: the ids its runs have outside the user namespace.
#[derive(Debug)]
pub(crate) struct Slot {
    pub uid: u32,
    pub gid: u32,
    /// The held lock on this uid (root only); released when the `Sandbox` is dropped.
    _lock: Option<File>,
}

/// The semaphore.
#[derive(Debug)]
pub(crate) struct Slots {
    free: Mutex<Vec<Slot>>,
    available: Condvar,
    in_flight: AtomicUsize,
}

/// A slot in use; returned to the pool on drop.
pub(crate) struct SlotGuard<'a> {
    slots: &'a Slots,
    slot: Option<Slot>,
}

impl SlotGuard<'_> {
    pub(crate) fn slot(&self) -> &Slot {
        // The option is only emptied by drop.
        self.slot.as_ref().expect("slot present until drop")
    }
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            let mut free = self.slots.free.lock().unwrap_or_else(|e| e.into_inner());
            free.push(slot);
            self.slots.in_flight.fetch_sub(1, Ordering::SeqCst);
            drop(free);
            self.slots.available.notify_one();
        }
    }
}

impl Slots {
    /// `n` slots. As root (`effective uid 0`), each claims its own uid under `lock_dir`.
    pub(crate) fn new(n: usize, lock_dir: &Path) -> Result<Slots, SandboxError> {
        // SAFETY: plain getters.
        let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let slots = if euid == 0 {
            claim_uids(n, lock_dir)?
        } else {
            (0..n)
                .map(|_| Slot {
                    uid: euid,
                    gid: egid,
                    _lock: None,
                })
                .collect()
        };
        Ok(Slots {
            free: Mutex::new(slots),
            available: Condvar::new(),
            in_flight: AtomicUsize::new(0),
        })
    }

    /// Blocks until a slot is free and takes it.
    pub(crate) fn acquire(&self) -> SlotGuard<'_> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(slot) = free.pop() {
                self.in_flight.fetch_add(1, Ordering::SeqCst);
                return SlotGuard {
                    slots: self,
                    slot: Some(slot),
                };
            }
            free = self.available.wait(free).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Slots in use now.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// The outside uids of the slots (free ones; all of them when none is in use).
    pub(crate) fn uids(&self) -> Vec<u32> {
        let free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        let mut u: Vec<u32> = free.iter().map(|s| s.uid).collect();
        u.sort_unstable();
        u.dedup();
        u
    }
}

/// The directory of the uid lock files: `/run/rlvr-sandbox-uids` (root-only, one per machine
/// boot, the same whatever `work_root` a sandbox uses) when `/run` exists, else
/// `<work_root>/rlvr-sandbox-uids`.
pub(crate) fn lock_dir(work_root: &Path) -> PathBuf {
    if Path::new("/run").is_dir() {
        PathBuf::from("/run/rlvr-sandbox-uids")
    } else {
        work_root.join("rlvr-sandbox-uids")
    }
}

/// Claims `n` free uids: `UID_BASE + k` for the lowest `k` whose lock file is not locked.
fn claim_uids(n: usize, dir: &Path) -> Result<Vec<Slot>, SandboxError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| {
            crate::io_err(
                format!("creating the uid lock directory {}", dir.display()),
                e,
            )
        })?;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    let mut slots = Vec::with_capacity(n);
    for k in 0..UID_RANGE {
        if slots.len() == n {
            break;
        }
        let path = dir.join(format!("{k}.lock"));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| crate::io_err(format!("opening the uid lock {}", path.display()), e))?;
        // SAFETY: file is open.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            let id = UID_BASE + k;
            slots.push(Slot {
                uid: id,
                gid: id,
                _lock: Some(file),
            });
            continue;
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(crate::io_err(format!("locking {}", path.display()), err));
        }
    }
    if slots.len() < n {
        return Err(SandboxError::Unavailable {
            what: "sandbox user ids",
            why: format!(
                "all {UID_RANGE} uids from {UID_BASE} are held by other sandboxes ({})",
                dir.display()
            ),
        });
    }
    Ok(slots)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_claims_never_share_a_uid_and_a_dropped_claim_is_reused() {
        let dir =
            std::env::temp_dir().join(format!("rlvr-sandbox-uid-test-{}", std::process::id()));
        let a = claim_uids(3, &dir).unwrap();
        let b = claim_uids(2, &dir).unwrap();
        let ua: Vec<u32> = a.iter().map(|s| s.uid).collect();
        let ub: Vec<u32> = b.iter().map(|s| s.uid).collect();
        assert_eq!(ua, vec![UID_BASE, UID_BASE + 1, UID_BASE + 2]);
        assert_eq!(ub, vec![UID_BASE + 3, UID_BASE + 4]);
        drop(a);
        let c = claim_uids(1, &dir).unwrap();
        assert_eq!(c[0].uid, UID_BASE);
        drop((b, c));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn acquire_blocks_at_the_limit_and_counts_in_flight() {
        let slots = Slots {
            free: Mutex::new(
                (0..2)
                    .map(|i| Slot {
                        uid: i,
                        gid: i,
                        _lock: None,
                    })
                    .collect(),
            ),
            available: Condvar::new(),
            in_flight: AtomicUsize::new(0),
        };
        let a = slots.acquire();
        let b = slots.acquire();
        assert_eq!(slots.in_flight(), 2);
        assert_ne!(a.slot().uid, b.slot().uid);
        std::thread::scope(|s| {
            let t = s.spawn(|| slots.acquire().slot().uid);
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert!(!t.is_finished());
            drop(a);
            t.join().unwrap();
        });
        drop(b);
        assert_eq!(slots.in_flight(), 0);
    }
}
