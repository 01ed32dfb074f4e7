#!/usr/bin/env bash
#
# pgbackrest.sh: pgBackRest's normal workflow against a cluster with a
# compressed and a plain tablespace, with a write load running.
#
# The cluster holds twin tables, c_* in the compressed tablespace cts and
# p_* in the plain tablespace pts; every transaction of the load changes
# both twins alike, so any consistent copy has c_* equal to p_* row for
# row, and a copy restored to the end of the archive equals the primary.
#
#   1. full backup to repo1 with pgBackRest's defaults (page checks on):
#      its warnings must all name files of the compressed tablespace;
#   2. full backup to repo1 with the settings doc/operations.md
#      recommends (checksum-page=n): no warning, info reports no error;
#   3. incremental backup to repo1;
#   4. full and block-incremental backups to repo2 (bundle, block), and
#      pgbackrest verify of both repositories;
#   5. the load stops; restores elsewhere (tablespaces mapped) of the
#      incremental and the block-incremental backup, a restore of the
#      first full backup to its consistent point, and a delta restore into
#      a restored copy that was damaged; each restored copy: the twins
#      and the primary compared row for row (md5 of the ordered rows),
#      amcheck (verify_heapam, bt_index_check with heapallindexed), and
#      pg_checksums --check stopped;
#      and each restore of the 1,000 small compressed tables of database
#      small takes no more room than they take in the source;
#   6. negative controls: the comparison sees one altered row, and
#      pg_checksums --check sees one damaged byte in a plain file and in
#      a compressed file of a restored copy;
#   7. with page checks on, a full backup of the primary with one byte of
#      a plain page changed warns about that page, and it is the only
#      warning left once those naming the compressed tablespace's files
#      are dropped (the filter doc/operations.md gives).
#
# Sizes (apparent and allocated) of the primary, the repositories and the
# restored copies are printed as "SIZE name apparent allocated".
#
# Environment: TOP, TOOLS_DIR, PG_BIN, PGBR_BIN (pgbackrest), PORT_BASE, SCALE (rows
# per table, default 400000), LOAD_RATE (transactions per second).

set -euo pipefail
. "$TOP/test/tools/common.sh"

PORT=${PORT_BASE:-55430}
ROWS=${SCALE:-400000}
RATE=${LOAD_RATE:-300}
W=$TOOLS_DIR/work/pgbackrest
PGBR=$PGBR_BIN

# clean up: servers and the load this script started
LOAD_PID=
cleanup()
{
	[ -n "$LOAD_PID" ] && kill "$LOAD_PID" 2>/dev/null || true
	for d in "$W"/primary "$W"/restore-*; do
		[ -d "$d" ] && stop_cluster "$d" 2>/dev/null || true
	done
}
trap cleanup EXIT

for d in "$W"/primary "$W"/restore-*; do [ -d "$d" ] && stop_cluster "$d" 2>/dev/null || true; done
rm -rf "$W"
mkdir -p "$W"/{repo1,repo2,log,lock,spool,ts_c,ts_p}
chown -R "$TEST_USER:" "$W" 2>/dev/null || true

CONF=$W/pgbackrest.conf
cat >"$CONF" <<EOF
[global]
repo1-path=$W/repo1
repo1-retention-full=9
repo2-path=$W/repo2
repo2-bundle=y
repo2-block=y
repo2-retention-full=9
log-path=$W/log
lock-path=$W/lock
spool-path=$W/spool
log-level-console=info
log-level-file=detail
start-fast=y
process-max=2
compress-type=zst

[main]
pg1-path=$W/primary
pg1-port=$PORT
pg1-socket-path=/tmp
pg1-user=postgres
# what doc/operations.md recommends for clusters with compressed tablespaces
checksum-page=n
EOF
chown "$TEST_USER:" "$CONF" 2>/dev/null || true

pgbr() { as_user "$PGBR" --config="$CONF" --stanza=main "$@"; }

# ---------------------------------------------------------------------------
say "pgbackrest: primary on port $PORT, $ROWS rows per table"
init_cluster "$W/primary" "$PORT" \
	"archive_mode = on" \
	"archive_command = '$PGBR --config=$CONF --stanza=main archive-push %p'" \
	"wal_level = replica" \
	"autovacuum_naptime = 5s" \
	"checkpoint_timeout = 30s"
