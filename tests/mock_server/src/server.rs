//! Accept loop and routing.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::http::{self, ReadError, Request};
use crate::script::{self, Ctx, Plan};
use crate::{RecordedRequest, Shared};

/// Accepts connections until the shutdown sender is dropped.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    shutdown: watch::Receiver<()>,
) {
    let mut stop = shutdown.clone();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // e.g. EMFILE: back off a little instead of spinning.
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                };
                shared.lock().connections += 1;
                let shared = Arc::clone(&shared);
                let mut stop = shutdown.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        () = handle(stream, &shared) => {}
                        _ = stop.changed() => {}
                    }
                });
            }
            _ = stop.changed() => return,
        }
    }
}

fn error_body(message: &str, kind: &str) -> Value {
    json!({"error": {"message": message, "type": kind}})
}

/// Serves one connection: one request, one response, close.
async fn handle(mut stream: TcpStream, shared: &Shared) {
    let _ = stream.set_nodelay(true);
    // Keep-alive, as real servers: requests are answered one after another on a connection
    // until the client closes it or asks to (`connection: close`), or a reply scripts a
    // fault (a drop or a stall), after which the connection is not used again.
    loop {
        let (plan, closes) = match http::read_request(&mut stream).await {
            Ok(request) if crate::websocket::is_upgrade(&request) => {
                return crate::websocket::serve(stream, request, shared).await;
            }
            Ok(request) => {
                let closes = request
                    .header("connection")
                    .is_some_and(|value| value.eq_ignore_ascii_case("close"));
                (route(&request, shared), closes)
            }
            Err(ReadError::Closed | ReadError::Io) => return,
            Err(ReadError::Malformed(msg)) => (
                Plan::json(
                    400,
                    &error_body(
                        &format!("mock server: malformed request: {msg}"),
                        "invalid_request_error",
                    ),
                ),
                true,
            ),
        };
        let shaping = &plan.shaping;
        let faulty = shaping.drop_after_bytes.is_some()
            || shaping.stall_after_bytes.is_some()
            || shaping.head_stall_ms.is_some();
        let keep_alive = !closes && !faulty;
        let mut plan = plan;
        if keep_alive {
            for (name, value) in &mut plan.headers {
                if name.eq_ignore_ascii_case("connection") {
                    *value = "keep-alive".into();
                }
            }
        }
        let written = http::write_response(
            &mut stream,
            &plan.head(),
            &plan.pieces,
            plan.framing,
            &plan.shaping,
            keep_alive,
        )
        .await;
        if written.is_err() || !keep_alive {
            return;
        }
    }
}

fn parse_body(body: &[u8]) -> Value {
    if body.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
}

fn route(request: &Request, shared: &Shared) -> Plan {
    let path = request.path();
    let method = request.method.as_str();
    if let Some(control) = path.find("/_mock/").map(|i| &path[i + "/_mock/".len()..]) {
        return control_route(method, control, request, shared);
    }

    let body = parse_body(&request.body);
    let recorded = RecordedRequest {
        method: request.method.clone(),
        path: request.target.clone(),
        headers: request.headers.clone(),
        body,
    };
    let mut state = shared.lock();
    state.log.push(recorded.clone());

    // Every POST is served from the script, so one server can play any wire API
    // (chat completions, messages, responses, Gemini, an agent proxy).
    if method != "POST" {
        return Plan::json(
            404,
            &error_body(
                &format!("mock server: no route for {method} {path}"),
                "not_found",
            ),
        );
    }
    let Some(reply) = state.queue.pop_front() else {
        return Plan::json(
            500,
            &error_body("mock server: no scripted reply left", "server_error"),
        );
    };
    state.served += 1;
    let seq = state.served;
    drop(state);
    let ctx = Ctx {
        seq,
        request_model: recorded.body.get("model").and_then(Value::as_str),
    };
    script::plan(&reply, &ctx).unwrap_or_else(|e| {
        Plan::json(
            500,
            &error_body(
                &format!("mock server: invalid scripted reply: {e}"),
                "server_error",
            ),
        )
    })
}

fn control_route(method: &str, control: &str, request: &Request, shared: &Shared) -> Plan {
    match (method, control) {
        ("POST", "replies") => {
            let replies = match parse_body(&request.body) {
                Value::Array(items) => items,
                obj @ Value::Object(_) => vec![obj],
                other => {
                    return Plan::json(
                        400,
                        &error_body(
                            &format!(
                                "mock server: expected a JSON array or object of replies, got {other}"
                            ),
                            "invalid_request_error",
                        ),
                    );
                }
            };
            for (i, reply) in replies.iter().enumerate() {
                if let Err(e) = script::validate(reply) {
                    return Plan::json(
                        400,
                        &error_body(
                            &format!("mock server: invalid reply #{i}: {e}"),
                            "invalid_request_error",
                        ),
                    );
                }
            }
            let n = replies.len();
            shared.lock().queue.extend(replies);
            Plan::json(200, &json!({"queued": n}))
        }
        ("GET", "requests") => {
            let log = shared.lock().log.clone();
            Plan::json(200, &serde_json::to_value(log).unwrap_or(Value::Null))
        }
        ("GET", "pending") => Plan::json(200, &json!({"pending": shared.lock().queue.len()})),
        ("GET", "connections") => {
            Plan::json(200, &json!({"connections": shared.lock().connections}))
        }
        ("POST", "reset") => {
            *shared.lock() = crate::State::default();
            Plan::json(200, &json!({"reset": true}))
        }
        _ => Plan::json(
            404,
            &error_body(
                &format!("mock server: no control route for {method} /_mock/{control}"),
                "not_found",
            ),
        ),
    }
}
