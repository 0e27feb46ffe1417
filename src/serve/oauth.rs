//! OAuth for MCP hosts (§17): with `--oidc-issuer`, `serve` is the authorization server
//! of its own `/mcp`, as MCP's authorization specification describes one. A host finds it
//! from the 401 `/mcp` answers (`WWW-Authenticate: Bearer resource_metadata=…`), reads
//! the protected resource's metadata (RFC 9728) and this server's (RFC 8414), registers
//! (RFC 7591), and sends the person to `/oauth/authorize`: signed in (the sign-in of
//! `signin`), they consent on a page that names the host and what it may do, and the
//! host trades the code (PKCE S256) at `/oauth/token` for a person token of an hour. The
//! rules (clients, codes, scopes, refresh families) are `ops::oauth`'s.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::App;
use crate::page::esc;
use questions_core::ops::oauth;

/// At most this many clients register in a minute (RFC 7591 leaves registration open:
/// a flood of them is refused, not stored).
const REGISTRATIONS_A_MINUTE: u32 = 30;

/// Registrations in the current minute.
pub(crate) struct Registrations(Mutex<(Instant, u32)>);

impl Registrations {
    pub(crate) fn new() -> Registrations {
        Registrations(Mutex::new((Instant::now(), 0)))
    }

    fn admit(&self) -> bool {
        let Ok(mut window) = self.0.lock() else {
            return false;
        };
        if window.0.elapsed() >= Duration::from_mins(1) {
            *window = (Instant::now(), 0);
        }
        window.1 += 1;
        window.1 <= REGISTRATIONS_A_MINUTE
    }
}

/// The resource a host asks tokens for: this server's `/mcp`.
fn resource(app: &App) -> String {
    format!("{}/mcp", app.origin())
}

/// A discovery document: JSON anyone may read and keep for an hour.
fn discovery(doc: serde_json::Value) -> Response {
    let mut response = axum::Json(doc).into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    response
}

/// `GET /.well-known/oauth-protected-resource[/mcp]` (RFC 9728).
pub(super) async fn protected_resource(State(app): State<Arc<App>>) -> Response {
    if app.signin.is_none() {
        return StatusCode::NOT_FOUND.into_response();
    }
    discovery(serde_json::json!({
        "resource": resource(&app),
        "authorization_servers": [app.origin()],
        "scopes_supported": oauth::SCOPES,
        "bearer_methods_supported": ["header"],
        "resource_name": "questions",
    }))
}

/// `GET /.well-known/oauth-authorization-server` (RFC 8414).
pub(super) async fn authorization_server(State(app): State<Arc<App>>) -> Response {
    if app.signin.is_none() {
        return StatusCode::NOT_FOUND.into_response();
    }
    let origin = app.origin();
    discovery(serde_json::json!({
        "issuer": origin,
        "authorization_endpoint": format!("{origin}/oauth/authorize"),
        "token_endpoint": format!("{origin}/oauth/token"),
        "registration_endpoint": format!("{origin}/oauth/register"),
        "revocation_endpoint": format!("{origin}/oauth/revoke"),
        "device_authorization_endpoint": format!("{origin}/oauth/device"),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": [
            "authorization_code",
            "refresh_token",
            "urn:ietf:params:oauth:grant-type:device_code"
        ],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": oauth::SCOPES,
        "authorization_response_iss_parameter_supported": true,
    }))
}

/// What `/mcp` says to a request without a valid token when hosts may sign in: where
/// to learn how (RFC 9728 §5.1).
pub(super) fn challenge(app: &App) -> Option<HeaderValue> {
    app.signin.as_ref()?;
    HeaderValue::from_str(&format!(
        "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\", \
         scope=\"{}\"",
        app.origin(),
        oauth::SCOPES.join(" ")
    ))
    .ok()
}

#[derive(Deserialize)]
pub(super) struct Registration {
    redirect_uris: Option<Vec<String>>,
    client_name: Option<String>,
    token_endpoint_auth_method: Option<String>,
}

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    (
        status,
        axum::Json(serde_json::json!({"error": error, "error_description": description})),
    )
        .into_response()
}

