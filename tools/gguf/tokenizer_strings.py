"""Test strings for the GGUF tokenizer fixtures (`gen_tokenizer_fixture.py`).

`test_strings()` returns the hand-picked strings followed by seeded random compositions of the
same kinds of pieces: words in mixed case, contractions, numbers, whitespace runs, scripts other
than Latin (CJK, Cyrillic, Greek, Arabic, Hebrew, Devanagari, Thai, Korean), emoji (with skin
tones, ZWJ sequences and flags), combining marks, control characters, code and the chat markers of
SmolLM2, Qwen and Llama 3 written inside text. The list is the same on every run (the generator is
`random.Random(SEED)`), so fixtures written from it are reproducible.
"""

import random

SEED = 20261203
N_RANDOM = 900

HAND_PICKED = [
    # plain text, case, contractions
    "Hello world",
    "Hello, world!",
    " Hello world",
    "hello WORLD Hello World hElLo wOrLd",
    "I've been told he's there, 'RE you sure? 'M not sure I'll make it, 'D you like some tea?",
    "We'Ve a'lL don't won't can't shan't y'all o'clock rock'n'roll",
    "IT'S THE DOG'S BONE. They're here; we'd go; you'll see; I'm fine.",
    "'s 't 're 've 'm 'll 'd 'S 'T 'RE 'VE 'M 'LL 'D",
    "don’t (curly apostrophe) vs don't",
    "The quick brown fox jumps over the lazy dog.",
    "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG",
    "camelCaseIdentifier snake_case_name SCREAMING_SNAKE kebab-case-name PascalCase",
    "a",
    "A",
    "?",
    " ",
    "",
    # numbers
    "0",
    "7",
    "42",
    "123",
    "1234",
    "12345",
    "3.14159265358979323846",
    "-17 + 23 = 6",
    "What is 57 + 86? Give only the number.",
    "The answer is 143.",
    "12*12=144",
    "1,000,000 and 1.000.000 and 1 000 000",
    "999999999999999999999999999999999999999999",
    "2026-12-03T21:25:00Z",
    "+1 (555) 010-9999",
    "0x1F 0b1010 0o777 1e-9 6.022e23",
    "v1.2.3-rc.4+build.5",
    "x  123",
    "  1",
    "\n\n42",
    "\t7",
    "  12 apples",
    "Step 1:\n\n23 + 45 = 68\n\n#### 68",
    "²³¹ ½ ¾ Ⅻ ١٢٣ ४२ ๓๔",
    "１２３ full-width digits",
    # whitespace
    "  ",
    "   leading spaces",
    "trailing spaces   ",
    "trailing newline\n",
    "trailing newlines\n\n\n",
    "\n",
    "\n\n",
    "\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n",
    "tabs\tbetween\t\twords\t",
    "line one\r\nline two\r\n",
    "\r\r\n\n\r",
    "mixed \t \n \u00a0 nbsp \u3000 ideographic space",
    "a\u200bb zero width space, a\u200db zwj, a\ufeffb bom",
    "                                                                spaces x64",
    "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t",
    "end with tab\t",
    "word\n    indented\n        more",
    # unicode
    "我想在apple工作1314151天～",
    "你好，世界！这是一个测试。",
    "日本語のテキストとカタカナ、ひらがな。",
    "한국어 텍스트입니다.",
    "нещо на Български и русский текст",
    "Ελληνικά γράμματα αβγδε ΑΒΓΔΕ",
    "مرحبا بالعالم، هذا نص عربي.",
    "שלום עולם, זה טקסט בעברית.",
    "mixed RTL: hello שלום world مرحبا 123",
    "नमस्ते दुनिया, यह हिंदी है।",
    "ภาษาไทยไม่มีช่องว่างระหว่างคำ",
    "កាន់តែពិសេសអាច😁",
    "🚀 (normal) 😶\u200d🌫️ (multiple emojis concatenated) ✅ 🦙🦙",
    "👍🏽 👩\u200d💻 👨\u200d👩\u200d👧\u200d👦 🇺🇸 🇯🇵 🏳️\u200d🌈",
    "e\u0301 (e + combining acute) vs é (precomposed)",
    "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034dA\u036b\u0357\u0334\u0362\u0335\u031c\u0330\u0354L",
    "n\u0303 a\u0308 o\u0302 u\u0300 i\u0328 c\u0327",
    "ﬁ ﬂ ligatures, Å Ω K (compatibility)",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙 𝒔𝒄𝒓𝒊𝒑𝒕",
    "∀x∈ℝ: x² ≥ 0 ⇒ √(x²) = |x|",
    "€100 £50 ¥1000 ₹500 ₿0.01",
    "control\x00chars\x07bell\x1bescape\x7fdel",
    "------======= '''''' ``````` \"\"\"\" ...... !!!!!! ??????",
    "Ünïcödé ßtraße Ærøskøbing",
    # code
    "def add(a, b):\n    return a + b\n",
    "fn main() {\n    let x: Vec<u32> = (0..10).collect();\n    println!(\"{x:?}\");\n}\n",
    "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); return 0; }",
    "const f = (x) => x?.y ?? 0; // arrow\nlet s = `template ${f(1)}`;",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC;",
    "<div class=\"a\"><p>Hello &amp; welcome</p></div>",
    "{\"key\": [1, 2, 3], \"nested\": {\"x\": null, \"y\": true}}",
    "for i in range(10):\n\tif i % 2 == 0:\n\t\tprint(i)\n",
    "$ cargo test -p rl-models -- --nocapture 2>&1 | tee log.txt",
    "x = [a for a in b if a is not None]  # comprehension",
    "    }\n  }\n}\n",
    "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n",
    "\\begin{equation} \\int_0^\\infty e^{-x^2} dx = \\frac{\\sqrt{\\pi}}{2} \\end{equation}",
    # chat markers inside text
    "<|im_start|>user\nWhat is 1+1?<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n",
    "text<|endoftext|>more text",
    "<|endoftext|><|endoftext|>",
    "<|im_end|>",
    "before <|im_start|> after",
    "<|im_start|assistant (broken marker)",
    "< |im_start| > spaced marker",
    "<|IM_START|> upper-case marker",
    "<think>\nLet me think.\n</think>\n\nThe answer is 2.",
    "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>",
    "<tool_response>\n3\n</tool_response>",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
    "<|python_tag|>call<|eom_id|>",
    "<repo_name>rlvr<file_sep>src/lib.rs<filename>x.py<gh_stars>100",
    "<jupyter_code>print(1)<jupyter_output>1<empty_output>",
    "<|fim_prefix|>def f():<|fim_suffix|>\n<|fim_middle|>",
    "<s> </s> <unk> <pad> [PAD] [CLS]",
    "<|reserved_special_token_5|> reserved",
]

