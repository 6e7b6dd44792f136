"""Reads a `nsimage serve --tls-cert ... --tls-key ...` over HTTPS with the
PyPI `hdfs` package's InsecureClient, its session trusting only the given
certificate, and prints what it read as one JSON document on stdout.

    python webhdfs_tls.py https://HOST:PORT CERT.pem PATH
"""

import json
import sys

import requests
from hdfs import InsecureClient


def main():
    url, cert, path = sys.argv[1], sys.argv[2], sys.argv[3]
    session = requests.Session()
    # requests prefers REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE from the
    # environment over a session's own `verify`: this session trusts the
    # test's certificate alone, whatever the environment says.
    session.trust_env = False
    session.verify = cert
    client = InsecureClient(url, user="tls-reader", session=session, timeout=30)
    print(
        json.dumps(
            {
                "list": client.list(path),
                "status": client.status(path),
            }
        )
    )


if __name__ == "__main__":
    main()
