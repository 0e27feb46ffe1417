//! What every request passes before it reaches a route: the Host it names (against DNS
//! rebinding), its size, the token (cookie or bearer), where a POST comes from; and the
//! headers every response carries (a Content-Security-Policy with no inline script).

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{App, BODY_LIMIT, CALL_BODY_LIMIT};

/// Who made a request: the person whose token it carried; none for the server's token.
/// With it, the form token of a browser that sent its credential as a cookie (see
/// `form_token`): every form the page shows carries it back.
#[derive(Debug, Clone)]
pub(crate) struct Person(pub Option<String>, pub Option<String>);

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

pub(super) async fn guard(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    // A person who opens the page without the token reads why on a page; a client of
    // the API gets the failure document.
    let page = !request.uri().path().starts_with("/api/")
        && request
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("text/html"));
    // A token the ledger issued (`token create --person`) opens the inbox as its person,
    // read anew at every request (a revoked one is refused at once); an agent's never.
    let presented = query_token(request.uri().query())
        .or_else(|| bearer(request.headers()))
        .or_else(|| cookie(request.headers(), &cookie_name(&app)));
    // Refused ones count against the client, as on `/v1/call`: past the limit a guess is
    // not even looked up.
    let client = request
        .extensions()
        .get::<super::proxy::Seen>()
        .map(|seen| seen.client);
    // The ledger's API and MCP read their tokens themselves, and the assets need none:
    // neither is looked up here.
    let path = request.uri().path();
    let inbox = path != "/v1/call"
        && path != "/mcp"
        && !path.starts_with("/mcp/")
        && !path.starts_with("/assets/");
    let ledger_token =
        presented.filter(|t| inbox && t.starts_with(questions_core::ops::SECRET_PREFIX));
    let mut issued = None;
    if let Some(token) = ledger_token {
        // A client past its share of refusals is slowed, not the holders of the tokens
        // this server honours (see `limit`).
        let slowed = client.map_or(std::time::Duration::ZERO, |c| {
            app.limits.wait_before(c, Some(&token))
        });
        if !slowed.is_zero() {
            tokio::time::sleep(slowed).await;
        }
        let secret = token.clone();
        match app
            .ledger(move |l| questions_core::ops::authenticate(l, Some(&secret)))
            .await
        {
            Ok(questions_core::ops::Principal::Person(p)) => {
                app.limits.honour(&token);
                if let Some(actor) = request.extensions().get::<super::reqlog::Actor>() {
                    actor.set(&p.name, "person");
                }
                issued = Some((token, p.person));
            }
            // An agent's token is a token, but it never opens the inbox.
            Ok(_) => app.limits.honour(&token),
            Err(_) => {
                if let Some(c) = client {
                    app.limits.refused(c);
                }
            }
        }
    }
    let holder = |given: &str| -> Option<Option<String>> {
        match &issued {
            Some((token, person)) if same(given, token) => Some(Some(person.clone())),
            _ => app.holder(given),
        }
    };
    let response = match check(&app, &request, &holder) {
        Err(refused) if page => refused.page(),
        Err(refused) => refused.into_response(),
        Ok(Some(redirect)) => redirect,
        Ok(None) => {
            // Whose token it is: an answer or a vote counts as that person (see
            // `api::apply` and `votes`).
            let mut request = request;
            let held = bearer(request.headers())
                .or_else(|| cookie(request.headers(), &cookie_name(&app)))
                .and_then(|t| holder(&t));
            if let Some(actor) = request.extensions().get::<super::reqlog::Actor>() {
                if actor.get().is_none() && !is_ledger_route(request.uri().path()) {
                    match &held {
                        Some(Some(name)) => actor.set(name, "person"),
                        Some(None) => actor.set("", "operator"),
                        // No credential: on the way to sign in (see `signin`).
                        None => actor.set("", "none"),
                    }
                }
            }
            let person = held.flatten();
            // A credential the browser sends by itself (its cookie) proves nothing about
            // who wrote the form: a change must carry the form token the page gave.
            let ambient = bearer(request.headers())
                .is_none()
                .then(|| cookie(request.headers(), &cookie_name(&app)))
                .flatten();
            let form = ambient.as_deref().map(form_token);
            let changes = request.method() != Method::GET && request.method() != Method::HEAD;
            let ledger_route = is_ledger_route(request.uri().path());
            if let (Some(expected), true) = (&form, changes && !ledger_route) {
                let Ok(back) = carries(request, expected).await else {
                    let refused = refuse(
                        StatusCode::FORBIDDEN,
                        "this form is not from this inbox's page, or from before you \
                         signed in again: reload the page and try again",
                    );
                    return with_headers(if page {
                        refused.page()
                    } else {
                        refused.into_response()
                    });
                };
                request = back;
            }
            request.extensions_mut().insert(Person(person, form));
            next.run(request).await
        }
    };
    with_headers(response)
}

