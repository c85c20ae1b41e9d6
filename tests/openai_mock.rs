//! A small OpenAI-protocol server on 127.0.0.1 for the `openai` embedder and `llm` summarizer
//! tests: real sockets, real HTTP/1.1. It embeds deterministically (words hashed into `dim`
//! buckets), writes summaries, and plays scripted faults on the next requests.
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A fault played on one request.
#[derive(Debug, Clone)]
pub enum Fault {
    /// Reply with this status (and a `Retry-After` of these seconds).
    Status(u16, Option<u64>),
    /// Wait this long before replying.
    Delay(Duration),
    /// A 200 whose body is not JSON.
    Malformed,
    /// Vectors one shorter than the server's dimension.
    WrongDim,
}

/// One request the server saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub auth: Option<String>,
    pub inputs: Vec<String>,
    pub at: Instant,
    pub status: u16,
}

#[derive(Default)]
struct State {
    faults: VecDeque<Fault>,
    seen: Vec<Seen>,
    /// Inputs longer than this are refused as too long (400).
    max_input: Option<usize>,
    /// Every request gets this fault (after the scripted ones).
    always: Option<Fault>,
}

/// A running server.
pub struct Mock {
    pub url: String,
    state: Arc<Mutex<State>>,
}

impl Mock {
    /// Starts a server whose vectors have `dim` dimensions.
    pub fn start(dim: usize) -> Mock {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(State::default()));
        let st = state.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let st = st.clone();
                std::thread::spawn(move || {
                    let _ = serve(conn, &st, dim);
                });
            }
        });
        Mock { url, state }
    }

    /// Plays `f` on the next request not yet given a fault.
    pub fn then(&self, f: Fault) -> &Self {
        self.state.lock().unwrap().faults.push_back(f);
        self
    }

    /// Plays `f` on every request after the scripted ones.
    pub fn always(&self, f: Fault) {
        self.state.lock().unwrap().always = Some(f);
    }

    /// Refuses inputs longer than `n` characters.
    pub fn max_input(&self, n: usize) {
        self.state.lock().unwrap().max_input = Some(n);
    }

    /// Requests seen so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    /// Embedding requests answered with vectors (status 200), probe included.
    pub fn embedded(&self) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.path.ends_with("/embeddings") && s.status == 200)
            .collect()
    }
}

/// The server's vector of a text: its lowercase words hashed into `dim` buckets.
pub fn vector(text: &str, dim: usize) -> Vec<f64> {
    let mut v = vec![0.0; dim];
    for w in text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        let mut h: u64 = 0xcbf29ce484222325;
        for b in w.to_lowercase().bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x100000001b3);
        }
        v[(h % dim as u64) as usize] += 1.0;
    }
    v[0] += 0.01; // never all zero
    v
}

fn serve(conn: TcpStream, st: &Mutex<State>, dim: usize) -> std::io::Result<()> {
    let mut r = BufReader::new(conn.try_clone()?);
    let mut line = String::new();
    r.read_line(&mut line)?;
    let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let (mut len, mut auth) = (0usize, None);
    loop {
        let mut h = String::new();
        r.read_line(&mut h)?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':').unwrap_or((h, ""));
        match k.to_ascii_lowercase().as_str() {
            "content-length" => len = v.trim().parse().unwrap_or(0),
            "authorization" => auth = Some(v.trim().to_string()),
            _ => {}
        }
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    let req: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let inputs: Vec<String> = match req.get("input") {
        Some(serde_json::Value::Array(a)) => a
            .iter()
            .map(|x| x.as_str().unwrap_or("").to_string())
            .collect(),
        Some(serde_json::Value::String(s)) => vec![s.clone()],
        _ => req
            .pointer("/messages/1/content")
            .and_then(|c| c.as_str())
            .map(|c| vec![c.to_string()])
            .unwrap_or_default(),
    };
    let (fault, max_input) = {
        let mut s = st.lock().unwrap();
        let f = s.faults.pop_front().or_else(|| s.always.clone());
        (f, s.max_input)
    };
    let (status, extra, payload): (u16, String, String) = match fault {
        Some(Fault::Status(code, after)) => (
            code,
            after.map_or(String::new(), |a| format!("Retry-After: {a}\r\n")),
            format!(r#"{{"error":{{"message":"scripted {code}"}}}}"#),
        ),
        Some(Fault::Malformed) => (200, String::new(), "{\"data\": [oops".into()),
        other => {
            if let Some(Fault::Delay(d)) = other {
                std::thread::sleep(d);
            }
            let short = matches!(other, Some(Fault::WrongDim));
            if path.ends_with("/chat/completions") {
                let first = inputs
                    .first()
                    .and_then(|c| c.lines().next())
                    .unwrap_or("")
                    .to_string();
                let reply = serde_json::json!({
                    "choices": [{"message": {"role": "assistant", "content": format!("LLM summary of: {first}")}}]
                });
                (200, String::new(), reply.to_string())
            } else if let Some(n) = max_input
                && inputs.iter().any(|i| i.chars().count() > n)
            {
                (
                    400,
                    String::new(),
                    r#"{"error":{"message":"This model's maximum context length is 8192 tokens"}}"#
                        .into(),
                )
            } else {
                let d = if short { dim - 1 } else { dim };
                let data: Vec<serde_json::Value> = inputs
                    .iter()
                    .enumerate()
                    .rev() // out of order: the client must use `index`
                    .map(|(i, t)| serde_json::json!({"object": "embedding", "index": i, "embedding": vector(t, d)}))
                    .collect();
                let tokens: usize = inputs.iter().map(|t| t.split_whitespace().count()).sum();
                let reply = serde_json::json!({"object": "list", "data": data, "model": req.get("model"),
                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens}});
                (200, String::new(), reply.to_string())
            }
        }
    };
    st.lock().unwrap().seen.push(Seen {
        path,
        auth,
        inputs,
        at: Instant::now(),
        status,
    });
    let mut w = conn;
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        payload.len()
    );
    // A client that gave up (timeout) may be gone: ignore write errors.
    let _ = w.write_all(head.as_bytes());
    let _ = w.write_all(payload.as_bytes());
    let _ = w.flush();
    Ok(())
}
