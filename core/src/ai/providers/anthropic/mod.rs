//! api `anthropic-messages`: Anthropic's Messages API over SSE, spoken by Anthropic itself and
//! by Anthropic-compatible endpoints (Vercel AI Gateway, Fireworks, Cloudflare AI Gateway,
//! GitHub Copilot, MiniMax, Kimi, Xiaomi, OpenCode; pi's `providers/anthropic.ts`).
//!
//! `POST {baseUrl}/v1/messages`. Authentication follows pi: `x-api-key` for API keys, Bearer for
//! Claude subscription tokens (`sk-ant-oat…`, sent with Claude Code's identity) and for Copilot,
//! `cf-aig-authorization` for the Cloudflare gateway ([`auth`]).

pub(crate) mod auth;
pub(crate) mod compat;
pub(crate) mod output_schema;
pub(crate) mod request;
pub(crate) mod response;

use self::auth::{AuthMode, HeaderInputs};
use self::compat::Compat;
use self::request::{BodyInputs, supports_adaptive_thinking};
use self::response::{ENDED_BEFORE_MESSAGE_STOP, EventState};
use super::api_key::required_key;
use super::http;
use crate::ai::error::ProviderError;
use crate::ai::event_stream::StreamWriter;
use crate::ai::model::Model;
use crate::ai::options::StreamOptions;
use crate::ai::types::Context;

/// The api id.
pub(crate) const API: &str = "anthropic-messages";

/// The `anthropic-messages` provider.
#[derive(Debug, Default, Clone, Copy)]
pub struct AnthropicProvider;

http::api_provider! { AnthropicProvider, API, prepare, request::simple_options }

fn prepare(
    model: &Model,
    context: &Context,
    options: &StreamOptions,
) -> Result<http::PreparedRequest<MessagesWire>, ProviderError> {
    let base_url = auth::resolve_base_url(model)?;
    let key = required_key(options, &model.provider, &base_url)?;
    let mode = AuthMode::detect(&model.provider, key.as_ref());
    let oauth = mode == AuthMode::OAuth;
    let compat = Compat::for_model(model);
    let body = options.payload(
        request::build_body(BodyInputs {
            model,
            context,
            options,
            compat,
            oauth,
        }),
        model,
    )?;

    let has_tools = context
        .tools
        .as_ref()
        .is_some_and(|tools| !tools.is_empty());
    let mut betas = Vec::new();
    if has_tools && !compat.supports_eager_tool_input_streaming {
        betas.push(auth::FINE_GRAINED_TOOL_STREAMING_BETA);
    }
    if options.interleaved_thinking.unwrap_or(true) && !supports_adaptive_thinking(&model.id) {
        betas.push(auth::INTERLEAVED_THINKING_BETA);
    }
    let headers = auth::build_headers(&HeaderInputs {
        model,
        options,
        messages: &context.messages,
        key: key.as_ref(),
        mode,
        betas,
    });
    let oauth_tool_names = oauth.then(|| {
        context
            .tools
            .iter()
            .flatten()
            .map(|tool| tool.name.clone())
            .collect()
    });
    Ok(http::PreparedRequest::new(
        format!(
            "{}/v1/messages",
            base_url.strip_suffix('/').unwrap_or(&base_url)
        ),
        &body,
        headers,
        options,
        MessagesWire { oauth_tool_names },
    ))
}

/// The Messages stream, read to `message_stop`.
pub(crate) struct MessagesWire {
    /// The caller's tool names, when Claude Code's casing must be mapped back (OAuth).
    oauth_tool_names: Option<Vec<String>>,
}

impl http::Wire for MessagesWire {
    fn read(
        self,
        reply: http::Reply<'_>,
    ) -> impl std::future::Future<Output = Result<(), ProviderError>> + Send {
        reply.read_sse(async move |writer, model, events| {
            read_stream(writer, model, events, self.oauth_tool_names).await
        })
    }
}

/// Reads a response body to its end (fuzzing feeds bytes here, without a network).
/// `oauth_tool_names` are the caller's tool names when Claude Code's casing must be mapped back.
pub(crate) async fn read_stream(
    writer: &mut StreamWriter,
    model: &Model,
    events: &mut http::SseEvents,
    oauth_tool_names: Option<Vec<String>>,
) -> Result<(), ProviderError> {
    let mut state = match oauth_tool_names {
        Some(names) => EventState::with_oauth_tool_names(names),
        None => EventState::default(),
    };
    loop {
        let event = match events.next().await {
            Ok(Some(event)) => event,
            Ok(None) => break,
            // The stop reason makes the answer complete: a stall or a cut before
            // `message_stop` takes nothing from it.
            Err(_) if state.complete => break,
            Err(error) => return Err(error),
        };
        let complete_before = state.complete;
        state
            .handle(event.event.as_deref(), &event.data, writer, model)
            .await?;
        if state.stopped || writer.is_closed() {
            break;
        }
        if state.complete && !complete_before {
            events.expect_end();
        }
    }
    if !state.stopped && !writer.is_closed() {
        if state.complete {
            state.close_open(writer).await;
            return Ok(());
        }
        return Err(events.incomplete(ENDED_BEFORE_MESSAGE_STOP));
    }
    Ok(())
}
