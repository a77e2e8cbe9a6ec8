//! Tokenizer: a thin wrapper over the HF `tokenizers` crate (`tokenizer.json`), the Qwen chat
//! template, and a char-level tokenizer for tiny demo models built through the same code path.

use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::chat_template::ChatTemplate;
use crate::error::TokenizerError;

/// Qwen chat-template markers.
pub const IM_START: &str = "<|im_start|>";
/// End of a chat turn (the eos of Qwen3 chat models).
pub const IM_END: &str = "<|im_end|>";
/// Qwen3 end of text (pad; the eos of the -Base models).
pub const ENDOFTEXT: &str = "<|endoftext|>";
/// Unknown-character token of [`Tokenizer::char_level`].
pub const CHAR_LEVEL_UNK: &str = "<unk>";

/// One chat message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The text.
    pub content: String,
}

impl ChatMessage {
    /// A message with the given role.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: content.into(),
        }
    }

    /// A `system` message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new("system", content)
    }

    /// A `user` message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new("user", content)
    }

    /// An `assistant` message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new("assistant", content)
    }
}

/// Renders the Qwen3 chat template (the `tokenizer_config.json` template of CausalLm, without tool
/// definitions) exactly as transformers' `apply_chat_template` does:
///
/// - a first `system` message, then every turn as `<|im_start|>{role}\n{content}<|im_end|>\n`;
/// - assistant turns up to the last user query lose their `<think>…</think>` block; later ones
///   keep the reasoning as `<think>\n{reasoning}\n</think>\n\n{answer}`;
/// - consecutive `tool` messages are wrapped in one user turn of `<tool_response>` blocks;
/// - `add_generation_prompt` appends `<|im_start|>assistant\n`, and with
///   `enable_thinking = false` also the empty think block `<think>\n\n</think>\n\n`.
pub fn render_chat(
    messages: &[ChatMessage],
    add_generation_prompt: bool,
    enable_thinking: bool,
) -> Result<String, TokenizerError> {
    render_chat_with_tools(messages, &[], add_generation_prompt, enable_thinking)
}

/// [`render_chat`] with tool definitions, as Qwen3's template renders `tools=[...]`: one system
/// turn holding the first `system` message's content (if any) followed by a blank line, then
/// the `# Tools` instructions with each definition on its own line inside `<tools></tools>`
/// and the `<tool_call>` format. `tools` are the definitions as the template's `tojson` writes
/// them (JSON text, e.g. `{"type": "function", "function": {...}}`); empty: [`render_chat`].
pub fn render_chat_with_tools(
    messages: &[ChatMessage],
    tools: &[String],
    add_generation_prompt: bool,
    enable_thinking: bool,
) -> Result<String, TokenizerError> {
    let mut out = String::new();
    let first_system = messages
        .first()
        .filter(|m| m.role == "system")
        .map(|m| m.content.as_str());
    if !tools.is_empty() {
        out.push_str(&format!("{IM_START}system\n"));
        if let Some(s) = first_system {
            out.push_str(&format!("{s}\n\n"));
        }
        out.push_str(
            "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n\
             You are provided with function signatures within <tools></tools> XML tags:\n<tools>",
        );
        for t in tools {
            out.push('\n');
            out.push_str(t);
        }
        out.push_str(&format!(
            "\n</tools>\n\nFor each function call, return a json object with function name and \
             arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n\
             {{\"name\": <function-name>, \"arguments\": <args-json-object>}}\n</tool_call>{IM_END}\n"
        ));
    } else if let Some(s) = first_system {
        out.push_str(&format!("{IM_START}system\n{s}{IM_END}\n"));
    }
    let is_tool_response =
        |c: &str| c.starts_with("<tool_response>") && c.ends_with("</tool_response>");
    let last_query_index = messages
        .iter()
        .rposition(|m| m.role == "user" && !is_tool_response(&m.content))
        .unwrap_or(messages.len().saturating_sub(1));
    for (i, m) in messages.iter().enumerate() {
        match m.role.as_str() {
            "user" => out.push_str(&format!("{IM_START}user\n{}{IM_END}\n", m.content)),
            "system" => {
                if i != 0 {
                    out.push_str(&format!("{IM_START}system\n{}{IM_END}\n", m.content));
                }
            }
            "assistant" => {
                let mut content = m.content.as_str();
                let mut reasoning = "";
                if let Some(pos) = m.content.rfind("</think>") {
                    content = m.content[pos + "</think>".len()..].trim_start_matches('\n');
                    let first_end = m.content.find("</think>").unwrap_or(pos);
                    let before = m.content[..first_end].trim_end_matches('\n');
                    reasoning = match before.rfind("<think>") {
                        Some(p) => &before[p + "<think>".len()..],
                        None => before,
                    }
                    .trim_start_matches('\n');
                }
                let is_last = i + 1 == messages.len();
                if i > last_query_index && (is_last || !reasoning.is_empty()) {
                    out.push_str(&format!(
                        "{IM_START}assistant\n<think>\n{}\n</think>\n\n{}",
                        reasoning.trim_matches('\n'),
                        content.trim_start_matches('\n')
                    ));
                } else {
                    out.push_str(&format!("{IM_START}assistant\n{content}"));
                }
                out.push_str(&format!("{IM_END}\n"));
            }
            "tool" => {
                if i == 0 || messages[i - 1].role != "tool" {
                    out.push_str(&format!("{IM_START}user"));
                }
                out.push_str(&format!(
                    "\n<tool_response>\n{}\n</tool_response>",
                    m.content
                ));
                if i + 1 == messages.len() || messages[i + 1].role != "tool" {
                    out.push_str(&format!("{IM_END}\n"));
                }
            }
            other => {
                return Err(TokenizerError::InvalidRole {
                    index: i,
                    role: other.to_string(),
                });
            }
        }
    }
    if add_generation_prompt {
        out.push_str(&format!("{IM_START}assistant\n"));
        if !enable_thinking {
            out.push_str("<think>\n\n</think>\n\n");
        }
    }
    Ok(out)
}

