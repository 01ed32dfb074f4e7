# corpus.sh: the file lists of the TOAST benchmarks' two corpora, sourced by
# run.sh, levels.sh and select-io.sh so that they measure the same files.
#
#   sgml   PostgreSQL's documentation sources, one file per row
#   mixed  a deterministic sample of text, C headers and binaries of this
#          machine: every Nth readable file of 1 kB to 1 MB of
#          /usr/share/doc (200), /usr/include (200), /usr/bin (100)
#
# Lists are sorted with the C locale, so that a machine with the same files
# gives the same lists.  The mixed corpus changes when /usr does.

# toast_corpus_sample DIR WANT: every Nth of the readable files of 1 kB to 1 MB
# under DIR, WANT of them
toast_corpus_sample()
{
	local dir=$1 want=$2 all
	all=$(find "$dir" -type f -readable -size +1k -size -1024k 2>/dev/null | LC_ALL=C sort)
	echo "$all" | awk -v n="$(echo "$all" | wc -l)" -v want="$want" \
		'BEGIN { step = n / want; if (step < 1) step = 1; next_at = 0 }
		 NR > next_at && NF { print; next_at += step }'
}

# toast_corpus_lists WORK: write WORK/sgml.list and WORK/mixed.list
toast_corpus_lists()
{
	local work=$1
	find "$TOP/build/postgresql/doc/src/sgml" -type f -name '*.sgml' | LC_ALL=C sort >"$work/sgml.list"
	{
		toast_corpus_sample /usr/share/doc 200
		toast_corpus_sample /usr/include 200
		toast_corpus_sample /usr/bin 100
	} >"$work/mixed.list"
}