WORDS = (
    "the of and to in is you that it he was for on are as with his they at be this have from or "
    "one had by word but not what all were we when your can said there use an each which she do "
    "how their if will up other about out many then them these so some her would make like him "
    "into time has look two more write go see number no way could people my than first water been "
    "call who oil its now find long down day did get come made may part reward policy gradient "
    "tokenizer transformer attention rollout advantage baseline verifier sandbox"
).split()

CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'VE", "'M", "'LL", "'D", "’s"]

SCRIPTS = [
    "中文字符测试数据模型训练",
    "日本語ひらがなカタカナ",
    "한국어문장",
    "Русскийязык",
    "Ελληνικά",
    "العربية",
    "עברית",
    "हिन्दीभाषा",
    "ภาษาไทย",
    "Tiếng Việt có dấu",
    "ÀÉÎÕÜàéîõüçñøåæœß",
]

EMOJI = [
    "😀", "🚀", "🦙", "✅", "❤️", "👍🏽", "👩\u200d💻", "👨\u200d👩\u200d👧", "🇺🇸", "🇩🇪", "🏳️\u200d🌈", "🤖", "🎉", "🔥",
]

COMBINING = ["\u0301", "\u0300", "\u0308", "\u0303", "\u0327", "\u0323", "\u0336", "\u20dd"]

