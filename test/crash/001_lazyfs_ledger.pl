
# Copyright (c) 2026, pgstrata developers

# OS crashes emulated with LazyFS: a ledger survives them.
#
# The whole data directory and a compressed tablespace live on a LazyFS
# file system, which keeps everything written in a cache of its own until
# it is fsynced.  Clients run a ledger load: each transaction inserts a row,
# updates another (its payload grows or shrinks, so compressed images
# change size and move), and now and then deletes one, in a table of the
# compressed tablespace and in its plain twin in pg_default, each with
# indexes; each client records, in a file outside LazyFS, every commit the
# server acknowledged.  At a random moment (now and then during a
# CHECKPOINT) the harness stops and kills -9 every server process, tells
# LazyFS to drop what was not fsynced (lazyfs::clear-cache), unmounts and
# mounts the file system again (a reboot: the kernel's page cache goes
# too), starts the server and checks:
#
# - for each client, the rows are exactly those of its acknowledged
#   transactions, or of those and the one it had in flight: every
#   acknowledged commit is there, nothing that was never attempted is;
# - the compressed table and its plain twin hold the same rows, and every
#   payload is the one its transaction wrote;
# - amcheck (verify_heapam, bt_index_check with heapallindexed) is clean
#   on every table and B-tree index of the database.
#
# Then a streaming standby whose data directory is on a LazyFS file system
# of its own is crashed the same way while it replays the load, restarted,
# caught up, and compared with the primary (rows, payloads, amcheck).
#
# A cycle that does not finish within PGSTRATA_CRASH_CYCLE_TIMEOUT because
# LazyFS stopped answering (it can hang in its own cache locking; a probe
# write, fsync and read in the file system tells) counts as a harness hang,
# neither passed nor failed: LazyFS is killed, unmounted, and the next
# cycle goes on from what it had synced.  A timeout while LazyFS answers is
# a failure.  The run fails at its first failed cycle, and when no cycle
# was checked.
#
# Knobs (environment), so that a run can be replayed and a failure shown:
#
#   PGSTRATA_CRASH_CYCLES            primary crash cycles (default 3)
#   PGSTRATA_CRASH_STANDBY_CYCLES    standby crash cycles (default 1)
#   PGSTRATA_CRASH_SEED              the random seed (printed; default: time)
#   PGSTRATA_CRASH_COMPRESSION       zstd (default), lz4, or none: the same
#                                    load with the tablespace made without
#                                    compression, the control
#   PGSTRATA_CRASH_FSYNC             on (default) or off: fsync = off must
#                                    fail the harness
#   PGSTRATA_CRASH_SYNC_COMMIT       on (default) or off: with
#                                    synchronous_commit = off the server
#                                    acknowledges commits it may lose, and
#                                    the ledger check must see them missing
#   PGSTRATA_CRASH_DROP              1 (default): drop what LazyFS holds
#                                    unsynced at each crash, an OS crash;
#                                    0: keep it, a crash of the server
#                                    alone, for comparison
#   PGSTRATA_CRASH_LOAD_SECONDS      longest load before a crash (default 4)
#   PGSTRATA_CRASH_CYCLE_TIMEOUT     seconds (default 120)
#   PGSTRATA_CRASH_CLIENTS           ledger clients (default 2)
#   PGSTRATA_CRASH_KEEP              a directory to copy the logs of a
#                                    failed cycle to
#
# It needs the LazyFS service (test/crash/lazyfs-service.sh), which root
# starts: make check and make check-crash do, and give its directory in
# PGSTRATA_LAZYFS.  Without it the test is skipped, and says why; when
# PGSTRATA_LAZYFS is set but the service cannot be used, it fails.

use strict;
use warnings FATAL => 'all';

use File::Copy;
use File::Path qw(make_path);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use PgStrata::Amcheck;
use PgStrata::LazyFS;
use PgStrata::PcsFile;
use PgStrata::RootService;

my $svc = PgStrata::RootService::service_or_skip('PGSTRATA_LAZYFS', 'LazyFS',
	PgStrata::LazyFS::service());

