//! Text domains: deterministic synthetic generators of known character, or user files (plain
//! text or JSON lines, one file or folder per domain), turned into character-level token streams.
//!
//! Synthetic generators (all seeded; `H` is the entropy floor in nats per character):
//!
//! | kind | text | role |
//! |---|---|---|
//! | `arithmetic` | `"a+b=c "`, `"a*b=c "` mod 10 | structured, learnable; `H = (2 ln 10 + ln 2)/6 ≈ 0.883` |
//! | `markov` | order-2 chain over 16 letters, each context has 3 successors with probability 0.7/0.2/0.1 | `H = 0.802` |
//! | `markov` with the same `table_seed` on the other alphabet | the same chain on `A–P` | related domain sharing the structure |
//! | `words` | Zipf-distributed words of a 40-word lexicon | with `duplicate = n`: low diversity, memorisable |
//! | `noise` | i.i.d. uniform over the 64-symbol alphabet | unlearnable, `H = ln 64 ≈ 4.159` |
//!
//! Any domain can be corrupted (`corruption = p`: each character replaced by a uniform random
//! symbol with probability `p`) or duplicated (`duplicate = n`: training text is only `n` fixed
//! sequences; validation uses fresh samples of the generator).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::error::{DatamixError, Result};

/// The 64 symbols of the synthetic domains: space, digits, `+*=`, `a–z`, `A–X`.
pub const SYNTHETIC_ALPHABET: &str =
    " 0123456789+*=abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWX";

/// Which 16 letters a Markov domain uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkovAlphabet {
    /// `a–p`.
    #[default]
    Lower,
    /// `A–P`.
    Upper,
}

/// Format of a domain file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileFormat {
    /// The whole file is text.
    #[default]
    Text,
    /// One JSON object per line; the text is in `field`.
    Jsonl,
}

fn default_field() -> String {
    "text".to_string()
}

/// Where a domain's text comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Source {
    /// `"a+b=c "` / `"a*b=c "` expressions mod 10.
    Arithmetic {},
    /// An order-2 Markov chain whose transition table is drawn from `table_seed`.
    Markov {
        /// Letters used.
        #[serde(default)]
        alphabet: MarkovAlphabet,
        /// Seed of the transition table (same seed, other alphabet = related domain).
        table_seed: u64,
    },
    /// Zipf-distributed words of a fixed 40-word lexicon.
    Words {},
    /// Uniform i.i.d. symbols of [`SYNTHETIC_ALPHABET`].
    Noise {},
    /// A file, or every file of a folder (sorted by name).
    File {
        /// The file or folder.
        path: PathBuf,
        /// Plain text or JSON lines.
        #[serde(default)]
        format: FileFormat,
        /// JSON field holding the text (JSON lines only).
        #[serde(default = "default_field")]
        field: String,
    },
}

fn yes() -> bool {
    true
}

/// One domain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DomainConfig {
    /// Name used in metrics (`val/loss/<name>`).
    pub name: String,
    /// Its text.
    pub source: Source,
    /// Probability of replacing each character by a random symbol (0).
    #[serde(default)]
    pub corruption: f32,
    /// Train on only this many fixed sequences (validation stays fresh).
    #[serde(default)]
    pub duplicate: Option<usize>,
    /// Whether the domain counts in the validation target (true; false for noise).
    #[serde(default = "yes")]
    pub target: bool,
}

/// The domains and how much text to make of them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DataConfig {
    /// The domains (K ≥ 2).
    pub domains: Vec<DomainConfig>,
    /// Characters of training text generated per synthetic domain.
    pub train_chars: usize,
    /// Validation sequences per domain.
    pub val_sequences: usize,
    /// For files: fraction of the text (from the end) held out for validation.
    pub val_fraction: f32,
    /// Largest vocabulary; rarer characters of user files map to an unknown symbol.
    pub max_vocab: usize,
}

impl Default for DataConfig {
    fn default() -> Self {
        Self {
            domains: synthetic_domains(),
            train_chars: 200_000,
            val_sequences: 32,
            val_fraction: 0.1,
            max_vocab: 256,
        }
    }
}

