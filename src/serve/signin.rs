//! Signing in with the team's OpenID provider (`serve --oidc-issuer`): the authorization
//! code flow with PKCE (S256), `state` and `nonce`, and the ID token verified by the
//! `openidconnect` crate against the issuer's keys (fetched again when a token names a
//! key it has not seen). Who the verified person is on this ledger, and the session it
//! gets, are `ops::signin`'s: this module speaks the protocol and sets the cookies.
//!
//! The flow's own secrets (`state`, `nonce`, the PKCE verifier, where to go back to) ride
//! in a short-lived cookie of their own, HttpOnly and scoped to `/signin`: any server
//! behind the same load balancer finishes a sign-in another began.

use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreProviderMetadata};
use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, IssuerUrl, Nonce, PkceCodeChallenge,
    PkceCodeVerifier, RedirectUrl, Scope, TokenResponse,
};
use serde::Deserialize;

use super::App;
use crate::page::esc;
use questions_core::error::{Error, ErrorCode, Result};
use questions_core::ops::signin::{self, Admit, Kind, Vouched};

/// How long a sign-in may take between leaving for the provider and coming back.
const FLOW_LIFETIME: Duration = Duration::from_mins(10);

/// The provider's keys are fetched again at most this often (a token naming an unknown
/// key may be a forgery: it does not get to make the server fetch at will).
const REDISCOVER_EVERY: Duration = Duration::from_secs(30);

/// `serve`'s sign-in settings, as given.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub issuer: String,
    pub client_id: String,
    pub client_secret: String,
    pub allow_domains: Vec<String>,
    pub idle: Duration,
    pub absolute: Duration,
}

/// The client, as discovery sets its endpoints.
type Client = CoreClient<
    openidconnect::EndpointSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointNotSet,
    openidconnect::EndpointMaybeSet,
    openidconnect::EndpointMaybeSet,
>;

/// The provider, as its discovery document describes it.
pub(crate) struct Provider {
    settings: Settings,
    meta: RwLock<CoreProviderMetadata>,
    agent: ureq::Agent,
    fetched: Mutex<Instant>,
}

/// The provider's HTTP, through the blocking client the command line uses: no redirects
/// followed (a token endpoint that redirects is not followed anywhere), a megabyte at most.
#[derive(Debug)]
struct HttpFailure(String);

impl std::fmt::Display for HttpFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HttpFailure {}

fn http(
    agent: &ureq::Agent,
) -> impl Fn(
    openidconnect::HttpRequest,
) -> std::result::Result<openidconnect::HttpResponse, HttpFailure>
       + '_ {
    move |request| {
        let response = agent.run(request).map_err(|e| HttpFailure(e.to_string()))?;
        let (parts, mut body) = response.into_parts();
        let bytes = body
            .with_config()
            .limit(1 << 20)
            .read_to_vec()
            .map_err(|e| HttpFailure(e.to_string()))?;
        Ok(openidconnect::http::Response::from_parts(parts, bytes))
    }
}

impl Provider {
    /// Reads the issuer's discovery document and keys: at start, so that a wrong issuer
    /// is said before anyone tries to sign in.
    pub(crate) fn discover(settings: Settings) -> Result<Provider> {
        let issuer = settings.issuer.trim_end_matches('/').to_string();
        let parsed = url::Url::parse(&issuer)
            .map_err(|e| Error::usage(format!("--oidc-issuer {issuer} is not a URL: {e}")))?;
        let loopback = parsed.host().is_some_and(|h| match h {
            url::Host::Domain(d) => d == "localhost",
            url::Host::Ipv4(ip) => ip.is_loopback(),
            url::Host::Ipv6(ip) => ip.is_loopback(),
        });
        if parsed.scheme() != "https" && !(parsed.scheme() == "http" && loopback) {
            return Err(Error::usage(format!(
                "--oidc-issuer {issuer} is not https://: the provider's keys and tokens would \
                 travel in plain text (http:// is accepted on this machine's loopback only)"
            )));
        }
        if settings.client_id.trim().is_empty() {
            return Err(Error::usage("--oidc-client-id is empty"));
        }
        let agent: ureq::Agent = crate::client::builder()?.max_redirects(0).build().into();
        let meta = fetch(&agent, &issuer)?;
        Ok(Provider {
            settings: Settings { issuer, ..settings },
            meta: RwLock::new(meta),
            agent,
            // The first key the provider rolls in may be fetched at once.
            fetched: Mutex::new(
                Instant::now()
                    .checked_sub(REDISCOVER_EVERY)
                    .unwrap_or_else(Instant::now),
            ),
        })
    }

