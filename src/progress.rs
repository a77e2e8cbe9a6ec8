//! How `rlvr train` and the examples show a training run: [`rl_trainer::Run`] reports
//! [`RunEvent`]s and this renders them — setup notes on stdout; on stderr a progress bar on a
//! terminal, else a line every 5 % of the steps, and one line per evaluation. `RLVR_QUIET` (set,
//! any value) silences the step and evaluation lines; workers other than rank 0 show nothing.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};
use rl_trainer::RunEvent;

/// Renders one run's events.
pub struct Progress {
    bar: ProgressBar,
    /// No terminal: lines instead of the bar.
    lines: bool,
    /// Rank 0 (or a single process).
    leader: bool,
    /// `RLVR_QUIET` is set.
    silent: bool,
    /// When and at which step this process started training (for the time left).
    started: Option<(std::time::Instant, usize)>,
}

impl Progress {
    /// A renderer for the worker of rank 0 (`leader`) or another.
    pub fn new(leader: bool) -> Self {
        let terminal = std::io::stderr().is_terminal();
        Self {
            bar: ProgressBar::hidden(),
            lines: !(terminal && leader),
            leader,
            silent: std::env::var_os("RLVR_QUIET").is_some(),
            started: None,
        }
    }

    /// Shows `event`.
    pub fn on_event(&mut self, event: RunEvent<'_>) {
        if let RunEvent::Started { step, .. } = event {
            self.started = Some((std::time::Instant::now(), step));
        }
        match event {
            RunEvent::Started { step, total } if !self.lines => {
                self.bar = ProgressBar::new(total as u64);
                self.bar.set_style(
                    ProgressStyle::with_template(
                        "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} ({eta} left) {msg}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
                self.bar.set_position(step as u64);
            }
            RunEvent::Step {
                metrics: m,
                total,
                last,
            } => {
                let s = m.step;
                if s == 0 {
                    if let Some(e) = &m.eval
                        && !self.lines
                    {
                        self.bar
                            .suspend(|| eprintln!("[eval step 0] {}", e.summary()));
                    }
                    return;
                }
                self.bar.set_position(s as u64);
                self.bar.set_message(format!(
                    "acc {:.3} reward {:+.3} kept {}/{} rounds {} amp {:.2}",
                    m.acc,
                    m.reward_mean,
                    m.groups_kept,
                    m.groups_seen,
                    m.gen_rounds,
                    m.frac_amplified
                ));
                let shown = self.leader && !self.silent;
                let log_every = (total / 20).max(1);
                if self.lines && shown && (s % log_every == 0 || last || m.eval.is_some()) {
                    eprintln!(
                        "step {s:>5}/{total} acc {:.3} reward {:+.3} kept {}/{} rounds {} amp {:.2} loss {:+.4} {:.1}s{}",
                        m.acc,
                        m.reward_mean,
                        m.groups_kept,
                        m.groups_seen,
                        m.gen_rounds,
                        m.frac_amplified,
                        m.loss,
                        m.time_step_s,
                        self.time_left(s, total)
                    );
                }
                if let Some(ev) = &m.eval
                    && shown
                {
                    self.bar
                        .suspend(|| eprintln!("[eval step {s}] {}", ev.summary()));
                }
            }
            RunEvent::Finished => self.bar.finish_and_clear(),
            RunEvent::Note(text) if self.leader => self.bar.suspend(|| println!("{text}")),
            _ => {}
        }
    }

    /// `", 12m30s left"`: the mean time of this process's steps so far times the steps left
    /// (empty before the first step or after the last).
    fn time_left(&self, step: usize, total: usize) -> String {
        let Some((t0, s0)) = self.started else {
            return String::new();
        };
        if step <= s0 || step >= total {
            return String::new();
        }
        let left = t0.elapsed().as_secs_f64() / (step - s0) as f64 * (total - step) as f64;
        let secs = left.round() as u64;
        format!(", {}m{:02}s left", secs / 60, secs % 60)
    }
}