start_cluster "$W/primary"
psql_at "$PORT" postgres "CREATE TABLESPACE cts LOCATION '$W/ts_c' WITH (compression = 'zstd')"
psql_at "$PORT" postgres "CREATE TABLESPACE pts LOCATION '$W/ts_p'"
psql_at "$PORT" postgres "CREATE DATABASE app"
# 1,000 small tables with their primary keys, in a database of their own
# that the load leaves alone: a restore must take no more room than they
# do (a restore writes every byte, holes included)
psql_at "$PORT" postgres "CREATE DATABASE small"
for b in $(seq 0 100 999); do
	psql_at "$PORT" small "$(for t in $(seq "$b" $((b + 99))); do
		echo "CREATE TABLE s_$t (id int PRIMARY KEY USING INDEX TABLESPACE cts, v text) TABLESPACE cts;"
		echo "INSERT INTO s_$t SELECT g, md5(g::text) FROM generate_series(1, 20) g;"
	done)"
done
SMALL_OID=$(psql_at "$PORT" postgres "SELECT oid FROM pg_database WHERE datname = 'small'")
psql_at "$PORT" app "CREATE EXTENSION amcheck; CREATE EXTENSION pgstrata"
for t in c p; do
	ts=${t}ts
	psql_at "$PORT" app "
		CREATE TABLE ${t}_accounts (id int PRIMARY KEY USING INDEX TABLESPACE $ts,
			bal int NOT NULL DEFAULT 0, filler char(84) NOT NULL DEFAULT '') TABLESPACE $ts;
		INSERT INTO ${t}_accounts (id) SELECT g FROM generate_series(1, $ROWS) g;
		CREATE TABLE ${t}_history (hid bigserial PRIMARY KEY USING INDEX TABLESPACE $ts,
			id int NOT NULL, delta int NOT NULL, at timestamptz NOT NULL DEFAULT now(),
			note text) TABLESPACE $ts;
		CREATE INDEX ON ${t}_history (id) TABLESPACE $ts;"
	psql_at "$PORT" app "VACUUM ANALYZE ${t}_accounts"
done
# a plain table the load leaves alone, for the last check
psql_at "$PORT" app "CREATE TABLE p_static WITH (autovacuum_enabled = off) TABLESPACE pts AS SELECT g AS id, md5(g::text) AS v FROM generate_series(1, 2000) g"
psql_at "$PORT" app "VACUUM (FREEZE) p_static"
psql_at "$PORT" app "CHECKPOINT"

pgbr stanza-create >"$W/stanza-create.log" 2>&1 || { cat "$W/stanza-create.log"; fail "stanza-create"; }
pgbr check >"$W/check.log" 2>&1 || { cat "$W/check.log"; fail "check"; }

# The load: each transaction changes both twins alike (same row, same
# delta, same history row); notes of various lengths make rows move.
cat >"$W/load.sql" <<EOF
\\set id random(1, $ROWS)
\\set d random(-5000, 5000)
\\set n random(0, 300)
BEGIN;
UPDATE c_accounts SET bal = bal + :d WHERE id = :id;
UPDATE p_accounts SET bal = bal + :d WHERE id = :id;
INSERT INTO c_history (hid, id, delta, at, note) VALUES (nextval('c_history_hid_seq'), :id, :d, now(), repeat(md5(:id::text), :n / 32));
INSERT INTO p_history (hid, id, delta, at, note) SELECT hid, id, delta, at, note FROM c_history WHERE hid = currval('c_history_hid_seq');
COMMIT;
EOF
chown "$TEST_USER:" "$W/load.sql" 2>/dev/null || true
# (pgbench's own process id, to stop it with SIGTERM: a background job
# ignores SIGINT)
as_user sh -c 'echo $$ >"$1"; shift; exec "$@"' sh "$W/load.pid" \
	"$PG_BIN/pgbench" -n -h /tmp -p "$PORT" -U postgres -c 2 -j 2 -R "$RATE" -T 3600 \
	-f "$W/load.sql" app >"$W/load.log" 2>&1 &
