#!/usr/bin/env bash
# Converts a SQLite store of <objects> objects (default 1,000,000) into PostgreSQL and back with the
# release `objectstore`, timing each and taking its peak resident memory, against the floor measured
# in the same run: psql's \copy of the same rows (into a table with the store's columns and indexes,
# and out of the store's tables). Starts a private server on a Unix socket in a temporary folder
# (as the postgres user when run as root) and removes it at the end. Then: a JSON import of 200,000
# of those objects against \copy FROM; the users' shapes both ways and imported; 8 clients in one
# process saving at once against one. Prints Markdown tables (docs/performance.md records the figures).
# Usage: Benchmarks/postgresql-bench.sh [objects]
set -euo pipefail
cd "$(dirname "$0")/.."
objects=${1:-1000000}
pairs=$((objects / 2))
# OBJECTSTORE=<binary> uses that build instead (a debug one, to try the script).
tool=${OBJECTSTORE:-}
if [ -z "$tool" ]; then swift build -c release --static-swift-stdlib --product objectstore >&2; tool=$PWD/.build/release/objectstore; fi

bin=$(pg_config --bindir 2>/dev/null || true)
[ -x "$bin/initdb" ] || bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
work=$(mktemp -d /tmp/pgbench.XXXXXX)
chmod 755 "$work"
as_server=()
if [ "$(id -u)" -eq 0 ]; then chown postgres "$work"; as_server=(runuser -u postgres --); fi
"${as_server[@]}" "$bin/initdb" -D "$work/data" -A trust -U postgres >/dev/null
"${as_server[@]}" "$bin/pg_ctl" -D "$work/data" -l "$work/server.log" -w -o "-k $work -c listen_addresses=''" start >/dev/null
trap '"${as_server[@]}" "$bin/pg_ctl" -D "$work/data" -m fast -w stop >/dev/null; rm -rf "$work"' EXIT
server="postgresql://postgres@/postgres?host=$work"
store="$server&schema=bench"
psql=("$bin/psql" -X -q -v ON_ERROR_STOP=1 -d "$server")

# The benchmark model: A and B, five attributes each, a one-to-one between them.
cat > "$work/model.json" <<'EOF'
{"format": "objectstore-model", "formatVersion": 1, "entities": [
  {"name": "A", "attributes": [{"name": "a1", "type": "Integer 64"}, {"name": "a2", "type": "Double"}, {"name": "a3", "type": "String"}, {"name": "a4", "type": "Date"}, {"name": "a5", "type": "Boolean"}],
   "relationships": [{"name": "partner", "destination": "B", "inverse": "partner"}]},
  {"name": "B", "attributes": [{"name": "b1", "type": "Integer 64"}, {"name": "b2", "type": "Double"}, {"name": "b3", "type": "String"}, {"name": "b4", "type": "Date"}, {"name": "b5", "type": "Boolean"}],
   "relationships": [{"name": "partner", "destination": "A", "inverse": "partner"}]}]}
EOF
echo "building the $objects-object source store…" >&2
"$tool" create "$work/source.sqlite" --model "$work/model.json" >/dev/null
rows() { echo "WITH RECURSIVE n(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM n WHERE k < $pairs)
  INSERT INTO Z$1 (Z_PK, Z_ENT, Z_OPT, Z${1}1, Z${1}2, Z${1}3, Z${1}4, Z${1}5, ZPARTNER)
  SELECT k, $2, 1, k * 7, k / 3.0, 'object number ' || k, 700000000 + k, k % 2, k FROM n;"; }
sqlite3 "$work/source.sqlite" "PRAGMA synchronous = OFF; BEGIN; $(rows A 1) $(rows B 2) UPDATE Z_PRIMARYKEY SET Z_MAX = $pairs; COMMIT;"

# Seconds and peak resident KiB of one command.
measure() { /usr/bin/time -f "%e %M" -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; exit 1; }; cat "$work/time"; }

echo "objectstore convert SQLite → PostgreSQL, and back…" >&2
read -r into into_kb < <(measure "$tool" convert "$work/source.sqlite" "$store")
read -r back back_kb < <(measure "$tool" convert "$store" "$work/back.sqlite")
same=no
[ "$("$tool" export "$work/source.sqlite" | md5sum)" = "$("$tool" export "$work/back.sqlite" | md5sum)" ] && same=yes