/// The six embedded synthetic domains: structured arithmetic, a Markov-2 chain, a related chain
/// sharing its transition table, a noisy copy of the arithmetic (30 % corruption), pure noise
/// (not in the target), and 16 duplicated sequences of the words domain.
pub fn synthetic_domains() -> Vec<DomainConfig> {
    let d = |name: &str, source: Source| DomainConfig {
        name: name.into(),
        source,
        corruption: 0.0,
        duplicate: None,
        target: true,
    };
    vec![
        d("arith", Source::Arithmetic {}),
        d(
            "markov",
            Source::Markov {
                alphabet: MarkovAlphabet::Lower,
                table_seed: 1,
            },
        ),
        d(
            "related",
            Source::Markov {
                alphabet: MarkovAlphabet::Upper,
                table_seed: 1,
            },
        ),
        DomainConfig {
            corruption: 0.3,
            ..d("noisy_arith", Source::Arithmetic {})
        },
        DomainConfig {
            target: false,
            ..d("noise", Source::Noise {})
        },
        DomainConfig {
            duplicate: Some(16),
            ..d("dup_words", Source::Words {})
        },
    ]
}

/// Character vocabulary.
#[derive(Clone, Debug, PartialEq)]
pub struct Vocab {
    chars: Vec<char>,
    unk: Option<u32>,
    index: BTreeMap<char, u32>,
}

impl Vocab {
    /// Builds the vocabulary of `texts`: every character if there are at most `max_size`,
    /// otherwise the `max_size − 1` most frequent plus an unknown symbol.
    pub fn build<'a>(texts: impl Iterator<Item = &'a str>, max_size: usize) -> Self {
        let mut freq: BTreeMap<char, u64> = BTreeMap::new();
        for t in texts {
            for c in t.chars() {
                *freq.entry(c).or_default() += 1;
            }
        }
        let (chars, unk) = if freq.len() <= max_size {
            (freq.keys().copied().collect::<Vec<_>>(), None)
        } else {
            let mut by: Vec<(char, u64)> = freq.into_iter().collect();
            by.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let mut keep: Vec<char> = by
                .iter()
                .take(max_size.saturating_sub(1))
                .map(|x| x.0)
                .collect();
            keep.sort();
            let unk = keep.len() as u32;
            keep.push('\u{FFFD}');
            (keep, Some(unk))
        };
        let index = chars
            .iter()
            .enumerate()
            .map(|(i, &c)| (c, i as u32))
            .collect();
        Self { chars, unk, index }
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.chars.len()
    }

    /// Whether the vocabulary is empty.
    pub fn is_empty(&self) -> bool {
        self.chars.is_empty()
    }

    /// Token ids of `text` (unknown characters map to the unknown symbol, or are dropped if the
    /// vocabulary has none — impossible for text it was built from).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        text.chars()
            .filter_map(|c| self.index.get(&c).copied().or(self.unk))
            .collect()
    }

    /// Text of token ids.
    pub fn decode(&self, ids: &[u32]) -> String {
        ids.iter()
            .map(|&i| self.chars.get(i as usize).copied().unwrap_or('\u{FFFD}'))
            .collect()
    }
}

/// One domain's tokens.
#[derive(Clone, Debug)]
pub struct DomainData {
    /// Its name.
    pub name: String,
    /// Training token stream; sequences are random windows of it.
    pub train: Vec<u32>,
    /// Fixed validation windows of `seq_len + 1` tokens.
    pub val: Vec<Vec<u32>>,
    /// Whether it counts in the validation target.
    pub target: bool,
}

/// All domains, tokenised.
#[derive(Clone, Debug)]
pub struct Corpus {
    /// Character vocabulary.
    pub vocab: Vocab,
    /// The domains, in config order.
    pub domains: Vec<DomainData>,
    /// Model sequence length (windows have `seq_len + 1` tokens).
    pub seq_len: usize,
}

struct Gen {
    rng: ChaCha8Rng,
}

