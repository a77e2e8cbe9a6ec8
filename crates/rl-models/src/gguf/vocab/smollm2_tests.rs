use super::tests::{assert_cases_match, assert_vocab_matches, fixture_path};
use super::*;
use crate::gguf::read::GgufFile;
use std::path::PathBuf;

/// The real SmolLM2-135M-Instruct GGUF (`scripts/fetch-smollm2.sh`): its `tokenizer.ggml.*`
/// read from the file, built, and encoding the 1,015 strings as transformers' tokenizer of the
/// same file does (`tools/gguf/gen_tokenizer_fixture.py`).
#[test]
fn smollm2_gguf_cases_match_transformers() {
    let path = std::env::var_os("RLVR_SMOLLM2_GGUF")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let dir = std::env::var_os("RLVR_SMOLLM2_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                        .join(".cache/rlvr-smollm2")
                });
            dir.join("SmolLM2-135M-Instruct.Q4_1.gguf")
        });
    assert!(
        path.is_file(),
        "{} is missing: run bash scripts/fetch-smollm2.sh (or set RLVR_SMOLLM2_GGUF)",
        path.display()
    );
    let file = GgufFile::open(&path).unwrap();
    let vocab = GgufVocab::read(&file).unwrap();
    let text = std::fs::read_to_string(fixture_path("smollm2_tokenizer_cases.json")).unwrap();
    let fixture: Value = serde_json::from_str(&text).unwrap();
    assert_vocab_matches(&vocab, &fixture);
    let (n, phantom) = assert_cases_match(&build_tokenizer(&vocab).unwrap(), &fixture);
    assert!(n >= 1000);
    assert_eq!(phantom, 0);
}