echo "the floor: psql \\copy of the same rows…" >&2
"${psql[@]}" -c "\\copy bench.\"A\" TO '$work/A.tsv'" -c "\\copy bench.\"B\" TO '$work/B.tsv'"
"${psql[@]}" -c "CREATE SCHEMA floor" -c "CREATE TABLE floor.\"A\" (LIKE bench.\"A\" INCLUDING ALL)" -c "CREATE TABLE floor.\"B\" (LIKE bench.\"B\" INCLUDING ALL)"
read -r floor_in floor_in_kb < <(measure "${psql[@]}" -c "BEGIN" -c "\\copy floor.\"A\" FROM '$work/A.tsv'" -c "\\copy floor.\"B\" FROM '$work/B.tsv'" -c "COMMIT")
read -r floor_out floor_out_kb < <(measure "${psql[@]}" -c "\\copy bench.\"A\" TO '$work/A-out.tsv'" -c "\\copy bench.\"B\" TO '$work/B-out.tsv'")
counted=$("${psql[@]}" -A -t -c "SELECT (SELECT count(*) FROM bench.\"A\") + (SELECT count(*) FROM bench.\"B\")")
# SQLite's own load of those rows into a new store's tables (sqlite3's .import, then one INSERT … SELECT
# per table, no journal, no sync, as a conversion's destination is written): the floor out is both.
"$tool" create "$work/floor.sqlite" --model "$work/model.json" >/dev/null
load() { printf '%s\n' "CREATE TEMP TABLE t$1 (pk, entity, version, c1, c2, c3, c4, c5, partner, partner_entity);" ".import $work/$1-out.tsv t$1" \
  "INSERT INTO Z$1 (Z_PK, Z_ENT, Z_OPT, Z${1}1, Z${1}2, Z${1}3, Z${1}4, Z${1}5, ZPARTNER) SELECT pk, $2, version, c1, c2, c3, c4, c5 = 't', partner FROM t$1;"; }
printf '%s\n' "PRAGMA journal_mode = OFF;" "PRAGMA synchronous = OFF;" ".mode tabs" "BEGIN;" "$(load A 1)" "$(load B 2)" "COMMIT;" > "$work/load.sql"
read -r floor_load floor_load_kb < <(measure sqlite3 "$work/floor.sqlite" ".read $work/load.sql")
floor_back=$(awk -v a="$floor_out" -v b="$floor_load" 'BEGIN { printf "%.2f", a + b }')

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f×", a / b }'; }
rate() { awk -v n="$objects" -v s="$1" 'BEGIN { printf "%\047d objects/s", n / s }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.0f MiB", k / 1024 }'; }
echo "| $objects objects (A and B, one-to-one; $counted rows in PostgreSQL) | time | peak RSS | against the floor |"
echo "|---|---|---|---|"
echo "| psql \\copy FROM, both tables, one transaction (the floor in) | ${floor_in} s, $(rate "$floor_in") | $(mib "$floor_in_kb") (psql) | 1.00× |"
echo "| objectstore convert SQLite → PostgreSQL | ${into} s, $(rate "$into") | $(mib "$into_kb") | $(ratio "$into" "$floor_in") |"
echo "| psql \\copy TO, both tables, then sqlite3's own load of them (the floor out: ${floor_out} s + ${floor_load} s) | ${floor_back} s, $(rate "$floor_back") | $(mib "$floor_load_kb") (sqlite3) | 1.00× |"
echo "| objectstore convert PostgreSQL → SQLite | ${back} s, $(rate "$back") | $(mib "$back_kb") | $(ratio "$back" "$floor_back") |"
echo
echo "export of the store converted back equals the source's: $same"

# import of a JSON document of 200,000 of those objects (the export of the first 100,000 pairs) into a
# new server store, against psql's \copy FROM of the same rows into tables with the store's columns
# and indexes, in one transaction.
imported=200000
"$tool" create "$work/part.sqlite" --model "$work/model.json" >/dev/null
sqlite3 "$work/part.sqlite" "ATTACH '$work/source.sqlite' AS s; BEGIN; INSERT INTO ZA SELECT * FROM s.ZA WHERE Z_PK <= $((imported / 2)); INSERT INTO ZB SELECT * FROM s.ZB WHERE Z_PK <= $((imported / 2)); UPDATE Z_PRIMARYKEY SET Z_MAX = $((imported / 2)); COMMIT;"
"$tool" export "$work/part.sqlite" --output "$work/part.json"
read -r imp imp_kb < <(measure "$tool" import "$server&schema=imported" "$work/part.json" --model "$work/model.json")
"${psql[@]}" -c "\\copy imported.\"A\" TO '$work/iA.tsv'" -c "\\copy imported.\"B\" TO '$work/iB.tsv'" \
  -c "CREATE SCHEMA ifloor" -c "CREATE TABLE ifloor.\"A\" (LIKE imported.\"A\" INCLUDING ALL)" -c "CREATE TABLE ifloor.\"B\" (LIKE imported.\"B\" INCLUDING ALL)"
