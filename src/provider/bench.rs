//! Time to first token that tunebench adds over a raw HTTP client, both against the same in-process
//! server replaying the recorded llama-cpp-python stream (`a1_chat_stream.txt`), fresh connection each.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::http::HttpOptions;
use super::openai::OpenAi;
use super::wire_server::{reply_from_recording, Step, WireServer};
use super::{Event, Provider, Request};

const RECORDING: &str = include_str!("../../tests/fixtures/wire/llama-cpp-python/a1_chat_stream.txt");

/// Medians of time to first token, in microseconds.
#[derive(Clone, Debug, Serialize)]
pub struct TtftFigures {
    pub runs: usize,
    /// A hand-written HTTP/1.1 request on a raw TCP socket, until the first content chunk's bytes.
    pub raw_median_us: f64,
    /// `OpenAi::stream` until its first `Event::Delta`.
    pub tunebench_median_us: f64,
    /// tunebench − raw (the budget is 2,000 µs).
    pub added_median_us: f64,
}

/// Measures `runs` alternating requests of each client (after a short warm-up).
pub async fn ttft_added(runs: usize) -> std::io::Result<TtftFigures> {
    let runs = runs.max(1);
    let mut reply = reply_from_recording(RECORDING, 1.0).map_err(std::io::Error::other)?;
    reply.steps.push(Step::Close);
    let server = WireServer::start(vec![reply]).await?;
    let provider =
        OpenAi::new(&format!("{}/v1", server.url()), None, HttpOptions::default()).map_err(std::io::Error::other)?;
    let request = Request::new("smollm2").user("Say hello in five words.").max_tokens(40).temperature(0.0);
    let body = serde_json::json!({"model":"smollm2","messages":[{"role":"user","content":"Say hello in five words."}],
        "stream":true,"max_tokens":40,"temperature":0})
    .to_string();
    let mut raw = Vec::with_capacity(runs);
    let mut ours = Vec::with_capacity(runs);
    for run in 0..runs + 3 {
        let r = raw_ttft(&server, &body).await?;
        let o = tunebench_ttft(&provider, &request).await?;
        if run >= 3 {
            raw.push(r);
            ours.push(o);
        }
    }
    let raw_median_us = median(&mut raw);
    let tunebench_median_us = median(&mut ours);
    Ok(TtftFigures { runs, raw_median_us, tunebench_median_us, added_median_us: tunebench_median_us - raw_median_us })
}

/// [`ttft_added`] on a runtime of its own, for synchronous callers.
pub fn ttft_added_blocking(runs: usize) -> std::io::Result<TtftFigures> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?.block_on(ttft_added(runs))
}

async fn raw_ttft(server: &WireServer, body: &str) -> std::io::Result<Duration> {
    let started = Instant::now();
    let mut socket = TcpStream::connect(server.addr()).await?;
    socket.set_nodelay(true)?;
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        server.addr(),
        body.len()
    );
    socket.write_all(request.as_bytes()).await?;
    let mut received = Vec::new();
    let mut piece = [0u8; 4096];
    let needle = b"\"content\"";
    while !received.windows(needle.len()).any(|w| w == needle) {
        let read = socket.read(&mut piece).await?;
        if read == 0 {
            return Err(std::io::Error::other("the server closed before the first token"));
        }
        received.extend_from_slice(piece.get(..read).unwrap_or_default());
    }
    Ok(started.elapsed())
}

async fn tunebench_ttft(provider: &OpenAi, request: &Request) -> std::io::Result<Duration> {
    let started = Instant::now();
    let mut stream = provider.stream(request);
    while let Some(event) = stream.next().await {
        match event {
            Event::Delta(_) => return Ok(started.elapsed()),
            Event::Error(error) => return Err(std::io::Error::other(error.to_string())),
            _ => {}
        }
    }
    Err(std::io::Error::other("the stream ended before the first token"))
}

fn median(samples: &mut [Duration]) -> f64 {
    samples.sort();
    samples.get(samples.len() / 2).map_or(0.0, |d| d.as_secs_f64() * 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_clients_reach_the_first_token() {
        let figures = ttft_added_blocking(5).expect("measured");
        assert_eq!(figures.runs, 5);
        assert!(figures.raw_median_us > 0.0 && figures.tunebench_median_us > 0.0, "{figures:?}");
        eprintln!("{figures:?}");
    }
}
