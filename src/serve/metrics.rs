//! `GET /metrics`: the server in Prometheus' text format (the `prometheus-client`
//! crate's encoder), for the server's own token or on `--metrics-bind` alone.
//!
//! - `questions_http_requests_total{route,status}` and
//!   `questions_http_request_duration_seconds{route}`: every request, by the route it
//!   matched (`other` for none), never its path;
//! - `questions_refusals_total{code,role}`: requests refused, by error code and the role
//!   of the token that made them (`none` without one);
//! - `questions_waiters`: long polls held now;
//! - `questions_pending{stage}`: questions pending, read from the ledger at each scrape;
//! - `questions_answer_seconds`: from a question's logging to its answer, skip, decline
//!   or settlement, for those this server saw happen while it ran;
//! - `questions_request_log_dropped_total`: log lines dropped (see `reqlog`).

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use super::reqlog::Actor;
use super::App;
use questions_core::error::ErrorCode;
use questions_core::model::{EventKind, Status};
use questions_core::ops;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Route {
    route: String,
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteOnly {
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Refusal {
    code: String,
    role: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Stage {
    stage: String,
}

type Timings = Family<RouteOnly, Histogram, fn() -> Histogram>;

pub(crate) struct Metrics {
    registry: Mutex<Registry>,
    requests: Family<Route, Counter>,
    durations: Timings,
    refusals: Family<Refusal, Counter>,
    waiters: Gauge,
    pending: Family<Stage, Gauge>,
    answered: Histogram,
    dropped: Counter<u64, AtomicU64>,
}

fn request_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 4.0, 9))
}

impl Metrics {
    pub(crate) fn new() -> Arc<Metrics> {
        let metrics = Metrics {
            registry: Mutex::new(Registry::with_prefix("questions")),
            requests: Family::default(),
            durations: Family::new_with_constructor(request_buckets),
            refusals: Family::default(),
            waiters: Gauge::default(),
            pending: Family::default(),
            // A second to a week.
            answered: Histogram::new(exponential_buckets(1.0, 4.0, 10)),
            dropped: Counter::default(),
        };
        {
            let mut r = metrics
                .registry
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            r.register(
                "http_requests",
                "Requests answered, by route and status",
                metrics.requests.clone(),
            );
            r.register(
                "http_request_duration_seconds",
                "Time to answer a request, by route (a held wait included)",
                metrics.durations.clone(),
            );
            r.register(
                "refusals",
                "Requests refused, by error code and the role of the token",
                metrics.refusals.clone(),
            );
            r.register("waiters", "Long polls held now", metrics.waiters.clone());
            r.register(
                "pending",
                "Questions pending, by stage",
                metrics.pending.clone(),
            );
            r.register(
                "answer_seconds",
                "Time from a question's logging to its answer, skip, decline or settlement",
                metrics.answered.clone(),
            );
            r.register(
                "request_log_dropped",
                "Request log lines dropped because stderr did not keep up",
                metrics.dropped.clone(),
            );
        }
        Arc::new(metrics)
    }

    /// A long poll held from now until the guard is dropped.
    pub(super) fn waiting(self: &Arc<Self>) -> Waiting {
        self.waiters.inc();
        Waiting(Arc::clone(self))
    }

    /// The events after a change: each question decided adds its time since logging.
    pub(super) fn decided(&self, events: &[questions_core::model::Event]) {
        for event in events {
            if !matches!(
                event.event,
                EventKind::Answered
                    | EventKind::Skipped
                    | EventKind::Declined
                    | EventKind::Approved
                    | EventKind::Rejected
                    | EventKind::Defaulted
            ) {
                continue;
            }
            let Some(q) = &event.after else { continue };
            let parse = |t: &str| chrono::DateTime::parse_from_rfc3339(t).ok();
            if let (Some(from), Some(to)) = (parse(&q.created_at), parse(&event.at)) {
                let secs = (to - from).num_milliseconds().max(0) as f64 / 1000.0;
                self.answered.observe(secs);
            }
        }
    }
}

/// A long poll held (see `Metrics::waiting`).
pub(super) struct Waiting(Arc<Metrics>);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.waiters.dec();
    }
}

/// Counts a request answered (`reqlog::observe` calls it for every one).
pub(super) fn request(
    app: &App,
    route: &str,
    status: u16,
    took: Duration,
    actor: &Actor,
    response: &Response,
) {
    let m = &app.metrics;
    m.requests
        .get_or_create(&Route {
            route: route.to_string(),
            status: status.to_string(),
        })
        .inc();
    m.durations
        .get_or_create(&RouteOnly {
            route: route.to_string(),
        })
        .observe(took.as_secs_f64());
    if let Some(code) = response.extensions().get::<ErrorCode>() {
        let role = actor.get().map_or("none", |(_, role)| role);
        m.refusals
            .get_or_create(&Refusal {
                code: code.as_str().to_string(),
                role: role.to_string(),
            })
            .inc();
    }
}

/// The text exposition, with the pending questions read now.
pub(super) async fn render(app: &Arc<App>) -> Response {
    let pending = app
        .ledger(|l| {
            ops::list(
                l,
                &ops::Filter {
                    status: Some(Status::Pending),
                    ..ops::Filter::default()
                },
            )
        })
        .await;
    let m = &app.metrics;
    if let Ok(questions) = pending {
        let mut by_stage: BTreeMap<String, i64> = BTreeMap::new();
        for q in questions {
            *by_stage.entry(q.stage).or_default() += 1;
        }
        m.pending.clear();
        for (stage, n) in by_stage {
            m.pending.get_or_create(&Stage { stage }).set(n);
        }
    }
    let dropped = app.log.dropped();
    let counted = m.dropped.get();
    if dropped > counted {
        m.dropped.inc_by(dropped - counted);
    }
    let mut text = String::new();
    let encoded = {
        let registry = m.registry.lock().unwrap_or_else(PoisonError::into_inner);
        prometheus_client::encoding::text::encode(&mut text, &registry)
    };
    if encoded.is_err() {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            "cannot encode the metrics\n",
        )
            .into_response();
    }
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

/// `GET /metrics` on the server's port: the server's own token only (the guard has let
/// a token through; a person's is refused here).
pub(super) async fn metrics(
    State(app): State<Arc<App>>,
    axum::Extension(person): axum::Extension<super::guard::Person>,
) -> Response {
    if person.0.is_some() {
        let err = questions_core::error::Error::new(
            ErrorCode::Forbidden,
            "the metrics are for the server's own token, or --metrics-bind",
        );
        return super::api::Failed::of(ops::Procedure::Serve)(err).into_response();
    }
    render(&app).await
}
