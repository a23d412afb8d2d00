//! Typed answers through C: one call that returns the validated JSON value
//! (`pi_complete_structured_json`), an agent whose runs end in a value
//! (`pi_agent_set_output_schema_json`, `pi_agent_run_output_json`). The schema is JSON: core's
//! `OutputSchema` (`{"name":"weather","schema":{...},"strict":true}`) or a bare JSON Schema.

use std::ffi::c_char;

use ::pi_agent::ai::{
    AssistantMessage, Context, ErrorKind, OutputSchema, StructuredError, complete_structured_value,
};

use crate::agent::pi_agent;
use crate::agent_run::pi_agent_run;
use crate::args::{Out, arg_json, arg_opt_str, arg_str, method};
use crate::boundary::lock;
use crate::error::{parse_json, pi_error, pi_error_kind, to_json};
use crate::model::pi_model;
use crate::options::stream_options;
use crate::runtime::block_on;
use crate::string::into_c_string;

fn output_schema(json: &str, name: &str) -> Result<OutputSchema, pi_error> {
    let value = parse_json(json, name)?;
    OutputSchema::from_json_value(value).map_err(|error| pi_error::invalid_json(name, &error))
}

/// Asks `model` for an answer that follows `schema_json` (core's `complete_structured_value`:
/// pi's `completeSimple` with `outputSchema` set, sent by the API's native structured-output
/// mechanism or a forced tool) and blocks until it has arrived and validated. Writes the
/// answer, a JSON value, to `*value_out`; when `message_out` is not NULL, writes the assistant
/// message JSON to `*message_out` whenever a request was made, on failure too (free both with
/// `pi_string_free`). `context_json` and `options_json` (nullable) are as for
/// `pi_stream_open`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`, `VALIDATION_FAILED` (the answer
/// does not match the schema: the message is the validation report, the message's `errorKind`
/// is `invalid_output`; or the model called tools instead of answering, which one call does not
/// run), `REQUEST_FAILED` (the request failed: the message is its
/// `errorMessage`), `CALLED_FROM_CALLBACK`, `RUNTIME`.
/// Thread-safety: may be called from any thread; not from a callback (it blocks).
#[unsafe(no_mangle)]
pub extern "C" fn pi_complete_structured_json(
    model: *const pi_model,
    context_json: *const c_char,
    options_json: *const c_char,
    schema_json: *const c_char,
    value_out: *mut *mut c_char,
    message_out: *mut *mut c_char,
) -> *mut pi_error {
    method(model, "model", |model| {
        let context: Context = arg_json(context_json, "context_json")?;
        let options = stream_options(arg_opt_str(options_json, "options_json")?)?;
        let schema = output_schema(arg_str(schema_json, "schema_json")?, "schema_json")?;
        let out = Out::new(value_out, "value_out")?;
        let answer = block_on(
            "pi_complete_structured_json",
            complete_structured_value(&model.model, &context, &options, schema),
        )?;
        let write_message = |message: &AssistantMessage| -> Result<(), pi_error> {
            if !message_out.is_null() {
                Out::new(message_out, "message_out")?
                    .write(into_c_string(to_json(message, "message")?));
            }
            Ok(())
        };
        match answer {
            Ok(answer) => {
                write_message(&answer.message)?;
                out.write_json(&answer.value, "value")
            }
            Err(error) => {
                let (message, kind) = match &error {
                    StructuredError::Failed { message }
                        if message.error_kind == Some(ErrorKind::InvalidOutput) =>
                    {
                        (message, pi_error_kind::ValidationFailed)
                    }
                    StructuredError::Failed { message } => (message, pi_error_kind::RequestFailed),
                    StructuredError::Deserialize { message, .. }
                    | StructuredError::ToolCalls { message } => {
                        (message, pi_error_kind::ValidationFailed)
                    }
                    _ => return Err(pi_error::runtime(error.to_string())),
                };
                write_message(message)?;
                Err(pi_error::new(kind, error.to_string()))
            }
        }
    })
}

/// Makes the agent's runs end in a value that follows `schema_json` (core's
/// `AgentSettings.outputSchema`; NULL removes it): every model call asks for it, tools stay
/// usable, the final answer is validated, and one that does not validate is re-asked with the
/// validation report up to `retries` times (pydantic-ai's output retries; 1 is the default of
/// the other layers). Read the value with `pi_agent_run_output_json`.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_UTF8`, `INVALID_JSON`.
/// Thread-safety: may be called from any thread; a run already going keeps its schema.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_set_output_schema_json(
    agent: *mut pi_agent,
    schema_json: *const c_char,
    retries: u32,
) -> *mut pi_error {
    method(agent, "agent", |agent| {
        let schema = arg_opt_str(schema_json, "schema_json")?
            .map(|json| output_schema(json, "schema_json"))
            .transpose()?;
        agent.shared.agent.update_settings(|settings| {
            settings.output_retries = schema.as_ref().map(|_| retries);
            settings.output_schema = schema;
        });
        Ok(())
    })
}

/// Blocks until the run has ended (as `pi_agent_run_result_json`) and writes its answer, the
/// validated JSON value, to `*json_out` (free it with `pi_string_free`): `null` when the agent
/// has no output schema or the run ended without a valid answer (its last message then says
/// why: `errorKind` `invalid_output` once the re-asks are used up, or another failure).
///
/// Errors: `NULL_ARGUMENT`, `CALLED_FROM_CALLBACK`.
/// Thread-safety: as `pi_agent_run_result_json`.
#[unsafe(no_mangle)]
pub extern "C" fn pi_agent_run_output_json(
    run: *mut pi_agent_run,
    json_out: *mut *mut c_char,
) -> *mut pi_error {
    method(run, "run", |run| {
        let out = Out::new(json_out, "json_out")?;
        crate::agent_run::finish(run)?;
        let state = lock(&run.state);
        out.write_json(&state.output, "output")
    })
}
