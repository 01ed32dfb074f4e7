
# Copyright (c) 2026, pgstrata developers

=pod

=head1 NAME

PgStrata::RootService - a request to a root service of the test suite

=head1 SYNOPSIS

  use PgStrata::RootService;

  my $answer = PgStrata::RootService::request($svc, 'LazyFS',
	"mount primary 512", 90);    # "ok" or "error: ..."

=head1 DESCRIPTION

The services that mount FUSE file systems for the test user
(test/crash/lazyfs-service.sh, test/fault/faultfs-service.sh) run as root
and read one request a line, "TOKEN REQUEST", from the fifo
SVC/requests, and write the answer to SVC/replies/TOKEN.  request() sends
one and waits for its answer, at most TIMEOUT seconds (default 60); a
service that does not read fails at once (the fifo is opened without
blocking).  The answer file is removed once read.

=cut

package PgStrata::RootService;

use strict;
use warnings FATAL => 'all';

use Fcntl qw(O_WRONLY O_NONBLOCK);
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

1;
