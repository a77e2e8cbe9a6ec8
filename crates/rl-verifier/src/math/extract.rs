//! Finding the answer in a response (and in a gold string). Every scan is linear in the input.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::AnswerSource;

/// Which `\boxed{}` answers count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoxedMode {
    /// The last top-level `\boxed{}` / `\fbox{}`.
    #[default]
    Last,
    /// The first one.
    First,
    /// Ignore boxes.
    Off,
}

/// Where the `math` verifier looks for the answer, in priority order: boxed, answer line, math
/// delimiters, whole response, final number. The first candidate that parses is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExtractionConfig {
    /// `\boxed{…}` / `\fbox{…}` (nested braces allowed).
    pub boxed: BoxedMode,
    /// The last `Answer: …` or "answer is …" line.
    pub answer_line: bool,
    /// The last `$…$`, `$$…$$`, `\(…\)` or `\[…\]` span.
    pub math_delimiters: bool,
    /// The whole response, when it is short (≤ 512 bytes) and a bare expression (no prose).
    pub whole_response: bool,
    /// The last number in the response, when nothing else is found.
    pub final_number: bool,
}

impl Default for ExtractionConfig {
    fn default() -> Self {
        ExtractionConfig {
            boxed: BoxedMode::Last,
            answer_line: true,
            math_delimiters: true,
            whole_response: true,
            final_number: true,
        }
    }
}

/// A top-level `\boxed{…}` or `\fbox{…}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Boxed<'a> {
    /// Byte offset of the command.
    pub(crate) start: usize,
    /// The content between the braces.
    pub(crate) content: &'a str,
}

fn command_at(bytes: &[u8], i: usize, name: &[u8]) -> bool {
    bytes[i..].starts_with(name)
        && !bytes
            .get(i + name.len())
            .is_some_and(u8::is_ascii_alphabetic)
}

/// All top-level boxes in order (a box inside another box is part of the outer content).
/// Braces are matched with a stack in one pass; escaped braces (`\{`) do not count.
pub(crate) fn find_boxed(s: &str) -> Vec<Boxed<'_>> {
    let bytes = s.as_bytes();
    let mut stack: Vec<(usize, Option<usize>)> = Vec::new();
    // (command start, content start, content end)
    let mut closed: Vec<(usize, usize, usize)> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => {
                let name_len = if command_at(bytes, i, b"\\boxed") {
                    6
                } else if command_at(bytes, i, b"\\fbox") {
                    5
                } else {
                    // Skip the escaped character (`\{`, `\}`, `\\`).
                    i += if bytes.get(i + 1).is_some_and(u8::is_ascii) {
                        2
                    } else {
                        1
                    };
                    continue;
                };
                let mut j = i + name_len;
                while j < bytes.len() && bytes[j] == b' ' {
                    j += 1;
                }
                if bytes.get(j) == Some(&b'{') {
                    stack.push((j, Some(i)));
                    i = j + 1;
                } else {
                    // `\boxed 5`: up to the next space or `$`.
                    let mut k = j;
                    while k < bytes.len() && !matches!(bytes[k], b' ' | b'\n' | b'$' | b'\t') {
                        k += 1;
                    }
                    if k > j {
                        closed.push((i, j, k));
                    }
                    i = k.max(i + 1);
                }
                continue;
            }
            b'{' => stack.push((i, None)),
            b'}' => {
                if let Some((open, Some(cmd))) = stack.pop() {
                    closed.push((cmd, open + 1, i));
                }
            }
            _ => {}
        }
        i += 1;
    }
    closed.sort_unstable();
    let mut out: Vec<Boxed<'_>> = Vec::new();
    let mut last_end = 0usize;
    for (cmd, a, b) in closed {
        if !out.is_empty() && cmd < last_end {
            continue; // nested inside the previous top-level box
        }
        out.push(Boxed {
            start: cmd,
            content: &s[a..b],
        });
        last_end = b;
    }
    out
}

/// The last non-empty math span (`$$…$$`, `$…$`, `\(…\)`, `\[…\]`), in one pass.
pub(crate) fn last_math_span(s: &str) -> Option<&str> {
    let bytes = s.as_bytes();
    let mut last = None;
    let mut i = 0;
    // Once a closer is missing, no later opener of that kind can close either.
    let mut no_dollar = false;
    let mut no_paren = false;
    let mut no_brack = false;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\\' {
            let next = bytes.get(i + 1).copied();
            let (closer, flag) = match next {
                Some(b'(') => ("\\)", &mut no_paren),
                Some(b'[') => ("\\]", &mut no_brack),
                _ => {
                    i += if next.is_some_and(|c| c.is_ascii()) {
                        2
                    } else {
                        1
                    };
                    continue;
                }
            };
            if !*flag {
                if let Some(off) = s[i + 2..].find(closer) {
                    let inner = &s[i + 2..i + 2 + off];
                    if !inner.trim().is_empty() {
                        last = Some(inner);
                    }
                    i = i + 2 + off + 2;
                    continue;
                }
                *flag = true;
            }
            i += 2;
            continue;
        }
        if b == b'$' && !no_dollar {
            let double = bytes.get(i + 1) == Some(&b'$');
            let open = if double { 2 } else { 1 };
            match find_unescaped(s, i + open, if double { "$$" } else { "$" }) {
                Some(end) => {
                    let inner = &s[i + open..end];
                    if !inner.trim().is_empty() {
                        last = Some(inner);
                    }
                    i = end + open;
                }
                None => {
                    no_dollar = true;
                    i += open;
                }
            }
            continue;
        }
        i += 1;
    }
    last
}

