//! `rlvr theory`: DA3PO Theorem 3.1 at one (p, G), optionally checked by Monte Carlo, or a
//! markdown table of γ over grids of p and G (the table in docs/theory.md is generated so).

use rl_advantage::StdMode;
use rl_advantage::theory::{self, SimulationConfig};
use serde_json::json;

use super::{EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK, Io};

/// Arguments of `rlvr theory`.
#[derive(clap::Args, Debug)]
pub struct TheoryArgs {
    /// Group size G (>= 2).
    #[arg(long, default_value_t = 16)]
    pub group_size: usize,
    /// True success rate p, strictly between 0 and 1.
    #[arg(long, default_value_t = 0.1)]
    pub p: f64,
    /// Also estimate alpha+/alpha-/gamma by Monte Carlo over this many groups.
    #[arg(long)]
    pub simulate: Option<usize>,
    /// Seed of the Monte Carlo.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Std used by the simulated z-score: sample (Bessel) or population.
    #[arg(long, default_value = "sample")]
    pub std: String,
    /// Print a markdown table of gamma for every G in --table-group-sizes and p in --table-ps
    /// instead of one JSON object.
    #[arg(long)]
    pub table: bool,
    /// Group sizes of the table.
    #[arg(long, value_delimiter = ',', default_value = "4,8,16,32,64")]
    pub table_group_sizes: Vec<usize>,
    /// Success rates of the table.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0.05,0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,0.95"
    )]
    pub table_ps: Vec<f64>,
}

/// Runs `rlvr theory`.
pub fn run(args: TheoryArgs, io: &mut Io<'_>) -> i32 {
    match run_inner(&args, io) {
        Ok(()) => EXIT_OK,
        Err(Failure::Bad(msg)) => {
            let _ = writeln!(io.stderr, "error: {msg}");
            EXIT_BAD_INPUT
        }
        Err(Failure::Io(e)) => {
            let _ = writeln!(io.stderr, "error: {e}");
            EXIT_FAILURE
        }
    }
}

enum Failure {
    Bad(String),
    Io(std::io::Error),
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Io(e)
    }
}

impl From<rl_advantage::AdvantageError> for Failure {
    fn from(e: rl_advantage::AdvantageError) -> Self {
        Failure::Bad(e.to_string())
    }
}

fn run_inner(args: &TheoryArgs, io: &mut Io<'_>) -> Result<(), Failure> {
    if args.table {
        return table(args, io);
    }
    let a = theory::amplification(args.p, args.group_size)?;
    let mut out = json!({
        "group_size": a.group_size,
        "p": a.p,
        "alpha_plus": a.alpha_plus,
        "alpha_minus": a.alpha_minus,
        "gamma": a.gamma,
    });
    if let Some(groups) = args.simulate {
        let std = StdMode::from_name(&args.std)?;
        let sim = theory::simulate(
            args.p,
            args.group_size,
            &SimulationConfig {
                groups,
                seed: args.seed,
                std,
            },
        )?;
        out["simulated"] = json!({
            "groups": sim.groups,
            "seed": args.seed,
            "std": args.std,
            "kept_groups": sim.kept_groups,
            "alpha_plus": sim.alpha_plus,
            "alpha_plus_se": sim.alpha_plus_se,
            "alpha_minus": sim.alpha_minus,
            "alpha_minus_se": sim.alpha_minus_se,
            "gamma": sim.gamma,
            "gamma_se": sim.gamma_se,
            "mean_adv_correct_unfiltered": sim.mean_adv_correct_unfiltered,
            "mean_adv_correct_filtered": sim.mean_adv_correct_filtered,
            "mean_adv_incorrect_unfiltered": sim.mean_adv_incorrect_unfiltered,
            "mean_adv_incorrect_filtered": sim.mean_adv_incorrect_filtered,
        });
    }
    writeln!(io.stdout, "{out}")?;
    Ok(())
}

fn table(args: &TheoryArgs, io: &mut Io<'_>) -> Result<(), Failure> {
    let mut header = String::from("| G \\ p |");
    let mut rule = String::from("|---|");
    for p in &args.table_ps {
        header.push_str(&format!(" {p} |"));
        rule.push_str("---|");
    }
    writeln!(io.stdout, "{header}")?;
    writeln!(io.stdout, "{rule}")?;
    for &g in &args.table_group_sizes {
        let mut row = format!("| {g} |");
        for &p in &args.table_ps {
            let a = theory::amplification(p, g)?;
            row.push_str(&format!(" {:.3} |", a.gamma));
        }
        writeln!(io.stdout, "{row}")?;
    }
    Ok(())
}
