//! `_shape_fields(name)`: the JSON keys core's serde shapes read, so that the package's
//! `TypedDict`s and stubs are checked against core (see `tests/python/test_shapes.py`)
//! instead of being a second list kept by hand.

use pi_agent::agent::{
    AfterToolCallContext, AfterToolCallResult, AgentSettings, AgentToolResult,
    BeforeToolCallContext, BeforeToolCallResult, RunLimits, ShouldStopAfterTurnContext,
    StepperConfig, ToolOutcome,
};
use pi_agent::ai::oauth::{OAuthAuthInfo, OAuthPrompt, OAuthSelectOption, OAuthSelectPrompt};
use pi_agent::ai::{
    AssistantMessage, ErrorKind, GoogleThinking, ImageContent, Model, ModelCost, ResponseTiming,
    RunLimit, StreamOptions, TextContent, ThinkingBudgets, ThinkingContent, Tool, ToolCall,
    ToolResultMessage, ToolTiming, Usage, UsageCost, UserMessage, shape_fields,
};
use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;

/// The JSON keys of core's shape `name` (its Rust type name), aliases included; for the
/// string enums `ErrorKind` and `RunLimit`, their values.
#[pyfunction]
pub(crate) fn _shape_fields(name: &str) -> PyResult<Vec<&'static str>> {
    if name == "ErrorKind" {
        return Ok(ErrorKind::ALL.iter().map(|kind| kind.as_str()).collect());
    }
    if name == "RunLimit" {
        return Ok(RunLimit::ALL.iter().map(|limit| limit.as_str()).collect());
    }
    let fields = match name {
        "StreamOptions" => shape_fields::<StreamOptions>(),
        "ThinkingBudgets" => shape_fields::<ThinkingBudgets>(),
        "GoogleThinking" => shape_fields::<GoogleThinking>(),
        "AgentSettings" => shape_fields::<AgentSettings>(),
        "Model" => shape_fields::<Model>(),
        "ModelCost" => shape_fields::<ModelCost>(),
        "Usage" => shape_fields::<Usage>(),
        "UsageCost" => shape_fields::<UsageCost>(),
        "UserMessage" => shape_fields::<UserMessage>(),
        "AssistantMessage" => shape_fields::<AssistantMessage>(),
        "ToolResultMessage" => shape_fields::<ToolResultMessage>(),
        "TextContent" => shape_fields::<TextContent>(),
        "ThinkingContent" => shape_fields::<ThinkingContent>(),
        "ImageContent" => shape_fields::<ImageContent>(),
        "ToolCall" => shape_fields::<ToolCall>(),
        "ResponseTiming" => shape_fields::<ResponseTiming>(),
        "ToolTiming" => shape_fields::<ToolTiming>(),
        "Tool" => shape_fields::<Tool>(),
        "AgentToolResult" => shape_fields::<AgentToolResult>(),
        "BeforeToolCallContext" => shape_fields::<BeforeToolCallContext>(),
        "BeforeToolCallResult" => shape_fields::<BeforeToolCallResult>(),
        "AfterToolCallContext" => shape_fields::<AfterToolCallContext>(),
        "AfterToolCallResult" => shape_fields::<AfterToolCallResult>(),
        "ShouldStopAfterTurnContext" => shape_fields::<ShouldStopAfterTurnContext>(),
        "StepperConfig" => shape_fields::<StepperConfig>(),
        "RunLimits" => shape_fields::<RunLimits>(),
        "ToolOutcome" => shape_fields::<ToolOutcome>(),
        "OAuthAuthInfo" => shape_fields::<OAuthAuthInfo>(),
        "OAuthPrompt" => shape_fields::<OAuthPrompt>(),
        "OAuthSelectOption" => shape_fields::<OAuthSelectOption>(),
        "OAuthSelectPrompt" => shape_fields::<OAuthSelectPrompt>(),
        _ => None,
    };
    fields
        .map(<[&str]>::to_vec)
        .ok_or_else(|| PyKeyError::new_err(name.to_owned()))
}
