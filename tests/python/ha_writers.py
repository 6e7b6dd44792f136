"""Writing clients for tests/clients/ha.rs: N threads, each with its own
PyPI `hdfs` InsecureClient configured with every server's URL
('http://A;http://B', semicolon separated), writing under a directory of
its own with names it never uses twice, until a stop file appears.

The client moves to the next URL on StandbyException, RetriableException
and connection errors, and raises once every URL failed: this script then
retries the same op (with a short backoff, within a deadline). Each
logical op ends as one JSON line in OUT/c<i>.jsonl, written and flushed
before the next op starts:

- "ack": a server answered success; "server" is the URL that answered,
  "t0"/"t1" the wall-clock times (seconds) the successful call began and
  ended;
- "unknown": every attempt failed in a way that cannot tell whether the
  op was applied (a timeout, a lost connection, a 503 or a 403
  StandbyException after the op reached an active), or a retry found the
  op already applied; the script touches its paths no more;
- "error": an answer no correct server gives (the test fails on it).

Each failed call is a line too ("attempt": its exception, t0, t1), for
the test's measures of how fast writes are refused.

Ops (their final effect checkable): MKDIRS of a new directory, CREATE of a
new empty file (overwrite=False), SETPERMISSION of a file the client
created, RENAME of such a file to a new name in the same directory,
DELETE of such a file.

    python ha_writers.py URLS OUT CLIENTS SEED TIMEOUT STOPFILE
"""

import json
import os
import random
import sys
import threading
import time

import requests
from hdfs import HdfsError, InsecureClient

# Longest one logical op may be retried for.
OP_DEADLINE = 90.0
RETRIABLE = ("StandbyException", "RetriableException")


class Writer:
    def __init__(self, i, urls, out, seed, timeout, stop_file):
        self.i = i
        self.client = InsecureClient(urls, user="hdfs", timeout=timeout)
        self.out = open(os.path.join(out, f"c{i}.jsonl"), "a", buffering=1)
        self.rng = random.Random(seed * 1000 + i)
        self.stop_file = stop_file
        self.top = f"/ha/c{i}"
        self.dirs = [self.top]
        # Files this client created and may still touch: path -> mode.
        self.files = {}
        self.seq = 0
        self.n = 0

    def name(self, kind):
        self.n += 1
        return f"c{self.i}-{kind}{self.n}"

    def emit(self, rec):
        rec["c"] = self.i
        self.out.write(json.dumps(rec) + "\n")
        self.out.flush()

    def server(self):
        return self.client._urls[0]

    def run_op(self, op, call, **fields):
        """Retries `call` until a success, a definite answer or the
        deadline; one line for the op."""
        self.seq += 1
        started = time.time()
        ambiguous = False
        attempts = 0
        backoff = 0.05
        while True:
            attempts += 1
            t0 = time.time()
            # The client moved to another URL within the call: a server
            # before it failed, perhaps after applying the op.
            first = self.client._urls[0]
            try:
                value = call()
            except HdfsError as e:
                t1 = time.time()
                exc = getattr(e, "exception", None)
                ambiguous = ambiguous or self.client._urls[0] != first
                if exc in RETRIABLE:
                    ambiguous = True
                    self.emit({"kind": "attempt", "op": op, "exc": exc, "t0": t0, "t1": t1})
                else:
                    # A definite refusal: right only if an earlier attempt
                    # may have applied the op (then a retry finds it done).
                    self.emit({
                        "kind": "op", "seq": self.seq, "op": op,
                        "outcome": "unknown" if ambiguous else "error",
                        "why": f"{exc}: {e}", "t0": t0, "t1": t1,
                        "attempts": attempts, **fields,
                    })
                    return "unknown" if ambiguous else "error"
            except (requests.exceptions.RequestException, OSError) as e:
                t1 = time.time()
                ambiguous = True
                self.emit({"kind": "attempt", "op": op, "exc": type(e).__name__, "t0": t0, "t1": t1})
            else:
                t1 = time.time()
                ambiguous = ambiguous or self.client._urls[0] != first
                if value is False:
                    # rename/delete answered false: the source is gone.
                    self.emit({
                        "kind": "op", "seq": self.seq, "op": op,
                        "outcome": "unknown" if ambiguous else "error",
                        "why": "answered false", "t0": t0, "t1": t1,
                        "attempts": attempts, **fields,
                    })
                    return "unknown" if ambiguous else "error"
                self.emit({
                    "kind": "op", "seq": self.seq, "op": op, "outcome": "ack",
                    "server": self.server(), "t0": t0, "t1": t1,
                    "attempts": attempts, **fields,
                })
                return "ack"
            if time.time() - started > OP_DEADLINE:
                self.emit({
                    "kind": "op", "seq": self.seq, "op": op, "outcome": "unknown",
                    "why": "deadline", "t0": started, "t1": time.time(),
                    "attempts": attempts, **fields,
                })
                return "unknown"
            time.sleep(backoff * (0.5 + self.rng.random()))
            backoff = min(backoff * 2, 0.4)

    def step(self):
        roll = self.rng.random()
        files = [p for p in self.files]
        if roll < 0.15 or (roll < 0.5 and not files):
            if len(self.dirs) < 8:
                parent = self.rng.choice(self.dirs)
            else:
                parent = self.top
            path = f"{parent}/{self.name('d')}"
            if self.run_op("mkdirs", lambda: self.client.makedirs(path), path=path) == "ack":
                self.dirs.append(path)
        elif roll < 0.5 or len(files) < 3:
            path = f"{self.rng.choice(self.dirs)}/{self.name('f')}"
            r = self.run_op(
                "create", lambda: self.client.write(path, data=b"", overwrite=False), path=path
            )
            if r == "ack":
                self.files[path] = None
        elif roll < 0.7:
            path = self.rng.choice(files)
            mode = self.rng.choice(["600", "640", "644", "700", "751"])
            r = self.run_op(
                "set_permission",
                lambda: self.client.set_permission(path, mode),
                path=path, mode=mode,
            )
            if r == "ack":
                self.files[path] = mode
            else:
                del self.files[path]
        elif roll < 0.85:
            path = self.rng.choice(files)
            to = f"{path.rsplit('/', 1)[0]}/{self.name('r')}"
            r = self.run_op("rename", lambda: self.client.rename(path, to), path=path, to=to)
            mode = self.files.pop(path)
            if r == "ack":
                self.files[to] = mode
        else:
            path = self.rng.choice(files)
            r = self.run_op(
                "delete", lambda: self.client.delete(path), path=path
            )
            del self.files[path]

    def run(self):
        try:
            while self.run_op("mkdirs", lambda: self.client.makedirs(self.top), path=self.top) != "ack":
                if os.path.exists(self.stop_file):
                    return
            while not os.path.exists(self.stop_file):
                self.step()
        except Exception as e:  # noqa: BLE001 - reported to the test
            self.emit({"kind": "crash", "why": repr(e)})
            raise
        finally:
            self.out.close()


def main():
    urls, out, clients, seed, timeout, stop_file = sys.argv[1:7]
    os.makedirs(out, exist_ok=True)
    writers = [
        Writer(i, urls, out, int(seed), float(timeout), stop_file)
        for i in range(int(clients))
    ]
    threads = [threading.Thread(target=w.run, daemon=True) for w in writers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"clients": len(writers), "ops": sum(w.seq for w in writers)}))


if __name__ == "__main__":
    main()
