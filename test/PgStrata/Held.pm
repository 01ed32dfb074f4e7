
# Copyright (c) 2026, pgstrata developers

=pod

=head1 NAME

PgStrata::Held - a session of a TAP test held at an injection point

=head1 SYNOPSIS

  use PgStrata::Held;

  # a session that runs the COPY and waits at the injection point (its own,
  # injection_points_set_local) until the test wakes it; it prints "copied"
  # when the COPY is done
  my $copier = PgStrata::Held::session($node, 'bulk-io-window-before-fsm',
	"COPY t FROM '$file'", 'copied');
  ...
  $node->safe_psql('postgres',
	"SELECT injection_points_wakeup('bulk-io-window-before-fsm')");
  $copier->query_until(qr/copied/, '');
  $copier->quit;

=cut

package PgStrata::Held;

use strict;
use warnings FATAL => 'all';

# session(NODE, POINT, SQL, DONE): a background psql session of NODE's
# "postgres" database that attaches the injection point POINT for itself
# ('wait'), starts SQL and prints DONE once SQL is done; returned when it
# waits at POINT (dies if it does not within the poll timeout)
sub session
{
	my ($node, $point, $sql, $done) = @_;
	my $session = $node->background_psql('postgres');
	$session->query_safe(
		"SELECT injection_points_set_local(); SELECT injection_points_attach('$point', 'wait')"
	);
	$session->query_until(qr/started/,
		"\\echo started\n$sql;\n\\echo $done\n");
	$node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event = '$point'")
	  or die "the session running \"$sql\" did not stop at $point";
	return $session;
}

1;
