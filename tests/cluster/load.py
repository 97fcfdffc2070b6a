"""The load of cluster.sh: 64 writers calling `notes__add_note` (2026-07-28, stateless) through
the balancer until the file STOP exists (at most 120 s), each with texts of its own, the writers
shared out among the TOKENs; each pauses PAUSE seconds (environment, default 0) between calls. Every complete answer is acknowledged in
ACKS as `<unix ms> <text> <status> <code>`; a request that fails (a replica killed under it)
is not, and the writer goes on.

usage: load.py BASE ACKS STOP TOKEN...
"""

import json
import os
import sys
import threading
import time
import urllib.request

base, acks_path, stop, tokens = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
WRITERS = 64
lock = threading.Lock()
acks = open(acks_path, "a")
start = time.monotonic()
end = start + 120
# Seconds each writer pauses between its calls (0: none).
PAUSE = float(os.environ.get("PAUSE", "0"))
failures = [0]


def call(token, text, n):
    body = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
        "name": "notes__add_note", "arguments": {"text": text}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "cluster-load", "version": "1"}}}}
    request = urllib.request.Request(base + "/mcp", data=json.dumps(body).encode(), method="POST")
    for k, v in {"authorization": "Bearer " + token, "content-type": "application/json",
                 "accept": "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28",
                 "mcp-method": "tools/call", "mcp-name": "notes__add_note"}.items():
        request.add_header(k, v)
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode()
    if not text.startswith("{"):
        text = [l[5:].strip() for l in text.splitlines() if l.startswith("data:")][-1]
    return json.loads(text)["result"]["_meta"]["warden/decision"]


def writer(w):
    n = 0
    token = tokens[w % len(tokens)]
    while time.monotonic() < end and not os.path.exists(stop):
        n += 1
        text = f"t{w % len(tokens)}-w{w}-{n}"
        try:
            d = call(token, text, n)
        except Exception:
            with lock:
                failures[0] += 1
            continue
        with lock:
            acks.write(f"{int(time.time() * 1000)} {text} {d['status']} {d.get('code', '-')}\n")
        if PAUSE:
            time.sleep(PAUSE)


threads = [threading.Thread(target=writer, args=(w,)) for w in range(WRITERS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
acks.close()
print(json.dumps({"phase": "load", "writers": WRITERS, "seconds": round(time.monotonic() - start, 1), "failed requests": failures[0]}))
