//! The loopback server: passes requests on and keeps the exchanges (record), or answers
//! them from the file (replay).

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::Ipv4Addr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use super::file::{bytes_of, value_of};
use super::secrets::is_secret_param;
use super::{Exchange, Miss, Mode, RecordedBody, RecordedRequest, RecordedResponse, Shared};

type Body = BoxBody<Bytes, Infallible>;

/// The response headers a cassette keeps: what a client reads.
const KEPT_HEADERS: [&str; 6] = [
    "content-type",
    "retry-after",
    "retry-after-ms",
    "x-should-retry",
    "x-request-id",
    "request-id",
];

/// Request headers not passed on: the connection's own, and compression (the cassette
/// keeps bodies as sent, uncompressed).
const HOP_HEADERS: [&str; 8] = [
    "host",
    "connection",
    "content-length",
    "transfer-encoding",
    "keep-alive",
    "upgrade",
    "te",
    "accept-encoding",
];

/// Starts the server on a free loopback port: its URL and its task.
pub(super) async fn serve(
    shared: Arc<Shared>,
) -> std::io::Result<(String, tokio::task::JoinHandle<()>)> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    let url = format!("http://{}", listener.local_addr()?);
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                let service = service_fn(move |request| handle(Arc::clone(&shared), request));
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok((url, task))
}

async fn handle(
    shared: Arc<Shared>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let (parts, body) = request.into_parts();
    let body = match body.collect().await {
        Ok(body) => body.to_bytes(),
        Err(error) => return Ok(error_response(StatusCode::BAD_REQUEST, &error.to_string())),
    };
    let path_and_query = parts.uri.path_and_query().map_or_else(
        || parts.uri.path().to_owned(),
        |value| value.as_str().to_owned(),
    );
    let recorded = {
        let mut state = shared.state();
        state.secrets.learn(
            parts
                .headers
                .iter()
                .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?))),
            parts.uri.query(),
        );
        let text = state.secrets.scrub(&String::from_utf8_lossy(&body));
        RecordedRequest {
            method: parts.method.as_str().to_owned(),
            path: without_secret_params(&path_and_query),
            body: value_of(text.as_bytes()),
        }
    };
    Ok(match shared.mode {
        Mode::Replay => replay(&shared, recorded),
        Mode::Record => {
            record(
                &shared,
                recorded,
                parts.method,
                &path_and_query,
                &parts.headers,
                body,
            )
            .await
        }
    })
}

