//! Dropping a stream cancels its request: the connection closes even though the server keeps
//! it open and sends nothing more (issue 9: dropped streams kept their task and connection).

use std::time::Duration;

use futures::StreamExt;
use pi_agent::ai::{self, ApiKey, Context, Model, StreamOptions, UserMessage};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Only a guard against a hang; the close is expected at once.
const HANG_GUARD: Duration = Duration::from_secs(30);

#[tokio::test]
async fn dropping_a_stream_closes_its_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = Vec::new();
        let mut buffer = [0u8; 4096];
        // Read the request head and its body (small: ends within the first reads).
        while !String::from_utf8_lossy(&request).contains("\r\n\r\n") {
            let read = socket.read(&mut buffer).await.unwrap();
            request.extend_from_slice(&buffer[..read]);
        }
        let chunk = r#"data: {"id":"c","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#;
        socket
            .write_all(
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{chunk}\n\n\r\n",
                    chunk.len() + 2
                )
                .as_bytes(),
            )
            .await
            .unwrap();
        // Then nothing: only the client can end this connection.
        loop {
            match socket.read(&mut buffer).await {
                Ok(0) | Err(_) => return true,
                Ok(_) => {}
            }
        }
    });
    let model = Model::new(
        "openai-completions",
        "openai",
        "gpt-4o-mini",
        format!("http://127.0.0.1:{port}/v1"),
    );
    let context = Context {
        messages: vec![UserMessage::text("hi").into()],
        ..Context::default()
    };
    let options = StreamOptions {
        api_key: Some(ApiKey::new("k")),
        ..StreamOptions::default()
    };
    let mut stream = ai::stream(&model, &context, &options);
    // Read until the first text delta arrived: the request is streaming.
    while let Some(event) = stream.next().await {
        if event.kind() == "text_delta" {
            break;
        }
    }
    drop(stream);
    let closed = tokio::time::timeout(HANG_GUARD, server)
        .await
        .expect("the connection closes once the stream is dropped")
        .unwrap();
    assert!(closed);
}