my $cycles = $ENV{PGSTRATA_CRASH_CYCLES} // 3;
my $standby_cycles = $ENV{PGSTRATA_CRASH_STANDBY_CYCLES} // 1;
my $seed = $ENV{PGSTRATA_CRASH_SEED} // (time() ^ $$) % 1_000_000_000;
my $compression = $ENV{PGSTRATA_CRASH_COMPRESSION} // 'zstd';
my $fsync = $ENV{PGSTRATA_CRASH_FSYNC} // 'on';
my $sync_commit = $ENV{PGSTRATA_CRASH_SYNC_COMMIT} // 'on';
my $drop = $ENV{PGSTRATA_CRASH_DROP} // 1;
my $load_seconds = $ENV{PGSTRATA_CRASH_LOAD_SECONDS} // 4;
my $cycle_timeout = $ENV{PGSTRATA_CRASH_CYCLE_TIMEOUT} // 120;
my $nclients = $ENV{PGSTRATA_CRASH_CLIENTS} // 2;
my $keep = $ENV{PGSTRATA_CRASH_KEEP};
# rows a client keeps alive: beyond this, each transaction deletes one
my $live_max = 1000;
die "PGSTRATA_CRASH_COMPRESSION must be zstd, lz4 or none"
  if $compression !~ /^(zstd|lz4|none)$/;
die "PGSTRATA_CRASH_FSYNC must be on or off" if $fsync !~ /^(on|off)$/;
die "PGSTRATA_CRASH_SYNC_COMMIT must be on or off"
  if $sync_commit !~ /^(on|off)$/;

srand($seed);
diag("crash harness: seed $seed, compression $compression, fsync $fsync, "
	  . ($sync_commit eq 'off' ? 'synchronous_commit off, ' : '')
	  . ($drop ? '' : 'server crashes only (nothing dropped), ')
	  . "$cycles primary cycles, $standby_cycles standby cycles; replay with "
	  . "PGSTRATA_CRASH_SEED=$seed");

my $tmp = PostgreSQL::Test::Utils::tempdir();
my $logdir = $PostgreSQL::Test::Utils::log_path;
my $bindir = $ENV{PG_CONFIG}
  ? `$ENV{PG_CONFIG} --bindir` : undef;
chomp $bindir if defined $bindir;

my %count = (passed => 0, failed => 0, hang => 0, acked => 0, inflight => 0);
my $first_failure;

#--------------------------------------------------------------------------
# The file systems and the primary
#--------------------------------------------------------------------------

my $pfs = PgStrata::LazyFS->new($svc, "p$$", cache_mb => 512);
my $sfs = PgStrata::LazyFS->new($svc, "s$$", cache_mb => 512);
my ($primary, $standby);
END
{
	# leave no server and nothing mounted, whatever happened
	for my $node ($standby, $primary)
	{
		kill_node($node) if defined $node;
	}
	for my $fs ($pfs, $sfs)
	{
		$fs->destroy if defined $fs;
	}
}
$pfs->mount;
ok(1, 'LazyFS mounted for the primary');

$primary = PostgreSQL::Test::Cluster->new('primary');
my $pmnt = $pfs->mnt;
mkdir("$pmnt/pgdata", 0700) or die "mkdir $pmnt/pgdata: $!";
mkdir("$pmnt/cts", 0700) or die "mkdir $pmnt/cts: $!";
symlink("$pmnt/pgdata", $primary->data_dir)
  or die "symlink " . $primary->data_dir . ": $!";

my $t0 = time;
$primary->init(allows_streaming => 1, extra => ['--data-checksums']);
note(sprintf('initdb on LazyFS: %.1f s', time - $t0));
# Small shared buffers, so that backends and the background writer write
# pages out between checkpoints; frequent checkpoints and autovacuum, so
# that crashes land in checkpoints, VACUUM and truncation too.
$primary->append_conf('postgresql.conf', qq(
fsync = $fsync
synchronous_commit = $sync_commit
full_page_writes = on
wal_log_hints = on
shared_buffers = 2MB
checkpoint_timeout = 30s
max_wal_size = 64MB
min_wal_size = 32MB
bgwriter_delay = 50ms
autovacuum_naptime = 1s
autovacuum_vacuum_threshold = 100
autovacuum_vacuum_scale_factor = 0.05
restart_after_crash = off
log_checkpoints = on
log_statement = none
));
$primary->start;

