#!/usr/bin/python3
"""An --exec implementation that is correct for its first N requests and then hangs: it relays
them to examples/exec/rope_numpy.py (fp32 tables and inv_freq, recipe hf), and never answers the
next one. Usage: late_hang_exec.py N. With N = 2 the values pev certifies are answered and the
property suites meet the hang (tests of a failure during the property suites)."""
import json
import os
import subprocess
import sys
import time

n = int(sys.argv[1])
example = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "exec", "rope_numpy.py")
child = subprocess.Popen([sys.executable, example], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
inp, out = sys.stdin.buffer, sys.stdout.buffer
served = 0
while True:
    line = inp.readline()
    if not line:
        break
    req = json.loads(line)
    payload = inp.read(int(req.get("payload_bytes", 0)))
    if req["request"] != "hello":
        if served == n:
            time.sleep(3600)
        served += 1
    child.stdin.write(line + payload)
    child.stdin.flush()
    head = child.stdin and child.stdout.readline()
    size = 0
    for t in json.loads(head).get("tensors", []):  # fp32 only (rope_numpy.py)
        k = 4
        for d in t["shape"]:
            k *= d
        size += k
    out.write(head + child.stdout.read(size))
    out.flush()
