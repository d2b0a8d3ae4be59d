//! Reading a raw wire recording (`../shared/fixtures/wire/llama-cpp-python/`: `### ` comment lines,
//! then the response exactly as curl printed it) into the [`Reply`] that serves it again.
//!
//! curl prints a chunked body decoded, so the chunk boundaries are not in the file: the body is sent
//! one chunk per SSE event (what the recorded server, sse-starlette, does), or per line for NDJSON. Everything else is served
//! as recorded: the head byte for byte, a `content-length` body byte for byte — and when the recorded
//! body is shorter than its `content-length` (the recorder shortened a path in two error bodies), the
//! connection closes after it, as a server that died mid-body would. A body that curl reported as cut
//! off (`curl: (18)`) ends the same way, without the final chunk. Recordings whose lines carry
//! client-side times (`[ 14.71s] `) are replayed at that pace, divided by `speed`.

use std::time::Duration;

use super::reply::{chunk_frame, Reply, Step};

/// The reply that serves `recording` again; `speed` divides recorded pauses (ignored when untimed).
pub fn reply_from_recording(recording: &str, speed: f64) -> Result<Reply, String> {
    let (raw, times) = strip_comments_and_times(recording)?;
    let head_end = find(&raw, b"\r\n\r\n").ok_or("no blank line after the response head")? + 4;
    let head = raw.get(..head_end).ok_or("head out of range")?;
    let head_text = String::from_utf8_lossy(head).to_ascii_lowercase();
    let body = raw.get(head_end..).unwrap_or_default();
    let at = |offset: usize| times.iter().rev().find(|(start, _)| *start <= offset).map_or(0.0, |(_, t)| *t);
    let pause = |from: f64, to: f64| Step::Sleep(Duration::from_secs_f64(((to - from).max(0.0) / speed).min(60.0)));

    let mut steps: Vec<Step> =
        Some(pause(0.0, at(0))).filter(|p| *p != Step::Sleep(Duration::ZERO)).into_iter().collect();
    steps.push(Step::Write(head.to_vec()));
    if let Some(length) = header_value(&head_text, "content-length") {
        let length: usize = length.parse().map_err(|_| format!("bad content-length {length:?}"))?;
        let (body, cut_short) = match body.get(..length) {
            Some(exact) => (exact, false),
            None => (body, true),
        };
        steps.push(Step::Write(body.to_vec()));
        if cut_short {
            steps.push(Step::Close);
        }
        return Ok(Reply { steps });
    }
    if !header_value(&head_text, "transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        steps.push(Step::Write(body.to_vec()));
        steps.push(Step::Close);
        return Ok(Reply { steps });
    }
    let cut_off = recording.contains("\ncurl: (18)") || recording.contains("\ncurl: (56)");
    // One chunk per SSE event, or per line of an NDJSON stream.
    let separator: &[u8] = if head_text.contains("ndjson") { b"\n" } else { b"\n\n" };
    let mut last = at(0);
    let mut start = 0;
    while start < body.len() {
        let end =
            find(body.get(start..).unwrap_or_default(), separator).map_or(body.len(), |i| start + i + separator.len());
        let time = at(head_end + start);
        if time > last {
            steps.push(pause(last, time));
            last = time;
        }
        steps.push(Step::Write(chunk_frame(body.get(start..end).unwrap_or_default())));
        start = end;
    }
    steps.push(if cut_off { Step::Close } else { Step::Write(b"0\r\n\r\n".to_vec()) });
    Ok(Reply { steps })
}

/// The response bytes of a recording, and for timed recordings the time of each line's first byte.
/// Response bytes, and (offset, seconds) for each timed line.
type Timed = (Vec<u8>, Vec<(usize, f64)>);

fn strip_comments_and_times(recording: &str) -> Result<Timed, String> {
    let mut raw = Vec::new();
    let mut times = Vec::new();
    let mut started = false;
    for line in recording.split_inclusive('\n') {
        if line.starts_with("### ") || line.starts_with("curl: (") {
            if started {
                break;
            }
            continue;
        }
        started = true;
        let text = match timed(line) {
            Some((seconds, rest)) => {
                times.push((raw.len(), seconds));
                rest
            }
            None => line,
        };
        raw.extend_from_slice(text.as_bytes());
    }
    if !started {
        return Err("no response in the recording".to_string());
    }
    // The capture put a newline of its own between the response and the closing `###` line.
    if recording.contains("\n### ---- curl exit") && !recording.contains("\ncurl: (") && raw.last() == Some(&b'\n') {
        raw.pop();
    }
    Ok((raw, times))
}

/// `[ 14.71s] rest` → (14.71, rest).
fn timed(line: &str) -> Option<(f64, &str)> {
    let rest = line.strip_prefix('[')?;
    let (time, rest) = rest.split_once("s] ")?;
    Some((time.trim().parse().ok()?, rest))
}

fn header_value<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.split("\r\n").find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == name).then(|| value.trim())
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHUNKED: &str = "### comment\n### command: curl\nHTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\ndata: a\n\ndata: [DONE]\n\n\n### ---- curl exit: 0 ----\n";

    #[test]
    fn chunked_bodies_go_out_one_event_per_chunk() {
        let reply = reply_from_recording(CHUNKED, 1.0).unwrap();
        let writes: Vec<&[u8]> =
            reply.steps.iter().filter_map(|s| if let Step::Write(w) = s { Some(&w[..]) } else { None }).collect();
        assert_eq!(writes[1], b"9\r\ndata: a\n\n\r\n");
        assert_eq!(writes[2], b"e\r\ndata: [DONE]\n\n\r\n");
        assert_eq!(writes[3], b"0\r\n\r\n");
    }

    #[test]
    fn content_length_bodies_are_exact_and_short_ones_close() {
        let exact = "HTTP/1.1 500 X\r\ncontent-length: 5\r\n\r\nhello\n### ---- curl exit: 0 ----\n";
        let reply = reply_from_recording(exact, 1.0).unwrap();
        assert_eq!(reply.steps.last(), Some(&Step::Write(b"hello".to_vec())));
        let short = exact.replace("content-length: 5", "content-length: 9");
        assert_eq!(reply_from_recording(&short, 1.0).unwrap().steps.last(), Some(&Step::Close));
    }

    #[test]
    fn cut_off_streams_close_without_the_last_chunk_and_times_become_pauses() {
        let cut = CHUNKED.replace("\n\n### ---- curl exit: 0", "curl: (18) transfer closed\n### ---- curl exit: 18");
        assert_eq!(reply_from_recording(&cut, 1.0).unwrap().steps.last(), Some(&Step::Close));
        let timed = "### t\n[ 1.00s] HTTP/1.1 200 OK\r\n[ 1.00s] transfer-encoding: chunked\r\n[ 1.00s] \r\n[ 1.00s] : ping\n[ 1.00s] \n[ 3.00s] data: x\n[ 3.00s] \n### ---- end ----\n";
        let reply = reply_from_recording(timed, 2.0).unwrap();
        assert_eq!(reply.steps[0], Step::Sleep(Duration::from_millis(500)));
        assert!(reply.steps.contains(&Step::Sleep(Duration::from_secs(1))), "{:?}", reply.steps);
        assert!(reply_from_recording("### only comments\n", 1.0).is_err());
    }
}