sleep 5
LOAD_PID=$(cat "$W/load.pid")
kill -0 "$LOAD_PID" || { cat "$W/load.log"; fail "the load did not start"; }

read -r a k < <(sizes "$W/primary"); echo "SIZE primary-data $a $k"
read -r a k < <(sizes "$W/ts_c"); echo "SIZE primary-ts-compressed $a $k"
read -r a k < <(sizes "$W/ts_p"); echo "SIZE primary-ts-plain $a $k"
psql_at "$PORT" app "SELECT 'RATIO ' || relation::text || ' ' || fork || ' ' || logical_bytes || ' ' || physical_bytes || ' ' || round(ratio::numeric, 2) FROM pgstrata_compression ORDER BY relation::text, fork"

# backup NAME ARGS...: one backup, its log kept, its time printed
backup()
{
	local name=$1 t0 rc=0
	shift
	t0=$(now_s)
	pgbr backup "$@" >"$W/backup-$name.log" 2>&1 || rc=$?
	echo "TIME backup-$name $(($(now_s) - t0)) s"
	[ "$rc" = 0 ] || { tail -20 "$W/backup-$name.log"; fail "backup $name exited $rc"; }
	[ -n "$LOAD_PID" ] || return 0
	kill -0 "$LOAD_PID" || { cat "$W/load.log"; fail "the load stopped during backup $name"; }
	echo "LOAD during backup-$name: $(psql_at "$PORT" app "SELECT count(*) FROM c_history") transactions so far"
}

# The compressed tablespace's directory as the backup logs name it
CTS_OID=$(psql_at "$PORT" app "SELECT oid FROM pg_tablespace WHERE spcname = 'cts'")
PTS_OID=$(psql_at "$PORT" app "SELECT oid FROM pg_tablespace WHERE spcname = 'pts'")

# 1. pgBackRest's defaults: page checks on (pg_control says checksums)
backup full-default --repo=1 --type=full --reset-checksum-page
grep -E 'WARN: (page misalignment|invalid page checksum)' "$W/backup-full-default.log" >"$W/warnings-default.txt" || true
nwarn=$(wc -l <"$W/warnings-default.txt")
nwarn_c=$(grep -c "pg_tblspc/$CTS_OID/" "$W/warnings-default.txt" || true)
echo "RESULT full-default: $nwarn page warnings, $nwarn_c of them on files of the compressed tablespace (pg_tblspc/$CTS_OID)"
[ "$nwarn" -gt 0 ] || fail "the default backup gave no page warning: did it check pages at all?"
[ "$nwarn" = "$nwarn_c" ] || { grep -v "pg_tblspc/$CTS_OID/" "$W/warnings-default.txt"; fail "page warnings on files outside the compressed tablespace"; }
# info_json FILE: pgbackrest info as JSON (retried: it may meet a lock)
info_json()
{
	for _ in 1 2 3 4 5; do
		pgbr info --output=json >"$1" 2>"$1.err" && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1" 2>/dev/null && return 0
		sleep 2
	done
	cat "$1" "$1.err"
	fail "pgbackrest info --output=json"
}
info_json "$W/info-default.json"
LABEL_DEFAULT=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["backup"][-1]["label"])' "$W/info-default.json")

# 2. the recommended settings (checksum-page=n in the stanza)
backup full --repo=1 --type=full
if grep -E 'WARN|ERROR' "$W/backup-full.log"; then fail "the backup with checksum-page=n warned"; fi
# 3. incremental under load
sleep 10
backup incr --repo=1 --type=incr
if grep -E 'WARN|ERROR' "$W/backup-incr.log"; then fail "the incremental backup warned"; fi
# 4. full and block incremental into repo2 (bundle + block)
backup full-block --repo=2 --type=full
sleep 10
backup incr-block --repo=2 --type=incr
if grep -E 'WARN|ERROR' "$W/backup-full-block.log" "$W/backup-incr-block.log"; then fail "a repo2 backup warned"; fi

