"""Drives every write of a writable `nsimage serve` with the PyPI `hdfs`
package's InsecureClient (its own methods where it has them, its session
for the ops it lacks) and prints, as one JSON document on stdout, each
step's outcome (the HdfsError's exception class when it failed) and the
status of each path afterwards, for tests/clients/webhdfs_writes.rs to
compare with `nsimage stat`/`ls` of a checkpoint taken afterwards.

    python webhdfs_writes.py URL
"""

import json
import sys

from hdfs import HdfsError, InsecureClient


def main():
    url = sys.argv[1]
    client = InsecureClient(url, user="writer", timeout=30)
    steps = {}

    def step(name, fn):
        try:
            value = fn()
            steps[name] = {"ok": True, "value": value}
        except HdfsError as e:
            steps[name] = {
                "ok": False,
                "exception": getattr(e, "exception", None),
                "message": str(e),
            }

    def put(path, op, **params):
        """An op the client has no method for, through its session."""
        params["op"] = op
        res = client._session.put(
            url + "/webhdfs/v1" + path, params=params, timeout=30
        )
        if res.status_code != 200:
            body = res.json()["RemoteException"]
            raise HdfsError(body["message"], exception=body["exception"])
        return res.json() if res.content else None

    step("makedirs", lambda: client.makedirs("/w/a/b", permission="750"))
    step(
        "write",
        lambda: client.write("/w/a/f", data=b"", replication=2, permission="640"),
    )
    step("write_again", lambda: client.write("/w/a/f", data=b""))
    step("write_bytes", lambda: client.write("/w/a/big", data=b"some bytes"))
    step("write_g", lambda: client.write("/w/a/g", data=b""))
    step("rename_into_dir", lambda: client.rename("/w/a/g", "/w/a/b"))
    step("rename_onto_file", lambda: client.rename("/w/a/b/g", "/w/a/f"))
    step("set_owner", lambda: client.set_owner("/w/a/f", owner="carol", group="eng"))
    step("set_permission", lambda: client.set_permission("/w/a/f", "600"))
    step(
        "set_times",
        lambda: client.set_times("/w/a/f", access_time=5000, modification_time=4000),
    )
    step("set_replication", lambda: client.set_replication("/w/a/f", 4))
    step("set_replication_dir", lambda: client.set_replication("/w/a", 4))
    step(
        "set_acl",
        lambda: client.set_acl("/w/a", "user::rwx,user:bob:r-x,group::r-x,other::---"),
    )
    step("modify_acl", lambda: client.set_acl("/w/a", "user:dan:rwx", clear=False))
    step("remove_acl_entries", lambda: put("/w/a", "REMOVEACLENTRIES", aclspec="user:bob"))
    step("symlink", lambda: put("/w/link", "CREATESYMLINK", destination="/w/a/f"))
    step(
        "xattr_create",
        lambda: put("/w/a/f", "SETXATTR", **{"xattr.name": "user.team", "xattr.value": '"eng"', "flag": "CREATE"}),
    )
    step(
        "xattr_create_again",
        lambda: put("/w/a/f", "SETXATTR", **{"xattr.name": "user.team", "xattr.value": "0x00", "flag": "CREATE"}),
    )
    step(
        "xattr_hex",
        lambda: put("/w/a/f", "SETXATTR", **{"xattr.name": "trusted.k", "xattr.value": "0x6869", "flag": "CREATE"}),
    )
    step(
        "xattr_tmp",
        lambda: put("/w/a/f", "SETXATTR", **{"xattr.name": "user.tmp", "xattr.value": "x", "flag": "CREATE"}),
    )
    step("xattr_remove", lambda: put("/w/a/f", "REMOVEXATTR", **{"xattr.name": "user.tmp"}))
    step("makedirs_gone", lambda: client.makedirs("/w/gone/x"))
    step("delete_recursive", lambda: client.delete("/w/gone", recursive=True))
    step("delete_missing", lambda: client.delete("/w/missing"))
    step("delete_not_empty", lambda: client.delete("/w/a"))
    step("makedirs_acl2", lambda: client.makedirs("/w/acl2", permission="755"))
    step(
        "set_default_acl",
        lambda: client.set_acl("/w/acl2", "user::rwx,group::r-x,other::r-x,default:user:bob:rwx"),
    )
    step("remove_default_acl", lambda: put("/w/acl2", "REMOVEDEFAULTACL"))
    step("makedirs_acl3", lambda: client.makedirs("/w/acl3", permission="750"))
    step(
        "set_acl3",
        lambda: client.set_acl("/w/acl3", "user::rwx,user:bob:r--,group::r-x,other::---"),
    )
    step("remove_acl", lambda: put("/w/acl3", "REMOVEACL"))

    statuses = {}
    for path in ["/w/a", "/w/a/b", "/w/a/f", "/w/a/b/g", "/w/link", "/w/acl2", "/w/acl3"]:
        statuses[path] = {
            "status": client.status(path),
            "acl": client.acl_status(path) if path != "/w/link" else None,
        }
    for path in ["/w/a/big", "/w/gone", "/w/a/g"]:
        statuses[path] = {"status": client.status(path, strict=False)}
    json.dump({"steps": steps, "paths": statuses}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
