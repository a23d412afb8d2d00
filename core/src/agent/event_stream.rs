//! `agent_loop` and `agent_loop_continue` as streams: the loop runs on its own task and its
//! events arrive through a [`futures::Stream`], with the run's new messages from
//! [`AgentEventStream::result`].
//!
//! Unlike pi's, this stream always ends: if the loop fails (a panicking hook or `stream_fn`),
//! the stream carries a failure message (`message_start`, `message_end`) and `agent_end`.

use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use futures::{FutureExt, Stream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::agent_loop::{
    check_can_continue, run_agent_loop, run_agent_loop_continue, run_failure_message,
};
use super::config::{AgentContext, AgentLoopConfig};
use super::error::AgentError;
use super::event::AgentEvent;
use super::message::AgentMessage;
use crate::ai::providers::faux::panic_text;

/// The events of one loop run; ends after `agent_end`.
#[derive(Debug)]
pub struct AgentEventStream {
    rx: mpsc::UnboundedReceiver<AgentEvent>,
    new_messages: Option<Vec<AgentMessage>>,
}

impl AgentEventStream {
    /// Drains the remaining events and returns the messages the run added (`agent_end`'s).
    pub async fn result(mut self) -> Vec<AgentMessage> {
        while futures::StreamExt::next(&mut self).await.is_some() {}
        self.new_messages.unwrap_or_default()
    }
}

impl Stream for AgentEventStream {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<AgentEvent>> {
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(event)) => {
                if let AgentEvent::AgentEnd { messages } = &event {
                    self.new_messages = Some(messages.clone());
                }
                Poll::Ready(Some(event))
            }
            other => other,
        }
    }
}

fn spawn_run<F>(config: &AgentLoopConfig, signal: &CancellationToken, run: F) -> AgentEventStream
where
    F: FnOnce(mpsc::UnboundedSender<AgentEvent>) -> futures::future::BoxFuture<'static, ()>,
{
    let (tx, rx) = mpsc::unbounded_channel();
    let failure_tx = tx.clone();
    let model = config.model.clone();
    let signal = signal.clone();
    let future = run(tx);
    tokio::spawn(async move {
        if let Err(panic) = std::panic::AssertUnwindSafe(future).catch_unwind().await {
            let message: AgentMessage =
                run_failure_message(&model, &panic_text(&*panic), signal.is_cancelled()).into();
            let _ = failure_tx.send(AgentEvent::MessageStart {
                message: message.clone(),
            });
            let _ = failure_tx.send(AgentEvent::MessageEnd {
                message: message.clone(),
            });
            let _ = failure_tx.send(AgentEvent::AgentEnd {
                messages: vec![message],
            });
        }
    });
    AgentEventStream {
        rx,
        new_messages: None,
    }
}

/// Starts the loop with `prompts` on a new task (pi's `agentLoop`). Call from a tokio runtime.
pub fn agent_loop(
    prompts: Vec<AgentMessage>,
    context: AgentContext,
    config: AgentLoopConfig,
    signal: CancellationToken,
) -> AgentEventStream {
    let task_signal = signal.clone();
    spawn_run(&config.clone(), &signal, move |tx| {
        async move {
            let mut emit = move |event: AgentEvent| {
                let _ = tx.send(event);
            };
            run_agent_loop(prompts, context, &config, task_signal, &mut emit).await;
        }
        .boxed()
    })
}

/// Starts the loop from the transcript (pi's `agentLoopContinue`); fails at once, like pi, when
/// the transcript is empty or ends with an assistant message.
pub fn agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    signal: CancellationToken,
) -> Result<AgentEventStream, AgentError> {
    check_can_continue(&context.messages)?;
    let task_signal = signal.clone();
    Ok(spawn_run(&config.clone(), &signal, move |tx| {
        async move {
            let mut emit = move |event: AgentEvent| {
                let _ = tx.send(event);
            };
            let _ = run_agent_loop_continue(context, &config, task_signal, &mut emit).await;
        }
        .boxed()
    }))
}
