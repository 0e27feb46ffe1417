//! A pairing code (`questions relay pair CHANNEL NAME`) as a person sends it.

use questions_core::ops::relay::{CODE_LENGTH, CODE_LETTERS};

/// A pairing code in a message's text: a word of `CODE_LENGTH` of the code's letters, in
/// any case, punctuation around it ignored.
pub(crate) fn code_in(text: &str) -> Option<String> {
    text.split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_ascii_alphanumeric()))
        .find(|w| {
            w.len() == CODE_LENGTH
                && w.bytes()
                    .all(|c| CODE_LETTERS.contains(&c.to_ascii_uppercase()))
        })
        .map(|w| w.to_ascii_uppercase())
}

/// What follows a command that carries a code (Telegram's `/start CODE`, which its deep
/// links send): `Some("")` for the command alone, `None` for another message.
pub(crate) fn after_command<'a>(text: &'a str, command: &str) -> Option<&'a str> {
    text.strip_prefix(command).map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_is_a_word_of_the_code_s_letters() {
        assert_eq!(code_in("my code: abcd23efgh."), Some("ABCD23EFGH".into()));
        // O, 0, I and 1 are never in a code; nor is a word of another length.
        assert_eq!(code_in("ABCD0EFGHJ"), None);
        assert_eq!(code_in("ABCD23EFG"), None);
        assert_eq!(after_command("/start  ABC ", "/start"), Some("ABC"));
        assert_eq!(after_command("/start", "/start"), Some(""));
        assert_eq!(after_command("hello", "/start"), None);
    }
}
