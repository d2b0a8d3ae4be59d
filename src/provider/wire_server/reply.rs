//! What the in-process server writes for one request: a script of writes, pauses and closes, built
//! from a raw wire recording (served byte for byte) or by hand for fault tests.

use std::time::Duration;

/// One step of a reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Write these bytes (and flush).
    Write(Vec<u8>),
    /// Pause.
    Sleep(Duration),
    /// Write nothing more and wait until the client closes the connection (at most 30 s).
    AwaitClose,
    /// Close the connection normally, wherever the response is.
    Close,
    /// Close the connection with a TCP reset.
    Reset,
    /// Write these bytes again and again, pausing `every` between writes, until the client closes the
    /// connection: an endless stream (no pause), or a trickle that never stalls a read timeout.
    Repeat { bytes: Vec<u8>, every: Duration },
}

/// The steps that answer one request. After the last step the connection stays open for the next
/// request unless a step closed it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reply {
    pub steps: Vec<Step>,
}

impl Reply {
    /// A complete response with a `content-length` body.
    pub fn status(status: u16, content_type: &str, body: &str) -> Self {
        Self::with_headers(status, &[("content-type", content_type)], body)
    }

    /// A complete response with extra headers and a `content-length` body.
    pub fn with_headers(status: u16, headers: &[(&str, &str)], body: &str) -> Self {
        let mut head = format!("HTTP/1.1 {status} {}\r\ncontent-length: {}\r\n", reason(status), body.len());
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        head.push_str(body);
        Self { steps: vec![Step::Write(head.into_bytes())] }
    }

    /// The head of a chunked 200 response with `content_type`; add pieces with [`Self::chunk`].
    pub fn chunked(content_type: &str) -> Self {
        let head = format!("HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\n\r\n");
        Self { steps: vec![Step::Write(head.into_bytes())] }
    }

    /// A streamed chat completion of `answer` as an OpenAI-compatible server frames it (server-sent
    /// events, five characters per chunk), ending with `finish` and, when given, the usage
    /// (prompt, completion tokens) on the last chunk.
    pub fn chat_stream(answer: &str, finish: &str, usage: Option<(u64, u64)>) -> Self {
        let event = |delta: serde_json::Value, finish: Option<&str>| {
            let usage = usage.filter(|_| finish.is_some()).map(|(prompt, completion)| {
                serde_json::json!({"prompt_tokens": prompt, "completion_tokens": completion,
                    "total_tokens": prompt + completion})
            });
            let chunk = serde_json::json!({"id": "chatcmpl-t", "object": "chat.completion.chunk", "model": "smollm2",
                "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}], "usage": usage});
            format!("data: {chunk}\n\n")
        };
        let mut reply = Self::chunked("text/event-stream; charset=utf-8")
            .chunk(event(serde_json::json!({"role": "assistant"}), None));
        let chars: Vec<char> = answer.chars().collect();
        for piece in chars.chunks(5) {
            reply = reply.chunk(event(serde_json::json!({"content": piece.iter().collect::<String>()}), None));
        }
        reply.chunk(event(serde_json::json!({}), Some(finish))).chunk("data: [DONE]\n\n").end()
    }

    /// Adds one HTTP chunk carrying `data` (empty data is skipped: it would end the body).
    pub fn chunk(mut self, data: impl AsRef<[u8]>) -> Self {
        let data = data.as_ref();
        if !data.is_empty() {
            self.steps.push(Step::Write(chunk_frame(data)));
        }
        self
    }

    /// Adds a pause.
    pub fn sleep(mut self, duration: Duration) -> Self {
        self.steps.push(Step::Sleep(duration));
        self
    }

    /// Adds the chunk that ends a chunked body.
    pub fn end(mut self) -> Self {
        self.steps.push(Step::Write(b"0\r\n\r\n".to_vec()));
        self
    }

    /// Adds any step.
    pub fn then(mut self, step: Step) -> Self {
        self.steps.push(step);
        self
    }
}

/// `data` framed as one HTTP/1.1 chunk.
pub fn chunk_frame(data: &[u8]) -> Vec<u8> {
    let mut frame = format!("{:x}\r\n", data.len()).into_bytes();
    frame.extend_from_slice(data);
    frame.extend_from_slice(b"\r\n");
    frame
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}
