//! The process's peak resident memory, per phase.
//!
//! Linux keeps the peak resident set size of a process (`VmHWM` in `/proc/self/status`) and
//! resets it to the current size when `5` is written to `/proc/self/clear_refs` (Linux ≥ 4.0,
//! `proc(5)`). [`PhasePeak::start`] resets it and [`PhasePeak::peak_mb`] reads it, so a phase's
//! value is the largest resident size the process had while the phase ran — including what
//! earlier phases still hold (weights, optimizer moments, memory the allocator keeps mapped for
//! reuse), which is what decides whether a job fits. Elsewhere, or where `/proc` cannot be
//! written, the value is `None` (or, if only the reset fails, the process's lifetime peak: see
//! [`PhasePeak::is_per_phase`]). Device memory of GPU backends is not counted here.

use std::fs;

/// A phase's peak resident memory: reset at the start, read at the end.
#[derive(Clone, Copy, Debug)]
pub struct PhasePeak {
    reset: bool,
}

impl PhasePeak {
    /// Resets the process's peak to its current resident size (where the OS allows it).
    pub fn start() -> Self {
        Self {
            reset: fs::write("/proc/self/clear_refs", "5").is_ok(),
        }
    }

    /// Whether the peak was reset at [`PhasePeak::start`]: false means [`PhasePeak::peak_mb`]
    /// is the peak since the process started.
    pub fn is_per_phase(&self) -> bool {
        self.reset
    }

    /// The peak resident size since [`PhasePeak::start`], in MiB; `None` where the OS does not
    /// report it.
    pub fn peak_mb(&self) -> Option<f64> {
        peak_rss_bytes().map(|b| b as f64 / (1u64 << 20) as f64)
    }
}

/// What a phase cost: its wall-clock seconds and the process's peak resident memory while it
/// ran ([`PhasePeak`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct PhaseCost {
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Peak resident memory in MiB (`None` where the OS does not report it).
    pub peak_mb: Option<f64>,
}

/// Runs `phase` and returns its result with what it cost: the one way a step times and
/// measures its phases.
pub fn measured<T>(phase: impl FnOnce() -> T) -> (T, PhaseCost) {
    let peak = PhasePeak::start();
    let t = std::time::Instant::now();
    let out = phase();
    let cost = PhaseCost {
        seconds: t.elapsed().as_secs_f64(),
        peak_mb: peak.peak_mb(),
    };
    (out, cost)
}

/// `VmHWM` of `/proc/self/status` in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    status_field("VmHWM:")
}

/// `VmRSS` of `/proc/self/status` in bytes.
pub fn rss_bytes() -> Option<u64> {
    status_field("VmRSS:")
}

fn status_field(name: &str) -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    parse_kib(&status, name)
}

/// The value of a `Name:   1234 kB` line of a `/proc/<pid>/status` text, in bytes.
fn parse_kib(status: &str, name: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(name))?;
    let mut parts = line[name.len()..].split_whitespace();
    let value: u64 = parts.next()?.parse().ok()?;
    match parts.next() {
        Some("kB") => Some(value * 1024),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_parse_in_kib() {
        let status = "Name:\tx\nVmPeak:\t  900 kB\nVmHWM:\t  123456 kB\nVmRSS:\t 2048 kB\n";
        assert_eq!(parse_kib(status, "VmHWM:"), Some(123_456 * 1024));
        assert_eq!(parse_kib(status, "VmRSS:"), Some(2048 * 1024));
        assert_eq!(parse_kib(status, "VmSwap:"), None);
        assert_eq!(parse_kib("VmHWM: 12 MB\n", "VmHWM:"), None);
    }

    /// A phase in which 64 MiB are touched peaks at no less than that and no less than the
    /// resident size at its end (Linux only; elsewhere there is nothing to read). Other tests
    /// run in the same process, so only lower bounds can be asserted.
    #[test]
    fn a_phase_peak_sees_memory_touched_in_the_phase() {
        if rss_bytes().is_none() {
            return;
        }
        let phase = PhasePeak::start();
        let buf = vec![1u8; 64 << 20];
        std::hint::black_box(&buf);
        let now = rss_bytes().expect("VmRSS");
        let peak = (phase.peak_mb().expect("VmHWM") * (1u64 << 20) as f64) as u64;
        drop(buf);
        assert!(peak >= 64 << 20 && peak >= now, "peak {peak}, rss {now}");
    }
}
