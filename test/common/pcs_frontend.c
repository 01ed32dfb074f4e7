/*-------------------------------------------------------------------------
 *
 * pcs_frontend.c
 *	  What a program outside the server needs to link the format layer: the
 *	  assertion handler, which the server has in its own error code.
 *
 * Linked into the unit test (test/unit), the fuzz target and its replay
 * driver (test/fuzz) and the benchmark helpers that call the format layer
 * (test/bench).  A failed assertion aborts the program, as it would abort
 * the server, so that the test harness, the fuzzer or the sanitizers see it.
 *
 * Portions Copyright (c) 2026, pgstrata developers
 *
 * test/common/pcs_frontend.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#ifdef USE_ASSERT_CHECKING
/* Report a failed assertion and abort */
void
ExceptionalCondition(const char *conditionName, const char *fileName,
					 int lineNumber)
{
	fprintf(stderr, "TRAP: failed Assert(\"%s\"), File: \"%s\", Line: %d\n",
			conditionName, fileName, lineNumber);
	abort();
}
#endif
