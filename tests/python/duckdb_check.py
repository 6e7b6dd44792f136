"""Reads an `nsimage export --format parquet` output with DuckDB and prints
what tests/export_consumers.rs compares with `nsimage load` and
`nsimage du --by owner`, as one JSON document on stdout.

    python duckdb_check.py EXPORT

EXPORT is one Parquet file or a dataset directory of part-*.parquet.
"""

import json
import os
import sys

import duckdb


def main():
    path = sys.argv[1]
    source = os.path.join(path, "*.parquet") if os.path.isdir(path) else path
    con = duckdb.connect()
    con.read_parquet(source).create_view("ns")
    rows, total_size, blocks = con.execute(
        "SELECT count(*), sum(size), sum(blocks) FROM ns"
    ).fetchone()
    by_type = dict(con.execute("SELECT type, count(*) FROM ns GROUP BY type").fetchall())
    by_owner = [
        {
            "owner": owner,
            "inodes": inodes,
            "files": files,
            "bytes": int(size),
            "space_consumed": int(space),
            "small_files": small,
        }
        for owner, inodes, files, size, space, small in con.execute(
            """
            SELECT owner,
                   count(*),
                   count(*) FILTER (WHERE type = 'FILE'),
                   sum(size),
                   sum(size * coalesce(replication, 0)),
                   count(*) FILTER (WHERE type = 'FILE' AND size < preferred_block_size)
            FROM ns GROUP BY owner ORDER BY owner
            """
        ).fetchall()
    ]
    # The columns' types as DuckDB sees them: typed, not text.
    types = {name: kind for name, kind, *_ in con.execute("DESCRIBE ns").fetchall()}
    ids_unique = con.execute("SELECT count(DISTINCT id) = count(*) FROM ns").fetchone()[0]
    root = con.execute("SELECT path FROM ns WHERE parent_id IS NULL").fetchall()
    json.dump(
        {
            "rows": rows,
            "size": int(total_size),
            "blocks": int(blocks),
            "by_type": by_type,
            "by_owner": by_owner,
            "types": types,
            "ids_unique": ids_unique,
            "roots": [r[0] for r in root],
        },
        sys.stdout,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