# verify: every file of both repositories against its checksum, and the
# archive's continuity
t0=$(now_s)
pgbr verify >"$W/verify.log" 2>&1 || { tail -20 "$W/verify.log"; fail "pgbackrest verify"; }
if grep -E 'WARN|ERROR' "$W/verify.log"; then fail "pgbackrest verify reported problems"; fi
echo "RESULT verify: pgbackrest verify of both repositories reports no problem ($(($(now_s) - t0)) s)"

pgbr info >"$W/info.txt"
info_json "$W/info.json"
cat "$W/info.txt"
# info marks exactly the default backup as having errors
python3 - "$W/info.json" "$LABEL_DEFAULT" <<'EOF'
import json, sys
info = json.load(open(sys.argv[1]))[0]
bad = []
for b in info["backup"]:
    err = b.get("error", False)
    r = b["info"]["repository"]
    print("BACKUP %s repo%s type=%s error=%s size=%d delta=%d repo-size=%s repo-delta=%d block-map=%s" % (
        b["label"], b["database"]["repo-key"], b["type"], err, b["info"]["size"],
        b["info"]["delta"], r.get("size", "-"), r["delta"], r.get("size-map", "-")))
    if err != (b["label"] == sys.argv[2]):
        bad.append(b["label"])
if bad:
    print("FAIL: error flag unexpected on %s" % bad); sys.exit(1)
EOF
read -r a k < <(sizes "$W/repo1"); echo "SIZE repo1 $a $k"
read -r a k < <(sizes "$W/repo2"); echo "SIZE repo2 $a $k"

# 5. stop the load, let the archive catch up, take the primary's rows
kill -TERM "$LOAD_PID"
wait || true
LOAD_PID=
psql_at "$PORT" app "CHECKPOINT"
pgbr check >"$W/check2.log" 2>&1 || { cat "$W/check2.log"; fail "check after the load"; }

# digest PORT NAME: md5 of each table's ordered rows, "table md5" lines
digest()
{
	psql_at "$1" app "
		SELECT 'accounts ' || md5(string_agg(format('%s|%s|%s', id, bal, filler), ',' ORDER BY id)) FROM c_accounts
		UNION ALL SELECT 'history ' || md5(string_agg(format('%s|%s|%s|%s|%s', hid, id, delta, at, note), ',' ORDER BY hid)) FROM c_history
		UNION ALL SELECT 'p_accounts ' || md5(string_agg(format('%s|%s|%s', id, bal, filler), ',' ORDER BY id)) FROM p_accounts
		UNION ALL SELECT 'p_history ' || md5(string_agg(format('%s|%s|%s|%s|%s', hid, id, delta, at, note), ',' ORDER BY hid)) FROM p_history
		UNION ALL SELECT 'rows ' || (SELECT count(*) FROM c_history) || ' ' || (SELECT count(*) FROM p_history)
		ORDER BY 1"
}

# twins PORT: the compressed tables equal their plain twins
twins()
{
	local d
	d=$(digest "$1")
	local ca ch pa ph
	ca=$(awk '$1=="accounts" {print $2}' <<<"$d"); pa=$(awk '$1=="p_accounts" {print $2}' <<<"$d")
	ch=$(awk '$1=="history" {print $2}' <<<"$d"); ph=$(awk '$1=="p_history" {print $2}' <<<"$d")
	[ "$ca" = "$pa" ] && [ "$ch" = "$ph" ]
}

# amcheck_all PORT: verify_heapam on every table, bt_index_check with
# heapallindexed on every B-tree, of both tablespaces; prints counts
amcheck_all()
{
	psql_at "$1" app "
		SELECT 'AMCHECK heap-problems=' ||
		  (SELECT count(*) FROM pg_class c, LATERAL verify_heapam(c.oid) v
		   WHERE c.relkind IN ('r', 't', 'm') AND c.reltablespace IN ($CTS_OID, $PTS_OID))
		  || ' btrees=' ||
		  (SELECT count(*) FROM (SELECT bt_index_check(c.oid, true) FROM pg_class c
		   JOIN pg_am a ON a.oid = c.relam AND a.amname = 'btree'
		   WHERE c.relkind = 'i' AND c.reltablespace IN ($CTS_OID, $PTS_OID)) s)"
}

