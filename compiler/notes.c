/*
** compiler/notes.c: the plan's notes, what each rewrite and analysis did
** and why (printed by --explain). A leaf every pass may call, so that the
** passes never call each other to record a note.
*/
#include <stdarg.h>

#include "plan.h"

/* Notes past PLAN_MAX_NOTES are dropped: --explain is a summary, and a plan
** never fails for want of room to describe it. */
void plan_note(Plan *p, Arena *a, SrcLoc loc, const char *fmt, ...)
{
	if (p->nnotes == PLAN_MAX_NOTES)
		return;
	va_list ap;
	va_start(ap, fmt);
	p->notes[p->nnotes].text = arena_vprintf(a, fmt, ap);
	p->notes[p->nnotes].loc = loc;
	p->nnotes++;
	va_end(ap);
}