/// What a change sent with a cookie must carry: derived from the cookie's secret (so a
/// page of another site, which cannot read the cookie, cannot know it), as the form field
/// `csrf` or the header `X-CSRF-Token`.
pub(super) fn form_token(secret: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("questions form token\0{secret}").as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// The request back, when it carries `expected` (in its header, or its form's `csrf`).
async fn carries(request: Request, expected: &str) -> Result<Request, ()> {
    let said = request
        .headers()
        .get("x-csrf-token")
        .and_then(|v| v.to_str().ok());
    if said.is_some_and(|v| same(v, expected)) {
        return Ok(request);
    }
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, BODY_LIMIT)
        .await
        .map_err(|_| ())?;
    let found = url::form_urlencoded::parse(&bytes).any(|(k, v)| k == "csrf" && same(&v, expected));
    if !found {
        return Err(());
    }
    Ok(Request::from_parts(parts, axum::body::Body::from(bytes)))
}

fn with_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // Nothing is kept by a cache but what a route says may be (discovery documents).
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// Whether a browser asks for a page (not a client of the API).
fn wants_page(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/html"))
}

/// `Err`: refused. `Ok(Some)`: answered here (the token's first visit). `Ok(None)`: go on.
fn check(
    app: &App,
    request: &Request,
    holder: &dyn Fn(&str) -> Option<Option<String>>,
) -> Result<Option<Response>, Refusal> {
    let headers = request.headers();
    let seen = request.extensions().get::<super::proxy::Seen>();
    if !host_allowed(app, headers, seen) {
        return Err(refuse(
            StatusCode::FORBIDDEN,
            "the Host header names neither this server's address, its --public-url nor \
             localhost; open the URL that 'questions serve' printed",
        ));
    }
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let path = request.uri().path();
    // The ledger's API reads a larger body only for a token the ledger knows (its route).
    let (limit, said) = if path == "/v1/call" {
        (CALL_BODY_LIMIT, "the request body is larger than 16 MiB")
    } else {
        (BODY_LIMIT, "the request body is larger than 64 KiB")
    };
    if length.is_some_and(|n| n > limit as u64) {
        return Err(refuse(StatusCode::PAYLOAD_TOO_LARGE, said));
    }
    if request.method() == Method::GET && path.starts_with("/assets/") {
        // The stylesheet and script hold nothing of the ledger.
        return Ok(None);
    }
    if path == "/v1/call" || path == "/mcp" {
        // The ledger's own API and MCP take the ledger's tokens, which their routes read
        // anew at every request (a revoked one is refused at once): not this server's. A
        // browser on another site may not send one either (nor open MCP's event stream).
        if request.method() != Method::GET && request.method() != Method::HEAD || path == "/mcp" {
            cross_origin(app, headers, seen)?;
        }
        return Ok(None);
    }
    if app.signin.is_some()
        && request.method() == Method::GET
        && matches!(
            path,
            "/.well-known/oauth-protected-resource"
                | "/.well-known/oauth-protected-resource/mcp"
                | "/.well-known/oauth-authorization-server"
        )
    {
        // MCP hosts discover how to sign in (see `oauth`): public documents.
        return Ok(None);
    }
    if path.starts_with("/.well-known/") {
        // No OAuth metadata here (see `mcp`): a host that finds some signs in instead of
        // sending the token its user configured.
        return Err(refuse(StatusCode::NOT_FOUND, "nothing here"));
    }
    if app.signin.is_some()
        && request.method() == Method::GET
        && (path == "/signin" || path == "/signin/callback")
    {
        // On the way to the provider and back: no token yet (see `signin`).
        return Ok(None);
    }
    if app.signin.is_some()
        && request.method() == Method::POST
        && matches!(
            path,
            "/oauth/device" | "/oauth/token" | "/oauth/revoke" | "/oauth/register"
        )
    {
        // `questions login` and `logout`: the device code, refresh token or token in the
        // form is the credential. No browser sends one from another site.
        return cross_origin(app, headers, seen).map(|()| None);
    }
    if let Some(given) = query_token(request.uri().query()) {
        if request.method() != Method::GET || holder(&given).is_none() {
            return Err(refuse(
                StatusCode::UNAUTHORIZED,
                "that token is not this server's: open the URL that 'questions serve' printed",
            ));
        }
        return Ok(Some(welcome(app, request)));
    }
    let token = bearer(headers).or_else(|| cookie(headers, &cookie_name(app)));
    if token.is_none_or(|t| holder(&t).is_none()) {
        if app.signin.is_some() && request.method() == Method::GET && wants_page(headers) {
            // A person who is not signed in (or whose session ended) signs in, and comes
            // back here.
            let here = request
                .uri()
                .path_and_query()
                .map_or("/", axum::http::uri::PathAndQuery::as_str);
            let to = format!("/signin?to={}", super::signin::encode(here));
            return Ok(Some(
                (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response(),
            ));
        }
        return Err(refuse(
            StatusCode::UNAUTHORIZED,
            "a token is needed: open the URL that 'questions serve' printed, or send \
             'Authorization: Bearer <token>'",
        ));
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        cross_origin(app, headers, seen)?;
    }
    Ok(None)
}

/// The first visit: the token becomes a cookie that scripts cannot read and other sites
/// cannot send, and the address bar loses it.
fn welcome(app: &App, request: &Request) -> Response {
    let rest: Vec<&str> = request
        .uri()
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("token="))
        .collect();
    let mut to = request.uri().path().to_string();
    if !rest.is_empty() {
        to.push('?');
        to.push_str(&rest.join("&"));
    }
    // The token given: the server's, or a person's (`--users`).
    let given = query_token(request.uri().query()).unwrap_or_else(|| app.token.clone());
    // Over TLS (here, at the proxy, or the public URL's), the browser never sends it back
    // in plain text.
    let seen = request.extensions().get::<super::proxy::Seen>();
    let secure = if scheme(app, seen) == "https" {
        "; Secure"
    } else {
        ""
    };
    let cookie = format!(
        "{}={}; HttpOnly; SameSite=Strict; Path=/{secure}",
        cookie_name(app),
        given
    );
    let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response();
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// Cookies ignore ports: each server's cookie is named for its port, so two inboxes on
/// one machine do not log each other out.
pub(super) fn cookie_name(app: &App) -> String {
    format!("questions_token_{}", app.bound.port())
}

/// A POST must come from the inbox itself. A browser says where a request comes from:
/// `Sec-Fetch-Site` (every current browser) decides; without it, `Origin` must be this
/// server. A client that sends neither is not a browser, and it needed the token anyway.
/// (`Origin` alone is not enough: Chromium sends `Origin: null` with same-origin forms.)
fn cross_origin(
    app: &App,
    headers: &HeaderMap,
    seen: Option<&super::proxy::Seen>,
) -> Result<(), Refusal> {
    let refused = || {
        refuse(
            StatusCode::FORBIDDEN,
            "a POST from another site is refused: answer from the inbox itself",
        )
    };
    if let Some(site) = headers.get("sec-fetch-site") {
        return match site.to_str() {
            Ok("same-origin" | "none") => Ok(()),
            _ => Err(refused()),
        };
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let host = seen
            .and_then(|s| s.host.as_deref())
            .or_else(|| headers.get(header::HOST).and_then(|h| h.to_str().ok()))
            .unwrap_or("");
        let expected = format!("{}://{host}", scheme(app, seen));
        let origin = origin.to_str().ok().unwrap_or("");
        if !origin.eq_ignore_ascii_case(&expected) || !host_is_allowed(app, host) {
            return Err(refused());
        }
    }
    Ok(())
}

/// The scheme the client used: a trusted proxy's word, else this server's own (over
/// TLS, https), else the public URL's.
pub(super) fn scheme(app: &App, seen: Option<&super::proxy::Seen>) -> &'static str {
    match seen.and_then(|s| s.proto.as_deref()) {
        Some("https") => "https",
        Some(_) => "http",
        None if app.tls || app.front.public.as_ref().is_some_and(|p| p.https) => "https",
        None => "http",
    }
}

