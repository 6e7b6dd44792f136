"""Browses a WebHDFS endpoint with the PyPI `hdfs` package's InsecureClient,
the way an operator's script would, and prints what it saw as one JSON
document on stdout for tests/serve_client.rs to compare with nsimage's own
ls, stat and du.

    python webhdfs_client.py URL PATH...

For the whole tree: `walk` from the root, with each directory's listing
(`list(status=True)`); for each PATH given: `status`, `content` and
`acl_status`.
"""

import json
import sys

from hdfs import InsecureClient


def main():
    url, paths = sys.argv[1], sys.argv[2:]
    client = InsecureClient(url, user="nsimage-test", timeout=30)
    walked = []
    for top, dirs, files in client.walk("/", status=True):
        top_path, top_status = top
        walked.append(
            {
                "path": top_path,
                "status": top_status,
                "dirs": [[name, st] for name, st in dirs],
                "files": [[name, st] for name, st in files],
            }
        )
    per_path = {}
    for path in paths:
        status = client.status(path)
        entry = {
            "status": status,
            "content": client.content(path),
            "acl_status": client.acl_status(path),
        }
        if status["type"] == "DIRECTORY":
            entry["list"] = client.list(path)
        per_path[path] = entry
    json.dump({"walk": walked, "paths": per_path}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