    fn client(&self, redirect: &str) -> Result<Client> {
        let meta = self
            .meta
            .read()
            .map_err(|_| Error::io("the provider's settings are unreadable"))?
            .clone();
        let redirect = RedirectUrl::new(redirect.to_string())
            .map_err(|e| Error::usage(format!("the sign-in's return address: {e}")))?;
        Ok(CoreClient::from_provider_metadata(
            meta,
            ClientId::new(self.settings.client_id.clone()),
            Some(ClientSecret::new(self.settings.client_secret.clone())),
        )
        .set_redirect_uri(redirect))
    }

    /// Fetches the discovery document and keys again, unless that was done a moment
    /// ago; true when they were.
    fn rediscover(&self) -> bool {
        let Ok(mut fetched) = self.fetched.lock() else {
            return false;
        };
        if fetched.elapsed() < REDISCOVER_EVERY {
            return false;
        }
        *fetched = Instant::now();
        match fetch(&self.agent, &self.settings.issuer) {
            Ok(meta) => {
                if let Ok(mut m) = self.meta.write() {
                    *m = meta;
                }
                true
            }
            Err(_) => false,
        }
    }
}

fn fetch(agent: &ureq::Agent, issuer: &str) -> Result<CoreProviderMetadata> {
    let url = IssuerUrl::new(issuer.to_string())
        .map_err(|e| Error::usage(format!("--oidc-issuer {issuer}: {e}")))?;
    CoreProviderMetadata::discover(&url, &http(agent)).map_err(|e| {
        Error::new(
            ErrorCode::Unavailable,
            format!(
                "cannot read the OpenID provider's discovery document at \
                 {issuer}/.well-known/openid-configuration: {}",
                chain(&e)
            ),
        )
    })
}

/// An error and its causes, as one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}

/// Where the provider sends the person back.
fn redirect_uri(app: &App) -> String {
    format!("{}/signin/callback", app.origin())
}

/// The cookie that carries a sign-in under way.
fn flow_cookie(app: &App) -> String {
    format!("questions_signin_{}", app.bound.port())
}

/// Where a sign-in may send the person back to: a path of this server, never another
/// site (`//evil.example`, `/\evil.example`, `https://…`).
pub(super) fn local_path(to: Option<&str>) -> String {
    let to = to.unwrap_or("/");
    let ok = to.starts_with('/')
        && !to.starts_with("//")
        && !to.starts_with("/\\")
        && to.len() <= 1500
        && !to.chars().any(|c| c.is_control() || c == '\\');
    if ok && !to.starts_with("/signin") {
        to.to_string()
    } else {
        "/".to_string()
    }
}

/// `text` as a query's value.
pub(super) fn encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

#[derive(Deserialize)]
pub(super) struct Start {
    to: Option<String>,
}

/// `GET /signin`: off to the provider, with a new state, nonce and PKCE challenge.
pub(super) async fn start(
    State(app): State<Arc<App>>,
    seen: Option<axum::Extension<super::proxy::Seen>>,
    Query(start): Query<Start>,
) -> Response {
    let Some(provider) = app.signin.clone() else {
        return (StatusCode::NOT_FOUND, "nothing here").into_response();
    };
    let to = local_path(start.to.as_deref());
    let client = match provider.client(&redirect_uri(&app)) {
        Ok(c) => c,
        Err(e) => return page(StatusCode::INTERNAL_SERVER_ERROR, &e.message, false),
    };
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, state, nonce) = client
        .authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        )
        .add_scope(Scope::new("email".to_string()))
        .add_scope(Scope::new("profile".to_string()))
        .set_pkce_challenge(challenge)
        .url();
    let value = format!(
        "{}.{}.{}.{}",
        state.secret(),
        nonce.secret(),
        verifier.secret(),
        hex(to.as_bytes())
    );
    let cookie = format!(
        "{}={value}; HttpOnly; SameSite=Lax; Path=/signin; Max-Age={}{}",
        flow_cookie(&app),
        FLOW_LIFETIME.as_secs(),
        secure(&app, seen.as_ref())
    );
    let mut response =
        (StatusCode::SEE_OTHER, [(header::LOCATION, url.to_string())]).into_response();
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    response
}

