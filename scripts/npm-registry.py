#!/usr/bin/env python3
"""A read-only npm registry on 127.0.0.1 for the release test: serves the packages in the
.tgz files of one folder, as npm's resolver asks for them (the packument at GET /<name>,
the tarball at the address the packument gives). Prints its port on the first line, then
serves until killed.

    scripts/npm-registry.py dist/npm
"""

import base64
import hashlib
import http.server
import json
import pathlib
import sys
import tarfile


def packuments(folder, base):
    found = {}
    for tgz in sorted(pathlib.Path(folder).glob("*.tgz")):
        data = tgz.read_bytes()
        with tarfile.open(tgz) as tar:
            manifest = json.load(tar.extractfile("package/package.json"))
        name, version = manifest["name"], manifest["version"]
        doc = found.setdefault(name, {"name": name, "dist-tags": {}, "versions": {}})
        manifest["_id"] = f"{name}@{version}"
        manifest["dist"] = {
            "tarball": f"{base}/{name}/-/{tgz.name}",
            "shasum": hashlib.sha1(data).hexdigest(),
            "integrity": "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode(),
        }
        doc["versions"][version] = manifest
        doc["dist-tags"]["latest"] = version
    return found


class Registry(http.server.ThreadingHTTPServer):
    daemon_threads = True


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.answer(body=True)

    def do_HEAD(self):
        self.answer(body=False)

    def answer(self, body):
        path = self.path.split("?", 1)[0].lstrip("/").replace("%2f", "/").replace("%2F", "/")
        server = self.server
        if path in server.docs:
            self.send(200, "application/json", json.dumps(server.docs[path]).encode(), body)
        elif "/-/" in path and (server.folder / path.rsplit("/", 1)[-1]).is_file():
            data = (server.folder / path.rsplit("/", 1)[-1]).read_bytes()
            self.send(200, "application/octet-stream", data, body)
        else:
            self.send(404, "application/json", b'{"error":"Not found"}', body)

    def send(self, status, kind, data, body):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)

    def do_PUT(self):
        self.send(405, "application/json", b'{"error":"read-only"}', True)

    do_POST = do_DELETE = do_PATCH = do_PUT

    def log_message(self, *args):
        pass


def main():
    server = Registry(("127.0.0.1", 0), Handler)
    server.folder = pathlib.Path(sys.argv[1])
    server.docs = packuments(server.folder, f"http://127.0.0.1:{server.server_port}")
    print(server.server_port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