/// Routes that read the ledger's tokens themselves (and name who made the request).
fn is_ledger_route(path: &str) -> bool {
    path == "/v1/call" || path == "/mcp" || path.starts_with("/mcp/")
}

fn host_allowed(app: &App, headers: &HeaderMap, seen: Option<&super::proxy::Seen>) -> bool {
    // Two Host headers: which one a proxy in front read is anyone's guess.
    if headers.get_all(header::HOST).iter().count() != 1 {
        return false;
    }
    // The Host the client sent, as a trusted proxy reports it; else the request's own.
    if let Some(host) = seen.and_then(|s| s.host.as_deref()) {
        return host_is_allowed(app, host);
    }
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|h| host_is_allowed(app, h))
}

/// The Host a request names must be this server: `localhost` or the address bound, on
/// the bound port. Bound to every address (`--allow-remote` on 0.0.0.0), any address
/// literal is accepted, never a name: a rebound DNS name is exactly what this refuses.
/// Over TLS (`--tls-cert`) a name is accepted too: a browser sent to this address under
/// another site's name refuses the certificate, so no page of that site gets here. A
/// port left out is the scheme's own (443 over TLS).
fn host_is_allowed(app: &App, host: &str) -> bool {
    if app.front.public.as_ref().is_some_and(|p| p.names(host)) {
        return true;
    }
    let (name, port) = match host.rsplit_once(':') {
        Some((name, port)) if !port.contains(']') => (name, port.parse::<u16>().ok()),
        _ => (host, Some(if app.tls { 443 } else { 80 })),
    };
    if port != Some(app.bound.port()) {
        return false;
    }
    if name.eq_ignore_ascii_case("localhost") || (app.tls && !name.is_empty()) {
        return true;
    }
    let Ok(ip) = name
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    else {
        return false;
    };
    ip == app.bound.ip() || app.bound.ip().is_unspecified()
}

