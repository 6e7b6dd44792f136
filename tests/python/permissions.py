"""Runs the permission cases of tests/clients/permissions.rs through the
PyPI `hdfs` package: an InsecureClient per user (its own methods where it
has them, its session for the ops it lacks), the base Client (no
`user.name`, so the server's dr.who) for the cases without a user. Prints
one JSON array on stdout, one result per case, in order: `ok`, and for a
failure the RemoteException's `exception` class and `message`.

    python permissions.py URL CASES.json
"""

import json
import sys
from urllib.parse import parse_qsl

from hdfs import Client, HdfsError, InsecureClient


def main():
    url, cases_file = sys.argv[1], sys.argv[2]
    with open(cases_file) as f:
        cases = json.load(f)
    clients = {}

    def client_of(user):
        if user not in clients:
            clients[user] = (
                InsecureClient(url, user=user, timeout=30)
                if user
                else Client(url, timeout=30)
            )
        return clients[user]

    def raw(c, method, path, op, params):
        """An op the client has no method for, through its session (which
        carries the client's user.name)."""
        params = dict(params)
        params["op"] = op
        res = c._session.request(
            method, url + "/webhdfs/v1" + path, params=params, timeout=30
        )
        if res.status_code >= 400:
            body = res.json()["RemoteException"]
            raise HdfsError(body["message"], exception=body["exception"])
        return None

    def run(case):
        c = client_of(case["user"])
        op, path = case["op"], case["path"]
        p = dict(parse_qsl(case["extra"], keep_blank_values=True))
        if op == "GETFILESTATUS":
            c.status(path)
        elif op == "LISTSTATUS":
            c.list(path, status=True)
        elif op == "GETCONTENTSUMMARY":
            c.content(path)
        elif op == "GETACLSTATUS":
            c.acl_status(path)
        elif op == "MKDIRS":
            c.makedirs(path, permission=p.get("permission"))
        elif op == "CREATE":
            c.write(path, data=b"", overwrite=p.get("overwrite") == "true")
        elif op == "DELETE":
            c.delete(path, recursive=p.get("recursive") == "true")
        elif op == "RENAME" and "renameoptions" not in p:
            c.rename(path, p["destination"])
        elif op == "SETOWNER":
            c.set_owner(path, owner=p.get("owner"), group=p.get("group"))
        elif op == "SETPERMISSION":
            c.set_permission(path, p["permission"])
        elif op == "SETTIMES":
            c.set_times(
                path,
                access_time=int(p["accesstime"]) if "accesstime" in p else None,
                modification_time=int(p["modificationtime"])
                if "modificationtime" in p
                else None,
            )
        elif op == "SETREPLICATION":
            c.set_replication(path, int(p["replication"]))
        elif op == "SETACL":
            c.set_acl(path, p["aclspec"])
        elif op == "MODIFYACLENTRIES":
            c.set_acl(path, p["aclspec"], clear=False)
        elif op in ("GETXATTRS", "LISTXATTRS", "LISTSTATUS_BATCH"):
            raw(c, "GET", path, op, p)
        else:
            # RENAME with options, CREATESYMLINK, the xattr and other ACL
            # writes.
            raw(c, "PUT", path, op, p)

    results = []
    for case in cases:
        try:
            run(case)
            results.append({"ok": True})
        except HdfsError as e:
            results.append(
                {
                    "ok": False,
                    "exception": getattr(e, "exception", None),
                    "message": str(e),
                }
            )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