read -r imp_floor imp_floor_kb < <(measure "${psql[@]}" -c "BEGIN" -c "\\copy ifloor.\"A\" FROM '$work/iA.tsv'" -c "\\copy ifloor.\"B\" FROM '$work/iB.tsv'" -c "COMMIT")
imp_same=no
[ "$("$tool" export "$server&schema=imported" | md5sum)" = "$(md5sum < "$work/part.json")" ] && imp_same=yes
echo
echo "| import of $imported objects ($(du -m "$work/part.json" | cut -f1) MB of JSON) | time | peak RSS | against the floor |"
echo "|---|---|---|---|"
echo "| psql \\copy FROM, both tables, one transaction (the floor) | ${imp_floor} s | $(mib "$imp_floor_kb") (psql) | 1.00× |"
echo "| objectstore import into a new server store | ${imp} s | $(mib "$imp_kb") | $(ratio "$imp" "$imp_floor") |"
echo
echo "export of the imported store equals the document: $imp_same"

# The shapes users have (issue 23's): Publication (abstract, required title and pages with rules) →
# Book (required isbn) → Textbook (required subject) in one table; Author–Book one-to-many with its
# inverse; Tag–Book many-to-many; Library.featured, an ordered to-many with its inverse. <objects>/10
# books, an author per ten, 100 tags, two per book, a library per hundred books featuring ten.
books=$((objects / 10))
cat > "$work/shapes.json" <<'EOF'
{"format": "objectstore-model", "formatVersion": 1, "entities": [
 {"name": "Publication", "abstract": true, "attributes": [
   {"name": "title", "type": "String", "optional": false, "minLength": 1, "maxLength": 200},
   {"name": "pages", "type": "Integer 32", "optional": false, "minValue": 1, "maxValue": 100000},
   {"name": "summary", "type": "String"}, {"name": "published", "type": "Date"}]},
 {"name": "Book", "parent": "Publication", "attributes": [
   {"name": "isbn", "type": "String", "optional": false, "minLength": 13, "maxLength": 13}, {"name": "rating", "type": "Double"}],
  "relationships": [{"name": "author", "destination": "Author", "inverse": "books"},
                    {"name": "tags", "destination": "Tag", "inverse": "books", "toMany": true},
                    {"name": "featuredIn", "destination": "Library", "inverse": "featured"}]},
 {"name": "Textbook", "parent": "Book", "attributes": [{"name": "subject", "type": "String", "optional": false}]},
 {"name": "Author", "attributes": [{"name": "name", "type": "String", "optional": false, "minLength": 1}, {"name": "born", "type": "Integer 16"}],
  "relationships": [{"name": "books", "destination": "Book", "inverse": "author", "toMany": true}]},
 {"name": "Tag", "attributes": [{"name": "label", "type": "String", "optional": false}],
  "relationships": [{"name": "books", "destination": "Book", "inverse": "tags", "toMany": true}]},
 {"name": "Library", "attributes": [{"name": "name", "type": "String", "optional": false}],
  "relationships": [{"name": "featured", "destination": "Book", "inverse": "featuredIn", "toMany": true, "ordered": true}]}]}
EOF
echo "building the shapes store ($books books)…" >&2
awk -v n="$books" 'BEGIN {
  printf "{\"Author\": ["; for (i = 0; i < n / 10; i++) printf "%s{\"_id\": \"a%d\", \"name\": \"Author %d\", \"born\": %d}", (i ? ", " : ""), i, i, 1900 + i % 100
  printf "], \"Tag\": ["; for (i = 0; i < 100; i++) printf "%s{\"_id\": \"t%d\", \"label\": \"tag %d\"}", (i ? ", " : ""), i, i
  printf "], \"Library\": ["
  for (i = 0; i < n / 100; i++) { printf "%s{\"_id\": \"l%d\", \"name\": \"Library %d\", \"featured\": [", (i ? ", " : ""), i, i; for (k = 0; k < 10; k++) printf "%s\"b%d\"", (k ? ", " : ""), i * 100 + k; printf "]}" }
  for (part = 0; part < 2; part++) {
    printf "], \"%s\": [", (part ? "Textbook" : "Book"); first = 1
    for (i = 0; i < n; i++) {
      if ((i % 5 == 0) != part) continue
      summary = ""; for (k = 0; k < 8; k++) summary = summary "A summary of book " i ". "
      t1 = i % 100; t2 = (i * 7 + 3) % 100; tags = "\"t" t1 "\"" (t1 != t2 ? ", \"t" t2 "\"" : "")
      printf "%s{\"_id\": \"b%d\", \"title\": \"The book number %d of a long series\", \"pages\": %d, \"summary\": \"%s\", \"published\": \"2001-01-01T00:00:00Z\", \"isbn\": \"%013d\", \"rating\": %.1f, \"author\": \"a%d\", \"tags\": [%s]%s}", (first ? "" : ", "), i, i, 1 + i % 900, summary, i, (i % 50) / 10, int(i / 10), tags, (part ? ", \"subject\": \"subject " i % 40 "\"" : "")
      first = 0
    }
  }
  print "]}" }' > "$work/shapes-data.json"