/// `POST /oauth/register` (RFC 7591): a public client (no secret: PKCE is its proof).
pub(super) async fn register(
    State(app): State<Arc<App>>,
    axum::Json(reg): axum::Json<Registration>,
) -> Response {
    if app.signin.is_none() {
        return StatusCode::NOT_FOUND.into_response();
    }
    if reg
        .token_endpoint_auth_method
        .as_deref()
        .is_some_and(|m| m != "none")
    {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_client_metadata",
            "this server registers public clients (token_endpoint_auth_method none, PKCE)",
        );
    }
    if !app.registrations.admit() {
        return oauth_error(
            StatusCode::TOO_MANY_REQUESTS,
            "invalid_client_metadata",
            "too many registrations this minute: try again later",
        );
    }
    let uris = reg.redirect_uris.unwrap_or_default();
    let name = reg.client_name.unwrap_or_default();
    match app.ledger(move |l| oauth::register(l, &name, &uris)).await {
        Ok(client) => (
            StatusCode::CREATED,
            axum::Json(serde_json::json!({
                "client_id": client.client_id,
                "client_name": client.client_name,
                "redirect_uris": client.redirect_uris,
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "client_id_issued_at": chrono::Utc::now().timestamp(),
            })),
        )
            .into_response(),
        Err(e) => oauth_error(StatusCode::BAD_REQUEST, "invalid_redirect_uri", &e.message),
    }
}

#[derive(Deserialize, Clone)]
pub(super) struct Authorize {
    response_type: Option<String>,
    client_id: Option<String>,
    redirect_uri: Option<String>,
    code_challenge: Option<String>,
    code_challenge_method: Option<String>,
    scope: Option<String>,
    state: Option<String>,
    resource: Option<String>,
    decision: Option<String>,
}

/// A page that says why an authorization request is not asked of the person (never a
/// redirect to an address not checked).
fn refused_page(status: StatusCode, message: &str) -> Response {
    let body = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Questions: connect an app</title><link rel=\"stylesheet\" href=\"/assets/inbox.css\">\
         </head><body><main class=\"device\"><p class=\"flash failed\" role=\"alert\">{}</p>\
         </main></body></html>\n",
        esc(message)
    );
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

/// The checks of both steps: the client, its redirect URI, PKCE, the scope, and the
/// resource (this server's `/mcp`, RFC 8707). Ok: the client's name and the scope.
async fn checked(app: &Arc<App>, q: &Authorize) -> Result<(String, String), Response> {
    if app.signin.is_none() {
        return Err(StatusCode::NOT_FOUND.into_response());
    }
    if q.response_type.as_deref() != Some("code") {
        return Err(refused_page(
            StatusCode::BAD_REQUEST,
            "this server answers response_type=code only",
        ));
    }
    if let Some(asked) = q.resource.as_deref() {
        if asked.trim_end_matches('/') != resource(app) {
            return Err(refused_page(
                StatusCode::BAD_REQUEST,
                "the resource asked for is not this server's /mcp",
            ));
        }
    }
    let (client_id, redirect) = (
        q.client_id.clone().unwrap_or_default(),
        q.redirect_uri.clone().unwrap_or_default(),
    );
    let (challenge, method, scope) = (
        q.code_challenge.clone(),
        q.code_challenge_method.clone(),
        q.scope.clone(),
    );
    match app
        .ledger(move |l| {
            oauth::check_request(
                l,
                &client_id,
                &redirect,
                challenge.as_deref(),
                method.as_deref(),
                scope.as_deref(),
            )
        })
        .await
    {
        Ok((client, scope)) => Ok((client.client_name, scope)),
        Err(e) => Err(refused_page(StatusCode::BAD_REQUEST, &e.message)),
    }
}

/// The host of a redirect URI, as the consent page names where the person is sent.
fn host_of(uri: &str) -> String {
    url::Url::parse(uri)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_default()
}