WHITESPACE = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n", " \n", "\n ", "\u00a0", "\u3000", "    "]

PUNCT = list(".,;:!?-_()[]{}<>/\\|@#$%^&*+=~`\"'") + ["...", "--", "->", "=>", "::", "!=", "==", "**", "//"]

MARKERS = [
    "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>",
    "</tool_call>", "<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>",
]

CODE = [
    "fn f(x: i32) -> i32 { x * 2 }",
    "def f(x):\n    return x * 2",
    "if (a && b) { return; }",
    "let v = vec![1, 2, 3];",
    "print(f\"{x:.2f}\")",
    "x += 1; y -= 2;",
    "console.log(JSON.stringify(o));",
    "SELECT * FROM t;",
    "#!/bin/bash\necho $HOME",
    "<a href=\"x\">y</a>",
    "import numpy as np",
    "std::vector<int> v{1,2,3};",
]


def _number(rng: random.Random) -> str:
    kind = rng.randrange(6)
    if kind == 0:
        return str(rng.randrange(10))
    if kind == 1:
        return str(rng.randrange(10, 1000))
    if kind == 2:
        return "".join(rng.choice("0123456789") for _ in range(rng.randrange(4, 31)))
    if kind == 3:
        return f"{rng.uniform(-1000, 1000):.{rng.randrange(1, 7)}f}"
    if kind == 4:
        return f"{rng.randrange(1, 100)} {rng.choice('+-*/')} {rng.randrange(1, 100)} = {rng.randrange(0, 10000)}"
    return f"{rng.randrange(1, 1000):,}".replace(",", rng.choice([",", ".", " "]))


def _word(rng: random.Random) -> str:
    w = rng.choice(WORDS)
    case = rng.randrange(5)
    if case == 0:
        w = w.upper()
    elif case == 1:
        w = w.capitalize()
    elif case == 2:
        w = "".join(c.upper() if rng.random() < 0.5 else c for c in w)
    if rng.random() < 0.1:
        w += rng.choice(CONTRACTIONS)
    return w


def _piece(rng: random.Random) -> str:
    kind = rng.choices(
        ["word", "number", "ws", "punct", "script", "emoji", "combining", "marker", "code", "control"],
        weights=[30, 12, 14, 10, 8, 5, 3, 4, 4, 1],
    )[0]
    if kind == "word":
        return _word(rng)
    if kind == "number":
        return _number(rng)
    if kind == "ws":
        return rng.choice(WHITESPACE)
    if kind == "punct":
        return rng.choice(PUNCT)
    if kind == "script":
        s = rng.choice(SCRIPTS)
        start = rng.randrange(len(s))
        return s[start : start + rng.randrange(1, 8)]
    if kind == "emoji":
        return rng.choice(EMOJI)
    if kind == "combining":
        return rng.choice("aeiouAEIOUnc") + rng.choice(COMBINING)
    if kind == "marker":
        return rng.choice(MARKERS)
    if kind == "code":
        return rng.choice(CODE)
    return chr(rng.choice([0, 1, 7, 8, 11, 12, 27, 31, 127]))


def random_string(rng: random.Random) -> str:
    n = rng.choices([1, 2, 4, 8, 16, 32], weights=[5, 10, 25, 30, 20, 10])[0]
    out = []
    for _ in range(n):
        out.append(_piece(rng))
        if rng.random() < 0.6:
            out.append(" ")
    s = "".join(out)
    # leading/trailing whitespace in some strings
    if rng.random() < 0.1:
        s = rng.choice(WHITESPACE) + s
    if rng.random() < 0.15:
        s = s + rng.choice(WHITESPACE)
    return s


def test_strings() -> list[str]:
    rng = random.Random(SEED)
    out = list(HAND_PICKED)
    seen = set(out)
    while len(out) < len(HAND_PICKED) + N_RANDOM:
        s = random_string(rng)
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


if __name__ == "__main__":
    strings = test_strings()
    print(len(strings), sum(len(s) for s in strings))
    for s in strings[-5:]:
        print(repr(s))