"$tool" import "$work/shapes.sqlite" "$work/shapes-data.json" --model "$work/shapes.json" >/dev/null
read -r s_into s_into_kb < <(measure "$tool" convert "$work/shapes.sqlite" "$server&schema=shapes")
read -r s_back s_back_kb < <(measure "$tool" convert "$server&schema=shapes" "$work/shapes-back.sqlite")
s_same=no
[ "$("$tool" export "$work/shapes.sqlite" | md5sum)" = "$("$tool" export "$work/shapes-back.sqlite" | md5sum)" ] && s_same=yes
tables=$("${psql[@]}" -A -t -c "SELECT name FROM shapes.objectstore_relations WHERE kind = 'table' AND name <> 'os_transaction' ORDER BY name")
copy_out=() copy_in=() like=(-c "CREATE SCHEMA shapes_floor")
for t in $tables; do
  copy_out+=(-c "\\copy shapes.\"$t\" TO '$work/shapes-$t.tsv'")
  like+=(-c "CREATE TABLE shapes_floor.\"$t\" (LIKE shapes.\"$t\" INCLUDING ALL)")
  copy_in+=(-c "\\copy shapes_floor.\"$t\" FROM '$work/shapes-$t.tsv'")
done
read -r s_floor_out s_floor_out_kb < <(measure "${psql[@]}" "${copy_out[@]}")
"${psql[@]}" "${like[@]}"
read -r s_floor_in s_floor_in_kb < <(measure "${psql[@]}" -c "BEGIN" "${copy_in[@]}" -c "COMMIT")
read -r s_imp s_imp_kb < <(measure "$tool" import "$server&schema=shapes_imported" "$work/shapes-data.json" --model "$work/shapes.json")
s_imp_same=no
[ "$("$tool" export "$server&schema=shapes_imported" | md5sum)" = "$("$tool" export "$work/shapes.sqlite" | md5sum)" ] && s_imp_same=yes
shape_objects=$((books + books / 10 + 100 + books / 100))
echo
echo "| $shape_objects objects of the users' shapes ($books books, every table $(echo $tables | wc -w) of them) | time | peak RSS | against the floor |"
echo "|---|---|---|---|"
echo "| psql \\copy FROM, every table, one transaction (the floor in) | ${s_floor_in} s | $(mib "$s_floor_in_kb") (psql) | 1.00× |"
echo "| objectstore convert SQLite → PostgreSQL | ${s_into} s | $(mib "$s_into_kb") | $(ratio "$s_into" "$s_floor_in") |"
echo "| psql \\copy TO, every table (the floor out, without SQLite's load) | ${s_floor_out} s | $(mib "$s_floor_out_kb") (psql) | 1.00× |"
echo "| objectstore convert PostgreSQL → SQLite | ${s_back} s | $(mib "$s_back_kb") | $(ratio "$s_back" "$s_floor_out") |"
echo "| objectstore import of the shapes' JSON ($(du -m "$work/shapes-data.json" | cut -f1) MB) into a new server store | ${s_imp} s | $(mib "$s_imp_kb") | $(ratio "$s_imp" "$s_floor_in") (against \\copy FROM) |"
echo
echo "export of the shapes store converted back equals the source's: $s_same; the imported one's: $s_imp_same"

# Clients in one process saving disjoint objects into one store at once (each save an owner and five
# items, keys allocated by the store), against one client making the same saves: the store's pool.
echo "8 clients against one…" >&2
swift build -c release --package-path Benchmarks --product clients-bench >&2
echo
Benchmarks/.build/release/clients-bench "$server" 2000 5