/// `GET /oauth/authorize`: the consent page, for a person signed in (else the guard sent
/// them to sign in, and back here).
pub(super) async fn authorize(
    State(app): State<Arc<App>>,
    axum::Extension(person): axum::Extension<super::guard::Person>,
    Query(q): Query<Authorize>,
) -> Response {
    let (name, scope) = match checked(&app, &q).await {
        Ok(ok) => ok,
        Err(refused) => return refused,
    };
    let Some(who) = person.0 else {
        return refused_page(
            StatusCode::FORBIDDEN,
            "sign in as a person to connect an app",
        );
    };
    let hidden = |k: &str, v: &Option<String>| {
        v.as_deref().map_or_else(String::new, |v| {
            format!("<input type=\"hidden\" name=\"{k}\" value=\"{}\">", esc(v))
        })
    };
    let fields = [
        hidden("response_type", &q.response_type),
        hidden("client_id", &q.client_id),
        hidden("redirect_uri", &q.redirect_uri),
        hidden("code_challenge", &q.code_challenge),
        hidden("code_challenge_method", &q.code_challenge_method),
        hidden("scope", &Some(scope.clone())),
        hidden("state", &q.state),
        hidden("resource", &q.resource),
        hidden("csrf", &person.1),
    ]
    .concat();
    let can = if scope.split_whitespace().any(|s| s == "questions:answer") {
        "read the questions waiting for you, and answer and vote as you"
    } else {
        "read the questions waiting for you (not answer or vote)"
    };
    let host = host_of(q.redirect_uri.as_deref().unwrap_or(""));
    let body = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Questions: connect an app</title>\
         <link rel=\"stylesheet\" href=\"/assets/inbox.css\"></head><body><main class=\"device\">\
         <h1>Connect {name}?</h1>\
         <p><strong>{name}</strong> (it goes back to <code>{host}</code>) asks to act as \
         <strong>{who}</strong> here: to {can}. It holds this for an hour at a time, until \
         you disconnect it.</p>\
         <form method=\"post\" action=\"/oauth/authorize\">{fields}\
         <button type=\"submit\" name=\"decision\" value=\"allow\" class=\"primary\">Allow</button> \
         <button type=\"submit\" name=\"decision\" value=\"deny\">Deny</button></form>\
         </main></body></html>\n",
        name = esc(&name),
        host = esc(&host),
        who = esc(&who),
    );
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}

/// `POST /oauth/authorize`: the person's decision, and back to the host with a code.
pub(super) async fn decide(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    axum::Form(q): axum::Form<Authorize>,
) -> Response {
    let (_, scope) = match checked(&app, &q).await {
        Ok(ok) => ok,
        Err(refused) => return refused,
    };
    let Some(secret) = super::guard::cookie(&headers, &super::guard::cookie_name(&app)) else {
        return refused_page(
            StatusCode::FORBIDDEN,
            "sign in in this browser to connect an app",
        );
    };
    let redirect = q.redirect_uri.clone().unwrap_or_default();
    let Ok(mut back) = url::Url::parse(&redirect) else {
        return refused_page(StatusCode::BAD_REQUEST, "the redirect URI is not a URL");
    };
    if q.decision.as_deref() == Some("allow") {
        let (client_id, challenge) = (
            q.client_id.clone().unwrap_or_default(),
            q.code_challenge.clone().unwrap_or_default(),
        );
        let for_uri = redirect.clone();
        let code = app
            .ledger(move |l| oauth::consent(l, &secret, &client_id, &for_uri, &challenge, &scope))
            .await;
        match code {
            Ok(code) => {
                back.query_pairs_mut().append_pair("code", &code);
            }
            Err(e) => return refused_page(super::api::status_of(e.code), &e.message),
        }
    } else {
        back.query_pairs_mut().append_pair("error", "access_denied");
    }
    if let Some(state) = q.state.as_deref() {
        back.query_pairs_mut().append_pair("state", state);
    }
    back.query_pairs_mut().append_pair("iss", &app.origin());
    (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, back.to_string())],
    )
        .into_response()
}