PRIMARY_DIGEST=$(digest "$PORT")
echo "$PRIMARY_DIGEST" | sed 's/^/PRIMARY /'
twins "$PORT" || fail "the primary's twins differ"

# restore NAME PORT ARGS...: restore into $W/restore-NAME with the
# tablespaces mapped into it, start it (recovery), compare, amcheck;
# then stop it and run pg_checksums --check
restore_one()
{
	local name=$1 port=$2 dir=$W/restore-$1 t0 rc=0
	shift 2
	mkdir -p "$dir" "$dir-ts_c" "$dir-ts_p"
	chown "$TEST_USER:" "$dir" "$dir-ts_c" "$dir-ts_p" 2>/dev/null || true
	chmod 700 "$dir"
	t0=$(now_s)
	pgbr restore --pg1-path="$dir" --tablespace-map=cts="$dir-ts_c" --tablespace-map=pts="$dir-ts_p" \
		"$@" >"$W/restore-$name.log" 2>&1 || rc=$?
	echo "TIME restore-$name $(($(now_s) - t0)) s"
	[ "$rc" = 0 ] || { tail -20 "$W/restore-$name.log"; fail "restore $name exited $rc"; }
	started_check "$name" "$port"
}

# started_check NAME PORT: start the restored copy, compare, amcheck, stop,
# pg_checksums --check; sizes
started_check()
{
	local name=$1 port=$2 dir=$W/restore-$1 t0 d
	sed -i -e "s/^port = .*/port = $port/" -e "/^archive_command/d" -e "s/^archive_mode = on/archive_mode = off/" "$dir/postgresql.conf"
	t0=$(now_s)
	start_cluster "$dir"
	for _ in $(seq 1 600); do
		[ "$(psql_at "$port" postgres "SELECT pg_is_in_recovery()" 2>/dev/null)" = f ] && break
		sleep 1
	done
	[ "$(psql_at "$port" postgres "SELECT pg_is_in_recovery()")" = f ] || fail "restore $name did not finish recovery"
	echo "TIME recovery-$name $(($(now_s) - t0)) s"
	twins "$port" || fail "restore $name: compressed tables differ from their plain twins"
	echo "RESULT restore-$name: compressed tables equal their plain twins row for row"
	if [ "${COMPARE_PRIMARY:-1}" = 1 ]; then
		d=$(digest "$port")
		[ "$d" = "$PRIMARY_DIGEST" ] || { diff <(echo "$PRIMARY_DIGEST") <(echo "$d") || true; fail "restore $name differs from the primary"; }
		echo "RESULT restore-$name: equals the primary row for row ($(awk '$1=="rows" {print $2}' <<<"$d") history rows)"
	else
		echo "RESULT restore-$name: $(digest "$port" | awk '$1=="rows" {print $2}') history rows at its consistent point"
	fi
	local am
	am=$(amcheck_all "$port")
	echo "RESULT restore-$name: $am"
	case "$am" in "AMCHECK heap-problems=0 "*) ;; *) fail "restore $name: amcheck found problems" ;; esac
	stop_cluster "$dir"
	as_user "$PG_BIN/pg_checksums" --check -D "$dir" >"$W/pg_checksums-$name.log" 2>&1 ||
		{ cat "$W/pg_checksums-$name.log"; fail "restore $name: pg_checksums --check failed"; }
	echo "RESULT restore-$name: pg_checksums --check: $(grep -E 'Bad checksums|Blocks scanned' "$W/pg_checksums-$name.log" | tr -s ' ' | paste -sd';')"
	read -r a k < <(sizes "$dir"); echo "SIZE restore-$name-data $a $k"
	read -r a k < <(sizes "$dir-ts_c"); echo "SIZE restore-$name-ts-compressed $a $k"
	read -r a k < <(sizes "$dir-ts_p"); echo "SIZE restore-$name-ts-plain $a $k"
	small_check "$name"
}