fn query_token(query: Option<&str>) -> Option<String> {
    query?
        .split('&')
        .find_map(|p| p.strip_prefix("token="))
        .map(str::to_string)
}

pub(super) fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    value.strip_prefix("Bearer ").map(|t| t.trim().to_string())
}

pub(super) fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (k, v) = pair.trim().split_once('=')?;
            (k == name).then(|| v.to_string())
        })
}

/// Compares in time that does not depend on where the strings differ.
pub(super) fn same(given: &str, token: &str) -> bool {
    let (a, b) = (given.as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Why a request was refused before it reached a route.
struct Refusal {
    status: StatusCode,
    message: &'static str,
}

fn refuse(status: StatusCode, message: &'static str) -> Refusal {
    Refusal { status, message }
}

/// The error code a refusal stands for, as the metrics count it.
fn refusal_code(status: StatusCode) -> questions_core::error::ErrorCode {
    use questions_core::error::ErrorCode;
    match status {
        StatusCode::UNAUTHORIZED => ErrorCode::Unauthorized,
        StatusCode::FORBIDDEN => ErrorCode::Forbidden,
        StatusCode::NOT_FOUND => ErrorCode::NotFound,
        _ => ErrorCode::Usage,
    }
}

impl Refusal {
    fn page(self) -> Response {
        let body = format!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>Questions</title><link rel=\"stylesheet\" href=\"/assets/inbox.css\">\
             </head><body><main><p class=\"flash failed\" role=\"alert\">{}</p></main></body></html>\n",
            crate::page::esc(self.message)
        );
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            body,
        )
            .into_response();
        response.extensions_mut().insert(refusal_code(self.status));
        response
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let err = questions_core::error::Error::usage(self.message);
        let body = questions_core::ops::failure(Some(questions_core::ops::Procedure::Serve), &err);
        let mut response = (self.status, axum::Json(body)).into_response();
        response.extensions_mut().insert(refusal_code(self.status));
        response
    }
}
