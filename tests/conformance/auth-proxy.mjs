// A header-adding reverse proxy for the conformance suite, which cannot send `Authorization`.
//
//   node auth-proxy.mjs TARGET_ORIGIN        (token in WARDEN_TOKEN)
//
// Listens on a free 127.0.0.1 port, prints `proxy: http://127.0.0.1:PORT` on stdout, and
// forwards every request to TARGET_ORIGIN unchanged — method, path, headers (Host included, so
// Warden's Host/Origin protection still judges what the suite sent) and body — adding only
// `Authorization: Bearer $WARDEN_TOKEN`. Responses, SSE included, stream back chunk by chunk;
// a client that goes away aborts the forwarded request.
import http from "node:http";

const target = new URL(process.argv[2] ?? "");
const token = process.env.WARDEN_TOKEN;
if (!token) {
  console.error("auth-proxy: WARDEN_TOKEN is not set");
  process.exit(2);
}

const server = http.createServer((req, res) => {
  const headers = { ...req.headers, authorization: `Bearer ${token}` };
  const upstream = http.request(
    {
      host: target.hostname,
      port: target.port,
      method: req.method,
      path: req.url,
      headers,
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      res.flushHeaders();
      answer.on("data", (chunk) => res.write(chunk));
      answer.on("end", () => res.end());
      answer.on("error", () => res.destroy());
    },
  );
  upstream.on("error", (err) => {
    if (!res.headersSent) {
      res.writeHead(502, { "content-type": "text/plain" });
      res.end(`auth-proxy: ${err.message}\n`);
    } else {
      res.destroy();
    }
  });
  res.on("close", () => {
    if (!res.writableFinished) upstream.destroy();
  });
  req.pipe(upstream);
});

server.listen(0, "127.0.0.1", () => {
  const { port } = server.address();
  console.log(`proxy: http://127.0.0.1:${port}`);
});
