//! Checks of configuration values, each error naming the field as written in configs and the
//! values it accepts.

use std::time::Duration;

use crate::config::{Limits, SandboxConfig};
use crate::error::SandboxError;

/// Python 3.11 maps about 30 MiB at start-up; below this it cannot start.
pub(crate) const MIN_MEMORY: u64 = 64 << 20;
/// The longest wall-clock limit accepted (one day).
pub(crate) const MAX_WALL: Duration = Duration::from_secs(86_400);
/// The interpreter opens a few files while starting; fewer fds than this and it cannot start.
pub(crate) const MIN_OPEN_FILES: u32 = 8;

fn bad(field: &'static str, value: String, expected: &'static str) -> SandboxError {
    SandboxError::Config {
        field,
        value,
        expected,
    }
}

/// The sandbox's configuration, limits included.
pub(crate) fn config(c: &SandboxConfig) -> Result<(), SandboxError> {
    if c.concurrency == 0 {
        return Err(bad("concurrency", "0".into(), "at least 1"));
    }
    limits(&c.limits)
}

/// One set of limits (the sandbox's, or a program's own).
pub(crate) fn limits(l: &Limits) -> Result<(), SandboxError> {
    if l.wall_time.is_zero() || l.wall_time > MAX_WALL {
        return Err(bad(
            "limits.wall_time",
            format!("{} s", l.wall_time.as_secs_f64()),
            "more than 0 seconds and at most 86400 (one day)",
        ));
    }
    if l.cpu_time.is_zero() || l.cpu_time > MAX_WALL {
        return Err(bad(
            "limits.cpu_time",
            format!("{} s", l.cpu_time.as_secs_f64()),
            "more than 0 seconds (rounded up to whole seconds, so at least 1) and at most 86400",
        ));
    }
    if l.memory_bytes < MIN_MEMORY {
        return Err(bad(
            "limits.memory_bytes",
            l.memory_bytes.to_string(),
            "at least 67108864 (64 MiB: Python needs about 30 MiB of address space to start)",
        ));
    }
    if l.output_bytes == 0 {
        return Err(bad("limits.output_bytes", "0".into(), "at least 1"));
    }
    if l.max_processes < 2 {
        return Err(bad(
            "limits.max_processes",
            l.max_processes.to_string(),
            "at least 2 (the program's process and one more)",
        ));
    }
    if l.max_open_files < MIN_OPEN_FILES {
        return Err(bad(
            "limits.max_open_files",
            l.max_open_files.to_string(),
            "at least 8 (the interpreter opens a few files while starting)",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(r: Result<(), SandboxError>) -> &'static str {
        match r {
            Err(SandboxError::Config { field, .. }) => field,
            other => panic!("expected a config error, got {other:?}"),
        }
    }

    #[test]
    fn defaults_are_valid() {
        config(&SandboxConfig::default()).unwrap();
    }

    #[test]
    fn each_bad_value_names_its_field() {
        let c = SandboxConfig {
            concurrency: 0,
            ..SandboxConfig::default()
        };
        assert_eq!(field(config(&c)), "concurrency");
        let with = |f: fn(&mut Limits)| {
            let mut l = Limits::default();
            f(&mut l);
            field(limits(&l))
        };
        assert_eq!(with(|l| l.wall_time = Duration::ZERO), "limits.wall_time");
        assert_eq!(
            with(|l| l.wall_time = Duration::from_secs(100_000)),
            "limits.wall_time"
        );
        assert_eq!(with(|l| l.cpu_time = Duration::ZERO), "limits.cpu_time");
        assert_eq!(with(|l| l.memory_bytes = 32 << 20), "limits.memory_bytes");
        assert_eq!(with(|l| l.output_bytes = 0), "limits.output_bytes");
        assert_eq!(with(|l| l.max_processes = 1), "limits.max_processes");
        assert_eq!(with(|l| l.max_open_files = 3), "limits.max_open_files");
        // The smallest accepted values.
        let mut l = Limits {
            wall_time: Duration::from_millis(1),
            cpu_time: Duration::from_millis(1),
            memory_bytes: MIN_MEMORY,
            output_bytes: 1,
            max_processes: 2,
            max_file_bytes: 0,
            max_open_files: MIN_OPEN_FILES,
        };
        limits(&l).unwrap();
        l.memory_bytes -= 1;
        assert!(limits(&l).is_err());
    }
}
