//! The `bytes_b64` reply: binary bodies (e.g. AWS eventstream frames) given as base64 pieces.

use base64::Engine as _;
use serde_json::Value;

/// `Content-Type` of a `bytes_b64` reply unless `headers` overrides it.
pub(crate) const DEFAULT_CONTENT_TYPE: &str = "application/octet-stream";

/// Decodes `"bytes_b64": "<base64>"` or `["<base64>", ...]` into the pieces to send, one write
/// (one HTTP chunk) each unless the reply's shaping splits them.
pub(crate) fn decode_pieces(value: &Value) -> Result<Vec<Vec<u8>>, String> {
    let decode = |text: &str| {
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| format!("`bytes_b64` piece is not valid base64: {e}"))
    };
    match value {
        Value::String(text) => Ok(vec![decode(text)?]),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(text) => decode(text),
                other => Err(format!(
                    "`bytes_b64` array elements must be base64 strings, got {other}"
                )),
            })
            .collect(),
        other => Err(format!(
            "`bytes_b64` must be a base64 string or an array of them, got {other}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use crate::MockServer;

    /// The status line, headers and de-chunked body of one response.
    async fn fetch(server: &MockServer) -> (String, Vec<u8>) {
        let mut stream = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
        stream
            .write_all(
                b"POST /model/m/converse-stream HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}",
            )
            .await
            .unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.unwrap();
        let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        let head = String::from_utf8(raw[..split].to_vec()).unwrap();
        let mut rest = &raw[split + 4..];
        let mut body = Vec::new();
        loop {
            let line_end = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let size =
                usize::from_str_radix(std::str::from_utf8(&rest[..line_end]).unwrap(), 16).unwrap();
            rest = &rest[line_end + 2..];
            if size == 0 {
                return (head, body);
            }
            body.extend_from_slice(&rest[..size]);
            rest = &rest[size + 2..];
        }
    }

    #[tokio::test]
    async fn bytes_are_sent_verbatim_with_their_content_type() {
        let server = MockServer::start().await.unwrap();
        // 0x00 0xff 0x10 | "AB" | 0x80
        server.push(
            json!({"bytes_b64": ["AP8Q", "QUI=", "gA=="], "split_random": 3,
            "headers": {"content-type": "application/vnd.amazon.eventstream"}}),
        );
        server.push(json!({"bytes_b64": "AP8Q"}));
        let (head, body) = fetch(&server).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(
            head.contains("application/vnd.amazon.eventstream"),
            "{head}"
        );
        assert_eq!(body, [0x00, 0xff, 0x10, b'A', b'B', 0x80]);
        let (head, body) = fetch(&server).await;
        assert!(head.contains("application/octet-stream"), "{head}");
        assert_eq!(body, [0x00, 0xff, 0x10]);
        assert_eq!(server.requests()[0].path, "/model/m/converse-stream");
    }

    #[test]
    fn bad_pieces_are_rejected() {
        for bad in [
            json!({"bytes_b64": "not base64!"}),
            json!({"bytes_b64": [1, 2]}),
            json!({"bytes_b64": {"a": 1}}),
            json!({"bytes_b64": "AA==", "sse": "data: x\n\n"}),
            json!({"bytes_b64": "AA==", "text": "hi"}),
        ] {
            assert!(crate::validate_reply(&bad).is_err(), "{bad}");
        }
        assert!(crate::validate_reply(&json!({"bytes_b64": ["AA==", ""], "status": 500})).is_ok());
    }
}
