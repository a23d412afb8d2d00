//! An agent with a calculator tool answers a question by calling it.
//!
//! Model selection:
//! - `PI_MODEL=provider/model-id` uses that catalog model (e.g. `groq/llama-3.3-70b-versatile`)
//!   with its provider's key from the environment;
//! - `PI_MODEL_JSON='{"id":..,"api":"openai-completions","provider":..,"baseUrl":..}'` uses that
//!   model (with its provider's key from the environment, if it needs one);
//! - else `OPENAI_API_KEY` uses `gpt-4o-mini` on api.openai.com;
//! - else the built-in faux provider plays the model, so the example works offline.
//!
//! Run: `cargo run -p pi-agent-examples --example agent`

use std::sync::Arc;

use pi_agent::agent::{Agent, AgentEvent, AgentOptions, AgentToolResult, FnTool, ToolError};
use pi_agent::ai::providers::faux::{
    FauxProvider, FauxResponse, faux_assistant_message, faux_text, faux_tool_call,
};
use pi_agent::ai::{Message, Model, UserContent};
use serde_json::json;

const QUESTION: &str = "What is 6 * 7? Use the calculator.";

/// Evaluates `+ - * /` with parentheses over decimal numbers.
fn evaluate(expression: &str) -> Result<f64, String> {
    struct Parser<'a> {
        chars: std::iter::Peekable<std::str::Chars<'a>>,
    }
    impl Parser<'_> {
        fn skip(&mut self) {
            while self.chars.peek().is_some_and(|c| c.is_whitespace()) {
                self.chars.next();
            }
        }
        fn expression(&mut self) -> Result<f64, String> {
            let mut value = self.term()?;
            loop {
                self.skip();
                match self.chars.peek() {
                    Some('+') => {
                        self.chars.next();
                        value += self.term()?;
                    }
                    Some('-') => {
                        self.chars.next();
                        value -= self.term()?;
                    }
                    _ => return Ok(value),
                }
            }
        }
        fn term(&mut self) -> Result<f64, String> {
            let mut value = self.factor()?;
            loop {
                self.skip();
                match self.chars.peek() {
                    Some('*') => {
                        self.chars.next();
                        value *= self.factor()?;
                    }
                    Some('/') => {
                        self.chars.next();
                        let divisor = self.factor()?;
                        if divisor == 0.0 {
                            return Err("division by zero".into());
                        }
                        value /= divisor;
                    }
                    _ => return Ok(value),
                }
            }
        }
        fn factor(&mut self) -> Result<f64, String> {
            self.skip();
            match self.chars.peek() {
                Some('(') => {
                    self.chars.next();
                    let value = self.expression()?;
                    self.skip();
                    match self.chars.next() {
                        Some(')') => Ok(value),
                        _ => Err("missing `)`".into()),
                    }
                }
                Some('-') => {
                    self.chars.next();
                    Ok(-self.factor()?)
                }
                _ => {
                    let mut number = String::new();
                    while let Some(c) = self
                        .chars
                        .peek()
                        .copied()
                        .filter(|c| c.is_ascii_digit() || *c == '.')
                    {
                        number.push(c);
                        self.chars.next();
                    }
                    number
                        .parse()
                        .map_err(|_| format!("expected a number, found `{number}`"))
                }
            }
        }
    }
    let mut parser = Parser {
        chars: expression.chars().peekable(),
    };
    let value = parser.expression()?;
    parser.skip();
    match parser.chars.next() {
        None => Ok(value),
        Some(c) => Err(format!("unexpected `{c}` in `{expression}`")),
    }
}

fn calculator() -> FnTool {
    FnTool::new(
        "calculator",
        "Evaluates an arithmetic expression with + - * / and parentheses.",
        json!({
            "type": "object",
            "properties": {"expression": {"type": "string", "description": "e.g. 6 * 7"}},
            "required": ["expression"]
        }),
        |call| async move {
            let expression = call.arguments["expression"].as_str().unwrap_or_default();
            let value = evaluate(expression).map_err(ToolError::new)?;
            Ok(AgentToolResult::text(value.to_string()).with_details(json!({"value": value})))
        },
    )
}

/// A faux model that calls the calculator, then reports what the tool returned.
fn offline_model() -> Model {
    let faux = FauxProvider::register();
    faux.push(faux_assistant_message(vec![faux_tool_call(
        "calculator",
        json!({"expression": "6 * 7"}),
    )]));
    faux.push(FauxResponse::Factory(Arc::new(|context, _, _, _| {
        let result = context
            .messages
            .iter()
            .rev()
            .find_map(|message| match message {
                Message::ToolResult(result) => {
                    result.content.iter().find_map(|block| match block {
                        UserContent::Text(text) => Some(text.text.clone()),
                        _ => None,
                    })
                }
                _ => None,
            });
        faux_assistant_message(vec![faux_text(format!(
            "6 * 7 = {}",
            result.unwrap_or_else(|| "unknown".into())
        ))])
    })));
    faux.model()
}

fn choose_model() -> Result<Model, String> {
    if let Ok(spec) = std::env::var("PI_MODEL") {
        return pi_agent::ai::resolve_model(&spec)
            .ok_or_else(|| format!("PI_MODEL: no catalog model `{spec}`"));
    }
    if let Ok(json) = std::env::var("PI_MODEL_JSON") {
        return serde_json::from_str(&json).map_err(|error| format!("PI_MODEL_JSON: {error}"));
    }
    if std::env::var("OPENAI_API_KEY").is_ok_and(|key| !key.is_empty()) {
        return Ok(Model::new(
            "openai-completions",
            "openai",
            "gpt-4o-mini",
            "https://api.openai.com/v1",
        ));
    }
    Ok(offline_model())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = choose_model()?;
    println!("model: {}/{}", model.provider, model.id);
    let agent = Agent::new(AgentOptions {
        system_prompt: "You answer arithmetic questions with the calculator tool.".into(),
        model: Some(model),
        tools: vec![Arc::new(calculator())],
        ..AgentOptions::default()
    });
    agent.subscribe(|event| match event {
        AgentEvent::ToolExecutionStart {
            tool_name, args, ..
        } => println!("→ {tool_name}({args})"),
        AgentEvent::ToolExecutionEnd {
            result, is_error, ..
        } => {
            println!(
                "← {} {}",
                if *is_error { "error" } else { "ok" },
                json!(result.content)
            );
        }
        _ => {}
    });
    agent.prompt(QUESTION).await?;
    let messages = agent.messages();
    let answer = messages
        .last()
        .and_then(|m| m.as_assistant())
        .ok_or("no answer")?;
    if let Some(error) = &answer.error_message {
        return Err(format!("the model failed: {error}").into());
    }
    println!("{}", answer.text());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::evaluate;

    #[test]
    fn evaluates() {
        assert_eq!(evaluate("6 * 7"), Ok(42.0));
        assert_eq!(evaluate("(1 + 2) * -3 / 2"), Ok(-4.5));
        assert!(evaluate("1 / 0").is_err());
        assert!(evaluate("2 +").is_err());
    }
}
