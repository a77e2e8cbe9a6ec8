//! The response's final Python code block.
//!
//! A fence is a line that starts (after any indentation) with three or more backticks; the rest
//! of the line is the info string, whose first word is the language. A block is closed by a
//! line holding only backticks (at least as many as opened it) and whitespace. Blocks are found
//! in one pass; fences inside an open block are content, as in Markdown.
//!
//! * Only **Python** blocks are candidates: language `python`, `py`, `python3` (any case) or
//!   none. A ```` ```text ```` block with sample output after the code does not hide the code.
//! * The **last** candidate wins (a final answer after drafts).
//! * An **unterminated** last fence (the response was cut off, or the model forgot to close it)
//!   still counts: its block runs to the end of the response. The code is judged as written — a
//!   program cut in half usually fails the syntax check, which is the honest verdict.
//! * The fence's indentation is removed from the block's lines (a block inside a list item).
//!
//! The scan is linear in the response's length.

/// A code block found in a response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeBlock {
    /// The block's content, without the fences.
    pub code: String,
    /// The language of the info string, lower-cased (`""` when there was none).
    pub language: String,
    /// False when the response ended before the closing fence.
    pub terminated: bool,
}

/// Why no Python block was found (for the `NoCode` reason).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Missing {
    /// No fenced block at all.
    NoBlock,
    /// Fenced blocks, none of them Python: their languages, in order.
    OtherLanguages(Vec<String>),
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Missing::NoBlock => f.write_str("the response has no fenced code block"),
            Missing::OtherLanguages(langs) => write!(
                f,
                "the response has no Python code block (its blocks are: {})",
                langs.join(", ")
            ),
        }
    }
}

/// Is `language` (lower-cased) a Python block?
pub fn is_python(language: &str) -> bool {
    matches!(language, "" | "python" | "py" | "python3")
}

/// An opening or closing fence: (indentation in bytes, backtick count, rest of the line).
fn fence(line: &str) -> Option<(usize, usize, &str)> {
    let trimmed = line.trim_start();
    let indent = line.len() - trimmed.len();
    let ticks = trimmed.bytes().take_while(|&b| b == b'`').count();
    (ticks >= 3).then(|| (indent, ticks, &trimmed[ticks..]))
}

/// Removes up to `indent` leading whitespace characters (the fence's indentation).
fn dedent(line: &str, indent: usize) -> &str {
    let cut = line
        .char_indices()
        .take(indent)
        .take_while(|&(_, c)| c == ' ' || c == '\t')
        .last()
        .map_or(0, |(i, c)| i + c.len_utf8());
    &line[cut..]
}