#[derive(Deserialize)]
pub(super) struct Back {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// `GET /signin/callback`: the provider's answer. Only a sign-in this browser began (its
/// cookie, the same `state`) is finished; the ID token must be the provider's, for this
/// server, unexpired, and carry the nonce sent.
pub(super) async fn callback(
    State(app): State<Arc<App>>,
    actor: Option<axum::Extension<super::reqlog::Actor>>,
    seen: Option<axum::Extension<super::proxy::Seen>>,
    headers: HeaderMap,
    Query(back): Query<Back>,
) -> Response {
    let Some(provider) = app.signin.clone() else {
        return (StatusCode::NOT_FOUND, "nothing here").into_response();
    };
    let again = "start again from the inbox's address";
    let flow = super::guard::cookie(&headers, &flow_cookie(&app)).and_then(|v| parse_flow(&v));
    let Some((state, nonce, verifier, to)) = flow else {
        return page(
            StatusCode::BAD_REQUEST,
            &format!(
                "this sign-in was not begun in this browser, or took longer than 10 \
                 minutes: {again}"
            ),
            true,
        );
    };
    if !back
        .state
        .as_deref()
        .is_some_and(|s| super::guard::same(s, &state))
    {
        return page(
            StatusCode::BAD_REQUEST,
            &format!("the provider's answer is for another sign-in: {again}"),
            true,
        );
    }
    if let Some(error) = back.error.as_deref() {
        let said = back.error_description.as_deref().unwrap_or(error);
        return page(
            StatusCode::FORBIDDEN,
            &format!("the provider did not sign you in ({error}: {said}): {again}"),
            true,
        );
    }
    let Some(code) = back.code else {
        return page(
            StatusCode::BAD_REQUEST,
            &format!("the provider sent no code: {again}"),
            true,
        );
    };
    let redirect = redirect_uri(&app);
    let verified = tokio::task::spawn_blocking(move || {
        verify(&provider, &redirect, code, verifier, &nonce).map(|v| (v, provider))
    })
    .await
    .unwrap_or_else(|e| Err(Error::io(format!("the sign-in stopped: {e}"))));
    let (vouched, provider) = match verified {
        Ok(v) => v,
        Err(e) => return page(StatusCode::FORBIDDEN, &e.message, true),
    };
    let admit = Admit {
        domains: provider.settings.allow_domains.clone(),
    };
    let kind = Kind::Web {
        idle: provider.settings.idle,
        absolute: provider.settings.absolute,
    };
    let signed = app
        .ledger(move |l| signin::sign_in(l, &vouched, &admit, kind))
        .await;
    let signed = match signed {
        Ok(s) => s,
        Err(e) => {
            let status = super::api::status_of(e.code);
            return page(status, &e.message, false);
        }
    };
    if let Some(axum::Extension(actor)) = actor {
        actor.set(&signed.name, "person");
    }
    let secure = secure(&app, seen.as_ref());
    let session = format!(
        "{}={}; HttpOnly; SameSite=Lax; Path=/; Max-Age={}{secure}",
        super::guard::cookie_name(&app),
        signed.token,
        provider.settings.absolute.as_secs()
    );
    let spent = format!(
        "{}=; HttpOnly; SameSite=Lax; Path=/signin; Max-Age=0{secure}",
        flow_cookie(&app)
    );
    let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response();
    for c in [session, spent] {
        if let Ok(v) = HeaderValue::from_str(&c) {
            response.headers_mut().append(header::SET_COOKIE, v);
        }
    }
    response
}

/// The code exchanged (with the PKCE verifier) and the ID token verified: what the
/// provider vouches for.
fn verify(
    provider: &Provider,
    redirect: &str,
    code: String,
    verifier: String,
    nonce: &str,
) -> Result<Vouched> {
    let refused = |what: &str, e: &dyn std::error::Error| {
        Error::new(
            ErrorCode::Forbidden,
            format!("the sign-in was refused: {what} ({})", chain(e)),
        )
    };
    let client = provider.client(redirect)?;
    let http = http(&provider.agent);
    let response = client
        .exchange_code(AuthorizationCode::new(code))
        .map_err(|e| refused("the provider names no token endpoint", &e))?
        .set_pkce_verifier(PkceCodeVerifier::new(verifier))
        .request(&http)
        .map_err(|e| refused("the provider would not exchange the code", &e))?;
    let Some(id_token) = response.id_token() else {
        return Err(Error::new(
            ErrorCode::Forbidden,
            "the sign-in was refused: the provider sent no ID token",
        ));
    };
    let nonce = Nonce::new(nonce.to_string());
    let claims =
        |client: &Client| -> std::result::Result<Vouched, openidconnect::ClaimsVerificationError> {
            let claims = id_token.claims(&client.id_token_verifier(), &nonce)?;
            Ok(Vouched {
                issuer: claims.issuer().as_str().to_string(),
                subject: claims.subject().as_str().to_string(),
                email: claims.email().map(|e| e.as_str().to_string()),
                email_verified: claims.email_verified().unwrap_or(false),
            })
        };
    match claims(&client) {
        Ok(v) => Ok(v),
        // A key the provider has rotated in since its keys were read: read them again
        // (at most every REDISCOVER_EVERY), and look once more.
        Err(openidconnect::ClaimsVerificationError::SignatureVerification(_))
            if provider.rediscover() =>
        {
            claims(&provider.client(redirect)?)
                .map_err(|e| refused("its ID token does not hold", &e))
        }
        Err(e) => Err(refused("its ID token does not hold", &e)),
    }
}

/// `state.nonce.verifier.hex(to)`, as `start` wrote it.
fn parse_flow(value: &str) -> Option<(String, String, String, String)> {
    let mut parts = value.split('.');
    let (state, nonce, verifier, to) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || state.is_empty() || nonce.is_empty() || verifier.is_empty() {
        return None;
    }
    let to = String::from_utf8(unhex(to)?).ok()?;
    Some((
        state.to_string(),
        nonce.to_string(),
        verifier.to_string(),
        local_path(Some(&to)),
    ))
}

/// `POST /signout`: the session ends, here and on every server of the ledger.
pub(super) async fn sign_out(
    State(app): State<Arc<App>>,
    seen: Option<axum::Extension<super::proxy::Seen>>,
    headers: HeaderMap,
) -> Response {
    let secret = super::guard::cookie(&headers, &super::guard::cookie_name(&app))
        .or_else(|| super::guard::bearer(&headers));
    if let Some(secret) = secret {
        if let Err(e) = app.ledger(move |l| signin::sign_out(l, &secret)).await {
            return page(super::api::status_of(e.code), &e.message, false);
        }
    }
    let secure = secure(&app, seen.as_ref());
    let gone = format!(
        "{}=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0{secure}",
        super::guard::cookie_name(&app)
    );
    let mut response = page(StatusCode::OK, "You are signed out.", true);
    if let Ok(v) = HeaderValue::from_str(&gone) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    response
}

/// `; Secure` when the browser reached this server over TLS: here, at a trusted proxy,
/// or by the public URL.
fn secure(app: &App, seen: Option<&axum::Extension<super::proxy::Seen>>) -> &'static str {
    if super::guard::scheme(app, seen.map(|s| &s.0)) == "https" {
        "; Secure"
    } else {
        ""
    }
}