impl Gen {
    fn new(seed: u64) -> Self {
        Self {
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }
}

fn alphabet() -> Vec<char> {
    SYNTHETIC_ALPHABET.chars().collect()
}

fn markov_table(table_seed: u64) -> Vec<[usize; 3]> {
    let mut rng = ChaCha8Rng::seed_from_u64(0x6d61_726b ^ table_seed);
    (0..16 * 16)
        .map(|_| {
            let mut s = [0usize; 3];
            let mut i = 0;
            while i < 3 {
                let c = rng.random_range(0..16);
                if !s[..i].contains(&c) {
                    s[i] = c;
                    i += 1;
                }
            }
            s
        })
        .collect()
}

fn lexicon() -> Vec<String> {
    let mut rng = ChaCha8Rng::seed_from_u64(0x776f_7264);
    (0..40)
        .map(|_| {
            let n = rng.random_range(2..=6);
            (0..n)
                .map(|_| (b'a' + rng.random_range(0..26u8)) as char)
                .collect()
        })
        .collect()
}

/// `n` characters of the generator `source` (not for files), deterministic in `seed`.
fn generate(source: &Source, n: usize, seed: u64) -> String {
    let mut g = Gen::new(seed);
    let mut out = String::with_capacity(n + 16);
    match source {
        Source::Arithmetic {} => {
            while out.len() < n {
                let (a, b) = (g.rng.random_range(0..10u32), g.rng.random_range(0..10u32));
                let (op, c) = if g.rng.random::<bool>() {
                    ('+', (a + b) % 10)
                } else {
                    ('*', (a * b) % 10)
                };
                out.push_str(&format!("{a}{op}{b}={c} "));
            }
        }
        Source::Markov {
            alphabet,
            table_seed,
        } => {
            let base = match alphabet {
                MarkovAlphabet::Lower => b'a',
                MarkovAlphabet::Upper => b'A',
            };
            let table = markov_table(*table_seed);
            let (mut x, mut y) = (
                g.rng.random_range(0..16usize),
                g.rng.random_range(0..16usize),
            );
            while out.len() < n {
                let u: f64 = g.rng.random();
                let succ = table[x * 16 + y];
                let z = if u < 0.7 {
                    succ[0]
                } else if u < 0.9 {
                    succ[1]
                } else {
                    succ[2]
                };
                out.push((base + z as u8) as char);
                (x, y) = (y, z);
            }
        }
        Source::Words {} => {
            let lex = lexicon();
            let weights: Vec<f64> = (0..lex.len()).map(|r| 1.0 / (r + 1) as f64).collect();
            let total: f64 = weights.iter().sum();
            while out.len() < n {
                let mut u = g.rng.random::<f64>() * total;
                let mut pick = lex.len() - 1;
                for (i, w) in weights.iter().enumerate() {
                    u -= w;
                    if u < 0.0 {
                        pick = i;
                        break;
                    }
                }
                out.push_str(&lex[pick]);
                out.push(' ');
            }
        }
        Source::Noise {} => {
            let al = alphabet();
            while out.len() < n {
                out.push(al[g.rng.random_range(0..al.len())]);
            }
        }
        Source::File { .. } => {}
    }
    out.chars().take(n).collect()
}

fn corrupt(text: &str, p: f32, seed: u64) -> String {
    if p <= 0.0 {
        return text.to_string();
    }
    let al = alphabet();
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x636f_7272);
    text.chars()
        .map(|c| {
            if rng.random::<f32>() < p {
                al[rng.random_range(0..al.len())]
            } else {
                c
            }
        })
        .collect()
}

