//! An in-process HTTP/1.1 server on 127.0.0.1 that answers each request with a scripted [`Reply`]
//! (recorded wire traffic or a fault), and remembers what it was sent. Used by the provider tests and
//! by `tunebench bench`; plain tokio, so what it writes is exactly what the script says.

mod recording;
mod reply;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

pub use recording::reply_from_recording;
pub use reply::{chunk_frame, Reply, Step};

/// A request the server received.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received {
    pub method: String,
    pub path: String,
    /// Header names lowercased, in order.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Received {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(key, _)| *key == name).map(|(_, value)| value.as_str())
    }

    /// The body as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// A reply chosen by looking at the request (a stateful fake of an API: see [`WireServer::start_handler`]).
pub type Handler = Box<dyn Fn(&Received) -> Reply + Send + Sync>;

#[derive(Default)]
struct State {
    replies: Vec<Reply>,
    /// Answers every request when set (replies and routes are then unused).
    handler: Option<Handler>,
    /// Replies chosen by the request body: the first whose text the body contains.
    routes: Vec<(String, Reply)>,
    next: AtomicUsize,
    received: Mutex<Vec<Received>>,
    /// Connections the client closed while the server was waiting for it.
    client_closes: AtomicUsize,
    closed: Notify,
    /// Replies being written now, and the most ever written at once.
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

/// Counts a reply as in flight until dropped.
struct InFlight<'a>(&'a State);

impl<'a> InFlight<'a> {
    fn new(state: &'a State) -> Self {
        let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        state.max_in_flight.fetch_max(now, Ordering::SeqCst);
        Self(state)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The running server; dropping it stops it.
pub struct WireServer {
    addr: SocketAddr,
    state: Arc<State>,
    task: JoinHandle<()>,
}

impl WireServer {
    /// Starts a server answering the n-th request with `replies[n]` (the last reply repeats).
    pub async fn start(replies: Vec<Reply>) -> std::io::Result<Self> {
        Self::start_with(State { replies, ..State::default() }).await
    }

    /// Starts a server answering each request with the reply of the first route whose text its body
    /// contains (requests that match none get the last route's reply): for runs sent concurrently.
    pub async fn start_routed(routes: Vec<(String, Reply)>) -> std::io::Result<Self> {
        let replies = routes.last().map(|(_, reply)| reply.clone()).into_iter().collect();
        Self::start_with(State { replies, routes, ..State::default() }).await
    }

    /// Starts a server answering each request with what `handler` makes of it: for protocols with
    /// state, such as a batch API (upload, create, poll, download).
    pub async fn start_handler(handler: impl Fn(&Received) -> Reply + Send + Sync + 'static) -> std::io::Result<Self> {
        Self::start_with(State { handler: Some(Box::new(handler)), ..State::default() }).await
    }

    async fn start_with(state: State) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(state);
        let shared = Arc::clone(&state);
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, Arc::clone(&shared)));
            }
        });
        Ok(Self { addr, state, task })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request received so far, in order.
    pub fn received(&self) -> Vec<Received> {
        self.state.received.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// How many connections the client closed while the server waited on them.
    pub fn client_closes(&self) -> usize {
        self.state.client_closes.load(Ordering::SeqCst)
    }

    /// The most replies that were being written at the same time (1: requests never overlapped).
    pub fn max_in_flight(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }

    /// Waits until the client closed at least `count` connections; `false` on timeout.
    pub async fn wait_for_client_closes(&self, count: usize, timeout: Duration) -> bool {
        let wait = async {
            loop {
                let notified = self.state.closed.notified();
                if self.client_closes() >= count {
                    return;
                }
                notified.await;
            }
        };
        tokio::time::timeout(timeout, wait).await.is_ok()
    }
}

impl Drop for WireServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Reads one request head and its `content-length` body; `None` when the client closed first.
async fn read_request(socket: &mut TcpStream) -> Option<Received> {
    let mut buffer = Vec::new();
    let mut piece = [0u8; 8192];
    let head_end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        if buffer.len() > 1 << 20 {
            return None;
        }
        let read = socket.read(&mut piece).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(piece.get(..read)?);
    };
    let head = String::from_utf8_lossy(buffer.get(..head_end)?).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, path) = (first.next()?.to_string(), first.next()?.to_string());
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize =
        headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let mut body = buffer.get(head_end..)?.to_vec();
    while body.len() < length {
        let read = socket.read(&mut piece).await.ok()?;
        if read == 0 {
            return None;
        }
        body.extend_from_slice(piece.get(..read)?);
    }
    Some(Received { method, path, headers, body: String::from_utf8_lossy(&body).into_owned() })
}

async fn serve(mut socket: TcpStream, state: Arc<State>) {
    let _ = socket.set_nodelay(true);
    while let Some(request) = read_request(&mut socket).await {
        let index = state.next.fetch_add(1, Ordering::SeqCst);
        let routed = match &state.handler {
            Some(handler) => Some(handler(&request)),
            None => state.routes.iter().find(|(text, _)| request.body.contains(text.as_str())).map(|(_, r)| r.clone()),
        };
        if let Ok(mut received) = state.received.lock() {
            received.push(request);
        }
        let Some(reply) = routed.or_else(|| state.replies.get(index).or(state.replies.last()).cloned()) else { return };
        let _in_flight = InFlight::new(&state);
        for step in reply.steps {
            match step {
                Step::Write(bytes) => {
                    if socket.write_all(&bytes).await.is_err() || socket.flush().await.is_err() {
                        return;
                    }
                }
                Step::Repeat { bytes, every } => loop {
                    if socket.write_all(&bytes).await.is_err() || socket.flush().await.is_err() {
                        state.client_closes.fetch_add(1, Ordering::SeqCst);
                        state.closed.notify_waiters();
                        return;
                    }
                    if !every.is_zero() {
                        tokio::time::sleep(every).await;
                    }
                },
                Step::Sleep(duration) if duration.is_zero() => {}
                Step::Sleep(duration) => tokio::time::sleep(duration).await,
                Step::AwaitClose => {
                    let mut sink = [0u8; 1024];
                    let wait = async { while matches!(socket.read(&mut sink).await, Ok(n) if n > 0) {} };
                    if tokio::time::timeout(Duration::from_secs(30), wait).await.is_ok() {
                        state.client_closes.fetch_add(1, Ordering::SeqCst);
                        state.closed.notify_waiters();
                    }
                    return;
                }
                Step::Close => {
                    let _ = socket.shutdown().await;
                    return;
                }
                Step::Reset => {
                    reset(socket);
                    return;
                }
            }
        }
    }
}

/// Drops the connection with a TCP RST (SO_LINGER 0) instead of a FIN.
#[allow(deprecated)] // set_linger(0) closes at once; the blocking-close caveat applies to non-zero values
fn reset(socket: TcpStream) {
    let _ = socket.set_linger(Some(Duration::ZERO));
    drop(socket);
}
