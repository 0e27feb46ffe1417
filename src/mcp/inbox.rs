//! URL-mode elicitation: a client that can open a URL for the person is sent to the
//! question's page in a running `questions serve` inbox (`mcp --inbox-url`) instead of
//! being handed a form, so a question with long context, code or many options is answered
//! where it reads well.

use questions_core::error::{Error, Result};

#[derive(Debug, Clone, Default)]
pub(super) struct Inbox {
    /// The inbox's address as `serve` printed it (its token in the query), without a
    /// fragment.
    url: Option<String>,
}

impl Inbox {
    pub(super) fn parse(url: Option<String>) -> Result<Inbox> {
        let Some(url) = url.map(|u| u.trim().to_string()).filter(|u| !u.is_empty()) else {
            return Ok(Inbox::default());
        };
        let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
        if !scheme_ok || url.contains(char::is_whitespace) {
            return Err(Error::usage(format!(
                "--inbox-url '{url}' is not an http(s) URL: give the address `questions serve` \
                 printed, e.g. http://127.0.0.1:8466/?token=…"
            )));
        }
        let url = match url.split_once('#') {
            Some((base, _)) => base.to_string(),
            None => url,
        };
        Ok(Inbox { url: Some(url) })
    }

    pub(super) fn known(&self) -> bool {
        self.url.is_some()
    }

    /// The page of question `id` in the inbox.
    pub(super) fn page(&self, id: i64) -> Option<String> {
        self.url.as_ref().map(|u| format!("{u}#q-{id}"))
    }
}
