
# Copyright (c) 2026, pgstrata developers

=pod

=head1 NAME

PgStrata::RootService - a request to a root service of the test suite

=head1 SYNOPSIS

  use PgStrata::RootService;

  my $answer = PgStrata::RootService::request($svc, 'LazyFS',
	"mount primary 512", 90);    # "ok" or "error: ..."

  # in a test: the service's directory, or the test ends here
  my $svc = PgStrata::RootService::service_or_skip('PGSTRATA_LAZYFS',
	'LazyFS', PgStrata::LazyFS::service());

=head1 DESCRIPTION

The services that mount FUSE file systems for the test user
(test/crash/lazyfs-service.sh, test/fault/faultfs-service.sh) run as root
and read one request a line, "TOKEN REQUEST", from the fifo
SVC/requests, and write the answer to SVC/replies/TOKEN.  request() sends
one and waits for its answer, at most TIMEOUT seconds (default 60); a
service that does not read fails at once (the fifo is opened without
blocking).  The answer file is removed once read.

service_or_skip() is how a test starts that needs a service: run-checks.sh
starts the services as root and names each in an environment variable
(PGSTRATA_LAZYFS, PGSTRATA_FAULTFS), or a sentence in parentheses saying
why it could not.  A service named but not usable is a failure, not a
skip; without the variable (not root) the test skips and says why.

=cut

package PgStrata::RootService;

use strict;
use warnings FATAL => 'all';

use Fcntl qw(O_WRONLY O_NONBLOCK);
use Test::More;
use Time::HiRes qw(usleep time);

my $token_seq = 0;

# request(SVC, WHAT, REQUEST, TIMEOUT): the answer of the service WHAT
# (its name, for messages) in directory SVC to REQUEST
sub request
{
	my ($svc, $what, $request, $timeout) = @_;
	my $token = "t${$}_" . $token_seq++ . '_' . int(rand(1e9));
	my $deadline = time + ($timeout // 60);
	my $fh;

	until (sysopen($fh, "$svc/requests", O_WRONLY | O_NONBLOCK))
	{
		return "error: cannot reach the $what service: $!" if time > $deadline;
		usleep(100_000);
	}
	my $line = "$token $request\n";
	syswrite($fh, $line) == length($line)
	  or return "error: short write to the $what service: $!";
	close($fh);
	my $reply = "$svc/replies/$token";
	while (!-f $reply)
	{
		return "error: no answer from the $what service to $request"
		  if time > $deadline;
		usleep(50_000);
	}
	open(my $r, '<', $reply) or return "error: $reply: $!";
	my $answer = <$r> // '';
	close($r);
	unlink($reply);
	chomp $answer;
	return $answer;
}

# service_or_skip(ENVVAR, WHAT, SVC, WHY): SVC, or, where it is undefined,
# the end of the test with WHY: a failure if ENVVAR is set (a service was
# asked for and cannot be used), else a skip
sub service_or_skip
{
	my ($envvar, $what, $svc, $why) = @_;

	return $svc if defined $svc;
	if (defined $ENV{$envvar} && $ENV{$envvar} ne '')
	{
		fail("$what service: $why");
		done_testing();
		exit;
	}
	plan skip_all => $why;
}

1;