# small_check NAME: the restored copy of the 1,000 small compressed tables
# takes no more room than the source's (1% for what a file system may
# allocate ahead); before format 5, each of their forks took a 2 MB map
small_check()
{
	local name=$1 sa sk ra rk
	read -r sa sk < <(sizes "$(echo "$W"/ts_c/PG_*)/$SMALL_OID")
	read -r ra rk < <(sizes "$(echo "$W/restore-$name-ts_c"/PG_*)/$SMALL_OID")
	echo "SIZE small-tables-source $sa $sk"
	echo "SIZE small-tables-restore-$name $ra $rk"
	[ "$rk" -le $((sk + sk / 100)) ] ||
		fail "restore $name: the 1,000 small compressed tables take $(human "$rk") restored, $(human "$sk") in the source"
	echo "RESULT restore-$name: the 1,000 small compressed tables take $(human "$rk") restored, $(human "$sk") in the source"
}

# the incremental of repo1, to the end of the archive
restore_one incr $((PORT + 1)) --repo=1
# the block incremental of repo2, to the end of the archive
restore_one block $((PORT + 2)) --repo=2
# the first full backup (default settings, with its warnings), to its
# consistent point only: the twins must agree there
COMPARE_PRIMARY=0 restore_one default-immediate $((PORT + 3)) --repo=1 --set="$LABEL_DEFAULT" --type=immediate --target-action=promote

# delta restore: damage the restored copy of the incremental (stopped):
# remove a plain and a compressed segment, overwrite bytes in others,
# then restore --delta over it and check it again
dir=$W/restore-incr
cfile=$(cd "$dir-ts_c" && find . -type f -name '[0-9]*' -size +100k | sort | head -1)
pfile=$(cd "$dir-ts_p" && find . -type f -name '[0-9]*' -size +100k | sort | head -1)
[ -n "$cfile" ] && [ -n "$pfile" ] || fail "no relation files in the restored tablespaces"
rm -f "$dir-ts_c/$cfile" "$dir-ts_p/$pfile"
c2=$(cd "$dir-ts_c" && find . -type f -name '[0-9]*' -size +100k | sort | tail -1)
p2=$(cd "$dir-ts_p" && find . -type f -name '[0-9]*' -size +100k | sort | tail -1)
# 4 kB into the compressed segment's data area, wherever its format puts it
# (2101248 in formats 2 to 4, right after the header in format 5):
# test/PgStrata/PcsFile.pm knows the layouts
c2_at=$(perl -I"$TOP/test" -MPgStrata::PcsFile -e \
	'print PgStrata::PcsFile::unit_offset($ARGV[0], 32)' "$dir-ts_c/$c2") ||
	fail "cannot read the header of $c2"
printf 'garbage!' | dd of="$dir-ts_c/$c2" bs=1 seek="$c2_at" conv=notrunc status=none
printf 'garbage!' | dd of="$dir-ts_p/$p2" bs=1 seek=$((8192 + 4096)) conv=notrunc status=none
echo "--- delta restore over restore-incr: removed $cfile (compressed) and $pfile (plain), overwrote 8 bytes of $c2 and $p2"
restore_one incr $((PORT + 1)) --repo=1 --delta

