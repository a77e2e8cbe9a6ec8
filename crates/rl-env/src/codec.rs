//! The model-side vocabulary an episode needs: decoding a sampled turn, and rendering an
//! observation's messages as the token ids to append (a trainer implements it with its
//! tokenizer and chat template; `rl-trainer`'s `ChatCodec` does it for Qwen3's template).

use crate::{EnvError, Message};

/// Decodes turns and renders observations.
pub trait TurnCodec: Send + Sync {
    /// The text of a sampled assistant turn without its end tokens (what tool-call parsing
    /// and the final verifier read).
    fn turn_text(&self, tokens: &[u32]) -> Result<String, EnvError>;

    /// The ids appended after a finished assistant turn (one that ended with its stop token)
    /// for `messages`: the rest of the turn boundary after the stop token, the messages'
    /// turns as the chat template renders them, and the next assistant turn's header. Only
    /// these ids are tokenised; nothing before them is touched.
    fn observation_ids(&self, messages: &[Message]) -> Result<Vec<u32>, EnvError>;
}
