//! What every channel calls rather than writes again: its config section read
//! (`config`), the buttons a card has and their signed values (`buttons`), the 429 loop
//! (`retry`), a pairing code read from a message (`pairing`), what is said back to senders
//! (`outbox`), the card's words (`text`) and a provider's published rate (`throttle`).
//! A channel is its folder: how its provider is spoken to, and how its events become the
//! core's `FromChannel`.

pub(crate) mod buttons;
pub(crate) mod config;
pub(crate) mod outbox;
pub(crate) mod pairing;
pub(crate) mod retry;
pub(crate) mod text;
pub(crate) mod throttle;

pub(crate) use text::{card_text, clip, noted, plain};
pub(crate) use throttle::Throttle;

/// What a channel's provider calls answer: a value, or why not (said on stderr, never a
/// secret).
pub(crate) type Res<T> = std::result::Result<T, String>;