/// The byte offset of the next `pat` (made of `$`) at or after `from` that is not escaped.
fn find_unescaped(s: &str, from: usize, pat: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut i = from;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            i += 2;
            continue;
        }
        if bytes[i..].starts_with(pat.as_bytes()) {
            return Some(i);
        }
        i += 1;
    }
    None
}

static ANSWER_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)answer\s*(?:is\s*:?|:)[ \t]*([^\n]*)").expect("static regex")
});
static FINAL_NUMBER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"-?\d+(?:,\d{3})*(?:\.\d+)?").expect("static regex"));

/// The answer in the last `Answer: …` / "answer is …" line: its first math span if it has one,
/// else the line up to the first sentence end, without markdown emphasis.
pub(crate) fn answer_line(s: &str) -> Option<&str> {
    let caps = ANSWER_LINE.captures_iter(s).last()?;
    let line = caps.get(1)?.as_str();
    if let Some(span) = first_math_span(line) {
        return Some(span.trim());
    }
    let line = line.trim().trim_matches('*').trim();
    let line = match line.find(". ") {
        Some(i) => &line[..i],
        None => line,
    };
    let line = line.trim_end_matches('.').trim();
    (!line.is_empty()).then_some(line)
}

fn first_math_span(line: &str) -> Option<&str> {
    for (open, close) in [("\\(", "\\)"), ("\\[", "\\]"), ("$", "$")] {
        let start = if open == "$" {
            find_unescaped(line, 0, "$")
        } else {
            line.find(open)
        };
        if let Some(a) = start {
            let from = a + open.len();
            let end = if close == "$" {
                find_unescaped(line, from, "$").map(|e| e - from)
            } else {
                line[from..].find(close)
            };
            if let Some(b) = end {
                let inner = &line[from..from + b];
                let inner = inner.trim_matches('$');
                if !inner.trim().is_empty() {
                    return Some(inner);
                }
            }
        }
    }
    None
}

/// The last number in the text.
pub(crate) fn final_number(s: &str) -> Option<&str> {
    FINAL_NUMBER.find_iter(s).last().map(|m| m.as_str())
}

/// Longest response tried as a bare expression.
pub(crate) const WHOLE_RESPONSE_MAX: usize = 512;

/// The answer candidates of a response, in priority order.
pub(crate) fn candidates<'a>(s: &'a str, cfg: &ExtractionConfig) -> Vec<(AnswerSource, &'a str)> {
    let mut out = Vec::new();
    if cfg.boxed != BoxedMode::Off {
        let boxes = find_boxed(s);
        let pick = match cfg.boxed {
            BoxedMode::First => boxes.first(),
            _ => boxes.last(),
        };
        if let Some(b) = pick
            && !b.content.trim().is_empty()
        {
            out.push((AnswerSource::Boxed, b.content.trim()));
        }
    }
    if cfg.answer_line
        && let Some(a) = answer_line(s)
    {
        out.push((AnswerSource::AnswerLine, a));
    }
    if cfg.math_delimiters
        && let Some(m) = last_math_span(s)
    {
        out.push((AnswerSource::MathDelimiters, m.trim()));
    }
    if cfg.whole_response {
        let t = s.trim();
        if !t.is_empty() && t.len() <= WHOLE_RESPONSE_MAX {
            out.push((AnswerSource::WholeResponse, t));
        }
    }
    if cfg.final_number
        && let Some(n) = final_number(s)
    {
        out.push((AnswerSource::FinalNumber, n));
    }
    out
}

/// The answer part of a gold string: its last box, else its last math span when the whole
/// string is one, else the string.
pub(crate) fn gold_answer(g: &str) -> &str {
    if let Some(b) = find_boxed(g).last() {
        return b.content.trim();
    }
    let t = g.trim();
    for (open, close) in [("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")] {
        if t.len() >= open.len() + close.len() && t.starts_with(open) && t.ends_with(close) {
            let inner = &t[open.len()..t.len() - close.len()];
            if !inner.contains('$') {
                return inner.trim();
            }
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxes() {
        let b = find_boxed("a \\boxed{1} b \\boxed{\\frac{1}{2}} \\boxed{\\boxed{3}}");
        let c: Vec<&str> = b.iter().map(|b| b.content).collect();
        assert_eq!(c, vec!["1", "\\frac{1}{2}", "\\boxed{3}"]);
        assert_eq!(find_boxed("\\boxed{\\{1,2\\}}")[0].content, "\\{1,2\\}");
        assert_eq!(find_boxed("\\fbox{7} and \\boxed 5 end")[1].content, "5");
        assert!(find_boxed("\\boxed{1").is_empty());
        assert_eq!(find_boxed("\\boxed{ \\boxed{5}")[0].content, "5");
    }

    #[test]
    fn spans_and_lines() {
        assert_eq!(last_math_span("x $a$ y $$b$$ z \\(c\\) w"), Some("c"));
        assert_eq!(last_math_span("costs \\$5 and $x+1$"), Some("x+1"));
        assert_eq!(
            answer_line("Final Answer: The final answer is $42$. I hope"),
            Some("42")
        );
        assert_eq!(answer_line("**Answer:** 7."), Some("7"));
        assert_eq!(final_number("so 3, then 1,234.5 apples"), Some("1,234.5"));
        assert_eq!(gold_answer("$\\frac{1}{2}$"), "\\frac{1}{2}");
        assert_eq!(gold_answer("\\boxed{5}"), "5");
    }
}
