"""An OpenAI-compatible chat server for the tunebench vs promptfoo comparison: the answer of case i
(marker MARK-i-END in the request) is five jsonl definitions, one of them wrong on even cases, as in
tunebench's own eval bench (src/eval/bench.rs). Streams (SSE) when the request asks to."""
import http.server, json, re, sys, threading

def answer(i):
    lines = []
    for k in range(5):
        definition = "Something else." if k == 4 and i % 2 == 0 else "A thing."
        lines.append(json.dumps({"entity": f"entity {i} {k}", "definition": definition}))
    return "\n".join(lines) + "\n"

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # One write per answer and no Nagle delay: the server must not be what is measured.
    disable_nagle_algorithm = True
    count = 0
    lock = threading.Lock()

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        with Handler.lock:
            Handler.count += 1
        text = json.dumps(body.get("messages", []))
        m = re.search(r"MARK-(\d+)-END", text)
        content = answer(int(m.group(1))) if m else ""
        usage = {"prompt_tokens": 40, "completion_tokens": 60, "total_tokens": 100}
        if body.get("stream"):
            chunks = [
                {"choices": [{"index": 0, "delta": {"role": "assistant", "content": content}, "finish_reason": None}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage},
            ]
            data = "".join(f"data: {json.dumps(dict(c, id='x', object='chat.completion.chunk', model='bench'))}\n\n" for c in chunks)
            data = (data + "data: [DONE]\n\n").encode()
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
        else:
            data = json.dumps({"id": "x", "object": "chat.completion", "model": "bench", "usage": usage,
                               "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        # /count: how many chat requests were answered so far.
        data = str(Handler.count).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

if __name__ == "__main__":
    server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    server.serve_forever()
