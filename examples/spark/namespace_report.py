"""What holds the bytes, and who holds the small files: a Spark job over the
Parquet dataset of `nsimage export`, for namespaces that outgrow one
machine's tools.

    nsimage export fsimage_0000000000000012345 -o namespace/
    python examples/spark/namespace_report.py namespace/

Run with plain `python`, it starts Spark in local mode on this machine (it
needs Java 17 or later; `pip install pyspark`); under `spark-submit` it runs
wherever that sends it, the same dataset copied to the cluster's storage.

Prints two tables on stdout:
- the top 20 directories by bytes: the sum of the lengths of every file
  below each directory, at any depth (what `nsimage du --sort bytes` sums);
- the small files per owner: files shorter than their preferred block size
  (each costs the NameNode an inode and a block for less than a block of
  data), most first.
"""

import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

TOP = 20


def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} DATASET (a Parquet file or directory from nsimage export)")
    dataset = sys.argv[1]
    spark = (
        SparkSession.builder.appName("nsimage namespace report")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    ns = spark.read.parquet(dataset)
    files = ns.where(F.col("type") == "FILE").select("path", "size", "owner", "preferred_block_size")

    # Every directory above a file: "/a/b/f" is below "/", "/a" and "/a/b".
    parts = F.split(F.col("path"), "/")
    ancestors = files.select(
        "size",
        F.explode(
            F.transform(
                F.sequence(F.lit(1), F.size(parts) - 1),
                lambda i: F.concat(F.lit("/"), F.concat_ws("/", F.slice(parts, 2, i - 1))),
            )
        ).alias("directory"),
    )
    top = (
        ancestors.groupBy("directory")
        .agg(F.sum("size").alias("bytes"), F.count(F.lit(1)).alias("files"))
        .orderBy(F.col("bytes").desc(), F.col("directory").asc())
        .limit(TOP)
        .collect()
    )
    print(f"Top {TOP} directories by bytes")
    print(f"{'BYTES':>20} {'FILES':>12} DIRECTORY")
    for r in top:
        print(f"{r['bytes']:>20} {r['files']:>12} {r['directory']}")

    small = (
        files.groupBy("owner")
        .agg(
            F.sum(F.when(F.col("size") < F.col("preferred_block_size"), 1).otherwise(0)).alias("small"),
            F.count(F.lit(1)).alias("files"),
        )
        .orderBy(F.col("small").desc(), F.col("owner").asc())
        .collect()
    )
    print()
    print("Small files (shorter than their block size) per owner")
    print(f"{'SMALL_FILES':>12} {'FILES':>12} OWNER")
    for r in small:
        print(f"{r['small']:>12} {r['files']:>12} {r['owner']}")
    spark.stop()


if __name__ == "__main__":
    main()