my $with = $compression eq 'none' ? '' : " WITH (compression = '$compression')";
$primary->safe_psql('postgres', qq(
CREATE EXTENSION amcheck;
CREATE EXTENSION pgstrata;
CREATE TABLESPACE cts LOCATION '$pmnt/cts'$with;
-- the payload of row ID written by transaction TXN, N md5 blocks long:
-- hex digits, which compress to about half
CREATE FUNCTION pl(id bigint, txn int, n int) RETURNS text
	LANGUAGE sql IMMUTABLE PARALLEL SAFE
	RETURN (SELECT string_agg(md5(id || ':' || txn || ':' || i), '')
			FROM generate_series(1, n) i);
CREATE TABLE lc (id bigint PRIMARY KEY USING INDEX TABLESPACE cts,
	client int NOT NULL, txn int NOT NULL, len int NOT NULL,
	payload text NOT NULL) TABLESPACE cts;
CREATE INDEX lc_txn ON lc (client, txn) TABLESPACE cts;
CREATE TABLE lp (id bigint PRIMARY KEY,
	client int NOT NULL, txn int NOT NULL, len int NOT NULL,
	payload text NOT NULL);
CREATE INDEX lp_txn ON lp (client, txn);
SELECT pg_create_physical_replication_slot('standby');
CHECKPOINT;
));
# What the configuration files got is not fsynced by anyone: sync the
# whole data directory once, as an installation would be before its first
# crash.
PostgreSQL::Test::Utils::system_or_bail('initdb', '--sync-only', '-D',
	$primary->data_dir);
if ($compression ne 'none')
{
	$primary->safe_psql('postgres',
		'INSERT INTO lc VALUES (0, -1, 0, 1, pl(0, 0, 1)); CHECKPOINT;');
	ok(PgStrata::PcsFile::relation_is_compressed($primary, 'postgres', 'lc'),
		'the ledger table is compressed');
	$primary->safe_psql('postgres', 'DELETE FROM lc WHERE id = 0; CHECKPOINT;');
}
else
{
	ok(!PgStrata::PcsFile::relation_is_compressed($primary, 'postgres', 'lc'),
		'control: the ledger table is not compressed');
}

#--------------------------------------------------------------------------
# The ledger model: what each client's transactions do
#--------------------------------------------------------------------------

# per client: next transaction number, rows the verified state holds (id
# => [txn, len]), and the transactions of the current load
my @clients = map { { next_txn => 1, rows => {}, load => [] } } 0 .. $nclients - 1;

# gen_load(C, N): N transactions of client C from its verified state;
# returns the SQL script, and keeps the transactions in $clients[C]{load}
sub gen_load
{
	my ($c, $n) = @_;
	my $cl = $clients[$c];
	my %rows = map { $_ => [ @{ $cl->{rows}{$_} } ] } keys %{ $cl->{rows} };
	my @ids = sort { $a <=> $b } keys %rows;
	my %pos = map { $ids[$_] => $_ } 0 .. $#ids;
	my @load;
	my $sql = '';
	my $t = $cl->{next_txn};
	for my $k (1 .. $n)
	{
		my @ops;
		my $id = $c * 1_000_000_000 + $t;
		my $len = 1 + int(rand(60));
		push @ops, [ 'i', $id, $len ];
		if (@ids)
		{
			my $u = $ids[ int(rand(@ids)) ];
			# grow or shrink: a new length far from the old one
			my $ulen = $rows{$u}[1] > 30 ? 1 + int(rand(10)) : 30 + int(rand(31));
			push @ops, [ 'u', $u, $ulen ];
			if (@ids > $live_max)
			{
				my $d;
				do { $d = $ids[ int(rand(@ids)) ] } while ($d == $u);
				push @ops, [ 'd', $d ];
			}
		}
		$sql .= "BEGIN;\n";
		for my $op (@ops)
		{
			my ($what, $oid, $olen) = @$op;
			for my $tab (qw(lc lp))
			{
				if ($what eq 'i')
				{
					$sql .= "INSERT INTO $tab VALUES ($oid, $c, $t, $olen, pl($oid, $t, $olen));\n";
				}
				elsif ($what eq 'u')
				{
					$sql .= "UPDATE $tab SET txn = $t, len = $olen, payload = pl($oid, $t, $olen) WHERE id = $oid;\n";
				}
				else
				{
					$sql .= "DELETE FROM $tab WHERE id = $oid;\n";
				}
			}
			if ($what eq 'i')
			{
				$rows{$oid} = [ $t, $olen ];
				push @ids, $oid;
				$pos{$oid} = $#ids;
			}
			elsif ($what eq 'u') { $rows{$oid} = [ $t, $olen ]; }
			else
			{
				# swap with the last and drop it
				delete $rows{$oid};
				my $p = delete $pos{$oid};
				my $last = pop @ids;
				if ($last != $oid) { $ids[$p] = $last; $pos{$last} = $p; }
			}
		}
		$sql .= "COMMIT;\n\\echo ack $t\n";
		# client 0 checkpoints now and then, so that crashes land in them
		$sql .= "CHECKPOINT;\n" if $c == 0 && $k % 40 == 0;
		push @load, { txn => $t, ops => \@ops };
		$t++;
	}
	$cl->{load} = \@load;
	return $sql;
}

