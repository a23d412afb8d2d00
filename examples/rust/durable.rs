//! The agent loop driven by hand through the sans-IO step API, with the session stored after
//! every step — what a durable-execution engine does (each model call and tool batch would be an
//! activity; the stored stepper is the workflow state).
//!
//! The "store" here is a JSON string the loop writes after each step and reads back before the
//! next one, so the whole session could move to another process between any two steps. Runs
//! offline on the faux provider.
//!
//! Run: `cargo run -p pi-agent-examples --example durable`

use std::sync::Arc;

use pi_agent::agent::{
    AgentLoopConfig, AgentStepper, AgentTool, AgentToolResult, FnTool, RunStart, StepAction,
    StepInput, StepperConfig, ToolOutcome, call_model, execute_tool_calls,
};
use pi_agent::ai::UserMessage;
use pi_agent::ai::providers::faux::{
    FauxProvider, faux_assistant_message, faux_text, faux_tool_call,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// The loop's events go to stdout (an engine would publish them to its subscribers).
fn print_event(event: pi_agent::agent::AgentEvent) {
    match &event {
        pi_agent::agent::AgentEvent::MessageEnd { message } => {
            println!("{:<12} {}", message.role(), summary(message));
        }
        other => println!("{:<12}", other.kind()),
    }
}

fn summary(message: &pi_agent::agent::AgentMessage) -> String {
    serde_json::to_value(message)
        .ok()
        .and_then(|value| {
            value["content"]
                .as_array()
                .map(|blocks| json!(blocks).to_string())
                .or_else(|| value["content"].as_str().map(str::to_owned))
        })
        .unwrap_or_default()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(vec![faux_tool_call(
        "multiply",
        json!({"a": 6, "b": 7}),
    )]));
    faux.push(faux_assistant_message(vec![faux_text("6 × 7 = 42.")]));
    let multiply: Arc<dyn AgentTool> = Arc::new(FnTool::new(
        "multiply",
        "Multiplies two numbers",
        json!({"type": "object", "required": ["a", "b"],
               "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
        |call| async move {
            let product = call.arguments["a"].as_f64().unwrap_or(0.0)
                * call.arguments["b"].as_f64().unwrap_or(0.0);
            Ok(AgentToolResult::text(product.to_string()))
        },
    ));
    let tools = vec![multiply];
    let config = AgentLoopConfig::new(faux.model());
    let signal = CancellationToken::new();
    let mut sink = print_event;

    let (stepper, mut step) = AgentStepper::start(
        StepperConfig::default(),
        "Use the tools.".into(),
        Vec::new(),
        RunStart::Prompt {
            prompts: vec![UserMessage::text("What is 6 * 7?").into()],
        },
    );
    let mut stored = serde_json::to_string(&stepper)?;
    loop {
        for event in step.events {
            print_event(event);
        }
        // Every step starts from the stored state, as after a restart.
        let mut stepper: AgentStepper = serde_json::from_str(&stored)?;
        let input = match step.action {
            StepAction::Finished { new_messages } => {
                println!("finished with {} new messages", new_messages.len());
                return Ok(());
            }
            StepAction::PollSteering => StepInput::Steering {
                messages: Vec::new(),
            },
            StepAction::PollFollowUp => StepInput::FollowUp {
                messages: Vec::new(),
            },
            StepAction::CallModel => call_model(
                stepper.system_prompt(),
                stepper.messages(),
                &tools,
                &config,
                &signal,
                &mut sink,
            )
            .await
            .into(),
            StepAction::ExecuteTools {
                assistant_message,
                tool_calls,
                mode,
            } => {
                let outcomes: Vec<ToolOutcome> = execute_tool_calls(
                    &assistant_message,
                    tool_calls,
                    mode,
                    &tools,
                    &config,
                    &signal,
                    &mut sink,
                )
                .await;
                StepInput::ToolResults { outcomes }
            }
            StepAction::ShouldStopAfterTurn(_) => StepInput::ShouldStop { stop: false },
            other => return Err(format!("unexpected action {other:?}").into()),
        };
        step = stepper.resume(input)?;
        stored = serde_json::to_string(&stepper)?;
    }
}
