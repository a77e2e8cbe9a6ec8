use super::*;

/// A fresh temporary folder, removed when dropped.
fn tmp(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("rl-datamix-{name}-"))
        .tempdir()
        .unwrap()
}

#[test]
fn synthetic_domains_have_their_known_character() {
    let al = alphabet();
    assert_eq!(al.len(), 64);
    let a = generate(&Source::Arithmetic {}, 600, 1);
    for e in a.split_whitespace().filter(|e| e.len() == 5) {
        let b = e.as_bytes();
        let (x, y, z) = (
            (b[0] - b'0') as u32,
            (b[2] - b'0') as u32,
            (b[4] - b'0') as u32,
        );
        let want = if b[1] == b'+' {
            (x + y) % 10
        } else {
            (x * y) % 10
        };
        assert_eq!(z, want, "{e}");
    }
    // The related domain is the same chain on the upper-case letters.
    let m = Source::Markov {
        alphabet: MarkovAlphabet::Lower,
        table_seed: 1,
    };
    let r = Source::Markov {
        alphabet: MarkovAlphabet::Upper,
        table_seed: 1,
    };
    assert_eq!(generate(&m, 500, 9).to_uppercase(), generate(&r, 500, 9));
    // Each context's most likely successor appears with frequency ≈ 0.7.
    let text: Vec<usize> = generate(&m, 100_000, 2)
        .bytes()
        .map(|b| (b - b'a') as usize)
        .collect();
    let table = markov_table(1);
    let top = text
        .windows(3)
        .filter(|w| table[w[0] * 16 + w[1]][0] == w[2])
        .count() as f64
        / (text.len() - 2) as f64;
    assert!((top - 0.7).abs() < 0.01, "{top}");
    let n = generate(&Source::Noise {}, 64_000, 3);
    assert!(n.chars().all(|c| al.contains(&c)));
    let spaces = n.chars().filter(|&c| c == ' ').count() as f64 / 64_000.0;
    assert!((spaces - 1.0 / 64.0).abs() < 0.003);
    // Determinism.
    assert_eq!(
        generate(&Source::Words {}, 300, 4),
        generate(&Source::Words {}, 300, 4)
    );
    let c = corrupt(&"a".repeat(10_000), 0.3, 5);
    let changed = c.chars().filter(|&x| x != 'a').count() as f64 / 10_000.0;
    // A corrupted character is redrawn uniformly, so it stays 'a' with probability 1/64.
    assert!((changed - 0.3 * 63.0 / 64.0).abs() < 0.015, "{changed}");
}

#[test]
fn corpus_of_the_synthetic_suite() {
    let cfg = DataConfig {
        train_chars: 5000,
        val_sequences: 4,
        ..DataConfig::default()
    };
    let c = cfg.build(16, 0, Path::new(".")).unwrap();
    assert_eq!(c.vocab.len(), 64);
    assert_eq!(c.domains.len(), 6);
    for d in &c.domains {
        assert_eq!(d.val.len(), 4);
        assert!(d.val.iter().all(|w| w.len() == 17));
    }
    assert_eq!(c.domains[5].train.len(), 16 * 17);
    assert!(!c.domains[4].target);
    let again = cfg.build(16, 0, Path::new(".")).unwrap();
    assert_eq!(again.domains[1].train, c.domains[1].train);
    assert_eq!(c.vocab.decode(&c.vocab.encode("3+4=7 ")), "3+4=7 ");
}

#[test]
fn files_text_jsonl_and_folders() {
    let tmpdir = tmp("files");
    let dir = tmpdir.path();
    std::fs::write(dir.join("a.txt"), "hello world ".repeat(40)).unwrap();
    let mut jl = String::new();
    for i in 0..40 {
        jl.push_str(&format!("{{\"body\": \"doc number {i} é\"}}\n"));
    }
    std::fs::write(dir.join("b.jsonl"), &jl).unwrap();
    let sub = dir.join("folder");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join("1.txt"), "xyz ".repeat(30)).unwrap();
    std::fs::write(sub.join("2.txt"), "uvw ".repeat(30)).unwrap();
    let file = |name: &str, p: &str, format: FileFormat, field: &str| DomainConfig {
        name: name.into(),
        source: Source::File {
            path: p.into(),
            format,
            field: field.into(),
        },
        corruption: 0.0,
        duplicate: None,
        target: true,
    };
    let cfg = DataConfig {
        domains: vec![
            file("a", "a.txt", FileFormat::Text, "text"),
            file("b", "b.jsonl", FileFormat::Jsonl, "body"),
            file("c", "folder", FileFormat::Text, "text"),
        ],
        val_sequences: 2,
        ..DataConfig::default()
    };
    let c = cfg.build(8, 0, dir).unwrap();
    assert!(c.vocab.encode("é").len() == 1);
    let text = c.vocab.decode(&c.domains[1].train);
    assert!(text.starts_with("doc number 0 é\ndoc number 1"), "{text}");
    let folder = c.vocab.decode(&c.domains[2].train);
    assert!(folder.starts_with("xyz") && folder.contains("uvw"));

    // Malformed JSON lines are reported with their numbers.
    std::fs::write(
        dir.join("bad.jsonl"),
        "{\"text\": \"ok\"}\nnot json\n\n{\"other\": 1}\n[1]\n",
    )
    .unwrap();
    let e = read_domain_file(&dir.join("bad.jsonl"), FileFormat::Jsonl, "text")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("bad.jsonl:2:") && e.contains("3 bad lines") && e.contains("2, 4, 5"),
        "{e}"
    );
    // Too short, missing.
    let short = DataConfig {
        domains: vec![
            file("a", "a.txt", FileFormat::Text, "text"),
            file("s", "missing.txt", FileFormat::Text, "text"),
        ],
        ..DataConfig::default()
    };
    let e = short.build(8, 0, dir).unwrap_err().to_string();
    assert!(e.contains("missing.txt"), "{e}");
    std::fs::write(dir.join("tiny.txt"), "abc").unwrap();
    let tiny = DataConfig {
        domains: vec![
            file("a", "a.txt", FileFormat::Text, "text"),
            file("t", "tiny.txt", FileFormat::Text, "text"),
        ],
        ..DataConfig::default()
    };
    let e = tiny.build(8, 0, dir).unwrap_err().to_string();
    assert!(
        e.contains("domain `t`") && e.contains("3 characters"),
        "{e}"
    );
}

#[test]
fn vocab_caps_with_unknown_symbol() {
    let v = Vocab::build(["aaaabbbcc d"].into_iter(), 3);
    assert_eq!(v.len(), 3);
    assert_eq!(v.decode(&v.encode("abcd")), "ab\u{FFFD}\u{FFFD}");
}

#[test]
fn bad_domain_configs_name_the_field() {
    let mut cfg = DataConfig::default();
    cfg.domains[1].name = "arith".into();
    let e = cfg.validate("data").unwrap_err().to_string();
    assert!(e.contains("data.domains[1].name"), "{e}");
    let e = toml::from_str::<DomainConfig>("name = \"x\"\nsource = { kind = \"markov\" }\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("table_seed"), "{e}");
    let e = toml::from_str::<DomainConfig>(
        "name = \"x\"\nsource = { kind = \"noise\" }\ncorrupt = 0.1\n",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("corrupt"), "{e}");
}