# apply(ROWS, TXN): the rows after transaction TXN of the load
sub apply_txn
{
	my ($rows, $tx) = @_;
	for my $op (@{ $tx->{ops} })
	{
		my ($what, $oid, $olen) = @$op;
		if ($what eq 'd') { delete $rows->{$oid}; }
		else { $rows->{$oid} = [ $tx->{txn}, $olen ]; }
	}
	return;
}

#--------------------------------------------------------------------------
# Running things with timeouts
#--------------------------------------------------------------------------

# A harness hang: the cycle's deadline passed while LazyFS did not answer.
# Thrown as this string; a timeout while LazyFS answers is a failure.
my $HANG = "harness hang\n";
my $deadline;

sub remaining
{
	my $left = $deadline - time;
	return $left > 1 ? $left : 1;
}

# timed_out(FS, WHAT): die with $HANG if FS no longer answers, else with
# a failure naming WHAT
sub timed_out
{
	my ($fs, $what) = @_;
	die $HANG if !$fs->responsive(10);
	die "timed out while LazyFS answers: $what\n";
}

# query(NODE, FS, SQL): the output of psql, or die (failure or hang)
sub query
{
	my ($node, $fs, $sql) = @_;
	my ($out, $err) = ('', '');
	my $timer = IPC::Run::timeout(remaining());
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-A', '-t', '-q', '-v', 'ON_ERROR_STOP=1', '-d',
			$node->connstr('postgres'), '-c', $sql ],
		'>', \$out, '2>', \$err, $timer);
	eval { $h->finish; };
	if ($@)
	{
		$h->kill_kill;
		timed_out($fs, "query: $sql");
	}
	die "query failed ($sql): $err" if $h->result != 0;
	chomp $out;
	return $out;
}