/// The response's final Python code block, or why there is none.
pub fn final_code_block(response: &str) -> Result<CodeBlock, Missing> {
    struct Open {
        indent: usize,
        ticks: usize,
        language: String,
        lines: Vec<String>,
    }
    let mut open: Option<Open> = None;
    let mut last: Option<CodeBlock> = None;
    let mut other = Vec::new();
    let mut finish = |o: Open, terminated: bool, last: &mut Option<CodeBlock>| {
        if is_python(&o.language) {
            let mut code = o.lines.join("\n");
            if !o.lines.is_empty() {
                code.push('\n');
            }
            *last = Some(CodeBlock {
                code,
                language: o.language,
                terminated,
            });
        } else {
            other.push(o.language);
        }
    };
    for raw in response.split('\n') {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        match &mut open {
            Some(o) => match fence(line) {
                Some((_, ticks, rest)) if ticks >= o.ticks && rest.trim().is_empty() => {
                    if let Some(o) = open.take() {
                        finish(o, true, &mut last);
                    }
                }
                _ => {
                    let content = dedent(line, o.indent).to_string();
                    o.lines.push(content);
                }
            },
            None => {
                if let Some((indent, ticks, rest)) = fence(line) {
                    // A line of backticks with text after more backticks (```x```) is inline
                    // code, not a fence.
                    if rest.contains('`') {
                        continue;
                    }
                    let language = rest
                        .split_whitespace()
                        .next()
                        .unwrap_or("")
                        .trim_start_matches('{')
                        .trim_start_matches('.')
                        .trim_end_matches('}')
                        .to_lowercase();
                    open = Some(Open {
                        indent,
                        ticks,
                        language,
                        lines: Vec::new(),
                    });
                }
            }
        }
    }
    if let Some(o) = open.take() {
        finish(o, false, &mut last);
    }
    match last {
        Some(block) => Ok(block),
        None if other.is_empty() => Err(Missing::NoBlock),
        None => Err(Missing::OtherLanguages(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(response: &str) -> String {
        final_code_block(response).unwrap().code
    }

    #[test]
    fn takes_the_final_python_block() {
        let r = "Draft:\n```python\nprint(1)\n```\nFinal:\n```python\nprint(2)\n```\nDone.";
        assert_eq!(code(r), "print(2)\n");
        let r = "```py\nx = 1\n```";
        assert_eq!(code(r), "x = 1\n");
        let r = "```Python3\nx = 1\n```";
        assert_eq!(final_code_block(r).unwrap().language, "python3");
        let r = "```\nx = 1\n```";
        assert_eq!(code(r), "x = 1\n");
    }

    #[test]
    fn other_languages_do_not_hide_the_code() {
        let r = "```python\nprint(input())\n```\nSample run:\n```text\n5\n```\n";
        assert_eq!(code(r), "print(input())\n");
        let r = "```cpp\nint main() {}\n```\n```bash\nls\n```";
        assert_eq!(
            final_code_block(r),
            Err(Missing::OtherLanguages(vec!["cpp".into(), "bash".into()]))
        );
        assert_eq!(final_code_block("no code here"), Err(Missing::NoBlock));
        assert_eq!(final_code_block(""), Err(Missing::NoBlock));
    }

    #[test]
    fn unterminated_last_fence_runs_to_the_end() {
        let r = "```python\nprint(1)\n```\n```python\nfor i in range(3):\n    print(i)";
        let b = final_code_block(r).unwrap();
        assert!(!b.terminated);
        assert_eq!(b.code, "for i in range(3):\n    print(i)\n");
        // An opening fence with nothing after it: an empty block.
        let b = final_code_block("text\n```python").unwrap();
        assert_eq!(b.code, "");
        assert!(!b.terminated);
    }

    #[test]
    fn fences_inside_a_block_and_longer_fences() {
        // A four-backtick block holds a three-backtick fence as content.
        let r = "````python\ns = '''\n```\n'''\nprint(s)\n````";
        assert_eq!(code(r), "s = '''\n```\n'''\nprint(s)\n");
        // A closing fence needs only backticks on its line.
        let r = "```python\nprint('```x')\n```";
        assert_eq!(code(r), "print('```x')\n");
    }

    #[test]
    fn indentation_crlf_and_inline_code() {
        let r = "1. Code:\n   ```python\n   def f():\n       return 1\n   ```\n";
        assert_eq!(code(r), "def f():\n    return 1\n");
        let r = "```python\r\nprint(1)\r\n```\r\n";
        assert_eq!(code(r), "print(1)\n");
        // ```x``` on one line is inline code: not a fence.
        let r = "Use ```print()``` like this.\n```python\nprint(3)\n```";
        assert_eq!(code(r), "print(3)\n");
        // Pandoc-style info strings.
        let r = "``` {.python}\nprint(4)\n```";
        assert_eq!(code(r), "print(4)\n");
    }

    #[test]
    fn a_megabyte_of_fences_is_linear() {
        let r = "```python\n".repeat(100_000);
        let b = final_code_block(&r).unwrap();
        // One block opened by the first fence; the others are its content (unterminated).
        assert!(!b.terminated);
        let r = "```\n".repeat(200_000);
        assert!(final_code_block(&r).is_ok());
    }
}
