//! The multi round-trip pattern of MCP 2026-07-28 (stateless MCP), for the form: instead
//! of asking the client to show a form (`elicitation/create`, a server-to-client request
//! that revision forbids), `ask_questions` returns an "input required" result holding the
//! form and a `requestState`, and the client calls the tool again with the person's reply
//! and that state echoed.
//!
//! The client holds the state, so it is untrusted: it is sealed (HMAC-SHA256 under a key
//! drawn at start, never shown) and bound to the client and the ledger it was issued for;
//! it names the questions the form showed, with their fingerprints, and a nonce that may
//! be redeemed once. A state that was forged or altered, issued to another client or for
//! another ledger, expired, or already redeemed, records nothing.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{RequestStateCodec, SealOptions};
use serde::{Deserialize, Serialize};

use questions_core::error::{Error, ErrorCode, Result};

/// How long a form may stay open before its reply is refused: a person may leave a form
/// for lunch, not for days.
const TTL: Duration = Duration::from_hours(24);

/// What a form's round carries from the call that showed it to the call that answers it.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct FormState {
    /// Single use: redeemed by the call that records the form's answers.
    pub nonce: String,
    /// Every question the call logged (the retry must name the same ones).
    pub question_ids: Vec<i64>,
    /// The questions the call created: the retry finds them on record and creates none.
    pub created_ids: Vec<i64>,
    /// What the form showed: question id and fingerprint.
    pub shown: Vec<(i64, String)>,
}

#[derive(Clone)]
pub(super) struct Rounds {
    codec: Arc<RequestStateCodec>,
    redeemed: Arc<Mutex<HashSet<String>>>,
}

/// `bytes` bytes from the operating system's generator, as hex.
pub(super) fn random_hex(bytes: usize) -> Result<String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf)
        .map_err(|e| Error::io(format!("no randomness from the operating system: {e}")))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// What a state is bound to besides its own content.
fn binding(client: &str, ledger: Option<&str>) -> Vec<u8> {
    format!(
        "questions/ask_questions/form\u{0}{client}\u{0}{}",
        ledger.unwrap_or("")
    )
    .into_bytes()
}

impl Rounds {
    pub(super) fn new() -> Result<Rounds> {
        let mut key = vec![0u8; 32];
        getrandom::fill(&mut key)
            .map_err(|e| Error::io(format!("no randomness from the operating system: {e}")))?;
        let codec = RequestStateCodec::try_new(key)
            .map_err(|e| Error::io(format!("cannot set up the request state: {e}")))?;
        Ok(Rounds {
            codec: Arc::new(codec),
            redeemed: Arc::default(),
        })
    }

    /// Seals a new form's state for `client` on `ledger`.
    pub(super) fn seal(
        &self,
        client: &str,
        ledger: Option<&str>,
        question_ids: Vec<i64>,
        created_ids: Vec<i64>,
        shown: Vec<(i64, String)>,
    ) -> Result<String> {
        let state = FormState {
            nonce: random_hex(16)?,
            question_ids,
            created_ids,
            shown,
        };
        let bound = binding(client, ledger);
        self.codec
            .seal_json_with(&state, &SealOptions::new().associated_data(&bound).ttl(TTL))
            .map_err(|e| Error::io(format!("cannot seal the request state: {e}")))
    }

    /// Opens a state echoed by `client` for `ledger`, checks it names `question_ids` (the
    /// questions on record that these arguments name; none when one of them is not), and
    /// redeems its nonce: a second call with the same state is refused. Called before
    /// anything is logged, so that a refusal records nothing.
    pub(super) fn redeem(
        &self,
        sealed: &str,
        client: &str,
        ledger: Option<&str>,
        question_ids: Option<&[i64]>,
    ) -> Result<FormState> {
        let bound = binding(client, ledger);
        // One message for every way a state fails to open (the SDK's advice: the
        // details help a forger, not the client).
        let state: FormState = self.codec.open_json_with(sealed, &bound).map_err(|e| {
            crate::output::note(&format!("ask_questions: requestState refused: {e}"));
            Error::usage(
                "requestState was not issued by this server for this client and ledger, was \
                 altered, or has expired: nothing was recorded; call ask_questions again \
                 without it",
            )
        })?;
        if question_ids != Some(state.question_ids.as_slice()) {
            let named = match question_ids {
                Some(ids) => format!("{ids:?}"),
                None => "questions that call did not log".to_string(),
            };
            return Err(Error::usage(format!(
                "requestState was issued for questions {:?}, and these arguments name \
                 {named}: nothing was recorded; call again with the arguments of the call \
                 that returned it",
                state.question_ids
            )));
        }
        let fresh = self
            .redeemed
            .lock()
            .map_err(|_| Error::db("internal error: the request state lock is poisoned"))?
            .insert(state.nonce.clone());
        if !fresh {
            return Err(Error::new(
                ErrorCode::Conflict,
                "requestState was already used: a form's answers are recorded once; \
                 wait_for_answers reports them",
            ));
        }
        Ok(state)
    }
}