/// A tokenizer loaded from (or serialisable to) an HF `tokenizer.json`.
#[derive(Clone)]
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    defined: usize,
    unk_id: Option<u32>,
    chat_template: Option<Arc<ChatTemplate>>,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("defined_ids", &self.defined)
            .field("unk_id", &self.unk_id)
            .field("chat_template", &self.chat_template.is_some())
            .finish()
    }
}

fn tk_err(context: impl Into<String>) -> impl FnOnce(tokenizers::Error) -> TokenizerError {
    let context = context.into();
    move |e| TokenizerError::Tokenizers {
        context,
        message: e.to_string(),
    }
}

impl Tokenizer {
    /// Wraps a `tokenizers::Tokenizer`.
    pub fn from_inner(inner: tokenizers::Tokenizer) -> Self {
        let defined = inner
            .get_vocab(true)
            .values()
            .map(|&id| id as usize + 1)
            .max()
            .unwrap_or(0);
        let unk_id = match inner.get_model() {
            tokenizers::ModelWrapper::BPE(bpe) => bpe
                .get_unk_token()
                .as_ref()
                .and_then(|t| inner.token_to_id(t)),
            tokenizers::ModelWrapper::WordLevel(wl) => inner.token_to_id(&wl.unk_token),
            _ => None,
        };
        Self {
            inner,
            defined,
            unk_id,
            chat_template: None,
        }
    }

    /// The same tokenizer rendering chats with the model's own Jinja `template` (the
    /// `chat_template` of `tokenizer_config.json` or a GGUF's `tokenizer.chat_template`) instead
    /// of the built-in Qwen3 renderer ([`render_chat`]).
    pub fn with_chat_template(mut self, template: ChatTemplate) -> Self {
        self.chat_template = Some(Arc::new(template));
        self
    }

    /// The model's chat template, when one was attached ([`Self::with_chat_template`]).
    pub fn chat_template(&self) -> Option<&ChatTemplate> {
        self.chat_template.as_deref()
    }