/// A page that says what happened, with a way to sign in again.
fn page(status: StatusCode, message: &str, offer: bool) -> Response {
    let link = if offer {
        "<p><a href=\"/signin\">Sign in</a></p>"
    } else {
        ""
    };
    let class = if status.is_success() {
        "done"
    } else {
        "failed"
    };
    let body = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Questions: sign in</title><link rel=\"stylesheet\" href=\"/assets/inbox.css\">\
         </head><body><main><p class=\"flash {class}\" role=\"status\">{}</p>{link}</main>\
         </body></html>\n",
        esc(message)
    );
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response();
    if !status.is_success() {
        let code = match status {
            StatusCode::FORBIDDEN => ErrorCode::Forbidden,
            StatusCode::BAD_REQUEST => ErrorCode::Usage,
            _ => ErrorCode::IoError,
        };
        response.extensions_mut().insert(code);
    }
    response
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The device grant's type (RFC 8628 §3.4).
const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

/// An OAuth error document (RFC 6749 §5.2), status 400.
fn oauth_error(error: &str, description: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        axum::Json(serde_json::json!({"error": error, "error_description": description})),
    )
        .into_response()
}

/// `POST /oauth/device`: `questions login` begins (RFC 8628 §3.1).
pub(super) async fn device_start(State(app): State<Arc<App>>) -> Response {
    if app.signin.is_none() {
        return oauth_error("unsupported_grant_type", "this server signs nobody in");
    }
    match app.ledger(signin::device_start).await {
        Ok(started) => {
            let page = format!("{}/device", app.origin());
            axum::Json(serde_json::json!({
                "device_code": started.device_code,
                "user_code": started.user_code,
                "verification_uri": page,
                "verification_uri_complete": format!("{page}?code={}", started.user_code),
                "expires_in": signin::DEVICE_LIFETIME.as_secs(),
                "interval": signin::DEVICE_INTERVAL.as_secs(),
            }))
            .into_response()
        }
        Err(e) => super::api::Failed::of(questions_core::ops::Procedure::Serve)(e).into_response(),
    }
}