# server_pids(NODE): the postmaster and its children, from /proc
sub server_pids
{
	my ($node) = @_;
	my $pm = $node->{_pid};
	return () if !$pm || !-d "/proc/$pm";
	my @pids = ($pm);
	if (open(my $f, '<', "/proc/$pm/task/$pm/children"))
	{
		push @pids, split ' ', (<$f> // '');
		close($f);
	}
	return @pids;
}

# os_crash(NODE, FS): every server process stopped, then killed, at once
# (a kill -9 of the postmaster alone lets its children write on for a
# moment), what LazyFS did not get fsynced dropped, and the file system
# unmounted and mounted again
sub os_crash
{
	my ($node, $fs) = @_;
	my @pids = server_pids($node);
	kill 'STOP', @pids if @pids;
	kill 'KILL', @pids if @pids;
	my $until = time + 10;
	while (grep { -d "/proc/$_" && !zombie($_) } @pids)
	{
		die "server processes survive kill -9\n" if time > $until;
		usleep(20_000);
	}
	$node->{_pid} = undef;
	if ($drop)
	{
		die $HANG if !$fs->clear_cache(30);
	}
	else
	{
		# a crash of the server alone: the page cache survives it, so
		# everything written is made durable before the file system goes
		# (initdb --sync-only fsyncs the data directory and tablespaces)
		my $h = IPC::Run::start([ 'initdb', '--sync-only', '-D', $node->data_dir ],
			'>', '/dev/null', '2>', '/dev/null', IPC::Run::timeout(remaining()));
		eval { $h->finish; };
		if ($@ || $h->result != 0)
		{
			$h->kill_kill if $@;
			timed_out($fs, 'initdb --sync-only');
		}
	}
	$fs->umount;
	$fs->mount;
	return;
}

sub zombie
{
	my ($pid) = @_;
	open(my $f, '<', "/proc/$pid/stat") or return 1;
	my $stat = <$f> // '';
	close($f);
	return $stat =~ /^\d+ \(.*\) [ZX]/;
}

# start_node(NODE, FS): pg_ctl start within the cycle's deadline
sub start_node
{
	my ($node, $fs) = @_;
	my ($out, $err) = ('', '');
	my $t = int(remaining());
	my $h = IPC::Run::start(
		[ 'pg_ctl', '-D', $node->data_dir, '-l', $node->logfile, '-w',
			'-t', $t, 'start' ],
		'>', \$out, '2>', \$err, IPC::Run::timeout($t + 5));
	eval { $h->finish; };
	my $timed = $@;
	$h->kill_kill if $timed;
	if ($timed || $h->result != 0)
	{
		# a postmaster that is still starting: the pid in postmaster.pid
		# may be unreadable if LazyFS hangs
		my $pm = `pgrep -o -f 'postgres -D @{[$node->data_dir]}\$' 2>/dev/null`;
		$node->{_pid} = (split ' ', $pm)[0];
		die $HANG if !$fs->responsive(10);
		my $why = $timed ? 'timed out' : "failed: $err";
		die "server start $why (log: " . $node->logfile . ")\n";
	}
	$node->_update_pid(1);
	return;
}

# kill_node(NODE): no server process left (after a hang or a failure)
sub kill_node
{
	my ($node) = @_;
	my @pids = server_pids($node);
	kill 'KILL', @pids if @pids;
	$node->{_pid} = undef;
	usleep(200_000);
	return;
}

#--------------------------------------------------------------------------
# The load
#--------------------------------------------------------------------------

my $load_no = 0;
my $active;    # the clients' handles while a load runs

# start_load(NODE): start the clients; returns their handles
sub start_load
{
	my ($node) = @_;
	$load_no++;
	my @h;
	for my $c (0 .. $nclients - 1)
	{
		my $script = "$tmp/load$load_no.c$c.sql";
		open(my $f, '>', $script) or die "$script: $!";
		print $f gen_load($c, 3000);
		close($f);
		my $out = "$tmp/load$load_no.c$c.out";
		$clients[$c]{out} = $out;
		$clients[$c]{done} = 0;
		push @h, IPC::Run::start(
			[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d',
				$node->connstr('postgres'), '-f', $script ],
			'>', $out, '2>', "$out.err");
	}
	return \@h;
}

# clients_running(H): 1 while the clients run; a client that stopped
# with an error while the server ran failed (its error in .err)
sub clients_running
{
	my ($h) = @_;
	for my $c (0 .. $#$h)
	{
		next if $clients[$c]{done};
		if (!$h->[$c]->pumpable)
		{
			# a client that ran its whole script (a fast machine) is done
			$clients[$c]{done} = $h->[$c]->finish;
			next if $clients[$c]{done};
			my $err = slurp_file("$clients[$c]{out}.err");
			die "client $c stopped while the server ran: $err\n";
		}
	}
	return 1;
}

# stop_clients(H): wait for the clients to end (they do, their server
# gone), then kill them
sub stop_clients
{
	my ($h) = @_;
	$active = undef;
	for my $c (@$h)
	{
		my $until = time + 10;
		while ($c->pumpable && time < $until)
		{
			usleep(20_000);
			eval { $c->pump_nb; };
		}
		$c->kill_kill if $c->pumpable;
		eval { $c->finish; };
	}
	return;
}

# acked(C): the last transaction client C saw acknowledged in this load
sub acked
{
	my ($c) = @_;
	my $last = 0;
	open(my $f, '<', $clients[$c]{out}) or return 0;
	while (<$f>)
	{
		$last = $1 if /^ack (\d+)$/;
	}
	close($f);
	return $last;
}

# run_load(NODE, FS, WHILE): start the clients, let them run a random
# while (now and then a CHECKPOINT is started from outside too, and the
# crash lands in it), then call WHILE->() with them running; returns the
# clients' handles
sub run_load
{
	my ($node, $fs, $while) = @_;
	my $h = start_load($node);
	$active = $h;
	my $run = 0.3 + rand($load_seconds - 0.3);
	my $until = time + $run;
	while (time < $until)
	{
		usleep(50_000);
		clients_running($h);
	}
	my $ckpt;
	if (rand() < 0.3)
	{
		$ckpt = IPC::Run::start(
			[ 'psql', '-X', '-q', '-d', $node->connstr('postgres'), '-c',
				'CHECKPOINT' ],
			'>', '/dev/null', '2>', '/dev/null');
		usleep(int(rand(400_000)));
	}
	clients_running($h);
	$while->($h);
	$ckpt->kill_kill if $ckpt && $ckpt->pumpable;
	return $h;
}

#--------------------------------------------------------------------------
# The checks
#--------------------------------------------------------------------------

# db_rows(NODE, FS, TABLE): id => [txn, len] per client
sub db_rows
{
	my ($node, $fs, $tab) = @_;
	my %by;
	for my $l (split /\n/,
		query($node, $fs, "SELECT client, id, txn, len FROM $tab ORDER BY id"))
	{
		my ($c, $id, $t, $len) = split /\|/, $l;
		$by{$c}{$id} = [ $t, $len ];
	}
	return \%by;
}

sub same_rows
{
	my ($x, $y) = @_;
	return 0 if keys %$x != keys %$y;
	for my $id (keys %$x)
	{
		return 0
		  if !exists $y->{$id}
		  || $x->{$id}[0] != $y->{$id}[0]
		  || $x->{$id}[1] != $y->{$id}[1];
	}
	return 1;
}

# check_ledger(NODE, FS): the clients' rows against what they were told;
# on success the model takes the state found.  Dies with what is wrong.
sub check_ledger
{
	my ($node, $fs) = @_;
	my $acked = [ map { @{ $clients[$_]{load} } ? acked($_) : undef } 0 .. $nclients - 1 ];
	my $db = db_rows($node, $fs, 'lc');
	my @problems;
	for my $c (0 .. $nclients - 1)
	{
		my $cl = $clients[$c];
		my %rows = map { $_ => [ @{ $cl->{rows}{$_} } ] } keys %{ $cl->{rows} };
		my @load = @{ $cl->{load} };
		my $k = $acked->[$c] // ($cl->{next_txn} - 1);
		# apply the acknowledged transactions
		my $i = 0;
		while ($i < @load && $load[$i]{txn} <= $k)
		{
			apply_txn(\%rows, $load[ $i++ ]);
		}
		my $found = $db->{$c} // {};
		my %acked_rows = map { $_ => $rows{$_} } keys %rows;
		my $next;
		if (same_rows($found, \%rows))
		{
			$next = $k + 1;
		}
		elsif ($i < @load)
		{
			# the transaction in flight at the crash may have committed
			apply_txn(\%rows, $load[$i]);
			if (same_rows($found, \%rows))
			{
				$next = $load[$i]{txn} + 1;
				$count{inflight}++;
			}
		}
		if (!defined $next)
		{
			# what is wrong against the acknowledged transactions
			%rows = %acked_rows;
			my @missing = grep { !exists $found->{$_} } sort keys %rows;
			my @extra = grep { !exists $rows{$_} } sort keys %$found;
			my @stale = grep {
				exists $rows{$_} && ($rows{$_}[0] != $found->{$_}[0])
			} sort keys %$found;
			push @problems,
			  "client $c (acknowledged up to txn $k): "
			  . scalar(@missing) . ' rows missing ('
			  . join(',', @missing[ 0 .. ($#missing < 4 ? $#missing : 4) ])
			  . '), ' . scalar(@extra) . ' rows that should not be there ('
			  . join(',', @extra[ 0 .. ($#extra < 4 ? $#extra : 4) ])
			  . '), ' . scalar(@stale) . ' rows at another transaction ('
			  . join(',', map { "$_: txn $found->{$_}[0], want $rows{$_}[0]" }
				  @stale[ 0 .. ($#stale < 4 ? $#stale : 4) ]) . ')';
			next;
		}
		$count{acked} += $k - $load[0]{txn} + 1 if @load && $k >= $load[0]{txn};
		$cl->{rows} = $found;
		# transaction numbers are never reused: the next load starts past
		# everything this one might have sent
		$cl->{next_txn} = $load[-1]{txn} + 1 if @load;
		$cl->{load} = [];
	}
	die join("\n", @problems) . "\n" if @problems;
	return;
}

# check_node(NODE, FS): twins equal, payloads intact, amcheck clean
sub check_node
{
	my ($node, $fs) = @_;
	my $diff = query($node, $fs, q(
SELECT (SELECT count(*) FROM ((TABLE lc EXCEPT ALL TABLE lp)
		UNION ALL (TABLE lp EXCEPT ALL TABLE lc)) d)
	|| ' ' || (SELECT count(*) FROM lc WHERE payload <> pl(id, txn, len))
	|| ' ' || (SELECT count(*) FROM lp WHERE payload <> pl(id, txn, len))));
	die "twins differ or payloads damaged (rows differing, bad payloads in lc, in lp): $diff\n"
	  if $diff ne '0 0 0';
	my $am = query($node, $fs, PgStrata::Amcheck::clean_query(50));
	die "amcheck: $am (corruptions, enough B-trees checked)\n"
	  if $am ne '0 true';
	return;
}

# ledger_sizes(NODE, FS): what the compressed ledger table and its plain
# twin take (pg_relation_size is physical bytes in a compressed tablespace;
# the apparent size of the first segment file shows the file's end), so that
# a cycle's log shows space growing from crash to crash
sub ledger_sizes
{
	my ($node, $fs) = @_;
	return query($node, $fs, q(
SELECT 'lc ' || pg_relation_size('lc') || ' bytes (file end '
	|| (pg_stat_file(pg_relation_filepath('lc'))).size || ', garbage '
	|| coalesce((SELECT garbage_bytes::text
		FROM pgstrata_relation_compression('lc') WHERE fork = 'main'), '?')
	|| '), lp ' || pg_relation_size('lp') || ' bytes, '
	|| (SELECT count(*) FROM lc) || ' rows'));
}

# keep_failure(WHAT): the logs of a failed cycle, for the report
sub keep_failure
{
	my ($what) = @_;
	return if !defined $keep || defined $first_failure;
	my $dir = "$keep/failure-seed$seed";
	make_path($dir);
	# the clients' scripts are left out: the seed makes them again
	for my $f (glob("$logdir/*"), glob("$tmp/load*.out*"),
		$pfs->log_file, $sfs->log_file)
	{
		copy($f, $dir) if -f $f;
	}
	open(my $o, '>', "$dir/what.txt");
	print $o "seed $seed, compression $compression, fsync $fsync\n$what\n";
	close($o);
	return;
}

# cycle(NAME, BODY): run BODY within the cycle timeout; counts the result
# as passed, failed or harness hang; returns 0 when the run must stop
sub cycle
{
	my ($name, $node, $fs, $body) = @_;
	$deadline = time + $cycle_timeout;
	my $t = time;
	my $ok = eval { $body->(); 1 };
	my $err = $@;
	if ($ok)
	{
		$count{passed}++;
		note(sprintf('%s: passed (%.1f s)', $name, time - $t));
		return 1;
	}
	if ($err eq $HANG || time > $deadline + 30)
	{
		$count{hang}++;
		diag("$name: harness hang (LazyFS stopped answering); killing it");
		kill_node($node);
		stop_clients($active) if $active;
		eval { $fs->umount; $fs->mount; };
		return 1;
	}
	$count{failed}++;
	diag("$name: FAILED (seed $seed): $err");
	keep_failure("$name: $err");
	$first_failure //= "$name: $err";
	return 0;
}

#--------------------------------------------------------------------------
# Primary cycles
#--------------------------------------------------------------------------

for my $i (1 .. $cycles)
{
	my $go = cycle(
		"primary cycle $i",
		$primary, $pfs,
		sub {
			# (after a hang, the server is down and the file system fresh)
			if (!server_pids($primary))
			{
				# after a hang: the server down, the file system fresh
				start_node($primary, $pfs);
				check_ledger($primary, $pfs);
				check_node($primary, $pfs);
			}
			my $h = run_load($primary, $pfs, sub { os_crash($primary, $pfs); });
			stop_clients($h);
			start_node($primary, $pfs);
			check_ledger($primary, $pfs);
			check_node($primary, $pfs);
			note("primary cycle $i: " . ledger_sizes($primary, $pfs));
		});
	last if !$go;
}

#--------------------------------------------------------------------------
# Standby cycles
#--------------------------------------------------------------------------

if (!defined $first_failure && $standby_cycles > 0)
{
	my $ok = eval {
		$deadline = time + $cycle_timeout;
		start_node($primary, $pfs) if !server_pids($primary);
		check_ledger($primary, $pfs);
		$sfs->mount;
		my $smnt = $sfs->mnt;
		$standby = PostgreSQL::Test::Cluster->new('standby');
		mkdir("$smnt/pgdata", 0700) or die "mkdir: $!";
		symlink("$smnt/pgdata", $standby->data_dir) or die "symlink: $!";
		PostgreSQL::Test::Utils::system_or_bail('pg_basebackup', '-D',
			"$smnt/pgdata", '-d', $primary->connstr('postgres'), '-X',
			'stream', '-S', 'standby', '-R', '-c', 'fast',
			"--tablespace-mapping=$pmnt/cts=$smnt/cts");
		$standby->append_conf('postgresql.conf', qq(
port = @{[$standby->port]}
hot_standby = on
# the harness's queries must not be cancelled by replay
hot_standby_feedback = on
max_standby_streaming_delay = -1
));
		PostgreSQL::Test::Utils::system_or_bail('initdb', '--sync-only',
			'-D', $standby->data_dir);
		start_node($standby, $sfs);
		1;
	};
	if (!$ok)
	{
		$count{failed}++;
		$first_failure = "standby set-up: $@";
		diag("standby set-up FAILED: $@");
	}
}

# wait_replayed(STANDBY): until the standby has replayed all the primary
# wrote
sub wait_replayed
{
	my $lsn = query($primary, $pfs, 'SELECT pg_current_wal_lsn()');
	while (1)
	{
		my $r = query($standby, $sfs,
			"SELECT pg_last_wal_replay_lsn() >= '$lsn'::pg_lsn");
		return if $r eq 't';
		timed_out($sfs, "standby catching up to $lsn") if time > $deadline;
		usleep(100_000);
	}
}

my $digest = q(SELECT count(*) || ' ' || md5(coalesce(string_agg(id || ':' || txn || ':' || len || ':' || md5(payload), ',' ORDER BY id), '')) FROM );

for my $i (1 .. ($first_failure ? 0 : $standby_cycles))
{
	my $go = cycle(
		"standby cycle $i",
		$standby, $sfs,
		sub {
			start_node($standby, $sfs) if !server_pids($standby);
			start_node($primary, $pfs) if !server_pids($primary);
			my $h = run_load($primary, $pfs, sub { os_crash($standby, $sfs); });
			start_node($standby, $sfs);
			# the load goes on while the standby recovers, then stops
			usleep(int(rand(1_000_000)));
			query($primary, $pfs,
				"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
			);
			stop_clients($h);
			check_ledger($primary, $pfs);
			wait_replayed();
			for my $tab (qw(lc lp))
			{
				my $p = query($primary, $pfs, "$digest $tab");
				my $s = query($standby, $sfs, "$digest $tab");
				die "standby's $tab differs from the primary's: $s, primary $p\n"
				  if $p ne $s;
			}
			check_node($standby, $sfs);
		});
	last if !$go;
}

#--------------------------------------------------------------------------
# The verdict
#--------------------------------------------------------------------------

diag(sprintf(
		'crash harness: seed %s, compression %s, fsync %s%s: %d cycles passed, %d failed, %d harness hangs',
		$seed, $compression, $fsync,
		$sync_commit eq 'off' ? ', synchronous_commit off' : '',
		$count{passed}, $count{failed},
		$count{hang}));
diag("crash harness: $count{acked} acknowledged transactions checked, "
	  . "$count{inflight} transactions in flight at a crash found committed");
if ($primary && server_pids($primary))
{
	my $sizes = eval {
		$deadline = time + 60;
		ledger_sizes($primary, $pfs);
	};
	# (pg_relation_size reports physical bytes in a compressed tablespace)
	diag("crash harness: at the end, the ledger table takes $sizes") if $sizes;
}
is($first_failure, undef, 'no cycle failed');
cmp_ok($count{passed}, '>', 0, 'at least one crash cycle was checked');

for my $node ($standby, $primary)
{
	next if !defined $node;
	kill_node($node);
}
done_testing();