/// The recorded answer to `request`, or a 400 saying there is none.
fn replay(shared: &Shared, request: RecordedRequest) -> Response<Body> {
    let mut state = shared.state();
    let state = &mut *state;
    let matching = |index: &usize| {
        shared
            .matcher
            .matches(&state.tape.exchanges[*index].request, &request)
    };
    let all = 0..state.tape.exchanges.len();
    let found = all
        .clone()
        .filter(matching)
        .find(|index| !state.used[*index]);
    let found = found.or_else(|| {
        shared
            .allow_repeats
            .then(|| all.clone().rfind(matching))
            .flatten()
    });
    let Some(index) = found else {
        let message = format!(
            "the cassette {} holds no answer for {} {}",
            shared.path.display(),
            request.method,
            request.path
        );
        state.misses.push(Miss { request });
        return error_response(StatusCode::BAD_REQUEST, &message);
    };
    state.used[index] = true;
    let recorded = &state.tape.exchanges[index].response;
    let mut response = Response::new(match &recorded.body {
        RecordedBody::Body(value) => Full::new(Bytes::from(bytes_of(value))).boxed(),
        RecordedBody::Events(events) => paced(
            events
                .iter()
                .map(|event| Bytes::from(format!("{event}\n\n")))
                .collect(),
        ),
    });
    *response.status_mut() =
        StatusCode::from_u16(recorded.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in &recorded.headers {
        if let (Ok(name), Ok(value)) = (
            hyper::header::HeaderName::try_from(name.as_str()),
            HeaderValue::try_from(value.as_str()),
        ) {
            response.headers_mut().insert(name, value);
        }
    }
    if matches!(recorded.body, RecordedBody::Events(_)) {
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    }
    response
}

/// A body of `chunks` sent one at a time: the server writes each before the next is ready.
fn paced(chunks: Vec<Bytes>) -> Body {
    let (sender, receiver) = mpsc::channel::<Bytes>(1);
    tokio::spawn(async move {
        for chunk in chunks {
            if sender.send(chunk).await.is_err() {
                return;
            }
            tokio::task::yield_now().await;
        }
    });
    body_of(receiver)
}

fn body_of(receiver: mpsc::Receiver<Bytes>) -> Body {
    let frames = futures_util::stream::unfold(receiver, |mut receiver| async move {
        let chunk = receiver.recv().await?;
        Some((Ok::<_, Infallible>(Frame::data(chunk)), receiver))
    });
    StreamBody::new(frames).boxed()
}

/// Passes the request on, streams the answer back as it comes, and keeps the exchange once
/// the answer is whole.
async fn record(
    shared: &Arc<Shared>,
    request: RecordedRequest,
    method: hyper::Method,
    path_and_query: &str,
    headers: &HeaderMap,
    body: Bytes,
) -> Response<Body> {
    let Some((upstream, client)) = &shared.upstream else {
        return error_response(StatusCode::INTERNAL_SERVER_ERROR, "no upstream to record");
    };
    let mut outgoing = client.request(method, format!("{upstream}{path_and_query}"));
    for (name, value) in headers {
        if !HOP_HEADERS.contains(&name.as_str()) {
            outgoing = outgoing.header(name, value);
        }
    }
    let mut answer = match outgoing.body(body).send().await {
        Ok(answer) => answer,
        Err(error) => {
            let message = format!("the cassette could not reach {upstream}: {error}");
            return error_response(StatusCode::BAD_GATEWAY, &message);
        }
    };
    let status = answer.status().as_u16();
    let kept: BTreeMap<String, String> = answer
        .headers()
        .iter()
        .filter(|(name, _)| KEPT_HEADERS.contains(&name.as_str()))
        .filter_map(|(name, value)| {
            Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned()))
        })
        .collect();
    let content_type = kept.get("content-type").cloned().unwrap_or_default();
    let mut response = Response::builder().status(status);
    for (name, value) in &kept {
        response = response.header(name, value);
    }
    let (sender, receiver) = mpsc::channel::<Bytes>(16);
    let keeper = Arc::clone(shared);
    let streaming = tokio::spawn(async move {
        let mut whole = Vec::new();
        while let Ok(Some(chunk)) = answer.chunk().await {
            whole.extend_from_slice(&chunk);
            // A client that left does not cut the recording short.
            let _ = sender.send(chunk).await;
        }
        let exchange = Exchange {
            request,
            response: RecordedResponse {
                status,
                headers: kept,
                body: RecordedBody::read(&content_type, &whole),
            },
        };
        let mut state = keeper.state();
        state.tape.exchanges.push(exchange);
        state.used.push(true);
    });
    shared.state().recording.push(streaming);
    response
        .body(body_of(receiver))
        .unwrap_or_else(|error| error_response(StatusCode::BAD_GATEWAY, &error.to_string()))
}

/// `path_and_query` without the query parameters that carry credentials.
fn without_secret_params(path_and_query: &str) -> String {
    let Some((path, query)) = path_and_query.split_once('?') else {
        return path_and_query.to_owned();
    };
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| !is_secret_param(pair.split('=').next().unwrap_or_default()))
        .collect();
    if kept.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", kept.join("&"))
    }
}

/// A JSON error in the shape providers use, so that a run's `ModelError` shows `message`.
fn error_response(status: StatusCode, message: &str) -> Response<Body> {
    let body = json!({"error": {"type": "cassette", "message": message}});
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_leave_the_recorded_path() {
        assert_eq!(
            without_secret_params("/v1beta/models/m:streamGenerateContent?alt=sse&key=AIzaX"),
            "/v1beta/models/m:streamGenerateContent?alt=sse"
        );
        assert_eq!(without_secret_params("/v1/x?key=1"), "/v1/x");
        assert_eq!(without_secret_params("/v1/x"), "/v1/x");
    }
}