#[derive(Deserialize)]
pub(super) struct TokenForm {
    grant_type: Option<String>,
    device_code: Option<String>,
    refresh_token: Option<String>,
    code: Option<String>,
    code_verifier: Option<String>,
    redirect_uri: Option<String>,
    client_id: Option<String>,
}

/// `POST /oauth/token`: a device code once approved, or a refresh token, for a login's
/// token (RFC 8628 §3.4, RFC 6749 §6).
pub(super) async fn token(
    State(app): State<Arc<App>>,
    axum::Form(form): axum::Form<TokenForm>,
) -> Response {
    if app.signin.is_none() {
        return oauth_error("unsupported_grant_type", "this server signs nobody in");
    }
    let issued = match form.grant_type.as_deref() {
        Some(DEVICE_GRANT) => {
            let Some(code) = form.device_code else {
                return oauth_error("invalid_request", "device_code is missing");
            };
            let polled = app
                .ledger(move |l| {
                    signin::device_poll(l, &code, signin::LOGIN_LIFETIME, signin::REFRESH_LIFETIME)
                })
                .await;
            match polled {
                Ok(signin::DevicePoll::Issued(made)) => made,
                Ok(signin::DevicePoll::Pending) => {
                    return oauth_error("authorization_pending", "not approved yet")
                }
                Ok(signin::DevicePoll::SlowDown) => {
                    return oauth_error("slow_down", "asked sooner than the interval")
                }
                Ok(signin::DevicePoll::Denied) => {
                    return oauth_error("access_denied", "the person denied this sign-in")
                }
                Ok(signin::DevicePoll::Expired) => {
                    return oauth_error(
                        "expired_token",
                        "the code is unknown, used or past its time: sign in again",
                    )
                }
                Err(e) => {
                    return super::api::Failed::of(questions_core::ops::Procedure::Serve)(e)
                        .into_response()
                }
            }
        }
        Some("authorization_code") => {
            let (Some(code), Some(verifier), Some(redirect), Some(client)) = (
                form.code,
                form.code_verifier,
                form.redirect_uri,
                form.client_id,
            ) else {
                return oauth_error(
                    "invalid_request",
                    "code, code_verifier, redirect_uri and client_id are all needed",
                );
            };
            match app
                .ledger(move |l| {
                    questions_core::ops::oauth::redeem(l, &code, &verifier, &client, &redirect)
                })
                .await
            {
                Ok(made) => made,
                Err(e) if e.code == ErrorCode::Unauthorized => {
                    return oauth_error("invalid_grant", &e.message)
                }
                Err(e) => {
                    return super::api::Failed::of(questions_core::ops::Procedure::Serve)(e)
                        .into_response()
                }
            }
        }
        Some("refresh_token") => {
            let Some(refresh) = form.refresh_token else {
                return oauth_error("invalid_request", "refresh_token is missing");
            };
            match app.ledger(move |l| signin::refresh(l, &refresh)).await {
                Ok(made) => made,
                Err(e) if e.code == ErrorCode::Unauthorized => {
                    return oauth_error(
                        "invalid_grant",
                        "the refresh token is unknown, used, revoked or past its time: \
                         questions login again",
                    )
                }
                Err(e) => {
                    return super::api::Failed::of(questions_core::ops::Procedure::Serve)(e)
                        .into_response()
                }
            }
        }
        _ => {
            return oauth_error(
                "unsupported_grant_type",
                "this server takes the device code grant and refresh tokens",
            )
        }
    };
    axum::Json(serde_json::json!({
        "access_token": issued.token,
        "token_type": "Bearer",
        "expires_in": clock_seconds(&issued.expires_at),
        "refresh_token": issued.refresh_token,
        "person": issued.person,
        "name": issued.name,
    }))
    .into_response()
}

/// Seconds from now until `at` (the server's clock), as `expires_in` says them.
fn clock_seconds(at: &str) -> i64 {
    questions_core::clock::seconds_between(&questions_core::clock::now(), at).max(0)
}

#[derive(Deserialize)]
pub(super) struct RevokeForm {
    token: Option<String>,
}

