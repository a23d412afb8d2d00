//! Local stand-ins for the AWS endpoints the credential chain talks to, on 127.0.0.1: a tiny
//! HTTP/1.1 server answering from a closure (also the GCE metadata server: every answer carries
//! `Metadata-Flavor: Google` and the IMDS token TTL header), and the documents IMDS, ECS and STS
//! answer with.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One request the stand-in saw.
#[derive(Clone, Debug)]
pub struct Seen {
    /// `GET`, `PUT`, `POST`.
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Lower-case names.
    pub headers: Vec<(String, String)>,
    /// The body, as text.
    pub body: String,
}

impl Seen {
    /// The first value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// `(status, content type, body)`.
pub type Answer = (u16, &'static str, String);

/// A stand-in server.
pub struct StandIn {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// Every request, in order.
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

impl StandIn {
    /// Serves `answer` for every request; `None` never answers (a black hole).
    pub async fn start(answer: impl Fn(&Seen) -> Option<Answer> + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let answer = Arc::new(answer);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let log = log.clone();
                let answer = answer.clone();
                tokio::spawn(async move {
                    let Some(request) = read_request(&mut socket).await else {
                        return;
                    };
                    log.lock().unwrap().push(request.clone());
                    match answer(&request) {
                        Some((status, content_type, body)) => {
                            let head = format!(
                                "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\nx-aws-ec2-metadata-token-ttl-seconds: 21600\r\nmetadata-flavor: Google\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                                body.len()
                            );
                            let _ = socket.write_all(head.as_bytes()).await;
                            let _ = socket.write_all(body.as_bytes()).await;
                        }
                        None => tokio::time::sleep(Duration::from_secs(600)).await,
                    }
                });
            }
        });
        Self { url, seen }
    }

    /// The requests whose path starts with `prefix`.
    pub fn to(&self, prefix: &str) -> Vec<Seen> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.path.starts_with(prefix))
            .cloned()
            .collect()
    }
}

async fn read_request(socket: &mut tokio::net::TcpStream) -> Option<Seen> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let path = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some(Seen {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).to_string(),
    })
}

/// `now + seconds` as RFC 3339 UTC (`2030-01-02T03:04:05Z`).
pub fn rfc3339_in(seconds: u64) -> String {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + seconds;
    let (days, rest) = (t / 86_400, t % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// The JSON document IMDS and the ECS endpoint answer with.
pub fn json_credentials(key_id: &str, secret: &str, token: &str, expires_in: u64) -> String {
    serde_json::json!({
        "Code": "Success", "LastUpdated": rfc3339_in(0), "Type": "AWS-HMAC",
        "AccessKeyId": key_id, "SecretAccessKey": secret, "Token": token,
        "Expiration": rfc3339_in(expires_in),
    })
    .to_string()
}

/// STS's XML answer to `action` (`AssumeRole`, `AssumeRoleWithWebIdentity`).
pub fn sts_credentials(action: &str, key_id: &str, secret: &str, token: &str) -> String {
    format!(
        r#"<{action}Response xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <{action}Result>
    <Credentials>
      <AccessKeyId>{key_id}</AccessKeyId>
      <SecretAccessKey>{secret}</SecretAccessKey>
      <SessionToken>{token}</SessionToken>
      <Expiration>{}</Expiration>
    </Credentials>
    <AssumedRoleUser>
      <Arn>arn:aws:sts::123456789012:assumed-role/role/session</Arn>
      <AssumedRoleId>AROAEXAMPLE:session</AssumedRoleId>
    </AssumedRoleUser>
  </{action}Result>
  <ResponseMetadata><RequestId>req-1</RequestId></ResponseMetadata>
</{action}Response>"#,
        rfc3339_in(3600)
    )
}
