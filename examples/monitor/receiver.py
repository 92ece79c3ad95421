"""A webhook receiver for the monitor demo: prints each notification posted
to it (Shepherd's webhook JSON, docs/monitor.md) on one line."""
import http.server
import json
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        for n in body["notifications"]:
            labels = " ".join(f"{k}={v}" for k, v in sorted(n["labels"].items()))
            print(f"  webhook received: {n['status'].upper()} {n['rule']} {labels}: {n['summary']}", flush=True)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