# 6. negative controls
# 6a. the comparison sees one altered row
start_cluster "$dir"
psql_at $((PORT + 1)) app "UPDATE c_accounts SET bal = bal + 1 WHERE id = 1" 
if twins $((PORT + 1)); then fail "negative control: an altered row went unnoticed by the twin comparison"; fi
d=$(digest $((PORT + 1)))
[ "$d" != "$PRIMARY_DIGEST" ] || fail "negative control: an altered row went unnoticed by the comparison with the primary"
echo "RESULT negative-control: one altered row of c_accounts is seen by both comparisons"
stop_cluster "$dir"
# 6b. pg_checksums --check sees a damaged byte of a plain file and of a
# compressed one (what pgBackRest's page check would have seen for plain
# files, and more)
dir=$W/restore-block
stop_cluster "$dir"
pfile=$(psql_at "$PORT" app "SELECT pg_relation_filepath('p_accounts')")
cfile=$(psql_at "$PORT" app "SELECT pg_relation_filepath('c_accounts')")
# the primary's relfilenodes are the restored copy's; map pg_tblspc paths
rel_in() { local f=$1; echo "$dir/$f"; }
cp "$(rel_in "$pfile")" "$W/p-saved"
printf '\x5a' | dd of="$(rel_in "$pfile")" bs=1 seek=$((8192 * 3 + 5000)) conv=notrunc status=none
rc=0; as_user "$PG_BIN/pg_checksums" --check -D "$dir" >"$W/pg_checksums-neg-plain.log" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "negative control: pg_checksums --check missed a damaged plain page"
echo "RESULT negative-control: pg_checksums --check fails on one damaged byte of a plain file: $(grep -m1 -i 'checksum verification failed' "$W/pg_checksums-neg-plain.log" || head -1 "$W/pg_checksums-neg-plain.log")"
cp "$W/p-saved" "$(rel_in "$pfile")"
cp "$(rel_in "$cfile")" "$W/c-saved"
# a byte inside block 0's compressed image: its map entry (from format 4
# on, the header holds the entries of blocks 0-95) names its first unit
# and stored bytes; where the data area starts depends on the format
# (2101248 in formats 2 to 4, right after the header in format 5), so
# test/PgStrata/PcsFile.pm finds the byte
at=$(perl -I"$TOP/test" -MPgStrata::PcsFile -e '
	my $e = PgStrata::PcsFile::entry($ARGV[0], 0);
	exit 1 unless $e->{stored} > 0;
	print PgStrata::PcsFile::image_offset($e, $ARGV[0]) + int($e->{stored} / 2);
	' "$(rel_in "$cfile")") ||
	fail "block 0 of c_accounts has no image in the restored copy"
printf '\x5a' | dd of="$(rel_in "$cfile")" bs=1 seek="$at" conv=notrunc status=none
rc=0; as_user "$PG_BIN/pg_checksums" --check -D "$dir" >"$W/pg_checksums-neg-compressed.log" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "negative control: pg_checksums --check missed a damaged compressed page"
echo "RESULT negative-control: pg_checksums --check fails on one damaged byte of a compressed file: $(grep -m1 -iE 'invalid|failed|error' "$W/pg_checksums-neg-compressed.log")"
cp "$W/c-saved" "$(rel_in "$cfile")"
as_user "$PG_BIN/pg_checksums" --check -D "$dir" >/dev/null || fail "pg_checksums --check fails after the files were put back"

# 7. With its page check on, pgBackRest still sees damage in a plain file,
# and the filter doc/operations.md gives (drop the warnings naming files
# of compressed tablespaces) leaves exactly that warning: one byte of
# block 2 of p_static, which nothing reads or writes, changed on the
# running primary for one full backup, then put back.
sfile=$(psql_at "$PORT" app "SELECT pg_relation_filepath('p_static')")
psql_at "$PORT" app "CHECKPOINT"
cp "$W/primary/$sfile" "$W/p_static-saved"
printf '\x5a' | dd of="$W/primary/$sfile" bs=1 seek=$((8192 * 2 + 6000)) conv=notrunc status=none
backup full-damaged --repo=1 --type=full --reset-checksum-page
cp "$W/p_static-saved" "$W/primary/$sfile"
grep -E 'WARN: (page misalignment|invalid page checksum)' "$W/backup-full-damaged.log" >"$W/warnings-damaged.txt" || true
grep -v -e "pg_tblspc/$CTS_OID/" "$W/warnings-damaged.txt" >"$W/warnings-damaged-plain.txt" || true
nall=$(wc -l <"$W/warnings-damaged.txt")
nplain=$(wc -l <"$W/warnings-damaged-plain.txt")
[ "$nplain" = 1 ] && grep -qF "$sfile at page 2" "$W/warnings-damaged-plain.txt" ||
	{ cat "$W/warnings-damaged.txt"; fail "negative control: with page checks on, the damaged plain page was not reported alone after the filter"; }
echo "RESULT negative-control: with checksum-page on, $nall page warnings; after leaving out the compressed tablespace's files, one: $(sed 's/.*WARN: //' "$W/warnings-damaged-plain.txt")"

echo "RESULT pgbackrest: passed"
