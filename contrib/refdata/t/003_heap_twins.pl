
# Copyright (c) 2026, pgstrata developers

# The isolation specs that matter for referential integrity come in pairs:
# refdata_X.spec (refdata parent) and refdata_X_heap.spec (the same with a
# heap parent).  Check that each pair differs only in the access method, and
# that the expected outputs agree, permutation by permutation, on every
# error raised and on the final state the last step shows.  Where they
# differ otherwise (which step waits) is locking by design.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Utils;
use Test::More;

# permutations FILE: { "steps" => "errors | final output" } of an expected file.
sub permutations
{
	my ($file) = @_;
	my %perm;
	my @blocks = split /^starting permutation: /m, slurp_file($file);
	shift @blocks;
	foreach my $b (@blocks)
	{
		my ($steps) = $b =~ /^(.*)$/m;
		my @errors = sort ($b =~ /^(ERROR:.*)$/mg);
		# the output of the last step, up to the end of the permutation
		my @steps = split /\s+/, $steps;
		my $last = $steps[-1];
		my ($final) = $b =~ /^step \Q$last\E:.*?\n(.*)\z/ms;
		$final //= '';
		$perm{$steps} = join("\n", @errors) . "\n|\n" . $final;
	}
	return \%perm;
}

foreach my $twin (glob('specs/*_heap.spec'))
{
	(my $name = $twin) =~ s{specs/(.*)_heap\.spec}{$1};
	my $refdata_spec = slurp_file("specs/$name.spec");
	(my $expected_heap_spec = $refdata_spec) =~ s/USING refdata;/USING heap;/g;
	is(slurp_file($twin), $expected_heap_spec,
		"$twin is specs/$name.spec with a heap parent");

	next if $name eq 'refdata_nolock';    # shows what heap writes: differs
	# shows the lock queue, where only the refdata writer's lock_timeout
	# expires: the final states differ by design
	next if $name eq 'refdata_convoy';

	my $h = permutations("expected/${name}_heap.out");
	my $r = permutations("expected/$name.out");
	is_deeply([ sort keys %$r ], [ sort keys %$h ],
		"$name: same permutations for heap and refdata");
	foreach my $p (sort keys %$r)
	{
		is($r->{$p}, $h->{$p}, "$name: same errors and final state: $p");
	}
}

done_testing();