/// `POST /oauth/revoke`: `questions logout` (RFC 7009: 200 whatever the token was).
pub(super) async fn revoke(
    State(app): State<Arc<App>>,
    axum::Form(form): axum::Form<RevokeForm>,
) -> Response {
    if let Some(token) = form.token {
        if let Err(e) = app.ledger(move |l| signin::sign_out(l, &token)).await {
            return super::api::Failed::of(questions_core::ops::Procedure::Serve)(e)
                .into_response();
        }
    }
    StatusCode::OK.into_response()
}

#[derive(Deserialize)]
pub(super) struct DeviceQuery {
    code: Option<String>,
}

/// `GET /device`: the person, signed in, confirms the code the command line shows.
pub(super) async fn device_page(
    axum::Extension(person): axum::Extension<super::guard::Person>,
    Query(q): Query<DeviceQuery>,
) -> Response {
    let Some(name) = person.0 else {
        return page(
            StatusCode::FORBIDDEN,
            "sign in as a person to approve a sign-in of the command line",
            true,
        );
    };
    let code = q
        .code
        .as_deref()
        .map(signin::normal_user_code)
        .unwrap_or_default();
    let csrf = person
        .1
        .map(|t| {
            format!(
                "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
                esc(&t)
            )
        })
        .unwrap_or_default();
    let body = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Questions: sign in the command line</title>\
         <link rel=\"stylesheet\" href=\"/assets/inbox.css\"></head><body><main class=\"device\">\
         <h1>Sign in the command line</h1>\
         <p>Approve only if you just ran <code>questions login</code> and it shows this code. \
         It will act as <strong>{who}</strong> for 12 hours at a time, until you sign it out.</p>\
         <form method=\"post\" action=\"/device\">{csrf}\
         <label for=\"code\">Code</label> \
         <input id=\"code\" name=\"user_code\" value=\"{code}\" autocomplete=\"off\" \
         autocapitalize=\"characters\" required> \
         <button type=\"submit\" name=\"decision\" value=\"approve\" class=\"primary\">Approve</button> \
         <button type=\"submit\" name=\"decision\" value=\"deny\">Deny</button></form>\
         </main></body></html>\n",
        who = esc(&name),
        code = esc(&code),
    );
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}

#[derive(Deserialize)]
pub(super) struct DeviceForm {
    user_code: Option<String>,
    decision: Option<String>,
}

/// `POST /device`: the person's decision.
pub(super) async fn device_decide(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    axum::Form(form): axum::Form<DeviceForm>,
) -> Response {
    let Some(secret) = super::guard::cookie(&headers, &super::guard::cookie_name(&app)) else {
        return page(
            StatusCode::FORBIDDEN,
            "sign in in this browser to approve a sign-in of the command line",
            true,
        );
    };
    let approve = form.decision.as_deref() == Some("approve");
    let code = form.user_code.unwrap_or_default();
    match app
        .ledger(move |l| signin::device_decide(l, &secret, &code, approve))
        .await
    {
        Ok(person) if approve => page(
            StatusCode::OK,
            &format!("The command line is signed in as {person}. You can close this page."),
            false,
        ),
        Ok(_) => page(
            StatusCode::OK,
            "Denied: that command line is not signed in.",
            false,
        ),
        Err(e) => page(super::api::status_of(e.code), &e.message, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sign_in_goes_back_only_to_a_path_of_this_server() {
        for bad in [
            "//evil.example/",
            "/\\evil.example",
            "https://evil.example/",
            "evil",
            "/x\r\nSet-Cookie: a=b",
            "/signin/callback",
        ] {
            assert_eq!(local_path(Some(bad)), "/", "{bad}");
        }
        assert_eq!(local_path(Some("/?answered=3")), "/?answered=3");
        assert_eq!(local_path(None), "/");
    }

    #[test]
    fn a_flow_cookie_is_read_back_whole_or_not_at_all() {
        let to = hex(b"/device?code=AB");
        let v = format!("s.n.v.{to}");
        assert_eq!(
            parse_flow(&v),
            Some(("s".into(), "n".into(), "v".into(), "/device?code=AB".into()))
        );
        assert_eq!(parse_flow("s.n.v"), None);
        assert_eq!(parse_flow("s.n.v.zz"), None);
        assert_eq!(parse_flow(".n.v.2f"), None);
        assert_eq!(
            parse_flow(&format!("s.n.v.{}", hex(b"//evil"))).unwrap().3,
            "/"
        );
    }
}
