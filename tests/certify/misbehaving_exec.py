#!/usr/bin/python3
"""A subprocess implementation that misbehaves after greeting pev (tests of `--exec` hardening):
    hang   never answers the first request
    die    exits in the middle of the first request
    flood  answers with an endless header line
    lie    answers a table of the wrong shape
"""
import json
import sys
import time

mode = sys.argv[1]
inp, out = sys.stdin.buffer, sys.stdout.buffer
line = inp.readline()
out.write(json.dumps({"ok": True, "name": "misbehaving-" + mode,
                      "outputs": ["rope_table"]}).encode() + b"\n")
out.flush()
req = json.loads(inp.readline())
inp.read(int(req.get("payload_bytes", 0)))
if mode == "hang":
    time.sleep(3600)
elif mode == "die":
    out.write(b'{"ok": true, "tensors": [')
    out.flush()
    sys.exit(3)
elif mode == "flood":
    while True:
        out.write(b"x" * 65536)
elif mode == "lie":
    out.write(json.dumps({"ok": True, "tensors": [
        {"name": "cos", "dtype": "fp32", "shape": [1, 1]},
        {"name": "sin", "dtype": "fp32", "shape": [1, 1]}]}).encode() + b"\n")
    out.write(b"\0" * 8)
    out.flush()
    time.sleep(3600)
