"""Put one rank count's rows of a fresh tuning run into a shipped table:
the shipped table's rows of that rank count are replaced by the new ones,
every other row and the gpu line are kept, and a comment line says what
changed.
  python3 bench/merge_table.py SHIPPED.tsv NEW.tsv OUT.tsv "why"
NEW.tsv is symheap-tune --out's table (one rank count)."""
import sys


def rows(path):
    with open(path) as f:
        return [line.rstrip("\n") for line in f]


def is_row(line):
    return line and not line.startswith("#") and not line.startswith("gpu")


def main(shipped, new, out, why):
    fresh = [r for r in rows(new) if is_row(r)]
    if not fresh:
        sys.exit("merge_table: %s has no rows" % new)
    ranks = {r.split("\t")[1] for r in fresh}
    old = rows(shipped)
    head = [r for r in old if not is_row(r)]
    kept = [r for r in old if is_row(r) and r.split("\t")[1] not in ranks]
    text = head + ["# " + why] + fresh + kept
    with open(out, "w") as f:
        f.write("\n".join(text) + "\n")
    print("merge_table: %d rows of %s ranks from %s, %d kept" % (
        len(fresh), ",".join(sorted(ranks)), new, len(kept)))


if __name__ == "__main__":
    main(*sys.argv[1:5])
