#!/bin/bash
# size of a compressed ledger table under churn, with and without crashes
# usage: run.sh NAME CRASH(0|1) SECONDS
set -u
B=/var/tmp/snap/install17/bin
W=/var/tmp/sizeexp/$1; CRASH=$2; SECS=$3
rm -rf $W; mkdir -p $W/cts
port=$((20000 + RANDOM % 10000))
$B/initdb -D $W/data -A trust --data-checksums >/dev/null
cat >> $W/data/postgresql.conf <<CONF
port=$port
unix_socket_directories='$W'
listen_addresses=''
shared_buffers=2MB
checkpoint_timeout=30s
max_wal_size=64MB
autovacuum_naptime=1s
autovacuum_vacuum_threshold=100
autovacuum_vacuum_scale_factor=0.05
wal_log_hints=on
CONF
$B/pg_ctl -D $W/data -l $W/log -w start >/dev/null
P="$B/psql -X -q -h $W -p $port -d postgres"
$P <<SQL
CREATE TABLESPACE cts LOCATION '$W/cts' WITH (compression='zstd');
CREATE FUNCTION pl(id bigint, txn int, n int) RETURNS text LANGUAGE sql IMMUTABLE
 RETURN (SELECT string_agg(md5(id || ':' || txn || ':' || i), '') FROM generate_series(1, n) i);
CREATE SEQUENCE s;
CREATE TABLE lc (id bigint PRIMARY KEY USING INDEX TABLESPACE cts, client int, txn int, len int, payload text) TABLESPACE cts;
CREATE TABLE lp (id bigint PRIMARY KEY, client int, txn int, len int, payload text);
SQL
cat > $W/txn.sql <<'SQL'
\set n random(1, 60)
\set m random(1, 60)
\set o random(0, 999)
BEGIN;
SELECT nextval('s') AS nid \gset
INSERT INTO lc VALUES (:nid, 0, 0, :n, pl(:nid, 0, :n));
INSERT INTO lp VALUES (:nid, 0, 0, :n, pl(:nid, 0, :n));
UPDATE lc SET len = :m, payload = pl(id, 1, :m) WHERE id = (SELECT id FROM lc ORDER BY id OFFSET :o LIMIT 1);
UPDATE lp SET len = :m, payload = pl(id, 1, :m) WHERE id = (SELECT id FROM lp ORDER BY id OFFSET :o LIMIT 1);
DELETE FROM lc WHERE id = (SELECT min(id) FROM lc) AND (SELECT count(*) FROM lc) > 2000;
DELETE FROM lp WHERE id = (SELECT min(id) FROM lp) AND (SELECT count(*) FROM lp) > 2000;
COMMIT;
SQL
end=$((SECONDS + SECS))
while [ $SECONDS -lt $end ]; do
  $B/pgbench -n -h $W -p $port -c 2 -T 8 -f $W/txn.sql postgres >/dev/null 2>&1 &
  bp=$!
  sleep $((3 + RANDOM % 5))
  if [ $CRASH = 2 ]; then $P -c CHECKPOINT; sleep 2; fi
  if [ $CRASH != 0 ]; then
    $B/pg_ctl -D $W/data -m immediate -w stop >/dev/null
    wait $bp
    $B/pg_ctl -D $W/data -l $W/log -w start >/dev/null
  else
    $P -c CHECKPOINT; wait $bp
  fi
  echo "$(date -u +%T) $($P -At -c "SELECT pg_relation_size('lc'), pg_relation_size('lp'), (SELECT count(*) FROM lc)" | tr '|' ' ')"
done
$B/pg_ctl -D $W/data -m fast -w stop >/dev/null