    /// Loads a `tokenizer.json` file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, TokenizerError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| TokenizerError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let inner = tokenizers::Tokenizer::from_bytes(&bytes)
            .map_err(tk_err(format!("loading {}", path.display())))?;
        Ok(Self::from_inner(inner))
    }

    /// Loads `tokenizer.json` content.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, TokenizerError> {
        let inner =
            tokenizers::Tokenizer::from_bytes(bytes).map_err(tk_err("loading tokenizer"))?;
        Ok(Self::from_inner(inner))
    }

    /// A character-level tokenizer for tiny demo models, built as a `tokenizer.json` and loaded by
    /// the `tokenizers` crate like any other: a BPE model without merges over the distinct
    /// characters of `alphabet` (ids `0..n` in order of first appearance), then the
    /// `special_tokens` (ids `n..`, registered as special added tokens, so
    /// `"<|im_start|>"` in a text is one token) and last `<unk>` (the BPE unknown token;
    /// [`Tokenizer::encode`] rejects texts that produce it). Decoding concatenates the tokens.
    ///
    /// ```
    /// let tok = rl_models::Tokenizer::char_level("0123456789+=", &["<|endoftext|>"]).unwrap();
    /// assert_eq!(tok.encode("1+2=3<|endoftext|>").unwrap(), vec![1, 10, 2, 11, 3, 12]);
    /// assert_eq!(tok.num_defined_ids(), 14);
    /// ```
    pub fn char_level(alphabet: &str, special_tokens: &[&str]) -> Result<Self, TokenizerError> {
        let mut chars: Vec<char> = Vec::new();
        for c in alphabet.chars() {
            if !chars.contains(&c) {
                chars.push(c);
            }
        }
        if chars.is_empty() {
            return Err(TokenizerError::InvalidCharLevel(
                "the alphabet is empty".to_string(),
            ));
        }
        let mut vocab = serde_json::Map::new();
        for (i, c) in chars.iter().enumerate() {
            vocab.insert(c.to_string(), json!(i));
        }
        let mut added = Vec::new();
        for (k, &s) in special_tokens.iter().enumerate() {
            if s.is_empty() || s == CHAR_LEVEL_UNK || vocab.contains_key(s) {
                return Err(TokenizerError::InvalidCharLevel(format!(
                    "special token {s:?} is empty, reserved or a duplicate"
                )));
            }
            let id = chars.len() + k;
            vocab.insert(s.to_string(), json!(id));
            added.push(json!({
                "id": id, "content": s, "single_word": false, "lstrip": false,
                "rstrip": false, "normalized": false, "special": true,
            }));
        }
        vocab.insert(
            CHAR_LEVEL_UNK.to_string(),
            json!(chars.len() + special_tokens.len()),
        );
        let spec = json!({
            "version": "1.0",
            "truncation": null,
            "padding": null,
            "added_tokens": added,
            "normalizer": null,
            "pre_tokenizer": null,
            "post_processor": null,
            "decoder": { "type": "Fuse" },
            "model": {
                "type": "BPE",
                "dropout": null,
                "unk_token": CHAR_LEVEL_UNK,
                "continuing_subword_prefix": null,
                "end_of_word_suffix": null,
                "fuse_unk": false,
                "byte_fallback": false,
                "ignore_merges": false,
                "vocab": vocab,
                "merges": [],
            },
        });
        Self::from_bytes(spec.to_string().as_bytes())
    }

    /// The `tokenizer.json` text.
    pub fn to_json(&self, pretty: bool) -> Result<String, TokenizerError> {
        self.inner
            .to_string(pretty)
            .map_err(tk_err("serialising tokenizer"))
    }

    /// Writes `tokenizer.json`.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), TokenizerError> {
        let path = path.as_ref();
        let text = self.to_json(false)?;
        std::fs::write(path, text).map_err(|source| TokenizerError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Token ids of `text` (no BOS/EOS added; special tokens written in the text are recognised).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, TokenizerError> {
        self.encode_with(text, false)
    }

    /// [`Self::encode`] with the tokenizer's post-processing, as HF's `tokenizer(text)` does
    /// by default: the tokens it adds around a text (Gemma's and Llama 3's BOS; none for Qwen
    /// or SmolLM2). The ids of a prompt given as plain text.
    pub fn encode_prompt(&self, text: &str) -> Result<Vec<u32>, TokenizerError> {
        self.encode_with(text, true)
    }

    fn encode_with(&self, text: &str, special: bool) -> Result<Vec<u32>, TokenizerError> {
        let enc = self
            .inner
            .encode(text, special)
            .map_err(tk_err("encoding"))?;
        if let Some(unk) = self.unk_id
            && let Some(i) = enc.get_ids().iter().position(|&id| id == unk)
        {
            let (s, e) = enc.get_offsets()[i];
            return Err(TokenizerError::UnknownText {
                fragment: text.get(s..e).unwrap_or("").to_string(),
            });
        }
        Ok(enc.get_ids().to_vec())
    }

    /// Text of `ids`; with `skip_special_tokens` the special added tokens are left out.
    pub fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String, TokenizerError> {
        if let Some(&id) = ids.iter().find(|&&id| id as usize >= self.defined) {
            return Err(TokenizerError::UnknownId {
                id,
                defined: self.defined,
            });
        }
        self.inner
            .decode(ids, skip_special_tokens)
            .map_err(tk_err("decoding"))
    }

    /// Id of a token string (vocabulary or added token).
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// Token string of an id.
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        self.inner.id_to_token(id)
    }

    /// Number of ids the tokenizer defines (largest id + 1): 151,669 for CausalLm, whose models have
    /// 151,936 embedding rows. Pass it as [`crate::GenerationConfig::allowed_vocab_size`] so that
    /// undefined ids are never sampled.
    pub fn num_defined_ids(&self) -> usize {
        self.defined
    }

    /// Id of a token the chat template needs.
    pub fn special_id(&self, token: &str) -> Result<u32, TokenizerError> {
        self.token_to_id(token)
            .ok_or_else(|| TokenizerError::MissingSpecialToken(token.to_string()))
    }

    /// Ids of the rendered chat: the model's template when one is attached
    /// ([`Self::with_chat_template`]), else the Qwen3 template ([`render_chat`]).
    pub fn apply_chat_template(
        &self,
        messages: &[ChatMessage],
        add_generation_prompt: bool,
        enable_thinking: bool,
    ) -> Result<Vec<u32>, TokenizerError> {
        self.apply_chat_template_with_tools(messages, &[], add_generation_prompt, enable_thinking)
    }

    /// Ids of the rendered chat with tool definitions (JSON text per tool): the model's
    /// template when one is attached, rendered as transformers' `apply_chat_template(messages,
    /// tools=..., add_generation_prompt=..., enable_thinking=...)` does (no tools: `tools` is
    /// `None`), else the Qwen3 template ([`render_chat_with_tools`]).
    pub fn apply_chat_template_with_tools(
        &self,
        messages: &[ChatMessage],
        tools: &[String],
        add_generation_prompt: bool,
        enable_thinking: bool,
    ) -> Result<Vec<u32>, TokenizerError> {
        let text = match &self.chat_template {
            Some(template) => {
                let messages: Vec<serde_json::Value> = messages
                    .iter()
                    .map(|m| json!({"role": m.role, "content": m.content}))
                    .collect();
                let tools = tools
                    .iter()
                    .map(|t| {
                        serde_json::from_str(t).map_err(|e| {
                            TokenizerError::ChatTemplate(format!(
                                "tool definition is not JSON: {e}"
                            ))
                        })
                    })
                    .collect::<Result<Vec<serde_json::Value>, _>>()?;
                let mut extra = serde_json::Map::new();
                extra.insert("enable_thinking".into(), json!(enable_thinking));
                template
                    .render(
                        &messages,
                        (!tools.is_empty()).then_some(tools.as_slice()),
                        add_generation_prompt,
                        &extra,
                    )
                    .map_err(|e| TokenizerError::ChatTemplate(e.to_string()))?
            }
            None => {
                self.special_id(IM_START)?;
                self.special_id(IM_END)?;
                render_chat_with_tools(messages, tools, add_generation_prompt, enable_thinking)?
            }
        };
        self.encode(&text)
    }

    /// The wrapped `tokenizers::Tokenizer`.
    pub fn inner(&self) -> &tokenizers::Tokenizer {
        &self.inner
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECIALS: [&str; 3] = [ENDOFTEXT, IM_START, IM_END];

    fn arith() -> Tokenizer {
        Tokenizer::char_level("0123456789+-*= \nabcdefghijklmnopqrstuvwxyz?", &SPECIALS).unwrap()
    }

    #[test]
    fn char_level_ids_follow_the_documented_layout() {
        let tok = arith();
        // alphabet first (order of first appearance), then the specials, then <unk>
        assert_eq!(tok.token_to_id("0"), Some(0));
        assert_eq!(tok.token_to_id("?"), Some(42));
        assert_eq!(tok.token_to_id(ENDOFTEXT), Some(43));
        assert_eq!(tok.token_to_id(IM_START), Some(44));
        assert_eq!(tok.token_to_id(IM_END), Some(45));
        assert_eq!(tok.token_to_id(CHAR_LEVEL_UNK), Some(46));
        assert_eq!(tok.num_defined_ids(), 47);
        assert_eq!(tok.encode("12+3=").unwrap(), vec![1, 2, 10, 3, 13]);
        assert_eq!(
            tok.encode("7<|im_end|><|endoftext|>").unwrap(),
            vec![7, 45, 43]
        );
    }

    #[test]
    fn char_level_round_trips_through_tokenizer_json() {
        let tok = arith();
        let text = "<|im_start|>user\nwhat is 12*3?<|im_end|>\n<|im_start|>assistant\n36<|im_end|>";
        let ids = tok.encode(text).unwrap();
        assert_eq!(tok.decode(&ids, false).unwrap(), text);
        assert_eq!(
            tok.decode(&ids, true).unwrap(),
            "user\nwhat is 12*3?\nassistant\n36"
        );
        let path = std::env::temp_dir().join(format!("rl-models-char-{}.json", std::process::id()));
        tok.save(&path).unwrap();
        let back = Tokenizer::from_file(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(back.encode(text).unwrap(), ids);
        assert_eq!(back.num_defined_ids(), tok.num_defined_ids());
        let again = Tokenizer::from_bytes(tok.to_json(true).unwrap().as_bytes()).unwrap();
        assert_eq!(again.encode(text).unwrap(), ids);
    }

    #[test]
    fn unknown_characters_are_an_error_not_dropped() {
        let tok = arith();
        match tok.encode("12 ÷ 4") {
            Err(TokenizerError::UnknownText { fragment }) => assert_eq!(fragment, "÷"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            tok.decode(&[47], false),
            Err(TokenizerError::UnknownId {
                id: 47,
                defined: 47
            })
        ));
    }

    #[test]
    fn char_level_rejects_bad_specs() {
        assert!(matches!(
            Tokenizer::char_level("", &[]),
            Err(TokenizerError::InvalidCharLevel(_))
        ));
        assert!(Tokenizer::char_level("ab", &["a"]).is_err());
        assert!(Tokenizer::char_level("ab", &[CHAR_LEVEL_UNK]).is_err());
        assert!(Tokenizer::char_level("ab", &["<x>", "<x>"]).is_err());
        // duplicated alphabet characters are collapsed
        assert_eq!(
            Tokenizer::char_level("abba", &[])
                .unwrap()
                .num_defined_ids(),
            3
        );
    }

    #[test]
    fn chat_template_with_a_char_level_tokenizer() {
        let tok = arith();
        let ids = tok
            .apply_chat_template(&[ChatMessage::user("1+1?")], true, true)
            .unwrap();
        assert_eq!(
            tok.decode(&ids, false).unwrap(),
            "<|im_start|>user\n1+1?<|im_end|>\n<|im_start|>assistant\n"
        );
        // a tokenizer without <|im_start|> cannot render the template
        let bare = Tokenizer::char_level("ab", &[]).unwrap();
        assert!(matches!(
            bare.apply_chat_template(&[ChatMessage::user("a")], true, true),
            Err(TokenizerError::MissingSpecialToken(_))
        ));
        assert!(matches!(
            render_chat(&[ChatMessage::new("robot", "x")], false, true),
            Err(TokenizerError::InvalidRole { index: 0, .. })
        ));
    }
}
