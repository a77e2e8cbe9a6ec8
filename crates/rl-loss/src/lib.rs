//! rl-loss (work in progress)
