//! rl-trainer (work in progress)