fn io_err(path: &Path, source: std::io::Error) -> DatamixError {
    DatamixError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Reads the text of one domain file: the whole file, or for JSON lines the `field` of every
/// non-empty line joined by newlines. Every malformed line is reported with its number.
pub fn read_domain_file(path: &Path, format: FileFormat, field: &str) -> Result<String> {
    let text = std::fs::read_to_string(path).map_err(|e| io_err(path, e))?;
    match format {
        FileFormat::Text => Ok(text),
        FileFormat::Jsonl => {
            let mut docs = Vec::new();
            let mut bad = Vec::new();
            for (i, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                match serde_json::from_str::<serde_json::Value>(line) {
                    Ok(serde_json::Value::Object(o)) => match o.get(field) {
                        Some(serde_json::Value::String(s)) => docs.push(s.clone()),
                        Some(_) => bad.push((i + 1, format!("field `{field}` is not a string"))),
                        None => bad.push((i + 1, format!("no field `{field}`"))),
                    },
                    Ok(_) => bad.push((i + 1, "not a JSON object".to_string())),
                    Err(e) => bad.push((i + 1, format!("invalid JSON: {e}"))),
                }
            }
            if let Some((line, message)) = bad.first().cloned() {
                let more = if bad.len() > 1 {
                    format!(
                        " ({} bad lines in all: {})",
                        bad.len(),
                        bad.iter()
                            .map(|b| b.0.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                } else {
                    String::new()
                };
                return Err(DatamixError::BadLine {
                    path: path.display().to_string(),
                    line,
                    message: message + &more,
                });
            }
            Ok(docs.join("\n"))
        }
    }
}

fn read_source(path: &Path, format: FileFormat, field: &str) -> Result<String> {
    let meta = std::fs::metadata(path).map_err(|e| io_err(path, e))?;
    if !meta.is_dir() {
        return read_domain_file(path, format, field);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| io_err(path, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    let mut parts = Vec::new();
    for f in &files {
        parts.push(read_domain_file(f, format, field)?);
    }
    Ok(parts.join("\n"))
}

impl DataConfig {
    /// Checks the domain list; `prefix` is the config path.
    pub fn validate(&self, prefix: &str) -> Result<()> {
        if self.domains.len() < 2 {
            return Err(DatamixError::config(
                format!("{prefix}.domains"),
                "need at least 2 domains",
            ));
        }
        let mut names = std::collections::BTreeSet::new();
        for (i, d) in self.domains.iter().enumerate() {
            if d.name.is_empty() || !names.insert(d.name.as_str()) {
                return Err(DatamixError::config(
                    format!("{prefix}.domains[{i}].name"),
                    format!("must be non-empty and unique, got `{}`", d.name),
                ));
            }
            if !(0.0..=1.0).contains(&d.corruption) {
                return Err(DatamixError::config(
                    format!("{prefix}.domains[{i}].corruption"),
                    "must be in [0, 1]",
                ));
            }
            if d.duplicate == Some(0) {
                return Err(DatamixError::config(
                    format!("{prefix}.domains[{i}].duplicate"),
                    "must be >= 1",
                ));
            }
        }
        if !self.domains.iter().any(|d| d.target) {
            return Err(DatamixError::config(
                format!("{prefix}.domains"),
                "at least one domain must have target = true",
            ));
        }
        if self.val_sequences == 0 || self.max_vocab < 2 {
            return Err(DatamixError::config(
                format!("{prefix}.val_sequences"),
                "val_sequences must be >= 1 and max_vocab >= 2",
            ));
        }
        if !(self.val_fraction > 0.0 && self.val_fraction < 1.0) {
            return Err(DatamixError::config(
                format!("{prefix}.val_fraction"),
                "must be in (0, 1)",
            ));
        }
        Ok(())
    }

    /// Generates or reads every domain and tokenises it for sequences of `seq_len` tokens.
    /// Relative file paths are resolved against `base_dir`.
    pub fn build(&self, seq_len: usize, seed: u64, base_dir: &Path) -> Result<Corpus> {
        self.validate("data")?;
        let window = seq_len + 1;
        let val_chars = self.val_sequences * window;
        let mut texts: Vec<(String, String)> = Vec::new();
        for (i, d) in self.domains.iter().enumerate() {
            let s = seed
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                .wrapping_add(i as u64 * 1000);
            let (train, val) = match &d.source {
                Source::File {
                    path,
                    format,
                    field,
                } => {
                    let p = if path.is_absolute() {
                        path.clone()
                    } else {
                        base_dir.join(path)
                    };
                    let all: Vec<char> = read_source(&p, *format, field)?.chars().collect();
                    let n_val = ((all.len() as f64 * self.val_fraction as f64) as usize)
                        .min(val_chars)
                        .max(window);
                    if all.len() < n_val + window {
                        return Err(DatamixError::Data {
                            domain: d.name.clone(),
                            message: format!(
                                "{} has {} characters; need at least {} (two windows of {window})",
                                p.display(),
                                all.len(),
                                n_val + window
                            ),
                        });
                    }
                    let split = all.len() - n_val;
                    let train: String = all[..split].iter().collect();
                    let val: String = all[split..].iter().collect();
                    (
                        corrupt(&train, d.corruption, s),
                        corrupt(&val, d.corruption, s + 1),
                    )
                }
                src => {
                    let train = match d.duplicate {
                        Some(n) => generate(src, n * window, s + 2),
                        None => generate(src, self.train_chars.max(window), s + 2),
                    };
                    let val = generate(src, val_chars, s + 3);
                    (
                        corrupt(&train, d.corruption, s),
                        corrupt(&val, d.corruption, s + 1),
                    )
                }
            };
            texts.push((train, val));
        }
        let synthetic_only = self
            .domains
            .iter()
            .all(|d| !matches!(d.source, Source::File { .. }));
        let vocab = if synthetic_only {
            Vocab::build(std::iter::once(SYNTHETIC_ALPHABET), self.max_vocab)
        } else {
            Vocab::build(
                texts
                    .iter()
                    .flat_map(|(a, b)| [a.as_str(), b.as_str()])
                    .chain(std::iter::once(SYNTHETIC_ALPHABET)),
                self.max_vocab,
            )
        };
        let domains = self
            .domains
            .iter()
            .zip(texts)
            .map(|(d, (train, val))| {
                let train = vocab.encode(&train);
                let val_ids = vocab.encode(&val);
                let val: Vec<Vec<u32>> = val_ids.chunks_exact(window).map(|c| c.to_vec()).collect();
                DomainData {
                    name: d.name.clone(),
                    train,
                    val,
                    target: d.target,
                }
            })
            .collect();
        Ok(Corpus {
            vocab,
            domains,
            seq_len,
        })
    }
}

#[cfg(test)]
mod tests;
