#!/usr/bin/perl
#
# count-compressed.pl [--all] DIR...: count the relation files under DIR
# (data directories, tablespaces and file-level backups, at any depth) by
# their first bytes: compressed (the pcs magic), plain (md, holding data) or
# empty (an md file, or one that a dropped relation leaves until the next
# checkpoint).  Segment 0 of each fork is what decides its format.
#
# Used by run-upstream-compressed.sh on what the recovery suite leaves
# behind, where pcs_debug_force_compression was set in every server: every
# fork created after initdb, that is with a relfilenumber of at least
# FirstNormalObjectId (16384), was created compressed.  initdb's own
# relations (lower relfilenumbers, also in copies of template1) may be
# plain, unless --all says that initdb ran with the option too.  Exits 1
# when no file is compressed, or when a file that should be compressed holds
# data and is not (they are listed).
#
# Portions Copyright (c) 2026, pgstrata developers

use strict;
use warnings;
use File::Find;

# "PCS1" 0xff 0xff 0xff 0x7f: the first bytes of a compressed segment
my $magic = "PCS1\xff\xff\xff\x7f";
my (%count, @plain, $all);

sub classify
{
	my $name = $_;
	my $path = $File::Find::name;

	return unless -f $name && !-l $name;
	# segment 0 of a relation fork, in a database, global or tablespace dir
	return unless $name =~ /^\d+(?:_(?:fsm|vm|init))?$/;
	return unless $path =~ m{/(?:base/\d+|global|PG_\d+_\d+/\d+)/[^/]+$};

	my $initdb_made = ($name =~ /^(\d+)/ && $1 < 16384);
	my $size = -s $name;
	if ($size == 0)
	{
		$count{empty}++;
		return;
	}
	open(my $fh, '<:raw', $name) or die "could not open $path: $!";
	my $got = '';
	read($fh, $got, 8);
	close($fh);
	if ($got eq $magic)
	{
		$count{compressed}++;
	}
	elsif ($initdb_made && !$all)
	{
		$count{initdb_plain}++;
	}
	else
	{
		$count{plain}++;
		push @plain, $path;
	}
}

$all = 0;
if (@ARGV && $ARGV[0] eq '--all')
{
	$all = 1;
	shift @ARGV;
}
die "usage: $0 [--all] DIR...\n" unless @ARGV;
find({ wanted => \&classify, no_chdir => 0 }, grep { -d } @ARGV);

printf "relation files: %d compressed, %d plain, %d empty, %d plain made by initdb\n",
  $count{compressed} // 0, $count{plain} // 0, $count{empty} // 0,
  $count{initdb_plain} // 0;
if (@plain)
{
	print "plain files holding data (the first 20):\n";
	print "  $_\n" for (@plain)[ 0 .. ($#plain < 19 ? $#plain : 19) ];
}
if (!$count{compressed})
{
	print "FAIL: no relation file is compressed\n";
	exit 1;
}
if (@plain)
{
	print "FAIL: relation files holding data are not compressed\n";
	exit 1;
}
exit 0;
